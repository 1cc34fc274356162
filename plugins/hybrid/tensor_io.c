/* tensor_io.c - DLTensor checks and dtype conversion for the hybrid wrappers.
 * Inputs may be f32, f16, bf16 or f64; compute is f32 or f64, so every read
 * and write goes through these loops (row at a time, never per element). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hyb.h"

const char *hyb_dtype_name(DLDataType t) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return "float32";
    case SGL_ATTN_DT_F16: return "float16";
    case SGL_ATTN_DT_BF16: return "bfloat16";
    case SGL_ATTN_DT_F64: return "float64";
    case SGL_ATTN_DT_FP8_E4M3: return "fp8_e4m3";
    default: break;
    }
    if (t.code == kDLInt && t.bits == 32 && t.lanes == 1) return "int32";
    if (t.code == kDLInt && t.bits == 64 && t.lanes == 1) return "int64";
    return "unknown dtype";
}

static int loadable(DLDataType t) {
    uint32_t b = sgl_attn_dtype_bit(t);
    return b == SGL_ATTN_DT_F32 || b == SGL_ATTN_DT_F16 || b == SGL_ATTN_DT_BF16 ||
           b == SGL_ATTN_DT_F64;
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

static void shape_str(char *dst, size_t n, int ndim, const int64_t *shape) {
    size_t at = 0;
    dst[0] = 0;
    for (int i = 0; i < ndim && at + 24 < n; i++) {
        int k = snprintf(dst + at, n - at, "%s%" PRId64, i ? ", " : "[", shape[i]);
        if (k < 0) break;
        at += (size_t)k;
    }
    if (at + 2 < n) snprintf(dst + at, n - at, "%s", ndim ? "]" : "[]");
}

int hyb_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape,
                     char *err, size_t n) {
    char got[160], want[160];
    if (!t) {
        hyb_str(err, n, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data || !t->shape) {
        hyb_str(err, n, "%s has no data or no shape", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
        hyb_str(err, n, "%s is on device type %d; the CPU hybrid wrappers read host memory "
                        "(kDLCPU)", what, (int)t->device.device_type);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (!loadable(t->dtype)) {
        hyb_str(err, n, "%s has dtype %s; expected float32, float16, bfloat16 or float64", what,
                hyb_dtype_name(t->dtype));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int bad = t->ndim != ndim;
    for (int i = 0; !bad && i < ndim; i++)
        if (shape[i] >= 0 && t->shape[i] != shape[i]) bad = 1;
    if (bad) {
        shape_str(got, sizeof got, t->ndim > 0 && t->ndim < 8 ? t->ndim : 0, t->shape);
        shape_str(want, sizeof want, ndim, shape);
        hyb_str(err, n, "%s has shape %s; expected %s", what, got, want);
        return SGL_ATTN_E_INVALID;
    }
    if (!compact(t)) {
        hyb_str(err, n, "%s is strided; the hybrid wrappers read compact row-major tensors", what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int hyb_index_check(const DLTensor *t, const char *what, int64_t min_len, char *err, size_t n) {
    if (!t || !t->data || !t->shape) {
        hyb_str(err, n, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    int ok_type = t->dtype.code == kDLInt && t->dtype.lanes == 1 &&
                  (t->dtype.bits == 32 || t->dtype.bits == 64);
    if (!ok_type) {
        hyb_str(err, n, "%s has dtype %s; expected int32 or int64", what, hyb_dtype_name(t->dtype));
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim < 1 || t->shape[0] < min_len) {
        hyb_str(err, n, "%s has %" PRId64 " entries; expected at least %" PRId64, what,
                t->ndim >= 1 ? t->shape[0] : (int64_t)0, min_len);
        return SGL_ATTN_E_INVALID;
    }
    if (!compact(t)) {
        hyb_str(err, n, "%s is strided; expected a compact tensor", what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int64_t hyb_index_get(const DLTensor *t, int64_t i) {
    const char *base = (const char *)t->data + t->byte_offset;
    if (t->dtype.bits == 32) return ((const int32_t *)base)[i];
    return ((const int64_t *)base)[i];
}

/* ---------------------------------------------------- half conversions */

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (au < 0x38800000u) { /* subnormal or zero in f16 */
        if (au < 0x33000000u) return (uint16_t)sign;
        uint32_t e = au >> 23, man = (au & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((au >> 13) - ((127 - 15) << 10));
    uint32_t rem = au & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

/* ------------------------------------------------------- row transfers */

#define BASE(t) ((char *)(t)->data + (t)->byte_offset)

#define DEFINE_LOAD(NAME, RT)                                                          \
    void NAME(const DLTensor *t, int64_t at, RT *dst, int64_t n) {                      \
        const char *b = BASE(t);                                                       \
        switch (sgl_attn_dtype_bit(t->dtype)) {                                        \
        case SGL_ATTN_DT_F32: {                                                        \
            const float *s = (const float *)b + at;                                    \
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)s[i];                         \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F64: {                                                        \
            const double *s = (const double *)b + at;                                  \
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)s[i];                         \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_BF16: {                                                       \
            const uint16_t *s = (const uint16_t *)b + at;                              \
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)bf16_to_f32(s[i]);            \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F16: {                                                        \
            const uint16_t *s = (const uint16_t *)b + at;                              \
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)f16_to_f32(s[i]);             \
            break;                                                                     \
        }                                                                              \
        default:                                                                       \
            for (int64_t i = 0; i < n; i++) dst[i] = 0; /* refused by the checks */    \
        }                                                                              \
    }

#define DEFINE_STORE(NAME, RT)                                                         \
    void NAME(DLTensor *t, int64_t at, const RT *src, int64_t n) {                      \
        char *b = BASE(t);                                                             \
        switch (sgl_attn_dtype_bit(t->dtype)) {                                        \
        case SGL_ATTN_DT_F32: {                                                        \
            float *d = (float *)b + at;                                                \
            for (int64_t i = 0; i < n; i++) d[i] = (float)src[i];                      \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F64: {                                                        \
            double *d = (double *)b + at;                                              \
            for (int64_t i = 0; i < n; i++) d[i] = (double)src[i];                     \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_BF16: {                                                       \
            uint16_t *d = (uint16_t *)b + at;                                          \
            for (int64_t i = 0; i < n; i++) d[i] = f32_to_bf16((float)src[i]);         \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F16: {                                                        \
            uint16_t *d = (uint16_t *)b + at;                                          \
            for (int64_t i = 0; i < n; i++) d[i] = f32_to_f16((float)src[i]);          \
            break;                                                                     \
        }                                                                              \
        default: break;                                                                \
        }                                                                              \
    }

DEFINE_LOAD(hyb_load_f32, float)
DEFINE_LOAD(hyb_load_f64, double)
DEFINE_STORE(hyb_store_f32, float)
DEFINE_STORE(hyb_store_f64, double)

void hyb_zero(DLTensor *t, int64_t at, int64_t n) {
    size_t esz = (size_t)t->dtype.bits / 8;
    memset(BASE(t) + (size_t)at * esz, 0, (size_t)n * esz);
}
