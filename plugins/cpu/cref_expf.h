/* cref_expf.h - exp for the f32 path, branch-free so the softmax loop
 * vectorises (libm's expf is a call the compiler cannot vectorise without
 * -ffast-math).  Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then the
 * degree-6 polynomial of Cephes' expf: about 1 ulp over the range.  Inputs
 * below -87.3 (and -inf, the masked scores) give exactly 0. */
#ifndef CREF_EXPF_H
#define CREF_EXPF_H

#include <stdint.h>

#include "cref_convert.h"

static inline float cref_expf(float x) {
    const float hi = 88.3762626647949f, lo = -87.3365447505531f;
    float xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    /* n = round(x / ln2) by the 1.5 * 2^23 trick: no call, no branch */
    float t = xc * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* 2^n: n in [-126, 128); build it in two halves so n = 128 cannot overflow
     * the exponent field */
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    float s1 = sgl_sdk_bits_f32((uint32_t)(n1 + 127) << 23);
    float s2 = sgl_sdk_bits_f32((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    return x < lo ? 0.0f : y;
}

#endif
