/*
 * mla_sparse_seesaw_sm90.cu - DSA's sparse MLA (mla_sparse.h) on sm_90a
 * warpgroup MMA, fed by a producer warpgroup: the dense wide kernel's seesaw
 * (mla_decode_wide_sm90.cu, mla_wide_parts.cuh) over the key rows the row of
 * topk_indices names.  Option sparse_seesaw=1 runs it for a bf16 or f16 pool
 * at more than 16 heads on SM 9.0 (docs/cuda_mla.md, "DSA sparse MLA").
 *
 * CTA (blockIdx.x = token * head blocks + head block, .y = split of the row,
 * mla_sparse.cu's grid at 64 head rows a block), 384 threads, one CTA an SM:
 *   warpgroup 0, the producer (setmaxnreg down to 32): reads the split's
 *     entries [k0, k1) of the row in 64-key blocks and gathers each block's
 *     rows into 9 sub-tiles of 64 rows x 128 bytes (dims 64 s .. 64 s + 63;
 *     sub-tile 8 the rope dims), K-major with the 128-byte swizzle applied by
 *     address (16-byte chunk c of row r at chunk c ^ (r % 8)): per sub-tile
 *     512 16-byte cp.async, 4 a thread (thread p: chunk p % 8 of rows p / 8 +
 *     16 i, so a warp reads 4 whole 128-byte row pieces).  Even blocks go to
 *     buffer K0, odd ones to K1.
 *   warpgroups 1, 2, the consumers (setmaxnreg up to 232): the wide kernel's
 *     seesaw, unchanged: WG1 computes S of the even blocks, WG2 of the odd
 *     ones (m64n64k16 over 576 dims), each softmax hands P over, WG1 adds
 *     P V into value columns 0-255 and WG2 into 256-511 (m64n256k16, V read
 *     MN-major from the same sub-tiles).  They issue no loads.
 *
 * Hand-over, one FULL and one EMPTY mbarrier a sub-tile of each buffer:
 *   FULL (128 arrivals, every producer thread): the thread's cp.async group
 *     of the sub-tile has landed (cp.async.wait_group) and is fenced to the
 *     async proxy (fence.proxy.async) for the wgmma that reads it.  Block j
 *     is use j / 2 of its buffer: the consumers wait parity (j / 2) & 1.
 *   EMPTY (4 arrivals, lane 0 of each warp of the one consumer warpgroup that
 *     reads the sub-tile last): the rope sub-tile once S is done (the S
 *     warpgroup), sub-tiles 0-3 once WG1's P V is done, 4-7 once WG2's.  The
 *     producer waits parity ((j / 2) & 1) ^ 1 before refilling for block j,
 *     so the first use of each buffer passes at once.
 * The producer signals a sub-tile SW_LAG groups after issuing it
 * (cp.async.wait_group SW_LAG), so the copies of several sub-tiles are in
 * flight at once; before it blocks on an EMPTY (a test of the phase fails)
 * it flushes: it waits for all its groups and signals them, since the
 * consumers may need those sub-tiles to free the one it waits for.
 *
 * -1 entries: an entry that is -1, past k1, or outside the pool (noted in the
 * fault record, then taken as -1) is not read: its row is zero-filled by the
 * cp.async (source size 0) and its key masked (-inf score) through a 64-bit
 * validity mask a block in shared memory (ring of 4, block j at j % 4),
 * written by producer warps 0 and 1 (ballots of rows 0-31, 32-63) before
 * they arrive on the block's rope FULL, read by the softmax after S, whose
 * first wait is on that FULL.  A row with no valid entry writes zeros (or a
 * partial of lse -inf).
 */
#include "mla_sparse.h"
#include "mla_wide_parts.cuh"

#define SW_THREADS 384 /* producer warpgroup + two consumer warpgroups */
#define SW_OFF_K0 (WG_OFF_Q + 8 * WG_SUB)
#define SW_OFF_K1 (SW_OFF_K0 + 9 * WG_SUB)
#define SW_OFF_P0 (SW_OFF_K1 + 9 * WG_SUB)
#define SW_OFF_P1 (SW_OFF_P0 + WG_SUB)
#define SW_OFF_STAT (SW_OFF_P1 + WG_SUB)      /* 6 x 64 floats */
#define SW_OFF_BAR (SW_OFF_STAT + 6 * 64 * 4) /* 18 FULL, then 18 EMPTY mbarriers */
#define SW_OFF_OK (SW_OFF_BAR + 36 * 8)       /* 4 x 64-bit validity masks */
#define SW_SMEM_USED (SW_OFF_OK + 4 * 8)
#define SW_SMEM_ALLOC (SW_SMEM_USED + 1024) /* room to align the base to 1024 */
static_assert(SW_SMEM_ALLOC <= 232448, "the sparse seesaw's shared memory is above SM 9.0's 227 KB per block");

/* Groups a producer thread leaves in flight behind the one it just issued. */
#define SW_LAG 6
/* Registers a thread: the entry allocation under __launch_bounds__(384, 1)
 * is 168; the producer gives back what the consumers take. */
#define SW_REGS_ENTRY 168
#define SW_REGS_PRODUCER 32
#define SW_REGS_CONSUMER 232
static_assert(2 * SW_REGS_CONSUMER + SW_REGS_PRODUCER <= 3 * SW_REGS_ENTRY,
              "setmaxnreg: the consumers take only what the producer gave back");
#define SW_BAR_CONS 3 /* named barrier of the 256 consumer threads (mla_wide_parts.cuh's 1, 2, 4 are in use) */

#ifdef MLA_HAVE_WGMMA

#ifdef LK_EMU
template <int N> GC_DEV void sw_setmaxnreg_inc(void) {}
template <int N> GC_DEV void sw_setmaxnreg_dec(void) {}
#else
template <int N> GC_DEV void sw_setmaxnreg_inc(void) {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> GC_DEV void sw_setmaxnreg_dec(void) {
    static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif

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

/* A consumer warpgroup is done reading sub-tiles [s0, s0 + n) of buffer buf:
 * lane 0 of each warp arrives on their EMPTY barriers (count 4). */
GC_DEV void sw_free(uint32_t bar0, int buf, int s0, int n, int lane) {
    if (lane == 0)
        for (int s = s0; s < s0 + n; s++) mla_mbar_arrive(bar0 + 8 * (18 + 9 * buf + s));
}

/* The producer warpgroup (thread p of 128). */
GC_DEV void sw_producer(const mla_sparse_args &a, unsigned char *smem, uint32_t sbase, int t, int64_t k0, int64_t k1,
                        int nblk, int p) {
    const uint32_t bar0 = sbase + SW_OFF_BAR;
    uint32_t *sOk = (uint32_t *)(smem + SW_OFF_OK);
    const int32_t *trow = a.topk + (int64_t)t * a.topk_k;
    const uint16_t *pool = (const uint16_t *)a.pool;
    const int ch = p & 7, r0 = p >> 3, lane = p & 31;
    /* where row r0 + 16 i's chunk ch lands in a sub-tile (r % 8 = r0 % 8 for all i) */
    const uint32_t dst0 = (uint32_t)(r0 * 128 + ((ch ^ (r0 & 7)) << 4));
    int g = 0, sig = 0; /* groups issued, groups signalled */
    /* FULL of group q: block q / 9, sub-tile order 8, 0, 1, ..., 7 */
    auto full_of = [&](int q) {
        const int j = q / 9, i = q - 9 * j;
        return bar0 + 8 * (9 * (j & 1) + (i == 0 ? 8 : i - 1));
    };
    auto flush = [&]() {
        gc_cp_async_wait<0>();
        mla_fence_proxy_async(); /* the landed rows, for the wgmma that reads them */
        for (; sig < g; sig++) mla_mbar_arrive(full_of(sig));
    };
    for (int j = 0; j < nblk; j++) {
        const int64_t e0 = k0 + 64 * (int64_t)j;
        int32_t sl[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int64_t e = e0 + r0 + 16 * i;
            const int32_t v = e < k1 ? __ldg(trow + e) : -1;
            sl[i] = v >= 0 && (int64_t)v < a.num_slots ? v : -1;
        }
        const int buf = j & 1;
        const uint32_t par = ((uint32_t)(j >> 1) & 1u) ^ 1u;
        const unsigned char *kb = smem + (buf ? SW_OFF_K1 : SW_OFF_K0);
        for (int i = 0; i < 9; i++) {
            const int sub = i == 0 ? 8 : i - 1;
            const uint32_t empty = bar0 + 8 * (18 + 9 * buf + sub);
            if (!mla_mbar_try_wait(empty, par)) {
                flush(); /* the consumers may need the sub-tiles in flight to free this one */
                mla_mbar_wait(empty, par);
            }
            mla_fence_proxy_async(); /* the wgmma reads of the old rows are done (async -> generic) */
            if (i == 0 && p < 64) {
                /* the block's validity mask (rows 0-31: warp 0, 32-63: warp 1),
                 * entry j % 4: its last reader, block j - 4's softmax, came
                 * before S of block j - 2, which freed this rope sub-tile */
                const int64_t e = e0 + p;
                const int32_t v = e < k1 ? __ldg(trow + e) : -1;
                const bool ok = v >= 0 && (int64_t)v < a.num_slots;
                if (!ok && v != -1)
                    sgl_fault_note(a.fault, SGL_FAULT_TOPK_INDICES, (int64_t)t * a.topk_k + e, v, -1, a.num_slots);
                const uint32_t m = __ballot_sync(0xffffffffu, ok);
                if (lane == 0) sOk[2 * (j & 3) + (p >> 5)] = m;
            }
            unsigned char *d = (unsigned char *)kb + sub * WG_SUB + dst0;
#pragma unroll
            for (int r = 0; r < 4; r++)
                gc_cp_async16(d + r * 16 * 128, pool + (int64_t)(sl[r] >= 0 ? sl[r] : 0) * MLA_D_QK + sub * 64 + ch * 8,
                              sl[r] >= 0);
            gc_cp_async_commit();
            g++;
            if (g - sig > SW_LAG) {
                gc_cp_async_wait<SW_LAG>();
                mla_fence_proxy_async();
                mla_mbar_arrive(full_of(sig));
                sig++;
            }
        }
    }
    flush();
}

template <int DT>
GC_DEV void sw_consumer(const mla_sparse_args &a, unsigned char *smem, uint32_t sbase, int t, int h0, int nrows,
                        int nblk, int split, int wg, int ct) {
    WideCtx c;
    c.sbase = sbase;
    const int lane = ct & 31;
    c.t = ct & 127;
    c.g = 16 * (c.t >> 5) + (lane >> 2);
    c.q4 = lane & 3;
    c.scale_log2 = a.scale_log2;
    float *sMa = (float *)(smem + SW_OFF_STAT), *sAa = sMa + 64, *sMb = sAa + 64, *sAb = sMb + 64;
    float *sL0 = sAb + 64, *sL1 = sL0 + 64;
    const uint32_t *sOk = (const uint32_t *)(smem + SW_OFF_OK); /* block j: words 2 (j % 4), + 1 */
    const uint32_t bar0 = sbase + SW_OFF_BAR;                   /* full[buf][sub] = bar0 + 8 (9 buf + sub) */
    const uint32_t kbuf0 = sbase + SW_OFF_K0, kbuf1 = sbase + SW_OFF_K1;
    const int64_t qrow0 = (int64_t)t * a.hq + h0;

    /* Q: dims 0-511 to shared memory (K-major swizzled), 512-575 to registers. */
    const uint16_t *qg = (const uint16_t *)a.q;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        uint4 v[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int ci = ct + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
            v[i] = r < nrows ? __ldg((const uint4 *)(qg + (qrow0 + r) * MLA_D_QK + ch * 8)) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int ci = ct + WG_THREADS * (8 * half + i), r = ci >> 6, ch = ci & 63;
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
    mla_bar_sync(SW_BAR_CONS, WG_THREADS);

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
        if (wg == 0) {
            /* --- WG1: block a (buffer K0) --- */
            float m_a[2], al_a[2], ps[2];
            sw_softmax(s, c, sOk[2 * (ja & 3)], sOk[2 * (ja & 3) + 1], m_run, m_a, al_a, ps);
            sw_free(bar0, 0, 8, 1, lane); /* K0 rope: S_a is done, the mask read */
#pragma unroll
            for (int r = 0; r < 2; r++) l[r] = l[r] * al_a[r] + ps[r];
            uint32_t pa[4][4];
            wide_pack_a<DT>(s, pa);
            /* P0's last reader (WG2, previous pair) read it before BAR_B, which WG1 met */
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
            mla_wgmma_wait<0>();
            mla_fence_regs(o);
            sw_free(bar0, 0, 0, 4, lane); /* K0 sub-tiles 0-3: P_a V_aL is done */
            mla_bar_sync(BAR_B, WG_THREADS);
            /* K1's sub-tiles 0-3 landed before WG2's FULL waits, which BAR_B
             * orders before this: the reader's proxy fence, as the producer's */
            mla_fence_proxy_async();
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
                sw_free(bar0, 1, 0, 4, lane);
#pragma unroll
                for (int sub = 4; sub < 8; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf0, sub, bar0 + 8 * sub, par_a2);
                mla_wgmma_commit();
                mla_wgmma_wait<0>();
                mla_fence_regs(s);
            } else { /* last pair: no next block in either buffer */
                mla_wgmma_wait<0>();
                mla_fence_regs(o);
                if (has_b) sw_free(bar0, 1, 0, 4, lane);
            }
        } else {
            /* --- WG2: block b (buffer K1); P_a V_aR is issued before softmax(S_b) --- */
            mla_bar_sync(BAR_A, WG_THREADS);
            mla_fence_proxy_async(); /* K0's sub-tiles 4-7: WG1's FULL waits came before BAR_A */
            const float m_a[2] = {sMa[c.g], sMa[c.g + 8]}, al_a[2] = {sAa[c.g], sAa[c.g + 8]};
            uint32_t pa[4][4]; /* read before BAR_B: WG1 rewrites P0 after it */
            wide_get_pa(smem + SW_OFF_P0, c.t, pa);
            wide_scale_o(o, al_a); /* o is idle: the previous pair waited for its P V */
            mla_wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; k++) mla_wgmma_pv_rs<DT>(o, pa[k], mla_desc_mnmajor(kbuf0 + 4 * WG_SUB + 2048 * k));
            mla_wgmma_commit();
            float al_b[2] = {1.f, 1.f};
            if (has_b) {
                /* S_b is complete (waited at the end of the previous pair, or
                 * before the loop): the softmax runs beside P_a V_aR */
                const uint32_t mlo = sOk[2 * (jb & 3)], mhi = sOk[2 * (jb & 3) + 1];
                sw_free(bar0, 1, 8, 1, lane); /* K1 rope: S_b is done, the mask read */
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
            sw_free(bar0, 0, 4, 4, lane);
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
                     * the producer refilled them */
                    const uint32_t par_b2 = (uint32_t)(i + 1) & 1u;
                    wide_qk_sub<true, DT>(s, c, qr, kbuf1, 8, bar0 + 8 * (9 + 8), par_b2);
#pragma unroll
                    for (int sub = 0; sub < 4; sub++) wide_qk_sub<false, DT>(s, c, qr, kbuf1, sub, bar0 + 8 * (9 + sub), par_b2);
                    mla_wgmma_commit();
                    mla_wgmma_wait<1>(); /* P_b V_bR is done: K1 sub-tiles 4-7 are free */
                    mla_fence_regs(o);
#pragma unroll
                    for (int k = 0; k < 4; k++) mla_fence_regs(pb[k]);
                    sw_free(bar0, 1, 4, 4, lane);
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
                    sw_free(bar0, 1, 4, 4, lane);
                }
            }
        }
    }

    /* Epilogue: l = WG1's part + WG2's part; both halves are relative to m_run. */
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
    mla_bar_sync(SW_BAR_CONS, WG_THREADS);
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

template <int DT> GC_DEV void mla_sparse_seesaw_body(const mla_sparse_args &a) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = mla_smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    const uint32_t sbase = mla_smem_u32(smem);
    const int tid = threadIdx.x;
    const int hblocks = (a.hq + 63) / 64;
    const int t = blockIdx.x / hblocks, h0 = (blockIdx.x % hblocks) * 64, split = blockIdx.y;
    const int nrows = min(64, a.hq - h0);
    const int64_t k0 = (int64_t)split * a.tiles_per_split * MLA_SPARSE_BN;
    const int64_t k1 = min((int64_t)a.topk_k, k0 + (int64_t)a.tiles_per_split * MLA_SPARSE_BN);
    const int nblk = k1 > k0 ? (int)((k1 - k0 + 63) / 64) : 0;

    if (tid == 0) {
        for (int i = 0; i < 18; i++) {
            mla_mbar_init(sbase + SW_OFF_BAR + 8 * i, 128);     /* FULL: every producer thread */
            mla_mbar_init(sbase + SW_OFF_BAR + 8 * (18 + i), 4); /* EMPTY: lane 0 of each consumer warp */
        }
        mla_mbar_init_fence();
    }
    __syncthreads();
    if (tid < 128) {
        sw_setmaxnreg_dec<SW_REGS_PRODUCER>();
        sw_producer(a, smem, sbase, t, k0, k1, nblk, tid);
    } else {
        sw_setmaxnreg_inc<SW_REGS_CONSUMER>();
        sw_consumer<DT>(a, smem, sbase, t, h0, nrows, nblk, split, (tid >> 7) - 1, tid - 128);
    }
}

#endif /* MLA_HAVE_WGMMA */

template <int DT> __global__ __launch_bounds__(SW_THREADS, 1) void mla_sparse_seesaw_kernel(const mla_sparse_args a) {
#ifdef MLA_HAVE_WGMMA
    mla_sparse_seesaw_body<DT>(a);
#else
    (void)a;
    __trap();
#endif
}

extern "C" size_t mla_sparse_seesaw_smem_bytes(void) { return SW_SMEM_ALLOC; }

extern "C" int mla_launch_sparse_seesaw(const mla_sparse_args *a) {
    if (a->num_tokens <= 0 || a->hq <= 0) return 0;
    if ((a->dt != MLA_DT_BF16 && a->dt != MLA_DT_F16) || a->rec || a->nsplit < 1 || a->nsplit > MLA_SPARSE_MAX_SPLITS ||
        a->tiles_per_split < 1 || a->topk_k < 1)
        return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)((int64_t)a->num_tokens * ((a->hq + 63) / 64)), (unsigned)a->nsplit);
    if (a->dt == MLA_DT_F16)
        mla_sparse_seesaw_kernel<MLA_DT_F16><<<grid, SW_THREADS, SW_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a);
    else
        mla_sparse_seesaw_kernel<MLA_DT_BF16><<<grid, SW_THREADS, SW_SMEM_ALLOC, (cudaStream_t)a->stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int mla_sparse_seesaw_init(void) {
    cudaError_t e = cudaFuncSetAttribute(mla_sparse_seesaw_kernel<MLA_DT_BF16>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SW_SMEM_ALLOC);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(mla_sparse_seesaw_kernel<MLA_DT_F16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)SW_SMEM_ALLOC);
    return (int)e;
}
