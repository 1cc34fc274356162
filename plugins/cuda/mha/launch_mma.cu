/* launch_mma.cu - launchers of the mma.sync decode and extend kernels, and of
 * the decode variants the sweep compares (docs/cuda.md, "decode performance"):
 * the smem-staged mma decode at other cp.async depths, and the register-fed
 * "reg" decode (kern_decode_reg.cuh) in its warp / buffer configurations.
 *
 * Extend kernel choice (read at create, process-wide like the environment):
 *   SGL_ATTN_MMA_EXTEND unset or "v2"  attn_extend_mma_v2_kernel (page-table
 *                                      reads batched, soft-cap and mask out of
 *                                      the per-score path; docs/cuda.md,
 *                                      "Prefill performance"): checked and
 *                                      timed at 1.8-2.1x v1 on the H200
 *                                      (bench/results/h200-2026-12-02/run3)
 *   SGL_ATTN_MMA_EXTEND=v1             attn_extend_mma_kernel
 * Anything else is read as v2. */
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "attn_launch.h"
#include "kern_decode_mma.cuh"
#include "kern_decode_reg.cuh"
#include "kern_extend_mma.cuh"

/* The decode depths beside the default that are compiled (d128 only: the
 * shape the sweep measures; other head dims keep their default). */
#define ATTN_DM_ALT_STAGES_D 128

template <int DT, int D, int S, int ORDER = 0> static cudaError_t set_decode_smem() {
    return cudaFuncSetAttribute(attn_decode_mma_kernel<DT, D, S, ORDER>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)decode_mma_cfg<D, S>::SMEM);
}

template <int DT, int D> static int setup_one() {
    cudaError_t e = set_decode_smem<DT, D, decode_mma_default_stages<D>()>();
    if constexpr (D == ATTN_DM_ALT_STAGES_D) {
        if (e == cudaSuccess) e = set_decode_smem<DT, D, decode_mma_default_stages<D>(), 1>();
        if (e == cudaSuccess) e = set_decode_smem<DT, D, 2>();
        if (e == cudaSuccess) e = set_decode_smem<DT, D, 4>();
    }
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_extend_mma_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)extend_mma_cfg<D>::SMEM);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_extend_mma_v2_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)extend_mma_cfg<D>::SMEM);
    return (int)e;
}

/* 1: SGL_ATTN_MMA_EXTEND=v1 at the last setup; else 2. */
static std::atomic<int> g_em_version{2};
static int em_version_env() {
    const char *v = getenv("SGL_ATTN_MMA_EXTEND");
    return v && !strcmp(v, "v1") ? 1 : 2;
}

template <int DT, int D, int S, int ORDER = 0>
static int decode_mma_s(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_mma_kernel<DT, D, S, ORDER><<<grid, ATTN_DM_THREADS, decode_mma_cfg<D, S>::SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

/* stages 0: the default depth; a depth not compiled for this head dim is
 * refused.  The heads-fastest order is compiled at d128 (default depth) only;
 * elsewhere it runs in the plain order. */
template <int DT, int D>
static int decode_mma(const attn_fwd *p, int grid_items, cudaStream_t st, int stages, int order) {
    constexpr int S0 = decode_mma_default_stages<D>();
    (void)order;
    if constexpr (D == ATTN_DM_ALT_STAGES_D) {
        if (order && (stages == 0 || stages == S0)) return decode_mma_s<DT, D, S0, 1>(p, grid_items, st);
        if (stages == 2) return decode_mma_s<DT, D, 2>(p, grid_items, st);
        if (stages == 4) return decode_mma_s<DT, D, 4>(p, grid_items, st);
    }
    if (stages == 0 || stages == S0) return decode_mma_s<DT, D, S0>(p, grid_items, st);
    return (int)cudaErrorInvalidValue;
}

template <int DT, int D, int NW, int NB>
static int decode_reg_k(const attn_fwd *p, int grid_items, cudaStream_t st, int order, int diag) {
    /* grid.y as the plan sized it: kv heads x blocks of 16 q heads (group <= 8: one) */
    const int hblocks = (p->group + ATTN_DR_HBLOCK - 1) / ATTN_DR_HBLOCK;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_reg_kernel<DT, D, NW, NB><<<grid, NW * 32, 0, st>>>(*p, order, diag);
    return (int)cudaGetLastError();
}

/* The (warps, buffers) configurations compiled; head dims 64 and 128. */
static int reg_config_ok(int d, int warps, int bufs) {
    if (d != 64 && d != 128) return 0;
    return (warps == 4 && (bufs == 1 || bufs == 2)) || (bufs == 2 && (warps == 2 || warps == 8));
}

template <int DT, int D>
static int decode_reg(const attn_fwd *p, int grid_items, cudaStream_t st, int warps, int bufs, int order, int diag) {
    if constexpr (D == 64 || D == 128) {
        if (p->group > ATTN_DR_HEADS) return (int)cudaErrorInvalidValue;
        if (warps == 4 && bufs == 2) return decode_reg_k<DT, D, 4, 2>(p, grid_items, st, order, diag);
        if (warps == 4 && bufs == 1) return decode_reg_k<DT, D, 4, 1>(p, grid_items, st, order, diag);
        if (warps == 2 && bufs == 2) return decode_reg_k<DT, D, 2, 2>(p, grid_items, st, order, diag);
        if (warps == 8 && bufs == 2) return decode_reg_k<DT, D, 8, 2>(p, grid_items, st, order, diag);
    }
    return (int)cudaErrorInvalidValue;
}

template <int DT, int D> static int extend_mma(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    if (g_em_version.load(std::memory_order_relaxed) == 2)
        attn_extend_mma_v2_kernel<DT, D><<<grid, ATTN_EM_THREADS, extend_mma_cfg<D>::SMEM, st>>>(*p);
    else
        attn_extend_mma_kernel<DT, D><<<grid, ATTN_EM_THREADS, extend_mma_cfg<D>::SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

#define ATTN_DISPATCH(fn, dtype, d, ...)                                                   \
    do {                                                                                   \
        if (dtype == ATTN_DT_BF16) {                                                       \
            if (d == 64) return fn<GC_BF16, 64>(__VA_ARGS__);                              \
            if (d == 128) return fn<GC_BF16, 128>(__VA_ARGS__);                            \
            if (d == 256) return fn<GC_BF16, 256>(__VA_ARGS__);                            \
        } else {                                                                           \
            if (d == 64) return fn<GC_F16, 64>(__VA_ARGS__);                               \
            if (d == 128) return fn<GC_F16, 128>(__VA_ARGS__);                             \
            if (d == 256) return fn<GC_F16, 256>(__VA_ARGS__);                             \
        }                                                                                  \
        return (int)cudaErrorInvalidValue;                                                 \
    } while (0)

static int mma_setup_kernels(int dtype, int d) { ATTN_DISPATCH(setup_one, dtype, d, ); }

extern "C" int attn_mma_setup(int dtype, int d) {
    const int e = mma_setup_kernels(dtype, d);
    if (!e) g_em_version.store(em_version_env());
    return e;
}

extern "C" int attn_launch_decode_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(decode_mma, dtype, d, p, grid_items, (cudaStream_t)stream, 0, 0);
}

/* The decode variants (attn_dispatch.c declares these). */
extern "C" int attn_decode_mma_stages_ok(int d, int stages) {
    return stages == 0 || (d == 64 && stages == 3) || (d == 128 && stages >= 2 && stages <= 4) ||
           (d == 256 && stages == 2);
}

extern "C" int attn_decode_reg_ok(int d, int group, int warps, int bufs) {
    return group >= 1 && group <= ATTN_DR_HEADS && reg_config_ok(d, warps, bufs);
}

extern "C" int attn_launch_decode_mma_cfg(int dtype, int d, const attn_fwd *p, int grid_items, void *stream,
                                          int stages, int order) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(decode_mma, dtype, d, p, grid_items, (cudaStream_t)stream, stages, order);
}

extern "C" int attn_launch_decode_reg(int dtype, int d, const attn_fwd *p, int grid_items, void *stream, int warps,
                                      int bufs, int order, int diag) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(decode_reg, dtype, d, p, grid_items, (cudaStream_t)stream, warps, bufs, order, diag);
}

extern "C" int attn_launch_extend_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(extend_mma, dtype, d, p, grid_items, (cudaStream_t)stream);
}
