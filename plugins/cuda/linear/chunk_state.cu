/* chunk_state.cu - the state pass of the chunked extend's phase 2 for bf16
 * activations (f16: chunk_fused_state.cu): the sequential pass over each
 * request's chunks does only what the recurrence needs, and the outputs are a
 * separate, fully parallel kernel (chunk_output.cu).  Inputs: phase 1's W,
 * KD, U and exp(G_last), either phase 1.
 *
 * One block per (request, value head, tile of VT = 16 / 32 state rows), 4
 * compute warps holding the tile [VT][128] in float32 mma accumulators (warp
 * w owns columns 32w ..) and 4 producer warps that keep the chunks' W, KD, U
 * tile and exp(G_last) coming in a 3-stage cp.async ring (two chunks in
 * flight while one computes) and store the per-chunk states.  Per chunk:
 *   Hs[chunk] = S (16-bit: the operand the output kernel uses)
 *   Unew      = U - W S^T  (delta; declin: U)  -> in place of U
 *   S         = S diag(eG) + Unew^T KD
 * The compute warps' chain per chunk is W S^T (two accumulator chains), a
 * hand-off, the update.
 *
 * The warps hand off through three named barriers of all the block's
 * threads, where one side only arrives (bar.arrive) and the other waits
 * (bar.sync), so that neither side waits for work it does not depend on:
 *   FULL  producers arrive (their copies of chunk q landed), compute waits
 *         before W S^T;
 *   HS    producers arrive (Hs copied out of Sb), compute waits before the
 *         update writes Sb (and among themselves: Unew in Ub complete, Sb
 *         read);
 *   EMPTY compute arrives (the update of chunk q-1 done: Sb holds S, stage
 *         (q-1) % NS read for the last time), producers wait before the Hs
 *         copy and the next copies into that stage.
 * The producers arrive at FULL / HS of chunk q+1 only after EMPTY of q+1,
 * which the compute warps reach only after passing FULL / HS of q, so no
 * phase gets a second arrival before it completes.  compute-sanitizer's
 * racecheck reports the arrive hand-offs as hazards; a build with every
 * arrive a bar.sync (LK_RACECHECK_SYNC_ONLY, bench/gpu/build_race.sh) tells
 * those reports apart from real races.
 *
 * MODE (chunk_segment.cu runs modes 1 and 2): 0 is the serial pass, one
 * block per request over all its chunks.  With segments of p.seg_chunks
 * chunks, the rows of S evolve independently (S' = S P_c + U^T KD, P_c =
 * diag(eG) - W^T KD), so a block runs one (request, segment) pair
 * (blockIdx.x = request * p.seg_max + segment):
 *   1  segment 0 as the serial pass does (Hs, Unew; its end state, the next
 *      segment's true start, to the float32 summaries Zs unless it is the
 *      last), and every middle segment's summary from zero: its V value
 *      rows from a zero state (the zero-start end state Z) and K product
 *      rows from the identity with U = 0 (the product P of the segment's
 *      P_c), stored float32 to Zs[slot][head][V + K][K], no Hs, U kept;
 *   2  segments 1 .. from their true start (Zs of the previous segment's
 *      slot, after the join), Hs and Unew as the serial pass, the last one's
 *      end state to the pool.
 * Each mode's grid covers every (request, segment) pair; a block with
 * nothing to do in its mode returns at once. */
#include "chunk_mma.cuh"

#define LK_S2_CWARPS 4 /* compute warps ... */
#define LK_S2_PWARPS 4 /* ... and producer warps of the state pass */
#define LK_S2_THREADS (32 * (LK_S2_CWARPS + LK_S2_PWARPS))
#define LK_BAR_FULL 1
#define LK_BAR_HS 2
#define LK_BAR_EMPTY 3
#define LK_S2_NS 3 /* stages of its cp.async ring */

/* The first segment pass (mode 1) at tile 16 runs 2 blocks per SM: its grid holds more blocks than the
 * SMs (segment 0 and the middle segments' V + K rows), and one block per SM leaves the SM waiting on
 * each block's dependent chain.  That takes a 2-stage ring (shared memory) and at most 128 registers
 * (the producers' copy loop unrolled by 2); the serial pass and mode 2 (at most the serial pass's
 * blocks per segment, fewer segments than the SMs hold) keep 3 stages and 1 block per SM. */
template <int VT, int MODE> struct lk_s2_occ {
    static constexpr int MINB = MODE == 1 && VT == 16 ? 2 : 1;
    static constexpr int NS = MINB == 2 ? 2 : LK_S2_NS;
};

template <int VT, int NS = LK_S2_NS> struct lk_s2 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, VTP = VT + 8;
    static constexpr int STAGE = 2 * C * KP * 2 + C * VTP * 2 + K * 4; /* W, KD, U tile, eG */
    static constexpr int SMEM = NS * STAGE + VT * KP * 2 + C * VTP * 2 + 2 * NS * 4;
};
static_assert(2 * (lk_s2<16, lk_s2_occ<16, 1>::NS>::SMEM + 1024) <= 228 * 1024,
              "two segment-pass blocks of tile 16 fit an SM 9.0 (228 KiB, 1 KiB reserved a block; SM 8.0 holds one)");

static_assert(lk_s2<32>::SMEM <= (int)LIN_FUSED_UT_SMEM,
              "the state pass needs at most the fused phase 1's shared memory (lin_create.c checks that one)");

template <int OT, int VT, int MODE>
__global__ __launch_bounds__(LK_S2_THREADS, (lk_s2_occ<VT, MODE>::MINB)) void lin_chunk_state_kernel(lin_fwd p) {
    constexpr int NS = lk_s2_occ<VT, MODE>::NS;
    using L = lk_s2<VT, NS>;
    constexpr int C = L::C, K = L::K, KP = L::KP, VTP = L::VTP, MT = VT / 16, STAGE = L::STAGE;
    constexpr int CW = LK_S2_CWARPS, NP = LK_S2_PWARPS;
    /* compute warp w owns state columns 32 w .. (NB n8 tiles); in W S^T, token rows 16 w .. and all VT
     * columns (NX n8 tiles) */
    constexpr int KW = K / CW, NB = KW / 8, VW = VT, NX = VW / 8;
    constexpr int NT = LK_S2_THREADS; /* every barrier counts all the block's threads */
    static_assert(NB == 4 && NX % 2 == 0, "state tile split");
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Sb = (uint16_t *)(smraw + NS * STAGE); /* [VT][KP] */
    uint16_t *Ub = Sb + VT * KP;                    /* [C][VTP] */
    int *meta = (int *)(Ub + C * VTP);              /* [NS][2]: the staged chunk's first token row, length */

    /* value-row tiles, then (mode 1) product-row tiles */
    const int nvt = p.V / VT, ntile = MODE == 1 ? (p.V + K) / VT : nvt;
    const int h = blockIdx.y / ntile, vt = blockIdx.y % ntile;
    const int i = MODE == 0 ? (int)blockIdx.x : (int)blockIdx.x / p.seg_max;
    const int sg = MODE == 0 ? 0 : (int)blockIdx.x % p.seg_max; /* the segment */
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: the output pass zeroes its rows */
    const int rc0 = p.pl.req_chunk0[i], rnch = p.pl.req_nchunk[i];
    const int nseg = MODE == 0 ? 1 : (rnch + p.seg_chunks - 1) / p.seg_chunks;
    const bool prow = MODE == 1 && vt >= nvt; /* product rows (mode 1) */
    /* real: this block makes the true states (Hs, Unew, the pool); else a mode-1 summary from zero */
    const bool real = MODE == 0 || (MODE == 1 && sg == 0) || MODE == 2;
    if (MODE == 1 && (sg >= nseg || (sg > 0 && sg == nseg - 1) || (sg == 0 && prow))) return;
    if (MODE == 2 && (sg == 0 || sg >= nseg)) return;
    const bool last = sg == nseg - 1;
    /* the true start: the pool (init) or zero for segment 0; the previous segment's slot of Zs for the others */
    const int init = MODE == 2 ? 2 : real ? p.pl.req_init[i] : 0;
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool producer = warp >= CW; /* the last NP warps move data; the others compute */
    constexpr int PT = 32 * NP;        /* producer threads */
    const int pl = tid - 32 * CW;      /* producer thread index (when producer) */
    /* this tile's first column of a [T][HV][V] row (product tiles: U is zero, never read) */
    const int64_t ocol = (int64_t)h * V + (prow ? 0 : vt * VT);
    const int c0 = rc0 + sg * (MODE == 0 ? 0 : p.seg_chunks);
    const int nch = MODE == 0 ? rnch : min(p.seg_chunks, rnch - sg * p.seg_chunks);
    /* Zs rows of this tile: [slot][h][V + K][K], value rows first */
    float *zrow = MODE == 0 ? NULL
                            : p.Zs + ((LIN_SEG_SLOT(rc0, i, sg, p.seg_chunks) * HV + h) * (int64_t)(V + K) +
                                      (prow ? V + (vt - nvt) * VT : vt * VT)) * K;

    /* the producers: one chunk's operands into stage s (rows past the chunk's length zero), with 32-bit
     * offsets from the chunk's first row (fewer instructions per copy) */
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
        const int rs = HV * K; /* token-row stride of W, KD */
        const uint16_t *Wg = (const uint16_t *)p.Wt + (ct0 * HV + h) * K, *Kg = (const uint16_t *)p.KDt + (ct0 * HV + h) * K;
        const uint16_t *Ugs = (const uint16_t *)p.Ut + ct0 * HV * V + ocol;
        auto wkd = [&](int idx) {
            const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
            const bool ok = t < len;
            const int src = (ok ? t : 0) * rs + cc;
            if (DELTA) lk_cp_async16(Ws + t * KP + cc, Wg + src, ok);
            lk_cp_async16(KDs + t * KP + cc, Kg + src, ok);
        };
        if constexpr (lk_s2_occ<VT, MODE>::MINB == 2) { /* the 128-register budget */
#pragma unroll 2
            for (int idx = pl; idx < C * (K / 8); idx += PT) wkd(idx);
        } else {
#pragma unroll
            for (int idx = pl; idx < C * (K / 8); idx += PT) wkd(idx);
        }
        for (int idx = pl; idx < C * (VT / 8); idx += PT) {
            const int t = idx / (VT / 8), cc = (idx % (VT / 8)) * 8;
            const bool ok = t < len && !prow;
            lk_cp_async16(Us + t * VTP + cc, Ugs + (ok ? t : 0) * HV * V + cc, ok);
        }
        if (pl < 32) lk_cp_async16(eGs + pl * 4, p.eG + ((int64_t)jc * HV + h) * K + pl * 4, true); /* K / 4 = 32 */
    };
    static_assert(K / 4 == 32, "one eG load per producer lane");

    /* the state tile (compute warps): element e of (m-tile a, n-tile b) is row
     * 16a + g + 8(e >> 1), column KW warp + 8b + 2 t4 + (e & 1) */
    float S[MT][NB][4];
    const int64_t sb = (int64_t)slot * p.ssm_elems + ocol * K;
    /* mode 2's start: the previous segment's Zs rows (its end state after the join) */
    const float *zprev = MODE == 2 ? zrow - (int64_t)HV * (V + K) * K : NULL;
    if (!producer) {
#pragma unroll
        for (int a = 0; a < MT; a++)
#pragma unroll
            for (int b = 0; b < NB; b++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int v = 16 * a + g + 8 * hf, c = KW * warp + 8 * b + 2 * t4;
                    if (MODE == 2) {
                        S[a][b][2 * hf] = zprev[v * K + c];
                        S[a][b][2 * hf + 1] = zprev[v * K + c + 1];
                    } else if (prow) { /* the identity's rows (vt - nvt) VT + v */
                        const int r = (vt - nvt) * VT + v;
                        S[a][b][2 * hf] = r == c ? 1.f : 0.f;
                        S[a][b][2 * hf + 1] = r == c + 1 ? 1.f : 0.f;
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
        if (producer) {
            lk_cp_async_wait<NS - 2>();     /* chunk q landed (this thread's copies) */
            lk_bar_sync(LK_BAR_EMPTY, NT);  /* Sb holds S; stage (q - 1) % NS free */
            lk_bar_arrive(LK_BAR_FULL, NT); /* chunk q visible */
        } else {
            lk_bar_arrive(LK_BAR_EMPTY, NT); /* Sb written (init or chunk q-1); done with stage (q-1) % NS */
            lk_bar_sync(LK_BAR_FULL, NT);    /* ... and every compute warp done with Ub */
        }
        const int st = q % NS, jc = c0 + q;
        const unsigned char *base = smraw + st * STAGE;
        const uint16_t *Ws = (const uint16_t *)base, *KDs = Ws + C * KP, *Us = KDs + C * KP;
        const float *eGs = (const float *)(Us + C * VTP);
        if (producer) {
            /* the state at the chunk's start, for the output pass (a summary block stores none) */
            uint16_t *dst = (uint16_t *)p.Hs + ((int64_t)jc * HV + h) * V * K + (int64_t)vt * VT * K;
#pragma unroll
            for (int idx = pl; idx < (real ? VT * (K / 8) : 0); idx += PT) {
                const int v = idx / (K / 8), cc = (idx % (K / 8)) * 8;
                LK_ALIGNED(dst + v * K + cc, 16);
                *(uint4 *)(dst + v * K + cc) = *(const uint4 *)(Sb + v * KP + cc);
            }
            /* Sb read; then chunk q + NS - 1 into the stage chunk q - 1 left */
            lk_bar_arrive(LK_BAR_HS, NT);
            if (q + NS - 1 < nch) issue((q + NS - 1) % NS, c0 + q + NS - 1);
            lk_cp_async_commit();
            continue;
        }
        if (DELTA) { /* Unew = U - W S^T: token rows 16 rw .., VW columns from v0; two chains over K */
            const int64_t ct0 = rtok0 + meta[2 * st];
            const int len = meta[2 * st + 1];
            /* W S^T split over the compute warps by 16-row groups (rw) and VW-column groups (v0): with 4
             * warps rw = warp and v0 = 0; the general form stays because the shorter one compiles to
             * other code (other registers) than the kernel the timings in docs/lab/linear.md describe */
            const int rw = warp % 4, v0 = VW * (warp / 4);
            constexpr int XC = 2;
            float X[XC][NX][4];
#pragma unroll
            for (int hk = 0; hk < XC; hk++)
#pragma unroll
                for (int nt = 0; nt < NX; nt++) X[hk][nt][0] = X[hk][nt][1] = X[hk][nt][2] = X[hk][nt][3] = 0.f;
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
                    /* bf16 Unew by the integer rounding: with the cvt the 128-register instance
                     * (tile 16, two blocks an SM) spills */
                    const uint32_t pk = OT == LIN_DT_BF16 ? gc_bf16x2_int(u0, u1) : lk_pack2<OT>(u0, u1);
                    *(uint32_t *)(Ub + t * VTP + v) = pk;
                    if (t < len && real) { /* a summary keeps U for the true pass */
                        LK_ALIGNED(Ug + (int64_t)t * HV * V + v, 4);
                        *(uint32_t *)(Ug + (int64_t)t * HV * V + v) = pk;
                    }
                }
        }
        lk_bar_sync(LK_BAR_HS, NT); /* compute warps only (the producers went on above) */

        /* S = S diag(eG) + Unew^T KD */
        const uint16_t *UB = DELTA ? Ub : Us;
        lk_state_step<OT, MT, C>(S, eGs, GCH, KDs, KP, UB, VTP, Sb, warp, g, t4);
    }
    if (producer) {
        lk_cp_async_wait_all();
        return;
    }
    if (real && !last && MODE == 2) return; /* the next segment's start is the join's */
    /* the end state: the pool (the request's last chunk), else float32 to this block's Zs rows */
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = KW * warp + 8 * b + 2 * t4;
                if (real && last) {
                    lk_srow_st<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
                } else {
                    LK_ALIGNED(zrow + v * K + c, 8);
                    *(float2 *)(zrow + v * K + c) = make_float2(S[a][b][2 * hf], S[a][b][2 * hf + 1]);
                }
            }
}

/* ------------------------------------------------------------ launchers */

#define LK_S2_KERNELS(M) \
    {(const void *)lin_chunk_state_kernel<LIN_DT_BF16, 16, M>, (const void *)lin_chunk_state_kernel<LIN_DT_BF16, 32, M>}

/* shared memory of mode m (0 serial, 1 / 2 segments) at tile vt */
template <int VT, int MODE> static constexpr int lk_s2_smem_of() { return lk_s2<VT, lk_s2_occ<VT, MODE>::NS>::SMEM; }
static int lk_s2_smem(int vt, int m) {
    if (vt == 16) return m == 0 ? lk_s2_smem_of<16, 0>() : m == 1 ? lk_s2_smem_of<16, 1>() : lk_s2_smem_of<16, 2>();
    return m == 0 ? lk_s2_smem_of<32, 0>() : m == 1 ? lk_s2_smem_of<32, 1>() : lk_s2_smem_of<32, 2>();
}

extern "C" int lin_chunk_state_setup(void) {
    const void *k[3][2] = {LK_S2_KERNELS(0), LK_S2_KERNELS(1), LK_S2_KERNELS(2)};
    int e = 0;
    for (int m = 0; m < 3 && !e; m++)
        for (int i = 0; i < 2 && !e; i++)
            e = (int)cudaFuncSetAttribute(k[m][i], cudaFuncAttributeMaxDynamicSharedMemorySize, lk_s2_smem(16 << i, m));
    return e;
}

/* bf16 operands; vt 16 or 32; p->Hs.  mode 0: the serial pass; 1, 2: the segment passes (p->Zs,
 * p->seg_chunks, p->seg_max; chunk_segment.cu) */
extern "C" int lin_launch_chunk_state_mode(const lin_fwd *pp, int vt, int mode, void *stream) {
    const lin_fwd &p = *pp;
    const unsigned tiles = (unsigned)((p.V + (mode == 1 ? p.K : 0)) / vt);
    const dim3 grid((unsigned)p.bs * (unsigned)(mode ? p.seg_max : 1), (unsigned)p.hv * tiles);
    void (*k)(lin_fwd);
    if (mode == 0) k = vt == 16 ? lin_chunk_state_kernel<LIN_DT_BF16, 16, 0> : lin_chunk_state_kernel<LIN_DT_BF16, 32, 0>;
    else if (mode == 1) k = vt == 16 ? lin_chunk_state_kernel<LIN_DT_BF16, 16, 1> : lin_chunk_state_kernel<LIN_DT_BF16, 32, 1>;
    else k = vt == 16 ? lin_chunk_state_kernel<LIN_DT_BF16, 16, 2> : lin_chunk_state_kernel<LIN_DT_BF16, 32, 2>;
    LK_LAUNCH(k, grid, LK_S2_THREADS, lk_s2_smem(vt, mode), (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}

extern "C" int lin_launch_chunk_state(const lin_fwd *pp, int vt, void *stream) {
    return lin_launch_chunk_state_mode(pp, vt, 0, stream);
}
