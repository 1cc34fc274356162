/* lin_forward.c - the forwards: a layer in the model's full-attention set goes
 * to the inner backend untouched; any other layer is checked here and
 * computed by one of the kernel paths on the batch's stream (nothing
 * allocated, nothing synchronised, nothing read from the environment,
 * nothing looked up by name):
 *   decode / verify   the stream decode (K = 128), else the fused decode
 *                     (K = 32, 64, 256; K = 128 past the pool's draft steps),
 *                     else the token-by-token path; kernel=simple: always it
 *   extend            the chunked kernels (16-bit activations, K = 128, V a
 *                     multiple of 32 up to 128, the device's shared memory),
 *                     else the token-by-token path
 *   short_conv        conv + conv state (both variants)
 * A layer's state is the wrapper's pool, or the caller's tensors in
 * linear_io (ABI 1.2): the same kernels, handed other base pointers, steps
 * and slots (the slot kernel's, for that one forward). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda/sdk_cuda.h"
#include "lin.h"

static lin_in in_of(const DLTensor *t) {
    lin_in r = {NULL, 0, 0};
    if (t) {
        r.p = sgl_sdk_data(t);
        r.dt = lin_dt_of(t->dtype);
    }
    return r;
}

/* The inputs a kind reads (docs/hybrid.md), checked against the dims: the
 * SDK's formulas, with what the kernels read (lin_float_spec). */
static int check_io(lin_inst *w, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io, int lid) {
    char pre[96];
    snprintf(pre, sizeof pre, "%s layer %d: ", w->name, lid);
    const sgl_sdk_tensor_spec base = lin_float_spec(w->device);
    return sgl_sdk_lin_check_inputs(&w->d, a, io, w->T, &base, pre, w->err, sizeof w->err);
}

/* A layer whose state the caller owns (ABI 1.2): its tensors checked once
 * per forward, then the slots of this forward by the slot kernel (bounded by
 * the tensors' S, repeats refused), and the kernels' state pointers, steps
 * and slots moved onto them: the pool path's kernels, unchanged. */
static int caller_state(lin_inst *w, const sgl_attn_linear_io *io, int lid, int keep, lin_fwd *p, void *stream) {
    char pre[96];
    snprintf(pre, sizeof pre, "%s layer %d: ", w->name, lid);
    sgl_sdk_lin_state cs;
    int rc = lin_check_caller_state(&w->d, io, w->device, keep ? w->tpr : 0, pre, &cs, w->err, sizeof w->err);
    if (rc) return rc;
    lin_cslot_args c;
    memset(&c, 0, sizeof c);
    if (cs.indices) {
        int on_host = 0;
        char name[128];
        snprintf(name, sizeof name, "%slinear.state_indices", pre);
        if ((rc = lin_check_index(cs.indices, name, w->device, w->bs, &on_host, w->err, sizeof w->err))) return rc;
        if (on_host) {
            lin_set_err(w, "%slinear.state_indices is in pageable host memory; a forward reads it on the device "
                        "(pass device or pinned memory, or NULL for batch.state_indices)", pre);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        c.src.p = sgl_sdk_data(cs.indices);
        c.src.is64 = cs.indices->dtype.bits == 64;
    } else {
        c.src = w->plan_si;
    }
    c.out = p->pl.cslot;
    c.slots = cs.slots;
    c.bs = w->bs;
    c.fault = w->fault.dev;
    const int ce = lin_launch_cslots(&c, stream);
    if (ce) {
        char what[96];
        snprintf(what, sizeof what, "%s layer %d: slot kernel launch", w->name, lid);
        sgl_sdk_cuda_format_error(w->err, sizeof w->err, what, ce);
        return SGL_ATTN_E_DEVICE;
    }
    p->pl.req_slot = p->pl.cslot;
    p->conv_state = cs.conv ? (void *)sgl_sdk_data(cs.conv) : NULL; /* the caller's: written */
    p->ssm_state = cs.ssm ? (void *)sgl_sdk_data(cs.ssm) : NULL;
    p->iconv = keep && cs.iconv ? (void *)sgl_sdk_data(cs.iconv) : NULL;
    p->issm = keep && cs.issm ? (void *)sgl_sdk_data(cs.issm) : NULL;
    p->steps = keep ? (int32_t)cs.steps : 0;
    return SGL_ATTN_OK;
}

static void fill_params(lin_inst *w, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io, int li, int keep,
                        lin_fwd *p) {
    const lin_dims *d = &w->d;
    const lin_layout *L = &w->L;
    memset(p, 0, sizeof *p);
    p->kind = d->kind;
    p->hk = d->hk;
    p->hv = d->hv;
    p->K = d->dk;
    p->V = d->dv;
    p->conv_dim = d->conv_dim;
    p->conv_w = d->conv_w;
    p->x_dim = d->x_dim;
    p->gsz = d->gsz;
    p->gc = d->gc;
    p->bs = w->bs;
    p->T = w->T;
    p->tpr = w->tpr;
    p->keep = keep;
    p->l2norm = io->use_qk_l2norm != 0;
    p->steps = L->steps;
    const int delta = d->kind == SGL_ATTN_HYBRID_GDN || d->kind == SGL_ATTN_HYBRID_KDA;
    p->scale = delta ? (float)(1.0 / sqrt((double)d->dk)) : 1.0f;
    p->st_dt = lin_state_dt(d);
    DLTensor *out = io->out ? io->out : a->out;
    p->out = (void *)sgl_sdk_data(out);
    p->out_dt = lin_dt_of(out->dtype);
    p->x = in_of(io->x);
    p->a = in_of(io->a);
    p->b = in_of(io->b);
    p->conv_weight = in_of(io->conv_weight);
    p->conv_bias = in_of(io->conv_bias);
    p->A_log = in_of(io->A_log);
    p->dt_bias = in_of(io->dt_bias);
    p->D = in_of(io->D);
    p->decay = in_of(io->decay);
    if (d->kind == SGL_ATTN_HYBRID_LIGHTNING) {
        p->q = in_of(a->q);
        p->k = in_of(a->k);
        p->v = in_of(a->v);
    }
    const size_t R = (size_t)w->max_reqs, esz = (size_t)d->esz, S = (size_t)L->steps;
    p->conv_elems = d->conv_elems;
    p->ssm_elems = d->ssm_elems;
    p->conv_state = d->conv_elems ? w->dev + L->conv + (size_t)li * R * (size_t)d->conv_elems * esz : NULL;
    p->ssm_state = d->ssm_elems ? w->dev + L->ssm + (size_t)li * R * (size_t)d->ssm_elems * esz : NULL;
    if (S) {
        p->iconv = d->conv_elems ? w->dev + L->iconv + (size_t)li * R * S * (size_t)d->conv_elems * esz : NULL;
        p->issm = d->ssm_elems ? w->dev + L->issm + (size_t)li * R * S * (size_t)d->ssm_elems * esz : NULL;
    }
    p->pl = lin_plan_ptrs(w);
    p->X = (float *)(w->dev + L->X);
    p->G = (float *)(w->dev + L->G);
    p->B = (float *)(w->dev + L->B);
    p->Wt = w->dev + L->Wt;
    p->QGt = w->dev + L->QGt;
    p->KDt = w->dev + L->KDt;
    p->Ut = w->dev + L->Ut;
    p->Mt = w->dev + L->Mt;
    p->eG = (float *)(w->dev + L->eG);
    p->Sk = (float *)(w->dev + L->Sk);
    p->max_chunks = L->max_chunks;
    p->Qc = L->need_prep_ut ? w->dev + L->Qc : NULL;
    p->Kc = L->need_prep_ut ? w->dev + L->Kc : NULL;
    p->Vc = L->need_prep_ut ? w->dev + L->Vc : NULL;
    p->prep_ut = L->need_prep_ut;
    p->Hs = L->need_tc ? w->dev + L->Hs : NULL;
    p->Zs = L->seg_cap ? (float *)(w->dev + L->Zs) : NULL;
    p->seg_chunks = 0; /* the serial state pass unless launch() chooses segments */
    p->fused_p2 = 0;   /* launch() chooses the fused phase 2 (lin_fused_p2_tile) */
    p->grp = 0; /* lin_launch_chunk sets it */
    p->seg_max = 1;
    p->dq = L->need_stream ? (float *)(w->dev + L->dq) : NULL;
    p->dq_pdl = w->sm_major >= 9; /* griddepcontrol: SM 9.0; on 8.x the same kernels, plain launches */
    /* the stream decode's L2 prefetch distance (create chose it: lin_decode_l2a_blocks) */
    p->dec_l2a = L->need_stream ? w->l2a_blocks : 0;
}

static int launch(lin_inst *w, const lin_fwd *p, int lid, void *stream) {
    const lin_dims *d = &w->d;
    const int fast = w->variant == LIN_VARIANT_FAST;
    const int simple_ready = w->L.need_simple || d->kind == SGL_ATTN_HYBRID_LIGHTNING ||
                             d->kind == SGL_ATTN_HYBRID_SHORT_CONV;
    const char *path = "token-by-token";
    int ce;
    if (d->kind == SGL_ATTN_HYBRID_SHORT_CONV) {
        ce = lin_launch_token_step(p, stream);
    } else if (w->mode == SGL_ATTN_MODE_EXTEND) {
        const lin_in act = d->kind == SGL_ATTN_HYBRID_LIGHTNING ? p->q : p->x;
        if (fast && w->L.need_tc && (act.dt == LIN_DT_BF16 || act.dt == LIN_DT_F16)) {
            int vt = w->vt;
            if (!vt) vt = (int64_t)w->bs * d->hv * (d->dv / 32) < w->sm_count ? 16 : 32;
            path = "chunked";
            /* the state pass by segments when the batch leaves SMs idle (lin_seg_plan) */
            lin_fwd q = *p;
            q.fused_cp = act.dt == LIN_DT_BF16 && lin_fused_cp_takes(w->fused_cp, d, w->sm_count, w->bs);
            if (q.fused_cp) path = "chunked (fused)";
            else q.seg_chunks = lin_seg_plan(&w->L, d, w->seg, w->sm_count, w->bs, w->T, vt, &q.seg_max);
            /* mamba2's fused phase 2 where the serial state pass would run */
            q.fused_p2 = act.dt == LIN_DT_BF16 && !q.fused_cp && q.seg_chunks <= 0
                             ? lin_fused_p2_tile(w->fused_p2, d, w->sm_count, w->bs)
                             : 0;
            if (q.fused_p2) path = "chunked (fused phase 2)";
            ce = lin_launch_chunk(&q, act.dt, vt, stream);
        } else if (simple_ready) {
            ce = lin_launch_token_step(p, stream);
        } else {
            lin_set_err(w, "%s layer %d: extend with %s activations needs the token-by-token path, which this "
                        "instance did not allocate (it was created for a model with dtype 0x%x)", w->name, lid,
                        act.dt == LIN_DT_F32 ? "float32" : "16-bit", (unsigned)w->model.dtype);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    } else if (fast && w->L.need_stream && w->tpr <= (w->L.steps > 0 ? w->L.steps : 1) &&
               lin_decode_stream_dims_ok(d, w->tpr)) {
        /* dq holds max(steps, 1) tokens per request */
        path = "stream decode";
        ce = lin_launch_decode_stream(p, stream);
    } else if (fast && lin_decode_fused_dims_ok(d, w->tpr)) {
        path = "fused decode";
        ce = lin_launch_decode_fused(p, stream);
    } else if (simple_ready) {
        ce = lin_launch_token_step(p, stream);
    } else {
        lin_set_err(w, "%s layer %d: %d tokens per request take the token-by-token path, which this instance did not "
                    "allocate (model.spec_tokens = %d)", w->name, lid, w->tpr, w->model.spec_tokens);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (ce) {
        char what[96];
        snprintf(what, sizeof what, "%s layer %d: %s kernel launch", w->name, lid, path);
        sgl_sdk_cuda_format_error(w->err, sizeof w->err, what, ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

static int own_forward(lin_inst *w, const sgl_attn_forward_args *a) {
    const int lid = a->layer->layer_id;
    if (!w->planned) {
        lin_set_err(w, "%s layer %d: forward without a successful init_forward_metadata for this batch", w->name, lid);
        return SGL_ATTN_E_STATE;
    }
    if (w->T == 0) return SGL_ATTN_OK;
    const char *unserved = lin_unserved_forward(a);
    if (unserved) {
        lin_set_err(w, "%s layer %d: %s is set (ABI 1.2): the linear layers do not serve it", w->name, lid, unserved);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const sgl_attn_linear_io *io = a->linear;
    int rc = check_io(w, a, io, lid);
    if (rc) return rc;
    const int keep = w->mode == SGL_ATTN_MODE_TARGET_VERIFY && io->keep_intermediate;
    sgl_sdk_lin_state cs;
    const int caller = sgl_sdk_lin_state_of(io, &cs);
    if (!caller) { /* the wrapper's pool */
        if (cs.indices) {
            lin_set_err(w, "%s layer %d: linear.state_indices is set without a state tensor; it indexes caller-owned "
                        "state (linear.conv_state / ssm_state)", w->name, lid);
            return SGL_ATTN_E_INVALID;
        }
        if (w->pool_over_i >= 0) {
            lin_set_err(w, "%s layer %d: batch.state_indices[%d] = %lld; expected -1 (padding) or a slot 0..%d of the "
                        "wrapper's pool (a larger slot needs the layer's state in linear_io: caller-owned state)",
                        w->name, lid, w->pool_over_i, (long long)w->pool_over_v, w->max_reqs - 1);
            return SGL_ATTN_E_INVALID;
        }
        if (keep && w->L.steps < w->tpr) {
            lin_set_err(w, "%s layer %d: verify keeps %d intermediate states per request but the pool was created for "
                        "%d (model.spec_tokens)", w->name, lid, w->tpr, w->L.steps);
            return SGL_ATTN_E_INVALID;
        }
    }
    /* The batch's stream now, not at its plan: an engine plans a graph's batch on its own stream and then
     * points the batch at the capturing stream (sglang's init_forward_metadata_in_graph), and a launch
     * anywhere else would run at capture instead of being recorded. */
    void *stream = a->batch ? a->batch->stream : w->stream;
    lin_fwd p;
    fill_params(w, a, io, w->lin_index[lid], keep, &p);
    if (caller && (rc = caller_state(w, io, lid, keep, &p, stream))) return rc;
    if ((rc = launch(w, &p, lid, stream))) return rc;
    if (!caller) {
        w->pool_fwd = 1;
        if (w->plan_capturing) w->graph_pool_fwd = 1;
        if (keep) w->verify_kept = 1;
        if (keep && w->plan_graph) w->graph_verify_kept = 1;
    }
    return SGL_ATTN_OK;
}

static int route(sgl_attn_backend *b, const sgl_attn_forward_args *a, int extend) {
    lin_inst *w = (lin_inst *)b;
    if (!a || !a->layer) {
        lin_set_err(w, "%s: forward args or args->layer is NULL", w->name);
        return SGL_ATTN_E_INVALID;
    }
    const int lid = a->layer->layer_id;
    if (lid < 0 || lid >= w->model.num_layers) {
        lin_set_err(w, "%s: layer_id %d; the model has layers 0..%d", w->name, lid, w->model.num_layers - 1);
        return SGL_ATTN_E_INVALID;
    }
    if (w->lin_index[lid] >= 0) return own_forward(w, a);
    int (*f)(sgl_attn_backend *, const sgl_attn_forward_args *) =
        extend ? LIN_INNER_OP(w, forward_extend) : LIN_INNER_OP(w, forward_decode);
    if (!f) {
        lin_set_err(w, "%s: layer %d is a full-attention layer and the inner backend has no forward_%s", w->name, lid,
                    extend ? "extend" : "decode");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = f(w->inner, a);
    return rc ? lin_inner_failed(w, rc, extend ? "forward_extend" : "forward_decode") : SGL_ATTN_OK;
}

int lin_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return route(b, a, 1); }
int lin_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return route(b, a, 0); }
