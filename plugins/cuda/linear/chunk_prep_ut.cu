/* chunk_prep_ut.cu - phase 1 of the chunked extend with bf16 activations,
 * every kind (gdn, mamba2, lightning, and kda with its per-channel gates), in
 * two kernels, with the same outputs as the fused phase 1 (chunk_fused_ut.cu:
 * W, U, QG, KD, M, exp(G_last), the mamba2 skip), so either phase 2 follows
 * it.  f16 activations take the fused phase 1.
 *
 * Prep: one block per (chunk, 128-channel head tile: the q heads, the k
 * heads, the value heads): the conv tile + SiLU, l2norm of q and k, and for
 * the value heads beta v (delta) / dt x (mamba2, with the skip D x) / v
 * (lightning), stored 16-bit: q, k [T][hk][K], v [T][hv][V].  Every chunk
 * and head at once, latency hidden by the number of blocks.  gdn, kda and
 * mamba2 with conv width 4 and 16-byte bf16 x rows (every Qwen3-Next /
 * Qwen3.5, Kimi-Linear and Nemotron-H layer) take the stream prep instead
 * (chunk_prep_stream.cu: each x row read once, a ring of loads in flight
 * per thread), every other case (lightning, other conv widths, x rows not
 * 16-byte aligned) lin_chunk_prep_kernel.
 * Then the conv history moves on (lin_convstate_kernel).
 *
 * UT: one block per (chunk, value head), 4 warps, 51 KiB of shared memory (4
 * blocks per SM; kda 67 KiB, 3 blocks: its G per channel [64][128] float32
 * in place of the A region, A written over G once G is dead): q and k in by
 * cp.async while the gates are computed (cumulative log-decay by a warp scan;
 * kda: lk_kda_gates), q k^T and k k^T on tensor cores (lower triangle only;
 * kda: lk_kda_tc_rows, the decays factored at reference rows), M -> global
 * and A in float32 (kda: after the passes that read G, from the registers),
 * QG, KD, exp(G_last)
 * -> global (16-byte element-wise passes), then (delta) T = (I + A)^-1 in
 * float32 by blocks of 16: the four diagonal blocks by forward substitution
 * (one warp each, a lane per column, in registers), then the off-diagonal
 * blocks by levels,
 *   T_ij = -T_ii sum_{k=j}^{i-1} A_ik T_kj   (i - j = 1, 2, 3),
 * the same equations as the fused kernel's row-by-row substitution with a
 * chain of 16 + 3 x 2 steps instead of 63; the values land late, over q / T
 * once T is in 16 bits; W = T (beta k e^G), U = T (beta v) on tensor cores. */
#include "chunk_tile.cuh"

#define LK_P0_THREADS 128
#define LK_U_THREADS 128

/* shared memory of the UT kernel: q / T (f32) / the values | k / beta k e^G | A (f32) / T (16-bit) | gates */
#define LK_U_R0 (LIN_CHUNK * (LIN_TC_K + 8) * 2)
#define LK_U_R3 (LIN_CHUNK * (LIN_CHUNK + 1) * 4)
#define LK_U_SMEM (2 * LK_U_R0 + LK_U_R3 + 4 * LIN_CHUNK * 4)
/* kda: q, k, the gates, then its per-channel G [C][K] float32, which A overwrites once G is dead: 67 KiB, 3 blocks
 * per SM (the A region of the scalar kinds would make it 84 KiB and 2) */
#define LK_U_SMEM_KDA (2 * LK_U_R0 + 4 * LIN_CHUNK * 4 + LIN_CHUNK * LIN_TC_K * 4)
#define LK_P0_SMEM ((LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_VMAX * 4)

template <int OT>
__global__ __launch_bounds__(LK_P0_THREADS) void lin_chunk_prep_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K;
    LK_DYN_SMEM(float, tile);
    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int y = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: the outputs are zeroed by phase 2 */
    const int64_t ct0 = p.pl.chunk_tok0[j], rt0 = p.pl.req_tok0[i];
    const int len = p.pl.chunk_len[j], init = p.pl.req_init[i], crel = (int)(ct0 - rt0);
    const int KIND = p.kind, HV = p.hv, HK = p.hk, V = p.V;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2, LIGHT = KIND == LIN_LIGHTNING;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int which = y < HK ? 0 : y < 2 * HK ? 1 : 2, hh = which == 0 ? y : which == 1 ? y - HK : y - 2 * HK;
    const int nch = which < 2 ? K : V;
    const int H = LIGHT ? 0 : p.conv_w - 1;
    const float *rows = tile + H * nch; /* output row t at rows + t nch */
    if (LIGHT) {
        const lin_in &src = which == 0 ? p.q : which == 1 ? p.k : p.v;
        for (int idx = tid; idx < C * nch; idx += LK_P0_THREADS) {
            const int t = idx / nch, c = idx % nch;
            tile[idx] = t < len ? lk_in(src, ((ct0 + t) * HV + hh) * nch + c) : 0.f;
        }
        __syncthreads();
    } else {
        int ch0;
        if (M2) /* x [H*P] | B [G*N] | C [G*N]: q = C, k = B */
            ch0 = which == 0 ? HV * V + HK * K + hh * K : which == 1 ? HV * V + hh * K : hh * V;
        else /* q [HK*K] | k [HK*K] | v [HV*V] */
            ch0 = which == 0 ? hh * K : which == 1 ? (HK + hh) * K : 2 * HK * K + hh * V;
        lk_conv_tile(p, rt0, crel, len, slot, init, ch0, nch, tile);
    }
    if (which < 2) { /* q or k: l2norm, 16-bit */
        uint16_t *dst = (uint16_t *)(which ? p.Kc : p.Qc) + (ct0 * HK + hh) * K;
        for (int t = warp; t < len; t += LK_P0_THREADS / 32) {
            const float *row = rows + t * K;
            float inv = 1.f;
            if (DELTA && p.l2norm) {
                float ss = 0.f;
                for (int c = lane; c < K; c += 32) ss += row[c] * row[c];
                inv = 1.f / sqrtf(lk_warp_sum(ss) + 1e-6f);
            }
            for (int c = lane; c < K; c += 32) dst[(int64_t)t * HK * K + c] = lk_to16<OT>(row[c] * inv);
        }
    } else { /* values: beta v (delta), dt x (mamba2, and the skip D x), v (lightning) */
        for (int idx = tid; idx < len * V; idx += LK_P0_THREADS) {
            const int t = idx / V, r = idx % V;
            const int64_t tok = ct0 + t, at = (tok * HV + hh) * V + r;
            const float x = rows[idx];
            float sc = 1.f;
            if (DELTA) sc = lk_sigmoid(lk_in(p.b, tok * HV + hh));
            else if (M2) sc = lk_softplus(lk_in(p.a, tok * HV + hh) + lk_in(p.dt_bias, hh));
            ((uint16_t *)p.Vc)[at] = lk_to16<OT>(sc * x);
            if (M2) p.Sk[at] = lk_in0(p.D, hh) * x;
        }
    }
}


/* The element-wise passes (QG, KD; beta k e^G) move 8 values per thread and step with 16-byte shared and
 * global accesses; the values load late, over q / T, so that the kernel needs 51 KiB (4 blocks per SM). */
template <int OT>
__global__ __launch_bounds__(LK_U_THREADS) void lin_chunk_ut_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VP = LIN_TC_VMAX + 8, AP = LK_TAP;
    const int KIND = p.kind;
    const bool GCH = KIND == LIN_KDA, DELTA = KIND == LIN_GDN || GCH, M2 = KIND == LIN_MAMBA2;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *qs = (uint16_t *)smraw, *ks = (uint16_t *)(smraw + LK_U_R0);
    uint16_t *vs = (uint16_t *)smraw;                              /* over q / T, at the end */
    float *Tf = (float *)smraw;                                    /* over q, once QG is out */
    float *Gs = (float *)(smraw + 2 * LK_U_R0 + (GCH ? 0 : LK_U_R3)), *bs = Gs + C, *eGt = bs + C, *eGr = eGt + C;
    float *Gc = eGr + C;                                              /* kda: G per channel [C][K] */
    float *Af = GCH ? Gc : (float *)(smraw + 2 * LK_U_R0);            /* A (kda: over its dead G), then ... */
    uint16_t *t16 = (uint16_t *)Af;                                   /* ... T in 16 bits */
    static_assert(C * AP * 4 <= C * K * 4, "A fits over kda's G");
    static_assert(C * (LIN_TC_VMAX + 8) * 2 <= LK_U_R0, "the values fit over q");
    static_assert(C * AP * 4 <= LK_U_R0 && C * CP * 2 <= LK_U_R3, "the UT kernel's shared-memory reuse");

    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int h = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return;
    const int64_t ct0 = p.pl.chunk_tok0[j];
    const int len = p.pl.chunk_len[j];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int HV = p.hv, HK = p.hk, V = p.V, kh = h / p.gsz;
    const float scale = p.scale;
    const int64_t hrow = HV; /* token-row stride of the per-head scratch, in heads */

    /* ---- q, k (key head kh), values (head h): rows past len zero */
    for (int idx = tid; idx < C * (K / 8); idx += LK_U_THREADS) {
        const int t = idx / (K / 8), cc = (idx % (K / 8)) * 8;
        const bool ok = t < len;
        const int64_t src = ((ct0 + (ok ? t : 0)) * HK + kh) * K + cc;
        lk_cp_async16(qs + t * KP + cc, (const uint16_t *)p.Qc + src, ok);
        lk_cp_async16(ks + t * KP + cc, (const uint16_t *)p.Kc + src, ok);
    }
    auto load_v = [&]() {
        for (int idx = tid; idx < C * (V / 8); idx += LK_U_THREADS) {
            const int t = idx / (V / 8), cc = (idx % (V / 8)) * 8;
            const bool ok = t < len;
            lk_cp_async16(vs + t * VP + cc, (const uint16_t *)p.Vc + ((ct0 + (ok ? t : 0)) * HV + h) * V + cc, ok);
        }
    };
    lk_cp_async_commit();

    /* ---- gates while the tiles fly: g, beta; G = cumulative g (warp 0 scans; kda: a thread per channel) */
    if (GCH) lk_kda_gates<LK_U_THREADS>(p, Gc, ct0, len, h, tid);
    for (int t = tid; t < C; t += LK_U_THREADS) {
        float gv = 0.f, bv_ = 0.f;
        if (t < len) {
            const int64_t tok = ct0 + t;
            if (DELTA) { /* kda: beta only here */
                if (!GCH) gv = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h));
                bv_ = lk_sigmoid(lk_in(p.b, tok * HV + h));
            } else if (M2) {
                gv = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h));
            } else {
                gv = -lk_in(p.decay, h);
            }
        }
        Gs[t] = gv;
        bs[t] = bv_;
    }
    __syncthreads();
    if (warp == 0) lk_gate_cumsum(Gs, lane);
    __syncthreads();
    for (int t = tid; t < C; t += LK_U_THREADS) {
        eGt[t] = expf(Gs[t]);
        eGr[t] = expf(fminf(Gs[C - 1] - Gs[t], 0.f)); /* G_last <= G_t (up to the scan's rounding) */
    }
    lk_cp_async_wait_all();
    __syncthreads();

    /* ---- q k^T and k k^T, rows 16 warp .., columns up to the diagonal */
    float qk[C / 8][4], kk[C / 8][4];
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) qk[nt][e] = kk[nt][e] = 0.f;
    uint16_t *Mg = (uint16_t *)p.Mt + (ct0 * hrow + h) * C;
    float q8[4], k8[4], qd[2][2], kd[2][2];
    if (GCH) { /* q.k and k.k with the per-channel decays (chunk_tile.cuh); M and A once G is dead, below */
        lk_kda_tc_rows<OT>(qk, kk, q8, k8, qd, kd, qs, ks, Gc, warp, lane);
    } else {
        lk_rows_mul_n2<OT, K>(qk, kk, qs, ks, DELTA, ks, KP, 16 * warp, warp); /* not above the diagonal */
        /* ---- M (to global) and A (delta) */
        lk_store_ma<OT, AP>(Af, Mg, hrow * C, len, DELTA, warp, lane,
                            [&](int nt, int hf, int e, int t, int ii, float &m, float &a) {
                                const float dec = ii <= t ? expf(Gs[t] - Gs[ii]) : 0.f;
                                m = scale * dec * qk[nt][2 * hf + e];
                                a = ii < t ? bs[t] * dec * kk[nt][2 * hf + e] : 0.f;
                            });
    }
    /* ---- QG, KD (pairs of columns), exp(G_last) */
    {
        uint16_t *QGg = (uint16_t *)p.QGt + (ct0 * hrow + h) * K, *KDg = (uint16_t *)p.KDt + (ct0 * hrow + h) * K;
        for (int idx = tid; idx < len * (K / 8); idx += LK_U_THREADS) {
            const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
            float qg[8], kd[8];
            lk_unpack8<OT>(qs + t * KP + c, qg);
            lk_unpack8<OT>(ks + t * KP + c, kd);
            if (GCH) { /* never exp of a positive: G is non-increasing along the chunk per channel */
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const float gt = Gc[t * K + c + e];
                    qg[e] = scale * qg[e] * expf(gt);
                    kd[e] = kd[e] * expf(Gc[(C - 1) * K + c + e] - gt);
                }
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    qg[e] = scale * qg[e] * eGt[t];
                    kd[e] = kd[e] * eGr[t];
                }
            }
            lk_pack8<OT>(QGg + t * hrow * K + c, qg);
            lk_pack8<OT>(KDg + t * hrow * K + c, kd);
        }
        const float eL = expf(Gs[C - 1]);
        for (int c = tid; c < K; c += LK_U_THREADS)
            p.eG[((int64_t)j * HV + h) * K + c] = GCH ? expf(Gc[(C - 1) * K + c]) : eL;
    }
    __syncthreads(); /* q is free (T goes there); A is complete; k was read for KD */

    uint16_t *Ug = (uint16_t *)p.Ut + (ct0 * hrow + h) * V;
    if (!DELTA) return; /* U is the prep's values, read there by phase 2 (Ut is Vc: the launcher checks) */
    /* ---- beta k e^G, in place of k */
    for (int idx = tid; idx < C * (K / 8); idx += LK_U_THREADS) {
        const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
        float kv[8];
        lk_unpack8<OT>(ks + t * KP + c, kv);
#pragma unroll
        for (int e = 0; e < 8; e++) kv[e] = bs[t] * kv[e] * (GCH ? expf(Gc[t * K + c + e]) : eGt[t]);
        lk_pack8<OT>(ks + t * KP + c, kv);
    }
    if (GCH) { /* G is dead once every thread passed beta k e^G: M and A from the registers, A over G */
        __syncthreads();
        lk_kda_ma<OT, AP>(qk, kk, q8, k8, qd, kd, Af, Mg, hrow * C, bs, scale, len, warp, lane);
        __syncthreads();
    }
    /* ---- T = (I + A)^-1: the diagonal 16 x 16 blocks (warp b -> block b), then the blocks below
     * them; T in 16 bits over A (done with it) */
    lk_t_diag(Af, Tf, warp, lane);
    __syncthreads();
    lk_t_offdiag<LK_U_THREADS>(Af, Tf, tid);
    lk_t_to16<OT, LK_U_THREADS>(Tf, t16, tid);
    __syncthreads(); /* T (f32) is dead: the values land there while W is made */
    load_v();
    lk_cp_async_commit();
    /* ---- W = T (beta k e^G), U = T (beta v) */
    uint32_t at[C / 16][4];
#pragma unroll
    for (int k16 = 0; k16 < C / 16; k16++) lk_lda(at[k16], t16, CP, 16 * warp, 16 * k16);
    lk_tmul_store<OT>(at, ks, KP, K, (uint16_t *)p.Wt + (ct0 * hrow + h) * K, hrow * K, len);
    lk_cp_async_wait_all();
    __syncthreads();
    lk_tmul_store<OT>(at, vs, VP, V, Ug, hrow * V, len);
}

/* ------------------------------------------------------------ launchers */

static_assert(LK_U_SMEM <= LK_U_SMEM_KDA, "the UT kernel's shared-memory attribute (kda's carve) covers both carves");
static_assert(LK_U_SMEM_KDA <= (int)LIN_FUSED_UT_SMEM && LK_P0_SMEM <= (int)LIN_FUSED_UT_SMEM,
              "the prep + UT kernels need at most the fused phase 1's shared memory (lin_create.c checks that one)");

extern "C" int lin_chunk_prep_ut_setup(void) {
    const void *k[2] = {(const void *)lin_chunk_prep_kernel<LIN_DT_BF16>, (const void *)lin_chunk_ut_kernel<LIN_DT_BF16>};
    const int sm[2] = {LK_P0_SMEM, LK_U_SMEM_KDA};
    int e = 0;
    for (int i = 0; i < 2 && !e; i++) e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm[i]);
    return e;
}

extern "C" int lin_launch_chunk_prep_ut(const lin_fwd *pp, int ot, void *stream) {
    const lin_fwd &p = *pp;
    /* bf16 operands only (the binary's size: f16 takes the fused phase 1) */
    if (!p.Qc || !p.Kc || !p.Vc || p.kind == LIN_SHORT_CONV || ot != LIN_DT_BF16)
        return (int)cudaErrorInvalidValue;
    /* without a delta rule the UT kernel makes no U: phase 2 must read the values in place */
    if ((p.kind == LIN_MAMBA2 || p.kind == LIN_LIGHTNING) && p.Ut != p.Vc) return (int)cudaErrorInvalidValue;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    if (chunks <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    const dim3 g0((unsigned)chunks, (unsigned)(2 * p.hk + p.hv)), g1((unsigned)chunks, (unsigned)p.hv);
    int e;
    if (lin_chunk_prep_stream_serves(pp)) { /* else the general prep */
        e = lin_launch_chunk_prep_stream(pp, stream);
    } else {
        void (*k0)(lin_fwd) = lin_chunk_prep_kernel<LIN_DT_BF16>;
        LK_LAUNCH(k0, g0, LK_P0_THREADS, LK_P0_SMEM, st, p);
        e = (int)cudaGetLastError();
    }
    /* the conv history moves on only after the prep read the old one */
    if (!e && p.conv_w > 1) e = lin_launch_convstate(pp, stream);
    /* fused_chunk: chunk_fused_cp.cu makes UT in its pass; the fused phase 2's group form reads C, B and the
     * gates in place */
    if (e || p.fused_cp || p.grp) return e;
    void (*k1)(lin_fwd) = lin_chunk_ut_kernel<LIN_DT_BF16>;
    const int usm = p.kind == LIN_KDA ? LK_U_SMEM_KDA : LK_U_SMEM;
    LK_LAUNCH(k1, g1, LK_U_THREADS, usm, st, p);
    return (int)cudaGetLastError();
}
