/*
 * common.cuh - helpers every attention kernel uses (CUDA and HIP):
 * index reads, the score transform (scale, soft-cap, log2 domain)
 * and the online-softmax step.  Portable: only gpu_compat.h.
 */
#ifndef SGL_ATTN_KERNELS_COMMON_CUH
#define SGL_ATTN_KERNELS_COMMON_CUH

#include <math.h>

#include "attn_params.h"
#include "gpu_compat.h"
#include "gpu_fault.h"

#define ATTN_LOG2E 1.4426950408889634f
#define ATTN_NEG_INF (-INFINITY)

GC_DEV int attn_clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Element i of an index tensor, whole (an int64 as int64).  i is clamped
 * into [0, n): the callers' i is below n by the host's shape checks, so the
 * clamp only guards the read. */
GC_DEV int64_t attn_idx(const attn_index &ix, int64_t i) {
    if (ix.n <= 0) return 0;
    if (i < 0) i = 0;
    if (i >= ix.n) i = ix.n - 1;
    return ix.shift ? (int64_t)__ldg((const long long *)ix.p + i) : (int64_t)__ldg(ix.p + i);
}

/* Word w of an index tensor (element w >> shift), whole. */
GC_DEV int64_t attn_word(const attn_index &ix, int64_t w) {
    return ix.shift ? (int64_t)__ldg((const long long *)ix.p + (w >> 1)) : (int64_t)__ldg(ix.p + w);
}

/* The table word (low word of the req_to_token entry, or of the page-table
 * page) that holds column `col` of row `row` (attn_params.h: one index
 * scheme, req_to_token being the table of one-token pages). */
GC_DEV const int32_t *attn_table_at(const attn_fwd &p, int row, int col) {
    return p.req_to_token.p + (int64_t)row * p.r2t_row_words +
           ((int64_t)(col >> p.page_shift) << p.req_to_token.shift);
}

/* The pool slot of column `col` from its table word: the page's slot, then
 * the layer's slot map, clamped into the pool.  The entries the planned
 * items read (table and map) were checked whole before the first forward of
 * the batch (attn_check_items_kernel: an item with an entry outside the pool
 * attends nothing), so the clamps only keep a tensor changed after that
 * check inside the tensors; they never move a checked entry.  32-bit: the
 * pool and the map have at most 2^31 - 1 rows (host checks), a checked page
 * times its size lies in them, and a changed entry that wraps is still
 * clamped.  The plain req_to_token path pays two integer ops (shift and mask
 * by 0) and a branch on a kernel parameter, uniform across the grid; the
 * map's read is a second dependent load, only where a layer has a map. */
GC_DEV int32_t attn_page_slot(const attn_fwd &p, int32_t word, int col) {
    return (int32_t)((uint32_t)word << p.page_shift) + (col & p.page_mask);
}
GC_DEV int32_t attn_map_slot(const attn_fwd &p, int32_t s) { /* only when p.slot_map.p */
    s = s < 0 ? 0 : (s >= p.slot_map.n ? p.slot_map.n - 1 : s);
    return __ldg(p.slot_map.p + ((int64_t)s << p.slot_map.shift)); /* the low word, as the table's */
}
GC_DEV int32_t attn_pool_clamp(const attn_fwd &p, int32_t s) {
    const int32_t last = (int32_t)p.num_slots - 1;
    return s < 0 ? 0 : (s > last ? last : s);
}
GC_DEV int32_t attn_slot_of(const attn_fwd &p, int32_t word, int col) {
    int32_t s = attn_page_slot(p, word, col);
    if (p.slot_map.p) s = attn_map_slot(p, s);
    return attn_pool_clamp(p, s);
}

/* The pool slot of column `col` of row `row`. */
GC_DEV int64_t attn_slot(const attn_fwd &p, int row, int col) {
    return attn_slot_of(p, __ldg(attn_table_at(p, row, col)), col);
}

/* The pool slot a save writes token tok's K/V to: out_cache_loc[tok]
 * through the layer's slot map, each checked whole (out_cache_loc against
 * the map's length or the pool, the map's entry against the pool); -1 when
 * either is outside, noted once per token (`note`), never clamped or wrapped
 * (either would overwrite another token). */
GC_DEV int64_t attn_save_slot(const attn_save &s, int tok, bool note) {
    const int64_t loc = attn_idx(s.loc, tok);
    const int64_t lim = s.slot_map.p ? (int64_t)s.slot_map.n : s.num_slots;
    if ((uint64_t)loc >= (uint64_t)lim) {
        if (note) sgl_fault_note(s.fault, SGL_FAULT_OUT_CACHE_LOC, tok, loc, 0, lim);
        return -1;
    }
    if (!s.slot_map.p) return loc;
    const int64_t m = attn_idx(s.slot_map, loc);
    if ((uint64_t)m >= (uint64_t)s.num_slots) {
        if (note) sgl_fault_note(s.fault, SGL_FAULT_SLOT_MAP, loc, m, 0, s.num_slots);
        return -1;
    }
    return m;
}

/* Raw q.k -> logit in the log2 domain (s * scale * log2e, through the soft-cap). */
GC_DEV float attn_score(const attn_fwd &p, float dot) {
    if (p.softcap > 0.f) return p.softcap * tanhf(dot * p.scale / p.softcap) * ATTN_LOG2E;
    return dot * p.scale_log2;
}

/* Tree verify: where an item's mask bytes are (attn_params.h, ATTN_VIS_TREE):
 * the byte of item row r, column col is p.mask[base + r * (kv_hi - kv_lo) + col]. */
GC_DEV int64_t attn_mask_base(const attn_fwd &p, const attn_extend_item &it) {
    const int64_t seq = it.kv_hi - it.kv_lo;
    return attn_idx(p.mask_indptr, it.b) + (int64_t)(it.q_pos0 - (it.kv_hi - p.mask_q)) * seq - it.kv_lo;
}

/* Tree verify's packed words (attn_fwd.mask_bits): bits 8m and 8m + 1 of w
 * (m = 0..7) gathered to bits 2m and 2m + 1 of the result: the two columns a
 * thread of an m16n8 fragment holds in each group of 8. */
GC_DEV uint32_t attn_bits_pairs(uint64_t w) {
    w &= 0x0303030303030303ull;
    w = (w | w >> 6) & 0x000F000F000F000Full;
    w = (w | w >> 12) & 0x000000FF000000FFull;
    return (uint32_t)((w | w >> 24) & 0xFFFFull);
}

/* Is column `col` visible to a query at column `qpos`?  (causal / window) */
GC_DEV bool attn_visible(int col, int qpos, int causal, int window) {
    if (causal && col > qpos) return false;
    if (window >= 0 && col < qpos - window) return false;
    return true;
}

/* exp2(a - m) that treats m == -inf (nothing seen yet) as 0 weight. */
GC_DEV float attn_exp2_sub(float a, float m) { return m == ATTN_NEG_INF ? 0.f : gc_exp2(a - m); }

/* The LSE output of a row from its running (m, log2 domain) and sum l:
 * ln(sum exp(s)) = (m + log2 l) ln 2; -inf for a row that saw no key. */
#define ATTN_LN2 0.6931471805599453f
GC_DEV float attn_lse_ln(float m, float l) { return l > 0.f ? (m + log2f(l)) * ATTN_LN2 : ATTN_NEG_INF; }
/* Merge a running (m, l) with a new max: returns the factor old terms get. */
GC_DEV float attn_rescale(float m_old, float m_new) {
    return m_old == ATTN_NEG_INF ? 0.f : gc_exp2(m_old - m_new);
}

#endif
