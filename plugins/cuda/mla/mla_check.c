/* mla_check.c - see mla_check.h. */
#include "mla_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int mla_dtype_of(DLDataType t) {
    if (t.lanes != 1) return -1;
    if (t.code == kDLBfloat && t.bits == 16) return MLA_DT_BF16;
    if (t.code == kDLFloat && t.bits == 16) return MLA_DT_F16;
    if (t.code == SGL_ATTN_DL_FLOAT8_E4M3_CODE && t.bits == 8) return MLA_DT_FP8;
    return -1;
}

const char *mla_dtype_name(int dt) {
    switch (dt) {
    case MLA_DT_BF16: return "bf16";
    case MLA_DT_F16: return "f16";
    case MLA_DT_FP8: return "fp8_e4m3";
    default: return "?";
    }
}

static const char *dl_name(DLDataType t, char *buf, size_t n) {
    int d = mla_dtype_of(t);
    if (d >= 0) return mla_dtype_name(d);
    const char *k = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float"
                  : t.code == kDLBfloat ? "bfloat" : "code";
    snprintf(buf, n, "%s%u%s", k, (unsigned)t.bits, t.lanes != 1 ? "xN" : "");
    return buf;
}

int64_t mla_numel(const DLTensor *t) {
    if (!t || t->ndim < 0 || (t->ndim > 0 && !t->shape)) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return -1;
        if (t->shape[i] > 0 && n > INT64_MAX / t->shape[i]) return -1;
        n *= t->shape[i];
    }
    return n;
}

int64_t mla_host_index(const DLTensor *t, int64_t i) {
    if (!t || !t->data) return 0;
    const char *p = (const char *)t->data + t->byte_offset;
    if (t->dtype.bits == 64) return ((const int64_t *)p)[i];
    return ((const int32_t *)p)[i];
}

static void shape_str(const DLTensor *t, char *buf, size_t n) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < t->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* Compact row-major strides (or NULL). */
static int compact(const DLTensor *t) {
    if (!t->strides) return 1;
    int64_t want = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != want) return 0;
        want *= t->shape[i];
    }
    return 1;
}

/* A device tensor: shape (expected dims, -1 = any), CUDA device, compact, data. */
static int check_tensor(const char *name, const DLTensor *t, int ndim, const int64_t *want,
                        const char *want_txt, int32_t device, int align, char *err, size_t n) {
    char sh[96];
    if (!t) {
        snprintf(err, n, "%s: NULL tensor; expected %s", name, want_txt);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim != ndim || mla_numel(t) < 0) {
        if (t->ndim >= 0 && t->ndim <= 8 && (t->ndim == 0 || t->shape)) shape_str(t, sh, sizeof sh);
        else snprintf(sh, sizeof sh, "(ndim %d)", t->ndim);
        snprintf(err, n, "%s: shape %s; expected %s", name, sh, want_txt);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; i < ndim; i++)
        if (want && want[i] >= 0 && t->shape[i] != want[i]) {
            shape_str(t, sh, sizeof sh);
            snprintf(err, n, "%s: shape %s; expected %s", name, sh, want_txt);
            return SGL_ATTN_E_INVALID;
        }
    if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged) {
        snprintf(err, n, "%s: on DLPack device type %d; expected CUDA device %d", name,
                 (int)t->device.device_type, device);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_id != device) {
        snprintf(err, n, "%s: on CUDA device %d; this backend runs on device %d", name,
                 t->device.device_id, device);
        return SGL_ATTN_E_INVALID;
    }
    if (!compact(t)) {
        snprintf(err, n, "%s: strided layout; cuda_mla reads compact row-major tensors only", name);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (!t->data && mla_numel(t) > 0) {
        snprintf(err, n, "%s: data is NULL", name);
        return SGL_ATTN_E_INVALID;
    }
    uintptr_t addr = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    if (align > 1 && addr % (uintptr_t)align) {
        snprintf(err, n, "%s: address %p is not %d-byte aligned", name, (void *)addr, align);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int index_tensor(const char *name, const DLTensor *t, int ndim, const int64_t *want,
                        const char *want_txt, int32_t device, mla_index *ix, char *err, size_t n) {
    int rc = check_tensor(name, t, ndim, want, want_txt, device, 1, err, n);
    if (rc) return rc;
    if (t->dtype.code != kDLInt || (t->dtype.bits != 32 && t->dtype.bits != 64) || t->dtype.lanes != 1) {
        char b[32];
        snprintf(err, n, "%s: dtype %s; expected int32 or int64", name, dl_name(t->dtype, b, sizeof b));
        return SGL_ATTN_E_INVALID;
    }
    ix->p = (const int32_t *)((const char *)t->data + t->byte_offset);
    ix->n = mla_numel(t);
    ix->shift = t->dtype.bits == 64;
    ix->reserved_ = 0;
    return SGL_ATTN_OK;
}

int mla_check_layer(const sgl_attn_layer *l, char *err, size_t n) {
    if (!l) {
        snprintf(err, n, "layer: NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (l->head_dim_qk != MLA_D_QK || l->head_dim_v != MLA_D_V) {
        snprintf(err, n,
                 "layer %d: head dims (qk %d, v %d); cuda_mla serves absorbed MLA with qk 576 "
                 "(kv_lora_rank 512 + rope 64) and v 512",
                 l->layer_id, l->head_dim_qk, l->head_dim_v);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (l->num_kv_heads != 1) {
        snprintf(err, n, "layer %d: num_kv_heads %d; absorbed MLA has one latent KV head", l->layer_id,
                 l->num_kv_heads);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (l->num_q_heads < 1 || l->num_q_heads > 65535) {
        snprintf(err, n, "layer %d: num_q_heads %d; expected 1..65535", l->layer_id, l->num_q_heads);
        return SGL_ATTN_E_INVALID;
    }
    if (!(l->sm_scale > 0.f) || !isfinite(l->sm_scale)) {
        snprintf(err, n, "layer %d: sm_scale %g; expected a finite value > 0", l->layer_id,
                 (double)l->sm_scale);
        return SGL_ATTN_E_INVALID;
    }
    if (l->logit_softcap != 0.f) {
        snprintf(err, n, "layer %d: logit_softcap %g: cuda_mla has no soft-cap", l->layer_id,
                 (double)l->logit_softcap);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (l->sliding_window >= 0) {
        snprintf(err, n, "layer %d: sliding_window %d: cuda_mla has no sliding window", l->layer_id,
                 l->sliding_window);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (l->sinks) {
        snprintf(err, n, "layer %d: sinks given: cuda_mla has no attention sinks", l->layer_id);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (l->is_cross) {
        snprintf(err, n, "layer %d: cross attention: cuda_mla serves decoder self-attention only",
                 l->layer_id);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int mla_check_forward(const sgl_attn_forward_args *a, int32_t device, int32_t t_planned,
                      int32_t bs_planned, mla_fwd_view *v, char *err, size_t n) {
    char want[160];
    if (!a || !a->batch) {
        snprintf(err, n, "forward: %s is NULL", a ? "batch" : "args");
        return SGL_ATTN_E_INVALID;
    }
    if (a->linear) {
        snprintf(err, n, "forward: linear-attention inputs given; cuda_mla is full (MLA) attention");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = mla_check_layer(a->layer, err, n);
    if (rc) return rc;
    const sgl_attn_layer *l = a->layer;
    const sgl_attn_batch *b = a->batch;
    memset(v, 0, sizeof *v);
    v->hq = l->num_q_heads;
    v->t = t_planned;
    if (b->num_tokens != t_planned || b->batch_size != bs_planned) {
        snprintf(err, n,
                 "forward: batch has %d token(s) / %d request(s) but init_forward_metadata planned "
                 "%d / %d (call it again for this batch)",
                 b->num_tokens, b->batch_size, t_planned, bs_planned);
        return SGL_ATTN_E_STATE;
    }

    const int64_t qs[3] = {t_planned, l->num_q_heads, MLA_D_QK};
    snprintf(want, sizeof want, "[T=%d, Hq=%d, 576] (absorbed MLA q: rank 512 + rope 64)", t_planned,
             l->num_q_heads);
    if ((rc = check_tensor("q", a->q, 3, qs, want, device, 16, err, n))) return rc;
    v->q_dt = mla_dtype_of(a->q->dtype);
    if (v->q_dt != MLA_DT_BF16 && v->q_dt != MLA_DT_F16) {
        char bb[32];
        snprintf(err, n, "q: dtype %s; expected bf16 or f16", dl_name(a->q->dtype, bb, sizeof bb));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    v->q = (const char *)a->q->data + a->q->byte_offset;

    const int64_t os[3] = {t_planned, l->num_q_heads, MLA_D_V};
    snprintf(want, sizeof want, "[T=%d, Hq=%d, 512]", t_planned, l->num_q_heads);
    if ((rc = check_tensor("out", a->out, 3, os, want, device, 16, err, n))) return rc;
    if (mla_dtype_of(a->out->dtype) != v->q_dt) {
        char bb[32];
        snprintf(err, n, "out: dtype %s; expected %s like q", dl_name(a->out->dtype, bb, sizeof bb),
                 mla_dtype_name(v->q_dt));
        return SGL_ATTN_E_INVALID;
    }
    v->out = (char *)a->out->data + a->out->byte_offset;

    const int64_t ks[3] = {-1, 1, MLA_D_QK};
    if ((rc = check_tensor("k_cache", l->k_cache, 3, ks, "[slots, 1, 576] (the latent pool)", device, 16,
                           err, n)))
        return rc;
    v->kv_dt = mla_dtype_of(l->k_cache->dtype);
    if (v->kv_dt != v->q_dt && v->kv_dt != MLA_DT_FP8) {
        char bb[32];
        snprintf(err, n, "k_cache: dtype %s; expected %s (like q) or fp8_e4m3",
                 dl_name(l->k_cache->dtype, bb, sizeof bb), mla_dtype_name(v->q_dt));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    v->num_slots = l->k_cache->shape[0];
    if (v->num_slots < 1 || v->num_slots > INT32_MAX) {
        snprintf(err, n, "k_cache: %lld slots; expected 1..%d", (long long)v->num_slots, INT32_MAX);
        return SGL_ATTN_E_INVALID;
    }
    v->pool = (char *)l->k_cache->data + l->k_cache->byte_offset;
    v->k_scale = 1.f;
    if (v->kv_dt == MLA_DT_FP8) {
        if (!(l->k_scale > 0.f) || !isfinite(l->k_scale)) {
            snprintf(err, n, "layer %d: k_scale %g for the fp8 pool; expected a finite value > 0",
                     l->layer_id, (double)l->k_scale);
            return SGL_ATTN_E_INVALID;
        }
        v->k_scale = l->k_scale;
    }
    v->scale_log2 = l->sm_scale * 1.4426950408889634f;

    const int64_t r2 = -1;
    (void)r2;
    if ((rc = index_tensor("req_to_token", b->req_to_token, 2, NULL, "[max_reqs, max_context]", device,
                           &v->req_to_token, err, n)))
        return rc;
    v->r2t_rows = b->req_to_token->shape[0];
    v->r2t_cols = b->req_to_token->shape[1];
    if (v->r2t_rows < 1 || v->r2t_cols < 1) {
        snprintf(err, n, "req_to_token: empty ([%lld, %lld])", (long long)v->r2t_rows,
                 (long long)v->r2t_cols);
        return SGL_ATTN_E_INVALID;
    }
    const int64_t ps[1] = {bs_planned};
    snprintf(want, sizeof want, "[bs=%d]", bs_planned);
    if ((rc = index_tensor("req_pool_indices", b->req_pool_indices, 1, ps, want, device,
                           &v->req_pool_indices, err, n)))
        return rc;

    if (a->save_kv_cache) {
        const int64_t kk[3] = {t_planned, 1, MLA_D_QK};
        snprintf(want, sizeof want, "[T=%d, 1, 576] (the new latent rows)", t_planned);
        if ((rc = check_tensor("k", a->k, 3, kk, want, device, 16, err, n))) return rc;
        if (mla_dtype_of(a->k->dtype) != v->q_dt) {
            char bb[32];
            snprintf(err, n, "k: dtype %s; expected %s like q", dl_name(a->k->dtype, bb, sizeof bb),
                     mla_dtype_name(v->q_dt));
            return SGL_ATTN_E_INVALID;
        }
        v->k = (const char *)a->k->data + a->k->byte_offset;
        const int64_t ls[1] = {t_planned};
        snprintf(want, sizeof want, "[T=%d]", t_planned);
        if ((rc = index_tensor("out_cache_loc", b->out_cache_loc, 1, ls, want, device, &v->loc, err, n)))
            return rc;
    }
    return SGL_ATTN_OK;
}

/* One length tensor (host memory, int32/int64, [bs]) into an int32 array. */
static int read_lens(const char *name, const DLTensor *t, int32_t bs, int64_t hi, int32_t *out,
                     char *err, size_t n) {
    if (!t) {
        snprintf(err, n, "%s: NULL (cuda_mla plans from the host mirror)", name);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim != 1 || !t->shape || t->shape[0] < bs || t->dtype.code != kDLInt ||
        (t->dtype.bits != 32 && t->dtype.bits != 64) || (!t->data && bs > 0)) {
        snprintf(err, n, "%s: expected a host int32/int64 tensor of >= %d elements", name, bs);
        return SGL_ATTN_E_INVALID;
    }
    for (int32_t i = 0; i < bs; i++) {
        int64_t v = mla_host_index(t, i);
        if (v < 0 || v > hi) {
            snprintf(err, n, "%s[%d] = %lld; expected 0..%lld", name, i, (long long)v, (long long)hi);
            return SGL_ATTN_E_INVALID;
        }
        out[i] = (int32_t)v;
    }
    return SGL_ATTN_OK;
}

int mla_batch_lengths(const sgl_attn_batch *b, int32_t max_reqs, int32_t max_tokens,
                      int32_t max_context, const DLTensor *seq_lens, const DLTensor *prefix_lens,
                      const DLTensor *extend_lens, int32_t *q_len, int32_t *prefix, char *err,
                      size_t n) {
    if (b->batch_size < 0 || b->batch_size > max_reqs) {
        snprintf(err, n, "batch_size %d; expected 0..%d (max_reqs given at create)", b->batch_size,
                 max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (b->num_tokens < 0 || b->num_tokens > max_tokens) {
        snprintf(err, n, "num_tokens %d; expected 0..%d (max_tokens given at create)", b->num_tokens,
                 max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    if (b->encoder_lens || b->encoder_lens_cpu) {
        snprintf(err, n, "encoder_lens given: cuda_mla has no encoder-decoder attention");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int32_t bs = b->batch_size;
    int rc;
    if (b->forward_mode == SGL_ATTN_MODE_DECODE || b->forward_mode == SGL_ATTN_MODE_TARGET_VERIFY) {
        int32_t tpr = b->tokens_per_req > 0 ? b->tokens_per_req : 1;
        if (b->forward_mode == SGL_ATTN_MODE_DECODE && tpr != 1 && (int64_t)bs * tpr != b->num_tokens) {
            snprintf(err, n, "decode: tokens_per_req %d with %d request(s) and %d token(s)", tpr, bs,
                     b->num_tokens);
            return SGL_ATTN_E_INVALID;
        }
        if ((int64_t)bs * tpr != b->num_tokens) {
            snprintf(err, n,
                     "%s: %d request(s) x tokens_per_req %d = %lld, but num_tokens = %d",
                     b->forward_mode == SGL_ATTN_MODE_DECODE ? "decode" : "verify", bs, tpr,
                     (long long)bs * tpr, b->num_tokens);
            return SGL_ATTN_E_INVALID;
        }
        if ((rc = read_lens("seq_lens_cpu", seq_lens, bs, max_context, prefix, err, n))) return rc;
        for (int32_t i = 0; i < bs; i++) {
            if (prefix[i] < tpr) {
                snprintf(err, n, "seq_lens_cpu[%d] = %d; expected >= %d (it includes the new token%s)", i,
                         prefix[i], tpr, tpr > 1 ? "s" : "");
                return SGL_ATTN_E_INVALID;
            }
            q_len[i] = tpr;
            prefix[i] -= tpr;
        }
        return SGL_ATTN_OK;
    }
    if (b->forward_mode != SGL_ATTN_MODE_EXTEND) {
        snprintf(err, n, "forward_mode %d; expected decode (2), target verify (3) or extend (1)",
                 b->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = read_lens("extend_prefix_lens_cpu", prefix_lens, bs, max_context, prefix, err, n))) return rc;
    if ((rc = read_lens("extend_seq_lens_cpu", extend_lens, bs, max_context, q_len, err, n))) return rc;
    int64_t sum = 0;
    for (int32_t i = 0; i < bs; i++) {
        if ((int64_t)prefix[i] + q_len[i] > max_context) {
            snprintf(err, n, "request %d: prefix %d + %d new token(s) exceeds max_context %d", i,
                     prefix[i], q_len[i], max_context);
            return SGL_ATTN_E_INVALID;
        }
        if (seq_lens && mla_host_index(seq_lens, i) != (int64_t)prefix[i] + q_len[i]) {
            snprintf(err, n, "seq_lens_cpu[%d] = %lld but extend_prefix_lens_cpu + extend_seq_lens_cpu = %d",
                     i, (long long)mla_host_index(seq_lens, i), prefix[i] + q_len[i]);
            return SGL_ATTN_E_INVALID;
        }
        sum += q_len[i];
    }
    if (sum != b->num_tokens) {
        snprintf(err, n, "extend_seq_lens_cpu adds up to %lld but num_tokens = %d", (long long)sum,
                 b->num_tokens);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}
