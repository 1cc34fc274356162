/* lk_cstate.cuh - the split state pass (lin_cstate_kernel), shared by
 * lk_split2.cu (the serial pass over each request's chunks, MODE 0) and
 * lk_cscan.cu (SGL_ATTN_LIN_CSTATE=scan: the same pass over groups of chunks,
 * MODE 1 and 3; see there).  The kernel's description is lk_split2.cu's. */
#ifndef SGL_LK_CSTATE_CUH
#define SGL_LK_CSTATE_CUH

#include "lk_mma.cuh"

#define LK_S2_CWARPS 4                      /* compute warps of the state pass ... */
#define LK_S2_THREADS (32 * LK_S2_CWARPS + 32) /* ... and one producer warp */
/* SGL_ATTN_LIN_CSTATE=v2: four producer warps.  Why: one producer warp issues
 * each chunk's ~68 cp.async per lane plus the Hs stores, ~700 instructions at
 * ~5 cycles each (ncu, H200, run 5: 0.92 IPC, 5.4 cycles between a warp's
 * issues, 2,700 cycles per chunk), longer than the compute warps' chain, and
 * every barrier waits for it. */
#define LK_S2_THREADS_NP(np) (32 * LK_S2_CWARPS + 32 * (np))
/* SGL_ATTN_LIN_CSTATE=v3: 8 compute warps.  Why: the pass is one chunk after
 * another, ~2,400 cycles each against ~150 of tensor-core work (ncu, run 5:
 * 11% issue slots busy, 5.4 cycles between a warp's issues), so the step is
 * latency: each compute warp's dependent chain and the barriers.  With 8 warps
 * each owns 16 state columns (half the update's ldmatrix / mma / scale / pack /
 * store), W S^T splits its VT columns between two warps per 16 chunk rows
 * (half the mma, no cross-warp sum), both products run in shorter accumulator
 * chains (2 mma deep), and the producers' cp.async move after the second
 * barrier (it then waits only for their Hs copy). */
#define LK_S2_THREADS_CW(cw, np) (32 * (cw) + 32 * (np))
 /* SGL_ATTN_LIN_CSTATE=v4: v2 with warp-specialised synchronisation.  Why: v2's two __syncthreads per
 * chunk make the compute warps wait for the producers' cp.async issue and Hs copy (the mid barrier) and
 * every warp wait for every other (ncu, run 5: 41% of stalls at barriers).  v4 uses three named barriers
 * of all the block's threads where one side only arrives (bar.arrive) and the other waits (bar.sync):
 *   FULL  producers arrive (their copies of chunk q landed), compute waits before W S^T;
 *   HS    producers arrive (Hs copied out of Sb), compute waits before the update writes Sb (and
 *         among themselves: Unew in Ub complete, Sb read);
 *   EMPTY compute arrives (the update of chunk q-1 done: Sb holds S, stage (q-1) % NS read for the
 *         last time), producers wait before the Hs copy and the next copies into that stage.
 * The producers arrive at FULL / HS of chunk q+1 only after EMPTY of q+1, which the compute warps
 * reach only after passing FULL / HS of q, so no phase gets a second arrival before it completes. */
#define LK_BAR_FULL 1
#define LK_BAR_HS 2
#define LK_BAR_EMPTY 3
#define LK_S2_NS 3                          /* stages of its cp.async ring */
#define LK_S3_THREADS 128

template <int VT> struct lk_s2 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, VTP = VT + 8;
    static constexpr int STAGE = 2 * C * KP * 2 + C * VTP * 2 + K * 4; /* W, KD, U tile, eG */
    static constexpr int SMEM = LK_S2_NS * STAGE + VT * KP * 2 + C * VTP * 2 + 2 * LK_S2_NS * 4;
};

/* A group of chunks of the scan (MODE 1 / 3): request i, chunks c0 .. c0 + nch - 1, the group gl of the
 * request's ng, gbase its first group's index.  Group indices: request i's start at req_chunk0[i] / m + i
 * (disjoint, increasing, fewer than num_chunks / m + bs), so a block finds its request by bisection. */
struct lk_cgroup {
    int i, c0, nch, gl, ng, gbase;
};
LK_DEV bool lk_cscan_group(const lin_fwd &p, int G, bool skip_last, lk_cgroup &r) {
    const int m = p.cscan_m;
    if (p.bs <= 0 || m <= 0) return false;
    int lo = 0, hi = p.bs - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (p.pl.req_chunk0[mid] / m + mid <= G) lo = mid;
        else hi = mid - 1;
    }
    const int c0 = p.pl.req_chunk0[lo], rn = p.pl.req_nchunk[lo];
    r.i = lo;
    r.gbase = c0 / m + lo;
    r.gl = G - r.gbase;
    r.ng = (rn + m - 1) / m;
    if (r.gl < 0 || r.gl >= r.ng - (skip_last ? 1 : 0)) return false;
    r.c0 = c0 + r.gl * m;
    r.nch = min(m, rn - r.gl * m);
    return true;
}

/* MODE 0: one block per (request, value head, tile), the request's chunks.
 * MODE 1 / 3 (lk_cscan.cu): blockIdx.x is a group of p.cscan_m chunks of a
 * request (lk_cscan_group); 1: from zero over V + K augmented rows (the last K
 * start as the identity with U = 0), every group but the request's last, the
 * end tile (float32) to p.Zs, nothing else stored; 3: from the group's start
 * state (p.Zs, or the pool for a one-group request), storing Hs and Unew as
 * MODE 0, the pool written by the request's last group. */
template <int OT, int VT, int NP, int MODE = 0, int CW = LK_S2_CWARPS, bool WS = false>
__global__ __launch_bounds__(LK_S2_THREADS_CW(CW, NP), 1) void lin_cstate_kernel(lin_fwd p) {
    using L = lk_s2<VT>;
    constexpr int C = L::C, K = L::K, KP = L::KP, VTP = L::VTP, MT = VT / 16, NS = LK_S2_NS, STAGE = L::STAGE;
    /* CW compute warps: warp w owns state columns KW w .. (NB n8 tiles); in W S^T, rows 16 (w % 4) .. and
     * columns VW (w / 4) .. (NX n8 tiles) */
    constexpr int KW = K / CW, NB = KW / 8, VW = VT / (CW / 4), NX = VW / 8;
    static_assert(CW == 4 || (CW == 8 && MODE == 0), "v3 (8 compute warps): the serial pass only");
    static_assert(!WS || (MODE == 0 && CW == 4), "v4 (named barriers): v2's serial pass only");
    constexpr int NT = LK_S2_THREADS_CW(CW, NP); /* v4: every barrier counts all the block's threads */
    static_assert(NB % 2 == 0 && (NX % 2 == 0 || NX == 1), "state tile split");
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Sb = (uint16_t *)(smraw + NS * STAGE); /* [VT][KP] */
    uint16_t *Ub = Sb + VT * KP;                    /* [C][VTP] */
    int *meta = (int *)(Ub + C * VTP);              /* [NS][2]: the staged chunk's first token row, length */

    const int nvt = (MODE == 1 ? p.V + K : p.V) / VT;
    const int h = blockIdx.y / nvt, vt = blockIdx.y % nvt;
    lk_cgroup gr = {0, 0, 0, 0, 1, 0};
    if (MODE == 0) {
        gr.i = blockIdx.x;
    } else if (!lk_cscan_group(p, blockIdx.x, MODE == 1, gr)) {
        return;
    }
    const int i = gr.i;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    if (slot < 0) return; /* padding: the output pass zeroes its rows */
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool producer = warp >= CW; /* the last NP warps move data; the others compute */
    constexpr int PT = 32 * NP;        /* producer threads */
    const int pl = tid - 32 * CW;      /* producer thread index (when producer) */
    const bool prow = MODE == 1 && vt * VT >= V;  /* augmented rows: no U, no stores but the end tile */
    const int64_t ocol = (int64_t)h * V + (prow ? 0 : vt * VT); /* this tile's first column of a [T][HV][V] row */
    const int c0 = MODE == 0 ? p.pl.req_chunk0[i] : gr.c0, nch = MODE == 0 ? p.pl.req_nchunk[i] : gr.nch;
    /* MODE 1 / 3: this group's rows of p.Zs ([group][HV][V + K][K] float32): 1 writes its end tile there, 3
     * reads its start (slot (gl + ng - 1) % ng of the request, written by lk_cscan.cu's join) */
    const int64_t zrow = MODE == 0 ? 0
                         : (((int64_t)gr.gbase + (MODE == 1 ? gr.gl : (gr.gl + gr.ng - 1) % gr.ng)) * HV + h) * (V + K) +
                               vt * VT;

    /* the producer warp: one chunk's operands into stage s (rows past the chunk's length zero) */
    auto issue = [&](int s, int jc) {
        unsigned char *base = smraw + s * STAGE;
        uint16_t *Ws = (uint16_t *)base, *KDs = Ws + C * KP, *Us = KDs + C * KP;
        float *eGs = (float *)(Us + C * VTP);
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        if (pl == 0) {
            meta[2 * s] = (int)(ct0 - p.pl.req_tok0[i]); /* relative: fits an int */
            meta[2 * s + 1] = len;
        }
        if (NP > 1) { /* v2: 32-bit offsets from the chunk's first row (fewer instructions per copy) */
            const int rs = HV * K; /* token-row stride of W, KD */
            const uint16_t *Wg = (const uint16_t *)p.Wt + (ct0 * HV + h) * K, *Kg = (const uint16_t *)p.KDt + (ct0 * HV + h) * K;
            const uint16_t *Ugs = (const uint16_t *)p.Ut + ct0 * HV * V + ocol;
#pragma unroll
            for (int idx = pl; idx < C * (K / 8); idx += PT) {
                const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
                const bool ok = t < len;
                const int src = (ok ? t : 0) * rs + cc;
                if (DELTA) lk_cp_async16(Ws + t * KP + cc, Wg + src, ok);
                lk_cp_async16(KDs + t * KP + cc, Kg + src, ok);
            }
            for (int idx = pl; idx < C * (VT / 8); idx += PT) {
                const int t = idx / (VT / 8), cc = (idx % (VT / 8)) * 8;
                const bool ok = t < len && !prow; /* augmented rows: U = 0 */
                lk_cp_async16(Us + t * VTP + cc, Ugs + (ok ? t : 0) * HV * V + cc, ok);
            }
        } else {
#pragma unroll 4
            for (int idx = pl; idx < C * (K / 8); idx += PT) {
                const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
                const bool ok = t < len;
                const int64_t src = ((ct0 + (ok ? t : 0)) * HV + h) * K + cc;
                if (DELTA) lk_cp_async16(Ws + t * KP + cc, (const uint16_t *)p.Wt + src, ok);
                lk_cp_async16(KDs + t * KP + cc, (const uint16_t *)p.KDt + src, ok);
            }
            for (int idx = pl; idx < C * (VT / 8); idx += PT) {
                const int t = idx / (VT / 8), cc = (idx % (VT / 8)) * 8;
                const bool ok = t < len && !prow;
                lk_cp_async16(Us + t * VTP + cc, (const uint16_t *)p.Ut + (ct0 + (ok ? t : 0)) * HV * V + ocol + cc, ok);
            }
        }
        if (pl < 32) lk_cp_async16(eGs + pl * 4, p.eG + ((int64_t)jc * HV + h) * K + pl * 4, true); /* K / 4 = 32 */
    };
    static_assert(K / 4 == 32, "one eG load per producer lane");

    /* the state tile (compute warps): element e of (m-tile a, n-tile b) is row
     * 16a + g + 8(e >> 1), column KW warp + 8b + 2 t4 + (e & 1) */
    float S[MT][NB][4];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    if (!producer) {
#pragma unroll
        for (int a = 0; a < MT; a++)
#pragma unroll
            for (int b = 0; b < NB; b++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int v = 16 * a + g + 8 * hf, c = KW * warp + 8 * b + 2 * t4;
                    if (MODE == 1) { /* zero; augmented row V + r: e_r */
                        const int r = vt * VT + v - V;
                        S[a][b][2 * hf] = r == c ? 1.f : 0.f;
                        S[a][b][2 * hf + 1] = r == c + 1 ? 1.f : 0.f;
                    } else if (MODE == 3 && gr.ng > 1) {
                        lk_sld<LIN_DT_F32, 2>(p.Zs, (zrow + v) * K + c, &S[a][b][2 * hf]);
                    } else if (!init) S[a][b][2 * hf] = S[a][b][2 * hf + 1] = 0.f;
                    else lk_srow_ld<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
                    *(uint32_t *)(Sb + v * KP + c) = lk_pack2<OT>(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
                }
    } else {
#pragma unroll
        for (int s = 0; s < NS - 1; s++) {
            if (s < nch) issue(s, c0 + s);
            lk_cp_async_commit();
        }
    }
    const int64_t rtok0 = p.pl.req_tok0[i];

    for (int q = 0; q < nch; q++) {
        if (WS) { /* v4: see LK_BAR_FULL */
            if (producer) {
                lk_cp_async_wait<NS - 2>();     /* chunk q landed (this thread's copies) */
                lk_bar_sync(LK_BAR_EMPTY, NT);  /* Sb holds S; stage (q - 1) % NS free */
                lk_bar_arrive(LK_BAR_FULL, NT); /* chunk q visible */
            } else {
                lk_bar_arrive(LK_BAR_EMPTY, NT); /* Sb written (init or chunk q-1); done with stage (q-1) % NS */
                lk_bar_sync(LK_BAR_FULL, NT);    /* ... and every compute warp done with Ub */
            }
        } else {
            if (producer) lk_cp_async_wait<NS - 2>(); /* chunk q landed */
            __syncthreads(); /* chunk q visible; Sb holds S; every warp is done with chunk q-1 */
        }
        const int st = q % NS, jc = c0 + q;
        const unsigned char *base = smraw + st * STAGE;
        const uint16_t *Ws = (const uint16_t *)base, *KDs = Ws + C * KP, *Us = KDs + C * KP;
        const float *eGs = (const float *)(Us + C * VTP);
        if (producer) {
            /* v3: the Hs copy first (the next barrier waits for it), the copies of chunk q + NS - 1 after
             * that barrier, beside the update (its stage was last read by chunk q - 1's steps) */
            if (CW != 8 && !WS) {
                if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1);
                lk_cp_async_commit();
            }
            /* the state at the chunk's start, for the output pass (not MODE 1's) */
            uint16_t *dst = (uint16_t *)p.Hs + ((int64_t)jc * HV + h) * V * K + (int64_t)vt * VT * K;
#pragma unroll
            for (int idx = pl; idx < (MODE == 1 ? 0 : VT * (K / 8)); idx += PT) {
                const int v = idx / (K / 8), cc = (idx % (K / 8)) * 8;
                LK_ALIGNED(dst + v * K + cc, 16);
                *(uint4 *)(dst + v * K + cc) = *(const uint4 *)(Sb + v * KP + cc);
            }
            if (WS) { /* v4: Sb read; then chunk q + NS - 1 into the stage chunk q - 1 left */
                lk_bar_arrive(LK_BAR_HS, NT);
                if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1);
                lk_cp_async_commit();
                continue;
            }
        } else if (DELTA) { /* Unew = U - W S^T: rows 16 rw .., VW columns from v0; two chains over K */
            const int64_t ct0 = rtok0 + meta[2 * st];
            const int len = meta[2 * st + 1];
            const int rw = warp % 4, v0 = VW * (warp / 4);
            /* two accumulator chains over K; one at VT 64 (8 independent products per step already, and
             * the registers: 64 rows of S and two chains of X spill); v3: four (chains of 2 mma) */
            constexpr int XC = CW == 8 ? 4 : VT >= 64 ? 1 : 2;
            float X[XC][NX][4];
#pragma unroll
            for (int hk = 0; hk < XC; hk++)
#pragma unroll
                for (int nt = 0; nt < NX; nt++) X[hk][nt][0] = X[hk][nt][1] = X[hk][nt][2] = X[hk][nt][3] = 0.f;
            if (NX == 1) { /* one n8 tile: one ldmatrix per two k16 steps */
#pragma unroll
                for (int k32 = 0; k32 < K / 32; k32++) {
                    uint32_t aw0[4], aw1[4], b[4];
                    lk_lda(aw0, Ws, KP, 16 * rw, 32 * k32);
                    lk_lda(aw1, Ws, KP, 16 * rw, 32 * k32 + 16);
                    lk_ldb_n1(b, Sb, KP, v0, 32 * k32);
                    lk_mma<OT>(X[(2 * k32) % XC][0], aw0, b[0], b[1]);
                    lk_mma<OT>(X[(2 * k32 + 1) % XC][0], aw1, b[2], b[3]);
                }
            } else {
#pragma unroll
                for (int k16 = 0; k16 < K / 16; k16++) {
                    uint32_t aw[4];
                    lk_lda(aw, Ws, KP, 16 * rw, 16 * k16);
#pragma unroll
                    for (int np = 0; np < NX / 2; np++) {
                        uint32_t b[4];
                        lk_ldb_n(b, Sb, KP, v0 + 16 * np, 16 * k16);
                        lk_mma<OT>(X[k16 % XC][2 * np], aw, b[0], b[1]);
                        lk_mma<OT>(X[k16 % XC][2 * np + 1], aw, b[2], b[3]);
                    }
                }
            }
            uint16_t *Ug = (uint16_t *)p.Ut + ct0 * HV * V + ocol;
#pragma unroll
            for (int nt = 0; nt < NX; nt++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int t = 16 * rw + g + 8 * hf, v = v0 + 8 * nt + 2 * t4;
                    float x0 = X[0][nt][2 * hf], x1 = X[0][nt][2 * hf + 1];
#pragma unroll
                    for (int hk = 1; hk < XC; hk++) {
                        x0 += X[hk][nt][2 * hf];
                        x1 += X[hk][nt][2 * hf + 1];
                    }
                    const float u0 = lk_from16<OT>(Us[t * VTP + v]) - x0;
                    const float u1 = lk_from16<OT>(Us[t * VTP + v + 1]) - x1;
                    const uint32_t pk = lk_pack2<OT>(u0, u1);
                    *(uint32_t *)(Ub + t * VTP + v) = pk;
                    if (MODE != 1 && t < len) {
                        LK_ALIGNED(Ug + (int64_t)t * HV * V + v, 4);
                        *(uint32_t *)(Ug + (int64_t)t * HV * V + v) = pk;
                    }
                }
        }
        if (WS) lk_bar_sync(LK_BAR_HS, NT); /* v4, compute warps only (the producers went on above) */
        else __syncthreads();               /* Unew complete; Sb read by everyone (Hs, W S^T) */
        if (producer) {
            if (CW == 8) {
                if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1);
                lk_cp_async_commit();
            }
            continue;
        }

        /* S = S diag(eG) + Unew^T KD */
        const uint16_t *UB = DELTA ? Ub : Us;
        lk_state_step<OT, MT, C, NB, CW == 8 ? 2 : 1>(S, eGs, GCH, KDs, KP, UB, VTP, Sb, warp, g, t4);
    }
    if (producer) {
        lk_cp_async_wait_all();
        return;
    }
    if (MODE == 3 && gr.gl < gr.ng - 1) return; /* its end state came from the join */
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = KW * warp + 8 * b + 2 * t4;
                if (MODE == 1) lk_sst<LIN_DT_F32, 2>(p.Zs, (zrow + v) * K + c, &S[a][b][2 * hf]);
                else lk_srow_st<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
            }
}

#endif
