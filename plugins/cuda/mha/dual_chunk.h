/*
 * dual_chunk.h - cuda_attn's dual chunk attention (docs/dual_chunk.md): what
 * the forwards hand its kernels (decode_mma.cu, extend_mma.cu and, on SM 9.0,
 * extend_wgmma_sm90.cuh: template DCA) beside attn_fwd, and their setup and
 * launchers.
 *
 * A query at position p, in chunk c0 = p - p % chunk_len, scores key column k
 * with q when k >= c0 (intra), with q_succ when c0 - chunk_len <= k < c0
 * (successor) and with q_inter below (inter).  The three LSE-merged parts
 * are one softmax over keys [0, p] whose logits take the variant of their
 * part, so the kernels make one flash pass over the KV with the three query
 * tiles in shared memory and pick the variant per key (per warp / warpgroup
 * tile where a tile lies in one part, per element at a boundary).  The extend
 * kernel is the instance's plain extend where that has a DCA form (the
 * wgmma one on SM 9.0 at head dim 128), else the mma one: attn_kernels'
 * dc_extend (cuda_attn_choice.c, attn_dispatch.c).
 */
#ifndef SGL_CUDA_ATTN_DUAL_CHUNK_H
#define SGL_CUDA_ATTN_DUAL_CHUNK_H

#include "cuda_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_dca {
    const void *q_succ, *q_inter;        /* [T, Hq, D] of q's dtype */
    int64_t qs_stride_t, qs_stride_h;    /* elements */
    int64_t qi_stride_t, qi_stride_h;
    int32_t chunk_len;                   /* chunk_size - local_size, >= 1 */
    int32_t original_max_position;       /* > 0: logits of a request of seq_len keys x
                                            max(1, 0.1 ln(seq_len / it) + 1) */
} attn_dca;

/* Create time, on the instance's device: the kernels' shared-memory limits. */
int attn_dual_chunk_decode_setup(int dtype, int head_dim);
int attn_dual_chunk_extend_setup(int dtype, int head_dim);
/* Decode over the planned decode items (any tiles: up to 16 q heads per block). */
int attn_launch_dual_chunk_decode(int dtype, int head_dim, const attn_fwd *p, const attn_dca *dc, int grid_items,
                                  void *stream);
/* Extend over the planned extend items of up to block_m q rows (64-row sub-tiles). */
int attn_launch_dual_chunk_extend(int dtype, int head_dim, const attn_fwd *p, const attn_dca *dc, int block_m,
                                  int grid_items, void *stream);
/* The sm_90a wgmma extend's DCA kernels (extend_wgmma_sm90.cu, head dim 128):
 * setup as attn_extend_wgmma_setup (*tma_ok: the TMA producer's kernel is
 * set up too), launch over the plan's 128-row items; tm as
 * attn_launch_extend_wgmma's. */
int attn_dual_chunk_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok);
int attn_launch_dual_chunk_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, const attn_dca *dc,
                                        const attn_kv_tmaps *tm, int sm_count, int grid_items, void *stream);
/* The instance's dual chunk extend (k->dc_extend; attn_dispatch.c); tm: the
 * pool's maps for the wgmma kernel's TMA producer, or NULL. */
int attn_launch_dual_chunk_extend_k(const attn_kernels *k, const attn_fwd *p, const attn_dca *dc,
                                    const attn_kv_tmaps *tm, int block_m, int grid_items, void *stream);

#ifdef __cplusplus
}

/* The part of key column `col` for a query whose chunk starts at c0:
 * 0 intra (q), 1 successor (q_succ), 2 inter (q_inter). */
__device__ __forceinline__ int dca_part(int col, int c0, int chunk_len) {
    return col >= c0 ? 0 : col >= c0 - chunk_len ? 1 : 2;
}

/* Length scaling: sm_scale * log2(e) times max(1, 0.1 ln(seq_len / omp) + 1). */
__device__ __forceinline__ float dca_scale_log2(float scale_log2, const attn_dca &dc, int seq_len) {
    if (dc.original_max_position <= 0 || seq_len <= dc.original_max_position) return scale_log2;
    return scale_log2 * (0.1f * logf((float)seq_len / (float)dc.original_max_position) + 1.f);
}

/* Row `tok`, head `head` of the query variant of part v (selects, so the
 * pointers stay in registers). */
__device__ __forceinline__ const uint16_t *dca_q_row(const attn_fwd &p, const attn_dca &dc, int v, int tok,
                                                     int head) {
    const uint16_t *b = (const uint16_t *)(v == 0 ? p.q : v == 1 ? dc.q_succ : dc.q_inter);
    const int64_t st = v == 0 ? p.q_stride_t : v == 1 ? dc.qs_stride_t : dc.qi_stride_t;
    const int64_t sh = v == 0 ? p.q_stride_h : v == 1 ? dc.qs_stride_h : dc.qi_stride_h;
    return b + (int64_t)tok * st + (int64_t)head * sh;
}
#endif
#endif
