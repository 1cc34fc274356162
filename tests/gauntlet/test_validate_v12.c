/* test_validate_v12.c - the validation layer and ABI 1.2: it declares every
 * 1.2 feature and DSA op (so a stack claims what its inner claims), its
 * vtable has each 1.2 op exactly where the inner has one, valid 1.2 inputs
 * reach the inner, and each bad 1.2 field is refused with its name before
 * the inner sees it.  The batches are batch_fixture's random valid ones. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "validate_fake.h"

/* The fixture's claims plus every ABI 1.2 feature and DSA op. */
static void claim_v12(fx *f) {
    f->caps.features |= SGL_ATTN_FEAT_ALL_V1_2;
    f->caps.dsa_ops = SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER;
}

static void build(fx *f, uint64_t *seed, int mode, int page) {
    static const int32_t heads[][2] = {{4, 4}, {8, 2}, {8, 1}};
    int h = fx_range(seed, 0, 2);
    fx_shape s = {mode, fx_range(seed, 2, 5), fx_range(seed, 4, 60), page, heads[h][0], heads[h][1],
                  fx_range(seed, 0, 1) ? 64 : 32, fx_range(seed, 0, 1) ? 64 : 32};
    assert_int_equal(fx_build(f, &s, fx_rand(seed)), 0);
    claim_v12(f);
}

/* The call was refused with `rc` and a message holding `want`, and the
 * inner saw nothing more than `calls`. */
static void refused(sgl_attn_backend *b, int got, int rc, const char *want, const fake_inner *in, int calls) {
    const char *msg = b->ops->last_error(b);
    if (got != rc || !strstr(msg, want))
        fail_msg("expected status %d and a message with \"%s\"; got %d, \"%s\"", rc, want, got, msg);
    assert_int_equal(in->calls, calls);
}

static DLTensor tensor(void *data, int ndim, int64_t *shape, uint8_t code, uint8_t bits) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = ndim;
    t.shape = shape;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    return t;
}

/* ----------------------------------------------------------------- tests */

/* The probe's claims leave the inner's unchanged under the host's intersection. */
static void test_caps_pass_everything(void **state) {
    (void)state;
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(validate_plugin()->probe(0, &c), SGL_ATTN_OK);
    assert_int_equal(c.features & SGL_ATTN_FEAT_ALL_V1_2, SGL_ATTN_FEAT_ALL_V1_2);
    assert_int_equal(c.dsa_ops, SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER | SGL_ATTN_DSA_KV_FP8_RECORD);
    const uint32_t dts = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64 |
                         SGL_ATTN_DT_FP8_E4M3 | SGL_ATTN_DT_FP8_E5M2;
    assert_int_equal(c.q_dtypes & dts, dts);
    assert_int_equal(c.kv_dtypes & dts, dts);
}

/* Each 1.2 op is in the layer's vtable exactly when the inner has it. */
static void test_ops_mirror_inner(void **state) {
    uint64_t seed = *(uint64_t *)*state;
    fx f;
    build(&f, &seed, SGL_ATTN_MODE_DECODE, 1);
    fake_inner old, cur;
    sgl_attn_backend *b = make_layer(&f, &old, VF_GRAPH | VF_V11_SIZE);
    assert_null(b->ops->forward_ragged);
    assert_null(b->ops->init_forward_metadata_in_graph);
    assert_null(b->ops->state_batch);
    assert_null(b->ops->indexer_topk);
    b->ops->destroy(b);
    b = make_layer(&f, &cur, VF_ALL);
    assert_non_null(b->ops->forward_ragged);
    assert_non_null(b->ops->init_forward_metadata_in_graph);
    assert_non_null(b->ops->state_batch);
    assert_non_null(b->ops->indexer_topk);
    /* in_graph checks its arguments as capture does, then forwards */
    sgl_attn_graph_args g = {sizeof g, 1, 1, SGL_ATTN_MODE_DECODE, &f.batch, NULL};
    refused(b, b->ops->init_forward_metadata_in_graph(b, &g), SGL_ATTN_E_INVALID,
            "init_forward_metadata_in_graph: called before init_graph_state", &cur, 0);
    assert_int_equal(b->ops->init_graph_state(b, 1, 1), SGL_ATTN_OK);
    assert_int_equal(b->ops->init_forward_metadata_in_graph(b, &g), SGL_ATTN_OK);
    assert_int_equal(cur.calls, 2);
    b->ops->destroy(b);
    fx_free(&f);
}

/* A verify batch in a graph reaches the inner where the caps claim
 * GRAPH_VERIFY, and is refused by the bit's name where they do not. */
static void test_graph_verify_caps(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x6a;
    fx f;
    build(&f, &seed, SGL_ATTN_MODE_DECODE, 1);
    fake_inner in;
    sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
    sgl_attn_graph_args g = {sizeof g, 1, 1, SGL_ATTN_MODE_TARGET_VERIFY, &f.batch, NULL};
    assert_int_equal(b->ops->init_graph_state(b, 1, 1), SGL_ATTN_OK);
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_OK);
    assert_int_equal(in.n_graph, 2);
    b->ops->destroy(b);
    f.caps.features &= ~(uint32_t)SGL_ATTN_FEAT_GRAPH_VERIFY;
    b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->init_graph_state(b, 1, 1), SGL_ATTN_OK);
    const int calls = in.calls;
    refused(b, b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_E_INVALID,
            "init_forward_metadata_capture: graph_args->forward_mode is target_verify but the backend does not claim "
            "SGL_ATTN_FEAT_GRAPH_VERIFY", &in, calls);
    /* a decode batch in the same graph state still reaches it */
    g.forward_mode = SGL_ATTN_MODE_DECODE;
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_OK);
    b->ops->destroy(b);
    fx_free(&f);
}

/* A page table in place of req_to_token (NULL) reaches the inner; a bad page is named. */
static void test_page_table(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x71;
    for (int mode = SGL_ATTN_MODE_EXTEND; mode <= SGL_ATTN_MODE_DECODE; mode++) {
        fx f;
        build(&f, &seed, mode, fx_range(&seed, 0, 1) ? 4 : 1);
        const int32_t ps = f.s.page, bs = f.s.bs, width = f.max_ctx / ps;
        int64_t *pt = calloc((size_t)bs * (size_t)width, sizeof *pt), sh[2] = {bs, width};
        for (int32_t i = 0; i < bs; i++)
            for (int32_t j = 0; j * ps < fx_get(&f.t_seq, i); j++)
                pt[i * width + j] = fx_rtt_get(&f, fx_get(&f.t_rpi, i), (int64_t)j * ps) / ps;
        DLTensor t = tensor(pt, 2, sh, kDLInt, 64);
        f.batch.page_table = &t;
        f.batch.req_to_token = NULL;
        f.batch.req_pool_indices = NULL;
        fake_inner in;
        sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
        assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
        assert_int_equal(run_forward(b, &f), SGL_ATTN_OK);
        assert_int_equal(in.calls, 2);
        /* a new token written where its page table row does not read it */
        int32_t i = fx_range(&seed, 0, bs - 1);
        int64_t last = (fx_get(&f.t_seq, i) - 1) / ps;
        pt[i * width + last] = -1 - fx_range(&seed, 0, 9);
        char want[128];
        snprintf(want, sizeof want, "batch->page_table[%d][%lld] = %lld is not a page", (int)i, (long long)last,
                 (long long)pt[i * width + last]);
        refused(b, b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID, want, &in, 2);
        /* without a page table, req_to_token is needed */
        f.batch.page_table = NULL;
        refused(b, b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID, "batch->req_to_token is NULL", &in,
                2);
        b->ops->destroy(b);
        free(pt);
        fx_free(&f);
    }
}

/* A verify batch's tree mask: right sizes pass, a wrong segment is named. */
static void test_tree_mask(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x72;
    fx f;
    build(&f, &seed, SGL_ATTN_MODE_DECODE, 1);
    f.batch.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY; /* tokens_per_req 1: a chain of one */
    const int32_t bs = f.s.bs;
    int64_t *ip = calloc((size_t)bs + 1, sizeof *ip), sh_ip[1] = {bs + 1};
    for (int32_t i = 0; i < bs; i++) ip[i + 1] = ip[i] + fx_get(&f.t_seq, i);
    int64_t sh_m[1] = {ip[bs]};
    uint8_t *mask = malloc((size_t)ip[bs] + 1);
    memset(mask, 1, (size_t)ip[bs] + 1);
    DLTensor tm = tensor(mask, 1, sh_m, kDLUInt, 8), ti = tensor(ip, 1, sh_ip, kDLInt, 64);
    f.batch.custom_mask = &tm;
    f.batch.mask_indptr = &ti;
    fake_inner in;
    sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    assert_int_equal(b->ops->forward_extend(b, &f.args), SGL_ATTN_OK);
    int32_t i = fx_range(&seed, 0, bs - 1);
    for (int32_t k = i + 1; k <= bs; k++) ip[k]++;
    char want[160];
    snprintf(want, sizeof want, "batch->mask_indptr[%d] = %lld, mask_indptr[%d] = %lld: request %d's mask", (int)i,
             (long long)ip[i], (int)i + 1, (long long)ip[i + 1], (int)i);
    refused(b, b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID, want, &in, 2);
    f.batch.mask_indptr = NULL;
    refused(b, b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID,
            "batch->custom_mask is set without batch->mask_indptr", &in, 2);
    b->ops->destroy(b);
    free(mask);
    free(ip);
    fx_free(&f);
}

/* Forward fields: lse, scale tensors, slot_map, q_rope, topk_indices, dual chunk. */
static void test_forward_fields(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x73;
    fx f;
    build(&f, &seed, fx_range(&seed, 0, 1) ? SGL_ATTN_MODE_DECODE : SGL_ATTN_MODE_EXTEND, 1);
    const int64_t T = f.T, hq = f.s.hq;
    float *lse = calloc((size_t)(T * hq), sizeof *lse), one = 1.0f;
    int64_t sh_lse[2] = {T, hq}, sh_bad[2] = {T, hq + 1}, sh1[1] = {1}, sh2[1] = {2};
    DLTensor t_lse = tensor(lse, 2, sh_lse, kDLFloat, 32);
    fake_inner in;
    sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    f.args.lse = &t_lse;
    assert_int_equal(run_forward(b, &f), SGL_ATTN_OK);
    int calls = in.calls;
    t_lse.shape = sh_bad;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->lse", &in, calls);
    t_lse.shape = sh_lse;
    t_lse.dtype.bits = 16;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->lse", &in, calls);
    t_lse.dtype.bits = 32;
    t_lse.data = f.out; /* written twice */
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->lse shares memory with out", &in, calls);
    t_lse.data = lse;
    /* scale tensors: [1] fp32 */
    DLTensor t_scale = tensor(&one, 1, sh2, kDLFloat, 32);
    f.layer.k_scale_tensor = &t_scale;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "layer->k_scale_tensor", &in, calls);
    t_scale.shape = sh1;
    assert_int_equal(run_forward(b, &f), SGL_ATTN_OK);
    calls = in.calls;
    /* slot_map must cover every slot the batch names */
    int64_t sh_map[1] = {1}; /* two or more distinct slots: the largest is >= 1 */
    int64_t map[1] = {0};
    DLTensor t_map = tensor(map, 1, sh_map, kDLInt, 64);
    f.layer.slot_map = &t_map;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "is outside layer->slot_map", &in, calls);
    f.layer.slot_map = NULL;
    /* MLA's rope split on a model that is not MLA */
    f.args.q_rope = &f.t_q;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->q_rope is set but the model is not MLA", &in, calls);
    f.args.q_rope = NULL;
    /* sparse MLA's indices on a plain model */
    int32_t idx = 0;
    int64_t sh_k[2] = {1, 1};
    DLTensor t_topk = tensor(&idx, 2, sh_k, kDLInt, 32);
    f.args.topk_indices = &t_topk;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->topk_indices is set but the model is not MLA", &in, calls);
    f.args.topk_indices = NULL;
    /* dual chunk: chunk_size must exceed local_size */
    sgl_attn_dual_chunk dc = {sizeof dc, 16, 16, 0, &f.t_q, &f.t_q};
    f.args.dual_chunk = &dc;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->dual_chunk: chunk_size = 16, local_size = 16", &in, calls);
    dc.local_size = 4;
    dc.q_inter = NULL;
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->dual_chunk->q_inter is NULL", &in, calls);
    dc.q_inter = &f.t_q;
    assert_int_equal(run_forward(b, &f), SGL_ATTN_OK);
    /* a backend that does not claim the bit: refused by name */
    b->ops->destroy(b);
    f.caps.features &= ~(uint32_t)SGL_ATTN_FEAT_LSE;
    b = make_layer(&f, &in, VF_ALL);
    f.args.dual_chunk = NULL;
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    refused(b, run_forward(b, &f), SGL_ATTN_E_INVALID, "args->lse is set (ABI 1.2) but the backend does not claim SGL_ATTN_FEAT_LSE",
            &in, 1);
    b->ops->destroy(b);
    free(lse);
    fx_free(&f);
}

/* forward_ragged: a valid call reaches the inner; bad offsets are named. */
static void test_ragged(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x74;
    fx f;
    build(&f, &seed, SGL_ATTN_MODE_DECODE, 1);
    enum { BS = 3 };
    const int64_t hq = 4, hkv = 2, d = 32;
    int32_t lq[BS], lk[BS], cq[BS + 1] = {0}, ck[BS + 1] = {0};
    for (int i = 0; i < BS; i++) {
        lq[i] = fx_range(&seed, 0, 6);
        lk[i] = lq[i] + fx_range(&seed, 0, 6);
        cq[i + 1] = cq[i] + lq[i];
        ck[i + 1] = ck[i] + lk[i];
    }
    float *q = calloc((size_t)(cq[BS] * hq * d) + 1, sizeof *q), *out = calloc((size_t)(cq[BS] * hq * d) + 1, 4);
    float *k = calloc((size_t)(ck[BS] * hkv * d) + 1, sizeof *k), *v = calloc((size_t)(ck[BS] * hkv * d) + 1, 4);
    int64_t sh_q[3] = {cq[BS], hq, d}, sh_k[3] = {ck[BS], hkv, d}, sh_cu[1] = {BS + 1};
    DLTensor tq = tensor(q, 3, sh_q, kDLFloat, 32), to = tensor(out, 3, sh_q, kDLFloat, 32);
    DLTensor tk = tensor(k, 3, sh_k, kDLFloat, 32), tv = tensor(v, 3, sh_k, kDLFloat, 32);
    DLTensor tcq = tensor(cq, 1, sh_cu, kDLInt, 32), tck = tensor(ck, 1, sh_cu, kDLInt, 32);
    sgl_attn_ragged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.batch_size = BS;
    a.num_q_heads = (int32_t)hq;
    a.num_kv_heads = (int32_t)hkv;
    a.head_dim_qk = a.head_dim_v = (int32_t)d;
    a.sm_scale = 0.125f;
    a.causal = 1;
    a.q = &tq, a.k = &tk, a.v = &tv, a.out = &to;
    a.cu_seqlens_q = &tcq, a.cu_seqlens_k = &tck;
    fake_inner in;
    f.max_tokens += 64; /* room for every query token drawn */
    sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->forward_ragged(b, &a), SGL_ATTN_OK);
    assert_int_equal(in.calls, 1);
    int calls = in.calls;
    int32_t was = cq[1];
    cq[1] = cq[2] + 1; /* request 1's length < 0 */
    char want[128];
    snprintf(want, sizeof want, "args->cu_seqlens_q[2] = %d after %d; expected offsets that never decrease", cq[2],
             cq[1]);
    refused(b, b->ops->forward_ragged(b, &a), SGL_ATTN_E_INVALID, want, &in, calls);
    cq[1] = was;
    a.max_seqlen_k = 0;
    a.causal = 2;
    refused(b, b->ops->forward_ragged(b, &a), SGL_ATTN_E_INVALID, "args->causal = 2", &in, calls);
    a.causal = 1;
    a.struct_size = offsetof(sgl_attn_ragged_args, stream);
    refused(b, b->ops->forward_ragged(b, &a), SGL_ATTN_E_INVALID, "args->struct_size", &in, calls);
    a.struct_size = sizeof a;
    a.lse = &to; /* [Tq, Hq, D]: not the LSE's shape */
    refused(b, b->ops->forward_ragged(b, &a), SGL_ATTN_E_INVALID, "args->lse", &in, calls);
    b->ops->destroy(b);
    free(q), free(out), free(k), free(v);
    fx_free(&f);
}

/* state_batch and caller-owned linear state. */
static void test_state(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x75;
    fx f;
    build(&f, &seed, SGL_ATTN_MODE_DECODE, 1);
    fake_inner in;
    sgl_attn_backend *b = make_layer(&f, &in, VF_ALL);
    int32_t dst[2] = {0, 1}, src[2] = {1, 0};
    int64_t sh2[1] = {2};
    DLTensor td = tensor(dst, 1, sh2, kDLInt, 32), ts = tensor(src, 1, sh2, kDLInt, 32);
    sgl_attn_state_batch_args a = {sizeof a, SGL_ATTN_STATE_COPY, 2, &td, &ts, NULL, NULL, NULL};
    assert_int_equal(b->ops->state_batch(b, &a), SGL_ATTN_OK);
    assert_int_equal(in.calls, 1);
    dst[1] = f.max_reqs;
    char want[128];
    snprintf(want, sizeof want, "args->dst[1] = %d; expected -1 (skip) or a slot 0..%d", (int)f.max_reqs,
             (int)f.max_reqs - 1);
    refused(b, b->ops->state_batch(b, &a), SGL_ATTN_E_INVALID, want, &in, 1);
    dst[1] = 1;
    a.src = NULL;
    refused(b, b->ops->state_batch(b, &a), SGL_ATTN_E_INVALID, "args->src is NULL; copy needs [count] src", &in, 1);
    a.op = 7;
    refused(b, b->ops->state_batch(b, &a), SGL_ATTN_E_INVALID, "args->op = 7", &in, 1);
    b->ops->destroy(b);

    /* a linear layer's caller-owned state: one slot count, indices inside it */
    f.model.hybrid_kind = SGL_ATTN_HYBRID_GDN;
    f.model.full_attention_mask[0] = 1u << 1; /* layer 0 is linear */
    b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    const int64_t S = 3;
    float ssm[3 * 2 * 4 * 4], conv[3 * 8 * 3], o[512];
    int64_t sh_ssm[4] = {S, 2, 4, 4}, sh_conv[3] = {S + 1, 8, 3}, sh_o[2] = {f.T, 1};
    int32_t *si = calloc((size_t)f.s.bs, sizeof *si);
    int64_t sh_si[1] = {f.s.bs};
    DLTensor t_ssm = tensor(ssm, 4, sh_ssm, kDLFloat, 32), t_conv = tensor(conv, 3, sh_conv, kDLFloat, 32);
    DLTensor t_o = tensor(o, 2, sh_o, kDLFloat, 32), t_si = tensor(si, 1, sh_si, kDLInt, 32);
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_GDN;
    io.out = &t_o;
    io.ssm_state = &t_ssm;
    io.state_indices = &t_si;
    f.layer.layer_id = 0;
    f.args.linear = &io;
    assert_int_equal(b->ops->forward_decode(b, &f.args), SGL_ATTN_OK);
    int calls = in.calls;
    int32_t r = fx_range(&seed, 0, f.s.bs - 1);
    si[r] = (int32_t)S;
    snprintf(want, sizeof want, "linear->state_indices[%d] = %d is outside -1..%d (linear->ssm_state's slots", (int)r,
             (int)S, (int)S - 1);
    refused(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID, want, &in, calls);
    si[r] = -1;
    io.conv_state = &t_conv;
    refused(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
            "linear->ssm_state has 3 slots but linear->conv_state has 4", &in, calls);
    b->ops->destroy(b);
    /* an inner that does not claim caller-owned state */
    f.caps.features &= ~(uint32_t)SGL_ATTN_FEAT_CALLER_STATE;
    b = make_layer(&f, &in, VF_ALL);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    refused(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
            "linear->conv_state is set (ABI 1.2 caller-owned state) but the backend does not claim "
            "SGL_ATTN_FEAT_CALLER_STATE",
            &in, 1);
    b->ops->destroy(b);
    free(si);
    fx_free(&f);
}

int main(void) {
    uint64_t seed = fx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps_pass_everything),
        cmocka_unit_test_prestate(test_ops_mirror_inner, &seed),
        cmocka_unit_test_prestate(test_graph_verify_caps, &seed),
        cmocka_unit_test_prestate(test_page_table, &seed),
        cmocka_unit_test_prestate(test_tree_mask, &seed),
        cmocka_unit_test_prestate(test_forward_fields, &seed),
        cmocka_unit_test_prestate(test_ragged, &seed),
        cmocka_unit_test_prestate(test_state, &seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
