/*
 * plan_math.h - the split-KV arithmetic, shared by the plan kernel and
 * the host-side tests (plain C; __host__ __device__ under nvcc/hipcc).  The
 * bounds the buffers are sized from are proven in plan.cuh and checked
 * with random lengths in tests/cuda/test_cuda_attn_plan.c.
 */
#ifndef SGL_ATTN_KERNELS_PLAN_MATH_H
#define SGL_ATTN_KERNELS_PLAN_MATH_H

#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define ATTN_HD __host__ __device__ static inline
#else
#define ATTN_HD static inline
#endif

/* KV columns per split: enough that total / chunk <= target, at least
 * min_chunk, a multiple of align. */
ATTN_HD int64_t attn_plan_chunk(int64_t total, int32_t target, int32_t min_chunk, int32_t align) {
    int64_t c = (total + (target > 0 ? target : 1) - 1) / (target > 0 ? target : 1);
    if (c < min_chunk) c = min_chunk;
    if (c < 1) c = 1;
    if (align < 1) align = 1;
    return (c + align - 1) / align * align;
}

/* Splits of one request of `len` columns (an empty request still gets the
 * one item that writes its output). */
ATTN_HD int32_t attn_plan_nsplit(int64_t len, int64_t chunk) {
    return len <= 0 ? 1 : (int32_t)((len + chunk - 1) / chunk);
}

/* The decode plan's split count: floor(len / chunk), at least 1.  Summed over
 * the requests the split ones stay <= total / chunk <= target, so a batch
 * plans at most target + bs items (<= target when every request has a chunk
 * or more), never the ~target + bs/2 that rounding up gives: one wave fewer
 * when the target is a whole number of waves.  Never more than
 * attn_plan_nsplit, so every bound of that one holds. */
ATTN_HD int32_t attn_plan_nsplit_fit(int64_t len, int64_t chunk) {
    const int64_t n = chunk > 0 ? len / chunk : 1;
    return n < 1 ? 1 : (int32_t)n;
}

/* Columns per split when n splits share len columns evenly, rounded up to
 * align; ceil(len / result) <= n splits then cover the request, and no split
 * is a sliver (the old last-split remainder of < align columns). */
ATTN_HD int64_t attn_plan_split_len(int64_t len, int32_t n, int32_t align) {
    if (n < 1) n = 1;
    if (align < 1) align = 1;
    int64_t c = (len + n - 1) / n;
    if (c < 1) c = 1;
    return (c + align - 1) / align * align;
}

/* The wave rule (cuda_attn's fp8 e4m3 decode plan): how many splits a request
 * takes, n in 1..target / bs, where a batch of bs requests runs bs x n x
 * blocks_per_item blocks on `slots` resident block slots (SMs x blocks per
 * SM).  Each n's efficiency is its blocks over the slots of its whole
 * rounds, blocks / (ceil(blocks / slots) x slots); the rule takes the
 * smallest n within ATTN_PLAN_WAVE_PCT % of the best n's (fewer, longer items
 * when the rounds fill as well: less combine work, the same tail).  It needs
 * only bs, so the host tabulates it at create (per batch size) and the plan
 * kernel gets the aim; a request shorter than n min_chunks gets fewer splits
 * from the chunk's min_chunk floor. */
#define ATTN_PLAN_WAVE_PCT 95
ATTN_HD int32_t attn_plan_wave_splits(int32_t bs, int32_t target, int64_t slots, int32_t blocks_per_item) {
    if (bs < 1 || slots < 1 || blocks_per_item < 1) return 1;
    const int64_t n_max = target / bs;
    if (n_max < 1) return 1;
    /* efficiency n = blocks_n / (rounds_n x slots); compared as cross products */
    int64_t best_blocks = 0, best_rounds = 1;
    for (int64_t n = 1; n <= n_max; n++) {
        const int64_t blocks = (int64_t)bs * n * blocks_per_item, rounds = (blocks + slots - 1) / slots;
        if (blocks * best_rounds > best_blocks * rounds) {
            best_blocks = blocks;
            best_rounds = rounds;
        }
    }
    for (int64_t n = 1; n <= n_max; n++) {
        const int64_t blocks = (int64_t)bs * n * blocks_per_item, rounds = (blocks + slots - 1) / slots;
        if (blocks * best_rounds * 100 >= (int64_t)ATTN_PLAN_WAVE_PCT * best_blocks * rounds) return (int32_t)n;
    }
    return 1; /* never: the best one qualifies */
}

/* The items the wave rule's plan aims at: n x bs, never above the sized
 * target (a batch of more requests than the target keeps the target, as the
 * default aim does), at least 1.  With the ceil split count
 * (attn_decode_plan.split_ceil) the items stay <= aim + bs and the partial
 * slots < 2 x aim (plan.cuh). */
ATTN_HD int32_t attn_plan_wave_aim(int32_t bs, int32_t target, int64_t slots, int32_t blocks_per_item) {
    const int64_t aim = (int64_t)(bs > 0 ? bs : 0) * attn_plan_wave_splits(bs, target, slots, blocks_per_item);
    const int64_t cap = target > 0 ? target : 1;
    return (int32_t)(aim < 1 ? 1 : aim < cap ? aim : cap);
}

#endif
