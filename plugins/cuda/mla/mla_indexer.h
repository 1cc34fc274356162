/*
 * mla_indexer.h - DSA's indexer on cuda_mla (backend_ops.indexer_topk):
 * save the new index keys into the fp8 index-key cache (DeepSeek's per-128
 * e4m3 quantisation, bit for bit as cpu_ref's), score every earlier token
 * of each query token's request on tensor cores, keep the top `topk` as
 * page-encoded pool slots.  Plain C: the checks (mla_indexer_check.c) and
 * the sizing are unit-tested here; the kernels are mla_indexer.cu's.
 *
 * Scores: I(t, s) = sum_h w(t, h) ReLU(sum_blk scale(s, blk) q(t, h, blk) . k8(s, blk)),
 * fp32, written to a score scratch of [rows, max_context] floats (allocated
 * at create); a query token's row holds positions 0 .. n - 1 (n = its
 * position + 1: causal).  The key tile is the M dimension of mma.sync
 * m16n8k16 (f16 operands, fp32 accumulate), the heads the N dimension, so
 * the sum over heads is a thread's own columns plus two shuffles.  e4m3 is
 * f16 exactly (the bits shifted into place, a factor 2^-8 that the head
 * weights take back); q is scaled per head by a power of two into f16's
 * range (the weights take that back too); an f32 q is two f16 halves (high
 * and low) and two mma passes.
 *
 * Top-k: one CTA a query token, a radix select of the k-th largest score
 * over the row (11, 11 and 10 bits of the order-preserving key), then every
 * score above it and, of the scores equal to it, the earliest positions:
 * the same set as cpu_ref's (higher score first, ties the earlier position)
 * where the fp32 scores order as the float64 ones.
 */
#ifndef SGL_MLA_INDEXER_H
#define SGL_MLA_INDEXER_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_fault.h"
#include "mla_kernels.h"
#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_IDX_MAX_HEADS 64      /* index heads the score kernel holds (DeepSeek-V3.2: 64) */
#define MLA_IDX_MAX_DIM 512       /* index_head_dim, a multiple of 128 */
#define MLA_IDX_TILE 64           /* keys a score tile (4 warps x 16) */
#define MLA_IDX_CHUNK 1024        /* keys a score CTA */
#define MLA_IDX_SCRATCH_MB 256    /* default of option indexer_scratch_mb */

enum { MLA_IDX_Q_F32 = 0, MLA_IDX_Q_F16 = 1, MLA_IDX_Q_BF16 = 2, MLA_IDX_Q_FP8 = 3 };
enum { MLA_IDX_K_F32 = 0, MLA_IDX_K_F16 = 1, MLA_IDX_K_BF16 = 2 };

/* An indexer call, checked (mla_check_indexer). */
typedef struct mla_idx_view {
    int32_t t, ih, id, nblk, topk;
    int32_t q_dt, k_dt; /* MLA_IDX_Q_* / MLA_IDX_K_* */
    const void *q;      /* [T, ih, id] compact */
    const float *w;     /* [T, ih] */
    const void *k;      /* [T, id] compact, NULL without save_index_k */
    uint8_t *kc;        /* [slots, id] */
    float *ks;          /* [slots, nblk] */
    int64_t slots;
    int32_t *out;       /* [T, topk] */
    mla_index req_to_token, req_pool_indices, loc;
    int64_t r2t_rows, r2t_cols;
} mla_idx_view;

/* The whole call against the planned batch (t_planned tokens, bs_planned
 * requests, max_n = the most keys a token of it sees): struct size, topk
 * >= 1, every tensor's dtype, shape and device (CUDA `device`), compact;
 * index heads 1..MLA_IDX_MAX_HEADS, index_head_dim a multiple of 128 up to
 * MLA_IDX_MAX_DIM; the batch's req_to_token wide enough for max_n keys.
 * SGL_ATTN_OK or a status with err naming the field. */
int mla_check_indexer(const sgl_attn_indexer_args *a, int32_t device, int32_t t_planned, int32_t bs_planned,
                      int32_t max_n, mla_idx_view *v, char *err, size_t err_size);

/* Query tokens one pass of the score and top-k kernels takes: the score
 * scratch holds rows x max_context floats; at least 1, at most max_tokens
 * and 65535 (the score grid's y extent). */
static inline int32_t mla_idx_rows(int64_t scratch_bytes, int32_t max_context, int32_t max_tokens) {
    int64_t r = scratch_bytes / ((int64_t)(max_context > 0 ? max_context : 1) * 4);
    if (r > max_tokens) r = max_tokens;
    if (r > 65535) r = 65535;
    return r < 1 ? 1 : (int32_t)r;
}

/* What the launcher needs: the view, the plan's per-token array (mla_sched.h
 * mla_tok: request, keys seen, index among its new tokens), the scratch. */
typedef struct mla_idx_args {
    mla_idx_view v;
    int32_t save;
    int32_t pow2;
    int32_t tree;        /* the plan is a tree verify's: n_keys is the request's whole range */
    int32_t key_chunks;  /* score CTAs a token: ceil(most keys a token sees / MLA_IDX_CHUNK) */
    int32_t rows;        /* tokens a pass (mla_idx_rows) */
    const void *toks;    /* device mla_tok [T] */
    float *scores;       /* [rows, ld] */
    int64_t ld;          /* max_context */
    void *stream;
    sgl_gpu_fault_ref fault;
} mla_idx_args;

/* Dynamic shared memory of the score kernel for ih heads of id dims (q_f32:
 * an f32 q's two halves). */
static inline size_t mla_idx_smem_bytes(int32_t ih, int32_t id, int32_t q_f32) {
    const int32_t hp = ih <= 16 ? 16 : ih <= 32 ? 32 : 64; /* heads padded to 2, 4 or 8 mma n-tiles */
    return (size_t)((q_f32 ? 2 : 1) * hp * id + MLA_IDX_TILE * SGL_ATTN_DSA_SCALE_BLOCK) * 2;
}
/* Kernel attributes (dynamic shared memory) up to smem_optin; 0 or a cudaError_t. */
int mla_indexer_init(size_t smem_optin);
/* Save (with save), then per pass of `rows` tokens the scores and the top-k;
 * 0 or a cudaError_t.  Never synchronises. */
int mla_launch_indexer(const mla_idx_args *a);

#ifdef __cplusplus
}
#endif
#endif
