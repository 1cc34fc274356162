/* cuda_error.c - runtime errors as text (sdk_cuda.h). */
#include "sdk_cuda.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

const char *sgl_sdk_cuda_error_text(int code) {
    const char *s = cudaGetErrorString((cudaError_t)code);
    return s ? s : "unknown CUDA error";
}

void sgl_sdk_cuda_format_error(char *buf, size_t size, const char *what, int code) {
    if (!buf || size == 0) return;
    const char *name = cudaGetErrorName((cudaError_t)code);
    snprintf(buf, size, "%s: %s (%d): %s", what ? what : "CUDA", name ? name : "cudaError?", code,
             sgl_sdk_cuda_error_text(code));
}
