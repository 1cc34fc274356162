/* test_mla_check.c - cuda_mla's input checks (pure C, no GPU): a valid call
 * passes and yields the view the launchers use; each broken field is refused
 * with a message naming it and the value; batch lengths for decode, verify
 * and extend, and their refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mla_check.h"
#include "mla_fake_tensor.h"
#include "mla_sparse.h"

enum { T = 6, HQ = 16, SLOTS = 4096, ROWS = 8, COLS = 512, BS = 3 };

typedef struct fx {
    int64_t qs[3], os[3], ks[3], kn[3];
    DLTensor q, out, kc, k;
    mla_fake_paged pg;
    sgl_attn_layer layer;
    sgl_attn_batch batch;
    sgl_attn_forward_args a;
    char err[512];
} fx;

static void setup_fx(fx *f) {
    memset(f, 0, sizeof *f);
    f->qs[0] = T, f->qs[1] = HQ, f->qs[2] = 576;
    f->os[0] = T, f->os[1] = HQ, f->os[2] = 512;
    f->ks[0] = SLOTS, f->ks[1] = 1, f->ks[2] = 576;
    f->kn[0] = T, f->kn[1] = 1, f->kn[2] = 576;
    f->q = mla_fake_tensor(f->qs, 3, kDLBfloat, 16, MLA_FAKE_DEV);
    f->out = mla_fake_tensor(f->os, 3, kDLBfloat, 16, MLA_FAKE_DEV);
    f->kc = mla_fake_tensor(f->ks, 3, kDLBfloat, 16, MLA_FAKE_DEV);
    f->k = mla_fake_tensor(f->kn, 3, kDLBfloat, 16, MLA_FAKE_DEV);
    f->layer.struct_size = sizeof f->layer;
    f->layer.layer_id = 7;
    f->layer.num_q_heads = HQ;
    f->layer.num_kv_heads = 1;
    f->layer.head_dim_qk = 576;
    f->layer.head_dim_v = 512;
    f->layer.sm_scale = 0.0721f;
    f->layer.sliding_window = -1;
    f->layer.k_cache = &f->kc;
    f->layer.k_scale = f->layer.v_scale = 1.f;
    mla_fake_batch(&f->pg, &f->batch, SGL_ATTN_MODE_TARGET_VERIFY, BS, T, ROWS, COLS, 32);
    f->batch.tokens_per_req = 2;
    f->a.struct_size = sizeof f->a;
    f->a.save_kv_cache = 1;
    f->a.layer = &f->layer;
    f->a.batch = &f->batch;
    f->a.q = &f->q;
    f->a.k = &f->k;
    f->a.out = &f->out;
}

static int run(fx *f, mla_fwd_view *v) { return mla_check_forward(&f->a, 1, T, BS, v, f->err, sizeof f->err); }

/* The call is refused with rc (ANY_ERROR: any error code) and a message
 * containing `want`. */
enum { ANY_ERROR = 1 }; /* no sgl_attn_status is positive */
static void refused(fx *f, mla_fwd_view *v, int rc, const char *want) {
    const int got = run(f, v);
    if (got == SGL_ATTN_OK || (rc != ANY_ERROR && got != rc) || !strstr(f->err, want)) {
        char exp[16] = "an error";
        if (rc != ANY_ERROR) snprintf(exp, sizeof exp, "%d", rc);
        fail_msg("rc %d (expected %s), message '%s' (expected '%s' in it)", got, exp, f->err, want);
    }
}

static void test_valid_view(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    setup_fx(&f);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.t, T);
    assert_int_equal(v.hq, HQ);
    assert_int_equal(v.q_dt, MLA_DT_BF16);
    assert_int_equal(v.kv_dt, MLA_DT_BF16);
    assert_int_equal(v.num_slots, SLOTS);
    assert_int_equal(v.r2t_rows, ROWS);
    assert_int_equal(v.r2t_cols, COLS);
    assert_int_equal(v.req_pool_indices.shift, 1);
    assert_int_equal(v.req_to_token.shift, 0);
    assert_int_equal(v.loc.n, T);
    assert_true(v.scale_log2 > 0.104f && v.scale_log2 < 0.1041f); /* 0.0721 * log2(e) */
    /* fp8 pool: accepted with its scale */
    f.kc.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3_CODE;
    f.kc.dtype.bits = 8;
    f.layer.k_scale = 0.5f;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.kv_dt, MLA_DT_FP8);
    assert_true(v.k_scale == 0.5f);
    f.layer.k_scale = 0.f;
    refused(&f, &v, SGL_ATTN_E_INVALID, "k_scale");
}

/* ABI 1.2 fields cuda_mla does not serve: refused by name; the same bytes
 * beyond a 1.0 caller's struct_size are not read. */
static void test_refuse_unserved(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    const sgl_attn_dual_chunk dca = {0};
    for (int i = 0; i < 7; i++) {
        setup_fx(&f);
        DLTensor *t = &f.pg.loc;
        const char *name = NULL;
        switch (i) {
        case 0: f.batch.page_table = t, name = "batch.page_table"; break;
        case 1: f.batch.encoder_out_cache_loc = t, name = "batch.encoder_out_cache_loc"; break;
        case 2: f.layer.slot_map = t, name = "layer.slot_map"; break;
        case 3: f.layer.attn_type = SGL_ATTN_TYPE_ENCODER_ONLY, name = "layer.attn_type"; break;
        case 4: f.layer.attn_type = SGL_ATTN_TYPE_BIDIRECTIONAL, name = "layer.attn_type"; break;
        case 5: f.a.lse = t, name = "forward args lse"; break;
        default: f.a.dual_chunk = &dca, name = "forward args dual_chunk"; break;
        }
        refused(&f, &v, SGL_ATTN_E_UNSUPPORTED, name);
        assert_non_null(strstr(f.err, "(ABI 1.2)"));
        f.batch.struct_size = SGL_ATTN_BATCH_SIZE_V1_0;
        f.layer.struct_size = SGL_ATTN_LAYER_SIZE_V1_0;
        f.a.struct_size = SGL_ATTN_FORWARD_ARGS_SIZE_V1_0;
        assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    }
    setup_fx(&f);
    f.batch.struct_size = SGL_ATTN_BATCH_SIZE_V1_0 - 8;
    refused(&f, &v, SGL_ATTN_E_INVALID, "batch struct_size");
}

/* The rope split: q [T, Hq, 512] beside q_rope [T, Hq, 64], k [T, 1, 512]
 * beside k_rope [T, 1, 64], compact or as views (sglang's slices of a fused
 * buffer, its transposed bmm output); the view's strides; refusals by name. */
static void test_rope_split(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    int64_t ql[3] = {T, HQ, 512}, qr[3] = {T, HQ, 64}, kl[3] = {T, 1, 512}, kr[3] = {T, 1, 64};
    int64_t qr_st[3] = {HQ * 192, 192, 1}, tr_st[3] = {512, T * 512, 1}, neg_st[3] = {-HQ * 192, 192, 1};
    int64_t odd_st[3] = {HQ * 68, 68, 1};
    int64_t kr_st[3] = {576, 576, 1};
    void *qp = (void *)(uintptr_t)0x20000, *qrp = (void *)(uintptr_t)0x40000;
    void *kp = (void *)(uintptr_t)0x60000, *krp = (void *)(uintptr_t)0x80400;
    DLTensor q_lat, q_rope, k_lat, k_rope;
    /* unsplit: the rope dims follow the latent ones in the same rows */
    setup_fx(&f);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.q_ts, HQ * 576);
    assert_int_equal(v.q_hs, 576);
    assert_int_equal(v.qr_ts, HQ * 576);
    assert_int_equal(v.qr_hs, 576);
    assert_int_equal(v.k_ld, 576);
    assert_int_equal(v.kr_ld, 576);
    assert_ptr_equal(v.q_rope, (const char *)v.q + 1024);
    assert_ptr_equal(v.k_rope, (const char *)v.k + 1024);
    /* compact split */
    setup_fx(&f);
    q_lat = mla_fake_tensor(ql, 3, kDLBfloat, 16, qp), q_rope = mla_fake_tensor(qr, 3, kDLBfloat, 16, qrp);
    k_lat = mla_fake_tensor(kl, 3, kDLBfloat, 16, kp), k_rope = mla_fake_tensor(kr, 3, kDLBfloat, 16, krp);
    f.a.q = &q_lat, f.a.q_rope = &q_rope, f.a.k = &k_lat, f.a.k_rope = &k_rope;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_ptr_equal(v.q, qp);
    assert_ptr_equal(v.q_rope, qrp);
    assert_ptr_equal(v.k, kp);
    assert_ptr_equal(v.k_rope, krp);
    assert_int_equal(v.q_ts, HQ * 512);
    assert_int_equal(v.q_hs, 512);
    assert_int_equal(v.qr_ts, HQ * 64);
    assert_int_equal(v.qr_hs, 64);
    assert_int_equal(v.k_ld, 512);
    assert_int_equal(v.kr_ld, 64);
    /* views: q_rope = q[..., 128:] of a [T, Hq, 192] buffer, k_rope =
     * latent_cache[..., 512:], q = bmm([Hq, T, 512]).transpose(0, 1) */
    q_rope.strides = qr_st;
    k_rope.strides = kr_st;
    q_lat.strides = tr_st;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.qr_ts, HQ * 192);
    assert_int_equal(v.qr_hs, 192);
    assert_int_equal(v.kr_ld, 576);
    assert_int_equal(v.q_ts, 512);
    assert_int_equal(v.q_hs, T * 512);
    /* not saving: no k_rope needed */
    f.a.save_kv_cache = 0, f.a.k_rope = NULL;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    f.a.save_kv_cache = 1;
    refused(&f, &v, SGL_ATTN_E_INVALID, "k_rope");
    f.a.k_rope = &k_rope;
    /* a negative stride, rows of a width that breaks 16-byte alignment */
    q_rope.strides = neg_st;
    refused(&f, &v, ANY_ERROR, "forward args q_rope");
    q_rope.strides = odd_st;
    refused(&f, &v, ANY_ERROR, "forward args q_rope");
    q_rope.strides = NULL;
    /* shapes and dtypes */
    qr[2] = 32;
    refused(&f, &v, SGL_ATTN_E_INVALID, "forward args q_rope");
    qr[2] = 64;
    q_rope.dtype.code = kDLFloat;
    refused(&f, &v, ANY_ERROR, "forward args q_rope");
    q_rope.dtype.code = kDLBfloat;
    kr[0] = T - 1;
    refused(&f, &v, SGL_ATTN_E_INVALID, "forward args k_rope");
    kr[0] = T;
    f.a.q = &f.q; /* a 576-dim q beside q_rope */
    refused(&f, &v, SGL_ATTN_E_INVALID, "q");
    assert_non_null(strstr(f.err, "512"));
    f.a.q = &q_lat;
    f.a.k = &f.k;
    refused(&f, &v, SGL_ATTN_E_INVALID, "k");
    f.a.k = &k_lat;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    /* sparse MLA reads q whole: not with the split */
    int64_t ts2[2] = {T, 64};
    DLTensor ti = mla_fake_tensor(ts2, 2, kDLInt, 32, MLA_FAKE_DEV);
    f.a.topk_indices = &ti;
    refused(&f, &v, SGL_ATTN_E_UNSUPPORTED, "topk_indices given with forward args q_rope");
    f.a.topk_indices = NULL;
    /* k_rope without q_rope */
    f.a.q = &f.q, f.a.q_rope = NULL, f.a.k = &f.k;
    refused(&f, &v, SGL_ATTN_E_INVALID, "q_rope is NULL");
}

/* Tree verify: custom_mask (uint8 / bool, CUDA) with mask_indptr [bs + 1];
 * both or neither, verify batches only, a mask as long as the lengths take. */
static void test_tree(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    int64_t ms[1] = {4000}, is[1] = {BS + 1};
    DLTensor m = mla_fake_tensor(ms, 1, kDLUInt, 8, (void *)(uintptr_t)0x30000);
    DLTensor ip = mla_fake_tensor(is, 1, kDLInt, 32, (void *)(uintptr_t)0x50000);
    setup_fx(&f);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_null(v.mask);
    f.batch.custom_mask = &m, f.batch.mask_indptr = &ip;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_ptr_equal(v.mask, m.data);
    assert_int_equal(v.mask_n, 4000);
    assert_int_equal(v.mask_indptr.n, BS + 1);
    m.dtype.code = 6; /* bool */
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    m.dtype.code = kDLInt;
    refused(&f, &v, SGL_ATTN_E_INVALID, "batch.custom_mask");
    assert_non_null(strstr(f.err, "uint8 or bool"));
    m.dtype.code = kDLUInt;
    m.device.device_type = kDLCPU;
    refused(&f, &v, ANY_ERROR, "batch.custom_mask");
    m.device.device_type = kDLCUDA;
    is[0] = BS;
    refused(&f, &v, SGL_ATTN_E_INVALID, "batch.mask_indptr");
    is[0] = BS + 1;
    f.batch.mask_indptr = NULL;
    refused(&f, &v, SGL_ATTN_E_INVALID, "batch.custom_mask is set without batch.mask_indptr");
    f.batch.mask_indptr = &ip;
    f.batch.forward_mode = SGL_ATTN_MODE_DECODE;
    refused(&f, &v, SGL_ATTN_E_INVALID, "target-verify");
    f.batch.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY;
    /* against the lengths: 3 requests x 2 tokens x (prefix + 2) keys */
    const int32_t q_len[BS] = {2, 2, 2}, prefix[BS] = {598, 700, 696};
    assert_int_equal(mla_check_tree(&f.batch, 1, q_len, prefix, &v, f.err, sizeof f.err), SGL_ATTN_OK);
    ms[0] = 3999;
    assert_int_equal(mla_check_tree(&f.batch, 1, q_len, prefix, &v, f.err, sizeof f.err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(f.err, "3999 entries"));
    assert_non_null(strstr(f.err, "4000"));
}

/* fp8 scales (ABI 1.2): k_scale_tensor for an fp8 pool (the float left at
 * 1), read by the kernels; every other scale field refused naming it. */
static void test_fp8_scales(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    int64_t one[1] = {1};
    DLTensor ks = mla_fake_tensor(one, 1, kDLFloat, 32, (void *)(uintptr_t)0x70000);
    setup_fx(&f);
    f.kc.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3FN_CODE;
    f.kc.dtype.bits = 8;
    f.layer.k_scale_tensor = &ks;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.kv_dt, MLA_DT_FP8);
    assert_ptr_equal(v.k_scale_t, ks.data);
    ks.ndim = 0; /* a scalar */
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    ks.ndim = 1;
    f.layer.k_scale = 0.5f;
    refused(&f, &v, SGL_ATTN_E_INVALID, "leave k_scale at 1");
    f.layer.k_scale = 1.f;
    ks.dtype.bits = 16;
    refused(&f, &v, ANY_ERROR, "layer.k_scale_tensor");
    ks.dtype.bits = 32;
    ks.device.device_type = kDLCPU;
    refused(&f, &v, ANY_ERROR, "layer.k_scale_tensor");
    ks.device.device_type = kDLCUDA;
    /* without the tensor: the float, as before */
    f.layer.k_scale_tensor = NULL;
    f.layer.k_scale = 0.25f;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_null(v.k_scale_t);
    assert_true(v.k_scale == 0.25f);
    /* a 16-bit pool holds values */
    setup_fx(&f);
    f.layer.k_scale_tensor = &ks;
    refused(&f, &v, SGL_ATTN_E_INVALID, "not fp8");
    for (int i = 0; i < 3; i++) {
        setup_fx(&f);
        const char *name = i == 0 ? "layer.v_scale_tensor" : i == 1 ? "layer.q_descale_tensor" : "layer.q_descale";
        if (i == 0) f.layer.v_scale_tensor = &ks;
        if (i == 1) f.layer.q_descale_tensor = &ks;
        if (i == 2) f.layer.q_descale = 0.25f;
        refused(&f, &v, SGL_ATTN_E_INVALID, name);
        f.layer.struct_size = SGL_ATTN_LAYER_SIZE_V1_0; /* beyond a 1.0 caller's struct: not read */
        assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    }
}

/* DSA sparse MLA: topk_indices [T, topk] int32 on the device goes into the
 * view; a wrong dtype, shape or device and an fp8 [.., 576] pool are refused
 * naming what is wrong; FlashMLA's fp8 record is served (test_record_view). */
static void test_sparse_view(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    int64_t ts[2] = {T, 64}, rs[3] = {SLOTS, 1, 656};
    DLTensor ti = mla_fake_tensor(ts, 2, kDLInt, 32, MLA_FAKE_DEV);
    setup_fx(&f);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_null(v.topk); /* dense */
    f.a.topk_indices = &ti;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_ptr_equal(v.topk, ti.data);
    assert_int_equal(v.topk_k, 64);
    ti.dtype.bits = 64;
    refused(&f, &v, SGL_ATTN_E_INVALID, "topk_indices: expected int32");
    ti.dtype.bits = 32;
    ts[0] = T - 1;
    refused(&f, &v, SGL_ATTN_E_INVALID, "topk_indices");
    ts[0] = T;
    ts[1] = 0;
    refused(&f, &v, SGL_ATTN_E_INVALID, "topk_indices");
    ts[1] = 64;
    ti.device.device_type = kDLCPU;
    refused(&f, &v, SGL_ATTN_E_INVALID, "topk_indices");
    ti.device.device_type = kDLCUDA;
    /* an fp8 pool: not with sparse MLA (dense accepts it) */
    f.kc.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3_CODE;
    f.kc.dtype.bits = 8;
    refused(&f, &v, SGL_ATTN_E_UNSUPPORTED, "topk_indices given with an fp8 pool");
    /* FlashMLA's 656-byte record: served */
    f.kc = mla_fake_tensor(rs, 3, kDLUInt, 8, MLA_FAKE_DEV);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.kv_dt, MLA_DT_REC);
}

/* FlashMLA's fp8 record pool (uint8 [slots, 1, 656]): served by sparse MLA
 * with a bf16 q; a wrong width, layout, dtype, device or alignment, dense
 * MLA over it, an f16 q and a k_scale beside its own scales are refused,
 * each naming the record. */
static void test_record_view(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    int64_t ts[2] = {T, 64}, rs[3] = {SLOTS, 1, 656};
    DLTensor ti = mla_fake_tensor(ts, 2, kDLInt, 32, MLA_FAKE_DEV);
    setup_fx(&f);
    f.a.topk_indices = &ti;
    f.kc = mla_fake_tensor(rs, 3, kDLUInt, 8, MLA_FAKE_DEV);
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
    assert_int_equal(v.kv_dt, MLA_DT_REC);
    assert_ptr_equal(v.pool, f.kc.data);
    assert_int_equal(v.num_slots, SLOTS);
    /* dense MLA does not read it */
    f.a.topk_indices = NULL;
    refused(&f, &v, SGL_ATTN_E_UNSUPPORTED, "FlashMLA's fp8 record");
    assert_non_null(strstr(f.err, "sparse MLA only"));
    f.a.topk_indices = &ti;
    /* the width, the middle extent, the rank */
    rs[2] = 640;
    refused(&f, &v, SGL_ATTN_E_INVALID, "[slots, 1, 656]");
    rs[2] = 656;
    rs[1] = 2;
    refused(&f, &v, SGL_ATTN_E_INVALID, "[slots, 1, 656]");
    rs[1] = 1;
    f.kc.ndim = 2;
    refused(&f, &v, SGL_ATTN_E_INVALID, "not 3-D");
    f.kc.ndim = 3;
    /* 656 wide but not bytes */
    f.kc.dtype.code = kDLBfloat;
    f.kc.dtype.bits = 16;
    refused(&f, &v, SGL_ATTN_E_INVALID, "is uint8");
    f.kc.dtype.code = kDLUInt;
    f.kc.dtype.bits = 8;
    /* device, alignment */
    f.kc.device.device_type = kDLCPU;
    refused(&f, &v, ANY_ERROR, "k_cache");
    f.kc.device.device_type = kDLCUDA;
    f.kc.data = (void *)(uintptr_t)0x10008;
    refused(&f, &v, ANY_ERROR, "k_cache");
    f.kc.data = MLA_FAKE_DEV;
    /* its own scales: no k_scale beside them */
    f.layer.k_scale = 0.5f;
    refused(&f, &v, SGL_ATTN_E_INVALID, "own scales");
    f.layer.k_scale = 1.f;
    /* the RoPE part is bf16: q too */
    f.q.dtype.code = kDLFloat;
    f.out.dtype.code = kDLFloat;
    f.k.dtype.code = kDLFloat;
    refused(&f, &v, SGL_ATTN_E_UNSUPPORTED, "bf16 q");
}

/* The split of each topk row: by the shape only, within the limits. */
static void test_sparse_splits(void **st) {
    (void)st;
    int32_t tps = 0;
    /* decode B 64 x 128 heads on 132 SMs: 128 CTAs already, no split */
    assert_int_equal(mla_sparse_splits(64, 128, 2048, 132, 1, 33792, &tps), 1);
    assert_int_equal(tps, 64);
    /* one token, 128 heads: 2 CTAs; 66 wanted, capped at 64 tiles / 4 = 16 */
    assert_int_equal(mla_sparse_splits(1, 128, 2048, 132, 1, 33792, &tps), 16);
    assert_int_equal(tps, 4);
    /* 2 tokens x 16 heads, topk 128 (4 tiles): one split of 4 tiles */
    assert_int_equal(mla_sparse_splits(2, 16, 128, 132, 1, 33792, &tps), 1);
    assert_int_equal(tps, 4);
    /* the partial rows bound it: 1 token x 16 heads, 1024 rows -> at most 64 splits, then the cap 32 */
    assert_int_equal(mla_sparse_splits(1, 16, 65536, 132, 1, 1024, &tps), MLA_SPARSE_MAX_SPLITS);
    assert_int_equal(tps, 64);
    assert_int_equal(mla_sparse_splits(1, 16, 65536, 132, 1, 48, &tps), 3);
    assert_int_equal(tps, 683);
    /* a ragged last split: every split has at least one tile */
    assert_int_equal(mla_sparse_splits(1, 64, 33 * 32, 100, 1, 33792, &tps), 7); /* 8 wanted: 5 tiles each */
    assert_int_equal(tps, 5);
    assert_int_equal(mla_sparse_rows(16, 1), 16);
    assert_int_equal(mla_sparse_rows(17, 1), 64);
    /* two CTAs an SM (SM 9.0, 16-bit pools): 32-row blocks, 2 x 132 slots */
    assert_int_equal(mla_sparse_rows(16, 2), 16);
    assert_int_equal(mla_sparse_rows(17, 2), 32);
    /* decode B 64 x 128 heads: 256 CTAs in 264 slots, one wave, no split */
    assert_int_equal(mla_sparse_splits(64, 128, 2048, 132, 2, 33792, &tps), 1);
    assert_int_equal(tps, 64);
    /* B 64 x 32 heads: one block a token either way; 264 slots take 4 splits, 132 take 2 */
    assert_int_equal(mla_sparse_splits(64, 32, 2048, 132, 2, 33792, &tps), 4);
    assert_int_equal(tps, 16);
    assert_int_equal(mla_sparse_splits(64, 32, 2048, 132, 1, 33792, &tps), 2);
    assert_int_equal(tps, 32);
    /* two CTAs an SM for 16-bit pools at > 16 heads on SM 9.0 only */
    assert_int_equal(mla_sparse_ctas(128, 0, 9), 2);
    assert_int_equal(mla_sparse_ctas(17, 0, 9), 2);
    assert_int_equal(mla_sparse_ctas(128, 1, 9), 1);
    assert_int_equal(mla_sparse_ctas(16, 0, 9), 1);
    assert_int_equal(mla_sparse_ctas(128, 0, 8), 1);
}

/* One broken field at a time: status and the words naming it. */
static void test_refusals(void **st) {
    (void)st;
    fx f;
    mla_fwd_view v;
    struct {
        int which;
        int rc;
        const char *words;
    } cases[] = {
        {0, SGL_ATTN_E_UNSUPPORTED, "head dims (qk 192"},
        {1, SGL_ATTN_E_UNSUPPORTED, "num_kv_heads 2"},
        {2, SGL_ATTN_E_UNSUPPORTED, "soft-cap"},
        {3, SGL_ATTN_E_UNSUPPORTED, "sliding window"},
        {4, SGL_ATTN_E_INVALID, "q has shape [6, 16, 512]; expected [6, 16, 576] (num_tokens, num_q_heads, 576"},
        {5, SGL_ATTN_E_UNSUPPORTED, "q has dtype float32; expected float16 or bfloat16"},
        {6, SGL_ATTN_E_UNSUPPORTED, "out has dtype float16; expected bfloat16"},
        {7, SGL_ATTN_E_INVALID, "out is on cuda:0; expected device 1 (the backend's)"},
        {8, SGL_ATTN_E_UNSUPPORTED, "k_cache has dtype float16; expected bfloat16 or float8_e4m3"},
        {9, SGL_ATTN_E_INVALID, "req_to_token has dtype float32; expected int32 or int64"},
        {10, SGL_ATTN_E_INVALID, "req_pool_indices has shape [2]; expected [3] (batch_size)"},
        {11, SGL_ATTN_E_INVALID, "out_cache_loc is NULL"},
        {12, SGL_ATTN_E_STATE, "planned 6 / 3"},
        {13, SGL_ATTN_E_UNSUPPORTED, "q.strides[0] = 18432; expected 9216 (compact row-major tensors only)"},
        {14, SGL_ATTN_E_INVALID, "sm_scale"},
        {15, SGL_ATTN_E_UNSUPPORTED, "q: data + byte_offset is not 16-byte aligned"},
        {16, SGL_ATTN_E_INVALID, "k has shape [6, 2, 576]; expected [6, 1, 576]"},
        {17, SGL_ATTN_E_UNSUPPORTED, "k_cache.shape[0] = 2147483648; expected at most 2^31 - 1"},
        {18, SGL_ATTN_E_INVALID, "k_cache has no slots"},
        {19, SGL_ATTN_E_INVALID, "req_to_token is empty ([8, 0])"},
    };
    int64_t bad_strides[3] = {576 * 32, 576, 1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setup_fx(&f);
        switch (cases[i].which) {
        case 0: f.layer.head_dim_qk = 192; break;
        case 1: f.layer.num_kv_heads = 2; break;
        case 2: f.layer.logit_softcap = 30.f; break;
        case 3: f.layer.sliding_window = 128; break;
        case 4: f.qs[2] = 512; break;
        case 5: f.q.dtype.code = kDLFloat, f.q.dtype.bits = 32; break;
        case 6: f.out.dtype.code = kDLFloat; break;
        case 7: f.out.device.device_id = 0; break;
        case 8: f.kc.dtype.code = kDLFloat; break;
        case 9: f.pg.r2t.dtype.code = kDLFloat; break;
        case 10: f.pg.ps[0] = 2; break;
        case 11: f.batch.out_cache_loc = NULL; break;
        case 12: f.batch.num_tokens = 4; break;
        case 13: f.q.strides = bad_strides; break;
        case 14: f.layer.sm_scale = -1.f; break;
        case 15: f.q.byte_offset = 2; break;
        case 16: f.kn[1] = 2; break;
        case 17: f.ks[0] = (int64_t)INT32_MAX + 1; break;
        case 18: f.ks[0] = 0; break;
        case 19: f.pg.r2s[1] = 0; break;
        }
        int rc = run(&f, &v);
        if (rc != cases[i].rc || !strstr(f.err, cases[i].words))
            fail_msg("case %d: rc %d (want %d), message \"%s\" (want \"%s\")", cases[i].which, rc,
                     cases[i].rc, f.err, cases[i].words);
    }
    /* save_kv_cache off: k and out_cache_loc are not needed */
    setup_fx(&f);
    f.a.save_kv_cache = 0;
    f.a.k = NULL;
    f.batch.out_cache_loc = NULL;
    assert_int_equal(run(&f, &v), SGL_ATTN_OK);
}

static DLTensor host_lens(int64_t *shape, int64_t n, int32_t *data) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    shape[0] = n;
    t.shape = shape;
    t.dtype.code = kDLInt;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    return t;
}

static void test_batch_lengths(void **st) {
    (void)st;
    char err[512];
    int32_t q_len[4], prefix[4];
    int64_t s0[1], s1[1], s2[1];
    sgl_attn_batch b;
    memset(&b, 0, sizeof b);
    /* verify, 2 tokens a request: prefix = seq_len - 2 */
    int32_t seq[3] = {2, 100, 41};
    DLTensor ts = host_lens(s0, 3, seq);
    b.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY;
    b.batch_size = 3;
    b.num_tokens = 6;
    b.tokens_per_req = 2;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &ts, NULL, NULL, q_len, prefix, err, sizeof err), 0);
    assert_int_equal(q_len[0], 2);
    assert_int_equal(prefix[0], 0);
    assert_int_equal(prefix[1], 98);
    assert_int_equal(prefix[2], 39);
    /* a sequence shorter than its new tokens */
    seq[0] = 1;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &ts, NULL, NULL, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "seq_lens_cpu[0] = 1"));
    /* token count disagreeing with bs x tokens_per_req */
    seq[0] = 5;
    b.num_tokens = 5;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &ts, NULL, NULL, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "num_tokens = 5"));
    /* past max_context */
    b.num_tokens = 6;
    seq[1] = 129;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &ts, NULL, NULL, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "seq_lens_cpu[1] = 129"));
    /* extend: prefix and new tokens from their mirrors, checked against seq_lens */
    int32_t pre[3] = {0, 7, 30}, ext[3] = {4, 1, 3}, sl[3] = {4, 8, 33};
    DLTensor tp = host_lens(s1, 3, pre), te = host_lens(s2, 3, ext), tsl = host_lens(s0, 3, sl);
    b.forward_mode = SGL_ATTN_MODE_EXTEND;
    b.num_tokens = 8;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err), 0);
    assert_int_equal(q_len[0], 4);
    assert_int_equal(prefix[2], 30);
    sl[1] = 9;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "seq_lens_cpu[1] = 9"));
    sl[1] = 8;
    /* draft extend: the same lengths as an extend */
    b.forward_mode = SGL_ATTN_MODE_DRAFT_EXTEND;
    q_len[1] = prefix[1] = -1;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err), 0);
    assert_int_equal(q_len[1], 1);
    assert_int_equal(prefix[1], 7);
    b.forward_mode = 5;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "forward_mode 5"));
    b.forward_mode = SGL_ATTN_MODE_EXTEND;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, NULL, NULL, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "extend_prefix_lens_cpu is NULL"));
    /* a mirror the host cannot read is refused, not read */
    tp.device.device_type = kDLCUDA;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "extend_prefix_lens_cpu is on DLPack device type 2"));
    tp.device.device_type = kDLCPU;
    /* a negative length */
    ext[2] = -3;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_string_equal(err, "extend_seq_lens_cpu[2] = -3; expected 0..128");
    ext[2] = 3;
    /* encoder lengths: not served */
    b.encoder_lens_cpu = &tp;
    assert_int_equal(mla_batch_lengths(&b, 4, 16, 128, &tsl, &tp, &te, q_len, prefix, err, sizeof err),
                     SGL_ATTN_E_UNSUPPORTED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_view),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_sparse_view),
        cmocka_unit_test(test_record_view),
        cmocka_unit_test(test_sparse_splits),
        cmocka_unit_test(test_refuse_unserved),
        cmocka_unit_test(test_batch_lengths),
        cmocka_unit_test(test_rope_split),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_fp8_scales),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
