/*
 * fp8_e4m3.cuh - fp8 e4m3 (e4m3fn: no inf, 0x7f / 0xff NaN, max 448) for
 * cuda_attn's fp8 KV pools (CUDA, SM 8.0+).
 *
 * Loads: two e4m3 bytes -> an f16x2 mma operand.  f16 holds every e4m3
 * value exactly (its exponent range and mantissa are wider), so the pool's
 * bytes enter the f16 mma unrounded.  SM 8.9+ converts with the hardware
 * cvt (exact values); SM 8.0 moves the bits into place instead: the e4m3
 * exponent and mantissa shifted into an f16's read as the value times 2^-8,
 * normals and subnormals alike (f16 bias 15 vs e4m3 bias 7).  ATTN_FP8_UNIT
 * is what a converted value is multiplied by to give the e4m3 value; the
 * kernels fold it into the dequant scales.
 *
 * Stores: value / scale rounded to nearest even, saturating at +-448 (NaN
 * stays NaN), as sglang's fp8 KV write on the values it can hold.
 */
#ifndef SGL_CUDA_ATTN_FP8_E4M3_CUH
#define SGL_CUDA_ATTN_FP8_E4M3_CUH

#include <stdint.h>

#include "mma_sm80.cuh" /* pack2 */

#ifndef GC_DEV
#define GC_DEV __device__ __forceinline__
#endif

#if defined(LK_EMU) && defined(EMU_FP8_HW_CVT)
/* the CPU emulator of the tests (tests/emu/), built for the SM 8.9+ path: the
 * cvt instructions below have their emulated twins there */
#define ATTN_FP8_HW_CVT 1
#define ATTN_FP8_UNIT 1.0f
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define ATTN_FP8_HW_CVT 1
#define ATTN_FP8_UNIT 1.0f
#else
#define ATTN_FP8_HW_CVT 0
#define ATTN_FP8_UNIT 256.0f
#endif

/* The e4m3 bytes in the low 16 bits of x -> f16x2 (low byte -> low half),
 * times 1 / ATTN_FP8_UNIT. */
GC_DEV uint32_t fp8x2_to_f16x2(uint32_t x) {
#if ATTN_FP8_HW_CVT && defined(LK_EMU)
    return lk_emu_cvt_f16x2_e4m3x2(x);
#elif ATTN_FP8_HW_CVT
    uint32_t r;
    asm("{\n.reg .b16 lo;\ncvt.u16.u32 lo, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}\n" : "=r"(r) : "r"(x));
    return r;
#else
    const uint32_t w = __byte_perm(x, 0u, 0x1404u); /* bytes -> the high byte of each half */
    return (w & 0x80008000u) | ((w >> 1) & 0x3f803f80u);
#endif
}

/* Four e4m3 bytes of x -> two f16x2 by integer moves (any SM, the ALU
 * pipe instead of the conversion unit): lo = bytes 0 and 2, hi = bytes 1 and
 * 3 (the first byte in the low half), each value times 2^-8 as the SM 8.0
 * move above (ATTN_FP8_INT_UNIT restores it).  Per byte at bits 8..15 of a
 * half: the sign stays at bit 15, exponent and mantissa move down one bit. */
#define ATTN_FP8_INT_UNIT 256.0f
GC_DEV uint32_t fp8_hi_bytes_f16(uint32_t x) { return (x & 0x80008000u) | ((x >> 1) & 0x3f803f80u); }
GC_DEV void fp8x4_to_f16x2x2_int(uint32_t x, uint32_t &lo, uint32_t &hi) {
    hi = fp8_hi_bytes_f16(x);
    lo = fp8_hi_bytes_f16(x << 8);
}

/* Bytes 2h, 2h+1 of word x -> f16x2 (h compile-time after unrolling). */
GC_DEV uint32_t fp8_pair(uint32_t x, int h) { return fp8x2_to_f16x2(h ? x >> 16 : x); }

/* float -> e4m3 byte, round to nearest even, saturating at +-448. */
GC_DEV uint32_t f32_to_e4m3(float f) {
#if ATTN_FP8_HW_CVT && defined(LK_EMU)
    return lk_emu_cvt_e4m3_f32(f);
#elif ATTN_FP8_HW_CVT
    uint16_t r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(0.f), "f"(f));
    return r & 0xffu;
#else
    const uint32_t u = __float_as_uint(f), s = (u >> 24) & 0x80u;
    const float a = fabsf(f);
    if (a != a) return s | 0x7fu;
    if (a >= 448.f) return s | 0x7eu;
    if (a < 0.015625f) return s | (uint32_t)rintf(a * 512.f); /* subnormal steps of 2^-9; 8 = 2^-6 */
    const uint32_t b = __float_as_uint(a), m = b & 0x7fffffu, rest = m & 0xfffffu;
    uint32_t r = ((((b >> 23) - 120u) << 3) | (m >> 20));
    if (rest > 0x80000u || (rest == 0x80000u && (r & 1u))) r++;
    return s | (r > 0x7eu ? 0x7eu : r);
#endif
}

/* The layer's dequant scale: the device scalar when the engine passed one
 * (read here, so a graph replays with the value of the moment), else the float. */
GC_DEV float attn_kv_scale(const float *dev, float host) { return dev ? __ldg(dev) : host; }

/* A bf16 (DT) or f16 pair of q as f16, the fp8 paths' mma type: beyond f16's
 * range a value saturates at +-65504, NaN stays NaN. */
GC_DEV float attn_f16_range(float x) { return fabsf(x) > 65504.f ? copysignf(65504.f, x) : x; }
template <int DT> GC_DEV uint32_t attn_q_f16x2(uint32_t w) {
    if (DT == GC_F16) return w;
    return pack2<GC_F16>(attn_f16_range(__uint_as_float(w << 16)), attn_f16_range(__uint_as_float(w & 0xffff0000u)));
}

#endif
