/*
 * lin.h - internals of the CUDA linear-attention wrapper plugins
 * (gdn_cuda, mamba2_cuda, short_conv_cuda, kda_cuda, lightning_cuda): one .so
 * per kind, all built from these sources.
 *
 *   lin_plugin.c        descriptor and entry (the SDK's), built once per kind
 *   lin_sizing.c        device pool, plan and scratch layout; which kernel paths fit (pure C)
 *   lin_check.c         index tensors the plan and commit read, with messages (pure C)
 *   lin_probe.c         the caps
 *   lin_create.c        create / destroy: options (the SDK's), the one device allocation
 *   lin_instance.c      the instance's error text, inner failures, plan pointers (a leaf)
 *   lin_plan.c          init_forward_metadata and the graph hooks (plan kernel)
 *   lin_forward.c       layer routing, input checks, kernel dispatch
 *   lin_state.c         state_clear / state_copy / state_commit, state_batch (ABI 1.2)
 *   lin_params.h        what the C hands the kernels; the launchers
 * Kernels and their launchers (CUDA C):
 *   kernel_common.cuh   launch macros (GPU or the tests' emulator), dtype loads / stores, gates, conv
 *   batch_plan.cu       the plan kernel: per-request rows, slots, chunks; range checks
 *   state_commit.cu     state_commit, state_batch's check and apply, a caller-owned layer's slots
 *   token_step.cu       the token-by-token path (kernel=simple, and every shape the others do not take)
 *   decode_operands.cuh a (request, key head group)'s decode operands: conv, l2norm, gates, k.q
 *   decode_fused.cu     fused decode / verify, one launch (K = 32, 64, 256; K = 128 past the draft steps)
 *   decode_prep.cu      the stream decode's operand prep (gdn conv width 4; general)
 *   decode_stream.cu    the stream decode / verify: the state streamed after the prep (K = 128)
 *   chunk_mma.cuh       mma.sync / ldmatrix helpers, the chunk state update
 *   chunk_tile.cuh      phase 1's conv tile and T products
 *   chunk_extend.cu     the chunked extend: which phase-1 / phase-2 kernels for which dtype and kind
 *   chunk_prep_ut.cu    phase 1, bf16, every kind: prep (conv, l2norm) + UT (gates, M, T, W, U)
 *   chunk_prep_stream.cu  phase 1's prep for gdn and kda, conv width 4, as a stream along time
 *   chunk_fused_ut.cu   phase 1 in one kernel per key head group: f16, every kind
 *   chunk_state.cu      phase 2, bf16: the serial state pass (warp-specialised), and its segment modes
 *   chunk_segment.cu    phase 2, bf16: the state pass by segments in parallel, joined in float32
 *   chunk_output.cu     phase 2, bf16: the outputs, parallel over chunks
 *   chunk_fused_state.cu  phase 2 in one serial pass with the outputs: f16
 *   chunk_fused_cp.cu   gdn, bf16, batches that fill the SMs: UT + state step + outputs per chunk in one kernel
 *
 * The semantics are the CPU wrappers' (plugins/hybrid/, docs/hybrid.md), and
 * so are the shape formulas: what a kind reads from the model, the state per
 * slot, layer routing and the linear inputs of a forward are the SDK's
 * (sdk_linear.h), one implementation for the CPU and CUDA wrappers.  The
 * pure-C files build without CUDA so tests/cuda_linear can test them here.
 * docs/cuda_linear.md describes the kernels, options and fallbacks.
 */
#ifndef SGL_LIN_H
#define SGL_LIN_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/sdk_cuda.h"
#include "lin_params.h"
#include "sdk_linear.h"
#include "sdk_plugin.h"
#include "sdk_tensor.h"
#include "sgl_attn_abi.h"

#define LIN_ERR_MAX 512

/* The state dtypes the kernels keep (lin_params.h's LIN_DT_F32 / _BF16). */
#define LIN_STATE_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16)
/* The dims of one kind from the model: the SDK's (sgl_sdk_lin_dims_of with LIN_STATE_DTYPES). */
typedef sgl_sdk_lin_dims lin_dims;
_Static_assert(LIN_DIM_MAX == SGL_SDK_LIN_DIM_MAX && LIN_CONV_W_MAX == SGL_SDK_LIN_CONV_W_MAX,
               "the kernels' bounds are the SDK's model bounds");
/* The kernels' code for the state dtype. */
static inline int32_t lin_state_dt(const lin_dims *d) {
    return d->state_dt == SGL_ATTN_DT_BF16 ? LIN_DT_BF16 : LIN_DT_F32;
}

/* ---------------------------------------------------------- lin_sizing.c */

enum { LIN_VARIANT_SIMPLE = 0, LIN_VARIANT_FAST = 1 };

/* Byte offsets into the one device allocation. */
typedef struct lin_layout {
    int32_t max_reqs, max_tokens, max_chunks, steps;
    int need_simple, need_tc; /* scratch of the token-by-token and tensor-core (chunked) paths */
    size_t conv, ssm, iconv, issm;       /* pools */
    size_t plan[16];                     /* lin_plan_dev arrays, in struct order */
    size_t X, G, B;                      /* token-by-token path */
    size_t Wt, QGt, KDt, Ut, Mt, eG, Sk; /* chunked extend */
    size_t Qc, Kc, Vc;                   /* its prep + UT pair: the prep's outputs, 16-bit */
    size_t Hs;                           /* its state pass -> output kernel: per-chunk states, 16-bit */
    int need_prep_ut;                    /* ... the prep + UT pair's buffers are there */
    size_t dq;                           /* stream decode: operands [max_reqs][hk][lin_decode_operands_per] */
    int need_stream;                     /* ... and its buffer is there (K = 128) */
    size_t stage;                        /* host-index staging: 6 x max_reqs int32 (the plan's 3, state_batch's 3) */
    size_t total;
    size_t Zs;                           /* the segmented state pass: [seg_cap][hv][V + K][K] float32 */
    int32_t seg_cap;                     /* ... its slots (0: only the serial pass runs) */
} lin_layout;

/* 1 when the chunked extend serves these dims (before dtypes). */
int lin_tc_dims_ok(const lin_dims *d);
/* 1 when the stream decode serves these dims with n tokens per request. */
int lin_decode_stream_dims_ok(const lin_dims *d, int n);
/* 1 when the chunked extend's phase 1 is the prep + UT pair for the kind (bf16: gdn, mamba2, lightning, kda). */
int lin_prep_ut_kind_ok(const lin_dims *d);
/* 1 when the fused decode kernel serves these dims with n tokens per request. */
int lin_decode_fused_dims_ok(const lin_dims *d, int n);
/* Lay the allocation out; SGL_ATTN_E_NOMEM with a message on overflow.
 * tc_ok: the model's activations are 16-bit and the device has the shared
 * memory of the chunked kernels. */
int lin_layout_compute(lin_layout *L, const lin_dims *d, int32_t max_reqs, int32_t max_tokens,
                       int32_t steps, int variant, int tc_ok, char *err, size_t n);
/* The segmented state pass (chunk_segment.cu): seg is the option (-1 auto, 0 off, N chunks per segment).
 * lin_layout_segments appends its buffer to a computed layout (after lin_layout_compute; none when the
 * bf16 chunked path is absent or the rule can never choose segments on sm_count SMs); lin_seg_plan is the
 * per-call rule: the chunks per segment (0: the serial pass) and *seg_max, the segments a request of the
 * batch can have. */
#define LIN_SEG_MIN_CHUNKS 16 /* auto: no shorter segments (a segment's summary costs ~2 of its passes) */
/* auto: only a batch whose longest possible request has this many chunks is cut: below it the
 * extra launches and the summaries cost more than the shorter chain saves (docs/lab/linear.md) */
#define LIN_SEG_AUTO_MIN_CHUNKS 512
int lin_layout_segments(lin_layout *L, const lin_dims *d, int seg, int sm_count, char *err, size_t n);
/* fused_chunk (chunk_fused_cp.cu) for a batch of bs requests: the option (0 / 1 / 2), the kind and dims
 * it serves (gdn, K = 128, V 64 / 128), and whether the fused kernel takes the batch (option 1: bs x HV >=
 * SMs / 2; option 2: always); a batch it does not take runs the unfused kernels */
int lin_fused_cp_dims_ok(const lin_dims *d);
int lin_fused_cp_takes(int opt, const lin_dims *d, int sm_count, int32_t bs);
int lin_fused_p2_tile(int opt, const lin_dims *d, int sm_count, int32_t bs);
int32_t lin_seg_plan(const lin_layout *L, const lin_dims *d, int seg, int sm_count, int32_t bs, int32_t T, int vt,
                     int32_t *seg_max);
/* The stream decode's L2 prefetch distance in blocks (decode_stream.cu; 0: none): the option
 * decode_l2_ahead_blocks where it is set (opt >= 0), else by the state dtype: bf16 one block per SM
 * (sm_count), float32 none (its prefetch gains too little: docs/lab/linear.md) */
int lin_decode_l2a_blocks(int opt, int st_dt, int sm_count);
/* The option kernel's names, by LIN_VARIANT_* ("simple", "fast"). */
extern const char *const lin_variant_names[2];
const char *lin_variant_name(int v);

/* ----------------------------------------------------------- lin_check.c */

/* What the kernels read a float tensor from (the SDK's spec base for
 * sgl_sdk_lin_check_io): f32/f16/bf16, compact, CUDA memory of `device` or
 * pinned host memory. */
sgl_sdk_tensor_spec lin_float_spec(int device);
/* A compact 1-D int32/int64 index tensor with >= min_len entries, in memory
 * the kernels read or pageable host memory; *on_host = 1 for the latter (the
 * plugin reads and stages it: the kernels cannot). */
int lin_check_index(const DLTensor *t, const char *what, int device, int64_t min_len, int *on_host,
                    char *err, size_t n);
int lin_dt_of(DLDataType t); /* LIN_DT_*, -1 other */
/* The first ABI 1.2 field set that the linear layers do not serve (its
 * name, for the message), or NULL; only fields within struct_size are read. */
const char *lin_unserved_batch(const sgl_attn_batch *b);
const char *lin_unserved_forward(const sgl_attn_forward_args *a);
/* ABI 1.2 caller-owned state of one layer (docs/abi.md, "Linear state
 * contract"): io's state tensors into *cs, checked against d (the SDK's
 * shapes, dtype, compactness) in memory the kernels read on `device`, with
 * at least need_steps intermediate steps when > 0, S <= INT32_MAX. */
int lin_check_caller_state(const lin_dims *d, const sgl_attn_linear_io *io, int device, int64_t need_steps,
                           const char *prefix, sgl_sdk_lin_state *cs, char *err, size_t n);
/* ops->state_batch's entries, all in host memory: checked at once with the
 * CPU wrappers' rules and messages (ranges, then a dst written twice, then a
 * copy's dst that another entry reads); keys: 2 * count scratch. */
typedef struct lin_sb_host {
    int32_t op, count;
    const DLTensor *dst, *src, *steps; /* src / steps NULL when the op reads none */
    int64_t slots, nsteps;
    const char *pre, *where, *steps_where; /* "gdn_cuda state_batch: ", "the wrapper's pool", "the pool" */
} lin_sb_host;
int lin_sb_check_host(const lin_sb_host *h, uint64_t *keys, char *err, size_t n);
const char *lin_sb_op_name(int op); /* "clear", "copy", "commit", "track" */

/* ----------------------------------------------------------- instance */

typedef struct lin_inst {
    sgl_attn_backend base; /* first: the ABI's instance header */
    int32_t kind;
    const char *name;      /* plugin name, for messages */
    const sgl_attn_host_api *host; /* the creating host (its log); NULL from a 1.0 host */
    sgl_attn_model model;
    lin_dims d;
    sgl_attn_backend *inner;
    int32_t device;
    int variant;
    int vt;                /* chunked phase 2's state-row tile: 16, 32, or 0 = by batch size */
    int seg;               /* the state pass's segments: -1 by the batch (lin_seg_plan), 0 never, N chunks */
    int sync_check;        /* debug: synchronise after planning and commit to report device-found errors */
    int l2a_blocks;        /* the stream decode's L2 prefetch distance in blocks (0: none): the option
                            * decode_l2_ahead_blocks, else by the state dtype (lin_decode_l2a_blocks) */
    int fused_cp;          /* fused_chunk: 1 where requests x value heads fill half the SMs (default), 0 off, 2 always;
                            * 0 also where the kernel cannot run (lin_create.c: gdn, bf16, K 128, V 64 / 128, the
                            * kernel's shared memory) */
    int fused_p2;          /* fused_phase2: mamba2's bf16 phase 2 in chunk_fused_state.cu where the serial state pass
                            * would run: 1 where the batch fills the SMs (lin_fused_p2_tile; default), 2 always, 0
                            * never; 0 also where the kernel cannot run (lin_create.c) */
    int sm_count;
    int sm_major;          /* the stream decode: programmatic dependent launch on 9 and newer */
    int32_t max_reqs, max_tokens, max_context;
    int16_t lin_index[SGL_ATTN_MAX_LAYERS]; /* -1: the inner's; else pool layer */
    lin_layout L;
    unsigned char *dev;    /* the one device allocation */
    int32_t *host_stage;   /* [3 * max_reqs] host copies of host-memory index tensors */
    uint8_t *seen;         /* [max_reqs] duplicate-slot check of host-memory state_indices */
    /* the current batch */
    int32_t planned;       /* 0 none, 1 planned */
    int32_t mode, bs, T, tpr;
    void *stream;          /* the batch's stream; state ops use the last one */
    /* the last verify batch, for state_commit */
    int32_t verify_n, verify_steps, verify_kept;
    int32_t graph_max_bs, graph_max_tokens;
    int32_t graph_replaying; /* 1 inside the replay hook: no sync_check */
    int32_t graph_hook;      /* 1 inside the capture or replay hook: the plan pads to graph_max_bs / tokens */
    /* verify graphs since init_graph_state: their tokens_per_req (0: none captured) and whether a captured
     * forward kept intermediate states on the pool (a replay runs no forward, so state_commit needs it) */
    int32_t graph_verify_tpr, graph_verify_kept;
    /* a batch slot past the pool (an error only for a layer on the pool): found on the host (host-memory
     * state_indices, or sync_check), request pool_over_i (-1: none known); else the device keeps it and the
     * next plan kernel reports it when pool_fwd says a layer used the pool */
    int32_t pool_over_i;
    int64_t pool_over_v;
    int32_t pool_fwd;      /* a layer of the planned batch ran on the pool */
    int32_t graph_pool_fwd; /* ... of a captured batch (a replay runs its layers without forward calls) */
    int32_t plan_capturing; /* the planned batch is under stream capture */
    int32_t plan_graph;     /* ... or planned by the capture hook (the engine captures its forwards next) */
    lin_idx plan_si;       /* the batch's state_indices as the plan kernel read them (device or staged) */
    uint64_t *sb_keys;     /* [2 * max_reqs] state_batch's host check */
    sgl_sdk_cuda_fault fault; /* the plan kernel's first error, read by the next lin_plan (no sync) */
    char err[LIN_ERR_MAX];
} lin_inst;

/* lin_probe.c */
int lin_probe(uint32_t index, sgl_attn_caps *caps, int kind);

/* lin_create.c */
int lin_create(int kind, const char *name, const sgl_attn_create_args *a, sgl_attn_backend **out);

/* lin_instance.c (a leaf) */
void lin_set_err(lin_inst *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The inner's failure, with its last_error, into w->err; returns rc. */
int lin_inner_failed(lin_inst *w, int rc, const char *what);
lin_plan_dev lin_plan_ptrs(const lin_inst *w);

/* lin_plan.c */
int lin_plan(lin_inst *w, const sgl_attn_batch *b, int32_t bs, int32_t T, int32_t mode);
int lin_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch);
int lin_init_graph_state(sgl_attn_backend *b, int32_t max_bs, int32_t max_num_tokens);
int lin_graph_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g);
int lin_graph_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g);
/* lin_forward.c: own layers computed here, the others go to the inner */
int lin_forward_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a);
int lin_forward_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a);
/* lin_state.c */
int lin_state_clear(sgl_attn_backend *b, int32_t slot);
int lin_state_copy(sgl_attn_backend *b, int32_t src, int32_t dst);
int lin_state_commit(sgl_attn_backend *b, const DLTensor *accepted);
int lin_state_batch(sgl_attn_backend *b, const sgl_attn_state_batch_args *a);
/* Report a device-found batch error (err[4] read back; hi: the fault's upper bound), E_INVALID. */
int lin_report_device_err(lin_inst *w, const int32_t e[4], int64_t hi, const char *call);
extern const sgl_attn_backend_ops lin_backend_ops;

/* The inner's op `f`, when its (possibly older) vtable has it. */
#define LIN_INNER_OP(w, f) SGL_SDK_INNER_OP((w)->inner, f)

#endif
