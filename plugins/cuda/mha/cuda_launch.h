/*
 * cuda_launch.h - the C face of cuda_attn's kernels: which kernel an
 * instance runs for each role (chosen once at create, cuda_attn_choice.c),
 * their per-create setup and their launchers (defined in the .cu file of
 * each kernel).  Every launcher returns a cudaError_t as int (0 = launched);
 * none allocates, synchronises or reads anything but its arguments.
 */
#ifndef SGL_CUDA_ATTN_LAUNCH_H
#define SGL_CUDA_ATTN_LAUNCH_H

#include "attn_kernels/portable_launch.h"
#include "attn_kernels/sizing.h"
#include "attn_tmap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The extend kernel of an instance. */
enum attn_extend_kernel {
    ATTN_EXTEND_PORTABLE = 0, /* attn_kernels/extend_portable.cuh: hip_attn's, on CUDA */
    ATTN_EXTEND_MMA = 1,      /* extend_mma.cu: mma.sync, SM 8.0+, every head dim; fp8 pools at 64 / 128 */
    ATTN_EXTEND_WGMMA = 2,    /* extend_wgmma_sm90.cu: warpgroup MMA, SM 9.0 (sm_90a), head dim 128 */
};
/* The decode kernel of an instance. */
enum attn_decode_kernel {
    ATTN_DECODE_PORTABLE = 0, /* attn_kernels/decode_portable.cuh */
    ATTN_DECODE_MMA = 1,      /* decode_mma.cu: K/V staged in shared memory, every head dim and group */
    ATTN_DECODE_REG = 2,      /* decode_reg.cu: K/V straight into mma fragments, head dim 64/128, group <= 8 */
};
/* The largest GQA group (q heads per kv head) the register-fed decode serves. */
#define ATTN_DECODE_REG_MAX_GROUP 8

/* What create chose and set up for an instance; the launchers read it. */
typedef struct attn_kernels {
    int extend;   /* attn_extend_kernel */
    int decode;   /* attn_decode_kernel */
    int dtype;    /* ATTN_DT_* of q / out (and the pool unless kv_fp8) */
    int head_dim;
    int sm_count; /* wgmma extend: blocks of the persistent grid */
    int tma;      /* wgmma extend: the TMA-producer kernel is set up (attn_kernels_setup) */
    int kv_fp8;   /* 1: the pool is fp8 e4m3 (decode_reg.cu's KV template, extend_mma.cu's F8) */
    int dual_chunk; /* the dual chunk kernels (dual_chunk.h) are set up: a 16-bit pool and their
                       shared memory fits the device (attn_kernels_setup) */
    int dc_extend;  /* attn_extend_kernel serving dual chunk's extend: wgmma where the plain
                       extend is wgmma, else mma (cuda_attn_choice.c; mma where the wgmma DCA
                       kernels' setup fails, attn_kernels_setup) */
    int dc_tma;     /* dc_extend wgmma: its TMA-producer kernel is set up */
    int dec_save;   /* a 16-bit pool's register-fed decode: a self-attention decode without
                       dual chunk that saves its new tokens does so in the decode grid
                       (attn_launch_decode_reg_save), not a launch before it */
} attn_kernels;

/* The tiles the chosen kernels plan with (pure C, cuda_attn_choice.c). */
attn_tiles attn_kernel_tiles(const attn_kernels *k, int group);

/* Create time, on the instance's device: shared-memory limits and checks of
 * the chosen kernels; sets k->tma, k->dual_chunk and k->dc_tma, and may move
 * k->dc_extend to mma (attn_dispatch.c). */
int attn_kernels_setup(attn_kernels *k);
/* The forwards' launches (attn_dispatch.c).  tm: the pool's tensor maps for
 * the wgmma extend's TMA producer, NULL for the cp.async one. */
int attn_launch_decode(const attn_kernels *k, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_extend(const attn_kernels *k, const attn_fwd *p, const attn_kv_tmaps *tm, int grid_items,
                       void *stream);

/* Per kernel, behind the two above. */
/* 16-bit pools: the kernel whose split merge takes the weights table and 16-byte
 * loads (attn_decode_finish's FM); fp8 pools: the per-element merge. */
int attn_launch_decode_reg(int dtype, int kv_fp8, int head_dim, const attn_fwd *p, int grid_items, void *stream);
/* The same 16-bit decode (bf16 / f16 pool) saving the batch's new tokens
 * itself (the decode forward's launch where save_kv_cache is set, the layer is
 * self attention and not dual chunk; kernels.dec_save): the block of each request's last split
 * writes the token's K / V row of its kv head as s says (save_kv.cuh's copy)
 * before it reads the pool; s.t must be p->num_tokens (one token a request). */
int attn_launch_decode_reg_save(int dtype, int head_dim, const attn_fwd *p, const attn_save *s, int grid_items,
                                void *stream);
/* fp8 pools: new K/V (dtype) quantised at out_cache_loc, value / scale
 * (save_kv_fp8.cu); the scales as attn_fwd's. */
typedef struct attn_save_fp8 {
    attn_save s;
    const float *k_scale_dev, *v_scale_dev;
    float k_scale, v_scale;
    /* NULL, or [t, hkv, d] compact (dtype): each token's saved values
     * dequantised (stored * scale), the new rows the split extend attends */
    void *k_deq, *v_deq;
} attn_save_fp8;
int attn_launch_save_kv_fp8(int dtype, const attn_save_fp8 *s, void *stream);
int attn_decode_mma_setup(int dtype, int head_dim);
int attn_launch_decode_mma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_extend_mma_setup(int dtype, int head_dim);
int attn_launch_extend_mma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
/* The mma extend on an fp8 e4m3 pool (head dims 64 / 128): q / out dtype,
 * the pool's bytes dequantised by attn_fwd's k / v scales. */
int attn_extend_mma_fp8_setup(int dtype, int head_dim);
int attn_launch_extend_mma_fp8(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
/* 1 when the sm_90a image is in this binary and `device` (SM 9.0) runs it. */
int attn_wgmma_available(int device);
/* Both producers' kernels for dtype (head dim 128); *tma_ok 0 when the TMA
 * kernel's setup fails (the cp.async one then serves every page size). */
int attn_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok);
int attn_launch_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                             int grid_items, void *stream);
/* The fp8 split extend's prefix pass on the wgmma extend (SM 9.0 with the
 * sm_90a image; the fp8 mma extend elsewhere): the paged body over an fp8
 * e4m3 pool at head dim 128, its producer bringing the pool's bytes into a
 * ring by cp.async and converting them to f16 tiles; q / out dtype; items of
 * up to ATTN_WG_BM = 128 rows. */
int attn_extend_wgmma_fp8_setup(int dtype);
int attn_launch_extend_wgmma_fp8(int dtype, const attn_fwd *p, int sm_count, int grid_items, void *stream);

/* ---------------------------------------------------------- forward_ragged */

/* Tree verify's mask packed to bits, once per batch after the plan
 * (tree_mask_pack.cu): bits[(b * mq + r) * words + (c >> 6)] bit c & 63 is
 * byte (r, c) of request b's block; full[b * words + w] = 1 when every row's
 * word w is all ones.  words * 64 >= every request's seq_len.  first (NULL:
 * not asked; the wgmma extend reads it): first[b] = request b's first word
 * whose flag is 0, words when none is. */
int attn_launch_tree_mask_pack(const uint8_t *mask, int64_t mask_len, attn_index indptr, int32_t bs, int32_t mq,
                               int32_t words, uint64_t *bits, uint8_t *full, uint32_t *first, void *stream);

/* Cross attention's encoder slots, checked once per planned batch
 * (encoder_loc_check.cu): entry e of batch.encoder_out_cache_loc, request b's
 * encoder column c (request 0's first), must be the slot the table gives
 * that column, and the tensor must hold exactly the sum of encoder_lens
 * entries; the first that is not is noted (SGL_FAULT_ENCODER_OUT_CACHE_LOC). */
typedef struct attn_enc_loc_check {
    attn_index loc;              /* [n] */
    attn_index encoder_lens;     /* [bs] */
    attn_index req_pool_indices; /* [bs]; absent: a page table (row b) */
    attn_index table;            /* req_to_token or the page table */
    int64_t table_cols;          /* the table's entries per row */
    int64_t n;                   /* loc's entries */
    int32_t bs;
    int32_t max_reqs, max_ctx;   /* the table's rows, its columns in tokens */
    int32_t page_shift;          /* req_to_token: 0 */
    sgl_gpu_fault_ref fault;
} attn_enc_loc_check;
int attn_launch_encoder_loc_check(const attn_enc_loc_check *c, void *stream);

/* The ragged plan (ragged_plan.cu): cu_seqlens -> extend items. */
typedef struct attn_ragged_plan {
    attn_index cu_q, cu_k;     /* [bs + 1] each */
    int32_t bs;
    int32_t tq, tk;            /* rows of q / k (the offsets' bound) */
    int32_t causal;
    int32_t block_m, block_n;  /* the kernel's q rows per item, KV columns per tile */
    int32_t max_items;
    int32_t reserved_;
    attn_extend_item *items;
    int32_t *num_items;
    sgl_gpu_fault_ref fault;   /* where an offset out of range is noted */
} attn_ragged_plan;
int attn_launch_ragged_plan(const attn_ragged_plan *pl, void *stream);
/* The extend kernels with their RAGGED flag: K / V from forward_ragged's
 * tensors (p->k_cache / v_cache with their row strides, num_slots = their
 * rows), qk 128 or 192, v 128.  mma: any SM 8.0+; wgmma: as the extend's. */
int attn_ragged_mma_setup(int dtype, int dqk, int dv);
int attn_launch_ragged_mma(int dtype, int dqk, int dv, const attn_fwd *p, int grid_items, void *stream);
int attn_ragged_wgmma_setup(int dtype, int dqk, int dv, int *tma_ok);
int attn_launch_ragged_wgmma(int dtype, int dqk, int dv, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                             int grid_items, void *stream);

/* ------------------------------------------ the direct extend (16-bit pools) */

/* An extend without a prefix (cuda_attn_forward.c, direct_extend): the new tokens by the
 * ragged wgmma body over the call's k / v (extend_wgmma_sm90.cu: a plain
 * launch whose blocks trigger the next grid at their start), then the save
 * of those k / v into the pool as its programmatic dependent
 * (save_kv_pdl.cu: the copy beside the attention, its grid complete only
 * after the attention's).  qk / v 128; *tma_ok as attn_ragged_wgmma_setup. */
int attn_new_wgmma_setup(int dtype, int *tma_ok);
int attn_launch_new_wgmma(int dtype, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count, int grid_items,
                          void *stream);
int attn_launch_save_kv_after(const attn_save *s, void *stream);

/* ------------------------------------------- the fp8 pool's split extend */

/* The split extend's plan (extend_fp8_split.cu): from the batch as the paged
 * plan reads it, the new-token items (block_new rows, for the ragged kernel
 * over the dequantised new rows) and the prefix items (block_pre rows, for
 * the fp8 extend over the pool's prefix columns); num[0] / num[1] their counts. */
typedef struct attn_split_plan {
    attn_extend_item *fresh, *pre;
    int32_t *num;              /* [2] */
    int32_t max_new, max_pre;  /* the lists' capacities */
    int32_t block_new, block_pre;
    int32_t block_n;           /* KV columns per cost unit (the order) */
    int32_t reserved_;
} attn_split_plan;
int attn_launch_split_plan(const attn_plan_in *in, const attn_split_plan *pl, void *stream);
/* The merge of the two passes' outputs by their LSEs over the prefix items'
 * rows (head dim 128): out / lse (the new tokens' part, [T, hq, 128] with
 * out's strides / compact [T, hq]) take the result; part ([T, hq, 128]
 * compact, dtype) and part_lse the prefix's. */
typedef struct attn_split_merge {
    void *out;
    float *lse;
    const void *part;
    const float *part_lse;
    const attn_extend_item *items;
    const int32_t *num_items;
    int64_t o_stride_t, o_stride_h;
    int32_t hq, num_tokens;
} attn_split_merge;
int attn_launch_split_merge(int dtype, const attn_split_merge *m, int grid_items, void *stream);

#ifdef __cplusplus
}
#endif
#endif
