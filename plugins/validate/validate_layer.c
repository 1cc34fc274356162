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
    const int64_t dq = q_rope && q_rope->ndim == 3 ? dqk - q_rope->shape[2] : dqk;
    /* Cross layers take the encoder's K/V, whose token count is not T. */
    int64_t tk = l->is_cross ? VL_ANY : T;
    vl_tspec q = {"q", "num_tokens, num_q_heads, head_dim_qk", 3, {T, hq, dq}, act, 0, 0};
    vl_tspec o = {"out", "num_tokens, num_q_heads, head_dim_v", 3, {T, hq, dv}, act, 1, 0};
    /* sglang hands q (and out) over flattened, [T, H * D] (docs/abi.md, Tensors) */
    if (a->q && a->q->ndim == 2) q = (vl_tspec){"q", "num_tokens, num_q_heads * head_dim_qk", 2, {T, hq * dq, 0}, act, 0, 0};
    if (a->out && a->out->ndim == 2)
        o = (vl_tspec){"out", "num_tokens, num_q_heads * head_dim_v", 2, {T, hq * dv, 0}, act, 1, 0};
    vl_tspec k = {
        "k", mla ? "num_tokens, 1, kv_lora_rank + rope" : "num_tokens, num_kv_heads, head_dim_qk",
        3,   {tk, mla ? 1 : hkv, dq},
        act, 0,
        0};
    vl_tspec v = {"v", "num_tokens, num_kv_heads, head_dim_v", 3, {tk, hkv, dv}, act, 0, 0};
    vl_tspec kc = {"layer->k_cache",
                   mla ? "slots, 1, kv_lora_rank + rope" : "slots, num_kv_heads, head_dim_qk",
                   3,
                   {VL_ANY, mla ? 1 : hkv, dqk},
                   kvd,
                   a->save_kv_cache != 0,
                   0};
    if ((rc = check_t(c, a->q, &q, b->caps.q_dtypes, "q"))) return rc;
    if ((rc = check_t(c, a->out, &o, b->caps.q_dtypes, "out"))) return rc;
    if (a->save_kv_cache || a->k)
        if ((rc = check_t(c, a->k, &k, b->caps.q_dtypes, "new keys"))) return rc;
    if (mla && a->v) return vl_fail(c, "v must be NULL on an MLA model (values live in k_cache)");
    if (!mla && (a->save_kv_cache || a->v))
        if ((rc = check_t(c, a->v, &v, b->caps.q_dtypes, "new values"))) return rc;
    if ((rc = check_t(c, l->k_cache, &kc, b->caps.kv_dtypes, "the KV pool"))) return rc;
    int64_t slots = l->k_cache->shape[0];
    if (mla && l->v_cache) return vl_fail(c, "layer->v_cache must be NULL on an MLA model");
    if (!mla) {
        vl_tspec vc = {"layer->v_cache",
                       "slots of k_cache, num_kv_heads, head_dim_v",
                       3,
                       {slots, hkv, dv},
                       kvd,
                       a->save_kv_cache != 0,
                       0};
        if ((rc = check_t(c, l->v_cache, &vc, b->caps.kv_dtypes, "the KV pool"))) return rc;
    }
    if (l->sinks) {
        vl_tspec s = {"layer->sinks", "num_q_heads", 1, {hq, 0, 0}, SGL_ATTN_DT_F32, 0, 0};
        if ((rc = vl_check_tensor(c, l->sinks, &s))) return rc;
    }
    const vl_slot_fact *f = &b->facts.max_slot;
    if (f->value >= slots)
        return vl_fail(c, "%s = %lld is outside the KV pool of %lld slots", f->where,
                       (long long)f->value, (long long)slots);
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
    if (!io->out) return vl_fail(c, "linear->out is NULL");
    if (io->out->ndim < 1 || io->out->ndim > 3 || !io->out->shape ||
        io->out->shape[0] != b->facts.num_tokens)
        return vl_fail(c, "linear->out must be [num_tokens = %d, ...] with 1 to 3 dimensions",
                       (int)b->facts.num_tokens);
    return SGL_ATTN_OK;
}

/* The bytes a (checked) tensor spans: [lo, hi) from its data pointer. */
static void span(const DLTensor *t, uintptr_t *lo, uintptr_t *hi) {
    const int64_t esz = (t->dtype.bits * t->dtype.lanes + 7) / 8;
    int64_t neg = 0, pos = 0, numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        numel *= t->shape[d];
        if (!t->strides) continue;
        int64_t reach = (t->shape[d] - 1) * t->strides[d];
        if (reach < 0) neg += reach;
        else pos += reach;
    }
    if (!t->strides) pos = numel - 1;
    uintptr_t base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    *lo = base + (uintptr_t)(neg * esz);
    *hi = base + (uintptr_t)((pos + 1) * esz);
    if (numel == 0) *hi = *lo;
}

static int overlap(const DLTensor *a, const DLTensor *b) {
    if (!a || !b || a->device.device_type != b->device.device_type || a->device.device_id != b->device.device_id)
        return 0;
    uintptr_t alo, ahi, blo, bhi;
    span(a, &alo, &ahi);
    span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
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
        if (overlap(a->out, in[i].t))
            return vl_fail(c, "out shares memory with %s (out is written while %s is read)", in[i].name, in[i].name);
    if (overlap(l->k_cache, l->v_cache)) return vl_fail(c, "layer->k_cache and layer->v_cache share memory");
    if (a->save_kv_cache)
        for (size_t i = 0; i < 3; i++)
            for (size_t p = 3; p < 5; p++)
                if (overlap(in[p].t, in[i].t))
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
                      : (mode == SGL_ATTN_MODE_EXTEND || mode == SGL_ATTN_MODE_TARGET_VERIFY);
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
