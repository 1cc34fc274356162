/* cuda_fault.c - an instance's index fault record (sdk_cuda.h, gpu_fault.h):
 * allocated at create, read with no sync at the metadata calls. */
#include "sdk_cuda.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

int sgl_sdk_cuda_fault_alloc(sgl_sdk_cuda_fault *f, char *err, size_t err_size) {
    memset(f, 0, sizeof *f);
    void *h = NULL;
    cudaError_t ce = cudaHostAlloc(&h, sizeof(sgl_gpu_fault), cudaHostAllocMapped);
    if (ce == cudaSuccess) {
        memset(h, 0, sizeof(sgl_gpu_fault));
        f->host = (sgl_gpu_fault *)h;
        ce = cudaHostGetDevicePointer((void **)&f->dev.rec, h, 0);
    }
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&f->dev.claim, sizeof(int32_t));
    if (ce == cudaSuccess) ce = cudaMemset(f->dev.claim, 0, sizeof(int32_t));
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        sgl_sdk_cuda_format_error(err, err_size, "create: the index fault record (cudaHostAlloc mapped, cudaMalloc)",
                                  (int)ce);
        sgl_sdk_cuda_fault_free(f);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

void sgl_sdk_cuda_fault_free(sgl_sdk_cuda_fault *f) {
    if (!f) return;
    if (f->host) (void)cudaFreeHost(f->host);
    if (f->dev.claim) (void)cudaFree(f->dev.claim);
    memset(f, 0, sizeof *f);
}

const char *sgl_sdk_fault_tensor_name(int tensor) {
    static const char *const names[SGL_FAULT_COUNT_] = {
        "index tensor", "out_cache_loc",   "req_to_token", "req_pool_indices", "seq_lens",
        "extend_seq_lens", "encoder_lens", "prefix_lens",  "state_indices", "topk_indices",
        "page_table",      "layer.slot_map", "cu_seqlens_q", "cu_seqlens_k",
        "mask_indptr",     "encoder_out_cache_loc"};
    return tensor > 0 && tensor < SGL_FAULT_COUNT_ ? names[tensor] : names[0];
}

int sgl_sdk_cuda_fault_take_raw(sgl_sdk_cuda_fault *f, void *stream, sgl_gpu_fault *out) {
    if (!f || !f->host) return 0;
    const int32_t tensor = f->host->tensor;
    if (tensor == SGL_FAULT_NONE) return 0;
    /* Under stream capture the claim's reset would become a graph node: the
     * record waits for the next call outside a capture. */
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing((cudaStream_t)stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return 0;
    }
    atomic_thread_fence(memory_order_acquire); /* the fields were written before `tensor` */
    *out = *(const sgl_gpu_fault *)f->host;
    out->tensor = tensor;
    f->host->tensor = SGL_FAULT_NONE;
    atomic_thread_fence(memory_order_seq_cst);
    (void)cudaMemsetAsync(f->dev.claim, 0, sizeof(int32_t), (cudaStream_t)stream);
    return 1;
}

int sgl_sdk_cuda_fault_take(sgl_sdk_cuda_fault *f, void *stream, const char *call, char *buf, size_t size) {
    sgl_gpu_fault r;
    if (!sgl_sdk_cuda_fault_take_raw(f, stream, &r)) return 0;
    const int tensor = r.tensor;
    if (buf && size) {
        if (tensor == SGL_FAULT_ENCODER_OUT_CACHE_LOC && r.code == SGL_FAULT_CODE_LENGTH)
            snprintf(buf, size,
                     "%s: a kernel of an earlier batch found %s with %" PRId64 " entries: expected %" PRId64
                     "; that batch's output is not valid",
                     call, sgl_sdk_fault_tensor_name(tensor), r.value, r.lo);
        else if (tensor == SGL_FAULT_ENCODER_OUT_CACHE_LOC)
            snprintf(buf, size,
                     "%s: a kernel of an earlier batch met %s[%" PRId64 "] = %" PRId64 ": expected %" PRId64
                     " (the slot its request's req_to_token row or page table gives that encoder column); the "
                     "cross layers saved the encoder K/V at the slots given and that batch's output is not valid",
                     call, sgl_sdk_fault_tensor_name(tensor), r.pos, r.value, r.lo);
        else if ((tensor == SGL_FAULT_REQ_TO_TOKEN || tensor == SGL_FAULT_PAGE_TABLE) && r.pos >= 0)
            snprintf(buf, size,
                     "%s: a kernel of an earlier batch met %s element %" PRId64 " = %" PRId64
                     ": expected %" PRId64 "..%" PRId64 "; it wrote nothing through it and that batch's output is "
                     "not valid",
                     call, sgl_sdk_fault_tensor_name(tensor), r.pos, r.value, r.lo, r.hi - 1);
        else
            snprintf(buf, size,
                     "%s: a kernel of an earlier batch met %s[%" PRId64 "] = %" PRId64 ": expected %" PRId64
                     "..%" PRId64 "; it wrote nothing through it and that batch's output is not valid",
                     call, sgl_sdk_fault_tensor_name(tensor), r.pos, r.value, r.lo, r.hi - 1);
    }
    return 1;
}
