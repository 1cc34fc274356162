/*
 * extend_fp8_split.cu - the split extend over an fp8 e4m3 pool (SM 9.0,
 * head dim 128; cuda_attn_forward.c runs it, docs/cuda.md says when): its
 * plan kernel and its LSE merge.
 *
 * The extend of request b (prefix columns [enc, enc + len - ext), new tokens
 * after them) becomes two attentions and a merge:
 *   new    its ext new tokens, causal, over the rows the fp8 save wrote
 *          dequantised (save_kv_fp8.cu: the values the pool now holds, in the
 *          16-bit dtype) by the ragged wgmma kernel: items of block_new rows
 *          whose `row` is the request's first token (key column c is row
 *          row + c), q_pos0 the tile's offset, kv [0, ext), causal;
 *   prefix its q rows over the prefix columns of its table row, every column
 *          visible, by the fp8 mma extend: items of block_pre rows, kv [enc,
 *          enc + len - ext); a request without a prefix gets none;
 *   merge  per prefix item, its rows' two normalised outputs and LSEs (natural
 *          log) -> one softmax over both: out = (o_n e^(l_n - m) + o_p e^(l_p -
 *          m)) / (e^(l_n - m) + e^(l_p - m)), lse = m + ln(the sum).
 * Rows without a prefix keep what the new-token pass wrote.  Both lists are
 * ordered longest-first by a counting sort, as the paged plan's.  A request
 * whose indices are out of range (plan_req_get notes it) gets new-token items
 * that attend nothing (zero rows) and no prefix items.
 */
#include "attn_kernels/common.cuh"
#include "attn_kernels/plan_math.h"
#include "cuda_launch.h"
/* plan.cuh's request reader and block scan; its kernels (portable.cu's) get
 * internal linkage here, so the two objects define no symbol twice */
namespace {
#include "attn_kernels/plan.cuh"
}

#define SP_BUCKETS 256

/* Request b as the split sees it: its first token, new tokens, prefix. */
struct sp_req {
    int row, ext, enc, pre, ok;
};

GC_DEV sp_req sp_get(const attn_plan_in &in, int b) {
    const plan_req q = plan_req_get(in, b, true);
    sp_req r;
    r.row = q.row;
    r.ext = q.ext;
    r.enc = q.enc;
    r.pre = q.ok ? q.len - q.ext : 0;
    r.ok = q.ok;
    return r;
}

/* KV tiles of item `tile` of request r in list `pre` (0 new, 1 prefix). */
GC_DEV int sp_cost(const attn_split_plan &pl, const sp_req &r, int pre, int tile) {
    if (pre) return (r.pre + pl.block_n - 1) / pl.block_n;
    if (!r.ok) return 0;
    const int rows = r.ext - tile * pl.block_new < pl.block_new ? r.ext - tile * pl.block_new : pl.block_new;
    return (tile * pl.block_new + rows + pl.block_n - 1) / pl.block_n;
}
GC_DEV int sp_tiles(const attn_split_plan &pl, const sp_req &r, int pre) {
    if (pre) return r.pre > 0 ? (r.ext + pl.block_pre - 1) / pl.block_pre : 0;
    return (r.ext + pl.block_new - 1) / pl.block_new;
}

__global__ __launch_bounds__(ATTN_PLAN_THREADS) void attn_split_plan_kernel(attn_plan_in in, attn_split_plan pl) {
    __shared__ int tmp[ATTN_PLAN_THREADS];
    __shared__ int hist[2][SP_BUCKETS];
    __shared__ int maxcost_s[2], total_s[2], carry_q;
    const int t = threadIdx.x;
    for (int i = t; i < 2 * SP_BUCKETS; i += ATTN_PLAN_THREADS) hist[i / SP_BUCKETS][i % SP_BUCKETS] = 0;
    if (t < 2) maxcost_s[t] = 1;
    if (t == 0) carry_q = 0;
    __syncthreads();
    for (int b = t; b < in.bs; b += ATTN_PLAN_THREADS) {
        const sp_req r = sp_get(in, b);
        for (int l = 0; l < 2; l++) {
            const int n = sp_tiles(pl, r, l);
            if (n > 0) atomicMax(&maxcost_s[l], sp_cost(pl, r, l, n - 1)); /* the last tile costs the most */
        }
    }
    __syncthreads();
    /* bucket 0 = most expensive */
#define SP_BUCKET(l, c) ((SP_BUCKETS - 1) - (int)(((long long)(c) * (SP_BUCKETS - 1)) / maxcost_s[l]))
    for (int b = t; b < in.bs; b += ATTN_PLAN_THREADS) {
        const sp_req r = sp_get(in, b);
        for (int l = 0; l < 2; l++) {
            const int n = sp_tiles(pl, r, l);
            for (int k = 0; k < n; k++) atomicAdd(&hist[l][SP_BUCKET(l, sp_cost(pl, r, l, k))], 1);
        }
    }
    __syncthreads();
    if (t < 2) { /* exclusive scan: each bucket's first slot */
        int run = 0;
        for (int i = 0; i < SP_BUCKETS; i++) {
            const int c = hist[t][i];
            hist[t][i] = run;
            run += c;
        }
        total_s[t] = run;
    }
    __syncthreads();
    /* the scatter; q token offsets are the scan of the extend lengths */
    for (int b0 = 0; b0 < in.bs; b0 += ATTN_PLAN_THREADS) {
        const int b = b0 + t;
        sp_req r;
        r.row = r.ext = r.enc = r.pre = r.ok = 0;
        if (b < in.bs) r = sp_get(in, b);
        const int qoff = plan_block_scan<int>(r.ext, tmp, &carry_q);
        for (int l = 0; l < 2; l++) {
            const int n = b < in.bs ? sp_tiles(pl, r, l) : 0;
            const int bm = l ? pl.block_pre : pl.block_new;
            for (int k = 0; k < n; k++) {
                const int slot = atomicAdd(&hist[l][SP_BUCKET(l, sp_cost(pl, r, l, k))], 1);
                if (slot >= (l ? pl.max_pre : pl.max_new)) continue; /* never: the host sizes the lists */
                attn_extend_item it;
                it.b = b;
                it.q_tok0 = qoff + k * bm;
                it.nrows = r.ext - k * bm < bm ? r.ext - k * bm : bm;
                if (l) {
                    it.row = r.row;
                    it.q_pos0 = r.enc + r.pre + k * bm;
                    it.kv_lo = r.enc;
                    it.kv_hi = r.enc + r.pre;
                    it.causal = ATTN_VIS_ALL;
                    pl.pre[slot] = it;
                } else {
                    it.row = qoff;
                    it.q_pos0 = k * bm;
                    it.kv_lo = 0;
                    it.kv_hi = r.ok ? r.ext : 0;
                    it.causal = ATTN_VIS_CAUSAL;
                    pl.fresh[slot] = it;
                }
            }
        }
    }
#undef SP_BUCKET
    __syncthreads();
    if (t == 0) {
        pl.num[0] = total_s[0] < pl.max_new ? total_s[0] : pl.max_new;
        pl.num[1] = total_s[1] < pl.max_pre ? total_s[1] : pl.max_pre;
    }
}

extern "C" int attn_launch_split_plan(const attn_plan_in *in, const attn_split_plan *pl, void *stream) {
    attn_split_plan_kernel<<<1, ATTN_PLAN_THREADS, 0, (cudaStream_t)stream>>>(*in, *pl);
    return (int)cudaGetLastError();
}

/* The merge: block (item, head group) of 256 threads, one warp per (row,
 * head) pair at a time, 4 values per lane (D = 128).  out / lse hold the new
 * tokens' part and take the result; part / part_lse the prefix's. */
#define SM_THREADS 256
template <int DT>
__global__ __launch_bounds__(SM_THREADS) void attn_split_merge_kernel(attn_split_merge m) {
    if ((int)blockIdx.x >= *m.num_items) return;
    const attn_extend_item it = m.items[blockIdx.x];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int pairs = it.nrows * m.hq;
    for (int i = warp; i < pairs; i += SM_THREADS / 32) {
        const int tok = it.q_tok0 + i / m.hq, h = i % m.hq;
        if (tok >= m.num_tokens) continue;
        float *lp = m.lse + (int64_t)tok * m.hq + h;
        const float ln = *lp, lpre = m.part_lse[(int64_t)tok * m.hq + h];
        if (lpre == ATTN_NEG_INF) continue; /* the prefix saw nothing (an emptied item): out stands */
        const float mx = ln > lpre ? ln : lpre;
        const float wn = ln == ATTN_NEG_INF ? 0.f : expf(ln - mx), wp = expf(lpre - mx);
        const float inv = 1.f / (wn + wp);
        uint16_t *o = (uint16_t *)m.out + (int64_t)tok * m.o_stride_t + (int64_t)h * m.o_stride_h + lane * 4;
        const uint16_t *q = (const uint16_t *)m.part + ((int64_t)tok * m.hq + h) * 128 + lane * 4;
        const uint2 a = *(const uint2 *)o, c = *(const uint2 *)q;
        const uint32_t aw[2] = {a.x, a.y}, cw[2] = {c.x, c.y};
        uint32_t r[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const float lo = (gc_to_f32<DT>((uint16_t)(aw[j] & 0xffffu)) * wn +
                              gc_to_f32<DT>((uint16_t)(cw[j] & 0xffffu)) * wp) * inv;
            const float hi = (gc_to_f32<DT>((uint16_t)(aw[j] >> 16)) * wn + gc_to_f32<DT>((uint16_t)(cw[j] >> 16)) * wp) *
                             inv;
            r[j] = (uint32_t)gc_from_f32<DT>(lo) | (uint32_t)gc_from_f32<DT>(hi) << 16;
        }
        *(uint2 *)o = make_uint2(r[0], r[1]);
        __syncwarp();
        if (lane == 0) *lp = mx + logf(wn + wp);
    }
}

extern "C" int attn_launch_split_merge(int dtype, const attn_split_merge *m, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    if (dtype == ATTN_DT_BF16)
        attn_split_merge_kernel<GC_BF16><<<grid_items, SM_THREADS, 0, (cudaStream_t)stream>>>(*m);
    else
        attn_split_merge_kernel<GC_F16><<<grid_items, SM_THREADS, 0, (cudaStream_t)stream>>>(*m);
    return (int)cudaGetLastError();
}
