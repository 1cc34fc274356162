/* dsa_indexer.c - DSA's indexer on cpu_ref (backend_ops.indexer_topk), in
 * float64 over the fp8 index-key cache: save the new keys (DeepSeek's
 * per-128 e4m3 quantisation, cref_fp8.h), score every earlier token of each
 * query's request, keep the top `topk` as page-encoded pool slots.  The
 * score buffers are the instance's (create), so nothing allocates here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"
#include "cref_fp8.h"

#define IDX_QDTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_FP8_E4M3)
#define IDX_KDTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16)

/* One indexer call, resolved. */
typedef struct idx_job {
    const sgl_attn_indexer_args *a;
    int64_t hi, di, nblk, slots, topk;
    uint32_t q_dt, k_dt;
    const unsigned char *q, *k;
    const float *w;
    uint8_t *kc;
    float *ks;
    int32_t *out;
} idx_job;

static double load_q(const idx_job *x, int64_t i) {
    return x->q_dt == SGL_ATTN_DT_FP8_E4M3 ? cref_e4m3_to_f64(x->q[i]) : cref_load_f(x->q, i, x->q_dt);
}

/* Token t's new key into slot: per block of 128, the scale, then the bytes. */
static void save_key(const idx_job *x, int64_t t, int64_t slot) {
    float v[SGL_ATTN_DSA_SCALE_BLOCK];
    for (int64_t blk = 0; blk < x->nblk; blk++) {
        const int64_t i0 = t * x->di + blk * SGL_ATTN_DSA_SCALE_BLOCK;
        for (int d = 0; d < SGL_ATTN_DSA_SCALE_BLOCK; d++) v[d] = (float)cref_load_f(x->k, i0 + d, x->k_dt);
        x->ks[slot * x->nblk + blk] = cref_e4m3_quant_block(v, SGL_ATTN_DSA_SCALE_BLOCK, x->a->scale_pow2,
                                                            x->kc + slot * x->di + blk * SGL_ATTN_DSA_SCALE_BLOCK);
    }
}

/* I(t, s) = sum_h w[t, h] * ReLU(sum_d q[t, h, d] * k8[s, d] * scale[s, d / 128]). */
static double score(const idx_job *x, int64_t t, int64_t slot) {
    double total = 0;
    for (int64_t h = 0; h < x->hi; h++) {
        const int64_t q0 = (t * x->hi + h) * x->di;
        double dot = 0;
        for (int64_t blk = 0; blk < x->nblk; blk++) {
            double part = 0;
            for (int d = 0; d < SGL_ATTN_DSA_SCALE_BLOCK; d++) {
                const int64_t e = blk * SGL_ATTN_DSA_SCALE_BLOCK + d;
                part += load_q(x, q0 + e) * cref_e4m3_to_f64(x->kc[slot * x->di + e]);
            }
            dot += part * (double)x->ks[slot * x->nblk + blk];
        }
        total += (double)x->w[t * x->hi + h] * (dot > 0 ? dot : 0);
    }
    return total;
}

/* Higher score first; on a tie the earlier position. */
static int by_score(const void *pa, const void *pb) {
    const cref_scored *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static const cref_req *req_of(const cref_backend *b, int64_t t) {
    int lo = 0, hi = b->n_reqs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (b->reqs[mid].tok0 <= t) lo = mid;
        else hi = mid - 1;
    }
    return &b->reqs[lo];
}

static void index_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const idx_job *x = b->idx;
    cref_scored *buf = b->dsa_buf + (size_t)tid * (size_t)b->max_context;
    int32_t t;
    while ((t = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->num_tokens) {
        const cref_req *r = req_of(b, t);
        int32_t *row = x->out + (int64_t)t * x->topk;
        for (int64_t j = 0; j < x->topk; j++) row[j] = -1;
        if (t < r->tok0 || t >= r->tok0 + r->n_new) continue; /* a request with no new token owns none */
        const int32_t pos = r->prefix + (t - r->tok0), n = pos + 1; /* causal: positions 0..pos */
        int ok = 1;
        for (int32_t p = 0; p < n; p++) {
            const int64_t slot = sgl_sdk_idx(b->r2t, b->r2t_64, r->row * b->r2t_cols + p);
            if ((uint64_t)slot >= (uint64_t)x->slots) {
                cref_bad_note(&b->bad, 0, r->row * b->r2t_cols + p, slot);
                ok = 0;
                break;
            }
            buf[p].score = score(x, t, slot);
            buf[p].pos = p;
            buf[p].slot = (int32_t)slot;
        }
        if (!ok) continue;
        qsort(buf, (size_t)n, sizeof *buf, by_score);
        for (int32_t j = 0; j < n && j < x->topk; j++) row[j] = buf[j].slot;
    }
}

static void save_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const idx_job *x = b->idx;
    const int64_t T = b->num_tokens, nt = b->nthreads;
    for (int64_t t = T * tid / nt; t < T * (tid + 1) / nt; t++) {
        const int64_t slot = sgl_sdk_idx(b->out_cache_loc, b->ocl_64, t);
        if ((uint64_t)slot >= (uint64_t)x->slots) {
            cref_bad_note(&b->bad, 1, t, slot);
            continue;
        }
        save_key(x, t, slot);
    }
}

static int check(cref_backend *b, const sgl_attn_indexer_args *a, idx_job *x) {
    int rc;
    if (!a || a->struct_size < sizeof *a) {
        cref_set_error(b, "indexer_topk: args NULL or struct_size %u < %zu", a ? a->struct_size : 0, sizeof *a);
        return SGL_ATTN_E_INVALID;
    }
    if (!b->batch || a->batch != b->batch) {
        cref_set_error(b, "indexer_topk: args.batch is not the batch of the last init_forward_metadata");
        return SGL_ATTN_E_STATE;
    }
    if (!b->dsa_buf) {
        cref_set_error(b, "indexer_topk: the instance was created for a model without index_topk: it has no "
                          "score buffers");
        return SGL_ATTN_E_STATE;
    }
    if (b->has_enc) {
        cref_set_error(b, "indexer_topk: the batch has encoder tokens: DSA is decoder-only");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (b->page_size) {
        cref_set_error(b, "indexer_topk: the batch has a page_table; cpu_ref's indexer reads req_to_token");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (a->topk < 1) {
        cref_set_error(b, "indexer_topk: topk %d: expected >= 1 (the model's index_topk)", a->topk);
        return SGL_ATTN_E_INVALID;
    }
    const int64_t T = b->num_tokens;
    if ((rc = cref_check(b, a->q, "indexer q", "num_tokens, index_n_heads, index_head_dim", IDX_QDTYPES, 0, 3, T,
                         SGL_SDK_ANY, SGL_SDK_ANY)))
        return rc;
    x->hi = a->q->shape[1];
    x->di = a->q->shape[2];
    if (x->hi < 1 || x->di < 1 || x->di % SGL_ATTN_DSA_SCALE_BLOCK) {
        cref_set_error(b, "indexer q: [%lld, %lld, %lld]: expected >= 1 head and index_head_dim a multiple of %d",
                       (long long)T, (long long)x->hi, (long long)x->di, SGL_ATTN_DSA_SCALE_BLOCK);
        return SGL_ATTN_E_INVALID;
    }
    x->nblk = x->di / SGL_ATTN_DSA_SCALE_BLOCK;
    if ((rc = cref_check(b, a->weights, "indexer weights", "num_tokens, index_n_heads", SGL_ATTN_DT_F32, 0, 2, T,
                         x->hi, 0)) ||
        (rc = cref_check(b, a->index_k_cache, "index_k_cache", "slots, index_head_dim", SGL_ATTN_DT_FP8_E4M3,
                         SGL_SDK_T_WRITTEN, 2, SGL_SDK_ANY, x->di, 0)))
        return rc;
    x->slots = a->index_k_cache->shape[0];
    if ((rc = cref_check(b, a->index_k_scale, "index_k_scale", "slots, index_head_dim / 128", SGL_ATTN_DT_F32,
                         SGL_SDK_T_WRITTEN, 2, x->slots, x->nblk, 0)) ||
        (rc = cref_check(b, a->topk_indices, "topk_indices", "num_tokens, topk", 0, SGL_SDK_T_WRITTEN, 2, T, a->topk,
                         0)))
        return rc;
    if (a->topk_indices->dtype.code != kDLInt || a->topk_indices->dtype.bits != 32) {
        cref_set_error(b, "topk_indices: expected int32 (page-encoded pool slots), got %d-bit code %d",
                       a->topk_indices->dtype.bits, a->topk_indices->dtype.code);
        return SGL_ATTN_E_INVALID;
    }
    if (a->save_index_k &&
        (rc = cref_check(b, a->k, "indexer k", "num_tokens, index_head_dim", IDX_KDTYPES, 0, 2, T, x->di, 0)))
        return rc;
    if (b->max_slot >= x->slots) {
        cref_set_error(b, "indexer_topk: the batch names slot %lld (%s) but index_k_cache has %lld slots",
                       (long long)b->max_slot, b->max_slot_where, (long long)x->slots);
        return SGL_ATTN_E_INVALID;
    }
    x->a = a;
    x->topk = a->topk;
    x->q = sgl_sdk_data(a->q);
    x->q_dt = sgl_attn_dtype_bit(a->q->dtype);
    x->w = sgl_sdk_data(a->weights);
    x->k = a->save_index_k ? sgl_sdk_data(a->k) : NULL;
    x->k_dt = a->save_index_k ? sgl_attn_dtype_bit(a->k->dtype) : 0;
    x->kc = (uint8_t *)(uintptr_t)sgl_sdk_data(a->index_k_cache);
    x->ks = (float *)(uintptr_t)sgl_sdk_data(a->index_k_scale);
    x->out = (int32_t *)(uintptr_t)sgl_sdk_data(a->topk_indices);
    return SGL_ATTN_OK;
}

int cref_indexer_topk(cref_backend *b, const sgl_attn_indexer_args *a) {
    idx_job x;
    memset(&x, 0, sizeof x);
    int rc = check(b, a, &x);
    if (rc) return rc;
    b->idx = &x;
    atomic_store_explicit(&b->bad.set, 0, memory_order_relaxed);
    if (a->save_index_k) cref_threads_run(b->threads, save_task, b);
    if (!atomic_load(&b->bad.set)) {
        atomic_store_explicit(&b->next, 0, memory_order_relaxed);
        cref_threads_run(b->threads, index_task, b);
    }
    b->idx = NULL;
    if (atomic_load(&b->bad.set)) {
        const cref_bad *e = &b->bad;
        cref_set_error(b, "indexer_topk: batch.%s entry %lld = %lld is outside the %lld slots of index_k_cache: the "
                          "batch changed after init_forward_metadata checked it; topk_indices is not complete",
                       e->what == 1 ? "out_cache_loc" : "req_to_token", (long long)e->index, (long long)e->value,
                       (long long)x.slots);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}
