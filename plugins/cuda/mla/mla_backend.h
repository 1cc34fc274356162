/*
 * mla_backend.h - the cuda_mla backend instance (shared by the C files of the
 * plugin: mla_backend.c creates and plans, mla_forward.c runs).
 *
 * Memory, all allocated at create: the device plan buffer, a ring of pinned
 * host plan buffers (each with an event: a slot is rewritten only once its
 * copy to the device has run), the split partial results, host length arrays,
 * and a per-layer cache of the pool's TMA descriptor.  Nothing is allocated or
 * synchronised after create except the documented length fallback of
 * init_forward_metadata (a batch without host length mirrors).
 */
#ifndef SGL_MLA_BACKEND_H
#define SGL_MLA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/sdk_cuda.h"
#include "mla_kernels.h"
#include "mla_plan.h"
#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_NAME "cuda_mla"
#define MLA_RING 4
#define MLA_CHECK_BLOCKS 1024 /* the item check's grid (its blocks stride over longer lists) */
#define MLA_TMAP_CACHE 1024 /* layer ids 0..1023 (SGL_ATTN_MAX_LAYERS) */

typedef struct mla_tmap_entry {
    const void *pool;
    int64_t num_slots;
    int32_t box;
    int32_t valid;
    _Alignas(64) unsigned char map[128]; /* the encoder wants 64-byte alignment */
} mla_tmap_entry;

typedef struct mla_backend {
    sgl_attn_backend base; /* first: the ABI's header */
    sgl_sdk_cuda_device dev;
    int32_t device;
    /* options, read once at create (mla_backend.c, docs/cuda_mla.md) */
    int32_t kernel_pref;  /* MLA_KERNEL_*: option kernel */
    int32_t mma_cfg_pref; /* MLA_MMA_TMA / _RING / _BASE: option mma, auto resolved for the device */
    int32_t strict;       /* 1: an asked kernel this device cannot run fails create */
    int32_t log;          /* 1: one stderr line per create and per plan (the kernel that runs) */
    int32_t wide_ok;      /* mla_wide_avail: this device runs the wide kernel */
    int32_t hq;           /* the model's q heads per rank: plans are made for them */
    int32_t model_q_dt, model_kv_dt;
    int32_t max_reqs, max_tokens, max_context;
    int32_t part_rows;
    mla_plan_caps caps;
    mla_plan_layout lay;
    void *plan_dev;
    unsigned char *plan_host[MLA_RING];
    void *plan_event[MLA_RING];
    int32_t ring_next;
    float *part_o, *part_lse;
    int32_t *q_len, *prefix;
    int64_t *lens_tmp; /* device -> host copies when a batch has no host mirror */
    void *encode_fn;   /* cuTensorMapEncodeTiled, NULL when unavailable */
    mla_tmap_entry *tmaps; /* [MLA_TMAP_CACHE + 1]: by layer id, the last for other ids */
    sgl_sdk_cuda_fault fault; /* index faults the kernels met (gpu_fault.h): read by plan_batch */
    /* the current plan */
    int32_t planned;
    /* the pool size the plan's items ([0]) / tokens ([1], the simple kernel)
     * were checked against (mla_item_check.cu); INT64_MAX: not yet */
    int64_t checked_slots[2];
    int32_t mode, bs, t, kernel, rows_per_tile, page;
    int32_t tree;     /* 1: a tree-verify plan (batch custom_mask; mla_sched.h) */
    int32_t mma_cfg;  /* effective MLA_MMA_* of the plan (mma kernel) */
    int32_t ctas;     /* CTAs resident at once: the plan's target and the persistent grid */
    int32_t prefetch; /* L2 prefetch distance handed to the kernel */
    int32_t n_items, n_comb;
    int32_t max_keys; /* the batch's longest request, prefix + new tokens (the indexer's key span) */
    /* 1: planned by a graph hook; the forward sizes grids from the shape */
    int32_t graph;
    char err[768];
    /* DSA's indexer (mla_indexer.c): score scratch [idx_rows, max_context]
     * fp32, allocated at create for a model with index_topk, else NULL */
    float *idx_scores;
    int32_t idx_rows;
    int64_t idx_scratch_mb; /* option indexer_scratch_mb */
} mla_backend;

int mla_backend_create(const sgl_attn_create_args *args, sgl_attn_backend **out);

/* mla_instance.c (a leaf) */
int mla_set_error(mla_backend *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Make the backend's device current (a no-op when it is). */
int mla_ensure_device(mla_backend *b);
/* Record a runtime failure ("<what>: <cudaError name> (<n>): <words>") and map it. */
int mla_cuda_fail(mla_backend *b, const char *what, int code);
/* The option kernel's names by MLA_KERNEL_*: "auto", "simple", "mma", "wide". */
extern const char *const mla_kernel_names[4];
const char *mla_kernel_name(int32_t kernel);
/* mla_indexer.c: the scratch at create (msg on failure) and destroy; the op */
int mla_indexer_create(mla_backend *b, const sgl_attn_create_args *a, char *msg, size_t n);
void mla_indexer_destroy(mla_backend *b);
int mla_indexer_topk(sgl_attn_backend *bk, const struct sgl_attn_indexer_args *a);
/* mla_forward.c */
int mla_forward(sgl_attn_backend *bk, const sgl_attn_forward_args *a);

#ifdef __cplusplus
}
#endif
#endif
