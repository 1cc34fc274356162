/* declin.c - decayed linear attention of one head (mamba2 SSD, lightning),
 * templated.
 *
 * State S is [V][K].  Per token t with scalar log-decay g_t:
 *     S   = exp(g_t) S + v_t k_t^T
 *     o_t = scale * S q_t
 * mamba2 maps onto it as v = dt*x (P), k = B (N), q = C (N), g = dt*A;
 * lightning as MiniMax's kv = exp(-slope) kv + k^T v, o = q kv.
 *
 * Chunked form over n tokens from S0, with G_t = g_1 + ... + g_t:
 *     o_t = scale * (exp(G_t) S0 q_t + sum_{i<=t} exp(G_t - G_i) (k_i . q_t) v_i)
 *     S_n = exp(G_n) S0 + sum_i exp(G_n - G_i) v_i k_i^T
 * i.e. an intra-chunk causal "attention" with the decay mask L[t][i] =
 * exp(G_t - G_i) (Mamba-2's SSD quadratic form) plus the carried state.
 */
#include "hyb_tmpl.h"

static inline real_t dot(const real_t *restrict a, const real_t *restrict b, int K) {
    real_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= K; c += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[c + j] * b[c + j];
    for (; c < K; c++) acc[0] += a[c] * b[c];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* One pass per state row: s = e*s + v_r k, reading S q on the way. */
HYB_CLONES
static void declin_rows(real_t *S, int K, int V, const real_t *q, const real_t *k,
                        const real_t *v, real_t e, real_t scale, real_t *o) {
    const int VL = HYB_VL;
    for (int r = 0; r < V; r++) {
        real_t *restrict s = S + (size_t)r * K;
        const real_t vr = v[r];
        hyb_vec acc = {0}, x, y, z;
        int c = 0;
        for (; c + VL <= K; c += VL) {
            HYB_VLOAD(x, s + c);
            HYB_VLOAD(y, k + c);
            HYB_VLOAD(z, q + c);
            x = e * x + vr * y;
            HYB_VSTORE(s + c, x);
            acc += x * z;
        }
        real_t sum = 0;
        for (int i = 0; i < VL; i++) sum += acc[i];
        for (; c < K; c++) { s[c] = e * s[c] + vr * k[c]; sum += s[c] * q[c]; }
        o[r] = scale * sum;
    }
}

void FN(hyb_declin_step)(real_t *S, int K, int V, const real_t *q, const real_t *k,
                         const real_t *v, real_t g, real_t scale, real_t *o) {
    declin_rows(S, K, V, q, k, v, r_exp(g), scale, o);
}

size_t FN(hyb_declin_work_elems)(int K, int V, int C) {
    (void)K;
    (void)V;
    return (size_t)C + (size_t)C * C + (size_t)C;
}

void FN(hyb_declin_chunk)(real_t *S, int K, int V, int n, const real_t *q, const real_t *k,
                          const real_t *v, const real_t *g, real_t scale, real_t *o,
                          real_t *work) {
    if (n <= 0) return;
    real_t *G = work, *L = G + n, *ed = L + (size_t)n * n; /* G[n] L[n][n] ed[n] */
    for (int t = 0; t < n; t++) G[t] = (t ? G[t - 1] : 0) + g[t];
    for (int t = 0; t < n; t++) {
        for (int i = 0; i <= t; i++)
            L[(size_t)t * n + i] = r_exp(G[t] - G[i]) * dot(k + (size_t)i * K, q + (size_t)t * K, K);
        ed[t] = r_exp(G[n - 1] - G[t]);
    }
    for (int t = 0; t < n; t++) {
        real_t et = r_exp(G[t]);
        const real_t *qt = q + (size_t)t * K;
        real_t *ot = o + (size_t)t * V;
        for (int r = 0; r < V; r++) ot[r] = et * dot(S + (size_t)r * K, qt, K);
        for (int i = 0; i <= t; i++) {
            real_t l = L[(size_t)t * n + i];
            const real_t *vi = v + (size_t)i * V;
            for (int r = 0; r < V; r++) ot[r] += l * vi[r];
        }
        for (int r = 0; r < V; r++) ot[r] *= scale;
    }
    real_t en = r_exp(G[n - 1]);
    for (int r = 0; r < V; r++) {
        real_t *s = S + (size_t)r * K;
        for (int c = 0; c < K; c++) s[c] *= en;
        for (int i = 0; i < n; i++) {
            real_t w = ed[i] * v[(size_t)i * V + r];
            const real_t *ki = k + (size_t)i * K;
            for (int c = 0; c < K; c++) s[c] += w * ki[c];
        }
    }
}
