/*
 * test_hip_attn.c - hip_attn where HIP has no device (this machine), and what
 * can be checked without one: the probe and device_ops answer with HIP's own
 * error, create refuses cleanly, the model and tensor checks, and that the
 * plugin carries device code for exactly gfx90a, gfx940 and gfx1030 (never a
 * default gfx803 build).  The kernels' numerics are validated through the
 * same source in cuda_attn on the H200 (tests/cuda, bench/gpu).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_internal.h"
#include "plugin_harness.h"

#ifndef HIP_PLUGIN_PATH
#error HIP_PLUGIN_PATH must name the built hip_attn.so
#endif

static tplugin tp;
static int no_device;

static void test_descriptor(void **state) {
    (void)state;
    assert_string_equal(tp.p->name, "hip_attn");
    assert_int_equal(tp.p->platform, SGL_ATTN_PLATFORM_HIP);
    assert_int_equal(tp.p->role, SGL_ATTN_ROLE_FULL);
    assert_string_equal(tp.p->aliases[0], "aiter");
    assert_string_equal(tp.p->aliases[1], "wave");
    assert_non_null(tp.p->device_ops);
}

static void test_probe(void **state) {
    (void)state;
    sgl_attn_caps c;
    assert_int_equal(tprobe(tp.p, 0, &c), SGL_ATTN_OK);
    if (no_device) {
        assert_int_equal(c.available, 0);
        assert_non_null(strstr(c.reason, "hipGetDeviceCount"));
        assert_non_null(strstr(c.reason, "hipErrorNoDevice"));
        c.struct_size = sizeof c;
        assert_int_equal(tp.p->probe(1, &c), SGL_ATTN_E_NOT_FOUND);
    } else { /* an AMD GPU: available exactly when its arch is one we built */
        const int built = !strcmp(c.arch_name, "gfx90a") || !strcmp(c.arch_name, "gfx940") ||
                          !strcmp(c.arch_name, "gfx1030");
        assert_int_equal(c.available, built);
        assert_true(c.memory_bytes > 0);
    }
    assert_int_equal(c.n_head_dims, 3);
    assert_true(c.features & SGL_ATTN_FEAT_EXTEND);
    assert_true(c.features & SGL_ATTN_FEAT_DECODE);
}

static void test_device_ops_without_device(void **state) {
    (void)state;
    if (!no_device) skip();
    const sgl_attn_device_ops *ops = tp.p->device_ops;
    void *p = (void *)1;
    int rc = ops->alloc(0, 256, &p);
    assert_int_not_equal(rc, 0);
    assert_null(p);
    /* HIP's own answer for device 0 when there is none */
    const char *name = ops->error_string(rc);
    assert_true(!strcmp(name, "hipErrorInvalidDevice") || !strcmp(name, "hipErrorNoDevice"));
    void *s = (void *)1;
    assert_int_not_equal(ops->stream_create(0, &s), 0);
    assert_null(s);
    assert_int_equal(ops->free(0, NULL), 0);
}

static void test_create_without_device(void **state) {
    (void)state;
    if (!no_device) skip();
    sgl_attn_model m = tmodel(8, 2, 128, SGL_ATTN_DT_BF16);
    char err[256] = "";
    sgl_attn_create_args a = tcreate_args(&m, 4, 64, 256, err, sizeof err);
    sgl_attn_backend *b = (sgl_attn_backend *)1;
    assert_int_equal(tp.p->create(&a, &b), SGL_ATTN_E_DEVICE);
    assert_null(b);
    assert_non_null(strstr(err, "hipGetDeviceProperties(0)"));
}

static void test_model_check(void **state) {
    (void)state;
    sgl_attn_model m = tmodel(32, 8, 128, SGL_ATTN_DT_F16);
    char why[256];
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.head_dim_qk = m.head_dim_v = 96;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "head dim 96"));
    m.head_dim_qk = 192;
    m.head_dim_v = 128;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "qk == v"));
    m.head_dim_qk = 128;
    m.kv_dtype = SGL_ATTN_DT_BF16;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    m.kv_dtype = SGL_ATTN_DT_F16;
    m.is_mla = 1;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "MLA"));
}

/* The checks are pure C, linked here directly. */
static void test_tensor_checks(void **state) {
    (void)state;
    char buf[256];
    ha_msg m = {buf, sizeof buf, "forward_decode"};
    int64_t shape[3] = {4, 8, 128}, st[3];
    _Alignas(16) static uint16_t data[4 * 8 * 128];
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLROCM;
    t.ndim = 3;
    t.shape = shape;
    t.dtype = (DLDataType){kDLBfloat, 16, 1};
    assert_int_equal(ha_check_float3(&m, &t, "q", SGL_ATTN_DT_BF16, 4, 8, 128, st), SGL_ATTN_OK);
    assert_true(st[0] == 1024 && st[1] == 128 && st[2] == 1);
    assert_int_equal(ha_check_float3(&m, &t, "q", SGL_ATTN_DT_BF16, 4, 8, 64, st), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(buf, "forward_decode: q has shape [4, 8, 128]; expected [4, 8, 64]"));
    assert_int_equal(ha_check_float3(&m, &t, "q", SGL_ATTN_DT_F16, 4, 8, 128, st), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(buf, "q has dtype bfloat16; expected float16"));
    t.byte_offset = 2;
    assert_int_equal(ha_check_float3(&m, &t, "q", SGL_ATTN_DT_BF16, 4, 8, 128, st), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(buf, "16-byte aligned"));
    t.byte_offset = 0;
    t.device.device_type = kDLCPU;
    assert_int_equal(ha_check_float3(&m, &t, "q", SGL_ATTN_DT_BF16, 4, 8, 128, st), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(buf, "host memory"));
    int64_t n1[1] = {3};
    DLTensor ix = t;
    ix.device.device_type = kDLROCM;
    ix.ndim = 1;
    ix.shape = n1;
    ix.dtype = (DLDataType){kDLInt, 32, 1};
    assert_int_equal(ha_check_index1(&m, &ix, "seq_lens", 3), SGL_ATTN_OK);
    assert_int_equal(ha_check_index1(&m, &ix, "seq_lens", 4), SGL_ATTN_E_INVALID);
    ix.dtype = (DLDataType){kDLFloat, 32, 1};
    assert_int_equal(ha_check_index1(&m, &ix, "seq_lens", 3), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(buf, "int32 or int64"));
}

/* Device code for exactly the listed archs is bundled in the .so. */
static void test_offload_archs(void **state) {
    (void)state;
    FILE *f = fopen(HIP_PLUGIN_PATH, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    const char *want[] = {"amdgcn-amd-amdhsa--gfx90a", "amdgcn-amd-amdhsa--gfx940", "amdgcn-amd-amdhsa--gfx1030"};
    for (int i = 0; i < 3; i++) assert_non_null(memmem(buf, (size_t)n, want[i], strlen(want[i])));
    assert_null(memmem(buf, (size_t)n, "amdgcn-amd-amdhsa--gfx803", 25));
    free(buf);
}

static int setup(void **state) {
    (void)state;
    char err[512];
    if (tplugin_open(&tp, HIP_PLUGIN_PATH, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    sgl_attn_caps c;
    tprobe(tp.p, 0, &c);
    no_device = !c.available && strstr(c.reason, "hipErrorNoDevice") != NULL;
    fprintf(stderr, "hip_attn probe: %s\n", c.available ? c.device_name : c.reason);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tplugin_close(&tp);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_device_ops_without_device),
        cmocka_unit_test(test_create_without_device),
        cmocka_unit_test(test_model_check),
        cmocka_unit_test(test_tensor_checks),
        cmocka_unit_test(test_offload_archs),
    };
    return cmocka_run_group_tests_name("hip_attn", tests, setup, teardown);
}
