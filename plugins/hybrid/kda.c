/* kda.c - Kimi Delta Attention (Kimi-Linear) layer compute, templated.
 *
 * As gdn.c (mixed q/k/v through conv1d + SiLU, l2norm option, beta =
 * sigmoid(b), GQA grouping, scale K^-1/2) except that the decay is per key
 * channel: a is [T, HV*K] and
 *     g[c] = -exp(A_log[h]) * softplus(a[t, h*K + c] + dt_bias[h*K + c])
 * so the state decays as S diag(exp(g)) (delta_rule.c, per-channel gates).
 */
#include <string.h>

#include "hyb_tmpl.h"

static void l2norm(real_t *x, int n) {
    real_t ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    real_t inv = (real_t)1 / r_sqrt(ss + (real_t)1e-6);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

static void gather(const hyb_call *c, const FN(hyb_spec) *s, int h, int64_t tok, real_t *q,
                   real_t *k, real_t *v, real_t *g, real_t *beta, real_t *skip) {
    (void)skip;
    const hyb_dims *d = &c->w->d;
    const int K = d->dk, V = d->dv, HK = d->hk, HV = d->hv, C = d->conv_dim;
    const int hk = h / (HV / HK);
    const real_t *row = (const real_t *)c->w->scratch + (size_t)tok * C;
    memcpy(q, row + (size_t)hk * K, (size_t)K * sizeof(real_t));
    memcpy(k, row + (size_t)(HK + hk) * K, (size_t)K * sizeof(real_t));
    memcpy(v, row + (size_t)2 * HK * K + (size_t)h * V, (size_t)V * sizeof(real_t));
    if (c->io->use_qk_l2norm) {
        l2norm(q, K);
        l2norm(k, K);
    }
    real_t b;
    hyb_load_r(c->io->a, (tok * HV + h) * (int64_t)K, g, K);
    hyb_load_r(c->io->b, tok * HV + h, &b, 1);
    const real_t *negA = s->par, *dt_bias = negA + HV + (size_t)h * K;
    for (int i = 0; i < K; i++) g[i] = negA[h] * FN(hyb_softplus)(g[i] + dt_bias[i]);
    *beta = FN(hyb_sigmoid)(b);
}

int FN(hyb_kda_forward)(hyb_call *c) {
    const hyb_dims *d = &c->w->d;
    real_t *conv = c->w->params;
    real_t *par = conv + (size_t)d->conv_dim * (d->conv_w + 1); /* negA[HV] dt_bias[HV*K] */
    FN(hyb_load_conv)(c->io, d, conv);
    hyb_load_r(c->io->A_log, 0, par, d->hv);
    for (int h = 0; h < d->hv; h++) par[h] = -r_exp(par[h]);
    hyb_load_r(c->io->dt_bias, 0, par + d->hv, (int64_t)d->hv * d->dk);
    FN(hyb_conv_phase)(c, conv, conv + (size_t)d->conv_dim * d->conv_w, 1);
    FN(hyb_spec) s = {HYB_CORE_DELTA, 1, 0, (real_t)1 / r_sqrt((real_t)d->dk), par, gather};
    return FN(hyb_drive)(c, &s);
}
