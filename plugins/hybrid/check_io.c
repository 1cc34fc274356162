/* check_io.c - an own layer's forward inputs against the instance's dims:
 * the linear kinds through the SDK's shapes (docs/hybrid.md), the sparse
 * layers' q/k/v/out and KV pool here. */
#include <stdio.h>

#include "hyb.h"

#define CHECK(t, what, nd, s0, s1, s2)                                                 \
    do {                                                                               \
        char name_[96];                                                                \
        snprintf(name_, sizeof name_, "%s%s", pre, (what));                            \
        const sgl_sdk_tensor_spec s_ = hyb_spec(name_, HYB_FLOAT_DTYPES, 0, (nd), (s0), (s1), (s2)); \
        int rc_ = sgl_sdk_check_tensor((t), &s_, w->err, sizeof w->err);               \
        if (rc_) return rc_;                                                           \
    } while (0)

int hyb_check_io(hyb_inst *w, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io) {
    const hyb_dims *d = &w->d;
    const int lid = a->layer->layer_id;
    const int64_t T = w->plan.T;
    char pre[64];
    snprintf(pre, sizeof pre, "%s layer %d: ", w->impl->name, lid);
    if (d->kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) {
        const sgl_attn_layer *L = a->layer;
        const sgl_attn_model *m = &w->model;
        if (L->num_q_heads != m->num_q_heads || L->num_kv_heads != m->num_kv_heads ||
            L->head_dim_qk != m->head_dim_qk || L->head_dim_v != m->head_dim_v) {
            hyb_set_err(w, "%slayer heads %d/%d, dims %d/%d differ from the model's %d/%d, %d/%d", pre,
                        L->num_q_heads, L->num_kv_heads,
                        L->head_dim_qk, L->head_dim_v, m->num_q_heads, m->num_kv_heads,
                        m->head_dim_qk, m->head_dim_v);
            return SGL_ATTN_E_INVALID;
        }
        if (L->logit_softcap != 0 || L->sinks || L->sliding_window >= 0 || L->is_cross) {
            hyb_set_err(w, "%ssparse layers compute plain causal softmax attention; soft-cap, sinks, "
                        "sliding window and cross attention are not served", pre);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        const int64_t Hq = L->num_q_heads, Hkv = L->num_kv_heads;
        CHECK(a->q, "q", 3, T, Hq, L->head_dim_qk);
        CHECK(a->k, "k", 3, T, Hkv, L->head_dim_qk);
        CHECK(a->v, "v", 3, T, Hkv, L->head_dim_v);
        CHECK(a->out, "out", 3, T, Hq, L->head_dim_v);
        CHECK(L->k_cache, "k_cache", 3, SGL_SDK_ANY, Hkv, L->head_dim_qk);
        CHECK(L->v_cache, "v_cache", 3, L->k_cache->shape[0], Hkv, L->head_dim_v);
        return SGL_ATTN_OK;
    }
    const sgl_sdk_tensor_spec base = hyb_spec(NULL, HYB_FLOAT_DTYPES, 0, 0, 0, 0, 0);
    return sgl_sdk_lin_check_io(d, a, io, T, &base, pre, w->err, sizeof w->err);
}
