/*
 * mla_plan.h - the split-KV planner: request lengths in, the work list of
 * mla_sched.h out.  Pure host C (no CUDA), so it is unit-tested here.
 *
 * How it splits: tiles (rows_per_tile rows of one request) are the unit; when
 * there are fewer tiles than CTAs the GPU runs at once, the longest tile is
 * cut into s equal chunks of whole key blocks and every other tile into
 * chunks of that size, for the s whose estimated time
 *     ceil(items / target_ctas) * (largest chunk + item_overhead)
 * is least (waves of the largest item).  Partial results need
 * sum(nsplit * nrows) rows of the partial buffer; an s that needs more than
 * caps->max_part_rows is not taken.
 */
#ifndef SGL_MLA_PLAN_H
#define SGL_MLA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "mla_sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mla_plan_params {
    int32_t hq;            /* query heads (>= 1) */
    int32_t rows_per_tile; /* 16, 32 or 64: the kernel's tile */
    int32_t target_ctas;   /* CTAs resident at once (SMs x CTAs per SM) */
    int32_t min_chunk;     /* fewest keys in a split (rounded up to a block) */
    int32_t item_overhead; /* cost of one item's start and end, in keys */
    int32_t no_split;      /* 1: one item per tile */
    int32_t max_context;   /* columns of req_to_token: prefix + q_len <= it */
    int32_t max_part_rows; /* rows of the partial buffers */
    int32_t tree;          /* 1: tree verify, every row of a request sees its whole range (mla_sched.h) */
} mla_plan_params;

/* Plan a batch of bs requests (request b: q_len[b] new tokens after prefix[b]
 * cached ones; num_tokens = sum q_len) into `buf` (host memory laid out by
 * mla_plan_layout_of(caps)).  Returns 0, or SGL_ATTN_E_INVALID with err
 * naming the request, the field and the value. */
int mla_plan_build(const mla_plan_params *p, const mla_plan_caps *caps, const int32_t *q_len,
                   const int32_t *prefix, int32_t bs, int32_t num_tokens, void *buf, char *err,
                   size_t err_size);

/* Upper bounds for sizing a plan buffer and the partial buffers at create:
 * rows_per_tile >= 16 is assumed (any tile size the kernels use). */
mla_plan_caps mla_plan_caps_for(int32_t max_reqs, int32_t max_tokens, int32_t hq,
                                int32_t max_part_rows);

/* Tile rows for a batch whose requests have at most max_rows rows: 16, 32 or
 * 64 (the mma kernels' 1, 2 or 4 row groups; 48 rounds to 64). */
int32_t mla_rows_per_tile(int32_t max_rows);

/* The kernel (MLA_KERNEL_SIMPLE / _MMA / _WIDE) a batch runs, from the
 * preference (MLA_KERNEL_*), the model's dtypes (MLA_DT_*), the page size,
 * rows = query rows of the largest request, and wide_ok = 1 when the device
 * can run the wide kernel (mla_wide_avail: SM 9.0, the TMA encoder, its
 * shared memory):
 *  - an fp8 pool, a q dtype other than the pool's, or SIMPLE asked: SIMPLE;
 *  - MMA asked: MMA;
 *  - WIDE asked: WIDE wherever it can run (wide_ok, bf16, a page of 16, 32 or
 *    k x 64 rows: a 64-key block is at most 4 TMA boxes), at any rows; else MMA;
 *  - AUTO: WIDE for >= 64 rows a request where it can run, else MMA (16- and
 *    32-row tiles waste no tensor-core work there). */
int32_t mla_resolve_kernel(int32_t pref, int32_t q_dt, int32_t kv_dt, int32_t page, int32_t rows,
                           int32_t wide_ok);

#ifdef __cplusplus
}
#endif
#endif
