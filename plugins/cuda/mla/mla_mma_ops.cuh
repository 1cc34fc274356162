/*
 * mla_mma_ops.cuh - the SM 8.0 building blocks of the mma kernel: ldmatrix
 * and mma.sync m16n8k16 (fp32 accumulate) for bf16 and fp16, and the P V step
 * it shares with the sparse gather kernel (mla_sparse.cu).  CUDA only.
 */
#ifndef SGL_MLA_MMA_OPS_CUH
#define SGL_MLA_MMA_OPS_CUH

#include "mla_kern_common.cuh"

#ifdef LK_EMU
/* The CPU emulator of the tests (tests/emu/, LK_EMU): the same fragment
 * semantics as the PTX below, warp collectives of all 32 lanes.  The shared
 * address is the emulator's shared-window offset (tests/emu/emu_sm90.h), the
 * operand of the SM 9.0 bulk copies, mbarriers and wgmma descriptors. */
#include "emu_sm90.h"
GC_DEV uint32_t mla_smem_u32(const void *p) { return lk_emu_smem_addr(p); }
GC_DEV void mla_ldsm_x4(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 0); }
GC_DEV void mla_ldsm_x4_t(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 1); }
/* .x2: lanes 0..15 give the row addresses of matrices 0 and 1; lanes 16..31's
 * are not read (any value), so every lane passes lane (lane & 15)'s to .x4. */
GC_DEV void mla_ldsm_x2(uint32_t r[2], const void *p) {
    const long long a = __shfl_sync(0xffffffffu, (long long)(uintptr_t)p, (int)(threadIdx.x & 15u));
    uint32_t r4[4];
    lk_emu_ldsm(r4, (const void *)(uintptr_t)a, 0);
    r[0] = r4[0], r[1] = r4[1];
}
#else
GC_DEV uint32_t mla_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

GC_DEV void mla_ldsm_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mla_smem_u32(p))
                 : "memory");
}
GC_DEV void mla_ldsm_x4_t(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mla_smem_u32(p))
                 : "memory");
}
GC_DEV void mla_ldsm_x2(uint32_t r[2], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(mla_smem_u32(p))
                 : "memory");
}

#endif

/* d += a * b for one m16n8k16 tile (row-major A, column-major B). */
template <int DT> GC_DEV void mla_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#if defined(LK_EMU)
    lk_emu_mma(d, a, b0, b1, DT == MLA_DT_BF16);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (DT == MLA_DT_BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)d; (void)a; (void)b0; (void)b1;
    __trap();
#endif
}

/* o = o * alpha (per row half) + P V for one warp's value columns cg * C::NCOL ..
 * of rows rg * 16 .. + 15: P from sP (16-bit, rows of PROW elements), V from kv
 * (the key tile's BN rows of ROW elements).  The P V step of the mma decode
 * (mla_decode_mma.cu) and the sparse gather kernel (mla_sparse.cu). */
template <typename C, int DT, int BN, int ROW, int PROW>
GC_DEV void mla_mma_rescale_pv(float (&o)[C::NCOL / 8][4], const float (&alpha)[2], const uint16_t *sP,
                               const uint16_t *kv, int rg, int cg, int lane) {
#pragma unroll
    for (int n = 0; n < C::NCOL / 8; n++) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
    }
#pragma unroll 2
    for (int kk = 0; kk < BN / 16; kk++) {
        uint32_t af[4];
        mla_ldsm_x4(af, sP + (rg * 16 + (lane & 15)) * PROW + kk * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int nn = 0; nn < C::NCOL / 16; nn++) {
            uint32_t bf[4];
            mla_ldsm_x4_t(bf, kv + (kk * 16 + (lane & 15)) * ROW + cg * C::NCOL + nn * 16 + (lane >> 4) * 8);
            mla_mma<DT>(o[2 * nn], af, bf[0], bf[1]);
            mla_mma<DT>(o[2 * nn + 1], af, bf[2], bf[3]);
        }
    }
}

/* SM 9.0 bulk copies and mbarriers of the mma kernel's TMA configuration (MLA_MMA_TMA):
 * plain sm_90 PTX (no 'a' features), so the compute_90 PTX carries them too.
 * Below SM 9.0 they trap: the backend never selects that variant there.  The
 * emulator of the tests (LK_EMU) has their twins (tests/emu/emu_sm90.h); its
 * SM 9.0 runtime selects the variant as an H200 does. */
GC_DEV void mma_mbar_init(uint32_t bar, uint32_t count) {
#if defined(LK_EMU)
    lk_emu_mbar_init(bar, count);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
    (void)bar; (void)count;
    __trap();
#endif
}
GC_DEV void mma_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
#if defined(LK_EMU)
    lk_emu_mbar_expect_tx(bar, bytes); /* arrive.expect_tx: the bytes, then the arrival */
    lk_emu_mbar_arrive(bar);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#else
    (void)bar; (void)bytes;
    __trap();
#endif
}
GC_DEV void mma_mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(LK_EMU)
    lk_emu_mbar_wait(bar, parity);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .pred p;\nMMA_MBAR_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra MMA_MBAR_WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
#else
    (void)bar; (void)parity;
    __trap();
#endif
}
/* `bytes` (a multiple of 16, both addresses 16-byte aligned) from global src
 * to shared dst of this CTA, completing on mbarrier bar of this CTA (a
 * shared::cta address is a valid shared::cluster one naming the executing CTA,
 * with or without a cluster launch). */
GC_DEV void mma_bulk_g2s(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
#if defined(LK_EMU)
    lk_emu_bulk_g2s(dst, src, bytes, bar);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
#else
    (void)dst; (void)src; (void)bytes; (void)bar;
    __trap();
#endif
}

#endif
