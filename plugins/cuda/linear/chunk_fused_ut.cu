/* chunk_fused_ut.cu - phase 1 of the chunked extend (K = 128, chunks of 64
 * tokens that never cross a request) in one kernel: everything about a chunk
 * that does not depend on the state, for every chunk at once.  It serves
 * f16 activations of every kind (gdn, kda, mamba2, lightning); bf16 takes
 * the prep + UT pair of chunk_prep_ut.cu, built for bf16 only, so this
 * kernel is instantiated for f16 only.  One block per (chunk, key head
 * group), 4 warps; it builds the group's q and k once (conv + SiLU from x and
 * the slot's conv history, l2norm; lightning: the forward's q, k), then for
 * each value head of the group, with G_t the cumulative log-decay in the
 * chunk (per channel for kda):
 *   M[t][i] = scale * sum_c q_t[c] k_i[c] exp(G_t - G_i)   (i <= t)
 *   QG_t    = scale * q_t * exp(G_t),   KD_i = k_i * exp(G_last - G_i)
 *   eG      = exp(G_last)
 * delta rule (gdn, kda) only, the UT transform of the chunk:
 *   A[t][i] = beta_t sum_c k_t[c] k_i[c] exp(G_t - G_i)    (i < t)
 *   T = (I + A)^-1,  W = T (beta * k * exp(G)),  U = T (beta * v)
 * declin (mamba2, lightning): U = v (mamba2: dt x, and the skip D x).
 * Phase 2 then needs only  Unew = U - W S^T,  o = QG S^T + M Unew,
 * S <- S diag(eG) + Unew^T KD  per chunk (delta_rule.c's chunked form); the
 * outputs are the prep + UT pair's, so either phase 2 follows.
 * Matmuls on tensor cores (q k^T, k k^T: scalar-gate kinds; T products: all
 * delta kinds; kda's q.k and k.k sums too, their per-channel decays factored
 * at a reference row inside the chunk: lk_kda_tc_rows), never exp of a
 * positive number. */
#include "chunk_tile.cuh"

#define LK_FU_THREADS 128

/* The kind is a runtime value (uniform branches): one kernel per operand type. */
template <int OT>
__global__ __launch_bounds__(LK_FU_THREADS) void lin_chunk_fused_ut_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VP = LIN_TC_VMAX + 8, AP = C + 1;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *qs = (uint16_t *)smraw, *ks = qs + C * KP, *bkg = ks + C * KP, *bv = bkg + C * KP, *t16 = bv + C * VP;
    float *f32 = (float *)(t16 + C * CP); /* conv staging [C][K], then A [C][AP] and T [C][AP] */
    float *Gc = f32 + LIN_FUSED_UT_F32, *Gs = Gc + C * K, *bs = Gs + C, *eGt = bs + C, *eGr = eGt + C;
    static_assert(3 * C * KP * 2 + C * VP * 2 + C * CP * 2 + LIN_FUSED_UT_F32 * 4 + C * K * 4 + 4 * C * 4 == LIN_FUSED_UT_SMEM,
                  "lin_params.h LIN_FUSED_UT_SMEM and this carve differ");

    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int grp = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: phase 2 zeroes the output */
    const int64_t ct0 = p.pl.chunk_tok0[j], rt0 = p.pl.req_tok0[i];
    const int len = p.pl.chunk_len[j], init = p.pl.req_init[i], crel = (int)(ct0 - rt0);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int HV = p.hv, HK = p.hk, V = p.V, gsz = p.gsz;
    const int CH = KIND == LIN_LIGHTNING ? 0 : p.conv_w - 1; /* conv history rows in front of a conv tile */
    const float scale = p.scale;

    /* ---- q and k of the group: fp32 staging, l2norm, 16-bit tiles */
    for (int which = 0; which < 2; which++) {
        uint16_t *dst = which ? ks : qs;
        const float *rows = f32 + (KIND == LIN_LIGHTNING ? 0 : CH * K); /* output row t at rows + t K */
        if (KIND == LIN_LIGHTNING) {
            for (int idx = tid; idx < C * K; idx += LK_FU_THREADS) {
                const int t = idx / K, c = idx % K;
                f32[idx] = t < len ? lk_in(which ? p.k : p.q, ((ct0 + t) * HV + grp) * K + c) : 0.f;
            }
            __syncthreads();
        } else {
            int ch0;
            if (KIND == LIN_MAMBA2) /* x [H*P] | B [G*N] | C [G*N]: q = C, k = B */
                ch0 = HV * V + (which ? 0 : HK * K) + grp * K;
            else /* q [HK*K] | k [HK*K] | v [HV*V] */
                ch0 = (which ? HK + grp : grp) * K;
            lk_conv_tile(p, rt0, crel, len, slot, init, ch0, K, f32);
        }
        for (int t = warp; t < C; t += LK_FU_THREADS / 32) {
            const float *row = rows + t * K;
            float inv = 1.f;
            if (DELTA && p.l2norm) {
                float ss = 0.f;
                for (int c = lane; c < K; c += 32) ss += row[c] * row[c];
                inv = 1.f / sqrtf(lk_warp_sum(ss) + 1e-6f);
            }
            for (int c = lane; c < K; c += 32) dst[t * KP + c] = lk_to16<OT>(row[c] * inv);
        }
        __syncthreads();
    }

    /* ---- q k^T and k k^T on tensor cores (scalar gates): rows 16*warp.. */
    float qk[C / 8][4], kk[C / 8][4];
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) qk[nt][e] = kk[nt][e] = 0.f;
    if (!GCH) lk_rows_mul_n2<OT, K>(qk, kk, qs, ks, DELTA, ks, KP, 16 * warp, C / 16 - 1);

    for (int jh = 0; jh < gsz; jh++) {
        const int h = grp * gsz + jh;
        const int64_t hrow = HV; /* token-row stride of the per-head scratch, in heads */
        __syncthreads(); /* the previous head is done with the shared tiles */
        /* ---- gates: G (cumulative), beta (mamba2: dt) */
        if (GCH) {
            lk_kda_gates<LK_FU_THREADS>(p, Gc, ct0, len, h, tid);
            for (int t = tid; t < C; t += LK_FU_THREADS)
                bs[t] = t < len ? lk_sigmoid(lk_in(p.b, (ct0 + t) * HV + h)) : 0.f;
        } else {
            for (int t = tid; t < C; t += LK_FU_THREADS) {
                float gv = 0.f, bv_ = 0.f;
                if (t < len) {
                    const int64_t tok = ct0 + t;
                    if (KIND == LIN_GDN) {
                        gv = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h));
                        bv_ = lk_sigmoid(lk_in(p.b, tok * HV + h));
                    } else if (KIND == LIN_MAMBA2) {
                        bv_ = lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h)); /* dt */
                        gv = -expf(lk_in(p.A_log, h)) * bv_;
                    } else {
                        gv = -lk_in(p.decay, h);
                    }
                }
                Gs[t] = gv;
                bs[t] = bv_;
            }
            __syncthreads();
            if (tid == 0) /* cumulative sum, in token order as the CPU form */
                for (int t = 1; t < C; t++) Gs[t] += Gs[t - 1];
            __syncthreads();
            for (int t = tid; t < C; t += LK_FU_THREADS) { /* G <= 0 and G_last <= G_t: never exp of a positive */
                eGt[t] = expf(Gs[t]);
                eGr[t] = expf(Gs[C - 1] - Gs[t]);
            }
        }
        __syncthreads();

        /* ---- values: into the fp32 staging, row t at vrows + t V */
        const float *vrows = f32 + CH * V;
        if (KIND == LIN_LIGHTNING) {
            for (int idx = tid; idx < C * V; idx += LK_FU_THREADS) {
                const int t = idx / V, r = idx % V;
                f32[idx] = t < len ? lk_in(p.v, ((ct0 + t) * HV + h) * V + r) : 0.f;
            }
            __syncthreads();
        } else {
            const int ch0 = (KIND == LIN_MAMBA2 ? 0 : 2 * HK * K) + h * V;
            lk_conv_tile(p, rt0, crel, len, slot, init, ch0, V, f32);
        }
        uint16_t *Ug = (uint16_t *)p.Ut + (ct0 * hrow + h) * V;
        if (DELTA) {
            for (int idx = tid; idx < C * V; idx += LK_FU_THREADS) {
                const int t = idx / V, r = idx % V;
                bv[t * VP + r] = lk_to16<OT>(bs[t] * vrows[idx]);
            }
        } else {
            for (int idx = tid; idx < len * V; idx += LK_FU_THREADS) {
                const int t = idx / V, r = idx % V;
                const float x = vrows[idx];
                Ug[t * hrow * V + r] = lk_to16<OT>(KIND == LIN_MAMBA2 ? bs[t] * x : x); /* mamba2: dt x */
                if (KIND == LIN_MAMBA2) p.Sk[((ct0 + t) * hrow + h) * V + r] = lk_in0(p.D, h) * x;
            }
        }
        for (int c = tid; c < K; c += LK_FU_THREADS)
            p.eG[((int64_t)j * HV + h) * K + c] = expf(GCH ? Gc[(C - 1) * K + c] : Gs[C - 1]);
        __syncthreads(); /* the staging is free: A and T go there */

        /* ---- M (to global) and A (delta) */
        float *Af = f32, *Tf = f32 + C * AP;
        uint16_t *Mg = (uint16_t *)p.Mt + (ct0 * hrow + h) * C;
        if (!GCH) {
            lk_store_ma<OT, AP>(Af, Mg, hrow * C, len, DELTA, warp, lane,
                                [&](int nt, int hf, int e, int t, int ii, float &m, float &a) {
                                    const float dec = ii <= t ? expf(Gs[t] - Gs[ii]) : 0.f; /* never exp of a positive */
                                    m = scale * dec * qk[nt][2 * hf + e];
                                    a = ii < t ? bs[t] * dec * kk[nt][2 * hf + e] : 0.f;
                                });
        } else { /* kda: q.k and k.k on tensor cores, the diagonal 8 x 8 blocks in float32 */
            float q8[4], k8[4], qd[2][2], kd[2][2];
            lk_kda_tc_rows<OT>(qk, kk, q8, k8, qd, kd, qs, ks, Gc, warp, lane);
            lk_kda_ma<OT, AP>(qk, kk, q8, k8, qd, kd, Af, Mg, hrow * C, bs, scale, len, warp, lane);
        }
        __syncthreads();

        if (DELTA) {
            /* ---- T = (I + A)^-1: columns are independent; two threads per
             * column split each row's sum (T[i][col] = 0 for i < col). */
            for (int idx = tid; idx < C * AP; idx += LK_FU_THREADS) Tf[idx] = idx / AP == idx % AP ? 1.f : 0.f;
            __syncthreads();
            {
                const int col = tid >> 1, part = tid & 1;
                for (int t = 1; t < C; t++) {
                    float a0 = 0.f, a1 = 0.f; /* two chains: the adds' latency, not the loads, bounds this */
                    int ii = part;
                    for (; ii + 2 < t; ii += 4) {
                        a0 += Af[t * AP + ii] * Tf[ii * AP + col];
                        a1 += Af[t * AP + ii + 2] * Tf[(ii + 2) * AP + col];
                    }
                    for (; ii < t; ii += 2) a0 += Af[t * AP + ii] * Tf[ii * AP + col];
                    float acc = a0 + a1;
                    acc += __shfl_xor_sync(0xffffffffu, acc, 1);
                    if (part == 0 && t > col) Tf[t * AP + col] = -acc;
                    __syncwarp();
                }
            }
            __syncthreads();
            for (int idx = tid; idx < C * C; idx += LK_FU_THREADS) {
                const int t = idx / C, ii = idx % C;
                t16[t * CP + ii] = lk_to16<OT>(Tf[t * AP + ii]);
            }
            for (int idx = tid; idx < C * K; idx += LK_FU_THREADS) {
                const int t = idx / K, c = idx % K;
                const float eg = GCH ? expf(Gc[t * K + c]) : eGt[t];
                bkg[t * KP + c] = lk_to16<OT>(bs[t] * lk_from16<OT>(ks[t * KP + c]) * eg);
            }
            __syncthreads();
            /* ---- W = T (beta k e^G), U = T (beta v) */
            uint32_t at[C / 16][4];
#pragma unroll
            for (int k16 = 0; k16 < C / 16; k16++) lk_lda(at[k16], t16, CP, 16 * warp, 16 * k16);
            lk_tmul_store<OT>(at, bkg, KP, K, (uint16_t *)p.Wt + (ct0 * hrow + h) * K, hrow * K, len);
            lk_tmul_store<OT>(at, bv, VP, V, Ug, hrow * V, len);
        }

        /* ---- QG, KD (pairs of columns) */
        uint16_t *QGg = (uint16_t *)p.QGt + (ct0 * hrow + h) * K, *KDg = (uint16_t *)p.KDt + (ct0 * hrow + h) * K;
        for (int idx = tid; idx < len * (K / 2); idx += LK_FU_THREADS) {
            const int t = idx / (K / 2), c = 2 * (idx % (K / 2));
            float qg[2], kd[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float et = eGt[t], er = eGr[t];
                if (GCH) {
                    const float gt = Gc[t * K + c + e];
                    et = expf(gt);
                    er = expf(Gc[(C - 1) * K + c + e] - gt);
                }
                qg[e] = scale * lk_from16<OT>(qs[t * KP + c + e]) * et;
                kd[e] = lk_from16<OT>(ks[t * KP + c + e]) * er;
            }
            *(uint32_t *)(QGg + t * hrow * K + c) = lk_pack2<OT>(qg[0], qg[1]);
            *(uint32_t *)(KDg + t * hrow * K + c) = lk_pack2<OT>(kd[0], kd[1]);
        }
    }
}

/* f16 only: every bf16 extend takes the prep + UT pair (chunk_extend.cu), so no bf16 instance ships */
extern "C" int lin_chunk_fused_ut_setup(void) {
    return (int)cudaFuncSetAttribute((const void *)lin_chunk_fused_ut_kernel<LIN_DT_F16>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)LIN_FUSED_UT_SMEM);
}

extern "C" int lin_launch_chunk_fused_ut(const lin_fwd *pp, int ot, void *stream) {
    const lin_fwd &p = *pp;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    if (chunks <= 0) return 0;
    if (ot != LIN_DT_F16 || (p.kind != LIN_GDN && p.kind != LIN_KDA && p.kind != LIN_MAMBA2 && p.kind != LIN_LIGHTNING))
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)chunks, (unsigned)p.hk); /* lightning: hk = hv */
    void (*k)(lin_fwd) = lin_chunk_fused_ut_kernel<LIN_DT_F16>;
    LK_LAUNCH(k, grid, LK_FU_THREADS, LIN_FUSED_UT_SMEM, (cudaStream_t)stream, p);
    int e = (int)cudaGetLastError();
    /* the conv history moves on only after phase 1 read the old one */
    if (!e && p.conv_w > 1) e = lin_launch_convstate(pp, stream);
    return e;
}
