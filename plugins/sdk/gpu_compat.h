/*
 * gpu_compat.h - the CUDA / HIP common subset the shared kernels are written in.
 *
 * The shared kernels (plugins/sdk/attn_kernels/) include only this header, so
 * the same source builds with nvcc (plugins/cuda/) and with hipcc
 * (plugins/hip/); the CUDA plugins' own kernels use it too.  What lives here:
 *   - runtime names:   gc_stream_t, gc_error_t, gc_success, gc_get_last_error,
 *                      gc_error_string, gc_func_set_max_dynamic_smem
 *   - 16-bit floats:   raw uint16_t storage, conversions gc_to_f32<DT> /
 *                      gc_from_f32<DT> for DT = GC_F16 / GC_BF16 (no library
 *                      bf16 type, so the two vendors' types never leak into
 *                      kernel signatures)
 *   - 32-lane groups:  GC_LANES (= 32) is the "warp" the kernels are written
 *                      for; gc_lane() and the width-32 shuffles gc_shfl_xor /
 *                      gc_shfl make an AMD wave64 behave as two independent
 *                      32-lane halves.  Never use warpSize in shared kernels.
 *   - async copies:    gc_cp_async16 / gc_cp_async_commit / gc_cp_async_wait<N>:
 *                      cp.async on SM 8.0+, a plain 16-byte copy elsewhere
 *                      (then the caller's __syncthreads() orders it).
 *   - coherent reads:  gc_ld_cg (data another block wrote in this launch,
 *                      after its fence: bypass the incoherent L1).
 *
 * Hopper-only or mma.sync code never goes here: it lives in CUDA-only
 * headers behind `#if` guards.
 */
#ifndef SGL_GPU_COMPAT_H
#define SGL_GPU_COMPAT_H

#include <stdint.h>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define GC_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
typedef hipStream_t gc_stream_t;
typedef hipError_t gc_error_t;
#define gc_success hipSuccess
#define gc_get_last_error hipGetLastError
#define gc_error_string hipGetErrorString
#define gc_func_set_max_dynamic_smem(fn, bytes) \
    hipFuncSetAttribute((const void *)(fn), hipFuncAttributeMaxDynamicSharedMemorySize, (bytes))
#else
#define GC_CUDA 1
#include <cuda_runtime.h>
#include <cuda_fp16.h>
typedef cudaStream_t gc_stream_t;
typedef cudaError_t gc_error_t;
#define gc_success cudaSuccess
#define gc_get_last_error cudaGetLastError
#define gc_error_string cudaGetErrorString
#define gc_func_set_max_dynamic_smem(fn, bytes) \
    cudaFuncSetAttribute((fn), cudaFuncAttributeMaxDynamicSharedMemorySize, (bytes))
#endif

#define GC_DEV __device__ __forceinline__
#define GC_HD __host__ __device__ __forceinline__

/* ------------------------------------------------------------ 32-lane groups */

#define GC_LANES 32 /* the lane group every shared kernel assumes */

GC_DEV int gc_lane(void) { return (int)(threadIdx.x & (GC_LANES - 1)); }

GC_DEV float gc_shfl_xor(float v, int mask) {
#ifdef GC_HIP
    return __shfl_xor(v, mask, GC_LANES);
#else
    return __shfl_xor_sync(0xffffffffu, v, mask, GC_LANES);
#endif
}
GC_DEV float gc_shfl(float v, int src_lane) {
#ifdef GC_HIP
    return __shfl(v, src_lane, GC_LANES);
#else
    return __shfl_sync(0xffffffffu, v, src_lane, GC_LANES);
#endif
}
GC_DEV int gc_shfl_int(int v, int src_lane) {
#ifdef GC_HIP
    return __shfl(v, src_lane, GC_LANES);
#else
    return __shfl_sync(0xffffffffu, v, src_lane, GC_LANES);
#endif
}
/* Every lane of the 32-lane group reaches this point (wave64 hardware runs in
 * lockstep, so nothing is needed there). */
GC_DEV void gc_syncwarp(void) {
#ifndef GC_HIP
    __syncwarp();
#endif
}

/* ------------------------------------------------------------- 16-bit floats */

enum { GC_F16 = 0, GC_BF16 = 1 };

GC_DEV float gc_bf16_to_f32(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }
/* Round to nearest even; NaN stays a (quiet) NaN. */
GC_DEV uint16_t gc_f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* A pair by that integer form (lo in the low half). */
GC_DEV uint32_t gc_bf16x2_int(float lo, float hi) {
    return (uint32_t)gc_f32_to_bf16(lo) | ((uint32_t)gc_f32_to_bf16(hi) << 16);
}
/* The same roundings by the hardware cvt on CUDA SM 8.0+ (cvt.rn.bf16.f32,
 * one cvt.rn.bf16x2.f32 a pair, where the integer form takes five or six
 * instructions a value); elsewhere (HIP, the tests' CPU emulator) the
 * integer form.  Both give the same bits for every value but NaN, which
 * stays a NaN (its payload may differ). */
GC_DEV uint16_t gc_bf16_rn(float f) {
#if defined(GC_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return gc_f32_to_bf16(f);
#endif
}
GC_DEV uint32_t gc_bf16x2_rn(float lo, float hi) {
#if defined(GC_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return gc_bf16x2_int(lo, hi);
#endif
}
GC_DEV float gc_f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
GC_DEV uint16_t gc_f32_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }

template <int DT> GC_DEV float gc_to_f32(uint16_t h) {
    return DT == GC_BF16 ? gc_bf16_to_f32(h) : gc_f16_to_f32(h);
}
template <int DT> GC_DEV uint16_t gc_from_f32(float f) {
    return DT == GC_BF16 ? gc_f32_to_bf16(f) : gc_f32_to_f16(f);
}
/* 8 packed 16-bit values (one 16-byte load) to floats, and back. */
template <int DT> GC_DEV void gc_unpack8(uint4 v, float out[8]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        out[2 * i] = gc_to_f32<DT>((uint16_t)(w[i] & 0xffffu));
        out[2 * i + 1] = gc_to_f32<DT>((uint16_t)(w[i] >> 16));
    }
}
template <int DT> GC_DEV uint4 gc_pack8(const float in[8]) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        w[i] = (uint32_t)gc_from_f32<DT>(in[2 * i]) | ((uint32_t)gc_from_f32<DT>(in[2 * i + 1]) << 16);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* ------------------------------------------------------------ fast math */

/* 2^x; the kernels fold log2(e) into the scale so softmax needs only this. */
GC_DEV float gc_exp2(float x) {
#if defined(GC_CUDA) && defined(__CUDA_ARCH__)
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2f(x);
#endif
}

/* ------------------------------------------------------------ async copies */

#if defined(GC_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GC_HAVE_CP_ASYNC 1
#endif

/* Copy 16 bytes global -> shared; when !pred the destination is zero-filled
 * and the source is not read (so it may be any address). */
GC_DEV void gc_cp_async16(void *smem_dst, const void *gmem_src, bool pred) {
#if defined(LK_EMU) /* the CPU emulator of the tests: queued, landed at the wait */
    lk_emu_cp_async16_any(smem_dst, gmem_src, pred);
#elif defined(GC_HAVE_CP_ASYNC)
    uint32_t d = (uint32_t)__cvta_generic_to_shared(smem_dst);
    int n = pred ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem_src), "r"(n)
                 : "memory");
#else
    *(uint4 *)smem_dst = pred ? *(const uint4 *)gmem_src : make_uint4(0, 0, 0, 0);
#endif
}
GC_DEV void gc_cp_async_commit(void) {
#if defined(LK_EMU)
    lk_emu_cp_async_commit();
#elif defined(GC_HAVE_CP_ASYNC)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/* Wait until at most N committed groups of this thread are still in flight. */
template <int N> GC_DEV void gc_cp_async_wait(void) {
#if defined(LK_EMU)
    lk_emu_cp_async_wait_n(N);
#elif defined(GC_HAVE_CP_ASYNC)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* ---------------------------------------------------- cross-block handoff */

/* A load that does not hit a stale L1 line: for data other blocks of this
 * launch wrote before their __threadfence() + atomic. */
GC_DEV float gc_ld_cg(const float *p) {
#ifdef GC_HIP
    return *(const volatile float *)p;
#else
    return __ldcg(p);
#endif
}

#endif /* SGL_GPU_COMPAT_H */
