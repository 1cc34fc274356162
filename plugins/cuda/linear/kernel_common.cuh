/*
 * kernel_common.cuh - what every linear-attention kernel shares: the launch
 * macros (real GPU or the tests' CPU emulator), loads and stores of the input
 * dtypes, the state dtypes (vectorised), the gating functions in the CPU
 * wrappers' exact forms, warp sums, and the causal conv1d of one channel at
 * one position.
 */
#ifndef SGL_LIN_KERNEL_COMMON_CUH
#define SGL_LIN_KERNEL_COMMON_CUH

#include "gpu_compat.h"
#include "lin_params.h"

#define LK_DEV GC_DEV

/* Dynamic shared memory and kernel launches go through these, so the same
 * kernels and launchers also build for the CPU emulator of the tests
 * (tests/emu, LK_EMU): there a "thread" is a fiber. */
#ifdef LK_EMU
#include "emu_pdl.h"
#define LK_DYN_SMEM(T, name) T *name = (T *)lk_emu_dyn_smem()
#define LK_ALIGNED(p, n) lk_emu_aligned((const void *)(p), (n))
/* the emulator lands async copies only at the wait, as the hardware may */
#define lk_cp_async16(dst, src, pred) lk_emu_cp_async16((dst), (src), (pred))
#define lk_cp_async_commit() lk_emu_cp_async_commit()
#define lk_cp_async_wait_all() lk_emu_cp_async_wait()
template <int N> static inline void lk_cp_async_wait(void) { lk_emu_cp_async_wait_n(N); }
#define lk_bar_sync(id, n) lk_emu_bar((id), (n), 1)
#define lk_bar_arrive(id, n) lk_emu_bar((id), (n), 0)
#define LK_LAUNCH(kern, grid, block, smem, stream, ...)                                                \
    (lk_emu_trace(#kern, dim3(grid), dim3(block), (size_t)(smem)),                                      \
     lk_emu_launch(grid, block, smem, stream, [=] { kern(__VA_ARGS__); }))
/* blocks run grid after grid: a programmatic dependent launch runs after the grid before it, and the
 * emulator checks that the dependent waits for it (griddepcontrol.wait, lk_pdl_wait) */
#define LK_LAUNCH_PDL(pdl, kern, grid, block, smem, stream, ...)                                       \
    (lk_emu_trace(#kern, dim3(grid), dim3(block), (size_t)(smem)),                                      \
     lk_emu_launch_pdl_fn((pdl), dim3(grid), dim3(block), (size_t)(smem), (stream),                     \
                          std::function<void()>([=] { kern(__VA_ARGS__); })),                            \
     cudaSuccess)
#else
#define LK_DYN_SMEM(T, name) extern __shared__ __align__(16) T name[]
#define LK_ALIGNED(p, n) ((void)0)
#define lk_cp_async16(dst, src, pred) gc_cp_async16((dst), (src), (pred))
#define lk_cp_async_commit() gc_cp_async_commit()
#define lk_cp_async_wait_all() gc_cp_async_wait<0>()
template <int N> GC_DEV void lk_cp_async_wait(void) { gc_cp_async_wait<N>(); }
/* named barrier id (1..15, 0 is __syncthreads') of n threads (a multiple of 32): bar.sync waits for the
 * phase to complete, bar.arrive only counts; both order the caller's earlier shared-memory accesses
 * before the waiters' later ones */
GC_DEV void lk_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
#ifdef LK_RACECHECK_SYNC_ONLY
/* a build for telling compute-sanitizer racecheck's view of bar.arrive hand-offs apart from real races
 * (bench/gpu/build_race.sh): every arrive waits too; the chunk state pass meets its barriers in the same
 * order on both sides, so the blocking form cannot deadlock */
GC_DEV void lk_bar_arrive(int id, int n) { lk_bar_sync(id, n); }
#else
GC_DEV void lk_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
#endif
#define LK_LAUNCH(kern, grid, block, smem, stream, ...) kern<<<grid, block, smem, stream>>>(__VA_ARGS__)
/* pdl != 0: a programmatic dependent launch (SM 9.0+, runtime API only): the
 * kernel may start once every block of the one before it in the stream has
 * run lk_pdl_trigger (or exited); it sees that kernel's writes only after
 * lk_pdl_wait.  Stream capture (CUDA 12.3+) records it as a programmatic edge. */
template <class... P, class... A>
static inline cudaError_t lk_launch_pdl(int pdl, void (*kern)(P...), dim3 grid, dim3 block, size_t smem,
                                        cudaStream_t st, A... args) {
    if (!pdl) {
        kern<<<grid, block, smem, st>>>(args...);
        return cudaSuccess;
    }
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kern, args...);
}
#define LK_LAUNCH_PDL(pdl, kern, grid, block, smem, stream, ...) \
    lk_launch_pdl((pdl), kern, dim3(grid), dim3(block), (size_t)(smem), (stream), __VA_ARGS__)
#endif

/* Programmatic dependent launch, device side (griddepcontrol, SM 9.0+; no-ops
 * on SM 8.x; in the emulator, counted):
 * lk_pdl_trigger lets the dependent grid start (no memory ordering);
 * lk_pdl_wait waits until the grid before has completed and its writes are
 * visible (a no-op when this launch has no programmatic dependency). */
LK_DEV void lk_pdl_trigger(void) {
#if defined(LK_EMU)
    lk_emu_pdl_trigger();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
LK_DEV void lk_pdl_wait(void) {
#if defined(LK_EMU)
    lk_emu_pdl_wait(); /* the emulator checks that a programmatic dependent launch waits */
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* ------------------------------------------------------------- inputs */

LK_DEV float lk_ld(const void *p, int dt, int64_t i) {
    if (dt == LIN_DT_F32) return ((const float *)p)[i];
    if (dt == LIN_DT_BF16) return gc_bf16_to_f32(((const uint16_t *)p)[i]);
    return gc_f16_to_f32(((const uint16_t *)p)[i]);
}
LK_DEV float lk_in(const lin_in &t, int64_t i) { return lk_ld(t.p, t.dt, i); }
/* optional input: 0 when absent */
LK_DEV float lk_in0(const lin_in &t, int64_t i) { return t.p ? lk_ld(t.p, t.dt, i) : 0.f; }

LK_DEV void lk_st(void *p, int dt, int64_t i, float v) {
    if (dt == LIN_DT_F32) ((float *)p)[i] = v;
    else if (dt == LIN_DT_BF16) ((uint16_t *)p)[i] = gc_bf16_rn(v);
    else ((uint16_t *)p)[i] = gc_f32_to_f16(v);
}

LK_DEV int64_t lk_idx(const lin_idx &t, int64_t i) {
    return t.is64 ? ((const int64_t *)t.p)[i] : (int64_t)((const int32_t *)t.p)[i];
}

/* Note err[] (a plan's first error) in the instance's fault record, which
 * the next metadata call reads without a sync (gpu_fault.h; its own claim
 * word, as sgl_fault_note). */
LK_DEV void lk_fault_note(const sgl_gpu_fault_ref &f, const int32_t *err, int tensor, int64_t lo, int64_t hi) {
    if (!f.rec || !f.claim || atomicCAS(f.claim, 0, 1) != 0) return;
    f.rec->code = err[0];
    f.rec->pos = err[1];
    f.rec->value = (int64_t)(((uint64_t)(uint32_t)err[3] << 32) | (uint32_t)err[2]);
    f.rec->lo = lo;
    f.rec->hi = hi;
#ifndef LK_EMU
    __threadfence_system();
#endif
    f.rec->tensor = tensor;
#ifndef LK_EMU
    __threadfence_system();
#endif
}

/* Record the first device-found error: code, index, value (read by the host
 * after the kernel). */
LK_DEV void lk_flag(int32_t *err, int code, int idx, int64_t v) {
    if (atomicCAS(err, 0, code) == 0) {
        err[1] = idx;
        err[2] = (int32_t)(uint32_t)(uint64_t)v;
        err[3] = (int32_t)(uint32_t)((uint64_t)v >> 32);
    }
}

/* -------------------------------------------------------------- state */

/* State elements: SDT = LIN_DT_F32 or LIN_DT_BF16.  lk_sld/lk_sst move N
 * consecutive elements starting at element i (i a multiple of N, N in
 * 1, 2, 4, 8) in one access. */
template <int SDT> LK_DEV float lk_s1(const void *base, int64_t i) {
    if (SDT == LIN_DT_F32) return ((const float *)base)[i];
    return gc_bf16_to_f32(((const uint16_t *)base)[i]);
}
template <int SDT> LK_DEV void lk_s1st(void *base, int64_t i, float v) {
    if (SDT == LIN_DT_F32) ((float *)base)[i] = v;
    else ((uint16_t *)base)[i] = gc_bf16_rn(v);
}

template <int SDT, int N> LK_DEV void lk_sld(const void *base, int64_t i, float *o) {
    LK_ALIGNED((const char *)base + i * (SDT == LIN_DT_F32 ? 4 : 2), (N * (SDT == LIN_DT_F32 ? 4 : 2)) > 16 ? 16 : N * (SDT == LIN_DT_F32 ? 4 : 2));
    if (SDT == LIN_DT_F32) {
        const float *p = (const float *)base + i;
        if (N % 4 == 0) {
#pragma unroll
            for (int k = 0; k < N; k += 4) {
                float4 v = *(const float4 *)(p + k);
                o[k] = v.x, o[k + 1] = v.y, o[k + 2] = v.z, o[k + 3] = v.w;
            }
        } else if (N == 2) {
            float2 v = *(const float2 *)p;
            o[0] = v.x, o[1] = v.y;
        } else {
#pragma unroll
            for (int k = 0; k < N; k++) o[k] = p[k];
        }
    } else {
        const uint16_t *p = (const uint16_t *)base + i;
        if (N % 8 == 0) {
#pragma unroll
            for (int k = 0; k < N; k += 8) gc_unpack8<GC_BF16>(*(const uint4 *)(p + k), o + k);
        } else if (N == 4) {
            uint2 v = *(const uint2 *)p;
            o[0] = gc_bf16_to_f32((uint16_t)(v.x & 0xffffu)), o[1] = gc_bf16_to_f32((uint16_t)(v.x >> 16));
            o[2] = gc_bf16_to_f32((uint16_t)(v.y & 0xffffu)), o[3] = gc_bf16_to_f32((uint16_t)(v.y >> 16));
        } else if (N == 2) {
            uint32_t v = *(const uint32_t *)p;
            o[0] = gc_bf16_to_f32((uint16_t)(v & 0xffffu)), o[1] = gc_bf16_to_f32((uint16_t)(v >> 16));
        } else {
            o[0] = gc_bf16_to_f32(p[0]);
        }
    }
}

template <int SDT, int N> LK_DEV void lk_sst(void *base, int64_t i, const float *v) {
    LK_ALIGNED((const char *)base + i * (SDT == LIN_DT_F32 ? 4 : 2), (N * (SDT == LIN_DT_F32 ? 4 : 2)) > 16 ? 16 : N * (SDT == LIN_DT_F32 ? 4 : 2));
    if (SDT == LIN_DT_F32) {
        float *p = (float *)base + i;
        if (N % 4 == 0) {
#pragma unroll
            for (int k = 0; k < N; k += 4) *(float4 *)(p + k) = make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]);
        } else if (N == 2) {
            *(float2 *)p = make_float2(v[0], v[1]);
        } else {
#pragma unroll
            for (int k = 0; k < N; k++) p[k] = v[k];
        }
    } else {
        uint16_t *p = (uint16_t *)base + i;
        if (N % 8 == 0) {
#pragma unroll
            for (int k = 0; k < N; k += 8)
                *(uint4 *)(p + k) = make_uint4(gc_bf16x2_rn(v[k], v[k + 1]), gc_bf16x2_rn(v[k + 2], v[k + 3]),
                                               gc_bf16x2_rn(v[k + 4], v[k + 5]), gc_bf16x2_rn(v[k + 6], v[k + 7]));
        } else if (N == 4) {
            uint2 u;
            u.x = gc_bf16x2_rn(v[0], v[1]);
            u.y = gc_bf16x2_rn(v[2], v[3]);
            *(uint2 *)p = u;
        } else if (N == 2) {
            *(uint32_t *)p = gc_bf16x2_rn(v[0], v[1]);
        } else {
            p[0] = gc_bf16_rn(v[0]);
        }
    }
}

/* N consecutive state elements at element i in the pool's dtype (p.st_dt; the branch is uniform over
 * the grid). */
template <int N> LK_DEV void lk_srow_ld(const lin_fwd &p, const void *base, int64_t i, float *o) {
    if (p.st_dt == LIN_DT_BF16) lk_sld<LIN_DT_BF16, N>(base, i, o);
    else lk_sld<LIN_DT_F32, N>(base, i, o);
}
template <int N> LK_DEV void lk_srow_st(const lin_fwd &p, void *base, int64_t i, const float *v) {
    if (p.st_dt == LIN_DT_BF16) lk_sst<LIN_DT_BF16, N>(base, i, v);
    else lk_sst<LIN_DT_F32, N>(base, i, v);
}

/* Runtime state dtype, for the simple kernels. */
LK_DEV float lk_sget(const void *base, int dt, int64_t i) {
    return dt == LIN_DT_F32 ? ((const float *)base)[i] : gc_bf16_to_f32(((const uint16_t *)base)[i]);
}
LK_DEV void lk_sput(void *base, int dt, int64_t i, float v) {
    if (dt == LIN_DT_F32) ((float *)base)[i] = v;
    else ((uint16_t *)base)[i] = gc_bf16_rn(v);
}
LK_DEV size_t lk_sesz(int dt) { return dt == LIN_DT_F32 ? 4 : 2; }
/* element offset -> pointer, for any state dtype */
LK_DEV void *lk_sptr(void *base, int dt, int64_t i) { return (char *)base + (size_t)i * lk_sesz(dt); }

/* ------------------------------------------------------------ gating */

/* a / b for b >= 1 by the fast divide (a reciprocal and a multiply, within 2 ulp for b below 2^126, 0 above).
 * The IEEE division's range check sends a whole warp to a slow-path subroutine when any lane's operands leave
 * its fast range, which the preps' conv loops cannot afford for every channel of every token.  The emulator
 * divides exactly. */
LK_DEV float lk_div_ge1(float a, float b) {
#ifdef LK_EMU
    return a / b;
#else
    return __fdividef(a, b);
#endif
}

/* e^x by ex2.approx of x log2 e (2 + 1.17 |x| ulp, ~2e-6 relative at |x| = 20): SiLU's and sigmoid's e^{-x},
 * whose results are rounded to 16 bits or feed a float32 state through products that carry 16-bit rounding
 * already; the accurate expf's range reduction costs ~6 instructions an element in the preps' conv loops.  The
 * emulator takes expf. */
LK_DEV float lk_exp_fast(float x) {
#ifdef LK_EMU
    return expf(x);
#else
    return __expf(x);
#endif
}

/* torch softplus(beta=1, threshold=20) with the accurate expf/log1pf, sigmoid
 * and SiLU in float32 (the CPU wrappers' forms, within ~2e-6 relative); the divisor
 * 1 + e^{-x} is at least 1, and past 2^126 (x below -87) sigmoid and SiLU, below
 * 1e-35 in magnitude, come out 0. */
LK_DEV float lk_softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
LK_DEV float lk_sigmoid(float x) { return lk_div_ge1(1.f, 1.f + lk_exp_fast(-x)); }
LK_DEV float lk_silu(float x) { return lk_div_ge1(x, 1.f + lk_exp_fast(-x)); }

LK_DEV float lk_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += gc_shfl_xor(v, o);
    return v;
}

/* --------------------------------------------------------------- conv */

/* The conv input of channel ch at token row `tok`: x, or short_conv's B*x. */
LK_DEV float lk_conv_input(const lin_fwd &p, int64_t tok, int ch) {
    if (p.kind == LIN_SHORT_CONV)
        return lk_in(p.x, tok * p.x_dim + ch) * lk_in(p.x, tok * p.x_dim + 2 * p.conv_dim + ch);
    return lk_in(p.x, tok * p.x_dim + ch);
}

/* Causal conv1d of channel ch at position rel (0-based) of the request whose
 * first token row is tok0: positions < 0 read the slot's conv history
 * (oldest first) when init, else zero.  act: SiLU.  Same order of additions
 * as the CPU wrappers (bias, history oldest first, then the newest). */
LK_DEV float lk_conv_at(const lin_fwd &p, int64_t tok0, int rel, int ch, int slot, int init, int act) {
    const int W = p.conv_w, H = W - 1;
    float acc = lk_in0(p.conv_bias, ch);
    for (int j = 0; j < W; j++) {
        const int pos = rel - H + j;
        float e;
        if (pos >= 0)
            e = lk_conv_input(p, tok0 + pos, ch);
        else
            e = init ? lk_sget(p.conv_state, p.st_dt, (int64_t)slot * p.conv_elems + (int64_t)ch * H + H + pos) : 0.f;
        acc += lk_in(p.conv_weight, (int64_t)ch * W + j) * e;
    }
    return act ? lk_silu(acc) : acc;
}

#endif
