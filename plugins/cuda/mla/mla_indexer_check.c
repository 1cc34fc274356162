/* mla_indexer_check.c - the checks of cuda_mla's indexer_topk (mla_indexer.h),
 * plain C: every tensor by the SDK's specs (compact CUDA memory of the
 * backend's device, 16-byte aligned where the kernels load 16 bytes), each
 * message naming the tensor, what it holds, the value and what was expected. */
#include <stdio.h>
#include <string.h>

#include "mla_indexer.h"
#include "sdk_tensor.h"

static int spec(const DLTensor *t, const char *name, const char *meaning, int ndim, int64_t n0, int64_t n1,
                int64_t n2, uint32_t dtypes, uint32_t flags, int32_t device, uint32_t align, char *err, size_t n) {
    const sgl_sdk_tensor_spec s = {name, meaning, ndim, {n0, n1, n2, 0}, dtypes, SGL_SDK_DEV_CUDA, device,
                                   SGL_SDK_T_COMPACT | SGL_SDK_T_INT32 | flags, align};
    return sgl_sdk_check_tensor(t, &s, err, n);
}

static mla_index index_of(const DLTensor *t) {
    mla_index ix = {(const int32_t *)sgl_sdk_data(t), sgl_sdk_numel(t), t->dtype.bits == 64, 0};
    return ix;
}

static int q_kind(uint32_t bit) {
    switch (bit) {
    case SGL_ATTN_DT_F32: return MLA_IDX_Q_F32;
    case SGL_ATTN_DT_F16: return MLA_IDX_Q_F16;
    case SGL_ATTN_DT_BF16: return MLA_IDX_Q_BF16;
    default: return MLA_IDX_Q_FP8;
    }
}

int mla_check_indexer(const sgl_attn_indexer_args *a, int32_t device, int32_t t_planned, int32_t bs_planned,
                      int32_t max_n, mla_idx_view *v, char *err, size_t n) {
    int rc;
    memset(v, 0, sizeof *v);
    if (!a || a->struct_size < sizeof *a) {
        snprintf(err, n, "indexer_topk: args NULL or struct_size %u < %zu", a ? a->struct_size : 0u, sizeof *a);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_batch *b = a->batch;
    if (!b) {
        snprintf(err, n, "indexer_topk: args.batch is NULL; expected the batch of the last init_forward_metadata");
        return SGL_ATTN_E_INVALID;
    }
    if (b->num_tokens != t_planned || b->batch_size != bs_planned) {
        snprintf(err, n, "indexer_topk: args.batch has %d tokens in %d requests but the plan (the last "
                         "init_forward_metadata) has %d in %d",
                 b->num_tokens, b->batch_size, t_planned, bs_planned);
        return SGL_ATTN_E_STATE;
    }
    if (a->topk < 1) {
        snprintf(err, n, "indexer_topk: topk %d: expected >= 1 (the model's index_topk)", a->topk);
        return SGL_ATTN_E_INVALID;
    }
    const int64_t T = t_planned;
    const uint32_t qdt = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_FP8_E4M3;
    if ((rc = spec(a->q, "indexer q", "num_tokens, index_n_heads, index_head_dim", 3, T, SGL_SDK_ANY, SGL_SDK_ANY,
                   qdt, 0, device, 16, err, n)))
        return rc;
    const int64_t ih = a->q->shape[1], id = a->q->shape[2];
    if (id < SGL_ATTN_DSA_SCALE_BLOCK || id % SGL_ATTN_DSA_SCALE_BLOCK) {
        snprintf(err, n, "indexer q: [%lld, %lld, %lld]: expected index_head_dim a multiple of %d",
                 (long long)T, (long long)ih, (long long)id, SGL_ATTN_DSA_SCALE_BLOCK);
        return SGL_ATTN_E_INVALID;
    }
    if (ih < 1 || ih > MLA_IDX_MAX_HEADS || id > MLA_IDX_MAX_DIM) {
        snprintf(err, n, "indexer q: [%lld, %lld, %lld]: cuda_mla's indexer takes 1..%d index heads of up to %d dims",
                 (long long)T, (long long)ih, (long long)id, MLA_IDX_MAX_HEADS, MLA_IDX_MAX_DIM);
        return ih < 1 ? SGL_ATTN_E_INVALID : SGL_ATTN_E_UNSUPPORTED;
    }
    v->t = (int32_t)T;
    v->ih = (int32_t)ih;
    v->id = (int32_t)id;
    v->nblk = (int32_t)(id / SGL_ATTN_DSA_SCALE_BLOCK);
    v->topk = a->topk;
    v->q_dt = q_kind(sgl_attn_dtype_bit(a->q->dtype));
    v->q = sgl_sdk_data(a->q);
    if ((rc = spec(a->weights, "indexer weights", "num_tokens, index_n_heads", 2, T, ih, 0, SGL_ATTN_DT_F32, 0,
                   device, 0, err, n)))
        return rc;
    v->w = (const float *)sgl_sdk_data(a->weights);
    if ((rc = spec(a->index_k_cache, "index_k_cache", "slots, index_head_dim", 2, SGL_SDK_ANY, id, 0,
                   SGL_ATTN_DT_FP8_E4M3, SGL_SDK_T_WRITTEN, device, 16, err, n)))
        return rc;
    v->slots = a->index_k_cache->shape[0];
    v->kc = (uint8_t *)(uintptr_t)sgl_sdk_data(a->index_k_cache);
    if ((rc = spec(a->index_k_scale, "index_k_scale", "slots, index_head_dim / 128", 2, v->slots, v->nblk, 0,
                   SGL_ATTN_DT_F32, SGL_SDK_T_WRITTEN, device, 0, err, n)))
        return rc;
    v->ks = (float *)(uintptr_t)sgl_sdk_data(a->index_k_scale);
    if ((rc = spec(a->topk_indices, "topk_indices", "num_tokens, topk", 2, T, a->topk, 0, 0, SGL_SDK_T_WRITTEN,
                   device, 0, err, n)))
        return rc;
    if (a->topk_indices->dtype.code != kDLInt || a->topk_indices->dtype.bits != 32) {
        snprintf(err, n, "topk_indices: expected int32 (page-encoded pool slots), got %d-bit code %d",
                 a->topk_indices->dtype.bits, a->topk_indices->dtype.code);
        return SGL_ATTN_E_INVALID;
    }
    v->out = (int32_t *)(uintptr_t)sgl_sdk_data(a->topk_indices);
    if (a->save_index_k) {
        if ((rc = spec(a->k, "indexer k", "num_tokens, index_head_dim: the new index keys", 2, T, id, 0,
                       SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16, 0, device, 16, err, n)))
            return rc;
        const uint32_t kb = sgl_attn_dtype_bit(a->k->dtype);
        v->k_dt = kb == SGL_ATTN_DT_F32 ? MLA_IDX_K_F32 : kb == SGL_ATTN_DT_F16 ? MLA_IDX_K_F16 : MLA_IDX_K_BF16;
        v->k = sgl_sdk_data(a->k);
        if ((rc = spec(b->out_cache_loc, "batch.out_cache_loc", "num_tokens", 1, T, 0, 0, 0, 0, device, 0, err, n)))
            return rc;
        v->loc = index_of(b->out_cache_loc);
    }
    if ((rc = spec(b->req_to_token, "batch.req_to_token", "max_reqs, max_context", 2, SGL_SDK_ANY, SGL_SDK_ANY, 0,
                   0, 0, device, 0, err, n)))
        return rc;
    v->req_to_token = index_of(b->req_to_token);
    v->r2t_rows = b->req_to_token->shape[0];
    v->r2t_cols = b->req_to_token->shape[1];
    if (v->r2t_rows < 1 || v->r2t_cols < max_n) {
        snprintf(err, n, "batch.req_to_token: [%lld, %lld]; expected at least one row and %d columns (the most "
                         "tokens a query of the batch sees)",
                 (long long)v->r2t_rows, (long long)v->r2t_cols, max_n);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = spec(b->req_pool_indices, "batch.req_pool_indices", "batch_size", 1, bs_planned, 0, 0, 0, 0, device,
                   0, err, n)))
        return rc;
    v->req_pool_indices = index_of(b->req_pool_indices);
    return SGL_ATTN_OK;
}
