/* delta_layer.c - the layer compute gdn and kda share, templated.
 *
 * linear->x is sglang's mixed_qkv [T, 2*HK*K + HV*V] (q, k, v in that order,
 * heads contiguous).  Per token: causal conv1d over all channels + SiLU; split
 * q [HK, K], k [HK, K], v [HV, V]; optional l2norm of q and k (eps 1e-6);
 * beta = sigmoid(b[t, h]); then the gated delta rule (delta_rule.c) per value
 * head h, reading the q/k of key head h / (HV / HK), scale K^-1/2.  Output
 * [T, HV, V].  The log-decay g is the kind's (gdn.c, kda.c say which):
 *     one per head:        g    = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h])
 *     one per key channel: g[c] = -exp(A_log[h]) * softplus(a[t, h*K + c] + dt_bias[h*K + c])
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
    const real_t *negA = s->par;
    if (s->g_per_channel) { /* a [T, HV*K], dt_bias [HV*K] */
        const real_t *dt_bias = negA + HV + (size_t)h * K;
        hyb_load_r(c->io->a, (tok * HV + h) * (int64_t)K, g, K);
        for (int i = 0; i < K; i++) g[i] = negA[h] * FN(hyb_softplus)(g[i] + dt_bias[i]);
    } else { /* a [T, HV], dt_bias [HV] */
        const real_t *dt_bias = negA + HV;
        real_t a;
        hyb_load_r(c->io->a, tok * HV + h, &a, 1);
        g[0] = negA[h] * FN(hyb_softplus)(a + dt_bias[h]);
    }
    real_t b;
    hyb_load_r(c->io->b, tok * HV + h, &b, 1);
    *beta = FN(hyb_sigmoid)(b);
}

int FN(hyb_delta_layer_forward)(hyb_call *c, int g_per_channel) {
    const hyb_dims *d = &c->w->d;
    real_t *conv = c->w->params;
    /* negA[HV], then dt_bias: [HV*K] per key channel, else [HV] */
    real_t *par = conv + (size_t)d->conv_dim * (d->conv_w + 1);
    FN(hyb_load_conv)(c->io, d, conv);
    hyb_load_r(c->io->A_log, 0, par, d->hv);
    for (int h = 0; h < d->hv; h++) par[h] = -r_exp(par[h]);
    hyb_load_r(c->io->dt_bias, 0, par + d->hv, (int64_t)d->hv * (g_per_channel ? d->dk : 1));
    FN(hyb_conv_phase)(c, conv, conv + (size_t)d->conv_dim * d->conv_w, 1);
    FN(hyb_spec) s = {HYB_CORE_DELTA, g_per_channel, 0, (real_t)1 / r_sqrt((real_t)d->dk), par, gather};
    return FN(hyb_drive)(c, &s);
}
