/* mamba2.c - Mamba-2 SSD layer compute (Nemotron-H, Falcon-H1, Zamba2),
 * templated.
 *
 * linear->x is xBC [T, H*P + 2*G*N] (x, B, C in that order); conv1d + SiLU
 * over all of it.  Head h reads group h / (H / G):
 *     dt = softplus(dt_raw[t, h] + dt_bias[h]),  A = -exp(A_log[h])
 *     S  = exp(dt*A) S + (dt x) B^T          (S is [P][N])
 *     y  = S C + D[h] x
 * i.e. declin.c with v = dt*x, k = B, q = C, g = dt*A, scale 1, skip D*x.
 * The gated RMSNorm with z and the projections stay in the model.
 */
#include "hyb_tmpl.h"

static void gather(const hyb_call *c, const FN(hyb_spec) *s, int h, int64_t tok, real_t *q,
                   real_t *k, real_t *v, real_t *g, real_t *beta, real_t *skip) {
    (void)beta;
    const hyb_dims *d = &c->w->d;
    const int N = d->dk, P = d->dv, G = d->hk, H = d->hv, C = d->conv_dim;
    const int grp = h / (H / G);
    const real_t *row = (const real_t *)c->w->scratch + (size_t)tok * C;
    const real_t *x = row + (size_t)h * P, *B = row + (size_t)H * P + (size_t)grp * N,
                 *Cc = row + (size_t)H * P + (size_t)G * N + (size_t)grp * N;
    const real_t *negA = s->par, *dt_bias = negA + H, *Dp = dt_bias + H;
    real_t raw;
    hyb_load_r(c->io->a, tok * H + h, &raw, 1);
    real_t dt = FN(hyb_softplus)(raw + dt_bias[h]);
    for (int i = 0; i < P; i++) {
        v[i] = dt * x[i];
        skip[i] = Dp[h] * x[i];
    }
    for (int i = 0; i < N; i++) {
        k[i] = B[i];
        q[i] = Cc[i];
    }
    g[0] = dt * negA[h];
}

int FN(hyb_mamba2_forward)(hyb_call *c) {
    const hyb_dims *d = &c->w->d;
    real_t *conv = c->w->params;
    real_t *par = conv + (size_t)d->conv_dim * (d->conv_w + 1); /* negA[H] dt_bias[H] D[H] */
    const int H = d->hv;
    FN(hyb_load_conv)(c->io, d, conv);
    hyb_load_r(c->io->A_log, 0, par, H);
    for (int h = 0; h < H; h++) par[h] = -r_exp(par[h]);
    hyb_load_r(c->io->dt_bias, 0, par + H, H);
    if (c->io->D) hyb_load_r(c->io->D, 0, par + 2 * H, H);
    else for (int h = 0; h < H; h++) par[2 * H + h] = 0;
    FN(hyb_conv_phase)(c, conv, conv + (size_t)d->conv_dim * d->conv_w, 1);
    FN(hyb_spec) s = {HYB_CORE_DECLIN, 0, 1, 1, par, gather};
    return FN(hyb_drive)(c, &s);
}
