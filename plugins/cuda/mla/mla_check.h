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
    /* the rope dims' rows: q_rope / k_rope, or q + 512 / k + 512; token and
     * head strides of q and q_rope, token strides of k and k_rope (elements;
     * Hq x 576, 576 and 576 unsplit) */
    const void *q_rope, *k_rope;
    int64_t q_ts, q_hs, qr_ts, qr_hs, k_ld, kr_ld;
    /* tree verify (mla_check_tree): the mask, its bytes, mask_indptr */
    const uint8_t *mask;
    int64_t mask_n;
    mla_index mask_indptr;
    void *out, *pool;
    int64_t num_slots;
    mla_index req_to_token, req_pool_indices, loc;
    int64_t r2t_rows, r2t_cols;
    float scale_log2, k_scale;
    const float *k_scale_t; /* fp8 pool: layer k_scale_tensor, else NULL */
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
 * bs_planned requests).  With the rope split (forward args q_rope, and
 * k_rope when saving), q is [T, Hq, 512] beside q_rope [T, Hq, 64] and k
 * [T, 1, 512] beside k_rope [T, 1, 64]; each may be a view with contiguous
 * rows and strides that are multiples of 8 elements, as sglang's slices and
 * transposed bmm outputs are. */
int mla_check_forward(const sgl_attn_forward_args *a, int32_t device, int32_t t_planned,
                      int32_t bs_planned, mla_fwd_view *v, char *err, size_t err_size);

/* Tree verify: batch custom_mask / mask_indptr, both or neither, in a
 * target-verify batch only; custom_mask 1-D uint8 / bool, compact, CUDA
 * memory of `device`, with at least sum q_len[i] * (prefix[i] + q_len[i])
 * bytes when the lengths are given (q_len NULL: not checked); mask_indptr
 * [bs + 1] int32 / int64 on the same device (its values are the device's:
 * the kernels clamp every mask read into the tensor).  Fills v's mask
 * fields (NULL mask: causal). */
int mla_check_tree(const sgl_attn_batch *b, int32_t device, const int32_t *q_len, const int32_t *prefix,
                   mla_fwd_view *v, char *err, size_t err_size);

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
