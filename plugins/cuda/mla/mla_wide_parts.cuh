/*
 * mla_wide_parts.cuh - the parts the two sm_90a wgmma kernels share: the
 * dense wide kernel (mla_decode_wide_sm90.cu) and the sparse seesaw
 * (mla_sparse_seesaw_sm90.cu).  Both hold 64 query rows an item in two
 * consumer warpgroups, Q's first 512 dims in shared memory as 8 sub-tiles of
 * 64 x 64 (K-major, 128-byte swizzle) and its 64 rope dims in registers, and
 * the 64-key blocks as 9 such sub-tiles: S = Q K^T on m64n64k16, P V on
 * m64n256k16 with V read MN-major from the same sub-tiles.  The device
 * helpers exist where MLA_HAVE_WGMMA is set (sm_90a, or the emulator).
 */
#ifndef SGL_MLA_WIDE_PARTS_CUH
#define SGL_MLA_WIDE_PARTS_CUH

#include "mla_wgmma_ops.cuh"

#define WG_THREADS 256
#define WG_SUB 8192 /* one 64 x 64 bf16 sub-tile */
#define WG_OFF_Q 0

/* Named barriers: 0 is __syncthreads. */
#define BAR_A 1  /* WG0 -> WG1: m_a, alpha_a, P_a */
#define BAR_B 2  /* WG1 -> WG0: m_b, alpha_b, P_b */
#define BAR_WG0 4 /* inside one warpgroup (128) */

#if (defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)) || defined(LK_EMU)
#define MLA_HAVE_WGMMA 1 /* LK_EMU: the emulator's twins (mla_wgmma_ops.cuh) */
#endif

#ifdef MLA_HAVE_WGMMA

/* The lazy running max (log2 units): the max moves only when a block's row
 * max exceeds it by more than this, so P <= 2^8 (exact range in bf16 and
 * fp32, same relative rounding) and after a row's first blocks almost every
 * alpha is exactly 1, which lets the O rescale be skipped (wide_scale_o).  O
 * and l stay relative to the same (stale) max, so the output and the split
 * partials' LSE (m + log2 l) are unchanged up to rounding. */
#define WIDE_LAZY_LOG2 8.f

/* Per-thread view of the accumulator layout (PTX "wgmma D fragment"): thread
 * (warp w of the warpgroup, lane) holds rows 16 w + lane / 4 and that + 8;
 * element 4 c + e is column 8 c + 2 (lane % 4) + (e & 1) of row (e < 2 ? r : r + 8). */
struct WideCtx {
    uint32_t sbase;
    int t, g, q4;
    int lim[2];
    float scale_log2;
};

/* S[64x64] (+)= Q_rope (registers) x K^T with scale-d = 0 on k-step 0: the
 * first sub-tile of an in-loop S starts from zero without 32 zeroing moves. */
#define WIDE_QK_RS_FIRST(TY) \
    asm volatile( \
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " \
        "{" \
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d) \
        : "memory")
template <int DT = MLA_DT_BF16>
GC_DEV void wide_qk_rs_first(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
#ifdef LK_EMU
    lk_emu_wgmma(d, 64, a, 0, db, scale_d, 0, DT == MLA_DT_BF16);
#else
    if constexpr (DT == MLA_DT_F16)
        WIDE_QK_RS_FIRST("f16");
    else
        WIDE_QK_RS_FIRST("bf16");
#endif
}

/* One sub-tile of S (+)= Q K^T: 8 value sub-tiles from Q in shared memory,
 * the rope sub-tile (8) from Q's rope part in registers.  FIRST (rope
 * sub-tile only): it starts S from zero. */
template <bool FIRST = false, int DT = MLA_DT_BF16>
GC_DEV void wide_qk_sub(float (&s)[32], const WideCtx &c, const uint32_t (&qr)[4][4], uint32_t kbuf,
                        int sub, uint32_t bar, uint32_t parity) {
    mla_mbar_wait(bar, parity);
    /* After the wait loop (a branch), an explicit fence: else ptxas injects
     * one on a divergent path and serialises every wgmma (C7519/C7520). */
    mla_wgmma_fence();
    const uint32_t kb = kbuf + sub * WG_SUB;
    if (sub < 8) {
        const uint32_t qb = c.sbase + WG_OFF_Q + sub * WG_SUB;
#pragma unroll
        for (int k = 0; k < 4; k++)
            mla_wgmma_qk_ss<DT>(s, mla_desc_kmajor(qb + 32 * k), mla_desc_kmajor(kb + 32 * k));
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if constexpr (FIRST)
                wide_qk_rs_first<DT>(s, qr[k], mla_desc_kmajor(kb + 32 * k), k);
            else
                mla_wgmma_qk_rs<DT>(s, qr[k], mla_desc_kmajor(kb + 32 * k));
        }
    }
}

/* Two floats to a packed 16-bit pair of DT (lo = a), round to nearest even,
 * in one cvt.rn.{bf16,f16}x2.f32 (P is finite).  It also keeps P a float value in the
 * compiler's eyes: an integer rounding made it carry S across the pair loop
 * as b32 registers. */
template <int DT = MLA_DT_BF16> GC_DEV uint32_t wide_pack(float a, float b) {
#ifdef LK_EMU /* the emulator of the tests: the same rounding (to nearest even) */
    return mla_pack2<DT>(a, b);
#else
    uint32_t r;
    if constexpr (DT == MLA_DT_F16)
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
#endif
}

/* P (fp32 accumulator layout) as the A operand of m64nNk16: k-step k covers
 * keys 16k..16k+15 = accumulator columns 8(2k) .. 8(2k+1)+7. */
template <int DT = MLA_DT_BF16> GC_DEV void wide_pack_a(const float (&s)[32], uint32_t (&pa)[4][4]) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        pa[k][0] = wide_pack<DT>(s[8 * k + 0], s[8 * k + 1]);
        pa[k][1] = wide_pack<DT>(s[8 * k + 2], s[8 * k + 3]);
        pa[k][2] = wide_pack<DT>(s[8 * k + 4], s[8 * k + 5]);
        pa[k][3] = wide_pack<DT>(s[8 * k + 6], s[8 * k + 7]);
    }
}

/* P_a (packed A fragments) WG0 -> WG1 through P0: word (4k + e) of thread t
 * at 4 (128 k + t) + e, one 16-byte store / load per k, no bank conflicts. */
GC_DEV void wide_put_pa(unsigned char *p0, int t, const uint32_t (&pa)[4][4]) {
#pragma unroll
    for (int k = 0; k < 4; k++)
        *(uint4 *)(p0 + 16 * (128 * k + t)) = make_uint4(pa[k][0], pa[k][1], pa[k][2], pa[k][3]);
}
GC_DEV void wide_get_pa(const unsigned char *p0, int t, uint32_t (&pa)[4][4]) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint4 v = *(const uint4 *)(p0 + 16 * (128 * k + t));
        pa[k][0] = v.x;
        pa[k][1] = v.y;
        pa[k][2] = v.z;
        pa[k][3] = v.w;
    }
}

/* P * f (per row) into a 64 x 64 K-major swizzled tile in shared memory. */
template <int DT = MLA_DT_BF16> GC_DEV void wide_store_p(unsigned char *tile, const WideCtx &c, const float (&s)[32], const float f[2]) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int chunk = (j ^ (c.g & 7)) << 4;
        *(uint32_t *)(tile + c.g * 128 + chunk + 4 * c.q4) = wide_pack<DT>(s[4 * j] * f[0], s[4 * j + 1] * f[0]);
        *(uint32_t *)(tile + (c.g + 8) * 128 + chunk + 4 * c.q4) =
            wide_pack<DT>(s[4 * j + 2] * f[1], s[4 * j + 3] * f[1]);
    }
}

/* O *= f per row, only when some row of the warp has f != 1 (a warp vote, so
 * the branch is uniform): with the lazy max most rescales vanish. */
GC_DEV void wide_scale_o(float (&o)[128], const float f[2]) {
    if (__any_sync(0xffffffffu, f[0] != 1.f || f[1] != 1.f)) {
#pragma unroll
        for (int j = 0; j < 32; j++) {
            o[4 * j] *= f[0];
            o[4 * j + 1] *= f[0];
            o[4 * j + 2] *= f[1];
            o[4 * j + 3] *= f[1];
        }
    }
}

#endif /* MLA_HAVE_WGMMA */

#endif
