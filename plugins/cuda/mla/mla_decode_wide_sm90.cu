/*
 * mla_decode_wide_sm90.cu - the wide kernel (sm_90a): tiles of 64 query rows
 * (decode and verify of >= 64 rows a request, extend) with wgmma and TMA
 * loads.  Auto runs it on SM 9.0 for a bf16 pool whose page size is 16, 32 or
 * a multiple of 64 (mla_resolve_kernel); elsewhere the mma kernel takes these
 * tiles.
 *
 * 256 threads = 2 consumer warpgroups, 64 rows an item.  The 64 x 512 fp32
 * output needs 128 registers a thread even split in two, so WG0 owns value
 * columns 0-255 and computes S of the even 64-key blocks (buffer K0), WG1 owns
 * columns 256-511 and the odd blocks (K1) ("seesaw" order).  Per pair (a, b):
 *   WG0: softmax(S_a) -> P_a to registers and to P0 -> BAR_A -> O_L += P_a V_aL
 *        -> BAR_B -> O_L += P_b V_bL (P_b from P1) -> S of the next even block.
 *   WG1: BAR_A -> O_R += P_a V_aR (P_a from P0), issued before softmax(S_b) so
 *        the tensor pipe holds both warpgroups' P_a V_a while it runs ->
 *        P_b to P1 -> BAR_B -> O_R += P_b V_bR -> S of the next odd block.
 * A block is 9 sub-tiles of 64 keys x 64 dims (8 KB, 128-byte swizzle, one
 * mbarrier each) loaded by TMA in boxes of min(page, 64) rows; the last user
 * of a sub-tile reloads it with the next block of its buffer as soon as it is
 * free, and the next QK^T starts on the sub-tiles that came back first.
 * Softmax keeps a lazy running max (WIDE_LAZY_LOG2), so after a row's first
 * block almost every O rescale is an identity and a warp vote skips it.
 * Shared memory: Q 64 KB + 2 x 72 KB KV + 2 x 8 KB P + statistics + 18
 * mbarriers, within SM 9.0's 227 KB opt-in (static_assert below).
 */
#include <string.h>

#include <cuda.h>

#include "mla_wgmma_ops.cuh"

#define WG_THREADS 256
#define WG_SUB 8192 /* one 64 x 64 bf16 sub-tile */
#define WG_OFF_Q 0
#define WG_OFF_K0 (WG_OFF_Q + 8 * WG_SUB)
#define WG_OFF_K1 (WG_OFF_K0 + 9 * WG_SUB)
#define WG_OFF_P0 (WG_OFF_K1 + 9 * WG_SUB)
#define WG_OFF_P1 (WG_OFF_P0 + WG_SUB)
#define WG_OFF_STAT (WG_OFF_P1 + WG_SUB)  /* 6 x 64 floats */
#define WG_OFF_BAR (WG_OFF_STAT + 6 * 64 * 4) /* 18 mbarriers */
#define WG_SMEM_USED (WG_OFF_BAR + 18 * 8)
#define WG_SMEM_ALLOC (WG_SMEM_USED + 1024) /* room to align the base to 1024 */
static_assert(WG_SMEM_ALLOC <= 232448, "the wide kernel's dynamic shared memory is above the SM 9.0 opt-in (227 KB)");

/* Named barriers: 0 is __syncthreads. */
#define BAR_A 1  /* WG0 -> WG1: m_a, alpha_a, P_a */
#define BAR_B 2  /* WG1 -> WG0: m_b, alpha_b, P_b */
#define BAR_WG0 4 /* inside one warpgroup (128) */

#if (defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)) || defined(LK_EMU)
#define MLA_HAVE_WGMMA 1 /* LK_EMU: the emulator's twins (mla_wgmma_ops.cuh, below) */
#endif

#ifdef MLA_HAVE_WGMMA

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
GC_DEV void wide_qk_rs_first(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
#ifdef LK_EMU
    lk_emu_wgmma(d, 64, a, 0, db, scale_d, 0, 1);
#else
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
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)
        : "memory");
#endif
}

/* One sub-tile of S (+)= Q K^T: 8 value sub-tiles from Q in shared memory,
 * the rope sub-tile (8) from Q's rope part in registers.  FIRST (rope
 * sub-tile only): it starts S from zero. */
template <bool FIRST = false>
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
            mla_wgmma_qk_ss(s, mla_desc_kmajor(qb + 32 * k), mla_desc_kmajor(kb + 32 * k));
    } else {
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if constexpr (FIRST)
                wide_qk_rs_first(s, qr[k], mla_desc_kmajor(kb + 32 * k), k);
            else
                mla_wgmma_qk_rs(s, qr[k], mla_desc_kmajor(kb + 32 * k));
        }
    }
}

/* The lazy running max (log2 units): the max moves only when a block's row
 * max exceeds it by more than this, so P <= 2^8 (exact range in bf16 and
 * fp32, same relative rounding) and after a row's first blocks almost every
 * alpha is exactly 1, which lets the O rescale be skipped (wide_scale_o).  O
 * and l stay relative to the same (stale) max, so the output and the split
 * partials' LSE (m + log2 l) are unchanged up to rounding. */
#define WIDE_LAZY_LOG2 8.f

/* Mask and exponentiate S of the block starting at key kb against the
 * incoming max: m_out = m_in unless the row max exceeds m_in + WIDE_LAZY_LOG2
 * (then m_out = row max), alpha = 2^(m_in - m_out), S <- P, ps = this
 * thread's part of the row sums. */
GC_DEV void wide_softmax(float (&s)[32], const WideCtx &c, int kb, const float m_in[2], float m_out[2],
                         float alpha[2], float ps[2]) {
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int key = kb + 8 * j + 2 * c.q4 + (e & 1);
            const float v = key < c.lim[e >> 1] ? s[4 * j + e] * c.scale_log2 : -INFINITY;
            s[4 * j + e] = v;
            mx[e >> 1] = fmaxf(mx[e >> 1], v);
        }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        /* the row's first block (m_in = MLA_M_INIT) always takes its max;
         * a fully masked row (mx = -inf) keeps m_in */
        const bool up = mx[i] > m_in[i] + WIDE_LAZY_LOG2;
        m_out[i] = up ? mx[i] : m_in[i];
        alpha[i] = up ? gc_exp2(m_in[i] - m_out[i]) : 1.f;
        ps[i] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float p = gc_exp2(s[4 * j + e] - m_out[e >> 1]);
            s[4 * j + e] = p;
            ps[e >> 1] += p;
        }
}

/* Two floats to packed bf16 (lo = a) in one cvt.rn.bf16x2.f32.  It also keeps
 * P a float value in the compiler's eyes: an integer rounding made it carry S
 * across the pair loop as b32 registers. */
GC_DEV uint32_t wide_pack(float a, float b) { return gc_bf16x2_rn(a, b); }

/* P (fp32 accumulator layout) as the A operand of m64nNk16: k-step k covers
 * keys 16k..16k+15 = accumulator columns 8(2k) .. 8(2k+1)+7. */
GC_DEV void wide_pack_a(const float (&s)[32], uint32_t (&pa)[4][4]) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        pa[k][0] = wide_pack(s[8 * k + 0], s[8 * k + 1]);
        pa[k][1] = wide_pack(s[8 * k + 2], s[8 * k + 3]);
        pa[k][2] = wide_pack(s[8 * k + 4], s[8 * k + 5]);
        pa[k][3] = wide_pack(s[8 * k + 6], s[8 * k + 7]);
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
GC_DEV void wide_store_p(unsigned char *tile, const WideCtx &c, const float (&s)[32], const float f[2]) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const int chunk = (j ^ (c.g & 7)) << 4;
        *(uint32_t *)(tile + c.g * 128 + chunk + 4 * c.q4) = wide_pack(s[4 * j] * f[0], s[4 * j + 1] * f[0]);
        *(uint32_t *)(tile + (c.g + 8) * 128 + chunk + 4 * c.q4) =
            wide_pack(s[4 * j + 2] * f[1], s[4 * j + 3] * f[1]);
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

/* Zero rows [valid, 64) of the value sub-tiles 0-7 of a KV buffer (the last
 * block of an item); the warpgroup's barrier publishes them to its own wgmma. */
GC_DEV void wide_zero_tail(unsigned char *kbuf, int valid, int t, int wg) {
    const uint4 z = make_uint4(0, 0, 0, 0);
    for (int i = t; i < (64 - valid) * 64; i += 128) {
        const int r = valid + i / 64, rem = i % 64;
        *(uint4 *)(kbuf + (rem / 8) * WG_SUB + r * 128 + (rem % 8) * 16) = z;
    }
    mla_fence_proxy_async();
    mla_bar_sync(BAR_WG0 + wg, 128);
}

/* The kernel body; the kernel holds the __grid_constant__ parameters (TMA
 * reads the map from the parameter space). */
GC_DEV void mla_wide_body(const mla_fwd_args &a, const CUtensorMap &tmap) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = mla_smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    WideCtx c;
    c.sbase = mla_smem_u32(smem);
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
    c.t = tid & 127;
    c.g = 16 * (c.t >> 5) + (lane >> 2);
    c.q4 = lane & 3;
    c.scale_log2 = a.scale_log2;
    float *sMa = (float *)(smem + WG_OFF_STAT), *sAa = sMa + 64, *sMb = sAa + 64, *sAb = sMb + 64;
    float *sL0 = sAb + 64, *sL1 = sL0 + 64;
    const uint32_t bar0 = c.sbase + WG_OFF_BAR; /* full[buf][sub] = bar0 + 8 (9 buf + sub) */
    const uint32_t kbuf0 = c.sbase + WG_OFF_K0, kbuf1 = c.sbase + WG_OFF_K1;
    const int box = a.page_size < 64 ? a.page_size : 64, nseg = 64 / box;

    if (tid == 0) {
        for (int i = 0; i < 18; i++) mla_mbar_init(bar0 + 8 * i, 1);
        mla_mbar_init_fence();
    }
    __syncthreads();

    uint32_t use0 = 0, use1 = 0; /* completed loads of each buffer: mbarrier phases */
    const int n_items = mla_hdr(a)->n_items;
    for (int itx = blockIdx.x; itx < n_items; itx += gridDim.x) {
        const mla_item item = mla_items(a)[itx];
        const int64_t prow = mla_pool_row(a, item.b);
        const int nblk = (item.kv_end - item.kv_begin + 63) / 64;
        const int tail = item.kv_end - (item.kv_begin + 64 * (nblk - 1)); /* 1..64 valid rows */

        /* Slots of block j's boxes (-1: past the end, not loaded). */
        auto slots = [&](int j, int32_t (&sl)[4]) {
#pragma unroll
            for (int s = 0; s < 4; s++) {
                const int key = item.kv_begin + 64 * j + box * s;
                sl[s] = s < nseg && j < nblk && key < item.kv_end ? (int32_t)mla_slot(a, prow, key) : -1;
            }
        };
        auto issue = [&](int j, int sub, const int32_t (&sl)[4]) {
            const int buf = j & 1;
            const uint32_t bar = bar0 + 8 * (9 * buf + sub);
            const uint32_t dst = (buf ? kbuf1 : kbuf0) + sub * WG_SUB;
            int nv = 0;
#pragma unroll
            for (int s = 0; s < 4; s++) nv += sl[s] >= 0;
            mla_mbar_expect_tx(bar, (uint32_t)(nv * box * 128));
#pragma unroll
            for (int s = 0; s < 4; s++)
                if (sl[s] >= 0) mla_tma_load_2d(dst + s * box * 128, &tmap, sub * 64, sl[s], bar);
        };

        int32_t slA[4], slB[4]; /* next even / odd block (issuing threads only) */
        if (tid == 0) {
            slots(0, slA);
            slots(1, slB);
            for (int sub = 0; sub < 9; sub++) issue(0, sub == 0 ? 8 : sub - 1, slA);
            if (nblk > 1)
                for (int sub = 0; sub < 9; sub++) issue(1, sub == 0 ? 8 : sub - 1, slB);
        }

        /* Q: dims 0-511 to shared memory (K-major swizzled), 64-575 to registers. */
        const uint16_t *qg = (const uint16_t *)a.q, *qrg = (const uint16_t *)a.q_rope;
#pragma unroll
        for (int half = 0; half < 2; half++) {
            uint4 v[8];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int ci = tid + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
                v[i] = r < item.nrows
                           ? __ldg((const uint4 *)(qg + mla_q_off(item.q_row0 + r, a.hq, a.q_ts, a.q_hs) + ch * 8))
                           : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int ci = tid + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
                *(uint4 *)(smem + WG_OFF_Q + (ch >> 3) * WG_SUB + r * 128 + (((ch & 7) ^ (r & 7)) << 4)) = v[i];
            }
        }
        uint32_t qr[4][4];
        {
            const bool ok0 = c.g < item.nrows, ok1 = c.g + 8 < item.nrows;
            const uint16_t *r0 = qrg + mla_q_off(item.q_row0 + c.g, a.hq, a.qr_ts, a.qr_hs) + 2 * c.q4;
            const uint16_t *r1 = qrg + mla_q_off(item.q_row0 + c.g + 8, a.hq, a.qr_ts, a.qr_hs) + 2 * c.q4;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                qr[k][0] = ok0 ? __ldg((const uint32_t *)(r0 + 16 * k)) : 0u;
                qr[k][1] = ok1 ? __ldg((const uint32_t *)(r1 + 16 * k)) : 0u;
                qr[k][2] = ok0 ? __ldg((const uint32_t *)(r0 + 16 * k + 8)) : 0u;
                qr[k][3] = ok1 ? __ldg((const uint32_t *)(r1 + 16 * k + 8)) : 0u;
            }
        }
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int r = c.g + 8 * i;
            const int see = item.key_base + (item.row0 + r) / a.hq + 1;
            c.lim[i] = r < item.nrows && see < item.kv_end ? see : item.kv_end;
        }
        mla_fence_proxy_async();
        __syncthreads();

        float o[128], s[32], l[2] = {0.f, 0.f}, m_run[2] = {MLA_M_INIT, MLA_M_INIT};
#pragma unroll
        for (int i = 0; i < 128; i++) o[i] = 0.f;
        /* S of the first block of this warpgroup's buffer. */
        if (wg == 0 || nblk > 1) {
#pragma unroll
            for (int i = 0; i < 32; i++) s[i] = 0.f;
            mla_wgmma_fence();
            const uint32_t kb = wg ? kbuf1 : kbuf0, par = (wg ? use1 : use0) & 1u;
#pragma unroll
            for (int sub = 0; sub < 9; sub++)
                wide_qk_sub(s, c, qr, kb, sub == 0 ? 8 : sub - 1, bar0 + 8 * (9 * wg + (sub == 0 ? 8 : sub - 1)), par);
            mla_wgmma_commit();
            mla_wgmma_wait<0>();
            mla_fence_regs(s);
        }

        for (int i = 0; 2 * i < nblk; i++) {
            const int ja = 2 * i, jb = 2 * i + 1;
            const bool has_b = jb < nblk, has_a2 = ja + 2 < nblk, has_b2 = jb + 2 < nblk;
            if (c.t == 0) { /* slots of the next pair, read well before their use */
                slots(ja + 2, slA);
                slots(jb + 2, slB);
            }
            if (wg == 0) {
                /* --- WG0: block a (buffer K0) --- */
                if (ja == nblk - 1 && tail < 64) wide_zero_tail(smem + WG_OFF_K0, tail, c.t, 0);
                float m_a[2], al_a[2], ps[2];
                wide_softmax(s, c, item.kv_begin + 64 * ja, m_run, m_a, al_a, ps);
#pragma unroll
                for (int r = 0; r < 2; r++) l[r] = l[r] * al_a[r] + ps[r];
                uint32_t pa[4][4];
                wide_pack_a(s, pa);
                /* P0's last reader (WG1, previous pair) read it before BAR_B, which WG0 met */
                wide_put_pa(smem + WG_OFF_P0, c.t, pa);
                if (c.q4 == 0) {
                    sMa[c.g] = m_a[0];
                    sMa[c.g + 8] = m_a[1];
                    sAa[c.g] = al_a[0];
                    sAa[c.g + 8] = al_a[1];
                }
                mla_bar_arrive(BAR_A, WG_THREADS);
                wide_scale_o(o, al_a);
                mla_wgmma_fence();
#pragma unroll
                for (int k = 0; k < 4; k++) mla_wgmma_pv_rs(o, pa[k], mla_desc_mnmajor(kbuf0 + 2048 * k));
                mla_wgmma_commit();
                if (c.t == 0 && has_a2) issue(ja + 2, 8, slA); /* K0 rope: free since S_a */
                mla_wgmma_wait<0>();
                mla_fence_regs(o);
                if (c.t == 0 && has_a2) /* K0 sub-tiles 0-3 are free: next even block */
                    for (int sub = 0; sub < 4; sub++) issue(ja + 2, sub, slA);
                mla_bar_sync(BAR_B, WG_THREADS);
                const float al_b[2] = {sAb[c.g], sAb[c.g + 8]};
                m_run[0] = sMb[c.g];
                m_run[1] = sMb[c.g + 8];
                wide_scale_o(o, al_b);
                l[0] *= al_b[0];
                l[1] *= al_b[1];
                if (has_b) {
                    mla_wgmma_fence();
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        mla_wgmma_pv_ss(o, mla_desc_kmajor(c.sbase + WG_OFF_P1 + 32 * k),
                                        mla_desc_mnmajor(kbuf1 + 2048 * k));
                    mla_wgmma_commit();
                }
                if (has_a2) { /* (implies has_b) S of the next even block */
                    const uint32_t par_a2 = (use0 + (uint32_t)i + 1u) & 1u;
                    wide_qk_sub<true>(s, c, qr, kbuf0, 8, bar0 + 8 * 8, par_a2);
#pragma unroll
                    for (int sub = 0; sub < 4; sub++) wide_qk_sub(s, c, qr, kbuf0, sub, bar0 + 8 * sub, par_a2);
                    mla_wgmma_commit();
                    mla_wgmma_wait<1>(); /* P_b V_bL is done: K1 sub-tiles 0-3 are free */
                    mla_fence_regs(o);
                    if (c.t == 0 && has_b2)
                        for (int sub = 0; sub < 4; sub++) issue(jb + 2, sub, slB);
#pragma unroll
                    for (int sub = 4; sub < 8; sub++) wide_qk_sub(s, c, qr, kbuf0, sub, bar0 + 8 * sub, par_a2);
                    mla_wgmma_commit();
                    mla_wgmma_wait<0>();
                    mla_fence_regs(s);
                } else { /* last pair: no next block in either buffer */
                    mla_wgmma_wait<0>();
                    mla_fence_regs(o);
                }
            } else {
                /* --- WG1: block b (buffer K1); P_a V_aR is issued before softmax(S_b) --- */
                mla_bar_sync(BAR_A, WG_THREADS);
                const float m_a[2] = {sMa[c.g], sMa[c.g + 8]}, al_a[2] = {sAa[c.g], sAa[c.g + 8]};
                uint32_t pa[4][4]; /* read before BAR_B: WG0 rewrites P0 after it */
                wide_get_pa(smem + WG_OFF_P0, c.t, pa);
                wide_scale_o(o, al_a); /* o is idle: the previous pair waited for its P V */
                mla_wgmma_fence();
#pragma unroll
                for (int k = 0; k < 4; k++)
                    mla_wgmma_pv_rs(o, pa[k], mla_desc_mnmajor(kbuf0 + 4 * WG_SUB + 2048 * k));
                mla_wgmma_commit();
                float al_b[2] = {1.f, 1.f};
                if (has_b) {
                    /* S_b is complete (waited at the end of the previous pair, or
                     * before the loop): the softmax runs beside P_a V_aR */
                    if (c.t == 0 && has_b2) issue(jb + 2, 8, slB); /* K1 rope: free since S_b */
                    if (jb == nblk - 1 && tail < 64) wide_zero_tail(smem + WG_OFF_K1, tail, c.t, 1);
                    float ps[2];
                    wide_softmax(s, c, item.kv_begin + 64 * jb, m_a, m_run, al_b, ps);
#pragma unroll
                    for (int r = 0; r < 2; r++) l[r] = l[r] * al_a[r] * al_b[r] + ps[r];
                    const float one[2] = {1.f, 1.f};
                    wide_store_p(smem + WG_OFF_P1, c, s, one);
                } else {
                    m_run[0] = m_a[0];
                    m_run[1] = m_a[1];
                    l[0] *= al_a[0];
                    l[1] *= al_a[1];
                }
                if (c.q4 == 0) {
                    sMb[c.g] = m_run[0];
                    sMb[c.g + 8] = m_run[1];
                    sAb[c.g] = al_b[0];
                    sAb[c.g + 8] = al_b[1];
                }
                mla_fence_proxy_async();
                mla_bar_arrive(BAR_B, WG_THREADS);
                mla_wgmma_wait<0>(); /* P_a V_aR is done: K0 sub-tiles 4-7 are free */
                mla_fence_regs(o);
#pragma unroll
                for (int k = 0; k < 4; k++) mla_fence_regs(pa[k]); /* live until the wgmma that read them is done */
                if (c.t == 0 && has_a2)
                    for (int sub = 4; sub < 8; sub++) issue(ja + 2, sub, slA);
                if (has_b) {
                    wide_scale_o(o, al_b); /* O_R = (O_R a_a + P_a V_aR) a_b + P_b V_bR */
                    uint32_t pb[4][4];
                    wide_pack_a(s, pb);
                    mla_wgmma_fence();
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        mla_wgmma_pv_rs(o, pb[k], mla_desc_mnmajor(kbuf1 + 4 * WG_SUB + 2048 * k));
                    mla_wgmma_commit();
                    if (has_b2) {
                        /* S of the next odd block behind P_b V_bR, as WG0 does with its
                         * next even block: rope and sub-tiles 0-3 first (not read by
                         * P_b V_bR), then 4-7 once P_b V_bR is done and they reloaded */
                        const uint32_t par_b2 = (use1 + (uint32_t)i + 1u) & 1u;
                        wide_qk_sub<true>(s, c, qr, kbuf1, 8, bar0 + 8 * (9 + 8), par_b2);
#pragma unroll
                        for (int sub = 0; sub < 4; sub++) wide_qk_sub(s, c, qr, kbuf1, sub, bar0 + 8 * (9 + sub), par_b2);
                        mla_wgmma_commit();
                        mla_wgmma_wait<1>(); /* P_b V_bR is done: K1 sub-tiles 4-7 are free */
                        mla_fence_regs(o);
#pragma unroll
                        for (int k = 0; k < 4; k++) mla_fence_regs(pb[k]);
                        if (c.t == 0)
                            for (int sub = 4; sub < 8; sub++) issue(jb + 2, sub, slB);
#pragma unroll
                        for (int sub = 4; sub < 8; sub++) wide_qk_sub(s, c, qr, kbuf1, sub, bar0 + 8 * (9 + sub), par_b2);
                        mla_wgmma_commit();
                        mla_wgmma_wait<0>();
                        mla_fence_regs(s);
                    } else {
                        mla_wgmma_wait<0>();
                        mla_fence_regs(o);
#pragma unroll
                        for (int k = 0; k < 4; k++) mla_fence_regs(pb[k]);
                    }
                }
            }
        }


        /* Epilogue: l = WG0's part + WG1's part; both halves are relative to m_run. */
#pragma unroll
        for (int r = 0; r < 2; r++) {
            l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
            l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        }
        if (c.q4 == 0) {
            float *sl = wg ? sL1 : sL0;
            sl[c.g] = l[0];
            sl[c.g + 8] = l[1];
        }
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = c.g + 8 * r;
            if (row >= item.nrows) continue;
            const float lt = sL0[row] + sL1[row];
            const float inv = lt > 0.f ? 1.f / lt : 0.f;
            if (item.part < 0) {
                uint16_t *orow = (uint16_t *)a.out + ((int64_t)item.q_row0 + row) * MLA_D_V + 256 * wg + 2 * c.q4;
#pragma unroll
                for (int j = 0; j < 32; j++)
                    *(uint32_t *)(orow + 8 * j) = mla_pack2<MLA_DT_BF16>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
            } else {
                const int64_t pr = (int64_t)item.part + row;
                float *orow = a.part_o + pr * MLA_D_V + 256 * wg + 2 * c.q4;
#pragma unroll
                for (int j = 0; j < 32; j++)
                    *(float2 *)(orow + 8 * j) = make_float2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
                if (wg == 0 && c.q4 == 0) a.part_lse[pr] = lt > 0.f ? m_run[r] + __log2f(lt) : -INFINITY;
            }
        }
        use0 += (uint32_t)(nblk + 1) / 2;
        use1 += (uint32_t)nblk / 2;
        __syncthreads(); /* the next item rewrites Q, the buffers and the statistics */
    }
}

#endif /* MLA_HAVE_WGMMA */

__global__ __launch_bounds__(WG_THREADS, 1) void mla_wgmma_wide_kernel(const __grid_constant__ mla_fwd_args a,
                                                                      const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_wide_body(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_wide_smem_bytes(void) { return WG_SMEM_ALLOC; }

extern "C" int mla_launch_wide(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || a->rows_per_tile != 64 || !a->tmap)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    mla_wgmma_wide_kernel<<<a->grid_items, WG_THREADS, WG_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_wide_init(void) {
    return (int)cudaFuncSetAttribute(mla_wgmma_wide_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)WG_SMEM_ALLOC);
}
