/* linear_family.h - the linear-attention case families (docs/hybrid.md,
 * "Harness cases"): one row per kind in linear_kinds.c, run by the recurrent
 * engine (linear_family.c) or the sparse one (linear_sparse.c). */
#ifndef ATTNCTL_LINEAR_FAMILY_H
#define ATTNCTL_LINEAR_FAMILY_H

#include "harness.h"

/* The inputs of sgl_attn_linear_io (and forward_args) a kind reads.  The
 * conv weight and bias come with a conv (conv_channels != LF_CONV_NONE),
 * A_log and dt_bias with the gate `a`. */
enum {
    LF_IN_X = 1u << 0,     /* x: the mixed input that is convolved */
    LF_IN_A = 1u << 1,     /* a: the gate (gdn / mamba2 dt per head, kda per head and K) */
    LF_IN_B = 1u << 2,     /* b: the delta rule's write strength */
    LF_IN_D = 1u << 3,     /* D: mamba2's skip */
    LF_IN_DECAY = 1u << 4, /* decay: lightning's per-head decay */
    LF_IN_QKV = 1u << 5,   /* q, k, v through forward_args (lightning) */
};

/* What the conv runs over. */
enum {
    LF_CONV_NONE,   /* no conv */
    LF_CONV_QKV,    /* q, k and v mixed: 2·hk·dk + hv·dv channels */
    LF_CONV_HIDDEN, /* `hidden` channels; x carries B, C and x (3·hidden) */
};

/* One kind: its family (first, so the engine finds the row from the family
 * it is called with), the default shapes of a case and the kind's layout. */
typedef struct lfam_kind {
    harness_family family;            /* name = case MODE = the kind's name */
    int kind;                         /* sgl_attn_hybrid_kind */
    int hk, hv, dk, dv, conv, hidden; /* default shapes of a case */
    unsigned inputs;                  /* LF_IN_* */
    int conv_channels;                /* LF_CONV_* */
    int gate_per_k;                   /* a and dt_bias: one per (head, K) rather than per head */
    int heads_tied;                   /* hk = hv (one set of heads) */
    int out_hidden;                   /* output [T][hidden] and no recurrent state */
    int state_mads;                   /* multiply-adds per state element and token */
} lfam_kind;

/* harness_family callbacks of the rows */
int lfam_applies(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps);
void lfam_check(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hresult *r);
int lfam_bench_prepare(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hbench *b,
                       hresult *r);
void lfam_sparse_check(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hresult *r);

#endif
