/* test_sdk.c - the plugin SDK on its own: tensor checks (each rule, its
 * status and its words), index reads, options (conf, environment, bad
 * values), the linear shape formulas against hand-computed sizes, and the
 * entry macro's negotiation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk_half.h"
#include "sdk_linear.h"
#include "sdk_option.h"
#include "sdk_plugin.h"
#include "sdk_tensor.h"
#include "sdk_text.h"
#include "sdk_unserved.h"

/* ---------------------------------------------------------------- tensors */

static float g_data[4 * 8 * 16];
static int64_t g_shape[4];

static DLTensor tensor(int ndim, int64_t a, int64_t b, int64_t c, int device_type, uint8_t code, uint8_t bits) {
    g_shape[0] = a;
    g_shape[1] = b;
    g_shape[2] = c;
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = g_data;
    t.ndim = ndim;
    t.shape = g_shape;
    t.device.device_type = (DLDeviceType)device_type;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    return t;
}

static sgl_sdk_tensor_spec spec(const char *name, int ndim, int64_t a, int64_t b, int64_t c, uint32_t dtypes,
                                uint32_t devices, uint32_t flags) {
    sgl_sdk_tensor_spec s = {name, NULL, ndim, {a, b, c, 0}, dtypes, devices, -1, flags, 0};
    return s;
}

static char err[256];

static int chk(const DLTensor *t, const sgl_sdk_tensor_spec *s) {
    err[0] = 0;
    return sgl_sdk_check_tensor(t, s, err, sizeof err);
}

#define F32 SGL_ATTN_DT_F32
#define HALF (SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16)

static void test_tensor_ok_and_null(void **state) {
    (void)state;
    DLTensor t = tensor(3, 4, 8, 16, kDLCPU, kDLFloat, 32);
    sgl_sdk_tensor_spec s = spec("q", 3, 4, 8, 16, F32, SGL_SDK_DEV_HOST, SGL_SDK_T_COMPACT);
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    assert_int_equal(chk(NULL, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "q is NULL");
    s.flags |= SGL_SDK_T_OPTIONAL;
    assert_int_equal(chk(NULL, &s), SGL_ATTN_OK);
}

static void test_tensor_device(void **state) {
    (void)state;
    DLTensor t = tensor(1, 4, 0, 0, kDLCUDA, kDLFloat, 32);
    t.device.device_id = 3;
    sgl_sdk_tensor_spec s = spec("out", 1, 4, 0, 0, F32, SGL_SDK_DEV_HOST, 0);
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "out is on DLPack device type 2 (cuda:3); "
                             "expected host memory (cpu, cuda_host or rocm_host)");
    t.device.device_type = kDLCPU;
    s.devices = SGL_SDK_DEV_NOT_HOST;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "out is in host memory (DLPack device type 1, cpu); expected device memory"));
    t.device.device_type = kDLROCM;
    s.devices = SGL_SDK_DEV(kDLROCM);
    s.device_id = 1;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "out is on rocm:3; expected device 1 (the backend's)");
    s.device_id = 3;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    t.device.device_type = kDLOpenCL;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "expected rocm memory"));
}

static void test_tensor_shape(void **state) {
    (void)state;
    DLTensor t = tensor(3, 4, 8, 16, kDLCPU, kDLFloat, 32);
    sgl_sdk_tensor_spec s = spec("q", 3, 4, 8, 32, F32, 0, 0);
    s.meaning = "num_tokens, num_q_heads, head_dim_qk";
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "q has shape [4, 8, 16]; expected [4, 8, 32] (num_tokens, num_q_heads, head_dim_qk)");
    s.shape[2] = SGL_SDK_ANY;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    /* sglang's flat q: [T, H * D] for a [T, H, D] spec, with the flag only */
    t = tensor(2, 4, 128, 0, kDLCPU, kDLFloat, 32);
    s = spec("q", 3, 4, 8, 16, F32, 0, 0);
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    s.flags = SGL_SDK_T_MERGED;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    g_shape[1] = 127;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "(or the last two merged)"));
    /* extents as minimums */
    t = tensor(1, 6, 0, 0, kDLCPU, kDLInt, 32);
    s = spec("seq_lens", 1, 4, 0, 0, 0, 0, SGL_SDK_T_AT_LEAST);
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    s.shape[0] = 7;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "seq_lens has shape [6]; expected [>= 7]");
    g_shape[0] = -1;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "seq_lens.shape[0] = -1; expected >= 0");
}

static void test_tensor_dtype(void **state) {
    (void)state;
    DLTensor t = tensor(1, 4, 0, 0, kDLCPU, kDLBfloat, 16);
    sgl_sdk_tensor_spec s = spec("k", 1, 4, 0, 0, F32 | SGL_ATTN_DT_F16, 0, 0);
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "k has dtype bfloat16; expected float32 or float16");
    s.dtypes = 0; /* an index tensor */
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "k has dtype bfloat16; expected int32 or int64");
    t.dtype.code = kDLInt;
    t.dtype.bits = 64;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    t.dtype.code = 7;
    t.dtype.bits = 16;
    s.dtypes = HALF;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "k has dtype (code 7, bits 16, lanes 1); expected float16 or bfloat16");
}

static void test_tensor_data_and_alignment(void **state) {
    (void)state;
    DLTensor t = tensor(2, 4, 8, 0, kDLCPU, kDLFloat, 32);
    sgl_sdk_tensor_spec s = spec("v", 2, 4, 8, 0, F32, 0, 0);
    t.data = NULL;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "v.data is NULL");
    g_shape[0] = 0; /* empty: no data needed */
    s.shape[0] = 0;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    t = tensor(2, 4, 8, 0, kDLCPU, kDLFloat, 32);
    s.shape[0] = 4;
    t.byte_offset = 2;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "not aligned to its 4-byte elements"));
    t.byte_offset = 4;
    s.align = 16; /* rows the kernels load 16 bytes at a time */
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "v: data + byte_offset is not 16-byte aligned");
    t.byte_offset = 16;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
}

static void test_tensor_strides(void **state) {
    (void)state;
    int64_t st[3] = {8 * 16, 16, 1};
    DLTensor t = tensor(3, 4, 8, 16, kDLCPU, kDLFloat, 32);
    t.strides = st;
    sgl_sdk_tensor_spec s = spec("q", 3, 4, 8, 16, F32, 0, SGL_SDK_T_COMPACT);
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK); /* compact strides spelt out */
    st[0] = 8 * 16 + 4;                          /* padded rows */
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "q.strides[0] = 132; expected 128 (compact row-major tensors only)");
    s.flags = SGL_SDK_T_ROWS;
    s.align = 16;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK); /* 132 floats: whole 16-byte rows */
    st[0] = 8 * 16 + 1;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "q.strides[0] = 129 elements; expected a multiple of 16 bytes (aligned rows)");
    st[0] = 128;
    st[2] = 2;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(err, "q.strides[2] = 2; expected 1"));
    st[2] = 1;
    st[1] = -16;
    s.flags = 0;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "q.strides[1] = -16; expected >= 0");
    st[1] = 8; /* heads overlap: fine to read, not to write */
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    s.name = "out";
    s.flags = SGL_SDK_T_WRITTEN;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "out.strides[1] = 8 makes elements of this output overlap (expected >= 16)");
}

/* Aligned rows hold for compact tensors and merged pairs too; the strides in
 * the spec's dims; extents the kernels count in 32 bits. */
static void test_tensor_rows_and_strides(void **state) {
    (void)state;
    int64_t e[SGL_SDK_MAX_DIMS];
    DLTensor t = tensor(3, 4, 8, 6, kDLCPU, kDLFloat, 32); /* rows of 6 floats: 24 bytes */
    sgl_sdk_tensor_spec s = spec("k", 3, 4, 8, 6, F32, 0, SGL_SDK_T_ROWS);
    s.align = 16;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "k.strides[1] = 6 elements; expected a multiple of 16 bytes (aligned rows)");
    t = tensor(3, 4, 8, 16, kDLCPU, kDLFloat, 32);
    s = spec("q", 3, 4, 8, 16, F32, 0, SGL_SDK_T_ROWS | SGL_SDK_T_MERGED);
    s.align = 16;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    sgl_sdk_strides(&t, &s, e);
    assert_true(e[0] == 128 && e[1] == 16 && e[2] == 1);
    /* [T, H * D]: dim 1 steps over rows of D */
    t = tensor(2, 4, 128, 0, kDLCPU, kDLFloat, 32);
    int64_t st[2] = {256, 1};
    t.strides = st;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    sgl_sdk_strides(&t, &s, e);
    assert_true(e[0] == 256 && e[1] == 16 && e[2] == 1);
    s.shape[1] = 32; /* merged rows of 4 floats: 16 bytes; of 2 floats: not whole rows */
    s.shape[2] = 4;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
    s.shape[1] = 64;
    s.shape[2] = 2;
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "q: rows of 2 elements (the last dim of the merged pair) are not a multiple of 16 bytes "
                             "(aligned rows)");
    /* 32-bit extents */
    t = tensor(2, 4, 0, 0, kDLCPU, kDLInt, 32);
    g_shape[1] = (int64_t)INT32_MAX + 1;
    t.data = g_data;
    s = spec("req_to_token", 2, 1, 1, 0, 0, 0, SGL_SDK_T_AT_LEAST | SGL_SDK_T_INT32);
    assert_int_equal(chk(&t, &s), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(err, "req_to_token.shape[1] = 2147483648; expected at most 2^31 - 1 (the kernels count in 32 "
                             "bits)");
    g_shape[1] = INT32_MAX;
    assert_int_equal(chk(&t, &s), SGL_ATTN_OK);
}

static void test_index_reads(void **state) {
    (void)state;
    int32_t v32[6] = {5, -1, 7, 9, 2, 4};
    int64_t sh[1] = {3}, st[1] = {2};
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = v32;
    t.ndim = 1;
    t.shape = sh;
    t.strides = st;
    t.dtype = (DLDataType){kDLInt, 32, 1};
    t.device.device_type = kDLCPU;
    assert_int_equal(sgl_sdk_index_at(&t, 0), 5);
    assert_int_equal(sgl_sdk_index_at(&t, 1), 7);
    assert_int_equal(sgl_sdk_index_at(&t, 2), 2);
    assert_int_equal(sgl_sdk_check_index_range(&t, "slots", 3, 0, 7, NULL, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(sgl_sdk_check_index_range(&t, "slots", 3, 0, 6, "the pool", err, sizeof err), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "slots[1] = 7; expected 0..6 (the pool)");
    int64_t v64[4] = {1, 2, 3, 40000000000};
    int64_t sh2[2] = {2, 2};
    t.data = v64;
    t.ndim = 2;
    t.shape = sh2;
    t.strides = NULL;
    t.dtype.bits = 64;
    assert_int_equal(sgl_sdk_index_at2(&t, 1, 1), 40000000000);
    assert_int_equal(sgl_sdk_idx(v32, 0, 1), -1);
    /* what the host may read: a contiguous 1-D int tensor in host memory, long enough */
    int64_t sh3[1] = {3};
    DLTensor m;
    memset(&m, 0, sizeof m);
    m.data = v32;
    m.ndim = 1;
    m.shape = sh3;
    m.dtype = (DLDataType){kDLInt, 32, 1};
    m.device.device_type = kDLCPU;
    assert_true(sgl_sdk_host_index(&m, 3));
    assert_false(sgl_sdk_host_index(&m, 4));
    assert_false(sgl_sdk_host_index(NULL, 0));
    m.device.device_type = kDLCUDAHost; /* pinned host memory */
    assert_true(sgl_sdk_host_index(&m, 3));
    m.device.device_type = kDLCUDA; /* only kernels read it */
    assert_false(sgl_sdk_host_index(&m, 3));
    m.device.device_type = kDLCPU;
    m.strides = st; /* every other element */
    assert_false(sgl_sdk_host_index(&m, 3));
    m.strides = NULL;
    m.dtype.code = kDLFloat;
    assert_false(sgl_sdk_host_index(&m, 3));
}

/* ---------------------------------------------------------------- options */

static const char *g_opt_key, *g_opt_val;

static const char *get_option(void *ctx, const char *plugin, const char *key) {
    (void)ctx;
    return !strcmp(plugin, "toy") && g_opt_key && !strcmp(key, g_opt_key) ? g_opt_val : NULL;
}

static const sgl_attn_host_api g_host = {.struct_size = sizeof(sgl_attn_host_api),
                                         .abi_major = SGL_ATTN_ABI_MAJOR,
                                         .abi_minor_max = SGL_ATTN_ABI_MINOR,
                                         .get_option = get_option};

static void test_options(void **state) {
    (void)state;
    char e[256];
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.host = &g_host;
    a.error = e;
    a.error_size = sizeof e;
    sgl_sdk_opts o = sgl_sdk_opts_of(&a, "toy");
    assert_ptr_equal(o.host, &g_host);
    int64_t n;
    unsetenv("SGL_SDK_TEST_N");
    g_opt_key = NULL;
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_OK);
    assert_int_equal(n, 7); /* unset: the default */
    g_opt_key = "n";
    g_opt_val = "12";
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_OK);
    assert_int_equal(n, 12); /* conf */
    setenv("SGL_SDK_TEST_N", "33", 1);
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_OK);
    assert_int_equal(n, 33); /* the environment overrides conf */
    setenv("SGL_SDK_TEST_N", "65", 1);
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(e, "toy: environment SGL_SDK_TEST_N = \"65\": expected an integer 1..64 or auto");
    unsetenv("SGL_SDK_TEST_N");
    g_opt_val = "12x";
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_E_INVALID);
    assert_string_equal(e, "toy: plugin option toy.n = \"12x\": expected an integer 1..64 or auto");
    g_opt_val = "auto";
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_OK);
    assert_int_equal(n, 7);

    int b;
    g_opt_key = "on";
    g_opt_val = "Yes";
    assert_int_equal(sgl_sdk_opt_bool(&o, "on", NULL, 0, &b), SGL_ATTN_OK);
    assert_int_equal(b, 1);
    g_opt_val = "off";
    assert_int_equal(sgl_sdk_opt_bool(&o, "on", NULL, 1, &b), SGL_ATTN_OK);
    assert_int_equal(b, 0);
    g_opt_val = "maybe";
    assert_int_equal(sgl_sdk_opt_bool(&o, "on", NULL, 1, &b), SGL_ATTN_E_INVALID);
    assert_non_null(
        strstr(e, "plugin option toy.on = \"maybe\": expected 1, true, yes, on, 0, false, no or off (or auto)"));
    g_opt_val = "AUTO"; /* the default, as for the other kinds */
    assert_int_equal(sgl_sdk_opt_bool(&o, "on", NULL, 1, &b), SGL_ATTN_OK);
    assert_int_equal(b, 1);

    static const char *const names[] = {"plain", "avx2", "avx512"};
    int c;
    g_opt_key = "simd";
    g_opt_val = "AVX2";
    assert_int_equal(sgl_sdk_opt_choice(&o, "simd", NULL, names, 3, 9, &c), SGL_ATTN_OK);
    assert_int_equal(c, 1);
    g_opt_val = "auto";
    assert_int_equal(sgl_sdk_opt_choice(&o, "simd", NULL, names, 3, 9, &c), SGL_ATTN_OK);
    assert_int_equal(c, 9);
    g_opt_val = "sse";
    assert_int_equal(sgl_sdk_opt_choice(&o, "simd", NULL, names, 3, 9, &c), SGL_ATTN_E_INVALID);
    assert_string_equal(e, "toy: plugin option toy.simd = \"sse\": expected plain, avx2 or avx512 (or auto)");

    /* Removed options: any value, from conf or the environment, is refused by name; none set is OK. */
    static const char *const gone[] = {"old_a", "old_b"}, *const gone_env[] = {NULL, "SGL_SDK_TEST_OLD_B"};
    g_opt_key = "other";
    g_opt_val = "1";
    e[0] = 0;
    assert_int_equal(sgl_sdk_opt_removed(&o, gone, gone_env, 2), SGL_ATTN_OK);
    assert_string_equal(e, "");
    g_opt_key = "old_b";
    g_opt_val = "0";
    assert_int_equal(sgl_sdk_opt_removed(&o, gone, gone_env, 2), SGL_ATTN_E_INVALID);
    assert_string_equal(e, "toy: plugin option toy.old_b is no longer an option (docs/lab/levers.md); unset it");
    g_opt_key = NULL;
    setenv("SGL_SDK_TEST_OLD_B", "auto", 1);
    assert_int_equal(sgl_sdk_opt_removed(&o, gone, gone_env, 2), SGL_ATTN_E_INVALID);
    assert_string_equal(e, "toy: environment SGL_SDK_TEST_OLD_B is no longer an option (docs/lab/levers.md); unset it");
    unsetenv("SGL_SDK_TEST_OLD_B");
    assert_int_equal(sgl_sdk_opt_removed(&o, gone, NULL, 2), SGL_ATTN_OK);

    /* An ABI 1.0 create (no host field): the environment only. */
    a.struct_size = offsetof(sgl_attn_create_args, host);
    o = sgl_sdk_opts_of(&a, "toy");
    assert_null(o.host);
    g_opt_key = "n";
    g_opt_val = "12";
    assert_int_equal(sgl_sdk_opt_int(&o, "n", "SGL_SDK_TEST_N", 7, 1, 64, &n), SGL_ATTN_OK);
    assert_int_equal(n, 7);
    g_opt_key = NULL;
}

/* ---------------------------------------------------------------- linear */

static sgl_attn_model hybrid_model(int kind) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    snprintf(m.name, sizeof m.name, "toy");
    m.num_layers = 4;
    m.num_q_heads = 8;
    m.num_kv_heads = 2;
    m.head_dim_qk = m.head_dim_v = 64;
    m.hybrid_kind = (uint32_t)kind;
    m.full_attention_mask[0] = 0x8; /* layer 3 is full attention, 0..2 linear */
    m.sparse_layer_mask[0] = 0x5;   /* minimax_sparse: layers 0 and 2 */
    m.lin_num_k_heads = 2;
    m.lin_num_v_heads = 4;
    m.lin_head_k_dim = 16;
    m.lin_head_v_dim = 32;
    m.lin_conv_kernel = 4;
    m.lin_hidden = 48;
    m.sparse_block_size = 64;
    m.sparse_topk_blocks = 4;
    return m;
}

static void test_linear_shapes(void **state) {
    (void)state;
    char why[256];
    sgl_sdk_lin_dims d;
    const uint32_t f32 = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F64;
    /* gdn: conv over q, k (2 x 2 x 16) and v (4 x 32): 192 channels, 3 taps of history */
    sgl_attn_model m = hybrid_model(SGL_ATTN_HYBRID_GDN);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_GDN, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(d.conv_dim, 192);
    assert_int_equal(d.x_dim, 192);
    assert_int_equal(d.conv_elems, 192 * 3);
    assert_int_equal(d.ssm_elems, 4 * 32 * 16);
    assert_int_equal(d.n_lin, 3);
    assert_int_equal(d.gsz, 2);
    assert_int_equal(d.gc, 1);
    assert_int_equal(d.esz, 4);
    assert_int_equal(sgl_sdk_lin_state_bytes(SGL_ATTN_HYBRID_GDN, &m, f32), 3u * (576 + 2048) * 4);
    m.lin_state_dtype = SGL_ATTN_DT_BF16;
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_GDN, &m, f32, &d, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(why, "model field lin_state_dtype = 0x4; this wrapper keeps float32 or float64 state");
    assert_int_equal(sgl_sdk_lin_state_bytes(SGL_ATTN_HYBRID_GDN, &m, SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16),
                     3u * (576 + 2048) * 2);
    m.lin_state_dtype = 0;
    m.is_mla = 1;
    assert_int_equal(sgl_sdk_lin_supports(SGL_ATTN_HYBRID_GDN, &m, f32, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "non-MLA"));
    /* kda: a log-decay per key channel */
    m = hybrid_model(SGL_ATTN_HYBRID_KDA);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_KDA, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(d.gc, 16);
    /* short_conv: B, C, x of 48 channels each in x; no recurrent state */
    m = hybrid_model(SGL_ATTN_HYBRID_SHORT_CONV);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_SHORT_CONV, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(d.x_dim, 144);
    assert_int_equal(d.ssm_elems, 0);
    assert_int_equal(sgl_sdk_lin_state_bytes(SGL_ATTN_HYBRID_SHORT_CONV, &m, f32), 3u * 48 * 3 * 4);
    /* lightning: no conv; head_dim_v 0 means the k dim */
    m = hybrid_model(SGL_ATTN_HYBRID_LIGHTNING);
    m.lin_head_v_dim = 0;
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_LIGHTNING, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(d.conv_w, 0);
    assert_int_equal(d.dv, 16);
    assert_int_equal(d.ssm_elems, 4 * 16 * 16);
    /* minimax_sparse: the sparse layers, no state */
    m = hybrid_model(SGL_ATTN_HYBRID_MINIMAX_SPARSE);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    assert_int_equal(d.n_lin, 2);
    assert_true(sgl_sdk_lin_layer_is_own(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, 2));
    assert_false(sgl_sdk_lin_layer_is_own(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, 1));
    assert_int_equal(sgl_sdk_lin_state_bytes(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, f32), 0);
    /* a model of another kind, a bad field */
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_GDN, &m, f32, &d, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "has hybrid kind minimax_sparse; this wrapper computes gdn"));
    m = hybrid_model(SGL_ATTN_HYBRID_MAMBA2);
    m.lin_num_v_heads = 3;
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_MAMBA2, &m, f32, &d, why, sizeof why),
                     SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(why, "model field lin_num_v_heads = 3; expected a positive multiple of lin_num_k_heads");
    /* the pools: [layers][slots] states, [layers][slots][steps] verify copies when drafts are verified */
    m = hybrid_model(SGL_ATTN_HYBRID_GDN);
    assert_int_equal(sgl_sdk_lin_verify_steps(&m), 0);
    m.spec_tokens = 1;
    assert_int_equal(sgl_sdk_lin_verify_steps(&m), 0);
    m.spec_tokens = 4;
    assert_int_equal(sgl_sdk_lin_verify_steps(&m), 4);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_GDN, &m, f32, &d, why, sizeof why), SGL_ATTN_OK);
    sgl_sdk_lin_pool p;
    assert_int_equal(sgl_sdk_lin_pool_of(&d, 5, sgl_sdk_lin_verify_steps(&m), &p), 1);
    assert_int_equal(p.layers, 3);
    assert_int_equal(p.slots, 5);
    assert_int_equal(p.steps, 4);
    assert_int_equal(p.conv, 3u * 5 * 576);
    assert_int_equal(p.ssm, 3u * 5 * 2048);
    assert_int_equal(p.iconv, 3u * 5 * 4 * 576);
    assert_int_equal(p.issm, 3u * 5 * 4 * 2048);
    assert_int_equal(sgl_sdk_lin_pool_of(&d, 5, 0, &p), 1);
    assert_int_equal(p.iconv + p.issm, 0);
    d.ssm_elems = INT64_MAX / 2; /* a count past 64 bits is refused, not wrapped */
    assert_int_equal(sgl_sdk_lin_pool_of(&d, 5, 4, &p), 0);
}

static void test_linear_inputs(void **state) {
    (void)state;
    char why[64];
    sgl_sdk_lin_dims d;
    sgl_attn_model m = hybrid_model(SGL_ATTN_HYBRID_MAMBA2);
    assert_int_equal(sgl_sdk_lin_dims_of(SGL_ATTN_HYBRID_MAMBA2, &m, SGL_ATTN_DT_F32, &d, why, sizeof why), 0);
    /* T = 2 tokens: x [2, 192], conv_weight [192, 4], a (dt) [2, 4], A_log and dt_bias [4], out [2, 4, 32] */
    static float x[2 * 192], w[192 * 4], dt[8], alog[4], dtb[4], out[2 * 4 * 32];
    int64_t sx[2] = {2, 192}, sw[2] = {192, 4}, sdt[2] = {2, 4}, s4[1] = {4}, so[3] = {2, 4, 32};
    DLTensor tx = {x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sx, NULL, 0};
    DLTensor tw = {w, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sw, NULL, 0};
    DLTensor tdt = {dt, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sdt, NULL, 0};
    DLTensor ta = {alog, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, s4, NULL, 0};
    DLTensor tb = {dtb, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, s4, NULL, 0};
    DLTensor to = {out, {kDLCPU, 0}, 3, {kDLFloat, 32, 1}, so, NULL, 0};
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_MAMBA2;
    io.x = &tx;
    io.conv_weight = &tw;
    io.a = &tdt;
    io.A_log = &ta;
    io.dt_bias = &tb;
    io.out = &to;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.linear = &io;
    const sgl_sdk_tensor_spec base = {NULL, NULL, 0, {0}, SGL_ATTN_DT_F32, SGL_SDK_DEV_HOST, -1, SGL_SDK_T_COMPACT, 0};
    assert_int_equal(sgl_sdk_lin_check_io(&d, &a, &io, 2, &base, "mamba2 layer 1: ", err, sizeof err), SGL_ATTN_OK);
    sw[1] = 3;
    assert_int_equal(sgl_sdk_lin_check_io(&d, &a, &io, 2, &base, "mamba2 layer 1: ", err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_string_equal(err, "mamba2 layer 1: linear.conv_weight has shape [192, 3]; expected [192, 4]");
    sw[1] = 4;
    io.dt_bias = NULL;
    assert_int_equal(sgl_sdk_lin_check_io(&d, &a, &io, 2, &base, "mamba2 layer 1: ", err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_string_equal(err, "mamba2 layer 1: linear.dt_bias is NULL");
    io.dt_bias = &tb;
    io.kind = SGL_ATTN_HYBRID_GDN;
    assert_int_equal(sgl_sdk_lin_check_io(&d, &a, &io, 2, &base, "", err, sizeof err), SGL_ATTN_E_INVALID);
    assert_string_equal(err, "linear->kind = 1; expected 2 (mamba2)");
    assert_int_equal(sgl_sdk_lin_check_io(&d, &a, NULL, 2, &base, "", err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "args->linear is NULL"));
}

/* ------------------------------------------------------------ text, half */

static char g_logged[128];
static void log_line(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx;
    char line[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(g_logged, sizeof g_logged, "%s %d: %s", plugin, level, line);
}
static const sgl_attn_host_api g_log_host = {.struct_size = sizeof(sgl_attn_host_api),
                                             .abi_major = SGL_ATTN_ABI_MAJOR,
                                             .abi_minor_max = SGL_ATTN_ABI_MINOR,
                                             .log = log_line};

static void test_text_and_half(void **state) {
    (void)state;
    char b[96];
    sgl_sdk_dtype_set_name(SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64, b, sizeof b);
    assert_string_equal(b, "float32, bfloat16 or float64");
    sgl_sdk_dtype_set_name(0, b, sizeof b);
    assert_string_equal(b, "(none)");
    const int64_t s[3] = {2, SGL_SDK_ANY, 7};
    sgl_sdk_shape_str(b, sizeof b, 3, s);
    assert_string_equal(b, "[2, *, 7]");
    sgl_sdk_str(b, 4, "%s", "truncated");
    assert_string_equal(b, "tru");
    sgl_sdk_append(b, sizeof b, "%d", 5);
    assert_string_equal(b, "tru5");
    sgl_sdk_prepend(b, sizeof b, "call: ");
    assert_string_equal(b, "call: tru5");
    char small[8] = "abcdef";
    sgl_sdk_prepend(small, sizeof small, "xy: "); /* truncates the message, keeps the prefix */
    assert_string_equal(small, "xy: abc");
    sgl_sdk_prepend(small, sizeof small, "a prefix too long");
    assert_string_equal(small, "a prefi");
    /* the creating host (ABI 1.1) and its log */
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.host = &g_log_host;
    assert_ptr_equal(sgl_sdk_create_host(&a), &g_log_host);
    sgl_sdk_log(sgl_sdk_create_host(&a), SGL_ATTN_LOG_WARN, "toy", "%d slots", 7);
    assert_string_equal(g_logged, "toy 1: 7 slots");
    a.struct_size = (uint32_t)offsetof(sgl_attn_create_args, host); /* a 1.0 host: none */
    assert_null(sgl_sdk_create_host(&a));
    assert_null(sgl_sdk_create_host(NULL));
    sgl_sdk_log(NULL, SGL_ATTN_LOG_WARN, "toy", "nothing"); /* no host: nothing, no crash */
    sgl_sdk_log(&g_host, SGL_ATTN_LOG_WARN, "toy", "nothing"); /* a host without log */
    assert_string_equal(g_logged, "toy 1: 7 slots");
    /* every f16 bit pattern but NaNs survives f16 -> f32 -> f16 */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) continue;
        assert_int_equal(sgl_sdk_f32_to_f16(sgl_sdk_f16_to_f32((uint16_t)h)), h);
    }
    assert_true(sgl_sdk_f16_to_f32(0x0001) == 0x1p-24f);         /* the smallest subnormal */
    assert_int_equal(sgl_sdk_f32_to_f16(0x1.002p0f), 0x3c00);   /* a tie rounds to even */
    assert_int_equal(sgl_sdk_f32_to_bf16(1.00390625f), 0x3f80); /* 1 + 2^-8: a tie, to even */
    assert_true(sgl_sdk_bf16_to_f32(0x3f81) == 1.0078125f);
}

/* ------------------------------------------------------------- the entry */

static int g_hooked;
static void hook(const sgl_attn_host_api *host) { g_hooked = host == &g_host; }
static int toy_probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    sgl_sdk_caps_no_arch(c);
    return SGL_ATTN_OK;
}

SGL_SDK_PLUGIN_HOOKED(toy_plugin, hook, .name = "toy", .version = "1.2.3", .platform = SGL_ATTN_PLATFORM_CPU,
                      .role = SGL_ATTN_ROLE_FULL, .probe = toy_probe)

/* ABI 1.2 fields a plugin does not declare: named, unless its caps declare
 * the feature; bytes past an older caller's struct_size are not read. */
static void test_unserved(void **state) {
    (void)state;
    DLTensor t;
    memset(&t, 0, sizeof t);
    sgl_attn_batch b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    assert_null(sgl_sdk_unserved_batch(&b, 0));
    b.page_table = &t;
    assert_string_equal(sgl_sdk_unserved_batch(&b, 0), "batch.page_table");
    assert_null(sgl_sdk_unserved_batch(&b, SGL_ATTN_FEAT_PAGE_TABLE));
    b.struct_size = SGL_ATTN_BATCH_SIZE_V1_0;
    assert_null(sgl_sdk_unserved_batch(&b, 0));
    b.struct_size = sizeof b;
    b.page_table = NULL;
    b.mask_indptr = &t;
    assert_string_equal(sgl_sdk_unserved_batch(&b, 0), "batch.mask_indptr");
    b.mask_indptr = NULL;
    b.forward_mode = SGL_ATTN_MODE_DRAFT_EXTEND;
    assert_string_equal(sgl_sdk_unserved_batch(&b, 0), "batch.forward_mode draft_extend");
    assert_null(sgl_sdk_unserved_batch(&b, SGL_ATTN_FEAT_DRAFT_EXTEND));

    sgl_attn_layer l;
    sgl_attn_forward_args a;
    memset(&l, 0, sizeof l);
    memset(&a, 0, sizeof a);
    l.struct_size = sizeof l;
    a.struct_size = sizeof a;
    assert_null(sgl_sdk_unserved_forward(&a, 0)); /* no layer: not read */
    a.layer = &l;
    l.q_descale = 1.f;
    assert_null(sgl_sdk_unserved_forward(&a, 0));
    l.v_scale_tensor = &t;
    assert_string_equal(sgl_sdk_unserved_forward(&a, 0), "layer.v_scale_tensor");
    assert_null(sgl_sdk_unserved_forward(&a, SGL_ATTN_FEAT_FP8_SCALES));
    l.struct_size = SGL_ATTN_LAYER_SIZE_V1_0;
    assert_null(sgl_sdk_unserved_forward(&a, 0));
    l.struct_size = sizeof l;
    l.v_scale_tensor = NULL;
    l.attn_type = SGL_ATTN_TYPE_ENCODER_ONLY;
    assert_string_equal(sgl_sdk_unserved_forward(&a, 0), "layer.attn_type");
    l.attn_type = 0;
    a.k_rope = &t;
    assert_string_equal(sgl_sdk_unserved_forward(&a, 0), "forward args k_rope");
    assert_null(sgl_sdk_unserved_forward(&a, SGL_ATTN_FEAT_MLA_ROPE_SPLIT));
    a.topk_indices = &t; /* no feature bit: always named */
    assert_string_equal(sgl_sdk_unserved_forward(&a, SGL_ATTN_FEAT_ALL_V1_2), "forward args topk_indices");
    a.struct_size = SGL_ATTN_FORWARD_ARGS_SIZE_V1_0;
    assert_null(sgl_sdk_unserved_forward(&a, 0));
}

static void test_entry_macro(void **state) {
    (void)state;
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    assert_int_equal(sgl_attn_plugin_entry(&g_host, &ans), SGL_ATTN_OK);
    assert_ptr_equal(ans.plugin, &toy_plugin);
    assert_int_equal(ans.plugin->struct_size, sizeof(sgl_attn_plugin));
    assert_int_equal(ans.plugin->abi_major, SGL_ATTN_ABI_MAJOR);
    assert_int_equal(ans.plugin->abi_minor, SGL_ATTN_ABI_MINOR);
    assert_string_equal(ans.plugin->version, "1.2.3");
    assert_int_equal(g_hooked, 1);
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    assert_int_equal(ans.plugin->probe(0, &c), SGL_ATTN_OK);
    assert_int_equal(c.arch_max_minor, -1);
    /* an older host is refused, and the hook does not run */
    sgl_attn_host_api old = g_host;
    old.abi_minor_max = SGL_ATTN_ABI_MINOR - 1;
    g_hooked = 0;
    assert_int_equal(sgl_attn_plugin_entry(&old, &ans), SGL_ATTN_E_ABI);
    assert_null(ans.plugin);
    assert_non_null(strstr(ans.refusal, "too old"));
    assert_int_equal(g_hooked, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_ok_and_null),
        cmocka_unit_test(test_tensor_device),
        cmocka_unit_test(test_tensor_shape),
        cmocka_unit_test(test_tensor_dtype),
        cmocka_unit_test(test_tensor_data_and_alignment),
        cmocka_unit_test(test_tensor_strides),
        cmocka_unit_test(test_tensor_rows_and_strides),
        cmocka_unit_test(test_index_reads),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_linear_shapes),
        cmocka_unit_test(test_linear_inputs),
        cmocka_unit_test(test_text_and_half),
        cmocka_unit_test(test_entry_macro),
        cmocka_unit_test(test_unserved),
    };
    return cmocka_run_group_tests_name("plugin sdk", tests, NULL, NULL);
}
