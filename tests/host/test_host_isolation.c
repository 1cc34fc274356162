/* test_host_isolation.c - probes in a child process: a crash and a hang
 * become statuses, the host and the good plugin go on, the caps that come
 * back through the pipe equal the in-process ones, no child is left. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "th.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void test_crash_and_hang(void **state) {
    (void)state;
    char g[PATH_MAX], c[PATH_MAX], hg[PATH_MAX], path[3 * PATH_MAX + 8];
    snprintf(path, sizeof path, "%s:%s:%s", th_fake("crash", NULL, c, sizeof c),
             th_fake("hang", NULL, hg, sizeof hg), th_fake("good", NULL, g, sizeof g));
    sgl_attn_host_options o = {.struct_size = sizeof o, .plugin_path = path, .ignore_env_path = 1,
                               .no_default_dir = 1, .no_conf = 1, .isolate_probes = 1,
                               .probe_timeout_ms = 1500};
    sgl_attn_host *h;
    char err[256];
    double t0 = now_ms();
    assert_int_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_OK);
    double took = now_ms() - t0;
    sgl_attn_plugin_info crash = th_info(h, th_by_name(h, "fake_crash"));
    sgl_attn_plugin_info hang = th_info(h, th_by_name(h, "fake_hang"));
    assert_int_equal(crash.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(crash.reason, "probe crashed (signal 11");
    assert_int_equal(hang.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(hang.reason, "probe timed out after 1500 ms");
    assert_int_equal(sgl_attn_host_find_plugin(h, "fake_crash"), -1);
    sgl_attn_plugin_info good = th_info(h, th_by_name(h, "fake_good"));
    assert_int_equal(good.status, SGL_ATTN_PLUGIN_USABLE);
    assert_int_equal(good.n_devices, 2);
    /* One timeout, not more: the hang cost ~1.5 s, the rest is fast (slack for valgrind). */
    print_message("open with a crash and a hang: %.0f ms\n", took);
    assert_true(took >= 1490 && took < 5000);
    /* Every child was reaped. */
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);

    /* The caps that crossed the pipe are the in-process ones, byte for byte. */
    sgl_attn_host *h2 = th_open(g, 0, NULL, NULL);
    long i1 = sgl_attn_host_find_plugin(h, "fake_good"), i2 = sgl_attn_host_find_plugin(h2, "fake_good");
    for (uint32_t d = 0; d < 2; d++) {
        sgl_attn_caps a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
        assert_int_equal(sgl_attn_host_plugin_caps(h, (size_t)i1, d, &a), SGL_ATTN_OK);
        assert_int_equal(sgl_attn_host_plugin_caps(h2, (size_t)i2, d, &b), SGL_ATTN_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    /* An isolated probe's plugin still creates and runs in the parent. */
    sgl_attn_model m = {.struct_size = sizeof m};
    const char *names[] = {"fake_good"};
    sgl_attn_backend *b;
    assert_int_equal(sgl_attn_create_stack(h, names, 1, 0, &m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_destroy(b);
    sgl_attn_host_close(h2);
    sgl_attn_host_close(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_and_hang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
