/*
 * mla_kernels.h - what the C backend hands the MLA kernels, and the launchers
 * (each beside its kernel).  Plain C.
 *
 * Kernels (docs/cuda_mla.md says when each runs):
 *   simple  mla_decode_simple.cu: one CTA per (token, head), CUDA cores, any
 *           page size, fp8 pools; the obviously-correct path
 *   mma     mla_decode_mma.cu: mma.sync (SM 8.0+), a tile of 16/32/64 rows
 *           shares each KV tile, split-KV; its configurations (MLA_MMA_*)
 *           differ in stages, CTAs per SM and how the key rows are loaded
 *   wide    mla_decode_wide_sm90.cu: sm_90a, 64-row tiles, two warpgroups
 *           (each owns 256 value columns) in the "seesaw" order, TMA loads
 * plus the split combine (mla_combine.cu) and the KV save (mla_save.cu).
 *
 * Launchers return 0 or a cudaError_t (as int); they never synchronise.
 */
#ifndef SGL_MLA_KERNELS_H
#define SGL_MLA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_fault.h"
#include "mla_sched.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MLA_DT_F16 = 0, MLA_DT_BF16 = 1, MLA_DT_FP8 = 2, MLA_DT_REC = 3 /* FlashMLA's fp8 record (mla_sparse.h) */ };

enum { MLA_KERNEL_AUTO = 0, MLA_KERNEL_SIMPLE = 1, MLA_KERNEL_MMA = 2, MLA_KERNEL_WIDE = 3 };

/* mma kernel configurations.  Asked for (mla_backend.c): TMA, RING or BASE;
 * run (mla_mma_effective_cfg): per tile rows, what the device's shared memory
 * holds.  BASE: 3 stages (2 for 64-row tiles), one CTA per SM.  TWO: 2 stages,
 * two CTAs per SM (32-row tiles).  RING: TWO plus a 2 KB shared-memory ring of
 * page-table words filled by cp.async ahead of use, so the loop never waits
 * for a page-table load (16-row tiles).  TMA (SM 9.0, 16-row tiles): RING with
 * the key rows loaded by cp.async.bulk on per-stage mbarriers instead of
 * cp.async + L2 prefetch. */
enum { MLA_MMA_BASE = 0, MLA_MMA_TWO = 1, MLA_MMA_RING = 2, MLA_MMA_TMA = 3 };

/* An int32/int64 index tensor (element i = word i << shift), read whole.
 * Positions are clamped into [0, n) (a read guard: the host checked the
 * shapes); values are checked against what they index (mla_kern_common.cuh). */
typedef struct mla_index {
    const int32_t *p;
    int64_t n;
    int32_t shift;
    int32_t reserved_;
} mla_index;

typedef struct mla_fwd_args {
    /* q of token t, head h: dims 0-511 at q + t * q_ts + h * q_hs, the rope
     * dims 512-575 at q_rope + t * qr_ts + h * qr_hs (elements; multiples of
     * 8: 16-byte rows).  Unsplit q: q_rope = q + 512, strides Hq x 576 and
     * 576; the rope split passes the engine's two tensors (views as they
     * are), so no concatenation is made. */
    const void *q;
    const void *q_rope;
    int64_t q_ts, q_hs, qr_ts, qr_hs;
    void *out;        /* [T, Hq, 512] */
    const void *pool; /* [slots, 576] (the k_cache) */
    int64_t num_slots;
    mla_index req_to_token; /* [rows, cols] */
    int64_t r2t_rows, r2t_cols;
    mla_index req_pool_indices; /* [bs] */
    const void *plan; /* device plan buffer (mla_sched.h) */
    mla_plan_layout lay;
    float *part_o;    /* [max_parts, 512] */
    float *part_lse;  /* [max_parts] (log2 domain) */
    int32_t hq;
    int32_t num_tokens;
    float scale_log2; /* sm_scale * log2(e) */
    float k_scale;    /* fp8 pool: stored value * k_scale */
    const float *k_scale_t; /* fp8 pool: layer k_scale_tensor ([1] fp32, read by the kernel), else NULL */
    int32_t q_dt;     /* MLA_DT_F16 / MLA_DT_BF16 (also out) */
    int32_t kv_dt;    /* MLA_DT_*: the pool */
    int32_t page_size;
    int32_t rows_per_tile; /* 16 / 32 / 64, as planned */
    int32_t grid_items;    /* CTAs of the attention kernel */
    int32_t prefetch;      /* mma: L2 prefetch distance in 32-key tiles (0: off) */
    int32_t mma_cfg;       /* MLA_MMA_* */
    int32_t grid_comb;     /* tiles the combine grid covers */
    void *stream;
    const void *tmap; /* host copy of the pool's CUtensorMap (wide only) */
    sgl_gpu_fault_ref fault; /* where a bad req_pool_indices / req_to_token value is noted */
    /* Tree verify (batch custom_mask): token t of request b sees key k iff
     * mask[mask_indptr[b] + t * seq_len_b + k] != 0, k < seq_len_b (the
     * plan gives every row its request's whole key range); NULL: causal. */
    const uint8_t *mask;
    int64_t mask_n; /* its entries: every mask read is clamped into them */
    mla_index mask_indptr;
} mla_fwd_args;

typedef struct mla_save_args {
    /* new row t: dims 0-511 at k + t * k_ld, 512-575 at k_rope + t * kr_ld
     * (elements, multiples of 8), q's dtype; unsplit: k_rope = k + 512 */
    const void *k;
    const void *k_rope;
    int64_t k_ld, kr_ld;
    void *pool;      /* [slots, 576]; MLA_DT_REC: [slots, 656] bytes */
    mla_index loc;   /* out_cache_loc [T] */
    int64_t num_slots;
    int32_t t;
    int32_t k_dt, kv_dt;
    float inv_k_scale; /* fp8 pool: stored = value / k_scale */
    const float *k_scale_t; /* fp8 pool: k_scale from this tensor instead (read by the kernel) */
    void *stream;
    sgl_gpu_fault_ref fault; /* where an out_cache_loc outside the pool is noted */
} mla_save_args;

/* Kernel attributes (dynamic shared memory) for every instantiation the
 * device can run; call once per device at create. */
int mla_kernels_init(int sm_major, size_t smem_optin, char *err, size_t err_size);
/* 1 when this device can run the wide kernel: SM 9.0, the TMA encoder found,
 * its dynamic shared memory within the opt-in. */
int mla_wide_avail(int sm_major, size_t smem_optin, int have_encoder);

/* Dynamic shared memory of the mma kernel for `rows_per_tile` rows and
 * configuration `cfg` (MLA_MMA_*) on a device with `smem_optin` bytes per
 * block (0: it does not fit). */
size_t mla_mma_smem_bytes(int32_t rows_per_tile, int32_t cfg, size_t smem_optin);
/* The configuration the mma launcher really runs for these rows: TMA for
 * 16-row tiles where two blocks fit, else as RING; RING for 16-row tiles and
 * TWO for 32-row ones where two blocks fit; BASE otherwise. */
int32_t mla_mma_effective_cfg(int32_t rows_per_tile, int32_t cfg, size_t smem_optin);
/* CTAs per SM the mma kernel is built for (the planner's and grid's
 * multiplier): 2 for MLA_MMA_TWO, MLA_MMA_RING and MLA_MMA_TMA, else 1. */
int32_t mla_mma_ctas_per_sm(int32_t effective_cfg);
/* Dynamic shared memory of the wide kernel. */
size_t mla_wide_smem_bytes(void);

int mla_launch_simple(const mla_fwd_args *a);
int mla_launch_mma(const mla_fwd_args *a, size_t smem_optin);
int mla_launch_wide(const mla_fwd_args *a);
int mla_launch_combine(const mla_fwd_args *a);
int mla_launch_save(const mla_save_args *s);
/* The item check of a planned batch (mla_item_check.cu): simple 1 checks the
 * plan's tokens (the simple kernel's work), else its items; grid blocks
 * stride over them. */
int mla_launch_item_check(const mla_fwd_args *a, int simple, int grid);

/* Encode the pool's TMA map (the wide kernel): rows of 576 elements, boxes of 64
 * elements x box_rows rows, 128-byte swizzle.  `encode` is
 * cuTensorMapEncodeTiled (from cudaGetDriverEntryPoint).  Returns 0 or the
 * CUresult. */
int mla_tmap_encode(void *encode_fn, void *tmap128, const void *pool, int64_t num_slots,
                    int32_t box_rows);

#ifdef __cplusplus
}
#endif
#endif
