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

/* The pool slot of column `col` of req_to_token row `row`: the entry's low
 * word, clamped into the pool.  The entries the planned items read were
 * checked whole before the first forward of the batch (attn_check_items_kernel:
 * an item with an entry outside the pool attends nothing), so the clamp only
 * keeps a tensor changed after that check inside the pool; it never moves a
 * checked entry. */
GC_DEV int64_t attn_slot(const attn_fwd &p, int row, int col) {
    const int64_t w = (int64_t)row * p.r2t_row_words + ((int64_t)col << p.req_to_token.shift);
    int64_t s = __ldg(p.req_to_token.p + w);
    return s < 0 ? 0 : (s >= p.num_slots ? p.num_slots - 1 : s);
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

/* Is column `col` visible to a query at column `qpos`?  (causal / window) */
GC_DEV bool attn_visible(int col, int qpos, int causal, int window) {
    if (causal && col > qpos) return false;
    if (window >= 0 && col < qpos - window) return false;
    return true;
}

/* exp2(a - m) that treats m == -inf (nothing seen yet) as 0 weight. */
GC_DEV float attn_exp2_sub(float a, float m) { return m == ATTN_NEG_INF ? 0.f : gc_exp2(a - m); }

/* Merge a running (m, l) with a new max: returns the factor old terms get. */
GC_DEV float attn_rescale(float m_old, float m_new) {
    return m_old == ATTN_NEG_INF ? 0.f : gc_exp2(m_old - m_new);
}

#endif
