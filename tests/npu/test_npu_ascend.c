/*
 * test_npu_ascend.c - npu_ascend against (1) no CANN at all, and (2) the fake
 * CANN built in tests/npu (fake_acl.h): probe answers, then one decode and
 * one extend whose ACL/aclnn call sequence, shapes, dtypes, lengths and block
 * tables are asserted from the fake's call log, and whose output (computed
 * by the fake on the CPU) is compared with the float64 reference.  None of
 * this ran on Ascend hardware.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"

#if !defined(NPU_PLUGIN_PATH) || !defined(NPU_FAKE_DIR)
#error NPU_PLUGIN_PATH and NPU_FAKE_DIR must be defined
#endif

static tplugin tp;
/* the fake's recorder, found in the fake libascendcl.so once the plugin loaded it */
static int (*log_count)(void);
static const char *(*log_line)(int);
static void (*log_clear)(void);
static int (*live)(void);
static void *fake_so;

static void use_fake(void) {
    setenv("SGL_ATTN_ASCEND_LIB_DIR", NPU_FAKE_DIR, 1);
    unsetenv("FAKE_ACL_INIT_ERROR");
    unsetenv("FAKE_ACL_DEVICE_COUNT");
    unsetenv("FAKE_ACL_SOC");
}

static void bind_fake(void) {
    if (fake_so) return;
    fake_so = dlopen(NPU_FAKE_DIR "/libascendcl.so", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(fake_so); /* the plugin must have loaded it from SGL_ATTN_ASCEND_LIB_DIR */
    *(void **)&log_count = dlsym(fake_so, "fake_acl_log_count");
    *(void **)&log_line = dlsym(fake_so, "fake_acl_log_line");
    *(void **)&log_clear = dlsym(fake_so, "fake_acl_log_clear");
    *(void **)&live = dlsym(fake_so, "fake_acl_live");
    assert_true(log_count && log_line && log_clear && live);
}

/* Index of the first log line at or after `from` containing every needle. */
static int find_line(int from, const char *n1, const char *n2) {
    for (int i = from < 0 ? 0 : from; i < log_count(); i++) {
        const char *l = log_line(i);
        if (strstr(l, n1) && (!n2 || strstr(l, n2))) return i;
    }
    return -1;
}

static void dump_log(void) {
    for (int i = 0; i < log_count(); i++) print_message("  log[%d] %.400s\n", i, log_line(i));
}

static void probe0(sgl_attn_caps *c) {
    assert_int_equal(tprobe(tp.p, 0, c), SGL_ATTN_OK);
}

/* Device 0 probes as unavailable, its reason holding `want`. */
static void probe_unavailable(sgl_attn_caps *c, const char *want) {
    probe0(c);
    assert_int_equal(c->available, 0);
    assert_non_null(strstr(c->reason, want));
}

/* ------------------------------------------------------------ no CANN */

static void test_runtime_missing(void **state) {
    (void)state;
    sgl_attn_caps c;
    setenv("SGL_ATTN_ASCEND_LIB_DIR", "/nonexistent/cann/lib64", 1);
    probe_unavailable(&c, "libascendcl.so not found");
    assert_non_null(strstr(c.reason, "No such file"));
    unsetenv("SGL_ATTN_ASCEND_LIB_DIR");
    probe_unavailable(&c, "libascendcl.so not found: libascendcl.so: cannot open shared object file");
    assert_non_null(strstr(c.reason, "set SGL_ATTN_ASCEND_LIB_DIR"));
    /* Device ops and create answer too, without crashing. */
    void *p = NULL;
    int rc = tp.p->device_ops->alloc(0, 64, &p);
    assert_int_equal(rc, 100001);
    assert_null(p);
    assert_non_null(strstr(tp.p->device_ops->error_string(rc), "not loaded"));
    sgl_attn_model m = tmodel(0, 0, 0, SGL_ATTN_DT_F16);
    char err[256] = "";
    sgl_attn_create_args ca = tcreate_args(&m, 0, 0, 0, err, sizeof err);
    sgl_attn_backend *be = NULL;
    assert_int_equal(tp.p->create(&ca, &be), SGL_ATTN_E_DEVICE);
    assert_null(be);
    assert_non_null(strstr(err, "libascendcl.so not found"));
}

/* ---------------------------------------------------------- fake CANN */

static void test_acl_init_error(void **state) {
    (void)state;
    use_fake();
    setenv("FAKE_ACL_INIT_ERROR", "507033", 1);
    sgl_attn_caps c;
    probe_unavailable(&c, "aclInit -> 507033");
    assert_non_null(strstr(c.reason, "fake driver not started")); /* aclGetRecentErrMsg's words */
    unsetenv("FAKE_ACL_INIT_ERROR");
}

static void test_no_device_and_wrong_soc(void **state) {
    (void)state;
    use_fake();
    setenv("FAKE_ACL_DEVICE_COUNT", "0", 1);
    sgl_attn_caps c;
    probe_unavailable(&c, "no Ascend device: aclrtGetDeviceCount -> count 0");
    setenv("FAKE_ACL_DEVICE_COUNT", "1", 1);
    setenv("FAKE_ACL_SOC", "Ascend310P3", 1);
    probe_unavailable(&c, "Ascend310P3");
    assert_string_equal(c.arch_name, "Ascend310P3");
    use_fake();
}

static void test_probe_fake_device(void **state) {
    (void)state;
    use_fake();
    sgl_attn_caps c;
    probe0(&c);
    bind_fake();
    assert_int_equal(c.available, 1);
    assert_string_equal(c.arch_name, "Ascend910B3");
    assert_non_null(strstr(c.device_name, "Ascend910B3"));
    assert_true(c.memory_bytes == (uint64_t)64 << 30);
    assert_int_equal(c.n_page_sizes, 3);
    assert_int_equal(c.page_sizes[0], 128);
    assert_int_equal(c.q_dtypes, SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16);
    int s = find_line(0, "aclrtGetDeviceCount -> 1", NULL);
    assert_true(s >= 0);
    assert_true(find_line(s, "aclrtSetDevice 0", NULL) > s || find_line(0, "aclrtSetDevice 0", NULL) >= 0);
    assert_true(find_line(s, "aclrtGetSocName -> Ascend910B3", NULL) > s);
    sgl_attn_caps c1;
    memset(&c1, 0, sizeof c1);
    c1.struct_size = sizeof c1;
    assert_int_equal(tp.p->probe(1, &c1), SGL_ATTN_E_NOT_FOUND);
}

/* What the test expects the plugin to hand the operator, from the batch it built. */
typedef struct seen {
    int bs, T, page, nblk, slots;
    int seq[64], ext[64];
    int blocks[64][64];
    int64_t loc[1024];
} seen;

static int observe(ref_batch *b, int64_t *rpi, void *ctx) {
    (void)rpi;
    seen *s = ctx;
    memset(s, 0, sizeof *s);
    s->bs = b->bs;
    s->T = b->T;
    s->page = b->page;
    s->slots = b->slots;
    int maxseq = 0;
    for (int i = 0; i < b->bs; i++) {
        s->seq[i] = b->seq[i];
        s->ext[i] = b->ext[i];
        if (b->seq[i] > maxseq) maxseq = b->seq[i];
        for (int j = 0; j * b->page < b->seq[i]; j++)
            s->blocks[i][j] = (int)(b->r2t[(size_t)b->row[i] * b->cols + (size_t)j * b->page] / b->page);
    }
    s->nblk = (maxseq + b->page - 1) / b->page;
    for (int t = 0; t < b->T; t++) s->loc[t] = b->loc[t];
    return 0;
}

/* "{b0,b1,...,0,0}" of request i, padded to nblk */
static void table_row(const seen *s, int i, char *buf, size_t n) {
    size_t u = 0;
    for (int j = 0; j < s->nblk && u < n; j++) {
        int v = j * s->page < s->seq[i] ? s->blocks[i][j] : 0;
        u += (size_t)snprintf(buf + u, n - u, "%s%d", j ? "," : "", v);
    }
}

static void run_checked(const acase *c, seen *s) {
    aresult r;
    int rc = acase_run(tp.p, 0, c, 0xa5c3, observe, s, &r);
    if (rc || !(r.nmse <= r.limit) || !r.pool_ok) {
        dump_log();
        print_error("%s: stage %d rc %d err '%s' nmse %.3g (limit %.1g) pool %s\n", c->name, r.stage, r.rc, r.err, r.nmse,
                    r.limit, r.pool_msg);
    } else {
        print_message("    %s: nmse %.2e (limit %.0e) against the fake's CPU result, pool exact\n", c->name, r.nmse,
                      r.limit);
    }
    assert_int_equal(rc, 0);
    assert_true(r.nmse <= r.limit);
    assert_true(r.pool_ok);
}

static const acase decode_case = {"npu_decode_gqa_f16", SGL_ATTN_MODE_DECODE, 3, 300, 0, 1, 8, 2, 128, 128, 0,
                                  RT_F16, RT_F16, 0, 128, -1, 0, 0, 1, 0, 1, 0, 0};

static void test_decode_call_path(void **state) {
    (void)state;
    use_fake();
    bind_fake();
    log_clear();
    int live0 = live();
    seen s;
    run_checked(&decode_case, &s);
    assert_int_equal(live(), live0); /* every descriptor, executor, buffer and stream released */
    char want[1024], row[512];
    /* Metadata: lengths from the mirror, rpi and rows from the device, then the table upload. */
    int md = find_line(0, "aclrtMemcpy kind=2", NULL);
    snprintf(want, sizeof want, "aclrtMemcpy kind=1 bytes=%d", s.bs * s.nblk * 4);
    int up = find_line(md, want, NULL);
    assert_true(md >= 0 && up > md);
    /* Then out_cache_loc: to the host (checked) and into the instance's own
     * int64 buffer, which the save reads, whatever the caller does next. */
    snprintf(want, sizeof want, "aclrtMemcpy kind=1 bytes=%d", s.T * 8);
    int lup = find_line(up, want, NULL);
    assert_true(lup > up);
    /* Save: k then v rows at out_cache_loc, pool as [slots, Hkv * D]. */
    snprintf(want, sizeof want, "aclnnInplaceIndexCopyGetWorkspaceSize self=[%d,256]:f16 dim=0 index=[%d]:i64{%" PRId64
             ",%" PRId64 ",%" PRId64 "} source=[%d,256]:f16", s.slots, s.T, s.loc[0], s.loc[1], s.loc[2], s.T);
    int k1 = find_line(lup, want, NULL);
    int k1r = find_line(k1, "aclnnInplaceIndexCopy stream=set", NULL);
    int k2 = find_line(k1r, want, NULL);
    int k2r = find_line(k2, "aclnnInplaceIndexCopy stream=set", NULL);
    if (k1 < 0 || k2r < 0) dump_log();
    assert_true(k1 > up && k1r > k1 && k2 > k1r && k2r > k2);
    /* Attention: one call for the batch, BSND, paged BnBsH pool, block table, seq lens. */
    char tv[1024] = "";
    size_t u = 0;
    for (int i = 0; i < s.bs; i++) {
        table_row(&s, i, row, sizeof row);
        u += (size_t)snprintf(tv + u, sizeof tv - u, "%s%s", i ? "," : "", row);
    }
    snprintf(want, sizeof want, "q=[3,1,8,128]:f16 k=[%d,128,256]:f16 v=[%d,128,256]:f16 mask=none "
             "actualSeqLengths=none actualSeqLengthsKv=[%d,%d,%d] blockTable=[3,%d]:i32{%s} numHeads=8 "
             "numKeyValueHeads=2 scale=0.0883883 layout=BSND sparseMode=0 blockSize=128",
             s.slots / 128, s.slots / 128, s.seq[0], s.seq[1], s.seq[2], s.nblk, tv);
    int a = find_line(k2r, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize", want);
    if (a < 0) {
        dump_log();
        print_error("expected a line with: %s\n", want);
    }
    assert_true(a > k2r);
    assert_non_null(strstr(log_line(a), "out=[3,1,8,128]:f16 lse=none"));
    assert_true(find_line(a, "aclnnFusedInferAttentionScoreV2 ws=1048576 stream=set", NULL) == a + 1);
    assert_int_equal(find_line(a + 1, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize", NULL), -1); /* one call */
    assert_int_equal(find_line(0, "rejected", NULL), -1);
}

/* out_cache_loc overwritten between metadata and forward (the fake's device
 * memory is host memory): the save goes through the instance's own copy, so
 * the pool still holds the new K/V at the planned slots (run_checked compares
 * it with the reference of the batch as planned). */
static int wreck_out_cache_loc(sgl_attn_batch *bt) {
    DLTensor *t = (DLTensor *)bt->out_cache_loc;
    for (int64_t i = 0; i < t->shape[0]; i++) {
        if (t->dtype.bits == 64) ((int64_t *)t->data)[i] = -1;
        else ((int32_t *)t->data)[i] = INT32_MAX;
    }
    return 1;
}

static void test_out_cache_loc_changed_after_metadata(void **state) {
    (void)state;
    use_fake();
    bind_fake();
    log_clear();
    seen s;
    acase_after_metadata = wreck_out_cache_loc;
    run_checked(&decode_case, &s);
    acase_after_metadata = NULL;
}

static const acase extend_case = {"npu_extend_gqa_bf16_prefix", SGL_ATTN_MODE_EXTEND, 3, 400, 40, 0, 8, 2, 128, 128,
                                  0, RT_BF16, RT_BF16, 1, 128, -1, 0, 0, 1, 0, 0, 0, 0};

static void test_extend_call_path(void **state) {
    (void)state;
    use_fake();
    bind_fake();
    log_clear();
    int live0 = live();
    seen s;
    run_checked(&extend_case, &s);
    assert_int_equal(live(), live0);
    /* The save's index is the instance's int64 copy of out_cache_loc. */
    assert_true(find_line(0, "aclnnInplaceIndexCopyGetWorkspaceSize self=", "index=[") >= 0);
    assert_true(find_line(0, "index=[", ":i64{") >= 0);
    /* One call per request, in order: its new tokens against its whole row, causal from the bottom right. */
    int at = 0;
    for (int i = 0; i < s.bs; i++) {
        char want[1024], row[512];
        table_row(&s, i, row, sizeof row);
        snprintf(want, sizeof want, "q=[1,%d,8,128]:bf16 k=[%d,128,256]:bf16 v=[%d,128,256]:bf16 mask=[2048,2048]:bool "
                 "actualSeqLengths=[%d] actualSeqLengthsKv=[%d] blockTable=[1,%d]:i32{%s} numHeads=8 numKeyValueHeads=2 "
                 "scale=0.0883883 layout=BSND sparseMode=3 blockSize=128",
                 s.ext[i], s.slots / 128, s.slots / 128, s.ext[i], s.seq[i], s.nblk, row);
        int a = find_line(at, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize", want);
        if (a < 0) {
            dump_log();
            print_error("request %d: expected a line with: %s\n", i, want);
        }
        assert_true(a >= at);
        assert_true(find_line(a, "aclnnFusedInferAttentionScoreV2 ws=", NULL) == a + 1);
        at = a + 2;
    }
    assert_int_equal(find_line(at, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize", NULL), -1);
    /* Request 0 starts from an empty prefix, the last one from the longest. */
    assert_int_equal(s.seq[0], s.ext[0]);
}

static void test_page_256_and_fixed_lengths(void **state) {
    (void)state;
    use_fake();
    bind_fake();
    acase c = decode_case;
    c.name = "npu_decode_page256_bf16";
    c.page = 256;
    c.qdt = c.kvdt = RT_BF16;
    c.fixed_lens = 1;
    c.cpu_mirrors = 0; /* lengths copied from the device */
    seen s;
    run_checked(&c, &s);
    c = extend_case;
    c.name = "npu_extend_mha_f16_page256";
    c.page = 256;
    c.Hkv = 8;
    c.qdt = c.kvdt = RT_F16;
    c.cpu_mirrors = 1;
    c.use_stream = 1;
    run_checked(&c, &s);
}

/* ------------------------------------------------------------ refusals */

static int break_page(ref_batch *b, int64_t *rpi, void *ctx) {
    (void)rpi;
    (void)ctx;
    int64_t *r = b->r2t + (size_t)b->row[b->bs - 1] * b->cols;
    int64_t t = r[1];
    r[1] = r[2];
    r[2] = t;
    return 1;
}

static void test_refusals(void **state) {
    (void)state;
    use_fake();
    aresult r;
    acase c = decode_case;
    c.name = "npu_page16";
    c.page = 16;
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, NULL, NULL, &r), 0);
    assert_int_equal(r.stage, 2);
    assert_int_equal(r.rc, SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(r.err, "multiple of 128"));
    c = decode_case;
    c.name = "npu_not_page_contiguous";
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, break_page, NULL, &r), 0);
    assert_int_equal(r.rc, SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(r.err, "not page-contiguous at token 1"));
    c = decode_case;
    c.name = "npu_window";
    c.window = 64;
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, NULL, NULL, &r), 0);
    assert_int_equal(r.stage, 3);
    assert_int_equal(r.rc, SGL_ATTN_E_UNSUPPORTED);
    c = decode_case;
    c.name = "npu_f32";
    c.qdt = c.kvdt = RT_F32;
    assert_int_not_equal(acase_run(tp.p, 0, &c, 1, NULL, NULL, &r), 0);
    assert_int_equal(r.stage, 1);
    assert_int_equal(r.rc, SGL_ATTN_E_UNSUPPORTED);

    sgl_attn_model m = tmodel(8, 2, 128, SGL_ATTN_DT_BF16);
    char why[256];
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_OK);
    m.head_dim_qk = 192;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "equal qk and v head dims"));
    m.head_dim_qk = m.head_dim_v = 100;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(why, "multiple of 16"));
    m.head_dim_qk = m.head_dim_v = 128;
    m.is_mla = 1;
    assert_int_equal(tp.p->supports_model(&m, NULL, why, sizeof why), SGL_ATTN_E_UNSUPPORTED);
}

/* The operators' workspace is sized by option workspace_mb, read by each
 * create from create_args.host (the environment overriding it), never from
 * what an earlier negotiation or create saw. */
static int create_ws(const char *opt, const char *env, char *err, size_t n) {
    sgl_attn_model m = tmodel(8, 2, 128, SGL_ATTN_DT_F16);
    sgl_attn_create_args ca = tcreate_args(&m, 2, 8, 256, err, n);
    ca.host = tplugin_host;
    tp.opt_vals[0] = opt;
    if (env) setenv("SGL_ATTN_NPU_WORKSPACE_MB", env, 1);
    else unsetenv("SGL_ATTN_NPU_WORKSPACE_MB");
    sgl_attn_backend *be = NULL;
    err[0] = 0;
    int rc = tp.p->create(&ca, &be);
    if (be) be->ops->destroy(be);
    tp.opt_vals[0] = "8";
    unsetenv("SGL_ATTN_NPU_WORKSPACE_MB");
    return rc;
}

static void test_workspace_option_read_at_create(void **state) {
    (void)state;
    use_fake();
    char err[256];
    assert_int_equal(create_ws("8", NULL, err, sizeof err), SGL_ATTN_OK);
    bind_fake();
    log_clear();
    assert_int_equal(create_ws("3", NULL, err, sizeof err), SGL_ATTN_OK);
    assert_true(find_line(0, "aclrtMalloc 3145728 ", NULL) >= 0);
    log_clear();
    assert_int_equal(create_ws("3", "5", err, sizeof err), SGL_ATTN_OK);
    assert_true(find_line(0, "aclrtMalloc 5242880 ", NULL) >= 0);
    assert_int_equal(find_line(0, "aclrtMalloc 3145728 ", NULL), -1);
    assert_int_equal(create_ws("8", "lots", err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "environment SGL_ATTN_NPU_WORKSPACE_MB = \"lots\": expected an integer 1..16384"));
    assert_int_equal(create_ws("0", NULL, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "plugin option npu_ascend.workspace_mb = \"0\""));
}

static void test_descriptor(void **state) {
    (void)state;
    assert_string_equal(tp.p->name, "npu_ascend");
    assert_int_equal(tp.p->platform, SGL_ATTN_PLATFORM_NPU);
    assert_string_equal(tp.p->aliases[0], "ascend");
    assert_null(tp.p->aliases[1]);
}

static int setup(void **state) {
    (void)state;
    unsetenv("ASCEND_TOOLKIT_HOME");
    unsetenv("ASCEND_HOME_PATH");
    unsetenv("SGL_ATTN_ASCEND_LIB_DIR");
    dtensor_device_type = kDLExtDev;
    char err[512];
    tp.opt_keys[0] = "workspace_mb";
    tp.opt_vals[0] = "8";
    if (tplugin_open(&tp, NPU_PLUGIN_PATH, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (fake_so) dlclose(fake_so);
    tplugin_close(&tp);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_descriptor),
        cmocka_unit_test(test_runtime_missing),
        cmocka_unit_test(test_acl_init_error),
        cmocka_unit_test(test_no_device_and_wrong_soc),
        cmocka_unit_test(test_probe_fake_device),
        cmocka_unit_test(test_decode_call_path),
        cmocka_unit_test(test_out_cache_loc_changed_after_metadata),
        cmocka_unit_test(test_extend_call_path),
        cmocka_unit_test(test_page_256_and_fixed_lengths),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_workspace_option_read_at_create),
    };
    return cmocka_run_group_tests_name("npu_ascend", tests, setup, teardown);
}
