/* test_hybrid_sparse.c - minimax_sparse against the float64 reference
 * (lref_sparse_query): a paged pool with shuffled pages, an extend from no
 * prefix and one over a cached prefix, then decode steps; the new K/V land at
 * out_cache_loc; the result is really sparse (it differs from dense softmax
 * attention); dense layers go to the inner. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_test_util.h"

enum { HQ = 4, HKV = 2, DK = 16, DV = 8, PAGE = 2, CTX = 64, ROWS = 3, SLOTS_KV = 1 + 96 };

/* multiples of 1/16 in [-2, 2]: every q.k is exact in f32, so the block
 * choice is the same in both precisions */
static double qval(trng *r) { return (double)tr_range(r, -32, 32) / 16.0; }

typedef struct pool {
    ttensor k, v, rtt;
    int used;          /* pages handed out */
    int page_of[ROWS][CTX / PAGE];
    int pages[SLOTS_KV / PAGE];
} pool;

static void pool_open(pool *p, DLDataType dt, trng *r) {
    memset(p, 0, sizeof *p);
    tt_make(&p->k, dt, 3, SLOTS_KV, HKV, DK);
    tt_make(&p->v, dt, 3, SLOTS_KV, HKV, DV);
    tt_make(&p->rtt, tu_dt(0), 2, ROWS, CTX, 0);
    for (size_t i = 0; i < p->k.count; i++) tt_set(&p->k, i, qval(r));
    for (size_t i = 0; i < p->v.count; i++) tt_set(&p->v, i, tr_normal(r));
    int np = SLOTS_KV / PAGE; /* page 0 holds the reserved slot 0 */
    for (int i = 0; i < np - 1; i++) p->pages[i] = i + 1;
    for (int i = np - 2; i > 0; i--) { int j = tr_range(r, 0, i), t = p->pages[i]; p->pages[i] = p->pages[j]; p->pages[j] = t; }
    for (int row = 0; row < ROWS; row++)
        for (int pg = 0; pg < CTX / PAGE; pg++) p->page_of[row][pg] = -1;
    for (size_t i = 0; i < p->rtt.count; i++) tt_set(&p->rtt, i, 0);
}

/* slot of token j of row, giving the row a page when it first needs one */
static int slot_of(pool *p, int row, int j) {
    int *pg = &p->page_of[row][j / PAGE];
    if (*pg < 0) *pg = p->pages[p->used++];
    int s = *pg * PAGE + j % PAGE;
    tt_set(&p->rtt, (size_t)row * CTX + j, s);
    return s;
}

static void pool_close(pool *p) { tt_free(&p->k); tt_free(&p->v); tt_free(&p->rtt); }

typedef struct rq { int row, prefix, n; } rq;

/* one extend/decode of the sparse layer 0 (and dense layer 1) */
static double run(sgl_attn_backend *b, fake_inner *in, pool *p, DLDataType dt, int mode, const rq *r, int bs,
                  trng *g, double tol, double *dense_gap, int bad_slot) {
    int T = 0;
    for (int i = 0; i < bs; i++) T += r[i].n;
    ttensor rpi, sl, pl, el, loc, q, k, v, out;
    tt_make(&rpi, tu_dt(0), 1, bs, 0, 0);
    tt_make(&sl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&pl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&el, tu_dt(0), 1, bs, 0, 0);
    tt_make(&loc, tu_dt(0), 1, T, 0, 0);
    tt_make(&q, dt, 3, T, HQ, DK);
    tt_make(&k, dt, 3, T, HKV, DK);
    tt_make(&v, dt, 3, T, HKV, DV);
    tt_make(&out, dt, 3, T, HQ, DV);
    for (size_t i = 0; i < q.count; i++) tt_set(&q, i, qval(g));
    for (size_t i = 0; i < k.count; i++) tt_set(&k, i, qval(g));
    for (size_t i = 0; i < v.count; i++) tt_set(&v, i, tr_normal(g));
    tt_fill_nan(&out);
    int t = 0;
    for (int i = 0; i < bs; i++) {
        tt_set(&rpi, i, r[i].row);
        tt_set(&sl, i, r[i].prefix + r[i].n);
        tt_set(&pl, i, r[i].prefix);
        tt_set(&el, i, r[i].n);
        for (int j = 0; j < r[i].prefix + r[i].n; j++) {
            int s = slot_of(p, r[i].row, j);
            if (j >= r[i].prefix) tt_set(&loc, t++, s);
        }
    }
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = mode;
    batch.batch_size = bs;
    batch.num_tokens = T;
    batch.page_size = PAGE;
    batch.tokens_per_req = mode == SGL_ATTN_MODE_DECODE ? 1 : 0;
    batch.req_to_token = &p->rtt.t;
    batch.req_pool_indices = &rpi.t;
    batch.seq_lens = &sl.t;
    batch.extend_prefix_lens = mode == SGL_ATTN_MODE_EXTEND ? &pl.t : NULL;
    batch.extend_seq_lens = mode == SGL_ATTN_MODE_EXTEND ? &el.t : NULL;
    batch.out_cache_loc = &loc.t;
    int saved = (int)tt_get(&p->rtt, (size_t)r[0].row * CTX);
    if (bad_slot) tt_set(&p->rtt, (size_t)r[0].row * CTX, bad_slot);
    int rc = b->ops->init_forward_metadata(b, &batch);
    if (rc) print_error("%s\n", b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    sgl_attn_layer layer;
    sgl_attn_forward_args a;
    tu_attn_call(&layer, &a, &batch, HQ, HKV, DK, DV, &p->k, &p->v, &q, &k, &v, &out);
    rc = mode == SGL_ATTN_MODE_EXTEND ? b->ops->forward_extend(b, &a) : b->ops->forward_decode(b, &a);
    if (bad_slot) { /* refused before anything is written */
        assert_int_equal(rc, SGL_ATTN_E_INVALID);
        assert_non_null(strstr(b->ops->last_error(b), "the layer's pool has 97 slots"));
        for (size_t i = 0; i < out.count; i++) assert_true(isnan(tt_get(&out, i)));
        tt_set(&p->rtt, (size_t)r[0].row * CTX, saved);
        *dense_gap = 0;
        tt_free(&rpi); tt_free(&sl); tt_free(&pl); tt_free(&el); tt_free(&loc);
        tt_free(&q); tt_free(&k); tt_free(&v); tt_free(&out);
        return 0;
    }
    if (rc) print_error("%s\n", b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    /* the new K/V are in the pool */
    for (int tt = 0; tt < T; tt++) {
        int s = (int)tt_get(&loc, tt);
        for (int e = 0; e < HKV * DK; e++) assert_true(tt_get(&p->k, (size_t)s * HKV * DK + e) == tt_get(&k, (size_t)tt * HKV * DK + e));
        for (int e = 0; e < HKV * DV; e++) assert_true(tt_get(&p->v, (size_t)s * HKV * DV + e) == tt_get(&v, (size_t)tt * HKV * DV + e));
    }
    /* reference per new token, from the pool as it is now */
    double num = 0, den = 0, gap_num = 0;
    double *kk = calloc((size_t)CTX * HKV * DK, sizeof(double)), *vv = calloc((size_t)CTX * HKV * DV, sizeof(double));
    double qq[HQ * DK], ref[HQ * DV], dense[HQ * DV];
    t = 0;
    for (int i = 0; i < bs; i++) {
        int len = r[i].prefix + r[i].n;
        for (int j = 0; j < len; j++) {
            int s = (int)tt_get(&p->rtt, (size_t)r[i].row * CTX + j);
            for (int e = 0; e < HKV * DK; e++) kk[(size_t)j * HKV * DK + e] = tt_get(&p->k, (size_t)s * HKV * DK + e);
            for (int e = 0; e < HKV * DV; e++) vv[(size_t)j * HKV * DV + e] = tt_get(&p->v, (size_t)s * HKV * DV + e);
        }
        for (int j = 0; j < r[i].n; j++, t++) {
            for (int e = 0; e < HQ * DK; e++) qq[e] = tt_get(&q, (size_t)t * HQ * DK + e);
            long pos = r[i].prefix + j;
            lref_sparse_query(HQ, HKV, DK, DV, qq, kk, vv, pos, 4, 2, 1, 1, 0.25, ref);
            lref_sparse_query(HQ, HKV, DK, DV, qq, kk, vv, pos, 4, 1000, 0, 0, 0.25, dense);
            for (int e = 0; e < HQ * DV; e++) {
                double o = tt_get(&out, (size_t)t * HQ * DV + e);
                assert_true(isfinite(o));
                num += (o - ref[e]) * (o - ref[e]);
                den += ref[e] * ref[e];
                gap_num += (dense[e] - ref[e]) * (dense[e] - ref[e]);
            }
        }
    }
    double nmse = num / den;
    *dense_gap = gap_num / den;
    if (nmse > tol) print_error("sparse NMSE %.3g > %.3g\n", nmse, tol);
    assert_true(nmse <= tol);
    /* a dense layer goes to the inner */
    int before = in->n_extend + in->n_decode;
    layer.layer_id = 1;
    rc = mode == SGL_ATTN_MODE_EXTEND ? b->ops->forward_extend(b, &a) : b->ops->forward_decode(b, &a);
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_int_equal(in->n_extend + in->n_decode, before + 1);
    free(kk); free(vv);
    tt_free(&rpi); tt_free(&sl); tt_free(&pl); tt_free(&el); tt_free(&loc);
    tt_free(&q); tt_free(&k); tt_free(&v); tt_free(&out);
    return nmse;
}

static void scenario(uint32_t dt_bit, double tol, uint64_t seed) {
    sgl_attn_model m;
    tu_shape sh = {0};
    tu_model(&m, SGL_ATTN_HYBRID_MINIMAX_SPARSE, &sh, SGL_ATTN_DT_F32, 0);
    m.num_q_heads = HQ;
    m.num_kv_heads = HKV;
    m.head_dim_qk = DK;
    m.head_dim_v = DV;
    fake_inner in;
    fake_inner_init(&in);
    sgl_attn_backend *b = NULL;
    char err[256] = "";
    int rc = tu_create(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, &in, 4, 64, CTX, &b, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    trng g = {seed};
    DLDataType dt = tu_dt(dt_bit);
    pool p;
    pool_open(&p, dt, &g);
    /* row 2 has a cached prefix of 21 tokens already in the pool */
    for (int j = 0; j < 21; j++) slot_of(&p, 2, j);
    double gap = 0, worst_gap = 0;
    rq ext[] = {{0, 0, 13}, {2, 21, 6}};
    run(b, &in, &p, dt, SGL_ATTN_MODE_EXTEND, ext, 2, &g, tol, &gap, 0);
    worst_gap = fmax(worst_gap, gap);
    for (int step = 0; step < 3; step++) {
        rq dec[] = {{0, 13 + step, 1}, {2, 27 + step, 1}};
        run(b, &in, &p, dt, SGL_ATTN_MODE_DECODE, dec, 2, &g, tol, &gap, 0);
        worst_gap = fmax(worst_gap, gap);
    }
    /* sparse differs from dense: the test compares the sparse rule, not softmax */
    assert_true(worst_gap > 1e-3);
    /* a KV slot past the layer's pool is refused before anything is written */
    rq dec[] = {{0, 16, 1}};
    run(b, &in, &p, dt, SGL_ATTN_MODE_DECODE, dec, 1, &g, tol, &gap, SLOTS_KV + 5);
    pool_close(&p);
    b->ops->destroy(b);
}

static void test_sparse_f64(void **st) { (void)st; scenario(SGL_ATTN_DT_F64, 1e-20, 31); }
static void test_sparse_f32(void **st) { (void)st; scenario(SGL_ATTN_DT_F32, 1e-11, 32); }
static void test_sparse_bf16(void **st) { (void)st; scenario(SGL_ATTN_DT_BF16, 1e-4, 33); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_f64),
        cmocka_unit_test(test_sparse_f32),
        cmocka_unit_test(test_sparse_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
