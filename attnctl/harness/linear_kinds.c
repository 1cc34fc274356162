/* linear_kinds.c - the linear-attention case families as one table: per
 * kind, its cases (the conformance matrix, the --quick one, the bench
 * cases), the default shapes of a case and the inputs and shapes of its
 * layer (docs/hybrid.md, "Harness cases").  The recurrent kinds run on the
 * engine in linear_family.c against lref_run, minimax_sparse on the one in
 * linear_sparse.c against lref_sparse_query; every kind's NMSE limit is the
 * dtype limit of the wider of its input and state dtypes. */
#include "linear_family.h"

/* ragged batches with a padded row (defaults), lengths across the 64-token
 * chunk, state carried from a prefix extend, decode, verify + commit, every
 * dtype, GQA grouping, Qwen3-Next shapes; owner=caller: the same with the
 * state in the harness's tensors (ABI 1.2 caller-owned state) */
static const char *const gdn_matrix[] = {
    "gdn:b=4,q=64",
    "gdn:b=3,q=130",
    "gdn:b=4,q=17,prefix=63",
    "gdn:b=4,q=65,prefix=100",
    "gdn:b=5,fwd=decode,prefix=40",
    "gdn:b=3,fwd=verify,q=3,prefix=20",
    "gdn:b=4,q=65,prefix=30,owner=caller",
    "gdn:b=3,fwd=verify,q=3,prefix=20,owner=caller,dtype=bf16",
    "gdn:b=4,q=33,prefix=20,dtype=bf16",
    "gdn:b=4,q=33,prefix=20,dtype=f16",
    "gdn:b=2,q=40,prefix=20,dtype=f64",
    "gdn:b=3,q=20,prefix=9,hk=2,hv=8,dk=32,dv=16",
    "gdn:b=2,q=24,prefix=8,hk=16,hv=32,dk=128,dv=128,dtype=bf16",
    "gdn:b=8,fwd=decode,prefix=8,hk=16,hv=32,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const gdn_quick[] = {"gdn:b=3,q=70,prefix=10", "gdn:b=4,fwd=decode,prefix=20",
                                        "gdn:b=3,fwd=verify,q=3,prefix=9,dtype=bf16",
                                        "gdn:b=3,fwd=verify,q=3,prefix=9,owner=caller", NULL};
/* Qwen3-Next decode (32 value heads, K = V = 128, batch 64) and a long prefill */
static const char *const gdn_bench[] = {
    "gdn:b=64,fwd=decode,prefix=1,hk=16,hv=32,dk=128,dv=128,dtype=bf16,ragged=0,pad=0",
    "gdn:b=1,q=4096,hk=2,hv=8,dk=128,dv=128,dtype=bf16,ragged=0,pad=0",
    NULL};

static const char *const mamba2_matrix[] = {
    "mamba2:b=4,q=64",
    "mamba2:b=3,q=130",
    "mamba2:b=4,q=17,prefix=63",
    "mamba2:b=5,fwd=decode,prefix=40",
    "mamba2:b=3,fwd=verify,q=3,prefix=20",
    "mamba2:b=4,q=65,prefix=30,owner=caller",
    "mamba2:b=3,fwd=verify,q=3,prefix=20,owner=caller,dtype=bf16",
    "mamba2:b=4,q=33,prefix=20,dtype=bf16",
    "mamba2:b=2,q=40,prefix=20,dtype=f64",
    "mamba2:b=2,q=24,prefix=8,hk=8,hv=128,dk=128,dv=64,dtype=bf16",
    NULL};
static const char *const mamba2_quick[] = {"mamba2:b=3,q=70,prefix=10", "mamba2:b=4,fwd=decode,prefix=20",
                                           "mamba2:b=3,fwd=verify,q=3,prefix=9,owner=caller", NULL};
/* Nemotron-H-8B per rank: 8 groups, 128 heads, N 128, P 64 */
static const char *const mamba2_bench[] = {
    "mamba2:b=64,fwd=decode,prefix=1,hk=8,hv=128,dk=128,dv=64,dtype=bf16,ragged=0,pad=0", NULL};

static const char *const short_conv_matrix[] = {
    "short_conv:b=4,q=64",
    "short_conv:b=3,q=130",
    "short_conv:b=4,q=2,prefix=63",
    "short_conv:b=5,fwd=decode,prefix=40",
    "short_conv:b=3,fwd=verify,q=3,prefix=20",
    "short_conv:b=4,q=65,prefix=30,owner=caller",
    "short_conv:b=3,fwd=verify,q=3,prefix=20,owner=caller,dtype=bf16",
    "short_conv:b=4,q=33,prefix=20,dtype=bf16",
    "short_conv:b=2,q=40,prefix=20,dtype=f64",
    "short_conv:b=2,q=24,prefix=8,hidden=2048,dtype=bf16",
    NULL};
static const char *const short_conv_quick[] = {"short_conv:b=3,q=70,prefix=10", "short_conv:b=4,fwd=decode,prefix=20",
                                               "short_conv:b=3,fwd=verify,q=3,prefix=9,owner=caller", NULL};
static const char *const short_conv_bench[] = {
    "short_conv:b=64,fwd=decode,prefix=2,hidden=2048,dtype=bf16,ragged=0,pad=0", NULL};

static const char *const kda_matrix[] = {
    "kda:b=4,q=64",
    "kda:b=3,q=130",
    "kda:b=4,q=17,prefix=63",
    "kda:b=5,fwd=decode,prefix=40",
    "kda:b=3,fwd=verify,q=3,prefix=20",
    "kda:b=4,q=65,prefix=30,owner=caller",
    "kda:b=3,fwd=verify,q=3,prefix=20,owner=caller,dtype=bf16",
    "kda:b=4,q=33,prefix=20,dtype=bf16",
    "kda:b=2,q=40,prefix=20,dtype=f64",
    "kda:b=2,q=24,prefix=8,hk=4,hv=4,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const kda_quick[] = {"kda:b=3,q=70,prefix=10", "kda:b=4,fwd=decode,prefix=20",
                                        "kda:b=3,fwd=verify,q=3,prefix=9,owner=caller", NULL};
static const char *const kda_bench[] = {
    "kda:b=64,fwd=decode,prefix=1,hk=32,hv=32,dk=128,dv=128,dtype=bf16,ragged=0,pad=0", NULL};

static const char *const lightning_matrix[] = {
    "lightning:b=4,q=64",
    "lightning:b=3,q=130",
    "lightning:b=4,q=17,prefix=63",
    "lightning:b=5,fwd=decode,prefix=40",
    "lightning:b=3,fwd=verify,q=3,prefix=20",
    "lightning:b=4,q=65,prefix=30,owner=caller",
    "lightning:b=3,fwd=verify,q=3,prefix=20,owner=caller,dtype=bf16",
    "lightning:b=4,q=33,prefix=20,dtype=bf16",
    "lightning:b=2,q=40,prefix=20,dtype=f64",
    "lightning:b=2,q=24,prefix=8,hv=8,dk=128,dv=128,dtype=bf16",
    NULL};
static const char *const lightning_quick[] = {"lightning:b=3,q=70,prefix=10", "lightning:b=4,fwd=decode,prefix=20",
                                              "lightning:b=3,fwd=verify,q=3,prefix=9,owner=caller", NULL};
/* MiniMax-Text-01 per rank of 8: 8 heads of 128 */
static const char *const lightning_bench[] = {
    "lightning:b=64,fwd=decode,prefix=1,hv=8,dk=128,dv=128,dtype=bf16,ragged=0,pad=0", NULL};

static const char *const minimax_sparse_matrix[] = {
    "minimax_sparse:b=3,fwd=decode,l=300",
    "minimax_sparse:b=3,l=300,q=40",
    "minimax_sparse:b=2,l=129,q=129,page=1",
    "minimax_sparse:b=3,fwd=decode,l=500,block=16,topk=8,page=64",
    "minimax_sparse:b=3,l=200,q=33,dtype=bf16",
    "minimax_sparse:b=2,l=200,q=20,dtype=f64",
    "minimax_sparse:b=2,fwd=decode,l=1000,hq=16,hkv=1,d=128,dv=128,block=64,topk=4,dtype=bf16",
    NULL};
static const char *const minimax_sparse_quick[] = {"minimax_sparse:b=3,fwd=decode,l=300",
                                                   "minimax_sparse:b=2,l=150,q=30", NULL};
static const char *const minimax_sparse_bench[] = {NULL}; /* the sparse layers have no bench of their own yet */

static const char *const gdn_modes[] = {"gdn", NULL}, *const mamba2_modes[] = {"mamba2", NULL},
                         *const short_conv_modes[] = {"short_conv", NULL}, *const kda_modes[] = {"kda", NULL},
                         *const lightning_modes[] = {"lightning", NULL},
                         *const minimax_sparse_modes[] = {"minimax_sparse", NULL};

#define FAMILY(k, check_, bench_)                                                                              \
    {.name = #k, .modes = k##_modes, .applies = lfam_applies, .matrix = k##_matrix, .quick_matrix = k##_quick,  \
     .bench_cases = k##_bench, .check = check_, .bench_prepare = bench_}
#define RECURRENT(k) FAMILY(k, lfam_check, lfam_bench_prepare)

/* hk, hv, dk, dv: gdn / kda key and value heads and dims; mamba2 groups,
 * heads, N, P; lightning heads (hk follows hv) and dims. */
static const lfam_kind kinds[] = {
    {.family = RECURRENT(gdn), .kind = SGL_ATTN_HYBRID_GDN,
     .hk = 2, .hv = 4, .dk = 32, .dv = 16, .conv = 4, .hidden = 1,
     .inputs = LF_IN_X | LF_IN_A | LF_IN_B, .conv_channels = LF_CONV_QKV,
     .state_mads = 3 /* the delta rule: S'k, S q and the rank-1 update */},
    {.family = RECURRENT(mamba2), .kind = SGL_ATTN_HYBRID_MAMBA2,
     .hk = 2, .hv = 4, .dk = 16, .dv = 8, .conv = 4, .hidden = 1,
     .inputs = LF_IN_X | LF_IN_A | LF_IN_D, .conv_channels = LF_CONV_QKV,
     .state_mads = 2 /* decayed linear attention: the update and the read */},
    {.family = RECURRENT(short_conv), .kind = SGL_ATTN_HYBRID_SHORT_CONV,
     .hk = 1, .hv = 1, .dk = 1, .dv = 1, .conv = 3, .hidden = 256,
     .inputs = LF_IN_X, .conv_channels = LF_CONV_HIDDEN, .out_hidden = 1},
    {.family = RECURRENT(kda), .kind = SGL_ATTN_HYBRID_KDA,
     .hk = 2, .hv = 4, .dk = 32, .dv = 16, .conv = 4, .hidden = 1,
     .inputs = LF_IN_X | LF_IN_A | LF_IN_B, .conv_channels = LF_CONV_QKV, .gate_per_k = 1,
     .state_mads = 3},
    {.family = RECURRENT(lightning), .kind = SGL_ATTN_HYBRID_LIGHTNING,
     .hk = 4, .hv = 4, .dk = 32, .dv = 16, .conv = 0, .hidden = 1,
     .inputs = LF_IN_QKV | LF_IN_DECAY, .conv_channels = LF_CONV_NONE, .heads_tied = 1,
     .state_mads = 2},
    {.family = FAMILY(minimax_sparse, lfam_sparse_check, NULL), .kind = SGL_ATTN_HYBRID_MINIMAX_SPARSE},
};

const harness_family *const harness_families_linear[] = {
    &kinds[0].family, &kinds[1].family, &kinds[2].family, &kinds[3].family, &kinds[4].family, &kinds[5].family,
    NULL};
_Static_assert(sizeof kinds / sizeof *kinds == sizeof harness_families_linear / sizeof *harness_families_linear - 1,
               "every row of kinds is listed once");

int lfam_applies(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps) {
    (void)caps;
    const lfam_kind *k = (const lfam_kind *)f;
    return info->role == SGL_ATTN_ROLE_HYBRID && info->hybrid_kind == k->kind;
}
