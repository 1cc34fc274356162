/* cref_fp8.h - fp8 e4m3 (OCP "fn": no infinities, max 448) as DSA's index
 * keys and an engine's fp8 KV pool store it, e5m2 (the KV pool's other fp8),
 * and DeepSeek's per-128 activation quantisation of index keys and of
 * FlashMLA's fp8 KV record. */
#ifndef CREF_FP8_H
#define CREF_FP8_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CREF_E4M3_MAX 448.0f
#define CREF_E5M2_MAX 57344.0

/* The exact value of an e4m3 byte (0x7f / 0xff are NaN). */
static inline double cref_e4m3_to_f64(uint8_t c) {
    const int e = (c >> 3) & 15, m = c & 7;
    double v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = m * 0x1p-9; /* subnormal: m * 2^-6 / 8 */
    else { /* (1 + m / 8) * 2^(e - 7), built as the double's bits: the loops decode every pool byte */
        const uint64_t u = (uint64_t)(e - 7 + 1023) << 52 | (uint64_t)m << 49;
        memcpy(&v, &u, sizeof v);
    }
    return (c & 0x80) ? -v : v;
}

/* x (already within +-448) to the nearest e4m3, ties to even mantissa, as a
 * float -> float8_e4m3fn cast rounds. */
static inline uint8_t cref_f32_to_e4m3(float x) {
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs((double)x);
    if (a > CREF_E4M3_MAX) a = CREF_E4M3_MAX;
    if (a < 0x1p-6) { /* subnormal range: steps of 2^-9; 8 steps is the least normal, code 8 */
        return (uint8_t)(sign | (uint8_t)nearbyint(a * 512.0));
    }
    int ex;
    (void)frexp(a, &ex); /* a = f * 2^ex, f in [0.5, 1): exponent ex - 1 */
    int e = ex - 1;
    int m = (int)nearbyint((ldexp(a, -e) - 1.0) * 8.0);
    if (m == 8) {
        m = 0;
        e++;
    }
    return (uint8_t)(sign | (uint8_t)((e + 7) << 3) | (uint8_t)m);
}

/* e5m2 is the top byte of an f16 (same exponent bias and specials). */
static inline double cref_e5m2_to_f64(uint8_t c) {
    const int e = (c >> 2) & 31, m = c & 3;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -16); /* subnormal: m * 2^-14 / 4 */
    else v = ldexp(1.0 + m / 4.0, e - 15);
    return (c & 0x80) ? -v : v;
}

/* An fp8 KV pool's store: x to the nearest value, ties to even mantissa,
 * saturating at the largest finite magnitude (448 / 57344) rather than
 * producing NaN or Inf; NaN stays NaN. */
/* |x| (finite, below the saturation bound) to an fp8 with `mb` mantissa
 * bits and exponent bias `bias`: round to nearest, ties to even. */
static inline uint8_t cref_fp8_round(double a, int mb, int bias) {
    const double least_normal = ldexp(1.0, 1 - bias);
    if (a < least_normal) /* subnormal steps of 2^(1 - bias - mb); 2^mb steps is the least normal's code */
        return (uint8_t)nearbyint(ldexp(a, bias - 1 + mb));
    int ex;
    (void)frexp(a, &ex); /* a = f * 2^ex, f in [0.5, 1) */
    int e = ex - 1;
    int m = (int)nearbyint((ldexp(a, -e) - 1.0) * (double)(1 << mb));
    if (m == 1 << mb) {
        m = 0;
        e++;
    }
    return (uint8_t)(((e + bias) << mb) | m);
}

/* An fp8 KV pool's store: x to the nearest value, ties to even mantissa,
 * saturating at the largest finite magnitude (448 / 57344, which is what a
 * value beyond it rounds to) rather than producing NaN or Inf; NaN stays NaN. */
static inline uint8_t cref_f64_to_e4m3_sat(double x) {
    if (isnan(x)) return 0x7f;
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    const double a = fabs(x);
    return (uint8_t)(sign | (a >= CREF_E4M3_MAX ? 0x7e : cref_fp8_round(a, 3, 7)));
}
static inline uint8_t cref_f64_to_e5m2_sat(double x) {
    if (isnan(x)) return 0x7f;
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    const double a = fabs(x);
    return (uint8_t)(sign | (a >= CREF_E5M2_MAX ? 0x7b : cref_fp8_round(a, 2, 15)));
}

/* The scale of one block of values whose largest magnitude is amax, as
 * DeepSeek's act_quant computes it in fp32: amax floored at 1e-4, times
 * 1/448; with pow2 (scale_fmt "ue8m0") rounded up to a power of two. */
static inline float cref_e4m3_block_scale(float amax, int pow2) {
    if (amax < 1e-4f) amax = 1e-4f;
    float s = amax * (1.0f / CREF_E4M3_MAX);
    if (!pow2) return s;
    uint32_t u;
    memcpy(&u, &s, sizeof u);
    int e = (int)((u >> 23) & 0xff) - 127 + ((u & 0x7fffffu) != 0);
    return ldexpf(1.0f, e);
}

/* One value of the block: x / scale in fp32, clamped to +-448, rounded. */
static inline uint8_t cref_e4m3_quant(float x, float scale) {
    float y = x / scale;
    if (y > CREF_E4M3_MAX) y = CREF_E4M3_MAX;
    if (y < -CREF_E4M3_MAX) y = -CREF_E4M3_MAX;
    return cref_f32_to_e4m3(y);
}

/* DeepSeek's act_quant of one block of n values (the indexer's keys, the
 * latent part of FlashMLA's fp8 record): the block's scale from its largest
 * magnitude, then each value's code into code[0..n).  Returns the scale. */
static inline float cref_e4m3_quant_block(const float *x, int n, int pow2, uint8_t *code) {
    float amax = 0;
    for (int i = 0; i < n; i++) {
        const float v = fabsf(x[i]);
        amax = v > amax ? v : amax;
    }
    const float s = cref_e4m3_block_scale(amax, pow2);
    for (int i = 0; i < n; i++) code[i] = cref_e4m3_quant(x[i], s);
    return s;
}

#endif
