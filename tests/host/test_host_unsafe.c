/* test_host_unsafe.c - unsafe locations are refused with the reason unless
 * the conf allows them (ssh's StrictModes rule), and broken directory
 * entries (symlink loop, dangling link, unreadable file or directory) become
 * listed failures, never a crash or silence. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "th.h"

typedef struct fixture {
    char *tmp;
    char plugin[PATH_MAX + 32];
    char conf_allow[PATH_MAX + 32];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->tmp = th_tmpdir();
    char good[PATH_MAX];
    th_fake("good", "fake_good.so", good, sizeof good);
    snprintf(f->plugin, sizeof f->plugin, "%s/fake_good.so", f->tmp);
    th_copy(good, f->plugin);
    chmod(f->plugin, 0755);
    snprintf(f->conf_allow, sizeof f->conf_allow, "%s.allow.json", f->tmp);
    const char *c = "{\"sglattn_conf\": 1, \"allow_unsafe_paths\": true}\n";
    th_write(f->conf_allow, c, strlen(c));
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    unlink(f->conf_allow);
    th_rmrf(f->tmp);
    free(f->tmp);
    free(f);
    return 0;
}

static sgl_attn_plugin_info only(sgl_attn_host *h, const char *path) {
    long i = th_by_path(h, path);
    if (i < 0) fail_msg("%s not listed", path);
    return th_info(h, i);
}

static void expect_refused_then_allowed(fixture *f, const char *why) {
    sgl_attn_host *h = th_open(f->tmp, 0, NULL, NULL);
    sgl_attn_plugin_info in = only(h, f->plugin);
    assert_int_equal(in.status, SGL_ATTN_PLUGIN_DISABLED);
    th_contains(in.reason, "unsafe location, not loaded");
    th_contains(in.reason, why);
    assert_string_equal(in.name, ""); /* never loaded: no plugin code ran */
    sgl_attn_host_close(h);
    th_log log;
    h = th_open(f->tmp, 0, f->conf_allow, &log);
    in = only(h, f->plugin);
    assert_int_equal(in.status, SGL_ATTN_PLUGIN_USABLE);
    th_contains(log.text, "loading from an unsafe location (allowed by conf)");
    sgl_attn_host_close(h);
}

static void test_world_writable_dir(void **state) {
    fixture *f = *state;
    assert_int_equal(chmod(f->tmp, 0777), 0);
    char why[2 * PATH_MAX];
    snprintf(why, sizeof why, "plugin directory %s is world-writable (mode 0777)", f->tmp);
    expect_refused_then_allowed(f, why);
    chmod(f->tmp, 0700);
}

static void test_world_writable_file(void **state) {
    fixture *f = *state;
    assert_int_equal(chmod(f->plugin, 0666), 0);
    char why[2 * PATH_MAX];
    snprintf(why, sizeof why, "plugin file %s is world-writable (mode 0666)", f->plugin);
    expect_refused_then_allowed(f, why);
}

static void test_foreign_owner(void **state) {
    fixture *f = *state;
    if (geteuid() != 0) {
        print_message("skipped: giving a file to another user needs root\n");
        skip();
    }
    assert_int_equal(chown(f->plugin, 12345, 12345), 0);
    expect_refused_then_allowed(f, "is owned by uid 12345, neither root nor the current user (uid 0)");
}

/* A safe-looking symlink into a world-writable directory is still unsafe. */
static void test_symlink_into_unsafe_dir(void **state) {
    fixture *f = *state;
    char *open_dir = th_tmpdir();
    assert_int_equal(chmod(open_dir, 0777), 0);
    char target[PATH_MAX + 32];
    snprintf(target, sizeof target, "%s/real.so", open_dir);
    assert_int_equal(rename(f->plugin, target), 0);
    assert_int_equal(symlink(target, f->plugin), 0);
    expect_refused_then_allowed(f, "directory of the symlink's target");
    th_rmrf(open_dir);
    free(open_dir);
}

static void test_broken_entries(void **state) {
    fixture *f = *state;
    char p[PATH_MAX + 32], loop[PATH_MAX + 32], dangling[PATH_MAX + 32];
    snprintf(loop, sizeof loop, "%s/a_loop.so", f->tmp);
    assert_int_equal(symlink(loop, loop), 0);
    snprintf(dangling, sizeof dangling, "%s/b_dangling.so", f->tmp);
    snprintf(p, sizeof p, "%s/nowhere.so", f->tmp);
    assert_int_equal(symlink(p, dangling), 0);
    snprintf(p, sizeof p, "%s/c_dir.so", f->tmp); /* a directory named .so: skipped */
    assert_int_equal(mkdir(p, 0700), 0);
    sgl_attn_host *h = th_open(f->tmp, 0, NULL, NULL);
    sgl_attn_plugin_info a = only(h, loop), b = only(h, dangling);
    assert_int_equal(a.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(a.reason, "symlink loop");
    assert_int_equal(b.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(b.reason, "dangling symlink");
    assert_int_equal(th_by_path(h, p), -1);
    assert_int_equal(only(h, f->plugin).status, SGL_ATTN_PLUGIN_USABLE); /* the host went on */
    sgl_attn_host_close(h);
}

static void test_unreadable(void **state) {
    fixture *f = *state;
    if (geteuid() == 0) {
        print_message("skipped: root reads files and directories whatever their mode\n");
        skip();
    }
    assert_int_equal(chmod(f->plugin, 0000), 0);
    sgl_attn_host *h = th_open(f->tmp, 0, NULL, NULL);
    sgl_attn_plugin_info in = only(h, f->plugin);
    assert_int_equal(in.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(in.reason, "cannot read: Permission denied");
    sgl_attn_host_close(h);
    assert_int_equal(chmod(f->tmp, 0000), 0);
    h = th_open(f->tmp, 0, NULL, NULL);
    in = only(h, f->tmp);
    assert_int_equal(in.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(in.reason, "cannot read plugin directory: Permission denied");
    sgl_attn_host_close(h);
    chmod(f->tmp, 0700);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_world_writable_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_writable_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_into_unsafe_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
