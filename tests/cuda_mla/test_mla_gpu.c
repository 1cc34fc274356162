/* test_mla_gpu.c - every cuda_mla kernel and configuration against a
 * float64 reference on the GPU (skipped with the probe's reason where there is
 * none): decode, 2-token verify, ragged extend, 8 to 128 heads, page sizes
 * 1/8/16/32/64, bf16 / f16 / fp8 pools, a long split decode, many items per
 * CTA, items longer than the mma page-table ring; the output poisoned first,
 * the saved rows checked; the rope split (q_rope / k_rope as strided views);
 * then CUDA-graph capture and replay with new lengths.
 *   MLA_GPU_QUICK=1   a subset that still reaches every kernel instantiation
 *                     (16-, 32- and 64-row tiles in bf16 and f16, fp8 pools
 *                     with both q dtypes, extend, more items than CTAs)
 *   MLA_GPU_QUICK=2   three small cases, 16 / 32 / 128 rows (compute-sanitizer)
 *   MLA_GPU_QUICK=3   the graph capture / replay test alone
 *   MLA_GPU_QUICK=4   the rope split test alone
 *   MLA_GPU_VARIANTS  comma-separated variants to run (mg_variant_env), default
 *                     all of them
 * On SM 9.0 the variants reach: auto = the defaults (mma tma at 16 rows, two
 * at 32, the wide kernel at >= 64 rows for bf16 at pages 16 / 32 / k x 64,
 * mma base at 64 rows elsewhere, simple for fp8 pools); mma = the mma kernel
 * at every tile size; mma+ring = what SM 10.x runs (ring, two, base); mma+base
 * = what SM 8.0 runs (base at every tile size); wide = the wide kernel
 * wherever it can run (16- and 32-row requests padded to 64 rows); simple. */
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "mla_gpu_util.h"

static mg_plugin pl;
static char why[512];

/* Each variant runs on every case (a kernel a case rules out falls back as
 * in service). */
static const char *const all_variants[] = {"auto", "simple", "mma", "mma+ring", "mma+base", "wide"};
static const char *variants[32];
static size_t n_variants;

static void pick_variants(void) {
    static char buf[512];
    const char *env = getenv("MLA_GPU_VARIANTS");
    n_variants = 0;
    if (!env || !*env) {
        for (size_t i = 0; i < sizeof all_variants / sizeof all_variants[0]; i++) variants[n_variants++] = all_variants[i];
        return;
    }
    snprintf(buf, sizeof buf, "%s", env);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t && n_variants < 32; t = strtok_r(NULL, ",", &save))
        variants[n_variants++] = t;
}

static int setup(void **st) {
    (void)st;
    int rc = mg_open(&pl, why, sizeof why);
    if (rc < 0) fprintf(stderr, "cuda_mla: %s\n", why);
    return rc < 0 ? -1 : 0;
}
static int teardown(void **st) {
    (void)st;
    mg_close(&pl);
    return 0;
}

/* MLA_GPU_VARIANT_TIMEOUT=S: a variant whose case takes longer than S seconds
 * (a kernel that never ends) ends the process with "VARIANT_HANG <variant>
 * <case>" on stderr and exit code 3, so a script can drop it and go on. */
static const char *volatile cur_variant = "", *volatile cur_case = "";
static unsigned variant_timeout;
static void on_alarm(int sig) {
    (void)sig;
    const char *parts[] = {"VARIANT_HANG ", (const char *)cur_variant, " ", (const char *)cur_case, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0) break;
    _exit(3);
}

/* After a kernel fault the context is lost for every later launch. */
static int mg_is_healthy(const mg_plugin *p) {
    (void)p;
    return cudaDeviceSynchronize() == cudaSuccess;
}

/* Every selected variant runs on the case even when an earlier one fails (a
 * run names every failing variant: "VARIANT_FAIL <variant> <case>: <why>" on
 * stderr, "running <case> <variant>" before each, so a hang is attributable);
 * the case fails at the end if any did.  A failure that leaves the device
 * unusable (a kernel fault) ends the process: "VARIANT_FAULT <variant>
 * <case>", exit code 4. */
/* split: pass q and k as the rope split does (forward args q [T, Hq, 512]
 * with q_rope [T, Hq, 64], k [T, 1, 512] with k_rope [T, 1, 64]), here as
 * views into the staged 576-wide rows (strided, as sglang's slices are):
 * the output and the saved rows must be the unsplit ones. */
static void run_case_split(const mg_case *c, const char *name, int split) {
    if (!pl.caps.available) {
        print_message("skipped: %s\n", why);
        skip();
    }
    char err[1024];
    mg_run r;
    mg_case cc = *c;
    cc.ref = 1;
    if (mg_setup(&r, &pl, &cc, 0x51ed + (uint64_t)c->len * 31 + c->hq, err, sizeof err)) fail_msg("%s: %s", name, err);
    int64_t ql_s[3] = {r.t, c->hq, 512}, qr_s[3] = {r.t, c->hq, 64}, q_st[3] = {(int64_t)c->hq * 576, 576, 1};
    int64_t kl_s[3] = {r.t, 1, 512}, kr_s[3] = {r.t, 1, 64}, k_st[3] = {576, 576, 1};
    DLTensor ql = r.tq, qr = r.tq, kl = r.tk, kr = r.tk;
    ql.shape = ql_s, ql.strides = q_st;
    qr.shape = qr_s, qr.strides = q_st, qr.byte_offset += 512 * 2;
    kl.shape = kl_s, kl.strides = k_st;
    kr.shape = kr_s, kr.strides = k_st, kr.byte_offset += 512 * 2;
    if (split) {
        r.fa.q = &ql, r.fa.q_rope = &qr;
        r.fa.k = &kl, r.fa.k_rope = &kr;
    }
    const double lim = c->dt == MG_F16 && c->kv_dt != MG_FP8 ? 1e-5 : 1e-4;
    char bad[512] = "";
    int n_bad = 0;
    for (size_t k = 0; k < n_variants; k++) {
        fprintf(stderr, "running %s %s\n", name, variants[k]);
        fflush(stderr);
        cur_variant = variants[k], cur_case = name;
        if (variant_timeout) alarm(variant_timeout);
        sgl_attn_backend *b = NULL;
        double nmse = -1;
        err[0] = 0;
        if (mg_create(&r, variants[k], &b, err, sizeof err) == 0) {
            if (!mg_reset_pool(&r, err, sizeof err) && !mg_poison(&r, err, sizeof err) && !mg_forward(&r, b, err, sizeof err))
                nmse = mg_compare(&r, err, sizeof err);
            b->ops->destroy(b);
        }
        alarm(0);
        if (nmse >= 0 && nmse <= lim) {
            print_message("%-36s %-16s nmse %.3e\n", name, variants[k], nmse);
            continue;
        }
        if (nmse > lim) snprintf(err, sizeof err, "nmse %.3e > %.0e", nmse, lim);
        print_message("%-36s %-16s FAILED: %s\n", name, variants[k], err);
        fprintf(stderr, "VARIANT_FAIL %s %s: %s\n", variants[k], name, err);
        fflush(stderr);
        n_bad++;
        if (strlen(bad) + strlen(variants[k]) + 2 < sizeof bad) strcat(strcat(bad, " "), variants[k]);
        if (!mg_is_healthy(&pl)) { /* a sticky device error: every later launch fails too */
            fprintf(stderr, "VARIANT_FAULT %s %s\n", variants[k], name);
            fflush(stderr);
            _exit(4); /* a script drops this variant and runs the others again */
        }
    }
    mg_free(&r);
    if (n_bad) fail_msg("%s: %d variant(s) failed:%s", name, n_bad, bad);
}

static void run_case(const mg_case *c, const char *name) { run_case_split(c, name, 0); }

/* The rope split at 16 rows (tma / ring / base), 32 (two), 128 heads
 * (wide) and an fp8 pool (simple, the fp8 save from k and k_rope). */
static void test_split(void **st) {
    (void)st;
    const mg_case c16 = {MG_DECODE, 4, 700, 1, 16, 64, MG_BF16, MG_BF16, 1, 1, 0};
    const mg_case c32 = {MG_VERIFY, 3, 500, 2, 16, 32, MG_BF16, MG_BF16, 1, 1, 0};
    const mg_case c128 = {MG_DECODE, 3, 300, 1, 128, 16, MG_BF16, MG_BF16, 0, 1, 0};
    const mg_case c8 = {MG_DECODE, 3, 400, 1, 16, 64, MG_BF16, MG_FP8, 1, 1, 0};
    run_case_split(&c16, "split decode b4 l700 h16 p64 ragged", 1);
    run_case_split(&c32, "split verify b3 l500 q2 h16 p32", 1);
    run_case_split(&c128, "split decode b3 l300 h128 p16", 1);
    run_case_split(&c8, "split decode fp8 b3 l400 h16 p64", 1);
}

/* mode, bs, len, q, hq, page, dt, kv_dt, ragged */
static void test_decode_16h(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 4, 700, 1, 16, 64, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "decode b4 l700 h16 p64 ragged");
}
/* page 1 at 16 heads: 16-row tiles whose 32 keys are 32 unrelated slots */
static void test_decode_16h_p1(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 3, 333, 1, 16, 1, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "decode b3 l333 h16 p1 ragged");
}
static void test_decode_128h_p16(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 3, 300, 1, 128, 16, MG_BF16, MG_BF16, 0, 1, 0};
    run_case(&c, "decode b3 l300 h128 p16");
}
static void test_verify_64h(void **st) {
    (void)st;
    mg_case c = {MG_VERIFY, 4, 520, 2, 64, 64, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "verify q2 b4 l520 h64 p64 ragged");
}
static void test_verify_16h_p1(void **st) {
    (void)st;
    mg_case c = {MG_VERIFY, 5, 200, 2, 16, 1, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "verify q2 b5 l200 h16 p1");
}
static void test_extend_ragged(void **st) {
    (void)st;
    mg_case c = {MG_EXTEND, 3, 300, 70, 16, 32, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "extend b3 l300 q70 h16 p32 ragged");
}
static void test_extend_128h(void **st) {
    (void)st;
    mg_case c = {MG_EXTEND, 2, 130, 130, 128, 64, MG_BF16, MG_BF16, 0, 1, 0};
    run_case(&c, "extend b2 l130 q130 h128 p64");
}
static void test_fp8_pool(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 2, 300, 1, 16, 64, MG_BF16, MG_FP8, 0, 1, 0};
    run_case(&c, "decode fp8 pool b2 l300 h16");
}
static void test_f16(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 2, 257, 1, 32, 16, MG_F16, MG_F16, 0, 1, 0};
    run_case(&c, "decode f16 b2 l257 h32 p16");
}
static void test_long_split(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 1, 20000, 1, 16, 64, MG_BF16, MG_BF16, 0, 1, 0};
    run_case(&c, "decode b1 l20000 h16 (split)");
}
/* more items than CTAs (the loops run across items), ragged tails in every split */
static void test_many_items(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 40, 3000, 1, 16, 16, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "decode b40 l3000 h16 p16 ragged");
}
/* 32-row tiles (16 heads x 2 tokens), page 32 */
static void test_verify_16h_p32(void **st) {
    (void)st;
    mg_case c = {MG_VERIFY, 6, 2000, 2, 16, 32, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "verify q2 b6 l2000 h16 p32 ragged");
}
/* 32 heads: 32-row tiles in decode; page 8 (8 TMA boxes a block: not the wide kernel) */
static void test_decode_32h_p8(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 3, 900, 1, 32, 8, MG_BF16, MG_BF16, 1, 1, 0};
    run_case(&c, "decode b3 l900 h32 p8 ragged");
}

/* f16: 16-row tiles, 64-row tiles (the wide kernel is bf16 only: mma), and
 * an fp8 pool read with f16 queries */
static void test_f16_h16(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 3, 300, 1, 16, 64, MG_F16, MG_F16, 1, 1, 0};
    run_case(&c, "decode f16 b3 l300 h16 p64 ragged");
}
static void test_f16_h64(void **st) {
    (void)st;
    mg_case c = {MG_VERIFY, 2, 257, 2, 64, 16, MG_F16, MG_F16, 0, 1, 0};
    run_case(&c, "verify f16 q2 b2 l257 h64 p16");
}
static void test_fp8_pool_f16(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 2, 200, 1, 16, 16, MG_F16, MG_FP8, 0, 1, 0};
    run_case(&c, "decode f16 fp8 pool b2 l200 h16");
}

/* 140 16-row tiles: no split at 132 or 264 CTAs, so each item is 19 tiles of
 * 32 keys and the mma ring's 16 page-table entries (SGL_ATTN_MLA_MMA=ring) are
 * reused within an item (the quick cases' items are <= 16 tiles). */
static void test_long_items(void **st) {
    (void)st;
    mg_case c = {MG_DECODE, 140, 600, 1, 16, 64, MG_BF16, MG_BF16, 0, 1, 0};
    run_case(&c, "decode b140 l600 h16 p64 (long items)");
}

/* Capture a verify forward into a graph, then replay with other lengths. */
static void test_graph_replay(void **st) {
    (void)st;
    if (!pl.caps.available) {
        print_message("skipped: %s\n", why);
        skip();
    }
    /* (variant, heads) x 2 tokens: 64 heads = 128 rows (wide, mma base), 16 =
     * 32 rows (mma two), 8 = 16 rows (mma tma, ring, base) */
    static const struct {
        const char *v;
        int hq;
    } ks[] = {{"auto", 64}, {"mma", 64}, {"wide", 64}, {"auto", 16}, {"auto", 8}, {"mma+ring", 8}, {"mma+base", 8}};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        int picked = 0; /* only the selected variants (a broken one must not fail the others' run) */
        for (size_t v = 0; v < n_variants; v++) picked |= !strcmp(variants[v], ks[ki].v);
        if (!picked) continue;
        char err[1024];
        mg_run r, r2;
        mg_case c = {MG_VERIFY, 4, 900, 2, ks[ki].hq, 64, MG_BF16, MG_BF16, 1, 1, 0};
        if (mg_setup(&r, &pl, &c, 77, err, sizeof err)) fail_msg("%s", err);
        sgl_attn_backend *b = NULL;
        if (mg_create(&r, ks[ki].v, &b, err, sizeof err)) fail_msg("%s", err);
        if (b->ops->init_graph_state(b, 4, 8)) fail_msg("init_graph_state: %s", b->ops->last_error(b));
        sgl_attn_graph_args g = {sizeof g, 4, 8, SGL_ATTN_MODE_TARGET_VERIFY, &r.batch, NULL};
        if (b->ops->init_forward_metadata_capture(b, &g)) fail_msg("capture hook: %s", b->ops->last_error(b));
        cudaStream_t s = (cudaStream_t)r.stream;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), 0);
        if (mg_forward_only(&r, b, err, sizeof err)) fail_msg("forward under capture: %s", err);
        assert_int_equal(cudaStreamEndCapture(s, &graph), 0);
        assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), 0);
        /* new lengths: same shape and pool size, other seed (other ragged lengths) */
        mg_case c2 = c;
        if (mg_setup(&r2, &pl, &c2, 78, err, sizeof err)) fail_msg("%s", err);
        /* replay needs r's tensor addresses: copy r2's inputs into them */
        const sgl_attn_device_ops *ops = pl.ops;
        assert_int_equal(ops->copy_to_device(0, r.d_q, r2.q, (size_t)r2.t * c.hq * 576 * 2), 0);
        assert_int_equal(ops->copy_to_device(0, r.d_k, r2.k, (size_t)r2.t * 576 * 2), 0);
        if (r2.pool_bytes != r.pool_bytes || r2.maxctx != r.maxctx) fail_msg("shape changed");
        r.pool_bytes = r2.pool_bytes;
        free(r.pool);
        r.pool = r2.pool, r2.pool = NULL;
        memcpy(r.loc, r2.loc, 8 * sizeof(int32_t)); /* the rows reset_pool scrambles: the new ones */
        if (mg_reset_pool(&r, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(ops->copy_to_device(0, r.d_r2t, r2.r2t, sizeof(int32_t) * 6 * (size_t)r2.maxctx), 0);
        assert_int_equal(ops->copy_to_device(0, r.d_rpi, r2.rpi, sizeof(int32_t) * 4), 0);
        assert_int_equal(ops->copy_to_device(0, r.d_loc, r2.loc, sizeof(int32_t) * 8), 0);
        memcpy(r.seq, r2.seq, 4 * sizeof(int32_t));
        memcpy(r.prefix, r2.prefix, 4 * sizeof(int32_t));
        free(r.ref);
        r.ref = r2.ref, r2.ref = NULL;
        if (mg_poison(&r, err, sizeof err)) fail_msg("%s", err);
        if (b->ops->init_forward_metadata_replay(b, &g)) fail_msg("replay hook: %s", b->ops->last_error(b));
        assert_int_equal(cudaGraphLaunch(exec, s), 0);
        double nmse = mg_compare(&r, err, sizeof err);
        print_message("graph replay h%-3d %-14s nmse %.3e\n", ks[ki].hq, ks[ki].v, nmse);
        if (nmse < 0 || nmse > 1e-4) fail_msg("graph replay %s: %s nmse %.3e", ks[ki].v, err, nmse);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        b->ops->destroy(b);
        mg_free(&r2);
        mg_free(&r);
    }
}

int main(void) {
    pick_variants();
    const char *vt = getenv("MLA_GPU_VARIANT_TIMEOUT");
    variant_timeout = vt && *vt ? (unsigned)atoi(vt) : 0;
    if (variant_timeout) signal(SIGALRM, on_alarm);
    const struct CMUnitTest all[] = {
        cmocka_unit_test(test_decode_16h),     cmocka_unit_test(test_decode_128h_p16),
        cmocka_unit_test(test_verify_64h),     cmocka_unit_test(test_verify_16h_p1),
        cmocka_unit_test(test_extend_ragged),  cmocka_unit_test(test_extend_128h),
        cmocka_unit_test(test_fp8_pool),       cmocka_unit_test(test_f16),
        cmocka_unit_test(test_long_split),     cmocka_unit_test(test_many_items),
        cmocka_unit_test(test_verify_16h_p32), cmocka_unit_test(test_decode_32h_p8),
        cmocka_unit_test(test_long_items),     cmocka_unit_test(test_decode_16h_p1),
        cmocka_unit_test(test_f16_h16),        cmocka_unit_test(test_f16_h64),
        cmocka_unit_test(test_fp8_pool_f16),   cmocka_unit_test(test_split),
        cmocka_unit_test(test_graph_replay),
    };
    const struct CMUnitTest quick[] = {
        cmocka_unit_test(test_decode_16h),     cmocka_unit_test(test_verify_16h_p32),
        cmocka_unit_test(test_verify_64h),     cmocka_unit_test(test_decode_128h_p16), /* 4 TMA boxes a block */
        cmocka_unit_test(test_extend_ragged),  cmocka_unit_test(test_many_items),
        cmocka_unit_test(test_fp8_pool),       cmocka_unit_test(test_f16_h16),
        cmocka_unit_test(test_f16),            cmocka_unit_test(test_f16_h64),
        cmocka_unit_test(test_fp8_pool_f16),   cmocka_unit_test(test_split),
    };
    const struct CMUnitTest graphs[] = {cmocka_unit_test(test_graph_replay)};
    const struct CMUnitTest split[] = {cmocka_unit_test(test_split)};
    const struct CMUnitTest tiny[] = {
        cmocka_unit_test(test_decode_16h),
        cmocka_unit_test(test_verify_16h_p32),
        cmocka_unit_test(test_verify_64h),
    };
    const char *q = getenv("MLA_GPU_QUICK");
    if (q && *q == '1') return cmocka_run_group_tests(quick, setup, teardown);
    if (q && *q == '2') return cmocka_run_group_tests(tiny, setup, teardown);
    if (q && *q == '3') return cmocka_run_group_tests(graphs, setup, teardown);
    if (q && *q == '4') return cmocka_run_group_tests(split, setup, teardown);
    return cmocka_run_group_tests(all, setup, teardown);
}
