/* test_cpu_ref_fp8.c - engine fp8 (ABI 1.2): an fp8 KV pool in DLPack 1.1's
 * codes (e4m3fn 10, e5m2 12) and our private e4m3 code, dequantised by
 * k_scale / v_scale given as floats or as scale tensors, and an fp8 q with
 * its descale; the new K/V saved as round-to-nearest-even, saturating
 * codes of k / k_scale.  Checked against float64 math written here, with its
 * own fp8 codec (the nearest of the 256 codes by search, ties to the even
 * code).  Contradicting or malformed scales are refused by name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

enum { E4M3_PRIVATE, E4M3FN, E5M2 };
static const uint8_t dl_code[] = {0x80, 10, 12};

/* The value of an fp8 code, by its definition. */
static double dec(int e5, uint8_t c) {
    const int eb = e5 ? 5 : 4, mb = 8 - 1 - eb, bias = e5 ? 15 : 7;
    const int e = (c >> mb) & ((1 << eb) - 1), m = c & ((1 << mb) - 1);
    double v;
    if (e5 && e == 31) v = m ? NAN : INFINITY;
    else if (!e5 && e == 15 && m == 7) v = NAN;
    else if (e == 0) v = ldexp((double)m, 1 - bias - mb);
    else v = ldexp(1.0 + m / (double)(1 << mb), e - bias);
    return (c & 0x80) ? -v : v;
}

/* The nearest finite code (ties: the even one), so beyond the range it saturates. */
static uint8_t enc(int e5, double x) {
    int best = -1;
    double bd = INFINITY;
    for (int c = 0; c < 256; c++) {
        const double v = dec(e5, (uint8_t)c);
        if (!isfinite(v)) continue;
        const double d = fabs(v - x);
        if (d < bd || (d == bd && !(c & 1) && (v != 0 || !signbit(x) == !(c & 0x80)))) bd = d, best = c;
    }
    return (uint8_t)best;
}

typedef struct fp8_case {
    const char *name;
    int variant;
    float ks, vs;             /* the floats */
    float kst, vst;           /* > 0: a scale tensor holding it */
    int q8;                   /* q in fp8 (the pool's format) with descale qd */
    float qd, qdt;            /* float descale, descale tensor (> 0) */
} fp8_case;

static void run(const tc_spec *spec, const fp8_case *fc) {
    const int e5 = fc->variant == E5M2;
    tc_run r;
    tc_build(&r, spec, 31, 32); /* the pool as f32 values, turned into codes below */
    const tc_spec *s = &r.s;   /* as the fixture completed it (MLA: one kv head) */
    const double ks = fc->kst > 0 ? fc->kst : fc->ks, vs = s->mla ? ks : fc->vst > 0 ? fc->vst : fc->vs;
    const double qd = fc->qdt > 0 ? fc->qdt : fc->qd > 0 ? fc->qd : 1;
    const int64_t krow = (int64_t)s->hkv * s->dqk, vrow = (int64_t)s->hkv * s->dv;
    const int64_t nk = r.slots * krow, nv = s->mla ? 0 : r.slots * vrow;
    uint8_t *kc = malloc((size_t)nk + 1), *vc = malloc((size_t)nv + 1);
    for (int64_t e = 0; e < nk; e++) kc[e] = enc(e5, ((float *)r.k_cache)[e] / ks);
    for (int64_t e = 0; e < nv; e++) vc[e] = enc(e5, ((float *)r.v_cache)[e] / vs);
    const DLDataType f8 = {dl_code[fc->variant], 8, 1};
    r.t_kc.data = kc, r.t_kc.dtype = f8;
    r.t_vc.data = vc, r.t_vc.dtype = f8;
    r.model.kv_dtype = e5 ? SGL_ATTN_DT_FP8_E5M2 : SGL_ATTN_DT_FP8_E4M3;
    /* q: values, or fp8 codes of q / qd */
    const int64_t nq = (int64_t)r.T * s->hq * s->dqk;
    double *qv = malloc(sizeof(double) * (size_t)nq + 8);
    uint8_t *q8 = malloc((size_t)nq + 1);
    for (int64_t e = 0; e < nq; e++) {
        qv[e] = tc_load(s->dt, r.q, (size_t)e);
        if (fc->q8) q8[e] = enc(e5, qv[e] / qd), qv[e] = dec(e5, q8[e]) * qd;
    }
    if (fc->q8) r.t_q.data = q8, r.t_q.dtype = f8;
    sgl_attn_layer *L = &r.layer;
    L->k_scale = fc->ks, L->v_scale = fc->vs, L->q_descale = fc->qd;
    int64_t one[1] = {1};
    float kst = fc->kst, vst = fc->vst, qdt = fc->qdt;
    DLTensor tk = {.data = &kst, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = one};
    DLTensor tv = tk, tq = tk;
    tv.data = &vst, tq.data = &qdt;
    L->k_scale_tensor = fc->kst > 0 ? &tk : NULL;
    L->v_scale_tensor = fc->vst > 0 ? &tv : NULL;
    L->q_descale_tensor = fc->qdt > 0 ? &tq : NULL;

    /* expected pool: the initial codes with the new tokens' codes of k / ks */
    uint8_t *ke = malloc((size_t)nk + 1), *ve = malloc((size_t)nv + 1);
    memcpy(ke, kc, (size_t)nk), memcpy(ve, vc, (size_t)nv);
    for (int64_t t = 0; t < r.T; t++) {
        const int64_t slot = s->idx64 ? ((int64_t *)r.ocl)[t] : ((int32_t *)r.ocl)[t];
        for (int64_t e = 0; e < krow; e++) ke[slot * krow + e] = enc(e5, tc_load(s->dt, r.k, (size_t)(t * krow + e)) / ks);
        for (int64_t e = 0; nv && e < vrow; e++) ve[slot * vrow + e] = enc(e5, tc_load(s->dt, r.v, (size_t)(t * vrow + e)) / vs);
    }
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    int rc = tc_forward(&r, b);
    if (rc) print_message("# %s: %s\n", fc->name, b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_memory_equal(kc, ke, (size_t)nk);
    if (nv) assert_memory_equal(vc, ve, (size_t)nv);

    /* float64 attention over the dequantised pool */
    const int G = s->hq / s->hkv;
    double num = 0, den2 = 0;
    int64_t tok = 0;
    double *sc = malloc(sizeof(double) * (size_t)r.cols);
    for (int i = 0; i < s->bs; i++) {
        const int nn = s->mode == SGL_ATTN_MODE_EXTEND ? s->seq[i] - s->prefix[i] : s->tpr;
        for (int j = 0; j < nn; j++, tok++) {
            const int pos = s->seq[i] - nn + j;
            for (int h = 0; h < s->hq; h++) {
                double mx = -INFINITY;
                for (int p = 0; p <= pos; p++) {
                    const int64_t slot = tc_slot(&r, i, p);
                    double dot = 0;
                    for (int d = 0; d < s->dqk; d++)
                        dot += qv[(tok * s->hq + h) * s->dqk + d] * dec(e5, kc[slot * krow + (h / G) * s->dqk + d]) * ks;
                    double x = dot * (double)s->scale;
                    if (s->softcap > 0) x = s->softcap * tanh(x / s->softcap);
                    sc[p] = x, mx = x > mx ? x : mx;
                }
                double den = 0;
                for (int p = 0; p <= pos; p++) den += exp(sc[p] - mx);
                for (int d = 0; d < s->dv; d++) {
                    double acc = 0;
                    for (int p = 0; p <= pos; p++) {
                        const int64_t slot = tc_slot(&r, i, p);
                        const double vv = s->mla ? dec(e5, kc[slot * krow + d]) * ks
                                                 : dec(e5, vc[slot * vrow + (h / G) * s->dv + d]) * vs;
                        acc += exp(sc[p] - mx) * vv;
                    }
                    const double want = acc / den, got = tc_out(&r, (size_t)((tok * s->hq + h) * s->dv + d));
                    num += (got - want) * (got - want), den2 += want * want;
                }
            }
        }
    }
    const double e = num / den2;
    print_message("# %s: nmse %.3g (pool codes as expected)\n", fc->name, e);
    assert_true(e < (s->dt == SGL_ATTN_DT_BF16 ? 1e-5 : s->dt == SGL_ATTN_DT_F16 ? 1e-7 : 1e-11));
    free(sc), free(qv), free(q8), free(kc), free(vc), free(ke), free(ve);
    r.t_kc.data = r.k_cache, r.t_vc.data = r.v_cache;
    b->ops->destroy(b);
    tc_free(&r);
}

static tc_spec base(int mode, uint32_t dt) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode, s.bs = 3, s.hq = 8, s.hkv = 2, s.dqk = 64, s.dv = 64, s.page = 16, s.window = -1;
    s.dt = dt, s.kv_dt = SGL_ATTN_DT_F32, s.save = 1, s.tpr = 1;
    s.seq[0] = 60, s.seq[1] = 7, s.seq[2] = 150;
    s.prefix[0] = 20, s.prefix[1] = 0, s.prefix[2] = 140;
    return s;
}

static void test_fp8_pools(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16);
    run(&s, &(fp8_case){"extend, e4m3 (private code), float scales 0.5 / 2", E4M3_PRIVATE, 0.5f, 2.0f, 0, 0, 0, 0, 0});
    s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_F32);
    run(&s, &(fp8_case){"decode, e4m3fn, scale tensors 0.25 / 0.5 (floats 1)", E4M3FN, 1, 1, 0.25f, 0.5f, 0, 0, 0});
    s = base(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_F16);
    s.softcap = 30;
    run(&s, &(fp8_case){"extend, e5m2, no scales, soft-cap", E5M2, 1, 1, 0, 0, 0, 0, 0});
    s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16);
    run(&s, &(fp8_case){"decode, e4m3fn, k_scale 0.004: saved codes saturate", E4M3FN, 0.004f, 1, 0, 0, 0, 0, 0});
    s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16);
    run(&s, &(fp8_case){"decode, e4m3fn q with q_descale_tensor 0.5, tensor and float agree", E4M3FN, 1, 1, 0.5f, 0.5f,
                        1, 0, 0.5f});
    s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16);
    s.mla = 1, s.hq = 8, s.dqk = 96, s.dv = 64, s.page = 1;
    run(&s, &(fp8_case){"decode MLA, e4m3fn, k_scale 0.5 (the value's too)", E4M3FN, 0.5f, 1, 0, 0, 0, 0, 0});
}

/* An encoder-only layer over an fp8 pool: its keys are the call's k / v as
 * given, so the pool's dequant scales apply to the save only, never to the
 * attention; the saved codes are k / k_scale as for any layer. */
static void test_encoder_only_fp8_pool(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16);
    tc_run r;
    tc_build(&r, &s, 41, 42);
    const double ks = 0.25, vs = 4;
    const int64_t krow = (int64_t)s.hkv * s.dqk, vrow = (int64_t)s.hkv * s.dv, n = r.slots * krow;
    uint8_t *kc = calloc((size_t)n, 1), *vc = calloc((size_t)r.slots * (size_t)vrow, 1);
    const DLDataType f8 = {dl_code[E4M3FN], 8, 1};
    r.t_kc.data = kc, r.t_kc.dtype = f8;
    r.t_vc.data = vc, r.t_vc.dtype = f8;
    r.model.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    r.layer.k_scale = (float)ks, r.layer.v_scale = (float)vs;
    r.layer.attn_type = SGL_ATTN_TYPE_ENCODER_ONLY;
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    int rc = tc_forward(&r, b);
    if (rc) print_message("# encoder-only fp8: %s\n", b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    const int G = s.hq / s.hkv;
    double num = 0, den2 = 0;
    int64_t tok0 = 0;
    double sc[256];
    for (int i = 0; i < s.bs; i++) {
        const int nn = s.seq[i] - s.prefix[i];
        for (int j = 0; j < nn; j++)
            for (int h = 0; h < s.hq; h++) {
                const int64_t t = tok0 + j;
                double mx = -INFINITY, den = 0;
                for (int p = 0; p < nn; p++) {
                    double dot = 0;
                    for (int d = 0; d < s.dqk; d++)
                        dot += tc_load(s.dt, r.q, (size_t)((t * s.hq + h) * s.dqk + d)) *
                               tc_load(s.dt, r.k, (size_t)((tok0 + p) * krow + (h / G) * s.dqk + d));
                    sc[p] = dot * (double)r.s.scale, mx = sc[p] > mx ? sc[p] : mx;
                }
                for (int p = 0; p < nn; p++) den += exp(sc[p] - mx);
                for (int d = 0; d < s.dv; d++) {
                    double acc = 0;
                    for (int p = 0; p < nn; p++)
                        acc += exp(sc[p] - mx) * tc_load(s.dt, r.v, (size_t)((tok0 + p) * vrow + (h / G) * s.dv + d));
                    const double want = acc / den, got = tc_out(&r, (size_t)((t * s.hq + h) * s.dv + d));
                    num += (got - want) * (got - want), den2 += want * want;
                }
            }
        tok0 += nn;
    }
    /* the save: codes of k / k_scale at out_cache_loc */
    const int64_t slot = s.idx64 ? ((int64_t *)r.ocl)[0] : ((int32_t *)r.ocl)[0];
    for (int64_t e = 0; e < krow; e++) assert_int_equal(kc[slot * krow + e], enc(0, tc_load(s.dt, r.k, (size_t)e) / ks));
    print_message("# encoder-only over an e4m3fn pool (k_scale 0.25, v_scale 4): nmse %.3g\n", num / den2);
    assert_true(num / den2 < 1e-5);
    r.t_kc.data = r.k_cache, r.t_vc.data = r.v_cache;
    free(kc), free(vc);
    b->ops->destroy(b);
    tc_free(&r);
}

static void expect_refused(tc_run *r, int status, const char *text) {
    char err[256];
    sgl_attn_backend *b = tc_create(r, err, sizeof err);
    int rc = tc_forward(r, b);
    print_message("# %s\n", b->ops->last_error(b));
    assert_int_equal(rc, status);
    assert_non_null(strstr(b->ops->last_error(b), text));
    b->ops->destroy(b);
}

static void test_bad_scales(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16);
    tc_run r;
    tc_build(&r, &s, 5, 6);
    const int64_t n = r.slots * 2 * 64;
    uint8_t *kc = calloc((size_t)n, 1), *vc = calloc((size_t)n, 1);
    r.t_kc.data = kc, r.t_vc.data = vc;
    r.t_kc.dtype = r.t_vc.dtype = (DLDataType){10, 8, 1};
    float v = 0.25f;
    uint16_t h = 0x3c00;
    int64_t one[1] = {1};
    DLTensor ts = {.data = &v, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = one};
    r.layer.k_scale = 0.5f;
    r.layer.k_scale_tensor = &ts;
    expect_refused(&r, SGL_ATTN_E_INVALID, "k_scale = 0.5 but k_scale_tensor holds 0.25: they disagree");
    r.layer.k_scale = 1;
    ts.data = &h, ts.dtype = (DLDataType){kDLFloat, 16, 1};
    expect_refused(&r, SGL_ATTN_E_UNSUPPORTED, "layer.k_scale_tensor has dtype float16; expected float32");
    ts.data = &v, ts.dtype = (DLDataType){kDLFloat, 32, 1};
    v = -1;
    expect_refused(&r, SGL_ATTN_E_INVALID, "k_scale_tensor holds -1; expected a finite scale > 0");
    v = 0.25f;
    r.layer.k_scale_tensor = NULL;
    r.layer.v_scale = 0;
    expect_refused(&r, SGL_ATTN_E_INVALID, "v_scale = 0; expected a finite scale > 0");
    r.layer.v_scale = 1;
    r.layer.q_descale = 0.5f;
    expect_refused(&r, SGL_ATTN_E_INVALID, "a q descale (0.5) is given but q is not fp8");
    r.layer.q_descale = 0;
    /* scale tensors on a bf16 pool */
    r.t_kc.data = r.k_cache, r.t_vc.data = r.v_cache;
    r.t_kc.dtype = r.t_vc.dtype = (DLDataType){kDLFloat, 32, 1};
    r.layer.v_scale_tensor = &ts;
    expect_refused(&r, SGL_ATTN_E_INVALID, "layer.v_scale_tensor is set but the pool is not fp8");
    free(kc), free(vc);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_pools),
        cmocka_unit_test(test_bad_scales),
        cmocka_unit_test(test_encoder_only_fp8_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
