/*
 * extend_wgmma_sm90.cu - the sm_90a extend (extend_wgmma_sm90.cuh): the
 * availability probe, the per-create setup, the launcher.
 *
 * Safe to try: attn_wgmma_available() says 1 only on an SM 9.0 device that
 * loads this binary's sm_90a image (a __device__ flag initialised per
 * compilation pass tells which image the runtime picked), and create chooses
 * this kernel only then (cuda_attn_choice.c), so the empty sm_80 / compute_90
 * stub never runs.  The kernel serves every extend feature cuda_attn claims
 * (window, soft-cap, sinks, cross, any page size, ragged batches): no
 * per-call fallback, which matters because the plan's 128-row items would be
 * half-served by the 64-row mma kernel.
 *
 * Two kernels, one source: the TMA producer for pages of a multiple of 16
 * tokens (the caller passes the pool's tensor maps), the cp.async producer
 * for every other page size, and for all of them when the TMA kernel's setup
 * or the driver's map encoder is missing.
 *
 * Dual chunk attention (dual_chunk.h) runs on the same kernel body with its
 * template parameter DCA: its own setup and launcher at the end.
 */
#include "cuda_launch.h"
#include "dual_chunk.h"
#include "extend_wgmma_sm90.cuh"

#if (defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)) || defined(LK_EMU)
#define ATTN_WG_IMAGE 1
#else
#define ATTN_WG_IMAGE 0
#endif
/* 1 in the sm_90a image (and the CPU emulator's build), 0 in the sm_80 and
 * compute_90 ones. */
__device__ int attn_wgmma_image_flag = ATTN_WG_IMAGE;

/* The head dim whose kernels pair q heads (extend_wg_cfg); 64 and 256 run
 * without head pairs. */
#define ATTN_WG_D 128

extern "C" int attn_wgmma_available(int device) {
    int major = 0, minor = 0, cur = -1, flag = 0;
    if (device < 0 || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (major != 9 || minor != 0) return 0;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (cur != device && cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const cudaError_t e = cudaMemcpyFromSymbol(&flag, attn_wgmma_image_flag, sizeof flag);
    if (cur != device) (void)cudaSetDevice(cur);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return flag == 1;
}

/* Dynamic shared memory limit, and the register count the setmaxnreg split
 * assumes: the block starts with 384 x ATTN_WG_REGS_ENTRY registers and the
 * consumers' setmaxnreg.inc waits for exactly what the producer gives back;
 * a kernel built with fewer would hang there. */
template <int DQK, int DV = DQK, int NQ = 1, bool F8 = false, int BNT = wg_paged_bn(DQK), typename K>
static int setup_fn(K fn) {
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, fn);
    if (e != cudaSuccess) return (int)e;
    if (fa.numRegs != ATTN_WG_REGS_ENTRY) return (int)cudaErrorInvalidDeviceFunction;
    return (int)cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)extend_wg_cfg<DQK, DV, NQ, F8, BNT>::SMEM);
}

/* The persistent grid: one block per SM, fewer when the batch has fewer
 * (item, head) pairs. */
static int wg_blocks(int grid_items, int heads, int sm_count) {
    const long long pairs = (long long)grid_items * heads;
    return pairs < sm_count ? (int)pairs : sm_count;
}

/* Every non-ragged instantiation the launcher may pick at head dim D:
 * TREE x HP at 128; TREE alone at 64 and 256 (no head pairs there, a verify
 * batch runs one q head a pair); one producer. */
template <int DT, int D, bool TMA_P> static int setup_all() {
    constexpr int TN = ATTN_WG_TREE_NONE, TP = ATTN_WG_TREE_PLAIN;
    constexpr bool PAIRS = D == ATTN_WG_D;
    if constexpr (TMA_P) {
        int e = setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, D, false, TN, false>);
        if (!e) e = setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, D, false, TP, false>);
        if constexpr (PAIRS) {
            if (!e) e = setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, D, false, TN, true>);
            if (!e) e = setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, D, false, TP, true>);
        }
        return e;
    } else {
        int e = setup_fn<D>(attn_extend_wgmma_kernel<DT, D, D, false, TN, false>);
        if (!e) e = setup_fn<D>(attn_extend_wgmma_kernel<DT, D, D, false, TP, false>);
        if constexpr (PAIRS) {
            if (!e) e = setup_fn<D>(attn_extend_wgmma_kernel<DT, D, D, false, TN, true>);
            if (!e) e = setup_fn<D>(attn_extend_wgmma_kernel<DT, D, D, false, TP, true>);
        }
        return e;
    }
}

template <int DT, int D> static int setup(int *tma_ok) {
    const int e = setup_all<DT, D, false>();
    *tma_ok = !e && setup_all<DT, D, true>() == 0;
    return e;
}

/* Head dims 64 and 256: d256 on 64-column tiles
 * two stages deep (Q 64 KB + 2 x 64 KB), d64 on 128-column ones four deep
 * (Q 16 KB + 4 x 32 KB); the d128 kernel's configuration stays as it was. */
using d64_cfg = extend_wg_cfg<64>;
using d128_cfg = extend_wg_cfg<128>;
using d256_cfg = extend_wg_cfg<256>;
static_assert(d128_cfg::BN == 128 && d128_cfg::STAGES == 3 && extend_wg_cfg<128, 128, 3>::STAGES == 2 &&
                  extend_wg_cfg<128, 128, 1, true>::STAGES == 2,
              "the head dim 128 kernels keep their tiles and rings");
static_assert(d64_cfg::BN == 128 && d64_cfg::STAGES == 4 && d64_cfg::SMEM <= ATTN_WG_SMEM_MAX, "d64: four stages");
static_assert(d256_cfg::BN == 64 && d256_cfg::STAGES == 2 && d256_cfg::SMEM <= ATTN_WG_SMEM_MAX,
              "d256: two 64-column stages beside the 64 KB Q tile");

/* Create time, on the create's device (current), which attn_wgmma_available
 * accepted.  Head dims 64, 128 and 256. */
extern "C" int attn_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok) {
    *tma_ok = 0;
    const bool bf = dtype == ATTN_DT_BF16;
    switch (head_dim) {
    case 64: return bf ? setup<GC_BF16, 64>(tma_ok) : setup<GC_F16, 64>(tma_ok);
    case 128: return bf ? setup<GC_BF16, 128>(tma_ok) : setup<GC_F16, 128>(tma_ok);
    case 256: return bf ? setup<GC_BF16, 256>(tma_ok) : setup<GC_F16, 256>(tma_ok);
    default: return (int)cudaErrorInvalidValue;
    }
}

template <int DT, int D, int TREE, bool HP>
static int launch_tree(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    const size_t sm = extend_wg_cfg<D>::SMEM;
    if (tm)
        attn_extend_wgmma_tma_kernel<DT, D, D, false, TREE, HP><<<blocks, ATTN_WG_THREADS, sm, st>>>(*p, *tm);
    else
        attn_extend_wgmma_kernel<DT, D, D, false, TREE, HP><<<blocks, ATTN_WG_THREADS, sm, st>>>(*p);
    return (int)cudaGetLastError();
}

/* A batch with a tree mask runs the TREE instantiation (no mask before
 * each request's first word that is not full, which the pack gave at
 * p->mask_first_off; the later words loaded one tile ahead of their use),
 * any other the one without mask code. */
template <int DT, int D, bool HP>
static int launch_hp(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    if (!p->mask) return launch_tree<DT, D, ATTN_WG_TREE_NONE, HP>(p, tm, blocks, st);
    if (p->mask_first_off <= 0) return (int)cudaErrorInvalidValue;
    return launch_tree<DT, D, ATTN_WG_TREE_PLAIN, HP>(p, tm, blocks, st);
}

template <int DT, int D>
static int launch(const attn_fwd *p, const attn_kv_tmaps *tm, bool hp, int blocks, cudaStream_t st) {
    if constexpr (D == ATTN_WG_D)
        return hp ? launch_hp<DT, D, true>(p, tm, blocks, st) : launch_hp<DT, D, false>(p, tm, blocks, st);
    else
        return launch_hp<DT, D, false>(p, tm, blocks, st);
}

template <int D>
static int launch_d(int dtype, const attn_fwd *p, const attn_kv_tmaps *tm, bool hp, int blocks, cudaStream_t st) {
    return dtype == ATTN_DT_BF16 ? launch<GC_BF16, D>(p, tm, hp, blocks, st) : launch<GC_F16, D>(p, tm, hp, blocks, st);
}

/* The persistent grid (wg_blocks); the kernel reads the planned item count
 * from device memory, so a captured graph replays any batch up to the
 * capture's bound.  tm: the TMA kernel with these maps (set up at create),
 * NULL the cp.async one. */
extern "C" int attn_launch_extend_wgmma(int dtype, int d, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                                        int grid_items, void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    if ((d != 64 && d != ATTN_WG_D && d != 256) || sm_count <= 0) return (int)cudaErrorInvalidValue;
    /* head pairs (HP, head dim 128): a verify batch (mask_q: its tokens per
     * request, the rows of each of its items) of <= 64 rows per item and an
     * even GQA group runs both heads of one kv head in a pair, one per consumer
     * warpgroup on the shared K/V tiles; an odd group or longer items keep one
     * head a pair */
    const bool hp = d == ATTN_WG_D && p->mask_q > 0 && p->mask_q <= ATTN_WG_BM / 2 && p->group % 2 == 0;
    const int blocks = wg_blocks(grid_items, hp ? p->hq / 2 : p->hq, sm_count);
    const cudaStream_t st = (cudaStream_t)stream;
    if (d == 64) return launch_d<64>(dtype, p, tm, false, blocks, st);
    if (d == 256) return launch_d<256>(dtype, p, tm, false, blocks, st);
    return launch_d<ATTN_WG_D>(dtype, p, tm, hp, blocks, st);
}

/* forward_ragged on the same kernel (RAGGED): qk 128 or 192, v 128.  Both
 * producers are set up at create; *tma_ok as above.  qk 192 runs 64-column
 * K/V tiles four stages deep (attn_ragged192_kernel: Q 48 KB + 4 x 40 KB),
 * where 128-column ones fit two. */
using rg192_cfg = extend_wg_cfg<192, 128, 1, false, 64>;
static_assert(rg192_cfg::STAGES == 4 && rg192_cfg::SMEM <= ATTN_WG_SMEM_MAX, "four 40 KB stages beside Q");

template <int DT> static int ragged128_setup(int *tma_ok) {
    const int e = setup_fn<128, 128>(attn_extend_wgmma_kernel<DT, 128, 128, true>);
    *tma_ok = !e && setup_fn<128, 128>(attn_extend_wgmma_tma_kernel<DT, 128, 128, true>) == 0;
    return e;
}

template <int DT> static int ragged192_setup(int *tma_ok) {
    const int e = setup_fn<192, 128, 1, false, 64>(attn_ragged192_kernel<DT>);
    *tma_ok = !e && setup_fn<192, 128, 1, false, 64>(attn_ragged192_tma_kernel<DT>) == 0;
    return e;
}

extern "C" int attn_ragged_wgmma_setup(int dtype, int dqk, int dv, int *tma_ok) {
    *tma_ok = 0;
    if (dv != 128 || (dqk != 128 && dqk != 192)) return (int)cudaErrorInvalidValue;
    if (dtype == ATTN_DT_BF16) return dqk == 192 ? ragged192_setup<GC_BF16>(tma_ok) : ragged128_setup<GC_BF16>(tma_ok);
    return dqk == 192 ? ragged192_setup<GC_F16>(tma_ok) : ragged128_setup<GC_F16>(tma_ok);
}

template <int DT> static int ragged128_launch(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    constexpr size_t SMEM = extend_wg_cfg<128, 128>::SMEM;
    if (tm)
        attn_extend_wgmma_tma_kernel<DT, 128, 128, true><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p, *tm);
    else
        attn_extend_wgmma_kernel<DT, 128, 128, true><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

template <int DT> static int ragged192_launch(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    constexpr size_t SMEM = rg192_cfg::SMEM;
    if (tm)
        attn_ragged192_tma_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p, *tm);
    else
        attn_ragged192_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

/* As attn_launch_extend_wgmma; tm: the ragged K / V maps (attn_tmap_ragged)
 * or NULL for the cp.async producer. */
extern "C" int attn_launch_ragged_wgmma(int dtype, int dqk, int dv, const attn_fwd *p, const attn_kv_tmaps *tm,
                                        int sm_count, int grid_items, void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    if (dv != 128 || (dqk != 128 && dqk != 192) || sm_count <= 0) return (int)cudaErrorInvalidValue;
    const int blocks = wg_blocks(grid_items, p->hq, sm_count);
    const cudaStream_t st = (cudaStream_t)stream;
    if (dtype == ATTN_DT_BF16)
        return dqk == 192 ? ragged192_launch<GC_BF16>(p, tm, blocks, st) : ragged128_launch<GC_BF16>(p, tm, blocks, st);
    return dqk == 192 ? ragged192_launch<GC_F16>(p, tm, blocks, st) : ragged128_launch<GC_F16>(p, tm, blocks, st);
}

/* The direct extend's new-token pass (attn_extend_wgmma_new_kernel:
 * the ragged body at 128 / 128 after a programmatic-dependent trigger): both
 * producers, as ragged_setup. */
template <int DT> static int new_setup(int *tma_ok) {
    const int e = setup_fn<ATTN_WG_D>(attn_extend_wgmma_new_kernel<DT>);
    *tma_ok = !e && setup_fn<ATTN_WG_D>(attn_extend_wgmma_new_tma_kernel<DT>) == 0;
    return e;
}

extern "C" int attn_new_wgmma_setup(int dtype, int *tma_ok) {
    *tma_ok = 0;
    return dtype == ATTN_DT_BF16 ? new_setup<GC_BF16>(tma_ok) : new_setup<GC_F16>(tma_ok);
}

template <int DT> static int new_launch(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    constexpr size_t SMEM = extend_wg_cfg<ATTN_WG_D>::SMEM;
    if (tm)
        attn_extend_wgmma_new_tma_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p, *tm);
    else
        attn_extend_wgmma_new_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

/* As attn_launch_ragged_wgmma at qk / v 128 (a plain launch: the kernel is
 * the primary of the save-KV launched after it, attn_launch_save_kv_after). */
extern "C" int attn_launch_new_wgmma(int dtype, const attn_fwd *p, const attn_kv_tmaps *tm, int sm_count,
                                     int grid_items, void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    if (sm_count <= 0) return (int)cudaErrorInvalidValue;
    const int blocks = wg_blocks(grid_items, p->hq, sm_count);
    const cudaStream_t st = (cudaStream_t)stream;
    return dtype == ATTN_DT_BF16 ? new_launch<GC_BF16>(p, tm, blocks, st) : new_launch<GC_F16>(p, tm, blocks, st);
}

/* Dual chunk attention's extend (the DCA instantiations): both producers,
 * as attn_extend_wgmma_setup; head dim 128, 16-bit pools. */
template <int DT> static int dca_setup(int *tma_ok) {
    const int e = setup_fn<ATTN_WG_D, ATTN_WG_D, 3>(attn_extend_wgmma_dca_kernel<DT>);
    *tma_ok = !e && setup_fn<ATTN_WG_D, ATTN_WG_D, 3>(attn_extend_wgmma_dca_tma_kernel<DT>) == 0;
    return e;
}

extern "C" int attn_dual_chunk_extend_wgmma_setup(int dtype, int head_dim, int *tma_ok) {
    *tma_ok = 0;
    if (head_dim != ATTN_WG_D) return (int)cudaErrorInvalidValue;
    return dtype == ATTN_DT_BF16 ? dca_setup<GC_BF16>(tma_ok) : dca_setup<GC_F16>(tma_ok);
}

template <int DT>
static int dca_launch(const attn_fwd *p, const attn_dca *dc, const attn_kv_tmaps *tm, int blocks, cudaStream_t st) {
    constexpr size_t SMEM = extend_wg_cfg<ATTN_WG_D, ATTN_WG_D, 3>::SMEM;
    if (tm)
        attn_extend_wgmma_dca_tma_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p, *tm, *dc);
    else
        attn_extend_wgmma_dca_kernel<DT><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p, *dc);
    return (int)cudaGetLastError();
}

/* As attn_launch_extend_wgmma, over the plan's 128-row items. */
extern "C" int attn_launch_dual_chunk_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, const attn_dca *dc,
                                                   const attn_kv_tmaps *tm, int sm_count, int grid_items,
                                                   void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    if (head_dim != ATTN_WG_D || sm_count <= 0) return (int)cudaErrorInvalidValue;
    const int blocks = wg_blocks(grid_items, p->hq, sm_count);
    const cudaStream_t st = (cudaStream_t)stream;
    return dtype == ATTN_DT_BF16 ? dca_launch<GC_BF16>(p, dc, tm, blocks, st)
                                 : dca_launch<GC_F16>(p, dc, tm, blocks, st);
}

/* The fp8 split extend's prefix pass on wgmma (its only form on SM 9.0:
 * attn_extend_wgmma_fp8_kernel, the F8 body with its byte ring): q / out
 * dtype, head dim 128, F8's shared memory (the byte ring in the third
 * 16-bit stage's place). */
using fp8_cfg = extend_wg_cfg<ATTN_WG_D, ATTN_WG_D, 1, true>;
static_assert(fp8_cfg::SMEM <= ATTN_WG_SMEM_MAX, "F8's rings fit the SM 9.0 opt-in shared memory");

extern "C" int attn_extend_wgmma_fp8_setup(int dtype) {
    return dtype == ATTN_DT_BF16 ? setup_fn<ATTN_WG_D, ATTN_WG_D, 1, true>(attn_extend_wgmma_fp8_kernel<GC_BF16>)
                                 : setup_fn<ATTN_WG_D, ATTN_WG_D, 1, true>(attn_extend_wgmma_fp8_kernel<GC_F16>);
}

/* As attn_launch_extend_wgmma over the split plan's prefix items (ATTN_WG_BM
 * rows each: the plan's block_pre). */
extern "C" int attn_launch_extend_wgmma_fp8(int dtype, const attn_fwd *p, int sm_count, int grid_items,
                                            void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    if (sm_count <= 0) return (int)cudaErrorInvalidValue;
    const int blocks = wg_blocks(grid_items, p->hq, sm_count);
    constexpr size_t SMEM = fp8_cfg::SMEM;
    const cudaStream_t st = (cudaStream_t)stream;
    if (dtype == ATTN_DT_BF16)
        attn_extend_wgmma_fp8_kernel<GC_BF16><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p);
    else
        attn_extend_wgmma_fp8_kernel<GC_F16><<<blocks, ATTN_WG_THREADS, SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}
