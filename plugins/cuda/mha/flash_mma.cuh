/*
 * flash_mma.cuh - the pieces of the mma.sync flash loop that the decode
 * (decode_mma.cu) and the extend (extend_mma.cu) share (CUDA, SM 8.0+): the
 * fill of the K/V pipeline (S stages of TILE columns, one cp.async group a
 * tile), the rescale of the O accumulators and P re-packed as the A operand
 * of O += P V.  A warp holds 16 rows; a thread's fragments are mma.sync
 * m16n8k16's (rows g and g + 8, columns 2 t4 and 2 t4 + 1 of each 8-column
 * block).
 */
#ifndef SGL_CUDA_ATTN_FLASH_MMA_CUH
#define SGL_CUDA_ATTN_FLASH_MMA_CUH

#include "kv_loader.cuh"

/* The first S - 1 tiles of the columns [lo, hi) of request row `row` into
 * stages 0 .. S - 2 (K tiles k_elems apart at ks, V tiles v_elems apart at
 * vs); one group a stage, empty past ntiles. */
template <int S, int TILE, class LD>
GC_DEV void kv_pipe_fill(LD &ld, const attn_fwd &p, int kvh, uint16_t *ks, uint16_t *vs, int k_elems, int v_elems,
                         int row, int lo, int hi, int ntiles) {
    ld.fetch_slots(p, row, lo, hi);
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < ntiles) {
            ld.issue(p, kvh, ks + s * k_elems, vs + s * v_elems, lo + s * TILE, hi);
            ld.fetch_slots(p, row, lo + (s + 1) * TILE, hi);
        }
        gc_cp_async_commit();
    }
}

/* O's rows g (corr[0]) and g + 8 (corr[1]) times their softmax correction. */
template <int NB> GC_DEV void o_rescale(float (&o)[NB][4], const float (&corr)[2]) {
#pragma unroll
    for (int n = 0; n < NB; n++) {
        o[n][0] *= corr[0];
        o[n][1] *= corr[0];
        o[n][2] *= corr[1];
        o[n][3] *= corr[1];
    }
}

/* P of keys k0 .. k0 + 15 as the A operand of O += P V: re-packed from the S
 * accumulators of keys k0 .. k0 + 7 (s0) and k0 + 8 .. k0 + 15 (s1). */
template <int DT> GC_DEV void p_pack(uint32_t (&pa)[4], const float (&s0)[4], const float (&s1)[4]) {
    pa[0] = pack2<DT>(s0[0], s0[1]);
    pa[1] = pack2<DT>(s0[2], s0[3]);
    pa[2] = pack2<DT>(s1[0], s1[1]);
    pa[3] = pack2<DT>(s1[2], s1[3]);
}

#endif
