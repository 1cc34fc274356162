/* test_cpu_ref_dsa.c - DeepSeek sparse attention on cpu_ref against math
 * written here independently of the plugin:
 *  - sparse MLA: each (token, head) a two-pass softmax over the slots of its
 *    topk_indices row (page-encoded, -1 skipped), decode / verify / extend,
 *    bf16, fp16 and f32, pages of 1, 4 and 16, with and without save;
 *  - the indexer: fp8 e4m3 keys quantised per 128 values (the nearest of all
 *    256 codes, ties to the even code; scale amax / 448 or its power of two),
 *    scores summed here, causal top-k checked as a set (ragged batches,
 *    fewer cached tokens than top-k, the diagonal of a verify step);
 *  - sparse MLA over FlashMLA's fp8 record (uint8 [slots, 1, 656]): a case
 *    computed by hand, its save byte for byte, its refusals by name;
 *  - the refusals: a slot outside the pool, an index below -1, a dense layer. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

#define FP8_DT ((DLDataType){SGL_ATTN_DL_FLOAT8_E4M3_CODE, 8, 1})

/* ------------------------------------------------------------ the batch */

/* Request and position of query token t (the fixture's order). */
static void token_pos(const tc_run *r, int t, int *req, int *pos) {
    const tc_spec *s = &r->s;
    int tok = 0;
    for (int i = 0; i < s->bs; i++) {
        int first = s->mode == SGL_ATTN_MODE_EXTEND ? s->prefix[i] : s->seq[i] - s->tpr;
        int n = s->seq[i] - first;
        if (t < tok + n) {
            *req = i;
            *pos = first + (t - tok);
            return;
        }
        tok += n;
    }
    fail_msg("token %d is past the batch", t);
}

/* ------------------------------------------------------------ sparse MLA */

/* Row t: up to K slots of positions 0..pos of its request, picked at random,
 * -1 in random places; `n_valid` of them valid (fewer when pos + 1 < K). */
static void pick_indices(const tc_run *r, int K, uint64_t *st, int32_t *idx) {
    for (int t = 0; t < r->T; t++) {
        int req, pos;
        token_pos(r, t, &req, &pos);
        int32_t *row = idx + (size_t)t * K;
        for (int j = 0; j < K; j++) row[j] = -1;
        int avail = pos + 1, want = (int)(tc_rand(st) % (uint64_t)K) + 1;
        if (t == 0) want = 0; /* a row with no valid index: zeros */
        if (want > avail) want = avail;
        /* a random subset of positions, at random columns */
        char *used = calloc((size_t)avail, 1);
        for (int n = 0; n < want;) {
            int p = (int)(tc_rand(st) % (uint64_t)avail), c = (int)(tc_rand(st) % (uint64_t)K);
            if (used[p] || row[c] != -1) continue;
            used[p] = 1;
            row[c] = (int32_t)tc_slot(r, req, p);
            n++;
        }
        free(used);
    }
}

static void sparse_ref(const tc_run *r, const unsigned char *pool, const int32_t *idx, int K, double *ref) {
    const tc_spec *s = &r->s;
    const double scale = s->scale > 0 ? s->scale : 1.0 / sqrt((double)s->dqk);
    double *sc = malloc(sizeof(double) * (size_t)K + 8);
    for (int t = 0; t < r->T; t++)
        for (int h = 0; h < s->hq; h++) {
            const int32_t *row = idx + (size_t)t * K;
            double mx = -INFINITY;
            for (int j = 0; j < K; j++) {
                if (row[j] < 0) continue;
                double d = 0;
                for (int e = 0; e < s->dqk; e++)
                    d += tc_load(s->dt, r->q, (size_t)((t * s->hq + h) * s->dqk + e)) *
                         tc_load(s->kv_dt, pool, (size_t)row[j] * s->dqk + e);
                sc[j] = d * scale;
                if (sc[j] > mx) mx = sc[j];
            }
            double sum = 0;
            for (int j = 0; j < K; j++)
                if (row[j] >= 0) sum += exp(sc[j] - mx);
            for (int e = 0; e < s->dv; e++) {
                double acc = 0;
                for (int j = 0; j < K; j++)
                    if (row[j] >= 0) acc += exp(sc[j] - mx) * tc_load(s->kv_dt, pool, (size_t)row[j] * s->dqk + e);
                ref[((size_t)t * s->hq + h) * s->dv + e] = sum > 0 ? acc / sum : 0;
            }
        }
    free(sc);
}


static void sparse_case(const tc_spec *s0, int K, uint64_t seed, const char *what) {
    tc_spec s = *s0;
    s.mla = 1;
    s.hkv = 1;
    tc_run r;
    tc_build(&r, &s, seed, seed ^ 0xd5a);
    r.model.index_topk = K;
    r.model.index_n_heads = 4;
    r.model.index_head_dim = 128;
    uint64_t st = seed * 7 + 1;
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)r.T * (size_t)K + 8);
    pick_indices(&r, K, &st, idx);
    int64_t sh[2] = {r.T, K};
    DLTensor ti;
    tc_wrap(&ti, idx, (DLDataType){kDLInt, 32, 1}, 2, sh);
    r.args.topk_indices = &ti;
    /* the reference's pool: the new keys saved first, rounded to the pool */
    const size_t pool_bytes = (size_t)r.slots * (size_t)s.dqk * tc_size(s.kv_dt);
    unsigned char *pool = malloc(pool_bytes + 8);
    memcpy(pool, r.k_cache, pool_bytes);
    if (s.save)
        for (int t = 0; t < r.T; t++) {
            int64_t slot = s.idx64 ? ((int64_t *)r.ocl)[t] : ((int32_t *)r.ocl)[t];
            for (int e = 0; e < s.dqk; e++)
                tc_store(s.kv_dt, pool, (size_t)slot * s.dqk + e, tc_load(s.dt, r.k, (size_t)t * s.dqk + e));
        }
    char err[512] = "";
    sgl_attn_backend *b = tc_create_forward(&r, err, sizeof err);
    if (!b) fail_msg("%s: %s", what, err);
    double *ref = malloc(sizeof(double) * tc_out_count(&r) + 8);
    sparse_ref(&r, pool, idx, K, ref);
    double nmse = tc_nmse(&r, ref);
    if (!(nmse <= tc_limit(s.dt))) fail_msg("%s (seed %llu): NMSE %.3g", what, (unsigned long long)seed, nmse);
    for (size_t e = 0; e < (size_t)s.hq * s.dv; e++) /* token 0 has no valid index */
        if (tc_out(&r, e) != 0) fail_msg("%s: token 0 has no index but out[%zu] = %g", what, e, tc_out(&r, e));
    /* dense over the same batch differs (the test could fail) */
    r.args.topk_indices = NULL;
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK);
    assert_true(tc_nmse(&r, ref) > 100 * tc_limit(s.dt));
    b->ops->destroy(b);
    free(ref);
    free(pool);
    free(idx);
    tc_free(&r);
}

static void test_sparse_mla(void **state) {
    (void)state;
    const uint32_t dts[] = {SGL_ATTN_DT_BF16, SGL_ATTN_DT_F16, SGL_ATTN_DT_F32};
    /* under the slow tools bf16 alone: the loops are the same for each */
    const int n_dts = getenv("SGL_ATTN_TEST_QUICK") ? 1 : 3;
    for (int d = 0; d < n_dts; d++) {
        tc_spec dec = {.mode = SGL_ATTN_MODE_DECODE, .bs = 3, .hq = 8, .dqk = 576, .dv = 512, .page = 4,
                       .window = -1, .tpr = 1, .dt = dts[d], .kv_dt = dts[d], .save = 1,
                       .seq = {9, 40, 3}};
        sparse_case(&dec, 16, 11 + (uint64_t)d, "decode");
        tc_spec ver = dec;
        ver.mode = SGL_ATTN_MODE_TARGET_VERIFY;
        ver.tpr = 3;
        ver.page = 1;
        ver.idx64 = 1;
        sparse_case(&ver, 8, 21 + (uint64_t)d, "verify");
        tc_spec ext = {.mode = SGL_ATTN_MODE_EXTEND, .bs = 3, .hq = 4, .dqk = 576, .dv = 512, .page = 16,
                       .window = -1, .dt = dts[d], .kv_dt = dts[d], .save = d != 1,
                       .seq = {20, 7, 33}, .prefix = {0, 5, 17}};
        sparse_case(&ext, 12, 31 + (uint64_t)d, "extend");
    }
}

static void test_sparse_refusals(void **state) {
    (void)state;
    tc_spec s = {.mode = SGL_ATTN_MODE_DECODE, .bs = 2, .hq = 4, .hkv = 1, .dqk = 576, .dv = 512, .page = 4,
                 .window = -1, .tpr = 1, .mla = 1, .dt = SGL_ATTN_DT_BF16, .kv_dt = SGL_ATTN_DT_BF16,
                 .seq = {5, 6}};
    tc_run r;
    tc_build(&r, &s, 3, 4);
    int32_t idx[2 * 4] = {0, -1, -1, -1, 1, 2, -1, -1};
    idx[0] = (int32_t)tc_slot(&r, 0, 0);
    idx[4] = (int32_t)tc_slot(&r, 1, 0);
    idx[5] = (int32_t)tc_slot(&r, 1, 1);
    int64_t sh[2] = {2, 4};
    DLTensor ti;
    tc_wrap(&ti, idx, (DLDataType){kDLInt, 32, 1}, 2, sh);
    r.args.topk_indices = &ti;
    char err[512] = "";
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK);
    idx[1] = (int32_t)r.slots; /* past the pool */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "topk_indices[0][1]"));
    idx[1] = -2;
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    idx[1] = -1;
    ti.dtype.bits = 64;
    sh[1] = 2; /* the same bytes as [2, 2] int64 */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "int32"));
    b->ops->destroy(b);
    tc_free(&r);
    /* a dense (non-MLA) layer refuses indices */
    tc_spec g = s;
    g.mla = 0;
    g.hkv = 2;
    g.dqk = g.dv = 64;
    tc_build(&r, &g, 3, 4);
    ti.dtype.bits = 32;
    sh[1] = 4;
    r.args.topk_indices = &ti;
    b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    int rc = tc_forward(&r, b);
    if (rc != SGL_ATTN_E_UNSUPPORTED) fail_msg("dense layer with indices: %d: %s", rc, b->ops->last_error(b));
    assert_non_null(strstr(b->ops->last_error(b), "MLA only"));
    r.args.topk_indices = NULL;
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK);
    b->ops->destroy(b);
    tc_free(&r);
}

/* ------------------------------------------------ FlashMLA's fp8 record */

/* A record pool (uint8 [slots, 1, 656]: 512 e4m3 bytes, 4 fp32 scales, 64
 * bf16 RoPE values, docs/abi.md), every byte 0x7f (an e4m3 NaN) but the two
 * records written here, so a slot read that is not selected shows. */
#define REC 656

static void put_rec(unsigned char *rec, uint8_t code, const float sc[4], uint16_t rope_bits) {
    memset(rec, code, 512);
    memcpy(rec + 512, sc, 16);
    for (int e = 0; e < 64; e++) memcpy(rec + 528 + 2 * e, &rope_bits, 2);
}

/* Decode, one request at position 2 saving its token, 2 heads, scale 1,
 * the row {B, -1, N, A} over three records computed by hand:
 *   A (pos 0): code 0x38 (1.0), scales 1, 2, 0.5, 4 -> 1, 2, 0.5, 4 per block; RoPE 1.0
 *   B (pos 1): code 0x40 (2.0), scales 0.25         -> 0.5 everywhere;      RoPE 0
 *   N (pos 2, saved from bf16 k): block 0 3.5 then 1s (amax 3.5: scale
 *     2^-7, codes 0x7e = 448 and 0x70 = 128), block 1 zeros (amax floored
 *     at 1e-4: codes 0), block 2 all -2 (codes 0xfe), block 3 all 448
 *     (codes 0x7e); RoPE 1.5 (bf16 0x3fc0)
 * q: head 0 ones at dims 0 and 512, head 1 a one at dim 128, so the scores
 * are head 0: A 1 + 1 = 2, B 0.5, N 3.5 + 1.5 = 5; head 1: A 2, B 0.5, N 0. */
static void test_sparse_record(void **state) {
    (void)state;
    tc_spec s = {.mode = SGL_ATTN_MODE_DECODE, .bs = 1, .hq = 2, .hkv = 1, .dqk = 576, .dv = 512, .page = 1,
                 .window = -1, .tpr = 1, .mla = 1, .dt = SGL_ATTN_DT_BF16, .kv_dt = SGL_ATTN_DT_BF16, .save = 1,
                 .scale = 1, .seq = {3}};
    tc_run r;
    tc_build(&r, &s, 5, 6);
    r.model.index_topk = 4;
    r.model.index_n_heads = 4;
    r.model.index_head_dim = 128;
    r.model.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    const int64_t A = tc_slot(&r, 0, 0), B = tc_slot(&r, 0, 1), N = tc_slot(&r, 0, 2);
    unsigned char *pool = malloc((size_t)r.slots * REC);
    memset(pool, 0x7f, (size_t)r.slots * REC);
    const float sa[4] = {1, 2, 0.5f, 4}, sb[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    put_rec(pool + A * REC, 0x38, sa, 0x3f80);
    put_rec(pool + B * REC, 0x40, sb, 0x0000);
    int64_t sh_pool[3] = {r.slots, 1, REC};
    DLTensor tp;
    tc_wrap(&tp, pool, (DLDataType){kDLUInt, 8, 1}, 3, sh_pool);
    r.layer.k_cache = &tp;
    for (int e = 0; e < 576; e++) {
        const double v = e < 128 ? (e == 0 ? 3.5 : 1) : e < 256 ? 0 : e < 384 ? -2 : e < 512 ? 448 : 1.5;
        tc_store(SGL_ATTN_DT_BF16, r.k, (size_t)e, v);
    }
    for (int e = 0; e < 2 * 576; e++) tc_store(SGL_ATTN_DT_BF16, r.q, (size_t)e, 0);
    tc_store(SGL_ATTN_DT_BF16, r.q, 0, 1);
    tc_store(SGL_ATTN_DT_BF16, r.q, 512, 1);
    tc_store(SGL_ATTN_DT_BF16, r.q, 576 + 128, 1);
    int32_t idx[4] = {(int32_t)B, -1, (int32_t)N, (int32_t)A};
    int64_t sh_i[2] = {1, 4};
    DLTensor ti;
    tc_wrap(&ti, idx, (DLDataType){kDLInt, 32, 1}, 2, sh_i);
    r.args.topk_indices = &ti;
    char err[512] = "";
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    if (!b) fail_msg("create: %s", err);
    int rc = tc_forward(&r, b);
    if (rc) fail_msg("forward over the record: %d: %s", rc, b->ops->last_error(b));
    /* N's record, byte for byte: the scales are act_quant's fp32 amax * (1/448) */
    const float sn[4] = {0x1p-7f, 1e-4f * (1.0f / 448.0f), 2.0f * (1.0f / 448.0f), 448.0f * (1.0f / 448.0f)};
    const unsigned char *rn = pool + N * REC;
    for (int e = 0; e < 512; e++) {
        const uint8_t want = e == 0 ? 0x7e : e < 128 ? 0x70 : e < 256 ? 0x00 : e < 384 ? 0xfe : 0x7e;
        if (rn[e] != want) fail_msg("saved record byte %d = 0x%02x; expected 0x%02x", e, rn[e], want);
    }
    for (int blk = 0; blk < 4; blk++) {
        float got;
        memcpy(&got, rn + 512 + 4 * blk, 4);
        if (got != sn[blk]) fail_msg("saved record scale %d = %.9g; expected %.9g", blk, (double)got, (double)sn[blk]);
    }
    for (int e = 0; e < 64; e++) {
        uint16_t got;
        memcpy(&got, rn + 528 + 2 * e, 2);
        if (got != 0x3fc0) fail_msg("saved record RoPE %d = 0x%04x; expected 0x3fc0 (1.5)", e, got);
    }
    for (int64_t sl = 0; sl < r.slots; sl++) /* no other record written */
        for (int e = 0; sl != A && sl != B && sl != N && e < REC; e++)
            if (pool[sl * REC + e] != 0x7f) fail_msg("slot %lld byte %d written", (long long)sl, e);
    /* the output, by hand: softmax weights of (A, B, N) times their values */
    const double sc[2][3] = {{2, 0.5, 5}, {2, 0.5, 0}};
    for (int h = 0; h < 2; h++) {
        const double wa = exp(sc[h][0]), wb = exp(sc[h][1]), wn = exp(sc[h][2]), sum = wa + wb + wn;
        for (int d = 0; d < 512; d++) {
            const int blk = d / 128;
            const double va = sa[blk], vb = 0.5;
            const double code = blk == 0 ? (d == 0 ? 448 : 128) : blk == 1 ? 0 : blk == 2 ? -448 : 448;
            const double vn = code * (double)sn[blk];
            const double want = (wa * va + wb * vb + wn * vn) / sum, got = tc_out(&r, (size_t)h * 512 + (size_t)d);
            if (!(fabs(got - want) <= 1e-2 * fmax(1, fabs(want))))
                fail_msg("head %d dim %d: %.6g; expected %.6g", h, d, got, want);
        }
    }
    /* q as a strided view (each head's row inside a wider one whose tail is
     * NaN, as a fused buffer's would be other data): the same output */
    double *first = malloc(sizeof(double) * 2 * 512);
    for (int e = 0; e < 2 * 512; e++) first[e] = tc_out(&r, (size_t)e);
    uint16_t *wide = malloc(sizeof(uint16_t) * 2 * 640);
    for (int h = 0; h < 2; h++)
        for (int e = 0; e < 640; e++) wide[h * 640 + e] = e < 576 ? ((const uint16_t *)r.q)[h * 576 + e] : 0x7fc0;
    int64_t sh_wq[3] = {1, 2, 576}, st_wq[3] = {2 * 640, 640, 1};
    DLTensor wq;
    tc_wrap(&wq, wide, (DLDataType){kDLBfloat, 16, 1}, 3, sh_wq);
    wq.strides = st_wq;
    const DLTensor *q_compact = r.args.q;
    r.args.q = &wq;
    rc = tc_forward(&r, b);
    if (rc) fail_msg("forward with a strided q: %d: %s", rc, b->ops->last_error(b));
    for (int e = 0; e < 2 * 512; e++)
        if (tc_out(&r, (size_t)e) != first[e])
            fail_msg("strided q: out[%d] %g, compact q gave %g", e, tc_out(&r, (size_t)e), first[e]);
    r.args.q = q_compact;
    free(wide);
    free(first);
    /* refusals by name, the record untouched by them */
    memcpy(pool + N * REC, pool + A * REC, REC);
    unsigned char *before = malloc((size_t)r.slots * REC);
    memcpy(before, pool, (size_t)r.slots * REC);
    r.args.topk_indices = NULL; /* dense MLA over the record */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(b->ops->last_error(b), "sparse MLA only"));
    r.args.topk_indices = &ti;
    r.layer.k_scale = 2; /* a k_scale beside the record */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "its own scales"));
    r.layer.k_scale = 1;
    tp.dtype = (DLDataType){kDLInt, 8, 1}; /* 656 wide but not uint8 */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "uint8 [slots, 1, 656]"));
    tp.dtype = (DLDataType){kDLUInt, 8, 1};
    sh_pool[2] = 600; /* uint8 of another width */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "another shape"));
    sh_pool[2] = REC;
    r.layer.head_dim_v = 256; /* the record is 576 / 512 */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "head_dim_v 512"));
    r.layer.head_dim_v = 512;
    assert_memory_equal(pool, before, (size_t)r.slots * REC);
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK); /* usable after the refusals */
    b->ops->destroy(b);
    free(before);
    free(pool);
    tc_free(&r);
}

/* ------------------------------------------------------------ the indexer */

/* fp8 e4m3fn, here: every code's value, and the nearest code (ties: even). */
static double e4m3_value(int c) {
    int e = (c >> 3) & 15, m = c & 7;
    double v = e == 0 ? m / 8.0 * pow(2, -6) : (1 + m / 8.0) * pow(2, e - 7);
    return (c & 0x80) ? -v : v;
}

static uint8_t e4m3_nearest(double y) {
    static double tab[256];
    static int have;
    if (!have) {
        for (int c = 0; c < 256; c++) tab[c] = e4m3_value(c);
        have = 1;
    }
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue; /* NaN */
        double d = fabs(tab[c] - y);
        if (d < bd || (d == bd && !(c & 1) && (best & 1))) {
            bd = d;
            best = c;
        }
    }
    if (y == 0) best = signbit(y) ? 0x80 : 0;
    return (uint8_t)best;
}

static float block_scale(float amax, int pow2) {
    float a = amax < 1e-4f ? 1e-4f : amax;
    float s = a * (1.0f / 448.0f);
    if (pow2) s = (float)pow(2, ceil(log2((double)s)));
    return s;
}

static void quantise(const float *x, int di, int pow2, uint8_t *code, float *scales) {
    for (int b = 0; b < di / 128; b++) {
        float amax = 0;
        for (int d = 0; d < 128; d++) amax = fmaxf(amax, fabsf(x[b * 128 + d]));
        float s = block_scale(amax, pow2);
        scales[b] = s;
        for (int d = 0; d < 128; d++) {
            float y = x[b * 128 + d] / s;
            y = y > 448 ? 448 : y < -448 ? -448 : y;
            code[b * 128 + d] = e4m3_nearest(y);
        }
    }
}

typedef struct ix_case {
    tc_spec s;
    int hi, di, topk, pow2, q_fp8;
} ix_case;

static void indexer_case(const ix_case *c, uint64_t seed, const char *what) {
    tc_spec s = c->s;
    s.mla = 1;
    s.hkv = 1;
    s.dqk = 576;
    s.dv = 512;
    s.hq = 2;
    s.window = -1;
    tc_run r;
    tc_build(&r, &s, seed, seed + 1);
    r.model.index_topk = c->topk;
    r.model.index_n_heads = c->hi;
    r.model.index_head_dim = c->di;
    const int T = r.T, hi = c->hi, di = c->di, nb = di / 128, K = c->topk;
    const int64_t slots = r.slots;
    uint64_t st = seed * 13 + 5;
    /* every slot's key in float (bf16-rounded), quantised here; the new
     * tokens' keys are the plugin's to save */
    float *keys = malloc(sizeof(float) * (size_t)slots * di);
    for (int64_t e = 0; e < slots * di; e++) {
        uint16_t tmp;
        tc_store(SGL_ATTN_DT_BF16, &tmp, 0, 2 * tc_normal(&st));
        keys[e] = (float)tc_load(SGL_ATTN_DT_BF16, &tmp, 0);
    }
    uint8_t *kc = malloc((size_t)slots * di), *kc_ref = malloc((size_t)slots * di);
    float *ks = malloc(sizeof(float) * (size_t)slots * nb), *ks_ref = malloc(sizeof(float) * (size_t)slots * nb);
    for (int64_t sl = 0; sl < slots; sl++) quantise(keys + sl * di, di, c->pow2, kc_ref + sl * di, ks_ref + sl * nb);
    memcpy(kc, kc_ref, (size_t)slots * di);
    memcpy(ks, ks_ref, sizeof(float) * (size_t)slots * nb);
    uint16_t *knew = malloc(sizeof(uint16_t) * (size_t)T * di);
    for (int t = 0; t < T; t++) {
        int64_t slot = s.idx64 ? ((int64_t *)r.ocl)[t] : ((int32_t *)r.ocl)[t];
        for (int d = 0; d < di; d++) {
            tc_store(SGL_ATTN_DT_BF16, knew, (size_t)t * di + d, 3 * tc_normal(&st));
            keys[slot * di + d] = (float)tc_load(SGL_ATTN_DT_BF16, knew, (size_t)t * di + d);
        }
        quantise(keys + slot * di, di, c->pow2, kc_ref + slot * di, ks_ref + slot * nb);
        memset(kc + slot * di, 0xAA, (size_t)di); /* the plugin must write them */
    }
    /* queries: bf16, or fp8 codes whose scale lives in the weights */
    const size_t nq = (size_t)T * hi * di;
    void *q = malloc(nq * 2);
    double *qv = malloc(sizeof(double) * nq);
    for (size_t e = 0; e < nq; e++) {
        if (c->q_fp8) {
            ((uint8_t *)q)[e] = e4m3_nearest(100 * tc_normal(&st));
            qv[e] = e4m3_value(((uint8_t *)q)[e]);
        } else {
            tc_store(SGL_ATTN_DT_BF16, q, e, tc_normal(&st));
            qv[e] = tc_load(SGL_ATTN_DT_BF16, q, e);
        }
    }
    float *w = malloc(sizeof(float) * (size_t)T * hi);
    for (int e = 0; e < T * hi; e++) w[e] = (float)(tc_normal(&st) * (c->q_fp8 ? 0.01 : 1));
    int32_t *out = malloc(sizeof(int32_t) * (size_t)T * K);
    for (int e = 0; e < T * K; e++) out[e] = 12345;
    int64_t sh_q[3] = {T, hi, di}, sh_w[2] = {T, hi}, sh_k[2] = {T, di}, sh_kc[2] = {slots, di},
            sh_ks[2] = {slots, nb}, sh_o[2] = {T, K};
    DLTensor tq, tw, tk, tkc, tks, to;
    tc_wrap(&tq, q, c->q_fp8 ? FP8_DT : (DLDataType){kDLBfloat, 16, 1}, 3, sh_q);
    tc_wrap(&tw, w, (DLDataType){kDLFloat, 32, 1}, 2, sh_w);
    tc_wrap(&tk, knew, (DLDataType){kDLBfloat, 16, 1}, 2, sh_k);
    tc_wrap(&tkc, kc, FP8_DT, 2, sh_kc);
    tc_wrap(&tks, ks, (DLDataType){kDLFloat, 32, 1}, 2, sh_ks);
    tc_wrap(&to, out, (DLDataType){kDLInt, 32, 1}, 2, sh_o);
    sgl_attn_indexer_args a = {.struct_size = sizeof a, .topk = K, .save_index_k = 1, .scale_pow2 = c->pow2,
                               .batch = &r.batch, .q = &tq, .weights = &tw, .k = &tk, .index_k_cache = &tkc,
                               .index_k_scale = &tks, .topk_indices = &to};
    char err[512] = "";
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    if (!b) fail_msg("%s: create failed: %s", what, err);
    assert_true(b->ops_size >= offsetof(sgl_attn_backend_ops, indexer_topk) + sizeof(void *));
    assert_int_equal(b->ops->init_forward_metadata(b, &r.batch), SGL_ATTN_OK);
    int rc = b->ops->indexer_topk(b, &a);
    if (rc) fail_msg("%s: indexer_topk returned %d: %s", what, rc, b->ops->last_error(b));
    /* the saved keys: byte for byte, scale for scale */
    if (memcmp(kc, kc_ref, (size_t)slots * di)) fail_msg("%s: index_k_cache differs from the quantisation here", what);
    if (memcmp(ks, ks_ref, sizeof(float) * (size_t)slots * nb)) fail_msg("%s: index_k_scale differs", what);
    /* scores here; the plugin's row must be a top-k set of them */
    double *sc = malloc(sizeof(double) * (size_t)r.cols + 8), *sorted = malloc(sizeof(double) * (size_t)r.cols + 8);
    for (int t = 0; t < T; t++) {
        int req, pos;
        token_pos(&r, t, &req, &pos);
        const int n = pos + 1, want = n < K ? n : K;
        for (int p = 0; p < n; p++) {
            int64_t slot = tc_slot(&r, req, p);
            double total = 0;
            for (int h = 0; h < hi; h++) {
                double dot = 0;
                for (int d = 0; d < di; d++)
                    dot += qv[((size_t)t * hi + h) * di + d] * e4m3_value(kc_ref[slot * di + d]) * ks_ref[slot * nb + d / 128];
                total += w[t * hi + h] * (dot > 0 ? dot : 0);
            }
            sc[p] = sorted[p] = total;
        }
        /* the want-th largest score */
        for (int i = 0; i < want; i++)
            for (int j = i + 1; j < n; j++)
                if (sorted[j] > sorted[i]) {
                    double x = sorted[i];
                    sorted[i] = sorted[j];
                    sorted[j] = x;
                }
        const double kth = sorted[want - 1], tol = 1e-9 * (fabs(sorted[0]) + 1);
        const int32_t *row = out + (size_t)t * K;
        char *seen = calloc((size_t)n, 1);
        for (int j = 0; j < K; j++) {
            if (j >= want) {
                if (row[j] != -1) fail_msg("%s: token %d (position %d) column %d = %d, expected -1 past %d valid", what, t, pos, j, row[j], want);
                continue;
            }
            int p = -1;
            for (int x = 0; x < n; x++)
                if (tc_slot(&r, req, x) == row[j]) p = x;
            if (p < 0) fail_msg("%s: token %d (position %d): slot %d is not a position 0..%d of its request (causality)", what, t, pos, row[j], pos);
            if (seen[p]) fail_msg("%s: token %d: position %d twice", what, t, p);
            seen[p] = 1;
            if (sc[p] < kth - tol) fail_msg("%s: token %d: position %d scores %.17g, below the %d-th best %.17g", what, t, p, sc[p], want, kth);
        }
        free(seen);
    }
    b->ops->destroy(b);
    free(sc);
    free(sorted);
    free(keys);
    free(kc);
    free(kc_ref);
    free(ks);
    free(ks_ref);
    free(knew);
    free(q);
    free(qv);
    free(w);
    free(out);
    tc_free(&r);
}

static void test_indexer(void **state) {
    (void)state;
    /* decode, ragged, more and fewer cached tokens than top-k, pages of 4 */
    ix_case dec = {.s = {.mode = SGL_ATTN_MODE_DECODE, .bs = 4, .page = 4, .tpr = 1, .dt = SGL_ATTN_DT_BF16,
                         .kv_dt = SGL_ATTN_DT_BF16, .seq = {3, 30, 8, 1}},
                   .hi = 4, .di = 128, .topk = 8};
    indexer_case(&dec, 1, "indexer decode");
    dec.pow2 = 1;
    dec.di = 256;
    indexer_case(&dec, 2, "indexer decode ue8m0 256");
    /* a verify step: the first draft token must not see the second */
    ix_case ver = dec;
    ver.s.mode = SGL_ATTN_MODE_TARGET_VERIFY;
    ver.s.tpr = 3;
    ver.s.seq[3] = 4;
    ver.s.page = 1;
    ver.topk = 64; /* more than any request holds: the whole causal prefix */
    indexer_case(&ver, 3, "indexer verify");
    /* extend with cached prefixes, fp8 queries, pages of 16 */
    ix_case ext = {.s = {.mode = SGL_ATTN_MODE_EXTEND, .bs = 3, .page = 16, .dt = SGL_ATTN_DT_BF16,
                         .kv_dt = SGL_ATTN_DT_BF16, .idx64 = 1, .seq = {25, 6, 40}, .prefix = {10, 0, 33}},
                   .hi = 8, .di = 128, .topk = 10, .q_fp8 = 1};
    indexer_case(&ext, 4, "indexer extend fp8 q");
}

static void test_fp8_codes(void **state) {
    (void)state;
    /* every code's value round-trips through the plugin's quantiser, and
     * every midpoint rounds to the even code: checked via the indexer's saved
     * keys with scale 1 (amax 448) */
    tc_spec s = {.mode = SGL_ATTN_MODE_DECODE, .bs = 1, .hq = 2, .hkv = 1, .dqk = 576, .dv = 512, .page = 1,
                 .window = -1, .tpr = 1, .mla = 1, .dt = SGL_ATTN_DT_BF16, .kv_dt = SGL_ATTN_DT_BF16, .seq = {2}};
    tc_run r;
    tc_build(&r, &s, 9, 9);
    r.model.index_topk = 1;
    r.model.index_head_dim = 128;
    const int di = 128 * 4;
    float k[128 * 4];
    uint8_t want[128 * 4];
    int n = 0;
    for (int c = 0; c < 128 && n < di; c++) { /* positive codes and the midpoints above them */
        if (c == 0x7f) continue;
        k[n] = (float)e4m3_value(c);
        want[n++] = (uint8_t)c;
        if (c < 0x7e) {
            k[n] = (float)((e4m3_value(c) + e4m3_value(c + 1)) / 2);
            want[n] = (c & 1) ? (uint8_t)(c + 1) : (uint8_t)c;
            n++;
        }
    }
    for (const int pos = n; n < di; n++) { /* the same values negated */
        k[n] = -k[(n - pos) % pos];
        want[n] = (uint8_t)(want[(n - pos) % pos] | 0x80);
    }
    for (int blk = 0; blk < 4; blk++) k[blk * 128 + 127] = 448, want[blk * 128 + 127] = 0x7e; /* amax 448: scale 1 */
    uint8_t *kc = calloc((size_t)r.slots, 128 * 4);
    float *ks = calloc((size_t)r.slots, 4 * sizeof(float)), w[1] = {1};
    uint16_t q[128 * 4] = {0};
    int32_t out[1];
    int64_t sh_q[3] = {1, 1, di}, sh_w[2] = {1, 1}, sh_k[2] = {1, di}, sh_kc[2] = {r.slots, di}, sh_ks[2] = {r.slots, 4},
            sh_o[2] = {1, 1};
    DLTensor tq, tw, tk, tkc, tks, to;
    tc_wrap(&tq, q, (DLDataType){kDLBfloat, 16, 1}, 3, sh_q);
    tc_wrap(&tw, w, (DLDataType){kDLFloat, 32, 1}, 2, sh_w);
    tc_wrap(&tk, k, (DLDataType){kDLFloat, 32, 1}, 2, sh_k);
    tc_wrap(&tkc, kc, FP8_DT, 2, sh_kc);
    tc_wrap(&tks, ks, (DLDataType){kDLFloat, 32, 1}, 2, sh_ks);
    tc_wrap(&to, out, (DLDataType){kDLInt, 32, 1}, 2, sh_o);
    sgl_attn_indexer_args a = {.struct_size = sizeof a, .topk = 1, .save_index_k = 1, .batch = &r.batch, .q = &tq,
                               .weights = &tw, .k = &tk, .index_k_cache = &tkc, .index_k_scale = &tks,
                               .topk_indices = &to};
    r.model.index_head_dim = di;
    char err[512] = "";
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    assert_int_equal(b->ops->init_forward_metadata(b, &r.batch), SGL_ATTN_OK);
    int rc = b->ops->indexer_topk(b, &a);
    if (rc) fail_msg("indexer_topk: %s", b->ops->last_error(b));
    int64_t slot = ((int32_t *)r.ocl)[0];
    for (int blk = 0; blk < 4; blk++) assert_true(ks[slot * 4 + blk] == 1.0f);
    for (int e = 0; e < di; e++)
        if (kc[slot * di + e] != want[e]) fail_msg("value %.9g: code 0x%02x, expected 0x%02x", (double)k[e], kc[slot * di + e], want[e]);
    b->ops->destroy(b);
    free(kc);
    free(ks);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_mla),
        cmocka_unit_test(test_sparse_refusals),
        cmocka_unit_test(test_sparse_record),
        cmocka_unit_test(test_indexer),
        cmocka_unit_test(test_fp8_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
