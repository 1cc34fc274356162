/* sdk_linear.c - see sdk_linear.h. */
#include "sdk_linear.h"

#include <string.h>

#include "sdk_text.h"

const char *sgl_sdk_lin_kind_name(int kind) {
    static const char *const names[] = {"none", "gdn", "mamba2", "short_conv", "kda", "lightning",
                                        "minimax_sparse", "custom"};
    return kind >= 0 && kind < SGL_ATTN_HYBRID_COUNT_ ? names[kind] : "unknown";
}

int sgl_sdk_lin_layer_is_own(int kind, const sgl_attn_model *m, int layer) {
    if (layer < 0 || layer >= m->num_layers) return 0;
    if (kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) return sgl_attn_model_layer_is_sparse(m, layer);
    return !sgl_attn_model_layer_is_full(m, layer);
}

int32_t sgl_sdk_lin_verify_steps(const sgl_attn_model *m) { return m && m->spec_tokens > 1 ? m->spec_tokens : 0; }

/* a * b * c elements into *out; 0 on overflow. */
static int elems(uint64_t *out, uint64_t a, uint64_t b, uint64_t c) {
    return !__builtin_mul_overflow(a, b, out) && !__builtin_mul_overflow(*out, c, out);
}

int sgl_sdk_lin_pool_of(const sgl_sdk_lin_dims *d, int32_t slots, int32_t steps, sgl_sdk_lin_pool *p) {
    memset(p, 0, sizeof *p);
    p->layers = d->n_lin;
    p->slots = slots > 0 ? slots : 0;
    p->steps = steps > 1 ? steps : 0;
    const uint64_t ls = (uint64_t)p->layers * (uint64_t)p->slots, conv = (uint64_t)d->conv_elems,
                   ssm = (uint64_t)d->ssm_elems;
    return elems(&p->conv, ls, conv, 1) && elems(&p->ssm, ls, ssm, 1) &&
           elems(&p->iconv, ls, (uint64_t)p->steps, conv) && elems(&p->issm, ls, (uint64_t)p->steps, ssm);
}

static int need(int ok, char *why, size_t n, const char *field, int32_t value, const char *want) {
    if (!ok) sgl_sdk_str(why, n, "model field %s = %d; expected %s", field, (int)value, want);
    return ok;
}

#define NEED(cond, field, want)                                                                                \
    do {                                                                                                       \
        if (!need((cond), why, n, #field, m->field, (want))) return SGL_ATTN_E_UNSUPPORTED;                   \
    } while (0)

static int state_dtype(const sgl_attn_model *m, uint32_t accepted, sgl_sdk_lin_dims *d, char *why, size_t n) {
    const uint32_t dt = m->lin_state_dtype ? m->lin_state_dtype : SGL_ATTN_DT_F32;
    const int single = dt && !(dt & (dt - 1));
    if (!single || !(dt & accepted)) {
        char want[96];
        sgl_sdk_dtype_set_name(accepted, want, sizeof want);
        sgl_sdk_str(why, n, "model field lin_state_dtype = 0x%x; this wrapper keeps %s state",
                    (unsigned)m->lin_state_dtype, want);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    d->state_dt = dt;
    d->esz = dt == SGL_ATTN_DT_F64 ? 8 : dt == SGL_ATTN_DT_F32 ? 4 : 2;
    return SGL_ATTN_OK;
}

int sgl_sdk_lin_dims_of(int kind, const sgl_attn_model *m, uint32_t state_dtypes, sgl_sdk_lin_dims *d, char *why,
                        size_t n) {
    memset(d, 0, sizeof *d);
    d->kind = kind;
    if (!m) {
        sgl_sdk_str(why, n, "no model");
        return SGL_ATTN_E_INVALID;
    }
    NEED(m->num_layers >= 1 && m->num_layers <= SGL_ATTN_MAX_LAYERS, num_layers, "1..1024");
    if (m->hybrid_kind != (uint32_t)kind) {
        sgl_sdk_str(why, n, "model '%s' (model_type %s) has hybrid kind %s; this wrapper computes %s", m->name,
                    m->model_type, sgl_sdk_lin_kind_name((int)m->hybrid_kind), sgl_sdk_lin_kind_name(kind));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    switch (kind) {
    case SGL_ATTN_HYBRID_GDN:
    case SGL_ATTN_HYBRID_KDA:
    case SGL_ATTN_HYBRID_MAMBA2:
        NEED(m->lin_num_k_heads >= 1, lin_num_k_heads, ">= 1");
        NEED(m->lin_num_v_heads >= 1 && m->lin_num_v_heads % m->lin_num_k_heads == 0, lin_num_v_heads,
             "a positive multiple of lin_num_k_heads");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= SGL_SDK_LIN_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 1 && m->lin_head_v_dim <= SGL_SDK_LIN_DIM_MAX, lin_head_v_dim, "1..1024");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= SGL_SDK_LIN_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->hk = m->lin_num_k_heads;
        d->hv = m->lin_num_v_heads;
        d->dk = m->lin_head_k_dim;
        d->dv = m->lin_head_v_dim;
        d->conv_w = m->lin_conv_kernel;
        /* gdn/kda: q, k (HK * K each) and v (HV * V); mamba2: x (H * P), B and C (G * N each) */
        d->conv_dim = 2 * d->hk * d->dk + d->hv * d->dv;
        d->ssm_elems = (int64_t)d->hv * d->dv * d->dk;
        break;
    case SGL_ATTN_HYBRID_SHORT_CONV:
        NEED(m->lin_hidden >= 1 && m->lin_hidden <= 65536, lin_hidden, "1..65536");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= SGL_SDK_LIN_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->conv_dim = m->lin_hidden;
        d->conv_w = m->lin_conv_kernel;
        break;
    case SGL_ATTN_HYBRID_LIGHTNING:
        NEED(m->lin_num_v_heads >= 1, lin_num_v_heads, ">= 1");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= SGL_SDK_LIN_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 0 && m->lin_head_v_dim <= SGL_SDK_LIN_DIM_MAX, lin_head_v_dim,
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
        NEED(m->head_dim_qk >= 1 && m->head_dim_qk <= SGL_SDK_LIN_DIM_MAX, head_dim_qk, "1..1024");
        NEED(m->head_dim_v >= 1 && m->head_dim_v <= SGL_SDK_LIN_DIM_MAX, head_dim_v, "1..1024");
        NEED(m->logit_softcap == 0, logit_softcap, "0 (sparse layers have no soft-cap)");
        NEED(!m->has_sinks, has_sinks, "0 (sparse layers have no sinks)");
        d->block = m->sparse_block_size;
        d->topk = m->sparse_topk_blocks;
        d->init_blocks = 1;  /* MiniMax: sparse_init_block / _tokens; not in the model struct */
        d->local_blocks = 1; /* the query's own block */
        break;
    default:
        sgl_sdk_str(why, n, "hybrid kind %d (%s) has no linear-attention shapes", kind, sgl_sdk_lin_kind_name(kind));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = state_dtype(m, state_dtypes, d, why, n);
    if (rc) return rc;
    d->stateful = kind != SGL_ATTN_HYBRID_MINIMAX_SPARSE;
    d->gsz = d->hk > 0 ? d->hv / d->hk : 1;
    d->gc = kind == SGL_ATTN_HYBRID_KDA ? d->dk : 1;
    d->x_dim = kind == SGL_ATTN_HYBRID_SHORT_CONV ? 3 * d->conv_dim : d->conv_dim;
    d->conv_elems = d->conv_w > 0 ? (int64_t)d->conv_dim * (d->conv_w - 1) : 0;
    for (int l = 0; l < m->num_layers; l++) d->n_lin += sgl_sdk_lin_layer_is_own(kind, m, l);
    return SGL_ATTN_OK;
}

int sgl_sdk_lin_supports(int kind, const sgl_attn_model *m, uint32_t state_dtypes, char *why, size_t n) {
    if (m && kind == SGL_ATTN_HYBRID_GDN && m->is_mla) {
        sgl_sdk_str(why, n, "hybrid_gdn can only be used with non-MLA models.");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    sgl_sdk_lin_dims d;
    return sgl_sdk_lin_dims_of(kind, m, state_dtypes, &d, why, n);
}

uint64_t sgl_sdk_lin_state_bytes(int kind, const sgl_attn_model *m, uint32_t state_dtypes) {
    sgl_sdk_lin_dims d;
    char why[8];
    if (sgl_sdk_lin_dims_of(kind, m, state_dtypes, &d, why, sizeof why) != SGL_ATTN_OK || !d.stateful) return 0;
    /* The pool keeps a request's state and, when the model verifies drafts
     * (spec_tokens > 1), its state after each draft token: 1 + spec_tokens
     * copies, which an engine sizing memory from this must count. */
    const uint64_t copies = 1u + (m->spec_tokens > 1 ? (uint64_t)m->spec_tokens : 0u);
    return (uint64_t)d.n_lin * (uint64_t)(d.conv_elems + d.ssm_elems) * (uint64_t)d.esz * copies;
}

/* One input: its tensor, name and the shape it must have. */
typedef struct lin_input {
    const DLTensor *t;
    const char *name;
    int ndim;
    int64_t s0, s1, s2;
    int optional;
} lin_input;

static int inputs_of(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io,
                     int64_t T, lin_input *in) {
    const int64_t C = d->conv_dim, W = d->conv_w, HV = d->hv, K = d->dk, V = d->dv;
    const DLTensor *out = io->out ? io->out : a->out;
    const int gdn = d->kind == SGL_ATTN_HYBRID_GDN;
    int k = 0;
    if (W > 0) {
        in[k++] = (lin_input){io->x, "linear.x", 2, T, d->x_dim, 0, 0};
        in[k++] = (lin_input){io->conv_weight, "linear.conv_weight", 2, C, W, 0, 0};
        in[k++] = (lin_input){io->conv_bias, "linear.conv_bias", 1, C, 0, 0, 1};
    }
    switch (d->kind) {
    case SGL_ATTN_HYBRID_GDN:
    case SGL_ATTN_HYBRID_KDA:
        in[k++] = (lin_input){io->a, gdn ? "linear.a" : "linear.a (gate)", 2, T, gdn ? HV : HV * K, 0, 0};
        in[k++] = (lin_input){io->b, "linear.b", 2, T, HV, 0, 0};
        in[k++] = (lin_input){io->A_log, "linear.A_log", 1, HV, 0, 0, 0};
        in[k++] = (lin_input){io->dt_bias, "linear.dt_bias", 1, gdn ? HV : HV * K, 0, 0, 0};
        in[k++] = (lin_input){out, "linear.out", 3, T, HV, V, 0};
        break;
    case SGL_ATTN_HYBRID_MAMBA2:
        in[k++] = (lin_input){io->a, "linear.a (dt)", 2, T, HV, 0, 0};
        in[k++] = (lin_input){io->A_log, "linear.A_log", 1, HV, 0, 0, 0};
        in[k++] = (lin_input){io->dt_bias, "linear.dt_bias", 1, HV, 0, 0, 0};
        in[k++] = (lin_input){io->D, "linear.D", 1, HV, 0, 0, 1};
        in[k++] = (lin_input){out, "linear.out", 3, T, HV, V, 0};
        break;
    case SGL_ATTN_HYBRID_SHORT_CONV:
        in[k++] = (lin_input){out, "linear.out", 2, T, C, 0, 0};
        break;
    case SGL_ATTN_HYBRID_LIGHTNING:
        in[k++] = (lin_input){a->q, "q", 3, T, HV, K, 0};
        in[k++] = (lin_input){a->k, "k", 3, T, HV, K, 0};
        in[k++] = (lin_input){a->v, "v", 3, T, HV, V, 0};
        in[k++] = (lin_input){io->decay, "linear.decay", 1, HV, 0, 0, 0};
        in[k++] = (lin_input){out, "linear.out", 3, T, HV, V, 0};
        break;
    default:
        return -1;
    }
    return k;
}

static int check_inputs(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io,
                        int64_t T, const sgl_sdk_tensor_spec *base, const char *prefix, char *err, size_t n,
                        int serves_state) {
    if (!io) {
        sgl_sdk_str(err, n, "%sa linear-attention layer (not in the model's full-attention set) but forward args "
                            "carry no linear inputs (args->linear is NULL)", prefix);
        return SGL_ATTN_E_INVALID;
    }
    if (io->struct_size < SGL_ATTN_LINEAR_IO_SIZE_V1_0) {
        sgl_sdk_str(err, n, "%slinear.struct_size = %u; expected >= %u (ABI 1.0)", prefix, io->struct_size,
                    SGL_ATTN_LINEAR_IO_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    /* ABI 1.2 caller-owned state: refused by name by a wrapper that does not serve it. */
    if (!serves_state && (SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, conv_state) || SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, ssm_state) ||
        SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, intermediate_conv_state) ||
        SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, intermediate_ssm_state))) {
        sgl_sdk_str(err, n, "%slinear state tensors are set (ABI 1.2 caller-owned state); this wrapper keeps its own "
                            "pool and does not serve them (caps SGL_ATTN_FEAT_CALLER_STATE)", prefix);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (io->kind != d->kind) {
        sgl_sdk_str(err, n, "%slinear->kind = %d; expected %d (%s)", prefix, io->kind, d->kind,
                    sgl_sdk_lin_kind_name(d->kind));
        return SGL_ATTN_E_INVALID;
    }
    lin_input in[12];
    const int count = inputs_of(d, a, io, T, in);
    if (count < 0) {
        sgl_sdk_str(err, n, "%skind %d (%s) has no linear inputs here", prefix, d->kind,
                    sgl_sdk_lin_kind_name(d->kind));
        return SGL_ATTN_E_INTERNAL;
    }
    for (int i = 0; i < count; i++) {
        if (!in[i].t && in[i].optional) continue;
        sgl_sdk_tensor_spec s = *base;
        s.name = in[i].name; /* the prefix goes on only when the check fails */
        s.meaning = NULL;
        s.ndim = in[i].ndim;
        s.shape[0] = in[i].s0;
        s.shape[1] = in[i].s1;
        s.shape[2] = in[i].s2;
        s.shape[3] = 0;
        int rc = sgl_sdk_check_tensor(in[i].t, &s, err, n);
        if (rc) {
            sgl_sdk_prepend(err, n, prefix);
            return rc;
        }
    }
    return SGL_ATTN_OK;
}

int sgl_sdk_lin_check_io(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io,
                         int64_t T, const sgl_sdk_tensor_spec *base, const char *prefix, char *err, size_t n) {
    return check_inputs(d, a, io, T, base, prefix, err, n, 0);
}

int sgl_sdk_lin_check_inputs(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a,
                             const sgl_attn_linear_io *io, int64_t T, const sgl_sdk_tensor_spec *base,
                             const char *prefix, char *err, size_t n) {
    return check_inputs(d, a, io, T, base, prefix, err, n, 1);
}

/* ------------------------------------------------ caller-owned state */

int sgl_sdk_lin_state_of(const sgl_attn_linear_io *io, sgl_sdk_lin_state *st) {
    memset(st, 0, sizeof *st);
    if (!io) return 0;
    st->conv = SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, conv_state);
    st->ssm = SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, ssm_state);
    st->iconv = SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, intermediate_conv_state);
    st->issm = SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, intermediate_ssm_state);
    st->indices = SGL_ATTN_FIELD_OR_0(sgl_attn_linear_io, io, state_indices);
    st->used = st->conv || st->ssm || st->iconv || st->issm;
    if (st->conv) st->slots = st->conv->ndim > 0 ? st->conv->shape[0] : 0;
    else if (st->ssm) st->slots = st->ssm->ndim > 0 ? st->ssm->shape[0] : 0;
    const DLTensor *i = st->iconv ? st->iconv : st->issm;
    if (i) st->steps = i->ndim > 1 ? i->shape[1] : 0;
    return st->used;
}

/* One state tensor: rank, extents (want[k] < 0: any, want[0] is S, want[1]
 * of an intermediate is its steps), then dtype, device and compactness
 * through the tensor checks on a flat view (the rank may pass SDK_MAX_DIMS). */
static int state_tensor(const DLTensor *t, const char *name, int nd, const int64_t *want, const char *meaning,
                        uint32_t dt, uint32_t devices, const char *prefix, char *err, size_t n) {
    char got[96], exp[96];
    if (!t) {
        sgl_sdk_str(err, n, "%s%s is NULL; the caller owns this layer's state (another state tensor is set), so "
                            "expected %s", prefix, name, meaning);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->shape || t->ndim < 0 || t->ndim > 8) {
        sgl_sdk_str(err, n, "%s%s has ndim %d and %s shape; expected %s", prefix, name, (int)t->ndim,
                    t->shape ? "a" : "no", meaning);
        return SGL_ATTN_E_INVALID;
    }
    int ok = t->ndim == nd;
    for (int k = 0; ok && k < nd; k++) ok = want[k] < 0 ? t->shape[k] >= 0 : t->shape[k] == want[k];
    if (!ok) {
        sgl_sdk_shape_str(got, sizeof got, t->ndim, t->shape);
        sgl_sdk_shape_str(exp, sizeof exp, nd, want);
        sgl_sdk_str(err, n, "%s%s has shape %s; expected %s (%s)", prefix, name, got, exp, meaning);
        return SGL_ATTN_E_INVALID;
    }
    int64_t numel = 1, stride = 1;
    for (int k = 0; k < nd; k++) numel *= t->shape[k];
    for (int k = nd - 1; t->strides && k >= 0; k--) {
        if (t->shape[k] != 1 && t->strides[k] != stride) {
            sgl_sdk_str(err, n, "%s%s is strided (dim %d stride %lld); expected a compact tensor (%s)", prefix,
                        name, k, (long long)t->strides[k], meaning);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        stride *= t->shape[k];
    }
    DLTensor flat = *t;
    int64_t shape1[1] = {numel};
    flat.ndim = 1;
    flat.shape = shape1;
    flat.strides = NULL;
    char full[128];
    sgl_sdk_str(full, sizeof full, "%s%s", prefix, name);
    sgl_sdk_tensor_spec s = {full, NULL, 1, {numel, 0, 0, 0}, dt, devices, -1, SGL_SDK_T_COMPACT, 0};
    return sgl_sdk_check_tensor(&flat, &s, err, n);
}

int sgl_sdk_lin_check_state(const sgl_sdk_lin_dims *d, const sgl_sdk_lin_state *st, int64_t need_steps,
                            uint32_t devices, const char *prefix, char *err, size_t n) {
    const char *kn = sgl_sdk_lin_kind_name(d->kind);
    const int has_conv = d->conv_elems > 0, has_ssm = d->ssm_elems > 0;
    const struct {
        const DLTensor *t;
        const char *name;
        int keeps;
    } none[] = {{st->conv, "linear.conv_state", has_conv}, {st->iconv, "linear.intermediate_conv_state", has_conv},
                {st->ssm, "linear.ssm_state", has_ssm}, {st->issm, "linear.intermediate_ssm_state", has_ssm}};
    for (int i = 0; i < 4; i++)
        if (none[i].t && !none[i].keeps) {
            sgl_sdk_str(err, n, "%s%s is set; %s keeps no %s state (%s), so expected NULL", prefix, none[i].name, kn,
                        i < 2 ? "conv" : "ssm", i < 2 ? "no conv1d of width >= 2" : "a conv-only kind");
            return SGL_ATTN_E_INVALID;
        }
    if (st->slots < 1) {
        sgl_sdk_str(err, n, "%slinear.%s has %lld slots (dim 0); expected at least 1", prefix,
                    has_conv ? "conv_state" : "ssm_state", (long long)st->slots);
        return SGL_ATTN_E_INVALID;
    }
    const int64_t S = st->slots, C = d->conv_dim, H = d->conv_w - 1, HV = d->hv, V = d->dv, K = d->dk;
    const int64_t steps = st->steps;
    if (need_steps > 0 && ((has_conv && !st->iconv) || (has_ssm && !st->issm))) {
        sgl_sdk_str(err, n, "%sverify with keep_intermediate needs linear.intermediate_%s_state (the state after "
                            "each draft token) when the caller owns the state", prefix,
                    has_conv && !st->iconv ? "conv" : "ssm");
        return SGL_ATTN_E_INVALID;
    }
    if ((st->iconv || st->issm) && (steps < 1 || steps < need_steps)) {
        sgl_sdk_str(err, n, "%slinear.intermediate_%s_state has %lld steps (dim 1); expected at least %lld (the "
                            "verify's tokens per request)", prefix, st->iconv ? "conv" : "ssm", (long long)steps,
                    (long long)(need_steps > 1 ? need_steps : 1));
        return SGL_ATTN_E_INVALID;
    }
    char st_meaning[160];
    int rc;
    if (has_conv) {
        const int64_t w[4] = {S, C, H, 0}, wi[4] = {S, steps, C, H};
        sgl_sdk_str(st_meaning, sizeof st_meaning, "[slots, conv_dim, W-1], channel-major, %s", kn);
        if ((rc = state_tensor(st->conv, "linear.conv_state", 3, w, st_meaning, d->state_dt, devices, prefix, err,
                               n)))
            return rc;
        sgl_sdk_str(st_meaning, sizeof st_meaning, "[slots, steps, conv_dim, W-1], %s", kn);
        if (st->iconv && (rc = state_tensor(st->iconv, "linear.intermediate_conv_state", 4, wi, st_meaning,
                                            d->state_dt, devices, prefix, err, n)))
            return rc;
    }
    if (has_ssm) {
        const char *dims = d->kind == SGL_ATTN_HYBRID_MAMBA2      ? "H, P, N"
                           : d->kind == SGL_ATTN_HYBRID_LIGHTNING ? "H, Dv, Dk"
                                                                  : "HV, V, K";
        const int64_t w[4] = {S, HV, V, K}, wi[5] = {S, steps, HV, V, K};
        sgl_sdk_str(st_meaning, sizeof st_meaning, "[slots, %s], %s", dims, kn);
        if ((rc = state_tensor(st->ssm, "linear.ssm_state", 4, w, st_meaning, d->state_dt, devices, prefix, err,
                               n)))
            return rc;
        sgl_sdk_str(st_meaning, sizeof st_meaning, "[slots, steps, %s], %s", dims, kn);
        if (st->issm && (rc = state_tensor(st->issm, "linear.intermediate_ssm_state", 5, wi, st_meaning,
                                           d->state_dt, devices, prefix, err, n)))
            return rc;
    }
    return SGL_ATTN_OK;
}
