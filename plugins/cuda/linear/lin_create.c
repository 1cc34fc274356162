/* lin_create.c - a CUDA linear wrapper instance: dims and routing from the
 * model, its options (read here, once), and one device allocation holding the
 * state pool, the plan arrays and every scratch buffer a forward touches, so
 * forwards never allocate.  The instance does not own the inner backend. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "lin.h"

void lin_set_err(lin_inst *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}

int lin_inner_failed(lin_inst *w, int rc, const char *what) {
    const char *(*le)(sgl_attn_backend *) = LIN_INNER_OP(w, last_error);
    const char *msg = le ? le(w->inner) : NULL;
    lin_set_err(w, "%s: inner backend %s failed (%d): %s", w->name, what, rc, msg && *msg ? msg : "no message");
    return rc;
}

lin_plan_dev lin_plan_ptrs(const lin_inst *w) {
    lin_plan_dev p;
    int32_t **f[14] = {&p.req_tok0, &p.req_n, &p.req_slot, &p.req_init, &p.req_chunk0, &p.req_nchunk, &p.tok_req,
                       &p.chunk_req, &p.chunk_tok0, &p.chunk_len, &p.num_chunks, &p.slot_owner, &p.verify_slot,
                       &p.err};
    for (int i = 0; i < 14; i++) *f[i] = (int32_t *)(w->dev + w->L.plan[i]);
    return p;
}

static const char *last_error(sgl_attn_backend *b) { return ((lin_inst *)b)->err; }

static int32_t fill_value(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    int32_t (*f)(sgl_attn_backend *) = LIN_INNER_OP(w, graph_seq_len_fill_value);
    return f ? f(w->inner) : 1;
}

static void destroy(sgl_attn_backend *b) {
    lin_inst *w = (lin_inst *)b;
    if (!w) return;
    if (w->dev) {
        (void)cudaSetDevice(w->device);
        (void)cudaFree(w->dev);
    }
    free(w->host_stage);
    free(w->seen);
    free(w);
}

const sgl_attn_backend_ops lin_backend_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = lin_init_forward_metadata,
    .forward_extend = lin_forward_extend,
    .forward_decode = lin_forward_decode,
    .init_graph_state = lin_init_graph_state,
    .init_forward_metadata_capture = lin_graph_capture,
    .init_forward_metadata_replay = lin_graph_replay,
    .graph_seq_len_fill_value = fill_value,
    .last_error = last_error,
    .destroy = destroy,
    .state_clear = lin_state_clear,
    .state_copy = lin_state_copy,
    .state_commit = lin_state_commit,
};

/* An option earlier builds had for a kernel choice that is gone: unset, empty or auto pass; anything else is
 * refused, so that a configuration written for those builds does not silently run something else. */
static int opt_retired(const sgl_attn_host_api *h, const char *plugin, const char *env, const char *key, char *err,
                       size_t n) {
    const char *v = lin_option(h, plugin, env, key);
    if (!v || !*v || !strcasecmp(v, "auto")) return SGL_ATTN_OK;
    lin_str(err, n, "%s: %s / plugin option %s = \"%s\" is unknown; expected auto (the kernels it chose between are "
            "gone; the options are kernel, value_tile and sync_check: docs/cuda_linear.md)", plugin, env, key, v);
    return SGL_ATTN_E_INVALID;
}

static int opt_int(const sgl_attn_host_api *h, const char *plugin, const char *env, const char *key, int def, int lo,
                   int hi, int *out, char *err, size_t n) {
    const char *v = lin_option(h, plugin, env, key);
    if (!v || !*v || !strcmp(v, "auto")) {
        *out = def;
        return SGL_ATTN_OK;
    }
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!strcmp(v, "true")) x = 1, end = (char *)v + 4;
    if (!strcmp(v, "false")) x = 0, end = (char *)v + 5;
    if (!end || *end || x < lo || x > hi) {
        lin_str(err, n, "%s: %s / plugin option %s = \"%s\" is unknown; expected an integer %d..%d or auto", plugin,
                env, key, v, lo, hi);
        return SGL_ATTN_E_INVALID;
    }
    *out = (int)x;
    return SGL_ATTN_OK;
}

int lin_create(int kind, const char *name, const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char scratch[LIN_ERR_MAX];
    char *err = a && a->error && a->error_size ? a->error : scratch;
    const size_t en = a && a->error && a->error_size ? a->error_size : sizeof scratch;
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || !a->model) {
        lin_str(err, en, "%s: create needs args and a model", name);
        return SGL_ATTN_E_INVALID;
    }
    if (!a->inner || !a->inner->ops) {
        lin_str(err, en, "%s is a hybrid wrapper: create_args.inner must be the full-attention backend it wraps", name);
        return SGL_ATTN_E_INVALID;
    }
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1) {
        lin_str(err, en, "%s: max_reqs = %d, max_tokens = %d, max_context = %d; expected all >= 1", name, a->max_reqs,
                a->max_tokens, a->max_context);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_model *m = a->model;
    char why[256];
    lin_dims d;
    int rc = lin_supports_model(kind, m, why, sizeof why);
    if (rc || (rc = lin_dims_from_model(kind, m, &d, why, sizeof why))) {
        lin_str(err, en, "%s: %s", name, why);
        return rc;
    }
    const sgl_attn_host_api *host = lin_create_host(a);
    const char *vs = lin_option(host, name, "SGL_ATTN_LIN_KERNEL", "kernel");
    const int variant = lin_variant_parse(vs);
    if (variant < 0) {
        lin_str(err, en, "%s: SGL_ATTN_LIN_KERNEL / plugin option kernel = \"%s\" is unknown; expected simple or fast",
                name, vs);
        return SGL_ATTN_E_INVALID;
    }
    /* sync_check is a debug option: planning and state_commit then wait for the device to report what only
     * it can check (docs/cuda_linear.md) */
    int vt = 0, sync_check = 0;
    if ((rc = opt_int(host, name, "SGL_ATTN_LIN_VT", "value_tile", 0, 0, 32, &vt, err, en)) ||
        (rc = opt_int(host, name, "SGL_ATTN_LIN_SYNC_CHECK", "sync_check", 0, 0, 1, &sync_check, err, en)))
        return rc;
    if (vt != 0 && vt != 16 && vt != 32) {
        lin_str(err, en, "%s: SGL_ATTN_LIN_VT / plugin option value_tile = %d is unknown; expected 16, 32 or auto", name,
                vt);
        return SGL_ATTN_E_INVALID;
    }
    static const char *const retired[][2] = {
        {"SGL_ATTN_LIN_DECODE", "decode"},       {"SGL_ATTN_LIN_CHUNK1", "chunk1"}, {"SGL_ATTN_LIN_CHUNK2", "chunk2"},
        {"SGL_ATTN_LIN_PREP", "prep"},           {"SGL_ATTN_LIN_UT", "ut"},         {"SGL_ATTN_LIN_COUT", "cout"},
        {"SGL_ATTN_LIN_CSTATE", "cstate"},       {"SGL_ATTN_LIN_CSCAN_M", "cscan_group"},
        {"SGL_ATTN_LIN_CSCAN_VT", "cscan_tile"}, {"SGL_ATTN_LIN_DECPREP", "decprep"}};
    for (size_t i = 0; i < sizeof retired / sizeof *retired; i++)
        if ((rc = opt_retired(host, name, retired[i][0], retired[i][1], err, en))) return rc;
    sgl_sdk_cuda_device dev;
    if ((rc = sgl_sdk_cuda_device_query(a->device, &dev, err, en))) return rc;
    if (dev.sm_major < 8) {
        lin_str(err, en, "%s: device %d (%s) is SM %d.%d; the CUDA linear wrappers need SM 8.0 or newer", name,
                a->device, dev.name, dev.sm_major, dev.sm_minor);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int half = m->dtype == SGL_ATTN_DT_BF16 || m->dtype == SGL_ATTN_DT_F16;
    /* the chunked extend needs its largest kernel's shared memory (SM 8.0 / 9.0 have it; SM 8.6 / 8.9,
     * 99 KiB a block, take the token-by-token path) */
    const size_t tc_smem = LIN_FUSED_UT_SMEM > LIN_FUSED_STATE_SMEM(32) ? LIN_FUSED_UT_SMEM : LIN_FUSED_STATE_SMEM(32);
    const int tc_ok = half && dev.smem_per_block_optin >= tc_smem;

    lin_inst *w = calloc(1, sizeof *w);
    if (!w) {
        lin_str(err, en, "%s: out of host memory", name);
        return SGL_ATTN_E_NOMEM;
    }
    w->base.ops = &lin_backend_ops;
    w->base.ops_size = lin_backend_ops.struct_size;
    w->base.device = a->device;
    w->kind = kind;
    w->name = name;
    w->model = *m; /* the host's struct is never smaller than ours */
    w->d = d;
    w->inner = a->inner;
    w->device = a->device;
    w->variant = variant;
    w->vt = vt;
    w->sync_check = sync_check;
    w->sm_count = dev.sm_count;
    w->sm_major = dev.sm_major;
    w->max_reqs = a->max_reqs;
    w->max_tokens = a->max_tokens;
    w->max_context = a->max_context;
    for (int l = 0, i = 0; l < SGL_ATTN_MAX_LAYERS; l++)
        w->lin_index[l] = (int16_t)(lin_layer_is_own(m, l) ? i++ : -1);
    if ((rc = lin_layout_compute(&w->L, &d, a->max_reqs, a->max_tokens, m->spec_tokens, variant, tc_ok, why,
                                 sizeof why))) {
        lin_str(err, en, "%s: %s", name, why);
        free(w);
        return rc;
    }
    w->host_stage = calloc((size_t)3 * (size_t)a->max_reqs, sizeof(int32_t));
    w->seen = calloc((size_t)a->max_reqs, 1);
    cudaError_t ce = w->host_stage && w->seen ? cudaSetDevice(a->device) : cudaErrorMemoryAllocation;
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&w->dev, w->L.total);
    if (ce == cudaSuccess) ce = cudaMemset(w->dev, 0, w->L.total);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize(); /* the memset is done before any stream uses it */
    if (ce == cudaSuccess && w->L.need_tc) ce = (cudaError_t)lin_chunk_setup();
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        char what[160];
        snprintf(what, sizeof what, "%s: create: device buffers (%zu bytes: state pool %d layers x %d slots%s)", name,
                 w->L.total, d.n_lin, a->max_reqs, w->L.steps ? " with verify copies" : "");
        sgl_sdk_cuda_format_error(err, en, what, (int)ce);
        destroy(&w->base);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    lin_log(SGL_ATTN_LOG_INFO, "%s on device %d (%s, SM %d.%d): kernels %s%s%s%s%s, %zu bytes on the device", name,
            a->device, dev.name, dev.sm_major, dev.sm_minor, lin_variant_name(variant),
            w->L.need_tc ? " (chunked extend)" : "", w->L.need_stream ? " (stream decode)" : "",
            w->L.need_simple ? " (token-by-token path ready)" : "", sync_check ? " (sync_check: debug)" : "",
            w->L.total);
    *out = &w->base;
    return SGL_ATTN_OK;
}
