/*
 * emu_sm90.h - the CPU emulator's Hopper (sm_90a) primitives, declared for
 * the LK_EMU twins in plugins/cuda/mha/wgmma_sm90.cuh and implemented in
 * emu_simt.cpp; the tensor map the emulated driver's cuTensorMapEncodeTiled
 * writes (emu_cudart.cpp) and the TMA copy reads.
 *
 * Shared-window addresses: the block's dynamic shared memory starts at
 * window address EMU_SMEM_WINDOW (16: only 16-byte aligned, as the hardware
 * promises, so a kernel's own rounding up to its swizzle atoms runs).
 *
 * mbarriers: a phase completes when its pending arrivals and its transaction
 * count are both zero; a parity wait blocks the thread (fiber) until the
 * phase of that parity completed, and a wait that nothing can complete ends
 * in the scheduler's "no thread can make progress" abort.
 *
 * TMA (cp.async.bulk.tensor) and the plain bulk copy (cp.async.bulk): the
 * source is read at the issue, the bytes complete on the mbarrier at once,
 * and the data lands in shared memory when a thread first observes that
 * barrier's completed phase (a wait or try_wait: the latest moment a reader
 * ordered after the copy can rely on), so a reader that no wait orders after
 * the copy sees the poisoned (NaN) bytes.
 *
 * wgmma: the 128 threads of a warpgroup meet (a rendezvous, as the warp
 * collectives do); the product is computed there from the shared-memory
 * descriptors (128B swizzle, K-major or MN-major) and register fragments,
 * and each thread's accumulators are held back until its wgmma.wait_group
 * retires the commit group (a chained wgmma on the same accumulators reads
 * the held values, as the hardware's in-order pipe does), so a missing wait
 * reads stale accumulators.
 */
#ifndef EMU_SM90_H
#define EMU_SM90_H

#include <cstdint>

#define EMU_SMEM_WINDOW 16u

/* the shared-window address of p (inside the block's dynamic shared memory) */
uint32_t lk_emu_smem_addr(const void *p);
void lk_emu_mbar_init(uint32_t bar, uint32_t count);
void lk_emu_mbar_arrive(uint32_t bar);
void lk_emu_mbar_expect_tx(uint32_t bar, uint32_t bytes);
/* mbarrier.try_wait.parity without blocking: the phase of `parity` has completed */
bool lk_emu_mbar_test(uint32_t bar, uint32_t parity);
void lk_emu_mbar_wait(uint32_t bar, uint32_t parity);
/* cp.async.bulk.tensor.Nd (N = rank) of the box at coords into dst, complete_tx on bar */
void lk_emu_tma_load(uint32_t dst, const void *tmap, const int32_t *coords, int rank, uint32_t bar);
/* wgmma.mma_async m64nNk16, f32 accumulators d[N / 2]; a: the RS form's A
 * registers (NULL: SS, A from da); tnsp_b: B MN-major; bf16: else f16 */
void lk_emu_wgmma(float *d, int n, const uint32_t *a, uint64_t da, uint64_t db, int scale_d, int tnsp_b, int bf16);
void lk_emu_wgmma_commit(void);
void lk_emu_wgmma_wait(int n);
/* cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes of
 * `bytes` (a multiple of 16, both addresses 16-byte aligned) from global src
 * to the shared-window address dst, complete_tx on bar: the source is read
 * at the issue and lands when the barrier's phase completes, as a TMA
 * copy's does (cuda_mla's mma kernel, SM 9.0 configuration) */
void lk_emu_bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar);

/* The emulated CUtensorMap (128 opaque bytes): what the TMA copy needs. */
struct emu_tmap {
    uint32_t magic; /* EMU_TMAP_MAGIC once encoded */
    uint32_t rank, elem, swizzle; /* swizzle: span in bytes (32, 64, 128) or 0 */
    uint64_t addr;
    uint64_t dims[3];
    uint64_t strides[2]; /* bytes, dims 1 and 2 */
    uint32_t box[3];
    uint32_t oob_nan; /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA: NaN, else zeros */
};
#define EMU_TMAP_MAGIC 0x454d5554u
static_assert(sizeof(emu_tmap) <= 128, "fits a CUtensorMap");

#endif
