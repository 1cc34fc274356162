/*
 * validate_internal.h - the validation layer's parts.
 *
 *   validate_plugin.c  descriptor, probe, create/destroy, the vtable that
 *                      checks and then calls the inner backend
 *   validate_tensor.c  one DLTensor against an expected dtype/shape/device
 *   validate_batch.c   batch metadata: lengths, indices, the pool
 *   validate_layer.c   one forward call: layer constants, q/k/v/out, pools
 *
 * Nothing here allocates after create: an instance holds a fixed error
 * buffer and the facts init_forward_metadata learnt about its batch.
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
} vl_tspec;

/* Full check of a present tensor (NULL is the caller's business). */
int vl_check_tensor(vl_ctx *c, const DLTensor *t, const vl_tspec *s);
/* Host memory the validator may read; entries of index tensors already checked. */
#define vl_host_readable sgl_sdk_host_readable
#define vl_idx1 sgl_sdk_index_at
#define vl_idx2 sgl_sdk_index_at2

/* ----------------------------------------------------------- validate_batch.c */

/* init_forward_metadata's checks; fills *facts on success. */
int vl_check_batch(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *batch, vl_batch_facts *facts);
/* Graph capture / replay arguments. */
int vl_check_graph_args(vl_ctx *c, const vl_backend *b, const sgl_attn_graph_args *g);

/* ----------------------------------------------------------- validate_layer.c */

/* One forward call; decode = 1 for forward_decode. */
int vl_check_forward(vl_ctx *c, const vl_backend *b, const sgl_attn_forward_args *a, int decode);

#endif
