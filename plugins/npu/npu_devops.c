/* npu_devops.c - device memory through the ACL runtime.  Device pointers are
 * aclrtMalloc addresses (plain device virtual addresses: data + k is valid).
 * Every op returns 0 or an ACL error code, which error_string names; without
 * a loadable CANN every op answers ACL_ERROR_UNINITIALIZE. */
#include <stdio.h>

#include "npu_internal.h"

static const npu_rt *rt_or_null(void) {
    char why[256];
    return npu_runtime(why, sizeof why);
}

static int no_alloc(int32_t device, size_t bytes, void **ptr) {
    if (!ptr) return ACL_ERROR_INVALID_PARAM;
    *ptr = NULL;
    const npu_rt *rt = rt_or_null();
    if (!rt) return ACL_ERROR_UNINITIALIZE;
    aclError e = rt->aclrtSetDevice(device);
    if (e) return e;
    return rt->aclrtMalloc(ptr, bytes ? bytes : 1, ACL_MEM_MALLOC_HUGE_FIRST);
}

static int no_free(int32_t device, void *ptr) {
    (void)device;
    if (!ptr) return ACL_SUCCESS;
    const npu_rt *rt = rt_or_null();
    return rt ? rt->aclrtFree(ptr) : ACL_ERROR_UNINITIALIZE;
}

static int copy(int32_t device, void *dst, const void *src, size_t bytes, int kind) {
    if (!bytes) return ACL_SUCCESS;
    if (!dst || !src) return ACL_ERROR_INVALID_PARAM;
    const npu_rt *rt = rt_or_null();
    if (!rt) return ACL_ERROR_UNINITIALIZE;
    aclError e = rt->aclrtSetDevice(device);
    return e ? e : rt->aclrtMemcpy(dst, bytes, src, bytes, kind);
}

static int no_to_device(int32_t device, void *dst, const void *src, size_t bytes) {
    return copy(device, dst, src, bytes, ACL_MEMCPY_HOST_TO_DEVICE);
}

static int no_to_host(int32_t device, void *dst, const void *src, size_t bytes) {
    return copy(device, dst, src, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
}

static int no_sync(int32_t device, void *stream) {
    const npu_rt *rt = rt_or_null();
    if (!rt) return ACL_ERROR_UNINITIALIZE;
    aclError e = rt->aclrtSetDevice(device);
    if (e) return e;
    return stream ? rt->aclrtSynchronizeStream(stream) : rt->aclrtSynchronizeDevice();
}

static int no_stream_create(int32_t device, void **stream) {
    if (!stream) return ACL_ERROR_INVALID_PARAM;
    *stream = NULL;
    const npu_rt *rt = rt_or_null();
    if (!rt) return ACL_ERROR_UNINITIALIZE;
    aclError e = rt->aclrtSetDevice(device);
    return e ? e : rt->aclrtCreateStream(stream);
}

static int no_stream_destroy(int32_t device, void *stream) {
    (void)device;
    if (!stream) return ACL_SUCCESS;
    const npu_rt *rt = rt_or_null();
    return rt ? rt->aclrtDestroyStream(stream) : ACL_ERROR_UNINITIALIZE;
}

const sgl_attn_device_ops npu_device_ops = {
    .struct_size = sizeof(sgl_attn_device_ops),
    .alloc = no_alloc,
    .free = no_free,
    .copy_to_device = no_to_device,
    .copy_to_host = no_to_host,
    .synchronize = no_sync,
    .stream_create = no_stream_create,
    .stream_destroy = no_stream_destroy,
    .error_string = npu_error_name,
};
