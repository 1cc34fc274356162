/*
 * test_xpu_ocl.c - the xpu_ocl plugin run for real on an OpenCL CPU device
 * (PoCL): probe with and without permission for CPU devices, numerics of
 * decode / extend / verify against a float64 reference across dtypes, GQA,
 * MLA, window, soft-cap, sinks, both memory models (SVM, cl_mem buffers),
 * the program cache, device_ops, and bad input.
 *
 * Needs an OpenCL CPU platform; OCL_ICD_VENDORS is pinned to PoCL when its
 * ICD file exists (Intel's ICD breaks ASan).  Without any OpenCL device the
 * tests that need one are skipped with the probe's reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_case.h"

#ifndef XPU_PLUGIN_PATH
#error XPU_PLUGIN_PATH must name the built xpu_ocl.so
#endif

static tplugin tp;
static char cache_dir[256];
static int have_device;
static char no_device_reason[SGL_ATTN_REASON_MAX];

static void set_allow_cpu_option(const char *v) {
    tp.opt_keys[0] = v ? "allow_cpu" : NULL;
    tp.opt_vals[0] = v;
    assert_int_equal(tplugin_renegotiate(&tp), 0);
}

/* ------------------------------------------------------------------ probe */

static void test_probe_refuses_cpu_by_default(void **state) {
    (void)state;
    unsetenv("SGL_ATTN_XPU_ALLOW_CPU");
    set_allow_cpu_option(NULL);
    sgl_attn_caps c;
    assert_int_equal(tprobe(tp.p, 0, &c), SGL_ATTN_OK);
    /* No GPU on this machine: unavailable, with Level Zero's and OpenCL's words. */
    assert_int_equal(c.available, 0);
    assert_non_null(strstr(c.reason, "Level Zero"));
    assert_non_null(strstr(c.reason, "OpenCL"));
    if (have_device) assert_non_null(strstr(c.reason, "SGL_ATTN_XPU_ALLOW_CPU=1"));
    c.struct_size = sizeof c;
    assert_int_equal(tp.p->probe(1, &c), SGL_ATTN_E_NOT_FOUND);
}

static void test_probe_cpu_allowed_by_conf_option(void **state) {
    (void)state;
    if (!have_device) skip();
    unsetenv("SGL_ATTN_XPU_ALLOW_CPU");
    set_allow_cpu_option("true");
    sgl_attn_caps c;
    assert_int_equal(tprobe(tp.p, 0, &c), SGL_ATTN_OK);
    assert_int_equal(c.available, 1);
    assert_true(strlen(c.device_name) > 0);
    assert_non_null(strstr(c.arch_name, "OpenCL C"));
    assert_non_null(strstr(c.reason, "plugin_options.xpu_ocl.allow_cpu"));
    assert_int_equal(c.score, 0); /* a CPU device is never an automatic choice */
    assert_true(c.memory_bytes > 0 && c.compute_units > 0);
    assert_true(c.features & SGL_ATTN_FEAT_SINKS);
    assert_true(c.attn_kinds & SGL_ATTN_KIND_MLA);
    set_allow_cpu_option(NULL);
}

static void test_probe_cpu_allowed_by_env(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    sgl_attn_caps c;
    assert_int_equal(tprobe(tp.p, 0, &c), SGL_ATTN_OK);
    assert_int_equal(c.available, 1);
    assert_non_null(strstr(c.reason, "SGL_ATTN_XPU_ALLOW_CPU"));
}

/* --------------------------------------------------------------- numerics */

#define DEC SGL_ATTN_MODE_DECODE
#define EXT SGL_ATTN_MODE_EXTEND
#define VER SGL_ATTN_MODE_TARGET_VERIFY

/* name, mode, bs, maxlen, maxext, tpr, Hq, Hkv, Dqk, Dv, mla, qdt, kvdt, idx64, page, window, softcap, sinks,
 * save, off_mode, cpu_mirrors, use_stream */
static const acase cases[] = {
    {"decode_mha_f32", DEC, 3, 300, 0, 1, 4, 4, 64, 64, 0, RT_F32, RT_F32, 0, 16, -1, 0, 0, 1, 0, 1, 0, 0},
    {"decode_gqa_bf16_window_i64", DEC, 4, 200, 0, 1, 8, 2, 128, 128, 0, RT_BF16, RT_BF16, 1, 16, 50, 0, 0, 1, 1, 0, 0, 0},
    {"decode_f16_softcap_sinks", DEC, 3, 150, 0, 1, 4, 2, 64, 64, 0, RT_F16, RT_F16, 0, 1, -1, 30, 1, 1, 2, 1, 1, 0},
    {"decode_mqa_diff_dims_f32q_bf16kv", DEC, 2, 97, 0, 1, 4, 1, 96, 64, 0, RT_F32, RT_BF16, 0, 8, -1, 0, 0, 1, 0, 0, 0, 0},
    {"decode_mla_bf16", DEC, 2, 80, 0, 1, 4, 1, 576, 512, 1, RT_BF16, RT_BF16, 0, 64, -1, 0, 0, 1, 0, 1, 0, 0},
    {"decode_spec_tpr2_f32", DEC, 3, 64, 0, 2, 4, 2, 32, 32, 0, RT_F32, RT_F32, 1, 4, -1, 0, 0, 1, 0, 0, 0, 0},
    {"decode_nosave_f16", DEC, 2, 70, 0, 1, 2, 2, 48, 48, 0, RT_F16, RT_F16, 0, 16, -1, 0, 0, 0, 0, 0, 0, 0},
    {"extend_gqa_f16_prefix", EXT, 3, 120, 20, 0, 8, 2, 64, 64, 0, RT_F16, RT_F16, 0, 16, -1, 0, 0, 1, 0, 1, 0, 0},
    {"extend_bf16_window_sinks", EXT, 3, 90, 33, 0, 4, 4, 64, 64, 0, RT_BF16, RT_BF16, 1, 8, 17, 0, 1, 1, 1, 0, 1, 0},
    {"extend_mla_f32", EXT, 2, 40, 12, 0, 2, 1, 576, 512, 1, RT_F32, RT_F32, 0, 16, -1, 0, 0, 1, 0, 1, 0, 0},
    {"extend_f32_softcap_page1", EXT, 2, 70, 70, 0, 2, 1, 40, 24, 0, RT_F32, RT_F32, 0, 1, -1, 20, 0, 1, 0, 1, 0, 0},
    {"verify_tpr3_bf16", VER, 2, 60, 0, 3, 4, 2, 64, 64, 0, RT_BF16, RT_BF16, 0, 16, -1, 0, 0, 1, 0, 0, 0, 0},
};

static void check_case(const acase *c) {
    aresult r;
    int rc = acase_run(tp.p, 0, c, 0x5eed, NULL, NULL, &r);
    if (rc || r.err[0] || !(r.nmse <= r.limit) || !r.pool_ok)
        print_error("%s: stage %d rc %d err '%s' nmse %.3g (limit %.1g) pool %s %s\n", c->name, r.stage, r.rc, r.err,
                    r.nmse, r.limit, r.pool_ok ? "ok" : "BAD", r.pool_msg);
    else
        print_message("    %s: nmse %.2e (limit %.0e), pool exact\n", c->name, r.nmse, r.limit);
    assert_int_equal(rc, 0);
    assert_string_equal(r.err, "");
    assert_true(r.nmse <= r.limit);
    assert_true(r.pool_ok);
}

static void test_case_svm(void **state) {
    if (!have_device) skip();
    unsetenv("SGL_ATTN_XPU_MEMORY");
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    check_case((const acase *)*state);
}

/* The cl_mem model, as on OpenCL 1.2 devices.  Pointer arithmetic on a
 * cl_mem is meaningless, so data + k placement becomes byte_offset. */
static void test_case_buffer(void **state) {
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_MEMORY", "buffer", 1);
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    acase c = *(const acase *)*state;
    if (c.off_mode == 2) c.off_mode = 1;
    check_case(&c);
    unsetenv("SGL_ATTN_XPU_MEMORY");
}

/* ------------------------------------------------------------ device ops */

static void test_device_ops_roundtrip_and_refusals(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    const sgl_attn_device_ops *ops = tp.p->device_ops;
    assert_non_null(ops);
    for (int mode = 0; mode < 2; mode++) {
        if (mode) setenv("SGL_ATTN_XPU_MEMORY", "buffer", 1);
        else unsetenv("SGL_ATTN_XPU_MEMORY");
        void *a = NULL;
        float in[1000], outv[1000];
        rrng r = {(uint64_t)mode + 7};
        for (int i = 0; i < 1000; i++) in[i] = (float)rrng_normal(&r, 1.0);
        assert_int_equal(ops->alloc(0, sizeof in, &a), 0);
        assert_non_null(a);
        assert_int_equal(ops->copy_to_device(0, a, in, sizeof in), 0);
        memset(outv, 0, sizeof outv);
        assert_int_equal(ops->copy_to_host(0, outv, a, sizeof outv), 0);
        assert_memory_equal(in, outv, sizeof in);
        /* A copy past the end is refused, not performed. */
        assert_int_not_equal(ops->copy_to_device(0, a, in, sizeof in + 4), 0);
        assert_string_equal(ops->error_string(ops->copy_to_host(0, outv, a, sizeof in + 64)), "CL_INVALID_VALUE");
        if (!mode) {
            /* SVM: interior pointers are valid, foreign ones are refused. */
            assert_int_equal(ops->copy_to_host(0, outv, (char *)a + 40, 400), 0);
            assert_memory_equal(outv, in + 10, 400);
            assert_int_not_equal(ops->copy_to_host(0, outv, in, 4), 0);
            assert_int_not_equal(ops->free(0, in), 0);
        }
        assert_int_equal(ops->synchronize(0, NULL), 0);
        void *s = NULL;
        assert_int_equal(ops->stream_create(0, &s), 0);
        assert_int_equal(ops->synchronize(0, s), 0);
        assert_int_equal(ops->stream_destroy(0, s), 0);
        assert_int_equal(ops->free(0, a), 0);
        assert_int_not_equal(ops->alloc(5, 16, &a), 0); /* no device 5 */
    }
    unsetenv("SGL_ATTN_XPU_MEMORY");
}

/* ---------------------------------------------------------- program cache */

static int count_bins(const char *dir, char *first, size_t n) {
    DIR *d = opendir(dir);
    int k = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".clbin")) {
            if (!k && first) snprintf(first, n, "%s/%s", dir, e->d_name);
            k++;
        }
    closedir(d);
    return k;
}

static const acase small = {"cache_probe_case", DEC, 2, 40, 0, 1, 2, 2, 32, 32, 0, RT_F32, RT_F32, 0, 8, -1, 0, 0, 1, 0, 0, 0, 0};

static void test_program_cache(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    unsetenv("SGL_ATTN_XPU_MEMORY");
    /* Each run releases every device object, so the next create builds again:
     * from the cache when it is there. */
    char path[512];
    struct stat s1, s2;
    check_case(&small);
    assert_int_equal(count_bins(cache_dir, path, sizeof path), 1);
    assert_int_equal(stat(path, &s1), 0);
    assert_true(s1.st_size > 32);
    check_case(&small); /* a hit leaves the file alone */
    assert_int_equal(stat(path, &s2), 0);
    assert_true(s1.st_ino == s2.st_ino && s1.st_mtime == s2.st_mtime);
    /* A corrupt entry is ignored and replaced (rename: a new inode). */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    fputc('X', f);
    fputc('Y', f);
    fclose(f);
    check_case(&small);
    assert_int_equal(stat(path, &s2), 0);
    assert_true(s2.st_ino != s1.st_ino);
    /* A truncated one too (size back to a whole entry). */
    assert_int_equal(truncate(path, 20), 0);
    check_case(&small);
    assert_int_equal(stat(path, &s1), 0);
    assert_true(s1.st_size == s2.st_size);
    /* An unusable cache directory never fails a build. */
    setenv("SGL_ATTN_XPU_CACHE_DIR", "/dev/null/sglattn-cache", 1);
    check_case(&small);
    setenv("SGL_ATTN_XPU_CACHE_DIR", "off", 1);
    check_case(&small);
    setenv("SGL_ATTN_XPU_CACHE_DIR", cache_dir, 1);
}

/* -------------------------------------------------------------- bad input */

static int bad_row(ref_batch *b, int64_t *rpi, void *ctx) {
    (void)ctx;
    rpi[b->bs - 1] = b->rows + 3;
    return 1;
}
static int bad_slot(ref_batch *b, int64_t *rpi, void *ctx) {
    (void)rpi;
    (void)ctx;
    /* first token of request 0 points far outside the pool */
    b->r2t[(size_t)b->row[0] * b->cols] = (int64_t)b->slots + 1000;
    return 1;
}

static void test_bad_indices_reported_async(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    unsetenv("SGL_ATTN_XPU_CHECK");
    aresult r;
    acase c = small;
    c.name = "bad_row_async";
    /* The forward returns OK (no host wait); last_error then names the problem. */
    assert_int_equal(acase_run(tp.p, 0, &c, 1, bad_row, NULL, &r), 0);
    assert_non_null(strstr(r.err, "req_pool_indices"));
    c.name = "bad_slot_async";
    assert_int_equal(acase_run(tp.p, 0, &c, 1, bad_slot, NULL, &r), 0);
    assert_non_null(strstr(r.err, "slot outside the KV pool"));
}

static void test_bad_indices_checked_mode(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    setenv("SGL_ATTN_XPU_CHECK", "1", 1);
    aresult r;
    acase c = small;
    c.name = "bad_row_checked";
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, bad_row, NULL, &r), 0);
    assert_int_equal(r.stage, 2);
    assert_int_equal(r.rc, SGL_ATTN_E_INVALID);
    assert_non_null(strstr(r.err, "req_pool_indices"));
    c.name = "bad_slot_checked";
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, bad_slot, NULL, &r), 0);
    assert_int_equal(r.stage, 3);
    assert_non_null(strstr(r.err, "KV pool"));
    unsetenv("SGL_ATTN_XPU_CHECK");
    /* The conf option, read by create through create_args.host. */
    tp.opt_keys[0] = "check";
    tp.opt_vals[0] = "true";
    c.name = "bad_row_checked_by_option";
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, bad_row, NULL, &r), 0);
    assert_int_equal(r.stage, 2);
    tp.opt_vals[0] = "sometimes";
    c.name = "check_option_refused";
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, NULL, NULL, &r), 0);
    assert_int_equal(r.stage, 1);
    assert_non_null(strstr(r.err, "plugin option xpu_ocl.check = \"sometimes\""));
    tp.opt_keys[0] = NULL;
    tp.opt_vals[0] = NULL;
}

/* req_to_token's header changed between metadata and forward: the plan's
 * rows and columns no longer describe it, so the forward refuses it. */
static int shrink_r2t(sgl_attn_batch *bt) {
    DLTensor *t = (DLTensor *)bt->req_to_token;
    t->shape[1] -= 1;
    return 0;
}

static void test_batch_changed_after_metadata(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    aresult r;
    acase c = small;
    c.name = "r2t_shape_changed";
    acase_after_metadata = shrink_r2t;
    int rc = acase_run(tp.p, 0, &c, 1, NULL, NULL, &r);
    acase_after_metadata = NULL;
    assert_int_not_equal(rc, 0);
    assert_int_equal(r.stage, 3);
    assert_int_equal(r.rc, SGL_ATTN_E_INVALID);
    assert_non_null(strstr(r.err, "batch.req_to_token"));
    assert_non_null(strstr(r.err, "changed since init_forward_metadata"));
}

static int bad_seq_host(ref_batch *b, int64_t *rpi, void *ctx) {
    (void)rpi;
    (void)ctx;
    b->seq[0] = b->cols + 7; /* the host mirror carries it too */
    return 1;
}

static void test_bad_host_mirror_is_synchronous(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    aresult r;
    acase c = small;
    c.name = "bad_seq_mirror";
    c.cpu_mirrors = 1;
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, bad_seq_host, NULL, &r), 0);
    assert_int_equal(r.stage, 2);
    assert_int_equal(r.rc, SGL_ATTN_E_INVALID);
    assert_non_null(strstr(r.err, "seq_lens_cpu[0]"));
}

static void test_bad_tensors(void **state) {
    (void)state;
    if (!have_device) skip();
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    const sgl_attn_device_ops *ops = tp.p->device_ops;
    sgl_attn_model m = tmodel(2, 2, 32, SGL_ATTN_DT_F32);
    char err[256] = "";
    sgl_attn_create_args ca = tcreate_args(&m, 4, 4, 16, err, sizeof err);
    sgl_attn_backend *be = NULL;
    ca.device = 9;
    assert_int_equal(tp.p->create(&ca, &be), SGL_ATTN_E_NOT_FOUND);
    assert_non_null(strstr(err, "no device 9"));
    ca.device = 0;
    assert_int_equal(tp.p->create(&ca, &be), SGL_ATTN_OK);
    /* A host tensor where a device tensor belongs, a wrong shape, a wrong dtype. */
    int32_t host_r2t[64] = {0}, ones[4] = {1, 1, 1, 1};
    int64_t sh2[2] = {4, 16}, sh1[1] = {4}, sh_bad[1] = {3};
    dtensor r2t, rpi, sl, badsl, fl;
    assert_int_equal(dtensor_put(&r2t, NULL, 0, dl_int(32), 2, sh2, host_r2t, 0, 0), 0);
    assert_int_equal(dtensor_put(&rpi, ops, 0, dl_int(32), 1, sh1, ones, 0, 0), 0);
    assert_int_equal(dtensor_put(&sl, ops, 0, dl_int(32), 1, sh1, ones, 0, 0), 0);
    assert_int_equal(dtensor_put(&badsl, ops, 0, dl_int(32), 1, sh_bad, ones, 0, 0), 0);
    assert_int_equal(dtensor_put(&fl, ops, 0, dl_float(32), 1, sh1, ones, 0, 0), 0);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_DECODE;
    bt.batch_size = 4;
    bt.num_tokens = 4;
    bt.tokens_per_req = 1;
    bt.page_size = 1;
    bt.req_to_token = &r2t.t;
    bt.req_pool_indices = &rpi.t;
    bt.seq_lens = &sl.t;
    assert_int_equal(be->ops->init_forward_metadata(be, &bt), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(be->ops->last_error(be), "batch.req_to_token is in host memory"));
    dtensor_free(&r2t);
    assert_int_equal(dtensor_put(&r2t, ops, 0, dl_int(32), 2, sh2, host_r2t, 0, 0), 0);
    bt.seq_lens = &badsl.t;
    assert_int_equal(be->ops->init_forward_metadata(be, &bt), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(be->ops->last_error(be), "batch.seq_lens has shape [3]; expected [4]"));
    bt.seq_lens = &fl.t;
    assert_int_equal(be->ops->init_forward_metadata(be, &bt), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(be->ops->last_error(be), "expected int32 or int64"));
    bt.seq_lens = &sl.t;
    bt.num_tokens = 5;
    assert_int_equal(be->ops->init_forward_metadata(be, &bt), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(be->ops->last_error(be), "num_tokens = 5"));
    bt.num_tokens = 4;
    assert_int_equal(be->ops->init_forward_metadata(be, &bt), SGL_ATTN_OK);
    /* forward before the right metadata / with a bad layer */
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.batch = &bt;
    assert_int_equal(be->ops->forward_extend(be, &fa), SGL_ATTN_E_STATE);
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.num_q_heads = 3;
    L.num_kv_heads = 2;
    L.head_dim_qk = L.head_dim_v = 32;
    L.sm_scale = 0.1f;
    fa.layer = &L;
    assert_int_equal(be->ops->forward_decode(be, &fa), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(be->ops->last_error(be), "not a multiple of num_kv_heads"));
    L.num_q_heads = 2;
    L.head_dim_v = 600;
    assert_int_equal(be->ops->forward_decode(be, &fa), SGL_ATTN_E_UNSUPPORTED);
    L.head_dim_v = 32;
    L.is_cross = 1; /* no encoder_lens in this batch */
    assert_int_equal(be->ops->forward_decode(be, &fa), SGL_ATTN_E_STATE);
    assert_non_null(strstr(be->ops->last_error(be), "no encoder_lens"));
    L.is_cross = 0;
    assert_int_equal(be->ops->forward_decode(be, &fa), SGL_ATTN_E_INVALID); /* q is NULL */
    assert_non_null(strstr(be->ops->last_error(be), "q is NULL"));
    be->ops->destroy(be);
    dtensor_free(&r2t);
    dtensor_free(&rpi);
    dtensor_free(&sl);
    dtensor_free(&badsl);
    dtensor_free(&fl);
}

static void test_supports_model(void **state) {
    (void)state;
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = 8;
    m.num_kv_heads = 8;
    char why[256];
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.is_encoder_decoder = 1; /* cross attention is served */
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.index_topk = 2048;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "sparse"));
    assert_string_equal(tp.p->name, "xpu_ocl");
    assert_int_equal(tp.p->platform, SGL_ATTN_PLATFORM_XPU);
    assert_string_equal(tp.p->aliases[0], "intel_xpu");
}

static int group_setup(void **state) {
    (void)state;
    /* Pin the ICD list to PoCL unless the caller chose one. */
    if (!getenv("OCL_ICD_VENDORS") && access("/etc/OpenCL/vendors/pocl.icd", R_OK) == 0)
        setenv("OCL_ICD_VENDORS", "/etc/OpenCL/vendors/pocl.icd", 1);
    snprintf(cache_dir, sizeof cache_dir, "/tmp/sglattn-xpu-test-XXXXXX");
    if (!mkdtemp(cache_dir)) return -1;
    setenv("SGL_ATTN_XPU_CACHE_DIR", cache_dir, 1);
    char err[512];
    if (tplugin_open(&tp, XPU_PLUGIN_PATH, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    setenv("SGL_ATTN_XPU_ALLOW_CPU", "1", 1);
    sgl_attn_caps c;
    tprobe(tp.p, 0, &c);
    have_device = c.available;
    snprintf(no_device_reason, sizeof no_device_reason, "%s", c.reason);
    if (!have_device) fprintf(stderr, "xpu_ocl: no OpenCL device, numeric tests skipped: %s\n", c.reason);
    else fprintf(stderr, "xpu_ocl on '%s': %s\n", c.device_name, c.reason);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    tplugin_close(&tp);
    char path[512];
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' || strlen(e->d_name) > 2) {
            snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    rmdir(cache_dir);
    return 0;
}

#define N_CASES (sizeof cases / sizeof cases[0])

int main(void) {
    struct CMUnitTest tests[64];
    size_t n = 0;
    /* XPU_TEST_QUICK=1 (valgrind runs): three numeric cases, no cl_mem repeat. */
    const int quick = getenv("XPU_TEST_QUICK") && getenv("XPU_TEST_QUICK")[0] == '1';
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_supports_model);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_probe_refuses_cpu_by_default);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_probe_cpu_allowed_by_conf_option);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_probe_cpu_allowed_by_env);
    for (size_t i = 0; i < N_CASES; i++) {
        if (quick && i != 2 && i != 4 && i != 8) continue;
        struct CMUnitTest t = {cases[i].name, test_case_svm, NULL, NULL, (void *)&cases[i]};
        tests[n++] = t;
    }
    static char names[N_CASES][80];
    for (size_t i = 0; !quick && i < N_CASES; i += 2) { /* every other case again on cl_mem buffers */
        snprintf(names[i], sizeof names[i], "%s (cl_mem buffers)", cases[i].name);
        struct CMUnitTest t = {names[i], test_case_buffer, NULL, NULL, (void *)&cases[i]};
        tests[n++] = t;
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_device_ops_roundtrip_and_refusals);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_program_cache);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_indices_reported_async);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_indices_checked_mode);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_batch_changed_after_metadata);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_host_mirror_is_synchronous);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_tensors);
    return _cmocka_run_group_tests("xpu_ocl", tests, n, group_setup, group_teardown);
}
