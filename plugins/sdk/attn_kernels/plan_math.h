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

#endif
