/* chunk_tile.cuh - pieces of the chunked kernels' phase 1 shared by its fused
 * form (chunk_fused_ut.cu) and the prep + UT pair (chunk_prep_ut.cu): the
 * conv tile of a chunk and the product of the chunk's T with a 16-bit tile,
 * stored to global. */
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

/* dst = T (64 x 64, 16-bit, rows padded to CP) times src (64 x ncols, k-major
 * rows padded to lds), rows < len stored to global rows of stride `gst`
 * elements (16-bit) from dst0.  Each warp makes 16 rows. */
template <int OT>
LK_DEV void lk_tmul_store(const uint32_t at[4][4], const uint16_t *src, int lds, int ncols, uint16_t *dst0,
                          int64_t gst, int len) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
    for (int c0 = 0; c0 < ncols; c0 += 32) {
        float acc[4][4];
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

#endif
