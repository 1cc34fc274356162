/* cref_convert.h - element loads and stores between the dtypes cpu_ref reads
 * and writes, over the SDK's half conversions (sdk_half.h). */
#ifndef CREF_CONVERT_H
#define CREF_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "cref_fp8.h"
#include "sdk_half.h"
#include "sgl_attn_abi.h"

/* f64 -> f32 -> narrower: double rounding can differ from a direct rounding
 * only on exact ties of the f32 value, which the pool never needs. */
static inline void cref_store_f(void *dst, int64_t i, uint32_t dt, double v) {
    switch (dt) {
    case SGL_ATTN_DT_F32: ((float *)dst)[i] = (float)v; break;
    case SGL_ATTN_DT_F16: ((uint16_t *)dst)[i] = sgl_sdk_f32_to_f16((float)v); break;
    case SGL_ATTN_DT_BF16: ((uint16_t *)dst)[i] = sgl_sdk_f32_to_bf16((float)v); break;
    case SGL_ATTN_DT_FP8_E4M3: ((uint8_t *)dst)[i] = cref_f64_to_e4m3_sat(v); break;
    case SGL_ATTN_DT_FP8_E5M2: ((uint8_t *)dst)[i] = cref_f64_to_e5m2_sat(v); break;
    default: ((double *)dst)[i] = v; break;
    }
}

static inline double cref_load_f(const void *src, int64_t i, uint32_t dt) {
    switch (dt) {
    case SGL_ATTN_DT_F32: return ((const float *)src)[i];
    case SGL_ATTN_DT_F16: return sgl_sdk_f16_to_f32(((const uint16_t *)src)[i]);
    case SGL_ATTN_DT_BF16: return sgl_sdk_bf16_to_f32(((const uint16_t *)src)[i]);
    case SGL_ATTN_DT_FP8_E4M3: return cref_e4m3_to_f64(((const uint8_t *)src)[i]);
    case SGL_ATTN_DT_FP8_E5M2: return cref_e5m2_to_f64(((const uint8_t *)src)[i]);
    default: return ((const double *)src)[i];
    }
}

static inline size_t cref_dt_size(uint32_t dt) {
    return dt == SGL_ATTN_DT_F64 ? 8 : dt == SGL_ATTN_DT_F32 ? 4 : (dt & (SGL_ATTN_DT_FP8_E4M3 | SGL_ATTN_DT_FP8_E5M2)) ? 1 : 2;
}

#endif
