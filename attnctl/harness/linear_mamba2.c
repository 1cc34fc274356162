/* linear_mamba2.c - the mamba2 case family (Mamba-2 SSD): docs/hybrid.md. */
#include "linear_family.h"

static const lfam_kind K = {SGL_ATTN_HYBRID_MAMBA2, "mamba2", 2, 4, 16, 8, 4, 1};
static const char *const modes[] = {"mamba2", NULL};
static const char *const matrix[] = {
    "mamba2:b=4,q=64",
    "mamba2:b=3,q=130",
    "mamba2:b=4,q=17,prefix=63",
    "mamba2:b=5,fwd=decode,prefix=40",
    "mamba2:b=3,fwd=verify,q=3,prefix=20",
    "mamba2:b=4,q=33,prefix=20,dtype=bf16",
    "mamba2:b=2,q=40,prefix=20,dtype=f64",
    "mamba2:b=2,q=24,prefix=8,hk=8,hv=128,dk=128,dv=64,dtype=bf16",
    NULL};
static const char *const quick[] = {"mamba2:b=3,q=70,prefix=10", "mamba2:b=4,fwd=decode,prefix=20", NULL};
/* Nemotron-H-8B per rank: 8 groups, 128 heads, N 128, P 64 */
static const char *const bench[] = {
    "mamba2:b=64,fwd=decode,prefix=1,hk=8,hv=128,dk=128,dv=64,dtype=bf16,ragged=0,pad=0", NULL};
static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(K.kind, i);
}
static void check(const htarget *t, const hcase *c, uint64_t seed, hresult *r) { lfam_check(&K, t, c, seed, r); }
static int bench_prepare(const htarget *t, const hcase *c, uint64_t seed, hbench *b, hresult *r) {
    return lfam_bench_prepare(&K, t, c, seed, b, r);
}

const harness_family harness_family_mamba2 = {
    .name = "mamba2",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench,
    .check = check,
    .bench_prepare = bench_prepare,
};
