/* mla_instance.c - what every part of a cuda_mla instance reports with: its
 * error text, a CUDA call's failure in the runtime's words, its device made
 * current, the kernels' names.  A leaf: it calls nothing else of the plugin,
 * so create, planning and the forward all use it without calling each other. */
#include <stdarg.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "mla_backend.h"

const char *const mla_kernel_names[4] = {"auto", "simple", "mma", "wide"}; /* MLA_KERNEL_* */

const char *mla_kernel_name(int32_t k) { return k >= 0 && k <= MLA_KERNEL_WIDE ? mla_kernel_names[k] : "?"; }

int mla_set_error(mla_backend *b, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    return rc;
}

int mla_cuda_fail(mla_backend *b, const char *what, int code) {
    cudaError_t e = (cudaError_t)code;
    (void)cudaGetLastError();
    sgl_sdk_cuda_format_error(b->err, sizeof b->err, what, (int)e);
    return e == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
}

int mla_ensure_device(mla_backend *b) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == b->device) return SGL_ATTN_OK;
    cudaError_t e = cudaSetDevice(b->device);
    return e == cudaSuccess ? SGL_ATTN_OK : mla_cuda_fail(b, "cudaSetDevice", e);
}
