/* cuda_attn_backend.c - create / destroy a cuda_attn instance, its one device
 * allocation (work lists, split buffers, counters; sized from max_reqs,
 * max_tokens and the device), the variant choice, and the graph hooks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attn_tmap.h"
#include "cuda_attn.h"
#include "cuda_error.h"
#include "cuda_probe.h"

/* Resident decode blocks per SM to aim the split count at. */
#define CA_DECODE_BLOCKS_PER_SM 4

static ca_backend *self(sgl_attn_backend *b) { return (ca_backend *)b; }

static const char *ca_last_error(sgl_attn_backend *b) { return self(b)->err; }

static void ca_destroy(sgl_attn_backend *bb) {
    if (!bb) return;
    ca_backend *b = self(bb);
    if (b->dev_mem) {
        (void)cudaSetDevice(b->device);
        (void)cudaFree(b->dev_mem);
    }
    attn_tmap_cache_free(b->tmaps);
    free(b);
}

static int ca_init_graph_state(sgl_attn_backend *bb, int32_t max_bs, int32_t max_num_tokens) {
    ca_backend *b = self(bb);
    b->err[0] = 0;
    if (max_bs < 1 || max_bs > b->sz.max_reqs || max_num_tokens < 1 || max_num_tokens > b->sz.max_tokens) {
        snprintf(b->err, sizeof b->err,
                 "init_graph_state: max_bs %d, max_num_tokens %d: expected 1..%d requests and 1..%d tokens (create's limits)",
                 max_bs, max_num_tokens, b->sz.max_reqs, b->sz.max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    /* Every buffer was sized at create for the largest batch: nothing to allocate. */
    b->graph_max_bs = max_bs;
    b->graph_max_tokens = max_num_tokens;
    return SGL_ATTN_OK;
}

static int graph_plan(ca_backend *b, const sgl_attn_graph_args *g, const char *call) {
    b->err[0] = 0;
    if (!g || !g->batch) {
        snprintf(b->err, sizeof b->err, "%s: graph args or their batch is NULL", call);
        return SGL_ATTN_E_INVALID;
    }
    if (b->graph_max_bs == 0) {
        snprintf(b->err, sizeof b->err, "%s: init_graph_state was not called", call);
        return SGL_ATTN_E_STATE;
    }
    if (g->batch_size > b->graph_max_bs || g->num_tokens > b->graph_max_tokens) {
        snprintf(b->err, sizeof b->err, "%s: batch_size %d / num_tokens %d exceed init_graph_state's %d / %d", call,
                 g->batch_size, g->num_tokens, b->graph_max_bs, b->graph_max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    return ca_plan(b, g->batch, g->batch_size, g->num_tokens, g->forward_mode);
}

/* Capture: plan now; the forwards captured next launch grids bounded by this
 * batch size, and read the work lists from device memory. */
static int ca_capture(sgl_attn_backend *bb, const sgl_attn_graph_args *g) {
    return graph_plan(self(bb), g, "init_forward_metadata_capture");
}

/* Replay: re-plan into the same buffers; the captured kernels read them. */
static int ca_replay(sgl_attn_backend *bb, const sgl_attn_graph_args *g) {
    return graph_plan(self(bb), g, "init_forward_metadata_replay");
}

/* Padded requests of a captured batch get length 1 (slot of column 0). */
static int32_t ca_fill_value(sgl_attn_backend *b) {
    (void)b;
    return 1;
}

static const sgl_attn_backend_ops ca_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = ca_init_forward_metadata,
    .forward_extend = ca_forward_extend,
    .forward_decode = ca_forward_decode,
    .init_graph_state = ca_init_graph_state,
    .init_forward_metadata_capture = ca_capture,
    .init_forward_metadata_replay = ca_replay,
    .graph_seq_len_fill_value = ca_fill_value,
    .last_error = ca_last_error,
    .destroy = ca_destroy,
    .state_clear = NULL,
    .state_copy = NULL,
    .state_commit = NULL,
};

/* The variant asked for (env first, then the conf option), or auto. */
static int requested_variant(const sgl_attn_host_api *h, char *err, size_t err_size) {
    const char *src = "SGL_ATTN_CUDA_KERNEL";
    const char *v = getenv("SGL_ATTN_CUDA_KERNEL");
    if (!v || !*v) {
        v = h && h->struct_size >= offsetof(sgl_attn_host_api, get_option) + sizeof h->get_option && h->get_option ? h->get_option(h->host_ctx, CA_NAME, "kernel") : NULL;
        src = "plugin option cuda_attn.kernel";
    }
    int r = ca_variant_parse(v);
    if (r == -2) snprintf(err, err_size, "create: %s=\"%s\": expected simple, mma, wgmma or auto", src, v);
    return r;
}

int ca_backend_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char scratch[CA_ERR_MAX];
    char *err = a && a->error && a->error_size ? a->error : scratch;
    size_t err_size = a && a->error && a->error_size ? a->error_size : sizeof scratch;
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || !a->model) {
        snprintf(err, err_size, "create: args or model is NULL");
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_model *m = a->model;
    char why[256];
    int rc = ca_model_check(m, why, sizeof why);
    if (rc) {
        snprintf(err, err_size, "create: %s", why);
        return rc;
    }
    sgl_cuda_device_info dev;
    rc = sgl_cuda_device_query(a->device, &dev, err, err_size);
    if (rc) return rc;
    if (dev.sm_major < 8) {
        snprintf(err, err_size, "create: device %d (%s) is SM %d.%d: cuda_attn needs SM 8.0 or newer", a->device,
                 dev.name, dev.sm_major, dev.sm_minor);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    cudaError_t ce = cudaSetDevice(a->device);
    if (ce != cudaSuccess) {
        sgl_cuda_format_error(err, err_size, "create: cudaSetDevice", (int)ce);
        return SGL_ATTN_E_DEVICE;
    }
    /* the creating host (ABI 1.1), else the entry's */
    const sgl_attn_host_api *host =
        a && a->struct_size >= offsetof(sgl_attn_create_args, host) + sizeof a->host && a->host ? a->host : ca_host();
    int variant = requested_variant(host, err, err_size);
    if (variant == -2) return SGL_ATTN_E_INVALID;
    const int wg_ok = dev.sm_major == 9 && m->head_dim_qk == 128 && attn_wgmma_available(a->device);
    /* auto: wgmma where it runs (SM 9.0, head dim 128, the sm_90a image), else
     * mma.  The H200 run of 2026-12-02 validated wgmma (attnctl check: every
     * claimed extend case, memcheck and racecheck clean) and timed it at
     * 2.3-2.8x mma; its default consumer is the plain one (extend_wgmma_sm90.cu). */
    if (variant < 0) variant = wg_ok ? ATTN_VARIANT_WGMMA : ATTN_VARIANT_MMA;
    if (variant == ATTN_VARIANT_WGMMA && !wg_ok) {
        ca_log(SGL_ATTN_LOG_WARN, "wgmma extend needs SM 9.0, head dim 128 and the sm_90a image; using mma");
        variant = ATTN_VARIANT_MMA;
    }

    ca_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_size, "create: out of host memory");
        return SGL_ATTN_E_NOMEM;
    }
    b->base.ops = &ca_ops;
    b->base.ops_size = ca_ops.struct_size;
    b->base.device = a->device;
    b->device = a->device;
    b->variant = variant;
    b->dt_bit = m->dtype;
    b->dtype = m->dtype == SGL_ATTN_DT_BF16 ? ATTN_DT_BF16 : ATTN_DT_F16;
    b->hq = m->num_q_heads;
    b->hkv = m->num_kv_heads;
    b->group = b->hq / b->hkv;
    b->head_dim = m->head_dim_qk;
    b->model_window = m->sliding_window;
    b->tiles = attn_variant_tiles(variant, b->head_dim, b->group);
    rc = ca_sizing_compute(&b->sz, a->max_reqs, a->max_tokens, a->max_context, b->hq, b->hkv, b->head_dim,
                           &b->tiles, dev.sm_count, CA_DECODE_BLOCKS_PER_SM, err, err_size);
    if (rc) {
        free(b);
        return rc;
    }
    ce = cudaMalloc(&b->dev_mem, b->sz.total_bytes);
    if (ce == cudaSuccess) ce = cudaMemset(b->dev_mem, 0, b->sz.total_bytes);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        char what[96];
        snprintf(what, sizeof what, "create: cudaMalloc/cudaMemset(%zu bytes)", b->sz.total_bytes);
        sgl_cuda_format_error(err, err_size, what, (int)ce);
        ca_destroy(&b->base);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    int ke = attn_kernels_setup(variant, b->dtype, b->head_dim);
    if (ke) {
        sgl_cuda_format_error(err, err_size, "create: kernel setup (cudaFuncSetAttribute)", ke);
        ca_destroy(&b->base);
        return SGL_ATTN_E_DEVICE;
    }
    /* SGL_ATTN_WGMMA_TMA (default on; extend_wgmma_sm90.cu set the kernel up): the encoder
     * and the per-layer map cache; without them the cp.async producer runs. */
    if (variant == ATTN_VARIANT_WGMMA && attn_wgmma_tma(b->dtype, b->head_dim)) {
        b->tmaps = attn_tmap_cache_new();
        if (!b->tmaps) ca_log(SGL_ATTN_LOG_WARN, "SGL_ATTN_WGMMA_TMA: no cuTensorMapEncodeTiled (or host memory): off");
    }
    ca_log(SGL_ATTN_LOG_INFO, "device %d %s SM %d.%d, %d SMs: kernels %s%s%s, %zu bytes of work buffers", a->device,
           dev.name, dev.sm_major, dev.sm_minor, dev.sm_count, ca_variant_name(variant),
           variant == ATTN_VARIANT_WGMMA && attn_wgmma_fused_save(b->dtype, b->head_dim) ? " (extend: fused save)" : "",
           b->tmaps ? " (extend: TMA)" : "", b->sz.total_bytes);
    *out = &b->base;
    return SGL_ATTN_OK;
}
