/* lk_split2.cu - phase 2 of the chunked extend split in two
 * (SGL_ATTN_LIN_CHUNK2=split): the sequential pass over a request's chunks
 * does only what the recurrence needs, and the outputs are a third, fully
 * parallel kernel.  Inputs: phase 1's W, KD, U, exp(G_last) (state pass) and
 * QG, M (outputs), either phase 1.
 *
 * State pass: one block per (request, value head, tile of VT state rows), 4
 * compute warps (v3: 8, lk_cstate.cuh), the tile [VT][128] in float32 mma accumulators (warp w owns
 * columns 32w ..), and a producer warp that keeps the chunks' W, KD, U tile,
 * exp(G_last) coming in a 3-stage cp.async ring (two chunks in flight while
 * one computes) and stores the per-chunk states, so the compute warps' chain
 * per chunk is only W S^T (two accumulator chains), a barrier, the update, a
 * barrier.  Per chunk:
 *   Hs[chunk] = S (16-bit: the operand the outputs use; the old phase 2's
 *               shared-memory copy, stored)
 *   Unew      = U - W S^T  (delta; declin: U)  -> in place of U
 *   S         = S diag(eG) + Unew^T KD
 * Output pass: one block per (chunk, value head, half of V), 4 warps (16
 * token rows each): o = QG Hs[chunk]^T + M Unew (+ D x), the same products
 * in the same order as lk_chunk2.cu, so both give the same outputs. */
#include "lk_cstate.cuh"

template <int VH, int UN = 0> struct lk_s3 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VHP = VH + 8;
    /* QG, S, M, Unew (UN: U, then Unew in place), UN: W */
    static constexpr int SMEM = C * KP * 2 + VH * KP * 2 + C * CP * 2 + C * VHP * 2 + UN * C * KP * 2;
};
#define LK_S3_VH 64 /* output columns per block */

/* acc = A[r0 .. r0 + 15][0 .. K) S^T for the 8 NT state rows of Ss (both row-major, kp elements a row):
 * one warp's 16 rows of QG S^T or W S^T */
template <int OT, int K, int NT>
LK_DEV void lk_rows_state_t(float (&acc)[NT][4], const uint16_t *A, const uint16_t *Ss, int kp, int r0) {
#pragma unroll
    for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
    for (int k16 = 0; k16 < K / 16; k16++) {
        uint32_t a[4];
        lk_lda(a, A, kp, r0, 16 * k16);
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b[4];
            lk_ldb_n(b, Ss, kp, 16 * np, 16 * k16);
            lk_mma<OT>(acc[2 * np], a, b[0], b[1]);
            lk_mma<OT>(acc[2 * np + 1], a, b[2], b[3]);
        }
    }
}

/* Grid: (chunk, value head, V / VH).
 * V2 (SGL_ATTN_LIN_COUT=v2): the same products in the same order (the same
 * outputs), grid (chunk x V / VH, value head): the two column halves of a
 * (chunk, head) run side by side, so the second one's QG and M come from L2
 * (v1 runs all first halves, then all second halves: 0.2 GB more DRAM
 * reads at 64k tokens); QG and the state land first (a cp.async group of
 * their own) and QG Hs^T runs while M and Unew fly; 16-bit outputs leave as
 * 16-byte rows staged in the warp's own QG rows (v1: 2-byte stores).
 * UN (with V2; SGL_ATTN_LIN_CSTATE=v5, whose state pass leaves U as it is):
 * Unew = U - W Hs[chunk]^T first, rounded to 16 bits as the v2 state pass
 * rounds it (W lands with QG and the state). */
template <int OT, int V2 = 0, int UN = 0>
__global__ __launch_bounds__(LK_S3_THREADS) void lin_cout_kernel(lin_fwd p) {
    static_assert(!UN || V2, "Unew here: the v2 grid only");
    constexpr int VH = LK_S3_VH;
    using L = lk_s3<VH, UN>;
    constexpr int C = L::C, K = L::K, KP = L::KP, CP = L::CP, VHP = L::VHP;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *QGs = (uint16_t *)smraw, *Ss = QGs + C * KP, *Ms = Ss + VH * KP, *Us = Ms + C * CP, *Ws = Us + C * VHP;
    const int NZ = V2 ? (p.V + VH - 1) / VH : 1;
    const int j = (int)blockIdx.x / NZ;
    if (j >= *p.pl.num_chunks) return;
    const int h = blockIdx.y, V = p.V, HV = p.hv, v0 = (V2 ? (int)blockIdx.x % NZ : (int)blockIdx.z) * VH;
    const int nv = min(VH, V - v0);
    const int i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    const int64_t ct0 = p.pl.chunk_tok0[j];
    const int len = p.pl.chunk_len[j];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const int64_t ocol = (int64_t)h * V + v0;
    if (slot < 0) { /* padding */
        for (int idx = tid; idx < len * nv; idx += LK_S3_THREADS)
            lk_st(p.out, p.out_dt, (ct0 + idx / nv) * HV * V + ocol + idx % nv, 0.f);
        return;
    }
    for (int idx = tid; idx < C * (K / 8); idx += LK_S3_THREADS) {
        const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
        const bool ok = t < len;
        lk_cp_async16(QGs + t * KP + cc, (const uint16_t *)p.QGt + ((ct0 + (ok ? t : 0)) * HV + h) * K + cc, ok);
        if (UN) lk_cp_async16(Ws + t * KP + cc, (const uint16_t *)p.Wt + ((ct0 + (ok ? t : 0)) * HV + h) * K + cc, ok);
    }
    for (int idx = tid; idx < VH * (K / 8); idx += LK_S3_THREADS) {
        const int v = idx / (K / 8), cc = (idx % (K / 8)) * 8;
        const bool ok = v < nv;
        lk_cp_async16(Ss + v * KP + cc, (const uint16_t *)p.Hs + (((int64_t)j * HV + h) * V + v0 + (ok ? v : 0)) * K + cc,
                      ok);
    }
    if (V2) lk_cp_async_commit(); /* group 0: QG, the state */
    for (int idx = tid; idx < C * (C / 8); idx += LK_S3_THREADS) {
        const int t = idx / (C / 8), cc = (idx % (C / 8)) * 8;
        const bool ok = t < len;
        lk_cp_async16(Ms + t * CP + cc, (const uint16_t *)p.Mt + ((ct0 + (ok ? t : 0)) * HV + h) * C + cc, ok);
    }
    for (int idx = tid; idx < C * (VH / 8); idx += LK_S3_THREADS) {
        const int t = idx / (VH / 8), cc = (idx % (VH / 8)) * 8;
        const bool ok = t < len && cc < nv;
        lk_cp_async16(Us + t * VHP + cc, (const uint16_t *)p.Ut + (ct0 + (ok ? t : 0)) * HV * V + ocol + (ok ? cc : 0), ok);
    }
    /* wait_group waits for committed groups only: without this commit the
     * reads below raced the copies (racecheck, H200, 2026-12-02) */
    lk_cp_async_commit();
    if (V2) lk_cp_async_wait<1>(); /* QG, the state */
    else lk_cp_async_wait_all();
    __syncthreads();
    float O[VH / 8][4];
    lk_rows_state_t<OT, K>(O, QGs, Ss, KP, 16 * warp); /* QG S^T */
    if (V2) { /* M, Unew (UN: U) */
        lk_cp_async_wait_all();
        __syncthreads();
    }
    if (UN) { /* Unew = U - W S^T: the warp's 16 rows, in place */
        float X[VH / 8][4];
        lk_rows_state_t<OT, K>(X, Ws, Ss, KP, 16 * warp);
#pragma unroll
        for (int nt = 0; nt < VH / 8; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int t = 16 * warp + g + 8 * hf, v = 8 * nt + 2 * t4;
                uint16_t *u = Us + t * VHP + v;
                const float u0 = lk_from16<OT>(u[0]) - X[nt][2 * hf], u1 = lk_from16<OT>(u[1]) - X[nt][2 * hf + 1];
                *(uint32_t *)u = lk_pack2<OT>(u0, u1);
            }
        __syncthreads(); /* every row of Unew, for M Unew */
    }
#pragma unroll
    for (int k16 = 0; k16 < C / 16; k16++) {
        uint32_t am[4];
        lk_lda(am, Ms, CP, 16 * warp, 16 * k16);
#pragma unroll
        for (int np = 0; np < VH / 16; np++) {
            uint32_t b[4];
            lk_ldb_k(b, Us, VHP, 16 * k16, 16 * np);
            lk_mma<OT>(O[2 * np], am, b[0], b[1]);
            lk_mma<OT>(O[2 * np + 1], am, b[2], b[3]);
        }
    }
    const bool SKIP = p.kind == LIN_MAMBA2;
    if (V2 && !SKIP && p.out_dt != LIN_DT_F32 && V % 8 == 0 && ((uintptr_t)p.out & 15) == 0) {
        /* the warp's 16 rows x VH columns, 16-bit, over its own QG rows (only this warp read them) */
        uint16_t *stg = QGs + 16 * warp * KP;
        const bool bf = p.out_dt == LIN_DT_BF16;
        __syncwarp();
#pragma unroll
        for (int nt = 0; nt < VH / 8; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const float o0 = O[nt][2 * hf], o1 = O[nt][2 * hf + 1];
                *(uint32_t *)(stg + (g + 8 * hf) * KP + 8 * nt + 2 * t4) =
                    bf ? lk_pack2<LIN_DT_BF16>(o0, o1) : lk_pack2<LIN_DT_F16>(o0, o1);
            }
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 16 * VH / 8 / 32; k++) {
            const int idx = lane + 32 * k, tl = idx / (VH / 8), c8 = 8 * (idx % (VH / 8)), t = 16 * warp + tl;
            if (t >= len || c8 >= nv) continue;
            uint16_t *dst = (uint16_t *)p.out + (ct0 + t) * HV * V + ocol + c8;
            LK_ALIGNED(dst, 16);
            LK_ALIGNED(stg + tl * KP + c8, 16);
            *(uint4 *)dst = *(const uint4 *)(stg + tl * KP + c8);
        }
        return;
    }
#pragma unroll
    for (int nt = 0; nt < VH / 8; nt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * warp + g + 8 * hf, v = 8 * nt + 2 * t4;
            if (t >= len || v >= nv) continue;
            const int64_t at = (ct0 + t) * HV * V + ocol + v;
            float o0 = O[nt][2 * hf], o1 = O[nt][2 * hf + 1];
            if (SKIP) {
                o0 += p.Sk[at];
                o1 += p.Sk[at + 1];
            }
            lk_st(p.out, p.out_dt, at, o0);
            lk_st(p.out, p.out_dt, at + 1, o1);
        }
}

/* ------------------------------------------------------------ launchers */

static_assert(lk_s2<32>::SMEM <= (int)LIN_C1_SMEM && lk_s3<LK_S3_VH>::SMEM <= (int)LIN_C1_SMEM,
              "the split kernels need at most phase 1's shared memory (lin_create.c checks that one)");

int lk_split1_setup(void); /* lk_split1.cu */

extern "C" int lin_split_setup(void) {
    const void *k[9] = {(const void *)lin_cstate_kernel<LIN_DT_BF16, 16, 1>, (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 1>,
                        (const void *)lin_cout_kernel<LIN_DT_BF16>, (const void *)lin_cstate_kernel<LIN_DT_BF16, 16, 4>,
                        (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 4>,
                        (const void *)lin_cstate_kernel<LIN_DT_BF16, 16, 4, 0, 8>,
                        (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 4, 0, 8>,
                        (const void *)lin_cstate_kernel<LIN_DT_BF16, 16, 4, 0, 4, true>,
                        (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 4, 0, 4, true>};
    const int sm[9] = {lk_s2<16>::SMEM, lk_s2<32>::SMEM, lk_s3<LK_S3_VH>::SMEM, lk_s2<16>::SMEM, lk_s2<32>::SMEM,
                       lk_s2<16>::SMEM, lk_s2<32>::SMEM, lk_s2<16>::SMEM, lk_s2<32>::SMEM};
    int e = 0;
    for (int i = 0; i < 9 && !e; i++) e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm[i]);
    if (!e) e = lk_split1_setup();
    if (!e) e = (int)cudaFuncSetAttribute((const void *)lin_cout_kernel<LIN_DT_BF16, 1>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s3<LK_S3_VH>::SMEM);
    if (!e) e = (int)cudaFuncSetAttribute((const void *)lin_cout_kernel<LIN_DT_BF16, 1, 1>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s3<LK_S3_VH, 1>::SMEM);
    return e;
}

extern "C" int lin_launch_split2(const lin_fwd *pp, int ot, int vt, void *stream) {
    const lin_fwd &p = *pp;
    /* bf16 operands only (the binary's size: f16 takes the fused phase 2) */
    if (!p.Hs || (vt != 16 && vt != 32) || ot != LIN_DT_BF16) return (int)cudaErrorInvalidValue;
    cudaStream_t st = (cudaStream_t)stream;
    int e;
    const bool un = p.c2_pq && (p.kind == LIN_GDN || p.kind == LIN_KDA);
    if (p.cscan_m > 0) { /* SGL_ATTN_LIN_CSTATE=scan: the same states by groups of chunks (lk_cscan.cu) */
        e = lin_launch_cscan(pp, stream);
    } else if (un) { /* SGL_ATTN_LIN_CSTATE=v5: P first, one product per chunk (lk_cstate5.cu) */
        e = lin_launch_cstate5(pp, vt, stream);
    } else {
        dim3 g2((unsigned)p.bs, (unsigned)(p.hv * (p.V / vt)));
        void (*k2)(lin_fwd);
        int nth = LK_S2_THREADS_NP(p.c2_np == 4 ? 4 : 1);
        if (p.c2_cw == 8) { /* SGL_ATTN_LIN_CSTATE=v3: 8 compute warps, v2's 4 producers */
            k2 = vt == 16 ? lin_cstate_kernel<LIN_DT_BF16, 16, 4, 0, 8> : lin_cstate_kernel<LIN_DT_BF16, 32, 4, 0, 8>;
            nth = LK_S2_THREADS_CW(8, 4);
        } else if (p.c2_ws && p.c2_np == 4) { /* SGL_ATTN_LIN_CSTATE=v4: v2 with named-barrier hand-offs */
            k2 = vt == 16 ? lin_cstate_kernel<LIN_DT_BF16, 16, 4, 0, 4, true> : lin_cstate_kernel<LIN_DT_BF16, 32, 4, 0, 4, true>;
        } else if (p.c2_np == 4) k2 = vt == 16 ? lin_cstate_kernel<LIN_DT_BF16, 16, 4> : lin_cstate_kernel<LIN_DT_BF16, 32, 4>;
        else k2 = vt == 16 ? lin_cstate_kernel<LIN_DT_BF16, 16, 1> : lin_cstate_kernel<LIN_DT_BF16, 32, 1>;
        LK_LAUNCH(k2, g2, nth, vt == 16 ? lk_s2<16>::SMEM : lk_s2<32>::SMEM, st, p);
        e = (int)cudaGetLastError();
    }
    if (e) return e;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    const unsigned nz = (unsigned)((p.V + LK_S3_VH - 1) / LK_S3_VH);
    dim3 g3((unsigned)chunks, (unsigned)p.hv, nz);
    void (*k3)(lin_fwd) = lin_cout_kernel<LIN_DT_BF16>;
    if (p.c3_out == 2 || un) { /* SGL_ATTN_LIN_COUT=v2: the column halves of a (chunk, head) side by side */
        g3 = dim3((unsigned)chunks * nz, (unsigned)p.hv, 1);
        k3 = un ? lin_cout_kernel<LIN_DT_BF16, 1, 1> : lin_cout_kernel<LIN_DT_BF16, 1>;
    }
    const int sm3 = un ? lk_s3<LK_S3_VH, 1>::SMEM : lk_s3<LK_S3_VH>::SMEM;
    LK_LAUNCH(k3, g3, LK_S3_THREADS, sm3, st, p);
    return (int)cudaGetLastError();
}
