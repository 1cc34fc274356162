/* tensor_io.c - dtype conversion for the hybrid wrappers, and the SDK's
 * tensor checks as they read tensors (host memory, compact).  Inputs may be
 * f32, f16, bf16 or f64; compute is f32 or f64, so every read and write goes
 * through these loops (row at a time, never per element). */
#include <string.h>

#include "hyb.h"
#include "sdk_half.h"

sgl_sdk_tensor_spec hyb_spec(const char *name, uint32_t dtypes, uint32_t flags, int ndim, int64_t s0, int64_t s1,
                             int64_t s2) {
    sgl_sdk_tensor_spec s = {name, NULL, ndim, {s0, s1, s2, 0}, dtypes, SGL_SDK_DEV_HOST, -1,
                             SGL_SDK_T_COMPACT | flags, 0};
    return s;
}

int hyb_index_check(hyb_inst *w, const DLTensor *t, const char *what, int64_t min_len) {
    const sgl_sdk_tensor_spec s = hyb_spec(what, 0, SGL_SDK_T_AT_LEAST, 1, min_len, 0, 0);
    return sgl_sdk_check_tensor(t, &s, w->err, sizeof w->err);
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
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)sgl_sdk_bf16_to_f32(s[i]);            \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F16: {                                                        \
            const uint16_t *s = (const uint16_t *)b + at;                              \
            for (int64_t i = 0; i < n; i++) dst[i] = (RT)sgl_sdk_f16_to_f32(s[i]);             \
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
            for (int64_t i = 0; i < n; i++) d[i] = sgl_sdk_f32_to_bf16((float)src[i]);         \
            break;                                                                     \
        }                                                                              \
        case SGL_ATTN_DT_F16: {                                                        \
            uint16_t *d = (uint16_t *)b + at;                                          \
            for (int64_t i = 0; i < n; i++) d[i] = sgl_sdk_f32_to_f16((float)src[i]);          \
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
