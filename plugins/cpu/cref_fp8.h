/* cref_fp8.h - fp8 e4m3 (OCP "fn": no infinities, max 448) as DSA's index
 * keys store it, and DeepSeek's per-128 activation quantisation of them. */
#ifndef CREF_FP8_H
#define CREF_FP8_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CREF_E4M3_MAX 448.0f

/* The exact value of an e4m3 byte (0x7f / 0xff are NaN). */
static inline double cref_e4m3_to_f64(uint8_t c) {
    const int e = (c >> 3) & 15, m = c & 7;
    double v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = ldexp((double)m, -9); /* subnormal: m * 2^-6 / 8 */
    else v = ldexp(1.0 + m / 8.0, e - 7);
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

#endif
