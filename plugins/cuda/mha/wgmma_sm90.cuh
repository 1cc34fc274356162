/*
 * wgmma_sm90.cuh - Hopper (sm_90a) building blocks of the wgmma extend
 * path: the 128-byte-swizzled shared-memory layout, wgmma matrix descriptors,
 * the wgmma instructions (SS and RS forms), wgmma / proxy fences, mbarriers,
 * setmaxnreg.  CUDA only; the device code exists only when compiling for
 * sm_90a (__CUDA_ARCH_FEAT_SM90_ALL), so the sm_80 and compute_90 passes see
 * just the host-visible layout arithmetic; the CPU emulator of the tests
 * (LK_EMU) has its twin of each primitive at the end.
 *
 * Layout ("sw128 tile"): a tile of ROWS rows of W 16-bit values is stored as
 * W / 64 column blocks of ROWS x 128 bytes, one after the other; inside a
 * block, row r occupies bytes [128 r, 128 r + 128) and its 16-byte chunk c
 * (elements 8c..8c+7 of the block) sits at chunk c ^ (r & 7).  Blocks start on
 * 1024-byte boundaries, so the XOR pattern is the hardware's 128B swizzle
 * (address bits [4:6] ^= bits [7:9]) and the descriptors' base offset is 0.
 *
 * The same bytes serve both operand majors (PTX ISA, "Shared Memory Matrix
 * Layout"; CUTLASS make_gmma_desc, in 16-byte units):
 *   K-major  (K, Q: rows = M/N, the 64-element column block = K):
 *       ((8, m), (T, 2)) : ((8T, SBO), (1, T))    SBO = 1024 B, LBO unused (1)
 *       one k16 step = +32 B on the start address, the next column block = +ROWS*128 B
 *   MN-major (V as the B of P.V: rows = K (tokens), columns = N (dims)):
 *       ((T, 8, n), (8, k)) : ((1, T, LBO), (8T, SBO))   LBO = ROWS*128 B (next
 *       64-dim column block), SBO = 1024 B (next 8 tokens); one k16 step = +2048 B
 * Register fragments (PTX ISA, wgmma m64nNk16; CUTLASS CLayout_64xN / ALayout_64x16):
 *   thread t of the warpgroup: warp w = t / 32, g = (t % 32) / 4, q = t % 4.
 *   D (f32, N/2 values): d[4j + v] is row 16w + g + 8 (v >> 1), column 8j + 2q + (v & 1)
 *   A (16-bit, 4 registers = 8 values): a[i] holds row 16w + g + 8 (i & 1),
 *       columns 8 (i >> 1) + 2q .. +1 (low half first) - the mma.sync m16n8k16 A fragment.
 */
#ifndef SGL_CUDA_ATTN_WGMMA_SM90_CUH
#define SGL_CUDA_ATTN_WGMMA_SM90_CUH

#if defined(__HIPCC__)
#error "wgmma_sm90.cuh is CUDA-only"
#endif

#include <stdint.h>

#include "attn_kernels/common.cuh"

/* ----------------------------------------------------- layout (host + device) */

#define ATTN_SW_ROW_BYTES 128 /* one swizzled row: 64 16-bit values */
#define ATTN_SW_ATOM_BYTES 1024 /* 8 rows: the swizzle repeats, descriptors' SBO */

/* Byte offset of 16-byte chunk c (of a W-wide row) of row r in a ROWS-row sw128 tile. */
template <int ROWS> GC_HD constexpr uint32_t wg_sw_off(int r, int c) {
    return (uint32_t)((c >> 3) * (ROWS * ATTN_SW_ROW_BYTES) + r * ATTN_SW_ROW_BYTES + (((c & 7) ^ (r & 7)) << 4));
}
/* Bytes of a ROWS x W sw128 tile. */
template <int ROWS, int W> GC_HD constexpr uint32_t wg_sw_bytes() { return (uint32_t)ROWS * W * 2; }

/* Descriptor fields (PTX ISA "Matrix Descriptor Format"): start address >> 4 in
 * bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, base offset 49-51 (0 here),
 * swizzle mode in 62-63 (1 = 128B). */
GC_HD constexpr uint64_t wg_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((smem_addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32) | ((uint64_t)1 << 62);
}
/* K-major operand (A or B) starting at a 1024-aligned sw128 block (+32 B per k16 step). */
GC_HD constexpr uint64_t wg_desc_k(uint32_t smem_addr) { return wg_desc(smem_addr, 16, ATTN_SW_ATOM_BYTES); }
/* MN-major B operand of a ROWS-row sw128 tile (trans-b = 1). */
template <int ROWS> GC_HD constexpr uint64_t wg_desc_mn(uint32_t smem_addr) {
    return wg_desc(smem_addr, ROWS * ATTN_SW_ROW_BYTES, ATTN_SW_ATOM_BYTES);
}
/* Advance a descriptor's start address by `bytes` (a multiple of 16; never
 * carries out of the 14-bit field for shared addresses < 256 KB). */
GC_HD constexpr uint64_t wg_desc_add(uint64_t d, uint32_t bytes) { return d + (bytes >> 4); }

static_assert(wg_sw_off<8>(0, 0) == 0 && wg_sw_off<8>(1, 0) == 128 + 16 && wg_sw_off<8>(7, 7) == 7 * 128,
              "sw128 XOR pattern");
static_assert(wg_sw_off<64>(0, 8) == 64 * 128, "second 64-wide column block follows the first");
static_assert((wg_desc(0x400, 16, 1024) >> 62) == 1 && (wg_desc(0x400, 16, 1024) & 0x3FFF) == 0x40 &&
                  ((wg_desc(0x400, 16, 1024) >> 32) & 0x3FFF) == 64,
              "descriptor fields");

#ifdef ATTN_WG_DEBUG
/* Self-test builds: a timed-out wait records where it was stuck and makes
 * every wait return, so the launch ends and the host can print the record
 * (a trap would lose it; printf here would make ptxas serialise wgmma). */
__device__ unsigned int attn_wg_abort;
__device__ unsigned int attn_wg_abort_info[4]; /* block, thread, barrier address, parity */
#endif

/* --------------------------------------------------- device code: sm_90a only */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_HAVE_WGMMA 1

#ifndef ATTN_WG_WATCHDOG_NS
/* A wait longer than this is a protocol bug, never a slow input: trap (the
 * launch fails with an error) instead of hanging the GPU.  Legitimate waits
 * are microseconds, and stay far below it under the sanitizers. */
#define ATTN_WG_WATCHDOG_NS 20000000000ull
#endif

GC_DEV uint32_t wg_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

GC_DEV uint64_t wg_globaltimer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* mbarrier: init (one thread, before a __syncthreads), arrive, parity wait. */
GC_DEV void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
GC_DEV void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
/* Release-arrive (CTA scope): this thread's prior writes are visible to whoever
 * completes a wait on the phase. */
GC_DEV void mbar_arrive(uint32_t bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
GC_DEV bool mbar_try_wait(uint32_t bar, uint32_t parity) {
    uint32_t ok;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return ok != 0;
}
/* Wait until the phase of parity `parity` has completed (acquire).  Waiting
 * on parity 1 of a fresh barrier returns at once: producers start there. */
GC_DEV void mbar_wait(uint32_t bar, uint32_t parity) {
    if (mbar_try_wait(bar, parity)) return;
    const uint64_t t0 = wg_globaltimer();
    while (!mbar_try_wait(bar, parity)) {
#ifdef ATTN_WG_DEBUG
        if (*(volatile unsigned int *)&attn_wg_abort) return;
#endif
        if (wg_globaltimer() - t0 > ATTN_WG_WATCHDOG_NS) {
#ifdef ATTN_WG_DEBUG
            if (atomicCAS(&attn_wg_abort, 0u, 1u) == 0u) {
                attn_wg_abort_info[0] = blockIdx.x;
                attn_wg_abort_info[1] = threadIdx.x;
                attn_wg_abort_info[2] = bar;
                attn_wg_abort_info[3] = parity;
            }
            return;
#else
            __trap();
#endif
        }
    }
}

/* TMA: add `bytes` to the transaction count of the
 * barrier's current phase without arriving (the thread still arrives with the
 * others), then copies that complete_tx on it.  The phase completes once
 * every arrival and every byte are in. */
GC_DEV void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/* The box at coordinates (c0, c1, c2) of a 3-D tensor map (a __grid_constant__
 * kernel parameter) into shared memory at dst (the map's swizzle applied by
 * address bits, so a 128B-swizzled box lands in the sw128 layout when dst is
 * 1024-aligned, or a multiple of 8 rows past such a base). */
GC_DEV void tma_load_3d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, int32_t c2, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

/* Generic-proxy shared-memory writes (st.shared, cp.async) <-> async-proxy
 * accesses (wgmma operand reads).  Writers fence before they release; readers
 * fence again after they acquire (cheap, and covers either reading of the
 * memory model). */
GC_DEV void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Register rebalancing between warpgroups (all warps of a warpgroup execute it). */
template <int N> GC_DEV void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> GC_DEV void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

/* wgmma ordering: fence before the first wgmma after registers it reads or
 * accumulates into were touched by other instructions; commit closes a group;
 * wait_group<N> leaves at most N groups of this thread in flight. */
GC_DEV void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
GC_DEV void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> GC_DEV void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

/* Pin registers at a point of the program: the compiler may not move their
 * reads or writes across it (wgmma reads/writes them asynchronously between
 * the issue and the wait). */
template <int N> GC_DEV void wg_pin(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N> GC_DEV void wg_pin(uint32_t (&r)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; i++)
#pragma unroll
        for (int k = 0; k < 4; k++) asm volatile("" : "+r"(r[i][k])::"memory");
}

/* cp.async.wait_group with the count as a template (cp.async itself: gpu_compat.h). */
template <int N> GC_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/* ------------------------------------------------------------- wgmma proper */
/* Generated (one asm per shape; the dtype is a macro argument).  TB: 0 = B
 * K-major, 1 = B MN-major (transposed; 16-bit types only).  scale_d 0 means
 * D = A*B (the accumulators' old values are ignored), 1 means D += A*B. */
#define ATTN_WG_SS_N128(TY)                                                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                              \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TY "." #TY " "                                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                 \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                        \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                        \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                       \
                 "%64, %65, p, 1, 1, 0, %67;\n}\n"                                                                         \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),         \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),   \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])  \
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
template <int DT, int TB>
GC_DEV void wg_mma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (DT == GC_BF16) ATTN_WG_SS_N128(bf16);
    else ATTN_WG_SS_N128(f16);
}
#undef ATTN_WG_SS_N128
#define ATTN_WG_RS_N128(TY)                                                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                              \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." #TY "." #TY " "                                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                 \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                        \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                        \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                       \
                 "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"                                                           \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),         \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),   \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(TB))
template <int DT, int TB>
GC_DEV void wg_mma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    if constexpr (DT == GC_BF16) ATTN_WG_RS_N128(bf16);
    else ATTN_WG_RS_N128(f16);
}
#undef ATTN_WG_RS_N128
/* m64n32k16 SS: the dual chunk extend scores a tile that crosses a part
 * boundary in 32-column slices, once per further part. */
#define ATTN_WG_SS_N32(TY)                                                                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                                              \
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32." #TY "." #TY " "                                             \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "                                \
                 "%16, %17, p, 1, 1, 0, %19;\n}\n"                                                                         \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),         \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])    \
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
template <int DT, int TB>
GC_DEV void wg_mma_ss_n32(float (&d)[16], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (DT == GC_BF16) ATTN_WG_SS_N32(bf16);
    else ATTN_WG_SS_N32(f16);
}
#undef ATTN_WG_SS_N32

/* m64n64k16 SS: the ragged qk 192 kernel's 64-column tiles (four K/V
 * stages fit where 128-column tiles fit two). */
#define ATTN_WG_SS_N64(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TY "." #TY " " \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
                 "%32, %33, p, 1, 1, 0, %35;\n}\n" \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
template <int DT, int TB>
GC_DEV void wg_mma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (DT == GC_BF16) ATTN_WG_SS_N64(bf16);
    else ATTN_WG_SS_N64(f16);
}
#undef ATTN_WG_SS_N64

/* m64n64k16 RS: O += P V at head dim 64. */
#define ATTN_WG_RS_N64(TY) \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TY "." #TY " " \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, " \
                 "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n" \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(TB))
template <int DT, int TB>
GC_DEV void wg_mma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    if constexpr (DT == GC_BF16) ATTN_WG_RS_N64(bf16);
    else ATTN_WG_RS_N64(f16);
}
#undef ATTN_WG_RS_N64

/* The shapes the kernel uses: S = Q K^T is n128 (128 KV columns; n64 for
 * the 64-column tiles, n32 for the dual chunk boundary slices), O += P V
 * is n128 (head dims 128 and, in two halves, 256) or n64 (head dim 64). */
template <int DT, int N, int TB> GC_DEV void wg_mma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
    static_assert(N == 128 || N == 64 || N == 32, "SS shapes instantiated: n128, n64, n32");
    if constexpr (N == 128) wg_mma_ss_n128<DT, TB>(d, da, db, scale_d);
    else if constexpr (N == 64) wg_mma_ss_n64<DT, TB>(d, da, db, scale_d);
    else wg_mma_ss_n32<DT, TB>(d, da, db, scale_d);
}
template <int DT, int N, int TB>
GC_DEV void wg_mma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    static_assert(N == 128 || N == 64, "RS shapes instantiated: n128, n64");
    if constexpr (N == 128) wg_mma_rs_n128<DT, TB>(d, a, db, scale_d);
    else wg_mma_rs_n64<DT, TB>(d, a, db, scale_d);
}

#elif defined(LK_EMU)
/* The CPU emulator of the tests (tests/emu/emu_sm90.h, LK_EMU): every device
 * primitive above with the same semantics, so the kernels run as written.
 * Shared addresses are the emulator's shared-window offsets; the fences and
 * setmaxnreg have nothing to order or move there; wgmma is a warpgroup
 * rendezvous whose results land at the wait_group that retires them, and a
 * TMA copy's data lands when its mbarrier phase completes. */
#define ATTN_HAVE_WGMMA 1
#include "emu_sm90.h"

GC_DEV uint32_t wg_smem(const void *p) { return lk_emu_smem_addr(p); }
GC_DEV void mbar_init(uint32_t bar, uint32_t count) { lk_emu_mbar_init(bar, count); }
GC_DEV void mbar_init_fence() {}
GC_DEV void mbar_arrive(uint32_t bar) { lk_emu_mbar_arrive(bar); }
GC_DEV bool mbar_try_wait(uint32_t bar, uint32_t parity) { return lk_emu_mbar_test(bar, parity); }
/* blocks the thread; a phase that never completes aborts the run (deadlock) */
GC_DEV void mbar_wait(uint32_t bar, uint32_t parity) { lk_emu_mbar_wait(bar, parity); }
GC_DEV void mbar_expect_tx(uint32_t bar, uint32_t bytes) { lk_emu_mbar_expect_tx(bar, bytes); }
GC_DEV void tma_load_3d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, int32_t c2, uint32_t bar) {
    const int32_t c[3] = {c0, c1, c2};
    lk_emu_tma_load(dst, tmap, c, 3, bar);
}
GC_DEV void fence_proxy_async() {}
template <int N> GC_DEV void setmaxnreg_inc() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
}
template <int N> GC_DEV void setmaxnreg_dec() {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
}
GC_DEV void wg_fence() {}
GC_DEV void wg_commit() { lk_emu_wgmma_commit(); }
template <int N> GC_DEV void wg_wait() { lk_emu_wgmma_wait(N); }
template <int N> GC_DEV void wg_pin(float (&)[N]) {}
template <int N> GC_DEV void wg_pin(uint32_t (&)[N][4]) {}
template <int N> GC_DEV void cp_async_wait() { lk_emu_cp_async_wait_n(N); }
template <int DT, int N, int TB> GC_DEV void wg_mma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
    static_assert(N == 128 || N == 64 || N == 32, "SS shapes instantiated: n128, n64, n32");
    lk_emu_wgmma(d, N, nullptr, da, db, scale_d, TB, DT == GC_BF16);
}
template <int DT, int N, int TB>
GC_DEV void wg_mma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    static_assert(N == 128 || N == 64, "RS shapes instantiated: n128, n64");
    lk_emu_wgmma(d, N, a, 0, db, scale_d, TB, DT == GC_BF16);
}
#endif /* sm_90a, LK_EMU */
#endif
