/* cuda_device_ops.c - sgl_attn_device_ops over the CUDA runtime (sdk_cuda.h). */
#include "sdk_cuda.h"

#include <cuda_runtime_api.h>


static int set_device(int32_t device) {
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) (void)cudaGetLastError();
    return (int)e;
}

static int op_alloc(int32_t device, size_t bytes, void **ptr) {
    if (!ptr) return SGL_ATTN_E_INVALID;
    *ptr = NULL;
    int e = set_device(device);
    if (e) return e;
    if (bytes == 0) return 0;
    cudaError_t r = cudaMalloc(ptr, bytes);
    if (r != cudaSuccess) {
        (void)cudaGetLastError();
        *ptr = NULL;
    }
    return (int)r;
}

static int op_free(int32_t device, void *ptr) {
    if (!ptr) return 0;
    int e = set_device(device);
    if (e) return e;
    return (int)cudaFree(ptr);
}

static int op_copy_to_device(int32_t device, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return 0;
    if (!dst || !src) return SGL_ATTN_E_INVALID;
    int e = set_device(device);
    if (e) return e;
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

static int op_copy_to_host(int32_t device, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return 0;
    if (!dst || !src) return SGL_ATTN_E_INVALID;
    int e = set_device(device);
    if (e) return e;
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

static int op_synchronize(int32_t device, void *stream) {
    int e = set_device(device);
    if (e) return e;
    if (stream) return (int)cudaStreamSynchronize((cudaStream_t)stream);
    return (int)cudaDeviceSynchronize();
}

static int op_stream_create(int32_t device, void **stream) {
    if (!stream) return SGL_ATTN_E_INVALID;
    *stream = NULL;
    int e = set_device(device);
    if (e) return e;
    cudaStream_t s = NULL;
    cudaError_t r = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (r == cudaSuccess) *stream = (void *)s;
    return (int)r;
}

static int op_stream_destroy(int32_t device, void *stream) {
    if (!stream) return 0;
    int e = set_device(device);
    if (e) return e;
    return (int)cudaStreamDestroy((cudaStream_t)stream);
}

static const char *op_error_string(int code) {
    switch (code) {
    case SGL_ATTN_E_INVALID: return "invalid argument (NULL pointer)";
    case SGL_ATTN_E_UNSUPPORTED: return "unsupported";
    case SGL_ATTN_E_NOMEM: return "out of memory";
    case SGL_ATTN_E_DEVICE: return "device error";
    default: break;
    }
    if (code < 0) return "sglattn error";
    return sgl_sdk_cuda_error_text(code);
}

const sgl_attn_device_ops sgl_sdk_cuda_device_ops = {
    .struct_size = sizeof(sgl_attn_device_ops),
    .alloc = op_alloc,
    .free = op_free,
    .copy_to_device = op_copy_to_device,
    .copy_to_host = op_copy_to_host,
    .synchronize = op_synchronize,
    .stream_create = op_stream_create,
    .stream_destroy = op_stream_destroy,
    .error_string = op_error_string,
};
