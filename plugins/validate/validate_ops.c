/* validate_ops.c - the ABI 1.2 calls beyond the paged forward: ragged
 * attention (forward_ragged), the batched state operations (state_batch) and
 * DSA's indexer (indexer_topk), checked on the host side before the inner
 * sees them: struct sizes, counts, every tensor's shape, dtype and device,
 * and, where the values are in host memory, offsets and slots. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "validate_internal.h"

/* The q / k / v / out dtypes of a call, as the inner claims them. */
static int claimed(vl_ctx *c, const DLTensor *t, const char *name, uint32_t dtypes) {
    if (sgl_attn_dtype_bit(t->dtype) & dtypes) return SGL_ATTN_OK;
    char buf[SGL_SDK_NAME_MAX];
    return vl_fail(c, "%s has dtype %s, which the backend does not claim", name, sgl_sdk_dtype_name(t->dtype, buf));
}

/* cu_seqlens: [bs + 1] offsets, 0 first, never decreasing; the mirror equal. */
static int check_cu(vl_ctx *c, const DLTensor *t, const DLTensor *mirror, const char *name, const char *mirror_name,
                    int32_t bs, const DLTensor **readable) {
    *readable = NULL;
    if (!t) return vl_fail(c, "%s is NULL", name);
    vl_tspec s = {name, "batch_size + 1", 1, {(int64_t)bs + 1, 0, 0}, 0, 0, 0, 0};
    int rc = vl_check_tensor(c, t, &s);
    if (rc) return rc;
    if (mirror) {
        vl_tspec m = {mirror_name, "batch_size + 1", 1, {(int64_t)bs + 1, 0, 0}, 0, 0, 1, 0};
        if ((rc = vl_check_tensor(c, mirror, &m))) return rc;
    }
    const DLTensor *r = vl_host_readable(t) ? t : mirror;
    const char *rn = r == t ? name : mirror_name;
    if (!r) return SGL_ATTN_OK;
    for (int32_t i = 0; i <= bs; i++) {
        const int64_t v = vl_idx1(r, i), prev = i ? vl_idx1(r, i - 1) : 0;
        if ((i == 0 && v != 0) || v < prev)
            return vl_fail(c, "%s[%d] = %lld after %lld; expected %s", rn, (int)i, (long long)v, (long long)prev,
                           i == 0 ? "0 first" : "offsets that never decrease (each request's length >= 0)");
        if (r != mirror && mirror && vl_idx1(mirror, i) != v)
            return vl_fail(c, "%s[%d] = %lld but %s[%d] = %lld: the host mirror disagrees", mirror_name, (int)i,
                           (long long)vl_idx1(mirror, i), name, (int)i, (long long)v);
    }
    *readable = r;
    return SGL_ATTN_OK;
}

/* max_seqlen_*: 0 (unknown) or at least every request's length. */
static int check_max(vl_ctx *c, const DLTensor *cu, int32_t bs, int32_t given, const char *name) {
    if (given < 0) return vl_fail(c, "args->%s = %d; expected 0 (unknown) or a length", name, (int)given);
    if (!cu || given == 0) return SGL_ATTN_OK;
    for (int32_t i = 0; i < bs; i++) {
        const int64_t n = vl_idx1(cu, i + 1) - vl_idx1(cu, i);
        if (n > given)
            return vl_fail(c, "args->%s = %d but request %d has %lld tokens; expected 0 (unknown) or at least that",
                           name, (int)given, (int)i, (long long)n);
    }
    return SGL_ATTN_OK;
}

int vl_check_ragged(vl_ctx *c, const vl_backend *b, const sgl_attn_ragged_args *a) {
    if (!a) return vl_fail(c, "args are NULL");
    if (!SGL_ATTN_HAS_FIELD(sgl_attn_ragged_args, a, stream))
        return vl_fail(c, "args->struct_size = %u is smaller than ABI 1.2's sgl_attn_ragged_args (%zu bytes)",
                       (unsigned)a->struct_size, offsetof(sgl_attn_ragged_args, stream) + sizeof a->stream);
    const uint32_t feats = b->caps.features;
    if (a->lse && !(feats & SGL_ATTN_FEAT_LSE))
        return vl_fail(c, "args->lse is set (ABI 1.2) but the backend does not claim SGL_ATTN_FEAT_LSE");
    const int32_t bs = a->batch_size;
    if (bs < 0 || bs > b->max_reqs)
        return vl_fail(c, "args->batch_size = %d is outside 0..%d (max_reqs given at create)", (int)bs,
                       (int)b->max_reqs);
    if (a->num_q_heads < 1 || a->num_kv_heads < 1 || a->num_q_heads % a->num_kv_heads)
        return vl_fail(c, "args->num_q_heads = %d is not a positive multiple of args->num_kv_heads = %d",
                       (int)a->num_q_heads, (int)a->num_kv_heads);
    if (a->head_dim_qk < 1 || a->head_dim_v < 1)
        return vl_fail(c, "args head dims (qk %d, v %d) must be >= 1", (int)a->head_dim_qk, (int)a->head_dim_v);
    if (a->head_dim_qk != a->head_dim_v && !(feats & SGL_ATTN_FEAT_DIFF_HEAD_DIMS))
        return vl_fail(c, "args head dims differ (qk %d, v %d); the backend does not claim different v head dims",
                       (int)a->head_dim_qk, (int)a->head_dim_v);
    if (!isfinite(a->sm_scale) || a->sm_scale <= 0.0f)
        return vl_fail(c, "args->sm_scale = %g; expected a finite value > 0", (double)a->sm_scale);
    if (!isfinite(a->logit_softcap) || a->logit_softcap < 0.0f)
        return vl_fail(c, "args->logit_softcap = %g; expected 0 (off) or a finite value > 0", (double)a->logit_softcap);
    if (a->logit_softcap > 0.0f && !(feats & SGL_ATTN_FEAT_SOFTCAP))
        return vl_fail(c, "args->logit_softcap = %g; the backend does not claim soft-capping", (double)a->logit_softcap);
    if (a->causal != 0 && a->causal != 1)
        return vl_fail(c, "args->causal = %d; expected 0 (every key) or 1 (bottom-right causal)", (int)a->causal);
    const DLTensor *cq, *ck;
    int rc;
    if ((rc = check_cu(c, a->cu_seqlens_q, a->cu_seqlens_q_cpu, "args->cu_seqlens_q", "args->cu_seqlens_q_cpu", bs,
                       &cq)) ||
        (rc = check_cu(c, a->cu_seqlens_k, a->cu_seqlens_k_cpu, "args->cu_seqlens_k", "args->cu_seqlens_k_cpu", bs,
                       &ck)))
        return rc;
    if ((rc = check_max(c, cq, bs, a->max_seqlen_q, "max_seqlen_q")) ||
        (rc = check_max(c, ck, bs, a->max_seqlen_k, "max_seqlen_k")))
        return rc;
    int64_t tq = cq ? vl_idx1(cq, bs) : VL_ANY, tk = ck ? vl_idx1(ck, bs) : VL_ANY;
    if (tq != VL_ANY && tq > b->max_tokens)
        return vl_fail(c, "cu_seqlens_q[%d] = %lld query tokens; expected at most %d (max_tokens given at create)",
                       (int)bs, (long long)tq, (int)b->max_tokens);
    const int64_t hq = a->num_q_heads, hkv = a->num_kv_heads, dqk = a->head_dim_qk, dv = a->head_dim_v;
    const uint32_t qd = b->caps.q_dtypes;
    /* q may be a view into a fused buffer (rows contiguous), or flattened */
    vl_tspec q = {"args->q", "cu_seqlens_q[bs], num_q_heads, head_dim_qk", 3, {tq, hq, dqk}, 0, 0, 0,
                  SGL_SDK_T_MERGED | SGL_SDK_T_ROWS};
    if (!a->q) return vl_fail(c, "args->q is NULL");
    q.dtypes = sgl_attn_dtype_bit(a->q->dtype) ? sgl_attn_dtype_bit(a->q->dtype) : SGL_ATTN_DT_F32;
    if ((rc = vl_check_tensor(c, a->q, &q)) || (rc = claimed(c, a->q, "args->q", qd))) return rc;
    const uint32_t dt = q.dtypes;
    if (tq == VL_ANY) tq = a->q->shape[0];
    vl_tspec k = {"args->k", "cu_seqlens_k[bs], num_kv_heads, head_dim_qk", 3, {tk, hkv, dqk}, dt, 0, 0, 0};
    if (!a->k) return vl_fail(c, "args->k is NULL");
    if ((rc = vl_check_tensor(c, a->k, &k))) return rc;
    if (tk == VL_ANY) tk = a->k->shape[0];
    vl_tspec v = {"args->v", "cu_seqlens_k[bs], num_kv_heads, head_dim_v", 3, {tk, hkv, dv}, dt, 0, 0, 0};
    vl_tspec o = {"args->out", "cu_seqlens_q[bs], num_q_heads, head_dim_v", 3, {tq, hq, dv}, dt, 1, 0,
                  SGL_SDK_T_MERGED};
    if (!a->v) return vl_fail(c, "args->v is NULL");
    if (!a->out) return vl_fail(c, "args->out is NULL");
    if ((rc = vl_check_tensor(c, a->v, &v)) || (rc = vl_check_tensor(c, a->out, &o))) return rc;
    if (a->lse) {
        vl_tspec l = {"args->lse", "cu_seqlens_q[bs], num_q_heads", 2, {tq, hq, 0}, SGL_ATTN_DT_F32, 1, 0, 0};
        if ((rc = vl_check_tensor(c, a->lse, &l))) return rc;
    }
    const struct {
        const char *name;
        const DLTensor *t;
    } in[] = {{"args->q", a->q}, {"args->k", a->k}, {"args->v", a->v}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        if (vl_overlap(a->out, in[i].t))
            return vl_fail(c, "args->out shares memory with %s (out is written while %s is read)", in[i].name,
                           in[i].name);
        if (vl_overlap(a->lse, in[i].t))
            return vl_fail(c, "args->lse shares memory with %s (lse is written while %s is read)", in[i].name,
                           in[i].name);
    }
    if (vl_overlap(a->lse, a->out)) return vl_fail(c, "args->lse shares memory with args->out (both are written)");
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------ state_batch */

static const char *op_name(int32_t op) {
    switch (op) {
    case SGL_ATTN_STATE_CLEAR: return "clear";
    case SGL_ATTN_STATE_COPY: return "copy";
    case SGL_ATTN_STATE_COMMIT: return "commit";
    default: return "track";
    }
}

/* One of dst / src / steps: [count] when the op reads it, NULL otherwise. */
static int index_arg(vl_ctx *c, const DLTensor *t, int needed, const char *name, int32_t op, int32_t count) {
    if (!needed) {
        if (t) return vl_fail(c, "args->%s is set; %s reads no %s (expected NULL)", name, op_name(op), name);
        return SGL_ATTN_OK;
    }
    if (!t) return vl_fail(c, "args->%s is NULL; %s needs [count] %s", name, op_name(op), name);
    char full[32];
    snprintf(full, sizeof full, "args->%s", name);
    vl_tspec s = {full, "count", 1, {count, 0, 0}, 0, 0, 0, 0};
    return vl_check_tensor(c, t, &s);
}

int vl_check_state_batch(vl_ctx *c, const vl_backend *b, const sgl_attn_state_batch_args *a) {
    if (!a) return vl_fail(c, "args are NULL");
    if (!SGL_ATTN_HAS_FIELD(sgl_attn_state_batch_args, a, stream))
        return vl_fail(c, "args->struct_size = %u is smaller than ABI 1.2's sgl_attn_state_batch_args (%zu bytes)",
                       (unsigned)a->struct_size, offsetof(sgl_attn_state_batch_args, stream) + sizeof a->stream);
    if (!(b->caps.features & SGL_ATTN_FEAT_CALLER_STATE))
        return vl_fail(c, "the backend does not claim SGL_ATTN_FEAT_CALLER_STATE (batched state operations)");
    const int32_t op = a->op;
    if (op < SGL_ATTN_STATE_CLEAR || op > SGL_ATTN_STATE_TRACK)
        return vl_fail(c, "args->op = %d; expected 1 (clear), 2 (copy), 3 (commit) or 4 (track)", (int)op);
    if (a->count < 0 || a->count > b->max_reqs)
        return vl_fail(c, "args->count = %d; expected 0..%d (max_reqs given at create)", (int)a->count,
                       (int)b->max_reqs);
    /* Slots: the caller's state tensors' first extent, or the wrapper's pool
     * (max_reqs slots); steps: the intermediate states' second extent. */
    int64_t slots = b->max_reqs, steps = -1;
    const char *where = "the wrapper's pool";
    const sgl_attn_linear_io *io = a->state;
    if (io) {
        if (!SGL_ATTN_HAS_FIELD(sgl_attn_linear_io, io, state_indices))
            return vl_fail(c, "args->state->struct_size = %u is smaller than ABI 1.2's sgl_attn_linear_io (%zu bytes)",
                           (unsigned)io->struct_size,
                           offsetof(sgl_attn_linear_io, state_indices) + sizeof io->state_indices);
        const DLTensor *st = io->ssm_state ? io->ssm_state : io->conv_state;
        if (!st) return vl_fail(c, "args->state names no state tensor (conv_state, ssm_state); pass NULL to act on "
                                   "the wrapper's pool");
        if (st->ndim < 1 || !st->shape) return vl_fail(c, "args->state's state tensor has no dimensions");
        slots = st->shape[0];
        where = io->ssm_state ? "args->state->ssm_state" : "args->state->conv_state";
        const DLTensor *in = io->intermediate_ssm_state ? io->intermediate_ssm_state : io->intermediate_conv_state;
        if (in && in->ndim >= 2 && in->shape) steps = in->shape[1];
    }
    const int has_src = op == SGL_ATTN_STATE_COPY || op == SGL_ATTN_STATE_TRACK;
    const int has_steps = op == SGL_ATTN_STATE_COMMIT || op == SGL_ATTN_STATE_TRACK;
    int rc;
    if ((rc = index_arg(c, a->dst, 1, "dst", op, a->count)) || (rc = index_arg(c, a->src, has_src, "src", op, a->count)) ||
        (rc = index_arg(c, a->steps, has_steps, "steps", op, a->count)))
        return rc;
    if (!vl_host_readable(a->dst)) return SGL_ATTN_OK;
    for (int32_t i = 0; i < a->count; i++) {
        const int64_t d = vl_idx1(a->dst, i);
        if (d < -1 || d >= slots)
            return vl_fail(c, "args->dst[%d] = %lld; expected -1 (skip) or a slot 0..%lld (%s)", (int)i, (long long)d,
                           (long long)slots - 1, where);
        if (d < 0) continue;
        if (has_src && vl_host_readable(a->src)) {
            const int64_t s = vl_idx1(a->src, i);
            if (s < 0 || s >= slots)
                return vl_fail(c, "args->src[%d] = %lld; expected a slot 0..%lld (%s)", (int)i, (long long)s,
                               (long long)slots - 1, where);
        }
        if (has_steps && vl_host_readable(a->steps)) {
            const int64_t t = vl_idx1(a->steps, i);
            if (t < -1 || (steps >= 0 && t >= steps))
                return vl_fail(c, "args->steps[%d] = %lld; expected -1 (keep) or an intermediate step%s", (int)i,
                               (long long)t, steps >= 0 ? " below the intermediate states' steps" : " >= 0");
        }
    }
    return SGL_ATTN_OK;
}

/* ---------------------------------------------------------- indexer_topk */

int vl_check_indexer(vl_ctx *c, const vl_backend *b, const sgl_attn_indexer_args *a) {
    if (!a) return vl_fail(c, "args are NULL");
    if (!SGL_ATTN_HAS_FIELD(sgl_attn_indexer_args, a, topk_indices))
        return vl_fail(c, "args->struct_size = %u is smaller than ABI 1.2's sgl_attn_indexer_args (%zu bytes)",
                       (unsigned)a->struct_size, sizeof *a);
    if (!b->facts.batch) return vl_fail(c, "called before a successful init_forward_metadata"), SGL_ATTN_E_STATE;
    if (a->batch != b->facts.batch)
        return vl_fail(c, "args->batch is not the batch given to init_forward_metadata"), SGL_ATTN_E_STATE;
    int rc = vl_snapshot_same(c, b, a->batch);
    if (rc) return rc;
    const sgl_attn_model *m = &b->model;
    if (a->layer_id < 0 || a->layer_id >= m->num_layers)
        return vl_fail(c, "args->layer_id = %d is outside 0..%d (the model's layers)", (int)a->layer_id,
                       (int)m->num_layers - 1);
    if (a->topk < 1) return vl_fail(c, "args->topk = %d; expected >= 1 (the model's index_topk)", (int)a->topk);
    c->device_type = b->facts.device_type;
    c->device_id = b->facts.device_id;
    const int64_t T = b->facts.num_tokens;
    const int64_t ih = m->index_n_heads > 0 ? m->index_n_heads : VL_ANY;
    const int64_t id = m->index_head_dim > 0 ? m->index_head_dim : VL_ANY;
    const uint32_t in_dt = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    vl_tspec q = {"args->q", "num_tokens, index_n_heads, index_head_dim", 3, {T, ih, id},
                  in_dt | SGL_ATTN_DT_FP8_E4M3, 0, 0, 0};
    vl_tspec w = {"args->weights", "num_tokens, index_n_heads", 2, {T, ih, 0}, SGL_ATTN_DT_F32, 0, 0, 0};
    vl_tspec kc = {"args->index_k_cache", "slots, index_head_dim", 2, {VL_ANY, id, 0}, SGL_ATTN_DT_FP8_E4M3,
                   a->save_index_k != 0, 0, 0};
    vl_tspec out = {"args->topk_indices", "num_tokens, topk", 2, {T, a->topk, 0}, 0, 1, 0, 0};
    if (!a->q) return vl_fail(c, "args->q is NULL");
    if (!a->weights) return vl_fail(c, "args->weights is NULL");
    if (!a->index_k_cache) return vl_fail(c, "args->index_k_cache is NULL");
    if (!a->index_k_scale) return vl_fail(c, "args->index_k_scale is NULL");
    if (!a->topk_indices) return vl_fail(c, "args->topk_indices is NULL");
    if ((rc = vl_check_tensor(c, a->q, &q)) || (rc = vl_check_tensor(c, a->weights, &w)) ||
        (rc = vl_check_tensor(c, a->index_k_cache, &kc)))
        return rc;
    const int64_t slots = a->index_k_cache->shape[0], dim = a->index_k_cache->shape[1];
    if (dim % SGL_ATTN_DSA_SCALE_BLOCK)
        return vl_fail(c, "args->index_k_cache has %lld dims per slot; expected a multiple of %d", (long long)dim,
                       SGL_ATTN_DSA_SCALE_BLOCK);
    vl_tspec ks = {"args->index_k_scale", "slots of index_k_cache, index_head_dim / 128", 2,
                   {slots, dim / SGL_ATTN_DSA_SCALE_BLOCK, 0}, SGL_ATTN_DT_F32, a->save_index_k != 0, 0, 0};
    if ((rc = vl_check_tensor(c, a->index_k_scale, &ks)) || (rc = vl_check_tensor(c, a->topk_indices, &out)))
        return rc;
    if (a->topk_indices->dtype.bits != 32)
        return vl_fail(c, "args->topk_indices is int64; expected int32 (page-encoded pool slots)");
    if (a->save_index_k) {
        vl_tspec k = {"args->k", "num_tokens, index_head_dim", 2, {T, dim, 0}, in_dt, 0, 0, 0};
        if (!a->k) return vl_fail(c, "args->k is NULL but save_index_k is set");
        if ((rc = vl_check_tensor(c, a->k, &k))) return rc;
    }
    const vl_slot_fact *f = &b->facts.max_slot;
    if (f->value >= slots)
        return vl_fail(c, "%s = %lld is outside index_k_cache's %lld slots", f->where, (long long)f->value,
                       (long long)slots);
    if (vl_overlap(a->topk_indices, a->q) || vl_overlap(a->topk_indices, a->weights) ||
        vl_overlap(a->topk_indices, a->index_k_cache))
        return vl_fail(c, "args->topk_indices shares memory with an input of the call");
    return SGL_ATTN_OK;
}
