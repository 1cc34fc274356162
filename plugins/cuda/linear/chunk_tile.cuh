/* chunk_tile.cuh - pieces of the chunked kernels' phase 1 shared by its fused
 * form (chunk_fused_ut.cu), the prep + UT pair (chunk_prep_ut.cu) and the
 * fused chunk kernel (chunk_fused_cp.cu): the conv tile of a chunk, 16-byte
 * packing, the gates' prefix sum, T = (I + A)^-1 by 16 x 16 blocks, and the
 * product of the chunk's T with a 16-bit tile.  One copy of each, so the
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

#endif
