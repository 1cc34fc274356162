/* device.c - the memory a plugin reads: host memory, or its device through
 * the plugin's device_ops (alloc, copies, synchronize, streams). */
#include <stdio.h>

#include "harness.h"

DLDevice hdev_dl(const hdev *d) {
    DLDevice r = {kDLCPU, 0};
    if (!d || !d->ops) return r;
    switch (d->platform) {
    case SGL_ATTN_PLATFORM_CUDA: r.device_type = kDLCUDA; break;
    case SGL_ATTN_PLATFORM_HIP: r.device_type = kDLROCM; break;
    case SGL_ATTN_PLATFORM_XPU: r.device_type = kDLOpenCL; break;
    case SGL_ATTN_PLATFORM_NPU: r.device_type = kDLExtDev; break;
    default: r.device_type = kDLCPU; break;
    }
    r.device_id = d->device;
    return r;
}

static const char *code_text(const hdev *d, int rc) {
    const char *s = d->ops && d->ops->error_string ? d->ops->error_string(rc) : NULL;
    return s ? s : "no error text";
}

int hdev_open(hdev *d, const sgl_attn_device_ops *ops, int32_t device, int32_t platform, char *err, size_t err_size) {
    d->ops = ops;
    d->device = device;
    d->platform = platform;
    d->stream = NULL;
    if (ops && ops->stream_create) {
        int rc = ops->stream_create(device, &d->stream);
        if (rc) {
            snprintf(err, err_size, "device %d: stream_create failed with %d (%s)", device, rc, code_text(d, rc));
            d->stream = NULL;
            return -1;
        }
    }
    return 0;
}

void hdev_close(hdev *d) {
    if (d->ops && d->ops->stream_destroy && d->stream) d->ops->stream_destroy(d->device, d->stream);
    d->stream = NULL;
}

int hdev_sync(const hdev *d, char *err, size_t err_size) {
    if (!d->ops || !d->ops->synchronize) return 0;
    int rc = d->ops->synchronize(d->device, d->stream);
    if (rc) {
        snprintf(err, err_size, "device %d: synchronize failed with %d (%s)", d->device, rc, code_text(d, rc));
        return -1;
    }
    return 0;
}
