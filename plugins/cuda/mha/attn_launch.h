/*
 * attn_launch.h - the C face of the kernels: launchers the backend calls
 * (defined in launch_*.cu).  Every launcher returns a cudaError_t as int
 * (0 = launched); none allocates or synchronises.
 */
#ifndef SGL_CUDA_ATTN_LAUNCH_H
#define SGL_CUDA_ATTN_LAUNCH_H

#include "attn_kernels/attn_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel variants (SGL_ATTN_CUDA_KERNEL / plugin option "kernel"). */
enum attn_variant {
    ATTN_VARIANT_SIMPLE = 0, /* portable plain-core kernels (the HIP source) */
    ATTN_VARIANT_MMA = 1,    /* mma.sync m16n8k16 + ldmatrix + cp.async, SM 8.0+ */
    ATTN_VARIANT_WGMMA = 2,  /* extend on wgmma (sm_90a); decode as MMA */
    ATTN_VARIANT_COUNT_
};

/* dtype: 0 fp16, 1 bf16 (same for q, kv and out). */
enum { ATTN_DT_F16 = 0, ATTN_DT_BF16 = 1 };

/* Tile shapes each variant plans with. */
typedef struct attn_tiles {
    int decode_heads_per_block; /* q heads of one kv head per decode block */
    int decode_chunk_align;     /* KV columns per decode tile */
    int extend_block_m, extend_block_n;
} attn_tiles;
attn_tiles attn_variant_tiles(int variant, int head_dim, int group);

/* Per-create setup (dynamic shared memory limits) for the variant's kernels. */
int attn_kernels_setup(int variant, int dtype, int head_dim);
/* 1 when the sm_90a wgmma kernel is in this binary and the device runs it. */
int attn_wgmma_available(int device);

int attn_launch_plan_decode(const attn_plan_in *in, const attn_decode_plan *pl, void *stream);
int attn_launch_plan_extend(const attn_plan_in *in, const attn_extend_plan *pl, void *stream);
int attn_launch_save_kv(const attn_save *s, void *stream);
/* grid_items: upper bound of the plan's items (blocks past num_items exit). */
int attn_launch_decode(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items,
                       void *stream);
int attn_launch_extend(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items,
                       void *stream);

/* Per-variant launchers behind the two above (attn_dispatch.c). */
int attn_launch_decode_simple(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_extend_simple(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_decode_mma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_extend_mma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_mma_setup(int dtype, int head_dim);
int attn_wgmma_setup(int dtype, int head_dim);
/* 1 when attn_launch_extend_wgmma takes the save_kv_cache itself (attn_fwd
 * save_k ...; SGL_ATTN_WGMMA_FUSED_SAVE=1 at create, version 2, head dim 128). */
int attn_wgmma_fused_save(int dtype, int head_dim);

#ifdef __cplusplus
}
#endif
#endif
