/*
 * mla_wgmma4.cu - wgmma3 (mla_wgmma3.cu) with a lazy running max, the O
 * rescales skipped when they are identities and P packed to bf16 in hardware
 * (SGL_ATTN_MLA_KERNEL=wgmma4, opt-in).  The kernel body is
 * mla_seesaw_body<4> (mla_seesaw.cuh); the wgmma order is wgmma3's.
 *
 * Per pair each warpgroup scales its 128 O accumulators twice (by alpha_a and
 * alpha_b): 256 FMULs a thread, on the issue slots the softmax and the wgmma
 * issue need, while the tensor pipe waits.  With an exact running max the max
 * of a random row still moves in a good share of a 4k row's blocks (for a warp
 * of 16 rows, in about 16 + 16 ln(nblk / 16) of nblk), so a plain "skip when
 * alpha = 1" saves little.  Here the max moves only when a block's row max
 * exceeds it by more than 8 (log2 units; WG4_LAZY_LOG2): P = 2^(s - m) <= 256,
 * which bf16 and fp32 hold with the same relative rounding, and O / l stay
 * relative to the same (stale) max, so the result and the partials' LSE are
 * unchanged up to rounding.  After a row's first block alpha is then almost
 * always exactly 1 and a warp vote skips the rescale (wg_scale_o_v).
 * P is packed by cvt.rn.bf16x2.f32 (wg_pack<true>): one instruction a pair of
 * values where mla_pack2's software rounding takes ~12 integer ones; 64
 * conversions a thread a pair in WG1 (P1 store, P_b's A fragments) and 32 in
 * WG0, the same bits for finite P.  And each in-loop S starts with scale-d = 0
 * on its first k-step (wg4_qk_rs_first) instead of 32 zeroing moves.
 * Registers: 254 (ptxas -v), no spills, no serialisation warning.
 * Not done: S_{b+2} in flight across the next BAR_A (docs/cuda_mla.md).
 */
#include <string.h>

#include "mla_seesaw.cuh"

__global__ __launch_bounds__(WG_THREADS, 1) void mla_wgmma4_kernel(const __grid_constant__ mla_fwd_args a,
                                                                  const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_seesaw_body<4>(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_wgmma4_smem_bytes(void) { return WG_SMEM_ALLOC; }

extern "C" int mla_launch_wgmma4(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || a->rows_per_tile != 64 || !a->tmap)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    mla_wgmma4_kernel<<<a->grid_items, WG_THREADS, WG_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_wgmma4_init(void) {
    return (int)cudaFuncSetAttribute(mla_wgmma4_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)WG_SMEM_ALLOC);
}
