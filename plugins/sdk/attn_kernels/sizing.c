/* sizing.c - buffer sizes and grid bounds (sizing.h; pure C, unit-tested in
 * tests/cuda/test_cuda_attn_plan.c). */
#include "sizing.h"

#include <stdio.h>
#include <string.h>

#include "sgl_attn_abi.h"

attn_tiles attn_portable_tiles(int group) {
    attn_tiles t;
    t.decode_heads_per_block = attn_portable_decode_heads(group);
    t.decode_chunk_align = 32;
    t.extend_block_m = 16;
    t.extend_block_n = 32;
    return t;
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

int attn_sizing_compute(attn_sizing *s, int32_t max_reqs, int32_t max_tokens, int32_t max_context, int32_t hq,
                        int32_t hkv, int32_t head_dim, const attn_tiles *tiles, int sm_count, int blocks_per_sm,
                        char *err, size_t err_size) {
    memset(s, 0, sizeof *s);
    if (max_reqs < 1 || max_tokens < 1 || max_context < 1) {
        snprintf(err, err_size, "create: max_reqs %d, max_tokens %d, max_context %d: expected all >= 1", max_reqs,
                 max_tokens, max_context);
        return SGL_ATTN_E_INVALID;
    }
    if (hq < 1 || hkv < 1 || hq % hkv) {
        snprintf(err, err_size, "create: num_q_heads %d / num_kv_heads %d: expected q a multiple of kv", hq, hkv);
        return SGL_ATTN_E_INVALID;
    }
    s->max_reqs = max_reqs;
    s->max_tokens = max_tokens;
    s->max_context = max_context;
    s->hq = hq;
    s->hkv = hkv;
    s->head_dim = head_dim;
    const int group = hq / hkv, hpb = tiles->decode_heads_per_block;
    s->decode_hblocks = (group + hpb - 1) / hpb;
    const long long blocks_per_item = (long long)hkv * s->decode_hblocks;
    long long target_blocks = (long long)(sm_count > 0 ? sm_count : 1) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    long long target = (target_blocks + blocks_per_item - 1) / blocks_per_item;
    if (target < 1) target = 1;
    s->decode_target_items = (int32_t)target;
    s->decode_max_items = (int32_t)(target + max_reqs);
    s->decode_max_parts = (int32_t)(2 * target + 2);
    s->decode_chunk_align = tiles->decode_chunk_align;
    s->decode_min_chunk = 2 * tiles->decode_chunk_align;
    s->extend_block_m = tiles->extend_block_m;
    s->extend_block_n = tiles->extend_block_n;
    s->extend_max_items = (max_tokens + tiles->extend_block_m - 1) / tiles->extend_block_m + max_reqs;
    s->counters_per_req = hq;

    size_t off = 0;
    for (int i = 0; i < ATTN_DPLAN_COUNT; i++) {
        s->off_ditems[i] = off;
        off = align256(off + (size_t)s->decode_max_items * sizeof(attn_decode_item));
    }
    for (int i = 0; i < ATTN_EPLAN_COUNT; i++) {
        s->off_eitems[i] = off;
        off = align256(off + (size_t)s->extend_max_items * sizeof(attn_extend_item));
    }
    s->off_num = off; /* one int32 per plan set */
    off = align256(off + (ATTN_DPLAN_COUNT + ATTN_EPLAN_COUNT) * sizeof(int32_t));
    s->off_part_o = off;
    off = align256(off + (size_t)s->decode_max_parts * hq * head_dim * sizeof(float));
    s->off_part_lse = off;
    off = align256(off + (size_t)s->decode_max_parts * hq * sizeof(float));
    s->off_counters = off;
    off = align256(off + (size_t)max_reqs * s->counters_per_req * sizeof(int32_t));
    s->total_bytes = off;
    return SGL_ATTN_OK;
}

int32_t attn_decode_grid_items(const attn_sizing *s, int32_t bs) {
    long long n = (long long)s->decode_target_items + (bs > 0 ? bs : 0);
    return (int32_t)(n < s->decode_max_items ? n : s->decode_max_items);
}

int32_t attn_extend_grid_items(const attn_sizing *s, int32_t bs, int32_t num_tokens) {
    long long n = ((long long)(num_tokens > 0 ? num_tokens : 0) + s->extend_block_m - 1) / s->extend_block_m +
                  (bs > 0 ? bs : 0);
    return (int32_t)(n < s->extend_max_items ? n : s->extend_max_items);
}
