/* test_cpu_ref_hand.c - tiny cases whose answers are written out by hand
 * (closed forms in exp/tanh), each on the f64 and the f32 path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

static const uint32_t paths[] = {SGL_ATTN_DT_F64, SGL_ATTN_DT_F32};

static void set_k(tc_run *r, int req, int col, int h, int d, double v) {
    int64_t slot = tc_slot(r, req, col);
    tc_store(r->s.kv_dt, r->k_cache, (size_t)((slot * r->s.hkv + h) * r->s.dqk + d), v);
}
static void set_v(tc_run *r, int req, int col, int h, int d, double v) {
    int64_t slot = tc_slot(r, req, col);
    tc_store(r->s.kv_dt, r->v_cache, (size_t)((slot * r->s.hkv + h) * r->s.dv + d), v);
}
static void set_q(tc_run *r, int tok, int h, int d, double v) {
    tc_store(r->s.dt, r->q, (size_t)((tok * r->s.hq + h) * r->s.dqk + d), v);
}
static double out(const tc_run *r, int tok, int h, int d) {
    return tc_out(r, (size_t)((tok * r->s.hq + h) * r->s.dv + d));
}

static tc_spec spec(int mode, uint32_t dt, int hq, int hkv, int dqk, int dv) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode;
    s.bs = 1;
    s.hq = hq, s.hkv = hkv, s.dqk = dqk, s.dv = dv;
    s.page = 1;
    s.window = -1;
    s.tpr = 1;
    s.dt = s.kv_dt = dt;
    s.scale = 1.0f;
    return s;
}

/* Zero the whole pool and q so only the values a case sets matter. */
static void clear(tc_run *r) {
    memset(r->k_cache, 0, (size_t)(r->slots * r->s.hkv * r->s.dqk) * tc_size(r->s.kv_dt));
    if (r->v_cache) memset(r->v_cache, 0, (size_t)(r->slots * r->s.hkv * r->s.dv) * tc_size(r->s.kv_dt));
    memset(r->q, 0, (size_t)(r->T * r->s.hq * r->s.dqk) * tc_size(r->s.dt));
}

static void run(tc_run *r) {
    char err[512] = "";
    sgl_attn_backend *b = tc_create_forward(r, err, sizeof err);
    if (!b) fail_msg("%s", err);
    b->ops->destroy(b);
}

#define NEAR(got, want, dt)                                                                               \
    do {                                                                                                  \
        double g_ = (got), w_ = (want), tol_ = (dt) == SGL_ATTN_DT_F64 ? 1e-13 : 2e-6;                   \
        if (!(fabs(g_ - w_) <= tol_ * (1 + fabs(w_)))) fail_msg("%s = %.15g, expected %.15g", #got, g_, w_); \
    } while (0)

/* Two keys, one query: softmax of (1, 0). */
static void test_two_keys(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        for (int sink = 0; sink < 2; sink++) {
            tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 1, 1, 2, 2);
            s.seq[0] = 2;
            s.sinks = sink;
            tc_run r;
            tc_build(&r, &s, 1, 2);
            r.args.save_kv_cache = 0; /* the pool already holds both keys */
            clear(&r);
            r.sinks[0] = 0.0f;
            set_q(&r, 0, 0, 0, 1.0);
            set_k(&r, 0, 0, 0, 0, 1.0);
            set_k(&r, 0, 1, 0, 1, 1.0);
            set_v(&r, 0, 0, 0, 0, 1.0), set_v(&r, 0, 0, 0, 1, 2.0);
            set_v(&r, 0, 1, 0, 0, 3.0), set_v(&r, 0, 1, 0, 1, 4.0);
            run(&r);
            const double e = exp(1.0), den = e + 1 + (sink ? 1 : 0); /* a sink of logit 0 adds e^0 */
            NEAR(out(&r, 0, 0, 0), (e * 1 + 3) / den, paths[p]);
            NEAR(out(&r, 0, 0, 1), (e * 2 + 4) / den, paths[p]);
            tc_free(&r);
        }
    }
}

/* Soft-cap bends the score: s = c tanh(s / c) after the scale. */
static void test_softcap(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 1, 1, 2, 1);
        s.seq[0] = 2;
        s.softcap = 2.0f;
        s.scale = 0.5f;
        tc_run r;
        tc_build(&r, &s, 3, 4);
        r.args.save_kv_cache = 0;
        clear(&r);
        set_q(&r, 0, 0, 0, 8.0); /* score 8 * 0.5 = 4, capped to 2 tanh(2) */
        set_k(&r, 0, 0, 0, 0, 1.0);
        set_v(&r, 0, 0, 0, 0, 5.0);
        set_v(&r, 0, 1, 0, 0, -1.0);
        run(&r);
        const double w = exp(2.0 * tanh(2.0));
        NEAR(out(&r, 0, 0, 0), (w * 5 - 1) / (w + 1), paths[p]);
        tc_free(&r);
    }
}

/* Window 0: a query sees only itself; window 1: itself and one before. */
static void test_window(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++)
        for (int w = 0; w < 2; w++) {
            tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 1, 1, 1, 1);
            s.seq[0] = 3;
            s.window = w;
            tc_run r;
            tc_build(&r, &s, 5, 6);
            r.args.save_kv_cache = 0;
            clear(&r);
            set_q(&r, 0, 0, 0, 1.0);
            for (int c = 0; c < 3; c++) set_k(&r, 0, c, 0, 0, (double)c), set_v(&r, 0, c, 0, 0, 10.0 * (c + 1));
            run(&r);
            /* scores are the positions: keys 1 and 2 weigh e^1 and e^2 */
            double want = w == 0 ? 30.0 : (exp(1.0) * 20 + exp(2.0) * 30) / (exp(1.0) + exp(2.0));
            NEAR(out(&r, 0, 0, 0), want, paths[p]);
            tc_free(&r);
        }
}

/* Extend of two new tokens, no prefix: causal, and the new K/V saved first. */
static void test_extend_causal(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        tc_spec s = spec(SGL_ATTN_MODE_EXTEND, paths[p], 1, 1, 1, 1);
        s.seq[0] = 2;
        s.prefix[0] = 0;
        s.save = 1;
        tc_run r;
        tc_build(&r, &s, 7, 8);
        clear(&r);
        set_q(&r, 0, 0, 0, 1.0);
        set_q(&r, 1, 0, 0, 2.0);
        tc_store(s.dt, r.k, 0, 1.0), tc_store(s.dt, r.k, 1, -1.0);
        tc_store(s.dt, r.v, 0, 10.0), tc_store(s.dt, r.v, 1, 20.0);
        run(&r);
        NEAR(out(&r, 0, 0, 0), 10.0, paths[p]); /* token 0 sees key 0 only */
        const double a = exp(2.0), c = exp(-2.0);
        NEAR(out(&r, 1, 0, 0), (a * 10 + c * 20) / (a + c), paths[p]);
        tc_free(&r);
    }
}

/* GQA 4/2: q head h reads kv head h / 2. */
static void test_gqa_mapping(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 4, 2, 1, 1);
        s.seq[0] = 2;
        tc_run r;
        tc_build(&r, &s, 9, 10);
        r.args.save_kv_cache = 0;
        clear(&r);
        for (int h = 0; h < 4; h++) set_q(&r, 0, h, 0, h % 2 ? 1.0 : -1.0);
        for (int kh = 0; kh < 2; kh++) {
            set_k(&r, 0, 0, kh, 0, 1.0);
            set_k(&r, 0, 1, kh, 0, -1.0);
            set_v(&r, 0, 0, kh, 0, 100.0 * (kh + 1));
            set_v(&r, 0, 1, kh, 0, 0.0);
        }
        run(&r);
        const double hi = exp(1.0) / (exp(1.0) + exp(-1.0)), lo = 1 - hi;
        NEAR(out(&r, 0, 0, 0), 100 * lo, paths[p]);
        NEAR(out(&r, 0, 1, 0), 100 * hi, paths[p]);
        NEAR(out(&r, 0, 2, 0), 200 * lo, paths[p]);
        NEAR(out(&r, 0, 3, 0), 200 * hi, paths[p]);
        tc_free(&r);
    }
}

/* MLA: the value is the first dv dims of the latent row. */
static void test_mla_value(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 1, 1, 3, 2);
        s.mla = 1;
        s.seq[0] = 2;
        tc_run r;
        tc_build(&r, &s, 11, 12);
        r.args.save_kv_cache = 0;
        clear(&r);
        set_q(&r, 0, 0, 2, 1.0); /* only the rope dim scores */
        set_k(&r, 0, 0, 0, 0, 3.0), set_k(&r, 0, 0, 0, 1, 4.0), set_k(&r, 0, 0, 0, 2, 1.0);
        set_k(&r, 0, 1, 0, 0, 5.0), set_k(&r, 0, 1, 0, 1, 6.0), set_k(&r, 0, 1, 0, 2, 0.0);
        run(&r);
        const double e = exp(1.0);
        NEAR(out(&r, 0, 0, 0), (e * 3 + 5) / (e + 1), paths[p]);
        NEAR(out(&r, 0, 0, 1), (e * 4 + 6) / (e + 1), paths[p]);
        tc_free(&r);
    }
}

/* Encoder-decoder: a cross layer sees the encoder's keys (columns 0..enc),
 * all of them; a self layer sees the decoder's (columns enc..). */
static void test_encoder_decoder(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++)
        for (int cross = 0; cross < 2; cross++) {
            tc_spec s = spec(SGL_ATTN_MODE_DECODE, paths[p], 1, 1, 1, 1);
            s.seq[0] = 2;
            s.has_enc = 1;
            s.enc[0] = 2;
            s.cross = cross;
            tc_run r;
            tc_build(&r, &s, 13, 14);
            r.args.save_kv_cache = 0;
            clear(&r);
            set_q(&r, 0, 0, 0, 1.0);
            for (int c = 0; c < 4; c++) set_k(&r, 0, c, 0, 0, c == 1 || c == 3 ? 1.0 : 0.0);
            for (int c = 0; c < 4; c++) set_v(&r, 0, c, 0, 0, 1000.0 * (c + 1));
            run(&r);
            const double e = exp(1.0);
            /* cross: columns 0 (score 0) and 1 (score 1); self: columns 2 and 3 */
            double want = cross ? (1000 + e * 2000) / (1 + e) : (3000 + e * 4000) / (1 + e);
            NEAR(out(&r, 0, 0, 0), want, paths[p]);
            tc_free(&r);
        }
}

/* bf16: values bf16 holds exactly give the exact answer, rounded once. */
static void test_bf16_exact_inputs(void **state) {
    (void)state;
    tc_spec s = spec(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16, 1, 1, 2, 1);
    s.seq[0] = 2;
    tc_run r;
    tc_build(&r, &s, 15, 16);
    r.args.save_kv_cache = 0;
    clear(&r);
    set_q(&r, 0, 0, 0, 0.5);
    set_k(&r, 0, 0, 0, 0, 2.0);
    set_v(&r, 0, 0, 0, 0, 1.5);
    set_v(&r, 0, 1, 0, 0, -0.25);
    run(&r);
    const double e = exp(1.0), want = (e * 1.5 - 0.25) / (e + 1);
    if (fabs(out(&r, 0, 0, 0) - want) > ldexp(fabs(want), -8)) fail_msg("bf16 out %.9g vs %.9g", out(&r, 0, 0, 0), want);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_keys),       cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_window),         cmocka_unit_test(test_extend_causal),
        cmocka_unit_test(test_gqa_mapping),    cmocka_unit_test(test_mla_value),
        cmocka_unit_test(test_encoder_decoder), cmocka_unit_test(test_bf16_exact_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
