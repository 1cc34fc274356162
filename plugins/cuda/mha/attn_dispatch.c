/* attn_dispatch.c - an instance's kernels (attn_kernels, chosen at create by
 * cuda_attn_choice.c) -> their setup at create and their launchers at each
 * forward.  Reads nothing but its arguments. */
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "cuda_launch.h"
#include "dual_chunk.h"

int attn_kernels_setup(attn_kernels *k) {
    int e = 0;
    k->tma = 0;
    if (k->decode == ATTN_DECODE_MMA) e = attn_decode_mma_setup(k->dtype, k->head_dim);
    if (!e && k->extend == ATTN_EXTEND_MMA) e = attn_extend_mma_setup(k->dtype, k->head_dim);
    /* fp8 pools: the mma extend reads the pool's bytes (the 16-bit one above
     * still serves an encoder-only layer's own k / v) */
    if (!e && k->extend == ATTN_EXTEND_MMA && k->kv_fp8) e = attn_extend_mma_fp8_setup(k->dtype, k->head_dim);
    if (!e && k->extend == ATTN_EXTEND_WGMMA) e = attn_extend_wgmma_setup(k->dtype, k->head_dim, &k->tma);
    /* Dual chunk attention (dual_chunk.h), 16-bit pools: where its shared
     * memory does not fit (SM 8.6 / 8.9 at head dim 128 and 256) the plain
     * kernels still serve and a dual chunk forward is refused.  Its extend is
     * dc_extend's (the wgmma DCA kernels beside the wgmma extend); the mma
     * DCA kernel is set up in every case, and serves where the wgmma one's
     * setup fails (it takes the plan's 128-row items as two 64-row tiles). */
    k->dual_chunk = 0;
    k->dc_tma = 0;
    if (!e && !k->kv_fp8) {
        k->dual_chunk = attn_dual_chunk_decode_setup(k->dtype, k->head_dim) == 0 &&
                        attn_dual_chunk_extend_setup(k->dtype, k->head_dim) == 0;
        if (k->dual_chunk && k->dc_extend == ATTN_EXTEND_WGMMA &&
            attn_dual_chunk_extend_wgmma_setup(k->dtype, k->head_dim, &k->dc_tma) != 0) {
            k->dc_extend = ATTN_EXTEND_MMA;
            k->dc_tma = 0;
        }
        (void)cudaGetLastError(); /* a refused attribute must not show at the next launch */
    }
    return e; /* the portable and register-fed kernels use static shared memory only */
}

int attn_launch_decode(const attn_kernels *k, const attn_fwd *p, int grid_items, void *stream) {
    switch (k->decode) {
    case ATTN_DECODE_REG:
        return attn_launch_decode_reg(k->dtype, k->kv_fp8, k->head_dim, p, grid_items, stream);
    case ATTN_DECODE_MMA: return attn_launch_decode_mma(k->dtype, k->head_dim, p, grid_items, stream);
    case ATTN_DECODE_PORTABLE: return attn_launch_decode_portable(k->dtype, k->head_dim, p, grid_items, stream);
    default: return (int)cudaErrorInvalidValue;
    }
}

int attn_launch_extend(const attn_kernels *k, const attn_fwd *p, const attn_kv_tmaps *tm, int grid_items,
                       void *stream) {
    switch (k->extend) {
    case ATTN_EXTEND_WGMMA:
        return attn_launch_extend_wgmma(k->dtype, k->head_dim, p, k->tma ? tm : NULL, k->sm_count, grid_items,
                                        stream);
    case ATTN_EXTEND_MMA:
        return k->kv_fp8 ? attn_launch_extend_mma_fp8(k->dtype, k->head_dim, p, grid_items, stream)
                         : attn_launch_extend_mma(k->dtype, k->head_dim, p, grid_items, stream);
    case ATTN_EXTEND_PORTABLE: return attn_launch_extend_portable(k->dtype, k->head_dim, p, grid_items, stream);
    default: return (int)cudaErrorInvalidValue;
    }
}

int attn_launch_dual_chunk_extend_k(const attn_kernels *k, const attn_fwd *p, const attn_dca *dc,
                                    const attn_kv_tmaps *tm, int block_m, int grid_items, void *stream) {
    if (k->dc_extend == ATTN_EXTEND_WGMMA)
        return attn_launch_dual_chunk_extend_wgmma(k->dtype, k->head_dim, p, dc, k->dc_tma ? tm : NULL, k->sm_count,
                                                   grid_items, stream);
    return attn_launch_dual_chunk_extend(k->dtype, k->head_dim, p, dc, block_m, grid_items, stream);
}
