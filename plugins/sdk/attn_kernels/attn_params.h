/*
 * attn_params.h - what the host side hands the kernels: plain C, shared by
 * every plugin built on these kernels (cuda_attn, hip_attn) and their
 * launchers.
 *
 * Index tensors may be int32 or int64 (docs/contributing.md).  Values are
 * checked whole (an int64 as int64) against what they index, never clamped
 * or wrapped into range, and the checks sit outside the attention kernels:
 * the plan kernels check each request's row and lengths (a bad request
 * attends nothing: zero output rows); the item check (attn_check below) runs
 * once per planned batch before its first attention kernel and checks every
 * req_to_token entry each item reads (an item with an entry outside the pool
 * attends nothing); the save kernel checks each out_cache_loc (a bad one
 * saves nothing).  The first fault is noted in the instance's record
 * (gpu_fault.h), which fails the next metadata call.  The attention kernels
 * then read entries as the low word, clamped into the pool: a read guard
 * for a tensor changed after the check, never a move of a checked entry.
 *
 * ABI 1.2 page tables and slot maps (cuda_attn): the table the kernels read
 * (attn_fwd.req_to_token) is either req_to_token or batch->page_table, one
 * index scheme: a table of pages of 1 << page_shift tokens, whose row is the
 * request's (req_pool_indices[b], or b itself for a page table).  Column c
 * is slot table[row][c >> page_shift] << page_shift | c & page_mask, so
 * req_to_token is the page table of one-token pages (page_shift 0), and its
 * kernels run the same code.  A layer's slot map then translates that slot
 * into its own pool (common.cuh: attn_slot_of).  The item check and the
 * save check the page-table and slot-map entries as they check
 * req_to_token entries and out_cache_loc.
 * Positions are clamped into the tensor (i < n), a read in range by the
 * host's shape checks.
 *
 * Planning happens on the device (plan kernels, one block, run by
 * init_forward_metadata and the graph hooks) from the batch's device tensors,
 * so a captured graph replays with whatever the replay hook planned.
 */
#ifndef SGL_ATTN_KERNELS_PARAMS_H
#define SGL_ATTN_KERNELS_PARAMS_H

#include <stdint.h>

#include "gpu_fault.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An index tensor as the kernels read it. */
typedef struct attn_index {
    const int32_t *p; /* NULL = absent */
    int32_t shift;    /* 0 int32, 1 int64 */
    int32_t n;        /* elements (clamp bound for reads) */
} attn_index;

/* One decode work item: KV columns [kv_begin, kv_end) of req_to_token row
 * `row` for request b, split `split` of `nsplit`.  part is the partial-result
 * slot of this item when nsplit > 1 (else -1); a request's parts are
 * consecutive.  q_pos is the query's column (for a per-layer window). */
typedef struct attn_decode_item {
    int32_t b, row, kv_begin, kv_end;
    int32_t split, nsplit, part, q_pos; /* q_pos: the query's position (window) */
} attn_decode_item;

/* One extend work item: q rows [q_tok0, q_tok0 + nrows) of request b (token
 * indices into q/out) attending KV columns [kv_lo, kv_hi) of req_to_token row
 * `row`.  Positions are columns too: q row r sits at column q_pos0 + r and
 * `causal` (an ATTN_VIS_* value) says which of the range it sees:
 * ATTN_VIS_CAUSAL columns <= its own (and >= its own - window); ATTN_VIS_ALL
 * every column (cross attention, bidirectional and encoder-only layers);
 * ATTN_VIS_TREE every column whose byte of the batch's tree mask is set
 * (attn_fwd.mask: row q_pos0 + r - (kv_hi - mask_q) of request b's block). */
enum { ATTN_VIS_ALL = 0, ATTN_VIS_CAUSAL = 1, ATTN_VIS_TREE = 2 };
typedef struct attn_extend_item {
    int32_t b, row, q_tok0, nrows;
    int32_t q_pos0, kv_lo, kv_hi, causal;
} attn_extend_item;

/* Self-attention items of an extend plan (attn_extend_plan.self_vis): what
 * the batch's self-attention layers see. */
enum {
    ATTN_SELF_CAUSAL = 0,   /* causal (the default) */
    ATTN_SELF_ALL = 1,      /* bidirectional: every column of the request */
    ATTN_SELF_NEW_ONLY = 2, /* encoder-only: the request's new tokens, read from the call's k / v:
                             * the item's row is (first q token) - (first new column), so that
                             * row + column is the token's row in k / v (attn_fwd: an identity
                             * table with one word per row) */
    ATTN_SELF_TREE = 3      /* tree verify: the mask of attn_plan_in.mask_indptr */
};

/* The batch, as the plan kernels read it.  A page table: req_pool_indices
 * absent (request b's row is b), max_ctx its pages times the page size. */
typedef struct attn_plan_in {
    attn_index req_pool_indices, seq_lens, extend_seq_lens, encoder_lens;
    int32_t bs;
    int32_t max_reqs, max_ctx; /* rows / columns (tokens) of req_to_token or the page table */
    sgl_gpu_fault_ref fault;   /* where an out-of-range index is noted */
    /* Verify: every request's new tokens when extend_seq_lens is absent (tokens_per_req). */
    int32_t ext_uniform;
    int32_t reserved_;
    /* Tree verify: request b's mask block [mask_indptr[b], mask_indptr[b + 1]) must hold
     * exactly new tokens x seq_len bytes, inside mask_len (checked; a request whose block
     * is not attends nothing). */
    attn_index mask_indptr;
    int64_t mask_len;
} attn_plan_in;

/* What a decode plan writes (device buffers sized at create). */
typedef struct attn_decode_plan {
    attn_decode_item *items;
    int32_t *num_items;
    int32_t max_items;      /* capacity of items */
    int32_t max_parts;      /* capacity of the partial-result slots */
    int32_t target_items;   /* items to aim at (fills the GPU with the kv heads) */
    int32_t min_chunk;      /* fewest KV columns per split */
    int32_t chunk_align;    /* split sizes are multiples of this (the KV tile) */
    int32_t window;         /* < 0: none; else plan only the window's columns */
    int32_t cross;          /* 1: attend [0, enc); else [enc, enc + len) */
    int32_t *counters;      /* [max_reqs * counters_per_req], zeroed by the plan */
    int32_t counters_per_req;
    int32_t split_ceil;     /* 1: a request takes ceil(len / chunk) splits (the wave rule's aim,
                               plan_math.h); 0: floor(len / chunk), at least 1 */
} attn_decode_plan;

typedef struct attn_extend_plan {
    attn_extend_item *items;
    int32_t *num_items;
    int32_t max_items;
    int32_t block_m;        /* q rows per item (the kernel's tile) */
    int32_t block_n;        /* KV columns per tile: cost unit for the longest-first order */
    int32_t cross;
    int32_t self_vis;       /* ATTN_SELF_*: what the self-attention items see (not cross) */
} attn_extend_plan;

/* One forward's tensors and constants. */
typedef struct attn_fwd {
    const void *q;      /* [T, Hq, D] */
    void *out;          /* [T, Hq, D] */
    const void *k_cache, *v_cache; /* [slots, Hkv, D] */
    const float *sinks; /* [Hq] or NULL */
    attn_index req_to_token;       /* [max_reqs, max_ctx] */
    int64_t r2t_row_words;         /* int32 words per req_to_token row */
    int64_t q_stride_t, q_stride_h; /* elements */
    int64_t o_stride_t, o_stride_h;
    int64_t kc_stride_s, kc_stride_h;
    int64_t vc_stride_s, vc_stride_h;
    int64_t num_slots;
    int32_t hq, hkv, group;         /* group = hq / hkv */
    int32_t max_reqs, max_ctx;
    int32_t num_tokens; /* rows of q/out (T): rows past it are never touched */
    float scale;        /* sm_scale */
    float scale_log2;   /* sm_scale * log2(e) */
    float softcap;      /* 0 off */
    int32_t window;     /* < 0 off (cross layers: always off) */
    /* decode: items and split buffers */
    const attn_decode_item *ditems;
    const attn_extend_item *eitems;
    const int32_t *num_items;
    float *part_o;      /* [max_parts, hq, D] */
    float *part_lse;    /* [max_parts, hq] (log2 domain) */
    int32_t *counters;  /* [max_reqs, counters_per_req] */
    int32_t counters_per_req;
    /* Tree verify (cuda_attn's wgmma extend; 0 where none): the byte offset from mask_full
     * (below) of uint32 first[b], request b's first word that is not full (mask_words when all
     * are): the columns before 64 first[b] need no mask and no word of it.  An offset in the
     * 4-byte gap before k_scale_dev, so the struct and every kernel's parameters keep their
     * layout. */
    int32_t mask_first_off;
    /* fp8 KV pools (cuda_attn): value = stored * scale, the scale read on the
     * device from *_scale_dev when set (the engine's scale tensors), else the float */
    const float *k_scale_dev, *v_scale_dev;
    float k_scale, v_scale;
    /* The table's pages (above: req_to_token is the table of pages of one
     * token, 0 / 0) and the layer's slot map (p NULL: identity). */
    int32_t page_shift, page_mask;
    attn_index slot_map;
    /* ABI 1.2's LSE output: lse[t * hq + h] = ln(sum_j exp(s_tj)) in natural
     * log, sinks excluded, -inf for a row that sees no key; NULL = not asked */
    float *lse;
    /* Tree verify (items with causal == ATTN_VIS_TREE): the batch's custom_mask (one byte per
     * entry, nonzero = visible), request b's block from mask_indptr[b], row-major
     * [mask_q, kv_hi - kv_lo]; mask_q = tokens_per_req.  Unread otherwise. */
    const uint8_t *mask;
    attn_index mask_indptr;
    int32_t mask_q;
    /* The same mask packed once per batch (cuda_attn's tree_mask_pack.cu), read in place of
     * the bytes where mask_bits is set: bit c & 63 of mask_bits[(b * mask_q + r) * mask_words
     * + (c >> 6)] is byte (r, c) of request b's block (c from kv_lo); mask_full[b * mask_words
     * + w] nonzero when every row's word w is all ones (such a tile needs no mask). */
    int32_t mask_words;
    const uint64_t *mask_bits;
    const uint8_t *mask_full;
} attn_fwd;

/* The item check (attn_check_items_kernel): before the first forward of a
 * planned batch (and again for a layer whose pool is smaller than the one
 * checked, or whose slot map is another), every req_to_token (page-table)
 * entry each planned item reads is checked whole against the pool (the slot
 * map's length, and each map entry it reads against the pool); an item with an entry outside it is noted and
 * emptied (it attends nothing), so the attention kernels read only checked
 * entries and do no per-load check of their own. */
#define ATTN_CHECK_SETS 3
typedef struct attn_check {
    attn_index req_to_token;   /* [max_reqs, max_ctx] */
    int64_t r2t_row_words;     /* int32 words per req_to_token row */
    int64_t num_slots;         /* the pool's slots */
    int32_t max_ctx;           /* columns of req_to_token (a fault's position) */
    int32_t nsets;             /* item lists below (grid.y) */
    int32_t extend;            /* 1: the lists are extend items, else decode items */
    int32_t max_items;         /* capacity of each list */
    void *items[ATTN_CHECK_SETS];          /* attn_decode_item * or attn_extend_item * */
    const int32_t *num_items[ATTN_CHECK_SETS];
    sgl_gpu_fault_ref fault;   /* where an entry outside the pool is noted */
    int32_t page_shift;        /* req_to_token: 0; a page table: log2 of its page size */
    int32_t reserved_;
    attn_index slot_map;       /* the layer's map (absent: identity) */
} attn_check;

/* Save new K/V at out_cache_loc. */
typedef struct attn_save {
    const void *k, *v;  /* [T, Hkv, D] */
    void *k_cache, *v_cache;
    attn_index loc;     /* [T] */
    int64_t k_stride_t, k_stride_h, v_stride_t, v_stride_h;
    int64_t kc_stride_s, kc_stride_h, vc_stride_s, vc_stride_h;
    int64_t num_slots;
    int32_t t, hkv, d;
    int32_t reserved_;
    sgl_gpu_fault_ref fault; /* where an out_cache_loc outside the pool is noted */
    attn_index slot_map;     /* the layer's map of out_cache_loc's slots (absent: identity) */
} attn_save;

#ifdef __cplusplus
}
#endif
#endif
