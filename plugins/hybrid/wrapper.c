/* wrapper.c - the backend vtable every hybrid wrapper shares.  A layer the
 * wrapper owns (linear layers; minimax_sparse: sparse layers) is computed
 * here; every other layer goes to the inner backend untouched.  Metadata and
 * graph calls go to both, the graph fill value comes from the inner. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyb.h"
#include "sdk_plugin.h"

/* The inner's op `f`, when its (possibly older) vtable has it. */
#define INNER_OP(w, f) SGL_SDK_INNER_OP((w)->inner, f)

static int inner_failed(hyb_inst *w, int rc, const char *what) {
    const char *(*le)(sgl_attn_backend *) = INNER_OP(w, last_error);
    const char *msg = le ? le(w->inner) : NULL;
    hyb_set_err(w, "%s: inner backend %s failed (%d): %s", w->impl->name, what, rc,
                msg && *msg ? msg : "no message");
    return rc;
}

static int init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    hyb_inst *w = (hyb_inst *)b;
    w->err[0] = 0;
    int rc = hyb_plan_build(w, batch);
    if (rc) return rc;
    int (*f)(sgl_attn_backend *, const sgl_attn_batch *) = INNER_OP(w, init_forward_metadata);
    if (f && (rc = f(w->inner, batch))) return inner_failed(w, rc, "init_forward_metadata");
    return SGL_ATTN_OK;
}

static int own_forward(hyb_inst *w, const sgl_attn_forward_args *a) {
    const hyb_plan *p = &w->plan;
    const int lid = a->layer->layer_id;
    if (!p->valid) {
        hyb_set_err(w, "%s layer %d: forward without a successful init_forward_metadata for "
                    "this batch", w->impl->name, lid);
        return SGL_ATTN_E_STATE;
    }
    if (p->T == 0) return SGL_ATTN_OK;
    const sgl_attn_linear_io *io = a->linear;
    int rc = hyb_check_io(w, a, io);
    if (rc) return rc;
    hyb_call c = {w, a, io, NULL, w->lin_index[lid], 0, p->mode == SGL_ATTN_MODE_EXTEND ? w->chunk : 0,
                  w->call_slots, {0}};
    if (!w->d.stateful) {
        if (p->max_kv_slot >= a->layer->k_cache->shape[0]) {
            hyb_set_err(w, "%s layer %d: the batch names KV slot %lld; the layer's pool has %lld "
                        "slots", w->impl->name, lid, (long long)p->max_kv_slot,
                        (long long)a->layer->k_cache->shape[0]);
            return SGL_ATTN_E_INVALID;
        }
        c.out = a->out;
    } else {
        c.out = io->out ? io->out : a->out;
        c.keep = p->mode == SGL_ATTN_MODE_TARGET_VERIFY && io->keep_intermediate;
        char pre[64];
        sgl_sdk_str(pre, sizeof pre, "%s layer %d: ", w->impl->name, lid);
        if (sgl_sdk_lin_state_of(io, &c.cs)) {
            if ((rc = hyb_check_caller_state(w, &c, pre))) return rc;
        } else {
            if (c.cs.indices) {
                hyb_set_err(w, "%slinear.state_indices is set without a state tensor; it indexes "
                            "caller-owned state (linear.conv_state / ssm_state)", pre);
                return SGL_ATTN_E_INVALID;
            }
            if (!hyb_pool_ready(w, pre)) return SGL_ATTN_E_STATE;
            if (p->pool_over >= 0) {
                hyb_set_err(w, "%sbatch.state_indices[%d] = %d; expected -1 (padding) or a slot 0..%d of "
                            "the wrapper's pool (create's max_reqs), or caller-owned state "
                            "(linear.conv_state / ssm_state)", pre, p->pool_over,
                            p->req[p->pool_over].slot, w->max_reqs - 1);
                return SGL_ATTN_E_INVALID;
            }
            if (c.keep && w->pool.steps < p->tpr) {
                hyb_set_err(w, "%sverify keeps %d intermediate states per request but the pool was "
                            "created for %d (model.spec_tokens)", pre, p->tpr, w->pool.steps);
                return SGL_ATTN_E_INVALID;
            }
            for (int i = 0; i < p->bs; i++) w->call_slots[i] = p->req[i].slot;
        }
    }
    /* Stateful kinds compute in the state's precision; the stateless sparse
     * layers follow their tensors (any float64 one selects the reference path). */
    int f64 = w->f64;
    if (!w->d.stateful) {
        const DLTensor *ts[] = {a->q, a->k, a->v, a->out, a->layer->k_cache, a->layer->v_cache};
        for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
            f64 |= sgl_attn_dtype_bit(ts[i]->dtype) == SGL_ATTN_DT_F64;
    }
    rc = f64 ? w->impl->fwd_f64(&c) : w->impl->fwd_f32(&c);
    /* state_commit acts on the pool: only a pool forward arms it */
    if (!rc && c.keep && !c.cs.used) w->verify_kept = 1;
    return rc;
}

static int route(sgl_attn_backend *b, const sgl_attn_forward_args *a, int extend) {
    hyb_inst *w = (hyb_inst *)b;
    if (!a || !a->layer) {
        hyb_set_err(w, "%s: forward args or args->layer is NULL", w->impl->name);
        return SGL_ATTN_E_INVALID;
    }
    const int lid = a->layer->layer_id;
    if (lid < 0 || lid >= w->model.num_layers) {
        hyb_set_err(w, "%s: layer_id %d; the model has layers 0..%d", w->impl->name, lid,
                    w->model.num_layers - 1);
        return SGL_ATTN_E_INVALID;
    }
    if (w->lin_index[lid] >= 0) return own_forward(w, a);
    int (*f)(sgl_attn_backend *, const sgl_attn_forward_args *) =
        extend ? INNER_OP(w, forward_extend) : INNER_OP(w, forward_decode);
    if (!f) {
        hyb_set_err(w, "%s: layer %d is a full-attention layer and the inner backend has no "
                    "forward_%s", w->impl->name, lid, extend ? "extend" : "decode");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = f(w->inner, a);
    return rc ? inner_failed(w, rc, extend ? "forward_extend" : "forward_decode") : SGL_ATTN_OK;
}

static int forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return route(b, a, 1); }
static int forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return route(b, a, 0); }

/* The CPU compute has no graph of its own: these plan the batch for the
 * wrapper's layers and hand the call to the inner. */
static int init_graph_state(sgl_attn_backend *b, int32_t max_bs, int32_t max_num_tokens) {
    hyb_inst *w = (hyb_inst *)b;
    int (*f)(sgl_attn_backend *, int32_t, int32_t) = INNER_OP(w, init_graph_state);
    int rc = f ? f(w->inner, max_bs, max_num_tokens) : SGL_ATTN_OK;
    return rc ? inner_failed(w, rc, "init_graph_state") : SGL_ATTN_OK;
}

static int graph_meta(hyb_inst *w, const sgl_attn_graph_args *g, int replay) {
    if (!g) {
        hyb_set_err(w, "%s: graph args are NULL", w->impl->name);
        return SGL_ATTN_E_INVALID;
    }
    int rc;
    if (g->batch && (rc = hyb_plan_build(w, g->batch))) return rc;
    int (*f)(sgl_attn_backend *, const sgl_attn_graph_args *) =
        replay ? INNER_OP(w, init_forward_metadata_replay) : INNER_OP(w, init_forward_metadata_capture);
    if (f && (rc = f(w->inner, g))) return inner_failed(w, rc, replay ? "graph replay" : "graph capture");
    return SGL_ATTN_OK;
}

static int graph_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    return graph_meta((hyb_inst *)b, g, 0);
}
static int graph_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    return graph_meta((hyb_inst *)b, g, 1);
}

static int32_t fill_value(sgl_attn_backend *b) {
    hyb_inst *w = (hyb_inst *)b;
    int32_t (*f)(sgl_attn_backend *) = INNER_OP(w, graph_seq_len_fill_value);
    return f ? f(w->inner) : 1;
}

static const char *last_error(sgl_attn_backend *b) { return ((hyb_inst *)b)->err; }

static int slot_ok(hyb_inst *w, int32_t slot, const char *what) {
    if (slot >= 0 && slot < w->max_reqs) return 1;
    hyb_set_err(w, "%s: %s slot %d; expected 0..%d (create's max_reqs)", w->impl->name, what,
                (int)slot, w->max_reqs - 1);
    return 0;
}

int hyb_pool_ready(hyb_inst *w, const char *what) {
    if (w->pool_on) return 1;
    hyb_set_err(w, "%s%s was created without its own state pool (option state_pool = 0): pass "
                "caller-owned state (linear.conv_state / ssm_state, state_batch with args->state)", what,
                w->impl->name);
    return 0;
}

static int state_clear(sgl_attn_backend *b, int32_t slot) {
    hyb_inst *w = (hyb_inst *)b;
    if (!hyb_pool_ready(w, "state_clear: ")) return SGL_ATTN_E_STATE;
    if (!slot_ok(w, slot, "state_clear")) return SGL_ATTN_E_INVALID;
    hyb_pool_clear(&w->pool, slot);
    return SGL_ATTN_OK;
}

static int state_copy(sgl_attn_backend *b, int32_t src, int32_t dst) {
    hyb_inst *w = (hyb_inst *)b;
    if (!hyb_pool_ready(w, "state_copy: ")) return SGL_ATTN_E_STATE;
    if (!slot_ok(w, src, "state_copy source") || !slot_ok(w, dst, "state_copy destination"))
        return SGL_ATTN_E_INVALID;
    hyb_pool_copy(&w->pool, src, dst);
    return SGL_ATTN_OK;
}

static int state_commit(sgl_attn_backend *b, const DLTensor *accepted) {
    hyb_inst *w = (hyb_inst *)b;
    if (!w->verify_kept) {
        hyb_set_err(w, "%s: state_commit without a verify forward that kept intermediate states "
                    "(linear.keep_intermediate = 1)", w->impl->name);
        return SGL_ATTN_E_STATE;
    }
    int rc = hyb_index_check(w, accepted, "state_commit accepted_steps", w->verify_n);
    if (rc) return rc;
    /* all checked before any state changes */
    if ((rc = sgl_sdk_check_index_range(accepted, "state_commit accepted_steps", w->verify_n, -1,
                                        w->verify_steps - 1, "-1 keeps, else the accepted step", w->err,
                                        sizeof w->err)))
        return rc;
    for (int i = 0; i < w->verify_n; i++) {
        int64_t s = hyb_index_get(accepted, i);
        if (s >= 0 && w->verify_slots[i] >= 0) hyb_pool_commit(&w->pool, w->verify_slots[i], (int)s);
    }
    return SGL_ATTN_OK;
}

static void destroy(sgl_attn_backend *b) {
    hyb_inst *w = (hyb_inst *)b;
    if (!w) return;
    hyb_workers_destroy(w->workers);
    if (w->wbuf)
        for (int i = 0; i < w->n_workers; i++) free(w->wbuf[i].mem);
    free(w->wbuf);
    hyb_pool_free(&w->pool);
    free(w->plan.req);
    free(w->call_slots);
    free(w->sortbuf);
    free(w->verify_slots);
    free(w->scratch);
    free(w->params);
    free(w);
}

const sgl_attn_backend_ops hyb_backend_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = init_forward_metadata,
    .forward_extend = forward_extend,
    .forward_decode = forward_decode,
    .init_graph_state = init_graph_state,
    .init_forward_metadata_capture = graph_capture,
    .init_forward_metadata_replay = graph_replay,
    .graph_seq_len_fill_value = fill_value,
    .last_error = last_error,
    .destroy = destroy,
    .state_clear = state_clear,
    .state_copy = state_copy,
    .state_commit = state_commit,
    .state_batch = hyb_state_batch,
};
