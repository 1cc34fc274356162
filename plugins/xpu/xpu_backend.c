/* xpu_backend.c - the xpu_ocl backend instance: create, per-batch plan,
 * forward (save KV, attend), errors.  The forward path only checks, sets
 * kernel arguments and enqueues: no allocation, no host wait (unless the
 * instance was created with option check / SGL_ATTN_XPU_CHECK=1, a checked,
 * synchronous run for debugging). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpu_internal.h"
#include "sdk_option.h"
#include "xpu_tensor.h"
#include "sdk_unserved.h"

typedef struct xpu_backend {
    sgl_attn_backend base; /* first: the host sees only this */
    xpu_device *dev;
    cl_kernel k_plan, k_save, k_attn;
    cl_mem plan;   /* [max_tokens][3] int: req_to_token row, query position, encoder length */
    cl_mem errw;   /* one int of XPU_E_* bits */
    int32_t max_reqs, max_tokens;
    int check_sync;
    /* the current batch */
    const sgl_attn_batch *batch;
    cl_command_queue queue;
    int32_t mode, T;
    int has_enc;
    int64_t r2t_rows, r2t_cols;
    int pending;   /* kernels queued since the error word was last read */
    char err[640];
} xpu_backend;

#define FAIL(b, rc, ...) (snprintf((b)->err, sizeof (b)->err, __VA_ARGS__), (rc))

static const char *describe_bits(int bits, char *buf, size_t n) {
    snprintf(buf, n, "%s%s%s%s", bits & XPU_E_ROW ? "req_pool_indices entry outside req_to_token rows; " : "",
             bits & XPU_E_SEQ ? "seq_lens entry out of range (< tokens per request or > req_to_token columns); " : "",
             bits & XPU_E_TOKENS ? "extend lengths inconsistent (prefix + new != seq_len, or sum != num_tokens); " : "",
             bits & XPU_E_SLOT ? "req_to_token / out_cache_loc slot outside the KV pool; " : "");
    return buf;
}

/* Read the kernels' error word (waits for the queue). */
static int read_error_word(xpu_backend *b) {
    cl_int bits = 0;
    if (!b->pending || !b->queue) return 0;
    b->pending = 0;
    if (clEnqueueReadBuffer(b->queue, b->errw, CL_TRUE, 0, sizeof bits, &bits, 0, NULL, NULL) != CL_SUCCESS)
        return 0;
    if (bits) {
        char d[320];
        snprintf(b->err, sizeof b->err, "xpu_ocl: the device rejected batch indices (rows of the bad tokens "
                 "were written as zeros): %s", describe_bits(bits, d, sizeof d));
    }
    return bits;
}

static const char *xb_last_error(sgl_attn_backend *bb) {
    xpu_backend *b = (xpu_backend *)bb;
    if (!b->err[0]) read_error_word(b);
    return b->err;
}

static void xb_destroy(sgl_attn_backend *bb) {
    xpu_backend *b = (xpu_backend *)bb;
    if (!b) return;
    if (b->queue) clFinish(b->queue);
    if (b->k_plan) clReleaseKernel(b->k_plan);
    if (b->k_save) clReleaseKernel(b->k_save);
    if (b->k_attn) clReleaseKernel(b->k_attn);
    if (b->plan) clReleaseMemObject(b->plan);
    if (b->errw) clReleaseMemObject(b->errw);
    xpu_device_release(b->dev);
    free(b);
}

/* ------------------------------------------------------------- metadata */

/* Set kernel argument (*i)++ unless an earlier one failed; *ce keeps the first error. */
static void set_arg(cl_kernel k, int *i, size_t size, const void *v, cl_int *ce) {
    if (*ce == CL_SUCCESS) *ce = clSetKernelArg(k, (cl_uint)*i, size, v);
    (*i)++;
}
#define ARG(k, v) set_arg((k), &i, sizeof(v), &(v), &ce)

/* A tensor argument: SVM pointer or cl_mem by the device's memory model
 * (NULL sets a NULL global pointer in both), then its byte offset. */
static void set_mem(cl_kernel k, int *i, int svm, const xpu_tview *v, cl_int *ce) {
    if (*ce == CL_SUCCESS) {
        if (svm && v->mem) *ce = clSetKernelArgSVMPointer(k, (cl_uint)*i, v->mem);
        else *ce = clSetKernelArg(k, (cl_uint)*i, sizeof(cl_mem), v->mem ? (const void *)&v->mem : NULL);
    }
    (*i)++;
    set_arg(k, i, sizeof v->off, &v->off, ce);
}
#define MEM(k, v) set_mem((k), &i, b->dev->svm, &(v), &ce)
#define xpu_tensor_check_(b, t, what, ...) xpu_tensor_check((t), (what), (b)->dev->svm, __VA_ARGS__)

static int host_checks(xpu_backend *b, const sgl_attn_batch *bt) {
    char e[320];
    int rc;
    int32_t bs = bt->batch_size;
    const DLTensor *sl = bt->seq_lens_cpu;
    if (sl) {
        if ((rc = xpu_host_index_check(sl, "batch.seq_lens_cpu", bs, e, sizeof e))) return FAIL(b, rc, "xpu_ocl: %s", e);
        const DLTensor *en = bt->encoder_lens_cpu;
        const int have_en = en && xpu_host_index_check(en, "batch.encoder_lens_cpu", bs, e, sizeof e) == SGL_ATTN_OK;
        for (int32_t i = 0; i < bs; i++) {
            int64_t v = sgl_sdk_index_at(sl, i), enc = have_en ? sgl_sdk_index_at(en, i) : 0;
            int64_t lo = bt->forward_mode == SGL_ATTN_MODE_EXTEND ? 1 : bt->tokens_per_req;
            if (v < lo || enc < 0 || enc + v > b->r2t_cols)
                return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.seq_lens_cpu[%d] = %" PRId64 ", expected %" PRId64
                            "..%" PRId64 " (req_to_token has %" PRId64 " columns%s)", i, v, lo, b->r2t_cols - enc,
                            b->r2t_cols, enc ? ", minus the encoder tokens" : "");
        }
    }
    const DLTensor *ex = bt->extend_seq_lens_cpu, *pre = bt->extend_prefix_lens_cpu;
    if (bt->forward_mode == SGL_ATTN_MODE_EXTEND && ex) {
        if ((rc = xpu_host_index_check(ex, "batch.extend_seq_lens_cpu", bs, e, sizeof e))) return FAIL(b, rc, "xpu_ocl: %s", e);
        if (pre && (rc = xpu_host_index_check(pre, "batch.extend_prefix_lens_cpu", bs, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        int64_t sum = 0;
        for (int32_t i = 0; i < bs; i++) {
            int64_t n = sgl_sdk_index_at(ex, i);
            if (n < 0) return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.extend_seq_lens_cpu[%d] = %" PRId64 " < 0", i, n);
            if (pre && sl && sgl_sdk_index_at(pre, i) + n != sgl_sdk_index_at(sl, i))
                return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: request %d: extend_prefix_lens (%" PRId64 ") + "
                            "extend_seq_lens (%" PRId64 ") != seq_lens (%" PRId64 ")", i, sgl_sdk_index_at(pre, i), n,
                            sgl_sdk_index_at(sl, i));
            sum += n;
        }
        if (sum != bt->num_tokens)
            return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: extend_seq_lens_cpu sum to %" PRId64 " but num_tokens = %d",
                        sum, bt->num_tokens);
    }
    return SGL_ATTN_OK;
}

static int xb_metadata(sgl_attn_backend *bb, const sgl_attn_batch *bt) {
    xpu_backend *b = (xpu_backend *)bb;
    char e[320];
    int rc;
    b->err[0] = 0;
    b->batch = NULL;
    if (!bt || bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch is NULL or older than ABI 1.0 (struct_size %u)",
                    bt ? bt->struct_size : 0u);
    const char *unserved = sgl_sdk_unserved_batch(bt, 0);
    if (unserved) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: %s is set (ABI 1.2): not served", unserved);
    int mode = bt->forward_mode;
    if (mode == SGL_ATTN_MODE_IDLE) {
        b->batch = bt;
        b->mode = mode;
        return SGL_ATTN_OK;
    }
    if (mode != SGL_ATTN_MODE_EXTEND && mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_TARGET_VERIFY)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.forward_mode = %d, expected 0..3", mode);
    int32_t bs = bt->batch_size, T = bt->num_tokens, tpr = bt->tokens_per_req;
    if (bs < 1 || bs > b->max_reqs)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.batch_size = %d, expected 1..%d (max_reqs)", bs, b->max_reqs);
    if (T < 1 || T > b->max_tokens)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.num_tokens = %d, expected 1..%d (max_tokens)", T, b->max_tokens);
    if (mode != SGL_ATTN_MODE_EXTEND && (tpr < 1 || (int64_t)bs * tpr != T))
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.tokens_per_req = %d with batch_size %d does not give "
                    "num_tokens %d", tpr, bs, T);
    xpu_tview r2t, rpi, sl, pre = {0}, ext = {0}, en = {0};
    int64_t got[2];
    const int64_t any2[2] = {-1, -1}, bs1[1] = {bs};
    if ((rc = xpu_tensor_check_(b, bt->req_to_token, "batch.req_to_token", 2, any2, XPU_T_INDEX, &r2t, got, e, sizeof e)))
        return FAIL(b, rc, "xpu_ocl: %s", e);
    if (got[0] > INT32_MAX || got[1] > INT32_MAX)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: req_to_token [%" PRId64 ", %" PRId64 "] exceeds int32 sizes",
                    got[0], got[1]);
    b->r2t_rows = got[0];
    b->r2t_cols = got[1];
    if ((rc = xpu_tensor_check_(b, bt->req_pool_indices, "batch.req_pool_indices", 1, bs1, XPU_T_INDEX, &rpi, NULL, e, sizeof e)))
        return FAIL(b, rc, "xpu_ocl: %s", e);
    if ((rc = xpu_tensor_check_(b, bt->seq_lens, "batch.seq_lens", 1, bs1, XPU_T_INDEX, &sl, NULL, e, sizeof e)))
        return FAIL(b, rc, "xpu_ocl: %s", e);
    cl_int has_pre = 0;
    if (mode == SGL_ATTN_MODE_EXTEND) {
        if ((rc = xpu_tensor_check_(b, bt->extend_seq_lens, "batch.extend_seq_lens", 1, bs1, XPU_T_INDEX, &ext, NULL, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        if (bt->extend_prefix_lens) {
            if ((rc = xpu_tensor_check_(b, bt->extend_prefix_lens, "batch.extend_prefix_lens", 1, bs1, XPU_T_INDEX, &pre,
                                       NULL, e, sizeof e)))
                return FAIL(b, rc, "xpu_ocl: %s", e);
            has_pre = 1;
        }
    }
    cl_int has_enc = 0;
    if (bt->encoder_lens) {
        if ((rc = xpu_tensor_check_(b, bt->encoder_lens, "batch.encoder_lens", 1, bs1, XPU_T_INDEX, &en, NULL, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        has_enc = 1;
    }
    if ((rc = host_checks(b, bt))) return rc;

    cl_command_queue q = b->dev->queue;
    if (bt->stream) {
        cl_context qc = NULL;
        q = (cl_command_queue)bt->stream;
        if (clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL) != CL_SUCCESS || qc != b->dev->ctx)
            return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: batch.stream is not a cl_command_queue of device %d's "
                        "context (make it with this plugin's device_ops.stream_create)", b->base.device);
    }
    /* Fresh error word and plan; then one work-item per request fills the plan. */
    const cl_int zero = 0, minus1 = -1;
    cl_int ce = clEnqueueFillBuffer(q, b->errw, &zero, sizeof zero, 0, sizeof zero, 0, NULL, NULL);
    if (ce == CL_SUCCESS)
        ce = clEnqueueFillBuffer(q, b->plan, &minus1, sizeof minus1, 0, (size_t)T * 3 * sizeof(cl_int), 0, NULL, NULL);
    cl_int m = mode == SGL_ATTN_MODE_EXTEND ? 1 : 2, cbs = bs, cT = T, ctpr = tpr;
    cl_int rows = (cl_int)b->r2t_rows, cols = (cl_int)b->r2t_cols;
    cl_kernel k = b->k_plan;
    int i = 0;
    ARG(k, m); ARG(k, cbs); ARG(k, cT); ARG(k, ctpr);
    MEM(k, rpi); ARG(k, rpi.code);
    MEM(k, sl); ARG(k, sl.code);
    MEM(k, pre); /* zeroed (NULL) view when absent */
    ARG(k, pre.code);
    ARG(k, has_pre);
    MEM(k, ext);
    ARG(k, ext.code);
    MEM(k, en);
    ARG(k, en.code);
    ARG(k, has_enc);
    ARG(k, rows); ARG(k, cols); ARG(k, b->plan); ARG(k, b->errw);
    size_t gsz = (size_t)bs;
    if (ce == CL_SUCCESS) ce = clEnqueueNDRangeKernel(q, k, 1, NULL, &gsz, NULL, 0, NULL, NULL);
    if (ce != CL_SUCCESS)
        return FAIL(b, SGL_ATTN_E_DEVICE, "xpu_ocl: enqueueing the batch plan failed: %s", xpu_cl_error_name(ce));
    b->queue = q;
    b->mode = mode;
    b->T = T;
    b->has_enc = has_enc;
    b->pending = 1;
    b->batch = bt;
    if (b->check_sync && read_error_word(b)) return SGL_ATTN_E_INVALID;
    return SGL_ATTN_OK;
}

/* -------------------------------------------------------------- forward */

static int forward(xpu_backend *b, const sgl_attn_forward_args *a, int decode) {
    char e[320];
    int rc;
    b->err[0] = 0;
    if (!a || a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: forward args NULL or older than ABI 1.0");
    if (!b->batch || (a->batch && a->batch != b->batch))
        return FAIL(b, SGL_ATTN_E_STATE, "xpu_ocl: forward without init_forward_metadata for this batch");
    if (b->mode == SGL_ATTN_MODE_IDLE) return SGL_ATTN_OK;
    if (decode ? b->mode != SGL_ATTN_MODE_DECODE : b->mode == SGL_ATTN_MODE_DECODE)
        return FAIL(b, SGL_ATTN_E_STATE, "xpu_ocl: forward_%s called for a batch in mode %d", decode ? "decode" : "extend",
                    b->mode);
    if (a->linear)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: linear-attention layers are served by hybrid wrappers");
    const sgl_attn_layer *L = a->layer;
    if (!L || L->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: layer is NULL or older than ABI 1.0");
    const char *unserved = sgl_sdk_unserved_forward(a, 0);
    if (unserved) return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: %s is set (ABI 1.2): not served", unserved);
    if (L->is_cross && !b->has_enc)
        return FAIL(b, SGL_ATTN_E_STATE, "xpu_ocl: layer %d is cross attention but the batch had no encoder_lens",
                    L->layer_id);
    if (L->is_cross && a->save_kv_cache)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: layer %d: save_kv_cache on a cross-attention layer (write the "
                    "encoder K/V into the pool first)", L->layer_id);
    const int32_t Hq = L->num_q_heads, Hkv = L->num_kv_heads, Dqk = L->head_dim_qk, Dv = L->head_dim_v;
    if (Hq < 1 || Hkv < 1 || Hq % Hkv)
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: layer %d: num_q_heads %d is not a multiple of num_kv_heads %d",
                    L->layer_id, Hq, Hkv);
    if (Dqk < 1 || Dqk > XPU_QK_MAX || Dv < 1 || Dv > XPU_V_MAX)
        return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: layer %d: head dims qk %d / v %d, supported up to %d / %d",
                    L->layer_id, Dqk, Dv, XPU_QK_MAX, XPU_V_MAX);
    if (!isfinite(L->sm_scale) || !(L->logit_softcap >= 0.0f) || !isfinite(L->logit_softcap))
        return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: layer %d: sm_scale %g / logit_softcap %g must be finite (cap >= 0)",
                    L->layer_id, (double)L->sm_scale, (double)L->logit_softcap);
    const int mla = L->v_cache == NULL;
    const int64_t T = b->T;
    xpu_tview q, o, kc, vc, k = {0}, v = {0}, loc = {0}, sk = {0};
    int64_t pool[3];
    const int64_t qs[3] = {T, Hq, Dqk}, os[3] = {T, Hq, Dv};
    if ((rc = xpu_tensor_check_(b, a->q, "q", 3, qs, XPU_T_FLOAT, &q, NULL, e, sizeof e))) return FAIL(b, rc, "xpu_ocl: %s", e);
    if ((rc = xpu_tensor_check_(b, a->out, "out", 3, os, XPU_T_FLOAT, &o, NULL, e, sizeof e))) return FAIL(b, rc, "xpu_ocl: %s", e);
    if (mla) {
        if (Hkv != 1 || Dv > Dqk)
            return FAIL(b, SGL_ATTN_E_INVALID, "xpu_ocl: layer %d: MLA (v_cache NULL) needs num_kv_heads 1 and "
                        "head_dim_v <= head_dim_qk, got %d and %d/%d", L->layer_id, Hkv, Dv, Dqk);
        const int64_t ks[3] = {-1, 1, Dqk};
        if ((rc = xpu_tensor_check_(b, L->k_cache, "layer.k_cache (MLA latent pool)", 3, ks, XPU_T_FLOAT, &kc, pool, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        vc = kc;
    } else {
        const int64_t ks[3] = {-1, Hkv, Dqk};
        if ((rc = xpu_tensor_check_(b, L->k_cache, "layer.k_cache", 3, ks, XPU_T_FLOAT, &kc, pool, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        const int64_t vs[3] = {pool[0], Hkv, Dv};
        if ((rc = xpu_tensor_check_(b, L->v_cache, "layer.v_cache", 3, vs, XPU_T_FLOAT, &vc, NULL, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        if (vc.code != kc.code)
            return FAIL(b, SGL_ATTN_E_UNSUPPORTED, "xpu_ocl: k_cache and v_cache dtypes differ");
    }
    const cl_ulong slots = (cl_ulong)pool[0];
    cl_int has_sinks = L->sinks != NULL;
    if (has_sinks) {
        const int64_t ss[1] = {Hq};
        if ((rc = xpu_tensor_check_(b, L->sinks, "layer.sinks", 1, ss, XPU_T_F32, &sk, NULL, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
    }
    if (a->save_kv_cache) {
        const int64_t ks[3] = {T, Hkv, Dqk}, vs[3] = {T, Hkv, Dv}, ls[1] = {T};
        if ((rc = xpu_tensor_check_(b, a->k, "k", 3, ks, XPU_T_FLOAT, &k, NULL, e, sizeof e))) return FAIL(b, rc, "xpu_ocl: %s", e);
        if (!mla && (rc = xpu_tensor_check_(b, a->v, "v", 3, vs, XPU_T_FLOAT, &v, NULL, e, sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
        if ((rc = xpu_tensor_check_(b, b->batch->out_cache_loc, "batch.out_cache_loc", 1, ls, XPU_T_INDEX, &loc, NULL, e,
                                   sizeof e)))
            return FAIL(b, rc, "xpu_ocl: %s", e);
    }
    /* The plan's rows and columns index req_to_token as it was at
     * init_forward_metadata: a header that changed since is refused (each
     * slot read from it is checked against the pool on the device). */
    xpu_tview r2t;
    const int64_t r2ts[2] = {b->r2t_rows, b->r2t_cols};
    if ((rc = xpu_tensor_check_(b, b->batch->req_to_token, "batch.req_to_token", 2, r2ts, XPU_T_INDEX, &r2t, NULL, e,
                                sizeof e)))
        return FAIL(b, rc, "xpu_ocl: %s (it changed since init_forward_metadata)", e);

    cl_int ce = CL_SUCCESS;
    cl_int cT = (cl_int)T;
    if (a->save_kv_cache) {
        /* Pool first, then attend: the same in-order queue keeps them ordered. */
        cl_kernel ks = b->k_save;
        for (int part = 0; part < (mla ? 1 : 2); part++) {
            const xpu_tview *src = part ? &v : &k, *dst = part ? &vc : &kc;
            cl_ulong n = (cl_ulong)Hkv * (cl_ulong)(part ? Dv : Dqk);
            cl_ulong stride = mla ? (cl_ulong)Dqk : n;
            int i = 0;
            MEM(ks, *src); ARG(ks, src->code); ARG(ks, n);
            MEM(ks, *dst); ARG(ks, dst->code); ARG(ks, stride);
            MEM(ks, loc); ARG(ks, loc.code); ARG(ks, cT);
            ARG(ks, slots); ARG(ks, b->errw);
            size_t g = (size_t)(T * (int64_t)n);
            if (ce == CL_SUCCESS) ce = clEnqueueNDRangeKernel(b->queue, ks, 1, NULL, &g, NULL, 0, NULL, NULL);
        }
    }
    cl_kernel ka = b->k_attn;
    cl_int cols = (cl_int)b->r2t_cols, cHq = Hq, cHkv = Hkv, cDqk = Dqk, cDv = Dv, window = L->sliding_window;
    cl_int cross = L->is_cross != 0;
    if (window < 0) window = -1;
    cl_float scale = L->sm_scale, cap = L->logit_softcap;
    cl_ulong kstride = (cl_ulong)(mla ? 1 : Hkv) * (cl_ulong)Dqk;
    cl_ulong vstride = mla ? (cl_ulong)Dqk : (cl_ulong)Hkv * (cl_ulong)Dv;
    int i = 0;
    ARG(ka, b->plan);
    MEM(ka, r2t); ARG(ka, r2t.code); ARG(ka, cols);
    MEM(ka, q); ARG(ka, q.code);
    MEM(ka, kc); MEM(ka, vc); ARG(ka, kc.code);
    ARG(ka, kstride); ARG(ka, vstride); ARG(ka, slots);
    MEM(ka, o); ARG(ka, o.code);
    ARG(ka, cHq); ARG(ka, cHkv); ARG(ka, cDqk); ARG(ka, cDv);
    ARG(ka, scale); ARG(ka, cap); ARG(ka, window); ARG(ka, cross);
    MEM(ka, sk);
    ARG(ka, has_sinks); ARG(ka, b->errw);
    size_t gsz[2] = {(size_t)Hq * XPU_WG, (size_t)T}, lsz[2] = {XPU_WG, 1};
    if (ce == CL_SUCCESS) ce = clEnqueueNDRangeKernel(b->queue, ka, 2, NULL, gsz, lsz, 0, NULL, NULL);
    if (ce != CL_SUCCESS)
        return FAIL(b, SGL_ATTN_E_DEVICE, "xpu_ocl: layer %d: enqueueing attention failed: %s", L->layer_id,
                    xpu_cl_error_name(ce));
    b->pending = 1;
    if (b->check_sync && read_error_word(b)) return SGL_ATTN_E_INVALID;
    return SGL_ATTN_OK;
}

static int xb_decode(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    return forward((xpu_backend *)bb, a, 1);
}
static int xb_extend(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    return forward((xpu_backend *)bb, a, 0);
}

static const sgl_attn_backend_ops xpu_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = xb_metadata,
    .forward_extend = xb_extend,
    .forward_decode = xb_decode,
    .last_error = xb_last_error,
    .destroy = xb_destroy,
};

/* --------------------------------------------------------------- create */

int xpu_create(const sgl_attn_create_args *args, sgl_attn_backend **out) {
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!args || args->struct_size < sizeof(sgl_attn_create_args)) return SGL_ATTN_E_INVALID;
    char *err = args->error;
    size_t es = err ? args->error_size : 0;
    char scratch[8];
    if (!err || !es) {
        err = scratch;
        es = sizeof scratch;
    }
    err[0] = 0;
    if (args->inner) {
        snprintf(err, es, "xpu_ocl is a full-attention backend and wraps nothing");
        return SGL_ATTN_E_INVALID;
    }
    if (args->max_reqs < 0 || args->max_tokens < 0 || args->max_context < 0) {
        snprintf(err, es, "xpu_ocl: max_reqs %d / max_tokens %d / max_context %d must be >= 0", args->max_reqs,
                 args->max_tokens, args->max_context);
        return SGL_ATTN_E_INVALID;
    }
    xpu_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, es, "xpu_ocl: out of host memory");
        return SGL_ATTN_E_NOMEM;
    }
    b->base.ops = &xpu_ops;
    b->base.ops_size = xpu_ops.struct_size;
    b->base.device = args->device;
    b->max_reqs = args->max_reqs ? args->max_reqs : 256;
    b->max_tokens = args->max_tokens ? args->max_tokens : 8192;
    /* check: forwards wait for the kernels' error word and fail on bad
     * indices (for debugging: it synchronises every forward) */
    const sgl_sdk_opts opts = {sgl_sdk_opts_of(args, XPU_PLUGIN_NAME).host, XPU_PLUGIN_NAME, err, es};
    int rc = sgl_sdk_opt_bool(&opts, "check", "SGL_ATTN_XPU_CHECK", 0, &b->check_sync);
    if (!rc) rc = xpu_device_acquire(args->device, &b->dev, err, es);
    if (rc) {
        free(b);
        return rc;
    }
    cl_program prog = NULL;
    if ((rc = xpu_device_program(b->dev, &prog, err, es))) goto fail;
    cl_int e = CL_SUCCESS;
    b->k_plan = clCreateKernel(prog, "sgl_plan", &e);
    if (e == CL_SUCCESS) b->k_save = clCreateKernel(prog, "sgl_save", &e);
    if (e == CL_SUCCESS) b->k_attn = clCreateKernel(prog, "sgl_attn", &e);
    if (e == CL_SUCCESS)
        b->plan = clCreateBuffer(b->dev->ctx, CL_MEM_READ_WRITE, (size_t)b->max_tokens * 3 * sizeof(cl_int), NULL, &e);
    if (e == CL_SUCCESS) b->errw = clCreateBuffer(b->dev->ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &e);
    if (e != CL_SUCCESS) {
        snprintf(err, es, "xpu_ocl: setting up kernels on '%s': %s", b->dev->name, xpu_cl_error_name(e));
        rc = SGL_ATTN_E_DEVICE;
        goto fail;
    }
    *out = &b->base;
    return SGL_ATTN_OK;
fail:
    xb_destroy(&b->base);
    return rc;
}
