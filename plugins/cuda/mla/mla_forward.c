/* mla_forward.c - forward_decode / forward_extend of cuda_mla: check, save
 * the new latent rows, launch the planned kernel (and the split combine).
 * It reads no environment, file or clock, creates no event, never
 * synchronises, allocates nothing and writes only its own instance (the error
 * text, the per-layer TMA descriptor cache): the plan, the buffers and the TMA
 * encoder were prepared before. */
#include <stdio.h>
#include <string.h>

#include "mla_backend.h"
#include "mla_check.h"
#include "mla_sparse.h"

/* The pool's TMA map for this layer, re-encoded only when the pool changed. */
static const void *layer_tmap(mla_backend *b, int32_t layer_id, const void *pool, int64_t slots, int32_t box,
                              int *cu_err) {
    mla_tmap_entry *t = &b->tmaps[layer_id >= 0 && layer_id < MLA_TMAP_CACHE ? layer_id : MLA_TMAP_CACHE];
    if (!t->valid || t->pool != pool || t->num_slots != slots || t->box != box) {
        t->valid = 0;
        *cu_err = mla_tmap_encode(b->encode_fn, t->map, pool, slots, box);
        if (*cu_err) return NULL;
        t->pool = pool;
        t->num_slots = slots;
        t->box = box;
        t->valid = 1;
    }
    return t->map;
}

int mla_forward(sgl_attn_backend *bk, const sgl_attn_forward_args *a) {
    mla_backend *b = (mla_backend *)bk;
    if (!b->planned)
        return mla_set_error(b, SGL_ATTN_E_STATE, "forward before init_forward_metadata (or after it failed)");
    if (a && a->batch && a->batch->forward_mode != b->mode)
        return mla_set_error(b, SGL_ATTN_E_STATE, "forward: batch forward_mode %d but the plan is for mode %d",
                             a->batch->forward_mode, b->mode);
    mla_fwd_view v;
    int rc = mla_check_forward(a, b->device, b->t, b->bs, &v, b->err, sizeof b->err);
    if (rc) return rc;
    if (v.hq != b->hq)
        return mla_set_error(b, SGL_ATTN_E_INVALID,
                             "layer %d: %d q heads, but the model (and the plan) has %d", a->layer->layer_id,
                             v.hq, b->hq);
    if (b->t == 0) return SGL_ATTN_OK;
    if ((v.mask != NULL) != (b->tree != 0))
        return mla_set_error(b, SGL_ATTN_E_STATE, "forward: batch custom_mask is %s but the plan was made %s it",
                             v.mask ? "set" : "NULL", b->tree ? "with" : "without");
    if ((rc = mla_ensure_device(b))) return rc;
    void *stream = a->batch->stream;

    if (a->save_kv_cache) {
        mla_save_args s;
        memset(&s, 0, sizeof s);
        s.k = v.k;
        s.k_rope = v.k_rope;
        s.k_ld = v.k_ld;
        s.kr_ld = v.kr_ld;
        s.pool = v.pool;
        s.loc = v.loc;
        s.num_slots = v.num_slots;
        s.t = b->t;
        s.k_dt = v.q_dt;
        s.kv_dt = v.kv_dt;
        s.inv_k_scale = 1.f / v.k_scale;
        s.k_scale_t = v.k_scale_t;
        s.stream = stream;
        s.fault = b->fault.dev;
        int e = mla_launch_save(&s);
        if (e) return mla_cuda_fail(b, "save_kv_cache kernel launch", e);
    }

    if (v.topk) { /* DSA: the given slots only; the plan's items are not used */
        const int32_t rec = v.kv_dt == MLA_DT_REC;
        const int32_t ctas = mla_sparse_ctas(v.hq, rec, b->dev.sm_major);
        const int32_t stages = mla_sparse_stages(v.hq, b->dev.smem_per_block_optin, rec, ctas);
        if (!stages)
            return mla_set_error(b, SGL_ATTN_E_UNSUPPORTED,
                                 "layer %d: topk_indices given: the sparse MLA kernel for %d heads needs %zu bytes "
                                 "of shared memory per block; device %d allows %zu",
                                 a->layer->layer_id, v.hq,
                                 mla_sparse_smem_bytes(v.hq, mla_sparse_rows(v.hq, ctas) == 16 ? 3 : 2, rec, ctas),
                                 b->device, (size_t)b->dev.smem_per_block_optin);
        mla_sparse_args sp = {.q = v.q, .out = v.out, .pool = v.pool, .num_slots = v.num_slots, .topk = v.topk,
                              .topk_k = v.topk_k, .hq = v.hq, .num_tokens = b->t, .dt = v.q_dt,
                              .scale_log2 = v.scale_log2, .part_o = b->part_o, .part_lse = b->part_lse,
                              .stages = stages, .stream = stream, .fault = b->fault.dev, .rec = rec,
                              .ctas = ctas};
        sp.nsplit = mla_sparse_splits(b->t, v.hq, v.topk_k, b->dev.sm_count, ctas, b->part_rows, &sp.tiles_per_split);
        int e = mla_launch_sparse(&sp);
        return e ? mla_cuda_fail(b, "sparse MLA kernel launch", e) : SGL_ATTN_OK;
    }

    /* The plan's kernel, unless these tensors' dtypes rule it out (the plan
     * went by the model's): the simple kernel for a pool of another dtype, the
     * mma kernel's 64-row tiles for f16 where the wide kernel was planned. */
    int32_t kernel = b->kernel;
    if (v.kv_dt != v.q_dt) kernel = MLA_KERNEL_SIMPLE;
    if (kernel == MLA_KERNEL_WIDE && v.q_dt != MLA_DT_BF16) kernel = MLA_KERNEL_MMA;

    mla_fwd_args f;
    memset(&f, 0, sizeof f);
    f.q = v.q;
    f.q_rope = v.q_rope;
    f.q_ts = v.q_ts;
    f.q_hs = v.q_hs;
    f.qr_ts = v.qr_ts;
    f.qr_hs = v.qr_hs;
    f.mask = v.mask;
    f.mask_n = v.mask_n;
    f.mask_indptr = v.mask_indptr;
    f.out = v.out;
    f.pool = v.pool;
    f.num_slots = v.num_slots;
    f.req_to_token = v.req_to_token;
    f.r2t_rows = v.r2t_rows;
    f.r2t_cols = v.r2t_cols;
    f.req_pool_indices = v.req_pool_indices;
    f.fault = b->fault.dev;
    f.plan = b->plan_dev;
    f.lay = b->lay;
    f.part_o = b->part_o;
    f.part_lse = b->part_lse;
    f.hq = v.hq;
    f.num_tokens = b->t;
    f.scale_log2 = v.scale_log2;
    f.k_scale = v.k_scale;
    f.k_scale_t = v.k_scale_t;
    f.q_dt = v.q_dt;
    f.kv_dt = v.kv_dt;
    f.page_size = b->page;
    f.rows_per_tile = b->rows_per_tile;
    f.prefetch = b->prefetch;
    f.mma_cfg = b->mma_cfg;
    f.stream = stream;
    /* persistent grids: the CTAs resident at once (the plan's target) */
    const int32_t ctas = b->ctas > 0 ? b->ctas : 1;
    if (b->graph) {
        /* a captured grid must fit whatever a replay of this shape plans */
        int64_t tiles = ((int64_t)b->t * v.hq + b->rows_per_tile - 1) / b->rows_per_tile + b->bs;
        f.grid_items = ctas;
        f.grid_comb = (int32_t)(tiles < b->caps.max_comb ? tiles : b->caps.max_comb);
    } else {
        f.grid_items = b->n_items < ctas ? b->n_items : ctas;
        f.grid_comb = b->n_comb;
    }

    /* The item check, once per planned batch and kernel kind (again for a
     * layer whose pool is smaller than the one checked): the rows and
     * entries this kernel's work reads, checked whole, so the attention
     * kernels need no check of their own (mla_item_check.cu). */
    const int simple = kernel == MLA_KERNEL_SIMPLE;
    if (v.num_slots < b->checked_slots[simple]) {
        const int32_t n = simple ? b->t : b->n_items;
        const int grid = b->graph || n > MLA_CHECK_BLOCKS ? MLA_CHECK_BLOCKS : n;
        int ce = mla_launch_item_check(&f, simple, grid);
        if (ce) return mla_cuda_fail(b, "item check kernel launch", ce);
        b->checked_slots[simple] = v.num_slots;
    }

    int e = 0;
    if (kernel == MLA_KERNEL_WIDE) {
        int cu = 0;
        f.tmap = layer_tmap(b, a->layer->layer_id, v.pool, v.num_slots, b->page < 64 ? b->page : 64, &cu);
        if (!f.tmap)
            return mla_set_error(b, SGL_ATTN_E_DEVICE,
                                 "cuTensorMapEncodeTiled for the pool of layer %d (%lld slots): CUresult %d",
                                 a->layer->layer_id, (long long)v.num_slots, cu);
        e = mla_launch_wide(&f);
    } else if (kernel == MLA_KERNEL_MMA) {
        e = mla_launch_mma(&f, b->dev.smem_per_block_optin);
    } else {
        e = mla_launch_simple(&f);
    }
    if (e) {
        char what[64];
        snprintf(what, sizeof what, "%s attention kernel launch", mla_kernel_name(kernel));
        return mla_cuda_fail(b, what, e);
    }
    if (kernel != MLA_KERNEL_SIMPLE && f.grid_comb > 0) {
        e = mla_launch_combine(&f);
        if (e) return mla_cuda_fail(b, "split combine kernel launch", e);
    }
    return SGL_ATTN_OK;
}
