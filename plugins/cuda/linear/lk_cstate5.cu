/* lk_cstate5.cu - SGL_ATTN_LIN_CSTATE=v5: the split state pass with one
 * dependent product per chunk (gdn, kda).
 *
 * Why: the v2 pass's chunk step is two dependent products with a block
 * barrier after each (Unew = U - W S^T, then S = S diag(eG) + Unew^T KD):
 * ~2,400 cycles against ~150 of tensor-core work (ncu, run 5); more warps
 * (v3) and narrower barriers (v4, 1.06x) left it bound by that chain.  The
 * delta rule's update is linear in S:
 *     S' = S diag(eG) + (U - W S^T)^T KD = S diag(eG) + U^T KD + S P,
 *     P  = -W^T KD                                 (K x K, per chunk and head)
 * so with P made beforehand by a fully parallel kernel, the serial step is
 * one product on the chain (S P, the old state as 16-bit operand, as v2's
 * W S^T uses it), U^T KD off it, and one barrier per chunk (the 16-bit copy
 * of S is double-buffered).  Unew is no longer the state pass's: the output
 * kernel makes it from the stored chunk state (lin_cout_kernel<., 1, 1>:
 * Unew = U - W Hs^T, the same 16-bit operands and rounding as v2's pass).
 *
 *   lin_cpq_kernel     grid (chunk, value head), 4 warps: P = -(W^T KD) in
 *                      float32, stored 16-bit [chunk][hv][K][K] (p.Pq)
 *   lin_cstate5_kernel grid (request, value head x V / VT): 4 compute warps
 *                      (warp w owns state columns 32w ..), 4 producer warps
 *                      (a 3-stage cp.async ring of P, KD, the U tile, eG;
 *                      the per-chunk states Hs from the 16-bit copy)
 * Precision: v2 rounds Unew to 16 bits before its product with KD; v5
 * rounds P once (the same product's partial sums in float32 first) and
 * keeps U^T KD in float32 accumulators: the emulator's NMSE against float64
 * is v2's within a few percent (tests: LT_QUICK=18).
 * Measured (H200, run 16 of 2026-12-03): lost, 0.875x the default on the 64k
 * prefill; the step got slower with more mma / ldmatrix per compute warp
 * (the pass is bound by its warps' instruction issue, docs/cuda_linear.md).
 * Opt-in as the record; its P kernel and the output kernel's Unew also serve
 * v6 (lk_cstate6.cu). */
#include "lk_cstate.cuh"

template <int VT> struct lk_s5 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, VTP = VT + 8, NS = 3;
    static constexpr int STAGE = K * KP * 2 + C * KP * 2 + C * VTP * 2 + K * 4; /* P, KD, U tile, eG */
    static constexpr int SMEM = NS * STAGE + 2 * VT * KP * 2;                   /* + the S copies */
};
static_assert(lk_s5<16>::SMEM == (int)LIN_C5_SMEM(16) && lk_s5<32>::SMEM == (int)LIN_C5_SMEM(32),
              "lin_params.h's LIN_C5_SMEM (lin_create.c checks the device against it)");
#define LK_S5_THREADS 256 /* 4 compute + 4 producer warps */
#define LK_PQ_THREADS 128
#define LK_PQ_SMEM (2 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_TC_K * (LIN_TC_K + 8) * 2) /* W, KD, P staging */

/* P = -(W^T KD) of chunk j, value head h: warp w makes rows 32w .. 32w + 31 (two m16 tiles), in two
 * halves of 64 columns; the chunk's rows past its length are zero (no contribution). */
template <int OT> __global__ __launch_bounds__(LK_PQ_THREADS) void lin_cpq_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Ws = (uint16_t *)smraw, *KDs = Ws + C * KP, *Ps = KDs + C * KP;
    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    if (p.pl.req_slot[p.pl.chunk_req[j]] < 0) return; /* padding: the state pass skips it too */
    const int h = blockIdx.y, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2,
              t4 = lane & 3;
    const int64_t ct0 = p.pl.chunk_tok0[j];
    const int len = p.pl.chunk_len[j];
    for (int idx = tid; idx < C * (K / 8); idx += LK_PQ_THREADS) {
        const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
        const bool ok = t < len;
        const int64_t src = ((ct0 + (ok ? t : 0)) * HV + h) * K + cc;
        lk_cp_async16(Ws + t * KP + cc, (const uint16_t *)p.Wt + src, ok);
        lk_cp_async16(KDs + t * KP + cc, (const uint16_t *)p.KDt + src, ok);
    }
    lk_cp_async_commit();
    lk_cp_async_wait_all();
    __syncthreads();
#pragma unroll 1
    for (int half = 0; half < 2; half++) {
        float acc[2][8][4];
#pragma unroll
        for (int a = 0; a < 2; a++)
#pragma unroll
            for (int b = 0; b < 8; b++) acc[a][b][0] = acc[a][b][1] = acc[a][b][2] = acc[a][b][3] = 0.f;
#pragma unroll
        for (int k16 = 0; k16 < C / 16; k16++) {
            uint32_t aw[2][4];
#pragma unroll
            for (int a = 0; a < 2; a++) lk_lda_t(aw[a], Ws, KP, 16 * k16, 32 * warp + 16 * a); /* W^T */
#pragma unroll
            for (int bp = 0; bp < 4; bp++) {
                uint32_t bk[4];
                lk_ldb_k(bk, KDs, KP, 16 * k16, 64 * half + 16 * bp);
#pragma unroll
                for (int a = 0; a < 2; a++) {
                    lk_mma<OT>(acc[a][2 * bp], aw[a], bk[0], bk[1]);
                    lk_mma<OT>(acc[a][2 * bp + 1], aw[a], bk[2], bk[3]);
                }
            }
        }
#pragma unroll
        for (int a = 0; a < 2; a++)
#pragma unroll
            for (int b = 0; b < 8; b++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int r = 32 * warp + 16 * a + g + 8 * hf, c = 64 * half + 8 * b + 2 * t4;
                    *(uint32_t *)(Ps + r * KP + c) = lk_pack2<OT>(-acc[a][b][2 * hf], -acc[a][b][2 * hf + 1]);
                }
    }
    __syncwarp(); /* each warp stores its own rows */
    uint16_t *dst = (uint16_t *)p.Pq + ((int64_t)j * HV + h) * K * K;
    for (int idx = lane; idx < 32 * (K / 8); idx += 32) {
        const int r = 32 * warp + idx / (K / 8), cc = (idx % (K / 8)) * 8;
        LK_ALIGNED(dst + r * K + cc, 16);
        *(uint4 *)(dst + r * K + cc) = *(const uint4 *)(Ps + r * KP + cc);
    }
}

/* The serial pass (MODE 0 of lin_cstate_kernel's numbering: one block per request, value head, tile). */
template <int OT, int VT> __global__ __launch_bounds__(LK_S5_THREADS, 1) void lin_cstate5_kernel(lin_fwd p) {
    using L = lk_s5<VT>;
    constexpr int C = L::C, K = L::K, KP = L::KP, VTP = L::VTP, MT = VT / 16, NS = L::NS, STAGE = L::STAGE;
    constexpr int NB = 4; /* n8 tiles per compute warp: 32 state columns */
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Sb0 = (uint16_t *)(smraw + NS * STAGE); /* [2][VT][KP]: S of chunk q at Sb0 + (q & 1) VT KP */
    const int nvt = p.V / VT, h = blockIdx.y / nvt, vt = blockIdx.y % nvt, i = blockIdx.x;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    if (slot < 0) return; /* padding: the output pass zeroes its rows */
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool producer = warp >= 4, GCH = p.kind == LIN_KDA;
    const int pl = tid - 128; /* producer thread index */
    const int64_t ocol = (int64_t)h * V + vt * VT;
    const int c0 = p.pl.req_chunk0[i], nch = p.pl.req_nchunk[i];

    auto issue = [&](int s, int jc) { /* chunk jc's operands into stage s (rows past its length zero) */
        unsigned char *base = smraw + s * STAGE;
        uint16_t *Ps = (uint16_t *)base, *KDs = Ps + K * KP, *Us = KDs + C * KP;
        float *eGs = (float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        const uint16_t *Pg = (const uint16_t *)p.Pq + ((int64_t)jc * HV + h) * K * K;
        const uint16_t *Kg = (const uint16_t *)p.KDt + (ct0 * HV + h) * K;
        const uint16_t *Ugs = (const uint16_t *)p.Ut + ct0 * HV * V + ocol;
#pragma unroll 4
        for (int idx = pl; idx < K * (K / 8); idx += 128) {
            const int r = idx / (K / 8), cc = (idx % (K / 8)) * 8;
            lk_cp_async16(Ps + r * KP + cc, Pg + r * K + cc, true);
        }
#pragma unroll
        for (int idx = pl; idx < C * (K / 8); idx += 128) {
            const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(KDs + t * KP + cc, Kg + (ok ? t : 0) * HV * K + cc, ok);
        }
        for (int idx = pl; idx < C * (VT / 8); idx += 128) {
            const int t = idx / (VT / 8), cc = (idx % (VT / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(Us + t * VTP + cc, Ugs + (ok ? t : 0) * HV * V + cc, ok);
        }
        if (pl < 32) lk_cp_async16(eGs + pl * 4, p.eG + ((int64_t)jc * HV + h) * K + pl * 4, true);
    };
    static_assert(K / 4 == 32, "one eG load per producer lane");

    /* the state tile (compute warps): element e of (m-tile a, n-tile b) is row 16a + g + 8(e >> 1),
     * column 32 warp + 8b + 2 t4 + (e & 1) */
    float S[MT][NB][4];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    if (!producer) {
#pragma unroll
        for (int a = 0; a < MT; a++)
#pragma unroll
            for (int b = 0; b < NB; b++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int v = 16 * a + g + 8 * hf, c = 32 * warp + 8 * b + 2 * t4;
                    if (!init) S[a][b][2 * hf] = S[a][b][2 * hf + 1] = 0.f;
                    else lk_srow_ld<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
                    *(uint32_t *)(Sb0 + v * KP + c) = lk_pack2<OT>(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
                }
    } else {
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < nch) issue(s, c0 + s);
            lk_cp_async_commit();
        }
    }

    for (int q = 0; q < nch; q++) {
        if (producer) lk_cp_async_wait<NS - 2>(); /* chunk q landed */
        /* the one barrier per chunk: chunk q visible, S of chunk q in its copy, every warp done with
         * chunk q - 1 (its stage, the other copy) */
        __syncthreads();
        const int jc = c0 + q;
        const uint16_t *Sb = Sb0 + (q & 1) * VT * KP;
        if (producer) {
            if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1); /* into chunk q - 1's stage */
            lk_cp_async_commit();
            /* the state at the chunk's start, for the output pass (its copy is rewritten after the next
             * barrier, which waits for this) */
            uint16_t *dst = (uint16_t *)p.Hs + ((int64_t)jc * HV + h) * V * K + (int64_t)vt * VT * K;
#pragma unroll
            for (int idx = pl; idx < VT * (K / 8); idx += 128) {
                const int v = idx / (K / 8), cc = (idx % (K / 8)) * 8;
                LK_ALIGNED(dst + v * K + cc, 16);
                *(uint4 *)(dst + v * K + cc) = *(const uint4 *)(Sb + v * KP + cc);
            }
            continue;
        }
        const unsigned char *base = smraw + (q % NS) * STAGE;
        const uint16_t *Ps = (const uint16_t *)base, *KDs = Ps + K * KP, *Us = KDs + C * KP;
        const float *eGs = (const float *)(Us + C * VTP);
        /* X = S_16 P: the chain; two accumulators (even / odd k16 steps) */
        float X[2][MT][NB][4];
#pragma unroll
        for (int x = 0; x < 2; x++)
#pragma unroll
            for (int a = 0; a < MT; a++)
#pragma unroll
                for (int b = 0; b < NB; b++) X[x][a][b][0] = X[x][a][b][1] = X[x][a][b][2] = X[x][a][b][3] = 0.f;
#pragma unroll
        for (int k16 = 0; k16 < K / 16; k16++) {
            uint32_t bp4[NB / 2][4];
#pragma unroll
            for (int bp = 0; bp < NB / 2; bp++) lk_ldb_k(bp4[bp], Ps, KP, 16 * k16, 32 * warp + 16 * bp);
#pragma unroll
            for (int a = 0; a < MT; a++) {
                uint32_t as[4];
                lk_lda(as, Sb, KP, 16 * a, 16 * k16);
#pragma unroll
                for (int bp = 0; bp < NB / 2; bp++) {
                    lk_mma<OT>(X[k16 & 1][a][2 * bp], as, bp4[bp][0], bp4[bp][1]);
                    lk_mma<OT>(X[k16 & 1][a][2 * bp + 1], as, bp4[bp][2], bp4[bp][3]);
                }
            }
        }
        /* S = S diag(eG) + U^T KD + X (U^T KD does not wait for S: the compiler may interleave it) */
#pragma unroll
        for (int a = 0; a < MT; a++)
#pragma unroll
            for (int b = 0; b < NB; b++)
#pragma unroll
                for (int e = 0; e < 4; e++) S[a][b][e] *= eGs[GCH ? 32 * warp + 8 * b + 2 * t4 + (e & 1) : 0];
#pragma unroll
        for (int k16 = 0; k16 < C / 16; k16++) {
            uint32_t bk[NB / 2][4];
#pragma unroll
            for (int bp = 0; bp < NB / 2; bp++) lk_ldb_k(bk[bp], KDs, KP, 16 * k16, 32 * warp + 16 * bp);
#pragma unroll
            for (int a = 0; a < MT; a++) {
                uint32_t au[4];
                lk_lda_t(au, Us, VTP, 16 * k16, 16 * a);
#pragma unroll
                for (int bp = 0; bp < NB / 2; bp++) {
                    lk_mma<OT>(S[a][2 * bp], au, bk[bp][0], bk[bp][1]);
                    lk_mma<OT>(S[a][2 * bp + 1], au, bk[bp][2], bk[bp][3]);
                }
            }
        }
        uint16_t *Sn = Sb0 + ((q + 1) & 1) * VT * KP; /* read last by chunk q - 1's step and Hs copy */
#pragma unroll
        for (int a = 0; a < MT; a++)
#pragma unroll
            for (int b = 0; b < NB; b++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) S[a][b][2 * hf + e] += X[0][a][b][2 * hf + e] + X[1][a][b][2 * hf + e];
                    const int v = 16 * a + g + 8 * hf, c = 32 * warp + 8 * b + 2 * t4;
                    *(uint32_t *)(Sn + v * KP + c) = lk_pack2<OT>(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
                }
    }
    if (producer) {
        lk_cp_async_wait_all();
        return;
    }
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = 32 * warp + 8 * b + 2 * t4;
                lk_srow_st<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
            }
}

extern "C" int lin_cstate5_setup(void) {
    int e = (int)cudaFuncSetAttribute((const void *)lin_cstate5_kernel<LIN_DT_BF16, 16>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s5<16>::SMEM);
    if (!e)
        e = (int)cudaFuncSetAttribute((const void *)lin_cstate5_kernel<LIN_DT_BF16, 32>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s5<32>::SMEM);
    if (!e)
        e = (int)cudaFuncSetAttribute((const void *)lin_cpq_kernel<LIN_DT_BF16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      LK_PQ_SMEM);
    return e;
}

/* P for every chunk, then the serial pass (bf16 operands, vt 16 or 32; the caller checked the kind). */
extern "C" int lin_launch_cstate5(const lin_fwd *pp, int vt, void *stream) {
    const lin_fwd &p = *pp;
    if (!p.Pq || (vt != 16 && vt != 32)) return (int)cudaErrorInvalidValue;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    LK_LAUNCH(lin_cpq_kernel<LIN_DT_BF16>, dim3((unsigned)chunks, (unsigned)p.hv), LK_PQ_THREADS, LK_PQ_SMEM, st, p);
    int e = (int)cudaGetLastError();
    if (e) return e;
    if (p.c2_wg) return lin_launch_cstate6(pp, stream); /* SGL_ATTN_LIN_CSTATE=v6: the same pass on wgmma */
    dim3 g2((unsigned)p.bs, (unsigned)(p.hv * (p.V / vt)));
    void (*k)(lin_fwd) = vt == 16 ? lin_cstate5_kernel<LIN_DT_BF16, 16> : lin_cstate5_kernel<LIN_DT_BF16, 32>;
    LK_LAUNCH(k, g2, LK_S5_THREADS, vt == 16 ? lk_s5<16>::SMEM : lk_s5<32>::SMEM, st, p);
    return (int)cudaGetLastError();
}
