/*
 * mla_check.h - every input check of the cuda_mla backend, in plain C (no
 * CUDA), so the messages are unit-tested here.  A failed check returns
 * SGL_ATTN_E_INVALID or SGL_ATTN_E_UNSUPPORTED with a message naming the
 * tensor or field, the value seen and what was expected; nothing is launched.
 */
#ifndef SGL_MLA_CHECK_H
#define SGL_MLA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "mla_kernels.h"
#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack dtype -> MLA_DT_* (bf16, f16, fp8 e4m3), or -1. */
int mla_dtype_of(DLDataType t);

/* A forward call, checked: what the launchers need. */
typedef struct mla_fwd_view {
    int32_t t, hq;
    int32_t q_dt, kv_dt;
    const void *q, *k;
    void *out, *pool;
    int64_t num_slots;
    mla_index req_to_token, req_pool_indices, loc;
    int64_t r2t_rows, r2t_cols;
    float scale_log2, k_scale;
    const int32_t *topk; /* DSA sparse MLA: topk_indices [t, topk_k], else NULL */
    int32_t topk_k;
} mla_fwd_view;

/* The layer's constants: absorbed MLA (576 / 512, one latent head), no
 * soft-cap, window, sinks or cross attention. */
int mla_check_layer(const sgl_attn_layer *l, char *err, size_t err_size);

/* ABI 1.2 fields cuda_mla does not serve, refused by name when set (only
 * fields within the caller's struct_size are read); structs older than ABI
 * 1.0 are refused.  The forward's check calls the second. */
int mla_refuse_unserved_batch(const sgl_attn_batch *b, char *err, size_t err_size);
int mla_refuse_unserved(const sgl_attn_forward_args *a, char *err, size_t err_size);

/* The whole call: layer, q / out / pool / k / index tensors on CUDA device
 * `device`, shapes consistent with the planned batch (num_tokens t_planned,
 * bs_planned requests). */
int mla_check_forward(const sgl_attn_forward_args *a, int32_t device, int32_t t_planned,
                      int32_t bs_planned, mla_fwd_view *v, char *err, size_t err_size);

/* Lengths of a batch for the planner: q_len / prefix per request (host
 * arrays of bs), from the *_cpu mirrors.  A NULL mirror is reported as
 * SGL_ATTN_E_INVALID naming it (the caller may fall back to a device copy);
 * an extend's seq_lens, when the host can read it, must be prefix + new. */
int mla_batch_lengths(const sgl_attn_batch *b, int32_t max_reqs, int32_t max_tokens,
                      int32_t max_context, const DLTensor *seq_lens, const DLTensor *prefix_lens,
                      const DLTensor *extend_lens, int32_t *q_len, int32_t *prefix, char *err,
                      size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
