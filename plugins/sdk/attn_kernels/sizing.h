/*
 * sizing.h - what a plugin built on these kernels sizes at create (plain C):
 * the tiles its kernels plan with, the one device allocation that holds the
 * work lists, split-KV partials and counters, and the grid bound of a batch.
 * The plan kernels (plan.cuh) fill the work lists within these bounds; the
 * bounds are proven there and checked with random lengths in
 * tests/cuda/test_cuda_attn_plan.c.  cuda_attn and hip_attn both size with
 * it, so they plan identically for the shared kernels.
 */
#ifndef SGL_ATTN_KERNELS_SIZING_H
#define SGL_ATTN_KERNELS_SIZING_H

#include <stddef.h>
#include <stdint.h>

#include "attn_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tile shapes a set of kernels plans with. */
typedef struct attn_tiles {
    int decode_heads_per_block; /* q heads of one kv head per decode block */
    int decode_chunk_align;     /* KV columns per decode tile */
    int extend_block_m, extend_block_n;
} attn_tiles;

/* q heads one portable decode block serves (decode_portable.cuh: HB). */
static inline int attn_portable_decode_heads(int group) { return group == 1 ? 1 : 4; }
/* The portable kernels' tiles (decode_portable.cuh, extend_portable.cuh). */
attn_tiles attn_portable_tiles(int group);

/* Decode plan sets: which KV columns a layer kind attends. */
enum { ATTN_DPLAN_FULL = 0, ATTN_DPLAN_WINDOW = 1, ATTN_DPLAN_CROSS = 2, ATTN_DPLAN_COUNT };
enum { ATTN_EPLAN_SELF = 0, ATTN_EPLAN_CROSS = 1, ATTN_EPLAN_COUNT };

/* Everything sized at create; pure data so the sizing is testable. */
typedef struct attn_sizing {
    int32_t max_reqs, max_tokens, max_context;
    int32_t hq, hkv, head_dim;
    int32_t decode_hblocks;      /* head blocks per kv head (grid.y = hkv * this) */
    int32_t decode_target_items; /* items the decode plan aims at */
    int32_t decode_max_items;    /* target + max_reqs */
    int32_t decode_max_parts;    /* 2 * target + 2 */
    int32_t decode_min_chunk, decode_chunk_align;
    int32_t extend_block_m, extend_block_n;
    int32_t extend_max_items;    /* ceil(max_tokens / block_m) + max_reqs */
    int32_t counters_per_req;    /* = hq (>= grid.y of any decode launch) */
    /* byte offsets into the one device allocation */
    size_t off_ditems[ATTN_DPLAN_COUNT], off_eitems[ATTN_EPLAN_COUNT], off_num, off_part_o,
        off_part_lse, off_counters, total_bytes;
} attn_sizing;

/* sm_count: the device's SMs (CUs); blocks_per_sm: resident decode blocks to
 * aim at.  SGL_ATTN_E_INVALID with the field named in err on bad limits. */
int attn_sizing_compute(attn_sizing *s, int32_t max_reqs, int32_t max_tokens, int32_t max_context, int32_t hq,
                        int32_t hkv, int32_t head_dim, const attn_tiles *tiles, int sm_count, int blocks_per_sm,
                        char *err, size_t err_size);
/* Grid bounds for one batch (blocks past the planned count exit at once). */
int32_t attn_decode_grid_items(const attn_sizing *s, int32_t bs);
int32_t attn_extend_grid_items(const attn_sizing *s, int32_t bs, int32_t num_tokens);

#ifdef __cplusplus
}
#endif
#endif
