/*
 * mla_wgmma5.cu - wgmma4 (mla_wgmma4.cu) with warpgroup 1's S_{b+2} left in
 * flight across the next BAR_A (SGL_ATTN_MLA_KERNEL=wgmma5, opt-in).  The
 * kernel body is mla_seesaw_body<5> (mla_seesaw.cuh); WG0's side is wgmma4's.
 *
 * wgmma3 / wgmma4's WG1 waits for all of S_{b+2} at the end of each pair, then
 * blocks at BAR_A until WG0's softmax is done: during that wait the tensor
 * pipe holds at most WG0's work.  Here S_{b+2} (issued behind P_b V_bR) is
 * still running while WG1 sits at BAR_A, and is waited for (wgmma.wait 1)
 * only behind the next P_a V_aR, right before softmax(S_b) needs it.
 *
 * ptxas serialises every wgmma when an accumulator is in flight across a loop
 * back-edge, or when a wgmma sits under a data-dependent branch inside the
 * loop (C7514 / C7515 / C7518; docs/cuda_mla.md).  So WG1 runs a loop of its
 * own (WG0's pair loop skips it), rotated by half a pair: an iteration is
 * [P_b V_bR, S_{b+2} issue | BAR_A, P_a V_aR, wait S, softmax, BAR_B, wait],
 * for the pairs whose S_{b+2} exists; the last one or two pairs run after it.
 * Registers: 255 (ptxas -v), no spills, no serialisation warning.
 */
#include <string.h>

#include "mla_seesaw.cuh"

__global__ __launch_bounds__(WG_THREADS, 1) void mla_wgmma5_kernel(const __grid_constant__ mla_fwd_args a,
                                                                  const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_seesaw_body<5>(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_wgmma5_smem_bytes(void) { return WG_SMEM_ALLOC; }

extern "C" int mla_launch_wgmma5(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || a->rows_per_tile != 64 || !a->tmap)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    mla_wgmma5_kernel<<<a->grid_items, WG_THREADS, WG_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_wgmma5_init(void) {
    return (int)cudaFuncSetAttribute(mla_wgmma5_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)WG_SMEM_ALLOC);
}
