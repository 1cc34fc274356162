/* chunk_tile.cuh - pieces of the chunked kernels' phase 1 shared by its fused
 * form (chunk_fused_ut.cu), the prep + UT pair (chunk_prep_ut.cu) and the
 * fused chunk kernel (chunk_fused_cp.cu): the conv tile of a chunk, 16-byte
 * packing, the gates' prefix sum, T = (I + A)^-1 by 16 x 16 blocks, the
 * product of the chunk's T with a 16-bit tile, and kda's per-channel gates
 * and q.k / k.k on tensor cores (the fused kernel and the UT kernel).  One copy of each, so the
 * kernels' products and their order stay the same. */
#ifndef SGL_LIN_CHUNK_TILE_CUH
#define SGL_LIN_CHUNK_TILE_CUH

#include "chunk_mma.cuh"

/* Conv + SiLU of channels ch0 .. ch0 + nch - 1 (nch <= 128) at the chunk's
 * tokens.  tile [(64 + H)][nch] fp32: row r holds the input at position
 * crel - H + r of the request (history rows from the slot's conv state when
 * init, else 0; rows past the chunk's length 0), loaded with every thread at
 * once; then each channel is convolved in place from the last token down, so
 * no row is overwritten before its last use.  Output row t is tile row t + H
 * (0 past len).  Same order of additions as the CPU wrappers. */
LK_DEV void lk_conv_tile(const lin_fwd &p, int64_t rt0, int crel, int len, int slot, int init, int ch0, int nch,
                         float *tile) {
    const int W = p.conv_w, H = W - 1, total = (LIN_CHUNK + H) * nch, nt = blockDim.x;
    /* 8 independent loads per thread in flight before any store */
    for (int base = threadIdx.x; base < total; base += 8 * nt) {
        float e[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const int idx = base + u * nt, r = idx / nch, c = idx % nch, ch = ch0 + c, pos = crel - H + r;
            e[u] = 0.f;
            if (idx >= total) continue;
            if (pos >= 0) {
                if (r - H < len) e[u] = lk_conv_input(p, rt0 + pos, ch);
            } else if (init) {
                e[u] = lk_sget(p.conv_state, p.st_dt, (int64_t)slot * p.conv_elems + (int64_t)ch * H + H + pos);
            }
        }
#pragma unroll
        for (int u = 0; u < 8; u++)
            if (base + u * nt < total) tile[base + u * nt] = e[u];
    }
    __syncthreads();
    for (int c = threadIdx.x; c < nch; c += blockDim.x) {
        const int ch = ch0 + c;
        float wt[LIN_CONV_W_MAX];
#pragma unroll
        for (int m = 0; m < LIN_CONV_W_MAX; m++) wt[m] = m < W ? lk_in(p.conv_weight, (int64_t)ch * W + m) : 0.f;
        const float bias = lk_in0(p.conv_bias, ch);
        for (int t = len - 1; t >= 0; t--) {
            float acc = bias;
#pragma unroll
            for (int m = 0; m < LIN_CONV_W_MAX; m++)
                if (m < W) acc += wt[m] * tile[(t + m) * nch + c];
            tile[(t + H) * nch + c] = lk_silu(acc);
        }
    }
    __syncthreads();
}

/* acc = 32 columns c0 .. of T (64 x 64, 16-bit A fragments at: the warp's 16 rows) times src (64 x
 * ncols, k-major rows of lds elements) */
template <int OT>
LK_DEV void lk_tmul_acc32(float (&acc)[4][4], const uint32_t at[][4], const uint16_t *src, int lds, int c0) {
#pragma unroll
    for (int nt = 0; nt < 4; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < LIN_CHUNK / 16; kk++)
#pragma unroll
        for (int np = 0; np < 2; np++) {
            uint32_t b[4];
            lk_ldb_k(b, src, lds, 16 * kk, c0 + 16 * np);
            lk_mma<OT>(acc[2 * np], at[kk], b[0], b[1]);
            lk_mma<OT>(acc[2 * np + 1], at[kk], b[2], b[3]);
        }
}

/* dst = T (64 x 64, 16-bit, rows padded to CP) times src (64 x ncols, k-major
 * rows padded to lds), rows < len stored to global rows of stride `gst`
 * elements (16-bit) from dst0.  Each warp makes 16 rows. */
template <int OT>
LK_DEV void lk_tmul_store(const uint32_t at[4][4], const uint16_t *src, int lds, int ncols, uint16_t *dst0,
                          int64_t gst, int len) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
    for (int c0 = 0; c0 < ncols; c0 += 32) {
        float acc[4][4];
        lk_tmul_acc32<OT>(acc, at, src, lds, c0);
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int t = 16 * warp + g + 8 * hf, c = c0 + 8 * nt + 2 * t4;
                if (t < len) {
                    LK_ALIGNED(dst0 + t * gst + c, 4);
                    *(uint32_t *)(dst0 + t * gst + c) = lk_pack2<OT>(acc[nt][2 * hf], acc[nt][2 * hf + 1]);
                }
            }
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

/* The chunk's gates Gs[0 .. 63] become their inclusive prefix sum (the cumulative log-decay G), by
 * one warp: lane l holds tokens 2l, 2l + 1. */
LK_DEV void lk_gate_cumsum(float *Gs, int lane) {
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

/* T = (I + A)^-1 for the chunk's strictly lower A, both float32 in rows of AP (LK_TAP; the fused
 * kernel's tf32 variant LK_TAP_MMA).  The diagonal 16 x 16 block b by forward substitution, one warp:
 * lane c -> column c (lanes 16..31 compute zeros and store nothing). */
#define LK_TAP (LIN_CHUNK + 1)
template <int AP = LK_TAP> LK_DEV void lk_t_diag(const float *Af, float *Tf, int b, int lane) {
    const int c = lane;
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

/* T's blocks below the diagonal (the diagonal ones done and visible), by distance d, with every one of
 * the block's NT threads: X_ij = sum_{k=j}^{i-1} A_ik T_kj goes to the (unused) upper block (j, i), then
 * T_ij = -T_ii X_ij: a chain of 3 x 2 dependent steps instead of 63 rows.  Ends at a barrier. */
template <int NT> LK_DEV void lk_t_offdiag(const float *Af, float *Tf, int tid) {
    constexpr int AP = LK_TAP;
    for (int d = 1; d < 4; d++) {
        const int nb = 4 - d;
        for (int e = tid; e < nb * 256; e += NT) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
            for (int kb = jb; kb < ib; kb++)
#pragma unroll
                for (int m = 0; m < 16; m++)
                    acc += Af[(16 * ib + r) * AP + 16 * kb + m] * Tf[(16 * kb + m) * AP + 16 * jb + c];
            Tf[(16 * jb + r) * AP + 16 * ib + c] = acc;
        }
        __syncthreads();
        for (int e = tid; e < nb * 256; e += NT) {
            const int jb = e >> 8, ib = jb + d, r = (e >> 4) & 15, c = e & 15;
            float acc = 0.f;
#pragma unroll
            for (int m = 0; m < 16; m++)
                if (m <= r) acc += Tf[(16 * ib + r) * AP + 16 * ib + m] * Tf[(16 * jb + m) * AP + 16 * ib + c];
            Tf[(16 * ib + r) * AP + 16 * jb + c] = -acc;
        }
        __syncthreads();
    }
}

/* T in 16 bits, rows of LIN_CHUNK + 8, zero above the diagonal (the A fragments of lk_tmul_*) */
template <int OT, int NT> LK_DEV void lk_t_to16(const float *Tf, uint16_t *t16, int tid) {
    constexpr int C = LIN_CHUNK, CP = LIN_CHUNK + 8, AP = LK_TAP;
    for (int idx = tid; idx < C * C; idx += NT) {
        const int t = idx / C, ii = idx % C;
        t16[t * CP + ii] = lk_to16<OT>(ii <= t ? Tf[t * AP + ii] : 0.f);
    }
}

/* kda's
 *   P[t][i] = sum_c x_t[c] k_i[c] exp(G_t[c] - G_i[c])   (x = q: M, x = k: A)
 * on tensor cores by a reference row r with i <= r <= t:
 *   exp(G_t - G_i) = exp(G_t - G_r) exp(G_r - G_i),
 * both factors <= 1 (G is non-increasing along the chunk), so neither 16-bit
 * operand overflows and a factor that underflows belongs to a product that
 * is as small.  Warp w's rows t = 16 w .. 16 w + 15 take r = 16 w against
 * the columns of the earlier 16-row blocks, r = 16 w + 8 for its rows
 * 16 w + 8 .. against columns 16 w .. 16 w + 7; the two 8 x 8 blocks on the
 * diagonal stay in float32 (no r lies between i and t for all of them).
 * The A operand: lane's rows r0 + g (zero unless lo), r0 + g + 8, columns
 * c0 + 2 t4 .. (+ 8) of x scaled by exp(G_t - G_ref), for x = q and k. */
template <int OT>
LK_DEV void lk_kda_tc_a(uint32_t (&aq)[4], uint32_t (&ak)[4], const uint16_t *qs, const uint16_t *ks,
                        const float *Gc, int r0, int ref, bool lo, int c0, int g, int t4) {
    constexpr int K = LIN_TC_K, KP = K + 8;
#pragma unroll
    for (int kh = 0; kh < 2; kh++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = r0 + g + 8 * hf, c = c0 + 8 * kh + 2 * t4, e = hf + 2 * kh;
            if (hf == 0 && !lo) {
                aq[e] = ak[e] = 0u;
                continue;
            }
            const float f0 = expf(Gc[t * K + c] - Gc[ref * K + c]), f1 = expf(Gc[t * K + c + 1] - Gc[ref * K + c + 1]);
            aq[e] = lk_pack2<OT>(lk_from16<OT>(qs[t * KP + c]) * f0, lk_from16<OT>(qs[t * KP + c + 1]) * f1);
            ak[e] = lk_pack2<OT>(lk_from16<OT>(ks[t * KP + c]) * f0, lk_from16<OT>(ks[t * KP + c + 1]) * f1);
        }
}

/* The B operand of the n8 tile of columns i0 .. i0 + 7: k_i scaled by exp(G_ref - G_i) (i <= ref). */
template <int OT>
LK_DEV void lk_kda_tc_b(uint32_t (&b)[2], const uint16_t *ks, const float *Gc, int i0, int ref, int c0, int g, int t4) {
    constexpr int K = LIN_TC_K, KP = K + 8;
    const int i = i0 + g;
#pragma unroll
    for (int kh = 0; kh < 2; kh++) {
        const int c = c0 + 8 * kh + 2 * t4;
        const float f0 = expf(Gc[ref * K + c] - Gc[i * K + c]), f1 = expf(Gc[ref * K + c + 1] - Gc[i * K + c + 1]);
        b[kh] = lk_pack2<OT>(lk_from16<OT>(ks[i * KP + c]) * f0, lk_from16<OT>(ks[i * KP + c + 1]) * f1);
    }
}

/* One step of a warp's reduce-scatter: v holds N partial sums indexed k; the lanes whose lane bit LB is 0 keep
 * the k with index bit KB clear, the others those with it set, each adding its partner's (lane ^ 2^LB) copy of
 * what it keeps.  w gets the N / 2 kept sums, indexed k with bit KB removed. */
template <int N, int KB, int LB> LK_DEV void lk_rs_step(const float (&v)[N], float (&w)[N / 2], int lane) {
    const bool up = (lane >> LB) & 1;
#pragma unroll
    for (int i = 0; i < N / 2; i++) {
        const int lo = (i & ((1 << KB) - 1)) | ((i >> KB) << (KB + 1)), hi = lo | (1 << KB);
        const float keep = up ? v[hi] : v[lo], send = up ? v[lo] : v[hi];
        w[i] = keep + gc_shfl_xor(send, 1 << LB);
    }
}

/* kda's two 8 x 8 diagonal blocks of warp w's rows in float32 with the channels split over the lanes: lane l
 * sums channels l, l + 32, l + 64, l + 96 of every (t, i) pair with i <= t of a block, so each channel's
 * decays exp(G_t - G_i) come from the 7 one-step factors d_s = exp(G_s - G_{s-1}) of the block's rows by
 * products down a column (factors <= 1: no overflow), and a reduce-scatter over the lanes leaves lane
 * (g, t4) the layout of Pd, Xd [m][e] (row r0 + 8 m + g, column r0 + 8 m + 2 t4 + e; 0 above the
 * diagonal).  56 exp a lane, where a row and two columns a lane over all 128 channels would take 512. */
template <int OT>
LK_DEV void lk_kda_diag_lanes(float (&Pd)[2][2], float (&Xd)[2][2], const uint16_t *qs, const uint16_t *ks,
                              const float *Gc, int warp, int lane) {
    constexpr int K = LIN_TC_K, KP = K + 8;
#pragma unroll /* Pd / Xd indexed by m stay in registers */
    for (int m = 0; m < 2; m++) {
        const int r0 = 16 * warp + 8 * m;
        float acc[128]; /* k = which * 64 + t * 8 + i: which 0 = q.k (P), 1 = k.k (X); 0 above the diagonal */
#pragma unroll
        for (int k = 0; k < 128; k++) acc[k] = 0.f;
#pragma unroll 1
        for (int cj = 0; cj < K / 32; cj++) {
            const int c = lane + 32 * cj;
            float G[8], q[8], kx[8];
#pragma unroll
            for (int a = 0; a < 8; a++) {
                G[a] = Gc[(r0 + a) * K + c];
                q[a] = lk_from16<OT>(qs[(r0 + a) * KP + c]);
                kx[a] = lk_from16<OT>(ks[(r0 + a) * KP + c]);
            }
            float d[8];
#pragma unroll
            for (int a = 1; a < 8; a++) d[a] = expf(G[a] - G[a - 1]);
#pragma unroll
            for (int i = 0; i < 8; i++) {
                float w = kx[i]; /* k_i exp(G_t - G_i), t walking down from i */
#pragma unroll
                for (int t = i; t < 8; t++) {
                    if (t > i) w *= d[t];
                    acc[t * 8 + i] += q[t] * w;
                    acc[64 + t * 8 + i] += kx[t] * w;
                }
            }
        }
        /* lane bits 4 .. 0 are index bits 5 .. 1 (t's three, then i's upper two) */
        float r64[64], r32[32], r16[16], r8[8], r4[4];
        lk_rs_step<128, 5, 4>(acc, r64, lane);
        lk_rs_step<64, 4, 3>(r64, r32, lane);
        lk_rs_step<32, 3, 2>(r32, r16, lane);
        lk_rs_step<16, 2, 1>(r16, r8, lane);
        lk_rs_step<8, 1, 0>(r8, r4, lane);
#pragma unroll
        for (int e = 0; e < 2; e++) {
            Pd[m][e] = r4[e];
            Xd[m][e] = r4[2 + e];
        }
    }
}

/* Warp w's rows of q.k (P) and k.k (X) in the accumulator layout of
 * lk_rows_mul_n2 (n8 tile nt: columns 8 nt ..): tiles nt < 2 w in P, X; tile
 * 2 w's rows r0 + 8 .. in P8, X8 (elements 2, 3); the diagonal 8 x 8 blocks
 * in Pd, Xd [m][e] (lane's row r0 + 8 m + g, column r0 + 8 m + 2 t4 + e).
 * The tiles of the warp's own block stay apart from P, X: filling P[2 w]
 * would index the accumulators by the warp, which puts them in local memory. */
template <int OT>
LK_DEV void lk_kda_tc_rows(float (&P)[LIN_CHUNK / 8][4], float (&X)[LIN_CHUNK / 8][4], float (&P8)[4], float (&X8)[4],
                           float (&Pd)[2][2], float (&Xd)[2][2], const uint16_t *qs, const uint16_t *ks,
                           const float *Gc, int warp, int lane) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K;
    const int g = lane >> 2, t4 = lane & 3, r0 = 16 * warp;
    /* the diagonal blocks first, while none of the tensor-core accumulators below is live */
    lk_kda_diag_lanes<OT>(Pd, Xd, qs, ks, Gc, warp, lane);
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) P[nt][e] = X[nt][e] = 0.f;
#pragma unroll
    for (int e = 0; e < 4; e++) P8[e] = X8[e] = 0.f;
    /* the earlier 16-row blocks, reference r0 */
    if (warp > 0) {
#pragma unroll 1
        for (int k16 = 0; k16 < K / 16; k16++) {
            uint32_t aq[4], ak[4];
            lk_kda_tc_a<OT>(aq, ak, qs, ks, Gc, r0, r0, true, 16 * k16, g, t4);
#pragma unroll
            for (int nt = 0; nt < C / 8 - 2; nt++) {
                if (nt >= 2 * warp) continue;
                uint32_t b[2];
                lk_kda_tc_b<OT>(b, ks, Gc, 8 * nt, r0, 16 * k16, g, t4);
                lk_mma<OT>(P[nt], aq, b[0], b[1]);
                lk_mma<OT>(X[nt], ak, b[0], b[1]);
            }
        }
    }
    /* rows r0 + 8 .. against columns r0 .. r0 + 7, reference r0 + 8 */
#pragma unroll 1
    for (int k16 = 0; k16 < K / 16; k16++) {
        uint32_t aq[4], ak[4], b[2];
        lk_kda_tc_a<OT>(aq, ak, qs, ks, Gc, r0, r0 + 8, false, 16 * k16, g, t4);
        lk_kda_tc_b<OT>(b, ks, Gc, r0, r0 + 8, 16 * k16, g, t4);
        lk_mma<OT>(P8, aq, b[0], b[1]);
        lk_mma<OT>(X8, ak, b[0], b[1]);
    }
}

/* Warp w's rows of M (16-bit, to global: row t at Mg + t mrow; rows past len not stored) and, where wa, of A
 * (float32, rows of AP) from accumulators in the m16n8 layout of lk_rows_mul_n2: at(nt, hf, e, t, ii, m, a)
 * gives element (t, ii)'s values, lane's n8 tile nt, row half hf, column e of its pair. */
template <int OT, int AP, class F>
LK_DEV void lk_store_ma(float *Af, uint16_t *Mg, int64_t mrow, int len, bool wa, int warp, int lane, F &&at) {
    constexpr int C = LIN_CHUNK;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int nt = 0; nt < C / 8; nt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * warp + g + 8 * hf, i0 = 8 * nt + 2 * t4;
            float m2[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int ii = i0 + e;
                float a;
                at(nt, hf, e, t, ii, m2[e], a);
                if (wa) Af[t * AP + ii] = a;
            }
            if (t < len) {
                LK_ALIGNED(Mg + t * mrow + i0, 4);
                *(uint32_t *)(Mg + t * mrow + i0) = lk_pack2<OT>(m2[0], m2[1]);
            }
        }
}

/* The same from the accumulators of lk_kda_tc_rows: M = scale P on and below the diagonal, A = beta X below
 * it (0 past len). */
template <int OT, int AP>
LK_DEV void lk_kda_ma(const float (&P)[LIN_CHUNK / 8][4], const float (&X)[LIN_CHUNK / 8][4], const float (&P8)[4],
                      const float (&X8)[4], const float (&Pd)[2][2], const float (&Xd)[2][2], float *Af, uint16_t *Mg,
                      int64_t mrow, const float *bs, float scale, int len, int warp, int lane) {
    lk_store_ma<OT, AP>(Af, Mg, mrow, len, true, warp, lane, [&](int nt, int hf, int e, int t, int ii, float &m, float &a) {
        /* which accumulator holds (t, ii): selects, never an index by the warp */
        const bool own = nt == 2 * warp + hf, low8 = hf == 1 && nt == 2 * warp;
        const float vq = own ? Pd[hf][e] : low8 ? P8[2 + e] : P[nt][2 * hf + e];
        const float vk = own ? Xd[hf][e] : low8 ? X8[2 + e] : X[nt][2 * hf + e];
        m = ii <= t ? scale * vq : 0.f;
        a = ii < t && t < len ? bs[t] * vk : 0.f;
    });
}

/* kda's cumulative log-decays of head h, per channel: Gc[t][c] = sum_{s <= t, s < len} -e^A_log
 * softplus(a_s[c] + dt_bias[c]), in token order (the CPU form's); rows past len repeat the last.  NT
 * threads, a channel each (NT >= K); 16 tokens' loads in flight before their sums. */
template <int NT>
LK_DEV void lk_kda_gates(const lin_fwd &p, float *Gc, int64_t ct0, int len, int h, int tid) {
    constexpr int C = LIN_CHUNK, K = LIN_TC_K, U = 16;
    static_assert(NT >= K, "a thread per channel");
    if (tid >= K) return;
    const int c = tid, HV = p.hv;
    const float negA = -expf(lk_in(p.A_log, h)), db = lk_in(p.dt_bias, (int64_t)h * K + c);
    float G = 0.f;
    for (int t0 = 0; t0 < C; t0 += U) {
        float raw[U];
#pragma unroll
        for (int u = 0; u < U; u++) raw[u] = t0 + u < len ? lk_in(p.a, ((ct0 + t0 + u) * HV + h) * K + c) : 0.f;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (t0 + u < len) G += negA * lk_softplus(raw[u] + db);
            Gc[(t0 + u) * K + c] = G;
        }
    }
}

#endif
