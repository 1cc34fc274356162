/* shapes.c - what each kind reads from the model and from a forward call,
 * and how big its state is.  docs/hybrid.md is the prose of this file. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hyb.h"

static const char *kind_name(int kind) {
    static const char *const names[] = {"none", "gdn", "mamba2", "short_conv", "kda",
                                        "lightning", "minimax_sparse", "custom"};
    return kind >= 0 && kind < SGL_ATTN_HYBRID_COUNT_ ? names[kind] : "unknown";
}

size_t hyb_state_esz(const sgl_attn_model *m) {
    switch (m->lin_state_dtype) {
    case 0:
    case SGL_ATTN_DT_F32: return 4;
    case SGL_ATTN_DT_F64: return 8;
    default: return 0;
    }
}

int hyb_layer_is_own(int kind, const sgl_attn_model *m, int layer) {
    if (layer < 0 || layer >= m->num_layers) return 0;
    if (kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) return sgl_attn_model_layer_is_sparse(m, layer);
    return !sgl_attn_model_layer_is_full(m, layer);
}

static int need(int ok, char *why, size_t n, const char *field, int32_t value, const char *want) {
    if (!ok) hyb_str(why, n, "model field %s = %d; expected %s", field, (int)value, want);
    return ok;
}

#define NEED(cond, field, want) \
    do { if (!need((cond), why, n, #field, m->field, (want))) return SGL_ATTN_E_UNSUPPORTED; } while (0)

int hyb_dims_from_model(int kind, const sgl_attn_model *m, hyb_dims *d, char *why, size_t n) {
    memset(d, 0, sizeof *d);
    d->kind = kind;
    NEED(m->num_layers >= 1 && m->num_layers <= SGL_ATTN_MAX_LAYERS, num_layers, "1..1024");
    if (m->hybrid_kind != (uint32_t)kind) {
        hyb_str(why, n, "model '%s' (model_type %s) has hybrid kind %s; this wrapper computes %s",
                m->name, m->model_type, kind_name((int)m->hybrid_kind), kind_name(kind));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    switch (kind) {
    case SGL_ATTN_HYBRID_GDN:
    case SGL_ATTN_HYBRID_KDA:
    case SGL_ATTN_HYBRID_MAMBA2:
        NEED(m->lin_num_k_heads >= 1, lin_num_k_heads, ">= 1");
        NEED(m->lin_num_v_heads >= 1 && m->lin_num_v_heads % m->lin_num_k_heads == 0,
             lin_num_v_heads, "a positive multiple of lin_num_k_heads");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= HYB_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 1 && m->lin_head_v_dim <= HYB_DIM_MAX, lin_head_v_dim, "1..1024");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= HYB_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->hk = m->lin_num_k_heads;
        d->hv = m->lin_num_v_heads;
        d->dk = m->lin_head_k_dim;
        d->dv = m->lin_head_v_dim;
        d->conv_w = m->lin_conv_kernel;
        /* gdn/kda: q, k (HK*K each) and v (HV*V); mamba2: x (H*P), B and C (G*N each) */
        d->conv_dim = 2 * d->hk * d->dk + d->hv * d->dv;
        d->ssm_elems = (int64_t)d->hv * d->dv * d->dk;
        break;
    case SGL_ATTN_HYBRID_SHORT_CONV:
        NEED(m->lin_hidden >= 1 && m->lin_hidden <= 65536, lin_hidden, "1..65536");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= HYB_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->conv_dim = m->lin_hidden;
        d->conv_w = m->lin_conv_kernel;
        break;
    case SGL_ATTN_HYBRID_LIGHTNING:
        NEED(m->lin_num_v_heads >= 1, lin_num_v_heads, ">= 1");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= HYB_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 0 && m->lin_head_v_dim <= HYB_DIM_MAX, lin_head_v_dim,
             "0..1024 (0: same as lin_head_k_dim)");
        d->hv = d->hk = m->lin_num_v_heads;
        d->dk = m->lin_head_k_dim;
        d->dv = m->lin_head_v_dim ? m->lin_head_v_dim : m->lin_head_k_dim;
        d->ssm_elems = (int64_t)d->hv * d->dv * d->dk;
        break;
    case SGL_ATTN_HYBRID_MINIMAX_SPARSE:
        NEED(m->sparse_block_size >= 1 && m->sparse_block_size <= 65536, sparse_block_size, "1..65536");
        NEED(m->sparse_topk_blocks >= 1, sparse_topk_blocks, ">= 1");
        NEED(!m->is_mla, is_mla, "0 (the sparse layers read an MHA/GQA pool)");
        NEED(m->num_kv_heads >= 1 && m->num_q_heads % m->num_kv_heads == 0, num_kv_heads,
             "a divisor of num_q_heads");
        NEED(m->head_dim_qk >= 1 && m->head_dim_qk <= HYB_DIM_MAX, head_dim_qk, "1..1024");
        NEED(m->head_dim_v >= 1 && m->head_dim_v <= HYB_DIM_MAX, head_dim_v, "1..1024");
        NEED(m->logit_softcap == 0, logit_softcap, "0 (sparse layers have no soft-cap)");
        NEED(!m->has_sinks, has_sinks, "0 (sparse layers have no sinks)");
        d->block = m->sparse_block_size;
        d->topk = m->sparse_topk_blocks;
        d->init_blocks = 1;  /* MiniMax: sparse_init_block / _tokens; not in the model struct */
        d->local_blocks = 1; /* the query's own block */
        break;
    default:
        hyb_str(why, n, "hybrid kind %d is not one of the shipped wrappers", kind);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (hyb_state_esz(m) == 0) {
        hyb_str(why, n, "model field lin_state_dtype = 0x%x; the CPU wrappers keep float32 "
                        "(or float64, the reference) state", (unsigned)m->lin_state_dtype);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    d->stateful = kind != SGL_ATTN_HYBRID_MINIMAX_SPARSE;
    d->x_dim = kind == SGL_ATTN_HYBRID_SHORT_CONV ? 3 * d->conv_dim : d->conv_dim;
    d->conv_elems = d->conv_w > 0 ? (int64_t)d->conv_dim * (d->conv_w - 1) : 0;
    for (int l = 0; l < m->num_layers; l++) d->n_lin += hyb_layer_is_own(kind, m, l);
    return SGL_ATTN_OK;
}

uint64_t hyb_state_bytes(int kind, const sgl_attn_model *m) {
    hyb_dims d;
    char why[8];
    if (hyb_dims_from_model(kind, m, &d, why, sizeof why) != SGL_ATTN_OK || !d.stateful) return 0;
    return (uint64_t)d.n_lin * (uint64_t)(d.conv_elems + d.ssm_elems) * hyb_state_esz(m);
}

/* ------------------------------------------------------ forward inputs */

#define CHECK(t, what, nd, ...)                                                        \
    do {                                                                               \
        const int64_t shp_[] = {__VA_ARGS__};                                          \
        char pre_[96];                                                                 \
        snprintf(pre_, sizeof pre_, "%s layer %d: %s", w->impl->name, lid, (what));    \
        int rc_ = hyb_tensor_check((t), pre_, (nd), shp_, w->err, sizeof w->err);     \
        if (rc_) return rc_;                                                           \
    } while (0)

int hyb_check_io(hyb_inst *w, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io) {
    const hyb_dims *d = &w->d;
    const int lid = a->layer->layer_id;
    const int64_t T = w->plan.T;
    if (d->kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) {
        const sgl_attn_layer *L = a->layer;
        const sgl_attn_model *m = &w->model;
        if (L->num_q_heads != m->num_q_heads || L->num_kv_heads != m->num_kv_heads ||
            L->head_dim_qk != m->head_dim_qk || L->head_dim_v != m->head_dim_v) {
            hyb_set_err(w, "%s layer %d: layer heads %d/%d, dims %d/%d differ from the model's "
                        "%d/%d, %d/%d", w->impl->name, lid, L->num_q_heads, L->num_kv_heads,
                        L->head_dim_qk, L->head_dim_v, m->num_q_heads, m->num_kv_heads,
                        m->head_dim_qk, m->head_dim_v);
            return SGL_ATTN_E_INVALID;
        }
        if (L->logit_softcap != 0 || L->sinks || L->sliding_window >= 0 || L->is_cross) {
            hyb_set_err(w, "%s layer %d: sparse layers compute plain causal softmax attention; "
                        "soft-cap, sinks, sliding window and cross attention are not served",
                        w->impl->name, lid);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        const int64_t Hq = L->num_q_heads, Hkv = L->num_kv_heads;
        CHECK(a->q, "q", 3, T, Hq, L->head_dim_qk);
        CHECK(a->k, "k", 3, T, Hkv, L->head_dim_qk);
        CHECK(a->v, "v", 3, T, Hkv, L->head_dim_v);
        CHECK(a->out, "out", 3, T, Hq, L->head_dim_v);
        CHECK(L->k_cache, "k_cache", 3, -1, Hkv, L->head_dim_qk);
        CHECK(L->v_cache, "v_cache", 3, L->k_cache->shape[0], Hkv, L->head_dim_v);
        return SGL_ATTN_OK;
    }
    if (!io) {
        hyb_set_err(w, "%s layer %d is a linear-attention layer (not in the model's "
                    "full-attention set) but forward args carry no linear inputs (args->linear "
                    "is NULL)", w->impl->name, lid);
        return SGL_ATTN_E_INVALID;
    }
    if (io->kind != d->kind) {
        hyb_set_err(w, "%s layer %d: linear->kind = %d; expected %d (%s)", w->impl->name, lid,
                    io->kind, d->kind, w->impl->name);
        return SGL_ATTN_E_INVALID;
    }
    const int64_t C = d->conv_dim, W = d->conv_w, HV = d->hv, K = d->dk, V = d->dv;
    if (d->conv_w > 0) {
        CHECK(io->x, "linear.x", 2, T, d->x_dim);
        CHECK(io->conv_weight, "linear.conv_weight", 2, C, W);
        if (io->conv_bias) CHECK(io->conv_bias, "linear.conv_bias", 1, C);
    }
    DLTensor *out = io->out ? io->out : a->out;
    switch (d->kind) {
    case SGL_ATTN_HYBRID_GDN:
    case SGL_ATTN_HYBRID_KDA:
        CHECK(io->a, d->kind == SGL_ATTN_HYBRID_GDN ? "linear.a" : "linear.a (gate)", 2, T,
              d->kind == SGL_ATTN_HYBRID_GDN ? HV : HV * K);
        CHECK(io->b, "linear.b", 2, T, HV);
        CHECK(io->A_log, "linear.A_log", 1, HV);
        CHECK(io->dt_bias, "linear.dt_bias", 1, d->kind == SGL_ATTN_HYBRID_GDN ? HV : HV * K);
        CHECK(out, "linear.out", 3, T, HV, V);
        break;
    case SGL_ATTN_HYBRID_MAMBA2:
        CHECK(io->a, "linear.a (dt)", 2, T, HV);
        CHECK(io->A_log, "linear.A_log", 1, HV);
        CHECK(io->dt_bias, "linear.dt_bias", 1, HV);
        if (io->D) CHECK(io->D, "linear.D", 1, HV);
        CHECK(out, "linear.out", 3, T, HV, V);
        break;
    case SGL_ATTN_HYBRID_SHORT_CONV:
        CHECK(out, "linear.out", 2, T, C);
        break;
    case SGL_ATTN_HYBRID_LIGHTNING:
        CHECK(a->q, "q", 3, T, HV, K);
        CHECK(a->k, "k", 3, T, HV, K);
        CHECK(a->v, "v", 3, T, HV, V);
        CHECK(io->decay, "linear.decay", 1, HV);
        CHECK(out, "linear.out", 3, T, HV, V);
        break;
    default:
        hyb_set_err(w, "%s: kind %d has no compute", w->impl->name, d->kind);
        return SGL_ATTN_E_INTERNAL;
    }
    return SGL_ATTN_OK;
}
