/* linear_kda.c - the kda case family (Kimi Delta Attention): docs/hybrid.md. */
#include "linear_family.h"

static const lfam_kind K = {SGL_ATTN_HYBRID_KDA, "kda", 2, 4, 32, 16, 4, 1};
static const char *const modes[] = {"kda", NULL};
static const char *const matrix[] = {
    "kda:b=4,q=64",
    "kda:b=3,q=130",
    "kda:b=4,q=17,prefix=63",
    "kda:b=5,fwd=decode,prefix=40",
    "kda:b=3,fwd=verify,q=3,prefix=20",
    "kda:b=4,q=33,prefix=20,dtype=bf16",
    "kda:b=2,q=40,prefix=20,dtype=f64",
    "kda:b=2,q=24,prefix=8,hk=4,hv=4,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const quick[] = {"kda:b=3,q=70,prefix=10", "kda:b=4,fwd=decode,prefix=20", NULL};
static const char *const bench[] = {
    "kda:b=64,fwd=decode,prefix=1,hk=32,hv=32,dk=128,dv=128,dtype=bf16,ragged=0,pad=0", NULL};
static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(K.kind, i);
}
static void check(const htarget *t, const hcase *c, uint64_t seed, hresult *r) { lfam_check(&K, t, c, seed, r); }
static int bench_prepare(const htarget *t, const hcase *c, uint64_t seed, hbench *b, hresult *r) {
    return lfam_bench_prepare(&K, t, c, seed, b, r);
}

const harness_family harness_family_kda = {
    .name = "kda",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench,
    .check = check,
    .bench_prepare = bench_prepare,
};
