/*
 * mla_kernels.h - what the C backend hands the MLA kernels, and the launchers
 * (mla_launch.cu).  Plain C.
 *
 * Kernels (docs/cuda_mla.md):
 *   simple  one CTA per (token, head), CUDA cores, any page size, fp8 KV;
 *           the obviously-correct path every other one is checked against
 *   mma     mma.sync (SM 8.0+): a tile of 16/32/64 rows shares each KV tile,
 *           cp.async multi-stage, split-KV
 *   wgmma   SM 9.0a: 64-row tile, two warpgroups (each owns 256 value columns)
 *           in FlashMLA's "seesaw" order, TMA loads, page sizes 8/16/32/64k
 *   narrow  SM 9.0a: 16/32-row tiles (decode at 16 heads and the like) computed
 *           transposed (S^T = K Q^T, O^T = V^T P^T: keys and value columns are
 *           wgmma's M, the query rows its N), so no tensor work is padded; a
 *           producer warp streams 8 KB sub-tiles through a ring with TMA
 * plus the split combine and the KV save.
 *
 * Launchers return 0 or a cudaError_t (as int); they never synchronise.
 */
#ifndef SGL_MLA_KERNELS_H
#define SGL_MLA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "mla_sched.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MLA_DT_F16 = 0, MLA_DT_BF16 = 1, MLA_DT_FP8 = 2 };

enum {
    MLA_KERNEL_AUTO = 0,
    MLA_KERNEL_SIMPLE = 1,
    MLA_KERNEL_MMA = 2,
    MLA_KERNEL_WGMMA = 3,
    MLA_KERNEL_NARROW = 4,
    MLA_KERNEL_WGMMA0 = 5, /* the wgmma kernel as first measured (mla_wgmma0.cu): baseline */
    MLA_KERNEL_WGMMA2 = 6, /* wgmma0 with the pair reordered (mla_wgmma2.cu): opt-in */
    MLA_KERNEL_WGMMA3 = 7, /* wgmma2, WG1 one step deeper (mla_wgmma3.cu) */
    MLA_KERNEL_WGMMA4 = 8, /* wgmma3, lazy max + skipped O rescales (mla_wgmma4.cu): opt-in */
    MLA_KERNEL_WGMMA5 = 9  /* wgmma4, WG1's next S in flight across BAR_A (mla_wgmma5.cu): opt-in */
};

/* mma kernel configurations (SGL_ATTN_MLA_MMA): the tuning variants the GPU
 * sweep picks from.  BASE: 3 stages (2 for 64-row tiles), one CTA per SM;
 * DEEP: as many stages as 227 KB holds (5 / 4 / 3), one CTA per SM; TWO: two
 * CTAs per SM with 2 stages each (16- and 32-row tiles; 64-row tiles run BASE);
 * RING: TWO plus a 2 KB shared-memory ring of page-table words filled by
 * cp.async ahead of use, so the loop never waits for a page-table load (the
 * default: 1.04x TWO at 16 heads; 32-row tiles run TWO, 64-row tiles BASE).
 * TMA / TMADEEP (SM 9.0, 16-row tiles; elsewhere as RING): RING with the key
 * rows loaded by cp.async.bulk on per-stage mbarriers instead of cp.async +
 * L2 prefetch; TMA 2 stages and 2 CTAs per SM, TMADEEP 5 stages and one. */
enum { MLA_MMA_BASE = 0, MLA_MMA_DEEP = 1, MLA_MMA_TWO = 2, MLA_MMA_RING = 3, MLA_MMA_TMA = 4, MLA_MMA_TMADEEP = 5 };

/* An int32/int64 index tensor, read as 32-bit words (element i = word i << shift;
 * little-endian low word).  Reads are clamped into [0, n). */
typedef struct mla_index {
    const int32_t *p;
    int64_t n;
    int32_t shift;
    int32_t reserved_;
} mla_index;

typedef struct mla_fwd_args {
    const void *q;    /* [T, Hq, 576] */
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
    int32_t q_dt;     /* MLA_DT_F16 / MLA_DT_BF16 (also out) */
    int32_t kv_dt;    /* MLA_DT_*: the pool */
    int32_t page_size;
    int32_t rows_per_tile; /* 16 / 32 / 64, as planned */
    int32_t grid_items;    /* CTAs of the attention kernel */
    int32_t prefetch;      /* L2 prefetch distance (0: off): wgmma pairs of blocks,
                              narrow 64-key blocks, mma 32-key tiles ahead */
    int32_t mma_cfg;       /* MLA_MMA_* */
    int32_t grid_comb;     /* tiles the combine grid covers */
    void *stream;
    const void *tmap; /* host copy of the pool's CUtensorMap (wgmma only) */
} mla_fwd_args;

typedef struct mla_save_args {
    const void *k;   /* [T, 1, 576] new latent rows, q's dtype */
    void *pool;      /* [slots, 576] */
    mla_index loc;   /* out_cache_loc [T] */
    int64_t num_slots;
    int32_t t;
    int32_t k_dt, kv_dt;
    float inv_k_scale; /* fp8 pool: stored = value / k_scale */
    void *stream;
} mla_save_args;

/* Kernel attributes (dynamic shared memory) for every instantiation the
 * device can run; call once per device at create. */
int mla_kernels_init(int sm_major, size_t smem_optin, char *err, size_t err_size);
/* The TMA kernels this device can run, as bits 1u << MLA_KERNEL_WGMMA /
 * _WGMMA0 / _WGMMA2 / _WGMMA3 / _NARROW: SM 9.0, the TMA encoder found, and each kernel's
 * dynamic shared memory within the opt-in (checked per kernel). */
uint32_t mla_kernel_avail(int sm_major, size_t smem_optin, int have_encoder);

/* Dynamic shared memory of the mma kernel for `rows_per_tile` rows and
 * configuration `cfg` (MLA_MMA_*) on a device with `smem_optin` bytes per
 * block (0: it does not fit). */
size_t mla_mma_smem_bytes(int32_t rows_per_tile, int32_t cfg, size_t smem_optin);
/* The configuration the mma launcher really runs for these rows (TWO runs
 * BASE for 64-row tiles; DEEP / TWO run BASE where they do not fit; RING runs
 * TWO where two blocks of it do not fit, BASE where neither does). */
int32_t mla_mma_effective_cfg(int32_t rows_per_tile, int32_t cfg, size_t smem_optin);
/* CTAs per SM the mma kernel is built for (the planner's and grid's
 * multiplier): 2 for MLA_MMA_TWO, MLA_MMA_RING and MLA_MMA_TMA, else 1. */
int32_t mla_mma_ctas_per_sm(int32_t effective_cfg);
/* Same for the wgmma and narrow kernels. */
size_t mla_wgmma_smem_bytes(void);
size_t mla_narrow_smem_bytes(int32_t rows_per_tile);
size_t mla_wgmma0_smem_bytes(void);
size_t mla_wgmma2_smem_bytes(void);
size_t mla_wgmma3_smem_bytes(void);
size_t mla_wgmma4_smem_bytes(void);
size_t mla_wgmma5_smem_bytes(void);

int mla_launch_simple(const mla_fwd_args *a);
int mla_launch_mma(const mla_fwd_args *a, size_t smem_optin);
int mla_launch_wgmma(const mla_fwd_args *a);
int mla_launch_narrow(const mla_fwd_args *a);
int mla_launch_wgmma0(const mla_fwd_args *a);
int mla_launch_wgmma2(const mla_fwd_args *a);
int mla_launch_wgmma3(const mla_fwd_args *a);
int mla_launch_wgmma4(const mla_fwd_args *a);
int mla_launch_wgmma5(const mla_fwd_args *a);
int mla_launch_combine(const mla_fwd_args *a);
int mla_launch_save(const mla_save_args *s);

/* Encode the pool's TMA map (wgmma): rows of 576 elements, boxes of 64
 * elements x box_rows rows, 128-byte swizzle.  `encode` is
 * cuTensorMapEncodeTiled (from cudaGetDriverEntryPoint).  Returns 0 or the
 * CUresult. */
int mla_tmap_encode(void *encode_fn, void *tmap128, const void *pool, int64_t num_slots,
                    int32_t box_rows);

#ifdef __cplusplus
}
#endif
#endif
