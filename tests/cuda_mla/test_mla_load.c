/* test_mla_load.c - the built cuda_mla plugin without a GPU: it loads (static
 * cudart, no driver needed), negotiates, describes itself truthfully (MLA
 * only, its aliases, 576/512, page sizes), its probe answers "unavailable"
 * with the runtime's reason on index 0 and NOT_FOUND past it, and it refuses
 * non-MLA models, a create with no device and malformed or removed options
 * (environment or conf), with words that say why. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mla_plugin_path.h"
#include "sgl_attn_abi.h"

static void *h;
static const sgl_attn_plugin *p;

static int setup(void **st) {
    (void)st;
    char so[4200];
    if (mla_plugin_path(so, sizeof so)) return -1;
    h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", so, dlerror());
        return -1;
    }
    sgl_attn_plugin_entry_fn e = (sgl_attn_plugin_entry_fn)dlsym(h, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!e) return -1;
    static sgl_attn_host_api api = {.struct_size = sizeof(sgl_attn_host_api), .abi_major = SGL_ATTN_ABI_MAJOR,
                                    .abi_minor_max = SGL_ATTN_ABI_MINOR, .host_version = "t"};
    sgl_attn_plugin_answer a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    if (e(&api, &a) != SGL_ATTN_OK) return -1;
    p = a.plugin;
    return p ? 0 : -1;
}
static int teardown(void **st) {
    (void)st;
    dlclose(h);
    return 0;
}

static void test_descriptor(void **st) {
    (void)st;
    assert_string_equal(p->name, "cuda_mla");
    assert_int_equal(p->platform, SGL_ATTN_PLATFORM_CUDA);
    assert_int_equal(p->role, SGL_ATTN_ROLE_FULL);
    assert_non_null(p->device_ops);
    const char *want[] = {"flashmla", "cutlass_mla", "trtllm_mla", "cutedsl_mla", "tokenspeed_mla", "dsa"};
    int n = 0;
    for (; p->aliases[n]; n++) assert_string_equal(p->aliases[n], want[n]);
    assert_int_equal(n, 6);
    /* only the entry point is exported */
    assert_null(dlsym(h, "mla_plan_build"));
    assert_null(dlsym(h, "mla_backend_create"));
}

static void test_probe(void **st) {
    (void)st;
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(p->probe(0, &c), SGL_ATTN_OK);
    assert_int_equal(c.attn_kinds, SGL_ATTN_KIND_MLA);
    assert_int_equal(c.n_head_dims, 1);
    assert_int_equal(c.head_dims[0].qk, 576);
    assert_int_equal(c.head_dims[0].v, 512);
    assert_int_equal(c.n_page_sizes, 4);
    assert_true(c.q_dtypes & SGL_ATTN_DT_BF16);
    assert_true(c.kv_dtypes & SGL_ATTN_DT_FP8_E4M3);
    assert_true(c.features & SGL_ATTN_FEAT_SPEC_DECODE);
    assert_true(c.features & SGL_ATTN_FEAT_MLA_EXTEND);
    assert_true(c.features & SGL_ATTN_FEAT_GRAPH_CAPTURE);
    assert_false(c.features & SGL_ATTN_FEAT_SLIDING_WINDOW);
    /* ABI 1.2: what it serves, and what it still refuses by name */
    assert_true(c.features & SGL_ATTN_FEAT_MLA_ROPE_SPLIT);
    assert_true(c.features & SGL_ATTN_FEAT_TREE_MASK);
    assert_true(c.features & SGL_ATTN_FEAT_DRAFT_EXTEND);
    assert_true(c.features & SGL_ATTN_FEAT_FP8_SCALES);
    assert_false(c.features & SGL_ATTN_FEAT_LSE);
    /* DSA: sparse MLA over bf16/f16 pools and FlashMLA's fp8 record; the indexer */
    assert_int_equal(c.dsa_ops, SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_KV_FP8_RECORD | SGL_ATTN_DSA_INDEXER);
    if (!c.available) {
        /* the runtime's own words, not an empty reason */
        assert_true(strlen(c.reason) > 8);
        print_message("unavailable: %s\n", c.reason);
        sgl_attn_caps c1;
        memset(&c1, 0, sizeof c1);
        c1.struct_size = sizeof c1;
        assert_int_equal(p->probe(1, &c1), SGL_ATTN_E_NOT_FOUND);
        assert_int_equal(c.score, 0);
    }
    /* a caller with an older, smaller caps struct is refused, not overrun */
    c.struct_size = 8;
    assert_int_equal(p->probe(0, &c), SGL_ATTN_E_INVALID);
}

/* Option env=value makes create fail with E_INVALID and `words` in the error. */
static void expect_option_refused(sgl_attn_create_args *a, sgl_attn_model *m, const char *env, const char *value,
                                  const char *words) {
    sgl_attn_backend *b = (sgl_attn_backend *)0x1;
    setenv(env, value, 1);
    m->is_mla = 1;
    assert_int_equal(p->create(a, &b), SGL_ATTN_E_INVALID);
    assert_null(b);
    if (!strstr(a->error, words)) fail_msg("%s=%s: \"%s\" lacks \"%s\"", env, value, a->error, words);
    unsetenv(env);
}

static void test_refusals(void **st) {
    (void)st;
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    strcpy(m.name, "llama");
    m.num_q_heads = 32, m.num_kv_heads = 8, m.head_dim_qk = m.head_dim_v = 128;
    m.sliding_window = -1;
    char why[256] = "";
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    assert_int_equal(p->supports_model(&m, &c, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "not an MLA model"));
    m.is_mla = 1, m.num_kv_heads = 1, m.head_dim_qk = 576, m.head_dim_v = 512, m.num_q_heads = 16;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_BF16;
    assert_int_equal(p->supports_model(&m, &c, why, sizeof why), SGL_ATTN_OK);
    m.index_topk = 2048; /* DeepSeek-V3.2: served (sparse MLA and the indexer) */
    assert_int_equal(p->supports_model(&m, &c, why, sizeof why), SGL_ATTN_OK);
    m.index_topk = 0;
    /* create: a non-MLA model is refused before any device work; with no
     * device the create fails cleanly with the runtime's reason */
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = 4, a.max_tokens = 8, a.max_context = 256;
    char err[512] = "";
    a.error = err, a.error_size = sizeof err;
    sgl_attn_backend *b = (sgl_attn_backend *)0x1;
    sgl_attn_caps cc;
    memset(&cc, 0, sizeof cc);
    cc.struct_size = sizeof cc;
    p->probe(0, &cc);
    if (!cc.available) {
        int rc = p->create(&a, &b);
        assert_true(rc != SGL_ATTN_OK);
        assert_null(b);
        assert_non_null(strstr(err, "cuda_mla"));
        print_message("create: %s\n", err);
    }
    m.is_mla = 0;
    b = (sgl_attn_backend *)0x1;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    assert_null(b);
    assert_non_null(strstr(err, "absorbed MLA only"));
    m.is_mla = 1;
    /* the options are checked at create, before the model and the device */
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_KERNEL", "fast", "cuda_mla: environment SGL_ATTN_MLA_KERNEL = \"fast\": expected auto, simple, mma or wide");
    /* values that were removed (docs/lab/levers.md) are refused, not taken as auto */
    static const char *const gone_kernels[] = {"wgmma", "wgmma0", "wgmma2", "wgmma3", "wgmma4", "wgmma5", "narrow"};
    for (size_t i = 0; i < sizeof gone_kernels / sizeof gone_kernels[0]; i++)
        expect_option_refused(&a, &m, "SGL_ATTN_MLA_KERNEL", gone_kernels[i], "expected auto, simple, mma or wide");
    static const char *const gone_mma[] = {"deep", "two", "tmadeep", "wide"};
    for (size_t i = 0; i < sizeof gone_mma / sizeof gone_mma[0]; i++)
        expect_option_refused(&a, &m, "SGL_ATTN_MLA_MMA", gone_mma[i], "expected auto, base, ring or tma");
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_STRICT", "maybe",
                          "environment SGL_ATTN_MLA_STRICT = \"maybe\": expected 1, true, yes, on, 0, false, no or off (or auto)");
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_LOG", "2", "environment SGL_ATTN_MLA_LOG = \"2\"");
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_INDEXER_SCRATCH_MB", "0",
                          "environment SGL_ATTN_MLA_INDEXER_SCRATCH_MB = \"0\": expected an integer 1..1048576");
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_INDEXER_SCRATCH_MB", "big", "SGL_ATTN_MLA_INDEXER_SCRATCH_MB");
    /* removed options are refused by name */
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_PREFETCH", "2",
                          "cuda_mla: environment SGL_ATTN_MLA_PREFETCH is no longer an option");
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_PLAN", "even", "environment SGL_ATTN_MLA_PLAN is no longer an option");
    static const char *const gone_sparse[] = {"wgmma", "mma", "auto"};
    for (size_t i = 0; i < sizeof gone_sparse / sizeof gone_sparse[0]; i++)
        expect_option_refused(&a, &m, "SGL_ATTN_MLA_SPARSE_KERNEL", gone_sparse[i],
                              "cuda_mla: environment SGL_ATTN_MLA_SPARSE_KERNEL is no longer an option");
    /* sparse_producer: the lever lost and is gone; any value is refused by name */
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_SPARSE_PRODUCER", "1",
                          "cuda_mla: environment SGL_ATTN_MLA_SPARSE_PRODUCER is no longer an option");
    /* sparse_bulk: the lever was flat and is gone; any value is refused by name */
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_SPARSE_BULK", "1",
                          "cuda_mla: environment SGL_ATTN_MLA_SPARSE_BULK is no longer an option");
    /* sparse_seesaw: the lever lost and is gone; any value is refused by name */
    expect_option_refused(&a, &m, "SGL_ATTN_MLA_SPARSE_SEESAW", "1",
                          "cuda_mla: environment SGL_ATTN_MLA_SPARSE_SEESAW is no longer an option");
    /* sparse_ctas: its 2 is SM 9.0's default now; every value, 1 included, is refused */
    static const char *const gone_ctas[] = {"1", "2", "auto"};
    for (size_t i = 0; i < sizeof gone_ctas / sizeof gone_ctas[0]; i++)
        expect_option_refused(&a, &m, "SGL_ATTN_MLA_SPARSE_CTAS", gone_ctas[i],
                              "cuda_mla: environment SGL_ATTN_MLA_SPARSE_CTAS is no longer an option");
    /* every accepted value passes the option check (the model check refuses next) */
    static const struct {
        const char *env, *value;
    } ok[] = {{"SGL_ATTN_MLA_KERNEL", "auto"}, {"SGL_ATTN_MLA_KERNEL", "simple"}, {"SGL_ATTN_MLA_KERNEL", "mma"},
              {"SGL_ATTN_MLA_KERNEL", "wide"},  {"SGL_ATTN_MLA_MMA", "auto"},      {"SGL_ATTN_MLA_MMA", "base"},
              {"SGL_ATTN_MLA_MMA", "ring"},     {"SGL_ATTN_MLA_MMA", "tma"},       {"SGL_ATTN_MLA_STRICT", "1"},
              {"SGL_ATTN_MLA_STRICT", "false"}, {"SGL_ATTN_MLA_STRICT", "yes"},  {"SGL_ATTN_MLA_LOG", "0"},
              {"SGL_ATTN_MLA_LOG", "true"},     {"SGL_ATTN_MLA_KERNEL", "MMA"},  {"SGL_ATTN_MLA_INDEXER_SCRATCH_MB", "1"},
              {"SGL_ATTN_MLA_INDEXER_SCRATCH_MB", "4096"}};
    m.is_mla = 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv(ok[i].env, ok[i].value, 1);
        assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
        assert_non_null(strstr(err, "absorbed MLA only"));
        unsetenv(ok[i].env);
    }
    m.is_mla = 1;
}

/* A host whose conf has plugin options for cuda_mla (get_option, ABI 1.1). */
static const char *conf_kernel, *conf_mma, *conf_sparse_ctas;
static const char *test_get_option(void *ctx, const char *plugin, const char *key) {
    assert_ptr_equal(ctx, (void *)&conf_kernel);
    assert_string_equal(plugin, "cuda_mla");
    if (!strcmp(key, "kernel")) return conf_kernel;
    if (!strcmp(key, "mma")) return conf_mma;
    if (!strcmp(key, "sparse_ctas")) return conf_sparse_ctas;
    return NULL;
}

static void test_conf_options(void **st) {
    (void)st;
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    strcpy(m.name, "not-mla");
    m.num_q_heads = 16, m.num_kv_heads = 1, m.head_dim_qk = 576, m.head_dim_v = 512, m.sliding_window = -1;
    sgl_attn_host_api host = {.struct_size = sizeof host, .abi_major = SGL_ATTN_ABI_MAJOR,
                              .abi_minor_max = SGL_ATTN_ABI_MINOR, .host_version = "t",
                              .host_ctx = (void *)&conf_kernel, .get_option = test_get_option};
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = 4, a.max_tokens = 8, a.max_context = 256;
    a.host = &host;
    char err[512] = "";
    a.error = err, a.error_size = sizeof err;
    sgl_attn_backend *b = (sgl_attn_backend *)0x1;
    /* a conf value is checked like the environment's, and named as a plugin option */
    conf_kernel = "wgmma4";
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_null(b);
    assert_non_null(strstr(err, "plugin option cuda_mla.kernel = \"wgmma4\": expected auto, simple, mma or wide"));
    conf_kernel = "wide", conf_mma = "two";
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "plugin option cuda_mla.mma = \"two\""));
    /* a removed option in the conf is refused by name (sparse_ctas=2 is SM 9.0's default now) */
    conf_mma = "ring", conf_sparse_ctas = "2";
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_null(b);
    assert_non_null(strstr(err, "plugin option cuda_mla.sparse_ctas is no longer an option"));
    conf_sparse_ctas = NULL;
    /* accepted: the model check is next */
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(err, "absorbed MLA only"));
    /* the environment overrides the conf */
    conf_kernel = "bad";
    setenv("SGL_ATTN_MLA_KERNEL", "mma", 1);
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    unsetenv("SGL_ATTN_MLA_KERNEL");
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "cuda_mla.kernel = \"bad\""));
    /* a create args struct of ABI 1.0 (no host field) reads the environment only */
    a.struct_size = (uint32_t)offsetof(sgl_attn_create_args, host);
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    conf_kernel = conf_mma = NULL;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_conf_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
