/*
 * mla_sched.h - the work list the host plans and the MLA kernels read.
 * Plain C, shared by the planner (mla_plan.c), the backend and the .cu files.
 *
 * Rows: request b's queries are the rows r = t * Hq + h (token t of its q_len
 * new tokens, head h).  q and out are [T, Hq, D] and compact, so row r of b is
 * global row q_row0(b) + r = q_start(b) * Hq + r: a tile of consecutive rows is
 * one contiguous block of q and of out.  Row r sees keys [0, key_base + r/Hq + 1)
 * (key_base = the cached prefix: causal over the new tokens, which covers
 * decode, speculative verify and extend alike).  A tree-verify plan gives
 * every row its request's whole range (key_base = seq_len - 1, each tile's
 * keys [0, seq_len), each token n_keys = seq_len) and the kernels' mask
 * picks within it.
 *
 * Tiles of up to `rows_per_tile` rows are split along the keys into items of
 * whole MLA_KV_BLOCK blocks; a tile with one item writes `out` itself, a tile
 * with several writes partial results (o / lse per row) that the combine
 * kernel merges.
 */
#ifndef SGL_MLA_SCHED_H
#define SGL_MLA_SCHED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_D_QK 576      /* kv_lora_rank 512 + rope 64 */
#define MLA_D_V 512       /* the value is the first 512 dims of a pool row */
#define MLA_KV_BLOCK 64   /* key block: splits start at multiples of it */
#define MLA_MAX_TILE_ROWS 64
#define MLA_MAX_SPLITS 256 /* splits of one tile (combine reads them in one pass) */

/* One CTA's work: rows [row0, row0 + nrows) of request b against keys
 * [kv_begin, kv_end).  part >= 0: write o / lse into partial slot `part`,
 * else write out directly. */
typedef struct mla_item {
    int32_t b;
    int32_t row0;
    int32_t nrows;
    int32_t kv_begin; /* multiple of MLA_KV_BLOCK */
    int32_t kv_end;   /* > kv_begin */
    int32_t part;
    int32_t q_row0;   /* global row of row0 (q_start(b) * Hq + row0) */
    int32_t key_base; /* row r sees keys < key_base + r / Hq + 1 (tree: seq_len - 1) */
} mla_item;

/* A split tile: its nsplit partial slots part0 .. part0 + nsplit - 1, each
 * holding rows 0 .. nrows - 1 of the tile. */
typedef struct mla_comb {
    int32_t q_row0;
    int32_t nrows;
    int32_t part0;
    int32_t nsplit;
} mla_comb;

/* Per token of the batch: its request and how many keys it sees (the simple
 * kernel works token by token). */
typedef struct mla_tok {
    int32_t b;
    int32_t n_keys;
    int32_t j; /* its index among its request's new tokens (tree verify's mask row) */
} mla_tok;

/* Head of the device plan buffer; the arrays follow at the offsets below. */
typedef struct mla_plan_hdr {
    int32_t n_items;
    int32_t n_comb;
    int32_t n_tokens;
    int32_t bs;
    int32_t rows_per_tile;
    int32_t hq;
    int32_t reserved_[2];
} mla_plan_hdr;

/* Capacities of one plan buffer (fixed at create). */
typedef struct mla_plan_caps {
    int32_t max_items;
    int32_t max_comb;
    int32_t max_parts;
    int32_t max_tokens;
} mla_plan_caps;

/* Byte offsets of the arrays in a plan buffer (all 16-byte aligned). */
typedef struct mla_plan_layout {
    uint64_t items, comb, toks, total;
} mla_plan_layout;

static inline uint64_t mla_align16(uint64_t x) { return (x + 15u) & ~(uint64_t)15u; }

static inline mla_plan_layout mla_plan_layout_of(const mla_plan_caps *c) {
    mla_plan_layout l;
    l.items = mla_align16(sizeof(mla_plan_hdr));
    l.comb = mla_align16(l.items + (uint64_t)c->max_items * sizeof(mla_item));
    l.toks = mla_align16(l.comb + (uint64_t)c->max_comb * sizeof(mla_comb));
    l.total = mla_align16(l.toks + (uint64_t)c->max_tokens * sizeof(mla_tok));
    return l;
}

#ifdef __cplusplus
}
#endif
#endif
