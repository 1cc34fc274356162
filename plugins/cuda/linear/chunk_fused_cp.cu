/* chunk_fused_cp.cu - the gdn chunked extend after the prep in one kernel
 * (option fused_chunk, bf16 activations, K = 128, V = 64 or 128): UT, the
 * state step and the outputs of every chunk of a request, in order, in one
 * block per (request, value head), so that no per-chunk intermediate (W, U,
 * QG, KD, M, the chunk start states Hs) goes through global memory and the
 * recurrence is not split over row tiles.  It serves batches whose
 * (request, head) pairs fill half the SMs (lin_fused_cp_takes); the
 * others keep the unfused kernels.
 *
 * 8 warps, one block per SM (206 KiB of shared memory).  The state [V][128]
 * stays in float32 mma accumulators: warp w owns value rows (w / 4) V / 2 ..
 * and key columns 32 (w % 4) .. (64 floats a thread at V = 128); the product
 * steps put warp w on token rows 16 (w % 4) .. and value columns (w / 4) V / 2
 * ..  The prep's q, k (key head h / gsz) and beta v (head h) of the next chunk,
 * and its raw gate inputs, land by cp.async (a second stage) while the
 * current chunk computes.  Per chunk (the equations of chunk_prep_ut.cu's UT
 * kernel and the state pass / output kernel, the same products in the same
 * order, so the precision is the unfused path's):
 *   gates       g, beta; G = cumulative g (warp scan); e^G, e^(G_last - G)
 *   q k^T       warps 0-3, k k^T warps 4-7 (lower triangle)
 *   M, A        M = scale q k^T . e^(G_t - G_i) (16-bit), A = beta k k^T ... (f32)
 *   T           (I + A)^-1 by 16 x 16 blocks: diagonal blocks by warps 0-3
 *               while warps 4-7 make QG = scale q e^G (over q), KD = k e^(G_last - G),
 *               beta k e^G (over k); then the off-diagonal blocks by levels
 *   W, U        T (beta k e^G), T (beta v)
 *   X, O        W S^T, QG S^T (S as its 16-bit copy Sb)
 *   Unew        U - X (over U)
 *   O          += M Unew  -> out
 *   S           S e^(G_last) + Unew^T KD (float32), and its 16-bit copy Sb
 * The pool's state is read at the start (zero without a prefix), written at
 * the end; padded requests get zero outputs.  Shared memory: two stages of
 * q | k | v, then W (A in f32 during T), U (T in f32 during T), KD, M, T
 * (16-bit), Sb, the gates.
 *
 * The step's scalar work is kept short (each measured on the H100, docs/lab/linear.md):
 *   the gates are scaled by log2(e) once, so every exponential is an ex2.approx of a difference, and
 *   the M / A epilogue and M Unew cover the 16 x 16 blocks on or below the diagonal only (the blocks
 *   above are zero in both: M's are never read, A's never written);
 *   T's blocks below the diagonal are tf32 mma products, one warp per half block column with no block
 *   barrier between them, each put in 16 bits as it is made (chunk_tinv_mma.cuh); A and T live in
 *   rows of LK_TAP_MMA floats */
#include "chunk_tinv_mma.cuh"

#define LK_CP_THREADS 256

/* dst[16 wr ..][col0 .. col0 + NC) = T (64 x 64, 16-bit A fragments at) times src (k-major, rows of lds
 * elements) at the same columns, 16-bit, into shared memory (rows of ldd elements); 32 columns a pass
 * (chunk_tile.cuh's lk_tmul_acc32, as lk_tmul_store) */
template <int OT, int NC>
LK_DEV void lk_cp_tmul(const uint32_t (&at)[LIN_CHUNK / 16][4], const uint16_t *src, int lds, int col0, uint16_t *dst,
                       int ldd, int wr, int g, int t4) {
    static_assert(NC % 32 == 0, "32 columns a pass");
#pragma unroll
    for (int cc = 0; cc < NC; cc += 32) {
        const int c0 = col0 + cc;
        float acc[4][4];
        lk_tmul_acc32<OT>(acc, at, src, lds, c0);
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int t = 16 * wr + g + 8 * hf, c = c0 + 8 * nt + 2 * t4;
                *(uint32_t *)(dst + t * ldd + c) = lk_pack2<OT>(acc[nt][2 * hf], acc[nt][2 * hf + 1]);
            }
    }
}

/* 2^x: ex2.approx.ftz (the emulator: exp2f) */
LK_DEV float lk_ex2(float x) {
#ifdef LK_EMU
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}

template <int V> struct lk_cp {
    static constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VP = LIN_TC_VMAX + 8;
    static constexpr int TILE = C * KP * 2;                 /* one [C][KP] 16-bit tile (also [C][VP]) */
    static constexpr int STAGE = 3 * TILE;                  /* q | k | v */
    static constexpr int W0 = 2 * STAGE, U0 = W0 + TILE, KD0 = U0 + TILE, M0 = KD0 + TILE;
    static constexpr int T0 = M0 + C * CP * 2, SB0 = T0 + C * CP * 2, G0 = SB0 + LIN_TC_VMAX * KP * 2;
    static constexpr int SMEM = G0 + 5 * C * 4;             /* G, beta, e^G, e^(G_last - G), e^G_last */
};
static_assert(lk_cp<128>::SMEM == (int)LIN_FUSED_CP_SMEM, "lin_params.h LIN_FUSED_CP_SMEM differs");
static_assert(LIN_CHUNK * LK_TAP_MMA * 4 <= lk_cp<128>::TILE, "A and T (f32) fit over W and U");
static_assert(LIN_TC_VMAX + 8 == LIN_TC_K + 8, "the value tile's rows are the key tile's");

template <int OT, int V>
__global__ __launch_bounds__(LK_CP_THREADS, 1) void lin_chunk_fused_cp_kernel(lin_fwd p) {
    using L = lk_cp<V>;
    constexpr int C = L::C, K = L::K, KP = L::KP, CP = L::CP, VP = L::VP;
    constexpr int AP = LK_TAP_MMA; /* A and T's float32 rows (chunk_tinv_mma.cuh) */
    constexpr int VH = V / 2, NX = VH / 8, MT = VH / 16; /* a warp's value columns / rows */
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *Wb = (uint16_t *)(smraw + L::W0), *Ub = (uint16_t *)(smraw + L::U0);
    uint16_t *KDb = (uint16_t *)(smraw + L::KD0), *Mb = (uint16_t *)(smraw + L::M0);
    uint16_t *t16 = (uint16_t *)(smraw + L::T0), *Sb = (uint16_t *)(smraw + L::SB0);
    float *Af = (float *)Wb, *Tf = (float *)Ub;
    float *Gs = (float *)(smraw + L::G0), *bs = Gs + C, *eGt = bs + C, *eGr = eGt + C, *eL = eGr + C;

    /* one block per (request, head) over all its chunks */
    const int i = (int)blockIdx.x, h = blockIdx.y;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int HV = p.hv, HK = p.hk, kh = h / p.gsz;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const int wr = warp & 3, wh = warp >> 2; /* token-row / key-column quarter; value half */
    const int vb = VH * wh;                  /* this warp's first value row (state) / column (products) */
    if (slot < 0) { /* padding: zero outputs (one block of the request's head), state untouched */
        for (int idx = tid; idx < n * V; idx += LK_CP_THREADS)
            lk_st(p.out, p.out_dt, (tok0 + idx / V) * HV * V + (int64_t)h * V + idx % V, 0.f);
        return;
    }
    const int c0 = p.pl.req_chunk0[i], nch = p.pl.req_nchunk[i];
    const int init = p.pl.req_init[i]; /* the start: 0 zero, 1 the pool */
    const float scale = p.scale;
    /* the gates in log2 units, so each exponential is one ex2 of a difference */
    const float nA = -expf(lk_in(p.A_log, h)) * 1.4426950408889634f, dtb = lk_in(p.dt_bias, h);

    /* one chunk's q, k, v into stage s (rows past the chunk's length zero), and its raw gate inputs */
    float ra = 0.f, rb = 0.f;
    auto issue = [&](int s, int jc) {
        uint16_t *qs = (uint16_t *)(smraw + s * L::STAGE), *ks = qs + C * KP, *vs = ks + C * KP;
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        for (int idx = tid; idx < C * (K / 8); idx += LK_CP_THREADS) {
            const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
            const bool ok = t < len;
            const int64_t src = ((ct0 + (ok ? t : 0)) * HK + kh) * K + cc;
            lk_cp_async16(qs + t * KP + cc, (const uint16_t *)p.Qc + src, ok);
            lk_cp_async16(ks + t * KP + cc, (const uint16_t *)p.Kc + src, ok);
        }
        for (int idx = tid; idx < C * (V / 8); idx += LK_CP_THREADS) {
            const int t = idx / (V / 8), cc = (idx % (V / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(vs + t * VP + cc, (const uint16_t *)p.Vc + ((ct0 + (ok ? t : 0)) * HV + h) * V + cc, ok);
        }
        if (tid < C) {
            ra = rb = 0.f;
            if (tid < len) {
                ra = lk_in(p.a, (ct0 + tid) * HV + h);
                rb = lk_in(p.b, (ct0 + tid) * HV + h);
            }
        }
    };

    /* the state: value rows vb .., key columns 32 wr .. (chunk_mma.cuh's lk_state_load layout) */
    float S[MT][4][4];
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)h * V * K + (int64_t)vb * K;
    lk_state_load<OT, MT>(p, sbase, init != 0, S, Sb + vb * KP, KP, wr, g, t4);
    /* T's 16-bit blocks above the diagonal stay zero: lk_t_offdiag_mma writes only the others */
    for (int idx = tid; idx < C * CP / 2; idx += LK_CP_THREADS) ((uint32_t *)t16)[idx] = 0u;
    if (nch > 0) issue(0, c0);
    lk_cp_async_commit();

    for (int q = 0; q < nch; q++) {
        const int jc = c0 + q;
        const int64_t ct0 = p.pl.chunk_tok0[jc];
        const int len = p.pl.chunk_len[jc];
        uint16_t *qs = (uint16_t *)(smraw + (q & 1) * L::STAGE), *ks = qs + C * KP, *vs = ks + C * KP;
        /* ---- gates of this chunk (its raw inputs came with its tiles) */
        if (tid < C) {
            Gs[tid] = tid < len ? nA * lk_softplus(ra + dtb) : 0.f;
            bs[tid] = tid < len ? lk_sigmoid(rb) : 0.f;
        }
        lk_cp_async_wait_all();
        __syncthreads(); /* chunk q landed; every warp is done with chunk q - 1 (its stage is free) */
        if (q + 1 < nch) issue((q + 1) & 1, jc + 1);
        lk_cp_async_commit();
        if (warp == 0) { /* G = cumulative g */
            lk_gate_cumsum(Gs, lane);
            __syncwarp();
            const float GL = Gs[C - 1];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int t = 2 * lane + e;
                eGt[t] = lk_ex2(Gs[t]);
                eGr[t] = lk_ex2(fminf(GL - Gs[t], 0.f)); /* G_last <= G_t (up to the scan's rounding) */
            }
            if (lane == 0) eL[0] = lk_ex2(GL);
        }
        __syncthreads();

        /* ---- q k^T (warps 0-3) and k k^T (warps 4-7), rows 16 wr .., up to the diagonal; M, A */
        {
            float P[C / 8][4], Xd[C / 8][4];
#pragma unroll
            for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) P[nt][e] = 0.f;
            lk_rows_mul_n2<OT, K>(P, Xd, wh ? ks : qs, ks, false, ks, KP, 16 * wr, wr);
#pragma unroll
            for (int nt = 0; nt < C / 8; nt++) {
                /* the n8 tiles right of the warp's diagonal block are zero in M and A (M's never
                 * read: O += M Unew stops at the diagonal block; A's never read by T) */
                if (nt > 2 * wr + 1) break;
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int t = 16 * wr + g + 8 * hf, i0 = 8 * nt + 2 * t4;
                    float m2[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int ii = i0 + e;
                        const float dec = nt < 2 * wr || ii <= t ? lk_ex2(Gs[t] - Gs[ii]) : 0.f;
                        if (wh) Af[t * AP + ii] = ii < t ? bs[t] * dec * P[nt][2 * hf + e] : 0.f;
                        else m2[e] = scale * dec * P[nt][2 * hf + e];
                    }
                    if (!wh) *(uint32_t *)(Mb + t * CP + i0) = lk_pack2<OT>(m2[0], m2[1]);
                }
            }
        }
        __syncthreads(); /* A complete; q and k read by the products */

        if (warp < 4) {
            lk_t_diag<AP>(Af, Tf, warp, lane); /* ---- T's diagonal 16 x 16 blocks: warp b -> block b */
        } else {
            /* ---- QG over q, KD, beta k e^G over k (8 values a thread and step) */
            for (int idx = tid - 128; idx < C * (K / 8); idx += 128) {
                const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
                float qg[8], kv[8], kd[8];
                lk_unpack8<OT>(qs + t * KP + c, qg);
                lk_unpack8<OT>(ks + t * KP + c, kv);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    qg[e] = scale * qg[e] * eGt[t];
                    kd[e] = kv[e] * eGr[t];
                    kv[e] = bs[t] * kv[e] * eGt[t];
                }
                lk_pack8<OT>(qs + t * KP + c, qg);
                lk_pack8<OT>(KDb + t * KP + c, kd);
                lk_pack8<OT>(ks + t * KP + c, kv);
            }
        }
        __syncthreads();
        /* ---- T's blocks below the diagonal, T in 16 bits */
        lk_t_offdiag_mma<OT>(Af, Tf, t16, warp, lane); /* T in 16 bits as well */
        __syncthreads(); /* A and T (f32) are dead: W and U go there */

        /* ---- W = T (beta k e^G): key columns 64 wh ..; U = T (beta v): value columns vb .. */
        {
            uint32_t at[C / 16][4];
#pragma unroll
            for (int k16 = 0; k16 < C / 16; k16++) lk_lda(at[k16], t16, CP, 16 * wr, 16 * k16);
            lk_cp_tmul<OT, K / 2>(at, ks, KP, 64 * wh, Wb, KP, wr, g, t4);
            lk_cp_tmul<OT, VH>(at, vs, VP, vb, Ub, VP, wr, g, t4);
        }
        __syncthreads();

        /* ---- X = W S^T, O = QG S^T: token rows 16 wr .., value columns vb .. */
        float X[NX][4], O[NX][4];
#pragma unroll
        for (int nt = 0; nt < NX; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) X[nt][e] = O[nt][e] = 0.f;
#pragma unroll
        for (int k16 = 0; k16 < K / 16; k16++) {
            uint32_t aq[4], aw[4];
            lk_lda(aq, qs, KP, 16 * wr, 16 * k16);
            lk_lda(aw, Wb, KP, 16 * wr, 16 * k16);
#pragma unroll
            for (int np = 0; np < NX / 2; np++) {
                uint32_t b[4];
                lk_ldb_n(b, Sb, KP, vb + 16 * np, 16 * k16);
                lk_mma<OT>(O[2 * np], aq, b[0], b[1]);
                lk_mma<OT>(O[2 * np + 1], aq, b[2], b[3]);
                lk_mma<OT>(X[2 * np], aw, b[0], b[1]);
                lk_mma<OT>(X[2 * np + 1], aw, b[2], b[3]);
            }
        }
        /* Unew = U - W S^T (16-bit, over U: each element read and written by its own thread) */
#pragma unroll
        for (int nt = 0; nt < NX; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int t = 16 * wr + g + 8 * hf, v = vb + 8 * nt + 2 * t4;
                const float u0 = lk_from16<OT>(Ub[t * VP + v]) - X[nt][2 * hf];
                const float u1 = lk_from16<OT>(Ub[t * VP + v + 1]) - X[nt][2 * hf + 1];
                *(uint32_t *)(Ub + t * VP + v) = lk_pack2<OT>(u0, u1);
            }
        __syncthreads(); /* Unew complete; nobody reads Sb any more this chunk */

        /* ---- O += M Unew -> out; S = S e^G_last + Unew^T KD (and Sb) */
        lk_rows_mul_k<OT, C>(O, Mb, CP, Ub + vb, VP, 16 * wr, wr); /* M is zero past the diagonal block */
        lk_store_out_rows(p, O, ct0, len, HV, V, (int64_t)h * V + vb, VH, (const float *)nullptr, 0, 16 * wr, g, t4);
        lk_state_step<OT, MT, C>(S, eL, false, KDb, KP, Ub + vb, VP, Sb + vb * KP, wr, g, t4);
    }
    lk_cp_async_wait_all();
    lk_state_store<MT>(p, sbase, S, wr, g, t4); /* the end state to the pool */
}

/* ------------------------------------------------------------ launchers */

/* the instantiation of V (64 / 128) */
typedef void (*lk_cp_fn)(lin_fwd);
static lk_cp_fn lk_cp_kernel_of(int v128) {
    return v128 ? lin_chunk_fused_cp_kernel<LIN_DT_BF16, 128> : lin_chunk_fused_cp_kernel<LIN_DT_BF16, 64>;
}

extern "C" int lin_chunk_fused_cp_setup(void) {
    int e = 0;
    for (int i = 0; i < 2 && !e; i++)
        e = (int)cudaFuncSetAttribute((const void *)lk_cp_kernel_of(i),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)LIN_FUSED_CP_SMEM);
    return e;
}

/* the kernel's dims: gdn, K = 128, V 64 or 128 (lin_fused_cp_dims_ok); one block per (request, value head) */
extern "C" int lin_launch_chunk_fused_cp(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (p.kind != LIN_GDN || p.K != LIN_TC_K || (p.V != 64 && p.V != 128) || !p.Qc || !p.Kc || !p.Vc ||
        p.seg_chunks > 0)
        return (int)cudaErrorInvalidValue;
    const lk_cp_fn k = lk_cp_kernel_of(p.V == 128);
    LK_LAUNCH(k, dim3((unsigned)p.bs, (unsigned)p.hv), LK_CP_THREADS, LIN_FUSED_CP_SMEM, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
