/* validate_plugin.c - the validation layer: a ROLE_LAYER plugin that wraps
 * any backend, checks each call before the inner sees it, and refuses the
 * call with the first violation (argument name and value) in last_error.
 *
 * It is embedded in libsglattn (host/embedded.c names
 * sgl_attn_validate_entry) and is in a stack only when validation is asked
 * for, so without it nothing of this file runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk_option.h"
#include "sdk_plugin.h"
#include "validate_internal.h"

/* Claims that leave the inner's unchanged when the host intersects them:
 * every dtype, kind and feature, ABI 1.2's included (each call passes the
 * 1.2 fields and ops on, checked), so a stack with the layer claims what
 * its inner claims. */
#define VL_ALL_DTYPES                                                                                  \
    (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64 | SGL_ATTN_DT_FP8_E4M3 |   \
     SGL_ATTN_DT_FP8_E5M2)
#define VL_ALL_KINDS                                                                                   \
    (SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA |                   \
     SGL_ATTN_KIND_CROSS)
#define VL_ALL_FEATURES SGL_ATTN_FEAT_ALL_V1_2
#define VL_ALL_DSA_OPS (SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER | SGL_ATTN_DSA_KV_FP8_RECORD)

static vl_backend *self(sgl_attn_backend *b) {
    return (vl_backend *)b;
}

static vl_ctx ctx(vl_backend *b, const char *call) {
    vl_ctx c = {call, b->err, sizeof b->err, 0, b->inner->device};
    return c;
}

/* The check failed: the inner is not called, last_error is ours. */
static int refuse(vl_backend *b, int rc) {
    b->err_is_ours = 1;
    return rc;
}

static int unsupported(vl_backend *b, const char *call) {
    snprintf(b->err, sizeof b->err, "%s: the inner backend does not implement it", call);
    return refuse(b, SGL_ATTN_E_UNSUPPORTED);
}

static int vl_init_forward_metadata(sgl_attn_backend *bb, const sgl_attn_batch *batch) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "init_forward_metadata");
    vl_batch_facts f;
    b->facts.batch = NULL;
    int rc;
    /* copy_device_indices: the checks read host copies of device tensors. */
    const sgl_attn_batch *copy = vl_host_copy(&c, b, batch, &rc);
    if (rc) return refuse(b, rc);
    rc = vl_check_batch(&c, b, copy ? copy : batch, &f);
    if (rc) {
        if (copy) {
            size_t n = strlen(b->err);
            snprintf(b->err + n, sizeof b->err - n, " (read through host copies of the device index tensors; their "
                     "req_to_token rows are numbered by request)");
        }
        return refuse(b, rc);
    }
    f.batch = batch;
    if (copy) {
        /* The copies are host views: the call's device is the real tensors'. */
        const DLTensor *ts[] = {batch->req_to_token, batch->req_pool_indices, batch->seq_lens,
                                batch->extend_prefix_lens, batch->extend_seq_lens, batch->out_cache_loc,
                                batch->positions, batch->encoder_lens, batch->state_indices};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            if (ts[i] && !vl_host_readable(ts[i])) {
                f.device_type = (int32_t)ts[i]->device.device_type;
                f.device_id = ts[i]->device.device_id;
                break;
            }
    }
    b->err_is_ours = 0;
    rc = b->inner_ops.init_forward_metadata(b->inner, batch);
    if (rc == SGL_ATTN_OK) {
        b->facts = f;
        vl_snapshot_take(b, batch);
    }
    return rc;
}

static int vl_forward(sgl_attn_backend *bb, const sgl_attn_forward_args *a, int decode) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, decode ? "forward_decode" : "forward_extend");
    int (*fn)(sgl_attn_backend *, const sgl_attn_forward_args *) =
        decode ? b->inner_ops.forward_decode : b->inner_ops.forward_extend;
    if (!fn) return unsupported(b, c.call);
    int rc = vl_check_forward(&c, b, a, decode);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return fn(b->inner, a);
}

static int vl_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    return vl_forward(b, a, 0);
}

static int vl_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    return vl_forward(b, a, 1);
}

/* ABI 1.2 ops: each in our vtable only where the inner has it. */
static int vl_forward_ragged(sgl_attn_backend *bb, const sgl_attn_ragged_args *a) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "forward_ragged");
    int rc = vl_check_ragged(&c, b, a);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return b->inner_ops.forward_ragged(b->inner, a);
}

static int vl_state_batch(sgl_attn_backend *bb, const sgl_attn_state_batch_args *a) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "state_batch");
    int rc = vl_check_state_batch(&c, b, a);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return b->inner_ops.state_batch(b->inner, a);
}

static int vl_indexer_topk(sgl_attn_backend *bb, const sgl_attn_indexer_args *a) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "indexer_topk");
    int rc = vl_check_indexer(&c, b, a);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return b->inner_ops.indexer_topk(b->inner, a);
}

static int vl_init_graph_state(sgl_attn_backend *bb, int32_t max_bs, int32_t max_num_tokens) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "init_graph_state");
    if (max_bs < 1 || max_bs > b->max_reqs)
        return refuse(b, vl_fail(&c, "max_bs = %d is outside 1..%d (max_reqs given at create)",
                                 (int)max_bs, (int)b->max_reqs));
    if (max_num_tokens < max_bs || max_num_tokens > b->max_tokens)
        return refuse(b, vl_fail(&c, "max_num_tokens = %d is outside %d..%d (max_bs..max_tokens)",
                                 (int)max_num_tokens, (int)max_bs, (int)b->max_tokens));
    b->err_is_ours = 0;
    int rc = b->inner_ops.init_graph_state(b->inner, max_bs, max_num_tokens);
    if (rc == SGL_ATTN_OK) {
        b->graph_max_bs = max_bs;
        b->graph_max_tokens = max_num_tokens;
    }
    return rc;
}

static int vl_graph(sgl_attn_backend *bb, const sgl_attn_graph_args *g, int replay) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, replay ? "init_forward_metadata_replay" : "init_forward_metadata_capture");
    int rc = vl_check_graph_args(&c, b, g);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return replay ? b->inner_ops.init_forward_metadata_replay(b->inner, g)
                  : b->inner_ops.init_forward_metadata_capture(b->inner, g);
}

/* Inside the capture, after init_forward_metadata_capture: the same arguments. */
static int vl_in_graph(sgl_attn_backend *bb, const sgl_attn_graph_args *g) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "init_forward_metadata_in_graph");
    int rc = vl_check_graph_args(&c, b, g);
    if (rc) return refuse(b, rc);
    b->err_is_ours = 0;
    return b->inner_ops.init_forward_metadata_in_graph(b->inner, g);
}

static int vl_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    return vl_graph(b, g, 0);
}

static int vl_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    return vl_graph(b, g, 1);
}

static int32_t vl_fill_value(sgl_attn_backend *bb) {
    vl_backend *b = self(bb);
    return b->inner_ops.graph_seq_len_fill_value(b->inner);
}

static const char *vl_last_error(sgl_attn_backend *bb) {
    vl_backend *b = self(bb);
    if (b->err_is_ours) return b->err;
    const char *e = b->inner_ops.last_error ? b->inner_ops.last_error(b->inner) : NULL;
    return e ? e : "";
}

static int slot_ok(vl_backend *b, const char *call, const char *arg, int32_t slot) {
    if (slot >= 0 && slot < b->max_reqs) return 1;
    vl_ctx c = ctx(b, call);
    refuse(b, vl_fail(&c, "%s = %d is outside the state pool's 0..%d", arg, (int)slot,
                      (int)b->max_reqs - 1));
    return 0;
}

static int vl_state_clear(sgl_attn_backend *bb, int32_t slot) {
    vl_backend *b = self(bb);
    if (!slot_ok(b, "state_clear", "slot", slot)) return SGL_ATTN_E_INVALID;
    b->err_is_ours = 0;
    return b->inner_ops.state_clear(b->inner, slot);
}

static int vl_state_copy(sgl_attn_backend *bb, int32_t src, int32_t dst) {
    vl_backend *b = self(bb);
    if (!slot_ok(b, "state_copy", "src_slot", src) || !slot_ok(b, "state_copy", "dst_slot", dst))
        return SGL_ATTN_E_INVALID;
    b->err_is_ours = 0;
    return b->inner_ops.state_copy(b->inner, src, dst);
}

static int vl_state_commit(sgl_attn_backend *bb, const DLTensor *accepted) {
    vl_backend *b = self(bb);
    vl_ctx c = ctx(b, "state_commit");
    if (!b->facts.batch) {
        vl_fail(&c, "called before a successful init_forward_metadata");
        return refuse(b, SGL_ATTN_E_STATE);
    }
    if (!accepted) return refuse(b, vl_fail(&c, "accepted_steps is NULL"));
    c.device_type = b->facts.device_type;
    c.device_id = b->facts.device_id;
    vl_tspec s = {"accepted_steps", "[batch_size]", 1, {b->facts.batch_size, 0, 0}, 0, 0, 0, 0};
    int rc = vl_check_tensor(&c, accepted, &s);
    if (rc) return refuse(b, rc);
    if (vl_host_readable(accepted)) {
        int32_t tpr = b->facts.batch->tokens_per_req;
        for (int32_t i = 0; i < b->facts.batch_size; i++) {
            int64_t v = vl_idx1(accepted, i);
            if (v < -1 || v >= tpr)
                return refuse(b, vl_fail(&c,
                                         "accepted_steps[%d] = %lld is outside -1..%d "
                                         "(tokens_per_req - 1)",
                                         (int)i, (long long)v, (int)tpr - 1));
        }
    }
    b->err_is_ours = 0;
    return b->inner_ops.state_commit(b->inner, accepted);
}

static void vl_destroy(sgl_attn_backend *bb) {
    /* The host destroys a stack outermost first, layer by layer (stack.c):
     * the inner is not ours to destroy. */
    vl_backend *b = self(bb);
    free(b->snap_vals);
    free(b->snap_rows);
    free(b->dev.vals);
    free(b->dev.rows);
    free(b);
}

/* The host hands the layer the device_ops of the plugin at the bottom of
 * its stack (host/stack.c): copy_device_indices copies through them. */
void sgl_attn_validate_set_device_ops(sgl_attn_backend *bb, const sgl_attn_device_ops *ops);
void sgl_attn_validate_set_device_ops(sgl_attn_backend *bb, const sgl_attn_device_ops *ops) {
    if (bb && bb->ops && bb->ops->init_forward_metadata == vl_init_forward_metadata) self(bb)->dev.ops = ops;
}

/* Our vtable mirrors the inner's: an optional entry the inner lacks stays
 * NULL, so callers that test for it see the same stack either way. */
static void build_ops(vl_backend *b) {
    const sgl_attn_backend_ops *in = &b->inner_ops;
    sgl_attn_backend_ops *o = &b->ops;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->init_forward_metadata = vl_init_forward_metadata;
    o->forward_extend = vl_forward_extend;
    o->forward_decode = vl_forward_decode;
    o->last_error = vl_last_error;
    o->destroy = vl_destroy;
    if (in->init_graph_state) o->init_graph_state = vl_init_graph_state;
    if (in->init_forward_metadata_capture) o->init_forward_metadata_capture = vl_capture;
    if (in->init_forward_metadata_replay) o->init_forward_metadata_replay = vl_replay;
    if (in->graph_seq_len_fill_value) o->graph_seq_len_fill_value = vl_fill_value;
    if (in->state_clear) o->state_clear = vl_state_clear;
    if (in->state_copy) o->state_copy = vl_state_copy;
    if (in->state_commit) o->state_commit = vl_state_commit;
    /* inner_ops is zero past the inner's struct_size: an older inner has none */
    if (in->forward_ragged) o->forward_ragged = vl_forward_ragged;
    if (in->init_forward_metadata_in_graph) o->init_forward_metadata_in_graph = vl_in_graph;
    if (in->state_batch) o->state_batch = vl_state_batch;
    if (in->indexer_topk) o->indexer_topk = vl_indexer_topk;
}

static int create_fail(const sgl_attn_create_args *a, int rc, const char *msg) {
    return sgl_sdk_create_fail(a, rc, "validate: %s", msg);
}

static int vl_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || a->struct_size < sizeof(sgl_attn_create_args)) return SGL_ATTN_E_INVALID;
    if (!a->inner || !a->inner->ops)
        return create_fail(a, SGL_ATTN_E_INVALID,
                           "a layer needs create_args.inner, the backend it wraps");
    if (!a->inner_caps) return create_fail(a, SGL_ATTN_E_INVALID, "create_args.inner_caps is NULL");
    if (!a->model || a->model->struct_size < sizeof(sgl_attn_model))
        return create_fail(a, SGL_ATTN_E_INVALID, "create_args.model is NULL or older than ABI 1.0");
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1)
        return create_fail(a, SGL_ATTN_E_INVALID, "max_reqs, max_tokens and max_context must be >= 1");
    const sgl_attn_backend_ops *in = a->inner->ops;
    /* The inner's vtable may be older (smaller) than ours: copy what it has. */
    size_t n =
        in->struct_size < sizeof(sgl_attn_backend_ops) ? in->struct_size : sizeof(sgl_attn_backend_ops);
    if (n < offsetof(sgl_attn_backend_ops, destroy) + sizeof in->destroy)
        return create_fail(a, SGL_ATTN_E_INVALID, "the inner backend's vtable is too small");
    vl_backend *b = calloc(1, sizeof *b);
    if (!b) return create_fail(a, SGL_ATTN_E_NOMEM, "out of memory");
    memcpy(&b->inner_ops, in, n);
    if (!b->inner_ops.init_forward_metadata || !b->inner_ops.destroy) {
        free(b);
        return create_fail(a, SGL_ATTN_E_INVALID,
                           "the inner backend lacks init_forward_metadata or destroy");
    }
    b->inner = a->inner;
    memcpy(&b->caps, a->inner_caps,
           a->inner_caps->struct_size < sizeof b->caps ? a->inner_caps->struct_size : sizeof b->caps);
    memcpy(&b->model, a->model, sizeof b->model);
    b->max_reqs = a->max_reqs;
    b->max_tokens = a->max_tokens;
    b->max_context = a->max_context;
    b->facts.max_slot.value = -1;
    char oerr[256] = "";
    const sgl_sdk_opts opts = {sgl_sdk_opts_of(a, "validate").host, "validate", oerr, sizeof oerr};
    if (sgl_sdk_opt_bool(&opts, "copy_device_indices", "SGL_ATTN_VALIDATE_DEVICE", 0, &b->dev.on)) {
        free(b);
        return create_fail(a, SGL_ATTN_E_INVALID, oerr);
    }
    b->snap_vals = calloc(vl_snapshot_entries(a->max_reqs, a->max_tokens), sizeof *b->snap_vals);
    b->snap_rows = calloc((size_t)a->max_reqs, sizeof *b->snap_rows);
    if (b->dev.on) {
        b->dev.stride = a->max_reqs > a->max_tokens ? a->max_reqs : a->max_tokens;
        b->dev.vals = calloc((size_t)VL_T_COUNT * (size_t)b->dev.stride, sizeof *b->dev.vals);
        b->dev.rows = calloc((size_t)a->max_reqs * (size_t)a->max_context, sizeof *b->dev.rows);
    }
    if (!b->snap_vals || !b->snap_rows || (b->dev.on && (!b->dev.vals || !b->dev.rows))) {
        vl_destroy(&b->base);
        return create_fail(a, SGL_ATTN_E_NOMEM, "out of memory for the batch snapshot or the device copies");
    }
    build_ops(b);
    b->base.ops = &b->ops;
    b->base.ops_size = b->ops.struct_size;
    b->base.device = a->inner->device;
    *out = &b->base;
    return SGL_ATTN_OK;
}

static int vl_probe(uint32_t index, sgl_attn_caps *caps) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    caps->available = 1;
    snprintf(caps->device_name, sizeof caps->device_name, "any (runs where its inner backend runs)");
    snprintf(caps->arch_name, sizeof caps->arch_name, "any");
    sgl_sdk_caps_no_arch(caps);
    caps->attn_kinds = VL_ALL_KINDS;
    caps->q_dtypes = caps->kv_dtypes = caps->state_dtypes = VL_ALL_DTYPES;
    caps->features = VL_ALL_FEATURES;
    /* Forwards reach the inner unchanged, topk_indices included, and
     * indexer_topk where the inner has it. */
    caps->dsa_ops = VL_ALL_DSA_OPS;
    caps->head_dim_qk_max = caps->head_dim_v_max = 0; /* 0: no limit */
    caps->page_size_max = 0;
    caps->max_gqa_ratio = 0;
    caps->score = 0; /* a layer is stacked on request, never chosen */
    return SGL_ATTN_OK;
}

/* Embedded in libsglattn: a hidden entry host/embedded.c names, no export. */
SGL_SDK_EMBEDDED_PLUGIN(sgl_attn_validate_entry, vl_plugin,
    .name = "validate",
    .version = "0.1.0",
    .description = "validation layer: checks every call's tensors, lengths and slots against "
                   "the model, the pool and the inner's claims, then forwards it",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_NONE,
    .role = SGL_ATTN_ROLE_LAYER,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .probe = vl_probe,
    .create = vl_create)
