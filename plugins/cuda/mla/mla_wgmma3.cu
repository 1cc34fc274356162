/*
 * mla_wgmma3.cu - wgmma2 (mla_wgmma2.cu) with warpgroup 1 one step deeper in
 * its software pipeline (SGL_ATTN_MLA_KERNEL=wgmma3, opt-in).  The kernel body
 * is mla_seesaw_body<3> (mla_seesaw.cuh); WG0's side is wgmma2's, unchanged.
 *
 * wgmma2's WG1, per pair: BAR_A -> softmax(S_b) -> arrive BAR_B -> O_R *=
 * a_a a_b -> (P_a a_b) V_aR, P_b V_bR -> wait -> reload K0 4-7, K1 rope ->
 * wait -> reload K1 4-7 -> all 9 sub-tiles of S_{b+2} -> wait.  So while WG1
 * ran its softmax the tensor pipe held only WG0's P_a V_aL, K0's sub-tiles 4-7
 * (which WG0's next QK^T needs) were freed only after BAR_B plus a P V, and
 * S_{b+2} started only after both P V were done.  Here, per pair:
 *  - P_a V_aR is issued right after BAR_A, before softmax(S_b) (it needs only
 *    a_a and P_a): O_R = (O_R a_a + P_a V_aR) a_b + P_b V_bR, the same sum,
 *    with P_a rounded to bf16 once (wgmma2: twice);
 *  - K1's rope is reloaded at the pair start (free since S_b), K0 4-7 right
 *    after BAR_B, as soon as P_a V_aR is done;
 *  - S_{b+2}'s rope and sub-tiles 0-3 are issued right behind P_b V_bR, and
 *    4-7 once it is done and they are reloaded (what WG0 does with S_{a+2}).
 * So while WG1's softmax runs, the tensor pipe holds both warpgroups' P_a V_a
 * halves, and WG0's next QK^T finds K0 4-7 loaded earlier.
 * Not done: S_{b+2} left in flight across the next BAR_A (waited behind the
 * next P_a V_aR).  ptxas serialises every wgmma then (C7514: the O rescale by
 * a_a falls inside S's pipeline stage; C7518 when the pair loop is shared
 * with WG0), and the rescale cannot move out of it.
 * Registers: WG1 holds O and P_a (in flight) and S during its softmax, as
 * wgmma2 held O, P_a and P_b: 255, no spills.
 */
#include <string.h>

#include "mla_seesaw.cuh"

__global__ __launch_bounds__(WG_THREADS, 1) void mla_wgmma3_kernel(const __grid_constant__ mla_fwd_args a,
                                                                  const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_seesaw_body<3>(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_wgmma3_smem_bytes(void) { return WG_SMEM_ALLOC; }

extern "C" int mla_launch_wgmma3(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || a->rows_per_tile != 64 || !a->tmap)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    mla_wgmma3_kernel<<<a->grid_items, WG_THREADS, WG_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_wgmma3_init(void) {
    return (int)cudaFuncSetAttribute(mla_wgmma3_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)WG_SMEM_ALLOC);
}
