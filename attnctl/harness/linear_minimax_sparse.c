/* linear_minimax_sparse.c - the minimax_sparse case family (engine in
 * linear_sparse.c): docs/hybrid.md. */
#include "linear_family.h"

static const char *const modes[] = {"minimax_sparse", NULL};
static const char *const matrix[] = {
    "minimax_sparse:b=3,fwd=decode,l=300",
    "minimax_sparse:b=3,l=300,q=40",
    "minimax_sparse:b=2,l=129,q=129,page=1",
    "minimax_sparse:b=3,fwd=decode,l=500,block=16,topk=8,page=64",
    "minimax_sparse:b=3,l=200,q=33,dtype=bf16",
    "minimax_sparse:b=2,l=200,q=20,dtype=f64",
    "minimax_sparse:b=2,fwd=decode,l=1000,hq=16,hkv=1,d=128,dv=128,block=64,topk=4,dtype=bf16",
    NULL};
static const char *const quick[] = {"minimax_sparse:b=3,fwd=decode,l=300", "minimax_sparse:b=2,l=150,q=30", NULL};
static const char *const no_bench[] = {NULL}; /* the sparse layers have no bench of their own yet */

static int applies(const sgl_attn_plugin_info *i, const sgl_attn_caps *c) {
    (void)c;
    return lfam_applies(SGL_ATTN_HYBRID_MINIMAX_SPARSE, i);
}

const harness_family harness_family_minimax_sparse = {
    .name = "minimax_sparse",
    .modes = modes,
    .applies = applies,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = no_bench,
    .check = lfam_sparse_check,
    .bench_prepare = NULL,
};
