/* chunk_fused_state.cu - phase 2 of the chunked extend in one kernel: f16
 * activations always (the state pass and output kernel, chunk_state.cu and
 * chunk_output.cu, are built for bf16 only), and mamba2's bf16 extends whose
 * heads fill the SMs (no chunk start states Hs through memory, QG and M read
 * once; lin_fused_p2_tile): the state passes through a
 * request's chunks in order and the outputs are made on the way.  One block
 * per (request, value head, tile of VT state rows), 4 warps (8 in mamba2's bf16
 * form); the tile [VT][128] stays in float32 registers as mma
 * accumulators (warp w of NW owns columns 128 w / NW ..).  Per chunk (its W, QG,
 * KD, M, U tile and exp(G_last) double-buffered in shared memory by cp.async):
 *   Unew = U - W S^T                      (declin: Unew = U)
 *   o    = QG S^T + M Unew  (+ D x)       -> out, rows of the chunk
 *   S    = S diag(eG) + Unew^T KD
 * S enters the products as 16-bit (a copy in shared memory); it is carried in
 * float32.  The pool's state is read at the start (zero without a prefix) and
 * written at the end. */
#include "chunk_tile.cuh"

/* Rows 0 .. C - 1 of a chunk's tile of U16 16-byte units a row into shared memory (rows ld elements apart) from
 * global rows rs elements apart starting at g, rows at or past len zero-filled.  Thread tid copies unit tid % U16
 * of rows tid / U16 + j NTH / U16: a fixed column and a fixed row step, so the offsets are set once and the
 * loop unrolls (mamba2's bf16 form, M2 below). */
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

/* f16 (M2 false): the kind and the state dtype are runtime values (uniform
 * branches), 4 warps, mamba2's skip D x read from global memory when the
 * outputs are stored.  M2 (mamba2's bf16 form, the only bf16 instance): the
 * kind fixed at compile time (no predicated W S^T products, no per-column
 * decays), each chunk's copies by lk_rows_async instead of index arithmetic
 * per copy, the skip landing in shared memory with the chunk's operands
 * (LIN_FUSED_STATE_SKIP), bf16 outputs stored in pairs, and 8 warps with the
 * same products in the same order: warp w owns state columns 16 w .. 16 w + 15
 * and, of the chunk's outputs, rows 16 (w % 4) .. and columns (w / 4) VT / 2 ..,
 * so each scheduler has two warps to issue from in the serial chain (and the
 * accumulators fit 128 registers).  GRP (M2 only, where the stream prep
 * runs: lin_launch_chunk): QG, KD and M of a head differ from its group's
 * C, B and C B^T only by per-token scalars, so the kernel reads C and B per
 * group (shared through L2 by the group's heads; no UT kernel runs), and the
 * chunk's dt as the stream prep wrote them; it makes the gates -e^{A_log} dt,
 * scans them to G in every warp's registers, and applies the decays where
 * they are used:
 *   o = scale e^{G_t} (C S^T)_t + M U,  M = scale (C B^T) o e^{G_t - G_i} (i <= t)
 *   S = e^{G_L} S + (U o e^{G_L - G_i})^T B
 * Warp w makes M's 16 x 16 blocks (16 (w % 4), 16 j) for j <= w % 4 of its
 * parity (j = w / 4, w / 4 + 2) with the C fragments of its C S^T, into the
 * stage's M region; M U stops at the diagonal block.  The prep writes the
 * conv output x (not dt x, and no skip), so the kernel takes dt into M's
 * columns and U's update scale (M diag(dt) x = M (dt x)) and adds D x from the
 * staged x: the prep's bytes are 16-bit x alone, not dt x and a float32 skip. */
template <int OT, int VT, bool M2 = false, bool GRP = false>
__global__ __launch_bounds__(M2 ? 256 : 128, 1) void lin_chunk_fused_state_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VTP = VT + 8, MT = VT / 16;
    constexpr int NW = M2 ? 8 : 4, NTH = 32 * NW, NB = K / (8 * NW), VW = VT * 4 / NW; /* state n8 tiles, output columns a warp */
    static_assert(NB % 2 == 0 && VW % 16 == 0, "whole n16 tiles a warp");
    static_assert(!GRP || (M2 && C == 64 && VT == 64), "the group form is mamba2's bf16 form's");
    static_assert(M2 == (OT == LIN_DT_BF16), "bf16 is mamba2's form, f16 the general one");
    const int KIND = M2 ? (int)LIN_MAMBA2 : p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, SKIP = KIND == LIN_MAMBA2;
    constexpr int STAGE = LIN_FUSED_STATE_STAGE(VT);
    static_assert(STAGE == 3 * C * KP * 2 + C * CP * 2 + C * VTP * 2 + K * 4, "lin_params.h LIN_FUSED_STATE_STAGE differs");
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Sb = (uint16_t *)(smraw + 2 * STAGE); /* [VT][KP] */
    uint16_t *Ub = Sb + VT * KP;                   /* [C][VTP] */
    float *Skb = (float *)(Ub + C * VTP);          /* M2: two stages of [C][VTP] float32 */

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
    };

    /* M2's copies of chunk jc into stage s (mamba2: no W; eG's first value is the chunk's decay) */
    auto issue_lean = [&](int s, int jc) {
        unsigned char *base = smraw + s * STAGE;
        uint16_t *QGs = (uint16_t *)base + C * KP, *KDs = QGs + C * KP, *Ms = KDs + C * KP, *Us = Ms + C * CP;
        float *eGs = (float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[jc], r0 = ct0 * HV + h, rv = ct0 * HV * V + ocol;
        const int len = p.pl.chunk_len[jc];
        if constexpr (GRP) { /* C and B of the head's group into the QG and KD regions, the gates into eG's */
            const int64_t rk = ct0 * p.hk + h / p.gsz;
            lk_rows_async<NTH, C, K / 8>(QGs, KP, (const uint16_t *)p.Qc + rk * K, (int64_t)p.hk * K, len, tid);
            lk_rows_async<NTH, C, K / 8>(KDs, KP, (const uint16_t *)p.Kc + rk * K, (int64_t)p.hk * K, len, tid);
            if (tid < C / 4) lk_cp_async16(eGs + 4 * tid, p.eG + ((int64_t)jc * HV + h) * K + 4 * tid, true);
        } else {
            lk_rows_async<NTH, C, K / 8>(QGs, KP, (const uint16_t *)p.QGt + r0 * K, (int64_t)HV * K, len, tid);
            lk_rows_async<NTH, C, K / 8>(KDs, KP, (const uint16_t *)p.KDt + r0 * K, (int64_t)HV * K, len, tid);
            lk_rows_async<NTH, C, C / 8>(Ms, CP, (const uint16_t *)p.Mt + r0 * C, (int64_t)HV * C, len, tid);
        }
        lk_rows_async<NTH, C, VT / 8>(Us, VTP, (const uint16_t *)p.Ut + rv, (int64_t)HV * V, len, tid);
        if constexpr (!GRP)
            lk_rows_async<NTH, C, VT / 4>(Skb + s * C * VTP, VTP, (const float *)p.Sk + rv, (int64_t)HV * V, len, tid);
        if (!GRP && tid == 0) lk_cp_async16(eGs, p.eG + ((int64_t)jc * HV + h) * K, true);
    };
    /* GRP: the head's -e^{A_log} (gates = it times dt) and D */
    const float na = GRP ? -expf(lk_in(p.A_log, h)) : 0.f, dsk = GRP ? lk_in0(p.D, h) : 0.f;
    /* M2 stores bf16 outputs in pairs (4-byte stores) */
    const bool o2 = M2 && p.out_dt == LIN_DT_BF16 && ((uintptr_t)p.out & 3) == 0 && V % 2 == 0;

    /* the state tile: element e of (m-tile a, n-tile b) is row 16a + g + 8(e >> 1),
     * column 8 NB warp + 8b + 2 t4 + (e & 1) */
    float S[MT][NB][4];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    lk_state_load<OT, MT, NB>(p, sb, init, S, Sb, KP, warp, g, t4);
    /* GRP: the chunk's cumulative log-decay in every warp: lane l holds G at tokens 2l, 2l + 1 (gates past len
     * count 0, so G_63 is the chunk's last); d0, d1 what eG holds there: dt */
    auto gate_scan = [&](const float *eGs, int len, float &d0, float &d1, float &G0, float &G1) {
        d0 = 2 * lane < len ? eGs[2 * lane] : 0.f;
        d1 = 2 * lane + 1 < len ? eGs[2 * lane + 1] : 0.f;
        const float g0 = na * d0, g1 = na * d1;
        float incl = g0 + g1;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float y = gc_shfl(incl, lane >= d ? lane - d : 0);
            if (lane >= d) incl += y;
        }
        G0 = incl - g1;
        G1 = incl;
    };
    /* GRP: M's block (16 rb, 16 jb) from C B^T's accumulators, 16-bit, into Mw (zero above the diagonal) */
    auto write_m = [&](uint16_t *Mw, const float (&acc)[2][4], int rb, int jb, float G0, float G1, float d0, float d1) {
        const float scale = p.scale;
        float Gr[2];
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * rb + g + 8 * hf;
            const float x0 = gc_shfl(G0, t >> 1), x1 = gc_shfl(G1, t >> 1);
            Gr[hf] = (t & 1) ? x1 : x0;
        }
#pragma unroll
        for (int hf2 = 0; hf2 < 2; hf2++) {
            const int col = 16 * jb + 8 * hf2 + 2 * t4;
            const float c0 = gc_shfl(G0, col >> 1), c1 = gc_shfl(G1, col >> 1);
            const float dc0 = gc_shfl(d0, col >> 1), dc1 = gc_shfl(d1, col >> 1);
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = 16 * rb + g + 8 * hf;
                const float m0 = col <= row ? scale * expf(Gr[hf] - c0) * dc0 * acc[hf2][2 * hf] : 0.f;
                const float m1 = col + 1 <= row ? scale * expf(Gr[hf] - c1) * dc1 * acc[hf2][2 * hf + 1] : 0.f;
                *(uint32_t *)(Mw + row * CP + col) = lk_pack2<OT>(m0, m1);
            }
        }
    };
    /* GRP: U's row t, 16 values of x from v0, times dt_t e^{G_L - G_t} into Ub for the state update */
    auto scale_u = [&](const uint16_t *Us, int t, int v0, float G0, float G1, float GL, float d0, float d1) {
        const float x0 = gc_shfl(G0, t >> 1), x1 = gc_shfl(G1, t >> 1); /* every lane shuffles */
        const float dt0 = gc_shfl(d0, t >> 1), dt1 = gc_shfl(d1, t >> 1);
        const float dt = (t & 1) ? dt1 : dt0;
        const float fu = dt * expf(fminf(GL - ((t & 1) ? x1 : x0), 0.f));
#pragma unroll
        for (int h8 = 0; h8 < 2; h8++) {
            float u[8];
            lk_unpack8<OT>(Us + t * VTP + v0 + 8 * h8, u);
#pragma unroll
            for (int e = 0; e < 8; e++) u[e] *= fu;
            lk_pack8<OT>(Ub + t * VTP + v0 + 8 * h8, u);
        }
    };
    if (nch > 0) {
        if constexpr (M2) issue_lean(0, c0);
        else issue(0, c0);
    }
    lk_cp_async_commit();

    for (int q = 0; q < nch; q++) {
        lk_cp_async_wait_all();
        __syncthreads(); /* chunk q landed; Sb holds S; every warp is done with chunk q-1 */
        if (q + 1 < nch) {
            if constexpr (M2) issue_lean((q + 1) & 1, c0 + q + 1);
            else issue((q + 1) & 1, c0 + q + 1);
        }
        lk_cp_async_commit();
        unsigned char *base = smraw + (q & 1) * STAGE;
        const uint16_t *Ws = (const uint16_t *)base, *QGs = Ws + C * KP, *KDs = QGs + C * KP, *Ms = KDs + C * KP,
                       *Us = Ms + C * CP;
        const float *eGs = (const float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[c0 + q];
        const int len = p.pl.chunk_len[c0 + q];
        /* X = W S^T and O = QG S^T: rows 16 rg .. (tokens), VW columns from cofs (GRP: C S^T, and this warp's
         * blocks of C B^T) */
        float X[VW / 8][4], O[VW / 8][4], CB[2][2][4];
#pragma unroll
        for (int nt = 0; nt < VW / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) X[nt][e] = O[nt][e] = 0.f;
#pragma unroll
        for (int bi = 0; bi < 2; bi++)
#pragma unroll
            for (int e = 0; e < 8; e++) CB[bi][e / 4][e % 4] = 0.f;
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
            if constexpr (GRP)
#pragma unroll
                for (int bi = 0; bi < 2; bi++) {
                    const int jb = warp / 4 + 2 * bi; /* warp-uniform */
                    if (jb > rg) continue;
                    uint32_t b[4];
                    lk_ldb_n(b, KDs, KP, 16 * jb, 16 * k16);
                    lk_mma<OT>(CB[bi][0], aq, b[0], b[1]);
                    lk_mma<OT>(CB[bi][1], aq, b[2], b[3]);
                }
        }
        const uint16_t *UB = Us;
        float eL = 0.f; /* GRP: e^{G_L} */
        if constexpr (GRP) {
            float d0, d1, G0, G1;
            gate_scan(eGs, len, d0, d1, G0, G1);
            const float GL = gc_shfl(G1, 31);
            eL = expf(GL);
            /* o rows: scale e^{G_t} (C S^T) */
            float f[2];
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int t = 16 * rg + g + 8 * hf;
                const float x0 = gc_shfl(G0, t >> 1), x1 = gc_shfl(G1, t >> 1);
                f[hf] = p.scale * expf((t & 1) ? x1 : x0);
            }
#pragma unroll
            for (int nt = 0; nt < VW / 8; nt++) {
                O[nt][0] *= f[0];
                O[nt][1] *= f[0];
                O[nt][2] *= f[1];
                O[nt][3] *= f[1];
            }
            /* M's blocks of this warp, then U's scaled rows: thread tid scales 16 values of row tid / 4 */
#pragma unroll
            for (int bi = 0; bi < 2; bi++) {
                const int jb = warp / 4 + 2 * bi;
                if (jb <= rg) write_m((uint16_t *)Ms, CB[bi], rg, jb, G0, G1, d0, d1);
            }
            static_assert(NTH * 16 == C * VT, "16 values a thread");
            scale_u(Us, tid >> 2, (tid & 3) * 16, G0, G1, GL, d0, d1);
        }
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

        /* O += M Unew (GRP: M is zero past the diagonal block); store the chunk's rows */
        lk_rows_mul_k<OT, C>(O, Ms, CP, UB + cofs, VTP, 16 * rg, GRP ? rg : C / 16 - 1);
        /* mamba2 adds D x from this stage's skip rows (M2; GRP: from its x) or from global memory */
        auto store = [&](const float *sk, int64_t ldsk) {
            if (o2) lk_store_out_rows<VW / 8, LIN_DT_BF16>(p, O, ct0, len, HV, V, ocol + cofs, VW, sk, ldsk, 16 * rg, g, t4);
            else lk_store_out_rows(p, O, ct0, len, HV, V, ocol + cofs, VW, sk, ldsk, 16 * rg, g, t4);
        };
        if constexpr (GRP) { /* D x from the staged x */
#pragma unroll
            for (int nt = 0; nt < VW / 8; nt++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int t = 16 * rg + g + 8 * hf, v = cofs + 8 * nt + 2 * t4;
                    O[nt][2 * hf] += dsk * lk_from16<OT>(Us[t * VTP + v]);
                    O[nt][2 * hf + 1] += dsk * lk_from16<OT>(Us[t * VTP + v + 1]);
                }
            store(nullptr, 0);
        } else {
            const float *sk = !SKIP ? nullptr : M2 ? Skb + (q & 1) * C * VTP + cofs : p.Sk + ct0 * HV * V + ocol + cofs;
            store(sk, M2 ? (int64_t)VTP : (int64_t)HV * V);
        }

        /* S = S diag(eG) + Unew^T KD (GRP: e^{G_L} S + (U o e^{G_L - G_i})^T B) */
        if constexpr (GRP) lk_state_step<OT, MT, C, NB>(S, &eL, false, KDs, KP, Ub, VTP, Sb, warp, g, t4);
        else lk_state_step<OT, MT, C, NB>(S, eGs, GCH, KDs, KP, UB, VTP, Sb, warp, g, t4);
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

/* the bf16 instances (mamba2's form), at create where they run */
extern "C" int lin_chunk_fused_state_bf16_setup(void) {
    const void *k[2] = {(const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true>,
                        (const void *)lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, true>};
    int e = 0;
    for (int i = 0; i < 2 && !e; i++)
        e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)LIN_FUSED_STATE_SMEM_BF16(64));
    return e;
}

/* ot: f16 (vt 16 or 32) or bf16 (vt 64, mamba2 only, after lin_chunk_fused_state_bf16_setup; the group form, C
 * and B per group with x and dt from the stream prep, where p.grp) */
extern "C" int lin_launch_chunk_fused_state(const lin_fwd *pp, int ot, int vt, void *stream) {
    const lin_fwd &p = *pp;
    const bool bf = ot == LIN_DT_BF16;
    void (*k)(lin_fwd) = ot == LIN_DT_F16 ? (vt == 16   ? lin_chunk_fused_state_kernel<LIN_DT_F16, 16>
                                             : vt == 32 ? lin_chunk_fused_state_kernel<LIN_DT_F16, 32> : nullptr)
                         : bf && vt == 64 && p.kind == LIN_MAMBA2
                             ? (p.grp ? lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true, true>
                                      : lin_chunk_fused_state_kernel<LIN_DT_BF16, 64, true>)
                             : nullptr;
    if (!k || p.V % vt) return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)p.bs, (unsigned)(p.hv * (p.V / vt)));
    LK_LAUNCH(k, grid, bf ? 256 : 128, bf ? LIN_FUSED_STATE_SMEM_BF16(vt) : LIN_FUSED_STATE_SMEM(vt), (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
