/*
 * mla_item_check.cu - the item check: before the first attention kernel of a
 * planned batch (again for a layer whose pool is smaller than the one
 * checked), every req_pool_indices value and req_to_token entry the plan's
 * work reads is checked whole: the row against req_to_token's rows, the
 * entry against the pool.  A bad one is noted in the fault record (the first
 * wins; the next metadata call reports it) and the work that would read it
 * attends nothing: an mma / wide item gets a key_base below its first key
 * (every row's keys masked: zero output, or a split of weight 0), a simple
 * kernel token gets no keys.  The attention kernels then read only checked
 * values and do no per-load check (their clamps guard a tensor changed after
 * this check).  Blocks stride over the items or tokens, several blocks share
 * a long one's keys; reads coalesce along the row.
 */
#include "mla_kern_common.cuh"

#define CHECK_THREADS 256
#define CHECK_UNROLL 8
#define CHECK_CHUNK (CHECK_THREADS * CHECK_UNROLL)
#define CHECK_TARGET_BLOCKS 4096 /* the launch's grid.y keeps x * y within it */

/* Block y of gridDim.y takes chunks y, y + gridDim.y, ... of CHECK_CHUNK keys
 * of each item, so a long item is read by many blocks at once; each thread
 * issues its CHECK_UNROLL loads of a chunk before it compares any (one memory
 * latency per chunk, not one per key).  Every block that saw a bad value
 * empties the item (the same write). */
__global__ __launch_bounds__(CHECK_THREADS) void mla_item_check_kernel(mla_fwd_args a, int simple) {
    const mla_plan_hdr *h = mla_hdr(a);
    const int n = simple ? h->n_tokens : h->n_items;
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
        int b, lo, hi;
        if (simple) {
            const mla_tok t = mla_toks(a)[i];
            b = t.b, lo = 0, hi = t.n_keys;
        } else {
            const mla_item it = mla_items(a)[i];
            b = it.b, lo = it.kv_begin, hi = it.kv_end;
        }
        const int64_t row = mla_idx(a.req_pool_indices, b);
        int bad = 0;
        if ((uint64_t)row >= (uint64_t)a.r2t_rows) {
            if (threadIdx.x == 0 && blockIdx.y == 0)
                sgl_fault_note(a.fault, SGL_FAULT_REQ_POOL_INDICES, b, row, 0, a.r2t_rows);
            bad = 1;
        } else if (a.req_to_token.n > 0) {
            /* the entries of the row, read whole: the int64 or int32 load is chosen
             * once per item, so a chunk's loads are all in flight together */
            int64_t bad_pos = -1, bad_s = 0; /* this thread's first bad entry, noted once after the loads */
            const int64_t last = a.req_to_token.n - 1;
            const int64_t base = row * a.r2t_cols;
            for (int c0 = lo + (int)blockIdx.y * CHECK_CHUNK; c0 < hi; c0 += (int)gridDim.y * CHECK_CHUNK) {
                int64_t s[CHECK_UNROLL];
                if (a.req_to_token.shift) {
                    const long long *p = (const long long *)a.req_to_token.p;
#pragma unroll
                    for (int k = 0; k < CHECK_UNROLL; k++) {
                        const int col = c0 + k * CHECK_THREADS + (int)threadIdx.x;
                        s[k] = col < hi ? (int64_t)__ldg(p + mla_clamp64(base + col, 0, last)) : 0;
                    }
                } else {
                    const int32_t *p = a.req_to_token.p;
#pragma unroll
                    for (int k = 0; k < CHECK_UNROLL; k++) {
                        const int col = c0 + k * CHECK_THREADS + (int)threadIdx.x;
                        s[k] = col < hi ? (int64_t)__ldg(p + mla_clamp64(base + col, 0, last)) : 0;
                    }
                }
#pragma unroll
                for (int k = 0; k < CHECK_UNROLL; k++) {
                    if ((uint64_t)s[k] >= (uint64_t)a.num_slots && bad_pos < 0) {
                        bad_pos = base + c0 + k * CHECK_THREADS + (int)threadIdx.x;
                        bad_s = s[k];
                    }
                }
            }
            if (bad_pos >= 0) {
                sgl_fault_note(a.fault, SGL_FAULT_REQ_TO_TOKEN, bad_pos, bad_s, 0, a.num_slots);
                bad = 1;
            }
        }
        if (__syncthreads_or(bad) && threadIdx.x == 0) {
            char *plan = (char *)a.plan;
            if (simple) {
                ((mla_tok *)(plan + a.lay.toks))[i].n_keys = 0;
            } else {
                /* row r sees keys < key_base + (row0 + r) / hq + 1 <= lo: none of the item's */
                mla_item *it = (mla_item *)(plan + a.lay.items) + i;
                it->key_base = lo - 1 - (it->row0 + it->nrows - 1) / a.hq;
            }
        }
    }
}

extern "C" int mla_launch_item_check(const mla_fwd_args *a, int simple, int grid) {
    if (grid < 1) return 0;
    /* grid.y: the blocks that share an item's keys, enough for the longest
     * the table allows, within CHECK_TARGET_BLOCKS in all (a block past an
     * item's end exits at once) */
    long long y = ((long long)a->r2t_cols + CHECK_CHUNK - 1) / CHECK_CHUNK;
    if (y > CHECK_TARGET_BLOCKS / grid) y = CHECK_TARGET_BLOCKS / grid;
    if (y < 1) y = 1;
    mla_item_check_kernel<<<dim3((unsigned)grid, (unsigned)y), CHECK_THREADS, 0, (cudaStream_t)a->stream>>>(*a,
                                                                                                          simple);
    return (int)cudaGetLastError();
}
