/*
 * mma_sm80.cuh - CUDA-only tensor-core building blocks (SM 8.0+):
 * mma.sync m16n8k16 (f16/bf16 -> f32), ldmatrix (plain and .trans), and the
 * swizzled shared-memory tile layout they read.  Not for HIP.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, t = lane % 4):
 *   A 16x16 row-major: a0 (g, 2t..2t+1) a1 (g+8, 2t..) a2 (g, 8+2t..) a3 (g+8, 8+2t..)
 *   B 16x8 "col":      b0 (k 2t..2t+1, n g) b1 (k 8+2t.., n g)
 *   C 16x8 f32:        c0,c1 (g, 2t..2t+1) c2,c3 (g+8, 2t..2t+1)
 * ldmatrix.x4: lanes 8i..8i+7 give the row addresses of 8x8 matrix i, which
 * lands in register i; each lane receives row lane/4, columns 2(lane%4)..+1
 * (.trans: the transposed element).
 *
 * Tiles: rows of D 16-bit values (D/8 16-byte chunks), chunk c of row r
 * stored at chunk c ^ (r & 7): the 8 row addresses of an ldmatrix then fall
 * in 8 different bank groups (no conflicts), and so do cp.async writes.
 */
#ifndef SGL_CUDA_ATTN_MMA_SM80_CUH
#define SGL_CUDA_ATTN_MMA_SM80_CUH

#if defined(__HIPCC__)
#error "mma_sm80.cuh is CUDA-only (mma.sync / ldmatrix)"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "mma_sm80.cuh needs SM 8.0 or newer"
#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attn_kernels/common.cuh"

/* Element offset of (row, chunk c) in a swizzled tile of D-wide rows. */
template <int D> GC_DEV int swz(int row, int c) {
    static_assert(D >= 64 && D % 64 == 0, "the XOR swizzle needs >= 8 chunks per row");
    return row * D + ((c ^ (row & 7)) << 3);
}

#ifdef LK_EMU
/* The CPU emulator of the tests (tests/emu/, LK_EMU): the same fragment
 * semantics as the PTX below, a warp collective of all 32 lanes. */
GC_DEV void ldsm_x4(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 0); }
GC_DEV void ldsm_x4_t(uint32_t r[4], const void *p) { lk_emu_ldsm(r, p, 1); }
template <int DT> GC_DEV void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    lk_emu_mma(c, a, b0, b1, DT == GC_BF16);
}
#else
GC_DEV uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

GC_DEV void ldsm_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
GC_DEV void ldsm_x4_t(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

/* c += a * b (16x8x16). */
template <int DT> GC_DEV void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    if (DT == GC_BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* Two floats as a packed pair of 16-bit values, lo in the low half. */
template <int DT> GC_DEV uint32_t pack2(float lo, float hi) {
    if (DT == GC_BF16) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        return *(uint32_t *)&v;
    }
    __half2 v = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&v;
}

/* Slot of (row, col) as int32 (pools are checked to hold < 2^31 slots). */
GC_DEV int32_t attn_slot32(const attn_fwd &p, int row, int col) { return (int32_t)attn_slot(p, row, col); }

#endif
