/* test_host_paths.c - the search path: order and sources, empty components
 * (never the current directory), the drop-in directory beside the library,
 * and SGL_ATTN_PLUGIN_PATH ignored by a setgid program, with a note. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "th.h"

typedef struct row {
    const char *dir, *source, *note;
} row;

static size_t rows(const sgl_attn_host *h, row *r, size_t cap) {
    size_t n = sgl_attn_host_search_path_count(h);
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(sgl_attn_host_search_path(h, i, &r[i].dir, &r[i].source, &r[i].note), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_host_search_path(h, n, NULL, NULL, NULL), SGL_ATTN_E_NOT_FOUND);
    return n;
}

/* Empty components are skipped with a note, even with a plugin in the
 * current directory; a missing directory is listed with "does not exist". */
static void test_empty_components(void **state) {
    (void)state;
    char *tmp = th_tmpdir();
    char good[PATH_MAX], gdir[PATH_MAX], cwd_plugin[PATH_MAX + 32], path[2 * PATH_MAX], old[PATH_MAX];
    th_fake("good", "fake_good.so", good, sizeof good);
    th_fake("good", NULL, gdir, sizeof gdir);
    snprintf(cwd_plugin, sizeof cwd_plugin, "%s/fake_good.so", tmp);
    th_copy(good, cwd_plugin);
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(tmp), 0);
    snprintf(path, sizeof path, "::%s/nonexistent::", tmp);
    th_log log;
    sgl_attn_host *h = th_open(path, 0, NULL, &log);
    row r[8];
    size_t n = rows(h, r, 8);
    assert_int_equal(n, 2); /* one directory, one note */
    th_contains(r[0].dir, "/nonexistent");
    assert_string_equal(r[0].source, "options");
    assert_string_equal(r[0].note, "does not exist");
    assert_string_equal(r[1].dir, "");
    assert_string_equal(r[1].source, "note");
    th_contains(r[1].note, "options: 4 empty components ignored (an empty component never means the current directory)");
    th_contains(log.text, "4 empty components ignored");
    assert_int_equal(th_by_name(h, "fake_good"), -1); /* not loaded from the cwd */
    sgl_attn_host_close(h);

    /* The same through the environment, after the options' directories. */
    snprintf(path, sizeof path, ":%s:", gdir);
    assert_int_equal(setenv("SGL_ATTN_PLUGIN_PATH", path, 1), 0);
    char other[PATH_MAX];
    th_fake("other", NULL, other, sizeof other);
    sgl_attn_host_options o = {.struct_size = sizeof o, .plugin_path = other, .no_default_dir = 1, .no_conf = 1};
    char err[256];
    assert_int_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_OK);
    n = rows(h, r, 8);
    assert_int_equal(n, 3);
    assert_string_equal(r[0].dir, other);
    assert_string_equal(r[0].source, "options");
    assert_string_equal(r[0].note, "");
    assert_string_equal(r[1].dir, gdir);
    assert_string_equal(r[1].source, "SGL_ATTN_PLUGIN_PATH");
    th_contains(r[2].note, "SGL_ATTN_PLUGIN_PATH: 2 empty components ignored");
    assert_string_equal(th_info(h, 0).name, "fake_other");
    assert_string_equal(th_info(h, 0).source, "options");
    assert_string_equal(th_info(h, 1).name, "fake_good");
    assert_string_equal(th_info(h, 1).source, "SGL_ATTN_PLUGIN_PATH");
    sgl_attn_host_close(h);
    /* ignore_env_path: the variable is not read at all. */
    o.ignore_env_path = 1;
    assert_int_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(rows(h, r, 8), 1);
    sgl_attn_host_close(h);
    unsetenv("SGL_ATTN_PLUGIN_PATH");
    assert_int_equal(chdir(old), 0);
    th_rmrf(tmp);
    free(tmp);
}

/* The drop-in directory is <libdir>/sglattn/plugins of the library in use. */
static void test_drop_in_beside_library(void **state) {
    (void)state;
    char lib[PATH_MAX], want[PATH_MAX + 32];
    th_libdir(lib, sizeof lib);
    char *real = realpath(lib, NULL);
    assert_non_null(real);
    snprintf(want, sizeof want, "%s/sglattn/plugins", real);
    free(real);
    /* never_unload: this loads the real drop-in plugins, and one of them
     * (xpu_ocl, through libOpenCL) leaves allocations behind when unloaded. */
    sgl_attn_host_options o = {.struct_size = sizeof o, .ignore_env_path = 1, .no_conf = 1, .never_unload = 1};
    sgl_attn_host *h;
    char err[256];
    assert_int_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_OK);
    row r[4];
    size_t n = rows(h, r, 4);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].dir, want);
    assert_string_equal(r[0].source, "drop-in");
    sgl_attn_host_close(h);
}

static char *run_helper(const char *exe, const char *env_path) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        char env[PATH_MAX + 32];
        snprintf(env, sizeof env, "SGL_ATTN_PLUGIN_PATH=%s", env_path);
        char *const envp[] = {env, NULL};
        char *const argv[] = {(char *)exe, NULL};
        execve(exe, argv, envp);
        _exit(127);
    }
    close(fds[1]);
    static char out[8192];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("helper failed (%d): %s", st, out);
    return out;
}

/* A setgid program ignores the variable and says so; the same binary not
 * setgid loads from it.  Making a setgid binary needs root (or a second
 * group); otherwise the test is skipped, saying why. */
static void test_setgid_ignores_env(void **state) {
    (void)state;
    if (geteuid() != 0) {
        print_message("skipped: making a setgid binary of another group needs root\n");
        skip();
    }
    char helper[PATH_MAX], gdir[PATH_MAX];
    th_fake("..", "host/secure_helper", helper, sizeof helper); /* $(TESTDIR)/host */
    th_fake("good", NULL, gdir, sizeof gdir);
    char *plain = run_helper(helper, gdir);
    th_contains(plain, "secure=0");
    th_contains(plain, "plugin fake_good SGL_ATTN_PLUGIN_PATH");

    char *tmp = th_tmpdir();
    assert_int_equal(chmod(tmp, 0755), 0);
    char copy[PATH_MAX + 32];
    snprintf(copy, sizeof copy, "%s/secure_helper", tmp);
    th_copy(helper, copy);
    assert_int_equal(chown(copy, 0, 65534), 0);
    assert_int_equal(chmod(copy, 02755), 0);
    char *sec = run_helper(copy, gdir);
    if (strstr(sec, "secure=0")) {
        th_rmrf(tmp);
        free(tmp);
        print_message("skipped: the setgid bit had no effect here (nosuid mount?)\n");
        skip();
    }
    th_contains(sec, "secure=1");
    th_contains(sec, "row source=note dir= note=SGL_ATTN_PLUGIN_PATH ignored: the program runs setuid/setgid");
    assert_null(strstr(sec, "fake_good"));
    th_rmrf(tmp);
    free(tmp);
}

int main(void) {
    unsetenv("SGL_ATTN_PLUGIN_PATH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_components),
        cmocka_unit_test(test_drop_in_beside_library),
        cmocka_unit_test(test_setgid_ignores_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
