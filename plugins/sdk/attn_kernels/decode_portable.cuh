/*
 * decode_portable.cuh - paged split-KV decode on plain cores (CUDA and
 * HIP: hip_attn's decode; cuda_attn's with the option kernel=portable).
 *
 * Grid: x = work item (request, KV split), y = kv head x head-block.  One
 * block serves HB q heads of one kv head, so with HB >= group size each KV
 * byte is read once.  Each token row is split over D/8 lanes (16-byte loads);
 * a 32-lane group walks ATTN_PD_UNROLL tokens per step with all their loads
 * issued before use; the next step's slots are read one step ahead.  Each
 * lane keeps an online softmax for its tokens; lane groups, then warps, are
 * merged at the end, and attn_decode_finish writes out or combines splits.
 */
#ifndef SGL_ATTN_KERNELS_DECODE_PORTABLE_CUH
#define SGL_ATTN_KERNELS_DECODE_PORTABLE_CUH

#include "decode_finish.cuh"

#define ATTN_PD_THREADS 128
#define ATTN_PD_WARPS (ATTN_PD_THREADS / GC_LANES)
#define ATTN_PD_UNROLL 4

template <int DT, int D, int HB>
__global__ __launch_bounds__(ATTN_PD_THREADS) void attn_decode_portable_kernel(attn_fwd p) {
    static_assert(D % 8 == 0 && (D / 8) <= GC_LANES && (GC_LANES % (D / 8)) == 0, "lane split");
    constexpr int LPT = D / 8;            /* lanes per token row */
    constexpr int TPS = GC_LANES / LPT;   /* tokens per lane group step */
    constexpr int U = ATTN_PD_UNROLL;
    constexpr int STEP = ATTN_PD_WARPS * TPS * U; /* tokens per block iteration */

    if ((int)blockIdx.x >= *p.num_items) return;
    const attn_decode_item it = p.ditems[blockIdx.x];
    const int hblocks = (p.group + HB - 1) / HB;
    const int kvh = blockIdx.y / hblocks;
    const int qh0 = kvh * p.group + (blockIdx.y % hblocks) * HB;
    const int nh = min(HB, p.group - (int)(blockIdx.y % hblocks) * HB);

    const int lane = gc_lane(), warp = threadIdx.x / GC_LANES;
    const int sub = lane / LPT, c = lane % LPT;

    float q[HB][8];
#pragma unroll
    for (int h = 0; h < HB; h++) {
        if (h < nh) {
            const uint16_t *qp = (const uint16_t *)p.q + (int64_t)it.b * p.q_stride_t +
                                 (int64_t)(qh0 + h) * p.q_stride_h + c * 8;
            gc_unpack8<DT>(*(const uint4 *)qp, q[h]);
        } else {
#pragma unroll
            for (int e = 0; e < 8; e++) q[h][e] = 0.f;
        }
    }
    int beg = it.kv_begin;
    if (p.window >= 0 && it.q_pos - p.window > beg) beg = it.q_pos - p.window;
    const int end = it.kv_end;

    float m[HB], l[HB], acc[HB][8];
#pragma unroll
    for (int h = 0; h < HB; h++) {
        m[h] = ATTN_NEG_INF;
        l[h] = 0.f;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[h][e] = 0.f;
    }
    const uint16_t *kbase = (const uint16_t *)p.k_cache + (int64_t)kvh * p.kc_stride_h + c * 8;
    const uint16_t *vbase = (const uint16_t *)p.v_cache + (int64_t)kvh * p.vc_stride_h + c * 8;

    int64_t slot[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int tok = beg + (u * ATTN_PD_WARPS + warp) * TPS + sub;
        slot[u] = tok < end ? attn_slot(p, it.row, tok) : 0;
    }
    for (int base = beg; base < end; base += STEP) {
        uint4 kv[U], vv[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            kv[u] = *(const uint4 *)(kbase + slot[u] * p.kc_stride_s);
            vv[u] = *(const uint4 *)(vbase + slot[u] * p.vc_stride_s);
        }
        /* next step's slots, in flight while this step computes */
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int tok = base + STEP + (u * ATTN_PD_WARPS + warp) * TPS + sub;
            slot[u] = tok < end ? attn_slot(p, it.row, tok) : 0;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int tok = base + (u * ATTN_PD_WARPS + warp) * TPS + sub;
            float kf[8], vf[8];
            gc_unpack8<DT>(kv[u], kf);
            gc_unpack8<DT>(vv[u], vf);
#pragma unroll
            for (int h = 0; h < HB; h++) {
                float dot = 0.f;
#pragma unroll
                for (int e = 0; e < 8; e++) dot += q[h][e] * kf[e];
#pragma unroll
                for (int o = LPT / 2; o >= 1; o >>= 1) dot += gc_shfl_xor(dot, o);
                const float s = tok < end ? attn_score(p, dot) : ATTN_NEG_INF;
                const float mn = s > m[h] ? s : m[h];
                const float corr = attn_rescale(m[h], mn);
                const float pe = attn_exp2_sub(s, mn);
                m[h] = mn;
                l[h] = l[h] * corr + pe;
#pragma unroll
                for (int e = 0; e < 8; e++) acc[h][e] = acc[h][e] * corr + pe * vf[e];
            }
        }
    }
    /* Merge the lane groups of this warp (they saw different tokens). */
#pragma unroll
    for (int o = LPT; o < GC_LANES; o <<= 1) {
#pragma unroll
        for (int h = 0; h < HB; h++) {
            const float mo = gc_shfl_xor(m[h], o), lo = gc_shfl_xor(l[h], o);
            const float mn = mo > m[h] ? mo : m[h];
            const float a = attn_rescale(m[h], mn), b = attn_rescale(mo, mn);
            l[h] = l[h] * a + lo * b;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[h][e] = acc[h][e] * a + gc_shfl_xor(acc[h][e], o) * b;
            m[h] = mn;
        }
    }
    /* Merge the warps through shared memory into the canonical state. */
    __shared__ float w_acc[ATTN_PD_WARPS][HB][D];
    __shared__ float w_m[ATTN_PD_WARPS][HB], w_l[ATTN_PD_WARPS][HB];
    __shared__ float so[HB * D], sm[HB], sl[HB];
    if (sub == 0) {
#pragma unroll
        for (int h = 0; h < HB; h++) {
#pragma unroll
            for (int e = 0; e < 8; e++) w_acc[warp][h][c * 8 + e] = acc[h][e];
            if (c == 0) {
                w_m[warp][h] = m[h];
                w_l[warp][h] = l[h];
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < HB * D; i += ATTN_PD_THREADS) {
        const int h = i / D, d = i % D;
        float mx = ATTN_NEG_INF;
        for (int w = 0; w < ATTN_PD_WARPS; w++) mx = w_m[w][h] > mx ? w_m[w][h] : mx;
        float o = 0.f, ls = 0.f;
        for (int w = 0; w < ATTN_PD_WARPS; w++) {
            const float f = attn_rescale(w_m[w][h], mx);
            o += w_acc[w][h][d] * f;
            ls += w_l[w][h] * f;
        }
        so[i] = o;
        if (d == 0) {
            sm[h] = mx;
            sl[h] = ls;
        }
    }
    __syncthreads();
    attn_decode_finish<DT, D>(p, it, qh0, nh, so, sm, sl);
}

#endif
