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
 * those reports apart from real races. */
#include "chunk_mma.cuh"

#define LK_S2_CWARPS 4 /* compute warps ... */
#define LK_S2_PWARPS 4 /* ... and producer warps of the state pass */
#define LK_S2_THREADS (32 * (LK_S2_CWARPS + LK_S2_PWARPS))
#define LK_BAR_FULL 1
#define LK_BAR_HS 2
#define LK_BAR_EMPTY 3
#define LK_S2_NS 3 /* stages of its cp.async ring */

template <int VT> struct lk_s2 {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, VTP = VT + 8;
    static constexpr int STAGE = 2 * C * KP * 2 + C * VTP * 2 + K * 4; /* W, KD, U tile, eG */
    static constexpr int SMEM = LK_S2_NS * STAGE + VT * KP * 2 + C * VTP * 2 + 2 * LK_S2_NS * 4;
};

static_assert(lk_s2<32>::SMEM <= (int)LIN_FUSED_UT_SMEM,
              "the state pass needs at most the fused phase 1's shared memory (lin_create.c checks that one)");

template <int OT, int VT>
__global__ __launch_bounds__(LK_S2_THREADS, 1) void lin_chunk_state_kernel(lin_fwd p) {
    using L = lk_s2<VT>;
    constexpr int C = L::C, K = L::K, KP = L::KP, VTP = L::VTP, MT = VT / 16, NS = LK_S2_NS, STAGE = L::STAGE;
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

    const int nvt = p.V / VT;
    const int h = blockIdx.y / nvt, vt = blockIdx.y % nvt;
    const int i = blockIdx.x;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    if (slot < 0) return; /* padding: the output pass zeroes its rows */
    const int V = p.V, HV = p.hv, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const bool producer = warp >= CW; /* the last NP warps move data; the others compute */
    constexpr int PT = 32 * NP;        /* producer threads */
    const int pl = tid - 32 * CW;      /* producer thread index (when producer) */
    const int64_t ocol = (int64_t)h * V + vt * VT; /* this tile's first column of a [T][HV][V] row */
    const int c0 = p.pl.req_chunk0[i], nch = p.pl.req_nchunk[i];

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
            const bool ok = t < len;
            lk_cp_async16(Us + t * VTP + cc, Ugs + (ok ? t : 0) * HV * V + cc, ok);
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
                    if (!init) S[a][b][2 * hf] = S[a][b][2 * hf + 1] = 0.f;
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
            /* the state at the chunk's start, for the output pass */
            uint16_t *dst = (uint16_t *)p.Hs + ((int64_t)jc * HV + h) * V * K + (int64_t)vt * VT * K;
#pragma unroll
            for (int idx = pl; idx < VT * (K / 8); idx += PT) {
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
                    const uint32_t pk = lk_pack2<OT>(u0, u1);
                    *(uint32_t *)(Ub + t * VTP + v) = pk;
                    if (t < len) {
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
#pragma unroll
    for (int a = 0; a < MT; a++)
#pragma unroll
        for (int b = 0; b < NB; b++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int v = 16 * a + g + 8 * hf, c = KW * warp + 8 * b + 2 * t4;
                lk_srow_st<2>(p, p.ssm_state, sb + (int64_t)v * K + c, &S[a][b][2 * hf]);
            }
}

/* ------------------------------------------------------------ launchers */

extern "C" int lin_chunk_state_setup(void) {
    const void *k[2] = {(const void *)lin_chunk_state_kernel<LIN_DT_BF16, 16>,
                        (const void *)lin_chunk_state_kernel<LIN_DT_BF16, 32>};
    const int sm[2] = {lk_s2<16>::SMEM, lk_s2<32>::SMEM};
    int e = 0;
    for (int i = 0; i < 2 && !e; i++) e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm[i]);
    return e;
}

/* bf16 operands; vt 16 or 32; p->Hs */
extern "C" int lin_launch_chunk_state(const lin_fwd *pp, int vt, void *stream) {
    const lin_fwd &p = *pp;
    const dim3 grid((unsigned)p.bs, (unsigned)(p.hv * (p.V / vt)));
    void (*k)(lin_fwd) = vt == 16 ? lin_chunk_state_kernel<LIN_DT_BF16, 16> : lin_chunk_state_kernel<LIN_DT_BF16, 32>;
    LK_LAUNCH(k, grid, LK_S2_THREADS, vt == 16 ? lk_s2<16>::SMEM : lk_s2<32>::SMEM, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
