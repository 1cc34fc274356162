/* check_io.c - an own layer's forward inputs against the instance's dims:
 * the linear kinds through the SDK's shapes (docs/hybrid.md), the sparse
 * layers' q/k/v/out and KV pool here. */
#include <stdint.h>
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
    return sgl_sdk_lin_check_inputs(d, a, io, T, &base, pre, w->err, sizeof w->err);
}

int hyb_check_caller_state(hyb_inst *w, hyb_call *c, const char *pre) {
    const hyb_plan *p = &w->plan;
    const sgl_sdk_lin_state *cs = &c->cs;
    int rc = sgl_sdk_lin_check_state(&w->d, cs, c->keep ? p->tpr : 0, SGL_SDK_DEV_HOST, pre, w->err,
                                     sizeof w->err);
    if (rc) return rc;
    const int64_t S = cs->slots;
    if (S > INT32_MAX) {
        hyb_set_err(w, "%slinear.%s has %lld slots; expected at most %d", pre, cs->conv ? "conv_state" : "ssm_state",
                    (long long)S, INT32_MAX);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (!cs->indices) { /* the batch's slots, planned; their upper bound is the caller's tensors' */
        if (p->max_slot >= S) {
            for (int i = 0; i < p->bs; i++)
                if (p->req[i].slot >= S) {
                    hyb_set_err(w, "%sbatch.state_indices[%d] = %d; expected -1 (padding) or a slot 0..%lld "
                                "(linear.%s has %lld slots)", pre, i, p->req[i].slot, (long long)S - 1,
                                cs->conv ? "conv_state" : "ssm_state", (long long)S);
                    return SGL_ATTN_E_INVALID;
                }
        }
        for (int i = 0; i < p->bs; i++) w->call_slots[i] = p->req[i].slot;
        return SGL_ATTN_OK;
    }
    char name[96];
    snprintf(name, sizeof name, "%slinear.state_indices", pre);
    if ((rc = hyb_index_check(w, cs->indices, name, p->bs))) return rc;
    int64_t n = 0;
    for (int i = 0; i < p->bs; i++) {
        const int64_t s = hyb_index_get(cs->indices, i);
        if (s < -1 || s >= S) {
            hyb_set_err(w, "%slinear.state_indices[%d] = %lld; expected -1 (padding) or a slot 0..%lld "
                        "(linear.%s has %lld slots)", pre, i, (long long)s, (long long)S - 1,
                        cs->conv ? "conv_state" : "ssm_state", (long long)S);
            return SGL_ATTN_E_INVALID;
        }
        w->call_slots[i] = (int32_t)s;
        if (s >= 0) w->sortbuf[n++] = (uint64_t)s << 32 | (uint32_t)i;
    }
    const int64_t rep = hyb_find_repeat(w->sortbuf, n);
    if (rep >= 0) {
        const int i = (int)(uint32_t)w->sortbuf[rep];
        hyb_set_err(w, "%slinear.state_indices[%d] = %d names a slot another request of the batch already "
                    "uses", pre, i, w->call_slots[i]);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}
