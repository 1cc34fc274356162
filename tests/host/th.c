/* th.c - see th.h. */
#include "th.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    assert_true(n > 0);
    buf[n] = 0;
    *strrchr(buf, '/') = 0; /* $(TESTDIR)/host */
    return buf;
}

const char *th_fake(const char *variant, const char *file, char *buf, size_t size) {
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    *strrchr(dir, '/') = 0; /* $(TESTDIR) */
    if (file) snprintf(buf, size, "%s/fakes/%s/%s", dir, variant, file);
    else snprintf(buf, size, "%s/fakes/%s", dir, variant);
    return buf;
}

const char *th_libdir(char *buf, size_t size) {
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    *strrchr(dir, '/') = 0; /* $(TESTDIR) */
    *strrchr(dir, '/') = 0; /* $(BUILD) */
    snprintf(buf, size, "%s/lib", dir);
    return buf;
}

char *th_tmpdir(void) {
    const char *t = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/sglattn-test-XXXXXX", t && t[0] ? t : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st;
    (void)f;
    if (flag == FTW_DP) chmod(p, 0700); /* undo a test's chmod 000 */
    return remove(p);
}

void th_rmrf(const char *dir) {
    if (!dir) return;
    chmod(dir, 0700);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void th_write(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

void th_copy(const char *from, const char *to) {
    FILE *f = fopen(from, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    th_write(to, buf, (size_t)n);
    free(buf);
}

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void log_fn(void *user, int level, const char *line) {
    th_log *l = user;
    (void)level;
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s\n", line);
    pthread_mutex_unlock(&log_mu);
}

sgl_attn_host *th_open(const char *path, int isolate, const char *conf_path, th_log *log) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_path = path;
    o.ignore_env_path = 1;
    o.no_default_dir = 1;
    o.conf_path = conf_path;
    o.no_conf = conf_path == NULL;
    o.isolate_probes = isolate;
    o.probe_timeout_ms = 2000;
    if (log) {
        log->text[0] = 0;
        o.log = log_fn;
        o.log_user = log;
        o.log_level = SGL_ATTN_LOG_DEBUG;
    }
    sgl_attn_host *h = NULL;
    char err[1024] = "";
    int rc = sgl_attn_host_open(&o, &h, err, sizeof err);
    if (rc != SGL_ATTN_OK) fail_msg("sgl_attn_host_open: %d: %s", rc, err);
    assert_non_null(h);
    return h;
}

sgl_attn_plugin_info th_info(const sgl_attn_host *h, long i) {
    sgl_attn_plugin_info in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    assert_true(i >= 0);
    assert_int_equal(sgl_attn_host_plugin_info(h, (size_t)i, &in), SGL_ATTN_OK);
    return in;
}

long th_by_path(const sgl_attn_host *h, const char *path) {
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++)
        if (!strcmp(th_info(h, (long)i).path, path)) return (long)i;
    return -1;
}

long th_by_name(const sgl_attn_host *h, const char *name) {
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++)
        if (!strcmp(th_info(h, (long)i).name, name)) return (long)i;
    return -1;
}

void *th_hook(const char *so_path, const char *symbol) {
    void *lib = dlopen(so_path, RTLD_NOW | RTLD_NOLOAD);
    if (!lib) fail_msg("%s is not loaded: %s", so_path, dlerror());
    void *sym = dlsym(lib, symbol);
    dlclose(lib); /* drops only our NOLOAD reference */
    assert_non_null(sym);
    return sym;
}

void th_contains_(const char *hay, const char *needle, const char *file, int line) {
    if (!hay || !strstr(hay, needle))
        fail_msg("%s:%d: expected \"%s\" in \"%s\"", file, line, needle, hay ? hay : "(null)");
}
