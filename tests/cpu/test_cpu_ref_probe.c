/* test_cpu_ref_probe.c - cpu_ref's descriptor, negotiation, probe, model
 * checks and create arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cref_fixture.h"

int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

static void nolog(void *c, int l, const char *p, const char *f, ...) { (void)c, (void)l, (void)p, (void)f; }

static void test_negotiation(void **state) {
    (void)state;
    sgl_attn_host_api api = {.struct_size = sizeof api, .abi_major = SGL_ATTN_ABI_MAJOR,
                             .abi_minor_max = SGL_ATTN_ABI_MINOR, .log = nolog};
    sgl_attn_plugin_answer ans = {.struct_size = sizeof ans};
    assert_int_equal(sgl_attn_cpu_ref_entry(&api, &ans), SGL_ATTN_OK);
    const sgl_attn_plugin *p = ans.plugin;
    assert_non_null(p);
    assert_string_equal(p->name, "cpu_ref");
    assert_int_equal(p->platform, SGL_ATTN_PLATFORM_CPU);
    assert_int_equal(p->role, SGL_ATTN_ROLE_FULL);
    assert_true(p->struct_size >= sizeof *p);
    assert_null(p->device_ops); /* host memory */
    api.abi_major = SGL_ATTN_ABI_MAJOR + 1;
    ans.plugin = p;
    assert_int_equal(sgl_attn_cpu_ref_entry(&api, &ans), SGL_ATTN_E_ABI);
    assert_null(ans.plugin);
    assert_true(ans.refusal[0] != 0);
}

static void test_probe(void **state) {
    (void)state;
    const sgl_attn_plugin *p = tc_plugin();
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(p->probe(0, &c), SGL_ATTN_OK);
    assert_int_equal(c.available, 1);
    assert_string_equal(c.arch_name, "x86_64");
    assert_true(c.compute_units == (uint32_t)sysconf(_SC_NPROCESSORS_ONLN) || c.compute_units >= 1);
    assert_true(strstr(c.device_name, "threads") != NULL);
    assert_true(c.memory_bytes > 0);
    const uint32_t dts = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64;
    assert_int_equal(c.q_dtypes, dts);
    assert_int_equal(c.kv_dtypes, dts | SGL_ATTN_DT_FP8_E4M3 | SGL_ATTN_DT_FP8_E5M2); /* ABI 1.2: engine fp8 */
    assert_true(c.head_dim_qk_max == 576 && c.head_dim_v_max == 576 && c.n_head_dims == 0);
    assert_true(c.n_page_sizes == 0 && c.page_size_max >= 4096);
    assert_true(c.score > 0 && c.score < 10); /* the fallback */
    assert_false(c.features & SGL_ATTN_FEAT_GRAPH_CAPTURE);
    const uint32_t feats = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                           SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                           SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    assert_int_equal(c.features & feats, feats);
    const uint32_t v12 = SGL_ATTN_FEAT_RAGGED | SGL_ATTN_FEAT_LSE | SGL_ATTN_FEAT_FP8_SCALES |
                         SGL_ATTN_FEAT_MLA_ROPE_SPLIT; /* ABI 1.2 additions cpu_ref serves */
    assert_int_equal(c.features & v12, v12);
    /* docs/cpu_ref.md: sparse MLA (over a pool of values or FlashMLA's fp8 record) and the indexer */
    assert_int_equal(c.dsa_ops, SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER | SGL_ATTN_DSA_KV_FP8_RECORD);
    assert_int_equal(c.attn_kinds, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA |
                                       SGL_ATTN_KIND_CROSS);
    assert_int_equal(p->probe(1, &c), SGL_ATTN_E_NOT_FOUND);
    c.struct_size = 8;
    assert_int_equal(p->probe(0, &c), SGL_ATTN_E_INVALID);
}

static void test_supports_model(void **state) {
    (void)state;
    const sgl_attn_plugin *p = tc_plugin();
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = 128, m.num_kv_heads = 1, m.head_dim_qk = 576, m.head_dim_v = 512, m.is_mla = 1;
    char why[256] = "";
    assert_int_equal(p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    /* DeepSeek sparse attention: served on MLA with a 128-multiple indexer */
    m.index_topk = 2048, m.index_n_heads = 64, m.index_head_dim = 128;
    assert_int_equal(p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.index_head_dim = 96;
    assert_int_equal(p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "index_head_dim 96"));
    m.index_topk = 0, m.index_n_heads = 0, m.index_head_dim = 0;
    m.head_dim_qk = 640;
    assert_int_equal(p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "640"));
    m.is_mla = 0, m.head_dim_qk = 128, m.head_dim_v = 128, m.num_q_heads = 6, m.num_kv_heads = 4;
    assert_int_equal(p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "num_q_heads 6"));
}

static void test_create_args(void **state) {
    (void)state;
    const sgl_attn_plugin *p = tc_plugin();
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = 8, m.num_kv_heads = 2, m.head_dim_qk = 128, m.head_dim_v = 128;
    char err[256] = "";
    sgl_attn_create_args a = {.struct_size = sizeof a, .model = &m, .device = 1, .max_reqs = 4, .max_tokens = 16,
                              .max_context = 64, .error = err, .error_size = sizeof err};
    sgl_attn_backend *b = (sgl_attn_backend *)&a; /* must be reset to NULL on failure */
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_NOT_FOUND);
    assert_null(b);
    assert_non_null(strstr(err, "device 1"));
    a.device = 0;
    a.max_reqs = 0;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "max_reqs 0"));
    a.max_reqs = 4;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_OK);
    assert_non_null(b);
    assert_int_equal(b->ops->last_error(b)[0], 0);
    /* graphs are not claimed: a clear refusal, not a crash */
    assert_int_equal(b->ops->init_graph_state(b, 8, 8), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(b->ops->last_error(b), "graph"));
    assert_int_equal(b->ops->graph_seq_len_fill_value(b), 1);
    assert_null(b->ops->state_clear);
    b->ops->destroy(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_supports_model),
        cmocka_unit_test(test_create_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
