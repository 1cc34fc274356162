/* forward.c - one forward on the thread pool: save the new K/V, attend, and
 * combine decode splits.  Nothing here allocates: the job, the work counter
 * and every buffer belong to the backend. */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"

size_t cref_scratch_bytes(int rows, int dqk, int dv) {
    const size_t a = CREF_ALIGN, e = sizeof(double), r = (size_t)rows;
#define UP(n) (((n) + a - 1) / a * a)
    return UP(r * (size_t)dqk * e) + UP(r * (size_t)dv * e) + UP(r * CREF_TILE * e) + 2 * UP(r * e) +
           2 * UP(r * sizeof(int32_t)) + 2 * UP(2 * CREF_TILE * sizeof(void *));
#undef UP
}

/* A slot outside the pool is skipped (nothing written) and noted.  A cross
 * layer saves the encoder tokens (encoder_out_cache_loc). */
static void save_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const int64_t T = b->job.cross ? b->n_enc_tok : b->num_tokens, n = b->nthreads;
    const int64_t t0 = T * tid / n, t1 = T * (tid + 1) / n;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t slot = cref_new_slot(b, t);
        if (slot < 0) continue;
        cref_save_token(&b->job, b->k_new, b->k_dt, b->v_new, b->v_dt, t, slot);
    }
}

/* The first index the loops found outside the pool, as the error. */
static int bad_index(cref_backend *b) {
    const cref_bad *x = &b->bad;
    if (x->what == 2)
        cref_set_error(b, "forward: layer.slot_map[%lld] = %lld is outside the pool of %lld slots: the map changed "
                       "during the call",
                       (long long)x->index, (long long)x->value, (long long)b->job.pool_slots);
    else if (x->what == 1)
        cref_set_error(b, "forward: batch.%s[%lld] = %lld is outside the pool of %lld slots%s: the batch "
                       "changed after init_forward_metadata checked it; token %lld was not saved",
                       b->job.cross ? "encoder_out_cache_loc" : "out_cache_loc", (long long)x->index,
                       (long long)x->value, (long long)b->job.pool_slots, b->job.slot_map ? " (or its slot map)" : "",
                       (long long)x->index);
    else if (b->r2t_cols == 0) /* page tables are copied and checked at planning; kept for safety */
        cref_set_error(b, "forward: a page_table slot %lld is outside the pool of %lld slots", (long long)x->value,
                       (long long)b->job.pool_slots);
    else
        cref_set_error(b, "forward: batch.req_to_token[%lld][%lld] = %lld is outside the pool of %lld slots: the "
                       "batch changed after init_forward_metadata checked it; the output is not written",
                       (long long)(x->index / b->r2t_cols), (long long)(x->index % b->r2t_cols), (long long)x->value,
                       (long long)b->job.pool_slots);
    return SGL_ATTN_E_INVALID;
}

/* Item index -> (request, query block, head group, split).  Requests are found by
 * binary search on their first query block; one with no new tokens has no
 * block and is never found. */
static void item_of(const cref_backend *b, int32_t idx, cref_item *it, int32_t *base) {
    const cref_job *J = &b->job;
    const int32_t s = idx % J->nsplit, rest = idx / J->nsplit;
    const int32_t qbg = rest / J->n_hgroups, hg = rest % J->n_hgroups;
    int lo = 0, hi = b->n_reqs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (b->reqs[mid].qb0 <= qbg) lo = mid;
        else hi = mid - 1;
    }
    const cref_req *r = &b->reqs[lo];
    it->req = r;
    it->h0 = hg * J->heads;
    it->nh = J->hkv - it->h0 < J->heads ? J->hkv - it->h0 : J->heads;
    it->j0 = (qbg - r->qb0) * J->qblock;
    it->nq = r->n_new - it->j0 < J->qblock ? r->n_new - it->j0 : J->qblock;
    const int32_t len = J->cross ? r->enc : r->seq_len;
    if (J->nsplit > 1) {
        int32_t chunk = (len + J->nsplit - 1) / J->nsplit;
        it->kb = s * chunk < len ? s * chunk : len;
        it->ke = it->kb + chunk < len ? it->kb + chunk : len;
        it->partial = J->partial + (size_t)idx * J->partial_stride;
    } else {
        it->kb = 0;
        it->ke = len;
        it->partial = NULL;
    }
    *base = rest;
}

static void attend_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    void *scratch = b->scratch + (size_t)tid * b->scratch_stride;
    const cref_attend_fn fn = b->job.kv_dt == SGL_ATTN_DT_F64 ? b->attend_f64 : b->attend_f32;
    int32_t k;
    /* From the last item down: later query blocks see more keys, so the big
     * ones start first and the small ones fill the gaps. */
    while ((k = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->n_items) {
        cref_item it;
        int32_t base;
        item_of(b, b->n_items - 1 - k, &it, &base);
        fn(&b->job, &it, scratch);
    }
}

static void combine_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    (void)tid;
    const cref_job *J = &b->job;
    const cref_combine_fn fn = J->kv_dt == SGL_ATTN_DT_F64 ? b->combine_f64 : b->combine_f32;
    const int32_t n_base = b->n_items / J->nsplit;
    int32_t k;
    while ((k = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < n_base) {
        cref_item it;
        int32_t base;
        item_of(b, k * J->nsplit, &it, &base);
        fn(J, &it, J->partial + (size_t)base * J->nsplit * J->partial_stride);
    }
}

int cref_forward(cref_backend *b, const sgl_attn_forward_args *a) {
    int rc = cref_check_args(b, a);
    const DLTensor *topk = rc ? NULL : cref_topk_of(a);
    if (topk && (rc = cref_sparse_check(b, a, topk))) return rc;
    if (rc || b->n_items == 0) return rc;
    if ((rc = cref_dual_chunk_check(b, a))) return rc;
    atomic_store_explicit(&b->bad.set, 0, memory_order_relaxed);
    if (b->save) cref_threads_run(b->threads, save_task, b);
    if (b->enc_only) cref_direct_keys(b);
    if (topk) { /* DSA: the selected slots only, one pass (no splits) */
        if (atomic_load(&b->bad.set)) return bad_index(b);
        cref_sparse_run(b);
        return SGL_ATTN_OK;
    }
    if (b->dca.on) {
        cref_dual_chunk_run(b);
        return atomic_load(&b->bad.set) ? bad_index(b) : SGL_ATTN_OK;
    }
    return cref_run_items(b);
}

int cref_run_items(cref_backend *b) {
    atomic_store_explicit(&b->next, 0, memory_order_relaxed);
    cref_threads_run(b->threads, attend_task, b);
    if (atomic_load(&b->bad.set)) return bad_index(b);
    if (b->job.nsplit > 1) {
        atomic_store_explicit(&b->next, 0, memory_order_relaxed);
        cref_threads_run(b->threads, combine_task, b);
    }
    return SGL_ATTN_OK;
}
