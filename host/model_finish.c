/* model_finish.c - what every model reader shares and ends with: the
 * defaults, the layer masks, the error helper and model_finish (the
 * tensor-parallel split and the checks).  A leaf: it calls no reader. */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model_policy.h"

int model_fail(char *err, size_t err_size, const char *origin, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    str_printf(err, err_size, "%s: %s", origin, msg);
    return SGL_ATTN_E_INVALID;
}

int model_float_ok(double v) { return v == 0 || (v >= FLT_MIN && v <= FLT_MAX); }

void model_mask_set(uint64_t *mask, int layer) {
    if (layer >= 0 && layer < SGL_ATTN_MAX_LAYERS) mask[layer >> 6] |= 1ull << (layer & 63);
}

void model_mask_all(uint64_t *mask, int n_layers) {
    memset(mask, 0, SGL_ATTN_MAX_LAYERS / 8);
    for (int i = 0; i < n_layers && i < SGL_ATTN_MAX_LAYERS; i++) model_mask_set(mask, i);
}

int model_mask_count(const uint64_t *mask) {
    int n = 0;
    for (int i = 0; i < SGL_ATTN_MAX_LAYERS / 64; i++) n += __builtin_popcountll(mask[i]);
    return n;
}

void model_reset(sgl_attn_model *m) {
    memset(m, 0, sizeof *m);
    m->struct_size = (uint32_t)sizeof *m;
    m->dtype = m->kv_dtype = SGL_ATTN_DT_BF16;
    m->sliding_window = -1;
    m->lin_state_dtype = SGL_ATTN_DT_F32;
}

/* Heads of one rank: a count that tp divides, or (kv-like counts, `replicate`)
 * fewer than tp with tp a multiple of it, which sglang replicates: 1 per rank. */
static int split_heads(int32_t *v, int tp, int replicate, const char *origin, const char *field, char *err,
                       size_t err_size) {
    if (*v <= 0 || tp == 1) return SGL_ATTN_OK;
    if (*v % tp == 0) {
        *v /= tp;
        return SGL_ATTN_OK;
    }
    if (replicate && *v < tp && tp % *v == 0) {
        *v = 1;
        return SGL_ATTN_OK;
    }
    return model_fail(err, err_size, origin,
                      "\"%s\" = %d does not split over tp_size %d (expected a multiple of %d%s)", field, *v, tp, tp,
                      replicate ? ", or a divisor of it, which is replicated" : "");
}

int model_finish(sgl_attn_model *m, const char *origin, int tp, const model_fields *f, char *err, size_t err_size) {
    if (tp < 1 || tp > 4096)
        return model_fail(err, err_size, origin, "tp_size %d: expected 1 to 4096", tp);
    if (m->num_layers < 1 || m->num_layers > SGL_ATTN_MAX_LAYERS)
        return model_fail(err, err_size, origin, "%d layers: expected 1 to %d", m->num_layers, SGL_ATTN_MAX_LAYERS);
    if (m->num_q_heads < 1 || m->num_kv_heads < 1 || m->num_kv_heads > m->num_q_heads ||
        m->num_q_heads % m->num_kv_heads)
        return model_fail(err, err_size, origin,
                          "\"%s\" = %d and \"%s\" = %d: expected positive head counts, the first a multiple of the "
                          "second",
                          f->q_heads, m->num_q_heads, f->kv_heads, m->num_kv_heads);
    if (m->head_dim_qk < 1 || m->head_dim_qk > 65535 || m->head_dim_v < 1 || m->head_dim_v > 65535)
        return model_fail(err, err_size, origin, "head dims qk %d, v %d: expected 1 to 65535", m->head_dim_qk,
                          m->head_dim_v);
    int rc;
    if ((rc = split_heads(&m->num_q_heads, tp, 0, origin, f->q_heads, err, err_size))) return rc;
    if (!m->is_mla && (rc = split_heads(&m->num_kv_heads, tp, 1, origin, f->kv_heads, err, err_size))) return rc;
    if (m->hybrid_kind != SGL_ATTN_HYBRID_NONE) {
        if (f->lin_k && (rc = split_heads(&m->lin_num_k_heads, tp, 1, origin, f->lin_k, err, err_size))) return rc;
        if (f->lin_v && (rc = split_heads(&m->lin_num_v_heads, tp, 0, origin, f->lin_v, err, err_size))) return rc;
        if (f->lin_hidden && (rc = split_heads(&m->lin_hidden, tp, 0, origin, f->lin_hidden, err, err_size)))
            return rc;
        for (int i = m->num_layers; i < SGL_ATTN_MAX_LAYERS; i++)
            if (sgl_attn_model_layer_is_full(m, i) || sgl_attn_model_layer_is_sparse(m, i))
                return model_fail(err, err_size, origin, "layer %d is listed, but the model has %d layers", i,
                                  m->num_layers);
    } else {
        model_mask_all(m->full_attention_mask, m->num_layers);
    }
    if (m->sliding_window < -1) m->sliding_window = -1;
    if (m->logit_softcap < 0 || m->logit_softcap != m->logit_softcap)
        return model_fail(err, err_size, origin, "logit soft-cap %g: expected 0 (none) or positive",
                          (double)m->logit_softcap);
    return SGL_ATTN_OK;
}
