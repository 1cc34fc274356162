/*
 * npu_backend.c - the npu_ascend instance.
 *
 * Per batch (init_forward_metadata, which waits for the instance's stream so
 * the previous batch's operators are done with the tables):
 *   - seq lens from the *_cpu mirrors, else copied from the device;
 *   - req_pool_indices and each request's req_to_token row copied to the host;
 *     every row must be page-contiguous (token i at block[i / page] * page +
 *     i % page), which is what a block table can express;
 *   - block_table[b][j] = req_to_token[row_b][j * page] / page (int32), as
 *     sglang's ascend backend builds it, uploaded to the device;
 *   - aclIntArray descriptors of the lengths, aclTensor descriptors of the table.
 *   - out_cache_loc copied to the host, checked (>= 0) and uploaded into
 *     the instance's own device buffer: a forward saves through that copy,
 *     never the caller's tensor, which may change before the forward.
 * Per layer (forward):
 *   - save_kv_cache: aclnnInplaceIndexCopy of k / v into the pool rows
 *     of the copied out_cache_loc (pool viewed as [slots, kv_heads *
 *     head_dim]), after its largest slot is checked against this pool;
 *   - aclnnFusedInferAttentionScoreV2 with the pool as one paged tensor
 *     [blocks, page, kv_heads * head_dim] (BnBsH), input_layout "BSND",
 *     num_heads, num_key_value_heads, scale, block_size = page:
 *       decode: one call, query [bs, 1, Hq, D], actual_seq_lengths_kv = seq_lens,
 *               sparse_mode 0 (no mask);
 *       extend: one call per request, query [1, new, Hq, D],
 *               actual_seq_lengths = {new}, actual_seq_lengths_kv = {seq_len},
 *               sparse_mode 3 (rightDownCausal) with the 2048x2048 bool mask.
 * The forward creates aclTensor descriptors for the layer's q/out/pool
 * (host-side handles; aclnn binds addresses when the executor is built) and
 * never allocates device memory: the operator workspace is allocated once at
 * create (option workspace_mb / SGL_ATTN_NPU_WORKSPACE_MB, read there, default 64).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_internal.h"
#include "sdk_unserved.h"
#include "npu_tensor.h"
#include "sdk_option.h"

#define MASK_N 2048

typedef struct npu_backend {
    sgl_attn_backend base;
    const npu_rt *rt;
    aclrtStream own_stream;
    int32_t max_reqs, max_tokens, max_context, max_blocks;
    void *d_table;         /* int32 [max_reqs][max_blocks] */
    void *d_loc;           /* int64 [max_tokens]: out_cache_loc as planned */
    int64_t *h_loc, max_loc;
    int has_loc;
    int32_t *h_table;
    void *d_mask;          /* bool [MASK_N][MASK_N], 1 above the diagonal */
    aclTensor *t_mask;
    void *ws;
    size_t ws_size;
    unsigned char *h_raw;  /* staging for device->host index copies */
    int64_t *h_seq, *h_ext, *h_start, *h_rpi;
    aclTensor **t_rtable;  /* extend: per-request [1, nblk] rows of the table */
    aclIntArray **a_q, **a_kvr;
    /* the current batch */
    const sgl_attn_batch *batch;
    aclrtStream stream;
    int mode, bs, T, page, nblk, tpr;
    int64_t max_block_id;
    aclTensor *t_table;    /* decode: [bs, nblk] */
    aclIntArray *a_kv;     /* decode: seq lens */
    char err[640];
} npu_backend;

#define FAIL(b, rc, ...) (snprintf((b)->err, sizeof (b)->err, __VA_ARGS__), (rc))

static const char *nb_last_error(sgl_attn_backend *bb) { return ((npu_backend *)bb)->err; }

static void drop_batch(npu_backend *b) {
    const npu_rt *rt = b->rt;
    if (b->t_table) rt->aclDestroyTensor(b->t_table);
    if (b->a_kv) rt->aclDestroyIntArray(b->a_kv);
    b->t_table = NULL;
    b->a_kv = NULL;
    for (int i = 0; i < b->max_reqs; i++) {
        if (b->t_rtable && b->t_rtable[i]) rt->aclDestroyTensor(b->t_rtable[i]);
        if (b->a_q && b->a_q[i]) rt->aclDestroyIntArray(b->a_q[i]);
        if (b->a_kvr && b->a_kvr[i]) rt->aclDestroyIntArray(b->a_kvr[i]);
        if (b->t_rtable) b->t_rtable[i] = NULL;
        if (b->a_q) b->a_q[i] = NULL;
        if (b->a_kvr) b->a_kvr[i] = NULL;
    }
    b->batch = NULL;
}

static void nb_destroy(sgl_attn_backend *bb) {
    npu_backend *b = (npu_backend *)bb;
    if (!b) return;
    const npu_rt *rt = b->rt;
    if (rt) {
        if (b->own_stream) rt->aclrtSynchronizeStream(b->own_stream);
        drop_batch(b);
        if (b->t_mask) rt->aclDestroyTensor(b->t_mask);
        if (b->d_table) rt->aclrtFree(b->d_table);
        if (b->d_loc) rt->aclrtFree(b->d_loc);
        if (b->d_mask) rt->aclrtFree(b->d_mask);
        if (b->ws) rt->aclrtFree(b->ws);
        if (b->own_stream) rt->aclrtDestroyStream(b->own_stream);
    }
    free(b->h_table);
    free(b->h_loc);
    free(b->h_raw);
    free(b->h_seq);
    free(b->h_ext);
    free(b->h_start);
    free(b->h_rpi);
    free(b->t_rtable);
    free(b->a_q);
    free(b->a_kvr);
    free(b);
}

/* ------------------------------------------------------------- metadata */

/* n int64 values of a device index tensor (or its host mirror) into dst. */
static int read_index(npu_backend *b, const DLTensor *dev, const DLTensor *mirror, int64_t n, int64_t *dst,
                      const char *what) {
    if (npu_host_index_ok(mirror, n)) {
        const void *p = (const char *)mirror->data + mirror->byte_offset;
        for (int64_t i = 0; i < n; i++) dst[i] = sgl_sdk_idx(p, mirror->dtype.bits == 64, i);
        return SGL_ATTN_OK;
    }
    char e[256];
    const int64_t sh[1] = {n};
    int rc = npu_tensor_check(dev, what, 1, sh, NPU_T_INDEX, NULL, e, sizeof e);
    if (rc) return FAIL(b, rc, "npu_ascend: %s", e);
    size_t bytes = (size_t)n * (dev->dtype.bits / 8);
    aclError ae = b->rt->aclrtMemcpy(b->h_raw, bytes, npu_tensor_addr(dev), bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    if (ae) {
        npu_describe(b->rt, ae, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: copying %s to the host: aclrtMemcpy -> %s", what, e);
    }
    for (int64_t i = 0; i < n; i++) dst[i] = sgl_sdk_idx(b->h_raw, dev->dtype.bits == 64, i);
    return SGL_ATTN_OK;
}

static int nb_metadata(sgl_attn_backend *bb, const sgl_attn_batch *bt) {
    npu_backend *b = (npu_backend *)bb;
    const npu_rt *rt = b->rt;
    char e[256];
    int rc;
    b->err[0] = 0;
    if (!bt || bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: batch is NULL or older than ABI 1.0");
    const char *unserved = sgl_sdk_unserved_batch(bt, 0);
    if (unserved) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: %s is set (ABI 1.2): not served", unserved);
    /* ACL's current device is per thread: the engine's thread may not be create's. */
    if ((rc = rt->aclrtSetDevice(b->base.device))) {
        npu_describe(rt, rc, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: aclrtSetDevice(%d) -> %s", b->base.device, e);
    }
    aclrtStream s = bt->stream ? bt->stream : b->own_stream;
    /* The previous batch's operators read the table we are about to rewrite:
     * wait for them (on this batch's stream, and on our own if they ran there;
     * an engine's earlier stream is the engine's to have finished). */
    if ((rc = rt->aclrtSynchronizeStream(s)) ||
        (b->stream == b->own_stream && s != b->own_stream && (rc = rt->aclrtSynchronizeStream(b->own_stream)))) {
        npu_describe(rt, rc, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: aclrtSynchronizeStream -> %s", e);
    }
    drop_batch(b);
    b->stream = s;
    const int mode = bt->forward_mode;
    if (mode == SGL_ATTN_MODE_IDLE) {
        b->mode = mode;
        b->batch = bt;
        return SGL_ATTN_OK;
    }
    if (mode != SGL_ATTN_MODE_EXTEND && mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_TARGET_VERIFY)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: batch.forward_mode = %d, expected 0..3", mode);
    const int bs = bt->batch_size, T = bt->num_tokens, page = bt->page_size;
    const int tpr = mode == SGL_ATTN_MODE_EXTEND ? 0 : bt->tokens_per_req;
    if (bs < 1 || bs > b->max_reqs)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: batch.batch_size = %d, expected 1..%d (max_reqs)", bs, b->max_reqs);
    if (T < 1 || T > b->max_tokens)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: batch.num_tokens = %d, expected 1..%d (max_tokens)", T,
                    b->max_tokens);
    if (page != 128 && page != 256 && page != 512)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: batch.page_size = %d; FusedInferAttentionScoreV2's paged "
                    "KV needs a block size that is a multiple of 128, up to 512", page);
    if (mode != SGL_ATTN_MODE_EXTEND && (tpr < 1 || (int64_t)tpr * bs != T))
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: tokens_per_req %d x batch_size %d != num_tokens %d", tpr, bs, T);
    if (mode == SGL_ATTN_MODE_DECODE && tpr != 1)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: decode with %d tokens per request (use TARGET_VERIFY)", tpr);
    if (bt->encoder_lens) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: no encoder-decoder batches");
    int64_t r2t_shape[2];
    const int64_t any2[2] = {-1, -1};
    if ((rc = npu_tensor_check(bt->req_to_token, "batch.req_to_token", 2, any2, NPU_T_INDEX, r2t_shape, e, sizeof e)))
        return FAIL(b, rc, "npu_ascend: %s", e);
    if ((rc = read_index(b, bt->seq_lens, bt->seq_lens_cpu, bs, b->h_seq, "batch.seq_lens"))) return rc;
    if ((rc = read_index(b, bt->req_pool_indices, NULL, bs, b->h_rpi, "batch.req_pool_indices"))) return rc;
    if (mode == SGL_ATTN_MODE_EXTEND) {
        if ((rc = read_index(b, bt->extend_seq_lens, bt->extend_seq_lens_cpu, bs, b->h_ext, "batch.extend_seq_lens")))
            return rc;
    } else {
        for (int i = 0; i < bs; i++) b->h_ext[i] = tpr;
    }
    int64_t sum = 0, maxseq = 0;
    for (int i = 0; i < bs; i++) {
        if (b->h_rpi[i] < 0 || b->h_rpi[i] >= r2t_shape[0])
            return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: req_pool_indices[%d] = %" PRId64 ", req_to_token has %" PRId64
                        " rows", i, b->h_rpi[i], r2t_shape[0]);
        if (b->h_seq[i] < 1 || b->h_seq[i] > r2t_shape[1] || b->h_seq[i] > b->max_context)
            return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: seq_lens[%d] = %" PRId64 ", expected 1..%" PRId64, i,
                        b->h_seq[i], r2t_shape[1] < b->max_context ? r2t_shape[1] : (int64_t)b->max_context);
        if (b->h_ext[i] < 0 || b->h_ext[i] > b->h_seq[i])
            return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: request %d has %" PRId64 " new tokens but seq_len %" PRId64,
                        i, b->h_ext[i], b->h_seq[i]);
        b->h_start[i] = sum;
        sum += b->h_ext[i];
        if (b->h_seq[i] > maxseq) maxseq = b->h_seq[i];
    }
    if (sum != T)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: new tokens per request sum to %" PRId64 ", num_tokens is %d",
                    sum, T);
    /* Block table from the rows, checking that each row is what a block table can say. */
    const int nblk = (int)((maxseq + page - 1) / page);
    const int is64 = bt->req_to_token->dtype.bits == 64;
    const size_t esz = is64 ? 8 : 4;
    const char *r2t = npu_tensor_addr(bt->req_to_token);
    b->max_block_id = 0;
    memset(b->h_table, 0, sizeof(int32_t) * (size_t)bs * (size_t)nblk);
    for (int i = 0; i < bs; i++) {
        size_t bytes = (size_t)b->h_seq[i] * esz;
        aclError ae = rt->aclrtMemcpy(b->h_raw, bytes, r2t + (size_t)b->h_rpi[i] * (size_t)r2t_shape[1] * esz, bytes,
                                      ACL_MEMCPY_DEVICE_TO_HOST);
        if (ae) {
            npu_describe(rt, ae, e, sizeof e);
            return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: copying req_to_token row %" PRId64 ": %s", b->h_rpi[i], e);
        }
        for (int64_t j = 0; j < b->h_seq[i]; j++) {
            int64_t slot = sgl_sdk_idx(b->h_raw, is64, j);
            if (j % page == 0) {
                if (slot < 0 || slot % page || slot / page > INT32_MAX)
                    return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: request %d token %" PRId64 " starts a page at "
                                "slot %" PRId64 ", not a multiple of page_size %d", i, j, slot, page);
                b->h_table[(size_t)i * nblk + (size_t)(j / page)] = (int32_t)(slot / page);
                if (slot / page > b->max_block_id) b->max_block_id = slot / page;
            } else {
                int64_t want = (int64_t)b->h_table[(size_t)i * nblk + (size_t)(j / page)] * page + j % page;
                if (slot != want)
                    return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: req_to_token row %" PRId64 " is not "
                                "page-contiguous at token %" PRId64 " (slot %" PRId64 ", expected %" PRId64 "): the "
                                "fused operator reads whole blocks", b->h_rpi[i], j, slot, want);
            }
        }
    }
    size_t tbytes = sizeof(int32_t) * (size_t)bs * (size_t)nblk;
    aclError ae = rt->aclrtMemcpy(b->d_table, tbytes, b->h_table, tbytes, ACL_MEMCPY_HOST_TO_DEVICE);
    if (ae) {
        npu_describe(rt, ae, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: uploading the block table: %s", e);
    }
    /* out_cache_loc as planned, in our own device buffer (see the top). */
    b->has_loc = bt->out_cache_loc != NULL;
    b->max_loc = -1;
    if (b->has_loc) {
        if ((rc = read_index(b, bt->out_cache_loc, NULL, T, b->h_loc, "batch.out_cache_loc"))) return rc;
        for (int t = 0; t < T; t++) {
            if (b->h_loc[t] < 0)
                return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: batch.out_cache_loc[%d] = %" PRId64 ", expected a slot "
                            ">= 0", t, b->h_loc[t]);
            if (b->h_loc[t] > b->max_loc) b->max_loc = b->h_loc[t];
        }
        size_t lbytes = sizeof(int64_t) * (size_t)T;
        ae = rt->aclrtMemcpy(b->d_loc, lbytes, b->h_loc, lbytes, ACL_MEMCPY_HOST_TO_DEVICE);
        if (ae) {
            npu_describe(rt, ae, e, sizeof e);
            return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: uploading out_cache_loc: %s", e);
        }
    }
    /* Descriptors every layer of this batch reuses. */
    if (mode == SGL_ATTN_MODE_DECODE) {
        const int64_t dims[2] = {bs, nblk}, strides[2] = {nblk, 1};
        b->t_table = rt->aclCreateTensor(dims, 2, ACL_INT32, strides, 0, ACL_FORMAT_ND, dims, 2, b->d_table);
        b->a_kv = rt->aclCreateIntArray(b->h_seq, (uint64_t)bs);
        if (!b->t_table || !b->a_kv) return FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: aclCreateTensor/IntArray failed");
    } else {
        for (int i = 0; i < bs; i++) {
            const int64_t dims[2] = {1, nblk}, strides[2] = {nblk, 1};
            b->t_rtable[i] = rt->aclCreateTensor(dims, 2, ACL_INT32, strides, 0, ACL_FORMAT_ND, dims, 2,
                                                 (char *)b->d_table + sizeof(int32_t) * (size_t)i * nblk);
            b->a_q[i] = rt->aclCreateIntArray(&b->h_ext[i], 1);
            b->a_kvr[i] = rt->aclCreateIntArray(&b->h_seq[i], 1);
            if (!b->t_rtable[i] || !b->a_q[i] || !b->a_kvr[i])
                return FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: aclCreateTensor/IntArray failed");
        }
    }
    b->mode = mode;
    b->bs = bs;
    b->T = T;
    b->page = page;
    b->nblk = nblk;
    b->tpr = tpr;
    b->batch = bt;
    return SGL_ATTN_OK;
}

/* -------------------------------------------------------------- forward */

static int run_op(npu_backend *b, int st, uint64_t ws, aclOpExecutor *ex, aclnnRun_fn run, const char *name,
                  int layer) {
    char e[256];
    if (st != 0) {
        npu_describe(b->rt, st, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: layer %d: %sGetWorkspaceSize -> %s", layer, name, e);
    }
    if (ws > b->ws_size)
        return FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: layer %d: %s needs %" PRIu64 " bytes of workspace, %zu allocated "
                    "(raise plugin_options.npu_ascend.workspace_mb or SGL_ATTN_NPU_WORKSPACE_MB)", layer, name, ws,
                    b->ws_size);
    st = run(ws ? b->ws : NULL, ws, ex, b->stream);
    if (st != 0) {
        npu_describe(b->rt, st, e, sizeof e);
        return FAIL(b, SGL_ATTN_E_DEVICE, "npu_ascend: layer %d: %s -> %s", layer, name, e);
    }
    return SGL_ATTN_OK;
}

static aclTensor *view(const npu_rt *rt, void *addr, int dt, int n, const int64_t *dims) {
    int64_t strides[4];
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
    return rt->aclCreateTensor(dims, (uint64_t)n, dt, strides, 0, ACL_FORMAT_ND, dims, (uint64_t)n, addr);
}

static int save_kv(npu_backend *b, void *pool, const DLTensor *src, int64_t slots,
                   int64_t width, int dt, int layer) {
    const npu_rt *rt = b->rt;
    const int64_t pd[2] = {slots, width}, sd[2] = {b->T, width}, ld[1] = {b->T};
    aclTensor *tp = view(rt, pool, dt, 2, pd), *ts = view(rt, npu_tensor_addr(src), dt, 2, sd),
              *ti = view(rt, b->d_loc, ACL_INT64, 1, ld);
    int rc;
    if (tp && ts && ti) {
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        int st = rt->aclnnInplaceIndexCopyGetWorkspaceSize(tp, 0, ti, ts, &ws, &ex);
        rc = run_op(b, st, ws, ex, rt->aclnnInplaceIndexCopy, "aclnnInplaceIndexCopy", layer);
    } else {
        rc = FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: aclCreateTensor failed");
    }
    if (tp) rt->aclDestroyTensor(tp);
    if (ts) rt->aclDestroyTensor(ts);
    if (ti) rt->aclDestroyTensor(ti);
    return rc;
}

static int fia(npu_backend *b, void *q, void *o, int64_t B, int64_t S, const sgl_attn_layer *L, int dt,
               const aclTensorList *lk, const aclTensorList *lv, const aclTensor *table, const aclIntArray *aq,
               const aclIntArray *akv, int sparse) {
    const npu_rt *rt = b->rt;
    const int64_t qd[4] = {B, S, L->num_q_heads, L->head_dim_qk};
    aclTensor *tq = view(rt, q, dt, 4, qd), *to = view(rt, o, dt, 4, qd);
    int rc;
    if (!tq || !to) {
        rc = FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: aclCreateTensor failed");
    } else {
        char layout[] = "BSND";
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        int st = rt->aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
            tq, lk, lv, NULL, sparse ? b->t_mask : NULL, aq, akv, NULL, NULL, NULL, NULL, NULL, NULL, NULL, table,
            NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, L->num_q_heads, (double)L->sm_scale, 2147483647,
            2147483647, layout, L->num_kv_heads, sparse, 0 /* high precision */, b->page, 0, false, 0, 0, to, NULL,
            &ws, &ex);
        rc = run_op(b, st, ws, ex, rt->aclnnFusedInferAttentionScoreV2, "aclnnFusedInferAttentionScoreV2",
                    L->layer_id);
    }
    if (tq) rt->aclDestroyTensor(tq);
    if (to) rt->aclDestroyTensor(to);
    return rc;
}

static int forward(npu_backend *b, const sgl_attn_forward_args *a, int decode) {
    const npu_rt *rt = b->rt;
    char e[256];
    int rc;
    b->err[0] = 0;
    if (!a || a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: forward args NULL or older than ABI 1.0");
    if (!b->batch || (a->batch && a->batch != b->batch))
        return FAIL(b, SGL_ATTN_E_STATE, "npu_ascend: forward without init_forward_metadata for this batch");
    if (b->mode == SGL_ATTN_MODE_IDLE) return SGL_ATTN_OK;
    if (decode ? b->mode != SGL_ATTN_MODE_DECODE : b->mode == SGL_ATTN_MODE_DECODE)
        return FAIL(b, SGL_ATTN_E_STATE, "npu_ascend: forward_%s for a batch in mode %d", decode ? "decode" : "extend",
                    b->mode);
    if (a->linear) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: linear-attention layers go to hybrid wrappers");
    const sgl_attn_layer *L = a->layer;
    if (!L || L->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: layer is NULL or older than ABI 1.0");
    const char *unserved = sgl_sdk_unserved_forward(a, 0);
    if (unserved) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: %s is set (ABI 1.2): not served", unserved);
    const int Hq = L->num_q_heads, Hkv = L->num_kv_heads, D = L->head_dim_qk;
    if (Hq < 1 || Hkv < 1 || Hq % Hkv || Hq / Hkv > 64)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: layer %d: %d q heads over %d KV heads (ratio must be a "
                    "whole number up to 64)", L->layer_id, Hq, Hkv);
    if (!L->v_cache) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: layer %d: MLA is not supported", L->layer_id);
    if (D != L->head_dim_v || D < 16 || D > 512 || D % 16)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: layer %d: head dims %d/%d (needs equal, multiple of 16, "
                    "<= 512)", L->layer_id, D, L->head_dim_v);
    if (L->is_cross || L->sliding_window >= 0 || L->logit_softcap > 0 || L->sinks)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: layer %d: cross attention, sliding window, soft-cap and "
                    "sinks are not mapped onto the fused operator", L->layer_id);
    const int64_t T = b->T;
    const int64_t qs[3] = {T, Hq, D}, ps[3] = {-1, Hkv, D};
    int64_t pool[3];
    if ((rc = npu_tensor_check(a->q, "q", 3, qs, NPU_T_HALF, NULL, e, sizeof e)) ||
        (rc = npu_tensor_check(a->out, "out", 3, qs, NPU_T_HALF, NULL, e, sizeof e)) ||
        (rc = npu_tensor_check(L->k_cache, "layer.k_cache", 3, ps, NPU_T_HALF, pool, e, sizeof e)) ||
        (rc = npu_tensor_check(L->v_cache, "layer.v_cache", 3, pool, NPU_T_HALF, NULL, e, sizeof e)))
        return FAIL(b, rc, "npu_ascend: %s", e);
    const int dt = npu_acl_dtype(a->q);
    if (npu_acl_dtype(a->out) != dt || npu_acl_dtype(L->k_cache) != dt || npu_acl_dtype(L->v_cache) != dt)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: q, out and the KV pool must share one dtype");
    const int64_t blocks = pool[0] / b->page;
    if (b->max_block_id >= blocks)
        return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: the block table names block %" PRId64 " but the pool of %" PRId64
                    " slots has %" PRId64 " blocks of %d", b->max_block_id, pool[0], blocks, b->page);
    if (a->save_kv_cache) {
        const int64_t ks[3] = {T, Hkv, D};
        if ((rc = npu_tensor_check(a->k, "k", 3, ks, NPU_T_HALF, NULL, e, sizeof e)) ||
            (rc = npu_tensor_check(a->v, "v", 3, ks, NPU_T_HALF, NULL, e, sizeof e)))
            return FAIL(b, rc, "npu_ascend: %s", e);
        if (!b->has_loc)
            return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: layer %d: save_kv_cache, but the batch had no out_cache_loc",
                        L->layer_id);
        if (b->max_loc >= pool[0])
            return FAIL(b, SGL_ATTN_E_INVALID, "npu_ascend: layer %d: out_cache_loc names slot %" PRId64 " but the pool "
                        "has %" PRId64 " slots", L->layer_id, b->max_loc, pool[0]);
        if (npu_acl_dtype(a->k) != dt || npu_acl_dtype(a->v) != dt)
            return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "npu_ascend: new k/v must have the pool's dtype");
        if ((rc = save_kv(b, npu_tensor_addr(L->k_cache), a->k, pool[0], (int64_t)Hkv * D, dt, L->layer_id)) ||
            (rc = save_kv(b, npu_tensor_addr(L->v_cache), a->v, pool[0], (int64_t)Hkv * D, dt, L->layer_id)))
            return rc;
    }
    /* The pool as paged tensors [blocks, page, kv_heads * head_dim] (BnBsH). */
    const int64_t kd[3] = {blocks, b->page, (int64_t)Hkv * D};
    aclTensor *tk = view(rt, npu_tensor_addr(L->k_cache), dt, 3, kd);
    aclTensor *tv = view(rt, npu_tensor_addr(L->v_cache), dt, 3, kd);
    aclTensorList *lk = tk ? rt->aclCreateTensorList((const aclTensor *const *)&tk, 1) : NULL;
    aclTensorList *lv = tv ? rt->aclCreateTensorList((const aclTensor *const *)&tv, 1) : NULL;
    if (!lk || !lv) {
        if (lk) rt->aclDestroyTensorList(lk);
        else if (tk) rt->aclDestroyTensor(tk);
        if (lv) rt->aclDestroyTensorList(lv);
        else if (tv) rt->aclDestroyTensor(tv);
        return FAIL(b, SGL_ATTN_E_NOMEM, "npu_ascend: aclCreateTensorList failed");
    }
    const size_t tok = (size_t)Hq * D * (size_t)(a->q->dtype.bits / 8);
    char *q = npu_tensor_addr(a->q), *o = npu_tensor_addr(a->out);
    rc = SGL_ATTN_OK;
    if (decode) {
        rc = fia(b, q, o, b->bs, 1, L, dt, lk, lv, b->t_table, NULL, b->a_kv, 0);
    } else {
        for (int i = 0; i < b->bs && !rc; i++) {
            if (!b->h_ext[i]) continue;
            size_t at = (size_t)b->h_start[i] * tok;
            rc = fia(b, q + at, o + at, 1, b->h_ext[i], L, dt, lk, lv, b->t_rtable[i], b->a_q[i], b->a_kvr[i], 3);
        }
    }
    rt->aclDestroyTensorList(lk); /* and the pool tensors in them */
    rt->aclDestroyTensorList(lv);
    return rc;
}

static int nb_decode(sgl_attn_backend *bb, const sgl_attn_forward_args *a) { return forward((npu_backend *)bb, a, 1); }
static int nb_extend(sgl_attn_backend *bb, const sgl_attn_forward_args *a) { return forward((npu_backend *)bb, a, 0); }

static const sgl_attn_backend_ops npu_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = nb_metadata,
    .forward_extend = nb_extend,
    .forward_decode = nb_decode,
    .last_error = nb_last_error,
    .destroy = nb_destroy,
};

/* --------------------------------------------------------------- create */

int npu_create(const sgl_attn_create_args *args, sgl_attn_backend **out) {
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!args || args->struct_size < sizeof(sgl_attn_create_args) || !args->model) return SGL_ATTN_E_INVALID;
    char scratch[8], *err = args->error && args->error_size ? args->error : scratch;
    size_t es = args->error && args->error_size ? args->error_size : sizeof scratch;
    err[0] = 0;
    /* workspace_mb: the operators' device workspace, allocated here once */
    const sgl_sdk_opts opts = {sgl_sdk_opts_of(args, NPU_PLUGIN_NAME).host, NPU_PLUGIN_NAME, err, es};
    int64_t ws_mb;
    if (sgl_sdk_opt_int(&opts, "workspace_mb", "SGL_ATTN_NPU_WORKSPACE_MB", 64, 1, 16384, &ws_mb))
        return SGL_ATTN_E_INVALID;
    char why[256];
    const npu_rt *rt = npu_runtime(why, sizeof why);
    if (!rt) {
        snprintf(err, es, "npu_ascend: %s", why);
        return SGL_ATTN_E_DEVICE;
    }
    const sgl_attn_model *m = args->model;
    if (m->dtype != SGL_ATTN_DT_F16 && m->dtype != SGL_ATTN_DT_BF16) {
        snprintf(err, es, "npu_ascend: model dtype must be float16 or bfloat16");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    npu_backend *b = calloc(1, sizeof *b);
    if (!b) return SGL_ATTN_E_NOMEM;
    b->rt = rt;
    b->base.ops = &npu_ops;
    b->base.ops_size = npu_ops.struct_size;
    b->base.device = args->device;
    b->max_reqs = args->max_reqs > 0 ? args->max_reqs : 256;
    b->max_tokens = args->max_tokens > 0 ? args->max_tokens : 8192;
    b->max_context = args->max_context > 0 ? args->max_context : 32768;
    b->max_blocks = (b->max_context + 127) / 128; /* the smallest page the operator takes */
    int rc = SGL_ATTN_E_DEVICE;
    aclError ae = rt->aclrtSetDevice(args->device);
    if (!ae) ae = rt->aclrtCreateStream(&b->own_stream);
    size_t n_raw = (size_t)(b->max_context > b->max_reqs ? b->max_context : b->max_reqs);
    if (n_raw < (size_t)b->max_tokens) n_raw = (size_t)b->max_tokens;
    n_raw *= 8;
    size_t tbytes = sizeof(int32_t) * (size_t)b->max_reqs * (size_t)b->max_blocks;
    b->ws_size = (size_t)ws_mb << 20;
    if (!ae) ae = rt->aclrtMalloc(&b->d_table, tbytes, ACL_MEM_MALLOC_HUGE_FIRST);
    if (!ae) ae = rt->aclrtMalloc(&b->d_loc, sizeof(int64_t) * (size_t)b->max_tokens, ACL_MEM_MALLOC_HUGE_FIRST);
    if (!ae) ae = rt->aclrtMalloc(&b->d_mask, (size_t)MASK_N * MASK_N, ACL_MEM_MALLOC_HUGE_FIRST);
    if (!ae) ae = rt->aclrtMalloc(&b->ws, b->ws_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (ae) {
        npu_describe(rt, ae, why, sizeof why);
        snprintf(err, es, "npu_ascend: setting up device %d: %s", args->device, why);
        goto fail;
    }
    rc = SGL_ATTN_E_NOMEM;
    b->h_table = malloc(tbytes);
    b->h_raw = malloc(n_raw);
    b->h_loc = calloc((size_t)b->max_tokens, sizeof(int64_t));
    b->h_seq = calloc((size_t)b->max_reqs, sizeof(int64_t));
    b->h_ext = calloc((size_t)b->max_reqs, sizeof(int64_t));
    b->h_start = calloc((size_t)b->max_reqs, sizeof(int64_t));
    b->h_rpi = calloc((size_t)b->max_reqs, sizeof(int64_t));
    b->t_rtable = calloc((size_t)b->max_reqs, sizeof(aclTensor *));
    b->a_q = calloc((size_t)b->max_reqs, sizeof(aclIntArray *));
    b->a_kvr = calloc((size_t)b->max_reqs, sizeof(aclIntArray *));
    unsigned char *mask = malloc((size_t)MASK_N * MASK_N);
    if (!b->h_table || !b->h_raw || !b->h_loc || !b->h_seq || !b->h_ext || !b->h_start || !b->h_rpi || !b->t_rtable || !b->a_q ||
        !b->a_kvr || !mask) {
        free(mask);
        snprintf(err, es, "npu_ascend: out of host memory");
        goto fail;
    }
    /* rightDownCausal's compressed mask: 1 (masked) strictly above the diagonal. */
    for (size_t i = 0; i < MASK_N; i++)
        for (size_t j = 0; j < MASK_N; j++) mask[i * MASK_N + j] = j > i;
    ae = rt->aclrtMemcpy(b->d_mask, (size_t)MASK_N * MASK_N, mask, (size_t)MASK_N * MASK_N, ACL_MEMCPY_HOST_TO_DEVICE);
    free(mask);
    const int64_t md[2] = {MASK_N, MASK_N};
    if (!ae) b->t_mask = view(rt, b->d_mask, ACL_BOOL, 2, md);
    if (ae || !b->t_mask) {
        rc = SGL_ATTN_E_DEVICE;
        snprintf(err, es, "npu_ascend: uploading the causal mask failed");
        goto fail;
    }
    *out = &b->base;
    return SGL_ATTN_OK;
fail:
    nb_destroy(&b->base);
    return rc;
}
