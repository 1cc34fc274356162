/* test_hybrid_routing.c - what every wrapper declares, how it routes, and how
 * it refuses bad input: descriptors and probes, supports_model and create
 * messages, metadata and graph calls reaching the inner, the inner's fill
 * value and errors, and every malformed batch or tensor answered with a
 * message naming it while the instance keeps working. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_scen.h"

static const tu_shape gdn_shape = {2, 4, 16, 8, 4, 0};

static int has_type(const sgl_attn_plugin *p, const char *t) {
    for (const char *const *m = p->model_types; m && *m; m++)
        if (!strcmp(*m, t)) return 1;
    return 0;
}

static void test_descriptors(void **st) {
    (void)st;
    static const struct { int kind; const char *name, *type; } want[] = {
        {SGL_ATTN_HYBRID_GDN, "gdn", "qwen3_next"},         {SGL_ATTN_HYBRID_GDN, "gdn", "qwen3_5"},
        {SGL_ATTN_HYBRID_KDA, "kda", "kimi_linear"},         {SGL_ATTN_HYBRID_MAMBA2, "mamba2", "nemotron_h"},
        {SGL_ATTN_HYBRID_MAMBA2, "mamba2", "falcon_h1"},     {SGL_ATTN_HYBRID_MAMBA2, "mamba2", "zamba2"},
        {SGL_ATTN_HYBRID_SHORT_CONV, "short_conv", "lfm2"},  {SGL_ATTN_HYBRID_LIGHTNING, "lightning", "minimax"},
        {SGL_ATTN_HYBRID_LIGHTNING, "lightning", "minimax_m1"},
        {SGL_ATTN_HYBRID_MINIMAX_SPARSE, "minimax_sparse", "minimax_m3"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const sgl_attn_plugin *p = tu_plugin(want[i].kind);
        assert_non_null(p);
        assert_string_equal(p->name, want[i].name);
        assert_int_equal(p->role, SGL_ATTN_ROLE_HYBRID);
        assert_int_equal(p->hybrid_kind, want[i].kind);
        assert_int_equal(p->platform, SGL_ATTN_PLATFORM_CPU);
        assert_int_equal(p->struct_size, sizeof(sgl_attn_plugin));
        assert_true(has_type(p, want[i].type));
        assert_non_null(p->create);
        assert_non_null(p->state_bytes_per_request);
        assert_null(p->device_ops);
        sgl_attn_caps c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        assert_int_equal(p->probe(0, &c), SGL_ATTN_OK);
        assert_int_equal(c.available, 1);
        assert_true(c.compute_units >= 1);
        assert_int_equal(c.features & SGL_ATTN_FEAT_GRAPH_CAPTURE, 0); /* CPU compute is not captured */
        assert_true(c.features & SGL_ATTN_FEAT_DECODE);
        assert_true(c.state_dtypes & SGL_ATTN_DT_F32);
        assert_int_equal(p->probe(1, &c), SGL_ATTN_E_NOT_FOUND);
    }
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    hyb_plugin_gdn.probe(0, &c);
    assert_int_equal(c.attn_kinds & SGL_ATTN_KIND_MLA, 0);
    hyb_plugin_kda.probe(0, &c);
    assert_true(c.attn_kinds & SGL_ATTN_KIND_MLA);
    /* each .so has its own: a model type is served by one kind only */
    assert_false(has_type(&hyb_plugin_gdn, "kimi_linear"));
}

static void test_supports_model(void **st) {
    (void)st;
    sgl_attn_model m;
    char why[256];
    tu_model(&m, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, 0);
    assert_int_equal(hyb_plugin_gdn.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.is_mla = 1;
    assert_int_equal(hyb_plugin_gdn.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(why, "hybrid_gdn can only be used with non-MLA models.");
    m.is_mla = 0;
    assert_int_equal(hyb_plugin_kda.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "has hybrid kind gdn; this wrapper computes kda"));
    m.lin_num_v_heads = 3; /* not a multiple of the 2 key heads */
    assert_int_equal(hyb_plugin_gdn.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "lin_num_v_heads = 3"));
    m.lin_num_v_heads = 4;
    m.lin_conv_kernel = 0;
    assert_int_equal(hyb_plugin_gdn.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "lin_conv_kernel = 0; expected 1..8"));
    tu_model(&m, SGL_ATTN_HYBRID_MINIMAX_SPARSE, &gdn_shape, SGL_ATTN_DT_F32, 0);
    m.sparse_topk_blocks = 0;
    assert_int_equal(hyb_plugin_minimax_sparse.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "sparse_topk_blocks = 0"));
}

static void test_create_refusals(void **st) {
    (void)st;
    sgl_attn_model m;
    tu_model(&m, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, 0);
    sgl_attn_backend *b = (sgl_attn_backend *)&m; /* must come back NULL */
    char err[256] = "";
    assert_int_equal(tu_create(SGL_ATTN_HYBRID_GDN, &m, NULL, 4, 16, 16, &b, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_null(b);
    assert_non_null(strstr(err, "create_args.inner"));
    fake_inner in;
    fake_inner_init(&in);
    assert_int_equal(tu_create(SGL_ATTN_HYBRID_GDN, &m, &in, 0, 16, 16, &b, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "max_reqs = 0"));
    m.is_mla = 1;
    assert_int_equal(tu_create(SGL_ATTN_HYBRID_GDN, &m, &in, 4, 16, 16, &b, err, sizeof err), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(err, "non-MLA"));
    assert_null(b);
}

/* ---------------------------------------------------- a valid gdn call */

typedef struct call {
    ttensor si, el, pl, sl, x, a, b, out;
    sgl_attn_batch batch;
    sgl_attn_linear_io io;
    sgl_attn_layer layer;
    sgl_attn_forward_args args;
} call;

/* extend of bs requests of n tokens each (no prefix), slots 0..bs-1 */
static void make_call(call *c, scen *s, int bs, int n) {
    const hyb_dims *d = &s->w->d;
    const int T = bs * n;
    memset(c, 0, sizeof *c);
    tt_make(&c->si, tu_dt(0), 1, bs, 0, 0);
    tt_make(&c->el, tu_dt(0), 1, bs, 0, 0);
    tt_make(&c->pl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&c->sl, tu_dt(0), 1, bs, 0, 0);
    for (int i = 0; i < bs; i++) {
        tt_set(&c->si, i, i);
        tt_set(&c->el, i, n);
        tt_set(&c->sl, i, n);
    }
    DLDataType f = tu_dt(SGL_ATTN_DT_F32);
    tt_make(&c->x, f, 2, T, d->conv_dim, 0);
    tt_make(&c->a, f, 2, T, d->hv, 0);
    tt_make(&c->b, f, 2, T, d->hv, 0);
    tt_make(&c->out, f, 3, T, d->hv, d->dv);
    tt_fill_normal(&c->x, &s->r, 1, NULL);
    tt_fill_normal(&c->a, &s->r, 1, NULL);
    tt_fill_normal(&c->b, &s->r, 1, NULL);
    c->batch.struct_size = sizeof c->batch;
    c->batch.forward_mode = SGL_ATTN_MODE_EXTEND;
    c->batch.batch_size = bs;
    c->batch.num_tokens = T;
    c->batch.page_size = 1;
    c->batch.seq_lens = &c->sl.t;
    c->batch.extend_seq_lens = &c->el.t;
    c->batch.extend_prefix_lens = &c->pl.t;
    c->batch.state_indices = &c->si.t;
    c->io.struct_size = sizeof c->io;
    c->io.kind = SGL_ATTN_HYBRID_GDN;
    c->io.x = &c->x.t;
    c->io.a = &c->a.t;
    c->io.b = &c->b.t;
    c->io.conv_weight = &s->lw[0].conv_w.t;
    c->io.A_log = &s->lw[0].A_log.t;
    c->io.dt_bias = &s->lw[0].dt_bias.t;
    c->io.out = &c->out.t;
    c->io.use_qk_l2norm = 1;
    c->layer.struct_size = sizeof c->layer;
    c->layer.layer_id = 0;
    c->args.struct_size = sizeof c->args;
    c->args.layer = &c->layer;
    c->args.batch = &c->batch;
    c->args.linear = &c->io;
}

static void free_call(call *c) {
    tt_free(&c->si); tt_free(&c->el); tt_free(&c->pl); tt_free(&c->sl);
    tt_free(&c->x); tt_free(&c->a); tt_free(&c->b); tt_free(&c->out);
}

static void expect(sgl_attn_backend *b, int rc, int want, const char *text) {
    const char *e = b->ops->last_error(b);
    if (rc != want || !strstr(e, text)) print_error("rc %d (want %d), error \"%s\" (want \"%s\")\n", rc, want, e, text);
    assert_int_equal(rc, want);
    assert_non_null(strstr(e, text));
}

/* a good call works (the instance survived whatever came before) */
static void still_works(scen *s) {
    call c;
    make_call(&c, s, 2, 3);
    assert_int_equal(s->b->ops->init_forward_metadata(s->b, &c.batch), SGL_ATTN_OK);
    assert_int_equal(s->b->ops->forward_extend(s->b, &c.args), SGL_ATTN_OK);
    for (size_t i = 0; i < c.out.count; i++) assert_true(isfinite(tt_get(&c.out, i)));
    free_call(&c);
}

static void test_bad_batches(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, SGL_ATTN_DT_F32, -1, 1e-11, 5, 0);
    sgl_attn_backend *b = s.b;
    call c;
    make_call(&c, &s, 3, 2);
    /* forward before any metadata */
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_STATE, "without a successful init_forward_metadata");
    expect(b, b->ops->init_forward_metadata(b, NULL), SGL_ATTN_E_INVALID, "NULL batch");
    c.batch.state_indices = NULL;
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "batch.state_indices is NULL");
    c.batch.state_indices = &c.si.t;
    /* a failed metadata leaves no plan behind */
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_STATE, "init_forward_metadata");
    /* a slot past the pool plans (caller-owned state may hold it) but a pool forward refuses it */
    tt_set(&c.si, 1, SLOTS);
    assert_int_equal(b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_OK);
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID,
           "batch.state_indices[1] = 8; expected -1 (padding) or a slot 0..7 of the wrapper's pool");
    tt_set(&c.si, 1, -7);
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "state_indices[1] = -7");
    tt_set(&c.si, 1, 0);
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "another request of the batch");
    tt_set(&c.si, 1, 1);
    tt_set(&c.el, 2, 3); /* lens sum to 7, num_tokens is 6 */
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "num_tokens = 6");
    tt_set(&c.el, 2, -1);
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "extend_seq_lens = -1");
    tt_set(&c.el, 2, 2);
    tt_set(&c.sl, 0, 5); /* seq_lens != prefix + new */
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "seq_lens = 5");
    tt_set(&c.sl, 0, 2);
    c.batch.batch_size = SLOTS + 1;
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "batch_size = 9");
    c.batch.batch_size = 3;
    c.batch.num_tokens = 100000;
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "max_tokens");
    c.batch.num_tokens = 6;
    c.batch.forward_mode = 9;
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "forward_mode = 9");
    c.batch.forward_mode = SGL_ATTN_MODE_DECODE;
    c.batch.tokens_per_req = 1; /* 3 requests x 1 != 6 tokens */
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "batch_size * tokens_per_req");
    c.batch.forward_mode = SGL_ATTN_MODE_EXTEND;
    ttensor fl;
    tt_make(&fl, tu_dt(SGL_ATTN_DT_F32), 1, 3, 0, 0);
    c.batch.state_indices = &fl.t;
    expect(b, b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_E_INVALID, "expected int32 or int64");
    c.batch.state_indices = &c.si.t;
    tt_free(&fl);
    free_call(&c);
    still_works(&s);
    scen_close(&s);
}

static void test_bad_tensors(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, SGL_ATTN_DT_F32, -1, 1e-11, 6, 0);
    sgl_attn_backend *b = s.b;
    call c;
    make_call(&c, &s, 2, 3);
    assert_int_equal(b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_OK);
    c.layer.layer_id = 4;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "layer_id 4; the model has layers 0..3");
    c.layer.layer_id = 0;
    c.args.linear = NULL;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "args->linear is NULL");
    c.args.linear = &c.io;
    c.io.kind = SGL_ATTN_HYBRID_KDA;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "linear->kind = 4");
    c.io.kind = SGL_ATTN_HYBRID_GDN;
    c.x.shape[1] -= 1;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "gdn layer 0: linear.x has shape [6, 95]; expected [6, 96]");
    c.x.shape[1] += 1;
    c.a.t.dtype = tu_dt(0);
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_UNSUPPORTED, "linear.a has dtype int32; expected float32");
    c.a.t.dtype = tu_dt(SGL_ATTN_DT_F32);
    int64_t strides[2] = {1, 6};
    c.b.t.strides = strides;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_UNSUPPORTED, "linear.b.strides[1] = 6; expected 1");
    c.b.t.strides = NULL;
    c.io.dt_bias = NULL;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "linear.dt_bias is NULL");
    c.io.dt_bias = &s.lw[0].dt_bias.t;
    c.out.t.device.device_type = kDLCUDA;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "linear.out is on DLPack device type 2 (cuda:0)");
    c.out.t.device.device_type = kDLCPU;
    c.args.layer = NULL;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "args->layer is NULL");
    c.args.layer = &c.layer;
    /* nothing was written by the refused calls */
    tt_fill_nan(&c.out);
    c.x.shape[0] = 5;
    expect(b, b->ops->forward_extend(b, &c.args), SGL_ATTN_E_INVALID, "linear.x has shape [5, 96]");
    for (size_t i = 0; i < c.out.count; i++) assert_true(isnan(tt_get(&c.out, i)));
    c.x.shape[0] = 6;
    free_call(&c);
    still_works(&s);
    scen_close(&s);
}

static void test_routing_and_graphs(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, SGL_ATTN_DT_F32, -1, 1e-11, 7, 0);
    sgl_attn_backend *b = s.b;
    assert_int_equal(b->ops->graph_seq_len_fill_value(b), 7); /* the inner's */
    assert_int_equal(b->ops->init_graph_state(b, 8, 64), SGL_ATTN_OK);
    assert_int_equal(s.inner.n_graph_init, 1);
    call c;
    make_call(&c, &s, 2, 1);
    c.batch.forward_mode = SGL_ATTN_MODE_DECODE;
    c.batch.tokens_per_req = 1;
    sgl_attn_graph_args g = {sizeof g, 2, 2, SGL_ATTN_MODE_DECODE, &c.batch, NULL};
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_OK);
    assert_int_equal(b->ops->init_forward_metadata_replay(b, &g), SGL_ATTN_OK);
    assert_int_equal(s.inner.n_capture, 1);
    assert_int_equal(s.inner.n_replay, 1);
    /* the replayed batch is planned for the wrapper's layers too */
    assert_int_equal(b->ops->forward_decode(b, &c.args), SGL_ATTN_OK);
    expect(b, b->ops->init_forward_metadata_replay(b, NULL), SGL_ATTN_E_INVALID, "graph args are NULL");
    /* full layers go to the inner; its failure comes back with its words */
    assert_int_equal(b->ops->init_forward_metadata(b, &c.batch), SGL_ATTN_OK);
    c.layer.layer_id = 3;
    assert_int_equal(b->ops->forward_decode(b, &c.args), SGL_ATTN_OK);
    assert_int_equal(s.inner.last_layer, 3);
    assert_int_equal(s.inner.n_decode, 1);
    assert_ptr_equal(s.inner.last_batch, &c.batch);
    s.inner.fail_forward = 1;
    expect(b, b->ops->forward_decode(b, &c.args), SGL_ATTN_E_DEVICE, "fake inner: device lost");
    s.inner.fail_forward = 0;
    /* idle batches plan nothing and run nothing */
    sgl_attn_batch idle;
    memset(&idle, 0, sizeof idle);
    idle.struct_size = sizeof idle;
    idle.forward_mode = SGL_ATTN_MODE_IDLE;
    assert_int_equal(b->ops->init_forward_metadata(b, &idle), SGL_ATTN_OK);
    c.layer.layer_id = 0;
    c.args.batch = &idle;
    assert_int_equal(b->ops->forward_decode(b, &c.args), SGL_ATTN_OK);
    free_call(&c);
    scen_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptors),     cmocka_unit_test(test_supports_model),
        cmocka_unit_test(test_create_refusals), cmocka_unit_test(test_bad_batches),
        cmocka_unit_test(test_bad_tensors),     cmocka_unit_test(test_routing_and_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
