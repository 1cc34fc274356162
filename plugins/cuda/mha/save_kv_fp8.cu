/*
 * save_kv_fp8.cu - write the new tokens' K/V (f16 / bf16) into an fp8 e4m3
 * pool at out_cache_loc (through the layer's slot map): stored = value /
 * scale, rounded to nearest even and saturating (fp8_e4m3.cuh), as sglang
 * divides by k_scale / v_scale before its fp8 cast.  One thread per 8 values
 * (16 bytes in, 8 out); a slot outside the pool or the map (the whole int64
 * checked) is skipped and noted, never clamped, as the 16-bit save.  With
 * k_deq / v_deq set (the split extend, extend_fp8_split.cu) the stored bytes
 * are also written back dequantised, in the token's row of those buffers (a
 * token whose slot is skipped too: the split attends what it would hold).
 */
#include "attn_kernels/common.cuh"
#include "cuda_launch.h"
#include "fp8_e4m3.cuh"
#include "mma_sm80.cuh"

template <int DT> GC_DEV uint2 save_quant8(uint4 in, float scale) {
    const uint32_t w[4] = {in.x, in.y, in.z, in.w};
    uint32_t o[2] = {0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint16_t h = (uint16_t)(w[i >> 1] >> (16 * (i & 1)));
        const uint32_t b = f32_to_e4m3(gc_to_f32<DT>(h) / scale);
        o[i >> 2] |= b << (8 * (i & 3));
    }
    return make_uint2(o[0], o[1]);
}

/* 8 stored bytes -> their values (stored * scale) in DT: exact e4m3 values
 * (fp8_e4m3.cuh's f16 pairs) times the scale, rounded once. */
template <int DT> GC_DEV uint4 save_dequant8(uint2 in, float scale) {
    const uint32_t w[2] = {in.x, in.y};
    const float mul = scale * ATTN_FP8_UNIT;
    uint32_t o[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t h2 = fp8_pair(w[i >> 1], i & 1);
        const float lo = gc_to_f32<GC_F16>((uint16_t)(h2 & 0xffffu)) * mul;
        const float hi = gc_to_f32<GC_F16>((uint16_t)(h2 >> 16)) * mul;
        o[i] = (uint32_t)gc_from_f32<DT>(lo) | (uint32_t)gc_from_f32<DT>(hi) << 16;
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

template <int DT> __global__ __launch_bounds__(256) void attn_save_kv_fp8_kernel(attn_save_fp8 a) {
    const attn_save &s = a.s;
    const float ks = attn_kv_scale(a.k_scale_dev, a.k_scale), vs = attn_kv_scale(a.v_scale_dev, a.v_scale);
    const int chunks = s.d / 8;
    const long long n = (long long)s.t * s.hkv * chunks;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(i % chunks);
        const int h = (int)((i / chunks) % s.hkv);
        const int tok = (int)(i / ((long long)chunks * s.hkv));
        const int64_t slot = attn_save_slot(s, tok, c == 0 && h == 0); /* one note per token */
        if (slot < 0 && !a.k_deq) continue;
        const uint16_t *k = (const uint16_t *)s.k + tok * s.k_stride_t + h * s.k_stride_h + c * 8;
        const uint16_t *v = (const uint16_t *)s.v + tok * s.v_stride_t + h * s.v_stride_h + c * 8;
        const uint2 kq = save_quant8<DT>(*(const uint4 *)k, ks), vq = save_quant8<DT>(*(const uint4 *)v, vs);
        if (a.k_deq) { /* the split extend's new rows: what the pool holds, dequantised */
            const int64_t e = ((int64_t)tok * s.hkv + h) * s.d + c * 8;
            *(uint4 *)((uint16_t *)a.k_deq + e) = save_dequant8<DT>(kq, ks);
            *(uint4 *)((uint16_t *)a.v_deq + e) = save_dequant8<DT>(vq, vs);
        }
        if (slot < 0) continue;
        uint8_t *kc = (uint8_t *)s.k_cache + slot * s.kc_stride_s + h * s.kc_stride_h + c * 8;
        uint8_t *vc = (uint8_t *)s.v_cache + slot * s.vc_stride_s + h * s.vc_stride_h + c * 8;
        *(uint2 *)kc = kq;
        *(uint2 *)vc = vq;
    }
}

extern "C" int attn_launch_save_kv_fp8(int dtype, const attn_save_fp8 *a, void *stream) {
    const long long n = (long long)a->s.t * a->s.hkv * (a->s.d / 8);
    if (n <= 0) return 0;
    long long blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* grid-stride loop covers the rest */
    if (dtype == ATTN_DT_BF16)
        attn_save_kv_fp8_kernel<GC_BF16><<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(*a);
    else
        attn_save_kv_fp8_kernel<GC_F16><<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(*a);
    return (int)cudaGetLastError();
}
