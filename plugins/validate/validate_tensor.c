/* validate_tensor.c - one DLTensor against what the call needs: rank, shape,
 * dtype, data pointer, strides, device.  Reads only the header fields, in an
 * order that never dereferences what an earlier check found bad. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

const char *vl_dtype_name(DLDataType t, char *buf, size_t size) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32:
        return "f32";
    case SGL_ATTN_DT_F16:
        return "f16";
    case SGL_ATTN_DT_BF16:
        return "bf16";
    case SGL_ATTN_DT_F64:
        return "f64";
    case SGL_ATTN_DT_FP8_E4M3:
        return "fp8_e4m3";
    default:
        break;
    }
    if (t.code == kDLInt && t.lanes == 1 && (t.bits == 32 || t.bits == 64))
        return t.bits == 32 ? "int32" : "int64";
    snprintf(buf, size, "{code %u, bits %u, lanes %u}", (unsigned)t.code, (unsigned)t.bits,
             (unsigned)t.lanes);
    return buf;
}

/* "f32|bf16" for a bit set. */
static void dtype_set_name(uint32_t set, char *buf, size_t size) {
    static const char *const names[] = {"f32", "f16", "bf16", "f64", "fp8_e4m3"};
    size_t used = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(set & (1u << i))) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? "|" : "", names[i]);
        if (n < 0 || (size_t)n >= size - used) return;
        used += (size_t)n;
    }
    if (!used) snprintf(buf, size, "(none)");
}

static void shape_name(const DLTensor *t, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < t->ndim; i++) {
        int n = snprintf(buf + used, size - used, "%s%lld", i ? ", " : "[", (long long)t->shape[i]);
        if (n < 0 || (size_t)n >= size - used) return;
        used += (size_t)n;
    }
    snprintf(buf + used, size - used, "%s", t->ndim ? "]" : "[]");
}

static const char *device_name(int32_t type) {
    switch (type) {
    case kDLCPU:
        return "cpu";
    case kDLCUDA:
        return "cuda";
    case kDLCUDAHost:
        return "cuda_host";
    case kDLOpenCL:
        return "opencl";
    case kDLROCM:
        return "rocm";
    case kDLROCMHost:
        return "rocm_host";
    case kDLExtDev:
        return "ext_dev";
    case kDLCUDAManaged:
        return "cuda_managed";
    default:
        return "unknown";
    }
}

int vl_host_readable(const DLTensor *t) {
    int32_t d = (int32_t)t->device.device_type;
    return d == kDLCPU || d == kDLCUDAHost || d == kDLROCMHost;
}

static int check_strides(vl_ctx *c, const DLTensor *t, const vl_tspec *s) {
    if (!t->strides) return SGL_ATTN_OK;
    int64_t span = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->strides[i] < 0)
            return vl_fail(c, "%s->strides[%d] = %lld is negative", s->name, i,
                           (long long)t->strides[i]);
        int64_t step;
        if (t->shape[i] > 0 && (__builtin_mul_overflow(t->strides[i], t->shape[i] - 1, &step) ||
                                __builtin_add_overflow(span, step, &span)))
            return vl_fail(c, "%s: strides times shape overflow", s->name);
    }
    if (!s->written) return SGL_ATTN_OK;
    /* An output must not alias itself: order the dims by stride, innermost
     * first (on equal strides the later, row-major inner, dim), and ask that
     * each one steps past the whole extent of the one inside it. */
    int order[3];
    for (int i = 0; i < t->ndim; i++)
        order[i] = t->ndim - 1 - i;
    for (int i = 1; i < t->ndim; i++)
        for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t need = 1;
    for (int k = 0; k < t->ndim; k++) {
        int d = order[k];
        if (t->shape[d] <= 1) continue;
        if (t->strides[d] < need)
            return vl_fail(c,
                           "%s->strides[%d] = %lld makes elements of this output overlap "
                           "(needs >= %lld)",
                           s->name, d, (long long)t->strides[d], (long long)need);
        if (__builtin_mul_overflow(t->strides[d], t->shape[d], &need)) need = INT64_MAX;
    }
    return SGL_ATTN_OK;
}

static int check_device(vl_ctx *c, const DLTensor *t, const vl_tspec *s) {
    int32_t type = (int32_t)t->device.device_type;
    if (s->host) {
        if (!vl_host_readable(t))
            return vl_fail(c, "%s is on device %s; a host mirror must be in host memory", s->name,
                           device_name(type));
        return SGL_ATTN_OK;
    }
    if (!c->device_type) {
        c->device_type = type;
        if (type != kDLCPU && t->device.device_id != c->device_id)
            return vl_fail(c, "%s is on %s:%d; the backend runs on device %d", s->name,
                           device_name(type), (int)t->device.device_id, (int)c->device_id);
        c->device_id = t->device.device_id;
        return SGL_ATTN_OK;
    }
    if (type != c->device_type || t->device.device_id != c->device_id)
        return vl_fail(c, "%s is on %s:%d while the call's other tensors are on %s:%d", s->name,
                       device_name(type), (int)t->device.device_id, device_name(c->device_type),
                       (int)c->device_id);
    return SGL_ATTN_OK;
}

int vl_check_tensor(vl_ctx *c, const DLTensor *t, const vl_tspec *s) {
    char a[96], b[96];
    if (t->ndim != s->ndim)
        return vl_fail(c, "%s has %d dimensions; expected %d %s", s->name, (int)t->ndim, s->ndim,
                       s->dims);
    if (t->ndim > 0 && !t->shape) return vl_fail(c, "%s->shape is NULL", s->name);
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || (s->shape[i] != VL_ANY && t->shape[i] != s->shape[i])) {
            shape_name(t, a, sizeof a);
            char want[96];
            size_t used = 0;
            want[0] = 0;
            for (int j = 0; j < s->ndim; j++) {
                int n = s->shape[j] == VL_ANY
                            ? snprintf(want + used, sizeof want - used, "%s*", j ? ", " : "[")
                            : snprintf(want + used, sizeof want - used, "%s%lld", j ? ", " : "[",
                                       (long long)s->shape[j]);
                if (n < 0 || (size_t)n >= sizeof want - used) break;
                used += (size_t)n;
            }
            if (used + 1 < sizeof want) snprintf(want + used, sizeof want - used, "]");
            return vl_fail(c, "%s has shape %s; expected %s %s", s->name, a, want, s->dims);
        }
    }
    uint32_t bit = sgl_attn_dtype_bit(t->dtype);
    if (s->dtypes) {
        if (!(bit & s->dtypes)) {
            dtype_set_name(s->dtypes, b, sizeof b);
            return vl_fail(c, "%s has dtype %s; expected %s", s->name,
                           vl_dtype_name(t->dtype, a, sizeof a), b);
        }
    } else if (!(t->dtype.code == kDLInt && t->dtype.lanes == 1 &&
                 (t->dtype.bits == 32 || t->dtype.bits == 64))) {
        return vl_fail(c, "%s has dtype %s; expected int32 or int64", s->name,
                       vl_dtype_name(t->dtype, a, sizeof a));
    }
    int64_t numel = 1;
    for (int i = 0; i < t->ndim; i++)
        if (__builtin_mul_overflow(numel, t->shape[i], &numel))
            return vl_fail(c, "%s: the shape's element count overflows", s->name);
    if (numel > 0 && !t->data) return vl_fail(c, "%s->data is NULL", s->name);
    uint64_t elem = (t->dtype.bits + 7u) / 8u;
    if (elem > 1 && numel > 0 && ((uintptr_t)t->data + t->byte_offset) % elem)
        return vl_fail(c, "%s: data + byte_offset (%llu) is not aligned to its %llu-byte elements",
                       s->name, (unsigned long long)t->byte_offset, (unsigned long long)elem);
    int rc = check_strides(c, t, s);
    if (rc) return rc;
    return check_device(c, t, s);
}

static const char *base(const DLTensor *t) {
    return (const char *)t->data + t->byte_offset;
}

static int64_t load(const DLTensor *t, int64_t off) {
    if (t->dtype.bits == 32) {
        int32_t v;
        memcpy(&v, base(t) + off * 4, sizeof v);
        return v;
    }
    int64_t v;
    memcpy(&v, base(t) + off * 8, sizeof v);
    return v;
}

int64_t vl_idx1(const DLTensor *t, int64_t i) {
    return load(t, i * (t->strides ? t->strides[0] : 1));
}

int64_t vl_idx2(const DLTensor *t, int64_t r, int64_t col) {
    int64_t s0 = t->strides ? t->strides[0] : t->shape[1];
    int64_t s1 = t->strides ? t->strides[1] : 1;
    return load(t, r * s0 + col * s1);
}
