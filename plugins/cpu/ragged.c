/* ragged.c - forward_ragged (ABI 1.2, SGL_ATTN_FEAT_RAGGED): attention over
 * K/V passed as tensors, with cu_seqlens, neither read from the pool nor
 * written to it (DeepSeek's MLA prefill: qk 192 / v 128 per prefix chunk,
 * chunks merged by their LSE).  It runs on the paged loops: request i's keys
 * are rows cu_seqlens_k[i].. of k / v, addressed directly (job.r2t NULL);
 * causal is bottom-right (query j of q_len sits at position k_len - q_len +
 * j), the non-causal form sees all k_len keys, as cross attention does.
 * The call plans into its own half of reqs, so the batch planned by
 * init_forward_metadata stays valid for the paged forwards around it. */
#include <math.h>
#include <stdio.h>

#include "cpu_ref.h"

#define WHERE "forward_ragged: "

/* cu_seqlens[0..bs]: 0 first, never decreasing; its mirror, when given, the same. */
static int check_cu(cref_backend *b, const DLTensor *t, const DLTensor *mirror, const char *name, int64_t bs) {
    char what[64];
    snprintf(what, sizeof what, WHERE "%s", name);
    int rc = cref_check(b, t, what, "batch_size + 1", 0, 0, 1, bs + 1, 0, 0);
    if (rc) return rc;
    const void *p = sgl_sdk_data(t);
    const int is64 = t->dtype.bits == 64;
    for (int64_t i = 0; i <= bs; i++) {
        const int64_t v = sgl_sdk_idx(p, is64, i), prev = i ? sgl_sdk_idx(p, is64, i - 1) : 0;
        if ((i == 0 && v != 0) || v < prev || v - prev > INT32_MAX) {
            cref_set_error(b, WHERE "%s[%lld] = %lld after %lld; expected %s", name, (long long)i, (long long)v,
                           (long long)prev,
                           i == 0 ? "0 first" : "offsets that never decrease (each request's length >= 0)");
            return SGL_ATTN_E_INVALID;
        }
    }
    if (!mirror) return SGL_ATTN_OK;
    snprintf(what, sizeof what, WHERE "%s_cpu", name);
    if ((rc = cref_check(b, mirror, what, "batch_size + 1", 0, 0, 1, bs + 1, 0, 0))) return rc;
    for (int64_t i = 0; i <= bs; i++) {
        const int64_t m = sgl_sdk_idx(sgl_sdk_data(mirror), mirror->dtype.bits == 64, i), v = sgl_sdk_idx(p, is64, i);
        if (m != v) {
            cref_set_error(b, WHERE "%s_cpu[%lld] = %lld but %s says %lld", name, (long long)i, (long long)m, name,
                           (long long)v);
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}

static int check_shape(cref_backend *b, const sgl_attn_ragged_args *a) {
    if (a->batch_size < 0 || a->batch_size > b->max_reqs) {
        cref_set_error(b, WHERE "batch_size = %d; expected 0..%d (create's max_reqs)", a->batch_size, b->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (a->num_q_heads < 1 || a->num_kv_heads < 1 || a->num_q_heads % a->num_kv_heads) {
        cref_set_error(b, WHERE "num_q_heads %d, num_kv_heads %d; expected >= 1 and q a multiple of kv",
                       a->num_q_heads, a->num_kv_heads);
        return SGL_ATTN_E_INVALID;
    }
    if (a->head_dim_qk < 1 || a->head_dim_v < 1 || a->head_dim_qk > b->max_dqk || a->head_dim_v > b->max_dv) {
        cref_set_error(b, WHERE "head_dim_qk %d, head_dim_v %d; expected 1..%d, 1..%d (the model's head dims, "
                                "which create sized this backend's scratch for)",
                       a->head_dim_qk, a->head_dim_v, b->max_dqk, b->max_dv);
        return SGL_ATTN_E_INVALID;
    }
    if (a->num_q_heads / a->num_kv_heads > b->rows_cap) {
        cref_set_error(b, WHERE "%d q heads per kv head exceed the %d rows create sized scratch for",
                       a->num_q_heads / a->num_kv_heads, b->rows_cap);
        return SGL_ATTN_E_INVALID;
    }
    if (!isfinite(a->sm_scale) || !isfinite(a->logit_softcap) || a->logit_softcap < 0 ||
        (a->causal != 0 && a->causal != 1)) {
        cref_set_error(b, WHERE "sm_scale %g, logit_softcap %g, causal %d; expected finite numbers, softcap >= 0, "
                                "causal 0 or 1",
                       (double)a->sm_scale, (double)a->logit_softcap, a->causal);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

/* max_seqlen (0 = not given) against the longest length of cu_seqlens. */
static int check_max(cref_backend *b, const char *name, int32_t given, int64_t longest) {
    if (given == 0 || (given > 0 && given >= longest)) return SGL_ATTN_OK;
    cref_set_error(b, WHERE "%s = %d but a request has %lld tokens; expected 0 (unknown) or at least that", name,
                   given, (long long)longest);
    return SGL_ATTN_E_INVALID;
}

int cref_forward_ragged(cref_backend *b, const sgl_attn_ragged_args *a) {
    if (!a) {
        cref_set_error(b, WHERE "args are NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (!SGL_ATTN_HAS_FIELD(sgl_attn_ragged_args, a, stream)) {
        cref_set_error(b, WHERE "args struct_size %u < %zu (ABI 1.2's sgl_attn_ragged_args)", a->struct_size,
                       offsetof(sgl_attn_ragged_args, stream) + sizeof a->stream);
        return SGL_ATTN_E_INVALID;
    }
    int rc;
    if ((rc = check_shape(b, a))) return rc;
    const int64_t bs = a->batch_size, hq = a->num_q_heads, hkv = a->num_kv_heads;
    const int64_t dqk = a->head_dim_qk, dv = a->head_dim_v;
    if ((rc = check_cu(b, a->cu_seqlens_q, a->cu_seqlens_q_cpu, "cu_seqlens_q", bs))) return rc;
    if ((rc = check_cu(b, a->cu_seqlens_k, a->cu_seqlens_k_cpu, "cu_seqlens_k", bs))) return rc;
    const void *cq = sgl_sdk_data(a->cu_seqlens_q), *ck = sgl_sdk_data(a->cu_seqlens_k);
    const int q64 = a->cu_seqlens_q->dtype.bits == 64, k64 = a->cu_seqlens_k->dtype.bits == 64;
    const int64_t Tq = sgl_sdk_idx(cq, q64, bs), Tk = sgl_sdk_idx(ck, k64, bs);
    if (Tq > b->max_tokens) {
        cref_set_error(b, WHERE "cu_seqlens_q[%lld] = %lld query tokens; expected at most %d (create's max_tokens)",
                       (long long)bs, (long long)Tq, b->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    int64_t long_q = 0, long_k = 0;
    for (int64_t i = 0; i < bs; i++) {
        const int64_t lq = sgl_sdk_idx(cq, q64, i + 1) - sgl_sdk_idx(cq, q64, i);
        const int64_t lk = sgl_sdk_idx(ck, k64, i + 1) - sgl_sdk_idx(ck, k64, i);
        long_q = lq > long_q ? lq : long_q;
        long_k = lk > long_k ? lk : long_k;
    }
    if ((rc = check_max(b, "max_seqlen_q", a->max_seqlen_q, long_q)) ||
        (rc = check_max(b, "max_seqlen_k", a->max_seqlen_k, long_k)))
        return rc;
    /* q may be a strided view (rows contiguous), like the paged forward's */
    const sgl_sdk_tensor_spec qs = {WHERE "q", "cu_seqlens_q[bs], num_q_heads, head_dim_qk", 3, {Tq, hq, dqk, 0},
                                    CREF_DTYPES, SGL_SDK_DEV_HOST, -1, SGL_SDK_T_MERGED | SGL_SDK_T_ROWS, 0};
    if ((rc = sgl_sdk_check_tensor(a->q, &qs, b->err, sizeof b->err))) return rc;
    if ((rc = cref_check(b, a->k, WHERE "k", "cu_seqlens_k[bs], num_kv_heads, head_dim_qk", CREF_DTYPES,
                         SGL_SDK_T_MERGED, 3, Tk, hkv, dqk)) ||
        (rc = cref_check(b, a->v, WHERE "v", "cu_seqlens_k[bs], num_kv_heads, head_dim_v", CREF_DTYPES,
                         SGL_SDK_T_MERGED, 3, Tk, hkv, dv)) ||
        (rc = cref_check(b, a->out, WHERE "out", "cu_seqlens_q[bs], num_q_heads, head_dim_v", CREF_DTYPES,
                         SGL_SDK_T_MERGED | SGL_SDK_T_WRITTEN, 3, Tq, hq, dv)))
        return rc;
    const uint32_t q_dt = sgl_attn_dtype_bit(a->q->dtype), k_dt = sgl_attn_dtype_bit(a->k->dtype);
    const uint32_t v_dt = sgl_attn_dtype_bit(a->v->dtype), out_dt = sgl_attn_dtype_bit(a->out->dtype);
    if (k_dt != v_dt) {
        char b1[SGL_SDK_NAME_MAX], b2[SGL_SDK_NAME_MAX];
        cref_set_error(b, WHERE "k is %s but v is %s; expected one dtype for k and v",
                       sgl_sdk_dtype_name(a->k->dtype, b1), sgl_sdk_dtype_name(a->v->dtype, b2));
        return SGL_ATTN_E_INVALID;
    }
    const int n64 = (q_dt == SGL_ATTN_DT_F64) + (k_dt == SGL_ATTN_DT_F64) + (out_dt == SGL_ATTN_DT_F64);
    if (n64 != 0 && n64 != 3) {
        cref_set_error(b, WHERE "some of q, k / v, out are f64 and some not; the f64 path needs all f64");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const DLTensor *lse = SGL_ATTN_FIELD_OR_0(sgl_attn_ragged_args, a, lse);
    if ((rc = cref_lse_check(b, lse, WHERE "lse", Tq, hq))) return rc;
    if (bs == 0 || Tq == 0) return SGL_ATTN_OK;

    /* the plan, in the second half of reqs; the batch's plan is put back after */
    cref_req *const batch_reqs = b->reqs, *const reqs = b->reqs + b->max_reqs;
    const int32_t saved_mode = b->mode, saved_n = b->n_reqs, saved_T = b->num_tokens, saved_tpr = b->tokens_per_req;
    const int32_t saved_kv = b->max_kv_len, saved_enc = b->max_enc;
    int32_t max_k = 0;
    for (int64_t i = 0; i < bs; i++) {
        cref_req *r = &reqs[i];
        const int64_t q0 = sgl_sdk_idx(cq, q64, i), k0 = sgl_sdk_idx(ck, k64, i);
        const int32_t lq = (int32_t)(sgl_sdk_idx(cq, q64, i + 1) - q0), lk = (int32_t)(sgl_sdk_idx(ck, k64, i + 1) - k0);
        r->row = k0; /* key c is row k0 + c of k / v */
        r->seq_len = lk;
        r->n_new = lq;
        r->prefix = a->causal ? lk - lq : 0; /* bottom-right; a query before key 0 sees none */
        r->enc = a->causal ? 0 : lk;         /* non-causal: every key, as cross attention */
        r->tok0 = (int32_t)q0;
        max_k = lk > max_k ? lk : max_k;
    }
    cref_job *J = &b->job;
    J->hq = (int32_t)hq;
    J->hkv = (int32_t)hkv;
    J->group = (int32_t)(hq / hkv);
    J->dqk = (int32_t)dqk;
    J->dv = (int32_t)dv;
    J->cross = !a->causal;
    J->window = -1;
    J->scale = a->sm_scale;
    J->softcap = a->logit_softcap;
    J->sinks = NULL;
    J->q_dt = q_dt;
    J->out_dt = out_dt;
    J->kv_dt = k_dt;
    J->q = sgl_sdk_data(a->q);
    int64_t st[SGL_SDK_MAX_DIMS];
    sgl_sdk_strides(a->q, &qs, st);
    J->q_ts = st[0];
    J->q_hs = st[1];
    J->out = (unsigned char *)(uintptr_t)sgl_sdk_data(a->out);
    J->k_cache = sgl_sdk_data(a->k);
    J->v_cache = sgl_sdk_data(a->v);
    J->k_slot = hkv * dqk;
    J->v_slot = hkv * dv;
    J->v_head = dv;
    J->r2t = NULL; /* direct: slot = row + key */
    J->r2t_64 = 0;
    J->r2t_cols = 1;
    J->pool_slots = Tk;
    J->bad = &b->bad;
    J->reqs = reqs;
    J->n_reqs = (int32_t)bs;
    J->rows_cap = b->rows_cap;
    J->partial = b->partial;
    J->bf16dot = b->bf16dot;
    J->v_mul = J->k_div = J->v_div = 1;
    J->dq_lat = (int32_t)dqk;
    J->q_rope = J->k_rope = NULL;
    /* the paged forwards' ABI 1.2 inputs (layer_engine.c) do not apply: plain causal loops */
    J->plain = 1;
    J->vis = SGL_ATTN_TYPE_CAUSAL;
    J->direct = 0;
    J->pages = NULL;
    J->page_size = 0;
    J->slot_map = NULL;
    J->map_64 = 0;
    J->map_len = 0;
    J->mask = NULL;
    b->enc_only = 0;
    b->reqs = reqs;
    b->mode = SGL_ATTN_MODE_EXTEND;
    b->n_reqs = (int32_t)bs;
    b->num_tokens = (int32_t)Tq;
    b->tokens_per_req = 0;
    b->max_kv_len = b->max_enc = max_k;
    b->save = 0;
    atomic_store_explicit(&b->bad.set, 0, memory_order_relaxed);
    cref_plan_items(b);
    rc = b->n_items ? cref_run_items(b) : SGL_ATTN_OK;
    b->reqs = batch_reqs;
    b->mode = saved_mode;
    b->n_reqs = saved_n;
    b->num_tokens = saved_T;
    b->tokens_per_req = saved_tpr;
    b->max_kv_len = saved_kv;
    b->max_enc = saved_enc;
    b->n_items = 0;
    return rc;
}
