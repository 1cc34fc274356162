/*
 * chunk_mma.cuh - tensor-core building blocks of the chunked kernels (SM 8.0+):
 * mma.sync m16n8k16 (16-bit in, f32 accumulate) and ldmatrix address helpers
 * for tiles stored row-major with rows padded by 8 elements (16 bytes), which
 * keeps the 8 row addresses of an ldmatrix in 8 different bank groups.
 *
 * Fragments (PTX ISA, g = lane / 4, t = lane % 4):
 *   A 16x16: a0 (g, 2t..2t+1) a1 (g+8, 2t..) a2 (g, 8+2t..) a3 (g+8, 8+2t..)
 *   B 16x8:  b0 (k 2t..2t+1, n g) b1 (k 8+2t.., n g)
 *   C 16x8:  c0 c1 (g, 2t..2t+1) c2 c3 (g+8, 2t..2t+1)
 * The four loaders below return, for a tile at (r0, c0) of a row-major array
 * with `ld` elements per row:
 *   lk_lda     A = the tile (rows m, cols k)                        ldmatrix
 *   lk_lda_t   A = transpose of the tile (tile rows k, cols m)      ldmatrix.trans
 *   lk_ldb_n   B for two n8 tiles, tile rows n, cols k ("n-major")  ldmatrix
 *   lk_ldb_k   B for two n8 tiles, tile rows k, cols n ("k-major")  ldmatrix.trans
 * (the B loaders: r[0], r[1] = b0, b1 of n-tile n0; r[2], r[3] of n0 + 8).
 */
#ifndef SGL_LIN_CHUNK_MMA_CUH
#define SGL_LIN_CHUNK_MMA_CUH

#include "kernel_common.cuh"

#ifdef LK_EMU /* the CPU emulator of the tests: same fragment semantics */
LK_DEV void lk_ldsm4(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 0); }
LK_DEV void lk_ldsm4_t(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 1); }
#else
LK_DEV uint32_t lk_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

LK_DEV void lk_ldsm4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(lk_smem_u32(p)));
}
LK_DEV void lk_ldsm4_t(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(lk_smem_u32(p)));
}
#endif

/* lane's row address of each loader (see the table above) */
LK_DEV void lk_lda(uint32_t r[4], const uint16_t *base, int ld, int r0, int c0) {
    const int l = threadIdx.x & 31;
    lk_ldsm4(r, base + (r0 + (l & 15)) * ld + c0 + (l >> 4) * 8);
}
LK_DEV void lk_lda_t(uint32_t r[4], const uint16_t *base, int ld, int k0, int m0) {
    const int l = threadIdx.x & 31;
    lk_ldsm4_t(r, base + (k0 + (l & 7) + ((l >> 4) << 3)) * ld + m0 + ((l >> 3) & 1) * 8);
}
LK_DEV void lk_ldb_n(uint32_t r[4], const uint16_t *base, int ld, int n0, int k0) {
    const int l = threadIdx.x & 31;
    lk_ldsm4(r, base + (n0 + (l & 7) + ((l >> 4) << 3)) * ld + k0 + ((l >> 3) & 1) * 8);
}
LK_DEV void lk_ldb_k(uint32_t r[4], const uint16_t *base, int ld, int k0, int n0) {
    const int l = threadIdx.x & 31;
    lk_ldsm4_t(r, base + (k0 + (l & 7) + ((l >> 3) & 1) * 8) * ld + n0 + (l >> 4) * 8);
}

/* c += a * b (16x8x16); OT = LIN_DT_BF16 or LIN_DT_F16. */
template <int OT> LK_DEV void lk_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#ifdef LK_EMU
    lk_emu_mma(c, a, b0, b1, OT == LIN_DT_BF16);
#else
    if (OT == LIN_DT_BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* 16-bit operand values (bf16 by the hardware cvt: gpu_compat.h's gc_bf16_rn; the integer form took ~40% of
 * the fused chunk step's instructions) */
template <int OT> LK_DEV uint16_t lk_to16(float f) { return OT == LIN_DT_BF16 ? gc_bf16_rn(f) : gc_f32_to_f16(f); }
template <int OT> LK_DEV float lk_from16(uint16_t h) { return OT == LIN_DT_BF16 ? gc_bf16_to_f32(h) : gc_f16_to_f32(h); }
template <int OT> LK_DEV uint32_t lk_pack2(float lo, float hi) {
    if (OT == LIN_DT_BF16) return gc_bf16x2_rn(lo, hi);
    return (uint32_t)lk_to16<OT>(lo) | ((uint32_t)lk_to16<OT>(hi) << 16);
}


/* One warp's 16 rows r0 .. r0 + 15 of two products that share their B operand
 * (n-major: NT n8 tiles of rows n, columns k .. KD), all tiles ld elements a row:
 *   P += A1 B^T   and, when dual,   X += A2 B^T
 * (q k^T and k k^T of phase 1: chunk_fused_ut.cu, chunk_prep_ut.cu).  The n16
 * pairs past npmax are skipped (warp-uniform; NT / 2 - 1 skips none). */
template <int OT, int KD, int NT>
LK_DEV void lk_rows_mul_n2(float (&P)[NT][4], float (&X)[NT][4], const uint16_t *A1, const uint16_t *A2, bool dual,
                           const uint16_t *B, int ld, int r0, int npmax) {
#pragma unroll
    for (int k16 = 0; k16 < KD / 16; k16++) {
        uint32_t a1[4], a2[4];
        lk_lda(a1, A1, ld, r0, 16 * k16);
        if (dual) lk_lda(a2, A2, ld, r0, 16 * k16);
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            if (np > npmax) continue;
            uint32_t b[4];
            lk_ldb_n(b, B, ld, 16 * np, 16 * k16);
            lk_mma<OT>(P[2 * np], a1, b[0], b[1]);
            lk_mma<OT>(P[2 * np + 1], a1, b[2], b[3]);
            if (dual) {
                lk_mma<OT>(X[2 * np], a2, b[0], b[1]);
                lk_mma<OT>(X[2 * np + 1], a2, b[2], b[3]);
            }
        }
    }
}

/* acc += A[r0 .. r0 + 15][0 .. KD) B for the NT n8 tiles of B (k-major: rows k,
 * columns n, ldb elements a row): one warp's 16 rows of M Unew in phase 2.  kmax
 * (warp-uniform) stops after k16 block kmax, where A is zero past it (a lower-
 * triangular M); the default takes every block and compiles to no test. */
template <int OT, int KD, int NT>
LK_DEV void lk_rows_mul_k(float (&acc)[NT][4], const uint16_t *A, int lda, const uint16_t *B, int ldb, int r0,
                          int kmax = KD / 16 - 1) {
#pragma unroll
    for (int k16 = 0; k16 < KD / 16; k16++) {
        if (k16 > kmax) break;
        uint32_t a[4];
        lk_lda(a, A, lda, r0, 16 * k16);
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b[4];
            lk_ldb_k(b, B, ldb, 16 * k16, 16 * np);
            lk_mma<OT>(acc[2 * np], a, b[0], b[1]);
            lk_mma<OT>(acc[2 * np + 1], a, b[2], b[3]);
        }
    }
}

/* A warp's 16 output rows of phase 2 (accumulators O, rows r0 + .., columns v < nv) to out rows ct0 + t < len
 * (HV * V elements a token) from column ocol, in out's dtype; mamba2 adds its D x term first, element (t, v) of
 * sk (rows of ldsk floats: the skip in global memory, or a stage of it in shared memory), where sk is given.
 * ODT = LIN_DT_BF16: out is bf16, 4-byte aligned at even columns (the caller checks), stored a pair at a time. */
template <int NT, int ODT = -1>
LK_DEV void lk_store_out_rows(const lin_fwd &p, const float (&O)[NT][4], int64_t ct0, int len, int HV, int V,
                              int64_t ocol, int nv, const float *sk, int64_t ldsk, int r0, int g, int t4) {
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = r0 + g + 8 * hf, v = 8 * nt + 2 * t4;
            if (t >= len || v >= nv) continue;
            const int64_t at = (ct0 + t) * HV * V + ocol + v;
            float o0 = O[nt][2 * hf], o1 = O[nt][2 * hf + 1];
            if (sk) {
                o0 += sk[t * ldsk + v];
                o1 += sk[t * ldsk + v + 1];
            }
            if constexpr (ODT == LIN_DT_BF16) {
                *(uint32_t *)((uint16_t *)p.out + at) = lk_pack2<LIN_DT_BF16>(o0, o1);
            } else {
                lk_st(p.out, p.out_dt, at, o0);
                lk_st(p.out, p.out_dt, at + 1, o1);
            }
        }
}

/* One chunk's state update of the phase-2 kernels (chunk_fused_state.cu,
 * chunk_state.cu), for warp w's NB n8 tiles of key columns, 8 NB w .. 8 NB w + 8 NB - 1
 * (4 warps: 32 columns each; 8 warps: 16), of a [16 MT][K] state tile held in float32
 * mma accumulators:  S = S diag(eG) + U^T KD (C = 64 tokens), then the 16-bit copy Sb
 * the next chunk's products read.  eGs: per key column (gch, kda) or one value. */
template <int OT, int MT, int C, int NB = 4>
LK_DEV void lk_state_step(float (&S)[MT][NB][4], const float *eGs, bool gch, const uint16_t *KDs, int kp,
                          const uint16_t *U, int ldu, uint16_t *Sb, int warp, int g, int t4) {
    static_assert(NB % 2 == 0, "the KD fragments come in n16 pairs");
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int e = 0; e < 4; e++) S[a][b][e] *= eGs[gch ? 8 * NB * warp + 8 * b + 2 * t4 + (e & 1) : 0];
#pragma unroll
    for (int k16 = 0; k16 < C / 16; k16++) {
        uint32_t bk[NB / 2][4];
#pragma unroll
        for (int bp = 0; bp < NB / 2; bp++) lk_ldb_k(bk[bp], KDs, kp, 16 * k16, 8 * NB * warp + 16 * bp);
#pragma unroll
        for (int a = 0; a < MT; a++) {
            uint32_t au[4];
            lk_lda_t(au, U, ldu, 16 * k16, 16 * a);
#pragma unroll
            for (int bp = 0; bp < NB / 2; bp++) {
                lk_mma<OT>(S[a][2 * bp], au, bk[bp][0], bk[bp][1]);
                lk_mma<OT>(S[a][2 * bp + 1], au, bk[bp][2], bk[bp][3]);
            }
        }
    }
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = 8 * NB * warp + 8 * b + 2 * t4;
                *(uint32_t *)(Sb + v * kp + c) = lk_pack2<OT>(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
            }
}

/* The phase-2 state tile's float32 accumulators (lk_state_step's layout: element e of (m-tile a,
 * n-tile b) is row 16 a + g + 8 (e >> 1), key column 8 NB warp + 8 b + 2 t4 + (e & 1)) from the pool's
 * rows at `base` (LIN_TC_K elements a row; zeros when !init), and their 16-bit copy to Sb (rows of kp)
 * for the first chunk's products. */
template <int OT, int MT, int NB = 4>
LK_DEV void lk_state_load(const lin_fwd &p, int64_t base, bool init, float (&S)[MT][NB][4], uint16_t *Sb, int kp,
                          int warp, int g, int t4) {
    const bool sbf = p.st_dt == LIN_DT_BF16;
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = 8 * NB * warp + 8 * b + 2 * t4;
                if (!init) S[a][b][2 * hf] = S[a][b][2 * hf + 1] = 0.f;
                else if (sbf) lk_sld<LIN_DT_BF16, 2>(p.ssm_state, base + (int64_t)v * LIN_TC_K + c, &S[a][b][2 * hf]);
                else lk_sld<LIN_DT_F32, 2>(p.ssm_state, base + (int64_t)v * LIN_TC_K + c, &S[a][b][2 * hf]);
                *(uint32_t *)(Sb + v * kp + c) = lk_pack2<OT>(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
            }
}

/* The state tile back to the pool's rows at `base` (lk_state_load's layout). */
template <int MT, int NB = 4>
LK_DEV void lk_state_store(const lin_fwd &p, int64_t base, const float (&S)[MT][NB][4], int warp, int g, int t4) {
    const bool sbf = p.st_dt == LIN_DT_BF16;
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = 8 * NB * warp + 8 * b + 2 * t4;
                if (sbf) lk_sst<LIN_DT_BF16, 2>(p.ssm_state, base + (int64_t)v * LIN_TC_K + c, &S[a][b][2 * hf]);
                else lk_sst<LIN_DT_F32, 2>(p.ssm_state, base + (int64_t)v * LIN_TC_K + c, &S[a][b][2 * hf]);
            }
}

#endif
