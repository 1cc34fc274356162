/* test_gauntlet_input.c - model and conf files of bad size and shape.
 *
 *   special files  a FIFO (nobody writing), a character device, a socket, a
 *                  directory, as the model or the conf: refused at once by
 *                  kind, never read (a watchdog fails the test if a read
 *                  blocks)
 *   size           a sparse 1 GiB model and a 5 MiB conf: refused by size
 *                  before a byte is read
 *   duplicates     a key twice in one object (also spelled with an escape,
 *                  also deep inside): refused with both places, in the conf
 *                  and in both model formats; the same key in two objects
 *                  is fine
 *   numbers        a soft-cap of 1e300 (inf as a float) or 1e-50 (0 as a
 *                  float), refused naming the field; an integer past its
 *                  field's range, refused naming the field
 *   contradiction  layer_types against full_attention_interval, against
 *                  full_attn_idxs, against hybrid_override_pattern: refused
 *                  naming both, where agreeing ones are read
 *   size vs time   a config.json 16 times larger costs at most 4 x 16 times
 *                  as long (the strict scanner was quadratic) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gauntlet_util.h"
#include "json_shapes.h"

typedef struct in_state {
    char dir[GU_DIR_MAX]; /* first: gu_state_new */
} in_state;

static int setup(void **state) {
    gu_state_new(state, sizeof(in_state));
    return 0;
}

static int teardown(void **state) {
    gu_state_free(state);
    return 0;
}

/* The process's CPU time, not the wall clock: the check compares growth
 * with size, and on a loaded machine the wall clock also counts the time
 * spent waiting for a core. */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void contains(const char *s, const char *part) {
    if (!strstr(s, part)) fail_msg("\"%s\" lacks \"%s\"", s, part);
}

/* A read that blocks would hang the suite: the watchdog turns it into a failure. */
static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "test_gauntlet_input: a read blocked (watchdog)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

static void model_refused(const char *path, const char *part) {
    sgl_attn_model m;
    char err[1024] = "";
    alarm(20);
    int rc = sgl_attn_model_from_file(path, 1, &m, err, sizeof err);
    alarm(0);
    if (rc == SGL_ATTN_OK) fail_msg("%s was read as a model", path);
    contains(err, part);
}

static void conf_refused(const char *path, const char *part) {
    sgl_attn_host_options o = {.struct_size = sizeof o};
    o.conf_path = path;
    o.ignore_env_path = o.no_default_dir = 1;
    sgl_attn_host *h = NULL;
    char err[1024] = "";
    alarm(20);
    int rc = sgl_attn_host_open(&o, &h, err, sizeof err);
    alarm(0);
    if (rc == SGL_ATTN_OK) {
        sgl_attn_host_close(h);
        fail_msg("%s was read as a conf", path);
    }
    contains(err, part);
}

/* ---------------------------------------------------------- special files */

static void test_special_files(void **state) {
    in_state *s = *state;
    signal(SIGALRM, watchdog);
    char fifo[700], sock[700], dir[700];
    snprintf(fifo, sizeof fifo, "%s/config.fifo", s->dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    model_refused(fifo, "a FIFO, not a regular file: expected a model file");
    conf_refused(fifo, "a FIFO, not a regular file: expected a conf file");
    model_refused("/dev/null", "/dev/null: a character device, not a regular file");
    conf_refused("/dev/zero", "/dev/zero: a character device, not a regular file");
    snprintf(sock, sizeof sock, "%s/s", s->dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(sock) < sizeof a.sun_path) { /* a long $TMPDIR has no room for a socket name */
        memcpy(a.sun_path, sock, strlen(sock) + 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
        model_refused(sock, "a socket, not a regular file");
    }
    close(fd);
    snprintf(dir, sizeof dir, "%s/confdir", s->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    conf_refused(dir, "a directory, not a regular file");
    /* A model directory whose config.json is a FIFO. */
    char cfg[800];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    assert_int_equal(mkfifo(cfg, 0644), 0);
    model_refused(dir, "config.json: a FIFO, not a regular file");
    signal(SIGALRM, SIG_DFL);
}

/* ------------------------------------------------------------------ size */

static void test_size_caps(void **state) {
    in_state *s = *state;
    char big[700], conf[700];
    snprintf(big, sizeof big, "%s/huge.json", s->dir);
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0); /* sparse: no disk used */
    close(fd);
    double t0 = now_ms();
    model_refused(big, "1073741824 bytes, more than the 16777216 a model file");
    assert_true(now_ms() - t0 < 1000); /* refused by its size, not read */
    snprintf(conf, sizeof conf, "%s/huge_conf.json", s->dir);
    fd = open(conf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 5 << 20), 0);
    close(fd);
    conf_refused(conf, "5242880 bytes, more than the 4194304 a conf file");
}

/* ------------------------------------------------------------ duplicates */

static void model_json_refused(const char *text, const char *part) {
    sgl_attn_model m;
    char err[1024] = "";
    int rc = sgl_attn_model_from_json(text, strlen(text), "config.json", 1, &m, err, sizeof err);
    if (rc == SGL_ATTN_OK) fail_msg("accepted: %s", text);
    contains(err, part);
}

static void model_json_read(const char *text, sgl_attn_model *m) {
    char err[1024] = "";
    if (sgl_attn_model_from_json(text, strlen(text), "config.json", 1, m, err, sizeof err))
        fail_msg("refused: %s\n%s", err, text);
}

static void conf_text_refused(const in_state *s, const char *text, const char *part) {
    char path[700];
    snprintf(path, sizeof path, "%s/c.json", s->dir);
    gu_write_file(path, text, strlen(text), 0644);
    conf_refused(path, part);
}

static void test_duplicate_keys(void **state) {
    in_state *s = *state;
    const char *why = "refused, since Python's json keeps the last value and cJSON the first";
    /* The HF reader would have read 8 (cJSON: first); Python reads 16. */
    model_json_refused("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,\n"
                       " \"head_dim\": 64, \"num_attention_heads\": 16}",
                       "config.json:2:18: duplicate key \"num_attention_heads\" (first at 1:49)");
    model_json_refused("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8,\n"
                       " \"head_dim\": 64, \"num_attention_heads\": 16}",
                       why);
    /* The same key spelled with an escape is the same key. */
    model_json_refused("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                       "\"head_dim\": 64, \"head_\\u0064im\": 128}",
                       "duplicate key \"head_\\u0064im\" (first at 1:");
    /* Deep inside, under a key nobody reads: still refused. */
    model_json_refused("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                       "\"head_dim\": 64, \"x\": [{\"y\": {\"z\": 1, \"\\u00e9\": 2, \"\xc3\xa9\": 3}}]}",
                       "duplicate key \"\xc3\xa9\"");
    /* Our format too. */
    model_json_refused("{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, "
                       "\"num_layers\": 3}",
                       "duplicate key \"num_layers\"");
    /* Many keys, the duplicate last: found (a hash set, not a scan per key). */
    char *big = malloc(1 << 20);
    assert_non_null(big);
    size_t n = (size_t)snprintf(big, 1 << 20, "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
                                               "\"num_attention_heads\": 8, \"head_dim\": 64, \"bulk\": {");
    for (int i = 0; i < 20000; i++) n += (size_t)snprintf(big + n, (1 << 20) - n, "\"k%d\": %d, ", i, i);
    snprintf(big + n, (1 << 20) - n, "\"k17\": 0}}");
    model_json_refused(big, "duplicate key \"k17\" (first at 1:");
    free(big);
    /* One key in two objects is no duplicate. */
    sgl_attn_model m;
    model_json_read("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                    "\"head_dim\": 64, \"a\": {\"head_dim\": 1}, \"b\": {\"head_dim\": 2}}",
                    &m);
    assert_int_equal(m.head_dim_qk, 64);
    conf_text_refused(s, "{\"sglattn_conf\": 1, \"plugin_options\": {\"cpu_ref\": {\"threads\": 2, \"threads\": 4}}}",
                      "duplicate key \"threads\" (first at 1:52)");
    conf_text_refused(s, "{\"sglattn_conf\": 1, \"disabled\": [], \"disabled\": [\"cpu_ref\"]}", why);
}

/* --------------------------------------------------------------- numbers */

static void test_out_of_range_numbers(void **state) {
    (void)state;
    const char *base = "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                       "\"head_dim\": 64, ";
    char text[512];
    snprintf(text, sizeof text, "%s\"attn_logit_softcapping\": 1e300}", base);
    model_json_refused(text, "\"attn_logit_softcapping\": expected 0 or a number in [");
    model_json_refused(text, "found 1e+300");
    snprintf(text, sizeof text, "%s\"attn_logit_softcapping\": 1e-50}", base);
    model_json_refused(text, "\"attn_logit_softcapping\": expected 0 or a number in [");
    snprintf(text, sizeof text, "%s\"attn_logit_softcapping\": 50.0}", base); /* the control */
    sgl_attn_model m;
    model_json_read(text, &m);
    assert_true(m.logit_softcap == 50.0f);
    model_json_refused("{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, "
                       "\"logit_softcap\": 3.5e38}",
                       "\"logit_softcap\": expected 0 or a number in [");
    /* Integers past their field: named, with the range. */
    snprintf(text, sizeof text, "%s\"sliding_window\": 4294967297}", base);
    model_json_refused(text, "\"sliding_window\": expected an integer in [0, 1073741824], found 4.29497e+09");
    model_json_refused("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 1e10, "
                       "\"head_dim\": 64}",
                       "\"num_attention_heads\": expected an integer in [1, 65536], found 1e+10");
    model_json_refused("{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, "
                       "\"page_size\": 2147483648}",
                       "\"page_size\": expected an integer in [0, 1048576]");
}

/* --------------------------------------------------------- contradiction */

static void test_contradicting_fields(void **state) {
    (void)state;
    const char *head = "{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                       "\"head_dim\": 64, \"linear_num_key_heads\": 4, \"linear_num_value_heads\": 8, "
                       "\"linear_key_head_dim\": 32, \"linear_value_head_dim\": 32, \"linear_conv_kernel_dim\": 4, ";
    char text[1024];
    /* Every layer full attention by layer_types; every 4th by the interval. */
    snprintf(text, sizeof text,
             "%s\"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\", \"full_attention\"], "
             "\"full_attention_interval\": 4}",
             head);
    model_json_refused(text, "\"full_attention_interval\" and \"layer_types\" disagree on which layers are full "
                             "attention: layer 0 is not full attention by \"full_attention_interval\" but "
                             "\"full_attention\" in \"layer_types\"");
    /* Both hybrid, different layers. */
    snprintf(text, sizeof text,
             "%s\"layer_types\": [\"full_attention\", \"linear_attention\", \"linear_attention\", "
             "\"linear_attention\"], \"full_attention_interval\": 4}",
             head);
    model_json_refused(text, "disagree on which layers are full attention");
    snprintf(text, sizeof text,
             "{\"model_type\": \"lfm2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, \"head_dim\": 64, "
             "\"conv_L_cache\": 3, \"hidden_size\": 512, \"full_attn_idxs\": [1, 3], "
             "\"layer_types\": [\"conv\", \"full_attention\", \"full_attention\", \"conv\"]}");
    model_json_refused(text, "disagree on which layers are full attention");
    snprintf(text, sizeof text,
             "{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, \"head_dim\": 64, "
             "\"hybrid_override_pattern\": \"M*M*\", \"mamba_num_heads\": 8, \"mamba_head_dim\": 64, "
             "\"ssm_state_size\": 128, \"n_groups\": 1, \"conv_kernel\": 4, "
             "\"layer_types\": [\"mamba\", \"attention\", \"attention\", \"mamba\"]}");
    model_json_refused(text, "\"hybrid_override_pattern\" and \"layer_types\" disagree");
    /* Agreeing fields are read. */
    sgl_attn_model m;
    snprintf(text, sizeof text,
             "%s\"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", "
             "\"full_attention\"], \"full_attention_interval\": 4}",
             head);
    model_json_read(text, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_GDN);
    assert_true(sgl_attn_model_layer_is_full(&m, 3) && !sgl_attn_model_layer_is_full(&m, 0));
    snprintf(text, sizeof text,
             "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64, "
             "\"layer_types\": [\"full_attention\", \"sliding_attention\"], \"full_attention_interval\": 1, "
             "\"sliding_window\": 128}");
    model_json_read(text, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_NONE);
}

/* ---------------------------------------------------------- size vs time */

static void test_reading_is_linear(void **state) {
    in_state *s = *state;
    const int quick = getenv("SGL_ATTN_TEST_QUICK") != NULL;
    const size_t small = quick ? 16u << 10 : 128u << 10;
    char path[700];
    snprintf(path, sizeof path, "%s/config.json", s->dir);
    for (int shape = 0; shape < JS_COUNT; shape++) {
        double t[2];
        size_t len[2];
        for (int k = 0; k < 2; k++) {
            char *text = js_make(shape, k ? 16 * small : small, 0, &len[k]);
            gu_write_file(path, text, len[k], 0644);
            free(text);
            t[k] = 1e30;
            for (int r = 0; r < (k ? 2 : 3); r++) {
                sgl_attn_model m;
                char err[512];
                double t0 = now_ms();
                int rc = sgl_attn_model_from_file(path, 1, &m, err, sizeof err);
                double d = now_ms() - t0;
                if (rc) fail_msg("%s: %s", js_shape_name[shape], err);
                t[k] = d < t[k] ? d : t[k];
            }
        }
        double bound = 64.0 * t[0] + (quick ? 3000.0 : 300.0);
        print_message("%s: %zu bytes %.2f ms, %zu bytes %.2f ms\n", js_shape_name[shape], len[0], t[0], len[1], t[1]);
        if (t[1] > bound)
            fail_msg("%s: %zu bytes took %.1f ms, %zu bytes %.1f ms: not linear", js_shape_name[shape], len[0], t[0],
                     len[1], t[1]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_special_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_range_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contradicting_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reading_is_linear, setup, teardown),
    };
    return cmocka_run_group_tests_name("gauntlet_input", tests, NULL, NULL);
}
