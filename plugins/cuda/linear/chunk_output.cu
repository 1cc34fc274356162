/* chunk_output.cu - the output kernel of the chunked extend's phase 2 for
 * bf16 activations, after the state pass (chunk_state.cu) stored each chunk's
 * starting state Hs and Unew: o = QG Hs[chunk]^T + M Unew (+ D x), fully
 * parallel over (chunk, column half of V, value head), the same products in
 * the same order as the fused phase 2 (chunk_fused_state.cu), so both give the
 * same outputs.  4 warps, 16 token rows each.
 *
 * The two column halves of a (chunk, head) run side by side in the grid, so
 * the second one's QG and M come from L2; QG and the state land first (a
 * cp.async group of their own) and QG Hs^T runs while M and Unew fly; 16-bit
 * outputs leave as 16-byte rows staged in the warp's own QG rows (mamba2's
 * skip and f32 outputs are stored per element). */
#include "chunk_mma.cuh"

#define LK_S3_THREADS 128

template <int VH> struct lk_s3 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VHP = VH + 8;
    /* QG, S, M, Unew */
    static constexpr int SMEM = C * KP * 2 + VH * KP * 2 + C * CP * 2 + C * VHP * 2;
};
#define LK_S3_VH 64 /* output columns per block */

/* acc = A[r0 .. r0 + 15][0 .. K) S^T for the 8 NT state rows of Ss (both row-major, kp elements a row):
 * one warp's 16 rows of QG S^T */
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

/* Grid: (chunk x V / VH, value head). */
template <int OT>
__global__ __launch_bounds__(LK_S3_THREADS) void lin_chunk_output_kernel(lin_fwd p) {
    constexpr int VH = LK_S3_VH;
    using L = lk_s3<VH>;
    constexpr int C = L::C, K = L::K, KP = L::KP, CP = L::CP, VHP = L::VHP;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *QGs = (uint16_t *)smraw, *Ss = QGs + C * KP, *Ms = Ss + VH * KP, *Us = Ms + C * CP;
    const int NZ = (p.V + VH - 1) / VH;
    const int j = (int)blockIdx.x / NZ;
    if (j >= *p.pl.num_chunks) return;
    const int h = blockIdx.y, V = p.V, HV = p.hv, v0 = ((int)blockIdx.x % NZ) * VH;
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
    }
    for (int idx = tid; idx < VH * (K / 8); idx += LK_S3_THREADS) {
        const int v = idx / (K / 8), cc = (idx % (K / 8)) * 8;
        const bool ok = v < nv;
        lk_cp_async16(Ss + v * KP + cc, (const uint16_t *)p.Hs + (((int64_t)j * HV + h) * V + v0 + (ok ? v : 0)) * K + cc,
                      ok);
    }
    lk_cp_async_commit(); /* group 0: QG, the state */
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
    /* group 1: M, Unew (wait_group waits for committed groups only: the copies must be committed before
     * the wait) */
    lk_cp_async_commit();
    lk_cp_async_wait<1>(); /* QG, the state */
    __syncthreads();
    float O[VH / 8][4];
    lk_rows_state_t<OT, K>(O, QGs, Ss, KP, 16 * warp); /* QG S^T */
    lk_cp_async_wait_all(); /* M, Unew */
    __syncthreads();
    lk_rows_mul_k<OT, C>(O, Ms, CP, Us, VHP, 16 * warp); /* M Unew */
    const bool SKIP = p.kind == LIN_MAMBA2;
    if (!SKIP && p.out_dt != LIN_DT_F32 && V % 8 == 0 && ((uintptr_t)p.out & 15) == 0) {
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
    lk_store_out_rows(p, O, ct0, len, HV, V, ocol, nv, SKIP ? p.Sk + ct0 * HV * V + ocol : nullptr, (int64_t)HV * V,
                      16 * warp, g, t4);
}

/* ------------------------------------------------------------ launchers */

static_assert(lk_s3<LK_S3_VH>::SMEM <= (int)LIN_FUSED_UT_SMEM,
              "the output kernel needs at most the fused phase 1's shared memory (lin_create.c checks that one)");

extern "C" int lin_chunk_output_setup(void) {
    return (int)cudaFuncSetAttribute((const void *)lin_chunk_output_kernel<LIN_DT_BF16>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s3<LK_S3_VH>::SMEM);
}

/* bf16 operands; after lin_launch_chunk_state (p->Hs, Unew in p->Ut) */
extern "C" int lin_launch_chunk_output(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    const unsigned nz = (unsigned)((p.V + LK_S3_VH - 1) / LK_S3_VH);
    const dim3 grid((unsigned)chunks * nz, (unsigned)p.hv, 1);
    LK_LAUNCH(lin_chunk_output_kernel<LIN_DT_BF16>, grid, LK_S3_THREADS, lk_s3<LK_S3_VH>::SMEM,
              (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
