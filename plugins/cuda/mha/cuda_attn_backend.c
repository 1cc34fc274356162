/* cuda_attn_backend.c - create / destroy a cuda_attn instance: its options
 * (read once here, kept in the instance), the kernels it runs and their
 * setup, its one device allocation (work lists, split buffers, counters;
 * sized from max_reqs, max_tokens and the device), and the graph hooks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "attn_tmap.h"
#include "cuda/sdk_cuda.h"
#include "cuda_attn.h"
#include "sdk_text.h"

/* Resident decode blocks per SM to aim the split count at. */
#define CA_DECODE_BLOCKS_PER_SM 4

static ca_backend *self(sgl_attn_backend *b) { return (ca_backend *)b; }

static const char *ca_last_error(sgl_attn_backend *b) { return self(b)->err; }

static void ca_destroy(sgl_attn_backend *bb) {
    if (!bb) return;
    ca_backend *b = self(bb);
    (void)cudaSetDevice(b->device);
    if (b->dev_mem) (void)cudaFree(b->dev_mem);
    if (b->rg_mem) (void)cudaFree(b->rg_mem);
    if (b->sp_mem) (void)cudaFree(b->sp_mem);
    if (b->iota) (void)cudaFree(b->iota);
    if (b->tmask_bits) (void)cudaFree(b->tmask_bits);
    if (b->tmask_full) (void)cudaFree(b->tmask_full);
    sgl_sdk_cuda_fault_free(&b->fault);
    attn_tmap_cache_free(b->tmaps);
    free(b->dec_wave_aim);
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
    b->graph_table = NULL; /* the next capture records what the graphs read */
    b->graph_verify_tpr = 0;
    return SGL_ATTN_OK;
}

/* The batch's table as graph_plan records it (NULL when the batch has none:
 * ca_plan refuses that). */
static const DLTensor *graph_table_of(const sgl_attn_batch *bt) {
    const DLTensor *pt = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
    return pt ? pt : bt->req_to_token;
}

/* A replay against what the captures recorded: the table every captured
 * forward indexes, and for a verify batch tokens_per_req, the tree mask's
 * presence and (portable extend) its addresses.  A verify capture after an
 * earlier one must agree with it the same way: one record serves every
 * verify graph of the instance, whichever the engine replays. */
static int graph_match(ca_backend *b, const sgl_attn_graph_args *g, int replay, const char *call) {
    const sgl_attn_batch *bt = g->batch;
    const DLTensor *table = graph_table_of(bt);
    const DLTensor *pt = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
    if (replay && b->graph_table && table && table->ndim == 2 && table->shape &&
        (sgl_sdk_data(table) != b->graph_table || table->shape[0] != b->graph_rows ||
         table->shape[1] != b->graph_cols || (pt != NULL) != b->graph_paged ||
         (pt && bt->page_size != 1 << b->graph_page_shift))) {
        snprintf(b->err, sizeof b->err,
                 "%s: batch.%s is not the table captured (address, shape or page_size): the captured forwards "
                 "index the captured one",
                 call, pt ? "page_table" : "req_to_token");
        return SGL_ATTN_E_STATE;
    }
    if (g->forward_mode != SGL_ATTN_MODE_TARGET_VERIFY) return SGL_ATTN_OK;
    if (b->kern.kv_fp8 || b->ragged_only) {
        snprintf(b->err, sizeof b->err, "%s: forward_mode target_verify: %s, so cuda_attn captures no verify batch",
                 call, b->kern.kv_fp8 ? "the model's KV pool is fp8_e4m3 (verify graphs are served on 16-bit pools)"
                                      : "the model's head dims are served by forward_ragged only");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int tree = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask) != NULL;
    if (!b->graph_verify_tpr) {
        if (!replay) return SGL_ATTN_OK;
        snprintf(b->err, sizeof b->err, "%s: forward_mode target_verify, but no verify batch was captured", call);
        return SGL_ATTN_E_STATE;
    }
    const char *what = replay ? "replays" : "captures";
    if (bt->tokens_per_req != b->graph_verify_tpr || tree != b->graph_verify_tree) {
        snprintf(b->err, sizeof b->err,
                 "%s: a verify batch of tokens_per_req %d %s a tree mask: the verify graphs were captured with %d, "
                 "%s (the captured forwards read the items' rows and the mask by them; one kind per "
                 "init_graph_state)",
                 call, bt->tokens_per_req, tree ? "with" : "without", b->graph_verify_tpr,
                 b->graph_verify_tree ? "with one" : "without one");
        return SGL_ATTN_E_STATE;
    }
    if (tree && b->kern.extend == ATTN_EXTEND_PORTABLE &&
        (sgl_sdk_data(bt->custom_mask) != b->graph_verify_mask ||
         sgl_sdk_data(bt->mask_indptr) != b->graph_verify_indptr)) {
        snprintf(b->err, sizeof b->err,
                 "%s: batch.%s is not at the captured address: the portable extend (option kernel=portable) reads the "
                 "mask's bytes in the graph, so every verify graph %s it there",
                 call, sgl_sdk_data(bt->custom_mask) != b->graph_verify_mask ? "custom_mask" : "mask_indptr", what);
        return SGL_ATTN_E_STATE;
    }
    return SGL_ATTN_OK;
}

static int graph_plan(ca_backend *b, const sgl_attn_graph_args *g, int replay) {
    const char *call = replay ? "init_forward_metadata_replay" : "init_forward_metadata_capture";
    b->err[0] = 0;
    if (!g || !g->batch) {
        snprintf(b->err, sizeof b->err, "%s: graph args or their batch is NULL", call);
        return SGL_ATTN_E_INVALID;
    }
    if (b->graph_max_bs == 0) {
        snprintf(b->err, sizeof b->err, "%s: init_graph_state was not called", call);
        return SGL_ATTN_E_STATE;
    }
    if (g->batch_size < 0 || g->num_tokens < 0 || g->batch_size > b->graph_max_bs ||
        g->num_tokens > b->graph_max_tokens) {
        snprintf(b->err, sizeof b->err, "%s: batch_size %d / num_tokens %d: expected 0..%d / 0..%d (init_graph_state's)",
                 call, g->batch_size, g->num_tokens, b->graph_max_bs, b->graph_max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    int rc = graph_match(b, g, replay, call);
    if (rc) return rc;
    /* verify: the plan kernels read every length on the device and make
     * ceil(tokens_per_req / block_m) items per request whatever its length,
     * within the capture's grid bound of ceil(num_tokens / block_m) +
     * batch_size items; a replay of as many requests or fewer fits it. */
    b->plan_graph = 1;
    rc = ca_plan(b, g->batch, g->batch_size, g->num_tokens, g->forward_mode);
    b->plan_graph = 0;
    b->sp_prefix = 1; /* a captured split extend launches its prefix pass, for any replay */
    if (rc || replay) return rc;
    const DLTensor *table = graph_table_of(g->batch);
    b->graph_table = sgl_sdk_data(table);
    b->graph_rows = b->r2t_rows;
    b->graph_cols = (int32_t)table->shape[1];
    b->graph_paged = b->paged;
    b->graph_page_shift = b->page_shift;
    if (g->forward_mode == SGL_ATTN_MODE_TARGET_VERIFY) {
        b->graph_verify_tpr = b->planned_tpr;
        b->graph_verify_tree = b->planned_mask != NULL;
        b->graph_verify_mask = b->planned_mask;
        b->graph_verify_indptr = b->planned_mask_indptr.p;
    }
    return SGL_ATTN_OK;
}

/* Capture: plan now; the forwards captured next launch grids bounded by this
 * batch size, and read the work lists (and a verify batch's packed mask) from
 * device memory. */
static int ca_capture(sgl_attn_backend *bb, const sgl_attn_graph_args *g) { return graph_plan(self(bb), g, 0); }

/* Replay: re-plan into the same buffers (a verify batch's mask repacked into
 * the same bits); the captured kernels read them. */
static int ca_replay(sgl_attn_backend *bb, const sgl_attn_graph_args *g) { return graph_plan(self(bb), g, 1); }

/* Padded requests of a captured batch get length 1 (slot of column 0); in a
 * verify batch the engine adds the request's tokens_per_req, as to every
 * verify length (docs/abi.md, graphs). */
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
    .forward_ragged = ca_forward_ragged,
};

/* A zeroed device buffer made at create: on failure the error names the
 * size and what it is for (for: "" or " for ..."), and the rc says whether
 * memory ran out. */
static int alloc_zeroed(void **mem, size_t bytes, const char *for_what, char *err, size_t err_size) {
    cudaError_t ce = cudaMalloc(mem, bytes);
    if (ce == cudaSuccess) ce = cudaMemset(*mem, 0, bytes);
    if (ce == cudaSuccess) return SGL_ATTN_OK;
    (void)cudaGetLastError();
    char what[128];
    snprintf(what, sizeof what, "create: cudaMalloc/cudaMemset(%zu bytes)%s", bytes, for_what);
    sgl_sdk_cuda_format_error(err, err_size, what, (int)ce);
    return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
}

/* forward_ragged's kernels (qk 128 and 192, v 128): the wgmma ones where the
 * paged extend would run wgmma (option auto on an SM 9.0 device with the
 * sm_90a image), else the mma ones; a wgmma setup that fails falls back to
 * mma with a warning.  Its item buffer: one allocation here. */
static int ragged_setup(ca_backend *b, int option, int wgmma_image, const sgl_attn_create_args *a,
                        char *err, size_t err_size) {
    const int dt = b->kern.dtype;
    b->rg_wgmma = option == CA_KERNEL_AUTO && wgmma_image;
    if (b->rg_wgmma) {
        int t128 = 0, t192 = 0;
        int e = attn_ragged_wgmma_setup(dt, 128, CA_RAGGED_DV, &t128);
        if (!e) e = attn_ragged_wgmma_setup(dt, CA_RAGGED_DQK, CA_RAGGED_DV, &t192);
        if (e) {
            (void)cudaGetLastError();
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME, "forward_ragged: wgmma kernel setup failed (%d): mma for it",
                        e);
            b->rg_wgmma = 0;
        }
        b->rg_tma = b->rg_wgmma && t128 && t192;
    }
    b->rg_ok = 1;
    if (!b->rg_wgmma) {
        int e = attn_ragged_mma_setup(dt, 128, CA_RAGGED_DV);
        if (!e) e = attn_ragged_mma_setup(dt, CA_RAGGED_DQK, CA_RAGGED_DV);
        if (e) { /* the paged forwards stay served; forward_ragged says why not */
            (void)cudaGetLastError();
            sgl_sdk_cuda_format_error(b->rg_why, sizeof b->rg_why, "its kernels' setup (cudaFuncSetAttribute)", e);
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME, "forward_ragged unavailable: %s", b->rg_why);
            b->rg_ok = 0;
            if (b->ragged_only) {
                snprintf(err, err_size, "create: head dims qk %d / v %d are served by forward_ragged, and %s",
                         CA_RAGGED_DQK, CA_RAGGED_DV, b->rg_why);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            return SGL_ATTN_OK;
        }
    }
    /* items: ceil(T / 64) + one partial tile per request (64: the smaller block_m) */
    const int64_t items = ((int64_t)a->max_tokens + 63) / 64 + a->max_reqs;
    b->rg_max_items = (int32_t)(items < INT32_MAX / 64 ? items : INT32_MAX / 64);
    const size_t bytes = (size_t)b->rg_max_items * sizeof(attn_extend_item) + 16;
    return alloc_zeroed(&b->rg_mem, bytes, " for forward_ragged", err, err_size);
}

/* The split extend's buffers (cuda_attn.h: sp_*), where forward_ragged runs
 * the wgmma kernel at head dim 128 (SM 9.0, option auto) and the model's
 * layers are causal: for an fp8 pool, and for a 16-bit pool whose extend is
 * the wgmma one (the direct extend of batches without a prefix: the item
 * lists and the new tokens' LSE only, its new-token kernel set up first; its
 * failure leaves those batches on the paged extend, with a warning); sized
 * for max_tokens rows and the largest list of each kind, so no forward
 * allocates. */
static size_t sp_align(size_t n) { return (n + 255) & ~(size_t)255; }
static int split_setup(ca_backend *b, const sgl_attn_create_args *a, char *err, size_t err_size) {
    if (!b->rg_ok || !b->rg_wgmma || b->head_dim != 128 || b->ragged_only || b->model_attn_type != SGL_ATTN_TYPE_CAUSAL)
        return SGL_ATTN_OK;
    const int direct = !b->kern.kv_fp8 && b->kern.extend == ATTN_EXTEND_WGMMA;
    if (direct) {
        const int e = attn_new_wgmma_setup(b->kern.dtype, &b->sp_new_tma);
        if (e) {
            (void)cudaGetLastError();
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME,
                        "the direct extend's new-token kernel: setup failed (%d): every extend runs the paged one", e);
            return SGL_ATTN_OK;
        }
    } else if (!b->kern.kv_fp8) {
        return SGL_ATTN_OK;
    }
    const int64_t t = a->max_tokens;
    b->sp_max_new = (int32_t)((t + 127) / 128 + a->max_reqs);
    b->sp_max_pre = b->sz.extend_max_items; /* the paged extend's tiles, as the paged plan's */
    /* the direct extend has no dequantised rows, prefix output or prefix LSE */
    const size_t row_kv = direct ? 0 : (size_t)b->hkv * 128 * 2, row_q = direct ? 0 : (size_t)b->hq * 128 * 2,
                 row_l = (size_t)b->hq * 4, row_lp = direct ? 0 : row_l;
    size_t off = 0;
    const size_t o_new = off;
    off = sp_align(off + (size_t)b->sp_max_new * sizeof(attn_extend_item));
    const size_t o_pre = off;
    off = sp_align(off + (size_t)b->sp_max_pre * sizeof(attn_extend_item));
    const size_t o_num = off;
    off = sp_align(off + 2 * sizeof(int32_t));
    const size_t o_k = off;
    off = sp_align(off + (size_t)t * row_kv);
    const size_t o_v = off;
    off = sp_align(off + (size_t)t * row_kv);
    const size_t o_part = off;
    off = sp_align(off + (size_t)t * row_q);
    const size_t o_ln = off;
    off = sp_align(off + (size_t)t * row_l);
    const size_t o_lp = off;
    off = sp_align(off + (size_t)t * row_lp);
    const int rc = alloc_zeroed(&b->sp_mem, off, direct ? " for the direct extend" : " for the fp8 pool's split extend",
                                err, err_size);
    if (rc) return rc;
    char *base = (char *)b->sp_mem;
    b->sp_direct = direct;
    b->sp_new = (attn_extend_item *)(base + o_new);
    b->sp_pre = (attn_extend_item *)(base + o_pre);
    b->sp_num = (int32_t *)(base + o_num);
    b->sp_k = direct ? NULL : base + o_k;
    b->sp_v = direct ? NULL : base + o_v;
    b->sp_part = direct ? NULL : base + o_part;
    b->sp_lse_new = (float *)(base + o_ln);
    b->sp_lse_pre = direct ? NULL : (float *)(base + o_lp);
    return SGL_ATTN_OK;
}

/* The split extend's new rows, as split_extend hands them to the ragged wgmma
 * kernel ([max_tokens][hkv][128], dense), stay put for the instance's life:
 * their TMA maps are encoded once, here.  Rows the encoder refuses are
 * gathered by cp.async (as a refused forward_ragged call's are); create goes
 * on. */
static void split_tmaps(ca_backend *b) {
    attn_fwd n;
    memset(&n, 0, sizeof n);
    n.k_cache = b->sp_k;
    n.v_cache = b->sp_v;
    n.kc_stride_s = n.vc_stride_s = (int64_t)b->hkv * 128;
    n.kc_stride_h = n.vc_stride_h = 128;
    n.num_slots = b->sz.max_tokens;
    n.hkv = b->hkv;
    const int cu = attn_tmap_ragged(b->tmaps, &n, 128, 128, &b->tmaps->split);
    if (!cu)
        b->sp_tmaps = &b->tmaps->split;
    else
        sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME,
                    "cuTensorMapEncodeTiled refused the fp8 split extend's new rows (CUresult %d): cp.async for them",
                    cu);
}

/* Encoder-only layers read their keys from the call's k / v: the extend
 * kernels' slot table becomes this identity (entry t = t, one word per row),
 * and each item's row is its request's offset (plan.cuh, ATTN_SELF_NEW_ONLY). */
/* Tree verify's packed mask: a row of bits per verified token over
 * max_context columns, and a full flag per request and 64 columns.  Only a
 * model that verifies (spec_tokens > 1) has it, with rows for max_reqs
 * requests of spec_tokens tokens (at most max_tokens): a plain model pays no
 * memory for it.  Models whose layers take no tree mask (not causal) have none. */
static int alloc_tree_mask(ca_backend *b, const sgl_attn_create_args *a, int32_t spec_tokens, char *err,
                           size_t err_size) {
    b->tmask_words = (int32_t)(((int64_t)a->max_context + 63) / 64);
    const int64_t rows = (int64_t)a->max_reqs * spec_tokens;
    b->tmask_rows = (int32_t)(rows < a->max_tokens ? rows : a->max_tokens);
    const size_t nbits = (size_t)b->tmask_rows * (size_t)b->tmask_words * sizeof(uint64_t);
    const size_t nflags = (size_t)a->max_reqs * (size_t)b->tmask_words;
    /* the requests' first words that are not full after the flags, 16-byte aligned (the
     * wgmma extend finds them at this offset from the flags: attn_fwd.mask_first_off, an int32) */
    const size_t first_off = (nflags + 15) & ~(size_t)15;
    if (first_off > INT32_MAX) {
        snprintf(err, err_size, "create: tree verify's mask: %zu bytes of full flags (max_reqs %d x %d words) "
                 "exceed the kernels' 32-bit offset", nflags, (int)a->max_reqs, (int)b->tmask_words);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const size_t nfull = first_off + (size_t)a->max_reqs * sizeof(uint32_t);
    cudaError_t ce = cudaMalloc((void **)&b->tmask_bits, nbits);
    if (ce == cudaSuccess) ce = cudaMalloc((void **)&b->tmask_full, nfull);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        char what[128];
        snprintf(what, sizeof what, "create: cudaMalloc(%zu + %zu bytes) for the tree verify mask's bits", nbits, nfull);
        sgl_sdk_cuda_format_error(err, err_size, what, (int)ce);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    b->tmask_first = (uint32_t *)(b->tmask_full + first_off);
    return 0;
}

static int alloc_iota(ca_backend *b, char *err, size_t err_size) {
    const size_t n = (size_t)b->sz.max_tokens;
    int32_t *h = malloc(n * sizeof *h);
    if (!h) {
        snprintf(err, err_size, "create: out of host memory");
        return SGL_ATTN_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) h[i] = (int32_t)i;
    cudaError_t ce = cudaMalloc((void **)&b->iota, n * sizeof *h);
    if (ce == cudaSuccess) ce = cudaMemcpy(b->iota, h, n * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        sgl_sdk_cuda_format_error(err, err_size, "create: the encoder-only token table (cudaMalloc/cudaMemcpy)", (int)ce);
        return ce == cudaErrorMemoryAllocation ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
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
    /* Options: read once, here; the instance keeps what they chose. */
    int option = CA_KERNEL_AUTO;
    if ((rc = ca_read_options(a, &option))) return rc;
    sgl_sdk_cuda_device dev;
    rc = sgl_sdk_cuda_device_query(a->device, &dev, err, err_size);
    if (rc) return rc;
    if (dev.sm_major < 8) {
        snprintf(err, err_size, "create: device %d (%s) is SM %d.%d: cuda_attn needs SM 8.0 or newer", a->device,
                 dev.name, dev.sm_major, dev.sm_minor);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    cudaError_t ce = cudaSetDevice(a->device);
    if (ce != cudaSuccess) {
        sgl_sdk_cuda_format_error(err, err_size, "create: cudaSetDevice", (int)ce);
        return SGL_ATTN_E_DEVICE;
    }
    attn_kernels kern;
    memset(&kern, 0, sizeof kern);
    const int wgmma_image = dev.sm_major == 9 && dev.sm_minor == 0 && attn_wgmma_available(a->device);
    ca_choose_kernels(option, wgmma_image, m->head_dim_qk, m->num_q_heads / m->num_kv_heads,
                      m->kv_dtype == SGL_ATTN_DT_FP8_E4M3, &kern);
    kern.dtype = m->dtype == SGL_ATTN_DT_BF16 ? ATTN_DT_BF16 : ATTN_DT_F16;
    if (kern.kv_fp8 && kern.decode != ATTN_DECODE_REG) {
        snprintf(err, err_size, "create: fp8_e4m3 KV runs on the register-fed decode only: option kernel=%s chose another",
                 ca_kernel_option_name(option));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    kern.dec_save = !kern.kv_fp8 && kern.decode == ATTN_DECODE_REG;
    kern.head_dim = m->head_dim_qk;
    kern.sm_count = dev.sm_count > 0 ? dev.sm_count : 1;

    ca_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_size, "create: out of host memory");
        return SGL_ATTN_E_NOMEM;
    }
    b->base.ops = &ca_ops;
    b->base.ops_size = ca_ops.struct_size;
    b->base.device = a->device;
    b->device = a->device;
    b->host = sgl_sdk_create_host(a);
    b->kern = kern;
    b->dt_bit = m->dtype;
    b->kv_bit = kern.kv_fp8 ? SGL_ATTN_DT_FP8_E4M3 : m->dtype;
    b->hq = m->num_q_heads;
    b->hkv = m->num_kv_heads;
    b->group = b->hq / b->hkv;
    b->head_dim = m->head_dim_qk;
    b->ragged_only = m->head_dim_v > 0 && m->head_dim_v != m->head_dim_qk;
    b->model_window = m->sliding_window;
    b->model_attn_type = SGL_ATTN_FIELD_OR_0(sgl_attn_model, m, attn_type);
    b->tiles = attn_kernel_tiles(&b->kern, b->group);
    /* an fp8 pool's decode plan picks each call's splits by the wave rule, within
     * CA_FP8_DEC_WAVE_SPLITS times a 16-bit pool's items (half the bytes per token) */
    const int wave = kern.kv_fp8;
    const int fp8_dec_splits = wave ? CA_FP8_DEC_WAVE_SPLITS : 1;
    rc = attn_sizing_compute(&b->sz, a->max_reqs, a->max_tokens, a->max_context, b->hq, b->hkv, b->head_dim,
                             &b->tiles, dev.sm_count, CA_DECODE_BLOCKS_PER_SM * fp8_dec_splits, err, err_size);
    if (rc) {
        free(b);
        return rc;
    }
    const int wave_slots = kern.sm_count * CA_FP8_DEC_SM_BLOCKS;
    if (wave) {
        b->dec_wave_aim = malloc(((size_t)b->sz.max_reqs + 1) * sizeof *b->dec_wave_aim);
        if (!b->dec_wave_aim) {
            free(b);
            snprintf(err, err_size, "create: out of host memory");
            return SGL_ATTN_E_NOMEM;
        }
        ca_dec_wave_aims(&b->sz, wave_slots, b->hkv * b->sz.decode_hblocks, b->dec_wave_aim);
    }
    if ((rc = alloc_zeroed(&b->dev_mem, b->sz.total_bytes, "", err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    if (b->model_attn_type == SGL_ATTN_TYPE_ENCODER_ONLY && (rc = alloc_iota(b, err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    const int32_t spec_tokens = SGL_ATTN_FIELD_OR_0(sgl_attn_model, m, spec_tokens);
    if (!b->ragged_only && b->model_attn_type == SGL_ATTN_TYPE_CAUSAL && spec_tokens > 1 &&
        (rc = alloc_tree_mask(b, a, spec_tokens, err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    if ((rc = sgl_sdk_cuda_fault_alloc(&b->fault, err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    /* a ragged-only model (qk != v) has no paged kernels to set up */
    int ke = b->ragged_only ? 0 : attn_kernels_setup(&b->kern);
    if (ke) {
        sgl_sdk_cuda_format_error(err, err_size, "create: kernel setup (cudaFuncSetAttribute)", ke);
        ca_destroy(&b->base);
        return SGL_ATTN_E_DEVICE;
    }
    if ((rc = ragged_setup(b, option, wgmma_image, a, err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    if ((rc = split_setup(b, a, err, err_size))) {
        ca_destroy(&b->base);
        return rc;
    }
    /* The fp8 split's prefix items on the wgmma extend from its byte ring (an
     * fp8 pool that splits: SM 9.0 with the sm_90a image, d128); a failed setup leaves
     * them on the fp8 mma extend, with a warning */
    if (b->sp_mem && !b->sp_direct) {
        const int e = attn_extend_wgmma_fp8_setup(b->kern.dtype);
        if (e) {
            (void)cudaGetLastError();
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME,
                        "the fp8 prefix's wgmma kernel: setup failed (%d): the prefix runs on mma", e);
        } else {
            b->sp_pre_wgmma = 1;
        }
    }
    /* The TMA producers' tensor maps: the pools' encoded per layer at its
     * first forward (or when its pool moves) into this cache, forward_ragged's
     * per call; without an encoder the cp.async producers serve. */
    if ((((b->kern.extend == ATTN_EXTEND_WGMMA && b->kern.tma) || b->kern.dc_tma) && !b->ragged_only) || b->rg_tma) {
        b->tmaps = attn_tmap_cache_new();
        if (!b->tmaps)
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME,
                        "no cuTensorMapEncodeTiled (or host memory): the wgmma extend gathers by cp.async");
    }
    if (b->sp_mem && !b->sp_direct && b->rg_tma && b->tmaps) split_tmaps(b); /* the direct extend has no rows of its own */
    static const char *const extend_names[] = {"portable", "mma", "wgmma"};
    static const char *const decode_names[] = {"portable", "mma", "reg"};
    /* which kernels serve dual chunk attention (dual_chunk.h), or why none do */
    char dcw[96];
    if (b->ragged_only) /* the line's end says why */
        snprintf(dcw, sizeof dcw, "none");
    else if (!b->kern.dual_chunk)
        snprintf(dcw, sizeof dcw, "none (%s)", b->kern.kv_fp8 ? "an fp8 pool" : "its shared memory does not fit");
    else
        snprintf(dcw, sizeof dcw, "extend %s%s / decode mma", extend_names[b->kern.dc_extend],
                 b->tmaps && b->kern.dc_tma ? " (TMA)" : "");
    char dec_note[96];
    if (wave)
        snprintf(dec_note, sizeof dec_note, " (fp8 e4m3 pool, splits by the wave rule on %d block slots)", wave_slots);
    else if (b->kern.dec_save)
        snprintf(dec_note, sizeof dec_note, " (16-bit pool: a saving decode saves the new tokens in its grid)");
    else
        dec_note[0] = 0;
    sgl_sdk_log(b->host, SGL_ATTN_LOG_INFO, CA_NAME,
                "device %d %s SM %d.%d, %d SMs, kernel=%s: extend %s%s%s, decode %s%s, ragged %s%s, dual chunk: "
                "%s%s, %zu bytes of work buffers",
                a->device, dev.name, dev.sm_major, dev.sm_minor, dev.sm_count, ca_kernel_option_name(option),
                extend_names[b->kern.extend], b->tmaps && b->kern.tma ? " (extend: TMA)" : "",
                b->sp_direct    ? " (no prefix: the ragged wgmma from k / v, save-KV beside)"
                : b->sp_pre_wgmma ? " (fp8 pool: new tokens by the ragged wgmma, prefix by wgmma from a byte ring, LSE merge)"
                : b->sp_mem  ? " (fp8 pool: new tokens by the ragged wgmma, prefix by mma, LSE merge)"
                             : "",
                decode_names[b->kern.decode], dec_note,
                b->rg_wgmma ? "wgmma" : "mma",
                b->rg_tma && b->tmaps ? " (TMA)" : "", dcw,
                b->ragged_only ? " (the model's qk / v dims: forward_ragged only)" : "", b->sz.total_bytes);
    *out = &b->base;
    return SGL_ATTN_OK;
}
