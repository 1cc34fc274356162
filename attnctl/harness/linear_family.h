/* linear_family.h - the engine the linear-attention case families share
 * (docs/hybrid.md, "Harness cases").  Each linear_<kind>.c defines its
 * harness_family over these with its kind's defaults. */
#ifndef ATTNCTL_LINEAR_FAMILY_H
#define ATTNCTL_LINEAR_FAMILY_H

#include "harness.h"

typedef struct lfam_kind {
    int kind;                       /* sgl_attn_hybrid_kind */
    const char *mode;               /* "gdn"... */
    int hk, hv, dk, dv, conv, hidden; /* default shapes */
} lfam_kind;

int lfam_applies(int kind, const sgl_attn_plugin_info *info);
void lfam_check(const lfam_kind *k, const htarget *t, const hcase *c, uint64_t seed, hresult *r);
int lfam_bench_prepare(const lfam_kind *k, const htarget *t, const hcase *c, uint64_t seed, hbench *b,
                       hresult *r);

/* minimax_sparse (linear_sparse.c) */
void lfam_sparse_check(const htarget *t, const hcase *c, uint64_t seed, hresult *r);

#endif
