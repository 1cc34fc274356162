/* test_mla_indexer_check.c - the checks of cuda_mla's indexer_topk (pure C,
 * no GPU): a valid call passes and yields the launcher's view; each indexer
 * tensor with a wrong dtype, shape or device, and each bad field, is refused
 * with a message naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mla_fake_tensor.h"
#include "mla_indexer.h"

enum { T = 5, BS = 3, IH = 64, ID = 128, SLOTS = 4096, ROWS = 8, COLS = 512, TOPK = 2048, MAXN = 300 };

typedef struct fx {
    int64_t qs[3], ws[2], ks[2], cs[2], ss[2], os[2];
    DLTensor q, w, k, kc, ksc, out;
    mla_fake_paged pg;
    sgl_attn_batch batch;
    sgl_attn_indexer_args a;
    mla_idx_view v;
    char err[512];
} fx;

static void setup_fx(fx *f) {
    memset(f, 0, sizeof *f);
    f->qs[0] = T, f->qs[1] = IH, f->qs[2] = ID;
    f->ws[0] = T, f->ws[1] = IH;
    f->ks[0] = T, f->ks[1] = ID;
    f->cs[0] = SLOTS, f->cs[1] = ID;
    f->ss[0] = SLOTS, f->ss[1] = ID / 128;
    f->os[0] = T, f->os[1] = TOPK;
    f->q = mla_fake_tensor(f->qs, 3, kDLBfloat, 16, MLA_FAKE_DEV);
    f->w = mla_fake_tensor(f->ws, 2, kDLFloat, 32, MLA_FAKE_DEV);
    f->k = mla_fake_tensor(f->ks, 2, kDLBfloat, 16, MLA_FAKE_DEV);
    f->kc = mla_fake_tensor(f->cs, 2, SGL_ATTN_DL_FLOAT8_E4M3FN_CODE, 8, MLA_FAKE_DEV);
    f->ksc = mla_fake_tensor(f->ss, 2, kDLFloat, 32, MLA_FAKE_DEV);
    f->out = mla_fake_tensor(f->os, 2, kDLInt, 32, MLA_FAKE_DEV);
    mla_fake_batch(&f->pg, &f->batch, SGL_ATTN_MODE_DECODE, BS, T, ROWS, COLS, 64);
    f->a.struct_size = sizeof f->a;
    f->a.topk = TOPK;
    f->a.save_index_k = 1;
    f->a.batch = &f->batch;
    f->a.q = &f->q;
    f->a.weights = &f->w;
    f->a.k = &f->k;
    f->a.index_k_cache = &f->kc;
    f->a.index_k_scale = &f->ksc;
    f->a.topk_indices = &f->out;
}

static int run(fx *f) { return mla_check_indexer(&f->a, 1, T, BS, MAXN, &f->v, f->err, sizeof f->err); }

/* The call is refused with rc and a message containing `want`. */
static void refused(fx *f, int rc, const char *want) {
    const int got = run(f);
    if (got != rc || !strstr(f->err, want)) fail_msg("rc %d (expected %d), message '%s' (expected '%s' in it)", got, rc, f->err, want);
}

static void test_valid(void **state) {
    (void)state;
    fx f;
    setup_fx(&f);
    assert_int_equal(run(&f), SGL_ATTN_OK);
    assert_int_equal(f.v.t, T);
    assert_int_equal(f.v.ih, IH);
    assert_int_equal(f.v.id, ID);
    assert_int_equal(f.v.nblk, 1);
    assert_int_equal(f.v.topk, TOPK);
    assert_int_equal(f.v.q_dt, MLA_IDX_Q_BF16);
    assert_int_equal(f.v.k_dt, MLA_IDX_K_BF16);
    assert_int_equal(f.v.slots, SLOTS);
    assert_int_equal(f.v.r2t_rows, ROWS);
    assert_int_equal(f.v.r2t_cols, COLS);
    assert_int_equal(f.v.loc.shift, 1); /* int64 out_cache_loc */
    assert_int_equal(f.v.req_to_token.shift, 0);
    /* q f32 / f16 / fp8, k f32 / f16; 256 dims with two scales; 4 heads; no save: k not read */
    f.q.dtype.code = kDLFloat, f.q.dtype.bits = 32;
    f.k.dtype.code = kDLFloat, f.k.dtype.bits = 32;
    assert_int_equal(run(&f), SGL_ATTN_OK);
    assert_int_equal(f.v.q_dt, MLA_IDX_Q_F32);
    assert_int_equal(f.v.k_dt, MLA_IDX_K_F32);
    f.q.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3FN_CODE, f.q.dtype.bits = 8;
    f.k.dtype.code = kDLFloat, f.k.dtype.bits = 16;
    assert_int_equal(run(&f), SGL_ATTN_OK);
    assert_int_equal(f.v.q_dt, MLA_IDX_Q_FP8);
    assert_int_equal(f.v.k_dt, MLA_IDX_K_F16);
    f.qs[2] = f.ks[1] = f.cs[1] = 256;
    f.ss[1] = 2;
    f.qs[1] = f.ws[1] = 4;
    assert_int_equal(run(&f), SGL_ATTN_OK);
    assert_int_equal(f.v.nblk, 2);
    f.a.save_index_k = 0;
    f.a.k = NULL;
    f.batch.out_cache_loc = NULL;
    assert_int_equal(run(&f), SGL_ATTN_OK);
    assert_null(f.v.k);
}

static void test_bad_fields(void **state) {
    (void)state;
    fx f;
    setup_fx(&f);
    f.a.struct_size = 8;
    refused(&f, SGL_ATTN_E_INVALID, "struct_size 8");
    setup_fx(&f);
    f.a.topk = 0;
    refused(&f, SGL_ATTN_E_INVALID, "topk 0");
    setup_fx(&f);
    f.a.batch = NULL;
    refused(&f, SGL_ATTN_E_INVALID, "args.batch is NULL");
    setup_fx(&f);
    f.batch.num_tokens = T + 1;
    refused(&f, SGL_ATTN_E_STATE, "has 6 tokens");
}

/* Each indexer tensor: wrong dtype, wrong shape, NULL, host memory. */
static void test_bad_tensors(void **state) {
    (void)state;
    fx f;
    static const char *const names[] = {"indexer q", "indexer weights", "indexer k", "index_k_cache", "index_k_scale",
                                        "topk_indices", "batch.req_to_token", "batch.req_pool_indices",
                                        "batch.out_cache_loc"};
    for (int i = 0; i < 9; i++) {
        DLTensor *ts[9];
        /* wrong dtype: an index tensor gets a float, a float tensor an int */
        setup_fx(&f);
        ts[0] = &f.q, ts[1] = &f.w, ts[2] = &f.k, ts[3] = &f.kc, ts[4] = &f.ksc, ts[5] = &f.out, ts[6] = &f.pg.r2t,
        ts[7] = &f.pg.rpi, ts[8] = &f.pg.loc;
        if (i >= 5) ts[i]->dtype.code = kDLFloat, ts[i]->dtype.bits = 32;
        else ts[i]->dtype.code = kDLInt, ts[i]->dtype.bits = 32;
        if (run(&f) == SGL_ATTN_OK || !strstr(f.err, names[i]) || !strstr(f.err, "dtype"))
            fail_msg("%s with a wrong dtype: rc ok or message '%s'", names[i], f.err);
        /* wrong shape: one more in the first extent (req_to_token: any rows, so its columns) */
        setup_fx(&f);
        ts[0] = &f.q, ts[1] = &f.w, ts[2] = &f.k, ts[3] = &f.kc, ts[4] = &f.ksc, ts[5] = &f.out, ts[6] = &f.pg.r2t,
        ts[7] = &f.pg.rpi, ts[8] = &f.pg.loc;
        if (i == 3) f.cs[1] = ID + 1;      /* the cache's dims differ from q's */
        else if (i == 6) f.pg.r2s[1] = MAXN - 1; /* narrower than the longest request */
        else ts[i]->shape[0] += 1;
        if (run(&f) == SGL_ATTN_OK || !strstr(f.err, names[i]))
            fail_msg("%s with a wrong shape: rc ok or message '%s'", names[i], f.err);
        /* host memory */
        setup_fx(&f);
        ts[0] = &f.q, ts[1] = &f.w, ts[2] = &f.k, ts[3] = &f.kc, ts[4] = &f.ksc, ts[5] = &f.out, ts[6] = &f.pg.r2t,
        ts[7] = &f.pg.rpi, ts[8] = &f.pg.loc;
        ts[i]->device.device_type = kDLCPU;
        if (run(&f) == SGL_ATTN_OK || !strstr(f.err, names[i]))
            fail_msg("%s in host memory: rc ok or message '%s'", names[i], f.err);
    }
    /* NULL where needed */
    setup_fx(&f);
    f.a.q = NULL;
    refused(&f, SGL_ATTN_E_INVALID, "indexer q");
    setup_fx(&f);
    f.a.k = NULL;
    refused(&f, SGL_ATTN_E_INVALID, "indexer k");
    setup_fx(&f);
    f.a.topk_indices = NULL;
    refused(&f, SGL_ATTN_E_INVALID, "topk_indices");
    /* int64 topk_indices: the output is int32 */
    setup_fx(&f);
    f.out.dtype.bits = 64;
    refused(&f, SGL_ATTN_E_INVALID, "topk_indices: expected int32");
}

static void test_shape_limits(void **state) {
    (void)state;
    fx f;
    setup_fx(&f);
    f.qs[2] = 192;
    refused(&f, SGL_ATTN_E_INVALID, "a multiple of 128");
    setup_fx(&f);
    f.qs[1] = f.ws[1] = 128;
    refused(&f, SGL_ATTN_E_UNSUPPORTED, "1..64 index heads");
    setup_fx(&f);
    f.qs[2] = f.ks[1] = f.cs[1] = 640;
    f.ss[1] = 5;
    refused(&f, SGL_ATTN_E_UNSUPPORTED, "up to 512 dims");
    setup_fx(&f);
    f.ss[1] = 2;
    refused(&f, SGL_ATTN_E_INVALID, "index_k_scale");
}

static void test_rows(void **state) {
    (void)state;
    /* the scratch's rows: bytes / (max_context * 4), within 1 .. max_tokens */
    assert_int_equal(mla_idx_rows(256ll << 20, 32768, 64), 64);
    assert_int_equal(mla_idx_rows(256ll << 20, 32768, 8192), 2048);
    assert_int_equal(mla_idx_rows(1, 32768, 8192), 1);
    assert_int_equal(mla_idx_rows(1ll << 20, 1000, 8192), 262);
    assert_int_equal(mla_idx_rows(1ll << 30, 128, 1 << 20), 65535);
    assert_int_equal(mla_idx_smem_bytes(64, 128, 0), (64 * 128 + 64 * 128) * 2);
    assert_int_equal(mla_idx_smem_bytes(4, 256, 1), (2 * 16 * 256 + 64 * 128) * 2);
    assert_int_equal(mla_idx_smem_bytes(20, 128, 0), (32 * 128 + 64 * 128) * 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_shape_limits),
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
