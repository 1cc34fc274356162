/* validate_tensor.c - one DLTensor against what the call needs: the SDK's
 * checks, then the device rules of a call; and the error sink every check
 * writes through (vl_fail). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "validate_internal.h"

int vl_fail(vl_ctx *c, const char *fmt, ...) {
    int n = snprintf(c->err, c->err_size, "%s: ", c->call);
    if (n < 0 || (size_t)n >= c->err_size) return SGL_ATTN_E_INVALID;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->err_size - (size_t)n, fmt, ap);
    va_end(ap);
    return SGL_ATTN_E_INVALID;
}

static int check_device(vl_ctx *c, const DLTensor *t, const vl_tspec *s) {
    int32_t type = (int32_t)t->device.device_type;
    if (s->host) {
        if (!sgl_sdk_host_readable(t))
            return vl_fail(c, "%s is on device %s; a host mirror must be in host memory", s->name,
                           sgl_sdk_device_name(type));
        return SGL_ATTN_OK;
    }
    if (!c->device_type) {
        c->device_type = type;
        if (type != kDLCPU && t->device.device_id != c->device_id)
            return vl_fail(c, "%s is on %s:%d; the backend runs on device %d", s->name,
                           sgl_sdk_device_name(type), (int)t->device.device_id, (int)c->device_id);
        c->device_id = t->device.device_id;
        return SGL_ATTN_OK;
    }
    if (type != c->device_type || t->device.device_id != c->device_id)
        return vl_fail(c, "%s is on %s:%d while the call's other tensors are on %s:%d", s->name,
                       sgl_sdk_device_name(type), (int)t->device.device_id, sgl_sdk_device_name(c->device_type),
                       (int)c->device_id);
    return SGL_ATTN_OK;
}

/* The SDK's checks (rank, extents, dtype, data, alignment, strides, overlap
 * of outputs), then where the tensor lives, which is the call's business: one
 * device for all its tensors, host memory for a mirror.  Every violation is
 * SGL_ATTN_E_INVALID: the call breaks what the inner claimed. */
int vl_check_tensor(vl_ctx *c, const DLTensor *t, const vl_tspec *s) {
    const sgl_sdk_tensor_spec spec = {s->name, s->dims, s->ndim, {s->shape[0], s->shape[1], s->shape[2], 0},
                                      s->dtypes, 0, -1, (s->written ? SGL_SDK_T_WRITTEN : 0u) | s->sdk_flags, 0};
    char msg[VL_ERR_SIZE];
    if (sgl_sdk_check_tensor(t, &spec, msg, sizeof msg)) return vl_fail(c, "%s", msg);
    return check_device(c, t, s);
}

/* The bytes a (checked) tensor spans: [lo, hi) from its data pointer. */
static void span(const DLTensor *t, uintptr_t *lo, uintptr_t *hi) {
    const int64_t esz = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    int64_t neg = 0, pos = 0, numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        numel *= t->shape[d];
        if (!t->strides) continue;
        int64_t reach = (t->shape[d] - 1) * t->strides[d];
        if (reach < 0) neg += reach;
        else pos += reach;
    }
    if (!t->strides) pos = numel - 1;
    uintptr_t base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    *lo = base + (uintptr_t)(neg * esz);
    *hi = base + (uintptr_t)((pos + 1) * esz);
    if (numel == 0) *hi = *lo;
}

int vl_overlap(const DLTensor *a, const DLTensor *b) {
    if (!a || !b || a->device.device_type != b->device.device_type || a->device.device_id != b->device.device_id)
        return 0;
    uintptr_t alo, ahi, blo, bhi;
    span(a, &alo, &ahi);
    span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

