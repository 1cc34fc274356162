/* conv1d.c - causal depthwise conv1d with a rolling state (templated).
 *
 * Channel c, width W, weight w[c][0..W), history state[c][0..W-1) holding the
 * last W-1 inputs, oldest first.  With e(p) the input at position p of the
 * call (p < 0 reads state[c][W-1+p]):
 *     out[t][c] = act(bias[c] + sum_j w[c][j] * e(t - (W-1) + j))
 * and afterwards state = the last W-1 values of (state ++ inputs).
 * The recurrent form shifts the state one token at a time (decode); the
 * sequence form convolves a whole request at once (extend).  Both give the
 * same numbers: tests/hybrid checks it.
 */
#include <string.h>

#include "hyb_tmpl.h"

static inline real_t act(real_t x, int silu) { return silu ? FN(hyb_silu)(x) : x; }

void FN(hyb_conv1d_step)(real_t *state, int C, int W, const real_t *w, const real_t *bias,
                         const real_t *in, real_t *out, int silu) {
    const int H = W - 1;
    for (int c = 0; c < C; c++) {
        real_t *st = state + (size_t)c * H;
        const real_t *wc = w + (size_t)c * W;
        real_t x = in[c]; /* read first: in may alias out */
        real_t acc = bias ? bias[c] : 0;
        for (int j = 0; j < H; j++) acc += wc[j] * st[j];
        acc += wc[H] * x;
        for (int j = 0; j + 1 < H; j++) st[j] = st[j + 1];
        if (H > 0) st[H - 1] = x;
        out[c] = act(acc, silu);
    }
}

/* x [n][C]: inputs in, outputs out (in place).  Rows are done last to first
 * so every row a later output needs is still an input.  hist: C*(W-1) scratch
 * for the new state, written to `state` at the end. */
void FN(hyb_conv1d_seq)(real_t *state, int C, int W, const real_t *w, const real_t *bias,
                        real_t *x, int n, int silu, real_t *hist) {
    const int H = W - 1;
    if (n <= 0) return;
    /* new state: the last H of (state ++ x) */
    for (int c = 0; c < C; c++)
        for (int j = 0; j < H; j++) {
            int p = n - H + j; /* position in x, < 0 reaches into the old state */
            hist[(size_t)c * H + j] = p >= 0 ? x[(size_t)p * C + c] : state[(size_t)c * H + H + p];
        }
    for (int t = n - 1; t >= 0; t--) {
        real_t *row = x + (size_t)t * C;
        for (int c = 0; c < C; c++) {
            const real_t *wc = w + (size_t)c * W;
            real_t acc = bias ? bias[c] : 0;
            for (int j = 0; j <= H; j++) {
                int p = t - H + j;
                real_t e = p >= 0 ? x[(size_t)p * C + c] : state[(size_t)c * H + H + p];
                acc += wc[j] * e;
            }
            row[c] = act(acc, silu);
        }
    }
    if (H > 0) memcpy(state, hist, (size_t)C * H * sizeof(real_t));
}
