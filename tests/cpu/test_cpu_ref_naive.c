/* test_cpu_ref_naive.c - cpu_ref against the fixture's naive reference on
 * random shapes: every feature, every dtype, the f64 path to ~1e-13, the
 * f32/f16/bf16 paths to their rounding; with thread counts that force the
 * decode splits. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

/* Run one spec with fresh layout/values; compare with the naive reference. */
static void run_and_compare(const tc_spec *s, uint64_t seed, const char *what) {
    tc_run r;
    tc_build(&r, s, seed, seed ^ 0x5eed);
    char err[512] = "";
    sgl_attn_backend *b = tc_create_forward(&r, err, sizeof err);
    if (!b) fail_msg("%s: %s", what, err);
    double *ref = malloc(sizeof(double) * tc_out_count(&r) + 8);
    tc_naive(&r, ref);
    double nmse = tc_nmse(&r, ref);
    uint32_t worst = s->dt;
    if (tc_limit(s->kv_dt) > tc_limit(worst)) worst = s->kv_dt;
    if (!(nmse <= tc_limit(worst)))
        fail_msg("%s (seed %llu): NMSE %.3g > %.3g", what, (unsigned long long)seed, nmse, tc_limit(worst));
    /* the saved K/V are in the pool, rounded to its dtype */
    if (s->save && !s->cross) {
        const int64_t krow = (int64_t)r.s.hkv * r.s.dqk;
        for (int64_t t = 0; t < r.T; t++) {
            int64_t slot = r.s.idx64 ? ((int64_t *)r.ocl)[t] : ((int32_t *)r.ocl)[t];
            for (int64_t e = 0; e < krow; e++) {
                unsigned char tmp[8];
                tc_store(s->kv_dt, tmp, 0, tc_load(s->dt, r.k, (size_t)(t * krow + e)));
                double want = tc_load(s->kv_dt, tmp, 0);
                double got = tc_load(s->kv_dt, r.k_cache, (size_t)(slot * krow + e));
                if (want != got && !(isnan(want) && isnan(got)))
                    fail_msg("%s: pool slot %lld element %lld = %g, expected %g", what, (long long)slot,
                             (long long)e, got, want);
            }
        }
    }
    free(ref);
    b->ops->destroy(b);
    tc_free(&r);
}

static const uint32_t dtypes[] = {SGL_ATTN_DT_F64, SGL_ATTN_DT_F32, SGL_ATTN_DT_F16, SGL_ATTN_DT_BF16};

static tc_spec base(int mode, uint32_t dt) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode;
    s.dt = s.kv_dt = dt;
    s.window = -1;
    s.save = 1;
    s.tpr = 1;
    return s;
}

/* Random shape: heads, dims, page, lengths; features chosen by the caller. */
static void random_shape(tc_spec *s, uint64_t *st) {
    static const int ratios[] = {1, 2, 3, 4, 8};
    s->hkv = 1 + (int)(tc_rand(st) % 3);
    s->hq = s->hkv * ratios[tc_rand(st) % 5];
    static const int dims[] = {8, 16, 24, 40, 64, 72, 128};
    s->dqk = dims[tc_rand(st) % 7];
    s->dv = (tc_rand(st) % 3 == 0) ? dims[tc_rand(st) % 7] : s->dqk;
    static const int pages[] = {1, 3, 16, 64};
    s->page = pages[tc_rand(st) % 4];
    s->bs = 1 + (int)(tc_rand(st) % 4);
    s->idx64 = (int)(tc_rand(st) & 1);
    for (int i = 0; i < s->bs; i++) {
        s->seq[i] = 1 + (int)(tc_rand(st) % 150);
        if (s->mode == SGL_ATTN_MODE_EXTEND) s->prefix[i] = (int)(tc_rand(st) % (uint64_t)s->seq[i]);
        else if (s->seq[i] < s->tpr) s->seq[i] = s->tpr;
    }
}

static void test_random_plain(void **state) {
    (void)state;
    uint64_t st = 11;
    for (int it = 0; it < 48; it++) {
        uint32_t dt = dtypes[it % 4];
        tc_spec s = base(it & 4 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, dt);
        random_shape(&s, &st);
        char what[64];
        snprintf(what, sizeof what, "plain #%d", it);
        run_and_compare(&s, 100 + (uint64_t)it, what);
    }
}

static void test_random_features(void **state) {
    (void)state;
    uint64_t st = 23;
    for (int it = 0; it < 64; it++) {
        uint32_t dt = dtypes[it % 4];
        int mode = (it / 4) % 3 == 0 ? SGL_ATTN_MODE_EXTEND
                   : (it / 4) % 3 == 1 ? SGL_ATTN_MODE_DECODE
                                       : SGL_ATTN_MODE_TARGET_VERIFY;
        tc_spec s = base(mode, dt);
        if (mode == SGL_ATTN_MODE_TARGET_VERIFY) s.tpr = 1 + (int)(tc_rand(&st) % 4);
        random_shape(&s, &st);
        s.window = (tc_rand(&st) % 2) ? (int)(tc_rand(&st) % 40) : -1;
        s.softcap = (tc_rand(&st) % 2) ? 5.0f + (float)(tc_rand(&st) % 30) : 0.0f;
        s.sinks = (int)(tc_rand(&st) % 2);
        s.scale = (float)(0.05 + (double)(tc_rand(&st) % 100) / 200.0);
        if (tc_rand(&st) % 3 == 0) { /* encoder-decoder batch: self attention after the encoder */
            s.has_enc = 1;
            for (int i = 0; i < s.bs; i++) s.enc[i] = (int)(tc_rand(&st) % 20);
        }
        char what[96];
        snprintf(what, sizeof what, "features #%d (w %d cap %g sinks %d enc %d)", it, s.window, (double)s.softcap,
                 s.sinks, s.has_enc);
        run_and_compare(&s, 200 + (uint64_t)it, what);
    }
}

static void test_cross(void **state) {
    (void)state;
    uint64_t st = 31;
    for (int it = 0; it < 16; it++) {
        tc_spec s = base(it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, dtypes[it % 4]);
        random_shape(&s, &st);
        s.cross = 1;
        s.save = 0;
        s.has_enc = 1;
        s.sinks = it % 3 == 0;
        for (int i = 0; i < s.bs; i++) s.enc[i] = (int)(tc_rand(&st) % 90); /* 0 = nothing to see */
        char what[64];
        snprintf(what, sizeof what, "cross #%d", it);
        run_and_compare(&s, 300 + (uint64_t)it, what);
    }
}

static void test_mixed_dtypes(void **state) {
    (void)state;
    static const uint32_t pairs[][2] = {{SGL_ATTN_DT_BF16, SGL_ATTN_DT_F16}, {SGL_ATTN_DT_F32, SGL_ATTN_DT_BF16},
                                        {SGL_ATTN_DT_F16, SGL_ATTN_DT_F32}, {SGL_ATTN_DT_F32, SGL_ATTN_DT_F16}};
    uint64_t st = 41;
    for (int it = 0; it < 8; it++) {
        tc_spec s = base(it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, pairs[it % 4][0]);
        s.kv_dt = pairs[it % 4][1];
        random_shape(&s, &st);
        run_and_compare(&s, 400 + (uint64_t)it, "mixed dtypes");
    }
}

static void test_mla(void **state) {
    (void)state;
    for (int it = 0; it < 8; it++) {
        tc_spec s = base(it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, dtypes[it % 4]);
        s.mla = 1;
        s.hkv = 1;
        s.hq = it < 4 ? 16 : 128;
        s.dqk = it < 4 ? 72 : 576;
        s.dv = it < 4 ? 64 : 512;
        s.page = it % 3 == 0 ? 64 : 16;
        s.bs = 2;
        s.seq[0] = 70, s.seq[1] = 33;
        s.prefix[0] = 60, s.prefix[1] = 0;
        s.scale = (float)(1.0 / sqrt(192.0));
        run_and_compare(&s, 500 + (uint64_t)it, "mla");
    }
}

/* Long single-request decodes with several threads take the split path. */
static void test_split_decode(void **state) {
    (void)state;
    setenv("SGL_ATTN_CPU_REF_THREADS", "4", 1);
    for (int it = 0; it < 8; it++) {
        tc_spec s = base(it % 4 == 3 ? SGL_ATTN_MODE_TARGET_VERIFY : SGL_ATTN_MODE_DECODE, dtypes[it % 4]);
        s.tpr = it % 4 == 3 ? 3 : 1;
        s.hq = 4;
        s.hkv = 1;
        s.dqk = s.dv = 64;
        s.page = 16;
        s.bs = 1 + it % 2;
        s.seq[0] = 3000 + 37 * it;
        s.seq[1] = 1500;
        s.window = it == 5 ? 700 : -1;
        s.sinks = it % 2;
        run_and_compare(&s, 600 + (uint64_t)it, "split decode");
    }
    unsetenv("SGL_ATTN_CPU_REF_THREADS");
}

/* bf16 pools with head dims multiples of 32: on CPUs with AVX-512 these take
 * the tile loops of cref_tile512.h (tiles of 16 keys, query rows in blocks of
 * up to 4).  Group sizes that leave blocks of 1-3 rows, lengths that end
 * inside a tile or a 4-key step, every feature, f32 and bf16 queries; each
 * spec under every SIMD level this CPU has ($SGL_ATTN_CPU_REF_SIMD lowers it:
 * avx512 = the tile loops without vdpbf16ps, unset = with it where the CPU
 * has AVX512_BF16), and with 4 threads for the decode splits. */
static void test_bf16_tiles(void **state) {
    (void)state;
    static const char *const simd[] = {NULL, "avx512", "avx2"};
    static const int dims[] = {32, 64, 96, 128, 256};
    static const int groups[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
    uint64_t st = 53;
    for (int it = 0; it < 40; it++) {
        int mode = it % 5 == 4 ? SGL_ATTN_MODE_EXTEND : it % 5 == 3 ? SGL_ATTN_MODE_TARGET_VERIFY : SGL_ATTN_MODE_DECODE;
        tc_spec s = base(mode, it % 2 ? SGL_ATTN_DT_BF16 : SGL_ATTN_DT_F32);
        s.kv_dt = SGL_ATTN_DT_BF16;
        if (mode == SGL_ATTN_MODE_TARGET_VERIFY) s.tpr = 1 + (int)(tc_rand(&st) % 4);
        random_shape(&s, &st);
        s.hkv = 1 + (int)(tc_rand(&st) % 3);
        s.hq = s.hkv * groups[tc_rand(&st) % 9];
        s.dqk = dims[tc_rand(&st) % 5];
        s.dv = tc_rand(&st) % 4 == 0 ? dims[tc_rand(&st) % 5] : s.dqk;
        for (int i = 0; i < s.bs; i++) /* short ones too: 1..15 keys end inside the first tile */
            if (tc_rand(&st) % 3 == 0) {
                s.seq[i] = 1 + (int)(tc_rand(&st) % 15);
                if (s.seq[i] < s.tpr) s.seq[i] = s.tpr;
                if (mode == SGL_ATTN_MODE_EXTEND) s.prefix[i] = (int)(tc_rand(&st) % (uint64_t)s.seq[i]);
            }
        if (it % 4 == 1) s.window = (int)(tc_rand(&st) % 40);
        if (it % 6 == 2) s.softcap = 5.0f + (float)(tc_rand(&st) % 30);
        s.sinks = it % 3 == 0;
        if (it % 8 == 5) { /* long: the decode splits with 4 threads */
            s.bs = 1;
            s.seq[0] = 1000 + (int)(tc_rand(&st) % 2000);
            s.prefix[0] = s.seq[0] - 1 - (int)(tc_rand(&st) % 20);
        }
        if (it % 8 == 5) setenv("SGL_ATTN_CPU_REF_THREADS", "4", 1);
        for (int v = 0; v < 3; v++) {
            if (simd[v]) setenv("SGL_ATTN_CPU_REF_SIMD", simd[v], 1);
            else unsetenv("SGL_ATTN_CPU_REF_SIMD");
            char what[128];
            snprintf(what, sizeof what, "bf16 tiles #%d (simd %s, hq %d hkv %d d %d/%d w %d cap %g)", it,
                     simd[v] ? simd[v] : "default", s.hq, s.hkv, s.dqk, s.dv, s.window, (double)s.softcap);
            run_and_compare(&s, 700 + (uint64_t)it, what);
        }
        unsetenv("SGL_ATTN_CPU_REF_SIMD");
        unsetenv("SGL_ATTN_CPU_REF_THREADS");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_plain),  cmocka_unit_test(test_random_features),
        cmocka_unit_test(test_cross),         cmocka_unit_test(test_mixed_dtypes),
        cmocka_unit_test(test_mla),           cmocka_unit_test(test_split_decode),
        cmocka_unit_test(test_bf16_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
