/*
 * mla_wgmma_ops.cuh - the Hopper (sm_90a) building blocks of the wide kernel
 * (mla_decode_wide_sm90.cu), as inline PTX: wgmma (SS and RS forms),
 * shared-memory matrix descriptors, TMA tile loads, mbarriers, named barriers,
 * proxy fences.  CUDA only; the caller compiles its kernel body only under
 * __CUDA_ARCH_FEAT_SM90_ALL, or for the CPU emulator of the tests (LK_EMU),
 * whose twins of these primitives come first below.
 *
 * Shared-memory operand layouts (PTX ISA "matrix descriptor"; 128-byte swizzle,
 * every tile 1024-byte aligned so the descriptor's base offset stays 0):
 *  - K-major (Q, K for S = Q K^T; P as the A of P V): rows of 64 bf16 = 128 B,
 *    the 16-byte chunk c of row r stored at chunk c ^ (r % 8).  Descriptor:
 *    SBO = 1024 (next 8 rows), LBO unused (1); a k16 step inside the 64-wide
 *    tile adds 32 bytes to the start address.
 *  - MN-major (V for O += P V, transposed B): the same bytes read with keys as
 *    K and value columns as N: LBO = 8192 (next 64 columns = next sub-tile),
 *    SBO = 1024 (next 8 keys); a k16 step adds 16 rows = 2048 bytes.
 */
#ifndef SGL_MLA_WGMMA_OPS_CUH
#define SGL_MLA_WGMMA_OPS_CUH

#include "mla_mma_ops.cuh"

#define MLA_DESC_SW128 (1ull << 62)

GC_DEV uint64_t mla_desc_kmajor(uint32_t saddr) {
    return (uint64_t)((saddr & 0x3ffffu) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) |
           MLA_DESC_SW128;
}
GC_DEV uint64_t mla_desc_mnmajor(uint32_t saddr) {
    return (uint64_t)((saddr & 0x3ffffu) >> 4) | ((uint64_t)(8192 >> 4) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | MLA_DESC_SW128;
}

#ifdef LK_EMU
/* The CPU emulator of the tests (tests/emu/emu_sm90.h, LK_EMU): each
 * primitive below with the PTX's semantics, so the wide kernel runs as
 * written (tests/cuda_emu).  Shared addresses are the emulator's
 * shared-window offsets (mla_smem_u32); the fences have nothing to order
 * there; wgmma is a warpgroup rendezvous that reads the descriptors as the
 * hardware does and whose accumulators land at the wait_group that retires
 * them; a TMA copy's data lands when its mbarrier phase completes. */
GC_DEV void mla_wgmma_fence(void) {}
GC_DEV void mla_wgmma_commit(void) { lk_emu_wgmma_commit(); }
template <int N> GC_DEV void mla_wgmma_wait(void) { lk_emu_wgmma_wait(N); }
template <int N> GC_DEV void mla_fence_regs(float (&)[N]) {}
template <int N> GC_DEV void mla_fence_regs(uint32_t (&)[N]) {}
GC_DEV void mla_fence_proxy_async(void) {}
GC_DEV void mla_bar_sync(int id, int n) { lk_emu_bar(id, n, 1); }
#ifdef MLA_RACECHECK_SYNC_ONLY
GC_DEV void mla_bar_arrive(int id, int n) { mla_bar_sync(id, n); }
#else
GC_DEV void mla_bar_arrive(int id, int n) { lk_emu_bar(id, n, 0); }
#endif
GC_DEV void mla_mbar_init(uint32_t bar, uint32_t count) { lk_emu_mbar_init(bar, count); }
GC_DEV void mla_mbar_init_fence(void) {}
/* arrive.expect_tx: the bytes, then the arrival */
GC_DEV void mla_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    lk_emu_mbar_expect_tx(bar, bytes);
    lk_emu_mbar_arrive(bar);
}
/* blocks the thread; a phase that never completes aborts the run (deadlock) */
GC_DEV void mla_mbar_wait(uint32_t bar, uint32_t parity) { lk_emu_mbar_wait(bar, parity); }
GC_DEV void mla_tma_load_2d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, uint32_t bar) {
    const int32_t c[2] = {c0, c1};
    lk_emu_tma_load(dst, tmap, c, 2, bar);
}
GC_DEV void mla_wgmma_qk_ss(float d[32], uint64_t da, uint64_t db) { lk_emu_wgmma(d, 64, nullptr, da, db, 1, 0, 1); }
GC_DEV void mla_wgmma_qk_rs(float d[32], const uint32_t a[4], uint64_t db) { lk_emu_wgmma(d, 64, a, 0, db, 1, 0, 1); }
GC_DEV void mla_wgmma_pv_rs(float d[128], const uint32_t a[4], uint64_t db) { lk_emu_wgmma(d, 256, a, 0, db, 1, 1, 1); }
GC_DEV void mla_wgmma_pv_ss(float d[128], uint64_t da, uint64_t db) { lk_emu_wgmma(d, 256, nullptr, da, db, 1, 1, 1); }
#else
GC_DEV void mla_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
GC_DEV void mla_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> GC_DEV void mla_wgmma_wait(void) {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Pin accumulator registers at this point of the program: the compiler may
 * not move their reads or writes across it (wgmma writes them behind its back
 * until the wait). */
template <int N> GC_DEV void mla_fence_regs(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N> GC_DEV void mla_fence_regs(uint32_t (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+r"(r[i])::"memory");
}

/* Generic-proxy shared-memory writes made visible to wgmma / TMA. */
GC_DEV void mla_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Named barriers between the two warpgroups (id 0 is __syncthreads). */
GC_DEV void mla_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
/* MLA_RACECHECK_SYNC_ONLY: every arrive waits too (bar.sync).  A build for
 * telling compute-sanitizer racecheck's view of the bar.arrive hand-offs apart
 * from real races (docs/cuda_mla.md, "Sanitizers"); both warpgroups meet the
 * barriers in the same order, so the blocking form cannot deadlock. */
#ifdef MLA_RACECHECK_SYNC_ONLY
GC_DEV void mla_bar_arrive(int id, int n) { mla_bar_sync(id, n); }
#else
GC_DEV void mla_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
#endif

GC_DEV void mla_mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
GC_DEV void mla_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
GC_DEV void mla_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
/* The loop is inside the asm so the compiler sees no divergent branch before
 * the wgmma that follows (else it serialises them, ptxas C7520). */
GC_DEV void mla_mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nMLA_MBAR_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra MLA_MBAR_WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* TMA: the box at (c0 = element in the row, c1 = pool slot) of the map into
 * shared memory at dst, completing on mbarrier bar. */
GC_DEV void mla_tma_load_2d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"((uint64_t)tmap), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

/* S[64x64] += Q (smem, K-major) x K^T (smem, K-major) */
GC_DEV void mla_wgmma_qk_ss(float d[32], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1)
        : "memory");
}

/* S[64x64] += Q (registers) x K^T (smem, K-major) */
GC_DEV void mla_wgmma_qk_rs(float d[32], const uint32_t a[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)
        : "memory");
}

/* O[64x256] += P (registers) x V (smem, MN-major: keys are rows) */
GC_DEV void mla_wgmma_pv_rs(float d[128], const uint32_t a[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1)
        : "memory");
}

/* O[64x256] += P (smem, K-major) x V (smem, MN-major) */
GC_DEV void mla_wgmma_pv_ss(float d[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1)
        : "memory");
}

#endif /* LK_EMU */

#endif
