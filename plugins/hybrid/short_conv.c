/* short_conv.c - LFM2 gated short convolution layer compute, templated.
 *
 * linear->x is BCx [T, 3*D] (B, C, x in that order, as LFM2 chunks it).
 *     Bx = B * x;  c = causal conv1d(Bx) (no activation, state [D, W-1]);
 *     y  = C * c                                     -> out [T, D]
 * There is no recurrence beyond the conv state: decode shifts the state per
 * token, extend convolves each request at once (conv1d.c's two forms).
 */
#include <string.h>

#include "hyb_tmpl.h"

static void item(void *p, int64_t r, int worker) {
    hyb_call *c = p;
    hyb_inst *w = c->w;
    const hyb_req *rq = &w->plan.req[r];
    const int D = w->d.conv_dim, W = w->d.conv_w;
    if (rq->n <= 0) return;
    if (c->slot[r] < 0) {
        hyb_zero(c->out, rq->tok * D, (int64_t)rq->n * D);
        return;
    }
    const size_t hist_elems = (size_t)D * (size_t)(W - 1);
    real_t *hist = w->wbuf[worker].mem, *tmp = hist + hist_elems, *row = tmp + hist_elems;
    const real_t *weight = w->params, *bias = (const real_t *)w->params + (size_t)D * W;
    real_t *st = FN(hyb_conv_state_begin)(c, r, tmp);
    real_t *xs = (real_t *)w->scratch + (size_t)rq->tok * D;
    for (int j = 0; j < rq->n; j++) {
        hyb_load_r(c->io->x, (rq->tok + j) * 3 * (int64_t)D, row, 3 * (int64_t)D);
        real_t *bx = xs + (size_t)j * D;
        for (int i = 0; i < D; i++) bx[i] = row[i] * row[2 * D + i];
    }
    if (c->chunk > 0) {
        FN(hyb_conv1d_seq)(st, D, W, weight, bias, xs, rq->n, 0, hist);
    } else {
        for (int j = 0; j < rq->n; j++) {
            real_t *bx = xs + (size_t)j * D;
            memcpy(row, bx, (size_t)D * sizeof(real_t)); /* the step's input and output are apart */
            FN(hyb_conv1d_step)(st, D, W, weight, bias, row, bx, 0);
            if (c->keep) FN(hyb_conv_state_step)(c, r, j, st);
        }
    }
    FN(hyb_conv_state_end)(c, r, st);
    for (int j = 0; j < rq->n; j++) {
        real_t *y = xs + (size_t)j * D;
        hyb_load_r(c->io->x, (rq->tok + j) * 3 * (int64_t)D + D, row, D);
        for (int i = 0; i < D; i++) y[i] *= row[i];
        hyb_store_r(c->out, (rq->tok + j) * (int64_t)D, y, D);
    }
}

int FN(hyb_short_conv_forward)(hyb_call *c) {
    FN(hyb_load_conv)(c->io, &c->w->d, c->w->params);
    hyb_workers_run(c->w->workers, c->w->plan.bs, item, c);
    return SGL_ATTN_OK;
}
