/*
 * ragged_plan.cu - forward_ragged's plan kernel: one block turns
 * cu_seqlens_q / cu_seqlens_k (device tensors; the host needs no copy of
 * them) into the extend kernels' work items (attn_extend_item), so the
 * ragged call runs on the extend kernels with their RAGGED template flag.
 *
 * Request i owns q rows cu_q[i]..cu_q[i+1]-1 and key rows cu_k[i]..; its
 * items are its q tiles of block_m rows: row = cu_k[i] (the kernels read key
 * column c at row `row` + c), q_pos0 = (causal ? lk - lq : 0) + tile
 * offset (bottom-right: a query before key 0 sees none), kv [0, lk), causal.
 * Ordered longest-first (most KV tiles first) by a counting sort, as the
 * paged extend plan, so the causal tail does not idle the GPU.
 *
 * Offsets are checked whole against the tensors' rows: an offset outside
 * [0, rows] or below the one before is noted in the fault record and its
 * request gets no items (its output rows are not written; the next call
 * fails with the fault).
 */
#include "attn_kernels/common.cuh"
#include "cuda_launch.h"

#define RP_THREADS 1024
#define RP_BUCKETS 256

/* Request b's rows and lengths; ok = 0 when an offset is out of range. */
struct rp_req {
    int64_t q0, k0;
    int lq, lk, ok;
};

GC_DEV bool rp_bad(const attn_ragged_plan &pl, int tensor, int64_t pos, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v < hi) return false;
    sgl_fault_note(pl.fault, tensor, pos, v, lo, hi);
    return true;
}

GC_DEV rp_req rp_get(const attn_ragged_plan &pl, int b) {
    rp_req r;
    const int64_t q0 = attn_idx(pl.cu_q, b), q1 = attn_idx(pl.cu_q, b + 1);
    const int64_t k0 = attn_idx(pl.cu_k, b), k1 = attn_idx(pl.cu_k, b + 1);
    const bool bad = rp_bad(pl, SGL_FAULT_CU_SEQLENS_Q, b, q0, 0, (int64_t)pl.tq + 1) ||
                     rp_bad(pl, SGL_FAULT_CU_SEQLENS_Q, b + 1, q1, q0, (int64_t)pl.tq + 1) ||
                     rp_bad(pl, SGL_FAULT_CU_SEQLENS_K, b, k0, 0, (int64_t)pl.tk + 1) ||
                     rp_bad(pl, SGL_FAULT_CU_SEQLENS_K, b + 1, k1, k0, (int64_t)pl.tk + 1);
    r.ok = !bad;
    r.q0 = bad ? 0 : q0;
    r.k0 = bad ? 0 : k0;
    r.lq = bad ? 0 : (int)(q1 - q0);
    r.lk = bad ? 0 : (int)(k1 - k0);
    return r;
}

/* KV tiles item `tile` of request r visits. */
GC_DEV int rp_cost(const attn_ragged_plan &pl, const rp_req &r, int tile) {
    int hi = r.lk;
    if (pl.causal) {
        const int rows = r.lq - tile * pl.block_m < pl.block_m ? r.lq - tile * pl.block_m : pl.block_m;
        const int last = r.lk - r.lq + tile * pl.block_m + rows; /* past the tile's last query */
        hi = last < hi ? last : hi;
    }
    return hi <= 0 ? 0 : (hi + pl.block_n - 1) / pl.block_n;
}

__global__ __launch_bounds__(RP_THREADS) void attn_ragged_plan_kernel(attn_ragged_plan pl) {
    __shared__ int hist[RP_BUCKETS];
    __shared__ int maxcost_s, total_s;
    const int t = threadIdx.x;
    for (int i = t; i < RP_BUCKETS; i += RP_THREADS) hist[i] = 0;
    if (t == 0) maxcost_s = 1;
    __syncthreads();
    for (int b = t; b < pl.bs; b += RP_THREADS) {
        const rp_req r = rp_get(pl, b);
        const int tiles = (r.lq + pl.block_m - 1) / pl.block_m;
        if (tiles > 0) atomicMax(&maxcost_s, rp_cost(pl, r, tiles - 1)); /* the last tile sees the most */
        if (!pl.causal && tiles > 0) atomicMax(&maxcost_s, rp_cost(pl, r, 0));
    }
    __syncthreads();
    const int maxcost = maxcost_s;
    /* bucket 0 = most expensive */
#define RP_BUCKET(c) ((RP_BUCKETS - 1) - (int)(((long long)(c) * (RP_BUCKETS - 1)) / maxcost))
    for (int b = t; b < pl.bs; b += RP_THREADS) {
        const rp_req r = rp_get(pl, b);
        const int tiles = (r.lq + pl.block_m - 1) / pl.block_m;
        for (int k = 0; k < tiles; k++) atomicAdd(&hist[RP_BUCKET(rp_cost(pl, r, k))], 1);
    }
    __syncthreads();
    if (t == 0) { /* exclusive scan: each bucket's first slot */
        int run = 0;
        for (int i = 0; i < RP_BUCKETS; i++) {
            const int c = hist[i];
            hist[i] = run;
            run += c;
        }
        total_s = run;
    }
    __syncthreads();
    for (int b = t; b < pl.bs; b += RP_THREADS) {
        const rp_req r = rp_get(pl, b);
        const int tiles = (r.lq + pl.block_m - 1) / pl.block_m;
        for (int k = 0; k < tiles; k++) {
            const int slot = atomicAdd(&hist[RP_BUCKET(rp_cost(pl, r, k))], 1);
            if (slot >= pl.max_items) continue; /* never: the host bounds the items */
            attn_extend_item it;
            it.b = b;
            it.row = (int32_t)r.k0;
            it.q_tok0 = (int32_t)r.q0 + k * pl.block_m;
            it.nrows = r.lq - k * pl.block_m < pl.block_m ? r.lq - k * pl.block_m : pl.block_m;
            it.q_pos0 = (pl.causal ? r.lk - r.lq : 0) + k * pl.block_m;
            it.kv_lo = 0;
            it.kv_hi = r.lk;
            it.causal = pl.causal ? ATTN_VIS_CAUSAL : ATTN_VIS_ALL;
            pl.items[slot] = it;
        }
    }
#undef RP_BUCKET
    __syncthreads();
    if (t == 0) *pl.num_items = total_s < pl.max_items ? total_s : pl.max_items;
}

extern "C" int attn_launch_ragged_plan(const attn_ragged_plan *pl, void *stream) {
    attn_ragged_plan_kernel<<<1, RP_THREADS, 0, (cudaStream_t)stream>>>(*pl);
    return (int)cudaGetLastError();
}
