/* lightning.c - MiniMax-01 lightning attention layer compute, templated.
 *
 * q, k [T, H, Dk] and v [T, H, Dv] come in the forward args (after the
 * model's activation); linear->decay is the per-head slope s_h.  Per head:
 *     S = exp(-s_h) S + v k^T,   o = S q        (S is [Dv][Dk], no scale)
 * as sglang's lightning_attention_decode; extend uses the block-chunked form
 * of declin.c.  The output norm and gate stay in the model.
 */
#include "hyb_tmpl.h"

static void gather(const hyb_call *c, const FN(hyb_spec) *s, int h, int64_t tok, real_t *q,
                   real_t *k, real_t *v, real_t *g, real_t *beta, real_t *skip) {
    (void)beta;
    (void)skip;
    const hyb_dims *d = &c->w->d;
    const int64_t row = tok * d->hv + h;
    hyb_load_r(c->a->q, row * d->dk, q, d->dk);
    hyb_load_r(c->a->k, row * d->dk, k, d->dk);
    hyb_load_r(c->a->v, row * d->dv, v, d->dv);
    g[0] = -s->par[h];
}

int FN(hyb_lightning_forward)(hyb_call *c) {
    real_t *par = c->w->params; /* slope[H] */
    hyb_load_r(c->io->decay, 0, par, c->w->d.hv);
    FN(hyb_spec) s = {HYB_CORE_DECLIN, 0, 0, 1, par, gather};
    return FN(hyb_drive)(c, &s);
}
