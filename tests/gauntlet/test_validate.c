/* test_validate.c - the validation layer on its own, over a fake inner
 * backend that counts calls: every violation is refused with the argument's
 * name and value and never reaches the inner; valid random batches always
 * pass; corrupted ones never crash it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "validate_fake.h"

static fx_shape random_shape(uint64_t *r, int mode, int page) {
    static const int32_t heads[][2] = {{4, 4}, {8, 2}, {8, 1}, {6, 3}};
    int h = fx_range(r, 0, 3);
    fx_shape s = {
        mode,        fx_range(r, 2, 6), fx_range(r, 4, 70),          page,
        heads[h][0], heads[h][1],       fx_range(r, 0, 1) ? 64 : 32, fx_range(r, 0, 1) ? 64 : 32};
    return s;
}

/* ------------------------------------------------------------ violations */

/* One corruption of a valid batch.  apply() returns 0 when this batch has
 * nothing to corrupt (the runner draws another), else writes the fragment
 * the message must contain, computed from what it changed. */
typedef struct violation {
    const char *name;
    int mode, page;
    int (*apply)(fx *f, char *expect, size_t n);
    char stage; /* 'i': init_forward_metadata refuses, 'f': the forward does */
    int rc;
} violation;

/* A cached (not new) token: (request, column) with column < prefix. */
static int pick_cached(fx *f, int32_t *req, int32_t *col, int want_page_start) {
    for (int tries = 0; tries < 64; tries++) {
        int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
        int64_t pre = fx_get(&f->t_seq, i) - 1;
        if (f->batch.forward_mode == SGL_ATTN_MODE_EXTEND) pre = fx_get(&f->t_pre, i);
        if (pre < 1) continue;
        int32_t c = fx_range(&f->rng, 0, (int32_t)pre - 1);
        if (want_page_start >= 0 && (c % f->s.page == 0) != want_page_start) continue;
        *req = i;
        *col = c;
        return 1;
    }
    return 0;
}

static int v_rtt_outside_pool(fx *f, char *e, size_t n) {
    int32_t i, col;
    if (!pick_cached(f, &i, &col, -1)) return 0;
    int64_t row = fx_get(&f->t_rpi, i), bad = f->slots + fx_range(&f->rng, 0, 100000);
    fx_rtt_set(f, row, col, bad);
    snprintf(e, n,
             "forward_%s: batch->req_to_token[%lld][%d] = %lld is outside the KV pool of %d slots",
             f->batch.forward_mode == SGL_ATTN_MODE_EXTEND ? "extend" : "decode", (long long)row,
             (int)col, (long long)bad, (int)f->slots);
    return 1;
}
static int v_rtt_negative(fx *f, char *e, size_t n) {
    int32_t i, col;
    if (!pick_cached(f, &i, &col, -1)) return 0;
    int64_t row = fx_get(&f->t_rpi, i), bad = -fx_range(&f->rng, 1, 1000);
    fx_rtt_set(f, row, col, bad);
    snprintf(e, n, "batch->req_to_token[%lld][%d] = %lld is a negative slot", (long long)row, (int)col,
             (long long)bad);
    return 1;
}
static int v_page_not_contiguous(fx *f, char *e, size_t n) {
    int32_t i, col;
    if (!pick_cached(f, &i, &col, 0)) return 0;
    int64_t row = fx_get(&f->t_rpi, i), was = fx_rtt_get(f, row, col);
    fx_rtt_set(f, row, col, was + f->s.page);
    snprintf(e, n, "batch->req_to_token[%lld][%d] = %lld; expected %lld", (long long)row, (int)col,
             (long long)(was + f->s.page), (long long)was);
    return 1;
}
static int v_page_misaligned(fx *f, char *e, size_t n) {
    int32_t i, col;
    if (!pick_cached(f, &i, &col, 1)) return 0;
    int64_t row = fx_get(&f->t_rpi, i),
            bad = fx_rtt_get(f, row, col) + fx_range(&f->rng, 1, f->s.page - 1);
    fx_rtt_set(f, row, col, bad);
    snprintf(e, n,
             "batch->req_to_token[%lld][%d] = %lld starts a page but is not a multiple of page_size %d",
             (long long)row, (int)col, (long long)bad, (int)f->s.page);
    return 1;
}
static int v_ocl_mismatch(fx *f, char *e, size_t n) {
    int32_t t = fx_range(&f->rng, 0, f->T - 1);
    int64_t was = fx_get(&f->t_ocl, t), bad = was + fx_range(&f->rng, 1, 50);
    fx_set(&f->t_ocl, t, bad);
    snprintf(e, n, "batch->out_cache_loc[%d] = %lld but batch->req_to_token", (int)t, (long long)bad);
    return 1;
}
static int v_ocl_negative(fx *f, char *e, size_t n) {
    int32_t t = fx_range(&f->rng, 0, f->T - 1);
    int64_t bad = -fx_range(&f->rng, 1, 1 << 20);
    fx_set(&f->t_ocl, t, bad);
    snprintf(e, n, "batch->out_cache_loc[%d] = %lld is a negative slot", (int)t, (long long)bad);
    return 1;
}
static int v_row_outside(fx *f, char *e, size_t n) {
    int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
    int64_t bad = f->max_reqs + fx_range(&f->rng, 0, 1000);
    fx_set(&f->t_rpi, i, bad);
    snprintf(e, n, "batch->req_pool_indices[%d] = %lld is outside the %d rows of req_to_token", (int)i,
             (long long)bad, (int)f->max_reqs);
    return 1;
}
static int v_seq_too_long(fx *f, char *e, size_t n) {
    int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
    int64_t bad = f->max_ctx + fx_range(&f->rng, 1, 1000), was = fx_get(&f->t_seq, i);
    fx_set(&f->t_seq, i, bad);
    fx_set(&f->t_seq_cpu, i, bad);
    f->batch.seq_lens_sum += bad - was;
    if (f->batch.forward_mode == SGL_ATTN_MODE_EXTEND)
        fx_set(&f->t_pre, i, fx_get(&f->t_pre, i) + bad - was);
    snprintf(e, n, "batch->seq_lens[%d] = %lld does not fit a row of %d columns", (int)i,
             (long long)bad, (int)f->max_ctx);
    return 1;
}
static int v_mirror_disagrees(fx *f, char *e, size_t n) {
    int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
    int64_t was = fx_get(&f->t_seq, i), bad = was + fx_range(&f->rng, 1, 9);
    fx_set(&f->t_seq_cpu, i, bad);
    snprintf(e, n, "batch->seq_lens_cpu[%d] = %lld but batch->seq_lens[%d] = %lld", (int)i,
             (long long)bad, (int)i, (long long)was);
    return 1;
}
static int v_seq_sum(fx *f, char *e, size_t n) {
    int64_t was = f->batch.seq_lens_sum;
    f->batch.seq_lens_sum +=
        fx_range(&f->rng, 0, 1) ? fx_range(&f->rng, 1, 99) : -fx_range(&f->rng, 1, 99);
    snprintf(e, n, "batch->seq_lens_sum = %lld but batch->seq_lens sums to %lld",
             (long long)f->batch.seq_lens_sum, (long long)was);
    return 1;
}
static int v_prefix_plus_new(fx *f, char *e, size_t n) {
    int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
    int64_t p = fx_get(&f->t_pre, i) + fx_range(&f->rng, 1, 5);
    fx_set(&f->t_pre, i, p);
    snprintf(e, n,
             "batch->extend_prefix_lens[%d] + batch->extend_seq_lens[%d] = %lld + %lld != "
             "batch->seq_lens[%d] = %lld",
             (int)i, (int)i, (long long)p, (long long)fx_get(&f->t_ext, i), (int)i,
             (long long)fx_get(&f->t_seq, i));
    return 1;
}
static int v_new_sum(fx *f, char *e, size_t n) {
    int32_t i = fx_range(&f->rng, 0, f->s.bs - 1);
    int64_t sl = fx_get(&f->t_seq, i);
    if (sl + 1 > f->max_ctx) return 0;
    /* One more new token in request i, consistently everywhere but num_tokens. */
    fx_set(&f->t_seq, i, sl + 1);
    fx_set(&f->t_seq_cpu, i, sl + 1);
    fx_set(&f->t_ext, i, fx_get(&f->t_ext, i) + 1);
    f->batch.seq_lens_sum += 1;
    snprintf(e, n, "batch->num_tokens = %d but batch->extend_seq_lens sums to %d", (int)f->T,
             (int)f->T + 1);
    return 1;
}
static int v_tokens_per_req(fx *f, char *e, size_t n) {
    f->batch.tokens_per_req = fx_range(&f->rng, 2, 4);
    snprintf(e, n, "batch->num_tokens = %d but batch_size * tokens_per_req = %d * %d", (int)f->T,
             (int)f->s.bs, (int)f->batch.tokens_per_req);
    return 1;
}
static int v_batch_size(fx *f, char *e, size_t n) {
    f->batch.batch_size = f->max_reqs + fx_range(&f->rng, 1, 100);
    snprintf(e, n, "batch->batch_size = %d is outside 1..%d", (int)f->batch.batch_size,
             (int)f->max_reqs);
    return 1;
}
static int v_num_tokens(fx *f, char *e, size_t n) {
    f->batch.num_tokens = f->max_tokens + fx_range(&f->rng, 1, 100);
    snprintf(e, n, "batch->num_tokens = %d is outside 1..%d", (int)f->batch.num_tokens,
             (int)f->max_tokens);
    return 1;
}
static int v_page_size(fx *f, char *e, size_t n) {
    f->batch.page_size = (int32_t)f->caps.page_size_max + fx_range(&f->rng, 1, 100);
    snprintf(e, n, "batch->page_size = %d is not a page size the backend claims",
             (int)f->batch.page_size);
    return 1;
}
static int v_mode(fx *f, char *e, size_t n) {
    f->batch.forward_mode = fx_range(&f->rng, 5, 1000); /* 4 is draft extend (ABI 1.2) */
    snprintf(e, n, "batch->forward_mode = %d is not a forward mode", (int)f->batch.forward_mode);
    return 1;
}
static int v_rtt_dtype(fx *f, char *e, size_t n) {
    f->t_rtt.dtype.code = kDLFloat;
    snprintf(e, n, "batch->req_to_token has dtype float%d; expected int32 or int64", (int)f->s.idx_bits);
    return 1;
}
static int v_batch_struct(fx *f, char *e, size_t n) {
    f->batch.struct_size = SGL_ATTN_BATCH_SIZE_V1_0 - 8u * (uint32_t)fx_range(&f->rng, 1, 4); /* older than ABI 1.0 */
    snprintf(e, n, "batch->struct_size = %u is smaller", (unsigned)f->batch.struct_size);
    return 1;
}
static int v_positions(fx *f, char *e, size_t n) {
    int32_t t = fx_range(&f->rng, 0, f->T - 1);
    int64_t bad = f->max_ctx + fx_range(&f->rng, 0, 99);
    fx_set(&f->t_pos, t, bad);
    snprintf(e, n, "batch->positions[%d] = %lld is outside 0..%d", (int)t, (long long)bad,
             (int)f->max_ctx - 1);
    return 1;
}
static int v_q_dtype(fx *f, char *e, size_t n) {
    f->t_q.dtype.bits = 16;
    snprintf(e, n, "q has dtype float16; expected float32");
    return 1;
}
static int v_q_heads(fx *f, char *e, size_t n) {
    int64_t bad = f->s.hq + fx_range(&f->rng, 1, 8);
    f->sh_q[1] = bad;
    snprintf(e, n, "q has shape [%d, %lld, %d]; expected [%d, %d, %d]", (int)f->T, (long long)bad,
             (int)f->s.d, (int)f->T, (int)f->s.hq, (int)f->s.d);
    return 1;
}
static int64_t g_strides[3];
static int v_q_negative_stride(fx *f, char *e, size_t n) {
    g_strides[0] = -(int64_t)f->s.hq * f->s.d;
    g_strides[1] = f->s.d;
    g_strides[2] = 1;
    f->t_q.strides = g_strides;
    snprintf(e, n, "q.strides[0] = %lld; expected >= 0", (long long)g_strides[0]);
    return 1;
}
static int v_out_overlap(fx *f, char *e, size_t n) {
    g_strides[0] = (int64_t)f->s.hq * f->s.d;
    g_strides[1] = fx_range(&f->rng, 0, f->s.d - 1);
    g_strides[2] = 1;
    f->t_out.strides = g_strides;
    snprintf(e, n, "out.strides[1] = %lld makes elements of this output overlap",
             (long long)g_strides[1]);
    return 1;
}
static int v_q_null(fx *f, char *e, size_t n) {
    f->t_q.data = NULL;
    snprintf(e, n, "q.data is NULL");
    return 1;
}
static int v_q_device(fx *f, char *e, size_t n) {
    f->t_q.device.device_type = kDLCUDA;
    f->t_q.device.device_id = fx_range(&f->rng, 0, 7);
    snprintf(e, n, "q is on cuda:%d while the call's other tensors are on cpu:0",
             (int)f->t_q.device.device_id);
    return 1;
}
static int v_kcache_dim(fx *f, char *e, size_t n) {
    int64_t bad = f->s.d + fx_range(&f->rng, 1, 64);
    f->sh_pool[2] = bad;
    snprintf(e, n, "layer->k_cache has shape [%d, %d, %lld]; expected [*, %d, %d]", (int)f->slots,
             (int)f->s.hkv, (long long)bad, (int)f->s.hkv, (int)f->s.d);
    return 1;
}
static int64_t g_vc_shape[3];
static int v_vcache_slots(fx *f, char *e, size_t n) {
    memcpy(g_vc_shape, f->sh_pool, sizeof g_vc_shape);
    g_vc_shape[0] = f->slots - fx_range(&f->rng, 1, f->slots - 1);
    f->t_vc.shape = g_vc_shape;
    snprintf(e, n, "layer->v_cache has shape [%lld, %d, %d]; expected [%d, %d, %d]",
             (long long)g_vc_shape[0], (int)f->s.hkv, (int)f->s.d, (int)f->slots, (int)f->s.hkv,
             (int)f->s.d);
    return 1;
}
static int v_kv_heads(fx *f, char *e, size_t n) {
    f->layer.num_kv_heads = f->s.hkv + fx_range(&f->rng, 1, 4);
    snprintf(e, n, "layer->num_kv_heads = %d but the model has %d KV heads per rank",
             (int)f->layer.num_kv_heads, (int)f->s.hkv);
    return 1;
}
static int v_layer_id(fx *f, char *e, size_t n) {
    f->layer.layer_id = f->model.num_layers + fx_range(&f->rng, 0, 99);
    snprintf(e, n, "layer->layer_id = %d is outside 0..%d", (int)f->layer.layer_id,
             (int)f->model.num_layers - 1);
    return 1;
}
static int v_sm_scale(fx *f, char *e, size_t n) {
    f->layer.sm_scale = fx_range(&f->rng, 0, 1) ? NAN : -(float)fx_range(&f->rng, 1, 9);
    snprintf(e, n, "layer->sm_scale = %g; expected a finite value > 0", (double)f->layer.sm_scale);
    return 1;
}
static int v_softcap_unclaimed(fx *f, char *e, size_t n) {
    f->caps.features &= ~(uint32_t)SGL_ATTN_FEAT_SOFTCAP;
    f->layer.logit_softcap = (float)fx_range(&f->rng, 1, 50);
    snprintf(e, n, "layer->logit_softcap = %g; the backend does not claim soft-capping",
             (double)f->layer.logit_softcap);
    return 1;
}
static int v_window_unclaimed(fx *f, char *e, size_t n) {
    f->caps.features &= ~(uint32_t)SGL_ATTN_FEAT_SLIDING_WINDOW;
    f->layer.sliding_window = fx_range(&f->rng, 0, 4096);
    snprintf(e, n, "layer->sliding_window = %d; the backend does not claim sliding windows",
             (int)f->layer.sliding_window);
    return 1;
}
/* A plugin without the dual chunk bit would compute plain attention. */
static int v_dual_chunk_unclaimed(fx *f, char *e, size_t n) {
    static sgl_attn_dual_chunk dc = {.struct_size = sizeof dc, .chunk_size = 64, .local_size = 8};
    dc.q_succ = dc.q_inter = f->args.q;
    f->caps.features &= ~(uint32_t)SGL_ATTN_FEAT_DUAL_CHUNK;
    f->args.dual_chunk = &dc;
    snprintf(e, n, "args->dual_chunk is set; the backend does not claim dual chunk attention");
    return 1;
}
static int v_head_dim_unclaimed(fx *f, char *e, size_t n) {
    f->caps.head_dim_qk_max = f->caps.head_dim_v_max = (uint32_t)f->s.d - 1;
    snprintf(e, n, "layer head dims (qk %d, v %d) are not ones the backend claims", (int)f->s.d,
             (int)f->s.d);
    return 1;
}
static int v_k_null(fx *f, char *e, size_t n) {
    f->args.k = NULL;
    snprintf(e, n, "k is NULL");
    return 1;
}
static int v_args_struct(fx *f, char *e, size_t n) {
    f->args.struct_size = (uint32_t)offsetof(sgl_attn_forward_args, linear);
    snprintf(e, n, "args->struct_size = %u is smaller", (unsigned)f->args.struct_size);
    return 1;
}
static int v_wrong_entry(fx *f, char *e, size_t n) {
    /* An extend batch run through forward_decode (the runner picks the call
     * from the mode it built, so flip the mode after init). */
    (void)f;
    snprintf(e, n, "does not go through forward_");
    return 1;
}

static const violation violations[] = {
    {"rtt-outside-pool", SGL_ATTN_MODE_DECODE, 1, v_rtt_outside_pool, 'f', SGL_ATTN_E_INVALID},
    {"rtt-outside-pool-extend", SGL_ATTN_MODE_EXTEND, 1, v_rtt_outside_pool, 'f', SGL_ATTN_E_INVALID},
    {"rtt-negative", SGL_ATTN_MODE_DECODE, 4, v_rtt_negative, 'i', SGL_ATTN_E_INVALID},
    {"page-not-contiguous", SGL_ATTN_MODE_EXTEND, 8, v_page_not_contiguous, 'i', SGL_ATTN_E_INVALID},
    {"page-misaligned", SGL_ATTN_MODE_DECODE, 16, v_page_misaligned, 'i', SGL_ATTN_E_INVALID},
    {"ocl-mismatch", SGL_ATTN_MODE_EXTEND, 1, v_ocl_mismatch, 'i', SGL_ATTN_E_INVALID},
    {"ocl-negative", SGL_ATTN_MODE_DECODE, 1, v_ocl_negative, 'i', SGL_ATTN_E_INVALID},
    {"row-outside", SGL_ATTN_MODE_DECODE, 4, v_row_outside, 'i', SGL_ATTN_E_INVALID},
    {"seq-too-long", SGL_ATTN_MODE_DECODE, 1, v_seq_too_long, 'i', SGL_ATTN_E_INVALID},
    {"mirror-disagrees", SGL_ATTN_MODE_EXTEND, 4, v_mirror_disagrees, 'i', SGL_ATTN_E_INVALID},
    {"seq-lens-sum", SGL_ATTN_MODE_DECODE, 1, v_seq_sum, 'i', SGL_ATTN_E_INVALID},
    {"prefix-plus-new", SGL_ATTN_MODE_EXTEND, 1, v_prefix_plus_new, 'i', SGL_ATTN_E_INVALID},
    {"new-tokens-sum", SGL_ATTN_MODE_EXTEND, 1, v_new_sum, 'i', SGL_ATTN_E_INVALID},
    {"tokens-per-req", SGL_ATTN_MODE_DECODE, 1, v_tokens_per_req, 'i', SGL_ATTN_E_INVALID},
    {"batch-size", SGL_ATTN_MODE_DECODE, 1, v_batch_size, 'i', SGL_ATTN_E_INVALID},
    {"num-tokens", SGL_ATTN_MODE_EXTEND, 1, v_num_tokens, 'i', SGL_ATTN_E_INVALID},
    {"page-size", SGL_ATTN_MODE_DECODE, 1, v_page_size, 'i', SGL_ATTN_E_INVALID},
    {"forward-mode", SGL_ATTN_MODE_DECODE, 1, v_mode, 'i', SGL_ATTN_E_INVALID},
    {"rtt-dtype", SGL_ATTN_MODE_DECODE, 1, v_rtt_dtype, 'i', SGL_ATTN_E_INVALID},
    {"batch-struct-size", SGL_ATTN_MODE_DECODE, 1, v_batch_struct, 'i', SGL_ATTN_E_INVALID},
    {"positions", SGL_ATTN_MODE_EXTEND, 2, v_positions, 'i', SGL_ATTN_E_INVALID},
    {"q-dtype", SGL_ATTN_MODE_DECODE, 1, v_q_dtype, 'f', SGL_ATTN_E_INVALID},
    {"q-heads", SGL_ATTN_MODE_EXTEND, 1, v_q_heads, 'f', SGL_ATTN_E_INVALID},
    {"q-negative-stride", SGL_ATTN_MODE_DECODE, 1, v_q_negative_stride, 'f', SGL_ATTN_E_INVALID},
    {"out-overlap", SGL_ATTN_MODE_DECODE, 1, v_out_overlap, 'f', SGL_ATTN_E_INVALID},
    {"q-null-data", SGL_ATTN_MODE_EXTEND, 1, v_q_null, 'f', SGL_ATTN_E_INVALID},
    {"q-device", SGL_ATTN_MODE_DECODE, 1, v_q_device, 'f', SGL_ATTN_E_INVALID},
    {"k-cache-dim", SGL_ATTN_MODE_DECODE, 1, v_kcache_dim, 'f', SGL_ATTN_E_INVALID},
    {"v-cache-slots", SGL_ATTN_MODE_EXTEND, 1, v_vcache_slots, 'f', SGL_ATTN_E_INVALID},
    {"kv-heads", SGL_ATTN_MODE_DECODE, 1, v_kv_heads, 'f', SGL_ATTN_E_INVALID},
    {"layer-id", SGL_ATTN_MODE_DECODE, 1, v_layer_id, 'f', SGL_ATTN_E_INVALID},
    {"sm-scale", SGL_ATTN_MODE_EXTEND, 1, v_sm_scale, 'f', SGL_ATTN_E_INVALID},
    {"softcap-unclaimed", SGL_ATTN_MODE_DECODE, 1, v_softcap_unclaimed, 'f', SGL_ATTN_E_INVALID},
    {"window-unclaimed", SGL_ATTN_MODE_EXTEND, 1, v_window_unclaimed, 'f', SGL_ATTN_E_INVALID},
    {"head-dim-unclaimed", SGL_ATTN_MODE_DECODE, 1, v_head_dim_unclaimed, 'f', SGL_ATTN_E_INVALID},
    {"dual-chunk-unclaimed", SGL_ATTN_MODE_DECODE, 1, v_dual_chunk_unclaimed, 'f', SGL_ATTN_E_INVALID},
    {"k-null", SGL_ATTN_MODE_DECODE, 1, v_k_null, 'f', SGL_ATTN_E_INVALID},
    {"args-struct-size", SGL_ATTN_MODE_EXTEND, 1, v_args_struct, 'f', SGL_ATTN_E_INVALID},
    {"extend-batch-via-decode", SGL_ATTN_MODE_EXTEND, 1, v_wrong_entry, 'w', SGL_ATTN_E_INVALID},
};

static void run_violation(const violation *v, uint64_t *seed) {
    for (int attempt = 0; attempt < 32; attempt++) {
        fx f;
        fx_shape s = random_shape(seed, v->mode, v->page);
        assert_int_equal(fx_build(&f, &s, fx_rand(seed)), 0);
        char expect[320] = "";
        if (!v->apply(&f, expect, sizeof expect)) {
            fx_free(&f);
            continue;
        }
        fake_inner inner;
        sgl_attn_backend *b = make_layer(&f, &inner, 0);
        int rc = b->ops->init_forward_metadata(b, &f.batch);
        if (v->stage == 'i') {
            if (rc != v->rc) fprintf(stderr, "%s: init answered %d, expected %d\n", v->name, rc, v->rc);
            assert_int_equal(rc, v->rc);
            assert_int_equal(inner.n_init, 0);
        } else {
            if (rc) fprintf(stderr, "%s: init refused: %s\n", v->name, b->ops->last_error(b));
            assert_int_equal(rc, SGL_ATTN_OK);
            assert_int_equal(inner.n_init, 1);
            rc = v->stage == 'w' ? b->ops->forward_decode(b, &f.args) : run_forward(b, &f);
            assert_int_equal(rc, v->rc);
            assert_int_equal(inner.n_decode + inner.n_extend, 0);
        }
        const char *msg = b->ops->last_error(b);
        if (!strstr(msg, expect)) fail_msg("%s: last_error \"%s\" lacks \"%s\"", v->name, msg, expect);
        b->ops->destroy(b);
        assert_int_equal(inner.n_destroy, 0); /* the host destroys each layer itself */
        fx_free(&f);
        return;
    }
    fail_msg("%s: no batch drawn had anything to corrupt", v->name);
}

static void test_each_violation(void **state) {
    uint64_t seed = *(uint64_t *)*state;
    for (size_t i = 0; i < sizeof violations / sizeof violations[0]; i++)
        run_violation(&violations[i], &seed);
}

/* No false alarms: random valid batches of every mode, page size and index
 * dtype pass and reach the inner, which runs each call once. */
static void test_valid_batches_pass(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x5eed;
    static const int32_t pages[] = {1, 2, 4, 16};
    for (int it = 0; it < 200; it++) {
        int mode = it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE;
        fx_shape s = random_shape(&seed, mode, pages[fx_range(&seed, 0, 3)]);
        fx f;
        assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
        fake_inner inner;
        sgl_attn_backend *b = make_layer(&f, &inner, it % 3 == 0);
        int rc = b->ops->init_forward_metadata(b, &f.batch);
        if (rc) fail_msg("valid batch refused: %s", b->ops->last_error(b));
        int layers = fx_range(&seed, 1, f.model.num_layers);
        for (int l = 0; l < layers; l++) {
            f.layer.layer_id = l;
            rc = run_forward(b, &f);
            if (rc) fail_msg("valid forward refused: %s", b->ops->last_error(b));
        }
        assert_int_equal(inner.n_init, 1);
        assert_int_equal(inner.n_decode + inner.n_extend, layers);
        assert_string_equal(b->ops->last_error(b), "");
        b->ops->destroy(b);
        fx_free(&f);
    }
}

/* Device-resident index tensors are never read (a bogus pointer would
 * crash under ASan); their values are checked through the host mirrors. */
static void test_device_tensors_use_mirrors(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0xde71ce;
    fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 4);
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    DLTensor *dev[] = {&f.t_rtt, &f.t_rpi, &f.t_seq, &f.t_ocl, &f.t_pos, &f.t_q,
                       &f.t_k,   &f.t_v,   &f.t_out, &f.t_kc,  &f.t_vc};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) {
        dev[i]->device.device_type = kDLCUDA;
        /* never dereferenced; apart, as real allocations are (aliasing is checked) */
        dev[i]->data = (void *)(uintptr_t)(0x100000000ull * (i + 1));
    }
    fake_inner inner;
    sgl_attn_backend *b = make_layer(&f, &inner, 0);
    int rc = b->ops->init_forward_metadata(b, &f.batch);
    if (rc) fail_msg("device batch refused: %s", b->ops->last_error(b));
    assert_int_equal(run_forward(b, &f), SGL_ATTN_OK);
    assert_int_equal(inner.n_decode, 1);
    /* The mirror still catches a length sum that does not add up. */
    f.batch.seq_lens_sum += fx_range(&seed, 1, 50);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "but batch->seq_lens_cpu sums to"));
    /* A mirror must be in host memory. */
    f.batch.seq_lens_sum = 0;
    for (int32_t i = 0; i < f.s.bs; i++)
        f.batch.seq_lens_sum += fx_get(&f.t_seq_cpu, i);
    f.t_seq_cpu.device.device_type = kDLCUDA;
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "batch->seq_lens_cpu is on device cuda"));
    assert_int_equal(inner.n_init, 1);
    b->ops->destroy(b);
    fx_free(&f);
}


/* What a call writes must not share memory with what it reads: out over a
 * pool, over q; the two pools over each other; a pool being written over
 * the new keys.  Each refused naming both, the inner never called. */
static void test_aliasing(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0xa11a5;
    static const char *const want[] = {"out shares memory with layer->k_cache", "out shares memory with q",
                                       "layer->k_cache and layer->v_cache share memory",
                                       "layer->k_cache shares memory with k (the pool is written from it)"};
    for (int kind = 0; kind < 4; kind++) {
        fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 1);
        fx f;
        assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
        fake_inner inner;
        sgl_attn_backend *b = make_layer(&f, &inner, 0);
        assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
        DLTensor saved_out = f.t_out, saved_vc = f.t_vc, saved_k = f.t_k;
        /* Views over another tensor's memory, with their own (valid) shapes. */
        if (kind == 0) f.t_out.data = f.kc;
        else if (kind == 1) f.t_out.data = f.q;
        else if (kind == 2) f.t_vc.data = f.kc;
        else f.t_k.data = f.kc + (size_t)fx_range(&seed, 0, 3) * (size_t)s.d;
        int rc = run_forward(b, &f);
        if (rc != SGL_ATTN_E_INVALID || !strstr(b->ops->last_error(b), want[kind]))
            fail_msg("aliasing %d: rc %d, \"%s\"", kind, rc, b->ops->last_error(b));
        assert_int_equal(inner.n_decode, 0);
        f.t_out = saved_out, f.t_vc = saved_vc, f.t_k = saved_k;
        assert_int_equal(run_forward(b, &f), SGL_ATTN_OK); /* the control */
        b->ops->destroy(b);
        fx_free(&f);
    }
}

/* copy_device_indices: device index tensors read through the plugin's
 * device_ops (here a fake whose "device" memory is host memory), so their
 * entries get every check; without the option the same batch passes. */
static int fake_copies;
static int fake_to_host(int32_t device, void *dst, const void *src, size_t bytes) {
    (void)device;
    memcpy(dst, src, bytes);
    fake_copies++;
    return 0;
}
static int fake_nop(int32_t device, void *stream) {
    (void)device, (void)stream;
    return 0;
}

void sgl_attn_validate_set_device_ops(sgl_attn_backend *b, const sgl_attn_device_ops *ops);

static void test_copy_device_indices(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0xdec0;
    const sgl_attn_device_ops ops = {.struct_size = sizeof ops, .copy_to_host = fake_to_host, .synchronize = fake_nop};
    for (int on = 0; on < 2; on++) {
        fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 1);
        fx f;
        assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
        DLTensor *dev[] = {&f.t_rtt, &f.t_rpi, &f.t_seq, &f.t_ocl, &f.t_pos, &f.t_q,
                           &f.t_k,   &f.t_v,   &f.t_out, &f.t_kc,  &f.t_vc};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) dev[i]->device.device_type = kDLCUDA;
        f.batch.seq_lens_cpu = NULL; /* no mirror: only a copy can read the lengths */
        fake_inner inner;
        if (on) setenv("SGL_ATTN_VALIDATE_DEVICE", "1", 1);
        sgl_attn_backend *b = make_layer(&f, &inner, 0);
        unsetenv("SGL_ATTN_VALIDATE_DEVICE");
        if (on) {
            /* Without device_ops the option cannot copy: said, not ignored. */
            assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID);
            assert_non_null(strstr(b->ops->last_error(b), "no device_ops reached the layer"));
            sgl_attn_validate_set_device_ops(b, &ops);
        }
        fake_copies = 0;
        assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
        assert_true(on ? fake_copies >= 4 + s.bs : fake_copies == 0);
        int rcf = run_forward(b, &f);
        if (rcf) fail_msg("on %d: %s", on, b->ops->last_error(b));
        /* A slot the batch uses, negative, in the device req_to_token. */
        int64_t row = fx_get(&f.t_rpi, 0), keep = fx_rtt_get(&f, row, 0);
        fx_rtt_set(&f, row, 0, -7);
        int rc = b->ops->init_forward_metadata(b, &f.batch);
        if (on) {
            assert_int_equal(rc, SGL_ATTN_E_INVALID);
            assert_non_null(strstr(b->ops->last_error(b), "= -7 is a negative slot"));
            assert_non_null(strstr(b->ops->last_error(b), "read through host copies"));
        } else {
            assert_int_equal(rc, SGL_ATTN_OK); /* headers only: the device entries are not read */
        }
        /* A slot past the layer's pool (its declared shape): refused at the forward. */
        fx_rtt_set(&f, row, 0, keep);
        fx_set(&f.t_ocl, 0, f.slots + 5);
        rc = b->ops->init_forward_metadata(b, &f.batch);
        if (on) {
            /* out_cache_loc must equal its req_to_token entry: refused there, or at the pool. */
            assert_int_equal(rc, SGL_ATTN_E_INVALID);
            assert_non_null(strstr(b->ops->last_error(b), "batch->out_cache_loc[0]"));
        } else {
            assert_int_equal(rc, SGL_ATTN_OK);
        }
        b->ops->destroy(b);
        fx_free(&f);
    }
}

/* Call order: a forward needs the batch init_forward_metadata accepted. */
static void test_call_order(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x07de7;
    fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 1);
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    fake_inner inner;
    sgl_attn_backend *b = make_layer(&f, &inner, 0);
    assert_int_equal(b->ops->forward_decode(b, &f.args), SGL_ATTN_E_STATE);
    assert_non_null(strstr(b->ops->last_error(b),
                           "forward_decode: called before a successful init_forward_metadata"));
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    sgl_attn_batch copy = f.batch;
    f.args.batch = &copy;
    assert_int_equal(b->ops->forward_decode(b, &f.args), SGL_ATTN_E_STATE);
    assert_non_null(
        strstr(b->ops->last_error(b), "args->batch is not the batch given to init_forward_metadata"));
    /* A refused init forgets the batch it had accepted. */
    f.args.batch = &f.batch;
    f.batch.batch_size = 0;
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID);
    f.batch.batch_size = f.s.bs;
    assert_int_equal(b->ops->forward_decode(b, &f.args), SGL_ATTN_E_STATE);
    assert_int_equal(inner.n_init, 1);
    assert_int_equal(inner.n_decode, 0);
    b->ops->destroy(b);
    fx_free(&f);
}

/* The inner's own errors pass through untouched, and last_error is the
 * inner's again once a call reached it. */
static void test_inner_errors_pass_through(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x1a11e7;
    fx_shape s = random_shape(&seed, SGL_ATTN_MODE_EXTEND, 2);
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    fake_inner inner;
    sgl_attn_backend *b = make_layer(&f, &inner, 0);
    f.batch.batch_size = -fx_range(&seed, 1, 9);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), "batch->batch_size"));
    f.batch.batch_size = f.s.bs;
    inner.fail_init = 1;
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_E_DEVICE);
    assert_string_equal(b->ops->last_error(b), "fake: device lost");
    assert_int_equal(b->ops->forward_extend(b, &f.args), SGL_ATTN_E_STATE);
    inner.fail_init = 0;
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    assert_string_equal(b->ops->last_error(b), "");
    assert_int_equal(b->ops->forward_extend(b, &f.args), SGL_ATTN_OK);
    b->ops->destroy(b);
    fx_free(&f);
}

/* Optional entries mirror the inner's; graph and state calls are checked. */
static void test_optional_ops(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x0b7;
    fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 1);
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    fake_inner bare, full;
    sgl_attn_backend *b = make_layer(&f, &bare, 0);
    assert_null(b->ops->init_graph_state);
    assert_null(b->ops->state_clear);
    assert_null(b->ops->state_commit);
    assert_int_equal(b->ops_size, sizeof(sgl_attn_backend_ops));
    b->ops->destroy(b);

    b = make_layer(&f, &full, 1);
    assert_non_null(b->ops->init_graph_state);
    assert_null(b->ops->init_forward_metadata_replay);
    sgl_attn_graph_args g = {sizeof g, 1, 1, SGL_ATTN_MODE_DECODE, &f.batch, NULL};
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_E_INVALID);
    assert_non_null(
        strstr(b->ops->last_error(b), "init_forward_metadata_capture: called before init_graph_state"));
    int32_t over = f.max_reqs + fx_range(&seed, 1, 64);
    assert_int_equal(b->ops->init_graph_state(b, over, over), SGL_ATTN_E_INVALID);
    char want[128];
    snprintf(want, sizeof want, "max_bs = %d is outside 1..%d", (int)over, (int)f.max_reqs);
    assert_non_null(strstr(b->ops->last_error(b), want));
    int32_t gbs = fx_range(&seed, 1, f.max_reqs < f.max_tokens ? f.max_reqs : f.max_tokens);
    assert_int_equal(b->ops->init_graph_state(b, gbs, f.max_tokens), SGL_ATTN_OK);
    g.batch_size = gbs + 1;
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_E_INVALID);
    snprintf(want, sizeof want, "graph_args->batch_size = %d is outside 1..%d", (int)gbs + 1, (int)gbs);
    assert_non_null(strstr(b->ops->last_error(b), want));
    g.batch_size = gbs;
    g.num_tokens = gbs;
    assert_int_equal(b->ops->init_forward_metadata_capture(b, &g), SGL_ATTN_OK);
    int32_t slot = -fx_range(&seed, 1, 99);
    assert_int_equal(b->ops->state_clear(b, slot), SGL_ATTN_E_INVALID);
    snprintf(want, sizeof want, "state_clear: slot = %d is outside the state pool's 0..%d", (int)slot,
             (int)f.max_reqs - 1);
    assert_non_null(strstr(b->ops->last_error(b), want));
    assert_int_equal(b->ops->state_clear(b, f.max_reqs - 1), SGL_ATTN_OK);
    assert_int_equal(full.n_graph, 2);
    assert_int_equal(full.n_state, 1);
    b->ops->destroy(b);
    assert_int_equal(full.n_destroy, 0);
    fx_free(&f);
}

/* create refuses what it cannot wrap, with the reason. */
static void test_create_refusals(void **state) {
    (void)state;
    const sgl_attn_plugin *p = validate_plugin();
    fx f;
    uint64_t seed = 7;
    fx_shape s = random_shape(&seed, SGL_ATTN_MODE_DECODE, 1);
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    char err[256] = "";
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &f.model;
    a.max_reqs = a.max_tokens = a.max_context = 8;
    a.inner_caps = &f.caps;
    a.error = err;
    a.error_size = sizeof err;
    sgl_attn_backend *b = (sgl_attn_backend *)&a; /* must be reset to NULL */
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_null(b);
    assert_non_null(strstr(err, "needs create_args.inner"));
    fake_inner inner;
    fake_make(&inner, 0);
    inner.ops.struct_size = (uint32_t)offsetof(sgl_attn_backend_ops, forward_decode);
    a.inner = &inner.base;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "vtable is too small"));
    fake_make(&inner, 0);
    a.max_context = 0;
    assert_int_equal(p->create(&a, &b), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "max_context"));
    fx_free(&f);
}

/* Corrupt one random index element of a valid batch to a random value, many
 * times: each call is either refused with a message or passed on, never a
 * crash, never a read outside the tensors (ASan run). */
static void test_random_corruption_never_crashes(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0xc0ffee;
    int refused = 0, total = 400;
    for (int it = 0; it < total; it++) {
        fx_shape s = random_shape(&seed, it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE,
                                  1 << fx_range(&seed, 0, 3));
        fx f;
        assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
        DLTensor *ts[] = {&f.t_rtt, &f.t_rpi, &f.t_seq, &f.t_seq_cpu,
                          &f.t_pre, &f.t_ext, &f.t_ocl, &f.t_pos};
        DLTensor *t = ts[fx_range(&seed, 0, 7)];
        int64_t n = t->ndim == 2 ? t->shape[0] * t->shape[1] : t->shape[0];
        static const int64_t wild[] = {-1, 0, 1, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 4096};
        int64_t val =
            fx_range(&seed, 0, 1) ? wild[fx_range(&seed, 0, 7)] : (int64_t)(fx_rand(&seed) >> 40);
        fx_set(t, fx_range(&seed, 0, (int32_t)n - 1), val);
        fake_inner inner;
        sgl_attn_backend *b = make_layer(&f, &inner, 0);
        int rc = b->ops->init_forward_metadata(b, &f.batch);
        if (rc == SGL_ATTN_OK) rc = run_forward(b, &f);
        if (rc) {
            refused++;
            assert_int_equal(rc, SGL_ATTN_E_INVALID);
            assert_true(strlen(b->ops->last_error(b)) > 10);
            assert_int_equal(inner.n_decode + inner.n_extend, 0);
        }
        b->ops->destroy(b);
        fx_free(&f);
    }
    /* Most single corruptions hit something that is read. */
    assert_true(refused > total / 4);
    fprintf(stderr, "# %d of %d random corruptions refused, none crashed\n", refused, total);
}

int main(void) {
    uint64_t seed = fx_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_each_violation, &seed),
        cmocka_unit_test_prestate(test_valid_batches_pass, &seed),
        cmocka_unit_test_prestate(test_device_tensors_use_mirrors, &seed),
        cmocka_unit_test_prestate(test_call_order, &seed),
        cmocka_unit_test_prestate(test_aliasing, &seed),
        cmocka_unit_test_prestate(test_copy_device_indices, &seed),
        cmocka_unit_test_prestate(test_inner_errors_pass_through, &seed),
        cmocka_unit_test_prestate(test_optional_ops, &seed),
        cmocka_unit_test_prestate(test_create_refusals, &seed),
        cmocka_unit_test_prestate(test_random_corruption_never_crashes, &seed),
    };
    return cmocka_run_group_tests_name("validate", tests, NULL, NULL);
}
