/* xpu_devops.c - device memory for the harness and engines, in the device's
 * shared context: SVM allocations or cl_mem buffers (xpu_internal.h says
 * which when).  Every op returns 0 or an OpenCL error code (cl_int), which
 * error_string names. */
#include <stdio.h>
#include <string.h>

#include "xpu_internal.h"

/* Buffer mode: [0, bytes) inside the cl_mem.  SVM mode: [p, p + bytes)
 * inside one of device_ops' allocations. */
static int extent_ok(xpu_device *d, const void *p, size_t bytes) {
    if (d->svm) return xpu_svm_contains(d, p, bytes);
    size_t size = 0;
    if (clGetMemObjectInfo((cl_mem)p, CL_MEM_SIZE, sizeof size, &size, NULL) != CL_SUCCESS) return 0;
    return bytes <= size;
}

static int xo_alloc(int32_t device, size_t bytes, void **ptr) {
    if (!ptr) return CL_INVALID_VALUE;
    *ptr = NULL;
    xpu_device *d;
    char err[256];
    if (xpu_device_acquire(device, &d, err, sizeof err) != SGL_ATTN_OK) return CL_INVALID_DEVICE;
    /* OpenCL refuses empty buffers; an empty tensor still gets a handle. */
    size_t n = bytes ? bytes : 1;
    if (d->svm) {
        void *p = clSVMAlloc(d->ctx, CL_MEM_READ_WRITE, n, 0);
        if (!p) {
            xpu_device_release(d);
            return CL_MEM_OBJECT_ALLOCATION_FAILURE;
        }
        if (!xpu_svm_record(d, p, n)) {
            clSVMFree(d->ctx, p);
            xpu_device_release(d);
            return CL_OUT_OF_HOST_MEMORY;
        }
        *ptr = p;
        return CL_SUCCESS; /* the device reference now belongs to the allocation */
    }
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, n, NULL, &e);
    if (e != CL_SUCCESS) {
        xpu_device_release(d);
        return e;
    }
    *ptr = (void *)m;
    return CL_SUCCESS;
}

static int xo_free(int32_t device, void *ptr) {
    if (!ptr) return CL_SUCCESS;
    xpu_device *d = xpu_device_held(device);
    if (!d) return CL_INVALID_DEVICE;
    cl_int e = CL_SUCCESS;
    if (d->svm) {
        if (!xpu_svm_forget(d, ptr)) return CL_INVALID_VALUE; /* not ours: leave it alone */
        clSVMFree(d->ctx, ptr);
    } else {
        e = clReleaseMemObject((cl_mem)ptr);
    }
    xpu_device_release(d);
    return e;
}

static int copy(int32_t device, void *dst, const void *src, size_t bytes, int to_device) {
    xpu_device *d = xpu_device_held(device);
    if (!d) return CL_INVALID_DEVICE;
    if (!bytes) return CL_SUCCESS;
    if (!dst || !src) return CL_INVALID_VALUE;
    if (!extent_ok(d, to_device ? dst : src, bytes)) return CL_INVALID_VALUE;
    if (d->svm) return clEnqueueSVMMemcpy(d->queue, CL_TRUE, dst, src, bytes, 0, NULL, NULL);
    if (to_device) return clEnqueueWriteBuffer(d->queue, (cl_mem)dst, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    return clEnqueueReadBuffer(d->queue, (cl_mem)src, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
}

static int xo_to_device(int32_t device, void *dst, const void *src, size_t bytes) {
    return copy(device, dst, src, bytes, 1);
}

static int xo_to_host(int32_t device, void *dst, const void *src, size_t bytes) {
    return copy(device, dst, src, bytes, 0);
}

static int xo_sync(int32_t device, void *stream) {
    if (stream) return clFinish((cl_command_queue)stream);
    xpu_device *d = xpu_device_held(device);
    return d ? clFinish(d->queue) : CL_SUCCESS; /* nothing was ever queued */
}

static int xo_stream_create(int32_t device, void **stream) {
    if (!stream) return CL_INVALID_VALUE;
    *stream = NULL;
    xpu_device *d;
    char err[256];
    if (xpu_device_acquire(device, &d, err, sizeof err) != SGL_ATTN_OK) return CL_INVALID_DEVICE;
    cl_int e = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(d->ctx, d->id, 0, &e);
    if (e != CL_SUCCESS) {
        xpu_device_release(d);
        return e;
    }
    *stream = (void *)q;
    return CL_SUCCESS;
}

static int xo_stream_destroy(int32_t device, void *stream) {
    if (!stream) return CL_SUCCESS;
    xpu_device *d = xpu_device_held(device);
    if (!d) return CL_INVALID_DEVICE;
    cl_int e = clReleaseCommandQueue((cl_command_queue)stream);
    xpu_device_release(d);
    return e;
}

static const char *xo_error_string(int code) { return xpu_cl_error_name(code); }

const sgl_attn_device_ops xpu_device_ops = {
    .struct_size = sizeof(sgl_attn_device_ops),
    .alloc = xo_alloc,
    .free = xo_free,
    .copy_to_device = xo_to_device,
    .copy_to_host = xo_to_host,
    .synchronize = xo_sync,
    .stream_create = xo_stream_create,
    .stream_destroy = xo_stream_destroy,
    .error_string = xo_error_string,
};
