/*
 * validate_internal.h - the validation layer's parts.
 *
 *   validate_plugin.c  descriptor, probe, create/destroy, the vtable that
 *                      checks and then calls the inner backend
 *   validate_tensor.c  one DLTensor against an expected dtype/shape/device
 *   validate_batch.c   batch metadata: lengths, indices, the pool
 *   validate_layer.c   one forward call: layer constants, q/k/v/out, pools,
 *                      aliasing
 *   validate_snapshot.c the batch as init_forward_metadata accepted it, and
 *                      the check at each forward that it did not change
 *   validate_ops.c     ABI 1.2's forward_ragged, state_batch, indexer_topk
 *   validate_devcopy.c copy_device_indices: device index tensors read back
 *
 * Nothing here allocates after create: an instance holds a fixed error
 * buffer, the facts init_forward_metadata learnt about its batch, the
 * snapshot's buffers and, with copy_device_indices, the host copies of
 * device index tensors.
 */
#ifndef SGL_ATTN_VALIDATE_INTERNAL_H
#define SGL_ATTN_VALIDATE_INTERNAL_H

#include <stdint.h>

#include "sdk_tensor.h"
#include "sdk_text.h"
#include "sgl_attn_abi.h"

#define VL_ERR_SIZE 512

/* Where the largest slot referenced by the batch sits, so a forward can
 * compare it against its layer's pool without rereading the batch. */
typedef struct vl_slot_fact {
    int64_t value;  /* -1: nothing recorded */
    char where[64]; /* "batch->req_to_token[3][17]" */
} vl_slot_fact;

/* What init_forward_metadata established about the batch it accepted. */
typedef struct vl_batch_facts {
    const sgl_attn_batch *batch; /* NULL: no accepted batch yet */
    int32_t forward_mode;
    int32_t batch_size;
    int32_t num_tokens;
    int32_t page_size;
    int has_encoder;     /* encoder_lens given */
    int32_t device_type; /* where its device tensors live (0: none seen) */
    int32_t device_id;
    vl_slot_fact max_slot; /* over req_to_token entries in use and out_cache_loc */
    int slots_checked;     /* 0 when neither was host-readable */
} vl_batch_facts;

/* The batch as init_forward_metadata accepted it (validate_snapshot.c). */
enum {
    VL_T_RTT, VL_T_RPI, VL_T_SEQ, VL_T_PRE, VL_T_EXT, VL_T_OCL, VL_T_POS, VL_T_ENC, VL_T_STATE,
    VL_T_SEQ_CPU, VL_T_PRE_CPU, VL_T_EXT_CPU, VL_T_ENC_CPU, VL_T_COUNT
};

typedef struct vl_tsnap {
    const DLTensor *t;        /* the batch's pointer (NULL: absent) */
    DLTensor head;            /* its header; shape and strides below */
    int64_t shape[2], strides[2];
    int has_strides;
    int64_t n;                /* entries kept: a host-readable 1-D tensor's, else 0 */
    int64_t *vals;
} vl_tsnap;

/* ABI 1.2 batch tensors: their headers only (validate_snapshot.c). */
enum { VL_T12_PAGE_TABLE, VL_T12_MASK, VL_T12_INDPTR, VL_T12_ENC_LOC, VL_T12_COUNT };

typedef struct vl_snapshot {
    sgl_attn_batch batch;     /* the struct as given (zero past its struct_size) */
    vl_tsnap t[VL_T_COUNT];
    vl_tsnap t12[VL_T12_COUNT];
    int rows_hashed;          /* req_to_token's slots in use: hashed per request */
} vl_snapshot;

/* copy_device_indices: device index tensors read through host copies. */
typedef struct vl_devcopy {
    int on;                          /* the option */
    const sgl_attn_device_ops *ops;  /* the innermost plugin's (the host passes them) */
    int64_t *vals;                   /* [VL_T_COUNT][max(max_reqs, max_tokens)] */
    int64_t *rows;                   /* [max_reqs][max_context]: used req_to_token rows */
    int64_t stride;                  /* entries per tensor in vals */
    DLTensor t[VL_T_COUNT];          /* host views over them */
    int64_t shape[VL_T_COUNT][2];
    sgl_attn_batch shadow;           /* the batch with those views */
    int used;                        /* the last batch went through the copies */
} vl_devcopy;

typedef struct vl_backend {
    sgl_attn_backend base;    /* first: the ABI's instance header */
    sgl_attn_backend_ops ops; /* ours; NULL wherever the inner has none */
    sgl_attn_backend *inner;
    sgl_attn_backend_ops inner_ops; /* the inner's, zero past its struct_size */
    sgl_attn_caps caps;             /* the inner's claims */
    sgl_attn_model model;
    int32_t max_reqs, max_tokens, max_context;
    int32_t graph_max_bs, graph_max_tokens; /* 0 until init_graph_state */
    vl_batch_facts facts;
    vl_snapshot snap;
    int64_t *snap_vals;   /* [vl_snapshot_entries] */
    uint64_t *snap_rows;  /* [max_reqs] */
    vl_devcopy dev;
    int err_is_ours; /* last_error: ours, or ask the inner */
    char err[VL_ERR_SIZE];
} vl_backend;

/* An error sink: the call name prefixes every message. */
typedef struct vl_ctx {
    const char *call; /* "forward_decode" */
    char *err;
    size_t err_size;
    int32_t device_type; /* the device of the call's first device tensor; 0 = none yet */
    int32_t device_id;
} vl_ctx;

/* Formats "<call>: <message>" into the sink and returns SGL_ATTN_E_INVALID. */
int vl_fail(vl_ctx *c, const char *fmt, ...) SGL_SDK_PRINTF(2, 3);

/* ---------------------------------------------------------- validate_tensor.c */

enum { VL_ANY = SGL_SDK_ANY };

/* What a tensor must look like.  dtypes: SGL_ATTN_DT_* bit set, or 0 for an
 * index tensor (int32 / int64).  shape[i] == VL_ANY accepts any extent. */
typedef struct vl_tspec {
    const char *name; /* "q", "batch->seq_lens" */
    const char *dims; /* "num_tokens, num_q_heads, head_dim_qk" for messages */
    int ndim;
    int64_t shape[3];
    uint32_t dtypes;
    int written; /* outputs: no negative or overlapping strides */
    int host;    /* must be host-readable (a *_cpu mirror) */
    uint32_t sdk_flags; /* more SGL_SDK_T_* (MERGED, ROWS), 0 for none */
} vl_tspec;

/* Full check of a present tensor (NULL is the caller's business). */
int vl_check_tensor(vl_ctx *c, const DLTensor *t, const vl_tspec *s);
/* Whether two (checked) tensors share bytes: only within one device. */
int vl_overlap(const DLTensor *a, const DLTensor *b);
/* Host memory the validator may read; entries of index tensors already checked. */
#define vl_host_readable sgl_sdk_host_readable
#define vl_idx1 sgl_sdk_index_at
#define vl_idx2 sgl_sdk_index_at2

/* ----------------------------------------------------------- validate_batch.c */

/* init_forward_metadata's checks; fills *facts on success. */
int vl_check_batch(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *batch, vl_batch_facts *facts);
/* Graph capture / replay arguments. */
int vl_check_graph_args(vl_ctx *c, const vl_backend *b, const sgl_attn_graph_args *g);

/* With copy_device_indices: a batch whose device index tensors are replaced
 * by host copies (NULL when the batch has none, or no copy could be made:
 * then *err says why and the status is returned through rc). */
const sgl_attn_batch *vl_host_copy(vl_ctx *c, vl_backend *b, const sgl_attn_batch *bt, int *rc);

/* -------------------------------------------------------- validate_snapshot.c */

size_t vl_snapshot_entries(int32_t max_reqs, int32_t max_tokens);
void vl_snapshot_take(vl_backend *b, const sgl_attn_batch *bt);
/* SGL_ATTN_OK when bt is still the batch taken, else the first change. */
int vl_snapshot_same(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt);

/* ----------------------------------------------------------- validate_layer.c */

/* One forward call; decode = 1 for forward_decode. */
int vl_check_forward(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a, int decode);

/* ------------------------------------------------------------- validate_ops.c */

/* ABI 1.2's other calls: forward_ragged, state_batch, indexer_topk. */
int vl_check_ragged(vl_ctx *c, const vl_backend *b, const sgl_attn_ragged_args *a);
int vl_check_state_batch(vl_ctx *c, const vl_backend *b, const sgl_attn_state_batch_args *a);
int vl_check_indexer(vl_ctx *c, const vl_backend *b, const sgl_attn_indexer_args *a);

#endif
