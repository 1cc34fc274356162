/* test_mla_load.c - the built cuda_mla plugin without a GPU: it loads (static
 * cudart, no driver needed), negotiates, describes itself truthfully (MLA
 * only, its aliases, 576/512, page sizes), its probe answers "unavailable"
 * with the runtime's reason on index 0 and NOT_FOUND past it, and it refuses
 * non-MLA models and a create with no device, with words that say why. */
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
    const char *want[] = {"flashmla", "cutlass_mla", "trtllm_mla", "cutedsl_mla", "tokenspeed_mla"};
    int n = 0;
    for (; p->aliases[n]; n++) assert_string_equal(p->aliases[n], want[n]);
    assert_int_equal(n, 5);
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
    m.index_topk = 2048;
    assert_int_equal(p->supports_model(&m, &c, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "sparse"));
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
    setenv("SGL_ATTN_MLA_KERNEL", "fast", 1);
    m.is_mla = 1;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "SGL_ATTN_MLA_KERNEL=fast"));
    unsetenv("SGL_ATTN_MLA_KERNEL");
    /* the tuning knobs are checked at create too */
    setenv("SGL_ATTN_MLA_MMA", "wide", 1);
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "SGL_ATTN_MLA_MMA=wide"));
    setenv("SGL_ATTN_MLA_MMA", "tmax", 1);
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "SGL_ATTN_MLA_MMA=tmax"));
    /* the bulk-copy variants are accepted (well-formed: the model check is next) */
    static const char *const ok_mma[] = {"base", "deep", "two", "ring", "tma", "tmadeep"};
    m.is_mla = 0;
    for (size_t i = 0; i < sizeof ok_mma / sizeof ok_mma[0]; i++) {
        setenv("SGL_ATTN_MLA_MMA", ok_mma[i], 1);
        assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
        assert_non_null(strstr(err, "absorbed MLA only"));
    }
    m.is_mla = 1;
    unsetenv("SGL_ATTN_MLA_MMA");
    static const char *const bad_pf[] = {"-1", "65", "2x", "x"};
    for (size_t i = 0; i < sizeof bad_pf / sizeof bad_pf[0]; i++) {
        setenv("SGL_ATTN_MLA_PREFETCH", bad_pf[i], 1);
        assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
        assert_non_null(strstr(err, "SGL_ATTN_MLA_PREFETCH="));
    }
    unsetenv("SGL_ATTN_MLA_PREFETCH");
    setenv("SGL_ATTN_MLA_PLAN", "fair", 1);
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "SGL_ATTN_MLA_PLAN=fair"));
    unsetenv("SGL_ATTN_MLA_PLAN");
    /* the strict and log switches take 0 or 1 */
    static const char *const flags[] = {"SGL_ATTN_MLA_STRICT", "SGL_ATTN_MLA_LOG"};
    for (size_t i = 0; i < 2; i++) {
        setenv(flags[i], "yes", 1);
        assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
        assert_non_null(strstr(err, flags[i]));
        setenv(flags[i], "0", 1);
        m.is_mla = 0; /* well-formed: the model check is next */
        assert_int_equal(p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
        m.is_mla = 1;
        unsetenv(flags[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
