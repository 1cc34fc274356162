/*
 * common.cuh - helpers every attention kernel uses (CUDA and HIP):
 * checked index reads, the score transform (scale, soft-cap, log2 domain)
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

/* Is v outside [lo, hi)?  Then note it (the first fault wins) and say so. */
GC_DEV bool attn_bad(const sgl_gpu_fault_ref &f, int tensor, int64_t pos, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v < hi) return false;
    sgl_fault_note(f, tensor, pos, v, lo, hi);
    return true;
}

/* A req_to_token word (row-major word offset w) as a pool slot: an entry
 * outside the pool is noted and gives -1, never a slot of the pool. */
GC_DEV int64_t attn_slot_checked(const attn_fwd &p, int64_t s, int row, int col) {
    if ((uint64_t)s < (uint64_t)p.num_slots) return s;
    sgl_fault_note(p.fault, SGL_FAULT_REQ_TO_TOKEN, (int64_t)row * p.max_ctx + col, s, 0, p.num_slots);
    return -1;
}

/* The pool slot of column `col` of req_to_token row `row`; an entry outside
 * the pool is noted and reads slot 0 (a direct load needs an address; the
 * batch fails at the next metadata call). */
GC_DEV int64_t attn_slot(const attn_fwd &p, int row, int col) {
    const int64_t w = (int64_t)row * p.r2t_row_words + ((int64_t)col << p.req_to_token.shift);
    const int64_t s = attn_slot_checked(p, attn_word(p.req_to_token, w), row, col);
    return s < 0 ? 0 : s;
}

/* Raw q.k -> logit in the log2 domain (s * scale * log2e, through the soft-cap). */
GC_DEV float attn_score(const attn_fwd &p, float dot) {
    if (p.softcap > 0.f) return p.softcap * tanhf(dot * p.scale / p.softcap) * ATTN_LOG2E;
    return dot * p.scale_log2;
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
