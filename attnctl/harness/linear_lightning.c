/* linear_lightning.c - the lightning case family (MiniMax lightning attention): docs/hybrid.md. */
#include "linear_family.h"

static const lfam_kind K = {SGL_ATTN_HYBRID_LIGHTNING, "lightning", 4, 4, 32, 16, 0, 1};
static const char *const modes[] = {"lightning", NULL};
static const char *const matrix[] = {
    "lightning:b=4,q=64",
    "lightning:b=3,q=130",
    "lightning:b=4,q=17,prefix=63",
    "lightning:b=5,fwd=decode,prefix=40",
    "lightning:b=3,fwd=verify,q=3,prefix=20",
    "lightning:b=4,q=33,prefix=20,dtype=bf16",
    "lightning:b=2,q=40,prefix=20,dtype=f64",
    "lightning:b=2,q=24,prefix=8,hv=8,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const quick[] = {"lightning:b=3,q=70,prefix=10", "lightning:b=4,fwd=decode,prefix=20", NULL};
/* MiniMax-Text-01 per rank of 8: 8 heads of 128 */
static const char *const bench[] = {
    "lightning:b=64,fwd=decode,prefix=1,hv=8,dk=128,dv=128,dtype=bf16,ragged=0,pad=0", NULL};
static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(K.kind, i);
}
static void check(const htarget *t, const hcase *c, uint64_t seed, hresult *r) { lfam_check(&K, t, c, seed, r); }
static int bench_prepare(const htarget *t, const hcase *c, uint64_t seed, hbench *b, hresult *r) {
    return lfam_bench_prepare(&K, t, c, seed, b, r);
}

const harness_family harness_family_lightning = {
    .name = "lightning",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench,
    .check = check,
    .bench_prepare = bench_prepare,
};
