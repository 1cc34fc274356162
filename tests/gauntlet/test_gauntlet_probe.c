/* test_gauntlet_probe.c - plugins whose probe crashes or never returns.
 * With isolation (the library option; attnctl list-plugins' default) each
 * costs one status line and the good plugin beside them still works.
 * Without it, the crash takes the process down: shown in a child, which is
 * why isolation exists. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gauntlet_util.h"

typedef struct probe_state {
    char dir[GU_DIR_MAX]; /* first: gu_state_new */
} probe_state;

static int setup(void **state) {
    probe_state *s = gu_state_new(state, sizeof *s);
    gu_install(s->dir, "bad_probe_crash.so", NULL);
    gu_install(s->dir, "bad_probe_hang.so", NULL);
    gu_install(s->dir, "good.so", NULL);
    return 0;
}

static int teardown(void **state) {
    gu_state_free(state);
    return 0;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void test_library_isolation(void **state) {
    probe_state *s = *state;
    const int timeout_ms = 300 + (int)(now_ms()) % 200; /* any value is honoured */
    double t0 = now_ms();
    sgl_attn_host *h = gu_open(s->dir, NULL, 1, timeout_ms, NULL);
    double took = now_ms() - t0;
    char want[64];
    snprintf(want, sizeof want, "probe crashed (signal %d", SIGSEGV);
    gu_expect(h, "bad_probe_crash.so", SGL_ATTN_PLUGIN_LOAD_ERROR, want);
    snprintf(want, sizeof want, "probe timed out after %d ms", timeout_ms);
    gu_expect(h, "bad_probe_hang.so", SGL_ATTN_PLUGIN_LOAD_ERROR, want);
    gu_good_works(h);
    sgl_attn_host_close(h);
    /* The hang costs its timeout, not more (slack for a loaded machine). */
    assert_true(took >= timeout_ms);
    assert_true(took < timeout_ms + 3000);
}

/* A plugin whose probe crashed owns no name: a good plugin of the same name
 * later in the path is usable, not shadowed by the broken one. */
static void test_broken_plugin_shadows_nothing(void **state) {
    probe_state *s = *state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/same_name", s->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    gu_install(dir, "crash_named_good.so", "a_crash.so"); /* sorts first */
    gu_install(dir, "good.so", "b_good.so");
    sgl_attn_host *h = gu_open(dir, NULL, 1, 2000, NULL);
    char want[64];
    snprintf(want, sizeof want, "probe crashed (signal %d", SIGSEGV);
    gu_expect(h, "a_crash.so", SGL_ATTN_PLUGIN_LOAD_ERROR, want);
    gu_expect(h, "b_good.so", SGL_ATTN_PLUGIN_USABLE, "");
    gu_good_works(h);
    sgl_attn_host_close(h);
}

static void open_in_process(void *arg) {
    const probe_state *s = arg;
    sgl_attn_host_options o = {.struct_size = sizeof o};
    char dir[600];
    /* Only the crashing plugin: the hanging one would hang this child. */
    snprintf(dir, sizeof dir, "%s/crash_only", s->dir);
    o.plugin_path = dir;
    o.ignore_env_path = o.no_default_dir = o.no_conf = 1;
    sgl_attn_host *h = NULL;
    char err[256];
    if (sgl_attn_host_open(&o, &h, err, sizeof err) == 0) {
        printf("survived\n");
        sgl_attn_host_close(h);
    }
}

static void test_without_isolation_the_crash_is_fatal(void **state) {
    probe_state *s = *state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/crash_only", s->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    gu_install(dir, "bad_probe_crash.so", NULL);
    char out[256];
    /* gu_as_nobody forks; as root it also drops privileges, harmless here. */
    int st = gu_as_nobody(open_in_process, s, out, sizeof out);
    assert_null(strstr(out, "survived"));
    /* SIGSEGV, or a sanitizer's report and exit(1) in the ASan build. */
    assert_true(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));
    if (WIFSIGNALED(st)) assert_int_equal(WTERMSIG(st), SIGSEGV);
}

/* attnctl list-plugins isolates by default: its JSON names both failures. */
static void test_attnctl_isolates_by_default(void **state) {
    probe_state *s = *state;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' list-plugins --all --json --no-conf --plugin-path '%s' 2>&1",
             gu_attnctl_path(), s->dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    assert_true(WIFEXITED(st));
    char want[64];
    snprintf(want, sizeof want, "probe crashed (signal %d", SIGSEGV);
    if (!strstr(out, want)) fail_msg("attnctl output lacks \"%s\":\n%s", want, out);
    if (!strstr(out, "probe timed out after")) fail_msg("attnctl output lacks the timeout:\n%s", out);
    if (!strstr(out, "\"name\":\"gauntlet_good\"")) fail_msg("attnctl lost the good plugin:\n%s", out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_library_isolation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_isolation_the_crash_is_fatal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_plugin_shadows_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attnctl_isolates_by_default, setup, teardown),
    };
    return cmocka_run_group_tests_name("gauntlet_probe", tests, NULL, NULL);
}
