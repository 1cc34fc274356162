/* test_cpu_ref_ragged.c - forward_ragged (ABI 1.2): K/V as tensors with
 * cu_seqlens, causal (bottom-right) and not, qk 192 / v 128 (DeepSeek's MLA
 * prefill) and d128, with the LSE output; checked against float64 math
 * written here.  Merging a prefix chunk and the new tokens by their LSE
 * equals attention over the whole (DeepSeek's prefix-chunk use).  A ragged
 * call leaves the batch planned by init_forward_metadata usable, and takes
 * nothing from a previous engine-input layer (attention type).  Bad
 * cu_seqlens, lse and shapes are refused naming the field and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

typedef struct rg {
    int bs, hq, hkv, dqk, dv, causal;
    uint32_t dt;
    int lq[8], lk[8];
    float scale, softcap;
    int32_t cq[9], ck[9];
    int Tq, Tk;
    void *q, *k, *v, *out;
    float *lse;
    int64_t sh_q[3], sh_k[3], sh_v[3], sh_o[3], sh_l[2], sh_c[1];
    DLTensor tq, tk, tv, to, tl, tcq, tck;
    sgl_attn_ragged_args a;
} rg;

static DLDataType dl(uint32_t dt) {
    DLDataType t = {kDLFloat, 32, 1};
    if (dt == SGL_ATTN_DT_BF16) t.code = kDLBfloat, t.bits = 16;
    if (dt == SGL_ATTN_DT_F16) t.bits = 16;
    if (dt == SGL_ATTN_DT_F64) t.bits = 64;
    return t;
}

/* Random q / k / v of g's lengths (value stream `seed`), every tensor wired into g->a. */
static void rg_build(rg *g, uint64_t seed) {
    uint64_t st = seed;
    g->cq[0] = g->ck[0] = 0;
    for (int i = 0; i < g->bs; i++) g->cq[i + 1] = g->cq[i] + g->lq[i], g->ck[i + 1] = g->ck[i] + g->lk[i];
    g->Tq = g->cq[g->bs], g->Tk = g->ck[g->bs];
    const size_t sz = tc_size(g->dt);
    g->q = malloc(sz * (size_t)(g->Tq * g->hq * g->dqk) + 8);
    g->k = malloc(sz * (size_t)(g->Tk * g->hkv * g->dqk) + 8);
    g->v = malloc(sz * (size_t)(g->Tk * g->hkv * g->dv) + 8);
    g->out = malloc(sz * (size_t)(g->Tq * g->hq * g->dv) + 8);
    g->lse = malloc(sizeof(float) * (size_t)(g->Tq * g->hq) + 8);
    for (int64_t e = 0; e < (int64_t)g->Tq * g->hq * g->dqk; e++) tc_store(g->dt, g->q, (size_t)e, 1.5 * tc_normal(&st));
    for (int64_t e = 0; e < (int64_t)g->Tk * g->hkv * g->dqk; e++) tc_store(g->dt, g->k, (size_t)e, tc_normal(&st));
    for (int64_t e = 0; e < (int64_t)g->Tk * g->hkv * g->dv; e++) tc_store(g->dt, g->v, (size_t)e, tc_normal(&st));
    memset(g->out, 0xff, sz * (size_t)(g->Tq * g->hq * g->dv));
    memset(g->lse, 0xff, sizeof(float) * (size_t)(g->Tq * g->hq));
    if (g->scale == 0) g->scale = (float)(1.0 / sqrt((double)g->dqk));
    g->sh_q[0] = g->Tq, g->sh_q[1] = g->hq, g->sh_q[2] = g->dqk;
    g->sh_k[0] = g->Tk, g->sh_k[1] = g->hkv, g->sh_k[2] = g->dqk;
    g->sh_v[0] = g->Tk, g->sh_v[1] = g->hkv, g->sh_v[2] = g->dv;
    g->sh_o[0] = g->Tq, g->sh_o[1] = g->hq, g->sh_o[2] = g->dv;
    g->sh_l[0] = g->Tq, g->sh_l[1] = g->hq;
    g->sh_c[0] = g->bs + 1;
    tc_wrap(&g->tq, g->q, dl(g->dt), 3, g->sh_q);
    tc_wrap(&g->tk, g->k, dl(g->dt), 3, g->sh_k);
    tc_wrap(&g->tv, g->v, dl(g->dt), 3, g->sh_v);
    tc_wrap(&g->to, g->out, dl(g->dt), 3, g->sh_o);
    tc_wrap(&g->tl, g->lse, dl(SGL_ATTN_DT_F32), 2, g->sh_l);
    tc_wrap(&g->tcq, g->cq, (DLDataType){kDLInt, 32, 1}, 1, g->sh_c);
    tc_wrap(&g->tck, g->ck, (DLDataType){kDLInt, 32, 1}, 1, g->sh_c);
    sgl_attn_ragged_args *a = &g->a;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->batch_size = g->bs;
    a->num_q_heads = g->hq, a->num_kv_heads = g->hkv, a->head_dim_qk = g->dqk, a->head_dim_v = g->dv;
    a->sm_scale = g->scale;
    a->logit_softcap = g->softcap;
    a->causal = g->causal;
    a->q = &g->tq, a->k = &g->tk, a->v = &g->tv, a->out = &g->to, a->lse = &g->tl;
    a->cu_seqlens_q = &g->tcq, a->cu_seqlens_k = &g->tck;
}

static void rg_free(rg *g) {
    free(g->q), free(g->k), free(g->v), free(g->out), free(g->lse);
}

/* float64 attention of g: ref [Tq, hq, dv], lse_ref [Tq, hq]. */
static void rg_ref(const rg *g, double *ref, double *lse_ref) {
    const int G = g->hq / g->hkv;
    double *sc = malloc(sizeof(double) * (size_t)(g->Tk + 1));
    for (int i = 0; i < g->bs; i++)
        for (int j = 0; j < g->lq[i]; j++) {
            const int t = g->cq[i] + j;
            const int hi = g->causal ? g->lk[i] - g->lq[i] + j + 1 : g->lk[i]; /* keys [0, hi) */
            for (int h = 0; h < g->hq; h++) {
                double mx = -INFINITY;
                for (int n = 0; n < hi; n++) {
                    double dot = 0;
                    for (int d = 0; d < g->dqk; d++)
                        dot += tc_load(g->dt, g->q, (size_t)(((int64_t)t * g->hq + h) * g->dqk + d)) *
                               tc_load(g->dt, g->k, (size_t)(((int64_t)(g->ck[i] + n) * g->hkv + h / G) * g->dqk + d));
                    double x = dot * (double)g->scale;
                    if (g->softcap > 0) x = g->softcap * tanh(x / g->softcap);
                    sc[n] = x;
                    mx = x > mx ? x : mx;
                }
                double den = 0;
                for (int n = 0; n < hi; n++) den += exp(sc[n] - mx);
                lse_ref[(int64_t)t * g->hq + h] = hi > 0 ? mx + log(den) : -INFINITY;
                for (int d = 0; d < g->dv; d++) {
                    double num = 0;
                    for (int n = 0; n < hi; n++)
                        num += exp(sc[n] - mx) *
                               tc_load(g->dt, g->v, (size_t)(((int64_t)(g->ck[i] + n) * g->hkv + h / G) * g->dv + d));
                    ref[((int64_t)t * g->hq + h) * g->dv + d] = hi > 0 ? num / den : 0;
                }
            }
        }
    free(sc);
}

static sgl_attn_backend *create(int hq, int hkv, int dqk, int dv, uint32_t dt, int max_reqs, int max_tokens) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_layers = 1, m.num_q_heads = hq, m.num_kv_heads = hkv, m.head_dim_qk = dqk, m.head_dim_v = dv;
    m.dtype = m.kv_dtype = dt;
    m.page_size = 1;
    char err[256] = "";
    sgl_attn_create_args a = {.struct_size = sizeof a, .model = &m, .device = 0, .max_reqs = max_reqs,
                              .max_tokens = max_tokens, .max_context = 4096, .error = err, .error_size = sizeof err};
    sgl_attn_backend *b = NULL;
    assert_int_equal(tc_plugin()->create(&a, &b), SGL_ATTN_OK);
    return b;
}

static double nmse(const rg *g, const double *ref) {
    double num = 0, den = 0;
    for (int64_t e = 0; e < (int64_t)g->Tq * g->hq * g->dv; e++) {
        double x = tc_load(g->dt, g->out, (size_t)e), d = x - ref[e];
        num += d * d, den += ref[e] * ref[e];
    }
    return num / den;
}

static double lse_err(const rg *g, const double *lse_ref) {
    double worst = 0;
    for (int64_t e = 0; e < (int64_t)g->Tq * g->hq; e++) {
        if (isinf(lse_ref[e]) && g->lse[e] == (float)lse_ref[e]) continue;
        double d = fabs((double)g->lse[e] - lse_ref[e]);
        worst = d > worst || isnan(d) ? d : worst;
    }
    return worst;
}

/* qk 192 / v 128 and d128, causal and not, f32 / bf16 / f64, with soft-cap once. */
static void test_ragged_matches_f64(void **state) {
    (void)state;
    static const struct {
        int hq, hkv, dqk, dv, causal;
        uint32_t dt;
        float softcap;
    } cs[] = {
        {4, 4, 192, 128, 1, SGL_ATTN_DT_BF16, 0}, {4, 4, 192, 128, 0, SGL_ATTN_DT_F32, 0},
        {8, 2, 128, 128, 1, SGL_ATTN_DT_F32, 0},  {8, 2, 128, 128, 0, SGL_ATTN_DT_BF16, 30},
        {4, 4, 192, 128, 1, SGL_ATTN_DT_F64, 0},
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        rg g;
        memset(&g, 0, sizeof g);
        g.bs = 4, g.hq = cs[c].hq, g.hkv = cs[c].hkv, g.dqk = cs[c].dqk, g.dv = cs[c].dv;
        g.causal = cs[c].causal, g.dt = cs[c].dt, g.softcap = cs[c].softcap;
        /* a request with no query, q < k (a prefix), q = k, and a long one (decode splits may cut it) */
        const int lq[] = {0, 37, 64, 90}, lk[] = {20, 100, 64, 1300};
        memcpy(g.lq, lq, sizeof lq), memcpy(g.lk, lk, sizeof lk);
        rg_build(&g, 100 + c);
        sgl_attn_backend *b = create(g.hq, g.hkv, 192, 128, g.dt, 8, 256);
        assert_int_equal(b->ops->forward_ragged(b, &g.a), SGL_ATTN_OK);
        double *ref = malloc(sizeof(double) * (size_t)(g.Tq * g.hq * g.dv)), *lref = malloc(sizeof(double) * (size_t)(g.Tq * g.hq));
        rg_ref(&g, ref, lref);
        const double lim = g.dt == SGL_ATTN_DT_F64 ? 1e-24 : g.dt == SGL_ATTN_DT_F32 ? 1e-11 : 1e-5;
        const double e = nmse(&g, ref), le = lse_err(&g, lref);
        print_message("# ragged hq %d hkv %d d %d/%d causal %d dt %u: nmse %.3g, lse max err %.3g\n", g.hq, g.hkv,
                      g.dqk, g.dv, g.causal, g.dt, e, le);
        assert_true(e < lim);
        assert_true(le < 1e-5); /* the LSE is fp32 whatever the path */
        free(ref), free(lref);
        b->ops->destroy(b);
        rg_free(&g);
    }
}

/* DeepSeek's prefix chunks: new tokens attend to the cached prefix (all of
 * it, non-causal) and to themselves (causal); the two results merged by
 * their LSE equal one causal call over prefix + new keys. */
static void test_lse_merge_equals_whole(void **state) {
    (void)state;
    const int bs = 3, lq[] = {40, 1, 70}, lp[] = {90, 300, 0};
    rg whole, pre, self;
    memset(&whole, 0, sizeof whole);
    whole.bs = bs, whole.hq = 4, whole.hkv = 4, whole.dqk = 192, whole.dv = 128, whole.causal = 1;
    whole.dt = SGL_ATTN_DT_F32;
    for (int i = 0; i < bs; i++) whole.lq[i] = lq[i], whole.lk[i] = lp[i] + lq[i];
    rg_build(&whole, 7);
    pre = whole, self = whole;
    for (int i = 0; i < bs; i++) pre.lk[i] = lp[i], self.lk[i] = lq[i];
    pre.causal = 0;
    rg_build(&pre, 8);
    rg_build(&self, 9);
    /* the halves take whole's values: q as is, each request's keys split at its prefix */
    const size_t qb = sizeof(float) * (size_t)(whole.Tq * whole.hq * whole.dqk);
    memcpy(pre.q, whole.q, qb), memcpy(self.q, whole.q, qb);
    const int64_t kr = whole.hkv * whole.dqk, vr = whole.hkv * whole.dv;
    for (int i = 0; i < bs; i++) {
        float *wk = (float *)whole.k + whole.ck[i] * kr, *wv = (float *)whole.v + whole.ck[i] * vr;
        memcpy((float *)pre.k + pre.ck[i] * kr, wk, sizeof(float) * (size_t)(lp[i] * kr));
        memcpy((float *)pre.v + pre.ck[i] * vr, wv, sizeof(float) * (size_t)(lp[i] * vr));
        memcpy((float *)self.k + self.ck[i] * kr, wk + lp[i] * kr, sizeof(float) * (size_t)(lq[i] * kr));
        memcpy((float *)self.v + self.ck[i] * vr, wv + lp[i] * vr, sizeof(float) * (size_t)(lq[i] * vr));
    }
    sgl_attn_backend *b = create(4, 4, 192, 128, SGL_ATTN_DT_F32, 4, 256);
    assert_int_equal(b->ops->forward_ragged(b, &whole.a), SGL_ATTN_OK);
    assert_int_equal(b->ops->forward_ragged(b, &pre.a), SGL_ATTN_OK);
    assert_int_equal(b->ops->forward_ragged(b, &self.a), SGL_ATTN_OK);
    double worst = 0, worst_lse = 0;
    for (int t = 0; t < whole.Tq; t++)
        for (int h = 0; h < whole.hq; h++) {
            const double la = pre.lse[t * 4 + h], lb = self.lse[t * 4 + h];
            /* a request with no prefix: its prefix part is empty (lse -inf, out 0) */
            const double mx = la > lb ? la : lb, l = mx + log(exp(la - mx) + exp(lb - mx));
            worst_lse = fmax(worst_lse, fabs(l - whole.lse[t * 4 + h]));
            for (int d = 0; d < 128; d++) {
                const size_t e = ((size_t)t * 4 + (size_t)h) * 128 + (size_t)d;
                const double m = ((float *)pre.out)[e] * exp(la - l) + ((float *)self.out)[e] * exp(lb - l);
                worst = fmax(worst, fabs(m - ((float *)whole.out)[e]));
            }
        }
    print_message("# merged by LSE vs whole: max |out| err %.3g, max lse err %.3g\n", worst, worst_lse);
    assert_true(worst < 1e-5);
    assert_true(worst_lse < 1e-5);
    b->ops->destroy(b);
    rg_free(&whole), rg_free(&pre), rg_free(&self);
}

/* Three ragged requests (q 5 / 3 / 2 tokens over k 9 / 3 / 40), 4 heads,
 * qk 192 / v 128, causal, f32, drawn from `seed`. */
static void ragged_three(rg *g, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->bs = 3, g->hq = 4, g->hkv = 4, g->dqk = 192, g->dv = 128, g->causal = 1, g->dt = SGL_ATTN_DT_F32;
    g->lq[0] = 5, g->lk[0] = 9, g->lq[1] = 3, g->lk[1] = 3, g->lq[2] = 2, g->lk[2] = 40;
    rg_build(g, seed);
}

/* A paged extend of two requests (50 tokens after a 20-token prefix, 33
 * new) with the same heads, layer attention `attn_type`, data from seeds
 * s1 / s2, on a new cpu_ref backend whose init_forward_metadata has run. */
static sgl_attn_backend *paged_two(tc_run *r, uint64_t s1, uint64_t s2, int32_t attn_type) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = SGL_ATTN_MODE_EXTEND, s.bs = 2, s.hq = 4, s.hkv = 4, s.dqk = 192, s.dv = 128, s.page = 16;
    s.window = -1, s.dt = s.kv_dt = SGL_ATTN_DT_F32, s.save = 1;
    s.seq[0] = 50, s.prefix[0] = 20, s.seq[1] = 33, s.prefix[1] = 0;
    tc_build(r, &s, s1, s2);
    r->layer.attn_type = attn_type;
    char err[256];
    sgl_attn_backend *b = tc_create(r, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ops->init_forward_metadata(b, &r->batch), SGL_ATTN_OK);
    return b;
}

/* A ragged call between init_forward_metadata and the paged forward leaves the plan as it was. */
static void test_plan_survives_ragged(void **state) {
    (void)state;
    tc_run r;
    sgl_attn_backend *b = paged_two(&r, 3, 4, SGL_ATTN_TYPE_CAUSAL);
    rg g;
    ragged_three(&g, 11);
    assert_int_equal(b->ops->forward_ragged(b, &g.a), SGL_ATTN_OK);
    assert_int_equal(b->ops->forward_extend(b, &r.args), SGL_ATTN_OK);
    double *ref = malloc(sizeof(double) * tc_out_count(&r));
    tc_naive(&r, ref);
    assert_true(tc_nmse(&r, ref) < 1e-11);
    free(ref);
    b->ops->destroy(b);
    tc_free(&r);
    rg_free(&g);
}

/* A ragged call after a paged forward on a layer with ABI 1.2 engine inputs
 * (here a bidirectional attention type) runs as plain causal attention over
 * its own tensors: nothing of that layer's job carries over. */
static void test_ragged_after_engine_layer(void **state) {
    (void)state;
    tc_run r;
    sgl_attn_backend *b = paged_two(&r, 5, 6, SGL_ATTN_TYPE_BIDIRECTIONAL);
    assert_int_equal(b->ops->forward_extend(b, &r.args), SGL_ATTN_OK);
    rg g;
    ragged_three(&g, 12);
    assert_int_equal(b->ops->forward_ragged(b, &g.a), SGL_ATTN_OK);
    double *ref = malloc(sizeof(double) * (size_t)(g.Tq * g.hq * g.dv)), *lref = malloc(sizeof(double) * (size_t)(g.Tq * g.hq));
    rg_ref(&g, ref, lref);
    assert_true(nmse(&g, ref) < 1e-11);
    assert_true(lse_err(&g, lref) < 1e-5);
    free(ref), free(lref);
    b->ops->destroy(b);
    tc_free(&r);
    rg_free(&g);
}

static void expect(sgl_attn_backend *b, const rg *g, int status, const char *text) {
    int rc = b->ops->forward_ragged(b, &g->a);
    const char *e = b->ops->last_error(b);
    print_message("# %s\n", e);
    assert_int_equal(rc, status);
    assert_non_null(strstr(e, text));
}

static void test_bad_inputs(void **state) {
    (void)state;
    rg g;
    ragged_three(&g, 12);
    sgl_attn_backend *b = create(4, 4, 192, 128, SGL_ATTN_DT_F32, 4, 256);
    assert_int_equal(b->ops->forward_ragged(b, &g.a), SGL_ATTN_OK);
    g.cq[2] = 2; /* 0, 5, 2, 10: not monotone */
    expect(b, &g, SGL_ATTN_E_INVALID, "cu_seqlens_q[2] = 2 after 5");
    g.cq[2] = 8;
    g.ck[0] = 1;
    expect(b, &g, SGL_ATTN_E_INVALID, "cu_seqlens_k[0] = 1");
    g.ck[0] = 0;
    g.sh_l[1] = 5; /* lse [Tq, 5] */
    expect(b, &g, SGL_ATTN_E_INVALID, "forward_ragged: lse");
    g.sh_l[1] = 4;
    g.tl.dtype = (DLDataType){kDLBfloat, 16, 1};
    expect(b, &g, SGL_ATTN_E_UNSUPPORTED, "forward_ragged: lse has dtype bfloat16; expected float32");
    g.tl.dtype = (DLDataType){kDLFloat, 32, 1};
    g.a.max_seqlen_k = 39;
    expect(b, &g, SGL_ATTN_E_INVALID, "max_seqlen_k = 39 but a request has 40 tokens");
    g.a.max_seqlen_k = 0;
    g.a.head_dim_qk = 256;
    expect(b, &g, SGL_ATTN_E_INVALID, "head_dim_qk 256");
    g.a.head_dim_qk = 192;
    g.tv.dtype = (DLDataType){kDLBfloat, 16, 1};
    g.sh_v[0] = g.Tk;
    expect(b, &g, SGL_ATTN_E_INVALID, "k is float32 but v is bfloat16");
    g.tv.dtype = (DLDataType){kDLFloat, 32, 1};
    g.sh_k[0] = g.Tk - 1;
    expect(b, &g, SGL_ATTN_E_INVALID, "forward_ragged: k");
    g.sh_k[0] = g.Tk;
    g.a.struct_size = 40;
    expect(b, &g, SGL_ATTN_E_INVALID, "struct_size 40");
    b->ops->destroy(b);
    rg_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ragged_matches_f64),
        cmocka_unit_test(test_lse_merge_equals_whole),
        cmocka_unit_test(test_plan_survives_ragged),
        cmocka_unit_test(test_ragged_after_engine_layer),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
