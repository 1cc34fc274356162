/*
 * mla_save.cu - write the new latent rows into the pool at out_cache_loc
 * before attention (save_kv_cache): dims 0-511 from k, 512-575 from k_rope
 * (k + 512 unless the rope split passed them apart).  Same dtype: a bit copy.
 * fp8 pool: value / k_scale (the float, or the scale tensor's value read here)
 * rounded to e4m3 (saturating).  A slot outside the
 * pool (the whole int64 checked) is skipped and noted, never clamped or
 * wrapped: writing another token's row would corrupt it.
 */
#include "mla_kern_common.cuh"

#define SAVE_THREADS 128

template <int KDT, int PDT> __global__ __launch_bounds__(SAVE_THREADS) void mla_save_kernel(mla_save_args s) {
    const int64_t t = blockIdx.x;
    if (t >= s.t) return;
    const int64_t slot = mla_idx(s.loc, t);
    if ((uint64_t)slot >= (uint64_t)s.num_slots) {
        if (threadIdx.x == 0) sgl_fault_note(s.fault, SGL_FAULT_OUT_CACHE_LOC, t, slot, 0, s.num_slots);
        return;
    }
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

extern "C" int mla_launch_save(const mla_save_args *s) {
    if (s->t <= 0) return 0;
    cudaStream_t st = (cudaStream_t)s->stream;
    dim3 grid((unsigned)s->t);
    if (s->kv_dt == MLA_DT_FP8) {
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
