/* test_hybrid_state.c - the state pool: speculative verify keeps one state
 * per draft token and leaves the main state alone, state_commit installs the
 * accepted step (-1 keeps), copy and clear act on every layer of a slot, bad
 * slots and steps are refused without changing anything, and the per-request
 * state size matches the model. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_scen.h"

static const tu_shape gdn_shape = {2, 4, 16, 8, 4, 0};
static const tu_shape sc_shape = {0, 0, 0, 0, 3, 24};
static const tu_shape mamba_shape = {2, 4, 8, 6, 4, 0};

static int commit(scen *s, int n, const int *steps) {
    ttensor acc;
    tt_make(&acc, tu_dt(0), 1, n, 0, 0);
    for (int i = 0; i < n; i++) tt_set(&acc, i, steps[i]);
    int rc = s->b->ops->state_commit(s->b, &acc.t);
    tt_free(&acc);
    return rc;
}

static void verify_commit(int kind, const tu_shape *sh, uint32_t dt, double tol, uint64_t seed) {
    scen s;
    scen_open(&s, kind, sh, dt, dt, -1, tol, seed, STEPS);
    /* committing before any verify is out of order */
    int none[] = {0};
    assert_int_equal(commit(&s, 1, none), SGL_ATTN_E_STATE);
    {
        int slots[] = {1, 4, 6}, n[] = {6, 9, 3}, pre[] = {0, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 3, slots, n, pre, 0);
    }
    {   /* verify 3 draft tokens per request, one padded row */
        int slots[] = {1, 4, -1, 6}, n[] = {3, 3, 3, 3}, pre[] = {6, 9, 0, 3};
        run_batch(&s, SGL_ATTN_MODE_TARGET_VERIFY, 4, slots, n, pre, 1);
    }
    {   /* a step past the drafts is refused and changes nothing */
        int bad[] = {2, 3, -1, -1};
        assert_int_equal(commit(&s, 4, bad), SGL_ATTN_E_INVALID);
        assert_non_null(strstr(s.b->ops->last_error(s.b), "accepted_steps[1] = 3"));
        int shorter[] = {0, 0};
        assert_int_equal(commit(&s, 2, shorter), SGL_ATTN_E_INVALID);
    }
    {   /* slot 1 accepts step 2 (all drafts), slot 4 step 0, slot 6 keeps its state */
        int steps[] = {2, 0, 0, -1};
        assert_int_equal(commit(&s, 4, steps), SGL_ATTN_OK);
        scen_ref_commit(&s, 1, 2);
        scen_ref_commit(&s, 4, 0);
    }
    for (int k = 0; k < 2; k++) { /* decoding after the commit matches the reference */
        int slots[] = {1, 4, 6}, n[] = {1, 1, 1}, pre[] = {9 + k, 10 + k, 3 + k};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 3, slots, n, pre, 0);
    }
    {   /* verify without keep updates the main state like decode */
        int slots[] = {1, 6}, n[] = {2, 2}, pre[] = {11, 5};
        run_batch(&s, SGL_ATTN_MODE_TARGET_VERIFY, 2, slots, n, pre, 0);
        int slots2[] = {1, 6}, n2[] = {1, 1}, pre2[] = {13, 7};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 2, slots2, n2, pre2, 0);
    }
    scen_close(&s);
}

static void test_verify_commit_gdn(void **st) {
    (void)st;
    verify_commit(SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F64, 1e-20, 71);
    verify_commit(SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, 1e-11, 72);
}
static void test_verify_commit_short_conv(void **st) {
    (void)st;
    verify_commit(SGL_ATTN_HYBRID_SHORT_CONV, &sc_shape, SGL_ATTN_DT_F64, 1e-20, 73);
}
static void test_verify_commit_mamba2(void **st) {
    (void)st;
    verify_commit(SGL_ATTN_HYBRID_MAMBA2, &mamba_shape, SGL_ATTN_DT_F32, 1e-11, 74);
}

/* verify keeping more steps than the pool was made for is refused */
static void test_verify_needs_spec_tokens(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_GDN, &gdn_shape, SGL_ATTN_DT_F32, SGL_ATTN_DT_F32, -1, 1e-11, 75, 2);
    ttensor si, sl, x;
    tt_make(&si, tu_dt(0), 1, 1, 0, 0);
    tt_make(&sl, tu_dt(0), 1, 1, 0, 0);
    tt_set(&si, 0, 0);
    tt_set(&sl, 0, 5);
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY;
    batch.batch_size = 1;
    batch.num_tokens = 3;
    batch.page_size = 1;
    batch.tokens_per_req = 3;
    batch.seq_lens = &sl.t;
    batch.state_indices = &si.t;
    assert_int_equal(s.b->ops->init_forward_metadata(s.b, &batch), SGL_ATTN_OK);
    tt_make(&x, tu_dt(SGL_ATTN_DT_F32), 2, 3, s.w->d.conv_dim, 0);
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_GDN;
    io.x = &x.t;
    io.keep_intermediate = 1;
    sgl_attn_layer layer;
    memset(&layer, 0, sizeof layer);
    layer.struct_size = sizeof layer;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer = &layer;
    a.batch = &batch;
    a.linear = &io;
    /* the shapes are checked first: complete the io so only the pool is wrong */
    ttensor av, bv, out;
    tt_make(&av, tu_dt(SGL_ATTN_DT_F32), 2, 3, 4, 0);
    tt_make(&bv, tu_dt(SGL_ATTN_DT_F32), 2, 3, 4, 0);
    tt_make(&out, tu_dt(SGL_ATTN_DT_F32), 3, 3, 4, 8);
    io.a = &av.t;
    io.b = &bv.t;
    io.conv_weight = &s.lw[0].conv_w.t;
    io.A_log = &s.lw[0].A_log.t;
    io.dt_bias = &s.lw[0].dt_bias.t;
    io.out = &out.t;
    assert_int_equal(s.b->ops->forward_extend(s.b, &a), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(s.b->ops->last_error(s.b), "spec_tokens"));
    tt_free(&si); tt_free(&sl); tt_free(&x); tt_free(&av); tt_free(&bv); tt_free(&out);
    scen_close(&s);
}

static void test_copy_clear(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_KDA, &gdn_shape, SGL_ATTN_DT_F64, SGL_ATTN_DT_F64, -1, 1e-20, 76, 0);
    {
        int slots[] = {2, 3}, n[] = {11, 4}, pre[] = {0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 2, slots, n, pre, 0);
    }
    /* prefix reuse: slot 5 continues from a copy of slot 2 */
    assert_int_equal(s.b->ops->state_copy(s.b, 2, 5), SGL_ATTN_OK);
    scen_ref_copy(&s, 2, 5);
    /* a cleared slot decodes from zeros even though the batch says it has a prefix */
    assert_int_equal(s.b->ops->state_clear(s.b, 3), SGL_ATTN_OK);
    scen_ref_clear(&s, 3);
    {
        int slots[] = {2, 5, 3}, n[] = {1, 1, 1}, pre[] = {11, 11, 4};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 3, slots, n, pre, 0);
        run_batch(&s, SGL_ATTN_MODE_DECODE, 3, slots, n, pre, 0);
    }
    /* bad slots: refused, named */
    assert_int_equal(s.b->ops->state_clear(s.b, -1), SGL_ATTN_E_INVALID);
    assert_int_equal(s.b->ops->state_clear(s.b, SLOTS), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(s.b->ops->last_error(s.b), "slot 8"));
    assert_int_equal(s.b->ops->state_copy(s.b, 0, 99), SGL_ATTN_E_INVALID);
    assert_int_equal(s.b->ops->state_copy(s.b, -2, 0), SGL_ATTN_E_INVALID);
    {   /* and the pool is still what the reference says */
        int slots[] = {2, 5}, n[] = {1, 1}, pre[] = {13, 13};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 2, slots, n, pre, 0);
    }
    scen_close(&s);
}

/* Qwen3-Next-80B-A3B per TP rank 1: 48 layers, every 4th full; 16 key heads,
 * 32 value heads, K = V = 128, conv width 4; fp32 state. */
static void test_state_bytes(void **st) {
    (void)st;
    sgl_attn_model m;
    tu_shape q3 = {16, 32, 128, 128, 4, 0};
    tu_model(&m, SGL_ATTN_HYBRID_GDN, &q3, SGL_ATTN_DT_F32, 0);
    m.num_layers = 48;
    memset(m.full_attention_mask, 0, sizeof m.full_attention_mask);
    for (int l = 3; l < 48; l += 4) m.full_attention_mask[0] |= 1ull << l;
    const uint64_t conv = (2 * 16 * 128 + 32 * 128) * 3, ssm = 32ull * 128 * 128;
    assert_int_equal(hyb_plugin_gdn.state_bytes_per_request(&m), 36 * (conv + ssm) * 4);
    m.lin_state_dtype = SGL_ATTN_DT_F64;
    assert_int_equal(hyb_plugin_gdn.state_bytes_per_request(&m), 36 * (conv + ssm) * 8);
    /* verification keeps the state after each draft token too: 1 + spec_tokens copies */
    m.spec_tokens = 4;
    assert_int_equal(hyb_plugin_gdn.state_bytes_per_request(&m), 36 * (conv + ssm) * 8 * 5);
    m.spec_tokens = 1; /* one query token: no verify copies */
    assert_int_equal(hyb_plugin_gdn.state_bytes_per_request(&m), 36 * (conv + ssm) * 8);
    m.spec_tokens = 0;
    m.lin_state_dtype = SGL_ATTN_DT_BF16; /* not kept on the CPU: 0, and supports_model says why */
    assert_int_equal(hyb_plugin_gdn.state_bytes_per_request(&m), 0);
    char why[256] = "";
    assert_int_equal(hyb_plugin_gdn.supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "lin_state_dtype"));
    /* LFM2-1.2B: 16 layers, 10 conv (the rest attention), hidden 2048, L_cache 3 */
    tu_shape lf = {0, 0, 0, 0, 3, 2048};
    tu_model(&m, SGL_ATTN_HYBRID_SHORT_CONV, &lf, SGL_ATTN_DT_F32, 0);
    m.num_layers = 16;
    m.full_attention_mask[0] = (1u << 2) | (1u << 5) | (1u << 8) | (1u << 10) | (1u << 12) | (1u << 14);
    assert_int_equal(hyb_plugin_short_conv.state_bytes_per_request(&m), 10ull * 2048 * 2 * 4);
    /* minimax_sparse keeps no state */
    tu_model(&m, SGL_ATTN_HYBRID_MINIMAX_SPARSE, &lf, SGL_ATTN_DT_F32, 0);
    assert_int_equal(hyb_plugin_minimax_sparse.state_bytes_per_request(&m), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_commit_gdn),
        cmocka_unit_test(test_verify_commit_short_conv),
        cmocka_unit_test(test_verify_commit_mamba2),
        cmocka_unit_test(test_verify_needs_spec_tokens),
        cmocka_unit_test(test_copy_clear),
        cmocka_unit_test(test_state_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
