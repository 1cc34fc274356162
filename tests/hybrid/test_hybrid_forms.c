/* test_hybrid_forms.c - the chunked (extend) form of every numeric core
 * equals its token-by-token (decode) recurrence: random inputs, several
 * chunk sizes, lengths that cross chunk boundaries, odd dims for the
 * vector tails, state carried across chunks and across calls. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_test_util.h"

static double max_abs(const double *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

/* relative max error of b vs a */
static double rel_err(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i] - b[i]) > m ? fabs(a[i] - b[i]) : m;
    double s = max_abs(a, n);
    return s > 0 ? m / s : m;
}

typedef struct tok_inputs {
    int K, V, n, gpc;
    double *q, *k, *v, *g, *beta, *S0;
} tok_inputs;

static void make_inputs(tok_inputs *in, int K, int V, int n, int gpc, uint64_t seed) {
    trng r = {seed};
    in->K = K; in->V = V; in->n = n; in->gpc = gpc;
    in->q = malloc(sizeof(double) * (size_t)n * K);
    in->k = malloc(sizeof(double) * (size_t)n * K);
    in->v = malloc(sizeof(double) * (size_t)n * V);
    in->g = malloc(sizeof(double) * (size_t)n * K);
    in->beta = malloc(sizeof(double) * (size_t)n);
    in->S0 = malloc(sizeof(double) * (size_t)V * K);
    for (int t = 0; t < n; t++) {
        double nq = 0, nk = 0;
        for (int c = 0; c < K; c++) {
            in->q[t * K + c] = tr_normal(&r);
            in->k[t * K + c] = tr_normal(&r);
            nq += in->q[t * K + c] * in->q[t * K + c];
            nk += in->k[t * K + c] * in->k[t * K + c];
        }
        for (int c = 0; c < K; c++) { /* unit keys keep the delta rule contractive */
            in->q[t * K + c] /= sqrt(nq);
            in->k[t * K + c] /= sqrt(nk);
        }
        for (int c = 0; c < V; c++) in->v[t * V + c] = tr_normal(&r);
        for (int c = 0; c < (gpc ? K : 1); c++) in->g[t * (gpc ? K : 1) + c] = -0.02 - 0.8 * tr_uniform(&r);
        in->beta[t] = 0.05 + 0.9 * tr_uniform(&r);
    }
    for (int i = 0; i < V * K; i++) in->S0[i] = 0.5 * tr_normal(&r);
}

static void free_inputs(tok_inputs *in) {
    free(in->q); free(in->k); free(in->v); free(in->g); free(in->beta); free(in->S0);
}

/* core: 1 delta, 2 declin.  Runs the recurrence in f64 (the reference), the
 * chunked form in f64 and in f32, and compares outputs and final states. */
static void check_core(int core, int K, int V, int n, int chunk, int gpc, uint64_t seed) {
    tok_inputs in;
    make_inputs(&in, K, V, n, gpc, seed);
    const int gc = gpc ? K : 1;
    const double scale = 0.37;
    double *S_ref = malloc(sizeof(double) * (size_t)V * K), *S_ch = malloc(sizeof(double) * (size_t)V * K);
    double *o_ref = malloc(sizeof(double) * (size_t)n * V), *o_ch = malloc(sizeof(double) * (size_t)n * V);
    float *S32 = malloc(sizeof(float) * (size_t)V * K), *o32 = malloc(sizeof(float) * (size_t)n * V);
    size_t wn = hyb_delta_work_elems_f64(K, V, chunk) + hyb_declin_work_elems_f64(K, V, chunk);
    double *work = malloc(sizeof(double) * wn);
    float *work32 = malloc(sizeof(float) * wn);
    float *q32 = malloc(sizeof(float) * (size_t)n * K), *k32 = malloc(sizeof(float) * (size_t)n * K),
          *v32 = malloc(sizeof(float) * (size_t)n * V), *g32 = malloc(sizeof(float) * (size_t)n * K),
          *b32 = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n * K; i++) { q32[i] = (float)in.q[i]; k32[i] = (float)in.k[i]; }
    for (int i = 0; i < n * gc; i++) g32[i] = (float)in.g[i];
    for (int i = 0; i < n * V; i++) v32[i] = (float)in.v[i];
    for (int i = 0; i < n; i++) b32[i] = (float)in.beta[i];

    memcpy(S_ref, in.S0, sizeof(double) * (size_t)V * K);
    memcpy(S_ch, in.S0, sizeof(double) * (size_t)V * K);
    for (int i = 0; i < V * K; i++) S32[i] = (float)in.S0[i];
    for (int t = 0; t < n; t++) {
        if (core == 1)
            hyb_delta_step_f64(S_ref, K, V, in.q + t * K, in.k + t * K, in.v + t * V, in.g + t * gc, gpc,
                               in.beta[t], scale, o_ref + t * V);
        else
            hyb_declin_step_f64(S_ref, K, V, in.q + t * K, in.k + t * K, in.v + t * V, in.g[t], scale,
                                o_ref + t * V);
    }
    for (int t0 = 0; t0 < n; t0 += chunk) {
        int nc = n - t0 < chunk ? n - t0 : chunk;
        if (core == 1) {
            hyb_delta_chunk_f64(S_ch, K, V, nc, in.q + t0 * K, in.k + t0 * K, in.v + t0 * V,
                                in.g + t0 * gc, gpc, in.beta + t0, scale, o_ch + t0 * V, work);
            hyb_delta_chunk_f32(S32, K, V, nc, q32 + t0 * K, k32 + t0 * K, v32 + t0 * V, g32 + t0 * gc,
                                gpc, b32 + t0, (float)scale, o32 + t0 * V, work32);
        } else {
            hyb_declin_chunk_f64(S_ch, K, V, nc, in.q + t0 * K, in.k + t0 * K, in.v + t0 * V,
                                 in.g + t0, scale, o_ch + t0 * V, work);
            hyb_declin_chunk_f32(S32, K, V, nc, q32 + t0 * K, k32 + t0 * K, v32 + t0 * V, g32 + t0,
                                 (float)scale, o32 + t0 * V, work32);
        }
    }
    double e_o = rel_err(o_ref, o_ch, (size_t)n * V), e_s = rel_err(S_ref, S_ch, (size_t)V * K);
    double *o32d = malloc(sizeof(double) * (size_t)n * V), *S32d = malloc(sizeof(double) * (size_t)V * K);
    for (int i = 0; i < n * V; i++) o32d[i] = o32[i];
    for (int i = 0; i < V * K; i++) S32d[i] = S32[i];
    double e_o32 = rel_err(o_ref, o32d, (size_t)n * V), e_s32 = rel_err(S_ref, S32d, (size_t)V * K);
    if (e_o > 1e-11 || e_s > 1e-11 || e_o32 > 2e-5 || e_s32 > 2e-5)
        print_error("core %d K=%d V=%d n=%d chunk=%d gpc=%d: f64 out %.3g state %.3g, f32 out %.3g "
                    "state %.3g\n", core, K, V, n, chunk, gpc, e_o, e_s, e_o32, e_s32);
    assert_true(max_abs(o_ref, (size_t)n * V) > 1e-3); /* the comparison is not of zeros */
    assert_true(e_o <= 1e-11);
    assert_true(e_s <= 1e-11);
    assert_true(e_o32 <= 2e-5);
    assert_true(e_s32 <= 2e-5);
    free(S_ref); free(S_ch); free(o_ref); free(o_ch); free(S32); free(o32); free(work); free(work32);
    free(q32); free(k32); free(v32); free(g32); free(b32); free(o32d); free(S32d);
    free_inputs(&in);
}

static const int lens[] = {1, 7, 16, 17, 63, 100};
static const int chunks[] = {1, 3, 16, 64};

static void test_delta_scalar_gate(void **st) {
    (void)st;
    uint64_t seed = 11;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        for (size_t j = 0; j < sizeof chunks / sizeof *chunks; j++) {
            check_core(1, 16, 8, lens[i], chunks[j], 0, seed++);
            check_core(1, 13, 21, lens[i], chunks[j], 0, seed++); /* odd dims: vector tails */
        }
}

static void test_delta_channel_gate(void **st) {
    (void)st;
    uint64_t seed = 101;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        for (size_t j = 0; j < sizeof chunks / sizeof *chunks; j++) {
            check_core(1, 16, 8, lens[i], chunks[j], 1, seed++);
            check_core(1, 9, 12, lens[i], chunks[j], 1, seed++);
        }
}

static void test_declin(void **st) {
    (void)st;
    uint64_t seed = 201;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        for (size_t j = 0; j < sizeof chunks / sizeof *chunks; j++) {
            check_core(2, 16, 8, lens[i], chunks[j], 0, seed++);
            check_core(2, 11, 19, lens[i], chunks[j], 0, seed++);
        }
}

/* conv1d: the sequence form over ragged pieces equals one-token steps, state
 * carried across the calls; both equal the convolution written out; the f32
 * forms (vector SiLU) agree with it too.  C = 37: two 16-lane vectors and a tail. */
static void test_conv1d(void **st) {
    (void)st;
    trng r = {7};
    enum { C = 37, N = 23, WM = 5 };
    for (int W = 1; W <= WM; W++)
        for (int silu = 0; silu <= 1; silu++) {
            const int H = W - 1;
            double w[C * WM], bias[C], s0[C * WM], s_seq[C * WM], s_step[C * WM], hist[C * WM];
            double x[N * C], y_seq[N * C], y_step[N * C], y_want[N * C];
            float wf[C * WM], bf[C], sf_seq[C * WM], sf_step[C * WM], histf[C * WM], yf_seq[N * C], yf_step[N * C];
            double yd_seq[N * C], yd_step[N * C];
            for (int i = 0; i < C * W; i++) w[i] = tr_normal(&r);
            for (int i = 0; i < C; i++) bias[i] = tr_normal(&r);
            for (int i = 0; i < C * H; i++) s0[i] = s_seq[i] = s_step[i] = tr_normal(&r);
            for (int i = 0; i < N * C; i++) x[i] = 3 * tr_normal(&r);
            for (int t = 0; t < N; t++) /* w and the state are tap-major: [j][c] */
                for (int c = 0; c < C; c++) {
                    double acc = bias[c];
                    for (int j = 0; j <= H; j++) {
                        int p = t - H + j;
                        acc += w[j * C + c] * (p >= 0 ? x[p * C + c] : s0[(H + p) * C + c]);
                    }
                    y_want[t * C + c] = silu ? acc / (1 + exp(-acc)) : acc;
                }
            memcpy(y_seq, x, sizeof x);
            const int cuts[] = {0, 1, 3, 4, 11, N}; /* pieces of 1, 2, 1, 7, 12 tokens */
            for (int p = 0; p + 1 < 6; p++)
                hyb_conv1d_seq_f64(s_seq, C, W, w, bias, y_seq + cuts[p] * C, cuts[p + 1] - cuts[p], silu, hist);
            for (int t = 0; t < N; t++) hyb_conv1d_step_f64(s_step, C, W, w, bias, x + t * C, y_step + t * C, silu);
            assert_true(max_abs(y_step, (size_t)N * C) > 1e-2);
            assert_true(rel_err(y_want, y_step, (size_t)N * C) < 1e-13);
            assert_true(rel_err(y_step, y_seq, (size_t)N * C) < 1e-14);
            if (H) assert_true(rel_err(s_step, s_seq, (size_t)C * H) == 0);
            for (int c = 0; c < C; c++) /* the state is the last W-1 inputs */
                for (int j = 0; j < H; j++) assert_true(s_step[j * C + c] == x[(N - H + j) * C + c]);
            /* f32 */
            for (int i = 0; i < C * W; i++) wf[i] = (float)w[i];
            for (int i = 0; i < C; i++) bf[i] = (float)bias[i];
            for (int i = 0; i < C * H; i++) sf_seq[i] = sf_step[i] = (float)s0[i];
            for (int i = 0; i < N * C; i++) yf_seq[i] = (float)x[i];
            for (int p = 0; p + 1 < 6; p++)
                hyb_conv1d_seq_f32(sf_seq, C, W, wf, bf, yf_seq + cuts[p] * C, cuts[p + 1] - cuts[p], silu, histf);
            for (int t = 0; t < N; t++) {
                float xf[C];
                for (int c = 0; c < C; c++) xf[c] = (float)x[t * C + c];
                hyb_conv1d_step_f32(sf_step, C, W, wf, bf, xf, yf_step + t * C, silu);
            }
            for (int i = 0; i < N * C; i++) { yd_seq[i] = yf_seq[i]; yd_step[i] = yf_step[i]; }
            assert_true(rel_err(y_want, yd_step, (size_t)N * C) < 3e-6);
            assert_true(rel_err(y_want, yd_seq, (size_t)N * C) < 3e-6);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_scalar_gate),
        cmocka_unit_test(test_delta_channel_gate),
        cmocka_unit_test(test_declin),
        cmocka_unit_test(test_conv1d),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
