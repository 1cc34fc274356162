/*
 * mla_sparse_wide_sm90.cu - DSA's sparse MLA (mla_sparse.h) on sm_90a
 * warpgroup MMA: the wide kernel's structure (mla_decode_wide_sm90.cu) with
 * the key blocks gathered from the row of topk_indices.  Option
 * sparse_kernel=wgmma runs it for a bf16 or f16 pool at more than 16 heads on SM 9.0
 * (docs/cuda_mla.md, "DSA sparse MLA").
 *
 * CTA (blockIdx.x = token * head blocks + head block, .y = split of the
 * row, as mla_sparse.cu's grid), 256 threads = 2 consumer warpgroups, 64 head
 * rows.  The split's entries [k0, k1) of the row are cut into 64-key blocks;
 * WG0 computes S of the even blocks (buffer K0), WG1 of the odd ones (K1),
 * each softmax hands P over as the wide kernel does, WG0 adds P V into value
 * columns 0-255 and WG1 into 256-511 (the seesaw order, unchanged).
 *
 * Gather: block j's 64 rows are 64 x 9 TMA boxes of one row (64 elements,
 * 128-byte swizzle) at slot topk[k0 + 64 j + r], each landing at row r of its
 * 64 x 64 sub-tile; the swizzle follows the shared-memory address (bits 4-6
 * ^= bits 7-9), so a one-row box at r * 128 of a 1024-byte-aligned sub-tile
 * lands where the K-major descriptor reads row r.  Warp 0 of the warpgroup
 * that frees a sub-tile issues its reload: lane l takes rows l and l + 32,
 * whose entries it loaded at the start of the pair and judges at the issue
 * (a slot outside the pool is taken as -1, and noted in the fault record by
 * the issuer of the block's rope sub-tile).  A -1 row (or one past
 * k1) is not loaded: its 128 bytes are zeroed by generic stores, fenced to the
 * async proxy, and its key is masked (-inf) in the softmax through a 64-bit
 * validity mask in shared memory (written with the rope sub-tile, read after
 * that sub-tile's wait).  Each sub-tile's mbarrier takes 32 arrivals (the
 * issuing warp; lane 0's carries the expected bytes), so the phase completes
 * once every lane's zero rows are written and every valid row has landed.
 * The mask ring has 4 entries (block j at j % 4): WG1 writes the mask of
 * block b + 2 before its softmax of block b reads that of b.
 */
#include <string.h>

#include <cuda.h>

#include "mla_sparse.h"
#include "mla_wide_parts.cuh"

#define SW_OFF_K0 (WG_OFF_Q + 8 * WG_SUB)
#define SW_OFF_K1 (SW_OFF_K0 + 9 * WG_SUB)
#define SW_OFF_P0 (SW_OFF_K1 + 9 * WG_SUB)
#define SW_OFF_P1 (SW_OFF_P0 + WG_SUB)
#define SW_OFF_STAT (SW_OFF_P1 + WG_SUB)      /* 6 x 64 floats */
#define SW_OFF_BAR (SW_OFF_STAT + 6 * 64 * 4) /* 18 mbarriers */
#define SW_OFF_OK (SW_OFF_BAR + 18 * 8)       /* 4 x 64-bit validity masks */
#define SW_SMEM_USED (SW_OFF_OK + 4 * 8)
#define SW_SMEM_ALLOC (SW_SMEM_USED + 1024) /* room to align the base to 1024 */
static_assert(SW_SMEM_ALLOC <= 232448, "the sparse wgmma kernel's shared memory is above SM 9.0's 227 KB per block");

#ifdef MLA_HAVE_WGMMA

GC_DEV int sw_popc(uint32_t x) {
#ifdef LK_EMU
    return __builtin_popcount(x);
#else
    return __popc(x);
#endif
}

/* Mask (the block's validity bits: lo = keys 0-31, hi = 32-63) and
 * exponentiate S against the incoming max, with the wide kernel's lazy max:
 * m_out = m_in unless the row max exceeds m_in + WIDE_LAZY_LOG2, alpha =
 * 2^(m_in - m_out), S <- P, ps = this thread's part of the row sums. */
GC_DEV void sw_softmax(float (&s)[32], const WideCtx &c, uint32_t lo, uint32_t hi, const float m_in[2],
                       float m_out[2], float alpha[2], float ps[2]) {
    float mx[2] = {-INFINITY, -INFINITY};
    lo >>= 2 * c.q4;
    hi >>= 2 * c.q4;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const bool ok = (((j < 4 ? lo : hi) >> (8 * (j & 3) + (e & 1))) & 1u) != 0;
            const float v = ok ? s[4 * j + e] * c.scale_log2 : -INFINITY;
            s[4 * j + e] = v;
            mx[e >> 1] = fmaxf(mx[e >> 1], v);
        }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        /* the row's first valid block (m_in = MLA_M_INIT) always takes its
         * max; a fully masked block (mx = -inf) keeps m_in */
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

template <int DT> GC_DEV void mla_sparse_wide_body(const mla_sparse_args &a, const CUtensorMap &tmap) {
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
    float *sMa = (float *)(smem + SW_OFF_STAT), *sAa = sMa + 64, *sMb = sAa + 64, *sAb = sMb + 64;
    float *sL0 = sAb + 64, *sL1 = sL0 + 64;
    uint32_t *sOk = (uint32_t *)(smem + SW_OFF_OK); /* block j: words 2 (j % 4), + 1 */
    const uint32_t bar0 = c.sbase + SW_OFF_BAR;     /* full[buf][sub] = bar0 + 8 (9 buf + sub) */
    const uint32_t kbuf0 = c.sbase + SW_OFF_K0, kbuf1 = c.sbase + SW_OFF_K1;

    const int hblocks = (a.hq + 63) / 64;
    const int t = blockIdx.x / hblocks, h0 = (blockIdx.x % hblocks) * 64, split = blockIdx.y;
    const int nrows = min(64, a.hq - h0);
    const int64_t k0 = (int64_t)split * a.tiles_per_split * MLA_SPARSE_BN;
    const int64_t k1 = min((int64_t)a.topk_k, k0 + (int64_t)a.tiles_per_split * MLA_SPARSE_BN);
    const int nblk = k1 > k0 ? (int)((k1 - k0 + 63) / 64) : 0;
    const int32_t *trow = a.topk + (int64_t)t * a.topk_k;
    const int64_t qrow0 = (int64_t)t * a.hq + h0;

    if (tid == 0) {
        for (int i = 0; i < 18; i++) mla_mbar_init(bar0 + 8 * i, 32);
        mla_mbar_init_fence();
    }
    __syncthreads();

    /* The entries of rows lane and lane + 32 of block j as read (-1 past
     * the split): loaded here, a pair ahead, and judged only where issue
     * uses them, so no warp waits for the load at the top of a pair. */
    auto slots = [&](int j, int32_t (&sl)[2]) {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int64_t e = k0 + 64 * (int64_t)j + lane + 32 * r;
            sl[r] = j < nblk && e < k1 ? __ldg(trow + e) : -1;
        }
    };
    /* Sub-tile `sub` of block j into its buffer, by one whole warp.  An
     * entry outside the pool (not -1) is taken as -1; the issue of the rope
     * sub-tile (once a block) notes it in the fault record. */
    auto issue = [&](int j, int sub, const int32_t (&sl)[2]) {
        const int buf = j & 1;
        const uint32_t bar = bar0 + 8 * (9 * buf + sub);
        const uint32_t dst = (buf ? kbuf1 : kbuf0) + sub * WG_SUB;
        bool ok[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            ok[r] = sl[r] >= 0 && (int64_t)sl[r] < a.num_slots;
            if (sub == 8 && !ok[r] && sl[r] != -1)
                sgl_fault_note(a.fault, SGL_FAULT_TOPK_INDICES, (int64_t)t * a.topk_k + k0 + 64 * (int64_t)j + lane + 32 * r,
                               sl[r], -1, a.num_slots);
        }
        const uint32_t v0 = __ballot_sync(0xffffffffu, ok[0]), v1 = __ballot_sync(0xffffffffu, ok[1]);
        if (sub == 8 && lane == 0) {
            sOk[2 * (j & 3)] = v0;
            sOk[2 * (j & 3) + 1] = v1;
        }
        if (!ok[0] || !ok[1]) {
            const uint4 z = make_uint4(0, 0, 0, 0);
            unsigned char *d = smem + (dst - c.sbase);
#pragma unroll
            for (int r = 0; r < 2; r++)
                if (!ok[r])
#pragma unroll
                    for (int ch = 0; ch < 8; ch++) *(uint4 *)(d + (lane + 32 * r) * 128 + ch * 16) = z;
            mla_fence_proxy_async(); /* the zeros, for the wgmma that reads them */
        }
        if (lane == 0)
            mla_mbar_expect_tx(bar, (uint32_t)(sw_popc(v0) + sw_popc(v1)) * 128u);
        else
            mla_mbar_arrive(bar);
#pragma unroll
        for (int r = 0; r < 2; r++)
            if (ok[r]) mla_tma_load_2d(dst + (lane + 32 * r) * 128, &tmap, sub * 64, sl[r], bar);
    };

    int32_t slA[2], slB[2]; /* next even / odd block (warp 0 of each warpgroup) */
    if (tid < 32) {
        slots(0, slA);
        slots(1, slB);
        if (nblk > 0)
            for (int sub = 0; sub < 9; sub++) issue(0, sub == 0 ? 8 : sub - 1, slA);
        if (nblk > 1)
            for (int sub = 0; sub < 9; sub++) issue(1, sub == 0 ? 8 : sub - 1, slB);
    }

    /* Q: dims 0-511 to shared memory (K-major swizzled), 512-575 to registers. */
    const uint16_t *qg = (const uint16_t *)a.q;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        uint4 v[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int ci = tid + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
            v[i] = r < nrows ? __ldg((const uint4 *)(qg + (qrow0 + r) * MLA_D_QK + ch * 8)) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int ci = tid + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
            *(uint4 *)(smem + WG_OFF_Q + (ch >> 3) * WG_SUB + r * 128 + (((ch & 7) ^ (r & 7)) << 4)) = v[i];
        }
    }
    uint32_t qr[4][4];
    {
        const bool ok0 = c.g < nrows, ok1 = c.g + 8 < nrows;
        const uint16_t *r0 = qg + (qrow0 + (ok0 ? c.g : 0)) * MLA_D_QK + MLA_D_V + 2 * c.q4;
        const uint16_t *r1 = qg + (qrow0 + (ok1 ? c.g + 8 : 0)) * MLA_D_QK + MLA_D_V + 2 * c.q4;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            qr[k][0] = ok0 ? __ldg((const uint32_t *)(r0 + 16 * k)) : 0u;
            qr[k][1] = ok1 ? __ldg((const uint32_t *)(r1 + 16 * k)) : 0u;
            qr[k][2] = ok0 ? __ldg((const uint32_t *)(r0 + 16 * k + 8)) : 0u;
            qr[k][3] = ok1 ? __ldg((const uint32_t *)(r1 + 16 * k + 8)) : 0u;
        }
    }
    mla_fence_proxy_async();
    __syncthreads();

    float o[128], s[32], l[2] = {0.f, 0.f}, m_run[2] = {MLA_M_INIT, MLA_M_INIT};
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.f;
    /* S of the first block of this warpgroup's buffer. */
    if (nblk > wg) {
#pragma unroll
        for (int i = 0; i < 32; i++) s[i] = 0.f;
        mla_wgmma_fence();
        const uint32_t kb = wg ? kbuf1 : kbuf0;
#pragma unroll
        for (int sub = 0; sub < 9; sub++)
            wide_qk_sub<false, DT>(s, c, qr, kb, sub == 0 ? 8 : sub - 1, bar0 + 8 * (9 * wg + (sub == 0 ? 8 : sub - 1)), 0u);
        mla_wgmma_commit();
        mla_wgmma_wait<0>();
        mla_fence_regs(s);
    }

    for (int i = 0; 2 * i < nblk; i++) {
        const int ja = 2 * i, jb = 2 * i + 1;
        const bool has_b = jb < nblk, has_a2 = ja + 2 < nblk, has_b2 = jb + 2 < nblk;
        if (c.t < 32) { /* slots of the next pair, read well before their use */
            slots(ja + 2, slA);
            slots(jb + 2, slB);
        }
        if (wg == 0) {
            /* --- WG0: block a (buffer K0) --- */
            float m_a[2], al_a[2], ps[2];
            sw_softmax(s, c, sOk[2 * (ja & 3)], sOk[2 * (ja & 3) + 1], m_run, m_a, al_a, ps);
#pragma unroll
            for (int r = 0; r < 2; r++) l[r] = l[r] * al_a[r] + ps[r];
            uint32_t pa[4][4];
            wide_pack_a<DT>(s, pa);
            /* P0's last reader (WG1, previous pair) read it before BAR_B, which WG0 met */
            wide_put_pa(smem + SW_OFF_P0, c.t, pa);
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
            for (int k = 0; k < 4; k++) mla_wgmma_pv_rs<DT>(o, pa[k], mla_desc_mnmajor(kbuf0 + 2048 * k));
            mla_wgmma_commit();
            if (c.t < 32 && has_a2) issue(ja + 2, 8, slA); /* K0 rope: free since S_a */
            mla_wgmma_wait<0>();
            mla_fence_regs(o);
            if (c.t < 32 && has_a2) /* K0 sub-tiles 0-3 are free: next even block */
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
                    mla_wgmma_pv_ss<DT>(o, mla_desc_kmajor(c.sbase + SW_OFF_P1 + 32 * k), mla_desc_mnmajor(kbuf1 + 2048 * k));
                mla_wgmma_commit();
            }
            if (has_a2) { /* (implies has_b) S of the next even block */
                const uint32_t par_a2 = (uint32_t)(i + 1) & 1u;
                wide_qk_sub<true, DT>(s, c, qr, kbuf0, 8, bar0 + 8 * 8, par_a2);
#pragma unroll
                for (int sub = 0; sub < 4; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf0, sub, bar0 + 8 * sub, par_a2);
                mla_wgmma_commit();
                mla_wgmma_wait<1>(); /* P_b V_bL is done: K1 sub-tiles 0-3 are free */
                mla_fence_regs(o);
                if (c.t < 32 && has_b2)
                    for (int sub = 0; sub < 4; sub++) issue(jb + 2, sub, slB);
#pragma unroll
                for (int sub = 4; sub < 8; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf0, sub, bar0 + 8 * sub, par_a2);
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
            wide_get_pa(smem + SW_OFF_P0, c.t, pa);
            wide_scale_o(o, al_a); /* o is idle: the previous pair waited for its P V */
            mla_wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; k++) mla_wgmma_pv_rs<DT>(o, pa[k], mla_desc_mnmajor(kbuf0 + 4 * WG_SUB + 2048 * k));
            mla_wgmma_commit();
            float al_b[2] = {1.f, 1.f};
            if (has_b) {
                /* S_b is complete (waited at the end of the previous pair, or
                 * before the loop): the softmax runs beside P_a V_aR; its mask
                 * is read before the rope issue below rewrites entry b + 2 */
                const uint32_t mlo = sOk[2 * (jb & 3)], mhi = sOk[2 * (jb & 3) + 1];
                if (c.t < 32 && has_b2) issue(jb + 2, 8, slB); /* K1 rope: free since S_b */
                float ps[2];
                sw_softmax(s, c, mlo, mhi, m_a, m_run, al_b, ps);
#pragma unroll
                for (int r = 0; r < 2; r++) l[r] = l[r] * al_a[r] * al_b[r] + ps[r];
                const float one[2] = {1.f, 1.f};
                wide_store_p<DT>(smem + SW_OFF_P1, c, s, one);
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
            if (c.t < 32 && has_a2)
                for (int sub = 4; sub < 8; sub++) issue(ja + 2, sub, slA);
            if (has_b) {
                wide_scale_o(o, al_b); /* O_R = (O_R a_a + P_a V_aR) a_b + P_b V_bR */
                uint32_t pb[4][4];
                wide_pack_a<DT>(s, pb);
                mla_wgmma_fence();
#pragma unroll
                for (int k = 0; k < 4; k++)
                    mla_wgmma_pv_rs<DT>(o, pb[k], mla_desc_mnmajor(kbuf1 + 4 * WG_SUB + 2048 * k));
                mla_wgmma_commit();
                if (has_b2) {
                    /* S of the next odd block behind P_b V_bR: rope and
                     * sub-tiles 0-3 first, then 4-7 once P_b V_bR is done and
                     * they reloaded */
                    const uint32_t par_b2 = (uint32_t)(i + 1) & 1u;
                    wide_qk_sub<true, DT>(s, c, qr, kbuf1, 8, bar0 + 8 * (9 + 8), par_b2);
#pragma unroll
                    for (int sub = 0; sub < 4; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf1, sub, bar0 + 8 * (9 + sub), par_b2);
                    mla_wgmma_commit();
                    mla_wgmma_wait<1>(); /* P_b V_bR is done: K1 sub-tiles 4-7 are free */
                    mla_fence_regs(o);
#pragma unroll
                    for (int k = 0; k < 4; k++) mla_fence_regs(pb[k]);
                    if (c.t < 32)
                        for (int sub = 4; sub < 8; sub++) issue(jb + 2, sub, slB);
#pragma unroll
                    for (int sub = 4; sub < 8; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf1, sub, bar0 + 8 * (9 + sub), par_b2);
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
        if (row >= nrows) continue;
        const float lt = sL0[row] + sL1[row];
        const float inv = lt > 0.f ? 1.f / lt : 0.f;
        if (a.nsplit <= 1) {
            uint16_t *orow = (uint16_t *)a.out + (qrow0 + row) * MLA_D_V + 256 * wg + 2 * c.q4;
#pragma unroll
            for (int j = 0; j < 32; j++)
                *(uint32_t *)(orow + 8 * j) = mla_pack2<DT>(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
        } else {
            const int64_t pr = (int64_t)split * a.num_tokens * a.hq + qrow0 + row;
            float *orow = a.part_o + pr * MLA_D_V + 256 * wg + 2 * c.q4;
#pragma unroll
            for (int j = 0; j < 32; j++)
                *(float2 *)(orow + 8 * j) = make_float2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
            if (wg == 0 && c.q4 == 0) a.part_lse[pr] = lt > 0.f ? m_run[r] + __log2f(lt) : -INFINITY;
        }
    }
}

#endif /* MLA_HAVE_WGMMA */

template <int DT>
__global__ __launch_bounds__(WG_THREADS, 1) void mla_sparse_wide_kernel(const __grid_constant__ mla_sparse_args a,
                                                                        const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    mla_sparse_wide_body<DT>(a, tmap);
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_sparse_wide_smem_bytes(void) { return SW_SMEM_ALLOC; }

extern "C" int mla_launch_sparse_wide(const mla_sparse_args *a) {
    if (a->num_tokens <= 0 || a->hq <= 0) return 0;
    if ((a->dt != MLA_DT_BF16 && a->dt != MLA_DT_F16) || a->rec || !a->tmap || a->nsplit < 1 || a->nsplit > MLA_SPARSE_MAX_SPLITS ||
        a->tiles_per_split < 1 || a->topk_k < 1)
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    dim3 grid((unsigned)((int64_t)a->num_tokens * ((a->hq + 63) / 64)), (unsigned)a->nsplit);
    if (a->dt == MLA_DT_F16)
        mla_sparse_wide_kernel<MLA_DT_F16><<<grid, WG_THREADS, SW_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    else
        mla_sparse_wide_kernel<MLA_DT_BF16><<<grid, WG_THREADS, SW_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_sparse_wide_init(void) {
    cudaError_t e = cudaFuncSetAttribute(mla_sparse_wide_kernel<MLA_DT_BF16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)SW_SMEM_ALLOC);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(mla_sparse_wide_kernel<MLA_DT_F16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)SW_SMEM_ALLOC);
    return (int)e;
}
