/*
 * save_kv.cuh - write the new tokens' K/V into the pool at out_cache_loc
 * (before attending, as sglang's save_kv_cache), through the layer's slot map
 * when it has one (common.cuh: attn_save_slot).  One thread per 16 bytes;
 * a slot outside the pool (the whole int64 checked) is skipped and noted,
 * never clamped or wrapped (either would overwrite another token).  Portable.
 */
#ifndef SGL_ATTN_KERNELS_SAVE_KV_CUH
#define SGL_ATTN_KERNELS_SAVE_KV_CUH

#include "common.cuh"

/* Piece c (16 bytes) of token tok's K and V rows of kv head h into the pool
 * slot the token saves to: the one copy of every save, the grid-stride one
 * below and cuda_attn's decode that saves its requests' new tokens itself
 * (decode_reg.cu, 16-bit pools).  A bad slot is noted once per
 * token, by the piece that passes note. */
GC_DEV void attn_save_kv_piece(const attn_save &s, int tok, int h, int c, bool note) {
    const int64_t slot = attn_save_slot(s, tok, note);
    if (slot < 0) return;
    const uint16_t *k = (const uint16_t *)s.k + tok * s.k_stride_t + h * s.k_stride_h + c * 8;
    const uint16_t *v = (const uint16_t *)s.v + tok * s.v_stride_t + h * s.v_stride_h + c * 8;
    uint16_t *kc = (uint16_t *)s.k_cache + slot * s.kc_stride_s + h * s.kc_stride_h + c * 8;
    uint16_t *vc = (uint16_t *)s.v_cache + slot * s.vc_stride_s + h * s.vc_stride_h + c * 8;
    *(uint4 *)kc = *(const uint4 *)k;
    *(uint4 *)vc = *(const uint4 *)v;
}

/* The grid-stride copy, shared by the kernel below and cuda_attn's
 * programmatic-dependent save (save_kv_pdl.cu). */
GC_DEV void attn_save_kv_rows(const attn_save &s) {
    const int chunks = s.d / 8; /* 16-byte pieces per head row */
    const long long n = (long long)s.t * s.hkv * chunks;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(i % chunks);
        const int h = (int)((i / chunks) % s.hkv);
        const int tok = (int)(i / ((long long)chunks * s.hkv));
        attn_save_kv_piece(s, tok, h, c, c == 0 && h == 0); /* one note per token */
    }
}

#ifndef ATTN_SAVE_KV_ROWS_ONLY /* cuda_attn's save_kv_pdl.cu takes the copy alone */
__global__ __launch_bounds__(256) void attn_save_kv_kernel(attn_save s) { attn_save_kv_rows(s); }
#endif

#endif
