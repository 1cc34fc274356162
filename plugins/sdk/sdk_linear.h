/* sdk_linear.h - the linear-attention shape formulas every hybrid wrapper
 * shares, whatever it computes on (docs/hybrid.md is their prose): what a
 * kind reads from the model, its state per layer and slot, the bytes one
 * request needs, which layers it owns, and the shapes of a forward's linear
 * inputs.  A wrapper says which state dtypes it keeps; the rest is the same. */
#ifndef SGL_SDK_LINEAR_H
#define SGL_SDK_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "sdk_tensor.h"
#include "sgl_attn_abi.h"

#define SGL_SDK_LIN_DIM_MAX 1024  /* K, V, N, P, head dims of linear layers */
#define SGL_SDK_LIN_CONV_W_MAX 8  /* conv1d width */

/* What one kind reads, derived from the model once, at create. */
typedef struct sgl_sdk_lin_dims {
    int32_t kind;       /* sgl_attn_hybrid_kind */
    int32_t hk;         /* gdn/kda: qk heads HK; mamba2: groups G; lightning: H */
    int32_t hv;         /* gdn/kda: value heads HV; mamba2/lightning: heads H */
    int32_t dk;         /* gdn/kda: K; mamba2: d_state N; lightning: Dk */
    int32_t dv;         /* gdn/kda: V; mamba2: head dim P; lightning: Dv */
    int32_t conv_w;     /* conv1d width; 0 = no conv (lightning, minimax_sparse) */
    int32_t conv_dim;   /* channels convolved; short_conv: D */
    int32_t x_dim;      /* columns of linear->x (short_conv: 3 * D) */
    int32_t gsz;        /* value heads per key head / group (1 when hk is 0) */
    int32_t gc;         /* log-decays per (token, head): K for kda, else 1 */
    int64_t conv_elems; /* per layer per slot: conv_dim * (conv_w - 1) */
    int64_t ssm_elems;  /* per layer per slot: hv * dv * dk (0 for short_conv) */
    int32_t n_lin;      /* layers this wrapper computes */
    int32_t stateful;   /* 0 for minimax_sparse */
    uint32_t state_dt;  /* SGL_ATTN_DT_* of the state pool */
    int32_t esz;        /* bytes per state element */
    /* minimax_sparse */
    int32_t block, topk, init_blocks, local_blocks;
} sgl_sdk_lin_dims;

const char *sgl_sdk_lin_kind_name(int kind); /* "gdn", "mamba2" ... */

/* Fill d from m for `kind`, keeping state in one of `state_dtypes`
 * (SGL_ATTN_DT_* set; the model's lin_state_dtype 0 means float32).
 * SGL_ATTN_E_UNSUPPORTED with `why` naming the model field, its value and
 * what was expected when the model does not fit; E_INVALID for no model. */
int sgl_sdk_lin_dims_of(int kind, const sgl_attn_model *m, uint32_t state_dtypes, sgl_sdk_lin_dims *d, char *why,
                        size_t n);
/* supports_model of a wrapper: the dims, and gdn refuses MLA as sglang does. */
int sgl_sdk_lin_supports(int kind, const sgl_attn_model *m, uint32_t state_dtypes, char *why, size_t n);
/* State bytes one request needs over all the wrapper's layers; 0 when the
 * model does not fit or the kind keeps no state. */
uint64_t sgl_sdk_lin_state_bytes(int kind, const sgl_attn_model *m, uint32_t state_dtypes);
/* 1: the wrapper computes layer `layer` (linear layers; minimax_sparse: the
 * sparse ones); 0: the inner does. */
int sgl_sdk_lin_layer_is_own(int kind, const sgl_attn_model *m, int layer);

/* A speculative verify keeps the state after each draft token, so that
 * state_commit can take the accepted one: the steps a slot keeps, the
 * model's spec_tokens when above 1, else 0 (no copies). */
int32_t sgl_sdk_lin_verify_steps(const sgl_attn_model *m);

/* The elements of a wrapper's state pools: [layers][slots][elems] for the
 * state, [layers][slots][steps][elems] for the per-step verify copies. */
typedef struct sgl_sdk_lin_pool {
    int32_t layers, slots, steps; /* steps: sgl_sdk_lin_verify_steps (0: no copies) */
    uint64_t conv, ssm;           /* elements of the conv and ssm state over all layers and slots */
    uint64_t iconv, issm;         /* elements of their per-step copies (0 without steps) */
} sgl_sdk_lin_pool;

/* The pools of d->n_lin layers for `slots` slots and `steps` verify steps;
 * 0 when an element count overflows 64 bits, else 1. */
int sgl_sdk_lin_pool_of(const sgl_sdk_lin_dims *d, int32_t slots, int32_t steps, sgl_sdk_lin_pool *p);

/* Checks the linear inputs of one forward of a stateful kind (everything
 * but minimax_sparse) against d for T tokens: io present and of the kind,
 * then each tensor the kind reads with the shape it must have, through
 * sgl_sdk_check_tensor with `base`'s dtypes, devices and flags.  Messages
 * start with `prefix` ("gdn layer 3: "). */
int sgl_sdk_lin_check_io(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a, const sgl_attn_linear_io *io,
                         int64_t T, const sgl_sdk_tensor_spec *base, const char *prefix, char *err, size_t n);
/* The same checks for a wrapper that serves caller-owned state
 * (SGL_ATTN_FEAT_CALLER_STATE): the state tensors are not refused here but
 * left to sgl_sdk_lin_check_state. */
int sgl_sdk_lin_check_inputs(const sgl_sdk_lin_dims *d, const sgl_attn_forward_args *a,
                             const sgl_attn_linear_io *io, int64_t T, const sgl_sdk_tensor_spec *base,
                             const char *prefix, char *err, size_t n);

/* ABI 1.2 caller-owned state of one layer, as the io names it (docs/abi.md,
 * "Linear state contract"):
 *   conv_state  [S, conv_dim, W-1]       channel-major, oldest input first
 *   ssm_state   [S, hv, dv, dk]          gdn/kda [S, HV, V, K]; mamba2 [S, H, P, N];
 *                                        lightning [S, H, Dv, Dk]
 *   intermediate_conv_state [S, steps, conv_dim, W-1]
 *   intermediate_ssm_state  [S, steps, hv, dv, dk]
 * compact, in the state dtype the instance keeps (d->state_dt).  A kind
 * names only the tensors it keeps: no conv state without a conv (lightning,
 * conv width 1), no ssm state for short_conv. */
typedef struct sgl_sdk_lin_state {
    int32_t used;        /* any state tensor is set: the caller owns the state */
    int64_t slots;       /* S */
    int64_t steps;       /* intermediate steps given (0: none) */
    DLTensor *conv, *ssm, *iconv, *issm;
    const DLTensor *indices; /* io->state_indices (NULL: the batch's) */
} sgl_sdk_lin_state;

/* The io's state fields (zero for a pre-1.2 io); returns st->used. */
int sgl_sdk_lin_state_of(const sgl_attn_linear_io *io, sgl_sdk_lin_state *st);
/* Checks the caller-owned state tensors against d and the contract above:
 * the ones the kind keeps present, the others NULL, one S over all, dtype
 * d->state_dt, devices `devices` (0: any), compact; the intermediate ones,
 * when set, with one step count, and required with at least `need_steps`
 * steps when need_steps > 0.  Messages start with `prefix` and name the
 * field, its shape or dtype and what was expected. */
int sgl_sdk_lin_check_state(const sgl_sdk_lin_dims *d, const sgl_sdk_lin_state *st, int64_t need_steps,
                            uint32_t devices, const char *prefix, char *err, size_t n);

#endif
