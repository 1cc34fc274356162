/*
 * emu_prelude.h - force-included (g++ -include) when the CUDA linear
 * kernels and their launchers are built for the CPU emulator (-DLK_EMU).
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
void __syncwarp(unsigned mask = 0xffffffffu);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32);
int __shfl_sync(unsigned mask, int v, int src, int width = 32);
float __shfl_sync(unsigned mask, float v, int src, int width = 32);
long __shfl_up_sync(unsigned mask, long v, unsigned delta, int width = 32);
int atomicCAS(int *address, int compare, int val);
/* blocks run one after another: every write is visible to later blocks */
static inline void __threadfence(void) {}
float __ldcg(const float *p);
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

/* the block's dynamic shared memory (poisoned before every block) */
void *lk_emu_dyn_smem(void);
/* run (or, under stream capture, record) a launch */
void lk_emu_launch_fn(dim3 grid, dim3 block, size_t smem, cudaStream_t st, std::function<void()> body);
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
/* cp.async.commit_group / cp.async.wait_group n: the copies of all but the
 * newest n committed groups land (copies not yet committed stay queued) */
void lk_emu_cp_async_commit(void);
void lk_emu_cp_async_wait_n(int n);
/* named barrier id (1..15) of n threads: bar.sync (wait 1) / bar.arrive
 * (wait 0); a block that ends with a phase open aborts */
void lk_emu_bar(int id, int n, int wait);
/* abort unless p is n-byte aligned (vector loads and stores) */
void lk_emu_aligned(const void *p, size_t n);
/* mma.sync m16n8k16 row.col, f32 accumulate; bf16 or f16 operands */
void lk_emu_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1, int bf16);

#endif
