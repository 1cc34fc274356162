/* test_hybrid_custom.c - the wrappers through the real host (libsglattn):
 *   - a third-party wrapper (custom_wrapper.c) in a temporary directory of
 *     SGL_ATTN_PLUGIN_PATH is chosen for the model type only it declares, its
 *     state size is reported, and the stack it makes runs;
 *   - a hybrid model nobody serves is refused with how to declare one;
 *   - every shipped example hybrid model gets its shipped wrapper over
 *     cpu_ref, and gdn/cpu_ref built by the host computes a Qwen3-Next
 *     linear layer as the float64 reference does. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sgl_attn.h"
#include "hyb_test_util.h"

#ifndef HYBT_CUSTOM_SO
#error "build with -DHYBT_CUSTOM_SO=<path of the test wrapper .so>"
#endif
#ifndef HYBT_SRCDIR
#error "build with -DHYBT_SRCDIR=<repository root>"
#endif

typedef struct fixture {
    char dir[64];
    char so[128];
    sgl_attn_host *h;
} fixture;

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out)) ok = 0;
    return ok ? 0 : -1;
}

static int setup(void **st) {
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    strcpy(f->dir, "/tmp/sglattn-hybrid-XXXXXX");
    if (!mkdtemp(f->dir)) { free(f); return -1; }
    snprintf(f->so, sizeof f->so, "%s/toy_retention.so", f->dir);
    if (copy_file(HYBT_CUSTOM_SO, f->so)) { rmdir(f->dir); free(f); return -1; }
    setenv("SGL_ATTN_PLUGIN_PATH", f->dir, 1);
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    char err[512] = "";
    if (sgl_attn_host_open(&o, &f->h, err, sizeof err)) {
        fprintf(stderr, "host: %s\n", err);
        unlink(f->so);
        rmdir(f->dir);
        free(f);
        return -1;
    }
    *st = f;
    return 0;
}

static int teardown(void **st) {
    fixture *f = *st;
    sgl_attn_host_close(f->h);
    unlink(f->so);
    rmdir(f->dir);
    unsetenv("SGL_ATTN_PLUGIN_PATH");
    free(f);
    return 0;
}

static const char toy_json[] =
    "{\"sglattn_model\": 1, \"name\": \"toy\", \"model_type\": \"toy_hybrid_lm\", \"num_layers\": 4,"
    " \"num_q_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 16, \"dtype\": \"f32\","
    " \"hybrid\": {\"kind\": \"custom:toy_retention\", \"full_attention_layers\": [1, 3],"
    " \"linear\": {\"num_k_heads\": 2, \"num_v_heads\": 2, \"head_k_dim\": 16, \"head_v_dim\": 16,"
    " \"state_dtype\": \"f32\"}}}";

static void select_ok(sgl_attn_host *h, const sgl_attn_model *m, sgl_attn_selection **s, const char *label) {
    char err[1024] = "";
    int rc = sgl_attn_select(h, m, NULL, s, err, sizeof err);
    if (rc) print_error("select %s: %s\n", m->model_type, err);
    assert_int_equal(rc, SGL_ATTN_OK);
    if (strcmp(sgl_attn_selection_label(*s), label))
        print_error("%s: chose %s, expected %s\n", m->model_type, sgl_attn_selection_label(*s), label);
    assert_string_equal(sgl_attn_selection_label(*s), label);
}

static void test_third_party_wrapper(void **st) {
    fixture *f = *st;
    long i = sgl_attn_host_find_plugin(f->h, "toy_retention");
    assert_true(i >= 0);
    sgl_attn_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(sgl_attn_host_plugin_info(f->h, (size_t)i, &info), SGL_ATTN_OK);
    assert_string_equal(info.source, "SGL_ATTN_PLUGIN_PATH");
    assert_int_equal(info.status, SGL_ATTN_PLUGIN_USABLE);
    assert_int_equal(info.hybrid_kind, SGL_ATTN_HYBRID_CUSTOM);

    sgl_attn_model m;
    char err[1024] = "";
    int rc = sgl_attn_model_from_json(toy_json, sizeof toy_json - 1, "toy.json", 1, &m, err, sizeof err);
    if (rc) print_error("model: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    sgl_attn_selection *s = NULL;
    select_ok(f->h, &m, &s, "toy_retention/cpu_ref");
    assert_int_equal(sgl_attn_selection_state_bytes(s), 2000); /* the plugin's own number */
    int32_t ids[8];
    assert_int_equal(sgl_attn_selection_full_layers(s, ids, 8), 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 3);

    /* the stack the host builds runs the wrapper's own layers */
    sgl_attn_create_options o = {sizeof o, 2, 8, 16};
    sgl_attn_backend *b = NULL;
    rc = sgl_attn_create(f->h, s, &m, &o, &b, err, sizeof err);
    if (rc) print_error("create: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    ttensor x, out;
    tt_make(&x, tu_dt(SGL_ATTN_DT_F32), 2, 3, 5, 0);
    tt_make(&out, tu_dt(SGL_ATTN_DT_F32), 2, 3, 5, 0);
    trng r = {3};
    tt_fill_normal(&x, &r, 1, NULL);
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_CUSTOM;
    io.x = &x.t;
    io.out = &out.t;
    sgl_attn_layer layer;
    memset(&layer, 0, sizeof layer);
    layer.struct_size = sizeof layer;
    layer.layer_id = 2;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &layer;
    a.linear = &io;
    assert_int_equal(sgl_attn_forward_extend(b, &a), SGL_ATTN_OK);
    for (size_t e = 0; e < x.count; e++) assert_true(tt_get(&out, e) == 2 * tt_get(&x, e));
    sgl_attn_destroy(b);
    tt_free(&x);
    tt_free(&out);
    sgl_attn_selection_free(s);
}

static void test_unknown_hybrid_refused(void **st) {
    fixture *f = *st;
    char json[sizeof toy_json + 32];
    snprintf(json, sizeof json, "%s", toy_json);
    char *p = strstr(json, "toy_hybrid_lm");
    memcpy(p, "nobody_hyb_lm", 13);
    p = strstr(json, "custom:toy_retention");
    memcpy(p, "custom:unheard_of_x", 19);
    sgl_attn_model m;
    char err[1024] = "";
    assert_int_equal(sgl_attn_model_from_json(json, strlen(json), "nobody.json", 1, &m, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_selection *s = NULL;
    int rc = sgl_attn_select(f->h, &m, NULL, &s, err, sizeof err);
    assert_int_not_equal(rc, SGL_ATTN_OK);
    if (!strstr(err, "model_types") || !strstr(err, "SGL_ATTN_PLUGIN_PATH")) print_error("message: %s\n", err);
    assert_non_null(strstr(err, "model_types"));
    assert_non_null(strstr(err, "SGL_ATTN_PLUGIN_PATH"));
    sgl_attn_selection_free(s);
}

static void load_example(const char *name, sgl_attn_model *m) {
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "%s/examples/models/%s", HYBT_SRCDIR, name);
    int rc = sgl_attn_model_from_file(path, 1, m, err, sizeof err);
    if (rc) print_error("%s: %s\n", path, err);
    assert_int_equal(rc, SGL_ATTN_OK);
}

static void test_shipped_wrappers_chosen(void **st) {
    fixture *f = *st;
    static const struct { const char *file, *label; } cases[] = {
        {"qwen3-next-80b-a3b.json", "gdn/cpu_ref"},      {"kimi-linear-48b-a3b.json", "kda/cpu_ref"},
        {"nemotron-h-8b.json", "mamba2/cpu_ref"},        {"lfm2-1.2b.json", "short_conv/cpu_ref"},
        {"minimax-text-01.json", "lightning/cpu_ref"},   {"minimax-m3-sparse.json", "minimax_sparse/cpu_ref"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sgl_attn_model m;
        load_example(cases[i].file, &m);
        sgl_attn_selection *s = NULL;
        select_ok(f->h, &m, &s, cases[i].label);
        const char *wrapper = sgl_attn_selection_stack_name(s, 0);
        const sgl_attn_plugin *p = NULL;
        for (int k = 1; k < SGL_ATTN_HYBRID_CUSTOM; k++)
            if (!strcmp(tu_plugin(k)->name, wrapper)) p = tu_plugin(k);
        assert_non_null(p);
        assert_int_equal(sgl_attn_selection_state_bytes(s), p->state_bytes_per_request(&m));
        sgl_attn_selection_free(s);
    }
}

/* gdn/cpu_ref built by the host: one Qwen3-Next linear layer, two requests */
static void test_host_gdn_stack_computes(void **st) {
    fixture *f = *st;
    sgl_attn_model m;
    load_example("qwen3-next-80b-a3b.json", &m);
    sgl_attn_selection *s = NULL;
    select_ok(f->h, &m, &s, "gdn/cpu_ref");
    assert_int_equal(sgl_attn_selection_state_bytes(s), 36ull * ((2 * 16 * 128 + 32 * 128) * 3 + 32 * 128 * 128) * 4);
    sgl_attn_create_options o = {sizeof o, 2, 8, 64};
    sgl_attn_backend *b = NULL;
    char err[1024] = "";
    int rc = sgl_attn_create(f->h, s, &m, &o, &b, err, sizeof err);
    if (rc) print_error("create: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    hyb_dims d;
    char why[256];
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_GDN, &m, HYB_STATE_DTYPES, &d, why, sizeof why), SGL_ATTN_OK);
    const int T = 4, C = d.conv_dim, HV = d.hv;
    DLDataType f32 = tu_dt(SGL_ATTN_DT_F32);
    ttensor x, av, bv, cw, al, dtb, out, si, el, pl, sl, rtt, rpi, loc;
    tt_make(&x, f32, 2, T, C, 0);
    tt_make(&av, f32, 2, T, HV, 0);
    tt_make(&bv, f32, 2, T, HV, 0);
    tt_make(&cw, f32, 2, C, d.conv_w, 0);
    tt_make(&al, f32, 1, HV, 0, 0);
    tt_make(&dtb, f32, 1, HV, 0, 0);
    tt_make(&out, f32, 3, T, HV, d.dv);
    tt_make(&si, tu_dt(0), 1, 2, 0, 0);
    tt_make(&el, tu_dt(0), 1, 2, 0, 0);
    tt_make(&pl, tu_dt(0), 1, 2, 0, 0);
    tt_make(&sl, tu_dt(0), 1, 2, 0, 0);
    tt_make(&rtt, tu_dt(0), 2, 2, 64, 0);
    tt_make(&rpi, tu_dt(0), 1, 2, 0, 0);
    tt_make(&loc, tu_dt(0), 1, T, 0, 0);
    double *xd = calloc(x.count, sizeof(double)), *ad = calloc(av.count, sizeof(double)),
           *bd = calloc(bv.count, sizeof(double)), *cwd = calloc(cw.count, sizeof(double)),
           *ald = calloc(al.count, sizeof(double)), *dtd = calloc(dtb.count, sizeof(double));
    trng r = {17};
    tt_fill_normal(&x, &r, 1, xd);
    tt_fill_normal(&av, &r, 1, ad);
    tt_fill_normal(&bv, &r, 1, bd);
    tt_fill_normal(&cw, &r, 0.5, cwd);
    tt_fill_normal(&al, &r, 0.5, ald);
    tt_fill_normal(&dtb, &r, 0.5, dtd);
    const int n[2] = {3, 1};
    for (int i = 0; i < 2; i++) {
        tt_set(&si, i, 1 - i);
        tt_set(&el, i, n[i]);
        tt_set(&sl, i, n[i]);
        tt_set(&rpi, i, i);
    }
    for (int t = 0; t < T; t++) tt_set(&loc, t, 1 + t);
    for (int j = 0; j < 3; j++) tt_set(&rtt, j, 1 + j);
    tt_set(&rtt, 64, 4);
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = SGL_ATTN_MODE_EXTEND;
    batch.batch_size = 2;
    batch.num_tokens = T;
    batch.page_size = 1;
    batch.seq_lens_sum = T;
    batch.req_to_token = &rtt.t;
    batch.req_pool_indices = &rpi.t;
    batch.seq_lens = &sl.t;
    batch.extend_prefix_lens = &pl.t;
    batch.extend_seq_lens = &el.t;
    batch.out_cache_loc = &loc.t;
    batch.state_indices = &si.t;
    rc = sgl_attn_init_forward_metadata(b, &batch);
    if (rc) print_error("metadata: %s\n", sgl_attn_last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_GDN;
    io.x = &x.t; io.a = &av.t; io.b = &bv.t; io.conv_weight = &cw.t; io.A_log = &al.t; io.dt_bias = &dtb.t;
    io.out = &out.t;
    io.use_qk_l2norm = 1;
    sgl_attn_layer layer;
    memset(&layer, 0, sizeof layer);
    layer.struct_size = sizeof layer;
    layer.layer_id = 0; /* Qwen3-Next: layers 3, 7, ... are full */
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &layer;
    a.batch = &batch;
    a.linear = &io;
    rc = sgl_attn_forward_extend(b, &a);
    if (rc) print_error("forward: %s\n", sgl_attn_last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    lref_dims ld = tu_lref_dims(&d);
    const size_t orow = (size_t)HV * d.dv;
    double num = 0, den = 0;
    for (int i = 0, tok = 0; i < 2; tok += n[i], i++) {
        double *cs = calloc((size_t)d.conv_elems, sizeof(double)), *ss = calloc((size_t)d.ssm_elems, sizeof(double));
        double *ref = calloc((size_t)n[i] * orow, sizeof(double));
        lref_in in = {xd + (size_t)tok * C, ad + (size_t)tok * HV, bd + (size_t)tok * HV, NULL, NULL, NULL,
                      cwd, NULL, ald, dtd, NULL, NULL, 1};
        lref_run(&ld, n[i], &in, cs, ss, ref, NULL, NULL);
        for (size_t e = 0; e < (size_t)n[i] * orow; e++) {
            double g = tt_get(&out, (size_t)tok * orow + e);
            num += (g - ref[e]) * (g - ref[e]);
            den += ref[e] * ref[e];
        }
        free(cs); free(ss); free(ref);
    }
    assert_true(den > 1e-3);
    assert_true(num / den < 1e-11);
    sgl_attn_destroy(b);
    sgl_attn_selection_free(s);
    free(xd); free(ad); free(bd); free(cwd); free(ald); free(dtd);
    tt_free(&x); tt_free(&av); tt_free(&bv); tt_free(&cw); tt_free(&al); tt_free(&dtb); tt_free(&out);
    tt_free(&si); tt_free(&el); tt_free(&pl); tt_free(&sl); tt_free(&rtt); tt_free(&rpi); tt_free(&loc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_third_party_wrapper),
        cmocka_unit_test(test_unknown_hybrid_refused),
        cmocka_unit_test(test_shipped_wrappers_chosen),
        cmocka_unit_test(test_host_gdn_stack_computes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
