/*
 * plan.cuh - the plan kernels: one block turns the batch's device
 * tensors into work lists, so that planning needs no host copy and a
 * captured graph replays whatever the replay hook planned.  Portable.
 *
 * Decode: split-KV.  The split size is chosen from the total KV length so the
 * items (times the kv-head blocks) fill the GPU:
 *     chunk = roundup(max(min_chunk, ceil(total / target_items)), align)
 * then request i gets n_i = max(1, floor(len_i / chunk)) splits of equal
 * length split_i = roundup(ceil(len_i / n_i), align) (the last one shorter).
 * Bounds: sum n_i over split requests <= total / chunk <= target_items, so
 * the items stay <= target_items + bs and the partial slots <= target_items
 * (<= 2 * target_items + 2, what the host sizes); ceil(len_i / split_i) <= n_i
 * keeps them there.  The host sizes the buffers and the grid from these.
 * With split_ceil (the wave rule's aim, plan_math.h) n_i = ceil(len_i /
 * chunk): the items stay <= total / chunk + bs <= target_items + bs, and a
 * split request's n_i < 2 len_i / chunk keeps the partial slots < 2 *
 * target_items.
 *
 * Extend: one item per (request, q tile), ordered longest-first (most KV
 * tiles first) by a counting sort, so the causal tail does not idle the GPU.
 */
#ifndef SGL_ATTN_KERNELS_PLAN_CUH
#define SGL_ATTN_KERNELS_PLAN_CUH

#include "plan_math.h"
#include "common.cuh"

#define ATTN_PLAN_THREADS 1024
#define ATTN_PLAN_BUCKETS 1024

/* Exclusive scan of one value per thread across the block; returns this
 * thread's offset and adds the block total to *carry (all threads). */
template <typename T>
GC_DEV T plan_block_scan(T v, T *tmp, T *carry) {
    const int t = threadIdx.x;
    tmp[t] = v;
    __syncthreads();
    for (int off = 1; off < ATTN_PLAN_THREADS; off <<= 1) {
        T add = t >= off ? tmp[t - off] : (T)0;
        __syncthreads();
        tmp[t] += add;
        __syncthreads();
    }
    T incl = tmp[t];
    T total = tmp[ATTN_PLAN_THREADS - 1];
    T base = *carry;
    __syncthreads();
    if (t == 0) *carry = base + total;
    __syncthreads();
    return base + incl - v;
}

template <typename T> GC_DEV T plan_block_sum(T v, T *tmp) {
    T c = 0;
    __shared__ T carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    (void)plan_block_scan<T>(v, tmp, &carry);
    c = carry;
    __syncthreads();
    return c;
}

/* Request b's row and lengths, checked: a request row outside req_to_token,
 * an encoder length outside [0, columns], a seq_len outside [0, columns -
 * enc], an extend length outside [0, seq_len] is noted and the request
 * attends nothing (ok = 0: zero output rows; an extend length above the
 * columns gives the request no q rows, so the rows of the requests after it
 * shift: the batch's output is not valid, and the next metadata call fails). */
struct plan_req {
    int row, enc, len, ext, ok;
};
/* The first value out of range of a request (tensor 0: none), noted once at
 * the end: one note site keeps the plan kernels' frames off local memory. */
struct plan_fault {
    int tensor, pos_add; /* the element: request b + pos_add */
    int64_t v, lo, hi;
};
GC_DEV bool plan_out(plan_fault &f, int tensor, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v < hi) return false;
    if (!f.tensor) f.tensor = tensor, f.v = v, f.lo = lo, f.hi = hi;
    return true;
}
GC_DEV plan_req plan_req_get(const attn_plan_in &in, int b, bool extend, bool tree = false) {
    plan_req r;
    r.row = 0;
    r.enc = r.len = r.ext = 0;
    r.ok = 0;
    plan_fault f;
    f.tensor = f.pos_add = 0;
    f.v = f.lo = f.hi = 0;
    int64_t row = attn_idx(in.req_pool_indices, b);
    if (!in.req_pool_indices.p) row = b; /* a page table: row b */
    const int64_t enc = in.encoder_lens.p ? attn_idx(in.encoder_lens, b) : 0;
    const int64_t len = attn_idx(in.seq_lens, b);
    /* verify plans as an extend of tokens_per_req new tokens per request */
    const int64_t ext = !extend ? 0 : in.extend_seq_lens.p ? attn_idx(in.extend_seq_lens, b) : in.ext_uniform;
    const bool ext_ok = !extend || !plan_out(f, SGL_FAULT_EXTEND_SEQ_LENS, ext, 0, (int64_t)in.max_ctx + 1);
    if (ext_ok) r.ext = (int)ext;
    const bool bad = plan_out(f, SGL_FAULT_REQ_POOL_INDICES, row, 0, in.max_reqs) ||
                     plan_out(f, SGL_FAULT_ENCODER_LENS, enc, 0, (int64_t)in.max_ctx + 1) ||
                     plan_out(f, SGL_FAULT_SEQ_LENS, len, 0, (int64_t)in.max_ctx - enc + 1) || !ext_ok ||
                     (extend && plan_out(f, SGL_FAULT_EXTEND_SEQ_LENS, ext, 0, len + 1));
    /* tree verify: the request's mask block, [mask_indptr[b], mask_indptr[b + 1]), is exactly
     * new tokens x seq_len bytes inside custom_mask (a start outside, else the end) */
    bool bad_mask = false;
    if (tree && !bad) {
        const int64_t a = attn_idx(in.mask_indptr, b), e = attn_idx(in.mask_indptr, b + 1);
        const int64_t need = ext * len;
        bad_mask = plan_out(f, SGL_FAULT_MASK_INDPTR, a, 0, in.mask_len + 1);
        if (!bad_mask && plan_out(f, SGL_FAULT_MASK_INDPTR, e, a + need, a + need + 1 > in.mask_len + 1 ? a + need : a + need + 1)) {
            bad_mask = true;
            f.pos_add = 1;
        }
    }
    if (f.tensor) sgl_fault_note(in.fault, f.tensor, b + f.pos_add, f.v, f.lo, f.hi);
    if (bad || bad_mask) return r;
    r.row = (int)row;
    r.enc = (int)enc;
    r.len = (int)len;
    r.ok = 1;
    return r;
}

/* The KV columns request b attends in decode, and its query's column. */
struct plan_decode_range {
    int row, lo, hi, qpos;
};
GC_DEV plan_decode_range plan_decode_req(const attn_plan_in &in, const attn_decode_plan &pl, int b) {
    plan_decode_range r;
    const plan_req q = plan_req_get(in, b, false);
    const int enc = q.enc, len = q.len;
    r.row = q.row;
    if (!q.ok) {
        r.lo = r.hi = 0;
        r.qpos = 0;
    } else if (pl.cross) {
        r.lo = 0;
        r.hi = enc;
        r.qpos = 0x7fffffff;
    } else {
        r.lo = enc + (pl.window >= 0 && len - 1 - pl.window > 0 ? len - 1 - pl.window : 0);
        r.hi = enc + len;
        r.qpos = enc + len - 1;
    }
    return r;
}

__global__ __launch_bounds__(ATTN_PLAN_THREADS) void attn_plan_decode_kernel(attn_plan_in in,
                                                                            attn_decode_plan pl) {
    __shared__ long long tmp64[ATTN_PLAN_THREADS];
    __shared__ int tmp32[ATTN_PLAN_THREADS];
    __shared__ int carry_items, carry_parts;
    const int t = threadIdx.x;

    long long local = 0;
    for (int b = t; b < in.bs; b += ATTN_PLAN_THREADS) {
        plan_decode_range r = plan_decode_req(in, pl, b);
        local += r.hi - r.lo;
    }
    const long long total = plan_block_sum<long long>(local, tmp64);
    const long long chunk = attn_plan_chunk(total, pl.target_items, pl.min_chunk, pl.chunk_align);

    if (t == 0) carry_items = carry_parts = 0;
    __syncthreads();
    for (int b0 = 0; b0 < in.bs; b0 += ATTN_PLAN_THREADS) {
        const int b = b0 + t;
        plan_decode_range r;
        int n = 0, parts = 0;
        long long split = chunk;
        if (b < in.bs) {
            r = plan_decode_req(in, pl, b);
            const int len = r.hi - r.lo;
            /* ceil: a request of the mean length takes the wave rule's n, where
             * floor could give n - 1 after the chunk's rounding up */
            n = pl.split_ceil ? attn_plan_nsplit(len, chunk) : attn_plan_nsplit_fit(len, chunk);
            split = attn_plan_split_len(len, n, pl.chunk_align);
            n = attn_plan_nsplit(len, split); /* <= the fit count */
            parts = n > 1 ? n : 0;
        }
        const int off = plan_block_scan<int>(n, tmp32, &carry_items);
        const int poff = plan_block_scan<int>(parts, tmp32, &carry_parts);
        for (int s = 0; s < n; s++) {
            if (off + s >= pl.max_items) break;           /* never, by the bound */
            if (n > 1 && poff + s >= pl.max_parts) break; /* never, by the bound */
            attn_decode_item it;
            it.b = b;
            it.row = r.row;
            it.kv_begin = (int)(r.lo + s * split < r.hi ? r.lo + s * split : r.hi);
            it.kv_end = (int)(r.lo + (s + 1) * split < r.hi ? r.lo + (s + 1) * split : r.hi);
            it.split = s;
            it.nsplit = n;
            it.part = n > 1 ? poff + s : -1;
            it.q_pos = r.qpos;
            pl.items[off + s] = it;
        }
    }
    for (int i = t; i < in.bs * pl.counters_per_req; i += ATTN_PLAN_THREADS) pl.counters[i] = 0;
    __syncthreads();
    if (t == 0) *pl.num_items = carry_items < pl.max_items ? carry_items : pl.max_items;
}

/* Request b in extend: where its q rows are, what it attends (nothing when
 * its indices or its tree mask block are out of range: plan_req_get). */
struct plan_extend_req {
    int row, ext, q_pos0, kv_lo, kv_hi, vis;
};
GC_DEV plan_extend_req plan_extend_get(const attn_plan_in &in, const attn_extend_plan &pl, int b) {
    plan_extend_req r;
    const plan_req q = plan_req_get(in, b, true, !pl.cross && pl.self_vis == ATTN_SELF_TREE);
    r.row = q.row;
    r.ext = q.ext;
    r.vis = pl.cross || pl.self_vis == ATTN_SELF_ALL || pl.self_vis == ATTN_SELF_NEW_ONLY ? ATTN_VIS_ALL
            : pl.self_vis == ATTN_SELF_TREE                                                ? ATTN_VIS_TREE
                                                                                           : ATTN_VIS_CAUSAL;
    if (!q.ok) {
        r.q_pos0 = r.kv_lo = r.kv_hi = 0;
        return r;
    }
    const int enc = q.enc, len = q.len;
    r.q_pos0 = enc + len - r.ext;
    if (pl.cross) {
        r.kv_lo = 0;
        r.kv_hi = enc;
    } else if (pl.self_vis == ATTN_SELF_NEW_ONLY) {
        r.kv_lo = r.q_pos0; /* the new tokens only; the row is set by the scatter */
        r.kv_hi = enc + len;
    } else {
        r.kv_lo = enc;
        r.kv_hi = enc + len;
    }
    return r;
}

/* KV tiles a (request, q tile) item visits: its cost for the ordering. */
GC_DEV int plan_extend_cost(const plan_extend_req &r, int tile, const attn_extend_plan &pl) {
    int rows = r.ext - tile * pl.block_m;
    if (rows > pl.block_m) rows = pl.block_m;
    int hi = r.kv_hi;
    if (r.vis == ATTN_VIS_CAUSAL && r.q_pos0 + tile * pl.block_m + rows < hi) hi = r.q_pos0 + tile * pl.block_m + rows;
    int cols = hi - r.kv_lo;
    return cols <= 0 ? 0 : (cols + pl.block_n - 1) / pl.block_n;
}

__global__ __launch_bounds__(ATTN_PLAN_THREADS) void attn_plan_extend_kernel(attn_plan_in in,
                                                                            attn_extend_plan pl) {
    __shared__ int tmp[ATTN_PLAN_THREADS];
    __shared__ int hist[ATTN_PLAN_BUCKETS];
    __shared__ int carry_q, carry_b, maxcost_s;
    const int t = threadIdx.x;
    for (int i = t; i < ATTN_PLAN_BUCKETS; i += ATTN_PLAN_THREADS) hist[i] = 0;
    if (t == 0) maxcost_s = 1;
    __syncthreads();

    /* Pass 1: the largest cost (the first tile-cost bound for the buckets). */
    for (int b = t; b < in.bs; b += ATTN_PLAN_THREADS) {
        plan_extend_req r = plan_extend_get(in, pl, b);
        int tiles = (r.ext + pl.block_m - 1) / pl.block_m;
        for (int k = 0; k < tiles; k++) atomicMax(&maxcost_s, plan_extend_cost(r, k, pl));
    }
    __syncthreads();
    const int maxcost = maxcost_s;
    /* bucket 0 = most expensive */
#define PLAN_BUCKET(c) ((ATTN_PLAN_BUCKETS - 1) - (int)(((long long)(c) * (ATTN_PLAN_BUCKETS - 1)) / maxcost))
    for (int b = t; b < in.bs; b += ATTN_PLAN_THREADS) {
        plan_extend_req r = plan_extend_get(in, pl, b);
        int tiles = (r.ext + pl.block_m - 1) / pl.block_m;
        for (int k = 0; k < tiles; k++) atomicAdd(&hist[PLAN_BUCKET(plan_extend_cost(r, k, pl))], 1);
    }
    __syncthreads();
    /* Exclusive scan of the histogram: each bucket's first slot. */
    if (t == 0) carry_b = 0;
    __syncthreads();
    for (int i0 = 0; i0 < ATTN_PLAN_BUCKETS; i0 += ATTN_PLAN_THREADS) {
        int v = i0 + t < ATTN_PLAN_BUCKETS ? hist[i0 + t] : 0;
        int off = plan_block_scan<int>(v, tmp, &carry_b);
        if (i0 + t < ATTN_PLAN_BUCKETS) hist[i0 + t] = off;
    }
    __syncthreads();
    /* Pass 2: scatter; q token offsets are the scan of the extend lengths. */
    if (t == 0) carry_q = 0;
    __syncthreads();
    for (int b0 = 0; b0 < in.bs; b0 += ATTN_PLAN_THREADS) {
        const int b = b0 + t;
        plan_extend_req r;
        int ext = 0;
        if (b < in.bs) {
            r = plan_extend_get(in, pl, b);
            ext = r.ext;
        }
        const int qoff = plan_block_scan<int>(ext, tmp, &carry_q);
        const int tiles = (ext + pl.block_m - 1) / pl.block_m;
        for (int k = 0; k < tiles; k++) {
            int slot = atomicAdd(&hist[PLAN_BUCKET(plan_extend_cost(r, k, pl))], 1);
            if (slot >= pl.max_items) continue; /* never, by the bound */
            attn_extend_item it;
            it.b = b;
            /* encoder-only: row + column = the token's row in the call's k / v */
            it.row = pl.self_vis == ATTN_SELF_NEW_ONLY && !pl.cross ? qoff - r.q_pos0 : r.row;
            it.q_tok0 = qoff + k * pl.block_m;
            it.nrows = ext - k * pl.block_m < pl.block_m ? ext - k * pl.block_m : pl.block_m;
            it.q_pos0 = r.q_pos0 + k * pl.block_m;
            it.kv_lo = r.kv_lo;
            it.kv_hi = r.kv_hi;
            it.causal = r.vis;
            pl.items[slot] = it;
        }
    }
#undef PLAN_BUCKET
    __syncthreads();
    if (t == 0) {
        int n = carry_b;
        *pl.num_items = n < pl.max_items ? n : pl.max_items;
    }
}

/* The item check (attn_params.h: attn_check): block-stride over the items of
 * list blockIdx.y; each item's table entries (decode: columns [kv_begin,
 * kv_end); extend: [kv_lo, kv_hi), causal items only up to their last q
 * row's column) are cut in chunks of ATTN_CHECK_CHUNK columns, and block z
 * of gridDim.z takes chunks z, z + gridDim.z, ... of each item, so a long
 * item is read by many blocks at once.  Each thread issues its
 * ATTN_CHECK_UNROLL loads of a chunk before it compares any (one memory
 * latency per chunk, not one per column; a slot map's loads, a second round),
 * coalesced along the row.  Every entry is checked whole: a req_to_token
 * entry against the pool, a page-table page so that its column's slot lies
 * in the pool (with a slot map: in the map, and the map's entry in the
 * pool); an item with an entry outside is noted and emptied (no columns:
 * zero output, or an empty split that the combine weighs 0) by every block
 * that saw the bad entry (the same write), so no attention kernel reads an
 * unchecked entry of a planned batch.  A block that reads an item another
 * block has already emptied checks nothing more of it: the item is out
 * either way.  A page table's entries are read once per column, as
 * req_to_token's (the columns of a page hit the same word in cache). */
#define ATTN_CHECK_THREADS 256
#define ATTN_CHECK_UNROLL 8
#define ATTN_CHECK_CHUNK (ATTN_CHECK_THREADS * ATTN_CHECK_UNROLL)
#define ATTN_CHECK_TARGET_BLOCKS 4096 /* the launch's grid.z keeps x * y * z within it */
__global__ __launch_bounds__(ATTN_CHECK_THREADS) void attn_check_items_kernel(attn_check c) {
    const int set = blockIdx.y; /* selected, not indexed: an indexed param array goes to local memory */
    void *const items = set == 0 ? c.items[0] : set == 1 ? c.items[1] : c.items[2];
    const int n = *(set == 0 ? c.num_items[0] : set == 1 ? c.num_items[1] : c.num_items[2]);
    const int sh = c.page_shift, mask = (1 << sh) - 1;
    /* the slots the table's columns may name: the map's entries, or the pool's */
    const int64_t lim = c.slot_map.p ? (int64_t)c.slot_map.n : c.num_slots;
    for (int i = blockIdx.x; i < n && i < c.max_items; i += gridDim.x) {
        int row, lo, hi;
        if (c.extend) {
            const attn_extend_item it = ((const attn_extend_item *)items)[i];
            row = it.row, lo = it.kv_lo, hi = it.kv_hi;
            if (it.causal == ATTN_VIS_CAUSAL && it.q_pos0 + it.nrows < hi) hi = it.q_pos0 + it.nrows;
        } else {
            const attn_decode_item it = ((const attn_decode_item *)items)[i];
            row = it.row, lo = it.kv_begin, hi = it.kv_end;
        }
        const int64_t base = (int64_t)row * c.r2t_row_words;
        int bad_t = 0; /* this thread's first fault (tensor, position, value, range end), noted after the loads */
        int64_t bad_pos = 0, bad_v = 0, bad_hi = 0;
        for (int c0 = lo + (int)blockIdx.z * ATTN_CHECK_CHUNK; c0 < hi; c0 += (int)gridDim.z * ATTN_CHECK_CHUNK) {
            int64_t s[ATTN_CHECK_UNROLL];
            if (c.req_to_token.shift) { /* chosen once per chunk: the chunk's loads are all in flight together */
                const long long *p = (const long long *)c.req_to_token.p + (base >> 1);
#pragma unroll
                for (int k = 0; k < ATTN_CHECK_UNROLL; k++) {
                    const int col = c0 + k * ATTN_CHECK_THREADS + (int)threadIdx.x;
                    s[k] = col < hi ? (int64_t)__ldg(p + (col >> sh)) : 0;
                }
            } else {
                const int32_t *p = c.req_to_token.p + base;
#pragma unroll
                for (int k = 0; k < ATTN_CHECK_UNROLL; k++) {
                    const int col = c0 + k * ATTN_CHECK_THREADS + (int)threadIdx.x;
                    s[k] = col < hi ? (int64_t)__ldg(p + (col >> sh)) : 0;
                }
            }
            /* entry -> slot: page e holds columns' slots e << sh + (col & mask),
             * all below lim iff e <= (lim - 1 - off) >> sh (req_to_token: sh 0) */
            bool in[ATTN_CHECK_UNROLL];
#pragma unroll
            for (int k = 0; k < ATTN_CHECK_UNROLL; k++) {
                const int col = c0 + k * ATTN_CHECK_THREADS + (int)threadIdx.x;
                const int64_t top = lim - 1 - (col & mask);
                in[k] = col >= hi || (top >= 0 && s[k] >= 0 && s[k] <= (top >> sh));
                if (!in[k] && !bad_t) {
                    bad_t = sh ? SGL_FAULT_PAGE_TABLE : SGL_FAULT_REQ_TO_TOKEN;
                    bad_pos = sh ? (int64_t)row * (c.r2t_row_words >> c.req_to_token.shift) + (col >> sh)
                                 : (int64_t)row * c.max_ctx + col;
                    bad_v = s[k];
                    bad_hi = top < 0 ? 0 : (top >> sh) + 1;
                }
                s[k] = col < hi && in[k] ? (s[k] << sh) + (col & mask) : -1;
            }
            if (c.slot_map.p) { /* uniform: the map's entries of the chunk's slots, loaded together */
                int64_t m[ATTN_CHECK_UNROLL];
#pragma unroll
                for (int k = 0; k < ATTN_CHECK_UNROLL; k++) m[k] = s[k] >= 0 ? attn_idx(c.slot_map, s[k]) : 0;
#pragma unroll
                for (int k = 0; k < ATTN_CHECK_UNROLL; k++) {
                    if (s[k] >= 0 && (uint64_t)m[k] >= (uint64_t)c.num_slots && !bad_t) {
                        bad_t = SGL_FAULT_SLOT_MAP;
                        bad_pos = s[k];
                        bad_v = m[k];
                        bad_hi = c.num_slots;
                    }
                }
            }
        }
        if (bad_t) sgl_fault_note(c.fault, bad_t, bad_pos, bad_v, 0, bad_hi);
        if (__syncthreads_or(bad_t != 0) && threadIdx.x == 0) {
            if (c.extend)
                ((attn_extend_item *)items)[i].kv_hi = lo;
            else
                ((attn_decode_item *)items)[i].kv_end = lo;
        }
    }
}

#endif
