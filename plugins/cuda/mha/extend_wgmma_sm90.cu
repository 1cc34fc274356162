/*
 * extend_wgmma_sm90.cu - the sm_90a extend path (extend_wgmma_sm90.cuh): the
 * availability probe, per-create setup, the launcher.
 *
 * Safe to try: attn_wgmma_available() says 1 only on an SM 9.0 device that
 * loads this binary's sm_90a image (a __device__ flag initialised per
 * compilation pass tells which image the runtime picked), and the launcher
 * refuses (cudaErrorInvalidDeviceFunction, nothing launched) on a device its
 * setup did not accept, so the empty sm_80 / compute_90 stub never runs.
 * The kernel serves every extend feature cuda_attn claims (window, soft-cap,
 * sinks, cross, any page size, ragged batches): no per-call fallback, which
 * matters because the wgmma plan's 128-row items would be half-served by the
 * 64-row mma kernel.
 *
 * Knobs (read at create, process-wide like the environment):
 *   SGL_ATTN_WGMMA_OVERLAP=1   the consumer with the intra-warpgroup softmax /
 *                              P.V overlap (a second kernel).  Default: the
 *                              plain consumer, the fastest on the 2026-12-02
 *                              H200 run (417 against 350 TFLOP/s at s = 16k).
 *   SGL_ATTN_WGMMA_PINGPONG=0  no turn order between the two consumer
 *                              warpgroups (a kernel flag; overlap variant only)
 *   SGL_ATTN_WGMMA_V2=0        version 1 of the kernel.  Default: version 2 at
 *                              head dim 128 (other head dims keep version 1):
 *                              page-table reads one tile ahead in the producer,
 *                              branch-free masks, and FA3's rescale order in the
 *                              overlapped consumer (extend_wgmma_sm90.cuh);
 *                              checked and timed on the H200 (run 3: 1.00-1.04x
 *                              version 1 at every length).
 *   SGL_ATTN_WGMMA_PROBE=noload  bench probe with SGL_ATTN_WGMMA_V2=1: the
 *                              producer copies no K/V (WRONG outputs): the
 *                              kernel's time without its gather.
 *   SGL_ATTN_WGMMA_L2SEC=N     work order in sections of N KV heads (0 or
 *                              unset: item-major over all heads): the blocks
 *                              running at once read few heads' pages, which
 *                              stay in L2 (extend_wgmma_sm90.cuh wg_work_split)
 *   SGL_ATTN_WGMMA_FUSED_SAVE=1  (opt-in; needs version 2, head dim 128)
 *                              forward_extend's save_kv_cache runs inside the
 *                              kernel (a third kernel, the plain consumer
 *                              whatever SGL_ATTN_WGMMA_OVERLAP says): new
 *                              tokens' keys come from the input k/v, and the
 *                              owner pair writes them into the pool
 *                              (extend_wgmma_sm90.cuh wg_fsave_at); the host
 *                              skips attn_save_kv_kernel only when
 *                              attn_wgmma_fused_save says yes.
 *   SGL_ATTN_WGMMA_TMA=0       the cp.async-only producer.  Default (needs
 *                              version 2, head dim 128; 1.02-1.16x on the H200,
 *                              bench/results/h200-2026-12-03/run7-*): the
 *                              producer brings whole 16-row boxes of the pool
 *                              by TMA (a fourth kernel, the maps in its
 *                              parameters; extend_wgmma_sm90.cuh wg_tma_boxes);
 *                              the host launches it (attn_tmap.h) for pages of
 *                              a multiple of 16 tokens and no fused save.
 */
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "attn_launch.h"
#include "extend_wgmma_sm90.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_WG_IMAGE 1
#else
#define ATTN_WG_IMAGE 0
#endif
/* 1 in the sm_90a image, 0 in the sm_80 and compute_90 ones. */
__device__ int attn_wgmma_image_flag = ATTN_WG_IMAGE;

#define ATTN_WG_MAX_DEVICES 256
/* Per device: 0 not set up, else the SM count (the persistent grid). */
static std::atomic<int> g_wg_sms[ATTN_WG_MAX_DEVICES];
static std::atomic<int> g_wg_overlap{0};
static std::atomic<int> g_wg_flags{ATTN_WG_PINGPONG};
static std::atomic<int> g_wg_v2{0};
/* KV heads per section of the work order (SGL_ATTN_WGMMA_L2SEC; 0 item-major). */
static std::atomic<int> g_wg_l2sec{0};
/* Fused save set up: bit dtype (ATTN_DT_*), head dim ATTN_WG_V2_D only. */
static std::atomic<int> g_wg_fused{0};
/* TMA kernels set up: bit dtype, head dim ATTN_WG_V2_D only. */
static std::atomic<int> g_wg_tma{0};

/* The head dim version 2 is compiled for. */
#define ATTN_WG_V2_D 128

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

/* Dynamic shared memory limit of both variants, and the register count the
 * setmaxnreg split assumes: the block starts with 384 x ATTN_WG_REGS_ENTRY
 * registers and the consumers' setmaxnreg.inc waits for exactly what the
 * producer gives back; a kernel built with fewer would hang there. */
template <int D, typename K> static int setup_fn(K fn) {
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, fn);
    if (e != cudaSuccess) return (int)e;
    if (fa.numRegs != ATTN_WG_REGS_ENTRY) return (int)cudaErrorInvalidDeviceFunction;
    return (int)cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)extend_wg_cfg<D>::SMEM);
}
template <int DT, int D, bool OVL, int V = 0> static int setup_kernel() {
    return setup_fn<D>(attn_extend_wgmma_kernel<DT, D, OVL, V>);
}
/* d256 runs the plain consumer: its ring has 2 stages (the overlapped consumer
 * needs 3, extend_wgmma_sm90.cuh) and its O alone is 128 registers. */
template <int D> static constexpr bool overlap_ok() { return extend_wg_cfg<D>::STAGES >= 3; }

/* v2: also set up version 2 (head dim ATTN_WG_V2_D only; a setup that fails
 * leaves version 1 in use).  fused (with v2): also the fused-save kernel; its
 * setup failing only leaves it off (*fused_ok 0), the separate save runs.
 * tma (with v2): the TMA kernels likewise (*tma_ok). */
template <int DT, int D> static int setup_one(int v2, int fused, int *fused_ok, int tma, int *tma_ok) {
    int e = 0;
    *fused_ok = 0;
    *tma_ok = 0;
    if constexpr (overlap_ok<D>()) e = setup_kernel<DT, D, true>();
    if (!e) e = setup_kernel<DT, D, false>();
    if constexpr (D == ATTN_WG_V2_D)
        if (!e && v2) {
            e = setup_kernel<DT, D, true, 1>();
            if (!e) e = setup_kernel<DT, D, false, 1>();
            if (!e && fused) *fused_ok = setup_kernel<DT, D, false, 2>() == 0;
            if (!e && tma)
                *tma_ok = setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, true>) == 0 &&
                          setup_fn<D>(attn_extend_wgmma_tma_kernel<DT, D, false>) == 0;
        }
    (void)fused;
    (void)tma;
    return e;
}

template <int DT, int D, int V>
static int extend_wg_v(const attn_fwd *p, int blocks, int ovl, int flags, cudaStream_t st) {
    if constexpr (overlap_ok<D>())
        if (ovl) {
            attn_extend_wgmma_kernel<DT, D, true, V><<<blocks, ATTN_WG_THREADS, extend_wg_cfg<D>::SMEM, st>>>(*p, flags);
            return (int)cudaGetLastError();
        }
    attn_extend_wgmma_kernel<DT, D, false, V><<<blocks, ATTN_WG_THREADS, extend_wg_cfg<D>::SMEM, st>>>(*p, flags);
    return (int)cudaGetLastError();
}

/* p->save_k set: the fused-save kernel or nothing (the host skipped the
 * separate save, so no other kernel may run in its place). */
template <int DT, int D>
static int extend_wg(const attn_fwd *p, int blocks, int ovl, int flags, int v2, cudaStream_t st) {
    if constexpr (D == ATTN_WG_V2_D) {
        if (p->save_k) {
            if (!(g_wg_fused.load() & (1 << (DT == GC_BF16 ? ATTN_DT_BF16 : ATTN_DT_F16))))
                return (int)cudaErrorInvalidValue;
            attn_extend_wgmma_kernel<DT, D, false, 2><<<blocks, ATTN_WG_THREADS, extend_wg_cfg<D>::SMEM, st>>>(*p, flags);
            return (int)cudaGetLastError();
        }
        if (v2) return extend_wg_v<DT, D, 1>(p, blocks, ovl, flags, st);
    }
    if (p->save_k) return (int)cudaErrorInvalidValue;
    (void)v2;
    return extend_wg_v<DT, D, 0>(p, blocks, ovl, flags, st);
}

#define ATTN_WG_DISPATCH(fn, dtype, d, ...)                                                \
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

static int setup_kernels(int dtype, int d, int v2, int fused, int *fused_ok, int tma, int *tma_ok) {
    ATTN_WG_DISPATCH(setup_one, dtype, d, v2, fused, fused_ok, tma, tma_ok);
}

/* The TMA kernel (head dim ATTN_WG_V2_D; the host checked p->save_k is NULL). */
template <int DT, int D>
static int extend_wg_tma(const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, int ovl, int flags, cudaStream_t st) {
    if constexpr (D == ATTN_WG_V2_D) {
        if (p->save_k || !(g_wg_tma.load() & (1 << (DT == GC_BF16 ? ATTN_DT_BF16 : ATTN_DT_F16))))
            return (int)cudaErrorInvalidValue;
        if (ovl)
            attn_extend_wgmma_tma_kernel<DT, D, true>
                <<<blocks, ATTN_WG_THREADS, extend_wg_cfg<D>::SMEM, st>>>(*p, flags, *tm);
        else
            attn_extend_wgmma_tma_kernel<DT, D, false>
                <<<blocks, ATTN_WG_THREADS, extend_wg_cfg<D>::SMEM, st>>>(*p, flags, *tm);
        return (int)cudaGetLastError();
    }
    (void)p;
    (void)tm;
    (void)blocks;
    (void)ovl;
    (void)flags;
    (void)st;
    return (int)cudaErrorInvalidValue;
}

static int launch(int dtype, int d, const attn_fwd *p, int blocks, int ovl, int flags, int v2, cudaStream_t st) {
    ATTN_WG_DISPATCH(extend_wg, dtype, d, p, blocks, ovl, flags, v2, st);
}
static int launch_tma(int dtype, int d, const attn_fwd *p, const attn_kv_tmaps *tm, int blocks, int ovl, int flags,
                      cudaStream_t st) {
    ATTN_WG_DISPATCH(extend_wg_tma, dtype, d, p, tm, blocks, ovl, flags, st);
}

/* Default on: anything but "0".  Default off: only "1". */
static int env_on(const char *name) {
    const char *v = getenv(name);
    return !(v && !strcmp(v, "0"));
}
static int env_is1(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

/* Create time, on the create's device (current): shared-memory limits, the
 * SM count, the overlap knob.  Refuses a device attn_wgmma_available rejects. */
extern "C" int attn_wgmma_setup(int dtype, int head_dim) {
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return (int)e;
    if (dev >= ATTN_WG_MAX_DEVICES || !attn_wgmma_available(dev)) return (int)cudaErrorInvalidDeviceFunction;
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return (int)e;
    const int v2 = env_on("SGL_ATTN_WGMMA_V2");
    int fused_ok = 0, tma_ok = 0;
    const int rc = setup_kernels(dtype, head_dim, v2, env_is1("SGL_ATTN_WGMMA_FUSED_SAVE"), &fused_ok,
                                 env_on("SGL_ATTN_WGMMA_TMA"), &tma_ok);
    if (rc) return rc;
    if (fused_ok && head_dim == ATTN_WG_V2_D && (dtype == ATTN_DT_F16 || dtype == ATTN_DT_BF16))
        g_wg_fused.fetch_or(1 << dtype);
    if (tma_ok && head_dim == ATTN_WG_V2_D && (dtype == ATTN_DT_F16 || dtype == ATTN_DT_BF16))
        g_wg_tma.fetch_or(1 << dtype);
    g_wg_overlap.store(env_is1("SGL_ATTN_WGMMA_OVERLAP"));
    const char *probe = getenv("SGL_ATTN_WGMMA_PROBE");
    g_wg_flags.store((env_on("SGL_ATTN_WGMMA_PINGPONG") ? ATTN_WG_PINGPONG : 0) |
                     (probe && !strcmp(probe, "noload") ? ATTN_WG_PROBE_NOLOAD : 0));
    g_wg_v2.store(v2 && head_dim == ATTN_WG_V2_D);
    const char *sec = getenv("SGL_ATTN_WGMMA_L2SEC");
    g_wg_l2sec.store(sec && *sec ? atoi(sec) : 0);
    g_wg_sms[dev].store(sms > 0 ? sms : 1);
    return 0;
}

/* 1: forward_extend may hand this launcher a save (p->save_k) for dtype /
 * head_dim instead of running attn_save_kv_kernel first. */
extern "C" int attn_wgmma_fused_save(int dtype, int head_dim) {
    return head_dim == ATTN_WG_V2_D && (dtype == ATTN_DT_F16 || dtype == ATTN_DT_BF16) &&
           ((g_wg_fused.load() >> dtype) & 1);
}

extern "C" int attn_wgmma_tma(int dtype, int head_dim) {
    return head_dim == ATTN_WG_V2_D && (dtype == ATTN_DT_F16 || dtype == ATTN_DT_BF16) &&
           ((g_wg_tma.load() >> dtype) & 1);
}

/* One persistent block per SM (fewer when the batch has fewer (item, head)
 * pairs); the kernel reads the planned item count from device memory, so a
 * captured graph replays any batch up to the capture's bound.  tm: the TMA
 * kernel with these maps (attn_launch_extend_wgmma_tma), NULL the others. */
static int launch_extend(int dtype, int d, const attn_fwd *p, const attn_kv_tmaps *tm, int grid_items, void *stream) {
    if (grid_items <= 0 || p->hq <= 0) return 0;
    int dev = 0;
    const cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return (int)e;
    const int sms = dev >= 0 && dev < ATTN_WG_MAX_DEVICES ? g_wg_sms[dev].load() : 0;
    if (sms <= 0) return (int)cudaErrorInvalidDeviceFunction; /* not set up here: never start the stub */
    const long long pairs = (long long)grid_items * p->hq;
    const int blocks = pairs < sms ? (int)pairs : sms;
    attn_fwd q = *p;
    const long long sec = (long long)g_wg_l2sec.load() * p->group;
    q.l2_sec_heads = sec > 0 && sec < p->hq ? (int32_t)sec : 0;
    if (tm) return launch_tma(dtype, d, &q, tm, blocks, g_wg_overlap.load(), g_wg_flags.load(), (cudaStream_t)stream);
    return launch(dtype, d, &q, blocks, g_wg_overlap.load(), g_wg_flags.load(), g_wg_v2.load(), (cudaStream_t)stream);
}

extern "C" int attn_launch_extend_wgmma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    return launch_extend(dtype, d, p, NULL, grid_items, stream);
}

extern "C" int attn_launch_extend_wgmma_tma(int dtype, int d, const attn_fwd *p, const attn_kv_tmaps *tm,
                                            int grid_items, void *stream) {
    if (!tm) return (int)cudaErrorInvalidValue;
    return launch_extend(dtype, d, p, tm, grid_items, stream);
}
