/* conv1d.c - causal depthwise conv1d with a rolling state (templated).
 *
 * Channel c, width W, H = W-1.  The state is time-major, state[j][c] for
 * j = 0..H-1 holding the last H inputs oldest first (rows of C channels, so
 * every loop below runs along channels and vectorises); the weight comes
 * transposed the same way, wt[j][c] (hyb_load_conv).  With e(p) the input at
 * position p of the call (p < 0 reads state[H+p]):
 *     out[t][c] = act(bias[c] + sum_j wt[j][c] * e(t - H + j))
 * and afterwards state = the last H rows of (state ++ inputs).
 * The recurrent form shifts the state one token at a time (decode); the
 * sequence form convolves a whole request at once (extend).  Both give the
 * same numbers: tests/hybrid checks it.
 */
#include <string.h>

#include "hyb_tmpl.h"

#ifndef HYB_F64
/* exp of 16 floats: Cody-Waite reduction to r in [-ln2/2, ln2/2], degree-6
 * polynomial (Cephes expf coefficients), scale by 2^n through the exponent
 * bits.  Within 2 ulp of expf; finite for every finite input. */
typedef int32_t hyb_ivec __attribute__((vector_size(64)));
/* out = mask ? a : b, lane by lane (C has no vector ?:) */
#define VSEL(out, mask, a, b)                                  \
    do {                                                       \
        hyb_ivec a_, b_;                                       \
        memcpy(&a_, &(a), sizeof a_);                          \
        memcpy(&b_, &(b), sizeof b_);                          \
        a_ = (a_ & (mask)) | (b_ & ~(mask));                   \
        memcpy(&(out), &a_, sizeof a_);                        \
    } while (0)
/* always_inline: inlined into each target clone of its callers, so it gets
 * their vector width (a plain call would run the baseline version) */
static inline __attribute__((always_inline)) void vexp(hyb_vec *v) {
    hyb_vec x = *v;
    const hyb_vec hi = x * 0 + 88.3762626647949f, lo = x * 0 - 87.3365447504019f;
    VSEL(x, (hyb_ivec)(x < hi), x, hi);
    VSEL(x, (hyb_ivec)(x > lo), x, lo);
    hyb_vec fx = x * 1.44269504088896341f + 0.5f;
    hyb_ivec n = __builtin_convertvector(fx, hyb_ivec);
    hyb_vec fn = __builtin_convertvector(n, hyb_vec);
    n -= (hyb_ivec)(fn > fx) & 1; /* floor */
    fn = __builtin_convertvector(n, hyb_vec);
    hyb_vec r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    hyb_vec p = 1.9875691500e-4f + 0 * r;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    hyb_ivec bits = (n + 127) << 23;
    hyb_vec scale;
    memcpy(&scale, &bits, sizeof scale);
    *v = p * scale;
}
#endif

/* out[c] = silu(out[c]) over C channels */
static inline __attribute__((always_inline)) void silu_row(real_t *o, int C) {
    int c = 0;
#ifndef HYB_F64
    for (; c + HYB_VL <= C; c += HYB_VL) {
        hyb_vec x, e;
        HYB_VLOAD(x, o + c);
        e = -x;
        vexp(&e);
        x = x / (1.0f + e);
        HYB_VSTORE(o + c, x);
    }
#endif
    for (; c < C; c++) o[c] = FN(hyb_silu)(o[c]);
}

/* One token: in [C] -> out [C] (they must not overlap), state shifted. */
HYB_CLONES
void FN(hyb_conv1d_step)(real_t *state, int C, int W, const real_t *wt, const real_t *bias,
                         const real_t *in, real_t *out, int silu) {
    const int H = W - 1;
    if (H == 3) { /* width 4 (Qwen3-Next, Mamba-2, Kimi): one pass reads, shifts and sums */
        real_t *restrict s0 = state, *restrict s1 = state + C, *restrict s2 = state + 2 * (size_t)C;
        const real_t *restrict w0 = wt, *restrict w1 = wt + C, *restrict w2 = wt + 2 * (size_t)C,
                               *restrict w3 = wt + 3 * (size_t)C;
        for (int c = 0; c < C; c++) {
            const real_t a = s0[c], b = s1[c], d = s2[c], x = in[c];
            out[c] = (bias ? bias[c] : 0) + w0[c] * a + w1[c] * b + w2[c] * d + w3[c] * x;
            s0[c] = b;
            s1[c] = d;
            s2[c] = x;
        }
        if (silu) silu_row(out, C);
        return;
    }
    const real_t *wl = wt + (size_t)H * C;
    for (int c = 0; c < C; c++) out[c] = (bias ? bias[c] : 0) + wl[c] * in[c];
    for (int j = 0; j < H; j++) {
        const real_t *wj = wt + (size_t)j * C, *sj = state + (size_t)j * C;
        for (int c = 0; c < C; c++) out[c] += wj[c] * sj[c];
    }
    if (H > 0) {
        memmove(state, state + C, (size_t)(H - 1) * C * sizeof(real_t));
        memcpy(state + (size_t)(H - 1) * C, in, (size_t)C * sizeof(real_t));
    }
    if (silu) silu_row(out, C);
}

/* x [n][C]: inputs in, outputs out (in place).  Rows are done last to first
 * so every row a later output needs is still an input.  hist: H*C scratch
 * for the new state, written to `state` at the end. */
HYB_CLONES
void FN(hyb_conv1d_seq)(real_t *state, int C, int W, const real_t *wt, const real_t *bias,
                        real_t *x, int n, int silu, real_t *hist) {
    const int H = W - 1;
    if (n <= 0) return;
    for (int j = 0; j < H; j++) { /* new state: the last H rows of (state ++ x) */
        int p = n - H + j;
        memcpy(hist + (size_t)j * C, p >= 0 ? x + (size_t)p * C : state + (size_t)(H + p) * C,
               (size_t)C * sizeof(real_t));
    }
    for (int t = n - 1; t >= 0; t--) {
        real_t *row = x + (size_t)t * C;
        const real_t *src[HYB_CONV_W_MAX];
        for (int j = 0; j <= H; j++) {
            int p = t - H + j;
            src[j] = p >= 0 ? x + (size_t)p * C : state + (size_t)(H + p) * C;
        }
        /* row t is src[H]: each channel reads it before writing it */
        for (int c = 0; c < C; c++) {
            real_t acc = bias ? bias[c] : 0;
            for (int j = 0; j <= H; j++) acc += wt[(size_t)j * C + c] * src[j][c];
            row[c] = acc;
        }
        if (silu) silu_row(row, C);
    }
    if (H > 0) memcpy(state, hist, (size_t)C * H * sizeof(real_t));
}
