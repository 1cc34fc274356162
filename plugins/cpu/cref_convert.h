/* cref_convert.h - element conversions between the dtypes cpu_ref reads and
 * writes.  Written so that loops over them vectorise: bf16 -> f32 is a shift,
 * f16 -> f32 is a shift and one multiply with a select for Inf/NaN.  Stores
 * round to nearest even, NaN stays NaN. */
#ifndef CREF_CONVERT_H
#define CREF_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "sgl_attn_abi.h"

static inline float cref_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t cref_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float cref_bf16_to_f32(uint16_t h) { return cref_bits_f32((uint32_t)h << 16); }

static inline uint16_t cref_f32_to_bf16(float f) {
    uint32_t u = cref_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Exponent and mantissa moved into f32 position, then rebiased by a multiply
 * by 2^112, which is exact for normals and subnormals alike. */
static inline float cref_f16_to_f32(uint16_t h) {
    uint32_t em = (uint32_t)h & 0x7fffu;
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t r = cref_f32_bits(cref_bits_f32(em << 13) * 0x1p112f);
    r = em >= 0x7c00u ? ((em << 13) | 0x7f800000u) : r;
    return cref_bits_f32(r | sign);
}

static inline uint16_t cref_f32_to_f16(float f) {
    uint32_t u = cref_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u >= 0x7f800000u) return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (u < 0x38800000u) {                                     /* f16 subnormal or zero */
        float a = cref_bits_f32(u) * 0x1p24f;         /* units of 2^-24 */
        float r = (a + 0x1p23f) - 0x1p23f;                     /* round to nearest even */
        return (uint16_t)(sign | (uint16_t)r);
    }
    u += 0xfffu + ((u >> 13) & 1u);
    u -= 0x38000000u; /* exponent bias 127 -> 15 */
    return (uint16_t)(sign | (uint16_t)(u >> 13));
}

/* f64 -> f32 -> narrower: double rounding can differ from a direct rounding
 * only on exact ties of the f32 value, which the pool never needs. */
static inline void cref_store_f(void *dst, int64_t i, uint32_t dt, double v) {
    switch (dt) {
    case SGL_ATTN_DT_F32: ((float *)dst)[i] = (float)v; break;
    case SGL_ATTN_DT_F16: ((uint16_t *)dst)[i] = cref_f32_to_f16((float)v); break;
    case SGL_ATTN_DT_BF16: ((uint16_t *)dst)[i] = cref_f32_to_bf16((float)v); break;
    default: ((double *)dst)[i] = v; break;
    }
}

static inline double cref_load_f(const void *src, int64_t i, uint32_t dt) {
    switch (dt) {
    case SGL_ATTN_DT_F32: return ((const float *)src)[i];
    case SGL_ATTN_DT_F16: return cref_f16_to_f32(((const uint16_t *)src)[i]);
    case SGL_ATTN_DT_BF16: return cref_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const double *)src)[i];
    }
}

static inline size_t cref_dt_size(uint32_t dt) {
    return dt == SGL_ATTN_DT_F64 ? 8 : dt == SGL_ATTN_DT_F32 ? 4 : 2;
}

#endif
