/* check_args.c - forward: check the layer and every tensor against the
 * planned batch before anything is written, then resolve them into the job
 * the loops read. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"

static int check_layer(cref_backend *b, const sgl_attn_layer *L, int save) {
    const int id = L->layer_id;
    if (L->struct_size < SGL_ATTN_LAYER_SIZE_V1_0) {
        cref_set_error(b, "layer %d: struct_size %u < %u (ABI 1.0)", id, L->struct_size, SGL_ATTN_LAYER_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    if (L->num_q_heads < 1 || L->num_kv_heads < 1 || L->num_q_heads % L->num_kv_heads) {
        cref_set_error(b, "layer %d: num_q_heads %d, num_kv_heads %d; expected >= 1 and q a multiple of kv", id,
                       L->num_q_heads, L->num_kv_heads);
        return SGL_ATTN_E_INVALID;
    }
    if (L->head_dim_qk < 1 || L->head_dim_qk > CREF_MAX_HEAD_DIM || L->head_dim_v < 1 ||
        L->head_dim_v > CREF_MAX_HEAD_DIM) {
        cref_set_error(b, "layer %d: head_dim_qk %d, head_dim_v %d; cpu_ref serves 1..%d", id, L->head_dim_qk,
                       L->head_dim_v, CREF_MAX_HEAD_DIM);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (L->head_dim_qk > b->max_dqk || L->head_dim_v > b->max_dv) {
        cref_set_error(b,
                       "layer %d: head dims qk %d, v %d exceed the model's %d, %d that create sized this backend's "
                       "scratch for",
                       id, L->head_dim_qk, L->head_dim_v, b->max_dqk, b->max_dv);
        return SGL_ATTN_E_INVALID;
    }
    int group = L->num_q_heads / L->num_kv_heads;
    if (group > b->rows_cap) {
        cref_set_error(b, "layer %d: %d q heads per kv head exceed the %d rows create sized scratch for", id, group,
                       b->rows_cap);
        return SGL_ATTN_E_INVALID;
    }
    if (!isfinite(L->sm_scale) || !isfinite(L->logit_softcap) || L->logit_softcap < 0) {
        cref_set_error(b, "layer %d: sm_scale %g, logit_softcap %g; expected finite numbers, softcap >= 0", id,
                       (double)L->sm_scale, (double)L->logit_softcap);
        return SGL_ATTN_E_INVALID;
    }
    if (L->is_cross && !b->has_enc) {
        cref_set_error(b, "layer %d is cross attention but the batch has no encoder_lens", id);
        return SGL_ATTN_E_INVALID;
    }
    (void)save;
    if (L->sinks)
        return cref_check(b, L->sinks, "layer.sinks", "num_q_heads", SGL_ATTN_DT_F32, 0, 1, L->num_q_heads, 0, 0);
    return SGL_ATTN_OK;
}

/* The pool: [slots, kv heads, dim]; MLA: k_cache only, value inside it;
 * or FlashMLA's fp8 record (*rec, sparse_mla.c), read as e4m3 bytes. */
static int check_pool(cref_backend *b, const sgl_attn_forward_args *a, int mla, uint32_t *kv_dt, int *rec) {
    int rc;
    const sgl_attn_layer *L = a->layer;
    const int id = L->layer_id;
    if ((rc = cref_record_check(b, a, rec))) return rc;
    if (*rec) {
        *kv_dt = SGL_ATTN_DT_FP8_E4M3;
    } else if ((rc = cref_check(b, L->k_cache, "layer.k_cache", "slots, num_kv_heads, head_dim_qk", CREF_KV_DTYPES,
                                0, 3, SGL_SDK_ANY, L->num_kv_heads, L->head_dim_qk))) {
        return rc;
    } else {
        *kv_dt = sgl_attn_dtype_bit(L->k_cache->dtype);
    }
    const int64_t slots = L->k_cache->shape[0];
    if (!mla) {
        if ((rc = cref_check(b, L->v_cache, "layer.v_cache", "k_cache's slots, num_kv_heads, head_dim_v", CREF_KV_DTYPES,
                             0, 3, slots, L->num_kv_heads, L->head_dim_v)))
            return rc;
        if (sgl_attn_dtype_bit(L->v_cache->dtype) != *kv_dt) {
            char b1[SGL_SDK_NAME_MAX], b2[SGL_SDK_NAME_MAX];
            cref_set_error(b, "layer %d: k_cache is %s but v_cache is %s; expected one pool dtype", id,
                           sgl_sdk_dtype_name(L->k_cache->dtype, b1), sgl_sdk_dtype_name(L->v_cache->dtype, b2));
            return SGL_ATTN_E_INVALID;
        }
    }
    if (!SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, slot_map) && b->max_slot >= slots) { /* mapped: layer_engine.c */
        cref_set_error(b, "layer %d: %s is outside the pool (k_cache has %lld slots)", id, b->max_slot_where,
                       (long long)slots);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

/* A [T, H, D] (or flat [T, H * D]) activation of a dtype cpu_ref claims; *dt its SGL_ATTN_DT_* bit. */
static int check_act(cref_backend *b, const DLTensor *t, const char *what, const char *meaning, int64_t T, int64_t h,
                     int64_t d, uint32_t *dt) {
    int rc = cref_check(b, t, what, meaning, CREF_DTYPES, SGL_SDK_T_MERGED, 3, T, h, d);
    if (!rc) *dt = sgl_attn_dtype_bit(t->dtype);
    return rc;
}

/* dqk: the dims q and k hold (the latent part when q_rope / k_rope are beside them). */
static int check_io(cref_backend *b, const sgl_attn_forward_args *a, int mla, int64_t T, int dqk, uint32_t *q_dt,
                    uint32_t *out_dt) {
    const sgl_attn_layer *L = a->layer;
    const int hq = L->num_q_heads, hkv = L->num_kv_heads, dv = L->head_dim_v;
    int rc;
    /* q may be a strided view (a fused qkv buffer): each head's row contiguous, any token and head steps;
     * and fp8 (dequantised by the layer's q descale, fp8_scales.c) */
    const sgl_sdk_tensor_spec qs = {"q", "num_tokens, num_q_heads, head_dim_qk", 3, {T, hq, dqk, 0}, CREF_KV_DTYPES,
                                    SGL_SDK_DEV_HOST, -1, SGL_SDK_T_MERGED | SGL_SDK_T_ROWS, 0};
    if ((rc = sgl_sdk_check_tensor(a->q, &qs, b->err, sizeof b->err))) return rc;
    *q_dt = sgl_attn_dtype_bit(a->q->dtype);
    if ((rc = check_act(b, a->out, "out", "num_tokens, num_q_heads, head_dim_v", T, hq, dv, out_dt)))
        return rc;
    /* encoder-only layers read k / v as their keys, saved or not */
    const int enc_only = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type) == SGL_ATTN_TYPE_ENCODER_ONLY;
    if (!a->save_kv_cache && !enc_only) return SGL_ATTN_OK;
    if (a->save_kv_cache && L->is_cross && !b->enc_loc) {
        cref_set_error(b, "layer %d: save_kv_cache on a cross-attention layer needs batch.encoder_out_cache_loc (ABI "
                          "1.2): the slots of the encoder K/V it writes",
                       L->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    if (a->save_kv_cache && !L->is_cross && !b->out_cache_loc) {
        cref_set_error(b, "save_kv_cache is set but the batch has no out_cache_loc");
        return SGL_ATTN_E_INVALID;
    }
    /* a cross layer's k / v are the encoder tokens' */
    const int64_t Tkv = L->is_cross ? b->n_enc_tok : T;
    const char *km = L->is_cross ? "sum of encoder_lens, num_kv_heads, head_dim_qk" : "num_tokens, num_kv_heads, head_dim_qk";
    const char *vm = L->is_cross ? "sum of encoder_lens, num_kv_heads, head_dim_v" : "num_tokens, num_kv_heads, head_dim_v";
    if ((rc = check_act(b, a->k, "k", km, Tkv, hkv, dqk, &b->k_dt))) return rc;
    b->v_dt = b->k_dt;
    if (!mla) {
        if ((rc = check_act(b, a->v, "v", vm, Tkv, hkv, dv, &b->v_dt))) return rc;
    } else if (a->v) {
        cref_set_error(b, "layer %d is MLA (v_cache NULL) but v is given; the value is part of k", L->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

/* Work items.  Extend: query blocks of `qblock` tokens per request and KV
 * head (the K/V tile is shared by many query rows).  Decode/verify: all
 * query tokens of a request and as many KV heads as the rows allow, so each
 * token's K/V rows are read as one contiguous run; then KV splits when there
 * are too few items for the threads. */
void cref_plan_items(cref_backend *b) {
    cref_job *J = &b->job;
    const int extend = b->mode == SGL_ATTN_MODE_EXTEND;
    J->qblock = b->rows_cap / J->group;
    J->heads = 1;
    if (!extend && b->tokens_per_req <= J->qblock) {
        J->qblock = b->tokens_per_req;
        int h = b->rows_cap / (J->group * b->tokens_per_req);
        J->heads = h < 1 ? 1 : h > J->hkv ? J->hkv : h;
    }
    J->n_hgroups = (J->hkv + J->heads - 1) / J->heads;
    int32_t nqb = 0;
    for (int i = 0; i < b->n_reqs; i++) {
        b->reqs[i].qb0 = nqb;
        nqb += (b->reqs[i].n_new + J->qblock - 1) / J->qblock;
    }
    J->n_qblocks = nqb;
    const int64_t base = (int64_t)nqb * J->n_hgroups;
    J->nsplit = 1;
    const int32_t longest = J->cross ? b->max_enc : b->max_kv_len;
    const int64_t cap_items = b->partial ? (int64_t)(b->partial_bytes / J->partial_stride) : 0;
    if (base > 0 && base < 2 * (int64_t)b->nthreads && longest >= 2 * CREF_SPLIT_MIN_KEYS) {
        int64_t n = (2 * (int64_t)b->nthreads + base - 1) / base;
        if (n > longest / CREF_SPLIT_MIN_KEYS) n = longest / CREF_SPLIT_MIN_KEYS;
        if (n > cap_items / base) n = cap_items / base;
        if (n >= 2) J->nsplit = (int32_t)n;
    }
    b->n_items = (int32_t)(base * J->nsplit);
}

int cref_check_args(cref_backend *b, const sgl_attn_forward_args *a) {
    if (!a) {
        cref_set_error(b, "forward args are NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0) {
        cref_set_error(b, "forward args struct_size %u < %u (ABI 1.0)", a->struct_size, SGL_ATTN_FORWARD_ARGS_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    /* A batch other than the planned one (a wrapper's copy): plan it now. */
    if (a->batch && a->batch != b->batch) {
        int rc = cref_plan_batch(b, a->batch);
        if (rc) return rc;
    }
    if (!b->batch) {
        cref_set_error(b, "forward without a planned batch: init_forward_metadata was not called or failed");
        return SGL_ATTN_E_STATE;
    }
    b->n_items = 0;
    if (b->mode == SGL_ATTN_MODE_IDLE || b->num_tokens == 0) return SGL_ATTN_OK;
    const sgl_attn_layer *L = a->layer;
    if (!L) {
        cref_set_error(b, "forward args: layer is NULL");
        return SGL_ATTN_E_INVALID;
    }
    int rc;
    const int save = a->save_kv_cache != 0;
    if ((rc = check_layer(b, L, save))) return rc;
    const int mla = L->v_cache == NULL;
    if (mla && (L->num_kv_heads != 1 || L->head_dim_v > L->head_dim_qk)) {
        cref_set_error(b,
                       "layer %d: v_cache is NULL (MLA) but num_kv_heads %d, head_dim_v %d > head_dim_qk %d; MLA "
                       "needs one latent head whose first head_dim_v dims are the value",
                       L->layer_id, L->num_kv_heads, L->head_dim_v, L->head_dim_qk);
        return SGL_ATTN_E_INVALID;
    }
    uint32_t kv_dt, q_dt, out_dt;
    int32_t dq_lat;
    int rec;
    if ((rc = check_pool(b, a, mla, &kv_dt, &rec))) return rc;
    if ((rc = cref_rope_check(b, a, mla, b->num_tokens, &dq_lat))) return rc;
    if ((rc = check_io(b, a, mla, b->num_tokens, dq_lat, &q_dt, &out_dt))) return rc;
    if ((rc = cref_lse_check(b, SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse), "forward args lse",
                             b->num_tokens, L->num_q_heads)))
        return rc;
    /* The f64 path is all-f64; the f32 path takes any mix of f32/f16/bf16. */
    int n64 = (q_dt == SGL_ATTN_DT_F64) + (out_dt == SGL_ATTN_DT_F64) + (kv_dt == SGL_ATTN_DT_F64);
    int n_all = 3;
    if (save || SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type) == SGL_ATTN_TYPE_ENCODER_ONLY) {
        n64 += (b->k_dt == SGL_ATTN_DT_F64) + (!mla && b->v_dt == SGL_ATTN_DT_F64);
        n_all += 1 + !mla;
    }
    if (n64 != 0 && n64 != n_all) {
        cref_set_error(b, "layer %d: some of q, out, the pool%s are f64 and some not; the f64 path needs all f64",
                       L->layer_id, save ? ", k, v" : "");
        return SGL_ATTN_E_UNSUPPORTED;
    }

    cref_job *J = &b->job;
    J->hq = L->num_q_heads;
    J->hkv = L->num_kv_heads;
    J->group = L->num_q_heads / L->num_kv_heads;
    J->dqk = L->head_dim_qk;
    J->dv = L->head_dim_v;
    J->cross = L->is_cross != 0;
    J->window = L->sliding_window;
    J->scale = L->sm_scale;
    J->softcap = L->logit_softcap;
    J->sinks = L->sinks ? sgl_sdk_data(L->sinks) : NULL;
    J->q_dt = q_dt;
    J->out_dt = out_dt;
    J->kv_dt = kv_dt;
    J->q = sgl_sdk_data(a->q);
    J->q_hs = dq_lat;
    J->q_ts = (int64_t)J->hq * dq_lat;
    if (a->q->strides) {
        J->q_ts = a->q->strides[0];
        if (a->q->ndim == 3) J->q_hs = a->q->strides[1];
    }
    J->out = (unsigned char *)(uintptr_t)sgl_sdk_data(a->out);
    J->k_cache = sgl_sdk_data(L->k_cache);
    J->rec = rec;
    J->k_slot = (int64_t)J->hkv * J->dqk;
    if (mla) {
        J->v_cache = J->k_cache;
        J->v_slot = J->k_slot;
        J->v_head = 0;
        if (rec) J->k_slot = J->v_slot = CREF_REC_BYTES;
    } else {
        J->v_cache = sgl_sdk_data(L->v_cache);
        J->v_slot = (int64_t)J->hkv * J->dv;
        J->v_head = J->dv;
    }
    J->r2t = b->r2t; /* as planned: the caller's header may have changed since */
    J->r2t_64 = b->r2t_64;
    J->r2t_cols = b->r2t_cols;
    J->pool_slots = L->k_cache->shape[0];
    J->bad = &b->bad;
    J->reqs = b->reqs;
    J->n_reqs = b->n_reqs;
    J->rows_cap = b->rows_cap;
    J->partial = b->partial;
    J->bf16dot = b->bf16dot;
    b->save = save;
    b->k_new = save ? sgl_sdk_data(a->k) : NULL;
    b->v_new = save && !mla ? sgl_sdk_data(a->v) : NULL;
    if ((rc = cref_fp8_scales(b, L, kv_dt, mla))) return rc;
    if ((rc = cref_layer_engine(b, a, L))) return rc;
    cref_plan_items(b);
    return SGL_ATTN_OK;
}
