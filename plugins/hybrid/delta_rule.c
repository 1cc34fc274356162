/* delta_rule.c - the gated delta rule of one head (gdn, kda), templated.
 *
 * State S is [V][K] (sglang's [HV, V, K] per request: row r is value channel
 * r, contiguous over key channels).  Per token t, with log-gate g_t (one
 * value, or one per key channel for kda), beta_t, key k_t, value v_t, query q_t:
 *     S'  = S * diag(exp(g_t))                  (decay; scalar for gdn)
 *     u_t = beta_t * (v_t - S' k_t)             (delta: the residual written)
 *     S   = S' + u_t k_t^T
 *     o_t = scale * S q_t
 *
 * Chunked form (extend) over a chunk of n tokens from state S0, exact in
 * exact arithmetic.  Let G_t = g_1 + ... + g_t (per channel) and
 * d(t,i)[c] = exp(G_t[c] - G_i[c]) for i <= t (always <= 1: no overflow).
 *   S_t = S0 diag(exp G_t) + sum_{i<=t} u_i (k_i * d(t,i))^T        (by induction)
 * so the u_t solve a unit lower-triangular system (the "UT transform"):
 *   u_t + sum_{i<t} A[t][i] u_i = beta_t (v_t - S0 (k_t * exp G_t)),
 *   A[t][i] = beta_t * sum_c k_t[c] k_i[c] d(t,i)[c]
 * and
 *   o_t = scale * (S0 (q_t * exp G_t) + sum_{i<=t} M[t][i] u_i),
 *   M[t][i] = sum_c q_t[c] k_i[c] d(t,i)[c]
 *   S_n = S0 diag(exp G_n) + sum_i u_i (k_i * d(n,i))^T
 * Cost per chunk: O(n V K) for the S0 products and the state update, O(n^2 K)
 * for A and M, O(n^2 V) for the solve and the output.  A GPU port keeps the
 * same steps: A and M are n x n GEMMs (with the gate ratios folded in per
 * sub-chunk for kda), the solve is a small triangular inverse, the rest GEMMs.
 */
#include <string.h>

#include "hyb_tmpl.h"

/* s *= e (per channel or scalar); returns s . k (8 partial sums: vectorises) */
static inline real_t decay_dot(real_t *restrict s, const real_t *restrict k,
                               const real_t *restrict e, real_t e0, int K) {
    real_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    if (e) {
        for (; c + 8 <= K; c += 8)
            for (int j = 0; j < 8; j++) {
                real_t x = s[c + j] * e[c + j];
                s[c + j] = x;
                acc[j] += x * k[c + j];
            }
        for (; c < K; c++) { s[c] *= e[c]; acc[0] += s[c] * k[c]; }
    } else {
        for (; c + 8 <= K; c += 8)
            for (int j = 0; j < 8; j++) {
                real_t x = s[c + j] * e0;
                s[c + j] = x;
                acc[j] += x * k[c + j];
            }
        for (; c < K; c++) { s[c] *= e0; acc[0] += s[c] * k[c]; }
    }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* s += u k; returns s . q */
static inline real_t axpy_dot(real_t *restrict s, const real_t *restrict k, real_t u,
                              const real_t *restrict q, int K) {
    real_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= K; c += 8)
        for (int j = 0; j < 8; j++) {
            real_t x = s[c + j] + u * k[c + j];
            s[c + j] = x;
            acc[j] += x * q[c + j];
        }
    for (; c < K; c++) { s[c] += u * k[c]; acc[0] += s[c] * q[c]; }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static inline real_t dot(const real_t *restrict a, const real_t *restrict b, int K) {
    real_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= K; c += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[c + j] * b[c + j];
    for (; c < K; c++) acc[0] += a[c] * b[c];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void FN(hyb_delta_step)(real_t *S, int K, int V, const real_t *q, const real_t *k,
                        const real_t *v, const real_t *g, int g_per_channel, real_t beta,
                        real_t scale, real_t *o) {
    real_t eg[HYB_DIM_MAX];
    real_t e0 = r_exp(g[0]);
    if (g_per_channel)
        for (int c = 0; c < K; c++) eg[c] = r_exp(g[c]);
    /* Each value row is independent: one pass over its K floats decays and
     * reads S'k, a second (in L1) adds u k and reads S q.  The state streams
     * through memory once per token, read and written. */
    for (int r = 0; r < V; r++) {
        real_t *s = S + (size_t)r * K;
        real_t m = decay_dot(s, k, g_per_channel ? eg : NULL, e0, K);
        real_t u = beta * (v[r] - m);
        o[r] = scale * axpy_dot(s, k, u, q, K);
    }
}

size_t FN(hyb_delta_work_elems)(int K, int V, int C) {
    return (size_t)4 * C * K + (size_t)2 * C * C + (size_t)C * V + (size_t)K;
}

void FN(hyb_delta_chunk)(real_t *S, int K, int V, int n, const real_t *q, const real_t *k,
                         const real_t *v, const real_t *g, int g_per_channel,
                         const real_t *beta, real_t scale, real_t *o, real_t *work) {
    if (n <= 0) return;
    /* work: G[n][K] KG[n][K] QG[n][K] KD[n][K] A[n][n] M[n][n] U[n][V] eG[K]
     * (G is [n] and only its first column used when the gate is scalar) */
    real_t *G = work, *KG = G + (size_t)n * K, *QG = KG + (size_t)n * K,
           *KD = QG + (size_t)n * K, *A = KD + (size_t)n * K, *M = A + (size_t)n * n,
           *U = M + (size_t)n * n, *eG = U + (size_t)n * V;
    const int gc = g_per_channel ? K : 1;

    for (int t = 0; t < n; t++)
        for (int c = 0; c < gc; c++)
            G[(size_t)t * gc + c] = (t ? G[(size_t)(t - 1) * gc + c] : 0) + g[(size_t)t * gc + c];
    const real_t *Gl = G + (size_t)(n - 1) * gc;
    for (int t = 0; t < n; t++) {
        const real_t *Gt = G + (size_t)t * gc;
        for (int c = 0; c < K; c++) {
            real_t gt = Gt[g_per_channel ? c : 0], gl = Gl[g_per_channel ? c : 0];
            real_t et = r_exp(gt);
            KG[(size_t)t * K + c] = k[(size_t)t * K + c] * et;
            QG[(size_t)t * K + c] = q[(size_t)t * K + c] * et;
            KD[(size_t)t * K + c] = k[(size_t)t * K + c] * r_exp(gl - gt);
        }
    }
    for (int c = 0; c < K; c++) eG[c] = r_exp(Gl[g_per_channel ? c : 0]);

    /* A (strictly lower) and M (lower with diagonal) */
    for (int t = 0; t < n; t++) {
        const real_t *kt = k + (size_t)t * K, *qt = q + (size_t)t * K;
        for (int i = 0; i <= t; i++) {
            const real_t *ki = k + (size_t)i * K;
            real_t akk, aqk;
            if (g_per_channel) {
                const real_t *Gt = G + (size_t)t * K, *Gi = G + (size_t)i * K;
                akk = 0;
                aqk = 0;
                for (int c = 0; c < K; c++) {
                    real_t d = r_exp(Gt[c] - Gi[c]) * ki[c];
                    akk += kt[c] * d;
                    aqk += qt[c] * d;
                }
            } else {
                real_t d = r_exp(G[t] - G[i]);
                akk = d * dot(kt, ki, K);
                aqk = d * dot(qt, ki, K);
            }
            A[(size_t)t * n + i] = i < t ? beta[t] * akk : 0;
            M[(size_t)t * n + i] = aqk;
        }
    }
    /* right-hand sides and the S0 part of the outputs, from the initial state */
    for (int r = 0; r < V; r++) {
        const real_t *s = S + (size_t)r * K;
        for (int t = 0; t < n; t++) {
            U[(size_t)t * V + r] = beta[t] * (v[(size_t)t * V + r] - dot(s, KG + (size_t)t * K, K));
            o[(size_t)t * V + r] = dot(s, QG + (size_t)t * K, K);
        }
    }
    /* forward substitution: (I + A) U = rhs */
    for (int t = 1; t < n; t++) {
        real_t *ut = U + (size_t)t * V;
        for (int i = 0; i < t; i++) {
            real_t a = A[(size_t)t * n + i];
            const real_t *ui = U + (size_t)i * V;
            for (int r = 0; r < V; r++) ut[r] -= a * ui[r];
        }
    }
    for (int t = 0; t < n; t++) {
        real_t *ot = o + (size_t)t * V;
        for (int i = 0; i <= t; i++) {
            real_t m = M[(size_t)t * n + i];
            const real_t *ui = U + (size_t)i * V;
            for (int r = 0; r < V; r++) ot[r] += m * ui[r];
        }
        for (int r = 0; r < V; r++) ot[r] *= scale;
    }
    /* state at the end of the chunk */
    for (int r = 0; r < V; r++) {
        real_t *s = S + (size_t)r * K;
        for (int c = 0; c < K; c++) s[c] *= eG[c];
        for (int i = 0; i < n; i++) {
            real_t u = U[(size_t)i * V + r];
            const real_t *kd = KD + (size_t)i * K;
            for (int c = 0; c < K; c++) s[c] += u * kd[c];
        }
    }
}
