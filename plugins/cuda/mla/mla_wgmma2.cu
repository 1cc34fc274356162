/*
 * mla_wgmma2.cu - wgmma0 (mla_wgmma0.cu, FlashMLA's seesaw) with the pair
 * reordered so buffer K0's value tiles are free early and WG1 no longer waits
 * for WG0 twice a pair (SGL_ATTN_MLA_KERNEL=wgmma2, opt-in).
 *
 * wgmma0's per-pair waits: WG1 did O_R += P_b V_bR, then waited (BAR_P0) for
 * WG0 to write P_a * alpha_b, then O_R += P_a V_aR, and only after that could
 * K0's sub-tiles 4-7 be reloaded, just before WG0's QK^T of the next even
 * block needed them (the TMA latency landed on WG0's critical path each pair).
 * Here WG0 hands P_a over unscaled, in the accumulator fragment layout, before
 * it arrives on BAR_A (generic stores, no proxy fence: WG1 reads them with
 * ld.shared); WG1, which computes alpha_b itself, reads P_a before it arrives
 * on BAR_B (so WG0 may overwrite it next pair), scales it by alpha_b in fp32,
 * and runs O_R += (P_a alpha_b) V_aR first (RS), then P_b V_bR.  So:
 *  - BAR_P0 and WG0's second P store are gone;
 *  - K0 4-7 are reloaded after WG1's first PV of the pair instead of its last,
 *    so WG0's P_b V_bL and the first 5 sub-tiles of its next QK^T cover the
 *    load; the rope sub-tiles (used only by QK^T) are reloaded at the first
 *    PV of their buffer in the pair instead of after a later one;
 *  - WG0 waits for its P_a V_aL only after BAR_B (the two waits overlap).
 * P_a is rounded to bf16 twice (P_a, then P_a alpha_b) where wgmma0 rounded
 * once; alpha_b <= 1, so the error stays at bf16's level.
 */
#include <string.h>

#include "mla_seesaw.cuh"

__global__ __launch_bounds__(WG_THREADS, 1) void mla_wgmma2_kernel(const __grid_constant__ mla_fwd_args a,
                                                                  const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_seesaw_body<2>(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_wgmma2_smem_bytes(void) { return WG_SMEM_ALLOC; }

extern "C" int mla_launch_wgmma2(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || a->rows_per_tile != 64 || !a->tmap)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    mla_wgmma2_kernel<<<a->grid_items, WG_THREADS, WG_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_wgmma2_init(void) {
    return (int)cudaFuncSetAttribute(mla_wgmma2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)WG_SMEM_ALLOC);
}
