/* gauntlet_util.c - see gauntlet_util.h. */
#include "gauntlet_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "batch_fixture.h"

static void exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    assert_true(n > 0);
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    assert_non_null(slash);
    *slash = 0;
}

const char *gu_plugin_build_dir(void) {
    static char dir[1024]; /* test-only cache of a constant */
    if (!dir[0]) {
        char d[1000];
        exe_dir(d, sizeof d);
        snprintf(dir, sizeof dir, "%s/gauntlet", d);
    }
    return dir;
}

const char *gu_attnctl_path(void) {
    static char path[1024];
    if (!path[0]) {
        char d[1000];
        exe_dir(d, sizeof d);
        snprintf(path, sizeof path, "%s/../bin/attnctl", d);
    }
    return path;
}

void gu_mkdtemp(char *out, size_t size) {
    const char *tmp = getenv("TMPDIR");
    snprintf(out, size, "%s/sglattn-gauntlet-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    assert_non_null(mkdtemp(out));
    assert_int_equal(chmod(out, 0755), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR) return rmdir(path) ? 0 : 0;
    unlink(path);
    return 0;
}

static int unlock_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    if (flag == FTW_D || flag == FTW_DNR) chmod(path, 0755);
    (void)st;
    return 0;
}

void gu_rmtree(const char *dir) {
    if (!dir || !dir[0]) return;
    nftw(dir, unlock_one, 16, FTW_PHYS);
    nftw(dir, rm_one, 16, FTW_PHYS | FTW_DEPTH);
}

void gu_read_file(const char *path, char **data, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s: %s", path, strerror(errno));
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    *data = malloc((size_t)len + 1);
    assert_non_null(*data);
    assert_int_equal(fread(*data, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
}

void gu_write_file(const char *path, const void *data, size_t n, unsigned mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail_msg("cannot create %s: %s", path, strerror(errno));
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    assert_int_equal(fchmod(fd, (mode_t)mode), 0);
    close(fd);
}

void gu_install(const char *dir, const char *built_name, const char *as) {
    char src[PATH_MAX], dst[PATH_MAX];
    snprintf(src, sizeof src, "%s/%s", gu_plugin_build_dir(), built_name);
    snprintf(dst, sizeof dst, "%s/%s", dir, as ? as : built_name);
    char *data;
    size_t n;
    gu_read_file(src, &data, &n);
    gu_write_file(dst, data, n, 0755);
    free(data);
}

static void log_line(void *user, int level, const char *line) {
    gu_log *l = user;
    (void)level;
    if (!l) return;
    int w = snprintf(l->text + l->n, sizeof l->text - l->n, "%s\n", line);
    if (w > 0 && l->n + (size_t)w < sizeof l->text) l->n += (size_t)w;
}

sgl_attn_host *gu_open(const char *plugin_path, const char *conf_path, int isolate, int timeout_ms,
                       gu_log *log) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_path = plugin_path;
    o.ignore_env_path = 1;
    o.no_default_dir = 1;
    o.conf_path = conf_path;
    o.no_conf = conf_path == NULL;
    o.isolate_probes = isolate;
    o.probe_timeout_ms = timeout_ms;
    o.log = log_line;
    o.log_user = log;
    o.log_level = SGL_ATTN_LOG_INFO;
    if (log) log->n = 0, log->text[0] = 0;
    sgl_attn_host *h = NULL;
    char err[1024] = "";
    int rc = sgl_attn_host_open(&o, &h, err, sizeof err);
    if (rc) fail_msg("sgl_attn_host_open: %s (%d)", err, rc);
    assert_non_null(h);
    return h;
}

static int ends_with(const char *s, const char *file) {
    size_t n = strlen(s), m = strlen(file);
    return n > m && s[n - m - 1] == '/' && !strcmp(s + n - m, file);
}

sgl_attn_plugin_info gu_entry(sgl_attn_host *h, const char *file) {
    sgl_attn_plugin_info in;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        memset(&in, 0, sizeof in);
        in.struct_size = sizeof in;
        assert_int_equal(sgl_attn_host_plugin_info(h, i, &in), SGL_ATTN_OK);
        if (ends_with(in.path, file)) return in;
    }
    fail_msg("no entry for %s", file);
    memset(&in, 0, sizeof in);
    return in;
}

size_t gu_count_file(sgl_attn_host *h, const char *file) {
    size_t n = 0;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        assert_int_equal(sgl_attn_host_plugin_info(h, i, &in), SGL_ATTN_OK);
        n += ends_with(in.path, file);
    }
    return n;
}

size_t gu_count_name(sgl_attn_host *h, const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        assert_int_equal(sgl_attn_host_plugin_info(h, i, &in), SGL_ATTN_OK);
        n += !strcmp(in.name, name);
    }
    return n;
}

void gu_expect(sgl_attn_host *h, const char *file, int status, const char *fragment) {
    sgl_attn_plugin_info in = gu_entry(h, file);
    if (in.status != status || !strstr(in.reason, fragment))
        fail_msg("%s: status %s, reason \"%s\"; expected %s with \"%s\"", file,
                 sgl_attn_plugin_status_name(in.status), in.reason, sgl_attn_plugin_status_name(status),
                 fragment);
}

void gu_good_works(sgl_attn_host *h) {
    long i = sgl_attn_host_find_plugin(h, "gauntlet_good");
    assert_true(i >= 0);
    sgl_attn_plugin_info in = {.struct_size = sizeof in};
    assert_int_equal(sgl_attn_host_plugin_info(h, (size_t)i, &in), SGL_ATTN_OK);
    if (in.status != SGL_ATTN_PLUGIN_USABLE)
        fail_msg("gauntlet_good is %s: %s", sgl_attn_plugin_status_name(in.status), in.reason);
    uint64_t state = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)h, seed = fx_rand(&state);
    fx f;
    fx_shape s = {SGL_ATTN_MODE_DECODE, 3, 20, 1, 4, 2, 8, 32};
    assert_int_equal(fx_build(&f, &s, seed), 0);
    sgl_attn_create_options co = {sizeof co, f.max_reqs, f.max_tokens, f.max_ctx};
    const char *names[] = {"gauntlet_good"};
    sgl_attn_backend *b = NULL;
    char err[512] = "";
    int rc = sgl_attn_create_stack(h, names, 1, 0, &f.model, &co, &b, err, sizeof err);
    if (rc) fail_msg("create gauntlet_good: %s", err);
    assert_int_equal(sgl_attn_init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_forward_decode(b, &f.args), SGL_ATTN_OK);
    size_t n = (size_t)f.T * (size_t)s.hq * (size_t)s.d;
    for (size_t k = 0; k < n; k++)
        assert_true(f.out[k] == 2.0f * f.q[k]);
    sgl_attn_destroy(b);
    fx_free(&f);
}

void *gu_state_new(void **state, size_t size) {
    char *s = calloc(1, size);
    assert_non_null(s);
    *state = s;
    gu_mkdtemp(s, GU_DIR_MAX);
    return s;
}

void gu_state_free(void **state) {
    char *s = *state;
    if (!s) return;
    gu_rmtree(s);
    free(s);
}

int gu_is_root(void) {
    return geteuid() == 0;
}

int gu_in_child(void (*fn)(void *), void *arg, int as_nobody, char *out, size_t out_size) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(120);
        /* The child dies of its own signals, not in cmocka's handlers. */
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        if (as_nobody && gu_is_root() && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(121);
        fn(arg);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], out + n, out_size - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
        if (n + 1 >= out_size) break;
    }
    out[n] = 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

int gu_as_nobody(void (*fn)(void *), void *arg, char *out, size_t out_size) {
    return gu_in_child(fn, arg, 1, out, out_size);
}
