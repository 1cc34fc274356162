/* linear_gdn.c - the gdn case family (Gated DeltaNet): docs/hybrid.md. */
#include "linear_family.h"

static const lfam_kind K = {SGL_ATTN_HYBRID_GDN, "gdn", 2, 4, 32, 16, 4, 1};
static const char *const modes[] = {"gdn", NULL};
/* ragged batches with a padded row (defaults), lengths across the 64-token
 * chunk, state carried from a prefix extend, decode, verify + commit, every
 * dtype, GQA grouping, Qwen3-Next shapes */
static const char *const matrix[] = {
    "gdn:b=4,q=64",
    "gdn:b=3,q=130",
    "gdn:b=4,q=17,prefix=63",
    "gdn:b=4,q=65,prefix=100",
    "gdn:b=5,fwd=decode,prefix=40",
    "gdn:b=3,fwd=verify,q=3,prefix=20",
    "gdn:b=4,q=33,prefix=20,dtype=bf16",
    "gdn:b=4,q=33,prefix=20,dtype=f16",
    "gdn:b=2,q=40,prefix=20,dtype=f64",
    "gdn:b=3,q=20,prefix=9,hk=2,hv=8,dk=32,dv=16",
    "gdn:b=2,q=24,prefix=8,hk=16,hv=32,dk=128,dv=128,dtype=bf16",
    "gdn:b=8,fwd=decode,prefix=8,hk=16,hv=32,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const quick[] = {"gdn:b=3,q=70,prefix=10", "gdn:b=4,fwd=decode,prefix=20",
                                    "gdn:b=3,fwd=verify,q=3,prefix=9,dtype=bf16", NULL};
/* Qwen3-Next decode (32 value heads, K = V = 128, batch 64) and a long prefill */
static const char *const bench[] = {
    "gdn:b=64,fwd=decode,prefix=1,hk=16,hv=32,dk=128,dv=128,dtype=bf16,ragged=0,pad=0",
    "gdn:b=1,q=4096,hk=2,hv=8,dk=128,dv=128,dtype=bf16,ragged=0,pad=0",
    NULL};
static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(K.kind, i);
}
static void check(const htarget *t, const hcase *c, uint64_t seed, hresult *r) { lfam_check(&K, t, c, seed, r); }
static int bench_prepare(const htarget *t, const hcase *c, uint64_t seed, hbench *b, hresult *r) {
    return lfam_bench_prepare(&K, t, c, seed, b, r);
}

const harness_family harness_family_gdn = {
    .name = "gdn",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench,
    .check = check,
    .bench_prepare = bench_prepare,
};
