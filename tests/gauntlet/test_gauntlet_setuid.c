/* test_gauntlet_setuid.c - path variables are ignored under setuid/setgid,
 * and the host says so.
 *
 * What is really exercised: a copy of setuid_helper is made setuid-root (and
 * another setgid-root) in a temporary directory and run as nobody, so the
 * kernel sets AT_SECURE and glibc's secure_getenv hides
 * SGL_ATTN_PLUGIN_PATH; the helper prints AT_SECURE so the test knows it was
 * real.  A plain copy run the same way is the control: there the variable
 * is honoured.  Making a setuid-root file needs root; as another user only
 * the control runs and the privileged cases are skipped (CI runs as root). */
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
#include <unistd.h>

#include <cmocka.h>

#include "gauntlet_util.h"

typedef struct suid_state {
    char dir[GU_DIR_MAX]; /* first: gu_state_new */
    char plugins[600];
} suid_state;

typedef struct run_args {
    char exe[700];
    const char *path;
} run_args;

static void exec_helper(void *arg) {
    const run_args *r = arg;
    setenv("SGL_ATTN_PLUGIN_PATH", r->path, 1);
    setenv("SGL_ATTN_VALIDATE", "1", 1);
    setenv("SGL_ATTN_DEBUG", "2", 1);
    char *const argv[] = {(char *)r->exe, NULL};
    execv(r->exe, argv);
    printf("exec failed: %s\n", strerror(errno));
}

static int setup(void **state) {
    suid_state *s = gu_state_new(state, sizeof *s);
    snprintf(s->plugins, sizeof s->plugins, "%s/plugins", s->dir);
    assert_int_equal(mkdir(s->plugins, 0755), 0);
    gu_install(s->plugins, "good.so", NULL);
    gu_install(s->dir, "setuid_helper", "plain");
    gu_install(s->dir, "setuid_helper", "suid");
    gu_install(s->dir, "setuid_helper", "sgid");
    return 0;
}

static int teardown(void **state) {
    gu_state_free(state);
    return 0;
}

static void run(const suid_state *s, const char *name, char *out, size_t size) {
    run_args r;
    snprintf(r.exe, sizeof r.exe, "%s/%s", s->dir, name);
    r.path = s->plugins;
    int st = gu_as_nobody(exec_helper, &r, out, size);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("%s: status %d, output:\n%s", name, st, out);
}

static void test_plain_program_honours_the_variable(void **state) {
    suid_state *s = *state;
    char out[4096];
    run(s, "plain", out, sizeof out);
    if (!strstr(out, "AT_SECURE=0") || !strstr(out, "gauntlet_good: found"))
        fail_msg("plain helper:\n%s", out);
    char want[800];
    snprintf(want, sizeof want, "path|%s|SGL_ATTN_PLUGIN_PATH|", s->plugins);
    if (!strstr(out, want)) fail_msg("the variable's directory is not listed:\n%s", out);
}

static void privileged(void **state, const char *name, mode_t bits) {
    suid_state *s = *state;
    if (!gu_is_root()) skip();
    char exe[700];
    snprintf(exe, sizeof exe, "%s/%s", s->dir, name);
    assert_int_equal(chown(exe, 0, 0), 0);
    assert_int_equal(chmod(exe, 0755 | bits), 0);
    char out[4096];
    run(s, name, out, sizeof out);
    /* The kernel must have treated it as privileged, else nothing is proven. */
    if (!strstr(out, "AT_SECURE=1"))
        fail_msg("%s did not run with AT_SECURE (nosuid mount?):\n%s", name, out);
    if (!strstr(out, "note|SGL_ATTN_PLUGIN_PATH ignored: the program runs setuid/setgid"))
        fail_msg("%s: the host did not say it ignored the variable:\n%s", name, out);
    /* Every variable of ours the program ignores is named. */
    const char *names[] = {"SGL_ATTN_PLUGIN_PATH", "SGL_ATTN_VALIDATE", "SGL_ATTN_DEBUG"};
    const char *line = strstr(out, "note|the program runs setuid/setgid: environment variables ignored: ");
    if (!line) fail_msg("%s: no note naming the ignored variables:\n%s", name, out);
    const char *eol = strchr(line, '\n');
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *at = strstr(line, names[i]);
        if (!at || (eol && at > eol)) fail_msg("%s: the note does not name %s:\n%s", name, names[i], out);
    }
    if (strstr(out, "|SGL_ATTN_PLUGIN_PATH|"))
        fail_msg("%s: the variable's directory was searched:\n%s", name, out);
    if (!strstr(out, "gauntlet_good: absent"))
        fail_msg("%s loaded a plugin from the variable:\n%s", name, out);
}

static void test_setuid_ignores_the_variable(void **state) {
    privileged(state, "suid", S_ISUID);
}

static void test_setgid_ignores_the_variable(void **state) {
    privileged(state, "sgid", S_ISGID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_program_honours_the_variable),
        cmocka_unit_test(test_setuid_ignores_the_variable),
        cmocka_unit_test(test_setgid_ignores_the_variable),
    };
    return cmocka_run_group_tests_name("gauntlet_setuid", tests, setup, teardown);
}
