/* mla_indexer.c - cuda_mla's indexer_topk (mla_indexer.h): the score scratch
 * (allocated at create for a model with index_topk, option
 * indexer_scratch_mb read with the others in mla_backend.c), the call's check and
 * launch.  The call reads no environment, file or clock, allocates nothing,
 * creates no event and never synchronises: the plan (init_forward_metadata)
 * gave the per-token requests and lengths on the device, create the scratch. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mla_backend.h"
#include "mla_indexer.h"

int mla_indexer_create(mla_backend *b, const sgl_attn_create_args *a, char *msg, size_t n) {
    if (a->model->index_topk <= 0) return SGL_ATTN_OK;
    cudaError_t e = (cudaError_t)mla_indexer_init(b->dev.smem_per_block_optin);
    if (e != cudaSuccess) {
        snprintf(msg, n, "cudaFuncSetAttribute (indexer kernels): %s", cudaGetErrorString(e));
        return SGL_ATTN_E_DEVICE;
    }
    b->idx_rows = mla_idx_rows(b->idx_scratch_mb << 20, b->max_context, b->max_tokens);
    e = cudaMalloc((void **)&b->idx_scores, (size_t)b->idx_rows * (size_t)b->max_context * sizeof(float));
    if (e != cudaSuccess) {
        b->idx_scores = NULL;
        (void)cudaGetLastError();
        snprintf(msg, n, "cudaMalloc (indexer scores, %d rows of %d): %s", b->idx_rows, b->max_context,
                 cudaGetErrorString(e));
        return SGL_ATTN_E_NOMEM;
    }
    return SGL_ATTN_OK;
}

void mla_indexer_destroy(mla_backend *b) {
    if (b->idx_scores) (void)cudaFree(b->idx_scores);
    b->idx_scores = NULL;
}

int mla_indexer_topk(sgl_attn_backend *bk, const sgl_attn_indexer_args *a) {
    mla_backend *b = (mla_backend *)bk;
    if (!b->planned)
        return mla_set_error(b, SGL_ATTN_E_STATE, "indexer_topk before init_forward_metadata (or after it failed)");
    if (!b->idx_scores)
        return mla_set_error(b, SGL_ATTN_E_STATE, "indexer_topk: the instance was created for a model without "
                                                  "index_topk: it has no score scratch");
    if (b->t == 0 && a && a->struct_size >= sizeof *a) return SGL_ATTN_OK; /* an idle or empty batch: no token */
    const int32_t max_n = b->max_keys;
    mla_idx_args x;
    memset(&x, 0, sizeof x);
    int rc = mla_check_indexer(a, b->device, b->t, b->bs, max_n, &x.v, b->err, sizeof b->err);
    if (rc) return rc;
    const size_t smem = mla_idx_smem_bytes(x.v.ih, x.v.id, x.v.q_dt == MLA_IDX_Q_F32);
    if (smem > b->dev.smem_per_block_optin)
        return mla_set_error(b, SGL_ATTN_E_UNSUPPORTED,
                             "indexer_topk: %d index heads of %d dims%s need %zu bytes of shared memory per block; "
                             "device %d allows %zu",
                             x.v.ih, x.v.id, x.v.q_dt == MLA_IDX_Q_F32 ? " (f32 q)" : "", smem, b->device,
                             (size_t)b->dev.smem_per_block_optin);
    if ((rc = mla_ensure_device(b))) return rc;
    x.save = a->save_index_k != 0;
    x.pow2 = a->scale_pow2 != 0;
    x.tree = b->tree;
    /* a captured graph replays any lengths of this shape: every chunk a
     * token of max_context could need (the CTAs past a token's keys return) */
    const int32_t span = b->graph ? b->max_context : max_n;
    x.key_chunks = (span + MLA_IDX_CHUNK - 1) / MLA_IDX_CHUNK;
    x.rows = b->idx_rows;
    x.toks = (const char *)b->plan_dev + b->lay.toks;
    x.scores = b->idx_scores;
    x.ld = b->max_context;
    x.stream = a->batch->stream;
    x.fault = b->fault.dev;
    int e = mla_launch_indexer(&x);
    return e ? mla_cuda_fail(b, "indexer kernel launch", e) : SGL_ATTN_OK;
}
