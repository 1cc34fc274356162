/*
 * mla_sparse.h - DSA's sparse MLA on cuda_mla (mla_sparse.cu): every query
 * token attends over the pool slots its row of topk_indices names (-1: none),
 * absorbed MLA (576-dim scores, the first 512 dims as values).  Plain C: the
 * split choice is a pure function the tests call.
 *
 * One CTA takes (query token, block of heads, split of the row): the heads
 * are the M dimension of mma.sync (16 rows a block for up to 16 heads, else
 * 64; 32 for 16-bit pools on SM 9.0), the row's slots are gathered 32 at a
 * time by cp.async (2 or 3 tiles in flight), online softmax.
 * On SM 9.0, 16-bit pools at > 16 heads run 4-warp CTAs of 32 head rows with
 * 2 stages, small enough in registers and shared memory for two CTAs an SM,
 * so one CTA's gather and barriers overlap the other's MMAs.
 * With few tokens the row is split and mla_sparse.cu's combine merges the
 * partial rows (part_o / part_lse of the backend, [nsplit][T * hq]).
 * The pool is q's dtype [slots, 576], or FlashMLA's fp8 record (rec, bf16 q):
 * uint8 [slots, 656], 512 e4m3 values, 4 fp32 scales (value = e4m3 x the
 * scale of its block of 128), 64 bf16 RoPE values.
 */
#ifndef SGL_MLA_SPARSE_H
#define SGL_MLA_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_fault.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_SPARSE_BN 32         /* slots a tile */
#define MLA_SPARSE_MAX_SPLITS 32 /* the combine's weights fit shared memory */
#define MLA_SPARSE_MIN_TILES 4   /* a split takes at least this many tiles */
#define MLA_REC_BYTES 656        /* FlashMLA's fp8 record: 512 + 4 x 4 + 64 x 2 bytes */

typedef struct mla_sparse_args {
    const void *q;        /* [T, hq, 576] */
    void *out;            /* [T, hq, 512] */
    const void *pool;     /* [slots, 576], q's dtype; rec: [slots, 656] bytes */
    int64_t num_slots;
    const int32_t *topk;  /* [T, topk_k] */
    int32_t topk_k;
    int32_t hq, num_tokens;
    int32_t dt;              /* MLA_DT_BF16 / MLA_DT_F16: q, pool, out */
    int32_t nsplit;          /* 1: out directly; else partials and the combine */
    int32_t tiles_per_split; /* of MLA_SPARSE_BN slots */
    int32_t stages;          /* mla_sparse_stages */
    float scale_log2;        /* sm_scale * log2(e) */
    float *part_o, *part_lse;
    void *stream;
    sgl_gpu_fault_ref fault; /* where a slot outside the pool is noted */
    int32_t rec;             /* 1: the pool is FlashMLA's fp8 record (dt MLA_DT_BF16) */
    int32_t ctas;            /* CTAs an SM the kernel is shaped for: mla_sparse_ctas */
} mla_sparse_args;

/* CTAs an SM the kernel for hq heads is shaped for on a device of SM major
 * sm_major: 2 for 16-bit pools (rec 0) at > 16 heads on SM 9.0, whose 228 KB
 * an SM hold two; the 16-row kernel, the record's and SM 8.x's keep one. */
static inline int32_t mla_sparse_ctas(int32_t hq, int32_t rec, int32_t sm_major) {
    return sm_major == 9 && !rec && hq > 16 ? 2 : 1;
}

/* Head rows a CTA takes for hq heads: 16 up to 16 heads, else 64, or 32
 * where two CTAs share an SM (ctas 2). */
static inline int32_t mla_sparse_rows(int32_t hq, int32_t ctas) { return hq <= 16 ? 16 : ctas >= 2 ? 32 : 64; }

/* Splits of each row: enough CTAs for one wave of the device's SMs (ctas
 * of them an SM) where the tokens alone give fewer, each split
 * MLA_SPARSE_MIN_TILES tiles or more, the partials within part_rows.
 * Writes the tiles a split takes.  Depends on the shape only (a captured
 * graph replays any indices). */
static inline int32_t mla_sparse_splits(int32_t t, int32_t hq, int64_t topk_k, int32_t sm_count, int32_t ctas,
                                        int64_t part_rows, int32_t *tiles_per_split) {
    const int64_t tiles = (topk_k + MLA_SPARSE_BN - 1) / MLA_SPARSE_BN;
    const int32_t rows = mla_sparse_rows(hq, ctas);
    const int64_t blocks = (int64_t)t * ((hq + rows - 1) / rows);
    const int64_t slots = (int64_t)(sm_count > 0 ? sm_count : 1) * (ctas > 1 ? ctas : 1);
    int64_t n = blocks > 0 ? slots / blocks : 1;
    if (n > tiles / MLA_SPARSE_MIN_TILES) n = tiles / MLA_SPARSE_MIN_TILES;
    if (n > MLA_SPARSE_MAX_SPLITS) n = MLA_SPARSE_MAX_SPLITS;
    if ((int64_t)t * hq > 0 && n > part_rows / ((int64_t)t * hq)) n = part_rows / ((int64_t)t * hq);
    if (n < 1) n = 1;
    const int64_t per = (tiles + n - 1) / n;
    *tiles_per_split = (int32_t)(per > 0 ? per : 1);
    return per > 0 ? (int32_t)((tiles + per - 1) / per) : 1;
}

/* Stages of the kernel that runs for hq heads (rec: over the fp8 record;
 * ctas: mla_sparse_ctas) on a device with smem_optin bytes of shared memory
 * per block: 3 or 2 (ctas 2: 2), 0 when none fits. */
int32_t mla_sparse_stages(int32_t hq, size_t smem_optin, int32_t rec, int32_t ctas);
/* Dynamic shared memory of that kernel (0: no such instantiation). */
size_t mla_sparse_smem_bytes(int32_t hq, int32_t stages, int32_t rec, int32_t ctas);
/* Kernel attributes (dynamic shared memory) of the instantiations that fit
 * smem_optin bytes; 0 or a cudaError_t. */
int mla_sparse_init(size_t smem_optin);
/* The attention kernel and, for nsplit > 1, the combine; 0 or a cudaError_t. */
int mla_launch_sparse(const mla_sparse_args *a);

#ifdef __cplusplus
}
#endif
#endif
