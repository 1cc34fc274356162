/* test_mla_plan.c - the cuda_mla planner and kernel choice (pure C, no GPU).
 *
 * The central property: for random batches (decode, 2-token verify, tree
 * verify, ragged extend), every (row, key) pair a query must see is covered by exactly one
 * work item, no item covers a key its rows cannot see past its range, split
 * tiles own disjoint partial rows, and the combine list names exactly the
 * split tiles.  Plus: splitting fills the GPU when tiles are few and stays
 * off when they are many; bad lengths are refused with the request named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mla_kernels.h"
#include "mla_plan.h"
#include "sgl_attn_abi.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) { /* [0, n) */
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs % n);
}

typedef struct plan_out {
    mla_plan_caps caps;
    mla_plan_layout lay;
    unsigned char *buf;
    const mla_plan_hdr *hdr;
    const mla_item *items;
    const mla_comb *comb;
    const mla_tok *toks;
} plan_out;

static int build(plan_out *o, mla_plan_params *p, const int32_t *q_len, const int32_t *prefix, int32_t bs,
                 int32_t max_tokens, char *err) {
    int32_t t = 0;
    for (int32_t i = 0; i < bs; i++) t += q_len[i];
    o->caps = mla_plan_caps_for(bs, max_tokens, p->hq, p->max_part_rows);
    o->lay = mla_plan_layout_of(&o->caps);
    o->buf = calloc(1, (size_t)o->lay.total);
    assert_non_null(o->buf);
    int rc = mla_plan_build(p, &o->caps, q_len, prefix, bs, t, o->buf, err, 512);
    o->hdr = (const mla_plan_hdr *)o->buf;
    o->items = (const mla_item *)(o->buf + o->lay.items);
    o->comb = (const mla_comb *)(o->buf + o->lay.comb);
    o->toks = (const mla_tok *)(o->buf + o->lay.toks);
    return rc;
}

static mla_plan_params params(int32_t hq, int32_t rpt, int32_t sms) {
    mla_plan_params p;
    memset(&p, 0, sizeof p);
    p.hq = hq;
    p.rows_per_tile = rpt;
    p.target_ctas = sms;
    p.min_chunk = 256;
    p.item_overhead = 128;
    p.max_context = 1 << 20;
    p.max_part_rows = 4 * 64 * sms;
    return p;
}

/* Exactly-once coverage and the partial / combine bookkeeping. */
static void check_cover(const plan_out *o, const mla_plan_params *p, const int32_t *q_len,
                        const int32_t *prefix, int32_t bs) {
    int64_t q_start = 0;
    const int32_t hq = p->hq;
    /* per split tile: which partial rows it owns */
    int32_t n_parts_used = 0;
    unsigned char *part_seen = calloc((size_t)p->max_part_rows + 1, 1);
    for (int32_t b = 0; b < bs; b++) {
        const int32_t rows = q_len[b] * hq, maxk = prefix[b] + q_len[b];
        unsigned char *cov = calloc((size_t)rows * (size_t)maxk + 1, 1);
        for (int32_t i = 0; i < o->hdr->n_items; i++) {
            const mla_item *it = &o->items[i];
            if (it->b != b) continue;
            assert_true(it->nrows >= 1 && it->nrows <= p->rows_per_tile);
            assert_true(it->row0 % p->rows_per_tile == 0);
            assert_true(it->row0 + it->nrows <= rows);
            assert_int_equal(it->kv_begin % MLA_KV_BLOCK, 0);
            assert_true(it->kv_end > it->kv_begin);
            assert_int_equal(it->q_row0, (int32_t)(q_start * hq + it->row0));
            /* tree verify: every row sees its request's whole range (the mask picks within) */
            assert_int_equal(it->key_base, p->tree ? maxk - 1 : prefix[b]);
            /* the last row of the tile sees the most keys: the range stays inside it */
            assert_true(it->kv_end <= it->key_base + (it->row0 + it->nrows - 1) / hq + 1);
            assert_true(it->kv_end <= maxk);
            for (int32_t r = it->row0; r < it->row0 + it->nrows; r++) {
                const int32_t see = p->tree ? maxk : prefix[b] + r / hq + 1;
                for (int32_t k = it->kv_begin; k < it->kv_end && k < see; k++) {
                    assert_int_equal(cov[(size_t)r * maxk + k], 0);
                    cov[(size_t)r * maxk + k] = 1;
                }
            }
            if (it->part >= 0) {
                assert_true(it->part + it->nrows <= p->max_part_rows);
                for (int32_t r = 0; r < it->nrows; r++) {
                    assert_int_equal(part_seen[it->part + r], 0);
                    part_seen[it->part + r] = 1;
                }
                n_parts_used += it->nrows;
            }
        }
        for (int32_t r = 0; r < rows; r++)
            for (int32_t k = 0; k < (p->tree ? maxk : prefix[b] + r / hq + 1); k++)
                assert_int_equal(cov[(size_t)r * maxk + k], 1);
        free(cov);
        for (int32_t t = 0; t < q_len[b]; t++) {
            assert_int_equal(o->toks[q_start + t].b, b);
            assert_int_equal(o->toks[q_start + t].n_keys, p->tree ? maxk : prefix[b] + t + 1);
            assert_int_equal(o->toks[q_start + t].j, t);
        }
        q_start += q_len[b];
    }
    /* every split tile has a combine entry naming its parts, and vice versa */
    int32_t comb_rows = 0;
    for (int32_t c = 0; c < o->hdr->n_comb; c++) {
        const mla_comb *cm = &o->comb[c];
        assert_true(cm->nsplit >= 2 && cm->nsplit <= MLA_MAX_SPLITS);
        comb_rows += cm->nsplit * cm->nrows;
        int32_t found = 0;
        for (int32_t i = 0; i < o->hdr->n_items; i++) {
            const mla_item *it = &o->items[i];
            if (it->q_row0 != cm->q_row0) continue;
            assert_true(it->part >= cm->part0 && it->part < cm->part0 + cm->nsplit * cm->nrows);
            assert_int_equal((it->part - cm->part0) % cm->nrows, 0);
            found++;
        }
        assert_int_equal(found, cm->nsplit);
    }
    assert_int_equal(comb_rows, n_parts_used);
    free(part_seen);
}

static void random_batch(int32_t mode, int32_t bs, int32_t *q_len, int32_t *prefix) {
    for (int32_t b = 0; b < bs; b++) {
        if (mode == 0) { /* decode */
            q_len[b] = 1;
            prefix[b] = (int32_t)rnd(5000);
        } else if (mode == 1) { /* verify, 2 tokens */
            q_len[b] = 2;
            prefix[b] = (int32_t)rnd(3000);
        } else if (mode == 3) { /* tree verify, up to 64 draft tokens */
            q_len[b] = 1 + (int32_t)rnd(64);
            prefix[b] = (int32_t)rnd(3000);
        } else { /* ragged extend, some with no prefix */
            q_len[b] = 1 + (int32_t)rnd(300);
            prefix[b] = rnd(3) ? (int32_t)rnd(2000) : 0;
        }
    }
}

static void test_cover_random(void **st) {
    (void)st;
    static const int32_t hqs[] = {16, 64, 128, 3};
    char err[512];
    for (int trial = 0; trial < 80; trial++) {
        const int32_t mode = trial % 4, hq = hqs[trial % 4], bs = 1 + (int32_t)rnd(12);
        int32_t q_len[16], prefix[16];
        random_batch(mode, bs, q_len, prefix);
        int32_t max_rows = 0;
        for (int32_t b = 0; b < bs; b++) max_rows = q_len[b] * hq > max_rows ? q_len[b] * hq : max_rows;
        const int32_t rpt = mode == 2 || trial % 2 ? 64 : mla_rows_per_tile(max_rows);
        mla_plan_params p = params(hq, rpt, 4 + (int32_t)rnd(140));
        p.no_split = trial % 7 == 0;
        p.tree = mode == 3;
        plan_out o;
        int rc = build(&o, &p, q_len, prefix, bs, 4096, err);
        assert_int_equal(rc, 0);
        if (p.no_split) assert_int_equal(o.hdr->n_comb, 0);
        check_cover(&o, &p, q_len, prefix, bs);
        free(o.buf);
    }
}

/* Few tiles: split to fill the SMs; many tiles: no split. */
static void test_split_policy(void **st) {
    (void)st;
    char err[512];
    int32_t q_len[128], prefix[128];
    for (int i = 0; i < 128; i++) q_len[i] = 1, prefix[i] = 32767;
    /* 16 heads, 1 token, B = 64: 64 tiles on 132 SMs -> every tile split */
    mla_plan_params p = params(16, 16, 132);
    plan_out o;
    assert_int_equal(build(&o, &p, q_len, prefix, 64, 256, err), 0);
    assert_true(o.hdr->n_items >= 120 && o.hdr->n_items <= 264);
    assert_int_equal(o.hdr->n_comb, 64);
    check_cover(&o, &p, q_len, prefix, 64);
    free(o.buf);
    /* 128 heads, 1 token, B = 128: 256 tiles >= 132 -> one item per tile, no partials */
    p = params(128, 64, 132);
    assert_int_equal(build(&o, &p, q_len, prefix, 128, 256, err), 0);
    assert_int_equal(o.hdr->n_items, 256);
    assert_int_equal(o.hdr->n_comb, 0);
    free(o.buf);
    /* one long request: split into many equal chunks */
    p = params(16, 16, 132);
    assert_int_equal(build(&o, &p, q_len, prefix, 1, 256, err), 0);
    assert_true(o.hdr->n_items >= 64);
    for (int32_t i = 0; i + 1 < o.hdr->n_items; i++)
        assert_int_equal(o.items[i].kv_end - o.items[i].kv_begin, o.items[0].kv_end - o.items[0].kv_begin);
    check_cover(&o, &p, q_len, prefix, 1);
    free(o.buf);
}

static void test_bad_lengths(void **st) {
    (void)st;
    char err[512];
    int32_t q_len[3] = {1, 1, 1}, prefix[3] = {10, -4, 10};
    mla_plan_params p = params(16, 16, 8);
    plan_out o;
    assert_int_equal(build(&o, &p, q_len, prefix, 3, 16, err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "request 1"));
    free(o.buf);
    prefix[1] = 4;
    p.max_context = 8; /* 10 + 1 > 8 */
    assert_int_equal(build(&o, &p, q_len, prefix, 3, 16, err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "request 0"));
    assert_non_null(strstr(err, "<= 8"));
    free(o.buf);
    p = params(16, 24, 8); /* not a tile size */
    assert_int_equal(build(&o, &p, q_len, prefix, 3, 16, err), SGL_ATTN_E_INVALID);
    free(o.buf);
}

static void test_rows_and_kernel_choice(void **st) {
    (void)st;
    assert_int_equal(mla_rows_per_tile(16), 16);
    assert_int_equal(mla_rows_per_tile(17), 32);
    assert_int_equal(mla_rows_per_tile(32), 32);
    assert_int_equal(mla_rows_per_tile(48), 64);
    assert_int_equal(mla_rows_per_tile(4096), 64);
    const int B = MLA_DT_BF16, H = MLA_DT_F16, F8 = MLA_DT_FP8;
#define RK(pref, q, kv, page, rows, wide_ok) mla_resolve_kernel(MLA_KERNEL_##pref, q, kv, page, rows, wide_ok)
    /* args: preference, q dtype, pool dtype, page, rows of the largest request, wide kernel runnable */
    /* fp8 pools, mixed dtypes and the simple preference: simple, whatever else holds */
    assert_int_equal(RK(AUTO, B, F8, 64, 128, 1), MLA_KERNEL_SIMPLE);
    assert_int_equal(RK(WIDE, B, F8, 64, 128, 1), MLA_KERNEL_SIMPLE);
    assert_int_equal(RK(MMA, H, F8, 64, 16, 1), MLA_KERNEL_SIMPLE);
    assert_int_equal(RK(AUTO, B, H, 64, 128, 1), MLA_KERNEL_SIMPLE);
    assert_int_equal(RK(SIMPLE, B, B, 64, 128, 1), MLA_KERNEL_SIMPLE);
    /* auto where the wide kernel runs: it takes >= 64 rows a request at a page it can box */
    assert_int_equal(RK(AUTO, B, B, 64, 128, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(AUTO, B, B, 64, 64, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(AUTO, B, B, 16, 64, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(AUTO, B, B, 32, 130, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(AUTO, B, B, 128, 128, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(AUTO, B, B, 64, 48, 1), MLA_KERNEL_MMA); /* 16- / 32-row tiles: mma */
    assert_int_equal(RK(AUTO, B, B, 64, 32, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(AUTO, B, B, 64, 16, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(AUTO, B, B, 1, 128, 1), MLA_KERNEL_MMA); /* page 1 / 8: 64 / 8 boxes a block */
    assert_int_equal(RK(AUTO, B, B, 8, 128, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(AUTO, B, B, 48, 128, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(AUTO, H, H, 64, 128, 1), MLA_KERNEL_MMA); /* the wide kernel is bf16 */
    assert_int_equal(RK(AUTO, B, B, 64, 128, 0), MLA_KERNEL_MMA); /* not SM 9.0, no encoder, no room */
    /* asked: mma always; wide wherever it can run, at any rows, else mma */
    assert_int_equal(RK(MMA, B, B, 64, 128, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(WIDE, B, B, 64, 16, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(WIDE, B, B, 32, 128, 1), MLA_KERNEL_WIDE);
    assert_int_equal(RK(WIDE, B, B, 8, 128, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(WIDE, H, H, 64, 128, 1), MLA_KERNEL_MMA);
    assert_int_equal(RK(WIDE, B, B, 64, 128, 0), MLA_KERNEL_MMA);
#undef RK
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cover_random),
        cmocka_unit_test(test_split_policy),
        cmocka_unit_test(test_bad_lengths),
        cmocka_unit_test(test_rows_and_kernel_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
