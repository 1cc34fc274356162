/*
 * extend_portable.cuh - paged extend / prefill / cross attention on plain
 * cores (CUDA and HIP: hip_attn's extend; cuda_attn's with the option
 * kernel=portable).  Obviously correct first: every score is masked by
 * attn_visible, nothing is skipped but whole tiles outside the item's KV
 * range.
 *
 * Grid: x = q head, y = work item (BM q rows of one request; the plan orders
 * items longest-first).  Tree verify items read each score's mask byte.  A KV tile of BN tokens is gathered through the page
 * table into shared memory; each 32-lane group owns BM / warps rows, a lane
 * scores one token, the group shares the probabilities by shuffles and each
 * lane accumulates D / 32 output dims.
 */
#ifndef SGL_ATTN_KERNELS_EXTEND_PORTABLE_CUH
#define SGL_ATTN_KERNELS_EXTEND_PORTABLE_CUH

#include "common.cuh"

#define ATTN_PE_THREADS 128
#define ATTN_PE_WARPS (ATTN_PE_THREADS / GC_LANES)
#define ATTN_PE_BM 16
#define ATTN_PE_BN GC_LANES

/* TREE: the instantiation for tree verify batches (p.mask set; cuda_attn);
 * the others carry no mask code. */
template <int DT, int D, bool TREE = false>
__global__ __launch_bounds__(ATTN_PE_THREADS) void attn_extend_portable_kernel(attn_fwd p) {
    constexpr int BM = ATTN_PE_BM, BN = ATTN_PE_BN, RPW = BM / ATTN_PE_WARPS, DPL = D / GC_LANES;
    constexpr int ROW = D + 8; /* 16-byte pad: lanes reading different rows hit different banks */
    static_assert(D % GC_LANES == 0 && DPL >= 2, "dims per lane");
    __shared__ __align__(16) uint16_t qs[BM][ROW];
    __shared__ __align__(16) uint16_t ks[BN][ROW];
    __shared__ __align__(16) uint16_t vs[BN][ROW];
    __shared__ int64_t slots[BN];

    if ((int)blockIdx.y >= *p.num_items) return;
    const attn_extend_item it = p.eitems[blockIdx.y];
    const int head = blockIdx.x, kvh = head / p.group;
    const int lane = gc_lane(), warp = threadIdx.x / GC_LANES;
    /* a launch without a mask has items of ATTN_VIS_ALL (0) and ATTN_VIS_CAUSAL (1) only */
    const int causal = TREE ? it.causal == ATTN_VIS_CAUSAL : it.causal;
    const bool tree = TREE && it.causal == ATTN_VIS_TREE;
    const int window = causal ? p.window : -1;
    const int64_t mbase = TREE && tree ? attn_mask_base(p, it) : 0;
    const int64_t mrow = it.kv_hi - it.kv_lo;

    for (int i = threadIdx.x; i < BM * (D / 8); i += ATTN_PE_THREADS) {
        const int r = i / (D / 8), c = i % (D / 8);
        const int tok = it.q_tok0 + r;
        const bool ok = r < it.nrows && tok < p.num_tokens;
        const uint16_t *src = (const uint16_t *)p.q + (int64_t)(ok ? tok : 0) * p.q_stride_t +
                              (int64_t)head * p.q_stride_h + c * 8;
        gc_cp_async16(&qs[r][c * 8], src, ok);
    }
    gc_cp_async_commit(); /* waited for with the first tile */
    /* KV range of the tile: causal rows never look past the last row. */
    int lo = it.kv_lo, hi = it.kv_hi;
    if (causal && it.q_pos0 + it.nrows < hi) hi = it.q_pos0 + it.nrows;
    if (window >= 0 && it.q_pos0 - window > lo) lo = it.q_pos0 - window;

    float m[RPW], l[RPW], acc[RPW][DPL];
#pragma unroll
    for (int r = 0; r < RPW; r++) {
        m[r] = ATTN_NEG_INF;
        l[r] = 0.f;
#pragma unroll
        for (int e = 0; e < DPL; e++) acc[r][e] = 0.f;
    }
    for (int t0 = lo; t0 < hi; t0 += BN) {
        __syncthreads(); /* previous tile fully used */
        for (int i = threadIdx.x; i < BN; i += ATTN_PE_THREADS)
            slots[i] = t0 + i < hi ? attn_slot(p, it.row, t0 + i) : 0;
        __syncthreads();
        for (int i = threadIdx.x; i < BN * (D / 8); i += ATTN_PE_THREADS) {
            const int r = i / (D / 8), c = i % (D / 8);
            const bool ok = t0 + r < hi;
            gc_cp_async16(&ks[r][c * 8],
                          (const uint16_t *)p.k_cache + slots[r] * p.kc_stride_s + (int64_t)kvh * p.kc_stride_h + c * 8, ok);
            gc_cp_async16(&vs[r][c * 8],
                          (const uint16_t *)p.v_cache + slots[r] * p.vc_stride_s + (int64_t)kvh * p.vc_stride_h + c * 8, ok);
        }
        gc_cp_async_commit();
        gc_cp_async_wait<0>();
        __syncthreads();
        const int col = t0 + lane;
#pragma unroll
        for (int rr = 0; rr < RPW; rr++) {
            const int r = warp * RPW + rr;
            const int qpos = it.q_pos0 + r;
            float dot = 0.f;
#pragma unroll 4
            for (int c = 0; c < D / 8; c++) {
                float qf[8], kf[8];
                gc_unpack8<DT>(*(const uint4 *)&qs[r][c * 8], qf);
                gc_unpack8<DT>(*(const uint4 *)&ks[lane][c * 8], kf);
#pragma unroll
                for (int e = 0; e < 8; e++) dot += qf[e] * kf[e];
            }
            bool vis = col < hi && attn_visible(col, qpos, causal, window);
            if (TREE && tree) /* the mask replaces causality */
                vis = vis && r < it.nrows && p.mask[mbase + r * mrow + col] != 0;
            const float s = vis ? attn_score(p, dot) : ATTN_NEG_INF;
            float mt = s;
#pragma unroll
            for (int o = GC_LANES / 2; o >= 1; o >>= 1) {
                const float x = gc_shfl_xor(mt, o);
                mt = x > mt ? x : mt;
            }
            const float mn = mt > m[rr] ? mt : m[rr];
            const float corr = attn_rescale(m[rr], mn);
            const float pe = attn_exp2_sub(s, mn);
            float ps = pe;
#pragma unroll
            for (int o = GC_LANES / 2; o >= 1; o >>= 1) ps += gc_shfl_xor(ps, o);
            m[rr] = mn;
            l[rr] = l[rr] * corr + ps;
#pragma unroll
            for (int e = 0; e < DPL; e++) acc[rr][e] *= corr;
            for (int j = 0; j < BN; j++) {
                const float pj = gc_shfl(pe, j);
#pragma unroll
                for (int e = 0; e < DPL; e++) acc[rr][e] += pj * gc_to_f32<DT>(vs[j][lane * DPL + e]);
            }
        }
    }
    gc_cp_async_wait<0>(); /* nothing left in flight, even with no tile */
    /* Write the rows this item owns; sinks join the denominator. */
#pragma unroll
    for (int rr = 0; rr < RPW; rr++) {
        const int r = warp * RPW + rr, tok = it.q_tok0 + r;
        if (r >= it.nrows || tok >= p.num_tokens) continue;
        float lsum = l[rr], w = 1.f;
        if (p.sinks) {
            const float sk = p.sinks[head] * ATTN_LOG2E;
            const float mm = m[rr] > sk ? m[rr] : sk;
            w = attn_exp2_sub(m[rr], mm);
            lsum = lsum * w + gc_exp2(sk - mm);
        }
        const float inv = lsum > 0.f ? w / lsum : 0.f;
        uint16_t *o = (uint16_t *)p.out + (int64_t)tok * p.o_stride_t + (int64_t)head * p.o_stride_h + lane * DPL;
#pragma unroll
        for (int e = 0; e < DPL; e++) o[e] = gc_from_f32<DT>(acc[rr][e] * inv);
    }
}

#endif
