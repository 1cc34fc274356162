/* validate_layer.c - one forward call: the layer's constants against the
 * model and the inner's claims, q/k/v/out and the KV pool against the layer,
 * and the slots the batch uses against this layer's pool. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "validate_internal.h"

static int state_fail(vl_ctx *c, const char *msg) {
    vl_fail(c, "%s", msg);
    return SGL_ATTN_E_STATE;
}

static int head_dims_ok(const sgl_attn_caps *caps, int32_t qk, int32_t v) {
    if (caps->n_head_dims > 0) {
        uint32_t n = caps->n_head_dims < SGL_ATTN_MAX_LIST ? caps->n_head_dims : SGL_ATTN_MAX_LIST;
        for (uint32_t i = 0; i < n; i++)
            if (caps->head_dims[i].qk == qk && caps->head_dims[i].v == v) return 1;
        return 0;
    }
    /* A zero maximum means no limit (as the host intersects caps). */
    return (!caps->head_dim_qk_max || (uint32_t)qk <= caps->head_dim_qk_max) &&
           (!caps->head_dim_v_max || (uint32_t)v <= caps->head_dim_v_max);
}

/* MHA / GQA / MQA / MLA as the caps name it. */
static int kind_ok(const vl_backend *b, const sgl_attn_layer *l, const char **kind) {
    uint32_t k = b->caps.attn_kinds;
    if (b->model.is_mla) return *kind = "MLA", (k & SGL_ATTN_KIND_MLA) != 0;
    if (l->num_kv_heads == l->num_q_heads && (k & SGL_ATTN_KIND_MHA)) return 1;
    if (l->num_kv_heads == 1 && (k & SGL_ATTN_KIND_MQA)) return 1;
    if (l->num_kv_heads != l->num_q_heads && l->num_kv_heads != 1 && (k & SGL_ATTN_KIND_GQA)) return 1;
    *kind = l->num_kv_heads == l->num_q_heads ? "MHA" : l->num_kv_heads == 1 ? "MQA" : "GQA";
    return 0;
}

/* Layer constants against the model and the inner's claims. */
static int check_layer(vl_ctx *c, const vl_backend *b, const sgl_attn_layer *l) {
    const sgl_attn_model *m = &b->model;
    const sgl_attn_caps *caps = &b->caps;
    if (l->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)
        return vl_fail(c, "layer->struct_size = %u is smaller than the ABI 1.0 layer (%zu bytes)",
                       (unsigned)l->struct_size, (size_t)SGL_ATTN_LAYER_SIZE_V1_0);
    if (l->layer_id < 0 || l->layer_id >= m->num_layers)
        return vl_fail(c, "layer->layer_id = %d is outside 0..%d (the model's layers)",
                       (int)l->layer_id, (int)m->num_layers - 1);
    if (m->hybrid_kind != SGL_ATTN_HYBRID_NONE && !sgl_attn_model_layer_is_full(m, l->layer_id))
        return vl_fail(c,
                       "layer->layer_id = %d is a linear-attention layer of the model; a "
                       "full-attention forward needs args->linear = NULL only on full layers",
                       (int)l->layer_id);
    if (l->num_q_heads != m->num_q_heads)
        return vl_fail(c, "layer->num_q_heads = %d but the model has %d q heads per rank",
                       (int)l->num_q_heads, (int)m->num_q_heads);
    if (l->num_kv_heads != m->num_kv_heads)
        return vl_fail(c, "layer->num_kv_heads = %d but the model has %d KV heads per rank",
                       (int)l->num_kv_heads, (int)m->num_kv_heads);
    if (l->head_dim_qk != m->head_dim_qk || l->head_dim_v != m->head_dim_v)
        return vl_fail(c, "layer head dims (qk %d, v %d) differ from the model's (qk %d, v %d)",
                       (int)l->head_dim_qk, (int)l->head_dim_v, (int)m->head_dim_qk,
                       (int)m->head_dim_v);
    if (l->num_q_heads < 1 || l->num_kv_heads < 1 || l->num_q_heads % l->num_kv_heads)
        return vl_fail(c, "layer->num_q_heads = %d is not a positive multiple of num_kv_heads = %d",
                       (int)l->num_q_heads, (int)l->num_kv_heads);
    if (l->head_dim_qk < 1 || l->head_dim_v < 1)
        return vl_fail(c, "layer head dims (qk %d, v %d) must be >= 1", (int)l->head_dim_qk,
                       (int)l->head_dim_v);
    const char *kind = "";
    if (!kind_ok(b, l, &kind))
        return vl_fail(c, "layer is %s (%d q heads, %d KV heads), which the backend does not claim",
                       kind, (int)l->num_q_heads, (int)l->num_kv_heads);
    uint32_t ratio = (uint32_t)(l->num_q_heads / l->num_kv_heads);
    if (caps->max_gqa_ratio && ratio > caps->max_gqa_ratio)
        return vl_fail(c, "layer GQA ratio %u exceeds the backend's max_gqa_ratio %u", (unsigned)ratio,
                       (unsigned)caps->max_gqa_ratio);
    if (!head_dims_ok(caps, l->head_dim_qk, l->head_dim_v))
        return vl_fail(c, "layer head dims (qk %d, v %d) are not ones the backend claims",
                       (int)l->head_dim_qk, (int)l->head_dim_v);
    if (!m->is_mla && l->head_dim_qk != l->head_dim_v &&
        !(caps->features & SGL_ATTN_FEAT_DIFF_HEAD_DIMS))
        return vl_fail(c,
                       "layer head dims differ (qk %d, v %d); the backend does not claim "
                       "different v head dims",
                       (int)l->head_dim_qk, (int)l->head_dim_v);
    if (!isfinite(l->sm_scale) || l->sm_scale <= 0.0f)
        return vl_fail(c, "layer->sm_scale = %g; expected a finite value > 0", (double)l->sm_scale);
    if (!isfinite(l->logit_softcap) || l->logit_softcap < 0.0f)
        return vl_fail(c, "layer->logit_softcap = %g; expected 0 (off) or a finite value > 0",
                       (double)l->logit_softcap);
    if (l->logit_softcap > 0.0f && !(caps->features & SGL_ATTN_FEAT_SOFTCAP))
        return vl_fail(c, "layer->logit_softcap = %g; the backend does not claim soft-capping",
                       (double)l->logit_softcap);
    if (l->sliding_window >= 0 && !(caps->features & SGL_ATTN_FEAT_SLIDING_WINDOW))
        return vl_fail(c, "layer->sliding_window = %d; the backend does not claim sliding windows",
                       (int)l->sliding_window);
    if (l->is_cross && !(caps->attn_kinds & SGL_ATTN_KIND_CROSS))
        return vl_fail(c, "layer->is_cross = %d; the backend does not claim cross attention",
                       (int)l->is_cross);
    if (l->is_cross && !b->facts.has_encoder)
        return vl_fail(c, "layer->is_cross = %d but the batch has no encoder_lens", (int)l->is_cross);
    if (l->sinks && !(caps->features & SGL_ATTN_FEAT_SINKS))
        return vl_fail(c, "layer->sinks is set; the backend does not claim attention sinks");
    if (m->kv_dtype == SGL_ATTN_DT_FP8_E4M3 &&
        (!isfinite(l->k_scale) || l->k_scale <= 0.0f || !isfinite(l->v_scale) || l->v_scale <= 0.0f))
        return vl_fail(c, "layer k_scale = %g, v_scale = %g; an fp8 pool needs finite scales > 0",
                       (double)l->k_scale, (double)l->v_scale);
    return SGL_ATTN_OK;
}

/* A tensor of the call, then whether its dtype is one the backend claims. */
static int check_t(vl_ctx *c, const DLTensor *t, const vl_tspec *s, uint32_t claimed,
                   const char *what) {
    if (!t) return vl_fail(c, "%s is NULL", s->name);
    int rc = vl_check_tensor(c, t, s);
    if (rc) return rc;
    if (!(sgl_attn_dtype_bit(t->dtype) & claimed)) {
        char buf[SGL_SDK_NAME_MAX];
        return vl_fail(c, "%s has dtype %s, which the backend does not claim for %s", s->name,
                       sgl_sdk_dtype_name(t->dtype, buf), what);
    }
    return SGL_ATTN_OK;
}

/* The ABI 1.2 tensors of a forward (the caps bits were checked before). */
static int check_v12_tensors(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a, const vl_tspec *qs,
                             int64_t slots) {
    const sgl_attn_layer *l = a->layer;
    const sgl_attn_model *m = &b->model;
    const int64_t T = b->facts.num_tokens, hq = l->num_q_heads;
    const uint32_t all = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64;
    const uint32_t act = m->dtype ? m->dtype : all;
    int rc;
    /* engine fp8: [1] fp32 scale tensors and a finite q descale */
    const struct {
        const DLTensor *t;
        const char *name;
    } sc[] = {{SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, k_scale_tensor), "layer->k_scale_tensor"},
              {SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, v_scale_tensor), "layer->v_scale_tensor"},
              {SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale_tensor), "layer->q_descale_tensor"}};
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
        if (sc[i].t) {
            vl_tspec s = {sc[i].name, "1", 1, {1, 0, 0}, SGL_ATTN_DT_F32, 0, 0, 0};
            if ((rc = vl_check_tensor(c, sc[i].t, &s))) return rc;
        }
    if (SGL_ATTN_HAS_FIELD(sgl_attn_layer, l, q_descale) && (!isfinite(l->q_descale) || l->q_descale < 0.0f))
        return vl_fail(c, "layer->q_descale = %g; expected 0 or 1 (none) or a finite value > 0", (double)l->q_descale);
    /* LSE: [T, Hq] fp32, written, apart from what the call reads and writes */
    DLTensor *lse = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse);
    if (lse) {
        vl_tspec s = {"args->lse", "num_tokens, num_q_heads", 2, {T, hq, 0}, SGL_ATTN_DT_F32, 1, 0, 0};
        if ((rc = vl_check_tensor(c, lse, &s))) return rc;
    }
    /* MLA rope split: q / k carry the latent dims, the rope dims beside them */
    const DLTensor *qr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope);
    const DLTensor *kr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope);
    if (kr && !qr) return vl_fail(c, "args->k_rope is set but args->q_rope is NULL; give q_rope beside q");
    if (qr) {
        const int64_t rope = m->qk_rope_head_dim > 0 ? m->qk_rope_head_dim : VL_ANY;
        vl_tspec s = {"args->q_rope", "num_tokens, num_q_heads, qk_rope_head_dim", 3, {T, hq, rope}, act, 0, 0, 0};
        if ((rc = vl_check_tensor(c, qr, &s))) return rc;
        if (l->head_dim_qk - qr->shape[2] < l->head_dim_v)
            return vl_fail(c, "args->q_rope has %lld dims per head, leaving %lld latent dims of head_dim_qk %d; expected "
                              "at least head_dim_v = %d",
                           (long long)qr->shape[2], (long long)(l->head_dim_qk - qr->shape[2]), (int)l->head_dim_qk,
                           (int)l->head_dim_v);
        if (a->save_kv_cache && !kr)
            return vl_fail(c, "save_kv_cache with args->q_rope but no args->k_rope: the pool row needs both parts");
        if (kr) {
            vl_tspec k = {"args->k_rope", "num_tokens, 1, qk_rope_head_dim", 3, {T, 1, qr->shape[2]}, act, 0, 0, 0};
            if ((rc = vl_check_tensor(c, kr, &k))) return rc;
        }
    }
    /* DSA: [T, topk] int32 pool slots, -1 = none */
    const DLTensor *topk = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices);
    if (topk) {
        if (!(b->caps.dsa_ops & SGL_ATTN_DSA_SPARSE_MLA))
            return vl_fail(c, "args->topk_indices is set but the backend does not declare SGL_ATTN_DSA_SPARSE_MLA "
                              "in caps.dsa_ops: it would attend densely");
        vl_tspec s = {"args->topk_indices", "num_tokens, topk", 2, {T, VL_ANY, 0}, 0, 0, 0, 0};
        if ((rc = vl_check_tensor(c, topk, &s))) return rc;
        if (topk->dtype.bits != 32) return vl_fail(c, "args->topk_indices is int64; expected int32");
        if (vl_host_readable(topk) && !SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map))
            for (int64_t t = 0; t < T; t++)
                for (int64_t j = 0; j < topk->shape[1]; j++) {
                    const int64_t v = vl_idx2(topk, t, j);
                    if (v < -1 || v >= slots)
                        return vl_fail(c, "args->topk_indices[%lld][%lld] = %lld; expected -1 (none) or a slot "
                                          "0..%lld of the pool",
                                       (long long)t, (long long)j, (long long)v, (long long)slots - 1);
                }
    }
    /* dual chunk: its numbers, and q_succ / q_inter shaped as q */
    const sgl_attn_dual_chunk *dc = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk);
    if (dc) {
        if (dc->local_size < 0 || dc->chunk_size <= dc->local_size || dc->original_max_position < 0)
            return vl_fail(c, "args->dual_chunk: chunk_size = %d, local_size = %d, original_max_position = %d; expected "
                              "chunk_size > local_size >= 0 and original_max_position >= 0",
                           (int)dc->chunk_size, (int)dc->local_size, (int)dc->original_max_position);
        vl_tspec s = *qs;
        s.name = "args->dual_chunk->q_succ";
        if (!dc->q_succ) return vl_fail(c, "args->dual_chunk->q_succ is NULL");
        if ((rc = vl_check_tensor(c, dc->q_succ, &s))) return rc;
        s.name = "args->dual_chunk->q_inter";
        if (!dc->q_inter) return vl_fail(c, "args->dual_chunk->q_inter is NULL");
        if ((rc = vl_check_tensor(c, dc->q_inter, &s))) return rc;
    }
    return SGL_ATTN_OK;
}

/* Activations, the pool, and the batch's slots against this pool. */
static int check_tensors(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a) {
    const sgl_attn_layer *l = a->layer;
    const sgl_attn_model *m = &b->model;
    const uint32_t all =
        SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64 | SGL_ATTN_DT_FP8_E4M3;
    uint32_t act = m->dtype ? m->dtype : all, kvd = m->kv_dtype ? m->kv_dtype : all;
    int64_t T = b->facts.num_tokens, hq = l->num_q_heads, hkv = l->num_kv_heads;
    int64_t dqk = l->head_dim_qk, dv = l->head_dim_v;
    int mla = m->is_mla != 0, rc;
    /* ABI 1.2: with MLA's q_rope beside them, q and k hold the latent dims only */
    const DLTensor *q_rope = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope);
    const int64_t dq = mla && q_rope && q_rope->ndim == 3 && q_rope->shape ? dqk - q_rope->shape[2] : dqk;
    /* Cross layers take the encoder's K/V, whose token count is not T. */
    int64_t tk = l->is_cross ? VL_ANY : T;
    vl_tspec q = {"q", "num_tokens, num_q_heads, head_dim_qk", 3, {T, hq, dq}, act, 0, 0, 0};
    vl_tspec o = {"out", "num_tokens, num_q_heads, head_dim_v", 3, {T, hq, dv}, act, 1, 0, 0};
    /* sglang hands q (and out) over flattened, [T, H * D] (docs/abi.md, Tensors) */
    if (a->q && a->q->ndim == 2) q = (vl_tspec){"q", "num_tokens, num_q_heads * head_dim_qk", 2, {T, hq * dq, 0}, act, 0, 0, 0};
    if (a->out && a->out->ndim == 2)
        o = (vl_tspec){"out", "num_tokens, num_q_heads * head_dim_v", 2, {T, hq * dv, 0}, act, 1, 0, 0};
    vl_tspec k = {
        "k", mla ? "num_tokens, 1, kv_lora_rank + rope" : "num_tokens, num_kv_heads, head_dim_qk",
        3,   {tk, mla ? 1 : hkv, dq},
        act, 0,
        0, 0};
    vl_tspec v = {"v", "num_tokens, num_kv_heads, head_dim_v", 3, {tk, hkv, dv}, act, 0, 0, 0};
    vl_tspec kc = {"layer->k_cache",
                   mla ? "slots, 1, kv_lora_rank + rope" : "slots, num_kv_heads, head_dim_qk",
                   3,
                   {VL_ANY, mla ? 1 : hkv, dqk},
                   kvd,
                   a->save_kv_cache != 0,
                   0, 0};
    if ((rc = check_t(c, a->q, &q, b->caps.q_dtypes, "q"))) return rc;
    if ((rc = check_t(c, a->out, &o, b->caps.q_dtypes, "out"))) return rc;
    if (a->save_kv_cache || a->k)
        if ((rc = check_t(c, a->k, &k, b->caps.q_dtypes, "new keys"))) return rc;
    if (mla && a->v) return vl_fail(c, "v must be NULL on an MLA model (values live in k_cache)");
    if (!mla && (a->save_kv_cache || a->v))
        if ((rc = check_t(c, a->v, &v, b->caps.q_dtypes, "new values"))) return rc;
    /* DSA: FlashMLA's fp8 record pool, uint8 [slots, 1, 656], read by sparse MLA only */
    const DLTensor *topk = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices);
    const DLTensor *k_cache = l->k_cache;
    if (mla && topk && k_cache && (b->caps.dsa_ops & SGL_ATTN_DSA_KV_FP8_RECORD) && k_cache->dtype.code == kDLUInt &&
        k_cache->dtype.bits == 8) {
        if (!k_cache->shape || k_cache->ndim != 3 || k_cache->shape[1] != 1 || k_cache->shape[2] != 656)
            return vl_fail(c, "layer->k_cache is uint8 (the fp8 record pool); expected [slots, 1, 656]");
    } else if ((rc = check_t(c, k_cache, &kc, b->caps.kv_dtypes, "the KV pool"))) {
        return rc;
    }
    int64_t slots = l->k_cache->shape[0];
    if (mla && l->v_cache) return vl_fail(c, "layer->v_cache must be NULL on an MLA model");
    if (!mla) {
        vl_tspec vc = {"layer->v_cache",
                       "slots of k_cache, num_kv_heads, head_dim_v",
                       3,
                       {slots, hkv, dv},
                       kvd,
                       a->save_kv_cache != 0,
                       0, 0};
        if ((rc = check_t(c, l->v_cache, &vc, b->caps.kv_dtypes, "the KV pool"))) return rc;
    }
    if (l->sinks) {
        vl_tspec s = {"layer->sinks", "num_q_heads", 1, {hq, 0, 0}, SGL_ATTN_DT_F32, 0, 0, 0};
        if ((rc = vl_check_tensor(c, l->sinks, &s))) return rc;
    }
    const vl_slot_fact *f = &b->facts.max_slot;
    const DLTensor *map = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map);
    if (map) {
        /* the batch's slots index the map; the map's entries index this pool */
        vl_tspec ms = {"layer->slot_map", "full-pool slots", 1, {VL_ANY, 0, 0}, 0, 0, 0, 0};
        if ((rc = vl_check_tensor(c, map, &ms))) return rc;
        if (f->value >= map->shape[0])
            return vl_fail(c, "%s = %lld is outside layer->slot_map (%lld entries)", f->where, (long long)f->value,
                           (long long)map->shape[0]);
    } else if (f->value >= slots) {
        return vl_fail(c, "%s = %lld is outside the KV pool of %lld slots", f->where,
                       (long long)f->value, (long long)slots);
    }
    return check_v12_tensors(c, b, a, &q, slots);
}

/* ABI 1.2 caller-owned linear state: claimed by the backend, one slot count
 * S over the tensors given, state_indices [batch_size] in -1..S-1.  Per-kind
 * shapes are the wrapper's (docs/abi.md, "Linear state contract"). */
static int check_caller_state(vl_ctx *c, const vl_backend *b, const sgl_attn_linear_io *io) {
    if (!SGL_ATTN_HAS_FIELD(sgl_attn_linear_io, io, state_indices)) return SGL_ATTN_OK;
    const struct {
        const DLTensor *t;
        const char *name;
        int32_t min_ndim;
    } st[] = {{io->conv_state, "linear->conv_state", 3},
              {io->ssm_state, "linear->ssm_state", 3},
              {io->intermediate_conv_state, "linear->intermediate_conv_state", 4},
              {io->intermediate_ssm_state, "linear->intermediate_ssm_state", 4}};
    const DLTensor *idx = io->state_indices;
    const DLTensor *bidx = b->facts.batch ? b->facts.batch->state_indices : NULL;
    int any = idx != NULL;
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) any |= st[i].t != NULL;
    if (!any) {
        /* the wrapper's own pool: batch->state_indices are its slots */
        if (bidx && vl_host_readable(bidx) && (b->caps.features & SGL_ATTN_FEAT_CALLER_STATE))
            for (int32_t i = 0; i < b->facts.batch_size; i++) {
                int64_t v = vl_idx1(bidx, i);
                if (v >= b->max_reqs)
                    return vl_fail(c, "batch->state_indices[%d] = %lld is outside -1..%d (the wrapper's pool of "
                                      "max_reqs slots: this forward passes no caller-owned state)",
                                   (int)i, (long long)v, (int)b->max_reqs - 1);
            }
        return SGL_ATTN_OK;
    }
    if (!(b->caps.features & SGL_ATTN_FEAT_CALLER_STATE)) {
        const char *name = "linear->state_indices";
        for (size_t i = sizeof st / sizeof st[0]; i-- > 0;)
            if (st[i].t) name = st[i].name;
        return vl_fail(c, "%s is set (ABI 1.2 caller-owned state) but the backend does not claim "
                          "SGL_ATTN_FEAT_CALLER_STATE",
                       name);
    }
    const uint32_t sdt = b->model.lin_state_dtype ? b->model.lin_state_dtype : SGL_ATTN_DT_F32;
    int64_t S = -1;
    const char *s_from = "";
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) {
        const DLTensor *t = st[i].t;
        if (!t) continue;
        if (!t->shape || t->ndim < st[i].min_ndim)
            return vl_fail(c, "%s has %d dims; expected at least %d ([slots%s, ...])", st[i].name, (int)t->ndim,
                           (int)st[i].min_ndim, i >= 2 ? ", steps" : "");
        if (!(sgl_attn_dtype_bit(t->dtype) & sdt))
            return vl_fail(c, "%s's dtype is not the instance's state dtype (model.lin_state_dtype)", st[i].name);
        if (S < 0) {
            S = t->shape[0];
            s_from = st[i].name;
        } else if (t->shape[0] != S) {
            return vl_fail(c, "%s has %lld slots but %s has %lld; expected one slot count", st[i].name,
                           (long long)t->shape[0], s_from, (long long)S);
        }
        if (i >= 2 && io->keep_intermediate && b->facts.batch && t->shape[1] < b->facts.batch->tokens_per_req)
            return vl_fail(c, "%s keeps %lld steps; expected at least tokens_per_req = %d", st[i].name,
                           (long long)t->shape[1], (int)b->facts.batch->tokens_per_req);
    }
    if ((io->intermediate_conv_state || io->intermediate_ssm_state) && !io->conv_state && !io->ssm_state)
        return vl_fail(c, "linear->intermediate_* state is set without linear->conv_state / ssm_state");
    const char *idx_name = "linear->state_indices";
    if (idx) {
        vl_tspec s = {"linear->state_indices", "batch_size", 1, {b->facts.batch_size, 0, 0}, 0, 0, 0, 0};
        int rc = vl_check_tensor(c, idx, &s);
        if (rc) return rc;
    } else {
        idx = bidx; /* NULL: the batch's */
        idx_name = "batch->state_indices";
    }
    if (idx && vl_host_readable(idx) && S >= 0)
        for (int32_t i = 0; i < b->facts.batch_size; i++) {
            int64_t v = vl_idx1(idx, i);
            if (v < -1 || v >= S)
                return vl_fail(c, "%s[%d] = %lld is outside -1..%lld (%s's slots; -1 = padding)", idx_name, (int)i,
                               (long long)v, (long long)S - 1, s_from);
        }
    return SGL_ATTN_OK;
}

/* A linear-attention layer: only what holds for every kind is checked here;
 * the per-kind shapes are the hybrid wrapper's (docs/hybrid.md). */
static int check_linear(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a) {
    const sgl_attn_linear_io *io = a->linear;
    const sgl_attn_model *m = &b->model;
    if (io->struct_size < SGL_ATTN_LINEAR_IO_SIZE_V1_0)
        return vl_fail(c, "linear->struct_size = %u is smaller than the ABI 1.0 struct (%zu bytes)",
                       (unsigned)io->struct_size, (size_t)SGL_ATTN_LINEAR_IO_SIZE_V1_0);
    if (m->hybrid_kind == SGL_ATTN_HYBRID_NONE)
        return vl_fail(c, "args->linear is set but the model has no linear-attention layers");
    /* MiniMax models mix lightning and sparse layers under one wrapper. */
    int minimax =
        (io->kind == SGL_ATTN_HYBRID_LIGHTNING || io->kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) &&
        (m->hybrid_kind == SGL_ATTN_HYBRID_LIGHTNING ||
         m->hybrid_kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE);
    if (io->kind != (int32_t)m->hybrid_kind && !minimax)
        return vl_fail(c, "linear->kind = %d but the model's hybrid kind is %u", (int)io->kind,
                       (unsigned)m->hybrid_kind);
    if (a->layer) {
        const sgl_attn_layer *l = a->layer;
        if (l->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)
            return vl_fail(c, "layer->struct_size = %u is smaller than the ABI 1.0 layer (%zu bytes)",
                           (unsigned)l->struct_size, (size_t)SGL_ATTN_LAYER_SIZE_V1_0);
        if (l->layer_id < 0 || l->layer_id >= m->num_layers)
            return vl_fail(c, "layer->layer_id = %d is outside 0..%d (the model's layers)",
                           (int)l->layer_id, (int)m->num_layers - 1);
        if (sgl_attn_model_layer_is_full(m, l->layer_id))
            return vl_fail(c,
                           "layer->layer_id = %d is a full-attention layer; args->linear must be "
                           "NULL for it",
                           (int)l->layer_id);
    }
    int rc = check_caller_state(c, b, io);
    if (rc) return rc;
    if (!io->out) return vl_fail(c, "linear->out is NULL");
    if (io->out->ndim < 1 || io->out->ndim > 3 || !io->out->shape ||
        io->out->shape[0] != b->facts.num_tokens)
        return vl_fail(c, "linear->out must be [num_tokens = %d, ...] with 1 to 3 dimensions",
                       (int)b->facts.num_tokens);
    return SGL_ATTN_OK;
}

/* What the call writes must not share memory with what it reads: out with
 * q, k, v, the pools or the sinks; a pool being written with q, k or v; the
 * two pools with each other.  Device addresses are compared within one
 * device (one address space). */
static int check_aliasing(vl_ctx *c, const sgl_attn_forward_args *a) {
    const sgl_attn_layer *l = a->layer;
    const struct {
        const char *name;
        const DLTensor *t;
    } in[] = {{"q", a->q}, {"k", a->k}, {"v", a->v}, {"layer->k_cache", l->k_cache}, {"layer->v_cache", l->v_cache},
              {"layer->sinks", l->sinks}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (vl_overlap(a->out, in[i].t))
            return vl_fail(c, "out shares memory with %s (out is written while %s is read)", in[i].name, in[i].name);
    if (vl_overlap(l->k_cache, l->v_cache)) return vl_fail(c, "layer->k_cache and layer->v_cache share memory");
    const DLTensor *lse = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse);
    if (lse) {
        if (vl_overlap(lse, a->out)) return vl_fail(c, "args->lse shares memory with out (both are written)");
        for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
            if (vl_overlap(lse, in[i].t))
                return vl_fail(c, "args->lse shares memory with %s (lse is written while %s is read)", in[i].name,
                               in[i].name);
    }
    if (a->save_kv_cache)
        for (size_t i = 0; i < 3; i++)
            for (size_t p = 3; p < 5; p++)
                if (vl_overlap(in[p].t, in[i].t))
                    return vl_fail(c, "%s shares memory with %s (the pool is written from it)", in[p].name,
                                   in[i].name);
    return SGL_ATTN_OK;
}

/* ABI 1.2 layer and forward fields: each only to a backend whose caps claim it. */
static int check_v12(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a) {
    const sgl_attn_layer *l = a->layer;
    const struct { int set; const char *name; uint32_t feat; const char *feat_name; } v12[] = {
        {SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map) != NULL, "layer->slot_map", SGL_ATTN_FEAT_SLOT_MAP, "SLOT_MAP"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) != 0, "layer->attn_type", SGL_ATTN_FEAT_ATTN_TYPES,
         "ATTN_TYPES"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, k_scale_tensor) != NULL || SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, v_scale_tensor) != NULL ||
             SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale_tensor) != NULL,
         "a layer scale tensor", SGL_ATTN_FEAT_FP8_SCALES, "FP8_SCALES"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse) != NULL, "args->lse", SGL_ATTN_FEAT_LSE, "LSE"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope) != NULL || SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope) != NULL,
         "args->q_rope / k_rope", SGL_ATTN_FEAT_MLA_ROPE_SPLIT, "MLA_ROPE_SPLIT"},
    };
    for (size_t i = 0; i < sizeof v12 / sizeof v12[0]; i++)
        if (v12[i].set && !(b->caps.features & v12[i].feat))
            return vl_fail(c, "%s is set (ABI 1.2) but the backend does not claim SGL_ATTN_FEAT_%s", v12[i].name,
                           v12[i].feat_name);
    if (!b->model.is_mla) {
        const DLTensor *qr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope);
        if (qr || SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope))
            return vl_fail(c, "args->%s is set but the model is not MLA (q_rope / k_rope split MLA's q and k)",
                           qr ? "q_rope" : "k_rope");
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices))
            return vl_fail(c, "args->topk_indices is set but the model is not MLA (sparse MLA only)");
    }
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) < 0 || SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) > 2)
        return vl_fail(c, "layer->attn_type = %d; expected 0 causal, 1 bidirectional or 2 encoder-only",
                       (int)l->attn_type);
    return SGL_ATTN_OK;
}

int vl_check_forward(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a, int decode) {
    if (!a) return vl_fail(c, "args is NULL");
    if (a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0)
        return vl_fail(c, "args->struct_size = %u is smaller than the ABI 1.0 struct (%zu bytes)",
                       (unsigned)a->struct_size, (size_t)SGL_ATTN_FORWARD_ARGS_SIZE_V1_0);
    const sgl_attn_dual_chunk *dc = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk);
    if (dc && !(b->caps.features & SGL_ATTN_FEAT_DUAL_CHUNK))
        return vl_fail(c, "args->dual_chunk is set; the backend does not claim dual chunk attention and would "
                          "compute plain attention");
    if (dc && dc->struct_size < sizeof *dc)
        return vl_fail(c, "args->dual_chunk->struct_size = %u is smaller than the struct (%zu bytes)",
                       (unsigned)dc->struct_size, sizeof *dc);
    if (!b->facts.batch) return state_fail(c, "called before a successful init_forward_metadata");
    if (a->batch != b->facts.batch)
        return state_fail(c, "args->batch is not the batch given to init_forward_metadata");
    int rc = vl_snapshot_same(c, b, a->batch);
    if (rc) return rc;
    int32_t mode = b->facts.forward_mode;
    int fits = decode ? (mode == SGL_ATTN_MODE_DECODE || mode == SGL_ATTN_MODE_TARGET_VERIFY)
                      : (mode == SGL_ATTN_MODE_EXTEND || mode == SGL_ATTN_MODE_TARGET_VERIFY ||
                         mode == SGL_ATTN_MODE_DRAFT_EXTEND);
    if (!fits)
        return vl_fail(c, "the batch's forward_mode = %d does not go through %s", (int)mode, c->call);
    c->device_type = b->facts.device_type;
    c->device_id = b->facts.device_id;
    if (a->linear) return check_linear(c, b, a);
    if (!a->layer) return vl_fail(c, "args->layer is NULL");
    if ((rc = check_layer(c, b, a->layer))) return rc;
    if ((rc = check_v12(c, b, a))) return rc;
    if ((rc = check_tensors(c, b, a))) return rc;
    return check_aliasing(c, a);
}
