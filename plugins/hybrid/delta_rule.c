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
#include "hyb_tmpl.h"

static inline real_t dot(const real_t *restrict a, const real_t *restrict b, int K) {
    real_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= K; c += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[c + j] * b[c + j];
    for (; c < K; c++) acc[0] += a[c] * b[c];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

/* The recurrent step, rewritten so each state row is read once for both
 * products and written once.  With e = exp(g) (per channel or scalar):
 *     S'k = s . (e*k),   S_new q = s . (e*q) + u (k . q),   s_new = e*s + u k
 * where u = beta (v_r - S'k).  ek, eq and k.q are per head, not per row.
 * This loop is the whole cost of a decode step: it is cloned for AVX2 and
 * AVX-512 and works on 64-byte vectors with two sums per product. */
HYB_CLONES
static void delta_rows(real_t *S, int K, int V, const real_t *k, const real_t *ek,
                       const real_t *eq, const real_t *e, real_t e0, real_t kq,
                       const real_t *v, real_t beta, real_t scale, real_t *o) {
    const int VL = HYB_VL;
    /* Rows ahead are fetched while this one computes: each row waits for its
     * own dot products before it can be written, which leaves the hardware
     * prefetcher too little lead on its own. */
    const int ahead = 8, lines = (int)((size_t)K * sizeof(real_t) / 64);
    for (int r = 0; r < V; r++) {
        real_t *s = S + (size_t)r * K;
        if (r + ahead < V)
            for (int l = 0; l < lines; l++) __builtin_prefetch(s + (size_t)ahead * K + (size_t)l * (64 / sizeof(real_t)), 1, 3);
        hyb_vec a1 = {0}, a2 = {0}, b1 = {0}, b2 = {0}, x, y, z;
        int c = 0;
        for (; c + 2 * VL <= K; c += 2 * VL) {
            HYB_VLOAD(x, s + c);
            HYB_VLOAD(y, ek + c);
            HYB_VLOAD(z, eq + c);
            a1 += x * y;
            a2 += x * z;
            HYB_VLOAD(x, s + c + VL);
            HYB_VLOAD(y, ek + c + VL);
            HYB_VLOAD(z, eq + c + VL);
            b1 += x * y;
            b2 += x * z;
        }
        a1 += b1;
        a2 += b2;
        for (; c + VL <= K; c += VL) {
            HYB_VLOAD(x, s + c);
            HYB_VLOAD(y, ek + c);
            HYB_VLOAD(z, eq + c);
            a1 += x * y;
            a2 += x * z;
        }
        real_t m = 0, sq = 0;
        for (int i = 0; i < VL; i++) { m += a1[i]; sq += a2[i]; }
        for (int t = c; t < K; t++) { m += s[t] * ek[t]; sq += s[t] * eq[t]; }
        const real_t u = beta * (v[r] - m);
        c = 0;
        if (e) {
            for (; c + VL <= K; c += VL) {
                HYB_VLOAD(x, s + c);
                HYB_VLOAD(y, e + c);
                HYB_VLOAD(z, k + c);
                x = x * y + u * z;
                HYB_VSTORE(s + c, x);
            }
        } else {
            for (; c + VL <= K; c += VL) {
                HYB_VLOAD(x, s + c);
                HYB_VLOAD(z, k + c);
                x = x * e0 + u * z;
                HYB_VSTORE(s + c, x);
            }
        }
        for (; c < K; c++) s[c] = s[c] * (e ? e[c] : e0) + u * k[c];
        o[r] = scale * (sq + u * kq);
    }
}

void FN(hyb_delta_step)(real_t *S, int K, int V, const real_t *q, const real_t *k,
                        const real_t *v, const real_t *g, int g_per_channel, real_t beta,
                        real_t scale, real_t *o) {
    real_t e[HYB_DIM_MAX], ek[HYB_DIM_MAX], eq[HYB_DIM_MAX];
    const real_t e0 = r_exp(g[0]);
    for (int c = 0; c < K; c++) {
        real_t ec = g_per_channel ? r_exp(g[c]) : e0;
        e[c] = ec;
        ek[c] = ec * k[c];
        eq[c] = ec * q[c];
    }
    /* Each value row is independent; the state streams through memory once
     * per token, read and written. */
    delta_rows(S, K, V, k, ek, eq, g_per_channel ? e : NULL, e0, dot(k, q, K), v, beta, scale, o);
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
