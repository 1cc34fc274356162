/* test_gauntlet_fs.c - the file system around plugins: one name twice, one
 * file twice, symlink loops and dangling links, unreadable files and
 * directories, unsafe locations (and the conf switch that allows them), and
 * a directory of 10,000 files that are not plugins.
 *
 * Unreadability: root ignores permission bits, so when the suite runs as
 * root (CI does) those cases run in a forked child that dropped to nobody
 * (setuid 65534) before opening its host; as any other user they run in
 * process.  Either way the host sees EACCES, which is what is tested. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
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

typedef struct fs_state {
    char root[GU_DIR_MAX]; /* first: gu_state_new */
} fs_state;

static int setup(void **state) {
    gu_state_new(state, sizeof(fs_state));
    return 0;
}

static int teardown(void **state) {
    gu_state_free(state);
    return 0;
}

/* <root>/<name>, created with `mode`. */
static void subdir(const fs_state *s, const char *name, char *out, size_t size, unsigned mode) {
    snprintf(out, size, "%s/%s", s->root, name);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", out, strerror(errno));
    assert_int_equal(chmod(out, (mode_t)mode), 0);
}

/* <link_dir>/<name>, a symlink to <target_dir>/good.so; its path in `link`. */
static void link_good(const char *link_dir, const char *name, const char *target_dir, char *link, size_t size) {
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/good.so", target_dir);
    snprintf(link, size, "%s/%s", link_dir, name);
    assert_int_equal(symlink(target, link), 0);
}

/* A later plugin of an existing name is shadowed, and says by which file;
 * within one directory the order is by file name. */
static void test_same_name_is_shadowed(void **state) {
    fs_state *s = *state;
    char a[600], b[600], path[1300], first[700];
    subdir(s, "first", a, sizeof a, 0755);
    subdir(s, "second", b, sizeof b, 0755);
    gu_install(a, "good.so", NULL);
    gu_install(b, "good_twin.so", NULL);
    gu_install(a, "good_twin.so", "zz_twin.so");
    snprintf(path, sizeof path, "%s:%s", a, b);
    sgl_attn_host *h = gu_open(path, NULL, 0, 0, NULL);
    snprintf(first, sizeof first, "shadowed by %s/good.so", a);
    gu_expect(h, "zz_twin.so", SGL_ATTN_PLUGIN_SHADOWED, first);
    gu_expect(h, "good_twin.so", SGL_ATTN_PLUGIN_SHADOWED, first);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_USABLE, "");
    assert_int_equal(gu_count_name(h, "gauntlet_good"), 3);
    gu_good_works(h);
    sgl_attn_host_close(h);
}

/* One file reached through a repeated directory, a second path to the same
 * directory, and a symlink elsewhere: listed (and loaded) once. */
static void test_one_file_many_paths(void **state) {
    fs_state *s = *state;
    char a[600], b[600], link[700], dotted[700], path[3000];
    subdir(s, "real", a, sizeof a, 0755);
    subdir(s, "links", b, sizeof b, 0755);
    gu_install(a, "good.so", NULL);
    link_good(b, "alias.so", a, link, sizeof link);
    snprintf(dotted, sizeof dotted, "%s/../real", b);
    snprintf(path, sizeof path, "%s:%s:%s:%s", a, dotted, b, a);
    sgl_attn_host *h = gu_open(path, NULL, 0, 0, NULL);
    assert_int_equal(gu_count_name(h, "gauntlet_good"), 1);
    assert_int_equal(gu_count_file(h, "alias.so"), 0);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_USABLE, "");
    gu_good_works(h);
    sgl_attn_host_close(h);
}

static void test_symlink_loop_and_dangling(void **state) {
    fs_state *s = *state;
    char d[600], p1[700], p2[700], p3[700], self[700];
    subdir(s, "links", d, sizeof d, 0755);
    gu_install(d, "good.so", NULL);
    snprintf(p1, sizeof p1, "%s/loop_a.so", d);
    snprintf(p2, sizeof p2, "%s/loop_b.so", d);
    snprintf(p3, sizeof p3, "%s/dangling.so", d);
    snprintf(self, sizeof self, "%s/self.so", d);
    assert_int_equal(symlink("loop_b.so", p1), 0);
    assert_int_equal(symlink("loop_a.so", p2), 0);
    assert_int_equal(symlink("no_such_plugin.so", p3), 0);
    assert_int_equal(symlink("self.so", self), 0);
    /* A search directory that is itself a loop. */
    char loopdir[700], path[2200];
    snprintf(loopdir, sizeof loopdir, "%s/dirloop", s->root);
    assert_int_equal(symlink("dirloop", loopdir), 0);
    snprintf(path, sizeof path, "%s:%s", loopdir, d);
    sgl_attn_host *h = gu_open(path, NULL, 0, 0, NULL);
    gu_expect(h, "loop_a.so", SGL_ATTN_PLUGIN_LOAD_ERROR, "symlink loop");
    gu_expect(h, "loop_b.so", SGL_ATTN_PLUGIN_LOAD_ERROR, "symlink loop");
    gu_expect(h, "self.so", SGL_ATTN_PLUGIN_LOAD_ERROR, "symlink loop");
    gu_expect(h, "dangling.so", SGL_ATTN_PLUGIN_LOAD_ERROR, "dangling symlink");
    gu_expect(h, "dirloop", SGL_ATTN_PLUGIN_LOAD_ERROR, "plugin directory is a symlink loop");
    gu_good_works(h);
    sgl_attn_host_close(h);
}

/* ------------------------------------------------------------ unreadable */

typedef struct unread_args {
    const char *path;
} unread_args;

/* Child side: one line per entry, "<status>|<reason>|<path>", then whether
 * the good plugin created and ran. */
static void list_entries(void *arg) {
    const unread_args *u = arg;
    sgl_attn_host_options o = {.struct_size = sizeof o};
    o.plugin_path = u->path;
    o.ignore_env_path = o.no_default_dir = o.no_conf = 1;
    o.log_level = SGL_ATTN_LOG_ERROR;
    sgl_attn_host *h = NULL;
    char err[512];
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) {
        printf("open failed: %s\n", err);
        return;
    }
    printf("uid %u\n", (unsigned)geteuid());
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        sgl_attn_host_plugin_info(h, i, &in);
        printf("%s|%s|%s\n", sgl_attn_plugin_status_name(in.status), in.reason, in.path);
    }
    sgl_attn_host_close(h);
}

static void test_unreadable_file_and_dir(void **state) {
    fs_state *s = *state;
    char ok[600], locked[600], hidden[600], path[2000];
    subdir(s, "ok", ok, sizeof ok, 0755);
    subdir(s, "locked", locked, sizeof locked, 0755);
    gu_install(ok, "good.so", NULL);
    gu_install(ok, "good_twin.so", "secret.so");
    char secret[700];
    snprintf(secret, sizeof secret, "%s/secret.so", ok);
    assert_int_equal(chmod(secret, 0000), 0);
    gu_install(locked, "good_twin.so", "inside.so");
    assert_int_equal(chmod(locked, 0000), 0);
    /* Listable but not searchable: names readable, files not stat-able. */
    subdir(s, "noexec", hidden, sizeof hidden, 0755);
    gu_install(hidden, "good_twin.so", "unsearchable.so");
    assert_int_equal(chmod(hidden, 0644), 0);
    snprintf(path, sizeof path, "%s:%s:%s", locked, hidden, ok);
    char out[8192];
    unread_args u = {path};
    int st = gu_as_nobody(list_entries, &u, out, sizeof out);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child status %d, output:\n%s", st, out);
    if (!strstr(out, "uid 65534") && gu_is_root()) fail_msg("child did not drop root:\n%s", out);
    char want[1400];
    snprintf(want, sizeof want, "load-error|cannot read plugin directory: Permission denied|%s\n",
             locked);
    if (!strstr(out, want)) fail_msg("no unreadable-directory entry in:\n%s", out);
    snprintf(want, sizeof want, "load-error|cannot read: Permission denied|%s\n", secret);
    if (!strstr(out, want)) fail_msg("no unreadable-file entry in:\n%s", out);
    snprintf(want, sizeof want, "load-error|cannot stat: Permission denied|%s/unsearchable.so\n",
             hidden);
    if (!strstr(out, want)) fail_msg("no unsearchable-directory entry in:\n%s", out);
    snprintf(want, sizeof want, "usable||%s/good.so\n", ok);
    if (!strstr(out, want)) fail_msg("the good plugin is not usable beside them:\n%s", out);
}

/* ---------------------------------------------------------------- unsafe */

/* <dir>/allow.json, a conf that allows unsafe paths. */
static void write_conf(const char *dir, char *out, size_t size) {
    snprintf(out, size, "%s/allow.json", dir);
    const char *text = "{\"sglattn_conf\": 1, \"allow_unsafe_paths\": true}\n";
    gu_write_file(out, text, strlen(text), 0644);
}

/* A plugin directory and a plugin file that `who` may write (modes
 * dir_mode, file_mode) are refused, each with its mode; a safe copy serves
 * the name.  With allow_by_conf, the conf switch then lets both load. */
static void writable_dir_and_file(const fs_state *s, const char *who, unsigned dir_mode, unsigned file_mode,
                                  int allow_by_conf) {
    char unsafe[600], safe[600], path[1300], file[700], conf[700], want[800];
    subdir(s, "unsafe", unsafe, sizeof unsafe, 0755);
    subdir(s, "safe", safe, sizeof safe, 0755);
    gu_install(unsafe, "good.so", NULL);
    gu_install(safe, "good_twin.so", "writable.so");
    gu_install(safe, "good.so", "zz_good.so");
    snprintf(file, sizeof file, "%s/writable.so", safe);
    assert_int_equal(chmod(file, (mode_t)file_mode), 0);
    assert_int_equal(chmod(unsafe, (mode_t)dir_mode), 0);
    snprintf(path, sizeof path, "%s:%s", unsafe, safe);
    sgl_attn_host *h = gu_open(path, NULL, 0, 0, NULL);
    snprintf(want, sizeof want, "unsafe location, not loaded: plugin directory %s is %s-writable (mode %04o)", unsafe,
             who, dir_mode);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_DISABLED, want);
    snprintf(want, sizeof want, "plugin file %s is %s-writable (mode %04o)", file, who, file_mode);
    gu_expect(h, "writable.so", SGL_ATTN_PLUGIN_DISABLED, want);
    gu_expect(h, "zz_good.so", SGL_ATTN_PLUGIN_USABLE, ""); /* the safe copy serves the name */
    gu_good_works(h);
    sgl_attn_host_close(h);
    if (!allow_by_conf) return;
    /* The conf switch lets both load (the first file now owns the name). */
    write_conf(s->root, conf, sizeof conf);
    gu_log log;
    h = gu_open(path, conf, 0, 0, &log);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_USABLE, "");
    gu_expect(h, "writable.so", SGL_ATTN_PLUGIN_SHADOWED, "shadowed by");
    if (!strstr(log.text, "loading from an unsafe location (allowed by conf)"))
        fail_msg("no warning when allowed:\n%s", log.text);
    gu_good_works(h);
    sgl_attn_host_close(h);
}

static void test_world_writable_dir_and_file(void **state) {
    writable_dir_and_file(*state, "world", 0777, 0666, 1);
}

/* A symlink in a safe directory to a plugin in a world-writable one: the
 * target's directory is what an attacker could change, so it is refused. */
static void test_symlink_into_unsafe_dir(void **state) {
    fs_state *s = *state;
    char safe[600], open_dir[600], link[700];
    subdir(s, "safe", safe, sizeof safe, 0755);
    subdir(s, "dropbox", open_dir, sizeof open_dir, 0777);
    gu_install(open_dir, "good.so", NULL);
    assert_int_equal(chmod(open_dir, 0777), 0);
    link_good(safe, "linked.so", open_dir, link, sizeof link);
    gu_install(safe, "good.so", "zz_good.so");
    sgl_attn_host *h = gu_open(safe, NULL, 0, 0, NULL);
    char want[800];
    snprintf(want, sizeof want, "directory of the symlink's target %s is world-writable", open_dir);
    gu_expect(h, "linked.so", SGL_ATTN_PLUGIN_DISABLED, want);
    gu_expect(h, "zz_good.so", SGL_ATTN_PLUGIN_USABLE, "");
    gu_good_works(h);
    sgl_attn_host_close(h);
}

static void test_foreign_owner(void **state) {
    fs_state *s = *state;
    if (!gu_is_root()) {
        /* Only root can give a file away; as another user this case is
         * covered by CI, which runs as root. */
        skip();
    }
    char d[600], conf[700];
    subdir(s, "foreign", d, sizeof d, 0755);
    gu_install(d, "good.so", NULL);
    char f[700];
    snprintf(f, sizeof f, "%s/good.so", d);
    assert_int_equal(chown(f, 65534, 65534), 0);
    sgl_attn_host *h = gu_open(d, NULL, 0, 0, NULL);
    char want[900];
    snprintf(want, sizeof want,
             "plugin file %s is owned by uid 65534, neither root nor the current user (uid 0)", f);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_DISABLED, want);
    sgl_attn_host_close(h);
    /* The directory given away instead of the file. */
    assert_int_equal(chown(f, 0, 0), 0);
    assert_int_equal(chown(d, 65534, 65534), 0);
    h = gu_open(d, NULL, 0, 0, NULL);
    snprintf(want, sizeof want, "plugin directory %s is owned by uid 65534", d);
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_DISABLED, want);
    sgl_attn_host_close(h);
    write_conf(s->root, conf, sizeof conf);
    h = gu_open(d, conf, 0, 0, NULL);
    gu_good_works(h);
    sgl_attn_host_close(h);
}


/* Group-writable is as unsafe as world-writable (ssh and sudo refuse it
 * too): the directory, and a file in a safe directory. */
static void test_group_writable_dir_and_file(void **state) {
    writable_dir_and_file(*state, "group", 0775, 0664, 0);
}

/* Every directory up to "/" counts: a writable ancestor lets anyone swap
 * the plugin directory.  A sticky one (like /tmp) is the exception. */
static void test_writable_ancestor(void **state) {
    fs_state *s = *state;
    char anc[600], dir[700], real_anc[PATH_MAX], want[PATH_MAX + 200];
    subdir(s, "anc", anc, sizeof anc, 0755);
    snprintf(dir, sizeof dir, "%s/plugins", anc);
    assert_int_equal(mkdir(dir, 0755), 0);
    gu_install(dir, "good.so", NULL);
    assert_non_null(realpath(anc, real_anc));
    static const struct {
        unsigned mode;
        const char *what; /* NULL: allowed */
    } modes[] = {{0777, "world-writable (mode 0777)"}, {0775, "group-writable (mode 0775)"}, {01777, NULL},
                 {0755, NULL}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        assert_int_equal(chmod(anc, (mode_t)modes[i].mode), 0);
        sgl_attn_host *h = gu_open(dir, NULL, 0, 0, NULL);
        if (modes[i].what) {
            snprintf(want, sizeof want, "directory %s, above the plugin directory, is %s", real_anc, modes[i].what);
            gu_expect(h, "good.so", SGL_ATTN_PLUGIN_DISABLED, want);
        } else {
            gu_good_works(h);
        }
        sgl_attn_host_close(h);
    }
}

/* A symlink's target is checked up to "/" as well. */
static void test_symlink_target_ancestor(void **state) {
    fs_state *s = *state;
    char safe[600], anc[600], inner[700], link[700], real_anc[PATH_MAX], want[PATH_MAX + 200];
    subdir(s, "safe", safe, sizeof safe, 0755);
    subdir(s, "open_anc", anc, sizeof anc, 0755);
    snprintf(inner, sizeof inner, "%s/inner", anc);
    assert_int_equal(mkdir(inner, 0755), 0);
    gu_install(inner, "good.so", NULL);
    assert_int_equal(chmod(anc, 0777), 0);
    assert_non_null(realpath(anc, real_anc));
    link_good(safe, "linked.so", inner, link, sizeof link);
    gu_install(safe, "good.so", "zz_good.so");
    sgl_attn_host *h = gu_open(safe, NULL, 0, 0, NULL);
    snprintf(want, sizeof want, "directory %s, above the directory of the symlink's target, is world-writable",
             real_anc);
    gu_expect(h, "linked.so", SGL_ATTN_PLUGIN_DISABLED, want);
    gu_expect(h, "zz_good.so", SGL_ATTN_PLUGIN_USABLE, "");
    sgl_attn_host_close(h);
    if (gu_is_root()) {
        /* A symlink owned by another user, in a safe directory, to a safe file. */
        assert_int_equal(chmod(anc, 0755), 0);
        assert_int_equal(lchown(link, 65534, 65534), 0);
        h = gu_open(safe, NULL, 0, 0, NULL);
        snprintf(want, sizeof want, "symlink %s is owned by uid 65534", link);
        gu_expect(h, "linked.so", SGL_ATTN_PLUGIN_DISABLED, want);
        sgl_attn_host_close(h);
    }
}

/* The conf's switch counts only from a conf nobody else can have written:
 * a conf in a group-writable directory, or writable itself, is read but its
 * "allow_unsafe_paths" is ignored, and the host says why. */
static void test_unsafe_conf_cannot_allow(void **state) {
    fs_state *s = *state;
    char open_dir[600], confdir[600], conf[700];
    subdir(s, "open", open_dir, sizeof open_dir, 0755);
    gu_install(open_dir, "good.so", NULL);
    assert_int_equal(chmod(open_dir, 0777), 0);
    subdir(s, "confdir", confdir, sizeof confdir, 0755);
    write_conf(confdir, conf, sizeof conf);
    sgl_attn_host *h = gu_open(open_dir, conf, 0, 0, NULL); /* control: a safe conf allows */
    gu_expect(h, "good.so", SGL_ATTN_PLUGIN_USABLE, "");
    sgl_attn_host_close(h);
    static const struct {
        unsigned dir_mode, file_mode;
        const char *why;
    } cases[] = {{0775, 0644, "conf's directory"}, {0755, 0666, "conf"}, {0755, 0664, "conf"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(chmod(confdir, (mode_t)cases[i].dir_mode), 0);
        assert_int_equal(chmod(conf, (mode_t)cases[i].file_mode), 0);
        gu_log log;
        h = gu_open(open_dir, conf, 0, 0, &log);
        gu_expect(h, "good.so", SGL_ATTN_PLUGIN_DISABLED, "is world-writable (mode 0777)");
        int noted = 0;
        for (size_t k = 0; k < sgl_attn_host_search_path_count(h); k++) {
            const char *dir, *source, *note;
            assert_int_equal(sgl_attn_host_search_path(h, k, &dir, &source, &note), SGL_ATTN_OK);
            if (strstr(note, "conf \"allow_unsafe_paths\" ignored: ") && strstr(note, cases[i].why)) noted = 1;
        }
        if (!noted || !strstr(log.text, "\"allow_unsafe_paths\" ignored"))
            fail_msg("case %zu: no note that the switch was ignored:\n%s", i, log.text);
        sgl_attn_host_close(h);
    }
}

/* ------------------------------------------------------------ 10k files */

static void test_ten_thousand_files(void **state) {
    fs_state *s = *state;
    char d[600];
    subdir(s, "crowd", d, sizeof d, 0755);
    char p[800];
    /* Under valgrind (SGL_ATTN_TEST_QUICK) creating the files is most of the
     * run; 2,000 still covers every name kind. */
    const int n = getenv("SGL_ATTN_TEST_QUICK") ? 2000 : 10000;
    for (int i = 0; i < n; i++) {
        /* Names around the plugin's, before and after it in sort order. */
        snprintf(p, sizeof p, "%s/%s%05d.%s", d, i % 2 ? "a" : "h", i, i % 3 ? "txt" : "so.1");
        gu_write_file(p, "x", 1, 0644);
    }
    gu_install(d, "good.so", NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sgl_attn_host *h = gu_open(d, NULL, 0, 0, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_int_equal(gu_count_file(h, "good.so"), 1);
    size_t files = 0;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        assert_int_equal(sgl_attn_host_plugin_info(h, i, &in), SGL_ATTN_OK);
        files += strcmp(in.source, "embedded") != 0;
    }
    assert_int_equal(files, 1); /* none of the n is a candidate */
    gu_good_works(h);
    sgl_attn_host_close(h);
    fprintf(stderr, "# host open over %d non-plugin files: %.1f ms (bench/gauntlet: 1k vs 10k)\n", n, ms);
    /* A timing bound generous enough for a loaded CI machine. */
    assert_true(ms < 5000.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_name_is_shadowed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_file_many_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_loop_and_dangling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_file_and_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_writable_dir_and_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_into_unsafe_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_writable_dir_and_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writable_ancestor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_target_ancestor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsafe_conf_cannot_allow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ten_thousand_files, setup, teardown),
    };
    return cmocka_run_group_tests_name("gauntlet_fs", tests, NULL, NULL);
}
