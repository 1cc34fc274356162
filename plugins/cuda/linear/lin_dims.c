/* lin_dims.c - what each kind reads from the model, its state size and the
 * layer routing.  Same formulas as the CPU wrappers (plugins/hybrid/shapes.c,
 * docs/hybrid.md); the differences: state may be bfloat16, never float64. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lin.h"

void lin_str(char *dst, size_t n, const char *fmt, ...) {
    if (!dst || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

const char *lin_kind_name(int kind) {
    static const char *const names[] = {"none", "gdn", "mamba2", "short_conv", "kda", "lightning",
                                        "minimax_sparse", "custom"};
    return kind >= 0 && kind < SGL_ATTN_HYBRID_COUNT_ ? names[kind] : "unknown";
}

int lin_layer_is_own(const sgl_attn_model *m, int layer) {
    if (layer < 0 || layer >= m->num_layers) return 0;
    return !sgl_attn_model_layer_is_full(m, layer);
}

static int need(int ok, char *why, size_t n, const char *field, int32_t value, const char *want) {
    if (!ok) lin_str(why, n, "model field %s = %d; expected %s", field, (int)value, want);
    return ok;
}

#define NEED(cond, field, want) \
    do { if (!need((cond), why, n, #field, m->field, (want))) return SGL_ATTN_E_UNSUPPORTED; } while (0)

int lin_dims_from_model(int kind, const sgl_attn_model *m, lin_dims *d, char *why, size_t n) {
    memset(d, 0, sizeof *d);
    d->kind = kind;
    if (!m) {
        lin_str(why, n, "no model");
        return SGL_ATTN_E_INVALID;
    }
    NEED(m->num_layers >= 1 && m->num_layers <= SGL_ATTN_MAX_LAYERS, num_layers, "1..1024");
    if (m->hybrid_kind != (uint32_t)kind) {
        lin_str(why, n, "model '%s' (model_type %s) has hybrid kind %s; this wrapper computes %s", m->name,
                m->model_type, lin_kind_name((int)m->hybrid_kind), lin_kind_name(kind));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    switch (kind) {
    case SGL_ATTN_HYBRID_GDN:
    case SGL_ATTN_HYBRID_KDA:
    case SGL_ATTN_HYBRID_MAMBA2:
        NEED(m->lin_num_k_heads >= 1, lin_num_k_heads, ">= 1");
        NEED(m->lin_num_v_heads >= 1 && m->lin_num_v_heads % m->lin_num_k_heads == 0, lin_num_v_heads,
             "a positive multiple of lin_num_k_heads");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= LIN_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 1 && m->lin_head_v_dim <= LIN_DIM_MAX, lin_head_v_dim, "1..1024");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= LIN_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->hk = m->lin_num_k_heads;
        d->hv = m->lin_num_v_heads;
        d->dk = m->lin_head_k_dim;
        d->dv = m->lin_head_v_dim;
        d->conv_w = m->lin_conv_kernel;
        d->conv_dim = 2 * d->hk * d->dk + d->hv * d->dv;
        d->ssm_elems = (int64_t)d->hv * d->dv * d->dk;
        break;
    case SGL_ATTN_HYBRID_SHORT_CONV:
        NEED(m->lin_hidden >= 1 && m->lin_hidden <= 65536, lin_hidden, "1..65536");
        NEED(m->lin_conv_kernel >= 1 && m->lin_conv_kernel <= LIN_CONV_W_MAX, lin_conv_kernel, "1..8");
        d->conv_dim = m->lin_hidden;
        d->conv_w = m->lin_conv_kernel;
        break;
    case SGL_ATTN_HYBRID_LIGHTNING:
        NEED(m->lin_num_v_heads >= 1, lin_num_v_heads, ">= 1");
        NEED(m->lin_head_k_dim >= 1 && m->lin_head_k_dim <= LIN_DIM_MAX, lin_head_k_dim, "1..1024");
        NEED(m->lin_head_v_dim >= 0 && m->lin_head_v_dim <= LIN_DIM_MAX, lin_head_v_dim,
             "0..1024 (0: same as lin_head_k_dim)");
        d->hv = d->hk = m->lin_num_v_heads;
        d->dk = m->lin_head_k_dim;
        d->dv = m->lin_head_v_dim ? m->lin_head_v_dim : m->lin_head_k_dim;
        d->ssm_elems = (int64_t)d->hv * d->dv * d->dk;
        break;
    default:
        lin_str(why, n, "hybrid kind %d (%s) has no CUDA wrapper", kind, lin_kind_name(kind));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    switch (m->lin_state_dtype) {
    case 0:
    case SGL_ATTN_DT_F32: d->st_dt = LIN_DT_F32; d->esz = 4; break;
    case SGL_ATTN_DT_BF16: d->st_dt = LIN_DT_BF16; d->esz = 2; break;
    default:
        lin_str(why, n, "model field lin_state_dtype = 0x%x; the CUDA wrappers keep float32 or bfloat16 state",
                (unsigned)m->lin_state_dtype);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    d->gsz = d->hk > 0 ? d->hv / d->hk : 1;
    d->gc = kind == SGL_ATTN_HYBRID_KDA ? d->dk : 1;
    d->x_dim = kind == SGL_ATTN_HYBRID_SHORT_CONV ? 3 * d->conv_dim : d->conv_dim;
    d->conv_elems = d->conv_w > 0 ? (int64_t)d->conv_dim * (d->conv_w - 1) : 0;
    for (int l = 0; l < m->num_layers; l++) d->n_lin += lin_layer_is_own(m, l);
    return SGL_ATTN_OK;
}

uint64_t lin_state_bytes(int kind, const sgl_attn_model *m) {
    lin_dims d;
    char why[8];
    if (lin_dims_from_model(kind, m, &d, why, sizeof why) != SGL_ATTN_OK) return 0;
    return (uint64_t)d.n_lin * (uint64_t)(d.conv_elems + d.ssm_elems) * (uint64_t)d.esz;
}

int lin_supports_model(int kind, const sgl_attn_model *m, char *why, size_t n) {
    lin_dims d;
    if (m && kind == SGL_ATTN_HYBRID_GDN && m->is_mla) {
        lin_str(why, n, "hybrid_gdn can only be used with non-MLA models.");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = lin_dims_from_model(kind, m, &d, why, n);
    return rc == SGL_ATTN_E_INVALID ? SGL_ATTN_E_INVALID : rc;
}
