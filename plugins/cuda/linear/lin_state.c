/* lin_state.c - the state pool API: clear a slot, copy one slot to another
 * (prefix reuse), and commit the accepted draft step after verification.  The
 * ABI gives these no stream: they run on the stream of the last batch planned
 * (the engine's stream), so they are ordered with the forwards around them.
 * ABI 1.2's state_batch does the four operations batched on index tensors,
 * on the pool or on one layer's caller-owned tensors, on the stream it is
 * given. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "lin.h"

static int slot_ok(lin_inst *w, int32_t slot, const char *what) {
    if (slot >= 0 && slot < w->max_reqs) return 1;
    lin_set_err(w, "%s: %s slot %d; expected 0..%d (create's max_reqs)", w->name, what, (int)slot, w->max_reqs - 1);
    return 0;
}

static int device_failed(lin_inst *w, cudaError_t e, const char *what) {
    (void)cudaGetLastError();
    char m[96];
    snprintf(m, sizeof m, "%s: %s", w->name, what);
    sgl_sdk_cuda_format_error(w->err, sizeof w->err, m, (int)e);
    return SGL_ATTN_E_DEVICE;
}

/* Pools are [layer][slot][elems]: one 2-D operation per pool covers a slot in
 * every layer (rows = layers, pitch = a layer's bytes). */
int lin_state_clear(sgl_attn_backend *b, int32_t slot) {
    lin_inst *w = (lin_inst *)b;
    w->err[0] = 0;
    if (!slot_ok(w, slot, "state_clear")) return SGL_ATTN_E_INVALID;
    const size_t esz = (size_t)w->d.esz, R = (size_t)w->max_reqs;
    const size_t off[2] = {w->L.conv, w->L.ssm};
    const int64_t el[2] = {w->d.conv_elems, w->d.ssm_elems};
    cudaError_t e = cudaSetDevice(w->device);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        if (!el[i] || !w->d.n_lin) continue;
        const size_t row = (size_t)el[i] * esz;
        e = cudaMemset2DAsync(w->dev + off[i] + (size_t)slot * row, R * row, 0, row, (size_t)w->d.n_lin,
                              (cudaStream_t)w->stream);
    }
    return e == cudaSuccess ? SGL_ATTN_OK : device_failed(w, e, "state_clear");
}

int lin_state_copy(sgl_attn_backend *b, int32_t src, int32_t dst) {
    lin_inst *w = (lin_inst *)b;
    w->err[0] = 0;
    if (!slot_ok(w, src, "state_copy source") || !slot_ok(w, dst, "state_copy destination"))
        return SGL_ATTN_E_INVALID;
    if (src == dst) return SGL_ATTN_OK;
    const size_t esz = (size_t)w->d.esz, R = (size_t)w->max_reqs;
    const size_t off[2] = {w->L.conv, w->L.ssm};
    const int64_t el[2] = {w->d.conv_elems, w->d.ssm_elems};
    cudaError_t e = cudaSetDevice(w->device);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        if (!el[i] || !w->d.n_lin) continue;
        const size_t row = (size_t)el[i] * esz;
        e = cudaMemcpy2DAsync(w->dev + off[i] + (size_t)dst * row, R * row, w->dev + off[i] + (size_t)src * row,
                              R * row, row, (size_t)w->d.n_lin, cudaMemcpyDeviceToDevice, (cudaStream_t)w->stream);
    }
    return e == cudaSuccess ? SGL_ATTN_OK : device_failed(w, e, "state_copy");
}

int lin_state_commit(sgl_attn_backend *b, const DLTensor *accepted) {
    lin_inst *w = (lin_inst *)b;
    w->err[0] = 0;
    if (!w->verify_kept) {
        lin_set_err(w, "%s: state_commit without a verify forward that kept intermediate states "
                    "(linear.keep_intermediate = 1)", w->name);
        return SGL_ATTN_E_STATE;
    }
    int on_host = 0;
    int rc = lin_check_index(accepted, "state_commit accepted_steps", w->device, w->verify_n, &on_host, w->err,
                             sizeof w->err);
    if (rc) return rc;
    lin_commit_args c;
    memset(&c, 0, sizeof c);
    cudaError_t e = cudaSetDevice(w->device);
    if (e != cudaSuccess) return device_failed(w, e, "state_commit: cudaSetDevice");
    if (on_host) { /* check all before changing any, as the CPU wrappers do */
        char name[64];
        snprintf(name, sizeof name, "%s: accepted_steps", w->name);
        if ((rc = sgl_sdk_check_index_range(accepted, name, w->verify_n, -1, w->verify_steps - 1,
                                            "-1 keeps, else the accepted step", w->err, sizeof w->err)))
            return rc;
        for (int32_t i = 0; i < w->verify_n; i++) w->host_stage[i] = (int32_t)sgl_sdk_index_at(accepted, i);
        int32_t *d = (int32_t *)(w->dev + w->L.stage) + (size_t)3 * (size_t)w->max_reqs; /* not the plan's half */
        if (w->verify_n &&
            (e = cudaMemcpyAsync(d, w->host_stage, (size_t)w->verify_n * sizeof(int32_t), cudaMemcpyHostToDevice,
                                 (cudaStream_t)w->stream)) != cudaSuccess)
            return device_failed(w, e, "state_commit: copying accepted_steps");
        c.accepted.p = d;
    } else {
        c.accepted.p = sgl_sdk_data(accepted);
        c.accepted.is64 = accepted->dtype.bits == 64;
    }
    const lin_plan_dev pl = lin_plan_ptrs(w);
    c.verify_slot = pl.verify_slot;
    c.err = pl.err;
    c.conv = w->dev + w->L.conv;
    c.ssm = w->dev + w->L.ssm;
    c.iconv = w->dev + w->L.iconv;
    c.issm = w->dev + w->L.issm;
    c.conv_elems = w->d.conv_elems;
    c.ssm_elems = w->d.ssm_elems;
    c.n = w->verify_n;
    c.steps = w->L.steps;
    c.layers = w->d.n_lin;
    c.slots = w->max_reqs;
    c.esz = w->d.esz;
    if ((e = cudaMemsetAsync(pl.err, 0, 4 * sizeof(int32_t), (cudaStream_t)w->stream)) != cudaSuccess)
        return device_failed(w, e, "state_commit: cudaMemsetAsync");
    int ce = lin_launch_commit(&c, w->stream);
    if (ce) return device_failed(w, (cudaError_t)ce, "state_commit: kernel launch");
    if (w->sync_check && !on_host) {
        int32_t he[4] = {0, 0, 0, 0};
        e = cudaMemcpyAsync(he, pl.err, sizeof he, cudaMemcpyDeviceToHost, (cudaStream_t)w->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)w->stream);
        if (e != cudaSuccess) return device_failed(w, e, "state_commit: reading the checks");
        if (he[0]) return lin_report_device_err(w, he, 0, "state_commit");
    }
    return SGL_ATTN_OK;
}

/* ---------------------------------------------------------- state_batch */

/* An index tensor of the batch: present when the op reads it (device, pinned
 * or pageable host memory), refused when set but unread. */
static int sb_index(lin_inst *w, const DLTensor *t, int needed, const char *pre, const char *field, int op,
                    int32_t count, int *on_host) {
    *on_host = 0;
    if (!needed) {
        if (!t) return SGL_ATTN_OK;
        lin_set_err(w, "%s%s is set; %s reads no %s (expected NULL)", pre, field, lin_sb_op_name(op), field);
        return SGL_ATTN_E_INVALID;
    }
    if (!t) {
        lin_set_err(w, "%s%s is NULL; %s needs [count] %s", pre, field, lin_sb_op_name(op), field);
        return SGL_ATTN_E_INVALID;
    }
    char name[96];
    snprintf(name, sizeof name, "%s%s", pre, field);
    return lin_check_index(t, name, w->device, count, on_host, w->err, sizeof w->err);
}

/* ops->state_batch (ABI 1.2): clear / copy / commit / track on index tensors,
 * on the wrapper's pool (args->state NULL: every own layer) or one layer's
 * caller-owned tensors, ordered on args->stream.  Index tensors all in host
 * memory are checked here with the CPU wrappers' messages and staged; any on
 * the device are checked by the check kernel, whose failure writes nothing
 * and is reported by the next metadata call (at once with sync_check). */
int lin_state_batch(sgl_attn_backend *b, const sgl_attn_state_batch_args *a) {
    lin_inst *w = (lin_inst *)b;
    char pre[64];
    snprintf(pre, sizeof pre, "%s state_batch: ", w->name);
    w->err[0] = 0;
    const size_t min_size = offsetof(sgl_attn_state_batch_args, stream) + sizeof a->stream;
    if (!a || a->struct_size < min_size) {
        lin_set_err(w, "%sargs are NULL or args->struct_size = %u is below the ABI 1.2 size %zu", pre,
                    a ? a->struct_size : 0u, min_size);
        return SGL_ATTN_E_INVALID;
    }
    const int op = a->op;
    if (op < SGL_ATTN_STATE_CLEAR || op > SGL_ATTN_STATE_TRACK) {
        lin_set_err(w, "%sop = %d; expected 1 (clear), 2 (copy), 3 (commit) or 4 (track)", pre, op);
        return SGL_ATTN_E_INVALID;
    }
    if (a->count < 0 || a->count > w->max_reqs) {
        lin_set_err(w, "%scount = %d; expected 0..%d (create's max_reqs: split larger batches)", pre, a->count,
                    w->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    const int has_src = op == SGL_ATTN_STATE_COPY || op == SGL_ATTN_STATE_TRACK;
    const int has_steps = op == SGL_ATTN_STATE_COMMIT || op == SGL_ATTN_STATE_TRACK;
    lin_sb_args s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.count = a->count;
    const size_t esz = (size_t)w->d.esz;
    const size_t cb = (size_t)w->d.conv_elems * esz, sb = (size_t)w->d.ssm_elems * esz;
    const char *where, *steps_where;
    if (!a->state) { /* the pool: [layer][slot][elems], [layer][slot][step][elems] */
        const size_t R = (size_t)w->max_reqs, S = (size_t)w->L.steps;
        if (has_steps && !S) {
            lin_set_err(w, "%sthe wrapper's pool keeps no intermediate states (model.spec_tokens = %d; they exist when "
                        "it is > 1)", pre, w->model.spec_tokens);
            return SGL_ATTN_E_INVALID;
        }
        s.slots = w->max_reqs;
        s.nsteps = S;
        s.layers = w->d.n_lin;
        const lin_sb_part conv = {w->dev + w->L.conv, w->dev + w->L.iconv, cb, R * cb, R * S * cb};
        const lin_sb_part ssm = {w->dev + w->L.ssm, w->dev + w->L.issm, sb, R * sb, R * S * sb};
        s.part[0] = conv;
        s.part[1] = ssm;
        where = "the wrapper's pool";
        steps_where = "the pool";
    } else { /* one layer's tensors: [S][elems], [S][steps][elems] */
        const sgl_attn_linear_io *io = a->state;
        if (io->struct_size < SGL_ATTN_LINEAR_IO_SIZE_V1_0) {
            lin_set_err(w, "%sstate->struct_size = %u; expected >= %u", pre, io->struct_size,
                        SGL_ATTN_LINEAR_IO_SIZE_V1_0);
            return SGL_ATTN_E_INVALID;
        }
        if (io->kind != w->d.kind) {
            lin_set_err(w, "%sstate->kind = %d; expected %d (%s)", pre, io->kind, w->d.kind,
                        sgl_sdk_lin_kind_name(w->d.kind));
            return SGL_ATTN_E_INVALID;
        }
        sgl_sdk_lin_state cs;
        if (!sgl_sdk_lin_state_of(io, &cs)) {
            lin_set_err(w, "%sstate names no state tensor (conv_state, ssm_state ...); pass NULL to act on the "
                        "wrapper's own pool", pre);
            return SGL_ATTN_E_INVALID;
        }
        int rc = lin_check_caller_state(&w->d, io, w->device, has_steps, pre, &cs, w->err, sizeof w->err);
        if (rc) return rc;
        s.slots = cs.slots;
        s.nsteps = has_steps ? cs.steps : 0;
        s.layers = 1;
        /* the caller's tensors: written */
        const lin_sb_part conv = {cs.conv ? (void *)sgl_sdk_data(cs.conv) : NULL,
                                  cs.iconv ? (void *)sgl_sdk_data(cs.iconv) : NULL, cb, 0, 0};
        const lin_sb_part ssm = {cs.ssm ? (void *)sgl_sdk_data(cs.ssm) : NULL,
                                 cs.issm ? (void *)sgl_sdk_data(cs.issm) : NULL, sb, 0, 0};
        s.part[0] = conv;
        s.part[1] = ssm;
        where = cs.conv ? "state->conv_state" : "state->ssm_state";
        steps_where = "state->intermediate_*_state";
    }
    int rc, h_dst = 0, h_src = 0, h_steps = 0;
    const int32_t n = a->count;
    if ((rc = sb_index(w, a->dst, 1, pre, "dst", op, n, &h_dst)) ||
        (rc = sb_index(w, a->src, has_src, pre, "src", op, n, &h_src)) ||
        (rc = sb_index(w, a->steps, has_steps, pre, "steps", op, n, &h_steps)))
        return rc;
    void *stream = a->stream;
    cudaError_t e = cudaSetDevice(w->device);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (e == cudaSuccess) e = cudaStreamIsCapturing((cudaStream_t)stream, &cap);
    if (e != cudaSuccess) return device_failed(w, e, "state_batch: cudaSetDevice / cudaStreamIsCapturing");
    const int any_host = h_dst || h_src || h_steps;
    if (any_host && cap != cudaStreamCaptureStatusNone) {
        lin_set_err(w, "%san index tensor is in pageable host memory; a stream under graph capture takes device "
                    "tensors only", pre);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int all_host = h_dst && (!has_src || h_src) && (!has_steps || h_steps);
    if (all_host) {
        const lin_sb_host hc = {op, n, a->dst, has_src ? a->src : NULL, has_steps ? a->steps : NULL, s.slots,
                                s.nsteps, pre, where, steps_where};
        if ((rc = lin_sb_check_host(&hc, w->sb_keys, w->err, sizeof w->err))) return rc;
        s.checked = 1;
    }
    /* host tensors: int32 copies in state_batch's half of the stage (dst, src, steps): the plan's half
     * may still be read by a caller-owned layer's forward of this batch */
    const DLTensor *ts[3] = {a->dst, has_src ? a->src : NULL, has_steps ? a->steps : NULL};
    const int host[3] = {h_dst, h_src, h_steps};
    lin_idx *ix[3] = {&s.dst, &s.src, &s.steps};
    for (int k = 0; k < 3; k++) {
        if (!ts[k]) continue;
        if (!host[k]) {
            ix[k]->p = sgl_sdk_data(ts[k]);
            ix[k]->is64 = ts[k]->dtype.bits == 64;
            continue;
        }
        int32_t *h = w->host_stage + (size_t)k * (size_t)w->max_reqs;
        for (int32_t i = 0; i < n; i++) {
            const int64_t v = sgl_sdk_index_at(ts[k], i); /* out of int32: -2 (refused by the check kernel) */
            h[i] = v < INT32_MIN || v > INT32_MAX ? -2 : (int32_t)v;
        }
        int32_t *d = (int32_t *)(w->dev + w->L.stage) + (size_t)(3 + k) * (size_t)w->max_reqs;
        if (n && (e = cudaMemcpyAsync(d, h, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice,
                                      (cudaStream_t)stream)) != cudaSuccess)
            return device_failed(w, e, "state_batch: copying a host index tensor");
        ix[k]->p = d;
        ix[k]->is64 = 0;
    }
    const lin_plan_dev pl = lin_plan_ptrs(w);
    s.ok = pl.over + 4;
    s.err = pl.err;
    s.fault = w->fault.dev;
    const int ce = lin_launch_state_batch(&s, stream);
    if (ce) return device_failed(w, (cudaError_t)ce, "state_batch: kernel launch");
    if (w->sync_check && !s.checked && n > 0 && cap == cudaStreamCaptureStatusNone) {
        int32_t he[4] = {0, 0, 0, 0};
        e = cudaMemcpyAsync(he, pl.err, sizeof he, cudaMemcpyDeviceToHost, (cudaStream_t)stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
        if (e != cudaSuccess) return device_failed(w, e, "state_batch: reading the checks");
        if (he[0]) {
            sgl_gpu_fault f; /* reported here: not again at the next call */
            (void)sgl_sdk_cuda_fault_take_raw(&w->fault, stream, &f);
            return lin_report_device_err(w, he, he[0] == LIN_ERR_SB_STEP ? s.nsteps : s.slots, "state_batch");
        }
    }
    return SGL_ATTN_OK;
}
