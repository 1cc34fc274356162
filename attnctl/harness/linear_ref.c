/* linear_ref.c - the float64 reference of the linear-attention kinds; see
 * linear_ref.h.  Deliberately plain: loops in the order the math is written. */
#include "linear_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_GDN = 1, K_MAMBA2 = 2, K_SHORT_CONV = 3, K_KDA = 4, K_LIGHTNING = 5 };

static double softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double silu(double x) { return x * sigmoid(x); }

/* one token through the causal conv: state holds the previous W-1 inputs */
static void conv_token(int C, int W, const double *w, const double *bias, double *state,
                       const double *in, double *out, int act) {
    for (int c = 0; c < C; c++) {
        double s = bias ? bias[c] : 0;
        for (int j = 0; j < W - 1; j++) s += w[c * W + j] * state[c * (W - 1) + j];
        s += w[c * W + W - 1] * in[c];
        for (int j = 0; j + 1 < W - 1; j++) state[c * (W - 1) + j] = state[c * (W - 1) + j + 1];
        if (W > 1) state[c * (W - 1) + W - 2] = in[c];
        out[c] = act ? silu(s) : s;
    }
}

static void l2n(double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    for (int i = 0; i < n; i++) x[i] /= sqrt(s + 1e-6);
}

void lref_run(const lref_dims *d, int n, const lref_in *in, double *conv_state, double *ssm,
              double *out, double *steps_conv, double *steps_ssm) {
    const int C = d->conv_dim, W = d->conv_w, HK = d->hk, HV = d->hv, K = d->dk, V = d->dv;
    const int xd = d->kind == K_SHORT_CONV ? 3 * C : C;
    const size_t conv_n = W > 0 ? (size_t)C * (W - 1) : 0, ssm_n = (size_t)HV * V * K;
    double *xc = calloc((size_t)(C > 0 ? C : 1), sizeof *xc);
    double *q = calloc((size_t)K + 1, sizeof *q), *k = calloc((size_t)K + 1, sizeof *k);
    double *g = calloc((size_t)K + 1, sizeof *g);
    if (!xc || !q || !k || !g) { /* no memory: poison the output, never crash */
        size_t on = (size_t)n * (d->kind == K_SHORT_CONV ? (size_t)C : (size_t)HV * V);
        for (size_t i = 0; i < on; i++) out[i] = NAN;
        n = 0;
    }
    for (int t = 0; t < n; t++) {
        if (d->kind == K_SHORT_CONV) {
            const double *row = in->x + (size_t)t * xd;
            for (int c = 0; c < C; c++) xc[c] = row[c] * row[2 * C + c]; /* B * x */
            conv_token(C, W, in->conv_weight, in->conv_bias, conv_state, xc, xc, 0);
            for (int c = 0; c < C; c++) out[(size_t)t * C + c] = row[C + c] * xc[c]; /* C * conv */
        } else if (d->kind == K_LIGHTNING) {
            for (int h = 0; h < HV; h++) {
                double *S = ssm + (size_t)h * V * K, e = exp(-in->decay[h]);
                const double *qt = in->q + ((size_t)t * HV + h) * K, *kt = in->k + ((size_t)t * HV + h) * K,
                             *vt = in->v + ((size_t)t * HV + h) * V;
                for (int r = 0; r < V; r++) {
                    double o = 0;
                    for (int c = 0; c < K; c++) {
                        S[r * K + c] = e * S[r * K + c] + vt[r] * kt[c];
                        o += S[r * K + c] * qt[c];
                    }
                    out[((size_t)t * HV + h) * V + r] = o;
                }
            }
        } else {
            conv_token(C, W, in->conv_weight, in->conv_bias, conv_state, in->x + (size_t)t * xd, xc, 1);
            for (int h = 0; h < HV; h++) {
                double *S = ssm + (size_t)h * V * K;
                int grp = h / (HV / HK);
                double *o = out + ((size_t)t * HV + h) * V;
                if (d->kind == K_MAMBA2) { /* x [H*P] | B [G*N] | C [G*N] */
                    const double *x = xc + (size_t)h * V, *B = xc + (size_t)HV * V + (size_t)grp * K,
                                 *Cc = xc + (size_t)HV * V + (size_t)HK * K + (size_t)grp * K;
                    double dt = softplus(in->a[(size_t)t * HV + h] + in->dt_bias[h]);
                    double dA = exp(-exp(in->A_log[h]) * dt), Dh = in->D ? in->D[h] : 0;
                    for (int r = 0; r < V; r++) {
                        double y = 0;
                        for (int c = 0; c < K; c++) {
                            S[r * K + c] = dA * S[r * K + c] + dt * x[r] * B[c];
                            y += S[r * K + c] * Cc[c];
                        }
                        o[r] = y + Dh * x[r];
                    }
                    continue;
                }
                /* gdn / kda: q [HK*K] | k [HK*K] | v [HV*V] */
                memcpy(q, xc + (size_t)grp * K, (size_t)K * sizeof *q);
                memcpy(k, xc + (size_t)(HK + grp) * K, (size_t)K * sizeof *k);
                const double *v = xc + (size_t)2 * HK * K + (size_t)h * V;
                if (in->use_qk_l2norm) { l2n(q, K); l2n(k, K); }
                for (int c = 0; c < K; c++) {
                    double raw = d->kind == K_KDA ? in->a[((size_t)t * HV + h) * K + c] + in->dt_bias[h * K + c]
                                                  : in->a[(size_t)t * HV + h] + in->dt_bias[h];
                    g[c] = -exp(in->A_log[h]) * softplus(raw);
                }
                double beta = sigmoid(in->b[(size_t)t * HV + h]), scale = 1 / sqrt((double)K);
                for (int r = 0; r < V; r++)
                    for (int c = 0; c < K; c++) S[r * K + c] *= exp(g[c]);
                for (int r = 0; r < V; r++) {
                    double kv = 0;
                    for (int c = 0; c < K; c++) kv += S[r * K + c] * k[c];
                    double u = beta * (v[r] - kv);
                    double y = 0;
                    for (int c = 0; c < K; c++) {
                        S[r * K + c] += u * k[c];
                        y += S[r * K + c] * q[c];
                    }
                    o[r] = scale * y;
                }
            }
        }
        if (steps_conv && conv_n) memcpy(steps_conv + (size_t)t * conv_n, conv_state, conv_n * sizeof(double));
        if (steps_ssm && d->kind != K_SHORT_CONV)
            memcpy(steps_ssm + (size_t)t * ssm_n, ssm, ssm_n * sizeof(double));
    }
    free(xc);
    free(q);
    free(k);
    free(g);
}

void lref_sparse_query(int Hq, int Hkv, int Dk, int Dv, const double *q, const double *k,
                       const double *v, long pos, int block, int topk, int init_blocks,
                       int local_blocks, double sm_scale, double *out) {
    const int G = Hq / Hkv;
    const long len = pos + 1, nb = (len + block - 1) / block;
    double *bs = malloc((size_t)nb * sizeof *bs);
    char *keep = calloc((size_t)nb, 1), *taken = calloc((size_t)nb, 1);
    double *lg = malloc((size_t)len * sizeof *lg);
    if (!bs || !keep || !taken || !lg) {
        for (size_t i = 0; i < (size_t)Hq * Dv; i++) out[i] = NAN;
        Hq = 0; /* skip the loop below */
    }
    for (int g = 0; Hq && g < Hkv; g++) {
        for (long b = 0; b < nb; b++) bs[b] = -INFINITY;
        for (long i = 0; i < len; i++)
            for (int h = 0; h < G; h++) {
                double s = 0;
                for (int c = 0; c < Dk; c++) s += q[(size_t)(g * G + h) * Dk + c] * k[((size_t)i * Hkv + g) * Dk + c];
                if (s > bs[i / block]) bs[i / block] = s;
            }
        for (long b = 0; b < nb; b++) {
            keep[b] = b < init_blocks || b >= nb - local_blocks;
            taken[b] = 0;
        }
        for (int r = 0; r < topk && r < nb; r++) {
            long best = -1;
            for (long b = 0; b < nb; b++)
                if (!taken[b] && (best < 0 || bs[b] > bs[best])) best = b;
            taken[best] = keep[best] = 1;
        }
        for (int h = 0; h < G; h++) {
            const double *qh = q + (size_t)(g * G + h) * Dk;
            double mx = -INFINITY, den = 0;
            for (long i = 0; i < len; i++) {
                double s = 0;
                for (int c = 0; c < Dk; c++) s += qh[c] * k[((size_t)i * Hkv + g) * Dk + c];
                lg[i] = s * sm_scale;
                if (keep[i / block] && lg[i] > mx) mx = lg[i];
            }
            double *o = out + (size_t)(g * G + h) * Dv;
            for (int c = 0; c < Dv; c++) o[c] = 0;
            for (long i = 0; i < len; i++) {
                if (!keep[i / block]) continue;
                double p = exp(lg[i] - mx);
                den += p;
                for (int c = 0; c < Dv; c++) o[c] += p * v[((size_t)i * Hkv + g) * Dv + c];
            }
            for (int c = 0; c < Dv; c++) o[c] /= den;
        }
    }
    free(bs);
    free(keep);
    free(taken);
    free(lg);
}
