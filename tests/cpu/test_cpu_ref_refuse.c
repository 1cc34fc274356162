/* test_cpu_ref_refuse.c - every kind of bad input is refused with a status,
 * a message naming the argument, and nothing written: the output keeps its
 * poison and the pool its bytes.  The backend keeps working afterwards. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

typedef void (*mutate_fn)(tc_run *r);

static void set_idx(void *p, int is64, int64_t i, int64_t v) {
    if (is64) ((int64_t *)p)[i] = v;
    else ((int32_t *)p)[i] = (int32_t)v;
}

static int64_t strides_bad[3] = {1, 1, 2}; /* q may be strided, but each head row contiguous */
static const DLDataType i32 = {kDLInt, 32, 1}, f64t = {kDLFloat, 64, 1};

static void m_q_dtype(tc_run *r) { r->t_q.dtype = i32; }
static void m_q_shape(tc_run *r) { r->sh_q[1] += 1; }
static void m_out_shape(tc_run *r) { r->sh_out[2] -= 1; }
static void m_k_shape(tc_run *r) { r->sh_k[0] += 1; }
static void m_pool_small(tc_run *r) { r->sh_kc[0] = r->sh_vc[0] = tc_slot(r, 1, 10); }
static void m_r2t_negative(tc_run *r) {
    int64_t row = r->s.idx64 ? ((int64_t *)r->req_idx)[1] : ((int32_t *)r->req_idx)[1];
    set_idx(r->r2t, r->s.idx64, row * r->cols + 3, -5);
}
static void m_r2t_page_offset(tc_run *r) {
    int64_t row = r->s.idx64 ? ((int64_t *)r->req_idx)[0] : ((int32_t *)r->req_idx)[0];
    set_idx(r->r2t, r->s.idx64, row * r->cols + 2, tc_slot(r, 0, 2) + 1);
}
static void m_ocl_mismatch(tc_run *r) { set_idx(r->ocl, r->s.idx64, 1, tc_slot(r, 0, 0)); }
static void m_seq_negative(tc_run *r) { set_idx(r->seq_lens, r->s.idx64, 0, -1); }
static void m_ext_inconsistent(tc_run *r) { set_idx(r->prefix_lens, r->s.idx64, 1, 3); }
static void m_num_tokens(tc_run *r) { r->batch.num_tokens += 1; }
static void m_req_index(tc_run *r) { set_idx(r->req_idx, r->s.idx64, 0, r->rows); }
static void m_v_dtype(tc_run *r) { r->t_vc.dtype.code = kDLFloat; } /* f16 beside a bf16 k_cache */
static void m_head_dim(tc_run *r) { r->layer.head_dim_qk = r->s.dqk + 8, r->sh_q[2] += 8, r->sh_k[2] += 8, r->sh_kc[2] += 8; }
static void m_f64_mix(tc_run *r) { r->t_q.dtype = f64t; }
static void m_strides(tc_run *r) { r->t_q.strides = strides_bad; }
static void m_device(tc_run *r) { r->t_kc.device.device_type = kDLCUDA; }
static void m_sinks(tc_run *r) { r->layer.sinks = &r->t_sink, r->sh_sink[0] = r->s.hq + 1; }
static void m_cross_save(tc_run *r) { r->layer.is_cross = 1, r->batch.encoder_lens = &r->t_enc; }
static void m_columns(tc_run *r) { r->sh_r2t[1] = r->s.seq[0] - 1; }
static void m_batch_size(tc_run *r) { r->batch.batch_size = (int32_t)r->rows + 1; }
static void m_page_size(tc_run *r) { r->batch.page_size = 0; }
static void m_heads(tc_run *r) { r->layer.num_q_heads = r->s.hkv * 2 + 1; }
static void m_no_ocl(tc_run *r) { r->batch.out_cache_loc = NULL; }
static void m_scale(tc_run *r) { r->layer.sm_scale = NAN; }
static void m_mirror(tc_run *r) {
    static int32_t wrong[TC_MAX_REQS];
    static int64_t sh[1];
    static DLTensor t;
    for (int i = 0; i < r->s.bs; i++) wrong[i] = r->s.seq[i] + (i == 1);
    sh[0] = r->s.bs;
    t = r->t_seq;
    t.data = wrong;
    t.shape = sh;
    t.dtype = i32;
    r->batch.seq_lens_cpu = &t;
}
static void m_null_data(tc_run *r) { r->t_k.data = NULL; }
static void m_null_q(tc_run *r) { r->args.q = NULL; }
static void m_mode(tc_run *r) { r->batch.forward_mode = 9; }
static void m_mla_heads(tc_run *r) { r->layer.v_cache = NULL; }

typedef struct bad {
    const char *name;
    mutate_fn fn;
    int status;          /* expected, 0 = any error */
    const char *mention; /* the message must contain this */
} bad;

static const bad cases[] = {
    {"q dtype", m_q_dtype, SGL_ATTN_E_UNSUPPORTED, "q has dtype int32"},
    {"q shape", m_q_shape, SGL_ATTN_E_INVALID, "q has shape"},
    {"out shape", m_out_shape, SGL_ATTN_E_INVALID, "out has shape"},
    {"k shape", m_k_shape, SGL_ATTN_E_INVALID, "k has shape"},
    {"pool too small", m_pool_small, SGL_ATTN_E_INVALID, "outside the pool"},
    {"negative slot", m_r2t_negative, SGL_ATTN_E_INVALID, "expected a slot >= 0"},
    {"page offset", m_r2t_page_offset, SGL_ATTN_E_INVALID, "offset"},
    {"out_cache_loc", m_ocl_mismatch, SGL_ATTN_E_INVALID, "out_cache_loc[1]"},
    {"negative seq", m_seq_negative, SGL_ATTN_E_INVALID, "seq_lens[0] = -1"},
    {"inconsistent extend", m_ext_inconsistent, SGL_ATTN_E_INVALID, "extend_prefix_lens[1] + extend_seq_lens[1]"},
    {"num_tokens", m_num_tokens, SGL_ATTN_E_INVALID, "num_tokens"},
    {"req index", m_req_index, SGL_ATTN_E_INVALID, "req_pool_indices[0]"},
    {"v_cache dtype", m_v_dtype, SGL_ATTN_E_INVALID, "v_cache"},
    {"head dim", m_head_dim, SGL_ATTN_E_INVALID, "exceed"},
    {"f64 mix", m_f64_mix, SGL_ATTN_E_UNSUPPORTED, "f64"},
    {"strides", m_strides, SGL_ATTN_E_UNSUPPORTED, "q.strides"},
    {"device", m_device, SGL_ATTN_E_INVALID, "device type 2"},
    {"sinks shape", m_sinks, SGL_ATTN_E_INVALID, "layer.sinks"},
    {"cross save", m_cross_save, SGL_ATTN_E_INVALID, "needs batch.encoder_out_cache_loc"},
    {"columns", m_columns, SGL_ATTN_E_INVALID, "columns"},
    {"batch size", m_batch_size, SGL_ATTN_E_INVALID, "max_reqs"},
    {"page size", m_page_size, SGL_ATTN_E_INVALID, "page_size = 0"},
    {"heads", m_heads, SGL_ATTN_E_INVALID, "num_q_heads"},
    {"no out_cache_loc", m_no_ocl, SGL_ATTN_E_INVALID, "out_cache_loc"},
    {"sm_scale", m_scale, SGL_ATTN_E_INVALID, "sm_scale"},
    {"mirror", m_mirror, SGL_ATTN_E_INVALID, "seq_lens_cpu[1]"},
    {"null data", m_null_data, SGL_ATTN_E_INVALID, "k.data is NULL"},
    {"null q", m_null_q, SGL_ATTN_E_INVALID, "q is NULL"},
    {"mode", m_mode, SGL_ATTN_E_INVALID, "forward_mode = 9"},
    {"mla heads", m_mla_heads, SGL_ATTN_E_INVALID, "MLA"},
};

static tc_spec base_spec(void) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = SGL_ATTN_MODE_EXTEND;
    s.bs = 2;
    s.hq = 4, s.hkv = 2, s.dqk = s.dv = 16;
    s.page = 4;
    s.window = -1;
    s.save = 1;
    s.dt = s.kv_dt = SGL_ATTN_DT_BF16;
    s.seq[0] = 20, s.seq[1] = 33;
    s.prefix[0] = 12, s.prefix[1] = 30;
    return s;
}

static void test_each_bad_input(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_spec s = base_spec();
        tc_run r;
        tc_build(&r, &s, 31 + c, 32);
        char err[256] = "";
        sgl_attn_backend *b = tc_create(&r, err, sizeof err);
        if (!b) fail_msg("%s: create: %s", cases[c].name, err);
        const size_t pk = (size_t)(r.slots * r.s.hkv * r.s.dqk) * tc_size(s.kv_dt), po = tc_out_count(&r) * 2;
        void *k0 = malloc(pk), *v0 = malloc(pk), *o0 = malloc(po);
        memcpy(k0, r.k_cache, pk);
        memcpy(v0, r.v_cache, pk);
        memcpy(o0, r.out, po);
        cases[c].fn(&r);
        int rc = tc_forward(&r, b);
        const char *msg = b->ops->last_error(b);
        if (rc == SGL_ATTN_OK) fail_msg("%s: accepted", cases[c].name);
        if (cases[c].status && rc != cases[c].status)
            fail_msg("%s: status %d, expected %d (%s)", cases[c].name, rc, cases[c].status, msg);
        if (!strstr(msg, cases[c].mention))
            fail_msg("%s: message '%s' does not mention '%s'", cases[c].name, msg, cases[c].mention);
        if (memcmp(k0, r.k_cache, pk) || memcmp(v0, r.v_cache, pk)) fail_msg("%s: the pool was written", cases[c].name);
        if (memcmp(o0, r.out, po)) fail_msg("%s: the output was written", cases[c].name);
        /* the same backend still serves a good batch */
        tc_run good;
        tc_build(&good, &s, 31 + c, 32);
        rc = tc_forward(&good, b);
        if (rc) fail_msg("%s: a good batch after it failed: %s", cases[c].name, b->ops->last_error(b));
        if (b->ops->last_error(b)[0]) fail_msg("%s: last_error not cleared: %s", cases[c].name, b->ops->last_error(b));
        for (size_t i = 0; i < tc_out_count(&good); i++)
            if (isnan(tc_out(&good, i))) fail_msg("%s: good batch left element %zu unwritten", cases[c].name, i);
        tc_free(&good);
        free(k0);
        free(v0);
        free(o0);
        b->ops->destroy(b);
        tc_free(&r);
    }
}

/* forward before any init_forward_metadata is a state error. */
static void test_forward_before_metadata(void **state) {
    (void)state;
    tc_spec s = base_spec();
    tc_run r;
    tc_build(&r, &s, 5, 6);
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    r.args.batch = NULL;
    int rc = b->ops->forward_extend(b, &r.args);
    assert_int_equal(rc, SGL_ATTN_E_STATE);
    assert_non_null(strstr(b->ops->last_error(b), "init_forward_metadata"));
    b->ops->destroy(b);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_bad_input),
        cmocka_unit_test(test_forward_before_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
