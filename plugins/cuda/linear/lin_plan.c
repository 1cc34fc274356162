/* lin_plan.c - init_forward_metadata and the graph hooks for the wrapper's own
 * layers: the batch is checked on the host as far as host memory shows it
 * (the *_cpu mirrors, host-memory index tensors), then one plan kernel lays
 * out each request's tokens, slot and chunks in device memory, where the
 * forward kernels read them (so a captured graph replays any batch of its
 * size).  Values only the device holds are checked by the plan kernel: a bad
 * one never reads or writes out of bounds (its request is skipped); with the
 * debug option sync_check, init_forward_metadata also waits for the kernel
 * and reports it (outside a capture or replay).  Without it nothing here
 * waits for the device. */
#include <inttypes.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "lin.h"

int lin_report_device_err(lin_inst *w, const int32_t e[4], int64_t hi, const char *call) {
    const int64_t v = (int64_t)(((uint64_t)(uint32_t)e[3] << 32) | (uint32_t)e[2]);
    const int i = e[1];
    const int32_t lo32 = (int32_t)(uint32_t)(uint64_t)v, hi32 = (int32_t)((uint64_t)v >> 32);
    switch (e[0]) {
    case LIN_ERR_SLOT:
        lin_set_err(w, "%s: %s: batch.state_indices[%d] = %" PRId64 "; expected -1 (padding) or a slot 0..%d", w->name,
                    call, i, v, w->max_reqs - 1);
        break;
    case LIN_ERR_POOL_SLOT:
        lin_set_err(w, "%s: %s: batch.state_indices[%d] = %" PRId64 "; expected -1 (padding) or a slot 0..%d of the "
                    "wrapper's pool, which a layer of that batch used (a larger slot needs the layer's state in "
                    "linear_io: caller-owned state)", w->name, call, i, v, w->max_reqs - 1);
        break;
    case LIN_ERR_CSLOT:
        lin_set_err(w, "%s: %s: linear.state_indices (or batch.state_indices)[%d] = %" PRId64 "; expected -1 "
                    "(padding) or a slot 0..%" PRId64 " of the layer's caller-owned state tensors", w->name, call, i,
                    v, hi - 1);
        break;
    case LIN_ERR_CDUP:
        lin_set_err(w, "%s: %s: linear.state_indices (or batch.state_indices)[%d] = %" PRId64 " names a slot "
                    "another request of the batch already uses", w->name, call, i, v);
        break;
    case LIN_ERR_SB_DST:
        lin_set_err(w, "%s: %s: state_batch dst[%d] = %" PRId64 "; expected -1 (skip) or a slot 0..%" PRId64, w->name,
                    call, i, v, hi - 1);
        break;
    case LIN_ERR_SB_SRC:
        lin_set_err(w, "%s: %s: state_batch src[%d] = %" PRId64 "; expected a slot 0..%" PRId64, w->name, call, i, v,
                    hi - 1);
        break;
    case LIN_ERR_SB_STEP:
        lin_set_err(w, "%s: %s: state_batch steps[%d] = %" PRId64 "; expected -1 (keep) or an intermediate step "
                    "0..%" PRId64, w->name, call, i, v, hi - 1);
        break;
    case LIN_ERR_SB_REPEAT:
        lin_set_err(w, "%s: %s: state_batch dst[%d] = %d repeats dst[%d]: one batch writes a slot once", w->name, call,
                    i, lo32, hi32);
        break;
    case LIN_ERR_SB_CONFLICT:
        lin_set_err(w, "%s: %s: state_batch dst[%d] = %d is also src[%d]: a copy batch may not write a slot another "
                    "entry reads (the order would decide)", w->name, call, i, lo32, hi32);
        break;
    case LIN_ERR_DUP_SLOT:
        lin_set_err(w, "%s: %s: batch.state_indices[%d] = %" PRId64 " names a slot another request of the batch "
                    "already uses", w->name, call, i, v);
        break;
    case LIN_ERR_LEN:
        lin_set_err(w, "%s: %s: batch.extend_seq_lens[%d] = %" PRId64 "; expected 0..num_tokens", w->name, call, i, v);
        break;
    case LIN_ERR_PREFIX:
        lin_set_err(w, "%s: %s: batch.extend_prefix_lens[%d] = %" PRId64 "; expected >= 0", w->name, call, i, v);
        break;
    case LIN_ERR_SUM:
        lin_set_err(w, "%s: %s: batch.extend_seq_lens sum to %" PRId64 " (at request %d); batch.num_tokens = %d",
                    w->name, call, v, i, w->T);
        break;
    case LIN_ERR_ACCEPT:
        lin_set_err(w, "%s: %s: accepted_steps[%d] = %" PRId64 "; expected -1 (keep) or a step 0..%d", w->name, call,
                    i, v, w->verify_steps - 1);
        break;
    default:
        lin_set_err(w, "%s: %s: the device reported error %d at index %d", w->name, call, e[0], i);
        break;
    }
    return SGL_ATTN_E_INVALID;
}

/* An index tensor for the plan kernel: device memory as is; host memory
 * checked by the caller, converted to int32 and copied to stage slot `which`. */
static int stage_index(lin_inst *w, const DLTensor *t, int32_t n, int which, int on_host, int capturing,
                       lin_idx *out, void *stream, const char *what) {
    memset(out, 0, sizeof *out);
    if (!t) return SGL_ATTN_OK;
    if (!on_host) {
        out->p = sgl_sdk_data(t);
        out->is64 = t->dtype.bits == 64;
        return SGL_ATTN_OK;
    }
    if (capturing) {
        lin_set_err(w, "%s: %s is host memory; a stream under graph capture can only plan from device tensors",
                    w->name, what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int32_t *h = w->host_stage + (size_t)which * (size_t)w->max_reqs;
    for (int32_t i = 0; i < n; i++) h[i] = (int32_t)sgl_sdk_index_at(t, i); /* ranges checked by the caller */
    int32_t *d = (int32_t *)(w->dev + w->L.stage) + (size_t)which * (size_t)w->max_reqs;
    /* pageable source: the call returns once the bytes are staged, so the
     * host copy may be rewritten by the next batch */
    cudaError_t e = n ? cudaMemcpyAsync(d, h, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice,
                                        (cudaStream_t)stream)
                      : cudaSuccess;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        sgl_sdk_cuda_format_error(w->err, sizeof w->err, "init_forward_metadata: copying a host index tensor", (int)e);
        return SGL_ATTN_E_DEVICE;
    }
    out->p = d;
    out->is64 = 0;
    return SGL_ATTN_OK;
}

/* What host memory shows of the lengths, checked as the CPU wrappers do. */
static int check_lengths(lin_inst *w, const sgl_attn_batch *b, int32_t bs, int32_t T, const DLTensor *el,
                         const DLTensor *ep) {
    const DLTensor *sl = sgl_sdk_host_index(b->seq_lens_cpu, bs) ? b->seq_lens_cpu : NULL;
    int64_t sum = 0;
    for (int32_t i = 0; i < bs; i++) {
        const int64_t n = el ? sgl_sdk_index_at(el, i) : -1, pre = ep ? sgl_sdk_index_at(ep, i) : -1;
        if (el && (n < 0 || n > T)) {
            lin_set_err(w, "%s: request %d: extend_seq_lens = %" PRId64 "; expected 0..num_tokens = %d", w->name, i, n,
                        T);
            return SGL_ATTN_E_INVALID;
        }
        if (ep && pre < 0) {
            lin_set_err(w, "%s: request %d: extend_prefix_lens = %" PRId64 "; expected >= 0", w->name, i, pre);
            return SGL_ATTN_E_INVALID;
        }
        if (el && ep && sl && sgl_sdk_index_at(sl, i) != pre + n) {
            lin_set_err(w, "%s: request %d: seq_lens = %" PRId64 " with %" PRId64 " new tokens and prefix %" PRId64
                        "; expected seq_lens = prefix + new tokens", w->name, i, sgl_sdk_index_at(sl, i), n, pre);
            return SGL_ATTN_E_INVALID;
        }
        if (el) sum += n;
    }
    if (el && sum != T) {
        lin_set_err(w, "%s: extend_seq_lens sum to %" PRId64 "; batch.num_tokens = %d", w->name, sum, T);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

static int check_slots(lin_inst *w, const DLTensor *si, int32_t bs) {
    memset(w->seen, 0, (size_t)w->max_reqs);
    for (int32_t i = 0; i < bs; i++) {
        const int64_t s = sgl_sdk_index_at(si, i);
        if (s < -1 || s > INT32_MAX) {
            lin_set_err(w, "%s: batch.state_indices[%d] = %" PRId64 "; expected -1 (padding) or a slot 0..%d", w->name,
                        i, s, w->max_reqs - 1);
            return SGL_ATTN_E_INVALID;
        }
        if (s >= w->max_reqs) { /* a caller-owned layer's slot; a layer on the pool refuses it */
            if (w->pool_over_i < 0) {
                w->pool_over_i = i;
                w->pool_over_v = s;
            }
            continue;
        }
        if (s >= 0 && w->seen[s]++) {
            lin_set_err(w, "%s: batch.state_indices[%d] = %" PRId64 " names a slot another request of the batch "
                        "already uses", w->name, i, s);
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}

int lin_plan(lin_inst *w, const sgl_attn_batch *b, int32_t bs, int32_t T, int32_t mode) {
    w->planned = 0;
    if (!b || b->struct_size < SGL_ATTN_BATCH_SIZE_V1_0) {
        lin_set_err(w, "%s: init_forward_metadata: batch is NULL or older than ABI 1.0 (struct_size %u)", w->name,
                    b ? b->struct_size : 0u);
        return SGL_ATTN_E_INVALID;
    }
    const char *unserved = lin_unserved_batch(b);
    if (unserved) {
        lin_set_err(w, "%s: init_forward_metadata: %s is set (ABI 1.2): the linear layers do not serve it", w->name,
                    unserved);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    w->stream = b->stream;
    /* The first error a plan kernel of an earlier batch met (its batch was
     * skipped where bad): the record is mapped host memory, read with no sync
     * once that kernel has run. */
    sgl_gpu_fault f;
    if (sgl_sdk_cuda_fault_take_raw(&w->fault, b->stream, &f)) {
        const int32_t e[4] = {f.code, (int32_t)f.pos, (int32_t)(uint32_t)(uint64_t)f.value,
                              (int32_t)(uint32_t)((uint64_t)f.value >> 32)};
        return lin_report_device_err(w, e, f.hi, "init_forward_metadata (an earlier batch or state_batch)");
    }
    w->pool_over_i = -1;
    const int32_t tpr = b->tokens_per_req > 0 ? b->tokens_per_req : 1;
    if (mode == SGL_ATTN_MODE_IDLE) {
        w->mode = mode;
        w->bs = w->T = 0;
        w->tpr = 1;
        w->planned = 1;
        return SGL_ATTN_OK;
    }
    if (mode != SGL_ATTN_MODE_EXTEND && mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_TARGET_VERIFY) {
        lin_set_err(w, "%s: batch.forward_mode = %d; expected idle, extend, decode or verify", w->name, mode);
        return SGL_ATTN_E_INVALID;
    }
    if (bs < 0 || bs > w->max_reqs) {
        lin_set_err(w, "%s: batch.batch_size = %d; expected 0..%d (create's max_reqs)", w->name, bs, w->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (T < 0 || T > w->max_tokens) {
        lin_set_err(w, "%s: batch.num_tokens = %d; expected 0..%d (create's max_tokens)", w->name, T, w->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    const int ext = mode == SGL_ATTN_MODE_EXTEND;
    if (!ext && (int64_t)bs * tpr != T) {
        lin_set_err(w, "%s: batch.num_tokens = %d; expected batch_size * tokens_per_req = %d * %d", w->name, T, bs, tpr);
        return SGL_ATTN_E_INVALID;
    }
    int rc, si_host = 0, el_host = 0, ep_host = 0;
    if ((rc = lin_check_index(b->state_indices, "batch.state_indices", w->device, bs, &si_host, w->err,
                              sizeof w->err))) {
        if (!b->state_indices)
            lin_set_err(w, "%s: batch.state_indices is NULL; a hybrid wrapper needs each request's slot in its state "
                        "pool ([bs] int32/int64, -1 = padding)", w->name);
        return rc;
    }
    if (ext && ((rc = lin_check_index(b->extend_seq_lens, "batch.extend_seq_lens", w->device, bs, &el_host, w->err,
                                      sizeof w->err)) ||
                (rc = lin_check_index(b->extend_prefix_lens, "batch.extend_prefix_lens", w->device, bs, &ep_host,
                                      w->err, sizeof w->err))))
        return rc;
    if (si_host && (rc = check_slots(w, b->state_indices, bs))) return rc;
    if (ext) {
        const DLTensor *el = el_host ? b->extend_seq_lens
                             : sgl_sdk_host_index(b->extend_seq_lens_cpu, bs) ? b->extend_seq_lens_cpu : NULL;
        const DLTensor *ep = ep_host ? b->extend_prefix_lens
                             : sgl_sdk_host_index(b->extend_prefix_lens_cpu, bs) ? b->extend_prefix_lens_cpu : NULL;
        if ((rc = check_lengths(w, b, bs, T, el, ep))) return rc;
    }
    cudaError_t e = cudaSetDevice(w->device);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (e == cudaSuccess) e = cudaStreamIsCapturing((cudaStream_t)b->stream, &cap);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        sgl_sdk_cuda_format_error(w->err, sizeof w->err,
                                  "init_forward_metadata: cudaSetDevice / cudaStreamIsCapturing", (int)e);
        return SGL_ATTN_E_DEVICE;
    }
    const int capturing = cap != cudaStreamCaptureStatusNone;
    lin_plan_args pa;
    memset(&pa, 0, sizeof pa);
    pa.d = lin_plan_ptrs(w);
    if ((rc = stage_index(w, b->state_indices, bs, 0, si_host, capturing, &pa.state_indices, b->stream,
                          "batch.state_indices")) ||
        (ext && (rc = stage_index(w, b->extend_seq_lens, bs, 1, el_host, capturing, &pa.ext_lens, b->stream,
                                  "batch.extend_seq_lens"))) ||
        (ext && (rc = stage_index(w, b->extend_prefix_lens, bs, 2, ep_host, capturing, &pa.ext_prefix, b->stream,
                                  "batch.extend_prefix_lens"))))
        return rc;
    pa.mode = mode;
    pa.bs = bs;
    pa.T = T;
    pa.tpr = ext ? 1 : tpr;
    pa.max_reqs = w->max_reqs;
    pa.chunk = LIN_CHUNK;
    pa.verify = mode == SGL_ATTN_MODE_TARGET_VERIFY;
    /* the previous plan's slot past the pool matters once a layer of its batch used the pool */
    pa.check_over = w->graph_replaying ? w->graph_pool_fwd : w->pool_fwd;
    w->pool_fwd = 0;
    if (w->graph_hook) {
        pa.pad_bs = w->graph_max_bs;
        pa.pad_T = w->graph_max_tokens;
    }
    pa.fault = w->fault.dev;
    w->plan_si = pa.state_indices;
    w->plan_capturing = capturing;
    w->plan_graph = capturing || (w->graph_hook && !w->graph_replaying);
    if (capturing) w->graph_pool_fwd = 0;
    int ce = lin_launch_plan(&pa, b->stream);
    if (ce) {
        sgl_sdk_cuda_format_error(w->err, sizeof w->err, "init_forward_metadata: plan kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    w->mode = mode;
    w->bs = bs;
    w->T = T;
    w->tpr = ext ? 1 : tpr;
    if (w->sync_check && !capturing && w->graph_replaying == 0) {
        int32_t he[4] = {0, 0, 0, 0}, ho[4] = {0, 0, 0, 0};
        e = cudaMemcpyAsync(he, pa.d.err, sizeof he, cudaMemcpyDeviceToHost, (cudaStream_t)b->stream);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(ho, pa.d.over, sizeof ho, cudaMemcpyDeviceToHost, (cudaStream_t)b->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)b->stream);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            sgl_sdk_cuda_format_error(w->err, sizeof w->err, "init_forward_metadata: reading the plan's checks",
                                      (int)e);
            return SGL_ATTN_E_DEVICE;
        }
        if (he[0]) {
            sgl_gpu_fault f2; /* reported here: not again at the next call */
            (void)sgl_sdk_cuda_fault_take_raw(&w->fault, b->stream, &f2);
            return lin_report_device_err(w, he, 0, "init_forward_metadata");
        }
        if (ho[0] && w->pool_over_i < 0) { /* known here: a layer on the pool refuses at once */
            w->pool_over_i = ho[1];
            w->pool_over_v = (int64_t)(((uint64_t)(uint32_t)ho[3] << 32) | (uint32_t)ho[2]);
        }
    }
    if (pa.verify) {
        w->verify_n = bs;
        w->verify_steps = tpr;
        w->verify_kept = 0;
    }
    w->planned = 1;
    return SGL_ATTN_OK;
}

int lin_init_forward_metadata(sgl_attn_backend *bb, const sgl_attn_batch *batch) {
    lin_inst *w = (lin_inst *)bb;
    w->err[0] = 0;
    int rc = lin_plan(w, batch, batch ? batch->batch_size : 0, batch ? batch->num_tokens : 0,
                      batch ? batch->forward_mode : 0);
    if (rc) return rc;
    int (*f)(sgl_attn_backend *, const sgl_attn_batch *) = LIN_INNER_OP(w, init_forward_metadata);
    if (f && (rc = f(w->inner, batch))) return lin_inner_failed(w, rc, "init_forward_metadata");
    return SGL_ATTN_OK;
}

/* Every buffer was sized at create for the largest batch: nothing to allocate. */
int lin_init_graph_state(sgl_attn_backend *bb, int32_t max_bs, int32_t max_num_tokens) {
    lin_inst *w = (lin_inst *)bb;
    w->err[0] = 0;
    if (max_bs < 1 || max_bs > w->max_reqs || max_num_tokens < 1 || max_num_tokens > w->max_tokens) {
        lin_set_err(w, "%s: init_graph_state: max_bs %d, max_num_tokens %d; expected 1..%d requests and 1..%d tokens "
                    "(create's limits)", w->name, max_bs, max_num_tokens, w->max_reqs, w->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    w->graph_max_bs = max_bs;
    w->graph_max_tokens = max_num_tokens;
    w->graph_verify_tpr = 0;
    w->graph_verify_kept = 0;
    int (*f)(sgl_attn_backend *, int32_t, int32_t) = LIN_INNER_OP(w, init_graph_state);
    int rc = f ? f(w->inner, max_bs, max_num_tokens) : SGL_ATTN_OK;
    return rc ? lin_inner_failed(w, rc, "init_graph_state") : SGL_ATTN_OK;
}

/* Capture and replay plan into the same device buffers the captured kernels
 * read; the grids were fixed by the captured batch size.  Replay never
 * synchronises (the kernels still never go out of bounds). */
static int graph_meta(lin_inst *w, const sgl_attn_graph_args *g, int replay) {
    w->err[0] = 0;
    const char *call = replay ? "init_forward_metadata_replay" : "init_forward_metadata_capture";
    if (!g || !g->batch) {
        lin_set_err(w, "%s: %s: graph args or their batch is NULL", w->name, call);
        return SGL_ATTN_E_INVALID;
    }
    if (w->graph_max_bs == 0) {
        lin_set_err(w, "%s: %s: init_graph_state was not called", w->name, call);
        return SGL_ATTN_E_STATE;
    }
    if (g->batch_size < 0 || g->num_tokens < 0 || g->batch_size > w->graph_max_bs ||
        g->num_tokens > w->graph_max_tokens) {
        lin_set_err(w, "%s: %s: batch_size %d / num_tokens %d: expected 0..%d / 0..%d (init_graph_state's)", w->name,
                    call, g->batch_size, g->num_tokens, w->graph_max_bs, w->graph_max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    const int verify = g->forward_mode == SGL_ATTN_MODE_TARGET_VERIFY;
    const int32_t tpr = g->batch->tokens_per_req > 0 ? g->batch->tokens_per_req : 1;
    if (verify && replay && !w->graph_verify_tpr) {
        lin_set_err(w, "%s: %s: forward_mode target_verify, but no verify batch was captured since "
                    "init_graph_state", w->name, call);
        return SGL_ATTN_E_STATE;
    }
    if (verify && w->graph_verify_tpr && tpr != w->graph_verify_tpr) {
        lin_set_err(w, "%s: %s: batch.tokens_per_req = %d: the verify graphs were captured with %d (the captured "
                    "kernels step and keep that many tokens per request; one tokens_per_req per init_graph_state)",
                    w->name, call, tpr, w->graph_verify_tpr);
        return SGL_ATTN_E_STATE;
    }
    w->graph_replaying = replay;
    w->graph_hook = 1;
    int rc = lin_plan(w, g->batch, g->batch_size, g->num_tokens, g->forward_mode);
    w->graph_replaying = 0;
    w->graph_hook = 0;
    if (rc) return rc;
    if (verify && !replay) w->graph_verify_tpr = tpr;
    /* a replayed verify ran its layers without forward calls: what the captures kept stands for them */
    if (verify && replay) w->verify_kept = w->graph_verify_kept;
    int (*f)(sgl_attn_backend *, const sgl_attn_graph_args *) =
        replay ? LIN_INNER_OP(w, init_forward_metadata_replay) : LIN_INNER_OP(w, init_forward_metadata_capture);
    if (f && (rc = f(w->inner, g))) return lin_inner_failed(w, rc, replay ? "graph replay" : "graph capture");
    return SGL_ATTN_OK;
}

int lin_graph_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) { return graph_meta((lin_inst *)b, g, 0); }
int lin_graph_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) { return graph_meta((lin_inst *)b, g, 1); }
