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

#include "plugin_harness.h"

/* cuda_attn.so, with options the test sets in tp.opt_* (plugin_options.cuda_attn). */
static tplugin tp;

static int setup(void **state) {
    (void)state;
    char err[512];
    if (tplugin_open(&tp, CUDA_ATTN_SO, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tplugin_close(&tp);
    return 0;
}

static void test_descriptor(void **state) {
    (void)state;
    assert_string_equal(tp.p->name, "cuda_attn");
    assert_int_equal(tp.p->platform, SGL_ATTN_PLATFORM_CUDA);
    assert_int_equal(tp.p->role, SGL_ATTN_ROLE_FULL);
    const char *want[] = {"fa3", "flashinfer", "triton", "trtllm_mha"};
    for (int i = 0; i < 4; i++) {
        int found = 0;
        for (const char *const *a = tp.p->aliases; *a; a++) found |= !strcmp(*a, want[i]);
        assert_true(found);
    }
    assert_non_null(tp.p->device_ops);
    assert_non_null(tp.p->device_ops->error_string(2));
    /* only the entry point is exported: the static cudart stays inside */
    assert_null(dlsym(tp.so, "cudaGetDeviceCount"));
    assert_null(dlsym(tp.so, "ca_backend_create"));
}

static void test_probe(void **state) {
    (void)state;
    sgl_attn_caps c;
    assert_int_equal(tprobe(tp.p, 0, &c), SGL_ATTN_OK);
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
    assert_int_equal(tp.p->probe(4096, &c2), SGL_ATTN_E_NOT_FOUND);
}

static sgl_attn_model model(void) {
    return tmodel(16, 4, 128, SGL_ATTN_DT_F16);
}

static void test_create_refusals(void **state) {
    (void)state;
    char err[512];
    sgl_attn_model m = model();
    sgl_attn_create_args a = tcreate_args(&m, 4, 64, 256, err, sizeof err);
    sgl_attn_backend *b = (sgl_attn_backend *)0x1;
    m.head_dim_qk = m.head_dim_v = 80;
    assert_int_equal(tp.p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    assert_null(b);
    assert_non_null(strstr(err, "head dim 80"));
    m = model();
    m.is_mla = 1;
    assert_int_equal(tp.p->create(&a, &b), SGL_ATTN_E_UNSUPPORTED);
    char why[256];
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    m = model();
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    sgl_attn_caps c;
    tprobe(tp.p, 0, &c);
    if (!c.available) {
        int rc = tp.p->create(&a, &b);
        assert_true(rc == SGL_ATTN_E_DEVICE || rc == SGL_ATTN_E_NOT_FOUND);
        assert_null(b);
        printf("create with no device: %s\n", err);
        assert_non_null(strstr(err, "CUDA"));
    } else {
        assert_int_equal(tp.p->create(&a, &b), SGL_ATTN_OK);
        b->ops->destroy(b);
    }
}

/* The option is read from the creating host at create: an unknown value is
 * refused, naming it and the accepted ones, on any machine. */
static void test_create_option(void **state) {
    (void)state;
    char err[512];
    sgl_attn_model m = model();
    tp.opt_keys[0] = "kernel";
    sgl_attn_create_args a = tcreate_args(&m, 4, 64, 256, err, sizeof err);
    a.host = &tp.create_host;
    const char *bad[] = {"fast", "simple", "wgmma"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sgl_attn_backend *b = (sgl_attn_backend *)0x1;
        tp.opt_vals[0] = bad[i];
        err[0] = 0;
        assert_int_equal(tp.p->create(&a, &b), SGL_ATTN_E_INVALID);
        assert_null(b);
        assert_non_null(strstr(err, "cuda_attn.kernel"));
        assert_non_null(strstr(err, bad[i]));
        assert_non_null(strstr(err, "expected auto, mma or portable"));
    }
    /* accepted values get past the option: with no device, to the device's refusal */
    sgl_attn_caps c;
    tprobe(tp.p, 0, &c);
    const char *good[] = {"auto", "mma", "portable"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        sgl_attn_backend *b = NULL;
        tp.opt_vals[0] = good[i];
        err[0] = 0;
        const int rc = tp.p->create(&a, &b);
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
