/* linear_short_conv.c - the short_conv case family (LFM2 gated short convolution): docs/hybrid.md. */
#include "linear_family.h"

static const lfam_kind K = {SGL_ATTN_HYBRID_SHORT_CONV, "short_conv", 1, 1, 1, 1, 3, 256};
static const char *const modes[] = {"short_conv", NULL};
static const char *const matrix[] = {
    "short_conv:b=4,q=64",
    "short_conv:b=3,q=130",
    "short_conv:b=4,q=2,prefix=63",
    "short_conv:b=5,fwd=decode,prefix=40",
    "short_conv:b=3,fwd=verify,q=3,prefix=20",
    "short_conv:b=4,q=33,prefix=20,dtype=bf16",
    "short_conv:b=2,q=40,prefix=20,dtype=f64",
    "short_conv:b=2,q=24,prefix=8,hidden=2048,dtype=bf16",
    NULL};
static const char *const quick[] = {"short_conv:b=3,q=70,prefix=10", "short_conv:b=4,fwd=decode,prefix=20", NULL};
static const char *const bench[] = {
    "short_conv:b=64,fwd=decode,prefix=2,hidden=2048,dtype=bf16,ragged=0,pad=0", NULL};
static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(K.kind, i);
}
static void check(const htarget *t, const hcase *c, uint64_t seed, hresult *r) { lfam_check(&K, t, c, seed, r); }
static int bench_prepare(const htarget *t, const hcase *c, uint64_t seed, hbench *b, hresult *r) {
    return lfam_bench_prepare(&K, t, c, seed, b, r);
}

const harness_family harness_family_short_conv = {
    .name = "short_conv",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench,
    .check = check,
    .bench_prepare = bench_prepare,
};
