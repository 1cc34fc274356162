/* mla_check.c - see mla_check.h.  Tensors are checked by the SDK's tensor
 * specs: CUDA memory of the backend's device, compact, 16-byte aligned rows
 * where the kernels load 16 bytes at a time. */
#include "mla_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sdk_tensor.h"
#include "mla_sparse.h"

int mla_dtype_of(DLDataType t) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_BF16: return MLA_DT_BF16;
    case SGL_ATTN_DT_F16: return MLA_DT_F16;
    case SGL_ATTN_DT_FP8_E4M3: return MLA_DT_FP8;
    default: return -1;
    }
}

static uint32_t dt_bit(int dt) {
    return dt == MLA_DT_BF16 ? SGL_ATTN_DT_BF16 : dt == MLA_DT_F16 ? SGL_ATTN_DT_F16 : SGL_ATTN_DT_FP8_E4M3;
}

/* A tensor of the call: compact CUDA memory of `device`; dtypes 0 for an
 * index tensor; rows 16-byte aligned when align16. */
static int check(const DLTensor *t, const char *name, const char *meaning, int ndim, int64_t n0, int64_t n1,
                 int64_t n2, uint32_t dtypes, int32_t device, int align16, char *err, size_t n) {
    const sgl_sdk_tensor_spec s = {name, meaning, ndim, {n0, n1, n2, 0}, dtypes, SGL_SDK_DEV_CUDA, device,
                                   SGL_SDK_T_COMPACT | SGL_SDK_T_INT32, align16 ? 16u : 0u};
    return sgl_sdk_check_tensor(t, &s, err, n);
}

/* A [T, h, dims] tensor of CUDA memory of `device` with contiguous rows
 * (innermost stride 1) and token / head strides that are multiples of 8
 * elements (16-byte rows): compact, a slice of a wider buffer or a
 * transposed view, as sglang passes them.  Its strides in *ts / *hs. */
static int check_rows(const DLTensor *t, const char *name, const char *meaning, int64_t T, int64_t h, int64_t dims,
                      uint32_t dtypes, int32_t device, int64_t *ts, int64_t *hs, char *err, size_t n) {
    const sgl_sdk_tensor_spec s = {name, meaning, 3, {T, h, dims, 0}, dtypes, SGL_SDK_DEV_CUDA, device,
                                   SGL_SDK_T_ROWS | SGL_SDK_T_INT32, 16u};
    int rc = sgl_sdk_check_tensor(t, &s, err, n);
    if (rc) return rc;
    int64_t st[SGL_SDK_MAX_DIMS];
    sgl_sdk_strides(t, &s, st);
    if (st[0] < 0 || st[1] < 0) {
        snprintf(err, n, "%s: strides [%lld, %lld, 1]; expected strides >= 0", name, (long long)st[0],
                 (long long)st[1]);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    *ts = st[0];
    *hs = st[1];
    return SGL_ATTN_OK;
}

/* ABI 1.2 fp8 scales: k_scale_tensor ([1] or [] fp32, CUDA memory of
 * `device`, read by the kernels at the forward) for an fp8 pool, with
 * k_scale left at 1 (the tensor replaces it; its value lives on the device,
 * so the host cannot compare the two); no v_scale_tensor (MLA's value is the
 * latent row: k's scale); no q descale (q is bf16 / f16, never fp8). */
static int check_scales(const sgl_attn_layer *l, int fp8, int32_t device, const float **k_scale_t, char *err,
                        size_t n) {
    const DLTensor *kt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, k_scale_tensor);
    const DLTensor *vt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, v_scale_tensor);
    const DLTensor *qt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale_tensor);
    const float qd = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale);
    *k_scale_t = NULL;
    if (qt || (qd != 0.f && qd != 1.f)) {
        snprintf(err, n, "layer %d: layer.%s is set but q is bf16 / f16 here; a q descale dequantises an fp8 q",
                 l->layer_id, qt ? "q_descale_tensor" : "q_descale");
        return SGL_ATTN_E_INVALID;
    }
    if (vt) {
        snprintf(err, n, "layer %d: layer.v_scale_tensor is set on an MLA layer; its value lives in k_cache and "
                         "dequantises with k_scale",
                 l->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    if (!kt) return SGL_ATTN_OK;
    if (!fp8) {
        snprintf(err, n, "layer %d: layer.k_scale_tensor is set but the pool is not fp8; scale tensors dequantise an "
                         "fp8 pool",
                 l->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    if (l->k_scale != 1.f) {
        snprintf(err, n, "layer %d: k_scale = %g with layer.k_scale_tensor set: the tensor replaces the float, so "
                         "leave k_scale at 1",
                 l->layer_id, (double)l->k_scale);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_sdk_tensor_spec s = {"layer.k_scale_tensor", "one fp32 scale", kt->ndim == 0 ? 0 : 1, {1, 0, 0, 0},
                                   SGL_ATTN_DT_F32, SGL_SDK_DEV_CUDA, device, SGL_SDK_T_COMPACT, 4u};
    int rc = sgl_sdk_check_tensor(kt, &s, err, n);
    if (rc) return rc;
    *k_scale_t = (const float *)sgl_sdk_data(kt);
    return SGL_ATTN_OK;
}

/* FlashMLA's fp8 record pool (DSA sparse MLA only): layer.k_cache of uint8
 * [slots, 1, 656], compact, 16-byte rows on the device, with bf16 q and
 * neither k_scale nor a scale tensor (the record holds its own scales).
 * *rec 1: the pool is a record; 0: it is not (a 576-wide pool, checked by
 * the caller).  SGL_ATTN_OK, or a status with err saying why. */
static int check_record(const sgl_attn_layer *l, int sparse, int q_dt, int32_t device, int *rec, char *err,
                        size_t n) {
    const DLTensor *kc = l->k_cache;
    *rec = 0;
    if (!kc) return SGL_ATTN_OK;
    const DLDataType dt = kc->dtype;
    const int u8 = dt.code == kDLUInt && dt.bits == 8 && dt.lanes == 1;
    const int wide = kc->ndim == 3 && kc->shape && kc->shape[2] == MLA_REC_BYTES;
    if (!u8 && !wide) return SGL_ATTN_OK;
    if (!u8) {
        snprintf(err, n, "layer %d: k_cache [.., .., 656] of dtype code %d, %d bits: FlashMLA's fp8 record pool is "
                         "uint8 [slots, 1, 656] (512 e4m3 bytes, 4 fp32 scales, 64 bf16 RoPE values)",
                 l->layer_id, dt.code, dt.bits);
        return SGL_ATTN_E_INVALID;
    }
    if (!wide || kc->shape[1] != 1) {
        snprintf(err, n, "layer %d: k_cache is uint8 %s: FlashMLA's fp8 record pool is [slots, 1, 656] (512 e4m3 "
                         "bytes, 4 fp32 scales, 64 bf16 RoPE values)",
                 l->layer_id, kc->ndim == 3 && kc->shape ? "of another shape" : "but not 3-D");
        return SGL_ATTN_E_INVALID;
    }
    if (!sparse) {
        snprintf(err, n, "layer %d: k_cache is FlashMLA's fp8 record (uint8 [slots, 1, 656]): cuda_mla reads it in DSA "
                         "sparse MLA only (topk_indices given); dense MLA reads a [slots, 1, 576] pool",
                 l->layer_id);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (q_dt != MLA_DT_BF16) {
        snprintf(err, n, "layer %d: k_cache is FlashMLA's fp8 record, whose RoPE part is bf16, but q is f16; expected "
                         "a bf16 q",
                 l->layer_id);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, k_scale_tensor) || l->k_scale != 1.f) {
        snprintf(err, n, "layer %d: k_cache is FlashMLA's fp8 record, which holds its own scales; expected k_scale 1 "
                         "and no k_scale_tensor",
                 l->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    DLTensor bytes = *kc; /* the bytes as one-byte elements: the checker's shape, place and layout tests */
    bytes.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3FN_CODE;
    int rc = check(&bytes, "k_cache", "slots, 1, 656: FlashMLA's fp8 record", 3, SGL_SDK_ANY, 1, MLA_REC_BYTES,
                   SGL_ATTN_DT_FP8_E4M3, device, 1, err, n);
    *rec = rc == SGL_ATTN_OK;
    return rc;
}

static mla_index index_of(const DLTensor *t) {
    mla_index ix = {(const int32_t *)sgl_sdk_data(t), sgl_sdk_numel(t), t->dtype.bits == 64, 0};
    return ix;
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
    if (!a || !a->batch) {
        snprintf(err, n, "forward: %s is NULL", a ? "batch" : "args");
        return SGL_ATTN_E_INVALID;
    }
    if (a->linear) {
        snprintf(err, n, "forward: linear-attention inputs given; cuda_mla is full (MLA) attention");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = mla_refuse_unserved(a, err, n);
    if (rc) return rc;
    rc = mla_check_layer(a->layer, err, n);
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
    const int64_t T = t_planned, HQ = l->num_q_heads;
    const uint32_t half = SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F16;
    const DLTensor *qr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope);
    const DLTensor *kr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope);
    if (kr && !qr) {
        snprintf(err, n, "forward args k_rope is set but q_rope is NULL; give q_rope beside q (and k_rope beside k), "
                         "or neither");
        return SGL_ATTN_E_INVALID;
    }
    if (qr) { /* the rope split: latent q [T, Hq, 512], q_rope [T, Hq, 64] */
        if ((rc = check_rows(a->q, "q", "num_tokens, num_q_heads, 512: the latent q (q_rope beside it)", T, HQ,
                             MLA_D_V, half, device, &v->q_ts, &v->q_hs, err, n)))
            return rc;
    } else if ((rc = check(a->q, "q", "num_tokens, num_q_heads, 576: absorbed MLA q, rank 512 + rope 64", 3, T, HQ,
                           MLA_D_QK, half, device, 1, err, n))) {
        return rc;
    }
    v->q_dt = mla_dtype_of(a->q->dtype);
    v->q = sgl_sdk_data(a->q);
    /* out, the new latent rows and a 16-bit pool: q's dtype */
    const uint32_t q_bit = dt_bit(v->q_dt);
    if (qr) {
        if ((rc = check_rows(qr, "forward args q_rope", "num_tokens, num_q_heads, 64: q's rope dims", T, HQ,
                             MLA_D_QK - MLA_D_V, q_bit, device, &v->qr_ts, &v->qr_hs, err, n)))
            return rc;
        v->q_rope = sgl_sdk_data(qr);
    } else {
        v->q_ts = v->qr_ts = HQ * MLA_D_QK;
        v->q_hs = v->qr_hs = MLA_D_QK;
        v->q_rope = (const uint16_t *)v->q + MLA_D_V;
    }
    if ((rc = mla_check_tree(b, device, NULL, NULL, v, err, n))) return rc;
    if ((rc = check(a->out, "out", "num_tokens, num_q_heads, 512", 3, T, HQ, MLA_D_V, q_bit, device, 1, err, n)))
        return rc;
    v->out = (void *)sgl_sdk_data(a->out);
    const DLTensor *ti = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices);
    int rec;
    if ((rc = check_record(l, ti != NULL, v->q_dt, device, &rec, err, n))) return rc;
    if (rec) {
        v->kv_dt = MLA_DT_REC;
    } else {
        if ((rc = check(l->k_cache, "k_cache", "slots, 1, 576: the latent pool", 3, SGL_SDK_ANY, 1, MLA_D_QK,
                        q_bit | SGL_ATTN_DT_FP8_E4M3, device, 1, err, n)))
            return rc;
        v->kv_dt = mla_dtype_of(l->k_cache->dtype);
    }
    v->num_slots = l->k_cache->shape[0];
    if (v->num_slots < 1) {
        snprintf(err, n, "k_cache has no slots; expected 1..%d", INT32_MAX);
        return SGL_ATTN_E_INVALID;
    }
    v->pool = (void *)sgl_sdk_data(l->k_cache);
    v->k_scale = 1.f;
    if ((rc = check_scales(l, v->kv_dt == MLA_DT_FP8, device, &v->k_scale_t, err, n))) return rc;
    if (v->kv_dt == MLA_DT_FP8 && !v->k_scale_t) {
        if (!(l->k_scale > 0.f) || !isfinite(l->k_scale)) {
            snprintf(err, n, "layer %d: k_scale %g for the fp8 pool; expected a finite value > 0",
                     l->layer_id, (double)l->k_scale);
            return SGL_ATTN_E_INVALID;
        }
        v->k_scale = l->k_scale;
    }
    v->scale_log2 = l->sm_scale * 1.4426950408889634f;
    if (ti) { /* DSA sparse MLA (mla_sparse.h) */
        if (qr || v->mask) {
            snprintf(err, n, "layer %d: topk_indices given with %s: cuda_mla's sparse MLA reads q whole "
                             "([T, Hq, 576]) and attends the given slots (no tree mask)",
                     l->layer_id, qr ? "forward args q_rope" : "batch.custom_mask");
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (v->kv_dt != v->q_dt && v->kv_dt != MLA_DT_REC) {
            snprintf(err, n, "layer %d: topk_indices given with an fp8 pool ([slots, 1, 576] e4m3): cuda_mla's sparse "
                             "MLA takes a pool of q's dtype (bf16/f16) or FlashMLA's fp8 record (uint8 [slots, 1, 656])",
                     l->layer_id);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if ((rc = check(ti, "topk_indices", "num_tokens, topk: DSA's selected pool slots per query token", 2, T,
                        SGL_SDK_ANY, 0, 0, device, 0, err, n)))
            return rc;
        if (ti->dtype.code != kDLInt || ti->dtype.bits != 32) {
            snprintf(err, n, "topk_indices: expected int32 (page-encoded pool slots, -1 = none), got %d-bit code %d",
                     ti->dtype.bits, ti->dtype.code);
            return SGL_ATTN_E_INVALID;
        }
        if (ti->shape[1] < 1 || ti->shape[1] > INT32_MAX / 2) {
            snprintf(err, n, "topk_indices: [%lld, %lld]: expected 1..%d columns", (long long)T,
                     (long long)ti->shape[1], INT32_MAX / 2);
            return SGL_ATTN_E_INVALID;
        }
        v->topk = (const int32_t *)sgl_sdk_data(ti);
        v->topk_k = (int32_t)ti->shape[1];
    }

    if ((rc = check(b->req_to_token, "req_to_token", "max_reqs, max_context", 2, SGL_SDK_ANY, SGL_SDK_ANY, 0, 0,
                    device, 0, err, n)))
        return rc;
    v->req_to_token = index_of(b->req_to_token);
    v->r2t_rows = b->req_to_token->shape[0];
    v->r2t_cols = b->req_to_token->shape[1];
    if (v->r2t_rows < 1 || v->r2t_cols < 1) {
        snprintf(err, n, "req_to_token is empty ([%lld, %lld]); expected at least one row and column",
                 (long long)v->r2t_rows, (long long)v->r2t_cols);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = check(b->req_pool_indices, "req_pool_indices", "batch_size", 1, bs_planned, 0, 0, 0, device, 0, err,
                    n)))
        return rc;
    v->req_pool_indices = index_of(b->req_pool_indices);

    if (a->save_kv_cache) {
        if (qr && !kr) {
            snprintf(err, n, "save_kv_cache with q_rope but no k_rope: the pool row is the latent k then its rope "
                             "part; give k_rope beside k");
            return SGL_ATTN_E_INVALID;
        }
        if (kr) {
            int64_t hs;
            if ((rc = check_rows(a->k, "k", "num_tokens, 1, 512: the new latent rows (k_rope beside them)", T, 1,
                                 MLA_D_V, q_bit, device, &v->k_ld, &hs, err, n)) ||
                (rc = check_rows(kr, "forward args k_rope", "num_tokens, 1, 64: the new rows' rope dims", T, 1,
                                 MLA_D_QK - MLA_D_V, q_bit, device, &v->kr_ld, &hs, err, n)))
                return rc;
            v->k_rope = sgl_sdk_data(kr);
        } else if ((rc = check(a->k, "k", "num_tokens, 1, 576: the new latent rows", 3, T, 1, MLA_D_QK, q_bit, device,
                               1, err, n))) {
            return rc;
        }
        v->k = sgl_sdk_data(a->k);
        if (!kr) {
            v->k_ld = v->kr_ld = MLA_D_QK;
            v->k_rope = (const uint16_t *)v->k + MLA_D_V;
        }
        if ((rc = check(b->out_cache_loc, "out_cache_loc", "num_tokens", 1, T, 0, 0, 0, device, 0, err, n)))
            return rc;
        v->loc = index_of(b->out_cache_loc);
    }
    return SGL_ATTN_OK;
}

int mla_check_tree(const sgl_attn_batch *b, int32_t device, const int32_t *q_len, const int32_t *prefix,
                   mla_fwd_view *v, char *err, size_t n) {
    const DLTensor *m = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, custom_mask);
    const DLTensor *ip = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, mask_indptr);
    v->mask = NULL;
    v->mask_n = 0;
    memset(&v->mask_indptr, 0, sizeof v->mask_indptr);
    if (!m && !ip) return SGL_ATTN_OK;
    if (!m || !ip) {
        snprintf(err, n, "batch.%s is set without batch.%s; tree verify needs both", m ? "custom_mask" : "mask_indptr",
                 m ? "mask_indptr" : "custom_mask");
        return SGL_ATTN_E_INVALID;
    }
    if (b->forward_mode != SGL_ATTN_MODE_TARGET_VERIFY) {
        snprintf(err, n, "batch.custom_mask is set in forward_mode %d; it is a target-verify (3) input",
                 b->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    const DLDataType dt = m->dtype;
    if (!((dt.code == kDLUInt || dt.code == 6 /* kDLBool */) && dt.bits == 8 && dt.lanes == 1)) {
        snprintf(err, n, "batch.custom_mask: dtype code %d, %d bits, %d lanes; expected uint8 or bool (one byte an "
                         "entry)",
                 dt.code, dt.bits, dt.lanes);
        return SGL_ATTN_E_INVALID;
    }
    /* the SDK's checks of device, shape and layout, on a one-byte dtype it knows */
    DLTensor mb = *m;
    mb.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3FN_CODE;
    int rc = check(&mb, "batch.custom_mask", "sum of new tokens x seq_lens", 1, SGL_SDK_ANY, 0, 0,
                   SGL_ATTN_DT_FP8_E4M3, device, 0, err, n);
    if (rc) return rc;
    const int64_t len = m->shape[0];
    if (q_len) {
        int64_t need = 0;
        for (int32_t i = 0; i < b->batch_size; i++) need += (int64_t)q_len[i] * (prefix[i] + q_len[i]);
        if (len < need) {
            snprintf(err, n, "batch.custom_mask has %lld entries; the batch's masks take %lld (sum of new tokens x "
                             "seq_lens)",
                     (long long)len, (long long)need);
            return SGL_ATTN_E_INVALID;
        }
    }
    if ((rc = check(ip, "batch.mask_indptr", "batch_size + 1", 1, (int64_t)b->batch_size + 1, 0, 0, 0, device, 0, err,
                    n)))
        return rc;
    v->mask = (const uint8_t *)sgl_sdk_data(m);
    v->mask_n = len;
    v->mask_indptr = index_of(ip);
    return SGL_ATTN_OK;
}

/* One length tensor (host memory, int32/int64, >= bs entries) into an int32
 * array, each value 0..hi. */
static int read_lens(const char *name, const DLTensor *t, int32_t bs, int64_t hi, int32_t *out,
                     char *err, size_t n) {
    if (!t) {
        snprintf(err, n, "%s is NULL (cuda_mla plans from the host mirror)", name);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_sdk_tensor_spec s = {name, "batch_size", 1, {bs}, 0, SGL_SDK_DEV_HOST, -1,
                                   SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST, 0};
    int rc = sgl_sdk_check_tensor(t, &s, err, n);
    if (!rc) rc = sgl_sdk_check_index_range(t, name, bs, 0, hi, NULL, err, n);
    if (rc) return rc;
    for (int32_t i = 0; i < bs; i++) out[i] = (int32_t)sgl_sdk_index_at(t, i);
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
    if (b->forward_mode != SGL_ATTN_MODE_EXTEND && b->forward_mode != SGL_ATTN_MODE_DRAFT_EXTEND) {
        snprintf(err, n, "forward_mode %d; expected decode (2), target verify (3), extend (1) or draft extend (4)",
                 b->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = read_lens("extend_prefix_lens_cpu", prefix_lens, bs, max_context, prefix, err, n))) return rc;
    if ((rc = read_lens("extend_seq_lens_cpu", extend_lens, bs, max_context, q_len, err, n))) return rc;
    int64_t sum = 0;
    if (!sgl_sdk_host_index(seq_lens, bs)) seq_lens = NULL;
    for (int32_t i = 0; i < bs; i++) {
        if ((int64_t)prefix[i] + q_len[i] > max_context) {
            snprintf(err, n, "request %d: prefix %d + %d new token(s) exceeds max_context %d", i,
                     prefix[i], q_len[i], max_context);
            return SGL_ATTN_E_INVALID;
        }
        if (seq_lens && sgl_sdk_index_at(seq_lens, i) != (int64_t)prefix[i] + q_len[i]) {
            snprintf(err, n, "seq_lens_cpu[%d] = %lld but extend_prefix_lens_cpu + extend_seq_lens_cpu = %d",
                     i, (long long)sgl_sdk_index_at(seq_lens, i), prefix[i] + q_len[i]);
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

/* An ABI 1.2 field that is set but not served: refused by name, never ignored. */
static int refuse(char *err, size_t n, const char *what) {
    snprintf(err, n, "%s is set (ABI 1.2): cuda_mla does not serve it (its caps do not declare it)", what);
    return SGL_ATTN_E_UNSUPPORTED;
}

int mla_refuse_unserved_batch(const sgl_attn_batch *b, char *err, size_t n) {
    if (b->struct_size < SGL_ATTN_BATCH_SIZE_V1_0) {
        snprintf(err, n, "batch struct_size %u: expected at least %u (ABI 1.0)", b->struct_size,
                 SGL_ATTN_BATCH_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, page_table)) return refuse(err, n, "batch.page_table");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, encoder_out_cache_loc))
        return refuse(err, n, "batch.encoder_out_cache_loc");
    return SGL_ATTN_OK;
}

int mla_refuse_unserved(const sgl_attn_forward_args *a, char *err, size_t n) {
    const sgl_attn_layer *l = a->layer;
    if (a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0 || (l && l->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)) {
        snprintf(err, n, "forward args / layer struct_size %u / %u: expected at least %u / %u (ABI 1.0)",
                 a->struct_size, l ? l->struct_size : 0u, SGL_ATTN_FORWARD_ARGS_SIZE_V1_0, SGL_ATTN_LAYER_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    int rc = mla_refuse_unserved_batch(a->batch, err, n);
    if (rc) return rc;
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse)) return refuse(err, n, "forward args lse");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk)) return refuse(err, n, "forward args dual_chunk");
    if (!l) return SGL_ATTN_OK; /* mla_check_layer names it */
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map)) return refuse(err, n, "layer.slot_map");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) != SGL_ATTN_TYPE_CAUSAL)
        return refuse(err, n, "layer.attn_type (not causal)");
    return SGL_ATTN_OK;
}
