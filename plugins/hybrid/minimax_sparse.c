/* minimax_sparse.c - block-sparse softmax attention of MiniMax's sparse
 * layers over the paged KV pool, templated.
 *
 * For a query token at position p of a request (it sees keys 0..p) and KV
 * head g with q heads h in its group:
 *   1. token score   s_i = max_h (q_h . k_i)          (raw dot, no scale)
 *   2. block score   S_b = max of s_i over the tokens of block b
 *                    (block b = positions [b*B, (b+1)*B) of the request)
 *   3. chosen blocks = top-k blocks by S_b (ties: lower index first)
 *                      + the first `init` blocks + the last `local` blocks
 *                      (the query's own block and the ones before it)
 *   4. each q head h: softmax(sm_scale * q_h . k_i) over the tokens of the
 *      chosen blocks (i <= p), times v_i.
 * MiniMax-M3 scores blocks with a separate lightweight indexer (its own
 * idx_q / idx_k projections and cache); the ABI carries no indexer tensors,
 * so the main q/k stand in for them (docs/hybrid.md).  Scores are raw dot
 * products so the discrete choice does not depend on the scale's rounding.
 */
#include <float.h>
#include <stdatomic.h>
#include <string.h>

#include "hyb_tmpl.h"

typedef struct sctx {
    hyb_call *c;
    real_t sm_scale;
    int64_t slots;        /* the layer's pool */
    /* the first slot found outside it (the batch changed after planning) */
    atomic_int bad;
    int bad_what;         /* 0: req_to_token, 1: out_cache_loc */
    int64_t bad_index, bad_value;
} sctx;

/* slot, or -1 when it is outside the pool (noted, first one kept) */
static int64_t checked(sctx *x, int what, int64_t index, int64_t slot) {
    if ((uint64_t)slot < (uint64_t)x->slots) return slot;
    int expected = 0;
    if (atomic_compare_exchange_strong(&x->bad, &expected, 1)) {
        x->bad_what = what;
        x->bad_index = index;
        x->bad_value = slot;
    }
    return -1;
}

/* the request holding token t (requests are in token order) */
static int req_of(const hyb_plan *p, int64_t t) {
    int lo = 0, hi = p->bs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (p->req[mid].tok <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static real_t dot(const real_t *a, const real_t *b, int n) {
    real_t acc = 0;
    for (int i = 0; i < n; i++) acc += a[i] * b[i];
    return acc;
}

static void item(void *p, int64_t it, int worker) {
    sctx *x = p;
    hyb_call *c = x->c;
    hyb_inst *w = c->w;
    const sgl_attn_layer *L = c->a->layer;
    const int Hq = L->num_q_heads, Hkv = L->num_kv_heads, Dk = L->head_dim_qk,
              Dv = L->head_dim_v, G = Hq / Hkv;
    const int64_t t = it / Hkv;
    const int g = (int)(it % Hkv);
    const hyb_req *rq = &w->plan.req[req_of(&w->plan, t)];
    const int64_t pos = rq->seq_len - rq->n + (t - rq->tok), kv_len = pos + 1;
    const int B = w->d.block;
    const int64_t nb = (kv_len + B - 1) / B;
    if (nb <= 0) return; /* kv_len >= 1 by the plan's checks */
    const int64_t rtt_cols = w->plan.rtt_cols;

    real_t *sc = w->wbuf[worker].mem;                 /* [max_context] */
    real_t *bsc = sc + w->max_context;                /* [nb] */
    real_t *logit = bsc + w->max_context;             /* [G][max_context] */
    real_t *qg = logit + (size_t)G * w->max_context;  /* [G][Dk] */
    real_t *kr = qg + (size_t)G * Dk, *vr = kr + Dk, *acc = vr + Dv; /* acc [G][Dv] */
    uint8_t *chosen = (uint8_t *)(acc + (size_t)G * Dv);               /* [nb] */

    for (int h = 0; h < G; h++) hyb_load_r(c->a->q, (t * Hq + (int64_t)g * G + h) * Dk, qg + (size_t)h * Dk, Dk);
    for (int64_t i = 0; i < kv_len; i++) {
        const int64_t at = (int64_t)rq->row * rtt_cols + i;
        int64_t slot = checked(x, 0, at, sgl_sdk_idx(w->plan.rtt, w->plan.rtt64, at));
        if (slot < 0) return; /* nothing of this item is written */
        hyb_load_r(L->k_cache, (slot * Hkv + g) * Dk, kr, Dk);
        real_t best = -(real_t)INFINITY;
        for (int h = 0; h < G; h++) {
            real_t s = dot(qg + (size_t)h * Dk, kr, Dk);
            logit[(size_t)h * w->max_context + i] = s;
            if (s > best) best = s;
        }
        sc[i] = best;
    }
    for (int64_t b = 0; b < nb; b++) {
        real_t m = -(real_t)INFINITY;
        int64_t e = (b + 1) * B < kv_len ? (b + 1) * B : kv_len;
        for (int64_t i = b * B; i < e; i++) m = sc[i] > m ? sc[i] : m;
        bsc[b] = m;
        chosen[b] = b < w->d.init_blocks || b >= nb - w->d.local_blocks;
    }
    /* top-k: k passes of "largest not yet taken", lower index on ties */
    uint8_t *taken = chosen + nb;
    memset(taken, 0, (size_t)nb);
    for (int r = 0; r < w->d.topk && r < nb; r++) {
        int64_t arg = -1;
        for (int64_t b = 0; b < nb; b++)
            if (!taken[b] && (arg < 0 || bsc[b] > bsc[arg])) arg = b;
        taken[arg] = 1;
        chosen[arg] = 1;
    }
    for (int h = 0; h < G; h++) {
        const real_t *lg = logit + (size_t)h * w->max_context;
        real_t mx = -(real_t)INFINITY, den = 0;
        for (int64_t i = 0; i < kv_len; i++)
            if (chosen[i / B] && lg[i] * x->sm_scale > mx) mx = lg[i] * x->sm_scale;
        real_t *ah = acc + (size_t)h * Dv;
        memset(ah, 0, (size_t)Dv * sizeof(real_t));
        for (int64_t i = 0; i < kv_len; i++) {
            if (!chosen[i / B]) continue;
            real_t pr = r_exp(lg[i] * x->sm_scale - mx);
            den += pr;
            const int64_t at = (int64_t)rq->row * rtt_cols + i;
            int64_t slot = checked(x, 0, at, sgl_sdk_idx(w->plan.rtt, w->plan.rtt64, at));
            if (slot < 0) return;
            hyb_load_r(L->v_cache, (slot * Hkv + g) * Dv, vr, Dv);
            for (int d = 0; d < Dv; d++) ah[d] += pr * vr[d];
        }
        for (int d = 0; d < Dv; d++) ah[d] /= den;
        hyb_store_r(c->out, (t * Hq + (int64_t)g * G + h) * Dv, ah, Dv);
    }
}

int FN(hyb_minimax_sparse_forward)(hyb_call *c) {
    hyb_inst *w = c->w;
    const sgl_attn_forward_args *a = c->a;
    const sgl_attn_layer *L = a->layer;
    const int Hkv = L->num_kv_heads, Dk = L->head_dim_qk, Dv = L->head_dim_v;
    sctx x = {.c = c, .sm_scale = (real_t)L->sm_scale, .slots = L->k_cache->shape[0]};
    atomic_init(&x.bad, 0);
    if (a->save_kv_cache) {
        real_t *row = w->wbuf[0].mem;
        for (int64_t t = 0; t < w->plan.T; t++) {
            int64_t loc = checked(&x, 1, t, sgl_sdk_idx(w->plan.ocl, w->plan.ocl64, t));
            if (loc < 0) continue; /* not saved; the call fails below */
            hyb_load_r(a->k, t * Hkv * Dk, row, (int64_t)Hkv * Dk);
            hyb_store_r(L->k_cache, loc * Hkv * Dk, row, (int64_t)Hkv * Dk);
            hyb_load_r(a->v, t * Hkv * Dv, row, (int64_t)Hkv * Dv);
            hyb_store_r(L->v_cache, loc * Hkv * Dv, row, (int64_t)Hkv * Dv);
        }
    }
    if (!atomic_load(&x.bad)) hyb_workers_run(w->workers, (int64_t)w->plan.T * Hkv, item, &x);
    if (atomic_load(&x.bad)) {
        if (x.bad_what)
            hyb_set_err(w, "%s layer %d: batch.out_cache_loc[%lld] = %lld is outside the pool of %lld slots: the batch "
                        "changed after init_forward_metadata checked it", w->impl->name, L->layer_id,
                        (long long)x.bad_index, (long long)x.bad_value, (long long)x.slots);
        else
            hyb_set_err(w, "%s layer %d: batch.req_to_token[%lld][%lld] = %lld is outside the pool of %lld slots: the "
                        "batch changed after init_forward_metadata checked it", w->impl->name, L->layer_id,
                        (long long)(x.bad_index / w->plan.rtt_cols), (long long)(x.bad_index % w->plan.rtt_cols),
                        (long long)x.bad_value, (long long)x.slots);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}
