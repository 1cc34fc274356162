/* chunk_tinv_mma.cuh - T = (I + A)^-1's blocks below the diagonal by tensor
 * cores (tf32 mma.sync m16n8k8, float32 accumulation), for the fused chunk
 * kernel's option fused_tmma (chunk_fused_cp.cu).  The same block equations
 * as chunk_tile.cuh's lk_t_offdiag:
 *   X_ij = sum_{k=j}^{i-1} A_ik T_kj,   T_ij = -T_ii X_ij
 * but by block column instead of by level: column j of T below the diagonal
 * needs only A, the diagonal blocks and the column's own earlier blocks, so
 * one warp makes a 16 x 8 half of a column (warps 0-5: columns 0, 1, 2 by
 * halves; column 3 has no block below the diagonal) with no barrier between
 * its blocks, only __syncwarp around X's trip through shared memory (the
 * accumulator layout is not the B operand's).  The operands are rounded to
 * tf32 (10-bit mantissa; T goes to 16 bits after this anyway). */
#ifndef SGL_LIN_CHUNK_TINV_MMA_CUH
#define SGL_LIN_CHUNK_TINV_MMA_CUH

#include "chunk_tile.cuh"

/* float -> tf32 (cvt.rna: nearest, ties away from zero), as the b32 operand of the mma */
LK_DEV uint32_t lk_tf32(float f) {
#ifdef LK_EMU
    return lk_emu_cvt_tf32(f);
#else
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
#endif
}

/* c += a b (16 x 8 x 8, tf32 operands, f32 accumulate).  Fragments (g = lane / 4, t = lane % 4):
 * A a0 (g, t) a1 (g + 8, t) a2 (g, t + 4) a3 (g + 8, t + 4); B b0 (k t, n g) b1 (k t + 4, n g);
 * C as m16n8k16's */
LK_DEV void lk_mma_tf32(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#ifdef LK_EMU
    lk_emu_mma_tf32(c, a, b0, b1);
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* A 16 x 8 tf32 A fragment of a float32 array at (r0, c0), rows of ld floats */
LK_DEV void lk_lda_tf32(uint32_t a[4], const float *base, int ld, int r0, int c0, int g, int t4) {
    a[0] = lk_tf32(base[(r0 + g) * ld + c0 + t4]);
    a[1] = lk_tf32(base[(r0 + g + 8) * ld + c0 + t4]);
    a[2] = lk_tf32(base[(r0 + g) * ld + c0 + t4 + 4]);
    a[3] = lk_tf32(base[(r0 + g + 8) * ld + c0 + t4 + 4]);
}

/* Rows of A and T (float32) for this variant: 68 floats, 4 banks apart, so the A fragments' 32
 * addresses (rows g, columns t) fall in 32 banks (LK_TAP's 65 puts 4 lanes on a bank) */
#define LK_TAP_MMA (LIN_CHUNK + 4)

/* T's blocks below the diagonal (the diagonal ones done and visible to every warp), both float32 in
 * rows of LK_TAP_MMA, and T in 16 bits (t16, rows of LIN_CHUNK + 8; lk_t_to16's form): warp w < 6
 * makes rows 16 (j + 1) .. 63 of columns 16 j + 8 h .. + 7 (j = w / 2, h = w % 2), in float32 for its
 * later blocks and in 16 bits; X_ij goes through the unused upper block (j, i) at the warp's own 8
 * columns.  Warps 6 and 7 put the diagonal blocks in 16 bits.  t16's blocks above the diagonal are
 * not written (the caller zeroes them once).  No block barrier: the caller syncs before reading t16. */
template <int OT> LK_DEV void lk_t_offdiag_mma(const float *Af, float *Tf, uint16_t *t16, int warp, int lane) {
    constexpr int AP = LK_TAP_MMA, CP = LIN_CHUNK + 8;
    if (warp >= 6) {
        for (int e = 32 * (warp - 6) + lane; e < 4 * 256; e += 64) {
            const int b = e >> 8, r = (e >> 4) & 15, c = e & 15;
            t16[(16 * b + r) * CP + 16 * b + c] = lk_to16<OT>(c <= r ? Tf[(16 * b + r) * AP + 16 * b + c] : 0.f);
        }
        return;
    }
    const int jb = warp >> 1, col0 = 16 * jb + 8 * (warp & 1), g = lane >> 2, t4 = lane & 3;
    for (int ib = jb + 1; ib < 4; ib++) {
        /* X = sum_k A_ik T_kj (16 x 8): k from 16 jb to 16 ib, 8 at a step; two chains */
        float x0[4] = {0.f, 0.f, 0.f, 0.f}, x1[4] = {0.f, 0.f, 0.f, 0.f};
        for (int kb = jb; kb < ib; kb++) {
#pragma unroll
            for (int ks = 0; ks < 2; ks++) {
                const int k0 = 16 * kb + 8 * ks;
                uint32_t a[4];
                lk_lda_tf32(a, Af, AP, 16 * ib, k0, g, t4);
                const uint32_t b0 = lk_tf32(Tf[(k0 + t4) * AP + col0 + g]);
                const uint32_t b1 = lk_tf32(Tf[(k0 + t4 + 4) * AP + col0 + g]);
                lk_mma_tf32(ks ? x1 : x0, a, b0, b1);
            }
        }
        /* X (C layout) to the upper block (jb, ib), the warp's 8 columns, for its B fragments */
        float *xs = Tf + 16 * jb * AP + 16 * ib + 8 * (warp & 1);
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            xs[(g + 8 * hf) * AP + 2 * t4] = x0[2 * hf] + x1[2 * hf];
            xs[(g + 8 * hf) * AP + 2 * t4 + 1] = x0[2 * hf + 1] + x1[2 * hf + 1];
        }
        __syncwarp();
        /* T_ij = -T_ii X (16 x 8 x 16) */
        float y[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            uint32_t a[4];
            lk_lda_tf32(a, Tf, AP, 16 * ib, 16 * ib + 8 * ks, g, t4);
            const uint32_t b0 = lk_tf32(xs[(8 * ks + t4) * AP + g]);
            const uint32_t b1 = lk_tf32(xs[(8 * ks + t4 + 4) * AP + g]);
            lk_mma_tf32(y, a, b0, b1);
        }
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * ib + g + 8 * hf, i = col0 + 2 * t4;
            if (ib + 1 < 4) { /* a later block of the column reads it */
                Tf[t * AP + i] = -y[2 * hf];
                Tf[t * AP + i + 1] = -y[2 * hf + 1];
            }
            *(uint32_t *)(t16 + t * CP + i) = lk_pack2<OT>(-y[2 * hf], -y[2 * hf + 1]);
        }
        __syncwarp(); /* this block is the next one's B operand, and xs is rewritten */
    }
}

#endif
