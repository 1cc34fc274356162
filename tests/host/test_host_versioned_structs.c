/* test_host_versioned_structs.c - the option structs an engine hands over
 * are versioned by struct_size: 0 is a caller that forgot to set it and is
 * refused with a message (never read as "nothing asked"), NULL means the
 * defaults.  And a host on a machine file answers, but creates nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "th.h"

static void plain_model(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    m->num_layers = 2;
    m->num_q_heads = 4;
    m->num_kv_heads = 2;
    m->head_dim_qk = m->head_dim_v = 64;
    m->dtype = m->kv_dtype = SGL_ATTN_DT_F32;
}

static void test_host_options_struct_size_zero_is_refused(void **state) {
    (void)state;
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.no_conf = 1;
    sgl_attn_host *h = (sgl_attn_host *)&o; /* must be reset to NULL */
    char err[512] = "";
    assert_int_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_null(h);
    th_contains(err, "options.struct_size is 0: set it to sizeof(sgl_attn_host_options)");
    /* NULL options: the defaults */
    assert_int_equal(sgl_attn_host_open(NULL, &h, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_host_close(h);
}

static void test_select_and_create_struct_size_zero_are_refused(void **state) {
    (void)state;
    char path[1024], err[1024];
    th_fake("good", NULL, path, sizeof path);
    sgl_attn_host *h = th_open(path, 0, NULL, NULL);
    sgl_attn_model m;
    plain_model(&m);
    /* a request that names a backend nobody has: with struct_size 0 it must
     * not be read as an automatic choice (nor as "not found") */
    sgl_attn_select_request q;
    memset(&q, 0, sizeof q);
    q.backend = "no_such_backend";
    sgl_attn_selection *s = (sgl_attn_selection *)&q;
    assert_int_equal(sgl_attn_select(h, &m, &q, &s, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_null(s);
    th_contains(err, "request.struct_size is 0: set it to sizeof(sgl_attn_select_request)");
    q.struct_size = sizeof q;
    assert_int_equal(sgl_attn_select(h, &m, &q, &s, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    sgl_attn_selection_free(s);
    /* NULL request: automatic */
    assert_int_equal(sgl_attn_select(h, &m, NULL, &s, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_create_options co;
    memset(&co, 0, sizeof co);
    co.max_reqs = 4;
    sgl_attn_backend *b = (sgl_attn_backend *)&co;
    assert_int_equal(sgl_attn_create(h, s, &m, &co, &b, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_null(b);
    th_contains(err, "options.struct_size is 0: set it to sizeof(sgl_attn_create_options)");
    assert_int_equal(sgl_attn_create(h, s, &m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_destroy(b);
    sgl_attn_selection_free(s);
    sgl_attn_host_close(h);
}

/* A model from an older writer (ABI 1.1: struct_size 544, its tail padding
 * and everything past it garbage) is read with the unsent fields as zero;
 * smaller than 1.0 is refused; and sgl_attn_create refuses a model that
 * differs from the one selected for instead of ignoring it. */
static void test_model_from_an_older_writer(void **state) {
    (void)state;
    char err[1024];
    sgl_attn_host *h = th_open(NULL, 0, NULL, NULL);
    struct { sgl_attn_model m; char tail[64]; } old;
    plain_model(&old.m);
    memset((char *)&old.m + SGL_ATTN_MODEL_SIZE_V1_0, 0x5a, sizeof old - SGL_ATTN_MODEL_SIZE_V1_0);
    old.m.struct_size = SGL_ATTN_MODEL_SIZE_V1_0;
    sgl_attn_select_request q = {.struct_size = sizeof q, .backend = "cpu_ref"};
    sgl_attn_selection *s = NULL;
    if (sgl_attn_select(h, &old.m, &q, &s, err, sizeof err) != SGL_ATTN_OK) fail_msg("%s", err);
    sgl_attn_backend *b = NULL;
    /* attn_type's bytes say 0x5a5a5a5a in the caller's memory: an unsent field, so causal */
    if (sgl_attn_create(h, s, &old.m, NULL, &b, err, sizeof err) != SGL_ATTN_OK) fail_msg("%s", err);
    sgl_attn_destroy(b);
    sgl_attn_model other;
    plain_model(&other);
    other.num_kv_heads = 4;
    assert_int_equal(sgl_attn_create(h, s, &other, NULL, &b, err, sizeof err), SGL_ATTN_E_INVALID);
    th_contains(err, "the model's num_kv_heads is 4 but the selection was made for 2");
    assert_int_equal(sgl_attn_create(h, s, NULL, NULL, &b, err, sizeof err), SGL_ATTN_OK); /* NULL: the selection's */
    sgl_attn_destroy(b);
    sgl_attn_selection_free(s);
    old.m.struct_size = SGL_ATTN_MODEL_SIZE_V1_0 - 4;
    assert_int_equal(sgl_attn_select(h, &old.m, &q, &s, err, sizeof err), SGL_ATTN_E_INVALID);
    th_contains(err, "model struct_size 540, expected at least 544 (ABI 1.0");
    sgl_attn_host_close(h);
}

static sgl_attn_host *open_on_file(const char *plugins, const char *file, int *rc, char *err, size_t err_size) {
    sgl_attn_host_options o = {.struct_size = sizeof o, .plugin_path = plugins, .ignore_env_path = 1,
                               .no_default_dir = 1, .no_conf = 1, .caps_file = file};
    sgl_attn_host *h = NULL;
    *rc = sgl_attn_host_open(&o, &h, err, err_size);
    return h;
}

static void test_a_host_on_a_machine_file(void **state) {
    (void)state;
    char path[1024], err[2048], file[1200];
    th_fake("good", NULL, path, sizeof path);
    char *dir = th_tmpdir();
    int rc;
    /* that machine ran no plugin of ours: each is unavailable, saying so */
    snprintf(file, sizeof file, "%s/m.json", dir);
    const char *empty = "{\"schema\": 1, \"command\": \"devices\", \"plugins\": []}";
    th_write(file, empty, strlen(empty));
    sgl_attn_host *h = open_on_file(path, file, &rc, err, sizeof err);
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_string_equal(sgl_attn_host_caps_file(h), file);
    long i = th_by_name(h, "fake_good");
    assert_true(i >= 0);
    sgl_attn_plugin_info in = th_info(h, i);
    assert_int_equal(in.status, SGL_ATTN_PLUGIN_UNAVAILABLE);
    th_contains(sgl_attn_host_plugin_reason(h, (size_t)i), "not on the machine of");
    /* it answers, and creates nothing */
    sgl_attn_model m;
    plain_model(&m);
    const char *names[] = {"cpu_ref"};
    sgl_attn_backend *b = NULL;
    assert_int_equal(sgl_attn_create_stack(h, names, 1, 0, &m, NULL, &b, err, sizeof err), SGL_ATTN_E_STATE);
    th_contains(err, "caps come from");
    sgl_attn_host_close(h);

    /* refused: not there, not a machine file, not a regular file, a bad field */
    snprintf(file, sizeof file, "%s/missing.json", dir);
    assert_null(open_on_file(path, file, &rc, err, sizeof err));
    assert_int_equal(rc, SGL_ATTN_E_NOT_FOUND);
    snprintf(file, sizeof file, "%s/conf.json", dir);
    const char *other = "{\"schema\": 1, \"command\": \"list-plugins\", \"plugins\": []}";
    th_write(file, other, strlen(other));
    assert_null(open_on_file(path, file, &rc, err, sizeof err));
    assert_int_equal(rc, SGL_ATTN_E_INVALID);
    th_contains(err, "not a machine file");
    snprintf(file, sizeof file, "%s/fifo", dir);
    assert_int_equal(mkfifo(file, 0600), 0);
    assert_null(open_on_file(path, file, &rc, err, sizeof err)); /* and does not block */
    th_contains(err, "not a regular file");
    snprintf(file, sizeof file, "%s/bad.json", dir);
    const char *bad = "{\"schema\": 1, \"command\": \"devices\", \"plugins\": [\n"
                      " {\"name\": \"fake_good\", \"status\": \"usable\", \"devices\": [{\"index\": 0, \"available\": true,\n"
                      "  \"reason\": null, \"name\": \"x\", \"arch\": null, \"arch_major\": -1}]}]}";
    th_write(file, bad, strlen(bad));
    assert_null(open_on_file(path, file, &rc, err, sizeof err));
    th_contains(err, "bad.json:3:");
    th_contains(err, "arch_major");
    th_rmrf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_options_struct_size_zero_is_refused),
        cmocka_unit_test(test_select_and_create_struct_size_zero_are_refused),
        cmocka_unit_test(test_a_host_on_a_machine_file),
        cmocka_unit_test(test_model_from_an_older_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
