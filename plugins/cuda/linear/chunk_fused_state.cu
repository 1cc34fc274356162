/* chunk_fused_state.cu - phase 2 of the chunked extend in one kernel: f16
 * activations always (the state pass and output kernel, chunk_state.cu and
 * chunk_output.cu, are built for bf16 only), and mamba2's bf16 extends whose
 * heads fill the SMs (no chunk start states Hs through memory, QG and M read
 * once; lin_fused_p2_tile): the state passes through a
 * request's chunks in order and the outputs are made on the way.  One block
 * per (request, value head, tile of VT state rows), 4 warps (8 under the
 * lever fused_phase2_8w); the tile [VT][128] stays in float32 registers as mma
 * accumulators (warp w of NW owns columns 128 w / NW ..).  Per chunk (its W, QG,
 * KD, M, U tile and exp(G_last) double-buffered in shared memory by cp.async):
 *   Unew = U - W S^T                      (declin: Unew = U)
 *   o    = QG S^T + M Unew  (+ D x)       -> out, rows of the chunk
 *   S    = S diag(eG) + Unew^T KD
 * S enters the products as 16-bit (a copy in shared memory); it is carried in
 * float32.  The pool's state is read at the start (zero without a prefix) and
 * written at the end. */
#include "chunk_mma.cuh"

/* Rows 0 .. C - 1 of a chunk's tile of U16 16-byte units a row into shared memory (rows ld elements apart) from
 * global rows rs elements apart starting at g, rows at or past len zero-filled.  Thread tid copies unit tid % U16
 * of rows tid / U16 + j NTH / U16: a fixed column and a fixed row step, so the offsets are set once and the
 * loop unrolls (the lean form, LEAN below). */
template <int NTH, int C, int U16, typename T>
LK_DEV void lk_rows_async(T *s, int ld, const T *g, int64_t rs, int len, int tid) {
    constexpr int R = NTH / U16, E = 16 / (int)sizeof(T);
    static_assert(NTH % U16 == 0 && C % R == 0, "whole rows a pass");
    const int t0 = tid / U16, c = (tid % U16) * E;
#pragma unroll
    for (int j = 0; j < C / R; j++) {
        const int t = t0 + j * R;
        const bool ok = t < len;
        lk_cp_async16(s + t * ld + c, g + (ok ? t : 0) * rs + c, ok);
    }
}

/* The kind and the state dtype are runtime values (uniform branches): one
 * kernel per (operand type, tile, warps).  SKS (the bf16 instance): mamba2's
 * skip D x lands in shared memory with the chunk's operands
 * (LIN_FUSED_STATE_SKIP) instead of being read from global memory inside the
 * serial chain when the outputs are stored.  NW = 8 (the lever
 * fused_phase2_8w): the same products in the same order over twice the
 * warps, so that each scheduler has two warps to issue from in the serial
 * chain; warp w owns state columns 16 w .. 16 w + 15 and, of the chunk's
 * outputs, rows 16 (w % 4) .. and columns (w / 4) VT / 2 .. .  LEAN (the lever
 * fused_phase2_lean; SKS instances, which serve mamba2 only): the kind fixed
 * at compile time (no predicated W S^T products, no per-column decays), each
 * chunk's copies by lk_rows_async instead of index arithmetic per copy, and
 * bf16 outputs stored in pairs. */
template <int OT, int VT, bool SKS = false, int NW = 4, bool LEAN = false, bool SK16 = false>
__global__ __launch_bounds__(32 * NW, 1) void lin_chunk_fused_state_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VTP = VT + 8, MT = VT / 16;
    constexpr int NTH = 32 * NW, NB = K / (8 * NW), VW = VT * 4 / NW; /* state n8 tiles, output columns a warp */
    static_assert((NW == 4 || NW == 8) && NB % 2 == 0 && VW % 16 == 0, "4 or 8 warps over 128 key columns");
    static_assert(!LEAN || SKS, "the lean form is mamba2's");
    static_assert(!SK16 || (LEAN && NW == 8), "the bf16 skip is the lean 8-warp form's (fused_phase2_skip16)");
    const int KIND = LEAN ? (int)LIN_MAMBA2 : p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, SKIP = KIND == LIN_MAMBA2;
    constexpr int STAGE = LIN_FUSED_STATE_STAGE(VT);
    static_assert(STAGE == 3 * C * KP * 2 + C * CP * 2 + C * VTP * 2 + K * 4, "lin_params.h LIN_FUSED_STATE_STAGE differs");
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Sb = (uint16_t *)(smraw + 2 * STAGE); /* [VT][KP] */
    uint16_t *Ub = Sb + VT * KP;                   /* [C][VTP] */
    float *Skb = (float *)(Ub + C * VTP);          /* SKS: two stages of [C][VTP] float32 */
    uint16_t *Skh = (uint16_t *)Skb;               /* SK16: two stages of [C][VTP] bf16 */

    const int nvt = p.V / VT;
    const int i = blockIdx.x, h = blockIdx.y / nvt, vt = blockIdx.y % nvt;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const int rg = NW == 4 ? warp : warp % 4, cofs = NW == 4 ? 0 : (warp / 4) * VW; /* output rows 16 rg .., columns cofs .. */
    const int64_t ocol = (int64_t)h * V + vt * VT; /* this tile's first column of an out row */
    if (slot < 0) { /* padding */
        for (int idx = tid; idx < n * VT; idx += NTH)
            lk_st(p.out, p.out_dt, (tok0 + idx / VT) * HV * V + ocol + idx % VT, 0.f);
        return;
    }
    const int c0 = p.pl.req_chunk0[i], nch = p.pl.req_nchunk[i];

    /* one chunk's operands into stage s (rows past the chunk's length are zero) */
    auto issue = [&](int s, int jc) {
        unsigned char *base = smraw + s * STAGE;
        uint16_t *Ws = (uint16_t *)base, *QGs = Ws + C * KP, *KDs = QGs + C * KP, *Ms = KDs + C * KP,
                 *Us = Ms + C * CP;
        float *eGs = (float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        for (int idx = tid; idx < C * (K / 8); idx += NTH) {
            const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
            const bool ok = t < len;
            const int64_t src = ((ct0 + (ok ? t : 0)) * HV + h) * K + cc;
            if (DELTA) lk_cp_async16(Ws + t * KP + cc, (const uint16_t *)p.Wt + src, ok);
            lk_cp_async16(QGs + t * KP + cc, (const uint16_t *)p.QGt + src, ok);
            lk_cp_async16(KDs + t * KP + cc, (const uint16_t *)p.KDt + src, ok);
        }
        for (int idx = tid; idx < C * (C / 8); idx += NTH) {
            const int t = idx / (C / 8), cc = (idx % (C / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(Ms + t * CP + cc, (const uint16_t *)p.Mt + ((ct0 + (ok ? t : 0)) * HV + h) * C + cc, ok);
        }
        for (int idx = tid; idx < C * (VT / 8); idx += NTH) {
            const int t = idx / (VT / 8), cc = (idx % (VT / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(Us + t * VTP + cc, (const uint16_t *)p.Ut + (ct0 + (ok ? t : 0)) * HV * V + ocol + cc, ok);
        }
        for (int idx = tid; idx < K / 4; idx += NTH)
            lk_cp_async16(eGs + idx * 4, p.eG + ((int64_t)jc * HV + h) * K + idx * 4, true);
        if (SKS && SKIP)
            for (int idx = tid; idx < C * (VT / 4); idx += NTH) {
                const int t = idx / (VT / 4), cc = (idx % (VT / 4)) * 4;
                const bool ok = t < len;
                lk_cp_async16(Skb + (s * C + t) * VTP + cc, p.Sk + (ct0 + (ok ? t : 0)) * HV * V + ocol + cc, ok);
            }
    };

    /* the lean form's copies of chunk jc into stage s (mamba2: no W; eG's first value is the chunk's decay) */
    auto issue_lean = [&](int s, int jc) {
        unsigned char *base = smraw + s * STAGE;
        uint16_t *QGs = (uint16_t *)base + C * KP, *KDs = QGs + C * KP, *Ms = KDs + C * KP, *Us = Ms + C * CP;
        float *eGs = (float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[jc], r0 = ct0 * HV + h, rv = ct0 * HV * V + ocol;
        const int len = p.pl.chunk_len[jc];
        lk_rows_async<NTH, C, K / 8>(QGs, KP, (const uint16_t *)p.QGt + r0 * K, (int64_t)HV * K, len, tid);
        lk_rows_async<NTH, C, K / 8>(KDs, KP, (const uint16_t *)p.KDt + r0 * K, (int64_t)HV * K, len, tid);
        lk_rows_async<NTH, C, C / 8>(Ms, CP, (const uint16_t *)p.Mt + r0 * C, (int64_t)HV * C, len, tid);
        lk_rows_async<NTH, C, VT / 8>(Us, VTP, (const uint16_t *)p.Ut + rv, (int64_t)HV * V, len, tid);
        if constexpr (SK16)
            lk_rows_async<NTH, C, VT / 8>(Skh + s * C * VTP, VTP, (const uint16_t *)p.Sk + rv, (int64_t)HV * V, len, tid);
        else
            lk_rows_async<NTH, C, VT / 4>(Skb + s * C * VTP, VTP, (const float *)p.Sk + rv, (int64_t)HV * V, len, tid);
        if (tid == 0) lk_cp_async16(eGs, p.eG + ((int64_t)jc * HV + h) * K, true);
    };
    /* the lean form stores bf16 outputs in pairs (4-byte stores) */
    const bool o2 = LEAN && p.out_dt == LIN_DT_BF16 && ((uintptr_t)p.out & 3) == 0 && V % 2 == 0;

    /* the state tile: element e of (m-tile a, n-tile b) is row 16a + g + 8(e >> 1),
     * column 8 NB warp + 8b + 2 t4 + (e & 1) */
    float S[MT][NB][4];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    lk_state_load<OT, MT, NB>(p, sb, init, S, Sb, KP, warp, g, t4);
    if (nch > 0) {
        if constexpr (LEAN) issue_lean(0, c0);
        else issue(0, c0);
    }
    lk_cp_async_commit();

    for (int q = 0; q < nch; q++) {
        lk_cp_async_wait_all();
        __syncthreads(); /* chunk q landed; Sb holds S; every warp is done with chunk q-1 */
        if (q + 1 < nch) {
            if constexpr (LEAN) issue_lean((q + 1) & 1, c0 + q + 1);
            else issue((q + 1) & 1, c0 + q + 1);
        }
        lk_cp_async_commit();
        unsigned char *base = smraw + (q & 1) * STAGE;
        const uint16_t *Ws = (const uint16_t *)base, *QGs = Ws + C * KP, *KDs = QGs + C * KP, *Ms = KDs + C * KP,
                       *Us = Ms + C * CP;
        const float *eGs = (const float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[c0 + q];
        const int len = p.pl.chunk_len[c0 + q];

        /* X = W S^T and O = QG S^T: rows 16 rg .. (tokens), VW columns from cofs */
        float X[VW / 8][4], O[VW / 8][4];
#pragma unroll
        for (int nt = 0; nt < VW / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) X[nt][e] = O[nt][e] = 0.f;
#pragma unroll
        for (int k16 = 0; k16 < K / 16; k16++) {
            uint32_t aq[4], aw[4];
            lk_lda(aq, QGs, KP, 16 * rg, 16 * k16);
            if (DELTA) lk_lda(aw, Ws, KP, 16 * rg, 16 * k16);
#pragma unroll
            for (int np = 0; np < VW / 16; np++) {
                uint32_t b[4];
                lk_ldb_n(b, Sb, KP, cofs + 16 * np, 16 * k16);
                lk_mma<OT>(O[2 * np], aq, b[0], b[1]);
                lk_mma<OT>(O[2 * np + 1], aq, b[2], b[3]);
                if (DELTA) {
                    lk_mma<OT>(X[2 * np], aw, b[0], b[1]);
                    lk_mma<OT>(X[2 * np + 1], aw, b[2], b[3]);
                }
            }
        }
        const uint16_t *UB = Us;
        if (DELTA) { /* Unew = U - W S^T, 16-bit, for both products below */
#pragma unroll
            for (int nt = 0; nt < VW / 8; nt++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int t = 16 * rg + g + 8 * hf, v = cofs + 8 * nt + 2 * t4;
                    const float u0 = lk_from16<OT>(Us[t * VTP + v]) - X[nt][2 * hf];
                    const float u1 = lk_from16<OT>(Us[t * VTP + v + 1]) - X[nt][2 * hf + 1];
                    *(uint32_t *)(Ub + t * VTP + v) = lk_pack2<OT>(u0, u1);
                }
            UB = Ub;
        }
        __syncthreads(); /* Unew complete; nobody reads Sb any more this chunk */

        /* O += M Unew; store the chunk's rows */
        lk_rows_mul_k<OT, C>(O, Ms, CP, UB + cofs, VTP, 16 * rg);
        /* mamba2 adds D x from this stage's skip rows (SKS; bf16 under SK16) or from global memory */
        auto store = [&](const auto *sk, int64_t ldsk) {
            if (o2) lk_store_out_rows<VW / 8, LIN_DT_BF16>(p, O, ct0, len, HV, V, ocol + cofs, VW, sk, ldsk, 16 * rg, g, t4);
            else lk_store_out_rows(p, O, ct0, len, HV, V, ocol + cofs, VW, sk, ldsk, 16 * rg, g, t4);
        };
        if constexpr (SK16) {
            store(Skh + (q & 1) * C * VTP + cofs, VTP);
        } else {
            const float *sk = !SKIP ? nullptr : SKS ? Skb + (q & 1) * C * VTP + cofs : p.Sk + ct0 * HV * V + ocol + cofs;
            store(sk, SKS ? (int64_t)VTP : (int64_t)HV * V);
        }

        /* S = S diag(eG) + Unew^T KD */
        lk_state_step<OT, MT, C, NB>(S, eGs, GCH, KDs, KP, UB, VTP, Sb, warp, g, t4);
    }
    lk_cp_async_wait_all();
    lk_state_store<MT, NB>(p, sb, S, warp, g, t4);
}

/* ------------------------------------------------------------ launchers */

extern "C" int lin_chunk_fused_state_setup(void) {
    const void *k[2] = {(const void *)lin_chunk_fused_state_kernel<LIN_DT_F16, 16>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_F16, 32>};
    int e = 0;
    for (int i = 0; i < 2 && !e; i++)
        e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)LIN_FUSED_STATE_SMEM(i ? 32 : 16));
    return e;
}

static void (*fused_state_kernel(int ot, int vt, bool w8, bool lean, bool sk16))(lin_fwd) {
    if (sk16) return ot == LIN_DT_BF16 && vt == 64 && w8 && lean ? lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8, true, true>
                                                                : nullptr;
    if (ot == LIN_DT_F16) return w8 || lean ? nullptr
                                 : vt == 16 ? lin_chunk_fused_state_kernel<LIN_DT_F16, 16>
                                 : vt == 32 ? lin_chunk_fused_state_kernel<LIN_DT_F16, 32> : nullptr;
    if (vt != 64) return nullptr;
    if (lean)
        return w8 ? lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8, true>
                  : lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 4, true>;
    return w8 ? lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8> : lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true>;
}

/* the bf16 instances (mamba2), at create where they run */
extern "C" int lin_chunk_fused_state_bf16_setup(void) {
    const void *k[5] = {(const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 4, true>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8, true>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, 8, true, true>};
    int e = 0;
    for (int i = 0; i < 5 && !e; i++)
        e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)LIN_FUSED_STATE_SMEM_BF16(64));
    return e;
}

/* ot: f16 (vt 16 or 32) or bf16 (vt 64, after lin_chunk_fused_state_bf16_setup; 8 warps where p.fused_p2_8w, the
 * lean form where p.fused_p2_lean: mamba2 only) */
extern "C" int lin_launch_chunk_fused_state(const lin_fwd *pp, int ot, int vt, void *stream) {
    const lin_fwd &p = *pp;
    const bool bf = ot == LIN_DT_BF16, w8 = bf && p.fused_p2_8w, lean = bf && p.fused_p2_lean;
    if (lean && p.kind != LIN_MAMBA2) return (int)cudaErrorInvalidValue;
    void (*k)(lin_fwd) = fused_state_kernel(ot, vt, w8, lean, bf && p.sk16);
    if (!k || p.V % vt) return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)p.bs, (unsigned)(p.hv * (p.V / vt)));
    LK_LAUNCH(k, grid, w8 ? 256 : 128, ot == LIN_DT_F16 ? LIN_FUSED_STATE_SMEM(vt) : LIN_FUSED_STATE_SMEM_BF16(vt),
              (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
