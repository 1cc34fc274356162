/*
 * mla_save.cu - write the new latent rows into the pool at out_cache_loc
 * before attention (save_kv_cache): dims 0-511 from k, 512-575 from k_rope
 * (k + 512 unless the rope split passed them apart).  Same dtype: a bit copy.
 * fp8 pool: value / k_scale (the float, or the scale tensor's value read here)
 * rounded to e4m3 (saturating).  A slot outside the
 * pool (the whole int64 checked) is skipped and noted, never clamped or
 * wrapped: writing another token's row would corrupt it.
 * FlashMLA's fp8 record (MLA_DT_REC, bf16 k): per block of 128 latent values
 * DeepSeek's act_quant, as cpu_ref's indexer keys: amax floored at 1e-4 times
 * the fp32 1/448 is the scale, value / scale (fp32) clamped to +-448 and
 * rounded to nearest even; the RoPE dims are copied as bf16.
 */
#include "mla_kern_common.cuh"
#include "mla_sparse.h"

#define SAVE_THREADS 128

/* This block's token and its pool slot, or -1 when there is no token or its
 * slot lies outside the pool (noted as a fault, never clamped). */
__device__ __forceinline__ int64_t save_slot(const mla_save_args &s) {
    const int64_t t = blockIdx.x;
    if (t >= s.t) return -1;
    const int64_t slot = mla_idx(s.loc, t);
    if ((uint64_t)slot >= (uint64_t)s.num_slots) {
        if (threadIdx.x == 0) sgl_fault_note(s.fault, SGL_FAULT_OUT_CACHE_LOC, t, slot, 0, s.num_slots);
        return -1;
    }
    return slot;
}

template <int KDT, int PDT> __global__ __launch_bounds__(SAVE_THREADS) void mla_save_kernel(mla_save_args s) {
    const int64_t t = blockIdx.x, slot = save_slot(s);
    if (slot < 0) return;
    const uint16_t *src = (const uint16_t *)s.k + t * s.k_ld;
    const uint16_t *src_r = (const uint16_t *)s.k_rope + t * s.kr_ld;
    if (PDT == MLA_DT_FP8) {
        const float inv = s.k_scale_t ? 1.f / __ldg(s.k_scale_t) : s.inv_k_scale;
        uint8_t *dst = (uint8_t *)s.pool + slot * MLA_D_QK;
        for (int d = threadIdx.x; d < MLA_D_QK; d += SAVE_THREADS) {
            float v = gc_to_f32<KDT == MLA_DT_BF16 ? GC_BF16 : GC_F16>(d < MLA_D_V ? src[d] : src_r[d - MLA_D_V]) * inv;
            dst[d] = mla_f32_to_e4m3(v);
        }
    } else {
        /* 576 x 2 bytes = 72 x 16 bytes: 64 from k, 8 from k_rope */
        uint4 *d4 = (uint4 *)((uint16_t *)s.pool + slot * MLA_D_QK);
        for (int i = threadIdx.x; i < MLA_D_QK / 8; i += SAVE_THREADS)
            d4[i] = i < MLA_D_V / 8 ? ((const uint4 *)src)[i] : ((const uint4 *)src_r)[i - MLA_D_V / 8];
    }
}

/* One token a block: warp w quantises the latent values 128 w .. 128 w + 127
 * (four a lane), lanes 0-7 of the block copy the RoPE part. */
__global__ __launch_bounds__(SAVE_THREADS) void mla_save_record_kernel(mla_save_args s) {
    static_assert(SAVE_THREADS == 32 * (MLA_D_V / 128), "a warp per scale block");
    const int64_t t = blockIdx.x, slot = save_slot(s);
    if (slot < 0) return;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint2 raw = *(const uint2 *)((const uint16_t *)s.k + t * s.k_ld + w * 128 + lane * 4);
    float x[4] = {gc_bf16_to_f32((uint16_t)(raw.x & 0xffffu)), gc_bf16_to_f32((uint16_t)(raw.x >> 16)),
                  gc_bf16_to_f32((uint16_t)(raw.y & 0xffffu)), gc_bf16_to_f32((uint16_t)(raw.y >> 16))};
    float amax = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = fmaxf(amax, 1e-4f) * (1.0f / 448.0f);
    uint32_t codes = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float y = fminf(fmaxf(x[i] / scale, -448.f), 448.f);
        codes |= (uint32_t)mla_f32_to_e4m3(y) << (8 * i);
    }
    unsigned char *dst = (unsigned char *)s.pool + slot * MLA_REC_BYTES;
    *(uint32_t *)(dst + w * 128 + lane * 4) = codes;
    if (lane == 0) *(float *)(dst + MLA_D_V + 4 * w) = scale;
    if (threadIdx.x < (MLA_D_QK - MLA_D_V) / 8) /* 64 bf16 = 8 x 16 bytes */
        *(uint4 *)(dst + MLA_D_V + 16 + 16 * threadIdx.x) =
            ((const uint4 *)((const uint16_t *)s.k_rope + t * s.kr_ld))[threadIdx.x];
}

extern "C" int mla_launch_save(const mla_save_args *s) {
    if (s->t <= 0) return 0;
    cudaStream_t st = (cudaStream_t)s->stream;
    dim3 grid((unsigned)s->t);
    if (s->kv_dt == MLA_DT_REC) {
        if (s->k_dt != MLA_DT_BF16) return (int)cudaErrorInvalidValue;
        mla_save_record_kernel<<<grid, SAVE_THREADS, 0, st>>>(*s);
    } else if (s->kv_dt == MLA_DT_FP8) {
        if (s->k_dt == MLA_DT_BF16)
            mla_save_kernel<MLA_DT_BF16, MLA_DT_FP8><<<grid, SAVE_THREADS, 0, st>>>(*s);
        else
            mla_save_kernel<MLA_DT_F16, MLA_DT_FP8><<<grid, SAVE_THREADS, 0, st>>>(*s);
    } else if (s->kv_dt == s->k_dt) {
        mla_save_kernel<MLA_DT_BF16, MLA_DT_BF16><<<grid, SAVE_THREADS, 0, st>>>(*s);
    } else {
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
