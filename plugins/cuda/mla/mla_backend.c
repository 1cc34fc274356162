/* mla_backend.c - create / destroy, planning (init_forward_metadata and the
 * graph hooks) of the cuda_mla backend.  See mla_backend.h. */
#include "mla_backend.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/sdk_cuda.h"
#include "mla_check.h"
#include "mla_indexer.h"
#include "mla_sparse.h"
#include "sdk_option.h"
#include "sdk_tensor.h"
#include "sdk_text.h"

/* L2 prefetch distance of each mma configuration, in 32-key tiles ahead of
 * the tile being computed (docs/lab/mla.md has the measurements).  TMA: none,
 * its bulk copies cross the L2 once and a prefetch would make that twice;
 * BASE: none, with one CTA per SM a prefetch changed nothing measurable. */
static int32_t mma_prefetch(int32_t effective_cfg) {
    switch (effective_cfg) {
    case MLA_MMA_RING: return 2;
    case MLA_MMA_TWO: return 4;
    default: return 0;
    }
}

static const char *mla_last_error(sgl_attn_backend *bk) { return ((mla_backend *)bk)->err; }

static void mla_destroy(sgl_attn_backend *bk) {
    mla_backend *b = (mla_backend *)bk;
    if (!b) return;
    if (cudaSetDevice(b->device) == cudaSuccess) {
        for (int i = 0; i < MLA_RING; i++) {
            if (b->plan_event[i]) {
                (void)cudaEventSynchronize((cudaEvent_t)b->plan_event[i]);
                (void)cudaEventDestroy((cudaEvent_t)b->plan_event[i]);
            }
            if (b->plan_host[i]) (void)cudaFreeHost(b->plan_host[i]);
        }
        if (b->plan_dev) (void)cudaFree(b->plan_dev);
        if (b->part_o) (void)cudaFree(b->part_o);
        if (b->part_lse) (void)cudaFree(b->part_lse);
        sgl_sdk_cuda_fault_free(&b->fault);
        mla_indexer_destroy(b);
    }
    (void)cudaGetLastError();
    free(b->q_len);
    free(b->prefix);
    free(b->lens_tmp);
    free(b->tmaps);
    free(b);
}

/* Lengths of the batch into b->q_len / b->prefix: from the host mirrors, or
 * (documented fallback, a synchronous copy here and never in forward) from
 * the device tensors. */
static int host_mirror(mla_backend *b, const DLTensor *dev, int32_t bs, DLTensor *tmp, int64_t *shape,
                       int64_t *storage, const char *name) {
    if (!dev) return mla_set_error(b, SGL_ATTN_E_INVALID, "%s is NULL and no host mirror was given", name);
    const sgl_sdk_tensor_spec s = {name, "batch_size", 1, {bs}, 0, SGL_SDK_DEV_CUDA, b->device,
                                   SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST, 0};
    int rc = sgl_sdk_check_tensor(dev, &s, b->err, sizeof b->err);
    if (rc) return rc;
    const size_t bytes = (size_t)bs * (dev->dtype.bits / 8);
    cudaError_t e = cudaMemcpy(storage, sgl_sdk_data(dev), bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) return mla_cuda_fail(b, name, e);
    memset(tmp, 0, sizeof *tmp);
    tmp->data = storage;
    tmp->ndim = 1;
    shape[0] = bs;
    tmp->shape = shape;
    tmp->dtype = dev->dtype;
    tmp->device.device_type = kDLCPU;
    return SGL_ATTN_OK;
}

static int plan_batch(mla_backend *b, const sgl_attn_batch *batch) {
    b->planned = 0;
    if (!batch) return mla_set_error(b, SGL_ATTN_E_INVALID, "init_forward_metadata: batch is NULL");
    char why[256];
    int rc = mla_refuse_unserved_batch(batch, why, sizeof why);
    if (rc) return mla_set_error(b, rc, "init_forward_metadata: %s", why);
    rc = mla_ensure_device(b);
    if (rc) return rc;
    /* An index fault a kernel of an earlier batch met (no sync: the record is
     * mapped host memory; it shows once that kernel has run). */
    if (sgl_sdk_cuda_fault_take(&b->fault, batch->stream, "init_forward_metadata", b->err, sizeof b->err))
        return SGL_ATTN_E_INVALID;
    if (batch->page_size < 1)
        return mla_set_error(b, SGL_ATTN_E_INVALID, "page_size %d; expected >= 1", batch->page_size);
    cudaStream_t st = (cudaStream_t)batch->stream;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone)
        return mla_set_error(b, SGL_ATTN_E_STATE,
                             "init_forward_metadata inside a stream capture: plan before capturing "
                             "(its host-to-device copy must not be part of the graph)");
    (void)cudaGetLastError();

    const int32_t bs = batch->forward_mode == SGL_ATTN_MODE_IDLE ? 0 : batch->batch_size;
    if (batch->forward_mode == SGL_ATTN_MODE_IDLE || bs == 0) {
        b->mode = batch->forward_mode;
        b->bs = bs;
        b->t = 0;
        b->tree = 0;
        b->n_items = b->n_comb = b->max_keys = 0;
        b->planned = 1;
        b->checked_slots[0] = b->checked_slots[1] = INT64_MAX;
        return SGL_ATTN_OK;
    }
    /* Host lengths: the mirrors, else a copy of the device tensors. */
    DLTensor tmp[3];
    int64_t shp[3];
    const DLTensor *seq = batch->seq_lens_cpu, *pre = batch->extend_prefix_lens_cpu,
                   *ext = batch->extend_seq_lens_cpu;
    /* draft extend is an extend of the draft model (causal, extend lengths) */
    const int extend = batch->forward_mode == SGL_ATTN_MODE_EXTEND || batch->forward_mode == SGL_ATTN_MODE_DRAFT_EXTEND;
    if (bs < 0 || bs > b->max_reqs)
        return mla_set_error(b, SGL_ATTN_E_INVALID, "batch_size %d; expected 0..%d (max_reqs given at create)",
                             bs, b->max_reqs);
    if (!extend && !seq) {
        if ((rc = host_mirror(b, batch->seq_lens, bs, &tmp[0], &shp[0], b->lens_tmp, "seq_lens"))) return rc;
        seq = &tmp[0];
    }
    if (extend && !pre) {
        if ((rc = host_mirror(b, batch->extend_prefix_lens, bs, &tmp[1], &shp[1], b->lens_tmp + b->max_reqs,
                              "extend_prefix_lens")))
            return rc;
        pre = &tmp[1];
    }
    if (extend && !ext) {
        if ((rc = host_mirror(b, batch->extend_seq_lens, bs, &tmp[2], &shp[2], b->lens_tmp + 2 * (size_t)b->max_reqs,
                              "extend_seq_lens")))
            return rc;
        ext = &tmp[2];
    }
    rc = mla_batch_lengths(batch, b->max_reqs, b->max_tokens, b->max_context, seq, pre, ext, b->q_len,
                           b->prefix, b->err, sizeof b->err);
    if (rc) return rc;
    mla_fwd_view tv; /* tree verify: its mask, checked against the lengths */
    if ((rc = mla_check_tree(batch, b->device, b->q_len, b->prefix, &tv, b->err, sizeof b->err))) return rc;
    const int tree = tv.mask != NULL;

    /* The kernel, its tile rows, the plan. */
    int32_t max_q = 0, max_keys = 0;
    for (int32_t i = 0; i < bs; i++) {
        max_q = b->q_len[i] > max_q ? b->q_len[i] : max_q;
        max_keys = b->prefix[i] + b->q_len[i] > max_keys ? b->prefix[i] + b->q_len[i] : max_keys;
    }
    const int64_t rows64 = (int64_t)max_q * b->hq;
    const int32_t rows = rows64 > (1 << 24) ? (1 << 24) : (int32_t)rows64;
    const size_t optin = b->dev.smem_per_block_optin;
    int32_t kernel = mla_resolve_kernel(b->kernel_pref, b->model_q_dt, b->model_kv_dt, batch->page_size, rows,
                                        b->wide_ok);
    const int32_t rpt = kernel == MLA_KERNEL_WIDE || extend ? 64 : mla_rows_per_tile(rows);
    /* tree verify: the mma kernel's base configuration carries the mask (the wide kernel has none) */
    if (tree && kernel == MLA_KERNEL_WIDE) kernel = MLA_KERNEL_MMA;
    const int32_t cfg_pref = tree ? MLA_MMA_BASE : b->mma_cfg_pref;
    /* no mma configuration fits this device's shared memory (SM 8.6 / 8.9 / 12.x): simple */
    if (kernel == MLA_KERNEL_MMA && mla_mma_smem_bytes(rpt, cfg_pref, optin) == 0)
        kernel = MLA_KERNEL_SIMPLE;
    const int32_t mcfg = kernel == MLA_KERNEL_MMA ? mla_mma_effective_cfg(rpt, cfg_pref, optin) : MLA_MMA_BASE;
    const int32_t sms = b->dev.sm_count > 0 ? b->dev.sm_count : 1;
    const int32_t ctas = sms * (kernel == MLA_KERNEL_MMA ? mla_mma_ctas_per_sm(mcfg) : 1);
    mla_plan_params p;
    memset(&p, 0, sizeof p);
    p.hq = b->hq;
    p.rows_per_tile = rpt;
    p.target_ctas = ctas;
    p.min_chunk = 256;     /* 4 blocks: an item's start costs about 2 */
    p.item_overhead = 128;
    p.no_split = kernel == MLA_KERNEL_SIMPLE;
    p.max_context = b->max_context;
    p.max_part_rows = b->part_rows;
    p.tree = tree;

    const int slot = b->ring_next;
    b->ring_next = (b->ring_next + 1) % MLA_RING;
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)b->plan_event[slot]); /* its last copy ran */
    if (e != cudaSuccess) return mla_cuda_fail(b, "cudaEventSynchronize (plan ring)", e);
    unsigned char *host = b->plan_host[slot];
    rc = mla_plan_build(&p, &b->caps, b->q_len, b->prefix, bs, batch->num_tokens, host, b->err,
                        sizeof b->err);
    if (rc) return rc;
    const mla_plan_hdr *hdr = (const mla_plan_hdr *)host;
    const struct {
        uint64_t off, bytes;
    } parts[3] = {
        {0, b->lay.items + (uint64_t)hdr->n_items * sizeof(mla_item)},
        {b->lay.comb, (uint64_t)hdr->n_comb * sizeof(mla_comb)},
        {b->lay.toks, (uint64_t)hdr->n_tokens * sizeof(mla_tok)},
    };
    for (int i = 0; i < 3; i++) {
        if (!parts[i].bytes) continue;
        e = cudaMemcpyAsync((char *)b->plan_dev + parts[i].off, host + parts[i].off, parts[i].bytes,
                            cudaMemcpyHostToDevice, st);
        if (e != cudaSuccess) return mla_cuda_fail(b, "cudaMemcpyAsync (plan to device)", e);
    }
    e = cudaEventRecord((cudaEvent_t)b->plan_event[slot], st);
    if (e != cudaSuccess) return mla_cuda_fail(b, "cudaEventRecord (plan ring)", e);

    b->mode = batch->forward_mode;
    b->bs = bs;
    b->t = batch->num_tokens;
    b->tree = tree;
    b->kernel = kernel;
    b->rows_per_tile = rpt;
    b->mma_cfg = mcfg;
    b->ctas = ctas;
    b->prefetch = kernel == MLA_KERNEL_MMA ? mma_prefetch(mcfg) : 0;
    b->page = batch->page_size;
    b->n_items = hdr->n_items;
    b->n_comb = hdr->n_comb;
    b->max_keys = max_keys;
    b->planned = 1;
    b->checked_slots[0] = b->checked_slots[1] = INT64_MAX; /* the item check runs at the first forward */
    if (b->log) {
        static const char *const cfg_name[] = {"base", "two", "ring", "tma"};
        fprintf(stderr,
                "cuda_mla: plan: mode %d%s, %d requests, %d rows a request, page %d: asked %s, runs %s "
                "(%d-row tiles%s%s, prefetch %d), %d CTAs, %d items, %d split tiles\n",
                (int)b->mode, tree ? " (tree mask)" : "", (int)bs, (int)rows, (int)b->page, mla_kernel_name(b->kernel_pref),
                mla_kernel_name(kernel), (int)rpt, kernel == MLA_KERNEL_MMA ? ", mma " : "",
                kernel == MLA_KERNEL_MMA ? cfg_name[mcfg >= 0 && mcfg <= 3 ? mcfg : 0] : "", (int)b->prefetch,
                (int)ctas, (int)b->n_items, (int)b->n_comb);
    }
    return SGL_ATTN_OK;
}

static int mla_init_forward_metadata(sgl_attn_backend *bk, const sgl_attn_batch *batch) {
    mla_backend *b = (mla_backend *)bk;
    b->graph = 0;
    return plan_batch(b, batch);
}

static int mla_init_graph_state(sgl_attn_backend *bk, int32_t max_bs, int32_t max_num_tokens) {
    mla_backend *b = (mla_backend *)bk;
    if (max_bs < 1 || max_bs > b->max_reqs || max_num_tokens < 1 || max_num_tokens > b->max_tokens)
        return mla_set_error(b, SGL_ATTN_E_INVALID,
                             "init_graph_state(%d, %d): expected 1..%d requests and 1..%d tokens "
                             "(the create limits; buffers are sized there)",
                             max_bs, max_num_tokens, b->max_reqs, b->max_tokens);
    return SGL_ATTN_OK;
}

/* Capture and replay plan like init_forward_metadata; the forward then sizes
 * its grids from the batch shape alone (persistent attention grid of one CTA
 * per SM, combine grid for every tile the shape can have), so what a graph
 * captured fits any lengths a replay of the same shape plans. */
static int graph_hook(mla_backend *b, const sgl_attn_graph_args *g) {
    if (!g || !g->batch) return mla_set_error(b, SGL_ATTN_E_INVALID, "graph hook: args or batch is NULL");
    if (g->batch->batch_size != g->batch_size || g->batch->num_tokens != g->num_tokens ||
        g->batch->forward_mode != g->forward_mode)
        return mla_set_error(b, SGL_ATTN_E_INVALID,
                             "graph hook: args say bs %d / %d tokens / mode %d but the batch has %d / %d / %d",
                             g->batch_size, g->num_tokens, g->forward_mode, g->batch->batch_size,
                             g->batch->num_tokens, g->batch->forward_mode);
    int rc = plan_batch(b, g->batch);
    if (rc) return rc;
    b->graph = 1;
    return SGL_ATTN_OK;
}

static int mla_capture(sgl_attn_backend *bk, const sgl_attn_graph_args *g) {
    return graph_hook((mla_backend *)bk, g);
}
static int mla_replay(sgl_attn_backend *bk, const sgl_attn_graph_args *g) {
    return graph_hook((mla_backend *)bk, g);
}
static int32_t mla_fill_value(sgl_attn_backend *bk) {
    (void)bk;
    return 1;
}

static const sgl_attn_backend_ops k_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = mla_init_forward_metadata,
    .forward_extend = mla_forward,
    .forward_decode = mla_forward,
    .init_graph_state = mla_init_graph_state,
    .init_forward_metadata_capture = mla_capture,
    .init_forward_metadata_replay = mla_replay,
    .graph_seq_len_fill_value = mla_fill_value,
    .indexer_topk = mla_indexer_topk,
    .last_error = mla_last_error,
    .destroy = mla_destroy,
    .state_clear = NULL,
    .state_copy = NULL,
    .state_commit = NULL,
};

/* Option values, indexed by what they select. */
static const char *const k_mma_names[] = {"auto", "base", "ring", "tma"};
static const int32_t k_mma_cfgs[] = {-1, MLA_MMA_BASE, MLA_MMA_RING, MLA_MMA_TMA};

static int create_fail(const sgl_attn_create_args *a, mla_backend *b, int rc, const char *msg) {
    if (a->error && a->error_size) snprintf(a->error, a->error_size, "%s: %s", MLA_NAME, msg);
    mla_destroy(&b->base);
    return rc;
}

/* What the options chose (docs/cuda_mla.md). */
typedef struct mla_options {
    int kernel, mma, strict, log;
    int64_t idx_scratch_mb;
} mla_options;

/* The options, read once at create through the SDK (the environment
 * variable over the conf's plugin option); a bad value fails create naming
 * the option, where it came from, the value and what is accepted.  Options
 * that were removed are refused by name, so a script that still sets one does
 * not measure the default under its name. */
static int read_options(const sgl_attn_create_args *a, mla_options *o) {
    const sgl_sdk_opts opts = sgl_sdk_opts_of(a, MLA_NAME);
    static const char *const removed[] = {"prefetch", "plan", "sparse_kernel", "sparse_ctas", "sparse_producer",
                                          "sparse_bulk", "sparse_seesaw"};
    static const char *const removed_env[] = {"SGL_ATTN_MLA_PREFETCH", "SGL_ATTN_MLA_PLAN", "SGL_ATTN_MLA_SPARSE_KERNEL",
                                              "SGL_ATTN_MLA_SPARSE_CTAS", "SGL_ATTN_MLA_SPARSE_PRODUCER",
                                              "SGL_ATTN_MLA_SPARSE_BULK", "SGL_ATTN_MLA_SPARSE_SEESAW"};
    int rc;
    if ((rc = sgl_sdk_opt_removed(&opts, removed, removed_env, sizeof removed / sizeof removed[0])) ||
        (rc = sgl_sdk_opt_choice(&opts, "kernel", "SGL_ATTN_MLA_KERNEL", mla_kernel_names, 4, MLA_KERNEL_AUTO,
                                 &o->kernel)) ||
        (rc = sgl_sdk_opt_choice(&opts, "mma", "SGL_ATTN_MLA_MMA", k_mma_names, 4, 0, &o->mma)) ||
        (rc = sgl_sdk_opt_bool(&opts, "strict", "SGL_ATTN_MLA_STRICT", 0, &o->strict)) ||
        (rc = sgl_sdk_opt_bool(&opts, "log", "SGL_ATTN_MLA_LOG", 0, &o->log)) ||
        (rc = sgl_sdk_opt_int(&opts, "indexer_scratch_mb", "SGL_ATTN_MLA_INDEXER_SCRATCH_MB", MLA_IDX_SCRATCH_MB, 1,
                              1 << 20, &o->idx_scratch_mb)))
        return rc;
    return SGL_ATTN_OK;
}

int mla_backend_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || !a->model) return SGL_ATTN_E_INVALID;
    mla_options opt;
    int rc = read_options(a, &opt);
    if (rc) return rc;
    mla_backend *b = (mla_backend *)calloc(1, sizeof *b);
    if (!b) return SGL_ATTN_E_NOMEM;
    b->base.ops = &k_ops;
    b->base.ops_size = sizeof k_ops;
    b->base.device = a->device;
    b->device = a->device;
    for (int i = 0; i < MLA_RING; i++) b->plan_event[i] = NULL;
    const sgl_attn_model *m = a->model;
    char msg[sizeof b->err];

    b->kernel_pref = opt.kernel;
    b->mma_cfg_pref = k_mma_cfgs[opt.mma];
    b->strict = opt.strict;
    b->log = opt.log;
    b->idx_scratch_mb = opt.idx_scratch_mb;
    if (!m->is_mla || m->head_dim_qk != MLA_D_QK || m->head_dim_v != MLA_D_V || m->num_kv_heads != 1) {
        snprintf(msg, sizeof msg,
                 "model %s: cuda_mla serves absorbed MLA only (is_mla, head dims 576/512, one KV head); "
                 "got is_mla %d, head dims %d/%d, %d KV head(s)",
                 m->name, m->is_mla, m->head_dim_qk, m->head_dim_v, m->num_kv_heads);
        return create_fail(a, b, SGL_ATTN_E_UNSUPPORTED, msg);
    }
    if (m->num_q_heads < 1 || m->num_q_heads > 65535) {
        snprintf(msg, sizeof msg, "model %s: num_q_heads %d; expected 1..65535", m->name, m->num_q_heads);
        return create_fail(a, b, SGL_ATTN_E_INVALID, msg);
    }
    b->hq = m->num_q_heads;
    b->model_q_dt = m->dtype == SGL_ATTN_DT_F16 ? MLA_DT_F16 : MLA_DT_BF16;
    b->model_kv_dt = m->kv_dtype == SGL_ATTN_DT_FP8_E4M3 ? MLA_DT_FP8
                   : m->kv_dtype == SGL_ATTN_DT_F16       ? MLA_DT_F16
                   : m->kv_dtype == 0                     ? b->model_q_dt
                                                          : MLA_DT_BF16;
    if ((m->dtype & ~(uint32_t)(SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16)) ||
        (m->kv_dtype & ~(uint32_t)(SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_FP8_E4M3))) {
        snprintf(msg, sizeof msg, "model %s: dtype bits 0x%x / kv 0x%x; cuda_mla runs bf16/f16 (fp8 e4m3 pool)",
                 m->name, m->dtype, m->kv_dtype);
        return create_fail(a, b, SGL_ATTN_E_UNSUPPORTED, msg);
    }
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1) {
        snprintf(msg, sizeof msg, "max_reqs %d, max_tokens %d, max_context %d: each must be >= 1",
                 a->max_reqs, a->max_tokens, a->max_context);
        return create_fail(a, b, SGL_ATTN_E_INVALID, msg);
    }
    b->max_reqs = a->max_reqs;
    b->max_tokens = a->max_tokens;
    b->max_context = a->max_context;

    rc = sgl_sdk_cuda_device_query(a->device, &b->dev, msg, sizeof msg);
    if (rc) return create_fail(a, b, rc, msg);
    if (b->dev.sm_major < 8) {
        snprintf(msg, sizeof msg, "device %d (%s) is SM %d.%d; cuda_mla needs SM 8.0 or newer", a->device,
                 b->dev.name, b->dev.sm_major, b->dev.sm_minor);
        return create_fail(a, b, SGL_ATTN_E_UNSUPPORTED, msg);
    }
    if (cudaSetDevice(a->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return create_fail(a, b, SGL_ATTN_E_DEVICE, "cudaSetDevice failed");
    }
    rc = mla_kernels_init(b->dev.sm_major, b->dev.smem_per_block_optin, msg, sizeof msg);
    if (rc) return create_fail(a, b, SGL_ATTN_E_DEVICE, msg);
    if ((rc = mla_sparse_init(b->dev.smem_per_block_optin))) {
        snprintf(msg, sizeof msg, "cudaFuncSetAttribute (sparse MLA kernels): %s", cudaGetErrorString((cudaError_t)rc));
        return create_fail(a, b, SGL_ATTN_E_DEVICE, msg);
    }

    /* Partial rows: enough for the planner's splits (4 waves of 64-row tiles;
     * the planner takes fewer splits rather than more rows). */
    b->part_rows = 4 * 64 * (b->dev.sm_count > 0 ? b->dev.sm_count : 1);
    b->caps = mla_plan_caps_for(b->max_reqs, b->max_tokens, b->hq, b->part_rows);
    b->lay = mla_plan_layout_of(&b->caps);
    cudaError_t e;
    struct {
        void **p;
        size_t bytes;
        const char *what;
    } dev_allocs[] = {
        {&b->plan_dev, (size_t)b->lay.total, "cudaMalloc (plan)"},
        {(void **)&b->part_o, (size_t)b->part_rows * MLA_D_V * sizeof(float), "cudaMalloc (split partials)"},
        {(void **)&b->part_lse, (size_t)b->part_rows * sizeof(float), "cudaMalloc (split lse)"},
    };
    for (size_t i = 0; i < sizeof dev_allocs / sizeof dev_allocs[0]; i++) {
        if ((e = cudaMalloc(dev_allocs[i].p, dev_allocs[i].bytes)) != cudaSuccess) {
            rc = mla_cuda_fail(b, dev_allocs[i].what, e);
            snprintf(msg, sizeof msg, "%s", b->err);
            return create_fail(a, b, rc, msg);
        }
    }
    if ((rc = sgl_sdk_cuda_fault_alloc(&b->fault, b->err, sizeof b->err))) {
        snprintf(msg, sizeof msg, "%s", b->err);
        return create_fail(a, b, rc, msg);
    }
    for (int i = 0; i < MLA_RING; i++) {
        if ((e = cudaHostAlloc((void **)&b->plan_host[i], (size_t)b->lay.total, cudaHostAllocDefault)) !=
                cudaSuccess ||
            (e = cudaEventCreateWithFlags((cudaEvent_t *)&b->plan_event[i], cudaEventDisableTiming)) !=
                cudaSuccess) {
            rc = mla_cuda_fail(b, "cudaHostAlloc / cudaEventCreate (plan ring)", e);
            snprintf(msg, sizeof msg, "%s", b->err);
            return create_fail(a, b, rc, msg);
        }
    }
    b->q_len = (int32_t *)calloc((size_t)b->max_reqs, sizeof(int32_t));
    b->prefix = (int32_t *)calloc((size_t)b->max_reqs, sizeof(int32_t));
    b->lens_tmp = (int64_t *)calloc(3 * (size_t)b->max_reqs, sizeof(int64_t));
    b->tmaps = (mla_tmap_entry *)aligned_alloc(64, (MLA_TMAP_CACHE + 1) * sizeof(mla_tmap_entry));
    if (b->tmaps) memset(b->tmaps, 0, (MLA_TMAP_CACHE + 1) * sizeof(mla_tmap_entry));
    if (!b->q_len || !b->prefix || !b->lens_tmp || !b->tmaps)
        return create_fail(a, b, SGL_ATTN_E_NOMEM, "out of host memory");

    /* The TMA encoder (driver entry point; the plugin never links libcuda). */
    if (b->dev.sm_major == 9) {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            b->encode_fn = fn;
        (void)cudaGetLastError();
    }
    b->wide_ok = mla_wide_avail(b->dev.sm_major, b->dev.smem_per_block_optin, b->encode_fn != NULL);
    if (b->strict && b->kernel_pref == MLA_KERNEL_WIDE && !b->wide_ok) {
        snprintf(msg, sizeof msg,
                 "strict: kernel wide cannot run on device %d (%s, SM %d.%d): it needs SM 9.0, the TMA encoder "
                 "(%s) and %zu bytes of shared memory per block (the device allows %zu)",
                 a->device, b->dev.name, b->dev.sm_major, b->dev.sm_minor, b->encode_fn ? "found" : "not found",
                 mla_wide_smem_bytes(), (size_t)b->dev.smem_per_block_optin);
        return create_fail(a, b, SGL_ATTN_E_UNSUPPORTED, msg);
    }
    /* mma auto: bulk-copy loads on SM 9.0, the page-table ring elsewhere; the
     * bulk copies are SM 9.0 code, so an explicit tma elsewhere runs ring */
    if (b->mma_cfg_pref < 0) b->mma_cfg_pref = b->dev.sm_major == 9 ? MLA_MMA_TMA : MLA_MMA_RING;
    if (b->mma_cfg_pref == MLA_MMA_TMA && b->dev.sm_major != 9) {
        if (b->strict) {
            snprintf(msg, sizeof msg, "strict: mma tma needs SM 9.0 (device %d is SM %d.%d)", a->device,
                     b->dev.sm_major, b->dev.sm_minor);
            return create_fail(a, b, SGL_ATTN_E_UNSUPPORTED, msg);
        }
        b->mma_cfg_pref = MLA_MMA_RING;
    }
    if ((rc = mla_indexer_create(b, a, msg, sizeof msg))) return create_fail(a, b, rc, msg);
    if (b->log)
        fprintf(stderr, "cuda_mla: create on %s (SM %d.%d, %d SMs, %zu B of shared memory per block): kernel %s, wide kernel %s, mma %s\n",
                b->dev.name, b->dev.sm_major, b->dev.sm_minor, b->dev.sm_count, (size_t)b->dev.smem_per_block_optin,
                mla_kernel_name(b->kernel_pref), b->wide_ok ? "runs here" : "cannot run here",
                b->mma_cfg_pref == MLA_MMA_TMA ? "tma" : b->mma_cfg_pref == MLA_MMA_RING ? "ring" : "base");
    b->err[0] = 0;
    *out = &b->base;
    return SGL_ATTN_OK;
}
