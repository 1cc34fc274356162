/* sdk_half.h - float16 and bfloat16 to and from float32, for plugins that
 * convert on the CPU.  Written so that loops over them vectorise: bf16 -> f32
 * is a shift, f16 -> f32 a shift and one multiply with a select for Inf/NaN.
 * Stores round to nearest even; NaN stays NaN.  Header only. */
#ifndef SGL_SDK_HALF_H
#define SGL_SDK_HALF_H

#include <stdint.h>
#include <string.h>

static inline float sgl_sdk_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t sgl_sdk_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float sgl_sdk_bf16_to_f32(uint16_t h) { return sgl_sdk_bits_f32((uint32_t)h << 16); }

static inline uint16_t sgl_sdk_f32_to_bf16(float f) {
    uint32_t u = sgl_sdk_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Exponent and mantissa moved into f32 position, then rebiased by a multiply
 * by 2^112, which is exact for normals and subnormals alike. */
static inline float sgl_sdk_f16_to_f32(uint16_t h) {
    uint32_t em = (uint32_t)h & 0x7fffu;
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t r = sgl_sdk_f32_bits(sgl_sdk_bits_f32(em << 13) * 0x1p112f);
    r = em >= 0x7c00u ? ((em << 13) | 0x7f800000u) : r;
    return sgl_sdk_bits_f32(r | sign);
}

static inline uint16_t sgl_sdk_f32_to_f16(float f) {
    uint32_t u = sgl_sdk_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u >= 0x7f800000u) return (uint16_t)(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (u < 0x38800000u) {                                     /* f16 subnormal or zero */
        float a = sgl_sdk_bits_f32(u) * 0x1p24f;               /* units of 2^-24 */
        float r = (a + 0x1p23f) - 0x1p23f;                     /* round to nearest even */
        return (uint16_t)(sign | (uint16_t)r);
    }
    u += 0xfffu + ((u >> 13) & 1u);
    u -= 0x38000000u; /* exponent bias 127 -> 15 */
    return (uint16_t)(sign | (uint16_t)(u >> 13));
}

#endif
