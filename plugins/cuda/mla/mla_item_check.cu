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
 * this check).  One block per item or token, striding; reads coalesce along
 * the row.
 */
#include "mla_kern_common.cuh"

#define CHECK_THREADS 256

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
            if (threadIdx.x == 0) sgl_fault_note(a.fault, SGL_FAULT_REQ_POOL_INDICES, b, row, 0, a.r2t_rows);
            bad = 1;
        } else {
            for (int col = lo + (int)threadIdx.x; col < hi; col += CHECK_THREADS) {
                const int64_t c = mla_clamp64(col, 0, a.r2t_cols - 1); /* < cols by the host's length checks */
                const int64_t s = mla_idx(a.req_to_token, row * a.r2t_cols + c);
                if ((uint64_t)s >= (uint64_t)a.num_slots) {
                    if (!bad)
                        sgl_fault_note(a.fault, SGL_FAULT_REQ_TO_TOKEN, row * a.r2t_cols + c, s, 0, a.num_slots);
                    bad = 1;
                }
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
    mla_item_check_kernel<<<(unsigned)grid, CHECK_THREADS, 0, (cudaStream_t)a->stream>>>(*a, simple);
    return (int)cudaGetLastError();
}
