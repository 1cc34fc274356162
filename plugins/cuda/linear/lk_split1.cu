/* lk_split1.cu - phase 1 of the chunked extend split in two
 * (SGL_ATTN_LIN_CHUNK1=split; gdn, mamba2, lightning: the scalar-gate kinds),
 * with the same outputs as lk_chunk1.cu (W, U, QG, KD, M, exp(G_last), the
 * mamba2 skip), so either phase 2 follows it.
 *
 * Prep: one block per (chunk, 128-channel head tile: the q heads, the k
 * heads, the value heads), 4 warps: the conv tile + SiLU (lk_tile.cuh),
 * l2norm of q and k, and for the value heads beta v (delta) / dt x (mamba2,
 * with the skip D x) / v (lightning), stored 16-bit: q, k [T][hk][K], v
 * [T][hv][V].  Every chunk and head at once, latency hidden by the number of
 * blocks (the fused phase 1 did these per key-head group, 4 warps per SM).
 * Then the conv history moves on (lin_convstate_kernel).
 *
 * UT: one block per (chunk, value head), 4 warps, 68 KiB of shared memory (3
 * blocks per SM): q, k and the values in by cp.async while the gates are
 * computed (cumulative log-decay by a warp scan), q k^T and k k^T on tensor
 * cores (lower triangle only), M -> global and A in float32, QG, KD,
 * exp(G_last) -> global, then (delta) T = (I + A)^-1 in float32 by blocks of
 * 16: the four diagonal blocks by forward substitution (one warp each, a lane
 * per column, in registers), then the off-diagonal blocks by levels,
 *   T_ij = -T_ii sum_{k=j}^{i-1} A_ik T_kj   (i - j = 1, 2, 3),
 * the same equations as lk_chunk1.cu's row-by-row substitution with a chain
 * of 16 + 3 x 2 steps instead of 63; W = T (beta k e^G), U = T (beta v) on
 * tensor cores.
 *
 * SGL_ATTN_LIN_PREP=v2 (the default since run 8): lin_cprep2_kernel for gdn
 * (below) and lin_ut_kernel<., 1>: 16-byte element-wise passes, the values
 * loaded late over q / T (51 KiB: 4 blocks per SM instead of 3).
 *
 * SGL_ATTN_LIN_UT=v3 (opt-in, lost in run 11): lin_utf_kernel (below), the prep
 * fused into the UT kernel (gdn, conv width 4, bf16 x). */
#include "lk_tile.cuh"

#define LK_P0_THREADS 128
#define LK_U_THREADS 128

/* shared memory of the UT kernel: q / T (f32) | k / beta k e^G | values | A (f32) / T (16-bit) | gates */
#define LK_U_R0 (LIN_CHUNK * (LIN_TC_K + 8) * 2)
#define LK_U_R2 (LIN_CHUNK * (LIN_TC_VMAX + 8) * 2)
#define LK_U_R3 (LIN_CHUNK * (LIN_CHUNK + 1) * 4)
#define LK_U_SMEM (2 * LK_U_R0 + LK_U_R2 + LK_U_R3 + 4 * LIN_CHUNK * 4)
/* v2: the values land late, over q / T (f32) once T is in 16 bits: 51 KiB, 4 blocks per SM */
#define LK_U_SMEM2 (LK_U_SMEM - LK_U_R2)
#define LK_P0_SMEM ((LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_VMAX * 4)

template <int OT>
__global__ __launch_bounds__(LK_P0_THREADS) void lin_cprep_kernel(lin_fwd p) {
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

/* Prep v2 (SGL_ATTN_LIN_PREP=v2; gdn, conv width 4, bf16 x): the same
 * outputs as lin_cprep_kernel with nothing serial and no shared memory.  Why:
 * v1 convolves each channel by one thread walking the chunk's 64 tokens
 * through shared memory (a dependent chain per block, 34 KB of shared memory,
 * scalar 2-byte loads and stores), 1.09 ms at 64k tokens for ~0.4 GB moved.
 * Here one block per (chunk, head tile), 256 threads: lane group of 16
 * threads per token slice, thread (slice s, octet o) owns channels 8o .. 8o+7
 * of tokens 4s .. 4s+3; it loads its 4 + 3 input rows (16-byte loads, all
 * issued before any use; history rows from the slot), convolves in registers
 * (same order of additions: bias, oldest first), l2norm by a butterfly over
 * the 16 threads of its slice, and stores 16 bytes per token. */
#define LK_P2_THREADS 256
#define LK_P2_TPT 4 /* tokens per thread */
#define LK_P2_W 4   /* conv width served */
#define LK_P2_SMEM (LIN_TC_VMAX * (LK_P2_W + 1) * 4)

template <int OT>
__global__ __launch_bounds__(LK_P2_THREADS) void lin_cprep2_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = LK_P2_W, H = W - 1, TPT = LK_P2_TPT, R = TPT + H;
    LK_DYN_SMEM(float, wsm); /* [128][W] weights | [128] biases */
    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int y = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: the outputs are zeroed by phase 2 */
    const int64_t ct0 = p.pl.chunk_tok0[j], rt0 = p.pl.req_tok0[i];
    const int len = p.pl.chunk_len[j], init = p.pl.req_init[i], crel = (int)(ct0 - rt0);
    const int HV = p.hv, HK = p.hk, V = p.V;
    const int which = y < HK ? 0 : y < 2 * HK ? 1 : 2, hh = which == 0 ? y : which == 1 ? y - HK : y - 2 * HK;
    const int nch = which < 2 ? K : V;
    const int o = threadIdx.x & 15, s = threadIdx.x >> 4, t0 = TPT * s;
    const int cb = which == 0 ? hh * K : which == 1 ? (HK + hh) * K : 2 * HK * K + hh * V;
    /* idle threads (V < 128) load nothing; every q/k thread stays for the butterfly */
    const bool live = 8 * o < nch;
    const int ch = cb + (live ? 8 * o : 0);

    /* rows r = 0 .. R-1: the input at chunk token t0 - H + r */
    float e[R][8];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int tc = t0 - H + r, pos = crel + tc;
        if (pos >= 0 && tc < len && live) {
            const uint16_t *src = (const uint16_t *)p.x.p + (rt0 + pos) * p.x_dim + ch;
            LK_ALIGNED(src, 16);
            const uint4 v = *(const uint4 *)src;
            const uint32_t wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int q = 0; q < 4; q++) {
                e[r][2 * q] = gc_bf16_to_f32((uint16_t)(wv[q] & 0xffffu));
                e[r][2 * q + 1] = gc_bf16_to_f32((uint16_t)(wv[q] >> 16));
            }
        } else {
#pragma unroll
            for (int c = 0; c < 8; c++)
                e[r][c] = pos < 0 && init && live
                              ? lk_sget(p.conv_state, p.st_dt, (int64_t)slot * p.conv_elems + (int64_t)(ch + c) * H + H + pos)
                              : 0.f;
        }
    }
    /* the tile's weights and biases in shared memory (registers for the rows: 3 blocks per SM) */
    for (int idx = threadIdx.x; idx < nch * W; idx += LK_P2_THREADS) wsm[idx] = lk_in(p.conv_weight, (int64_t)cb * W + idx);
    for (int c = threadIdx.x; c < nch; c += LK_P2_THREADS) wsm[LIN_TC_VMAX * W + c] = lk_in0(p.conv_bias, cb + c);
    __syncthreads();
    if (which == 2 && (!live || t0 >= len)) return;
    const float *wt = wsm + 8 * o * W, *bias = wsm + LIN_TC_VMAX * W + 8 * o;
    /* output u overwrites row u: its last reader */
#pragma unroll
    for (int u = 0; u < TPT; u++)
#pragma unroll
        for (int c = 0; c < 8; c++) {
            float acc = bias[c];
#pragma unroll
            for (int m = 0; m < W; m++) acc += wt[c * W + m] * e[u + m][c];
            e[u][c] = lk_silu(acc);
        }
    if (which < 2) { /* q or k: l2norm over the 16 threads of the slice, 16-bit */
        uint16_t *dst = (uint16_t *)(which ? p.Kc : p.Qc) + (ct0 * HK + hh) * K + 8 * o;
#pragma unroll
        for (int u = 0; u < TPT; u++) {
            float inv = 1.f;
            if (p.l2norm) {
                float ss = 0.f;
#pragma unroll
                for (int c = 0; c < 8; c++) ss += e[u][c] * e[u][c];
#pragma unroll
                for (int d = 8; d; d >>= 1) ss += gc_shfl_xor(ss, d);
                inv = 1.f / sqrtf(ss + 1e-6f);
            }
            if (t0 + u < len) {
                uint4 v;
                v.x = lk_pack2<OT>(e[u][0] * inv, e[u][1] * inv);
                v.y = lk_pack2<OT>(e[u][2] * inv, e[u][3] * inv);
                v.z = lk_pack2<OT>(e[u][4] * inv, e[u][5] * inv);
                v.w = lk_pack2<OT>(e[u][6] * inv, e[u][7] * inv);
                LK_ALIGNED(dst + (int64_t)(t0 + u) * HK * K, 16);
                *(uint4 *)(dst + (int64_t)(t0 + u) * HK * K) = v;
            }
        }
    } else { /* beta v */
        uint16_t *dst = (uint16_t *)p.Vc + (ct0 * HV + hh) * V + 8 * o;
#pragma unroll
        for (int u = 0; u < TPT; u++) {
            if (t0 + u >= len) break;
            const float sc = lk_sigmoid(lk_in(p.b, (ct0 + t0 + u) * HV + hh));
            uint4 v;
            v.x = lk_pack2<OT>(sc * e[u][0], sc * e[u][1]);
            v.y = lk_pack2<OT>(sc * e[u][2], sc * e[u][3]);
            v.z = lk_pack2<OT>(sc * e[u][4], sc * e[u][5]);
            v.w = lk_pack2<OT>(sc * e[u][6], sc * e[u][7]);
            LK_ALIGNED(dst + (int64_t)(t0 + u) * HV * V, 16);
            *(uint4 *)(dst + (int64_t)(t0 + u) * HV * V) = v;
        }
    }
}

/* Prep v3 (SGL_ATTN_LIN_PREP=v3): v2's work and arithmetic (the same
 * additions in the same order, bit-identical outputs) with a quarter of its
 * live state.  Why: v2 holds its 7 input rows as 56 floats (117 registers: 2
 * blocks of 256 threads per SM, 16 warps, DRAM 20% at 64k tokens), so each
 * SM has little in flight while a block computes.  Here the rows stay packed
 * as loaded (7 x 16 bytes: 28 registers) and are widened at use; the conv
 * history (the first chunk of a request with an initial state: rows before
 * its first token, any state dtype) is read at use.  At most 64 registers: 4
 * blocks per SM, 32 warps, 4 x 256 x 112 = 112 KiB of row loads issued per
 * SM before the first use. */
/* shared-memory loads the compiler may not hoist out of a loop (the 40 conv
 * weights per thread would stay live in registers: v2's 117) */
LK_DEV float lk_lds_fresh(const float *a) {
#ifdef LK_EMU
    return *a;
#else
    float v;
    asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(v) : "r"((uint32_t)__cvta_generic_to_shared(a)));
    return v;
#endif
}
LK_DEV void lk_lds_fresh4(const float *a, float v[4]) { /* a 16-byte aligned */
#ifdef LK_EMU
    LK_ALIGNED(a, 16);
    for (int k = 0; k < 4; k++) v[k] = a[k];
#else
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"((uint32_t)__cvta_generic_to_shared(a)));
#endif
}
template <int OT>
__global__ __launch_bounds__(LK_P2_THREADS, 4) void lin_cprep3_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = LK_P2_W, H = W - 1, TPT = LK_P2_TPT, R = TPT + H;
    LK_DYN_SMEM(float, wsm); /* [128][W] weights | [128] biases */
    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int y = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: the outputs are zeroed by phase 2 */
    const int64_t ct0 = p.pl.chunk_tok0[j], rt0 = p.pl.req_tok0[i];
    const int len = p.pl.chunk_len[j], init = p.pl.req_init[i], crel = (int)(ct0 - rt0);
    const int HV = p.hv, HK = p.hk, V = p.V;
    const int which = y < HK ? 0 : y < 2 * HK ? 1 : 2, hh = which == 0 ? y : which == 1 ? y - HK : y - 2 * HK;
    const int nch = which < 2 ? K : V;
    const int o = threadIdx.x & 15, s = threadIdx.x >> 4, t0 = TPT * s;
    const int cb = which == 0 ? hh * K : which == 1 ? (HK + hh) * K : 2 * HK * K + hh * V;
    const bool live = 8 * o < nch;
    const int ch = cb + (live ? 8 * o : 0);

    /* rows r = 0 .. R-1 (the input at chunk token t0 - H + r), packed; zero past len and in the history */
    uint4 raw[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int tc = t0 - H + r, pos = crel + tc;
        raw[r] = make_uint4(0u, 0u, 0u, 0u);
        if (pos >= 0 && tc < len && live) {
            const uint16_t *src = (const uint16_t *)p.x.p + (rt0 + pos) * p.x_dim + ch;
            LK_ALIGNED(src, 16);
            raw[r] = *(const uint4 *)src;
        }
    }
    float bv[TPT]; /* beta's inputs, also in flight before the first use */
#pragma unroll
    for (int u = 0; u < TPT; u++) bv[u] = which == 2 && t0 + u < len ? lk_in(p.b, (ct0 + t0 + u) * HV + hh) : 0.f;
    for (int idx = threadIdx.x; idx < nch * W; idx += LK_P2_THREADS) wsm[idx] = lk_in(p.conv_weight, (int64_t)cb * W + idx);
    for (int c = threadIdx.x; c < nch; c += LK_P2_THREADS) wsm[LIN_TC_VMAX * W + c] = lk_in0(p.conv_bias, cb + c);
    __syncthreads();
    if (which == 2 && (!live || t0 >= len)) return;
    const float *wt = wsm + 8 * o * W, *bias = wsm + LIN_TC_VMAX * W + 8 * o;
    /* input row r, channel c: v2's e[r][c] (r static once unrolled: the history test only for r < H) */
    auto xin = [&](int r, int c) -> float {
        const int pos = crel + t0 - H + r;
        if (r < H && pos < 0)
            return init && live ? lk_sget(p.conv_state, p.st_dt, (int64_t)slot * p.conv_elems + (int64_t)(ch + c) * H + H + pos)
                                : 0.f;
        const uint32_t w = (c >> 1) == 0 ? raw[r].x : (c >> 1) == 1 ? raw[r].y : (c >> 1) == 2 ? raw[r].z : raw[r].w;
        return gc_bf16_to_f32((uint16_t)(c & 1 ? w >> 16 : w & 0xffffu));
    };
    uint16_t *dst = which < 2 ? (uint16_t *)(which ? p.Kc : p.Qc) + (ct0 * HK + hh) * K + 8 * o
                              : (uint16_t *)p.Vc + (ct0 * HV + hh) * V + 8 * o;
    const int64_t tstride = which < 2 ? (int64_t)HK * K : (int64_t)HV * V;
#pragma unroll
    for (int u = 0; u < TPT; u++) {
        if (which == 2 && t0 + u >= len) break; /* (q / k threads stay for the butterfly) */
        float e[8];
#pragma unroll
        for (int c = 0; c < 8; c++) { /* bias, then the rows oldest first (v2's order) */
            float w4[W];
            lk_lds_fresh4(wt + c * W, w4);
            float acc = lk_lds_fresh(bias + c);
#pragma unroll
            for (int m = 0; m < W; m++) acc += w4[m] * xin(u + m, c);
            e[c] = lk_silu(acc);
        }
        float mul = 1.f;
        if (which < 2) { /* q or k: l2norm over the 16 threads of the slice */
            if (p.l2norm) {
                float ss = 0.f;
#pragma unroll
                for (int c = 0; c < 8; c++) ss += e[c] * e[c];
#pragma unroll
                for (int d = 8; d; d >>= 1) ss += gc_shfl_xor(ss, d);
                mul = 1.f / sqrtf(ss + 1e-6f);
            }
            if (t0 + u >= len) continue;
        } else { /* beta v */
            mul = lk_sigmoid(bv[u]);
        }
        uint4 v; /* (v2: e inv, sc e: the same products) */
        v.x = lk_pack2<OT>(e[0] * mul, e[1] * mul);
        v.y = lk_pack2<OT>(e[2] * mul, e[3] * mul);
        v.z = lk_pack2<OT>(e[4] * mul, e[5] * mul);
        v.w = lk_pack2<OT>(e[6] * mul, e[7] * mul);
        LK_ALIGNED(dst + (int64_t)(t0 + u) * tstride, 16);
        *(uint4 *)(dst + (int64_t)(t0 + u) * tstride) = v;
    }
}

/* 8 16-bit values <-> floats (one 16-byte word) */
template <int OT> LK_DEV void lk_unpack8(const uint16_t *src, float f[8]) {
    LK_ALIGNED(src, 16);
    const uint4 v = *(const uint4 *)src;
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
        f[2 * q] = lk_from16<OT>((uint16_t)(w[q] & 0xffffu));
        f[2 * q + 1] = lk_from16<OT>((uint16_t)(w[q] >> 16));
    }
}
template <int OT> LK_DEV void lk_pack8(uint16_t *dst, const float f[8]) {
    uint4 v;
    v.x = lk_pack2<OT>(f[0], f[1]);
    v.y = lk_pack2<OT>(f[2], f[3]);
    v.z = lk_pack2<OT>(f[4], f[5]);
    v.w = lk_pack2<OT>(f[6], f[7]);
    LK_ALIGNED(dst, 16);
    *(uint4 *)dst = v;
}

/* V2 (SGL_ATTN_LIN_PREP=v2): the element-wise passes (QG, KD; beta k e^G) 8
 * values per thread and step with 16-byte shared and global accesses instead
 * of 2 / 1 (the same values in the same order of operations). */
template <int OT, int V2>
__global__ __launch_bounds__(LK_U_THREADS) void lin_ut_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VP = LIN_TC_VMAX + 8, AP = C + 1;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN, M2 = KIND == LIN_MAMBA2;
    LK_DYN_SMEM(unsigned char, smraw);
    constexpr int R2 = V2 ? 0 : LK_U_R2;
    uint16_t *qs = (uint16_t *)smraw, *ks = (uint16_t *)(smraw + LK_U_R0);
    uint16_t *vs = (uint16_t *)(smraw + (V2 ? 0 : 2 * LK_U_R0));    /* v2: over q / T, at the end */
    float *Tf = (float *)smraw;                                    /* over q, once QG is out */
    float *Af = (float *)(smraw + 2 * LK_U_R0 + R2);                /* A, then ... */
    uint16_t *t16 = (uint16_t *)Af;                                /* ... T in 16 bits */
    float *Gs = (float *)(smraw + 2 * LK_U_R0 + R2 + LK_U_R3), *bs = Gs + C, *eGt = bs + C, *eGr = eGt + C;
    static_assert(C * (LIN_TC_VMAX + 8) * 2 <= LK_U_R0, "v2: the values fit over q");
    static_assert(C * AP * 4 <= LK_U_R0 && C * CP * 2 <= LK_U_R3, "the UT kernel's shared-memory reuse");

    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int h = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return;
    const int64_t ct0 = p.pl.chunk_tok0[j];
    const int len = p.pl.chunk_len[j];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
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
    if (!V2) load_v();
    lk_cp_async_commit();

    /* ---- gates while the tiles fly: g, beta; G = cumulative g (warp 0 scans) */
    for (int t = tid; t < C; t += LK_U_THREADS) {
        float gv = 0.f, bv_ = 0.f;
        if (t < len) {
            const int64_t tok = ct0 + t;
            if (KIND == LIN_GDN) {
                gv = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h));
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
    if (warp == 0) { /* lane l: tokens 2l, 2l+1 */
        const float a0 = Gs[2 * lane], a1 = a0 + Gs[2 * lane + 1];
        float incl = a1;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float y = gc_shfl(incl, lane >= d ? lane - d : 0);
            if (lane >= d) incl += y;
        }
        const float ex = incl - a1;
        Gs[2 * lane] = ex + a0;
        Gs[2 * lane + 1] = incl;
    }
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
#pragma unroll
    for (int k16 = 0; k16 < K / 16; k16++) {
        uint32_t aq[4], ak[4];
        lk_lda(aq, qs, KP, 16 * warp, 16 * k16);
        if (DELTA) lk_lda(ak, ks, KP, 16 * warp, 16 * k16);
#pragma unroll
        for (int np = 0; np < C / 16; np++) {
            if (np > warp) continue; /* above the diagonal (warp-uniform) */
            uint32_t b[4];
            lk_ldb_n(b, ks, KP, 16 * np, 16 * k16);
            lk_mma<OT>(qk[2 * np], aq, b[0], b[1]);
            lk_mma<OT>(qk[2 * np + 1], aq, b[2], b[3]);
            if (DELTA) {
                lk_mma<OT>(kk[2 * np], ak, b[0], b[1]);
                lk_mma<OT>(kk[2 * np + 1], ak, b[2], b[3]);
            }
        }
    }
    /* ---- M (to global) and A (delta) */
    uint16_t *Mg = (uint16_t *)p.Mt + (ct0 * hrow + h) * C;
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * warp + g + 8 * hf, i0 = 8 * nt + 2 * t4;
            float m2[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int ii = i0 + e;
                const float dec = ii <= t ? expf(Gs[t] - Gs[ii]) : 0.f;
                m2[e] = scale * dec * qk[nt][2 * hf + e];
                if (DELTA) Af[t * AP + ii] = ii < t ? bs[t] * dec * kk[nt][2 * hf + e] : 0.f;
            }
            if (t < len) {
                LK_ALIGNED(Mg + t * hrow * C + i0, 4);
                *(uint32_t *)(Mg + t * hrow * C + i0) = lk_pack2<OT>(m2[0], m2[1]);
            }
        }
    /* ---- QG, KD (pairs of columns), exp(G_last) */
    {
        uint16_t *QGg = (uint16_t *)p.QGt + (ct0 * hrow + h) * K, *KDg = (uint16_t *)p.KDt + (ct0 * hrow + h) * K;
        if (V2)
            for (int idx = tid; idx < len * (K / 8); idx += LK_U_THREADS) {
                const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
                float qg[8], kd[8];
                lk_unpack8<OT>(qs + t * KP + c, qg);
                lk_unpack8<OT>(ks + t * KP + c, kd);
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    qg[e] = scale * qg[e] * eGt[t];
                    kd[e] = kd[e] * eGr[t];
                }
                lk_pack8<OT>(QGg + t * hrow * K + c, qg);
                lk_pack8<OT>(KDg + t * hrow * K + c, kd);
            }
        else
        for (int idx = tid; idx < len * (K / 2); idx += LK_U_THREADS) {
            const int t = idx / (K / 2), c = 2 * (idx % (K / 2));
            float qg[2], kd[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                qg[e] = scale * lk_from16<OT>(qs[t * KP + c + e]) * eGt[t];
                kd[e] = lk_from16<OT>(ks[t * KP + c + e]) * eGr[t];
            }
            LK_ALIGNED(QGg + t * hrow * K + c, 4);
            *(uint32_t *)(QGg + t * hrow * K + c) = lk_pack2<OT>(qg[0], qg[1]);
            *(uint32_t *)(KDg + t * hrow * K + c) = lk_pack2<OT>(kd[0], kd[1]);
        }
        const float eL = expf(Gs[C - 1]);
        for (int c = tid; c < K; c += LK_U_THREADS) p.eG[((int64_t)j * HV + h) * K + c] = eL;
    }
    __syncthreads(); /* q is free (T goes there); A is complete; k was read for KD */

    uint16_t *Ug = (uint16_t *)p.Ut + (ct0 * hrow + h) * V;
    if (!DELTA && V2) { /* U = the values, global to global */
        for (int idx = tid; idx < len * (V / 8); idx += LK_U_THREADS) {
            const int t = idx / (V / 8), cc = (idx % (V / 8)) * 8;
            LK_ALIGNED(Ug + t * hrow * V + cc, 16);
            *(uint4 *)(Ug + t * hrow * V + cc) = *(const uint4 *)((const uint16_t *)p.Vc + ((ct0 + t) * HV + h) * V + cc);
        }
        return;
    }
    if (!DELTA) { /* U = the values */
        for (int idx = tid; idx < len * (V / 8); idx += LK_U_THREADS) {
            const int t = idx / (V / 8), cc = (idx % (V / 8)) * 8;
            LK_ALIGNED(Ug + t * hrow * V + cc, 16);
            *(uint4 *)(Ug + t * hrow * V + cc) = *(const uint4 *)(vs + t * VP + cc);
        }
        return;
    }
    /* ---- beta k e^G, in place of k */
    if (V2)
        for (int idx = tid; idx < C * (K / 8); idx += LK_U_THREADS) {
            const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
            float kv[8];
            lk_unpack8<OT>(ks + t * KP + c, kv);
#pragma unroll
            for (int e = 0; e < 8; e++) kv[e] = bs[t] * kv[e] * eGt[t];
            lk_pack8<OT>(ks + t * KP + c, kv);
        }
    else
    for (int idx = tid; idx < C * K; idx += LK_U_THREADS) {
        const int t = idx / K, c = idx % K;
        ks[t * KP + c] = lk_to16<OT>(bs[t] * lk_from16<OT>(ks[t * KP + c]) * eGt[t]);
    }
    /* ---- T = (I + A)^-1: the diagonal 16 x 16 blocks, warp b -> block b, lane c -> column c
     * (lanes 16..31 compute zeros and store nothing) */
    {
        const int b = warp, c = lane;
        float col[16];
#pragma unroll
        for (int r = 0; r < 16; r++) {
            float acc = 0.f;
#pragma unroll
            for (int m = 0; m < r; m++) acc += Af[(16 * b + r) * AP + 16 * b + m] * col[m];
            col[r] = r < c ? 0.f : r == c ? 1.f : -acc;
        }
        if (lane < 16)
#pragma unroll
            for (int r = 0; r < 16; r++) Tf[(16 * b + r) * AP + 16 * b + c] = col[r];
    }
    __syncthreads();
    /* the blocks below the diagonal, by distance d: X_ij = sum_{k=j}^{i-1} A_ik T_kj goes to the
     * (unused) upper block (j, i), then T_ij = -T_ii X_ij */
    for (int d = 1; d < 4; d++) {
        const int nb = 4 - d;
        for (int e = tid; e < nb * 256; e += LK_U_THREADS) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
            for (int kb = jb; kb < ib; kb++)
#pragma unroll
                for (int m = 0; m < 16; m++)
                    acc += Af[(16 * ib + r) * AP + 16 * kb + m] * Tf[(16 * kb + m) * AP + 16 * jb + c];
            Tf[(16 * jb + r) * AP + 16 * ib + c] = acc;
        }
        __syncthreads();
        for (int e = tid; e < nb * 256; e += LK_U_THREADS) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
#pragma unroll
            for (int m = 0; m < 16; m++)
                if (m <= r) acc += Tf[(16 * ib + r) * AP + 16 * ib + m] * Tf[(16 * jb + m) * AP + 16 * ib + c];
            Tf[(16 * ib + r) * AP + 16 * jb + c] = -acc;
        }
        __syncthreads();
    }
    /* T in 16 bits (over A: done with it); zero above the diagonal */
    for (int idx = tid; idx < C * C; idx += LK_U_THREADS) {
        const int t = idx / C, ii = idx % C;
        t16[t * CP + ii] = lk_to16<OT>(ii <= t ? Tf[t * AP + ii] : 0.f);
    }
    __syncthreads(); /* T (f32) is dead: v2 loads the values there while W is made */
    if (V2) {
        load_v();
        lk_cp_async_commit();
    }
    /* ---- W = T (beta k e^G), U = T (beta v) */
    uint32_t at[C / 16][4];
#pragma unroll
    for (int k16 = 0; k16 < C / 16; k16++) lk_lda(at[k16], t16, CP, 16 * warp, 16 * k16);
    lk_tmul_store<OT>(at, ks, KP, K, (uint16_t *)p.Wt + (ct0 * hrow + h) * K, hrow * K, len);
    if (V2) {
        lk_cp_async_wait_all();
        __syncthreads();
    }
    lk_tmul_store<OT>(at, vs, VP, V, Ug, hrow * V, len);
}

/* ------------------------------------------------- the fused UT (v3)
 *
 * SGL_ATTN_LIN_UT=v3 (gdn, conv width 4, bf16 x): lin_utf_kernel, the UT
 * kernel whose (chunk, value head) block also makes its own q / k (key head
 * h / gsz) and values from x instead of reading the prep's outputs.  Why: the
 * prep (0.40 ms at 64k) and the UT's loads move ~0.4 GB through DRAM (q, k,
 * v written, then read back) for work the UT block can do on tiles it holds
 * anyway, and the UT is latency-bound (4 blocks per SM gave 1.22x over 3),
 * so the layout also drops the separate A region: 40 KiB of shared memory
 * and at most 96 registers, 5 blocks per SM.
 *   - x rows land by cp.async in the tiles' padded rows; the conv runs in
 *     place (lk_fconv4), the q / k conv once per value head (gsz times: cheap
 *     next to the UT); the values' rows load late, over T, while W is made.
 *   - QG / KD are stored before q k^T; A then goes transposed into the upper
 *     triangle of the f32 T array over q (T is lower), the off-diagonal
 *     solve's partial sums X into a small scratch, and T in 16 bits in place.
 * Same values, same order of operations as lin_cprep2_kernel + lin_ut_kernel<., 1>,
 * so the outputs are those of the v2 pair bit for bit. */
#define LK_F_H 3                                /* conv history rows (width 4) */
#define LK_F_WF (LIN_TC_VMAX * 5)              /* floats of one tile's weights [128][4] + biases */
#define LK_F_SCR (2 * LK_F_WF * 4)              /* scratch: q, k weights | X (768 floats) | the values' weights */
#define LK_F_SMEM (2 * LK_U_R0 + LK_F_SCR + 4 * LIN_CHUNK * 4)
#define LK_F_TPT 16                             /* conv: tokens per thread (a warp per 16 tokens) */

/* the chunk's x rows of one tile (channels ch0 ..), 16-bit, into rows t of dst (ld apart); past len: zero */
LK_DEV void lk_fraw_load(const lin_fwd &p, uint16_t *dst, int ld, int64_t ct0, int len, int ch0, int nch) {
    const int n8 = nch / 8;
    for (int idx = threadIdx.x; idx < LIN_CHUNK * n8; idx += LK_U_THREADS) {
        const int t = idx / n8, cc = 8 * (idx % n8);
        const bool ok = t < len;
        lk_cp_async16(dst + t * ld + cc, (const uint16_t *)p.x.p + (ct0 + (ok ? t : 0)) * p.x_dim + ch0 + cc, ok);
    }
}
/* the tile's conv weights [nch][4] and biases (at 4 * 128), f32 */
LK_DEV void lk_fw_load(const lin_fwd &p, float *wsm, int ch0, int nch) {
    for (int idx = threadIdx.x; idx < nch * 4; idx += LK_U_THREADS) wsm[idx] = lk_in(p.conv_weight, (int64_t)ch0 * 4 + idx);
    for (int c = threadIdx.x; c < nch; c += LK_U_THREADS) wsm[4 * LIN_TC_VMAX + c] = lk_in0(p.conv_bias, ch0 + c);
}
LK_DEV void lk_f4(const uint2 &v, float f[4]) {
    f[0] = gc_bf16_to_f32((uint16_t)(v.x & 0xffffu)), f[1] = gc_bf16_to_f32((uint16_t)(v.x >> 16));
    f[2] = gc_bf16_to_f32((uint16_t)(v.y & 0xffffu)), f[3] = gc_bf16_to_f32((uint16_t)(v.y >> 16));
}

/* conv + SiLU of the tile lk_fraw_load put at `tile`, then (l2) the l2norm or
 * (sc) times sc[t], 16-bit, in place (rows past len: zero).  Lane l of warp w:
 * channels 4l .. 4l+3 of tokens 16w .. 16w+15.  Output row t replaces input row
 * t, whose last reader is the same thread, except the 3 rows before a warp's
 * tokens, which the warp before overwrites: each thread reads those first (from
 * the tile, from x before the chunk, or the slot's conv state before the
 * request), then the block barrier.  The l2norm adds the squares of 8 channels
 * in order (both lanes of a pair, from the pair's values), then a butterfly
 * over the 16 pairs: lin_cprep2_kernel's order. */
template <int OT>
LK_DEV void lk_fconv4(const lin_fwd &p, uint16_t *tile, int ld, const float *wsm, int64_t rt0, int ch0, int nch, bool l2,
                      const float *sc, int crel, int len, int slot, int init) {
    const int l = threadIdx.x & 31, t0 = LK_F_TPT * (threadIdx.x >> 5);
    const bool live = 4 * l < nch;
    float xw[4][4]; /* the last 4 input rows: row t in xw[(t + 3) & 3] */
#pragma unroll
    for (int r = 0; r < LK_F_H; r++) {
        const int tc = t0 - LK_F_H + r, pos = crel + tc;
        uint2 v = make_uint2(0, 0);
        if (live && tc >= 0) {
            LK_ALIGNED(tile + tc * ld + 4 * l, 8);
            v = *(const uint2 *)(tile + tc * ld + 4 * l);
        } else if (live && pos >= 0) {
            const uint16_t *src = (const uint16_t *)p.x.p + (rt0 + pos) * p.x_dim + ch0 + 4 * l;
            LK_ALIGNED(src, 8);
            v = *(const uint2 *)src;
        }
        lk_f4(v, xw[r]);
        if (pos < 0)
#pragma unroll
            for (int c = 0; c < 4; c++)
                xw[r][c] = init && live ? lk_sget(p.conv_state, p.st_dt,
                                                  (int64_t)slot * p.conv_elems + (int64_t)(ch0 + 4 * l + c) * LK_F_H + LK_F_H + pos)
                                        : 0.f;
    }
    float wt[4][4], bias[4];
#pragma unroll
    for (int c = 0; c < 4; c++) {
#pragma unroll
        for (int m = 0; m < 4; m++) wt[c][m] = live ? wsm[(4 * l + c) * 4 + m] : 0.f;
        bias[c] = live ? wsm[4 * LIN_TC_VMAX + 4 * l + c] : 0.f;
    }
    __syncthreads();
    uint16_t *row = tile + 4 * l;
    for (int u0 = 0; u0 < LK_F_TPT; u0 += 4)
#pragma unroll
        for (int q = 0; q < 4; q++) { /* token u0 + q: input row in xw[(q + 3) & 3] (static indices) */
            const int t = t0 + u0 + q;
            uint2 in = make_uint2(0, 0);
            if (live) {
                LK_ALIGNED(row + t * ld, 8);
                in = *(const uint2 *)(row + t * ld);
            }
            lk_f4(in, xw[(q + 3) & 3]);
            float e[4];
#pragma unroll
            for (int c = 0; c < 4; c++) {
                float acc = bias[c];
#pragma unroll
                for (int m = 0; m < 4; m++) acc += wt[c][m] * xw[(q + m) & 3][c];
                e[c] = lk_silu(acc);
            }
            float mul = 1.f;
            if (l2) {
                float pe[4], ss = 0.f;
#pragma unroll
                for (int c = 0; c < 4; c++) pe[c] = gc_shfl_xor(e[c], 1);
                const bool lo = !(l & 1); /* this lane has channels 0..3 of the octet */
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    const float a = (c < 4) == lo ? e[c & 3] : pe[c & 3];
                    ss += a * a;
                }
#pragma unroll
                for (int d = 16; d > 1; d >>= 1) ss += gc_shfl_xor(ss, d);
                mul = 1.f / sqrtf(ss + 1e-6f);
            }
            if (!live) continue;
            uint2 v = make_uint2(0, 0);
            if (t < len) { /* (1 x e = e: q / k without l2norm) */
                if (sc) mul = sc[t];
                v.x = lk_pack2<OT>(mul * e[0], mul * e[1]);
                v.y = lk_pack2<OT>(mul * e[2], mul * e[3]);
            }
            *(uint2 *)(row + t * ld) = v;
        }
}

/* at most 96 registers: 5 blocks per SM, as the shared memory allows */
template <int OT> __global__ __launch_bounds__(LK_U_THREADS, 5) void lin_utf_kernel(lin_fwd p) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, KP = K + 8, CP = C + 8, VP = LIN_TC_VMAX + 8, AP = C + 1;
    LK_DYN_SMEM(unsigned char, smraw);
    uint16_t *qs = (uint16_t *)smraw, *ks = (uint16_t *)(smraw + LK_U_R0);
    uint16_t *vs = qs;                        /* the values, at the end */
    float *Tf = (float *)smraw;               /* over q once QG and q k^T are done: T (lower), A^T (upper) */
    uint16_t *t16 = qs;                       /* T in 16 bits, in place */
    float *scr = (float *)(smraw + 2 * LK_U_R0); /* weights of q, k | X | weights of the values */
    float *Gs = (float *)(smraw + 2 * LK_U_R0 + LK_F_SCR), *bs = Gs + C, *eGt = bs + C, *eGr = eGt + C;
    static_assert(C * AP * 4 <= LK_U_R0 && C * CP * 2 <= LK_U_R0 && 3 * 256 * 4 <= LK_F_SCR,
                  "the fused UT kernel's shared-memory reuse");
    static_assert(LK_F_TPT * LK_U_THREADS / 32 == LIN_CHUNK && K == 4 * 32, "lk_fconv4: a warp per 16 tokens");

    const int j = blockIdx.x;
    if (j >= *p.pl.num_chunks) return;
    const int h = blockIdx.y, i = p.pl.chunk_req[j], slot = p.pl.req_slot[i];
    if (slot < 0) return;
    const int64_t ct0 = p.pl.chunk_tok0[j], rt0 = p.pl.req_tok0[i];
    const int len = p.pl.chunk_len[j], crel = (int)(ct0 - rt0), init = p.pl.req_init[i];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    const int HV = p.hv, HK = p.hk, V = p.V, kh = h / p.gsz;
    const float scale = p.scale;
    const int64_t hrow = HV; /* token-row stride of the per-head scratch, in heads */
    const int chq = kh * K, chk = (HK + kh) * K, chv = 2 * HK * K + h * V; /* x channels */

    /* ---- the x rows of q, k; their conv weights */
    lk_fraw_load(p, qs, KP, ct0, len, chq, K);
    lk_fraw_load(p, ks, KP, ct0, len, chk, K);
    lk_cp_async_commit();
    lk_fw_load(p, scr, chq, K);
    lk_fw_load(p, scr + LK_F_WF, chk, K);

    /* ---- gates while the rows fly: g, beta; G = cumulative g (warp 0 scans) */
    for (int t = tid; t < C; t += LK_U_THREADS) {
        float gv = 0.f, bv_ = 0.f;
        if (t < len) {
            const int64_t tok = ct0 + t;
            gv = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, tok * HV + h) + lk_in(p.dt_bias, h));
            bv_ = lk_sigmoid(lk_in(p.b, tok * HV + h));
        }
        Gs[t] = gv;
        bs[t] = bv_;
    }
    __syncthreads();
    if (warp == 0) { /* lane l: tokens 2l, 2l+1 */
        const float a0 = Gs[2 * lane], a1 = a0 + Gs[2 * lane + 1];
        float incl = a1;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float y = gc_shfl(incl, lane >= d ? lane - d : 0);
            if (lane >= d) incl += y;
        }
        const float ex = incl - a1;
        Gs[2 * lane] = ex + a0;
        Gs[2 * lane + 1] = incl;
    }
    __syncthreads();
    for (int t = tid; t < C; t += LK_U_THREADS) {
        eGt[t] = expf(Gs[t]);
        eGr[t] = expf(fminf(Gs[C - 1] - Gs[t], 0.f)); /* G_last <= G_t (up to the scan's rounding) */
    }
    lk_cp_async_wait_all();
    __syncthreads();
    /* ---- conv (+ l2norm) of q and k in place */
    lk_fconv4<OT>(p, qs, KP, scr, rt0, chq, K, p.l2norm != 0, nullptr, crel, len, slot, init);
    lk_fconv4<OT>(p, ks, KP, scr + LK_F_WF, rt0, chk, K, p.l2norm != 0, nullptr, crel, len, slot, init);
    __syncthreads();

    /* ---- QG, KD, exp(G_last) */
    {
        uint16_t *QGg = (uint16_t *)p.QGt + (ct0 * hrow + h) * K, *KDg = (uint16_t *)p.KDt + (ct0 * hrow + h) * K;
        for (int idx = tid; idx < len * (K / 8); idx += LK_U_THREADS) {
            const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
            float qg[8], kd[8];
            lk_unpack8<OT>(qs + t * KP + c, qg);
            lk_unpack8<OT>(ks + t * KP + c, kd);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                qg[e] = scale * qg[e] * eGt[t];
                kd[e] = kd[e] * eGr[t];
            }
            lk_pack8<OT>(QGg + t * hrow * K + c, qg);
            lk_pack8<OT>(KDg + t * hrow * K + c, kd);
        }
        const float eL = expf(Gs[C - 1]);
        for (int c = tid; c < K; c += LK_U_THREADS) p.eG[((int64_t)j * HV + h) * K + c] = eL;
    }

    /* ---- q k^T and k k^T, rows 16 warp .., columns up to the diagonal */
    float qk[C / 8][4], kk[C / 8][4];
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) qk[nt][e] = kk[nt][e] = 0.f;
#pragma unroll
    for (int k16 = 0; k16 < K / 16; k16++) {
        uint32_t aq[4], ak[4];
        lk_lda(aq, qs, KP, 16 * warp, 16 * k16);
        lk_lda(ak, ks, KP, 16 * warp, 16 * k16);
#pragma unroll
        for (int np = 0; np < C / 16; np++) {
            if (np > warp) continue; /* above the diagonal (warp-uniform) */
            uint32_t b[4];
            lk_ldb_n(b, ks, KP, 16 * np, 16 * k16);
            lk_mma<OT>(qk[2 * np], aq, b[0], b[1]);
            lk_mma<OT>(qk[2 * np + 1], aq, b[2], b[3]);
            lk_mma<OT>(kk[2 * np], ak, b[0], b[1]);
            lk_mma<OT>(kk[2 * np + 1], ak, b[2], b[3]);
        }
    }
    __syncthreads(); /* q is free: T and A^T go there */
    /* ---- M (to global), A (strictly lower) transposed: A[t][i] at Tf[i][t] */
    uint16_t *Mg = (uint16_t *)p.Mt + (ct0 * hrow + h) * C;
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * warp + g + 8 * hf, i0 = 8 * nt + 2 * t4;
            float m2[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int ii = i0 + e;
                const float dec = ii <= t ? expf(Gs[t] - Gs[ii]) : 0.f;
                m2[e] = scale * dec * qk[nt][2 * hf + e];
                if (ii < t) Tf[ii * AP + t] = bs[t] * dec * kk[nt][2 * hf + e];
            }
            if (t < len) {
                LK_ALIGNED(Mg + t * hrow * C + i0, 4);
                *(uint32_t *)(Mg + t * hrow * C + i0) = lk_pack2<OT>(m2[0], m2[1]);
            }
        }
    /* ---- beta k e^G, in place of k (q k^T read k before the barrier, KD before that) */
    for (int idx = tid; idx < C * (K / 8); idx += LK_U_THREADS) {
        const int t = idx / (K / 8), c = 8 * (idx % (K / 8));
        float kv[8];
        lk_unpack8<OT>(ks + t * KP + c, kv);
#pragma unroll
        for (int e = 0; e < 8; e++) kv[e] = bs[t] * kv[e] * eGt[t];
        lk_pack8<OT>(ks + t * KP + c, kv);
    }
    __syncthreads();
    /* ---- T = (I + A)^-1: the diagonal 16 x 16 blocks, warp b -> block b, lane c -> column c
     * (lanes 16..31 compute zeros and store nothing) */
    {
        const int b = warp, c = lane;
        float col[16];
#pragma unroll
        for (int r = 0; r < 16; r++) {
            float acc = 0.f;
#pragma unroll
            for (int m = 0; m < r; m++) acc += Tf[(16 * b + m) * AP + 16 * b + r] * col[m];
            col[r] = r < c ? 0.f : r == c ? 1.f : -acc;
        }
        __syncwarp(); /* the block's A^T is read (by this warp only); T_bb, zeros above its diagonal, replaces it */
        if (lane < 16)
#pragma unroll
            for (int r = 0; r < 16; r++) Tf[(16 * b + r) * AP + 16 * b + c] = col[r];
    }
    __syncthreads();
    /* the blocks below the diagonal, by distance d: X_ij = sum_{k=j}^{i-1} A_ik T_kj into the scratch,
     * then T_ij = -T_ii X_ij */
    float *X = scr;
    for (int d = 1; d < 4; d++) {
        const int nb = 4 - d;
        for (int e = tid; e < nb * 256; e += LK_U_THREADS) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
            for (int kb = jb; kb < ib; kb++)
#pragma unroll
                for (int m = 0; m < 16; m++)
                    acc += Tf[(16 * kb + m) * AP + 16 * ib + r] * Tf[(16 * kb + m) * AP + 16 * jb + c];
            X[e] = acc;
        }
        __syncthreads();
        for (int e = tid; e < nb * 256; e += LK_U_THREADS) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
#pragma unroll
            for (int m = 0; m < 16; m++)
                if (m <= r) acc += Tf[(16 * ib + r) * AP + 16 * ib + m] * X[(jb << 8) + (m << 4) + c];
            Tf[(16 * ib + r) * AP + 16 * jb + c] = -acc;
        }
        __syncthreads();
    }
    /* T in 16 bits, in place (every thread reads its 32 entries, then the barrier); zero above the
     * diagonal.  The values' conv weights over X. */
    {
        float tv[C * C / LK_U_THREADS];
#pragma unroll
        for (int k = 0; k < C * C / LK_U_THREADS; k++) {
            const int idx = tid + k * LK_U_THREADS, t = idx / C, ii = idx % C;
            tv[k] = ii <= t ? Tf[t * AP + ii] : 0.f;
        }
        lk_fw_load(p, scr, chv, V);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < C * C / LK_U_THREADS; k++) {
            const int idx = tid + k * LK_U_THREADS, t = idx / C, ii = idx % C;
            t16[t * CP + ii] = lk_to16<OT>(tv[k]);
        }
    }
    __syncthreads();
    /* ---- W = T (beta k e^G), U = T (beta v); the values' x rows land over T once it is in registers */
    uint32_t at[C / 16][4];
#pragma unroll
    for (int k16 = 0; k16 < C / 16; k16++) lk_lda(at[k16], t16, CP, 16 * warp, 16 * k16);
    __syncthreads();
    lk_fraw_load(p, vs, VP, ct0, len, chv, V);
    lk_cp_async_commit();
    lk_tmul_store<OT>(at, ks, KP, K, (uint16_t *)p.Wt + (ct0 * hrow + h) * K, hrow * K, len);
    lk_cp_async_wait_all();
    __syncthreads();
    lk_fconv4<OT>(p, vs, VP, scr, rt0, chv, V, false, bs, crel, len, slot, init);
    __syncthreads();
    lk_tmul_store<OT>(at, vs, VP, V, (uint16_t *)p.Ut + (ct0 * hrow + h) * V, hrow * V, len);
}

/* ------------------------------------------------------------ launchers */

static_assert(LK_U_SMEM <= (int)LIN_C1_SMEM && LK_P0_SMEM <= (int)LIN_C1_SMEM,
              "the split kernels need at most phase 1's shared memory (lin_create.c checks that one)");

int lk_split1_setup(void) {
    const void *k[4] = {(const void *)lin_ut_kernel<LIN_DT_BF16, 0>, (const void *)lin_cprep_kernel<LIN_DT_BF16>,
                        (const void *)lin_ut_kernel<LIN_DT_BF16, 1>, (const void *)lin_utf_kernel<LIN_DT_BF16>};
    const int sm[4] = {LK_U_SMEM, LK_P0_SMEM, LK_U_SMEM2, LK_F_SMEM};
    int e = 0;
    for (int i = 0; i < 4 && !e; i++) e = (int)cudaFuncSetAttribute(k[i], cudaFuncAttributeMaxDynamicSharedMemorySize, sm[i]);
    return e;
}

/* prep v2 serves gdn with conv width 4, bf16 x in 16-byte rows (x_dim a
 * multiple of 8, 16-byte aligned base); anything else takes v1 */
static bool lk_x16_ok(const lin_fwd &p) {
    return p.kind == LIN_GDN && p.conv_w == LK_P2_W && p.x.dt == LIN_DT_BF16 && p.x_dim % 8 == 0 &&
           ((uintptr_t)p.x.p & 15) == 0 && p.K == LIN_TC_K && p.V % 8 == 0;
}
static bool lk_prep2_ok(const lin_fwd &p) { return p.c1_prep >= 2 && lk_x16_ok(p); }
/* the fused UT (SGL_ATTN_LIN_UT=v3): the same shapes as prep v2; anything else takes the prep + UT pair */
static bool lk_fuse_ok(const lin_fwd &p) { return p.c1_ut == 3 && lk_x16_ok(p) && p.V <= LIN_TC_VMAX; }

extern "C" int lin_launch_split1(const lin_fwd *pp, int ot, void *stream) {
    const lin_fwd &p = *pp;
    /* bf16 operands only (the binary's size: f16 takes the fused phase 1) */
    if (!p.Qc || !p.Kc || !p.Vc || p.kind == LIN_KDA || p.kind == LIN_SHORT_CONV || ot != LIN_DT_BF16)
        return (int)cudaErrorInvalidValue;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    if (chunks <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 g1((unsigned)chunks, (unsigned)p.hv);
    if (lk_fuse_ok(p)) { /* one kernel; the conv history moves on after it read the old one */
        void (*kf)(lin_fwd) = lin_utf_kernel<LIN_DT_BF16>;
        LK_LAUNCH(kf, g1, LK_U_THREADS, LK_F_SMEM, st, p);
        int e = (int)cudaGetLastError();
        if (!e && p.conv_w > 1) e = lin_launch_convstate(pp, stream);
        return e;
    }
    dim3 g0((unsigned)chunks, (unsigned)(2 * p.hk + p.hv));
    if (lk_prep2_ok(p)) { /* v3: v2's outputs, a quarter of its registers */
        void (*k0)(lin_fwd) = p.c1_prep == 3 ? lin_cprep3_kernel<LIN_DT_BF16> : lin_cprep2_kernel<LIN_DT_BF16>;
        LK_LAUNCH(k0, g0, LK_P2_THREADS, LK_P2_SMEM, st, p);
    } else {
        void (*k0)(lin_fwd) = lin_cprep_kernel<LIN_DT_BF16>;
        LK_LAUNCH(k0, g0, LK_P0_THREADS, LK_P0_SMEM, st, p);
    }
    int e = (int)cudaGetLastError();
    /* the conv history moves on only after the prep read the old one */
    if (!e && p.conv_w > 1) e = lin_launch_convstate(pp, stream);
    if (e) return e;
    void (*k1)(lin_fwd) = p.c1_prep >= 2 ? lin_ut_kernel<LIN_DT_BF16, 1> : lin_ut_kernel<LIN_DT_BF16, 0>;
    LK_LAUNCH(k1, g1, LK_U_THREADS, p.c1_prep >= 2 ? LK_U_SMEM2 : LK_U_SMEM, st, p);
    return (int)cudaGetLastError();
}
