/*
 * emu_prelude.h - force-included (g++ -include) when CUDA kernels and their
 * launchers are built for the CPU emulator (-DLK_EMU): the linear kernels
 * (tests/cuda_linear), cuda_attn's and cuda_mla's (tests/cuda_emu, whose .cu
 * files emu_cu.py rewrites first: their <<<>>> launches become lk_emu_launch_k).
 * Each CUDA thread of a block is a fiber (emu_simt.cpp); what CUDA gives a
 * kernel is declared here and implemented there with the same semantics:
 * the block barrier (non-exited threads), warp collectives that check all 32
 * lanes take part in the same operation, ldmatrix and mma.sync m16n8k16
 * fragment layouts, atomics.  Blocks run one after another (in grid order,
 * or reversed / shuffled with EMU_ORDER=rev / shuf, which shows a kernel
 * that assumes an order of blocks), so __shared__ variables are statics.
 */
#ifndef EMU_PRELUDE_H
#define EMU_PRELUDE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include <cuda_runtime.h>

struct emu_dim3 {
    unsigned x, y, z;
};
extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

#undef __shared__
#define __shared__ static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

void __syncthreads(void);
int __syncthreads_or(int v);
static inline int __syncthreads_and(int v) { return !__syncthreads_or(!v); }
void __syncwarp(unsigned mask = 0xffffffffu);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32);
int __shfl_sync(unsigned mask, int v, int src, int width = 32);
float __shfl_sync(unsigned mask, float v, int src, int width = 32);
/* 64-bit values as CUDA's overloads do: two 32-bit shuffles of the same source lane */
static inline long long __shfl_sync(unsigned mask, long long v, int src, int width = 32) {
    const uint32_t lo = (uint32_t)__shfl_sync(mask, (int)(uint32_t)(unsigned long long)v, src, width);
    const uint32_t hi = (uint32_t)__shfl_sync(mask, (int)(uint32_t)((unsigned long long)v >> 32), src, width);
    return (long long)((unsigned long long)hi << 32 | lo);
}
static inline long __shfl_sync(unsigned mask, long v, int src, int width = 32) {
    return (long)__shfl_sync(mask, (long long)v, src, width);
}
long __shfl_up_sync(unsigned mask, long v, unsigned delta, int width = 32);
unsigned __ballot_sync(unsigned mask, int pred);
static inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
static inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == 0xffffffffu; }
/* a fiber runs until it meets a barrier or a collective: every read-modify-write is atomic */
int atomicCAS(int *address, int compare, int val);
template <class T> static inline T atomicAdd(T *p, T v) {
    const T o = *p;
    *p = o + v;
    return o;
}
template <class T> static inline T atomicMax(T *p, T v) {
    const T o = *p;
    if (o < v) *p = v;
    return o;
}
template <class T> static inline T atomicExch(T *p, T v) {
    const T o = *p;
    *p = v;
    return o;
}
/* the read-only path: a plain load (aligned to its size, as the hardware needs) */
void lk_emu_aligned(const void *p, size_t n);
template <class T> static inline T __ldg(const T *p) {
    lk_emu_aligned(p, sizeof(T));
    return *p;
}
/* prmt's default mode: byte n of the result is byte (s >> 4n) & 7 of {y, x} */
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const uint64_t in = (uint64_t)y << 32 | x;
    unsigned r = 0;
    for (int n = 0; n < 4; n++) r |= (unsigned)(in >> (8 * ((s >> (4 * n)) & 7)) & 0xffu) << (8 * n);
    return r;
}
/* trap: reported with the block and thread, then abort */
[[noreturn]] void __trap(void);
/* blocks run one after another: every write is visible to later blocks */
static inline void __threadfence(void) {}
static inline void __threadfence_system(void) {}
float __ldcg(const float *p);
static inline float4 __ldcg(const float4 *p) {
    lk_emu_aligned(p, sizeof(float4));
    return *p;
}
static inline uint4 __ldcg(const uint4 *p) {
    lk_emu_aligned(p, sizeof(uint4));
    return *p;
}
static inline float __uint_as_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t __float_as_uint(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
template <class T> static inline T min(T a, T b) { return b < a ? b : a; }
template <class T> static inline T max(T a, T b) { return a < b ? b : a; }

/* the runtime API's form for a kernel (nvcc declares it; g++ sees only the const void * one) */
template <class... P> static inline cudaError_t cudaFuncSetAttribute(void (*f)(P...), cudaFuncAttribute a, int v) {
    return cudaFuncSetAttribute((const void *)f, a, v);
}

template <class... P> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, void (*f)(P...)) {
    return cudaFuncGetAttributes(a, (const void *)f);
}
/* a __device__ variable is a host variable here */
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t n, size_t offset = 0,
                                               cudaMemcpyKind k = cudaMemcpyDeviceToHost) {
    return cudaMemcpyFromSymbol(dst, (const void *)&symbol, n, offset, k);
}

/* the block's dynamic shared memory (poisoned before every block) */
void *lk_emu_dyn_smem(void);
/* run (or, under stream capture, record) a launch */
void lk_emu_launch_fn(dim3 grid, dim3 block, size_t smem, cudaStream_t st, std::function<void()> body);
/* EMU_TRACE=1: each launch's kernel, grid, block and dynamic shared memory on stderr */
void lk_emu_trace(const char *name, dim3 grid, dim3 block, size_t smem);
/* a launch whose arguments are evaluated and copied now, as CUDA's are (a
 * captured graph replays the values of the capture): emu_cu.py's form of
 * kern<<<grid, block, smem, stream>>>(args...) */
template <class F, class... A>
static inline void lk_emu_launch_k(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t st, F kern,
                                   A... args) {
    lk_emu_trace(name, grid, block, smem);
    lk_emu_launch_fn(grid, block, smem, st, std::function<void()>([=] { kern(args...); }));
}
template <class F> static inline void lk_emu_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t st, F f) {
    lk_emu_launch_fn(grid, block, smem, st, std::function<void()>(f));
}
/* ldmatrix.x4 (trans: .trans) from the 32 lanes' row addresses */
void lk_emu_ldsm(uint32_t r[4], const void *p, int trans);
/* cp.async: queued per thread, landed at the thread's wait (a missing wait
 * reads the poisoned shared memory) */
void lk_emu_cp_async16(void *dst, const void *src, bool pred);
/* the same of n = 4, 8 or 16 bytes (src NULL: zeros) */
void lk_emu_cp_async_n(void *dst, const void *src, int n);
void lk_emu_cp_async_wait(void);
/* cp.async of 16 bytes (pred false: zeros) into any shared memory, static
 * __shared__ arrays included (gpu_compat.h's gc_cp_async16) */
void lk_emu_cp_async16_any(void *dst, const void *src, bool pred);
/* an L2 prefetch of n bytes at p: no cache here, so nothing changes; an address not 16-byte aligned or a
 * size not a multiple of 16 aborts (cp.async.bulk.prefetch.L2's rules), the range's first and last bytes are
 * read (a prefetch outside its buffer fails the ASan build) and n is added to lk_emu_l2_prefetch_bytes */
void lk_emu_l2_prefetch(const void *p, size_t n);
extern "C" long long lk_emu_l2_prefetch_bytes;
/* cp.async.commit_group / cp.async.wait_group n: the copies of all but the
 * newest n committed groups land (copies not yet committed stay queued) */
void lk_emu_cp_async_commit(void);
void lk_emu_cp_async_wait_n(int n);
/* named barrier id (1..15) of n threads: bar.sync (wait 1) / bar.arrive
 * (wait 0); a block that ends with a phase open aborts */
void lk_emu_bar(int id, int n, int wait);
/* abort unless p is n-byte aligned (vector loads and stores; declared above) */
/* cvt.rn.f16x2.e4m3x2 of the low 16 bits of x (low byte -> low half; exact) */
uint32_t lk_emu_cvt_f16x2_e4m3x2(uint32_t x);
/* cvt.rn.satfinite.e4m3x2.f32 of one value: the e4m3 byte nearest f (ties to
 * even), +-448 past the range, NaN 0x7f with f's sign */
uint32_t lk_emu_cvt_e4m3_f32(float f);
/* mma.sync m16n8k16 row.col, f32 accumulate; bf16 or f16 operands */
void lk_emu_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1, int bf16);
/* cvt.rna.tf32.f32 (nearest, ties away) and mma.sync m16n8k8 row.col with tf32 operands, f32 accumulate */
uint32_t lk_emu_cvt_tf32(float f);
void lk_emu_mma_tf32(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);

#endif
