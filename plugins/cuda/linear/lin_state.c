/* lin_state.c - the state pool API: clear a slot, copy one slot to another
 * (prefix reuse), and commit the accepted draft step after verification.  The
 * ABI gives these no stream: they run on the stream of the last batch planned
 * (the engine's stream), so they are ordered with the forwards around them. */
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
        int32_t *d = (int32_t *)(w->dev + w->L.stage);
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
        if (he[0]) return lin_report_device_err(w, he, "state_commit");
    }
    return SGL_ATTN_OK;
}
