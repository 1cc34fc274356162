/*
 * hyb.h - internals shared by the hybrid (linear-attention) wrapper plugins.
 *
 * One .so per kind (gdn, kda, mamba2, short_conv, lightning, minimax_sparse),
 * all built from these sources:
 *   wrapper.c      the backend vtable: routes layers to the inner or the kind
 *   create.c       instance creation: dims, pool, scratch, workers
 *   plan.c         per-batch plan (token ranges, slots) from init_forward_metadata
 *   state_pool.c   conv + ssm state per (layer, slot), intermediates for verify
 *   state_ops.c    ops->state_batch: clear / copy / commit / track on index
 *                  tensors, on the pool or on a layer's caller-owned state
 *   check_io.c     a forward's inputs against the dims (the SDK's linear
 *                  shapes, plugins/sdk/sdk_linear.h, and the sparse layers')
 *   tensor_io.c    dtype load/store, the SDK's tensor checks as the wrappers read
 *   error.c        the instance's error message (a leaf: calls no other file)
 *   workers.c      a fixed thread pool, created with the instance
 *   probe.c        the caps every wrapper reports
 *   plugin_def.h, plugin_<kind>.c   the descriptors; entry.c the export (per .so)
 * and the compute, templated over the precision (hyb_tmpl.h):
 *   conv1d.c, delta_rule.c, declin.c   the numeric cores
 *   drive.c        the per-request / per-(request, head) driver of the cores
 *   delta_layer.c  the layer gdn and kda share (mixed q/k/v, gates, delta rule)
 *   gdn.c kda.c mamba2.c short_conv.c lightning.c minimax_sparse.c   one per kind
 * Each templated file is compiled twice: HYB_F64 undefined gives float and
 * names ending _f32 (the fast path), defined gives double and _f64 (the
 * reference path, also what the chunked-vs-recurrent tests run exactly).
 */
#ifndef HYB_H
#define HYB_H

#include <stddef.h>
#include <stdint.h>

#include "sdk_linear.h"
#include "sdk_tensor.h"
#include "sdk_text.h"
#include "sgl_attn_abi.h"

#define HYB_CHUNK_DEFAULT 64 /* extend chunk (tokens) of the chunked forms */
#define HYB_CHUNK_MAX 128
#define HYB_CONV_W_MAX SGL_SDK_LIN_CONV_W_MAX
#define HYB_DIM_MAX SGL_SDK_LIN_DIM_MAX
#define HYB_ERR_MAX 512
/* State the CPU wrappers keep: float32, or float64 for the reference path. */
#define HYB_STATE_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F64)

/* What one kind reads (the SDK's formulas), derived from the model at create. */
typedef sgl_sdk_lin_dims hyb_dims;

/* --------------------------------------------------------- tensor_io.c */

/* n contiguous elements from element index `at`, converted. */
void hyb_load_f32(const DLTensor *t, int64_t at, float *dst, int64_t n);
void hyb_load_f64(const DLTensor *t, int64_t at, double *dst, int64_t n);
void hyb_store_f32(DLTensor *t, int64_t at, const float *src, int64_t n);
void hyb_store_f64(DLTensor *t, int64_t at, const double *src, int64_t n);
void hyb_zero(DLTensor *t, int64_t at, int64_t n);
/* The spec of what the wrappers read: host memory, compact, float32/16,
 * bfloat16, float64 (dtypes 0: an int32/int64 index tensor). */
sgl_sdk_tensor_spec hyb_spec(const char *name, uint32_t dtypes, uint32_t flags, int ndim, int64_t s0, int64_t s1,
                             int64_t s2);
#define HYB_FLOAT_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64)

/* ----------------------------------------------------------- workers.c */

typedef void (*hyb_task_fn)(void *ctx, int64_t item, int worker);
typedef struct hyb_workers hyb_workers;
/* n_threads >= 1; the calling thread is worker 0. */
int hyb_workers_create(int n_threads, hyb_workers **out);
int hyb_workers_count(const hyb_workers *w);
/* fn(ctx, i, worker) for every i in [0, n_items), then return. */
void hyb_workers_run(hyb_workers *w, int64_t n_items, hyb_task_fn fn, void *ctx);
void hyb_workers_destroy(hyb_workers *w);

/* -------------------------------------------------------- state_pool.c */

typedef struct hyb_pool {
    size_t esz;              /* bytes per element: 4 (f32) or 8 (f64) */
    int32_t layers, slots, steps; /* steps: intermediate states per slot (verify) */
    int64_t conv_elems, ssm_elems;
    unsigned char *conv, *ssm;   /* [layers][slots][elems] */
    unsigned char *iconv, *issm; /* [layers][slots][steps][elems], NULL when steps == 0 */
} hyb_pool;

int hyb_pool_init(hyb_pool *p, const hyb_dims *d, int32_t slots, int32_t steps, size_t esz,
                  char *err, size_t n);
void hyb_pool_free(hyb_pool *p);
void *hyb_pool_conv(const hyb_pool *p, int layer, int slot);
void *hyb_pool_ssm(const hyb_pool *p, int layer, int slot);
void *hyb_pool_iconv(const hyb_pool *p, int layer, int slot, int step);
void *hyb_pool_issm(const hyb_pool *p, int layer, int slot, int step);
void hyb_pool_clear(hyb_pool *p, int slot);
void hyb_pool_copy(hyb_pool *p, int src, int dst);
void hyb_pool_commit(hyb_pool *p, int slot, int step);
/* intermediate step `step` of slot src becomes the state of slot dst, every layer */
void hyb_pool_track(hyb_pool *p, int src, int step, int dst);

/* -------------------------------------------------------------- plan.c */

/* One request of the current batch as the linear layers see it. */
typedef struct hyb_req {
    int64_t tok;      /* first row of its tokens in the call's [T, ...] tensors */
    int32_t n;        /* its new tokens in this call */
    int32_t slot;     /* state slot (batch.state_indices); -1 = padding (skipped, output zeroed) */
    int32_t has_init; /* 1: start from the pool state; 0: from zeros (no prefix) */
    int32_t row;      /* req_to_token row (minimax_sparse) */
    int64_t seq_len;  /* tokens including the new ones */
} hyb_req;

typedef struct hyb_plan {
    int32_t valid;    /* init_forward_metadata succeeded */
    int32_t mode;     /* sgl_attn_forward_mode */
    int32_t bs, T, tpr;
    int64_t max_kv_slot;  /* largest KV slot the batch names (minimax_sparse), -1 none */
    /* minimax_sparse: req_to_token and out_cache_loc as planned (data, int64
     * or not, row width).  A forward reads these, never the caller's headers,
     * and checks each slot against the layer's pool where it uses it. */
    const void *rtt, *ocl;
    int rtt64, ocl64;
    int64_t rtt_cols;
    const sgl_attn_batch *batch;
    hyb_req *req;     /* [max_reqs] */
    /* The first request whose slot lies past the wrapper's pool (-1: none):
     * fine for caller-owned state, refused by a forward on the pool. */
    int32_t pool_over;
    int64_t max_slot; /* largest slot of the batch, -1 none */
} hyb_plan;

struct hyb_inst;
int hyb_plan_build(struct hyb_inst *w, const sgl_attn_batch *b);

/* ------------------------------------------------------------ instance */

typedef struct hyb_call hyb_call;
typedef int (*hyb_forward_fn)(hyb_call *c);

/* What a kind's plugin file hands the common code. */
typedef struct hyb_kind_impl {
    int32_t kind;
    const char *name;                  /* plugin name, for messages */
    hyb_forward_fn fwd_f32, fwd_f64;   /* compute one own layer */
} hyb_kind_impl;

/* Per-worker scratch (see create.c for the sizes). */
typedef struct hyb_wbuf {
    void *mem;
    size_t bytes;
} hyb_wbuf;

typedef struct hyb_inst {
    sgl_attn_backend base; /* first: the ABI's instance header */
    const hyb_kind_impl *impl;
    sgl_attn_model model;
    hyb_dims d;
    sgl_attn_backend *inner;
    int32_t f64;           /* state and compute in double (the reference path) */
    int32_t chunk;         /* extend chunk; 0 = token-by-token extend */
    int32_t max_reqs, max_tokens, max_context;
    int16_t lin_index[SGL_ATTN_MAX_LAYERS]; /* -1: inner's; else pool layer */
    hyb_pool pool;
    int32_t pool_on;       /* the pool exists (create's option state_pool, default 1) */
    hyb_plan plan;
    /* The last verify batch, for state_commit. */
    int32_t *verify_slots;
    int32_t verify_n, verify_steps, verify_kept;
    int32_t *call_slots;   /* [max_reqs]: the slot of each request in the current forward */
    uint64_t *sortbuf;     /* [2 * max_reqs]: repeated-index checks (hyb_find_repeat) */
    void *scratch;         /* [max_tokens][conv_dim] R: conv outputs */
    void *params;          /* per-call parameter rows (weights, A, dt_bias...) R */
    hyb_workers *workers;
    int32_t n_workers;
    hyb_wbuf *wbuf;        /* one per worker */
    char err[HYB_ERR_MAX];
} hyb_inst;

/* One own-layer forward, prepared by wrapper.c for the kind. */
struct hyb_call {
    hyb_inst *w;
    const sgl_attn_forward_args *a;
    const sgl_attn_linear_io *io;
    DLTensor *out;
    int32_t li;      /* pool layer */
    int32_t keep;    /* verify: keep per-step states, leave the main state */
    int32_t chunk;   /* 0 = recurrent (token by token) */
    const int32_t *slot; /* [bs] each request's slot in the state this call reads */
    /* ABI 1.2 caller-owned state (cs.used): this layer's tensors, read and
     * written in place of the pool; the conv state is channel-major there. */
    sgl_sdk_lin_state cs;
};

int hyb_create(const hyb_kind_impl *impl, const sgl_attn_create_args *a, sgl_attn_backend **out);
int hyb_probe(uint32_t index, sgl_attn_caps *caps, int kind);
void hyb_set_err(hyb_inst *w, const char *fmt, ...) SGL_SDK_PRINTF(2, 3);
/* An index tensor (tensor_io.c): 1-D, at least min_len entries; message in w->err. */
int hyb_index_check(hyb_inst *w, const DLTensor *t, const char *what, int64_t min_len);
/* Element i of a checked (compact) index tensor, int32 or int64. */
static inline int64_t hyb_index_get(const DLTensor *t, int64_t i) {
    return sgl_sdk_idx(sgl_sdk_data(t), t->dtype.bits == 64, i);
}
extern const sgl_attn_backend_ops hyb_backend_ops;
/* ops->state_batch (state_ops.c). */
int hyb_state_batch(sgl_attn_backend *b, const sgl_attn_state_batch_args *a);
/* Sorts keys[0..n) ((uint64)value << 32 | tag) and returns the index of the
 * first key whose value equals its predecessor's, or -1. */
int64_t hyb_find_repeat(uint64_t *keys, int64_t n);

/* Validation of an own layer's inputs (check_io.c): io tensors against dims. */
int hyb_check_io(hyb_inst *w, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io);
/* The caller-owned state of an own layer (c->cs already read): tensors
 * against the contract, then each request's slot (linear.state_indices, or
 * the batch's) into w->call_slots.  Message in w->err. */
int hyb_check_caller_state(hyb_inst *w, hyb_call *c, const char *prefix);
/* 1 when the instance has its own pool; else 0 with the reason in w->err. */
int hyb_pool_ready(hyb_inst *w, const char *what);

/* ------------------------------------------------- templated prototypes */

#define HYB_DECL(R, S)                                                                         \
    void hyb_conv1d_step_##S(R *state, int C, int W, const R *w, const R *bias, const R *in,  \
                             R *out, int silu);                                               \
    void hyb_conv1d_seq_##S(R *state, int C, int W, const R *w, const R *bias, R *x, int n,   \
                            int silu, R *hist);                                               \
    void hyb_delta_step_##S(R *S_, int K, int V, const R *q, const R *k, const R *v,          \
                            const R *g, int g_per_channel, R beta, R scale, R *o);            \
    void hyb_delta_chunk_##S(R *S_, int K, int V, int n, const R *q, const R *k, const R *v,  \
                             const R *g, int g_per_channel, const R *beta, R scale, R *o,     \
                             R *work);                                                         \
    size_t hyb_delta_work_elems_##S(int K, int V, int C);                                      \
    void hyb_declin_step_##S(R *S_, int K, int V, const R *q, const R *k, const R *v, R g,     \
                             R scale, R *o);                                                   \
    void hyb_declin_chunk_##S(R *S_, int K, int V, int n, const R *q, const R *k, const R *v,  \
                              const R *g, R scale, R *o, R *work);                             \
    size_t hyb_declin_work_elems_##S(int K, int V, int C);                                     \
    int hyb_gdn_forward_##S(hyb_call *c);                                                      \
    int hyb_kda_forward_##S(hyb_call *c);                                                      \
    int hyb_mamba2_forward_##S(hyb_call *c);                                                   \
    int hyb_short_conv_forward_##S(hyb_call *c);                                               \
    int hyb_lightning_forward_##S(hyb_call *c);                                                \
    int hyb_minimax_sparse_forward_##S(hyb_call *c);

HYB_DECL(float, f32)
HYB_DECL(double, f64)
#undef HYB_DECL

/* Per-worker scratch every kind may use, in elements of the compute type. */
size_t hyb_wbuf_elems(const hyb_dims *d, const sgl_attn_model *m, int32_t max_context);

#endif
