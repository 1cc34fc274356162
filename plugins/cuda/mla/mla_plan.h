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
    int32_t balanced;      /* 1: when tiles < target_ctas, cut the key blocks into target_ctas
                              equal shares (SGL_ATTN_MLA_PLAN=balanced; see mla_plan_build) */
} mla_plan_params;

/* Balanced plan (p->balanced, tiles < target_ctas, G = target_ctas <=
 * MLA_BALANCE_MAX_CTAS): the tiles' 64-key blocks, concatenated in request
 * order, are cut into G shares of floor / ceil(total / G) blocks; a share is
 * one item per tile it touches.  Items are ordered so that the round-robin
 * loop of the persistent kernels (CTA c takes items c, c + G, ...) gives CTA
 * c exactly one share; it applies when shares are >= min_chunk keys and
 * every share has k or k + 1 items (the
 * shares with k + 1 take the low CTA numbers), else the batch is planned as
 * without the flag.  No CTA idles while another streams a whole tile (the
 * even split leaves G mod tiles of them idle), at the cost of more partial
 * rows. */
#define MLA_BALANCE_MAX_CTAS 4096

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

/* What the device can run and what auto picks (the backend's defaults). */
typedef struct mla_kernel_policy {
    uint32_t avail;      /* 1u << MLA_KERNEL_WGMMA / _WGMMA0 / _NARROW: runnable here (mla_kernel_avail) */
    int32_t auto_wide;   /* auto at >= 64 rows a request: MLA_KERNEL_WGMMA0, _WGMMA or _MMA */
    int32_t auto_narrow; /* auto at <= 32 rows (decode / verify): MLA_KERNEL_NARROW or _MMA */
} mla_kernel_policy;

/* The kernel (MLA_KERNEL_SIMPLE / MMA / WGMMA / NARROW / WGMMA0) a batch runs: the
 * preference (MLA_KERNEL_*), what the model's dtypes (MLA_DT_*) and the page
 * size allow (wgmma / wgmma0: pages 16, 32, k x 64; narrow also 8), the
 * device's SM major and `pol` (NULL: no TMA kernel, auto = mma).  rows =
 * query rows of the largest request; extend = 1 for an extend batch (64-row
 * tiles: narrow does not apply).  An explicit WGMMA / WGMMA0 that cannot run
 * resolves to MMA; NARROW where it does not apply resolves as AUTO does. */
int32_t mla_resolve_kernel(int32_t pref, int32_t q_dt, int32_t kv_dt, int32_t page, int32_t rows,
                           int32_t extend, int32_t sm_major, const mla_kernel_policy *pol);

#ifdef __cplusplus
}
#endif
#endif
