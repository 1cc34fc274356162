/* lin_check.c - checks of the tensors the kernels read, with messages that
 * name the tensor, what it is and what was expected.  Pure C (no CUDA). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lin.h"

const void *lin_data(const DLTensor *t) { return (const char *)t->data + t->byte_offset; }

int lin_dt_of(DLDataType t) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return LIN_DT_F32;
    case SGL_ATTN_DT_F16: return LIN_DT_F16;
    case SGL_ATTN_DT_BF16: return LIN_DT_BF16;
    default: return -1;
    }
}

const char *lin_dtype_name(DLDataType t) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return "float32";
    case SGL_ATTN_DT_F16: return "float16";
    case SGL_ATTN_DT_BF16: return "bfloat16";
    case SGL_ATTN_DT_F64: return "float64";
    case SGL_ATTN_DT_FP8_E4M3: return "float8_e4m3";
    default: break;
    }
    if (t.code == kDLInt && t.lanes == 1 && t.bits == 32) return "int32";
    if (t.code == kDLInt && t.lanes == 1 && t.bits == 64) return "int64";
    return "an unsupported dtype";
}

static void shape_str(char *dst, size_t n, int ndim, const int64_t *shape) {
    size_t at = 0;
    int k = snprintf(dst, n, "[");
    at = k > 0 ? (size_t)k : 0;
    for (int i = 0; i < ndim && at + 2 < n; i++) {
        if (shape[i] < 0) k = snprintf(dst + at, n - at, "%s*", i ? ", " : "");
        else k = snprintf(dst + at, n - at, "%s%" PRId64, i ? ", " : "", shape[i]);
        if (k < 0) break;
        at += (size_t)k;
    }
    if (at + 2 < n) snprintf(dst + at, n - at, "]");
}

static int compact(const DLTensor *t) {
    if (!t->strides) return 1;
    int64_t want = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != want) return 0;
        want *= t->shape[i];
    }
    return 1;
}

/* Where the kernels can read: the device's memory, managed, or pinned host. */
static int device_ok(const DLTensor *t, int device, const char *what, char *err, size_t n) {
    const int ty = (int)t->device.device_type;
    if (ty == kDLCUDAHost) return 1;
    if ((ty == kDLCUDA || ty == kDLCUDAManaged) && t->device.device_id == device) return 1;
    if (ty == kDLCUDA || ty == kDLCUDAManaged)
        lin_str(err, n, "%s is on CUDA device %d; this instance runs on device %d", what, (int)t->device.device_id,
                device);
    else
        lin_str(err, n, "%s is in memory of DLPack device type %d (%s); the CUDA wrappers read CUDA device memory",
                what, ty, ty == kDLCPU ? "kDLCPU, pageable host memory" : "not CUDA");
    return 0;
}

int lin_check_float(const DLTensor *t, const char *what, int device, int ndim, const int64_t *shape, char *err,
                    size_t n) {
    char got[160], want[160];
    if (!t) {
        lin_str(err, n, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data || !t->shape || t->ndim < 0 || t->ndim > 8) {
        lin_str(err, n, "%s has no data, no shape or ndim %d", what, t->ndim);
        return SGL_ATTN_E_INVALID;
    }
    if (!device_ok(t, device, what, err, n)) return SGL_ATTN_E_UNSUPPORTED;
    if (lin_dt_of(t->dtype) < 0) {
        lin_str(err, n, "%s has dtype %s; expected float32, float16 or bfloat16", what, lin_dtype_name(t->dtype));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int bad = t->ndim != ndim;
    for (int i = 0; !bad && i < ndim; i++)
        if (shape[i] >= 0 && t->shape[i] != shape[i]) bad = 1;
    if (bad) {
        shape_str(got, sizeof got, t->ndim, t->shape);
        shape_str(want, sizeof want, ndim, shape);
        lin_str(err, n, "%s has shape %s; expected %s", what, got, want);
        return SGL_ATTN_E_INVALID;
    }
    if (!compact(t)) {
        lin_str(err, n, "%s is strided; the CUDA wrappers read compact row-major tensors", what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if ((uintptr_t)lin_data(t) % (size_t)(t->dtype.bits / 8)) {
        lin_str(err, n, "%s data + byte_offset is not aligned to its %d-byte elements", what, t->dtype.bits / 8);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int lin_check_index(const DLTensor *t, const char *what, int device, int64_t min_len, int *on_host, char *err,
                    size_t n) {
    *on_host = 0;
    if (!t || !t->data || !t->shape) {
        lin_str(err, n, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->dtype.code != kDLInt || t->dtype.lanes != 1 || (t->dtype.bits != 32 && t->dtype.bits != 64)) {
        lin_str(err, n, "%s has dtype %s; expected int32 or int64", what, lin_dtype_name(t->dtype));
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim < 1 || t->shape[0] < min_len) {
        lin_str(err, n, "%s has %" PRId64 " entries; expected at least %" PRId64, what,
                t->ndim >= 1 ? t->shape[0] : (int64_t)0, min_len);
        return SGL_ATTN_E_INVALID;
    }
    if (!compact(t)) {
        lin_str(err, n, "%s is strided; expected a compact tensor", what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if ((uintptr_t)lin_data(t) % (size_t)(t->dtype.bits / 8)) {
        lin_str(err, n, "%s data + byte_offset is not aligned to its %d-byte elements", what, t->dtype.bits / 8);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type == kDLCPU) {
        *on_host = 1;
        return SGL_ATTN_OK;
    }
    return device_ok(t, device, what, err, n) ? SGL_ATTN_OK : SGL_ATTN_E_UNSUPPORTED;
}

int64_t lin_index_at(const DLTensor *t, int64_t i) {
    const void *b = lin_data(t);
    return t->dtype.bits == 32 ? ((const int32_t *)b)[i] : ((const int64_t *)b)[i];
}
