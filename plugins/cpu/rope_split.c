/* rope_split.c - MLA's rope part passed beside the latent part (ABI 1.2,
 * SGL_ATTN_FEAT_MLA_ROPE_SPLIT), as sglang's MLA backends receive q_rope /
 * k_rope: q [T, Hq, rank] with q_rope [T, Hq, rope], k [T, 1, rank] with
 * k_rope [T, 1, rope].  The attention equals that of the concatenated
 * [rank + rope] rows: the loops load each q row from its two parts, and
 * save_kv writes the pool row as the latent k then k_rope.  Both rope
 * tensors may be strided views (rows contiguous), as sglang's slices are. */
#include <stddef.h>
#include <stdio.h>

#include "cpu_ref.h"

/* A [T, h, SGL_SDK_ANY] view of a dtype cpu_ref reads; its token and head strides. */
static int check_view(cref_backend *b, const DLTensor *t, const char *what, const char *meaning, int64_t T, int64_t h,
                      int64_t *ts, int64_t *hs) {
    const sgl_sdk_tensor_spec s = {what, meaning, 3, {T, h, SGL_SDK_ANY, 0}, CREF_KV_DTYPES, SGL_SDK_DEV_HOST, -1,
                                   SGL_SDK_T_ROWS, 0};
    int rc = sgl_sdk_check_tensor(t, &s, b->err, sizeof b->err);
    if (rc) return rc;
    int64_t st[SGL_SDK_MAX_DIMS];
    sgl_sdk_strides(t, &s, st);
    *ts = st[0];
    *hs = st[1];
    return SGL_ATTN_OK;
}

static int same_dtype(cref_backend *b, int id, const char *what, const DLTensor *t, const char *other,
                      const DLTensor *o) {
    if (!o || sgl_attn_dtype_bit(t->dtype) == sgl_attn_dtype_bit(o->dtype)) return SGL_ATTN_OK;
    char b1[SGL_SDK_NAME_MAX], b2[SGL_SDK_NAME_MAX];
    cref_set_error(b, "layer %d: %s is %s but %s is %s; expected %s's dtype", id, what,
                   sgl_sdk_dtype_name(t->dtype, b1), other, sgl_sdk_dtype_name(o->dtype, b2), other);
    return SGL_ATTN_E_INVALID;
}

int cref_rope_check(cref_backend *b, const sgl_attn_forward_args *a, int mla, int64_t T, int32_t *dq_lat) {
    cref_job *J = &b->job;
    const sgl_attn_layer *L = a->layer;
    const int id = L->layer_id;
    const DLTensor *qr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope);
    const DLTensor *kr = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope);
    J->q_rope = J->k_rope = NULL;
    J->qr_ts = J->qr_hs = J->kr_ts = 0;
    J->dq_lat = *dq_lat = L->head_dim_qk;
    if (!qr && !kr) return SGL_ATTN_OK;
    if (!mla) {
        cref_set_error(b, "layer %d: forward args %s is set but the layer is not MLA (it has a v_cache); q_rope / "
                          "k_rope split an MLA latent row",
                       id, qr ? "q_rope" : "k_rope");
        return SGL_ATTN_E_INVALID;
    }
    if (!qr) {
        cref_set_error(b, "layer %d: forward args k_rope is set but q_rope is NULL; give q_rope beside q (and k_rope "
                          "beside k), or neither",
                       id);
        return SGL_ATTN_E_INVALID;
    }
    int rc = check_view(b, qr, "forward args q_rope", "num_tokens, num_q_heads, rope dims", T, L->num_q_heads,
                        &J->qr_ts, &J->qr_hs);
    if (rc) return rc;
    const int64_t rope = qr->shape[2];
    if (rope < 1 || rope >= L->head_dim_qk) {
        cref_set_error(b, "layer %d: forward args q_rope has %lld dims per head; expected 1..%d (head_dim_qk %d = "
                          "the latent dims of q + the rope dims)",
                       id, (long long)rope, L->head_dim_qk - 1, L->head_dim_qk);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = same_dtype(b, id, "forward args q_rope", qr, "q", a->q))) return rc;
    *dq_lat = L->head_dim_qk - (int32_t)rope;
    if (*dq_lat < L->head_dim_v) {
        cref_set_error(b, "layer %d: q_rope's %lld dims leave %d latent dims, fewer than head_dim_v %d (the value is "
                          "the latent part)",
                       id, (long long)rope, *dq_lat, L->head_dim_v);
        return SGL_ATTN_E_INVALID;
    }
    if (kr) {
        int64_t hs;
        if ((rc = check_view(b, kr, "forward args k_rope", "num_tokens, 1, rope dims (q_rope's)", T, 1, &J->kr_ts,
                             &hs)))
            return rc;
        if (kr->shape[2] != rope) {
            cref_set_error(b, "layer %d: forward args k_rope has %lld dims per token but q_rope %lld; expected the "
                              "same rope dims",
                           id, (long long)kr->shape[2], (long long)rope);
            return SGL_ATTN_E_INVALID;
        }
        if ((rc = same_dtype(b, id, "forward args k_rope", kr, "k", a->k))) return rc;
        J->k_rope = sgl_sdk_data(kr);
    } else if (a->save_kv_cache) {
        cref_set_error(b, "layer %d: save_kv_cache with q_rope but no k_rope: the pool row is the latent k then "
                          "its rope part; give k_rope beside k",
                       id);
        return SGL_ATTN_E_INVALID;
    }
    J->q_rope = sgl_sdk_data(qr);
    J->dq_lat = *dq_lat;
    return SGL_ATTN_OK;
}
