/* drive.c - runs a kind's layer over the batch (templated): phase A is the
 * conv1d of every request (parallel over requests), phase B the recurrence of
 * every (request, head) pair (parallel over pairs).  The kind supplies a
 * gather that turns one token into the core's operands; this file owns the
 * state handling shared by all kinds:
 *   - padded rows (slot -1) are skipped and their output rows zeroed;
 *   - a request without a prefix starts from zero state, whatever the pool holds;
 *   - verify with keep: the main state is left alone, the state after each
 *     draft token goes to the intermediate pool (state_commit picks one);
 *   - caller-owned state (ABI 1.2): the same, on the layer's tensors the
 *     engine passed instead of the pool.  The ssm state is used in place;
 *     the conv state is channel-major there and time-major in the conv
 *     loops, so a request's is transposed in and out of a working copy
 *     (W-1 <= 7 rows: small beside the conv itself).
 */
#include <string.h>

#include "hyb_tmpl.h"

typedef struct bufs {
    real_t *q, *k, *v, *g, *beta, *skip, *o, *st, *work;
} bufs;

/* Carve the worker's scratch (sizes match hyb_wbuf_elems in create.c). */
static bufs carve(hyb_inst *w, int worker) {
    const int K = w->d.dk, V = w->d.dv, C = HYB_CHUNK_MAX;
    bufs b;
    real_t *p = w->wbuf[worker].mem;
    b.q = p; p += (size_t)C * K;
    b.k = p; p += (size_t)C * K;
    b.v = p; p += (size_t)C * V;
    b.g = p; p += (size_t)C * K;
    b.beta = p; p += C;
    b.skip = p; p += (size_t)C * V;
    b.o = p; p += (size_t)C * V;
    b.st = p; p += (size_t)V * K;
    b.work = p;
    return b;
}

/* conv_weight [C][W] arrives channel-major; conv1d.c wants it tap-major,
 * [W][C], so its loops run along channels. */
void FN(hyb_load_conv)(const sgl_attn_linear_io *io, const hyb_dims *d, real_t *par) {
    const int64_t C = d->conv_dim, W = d->conv_w;
    real_t row[HYB_CONV_W_MAX];
    for (int64_t c = 0; c < C; c++) {
        hyb_load_r(io->conv_weight, c * W, row, W);
        for (int64_t j = 0; j < W; j++) par[j * C + c] = row[j];
    }
    if (io->conv_bias) hyb_load_r(io->conv_bias, 0, par + C * W, C);
    else memset(par + C * W, 0, (size_t)C * sizeof(real_t));
}

/* ------------------------------------------------------- conv state */

/* caller [C][H] (slot's row of a [S, C, H] or [S, steps, C, H] tensor) <-> time-major [H][C] */
static void conv_from_caller(const DLTensor *t, int64_t row, int C, int H, real_t *dst) {
    const real_t *src = (const real_t *)sgl_sdk_data(t) + (size_t)row * (size_t)C * H;
    for (int c = 0; c < C; c++)
        for (int j = 0; j < H; j++) dst[(size_t)j * C + c] = src[(size_t)c * H + j];
}
static void conv_to_caller(DLTensor *t, int64_t row, int C, int H, const real_t *src) {
    real_t *dst = (real_t *)sgl_sdk_data(t) + (size_t)row * (size_t)C * H;
    for (int c = 0; c < C; c++)
        for (int j = 0; j < H; j++) dst[(size_t)c * H + j] = src[(size_t)j * C + c];
}

real_t *FN(hyb_conv_state_begin)(hyb_call *c, int64_t r, real_t *tmp) {
    hyb_inst *w = c->w;
    const hyb_req *rq = &w->plan.req[r];
    const int C = w->d.conv_dim, H = w->d.conv_w - 1;
    const size_t hist_elems = (size_t)C * (size_t)H;
    if (c->cs.used) {
        if (rq->has_init && c->cs.conv) conv_from_caller(c->cs.conv, c->slot[r], C, H, tmp);
        else memset(tmp, 0, hist_elems * sizeof(real_t));
        return tmp;
    }
    real_t *st = hyb_pool_conv(&w->pool, c->li, c->slot[r]);
    if (c->keep) {
        if (rq->has_init) memcpy(tmp, st, hist_elems * sizeof(real_t));
        else memset(tmp, 0, hist_elems * sizeof(real_t));
        return tmp;
    }
    if (!rq->has_init) memset(st, 0, hist_elems * sizeof(real_t));
    return st;
}

void FN(hyb_conv_state_step)(hyb_call *c, int64_t r, int j, const real_t *st) {
    hyb_inst *w = c->w;
    const int C = w->d.conv_dim, H = w->d.conv_w - 1;
    if (!c->cs.used) {
        memcpy(hyb_pool_iconv(&w->pool, c->li, c->slot[r], j), st, (size_t)C * H * sizeof(real_t));
    } else if (c->cs.iconv) {
        conv_to_caller(c->cs.iconv, (int64_t)c->slot[r] * c->cs.steps + j, C, H, st);
    }
}

void FN(hyb_conv_state_end)(hyb_call *c, int64_t r, const real_t *st) {
    if (c->cs.used && !c->keep && c->cs.conv)
        conv_to_caller(c->cs.conv, c->slot[r], c->w->d.conv_dim, c->w->d.conv_w - 1, st);
}

/* ------------------------------------------------------------- phase A */

typedef struct actx {
    hyb_call *c;
    const real_t *weight, *bias;
    int silu;
} actx;

static void item_a(void *p, int64_t r, int worker) {
    const actx *x = p;
    hyb_call *c = x->c;
    hyb_inst *w = c->w;
    const hyb_req *rq = &w->plan.req[r];
    if (rq->n <= 0 || c->slot[r] < 0) return;
    const int C = w->d.conv_dim, W = w->d.conv_w;
    const size_t hist_elems = (size_t)C * (size_t)(W - 1);
    real_t *hist = w->wbuf[worker].mem, *tmp = hist + hist_elems, *in = tmp + hist_elems;
    real_t *st = FN(hyb_conv_state_begin)(c, r, tmp);
    real_t *xs = (real_t *)w->scratch + (size_t)rq->tok * C;
    if (c->chunk > 0) {
        for (int j = 0; j < rq->n; j++)
            hyb_load_r(c->io->x, (rq->tok + j) * (int64_t)w->d.x_dim, xs + (size_t)j * C, C);
        FN(hyb_conv1d_seq)(st, C, W, x->weight, x->bias, xs, rq->n, x->silu, hist);
    } else {
        for (int j = 0; j < rq->n; j++) {
            hyb_load_r(c->io->x, (rq->tok + j) * (int64_t)w->d.x_dim, in, C);
            FN(hyb_conv1d_step)(st, C, W, x->weight, x->bias, in, xs + (size_t)j * C, x->silu);
            if (c->keep) FN(hyb_conv_state_step)(c, r, j, st);
        }
    }
    FN(hyb_conv_state_end)(c, r, st);
}

void FN(hyb_conv_phase)(hyb_call *c, const real_t *weight, const real_t *bias, int silu) {
    actx x = {c, weight, bias, silu};
    hyb_workers_run(c->w->workers, c->w->plan.bs, item_a, &x);
}

/* ------------------------------------------------------------- phase B */

typedef struct bctx {
    hyb_call *c;
    const FN(hyb_spec) *s;
} bctx;

static void item_b(void *p, int64_t item, int worker) {
    const bctx *x = p;
    hyb_call *c = x->c;
    const FN(hyb_spec) *s = x->s;
    hyb_inst *w = c->w;
    const int H = w->d.hv, K = w->d.dk, V = w->d.dv;
    const int r = (int)(item / H), h = (int)(item % H);
    const hyb_req *rq = &w->plan.req[r];
    const int32_t slot = c->slot[r];
    if (rq->n <= 0) return;
    if (slot < 0) {
        for (int j = 0; j < rq->n; j++) hyb_zero(c->out, ((rq->tok + j) * H + h) * (int64_t)V, V);
        return;
    }
    bufs b = carve(w, worker);
    const size_t sz = (size_t)V * K;
    /* caller-owned: [S, H, V, K] of the compute type (the checks hold it to the state dtype) */
    real_t *S = (c->cs.used ? (real_t *)sgl_sdk_data(c->cs.ssm) + (size_t)slot * H * sz
                            : (real_t *)hyb_pool_ssm(&w->pool, c->li, slot)) + (size_t)h * sz;
    if (c->keep) {
        if (rq->has_init) memcpy(b.st, S, sz * sizeof(real_t));
        else memset(b.st, 0, sz * sizeof(real_t));
        S = b.st;
    } else if (!rq->has_init) {
        memset(S, 0, sz * sizeof(real_t));
    }
    const int gc = s->g_per_channel ? K : 1;
    const int chunk = c->keep ? 0 : c->chunk;
    const int cb = chunk > 0 ? chunk : HYB_CHUNK_MAX;
    for (int t0 = 0; t0 < rq->n; t0 += cb) {
        const int nc = rq->n - t0 < cb ? rq->n - t0 : cb;
        for (int j = 0; j < nc; j++)
            s->gather(c, s, h, rq->tok + t0 + j, b.q + (size_t)j * K, b.k + (size_t)j * K,
                      b.v + (size_t)j * V, b.g + (size_t)j * gc, b.beta + j, b.skip + (size_t)j * V);
        if (chunk > 0) {
            if (s->core == HYB_CORE_DELTA)
                FN(hyb_delta_chunk)(S, K, V, nc, b.q, b.k, b.v, b.g, s->g_per_channel, b.beta,
                                    s->scale, b.o, b.work);
            else
                FN(hyb_declin_chunk)(S, K, V, nc, b.q, b.k, b.v, b.g, s->scale, b.o, b.work);
        } else {
            for (int j = 0; j < nc; j++) {
                const size_t jk = (size_t)j * K, jv = (size_t)j * V;
                if (s->core == HYB_CORE_DELTA)
                    FN(hyb_delta_step)(S, K, V, b.q + jk, b.k + jk, b.v + jv, b.g + (size_t)j * gc,
                                       s->g_per_channel, b.beta[j], s->scale, b.o + jv);
                else
                    FN(hyb_declin_step)(S, K, V, b.q + jk, b.k + jk, b.v + jv, b.g[j], s->scale,
                                        b.o + jv);
                if (c->keep) {
                    real_t *dst = c->cs.used ? (real_t *)sgl_sdk_data(c->cs.issm) +
                                                   ((size_t)slot * (size_t)c->cs.steps + (size_t)(t0 + j)) * H * sz
                                             : (real_t *)hyb_pool_issm(&w->pool, c->li, slot, t0 + j);
                    memcpy(dst + (size_t)h * sz, S, sz * sizeof(real_t));
                }
            }
        }
        for (int j = 0; j < nc; j++) {
            real_t *o = b.o + (size_t)j * V;
            if (s->has_skip)
                for (int r2 = 0; r2 < V; r2++) o[r2] += b.skip[(size_t)j * V + r2];
            hyb_store_r(c->out, ((rq->tok + t0 + j) * H + h) * (int64_t)V, o, V);
        }
    }
}

int FN(hyb_drive)(hyb_call *c, const FN(hyb_spec) *s) {
    bctx x = {c, s};
    hyb_workers_run(c->w->workers, (int64_t)c->w->plan.bs * c->w->d.hv, item_b, &x);
    return SGL_ATTN_OK;
}
