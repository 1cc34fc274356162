/* fp8_scales.c - an fp8 KV pool's dequant scales and an fp8 q's descale
 * (ABI 1.2, SGL_ATTN_FEAT_FP8_SCALES).  Each scale comes from its float
 * (layer.k_scale, v_scale, q_descale) or from its tensor (k_scale_tensor,
 * v_scale_tensor, q_descale_tensor: [1] or [] fp32, read at the forward, so
 * an engine may update it in place).  The tensor replaces the float; a float
 * left at its "none" value (1; q_descale 0 or 1) defers to it, and a float
 * that names another value than its tensor is refused as a contradiction.
 * The scales fold into the job: k_scale and q_descale into the score scale,
 * v_scale into the output's normalisation, and the saves divide by them. */
#include <math.h>
#include <stdio.h>

#include "cpu_ref.h"

/* One scale: from tensor t (named tname) or float f (fname); *none: neither
 * gave one (the float is its "none" value and no tensor). */
static int resolve(cref_backend *b, int id, const DLTensor *t, const char *tname, float f, const char *fname,
                   int f_none, double *out, int *none) {
    *none = 0;
    if (t) {
        char what[64];
        snprintf(what, sizeof what, "layer.%s", tname);
        int rc = cref_check(b, t, what, "one fp32 scale", SGL_ATTN_DT_F32, 0, t->ndim == 0 ? 0 : 1, 1, 0, 0);
        if (rc) return rc;
        const float v = *(const float *)sgl_sdk_data(t);
        if (!isfinite(v) || v <= 0) {
            cref_set_error(b, "layer %d: %s holds %g; expected a finite scale > 0", id, tname, (double)v);
            return SGL_ATTN_E_INVALID;
        }
        if (!f_none && f != v) {
            cref_set_error(b, "layer %d: %s = %g but %s holds %g: they disagree; the tensor replaces the float, so "
                              "leave the float at its default or give it the tensor's value",
                           id, fname, (double)f, tname, (double)v);
            return SGL_ATTN_E_INVALID;
        }
        *out = v;
        return SGL_ATTN_OK;
    }
    if (f_none) {
        *none = 1;
        *out = 1;
        return SGL_ATTN_OK;
    }
    if (!isfinite(f) || f <= 0) {
        cref_set_error(b, "layer %d: %s = %g; expected a finite scale > 0", id, fname, (double)f);
        return SGL_ATTN_E_INVALID;
    }
    *out = f;
    return SGL_ATTN_OK;
}

int cref_fp8_scales(cref_backend *b, const sgl_attn_layer *L, uint32_t kv_dt, int mla) {
    cref_job *J = &b->job;
    const int id = L->layer_id;
    const DLTensor *kt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, k_scale_tensor);
    const DLTensor *vt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, v_scale_tensor);
    const DLTensor *qt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale_tensor);
    const float qf = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale);
    J->v_mul = J->k_div = J->v_div = 1;
    double qd, ks, vs;
    int none, rc;
    if ((rc = resolve(b, id, qt, "q_descale_tensor", qf, "q_descale", qf == 0 || qf == 1, &qd, &none))) return rc;
    if (!none && !(J->q_dt & CREF_FP8_DTYPES)) {
        cref_set_error(b, "layer %d: a q descale (%g) is given but q is not fp8; q_descale dequantises an fp8 q", id,
                       qd);
        return SGL_ATTN_E_INVALID;
    }
    if (!(kv_dt & CREF_FP8_DTYPES)) {
        /* a 16/32/64-bit pool holds values: the floats are not read (as before 1.2) */
        if (kt || vt) {
            cref_set_error(b, "layer %d: layer.%s is set but the pool is not fp8; scale tensors dequantise an fp8 "
                              "pool",
                           id, kt ? "k_scale_tensor" : "v_scale_tensor");
            return SGL_ATTN_E_INVALID;
        }
        J->scale *= qd;
        return SGL_ATTN_OK;
    }
    if ((rc = resolve(b, id, kt, "k_scale_tensor", L->k_scale, "k_scale", L->k_scale == 1, &ks, &none))) return rc;
    if (mla) {
        /* the value is the latent row itself, so it dequantises with k's scale */
        if (vt) {
            cref_set_error(b, "layer %d: v_scale_tensor is set on an MLA layer; its value lives in k_cache and "
                              "dequantises with k_scale",
                           id);
            return SGL_ATTN_E_INVALID;
        }
        vs = ks;
    } else if ((rc = resolve(b, id, vt, "v_scale_tensor", L->v_scale, "v_scale", L->v_scale == 1, &vs, &none))) {
        return rc;
    }
    J->scale *= ks * qd;
    J->v_mul = vs;
    J->k_div = ks;
    J->v_div = vs;
    return SGL_ATTN_OK;
}
