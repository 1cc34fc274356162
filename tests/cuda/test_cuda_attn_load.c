/* test_cuda_attn_load.c - the built cuda_attn.so as a host sees it: it loads
 * (also with no driver), exports only the entry, negotiates, describes itself
 * truthfully, and its probe either reports a usable SM 8.0+ device or says
 * why not in the CUDA runtime's words; create refuses what it cannot serve,
 * and an unknown value of its option, before touching a device. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sgl_attn_abi.h"

static void *handle;
static const sgl_attn_plugin *plugin;

static const char *no_option(void *ctx, const char *p, const char *k) {
    (void)ctx, (void)p, (void)k;
    return NULL;
}

/* A host whose conf sets plugin_options.cuda_attn.kernel = g_kernel. */
static const char *g_kernel;
static const char *kernel_option(void *ctx, const char *p, const char *k) {
    (void)ctx;
    return p && k && !strcmp(p, "cuda_attn") && !strcmp(k, "kernel") ? g_kernel : NULL;
}

static int setup(void **state) {
    (void)state;
    handle = dlopen(CUDA_ATTN_SO, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fprintf(stderr, "dlopen %s: %s\n", CUDA_ATTN_SO, dlerror());
        return -1;
    }
    sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)dlsym(handle, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!entry) return -1;
    static sgl_attn_host_api api;
    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    api.abi_major = SGL_ATTN_ABI_MAJOR;
    api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    api.host_version = "test";
    api.get_option = no_option;
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (entry(&api, &ans) != SGL_ATTN_OK) return -1;
    plugin = ans.plugin;
    return plugin ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    if (handle) dlclose(handle);
    return 0;
}

static void test_descriptor(void **state) {
    (void)state;
    assert_string_equal(plugin->name, "cuda_attn");
    assert_int_equal(plugin->platform, SGL_ATTN_PLATFORM_CUDA);
    assert_int_equal(plugin->role, SGL_ATTN_ROLE_FULL);
    const char *want[] = {"fa3", "flashinfer", "triton", "trtllm_mha"};
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (const char *const *a = plugin->aliases; *a; a++) found |= !strcmp(*a, want[i]);
        assert_true(found);
    }
    assert_non_null(plugin->device_ops);
    assert_non_null(plugin->device_ops->error_string(2));
    /* only the entry point is exported: the static cudart stays inside */
    assert_null(dlsym(handle, "cudaGetDeviceCount"));
    assert_null(dlsym(handle, "ca_backend_create"));
}

static void test_probe(void **state) {
    (void)state;
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(plugin->probe(0, &c), SGL_ATTN_OK);
    assert_int_equal(c.arch_min_major, 8);
    assert_int_equal(c.arch_min_minor, 0);
    assert_true(c.attn_kinds & SGL_ATTN_KIND_GQA);
    assert_false(c.attn_kinds & SGL_ATTN_KIND_MLA);
    assert_int_equal(c.q_dtypes, SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16);
    assert_true(c.features & SGL_ATTN_FEAT_GRAPH_CAPTURE);
    /* ABI 1.2 page tables and slot maps: declared, so the harness runs its ptable / smap cases */
    assert_true(c.features & SGL_ATTN_FEAT_PAGE_TABLE);
    assert_true(c.features & SGL_ATTN_FEAT_SLOT_MAP);
    assert_int_equal(c.n_head_dims, 4);
    /* equal dims 64 / 128 / 256, and DeepSeek's qk 192 / v 128 for forward_ragged */
    assert_int_equal(c.head_dims[3].qk, 192);
    assert_int_equal(c.head_dims[3].v, 128);
    assert_true(c.features & SGL_ATTN_FEAT_RAGGED);
    assert_true(c.features & SGL_ATTN_FEAT_LSE);
    assert_true(c.features & SGL_ATTN_FEAT_DIFF_HEAD_DIMS);
    /* cross layers save at batch.encoder_out_cache_loc: declared, so the harness runs its encsave cases */
    assert_true(c.features & SGL_ATTN_FEAT_ENCODER_LOC);
    if (c.available) {
        printf("device 0: %s %s, %u SMs, %llu bytes\n", c.device_name, c.arch_name, c.compute_units,
               (unsigned long long)c.memory_bytes);
        assert_true(c.arch_major >= 8);
        assert_true(c.compute_units > 0 && c.memory_bytes > 0);
    } else {
        printf("device 0 unavailable: %s\n", c.reason);
        assert_true(strlen(c.reason) > 10);
        assert_true(c.score <= 0);
    }
    sgl_attn_caps c2 = c;
    assert_int_equal(plugin->probe(4096, &c2), SGL_ATTN_E_NOT_FOUND);
}

static sgl_attn_model model(void) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = 16;
    m.num_kv_heads = 4;
    m.head_dim_qk = m.head_dim_v = 128;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_F16;
    m.sliding_window = -1;
    return m;
}

static void test_create_refusals(void **state) {
    (void)state;
    char err[512];
    sgl_attn_model m = model();
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = 4;
    a.max_tokens = 64;
    a.max_context = 256;
    a.error = err;
    a.error_size = sizeof err;
    sgl_attn_backend *b = (sgl_attn_backend *)0x1;
    m.head_dim_qk = m.head_dim_v = 80;
    assert_int_equal(plugin->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    assert_null(b);
    assert_non_null(strstr(err, "head dim 80"));
    m = model();
    m.is_mla = 1;
    assert_int_equal(plugin->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    char why[256];
    assert_int_equal(plugin->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    m = model();
    assert_int_equal(plugin->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    plugin->probe(0, &c);
    if (!c.available) {
        int rc = plugin->create(&a, &b);
        assert_true(rc == SGL_ATTN_E_DEVICE || rc == SGL_ATTN_E_NOT_FOUND);
        assert_null(b);
        printf("create with no device: %s\n", err);
        assert_non_null(strstr(err, "CUDA"));
    } else {
        assert_int_equal(plugin->create(&a, &b), SGL_ATTN_OK);
        b->ops->destroy(b);
    }
}

/* The option is read from the creating host at create: an unknown value is
 * refused, naming it and the accepted ones, on any machine. */
static void test_create_option(void **state) {
    (void)state;
    char err[512];
    sgl_attn_model m = model();
    sgl_attn_host_api h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_major = SGL_ATTN_ABI_MAJOR;
    h.abi_minor_max = SGL_ATTN_ABI_MINOR;
    h.get_option = kernel_option;
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = 4;
    a.max_tokens = 64;
    a.max_context = 256;
    a.error = err;
    a.error_size = sizeof err;
    a.host = &h;
    const char *bad[] = {"fast", "simple", "wgmma"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sgl_attn_backend *b = (sgl_attn_backend *)0x1;
        g_kernel = bad[i];
        err[0] = 0;
        assert_int_equal(plugin->create(&a, &b), SGL_ATTN_E_INVALID);
        assert_null(b);
        assert_non_null(strstr(err, "cuda_attn.kernel"));
        assert_non_null(strstr(err, bad[i]));
        assert_non_null(strstr(err, "expected auto, mma or portable"));
    }
    /* accepted values get past the option: with no device, to the device's refusal */
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    plugin->probe(0, &c);
    const char *good[] = {"auto", "mma", "portable"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        sgl_attn_backend *b = NULL;
        g_kernel = good[i];
        err[0] = 0;
        const int rc = plugin->create(&a, &b);
        if (!c.available) {
            assert_true(rc == SGL_ATTN_E_DEVICE || rc == SGL_ATTN_E_NOT_FOUND);
            assert_null(strstr(err, "cuda_attn.kernel"));
        } else {
            assert_int_equal(rc, SGL_ATTN_OK);
            b->ops->destroy(b);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_create_refusals),
        cmocka_unit_test(test_create_option),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
