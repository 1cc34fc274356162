/* hip_runtime.c - the HIP runtime as hip_attn uses it: error text, device
 * query, and the device_ops the harness stages tensors with (hipMalloc
 * addresses; every op returns 0 or a hipError_t, named by error_string). */
#include <stdio.h>
#include <string.h>

#include <hip/hip_runtime_api.h>

#include "hip_internal.h"

void ha_format_error(char *dst, size_t size, const char *what, int code) {
    const hipError_t e = (hipError_t)code;
    const char *name = hipGetErrorName(e), *text = hipGetErrorString(e);
    if (text && name && strcmp(text, name))
        snprintf(dst, size, "%s: %s (%d): %s", what, name, code, text);
    else
        snprintf(dst, size, "%s: %s (%d)%s", what, name ? name : "hipError", code,
                 e == hipErrorNoDevice ? ": no AMD GPU the ROCm runtime can use" : "");
}

int ha_device_count(char *why, size_t why_size) {
    int n = 0;
    hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess) {
        ha_format_error(why, why_size, "hipGetDeviceCount", (int)e);
        (void)hipGetLastError();
        return 0;
    }
    if (n <= 0) snprintf(why, why_size, "hipGetDeviceCount: 0 devices");
    return n > 0 ? n : 0;
}

int ha_arch_supported(const char *arch) {
    return !strcmp(arch, "gfx90a") || !strcmp(arch, "gfx940") || !strcmp(arch, "gfx1030");
}

int ha_device_query(int device, ha_device_info *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    hipDeviceProp_t p;
    memset(&p, 0, sizeof p);
    hipError_t e = hipGetDeviceProperties(&p, device);
    if (e != hipSuccess) {
        char what[64];
        snprintf(what, sizeof what, "hipGetDeviceProperties(%d)", device);
        ha_format_error(err, err_size, what, (int)e);
        return SGL_ATTN_E_DEVICE;
    }
    snprintf(out->name, sizeof out->name, "%.95s", p.name);
    snprintf(out->arch, sizeof out->arch, "%.47s", p.gcnArchName);
    char *colon = strchr(out->arch, ':'); /* "gfx90a:sramecc+:xnack-" */
    if (colon) *colon = 0;
    out->mem_bytes = p.totalGlobalMem;
    out->cu_count = p.multiProcessorCount;
    return SGL_ATTN_OK;
}

static int ho_alloc(int32_t device, size_t bytes, void **ptr) {
    if (!ptr) return (int)hipErrorInvalidValue;
    *ptr = NULL;
    hipError_t e = hipSetDevice(device);
    if (e == hipSuccess) e = hipMalloc(ptr, bytes ? bytes : 1);
    return (int)e;
}

static int ho_free(int32_t device, void *ptr) {
    if (!ptr) return 0;
    hipError_t e = hipSetDevice(device);
    return (int)(e == hipSuccess ? hipFree(ptr) : e);
}

static int ho_copy(int32_t device, void *dst, const void *src, size_t bytes, hipMemcpyKind kind) {
    if (!bytes) return 0;
    if (!dst || !src) return (int)hipErrorInvalidValue;
    hipError_t e = hipSetDevice(device);
    return (int)(e == hipSuccess ? hipMemcpy(dst, src, bytes, kind) : e);
}

static int ho_to_device(int32_t device, void *dst, const void *src, size_t bytes) {
    return ho_copy(device, dst, src, bytes, hipMemcpyHostToDevice);
}

static int ho_to_host(int32_t device, void *dst, const void *src, size_t bytes) {
    return ho_copy(device, dst, src, bytes, hipMemcpyDeviceToHost);
}

static int ho_sync(int32_t device, void *stream) {
    hipError_t e = hipSetDevice(device);
    if (e != hipSuccess) return (int)e;
    return (int)(stream ? hipStreamSynchronize((hipStream_t)stream) : hipDeviceSynchronize());
}

static int ho_stream_create(int32_t device, void **stream) {
    if (!stream) return (int)hipErrorInvalidValue;
    *stream = NULL;
    hipError_t e = hipSetDevice(device);
    if (e == hipSuccess) e = hipStreamCreateWithFlags((hipStream_t *)stream, hipStreamNonBlocking);
    return (int)e;
}

static int ho_stream_destroy(int32_t device, void *stream) {
    if (!stream) return 0;
    hipError_t e = hipSetDevice(device);
    return (int)(e == hipSuccess ? hipStreamDestroy((hipStream_t)stream) : e);
}

static const char *ho_error_string(int code) { return hipGetErrorName((hipError_t)code); }

const sgl_attn_device_ops ha_device_ops = {
    .struct_size = sizeof(sgl_attn_device_ops),
    .alloc = ho_alloc,
    .free = ho_free,
    .copy_to_device = ho_to_device,
    .copy_to_host = ho_to_host,
    .synchronize = ho_sync,
    .stream_create = ho_stream_create,
    .stream_destroy = ho_stream_destroy,
    .error_string = ho_error_string,
};
