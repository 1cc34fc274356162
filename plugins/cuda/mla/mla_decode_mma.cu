/*
 * mla_decode_mma.cu - the tensor-core tile kernel (mma.sync m16n8k16, SM 8.0+).
 * It takes the tiles the wide kernel does not: 16- and 32-row tiles (decode
 * and verify of <= 32 rows a request, e.g. 16 heads), and 64-row tiles where
 * the wide kernel cannot run (SM 8.x, f16, page 1 or 8).  Which configuration
 * runs is mla_mma_effective_cfg's choice, from the tile rows and the shared
 * memory a block may take.
 *
 * One CTA (8 warps) takes one work item at a time (persistent loop over the
 * plan): a tile of BM = 16 * RG query rows against a key range, 32 keys per
 * step, every key tile read from global memory once for all BM rows.
 *
 *   warp w = (rg, cg): row group rg (16 rows), column group cg of CG = 8 / RG.
 *   S = Q K^T:  the first SW warps of a row group split the 32 keys (8 or 16
 *               each) over the full 576 dims; row max / sum are exchanged in
 *               shared memory, P goes to shared memory as 16-bit values.
 *   O += P V:   each warp owns 16 rows x 512 / CG value columns (128, 64 or
 *               32 fp32 registers), V read with ldmatrix.trans from the same
 *               key tile (the value is the first 512 dims of the latent row).
 *   Loads:      cp.async, STAGES tiles in flight, rows padded to 1168 bytes so
 *               ldmatrix is conflict-free; the slot of each key is read two
 *               tiles before its load is issued (4 lanes per warp) and
 *               broadcast by shuffle, so the loop does not wait for a
 *               page-table load it issued in the same tile.
 *   Prefetch:   with a.prefetch = d > 0, the rows of tile j + d are prefetched
 *               into L2 while tile j is computed, so DRAM latency is covered
 *               by L2 rather than by shared-memory stages.
 * Configurations (MLA_MMA_*, MmaVar): stages, CTAs per SM and the loads.
 *   BASE: 3 stages (2 for 64-row tiles), one CTA per SM (fits SM 8.0's 163 KB).
 *   TWO (32-row tiles): 2 stages and 128 registers, two CTAs per SM.
 *   RING (16-row tiles, PTR = 1): TWO's shape plus a page-table ring.  The
 *   clamp of a loaded page-table word runs right after its load, so reading
 *   the slots ahead still waits for them; here warp 0 copies the 32 words of
 *   tile t with 4-byte cp.async into a ring of MMA_PT_R tiles in shared memory
 *   LA tiles ahead (in the group of that iteration's KV load, so the existing
 *   wait covers them), their lines are prefetched into L2 MMA_PT_AHEAD tiles
 *   before that, and the clamp runs when a slot is read from the ring: no
 *   global load is waited for by the loop.  The words are the low 32 bits of
 *   each index (as mla_index reads).
 *   TMA (16-row tiles, SM 9.0, TMA = 1): RING with each key row (1152
 *   contiguous bytes) loaded by one cp.async.bulk global -> shared into the
 *   same padded row (ldmatrix unchanged), lane kk < 4 of warp w the row of key
 *   w + 8 kk, and no L2 prefetch: each latent byte crosses the L2 once (an L2
 *   prefetch followed by the load that hits it crosses it twice, and at 16
 *   heads the L2, not DRAM, is the limit).  A key past the item copies the
 *   row of the tile's first key (always in the item), so every row is finite
 *   for P = 0 x V and all 32 copies complete the stage's mbarrier (count 1:
 *   thread 0's arrive.expect_tx of 32 x 1152 bytes; a copy landing before it
 *   leaves tx-count negative, which the phase allows).  There is no shared ->
 *   shared bulk copy: its destination must be another CTA of the cluster.  No
 *   generic-proxy write ever touches a stage the bulk copies fill, so no proxy
 *   fence is needed.  The block waits on the stage after the top-of-tile
 *   __syncthreads, which also frees the stage reloaded in that iteration (its
 *   last reads were tile j - 1).  Stage and phase count tiles across items
 *   (gt), so no mbarrier is re-armed.  The page-table ring still uses
 *   cp.async groups.
 * MASK (tree verify; BASE only, a template parameter so the causal
 * instantiations are unchanged): the plan gives every row its request's
 * whole key range and each S-warp thread loads its 2 rows x KPW/4 keys'
 * custom_mask bytes before the QK^T steps (one bit each), the bits replacing
 * the causal limit.
 */
#include "mla_mma_ops.cuh"

#define MMA_THREADS 256
#define MMA_BN 32
#define MMA_ROW (MLA_D_QK + 8) /* padded smem row, elements */
#define MMA_PROW (MMA_BN + 8)
#define MMA_PT_R 16      /* page-table ring: tiles of MMA_BN words (PTR only) */
#define MMA_PT_AHEAD 8   /* page-table lines prefetched into L2, tiles beyond the ring's lookahead */

template <int RG, int STAGES, int PTR = 0, int TMA = 0> struct MmaCfg {
    static constexpr int BM = 16 * RG;
    static constexpr int CG = 8 / RG;
    static constexpr int SW = CG < MMA_BN / 8 ? CG : MMA_BN / 8; /* S-warps per row group */
    static constexpr int KPW = MMA_BN / SW;                        /* keys per S-warp */
    static constexpr int NCOL = MLA_D_V / CG;                      /* value columns per warp */
    static constexpr size_t Q_BYTES = (size_t)BM * MMA_ROW * 2;
    static constexpr size_t KV_BYTES = (size_t)STAGES * MMA_BN * MMA_ROW * 2;
    static constexpr size_t P_BYTES = (size_t)BM * MMA_PROW * 2;
    static constexpr size_t RED_BYTES = (size_t)2 * BM * SW * 4;
    static constexpr size_t PT_BYTES = PTR ? (size_t)MMA_PT_R * MMA_BN * 4 : 0;
    static constexpr size_t BAR_BYTES = TMA ? (size_t)STAGES * 8 : 0; /* TMA: full mbarriers (8-byte aligned) */
    static constexpr size_t SMEM = Q_BYTES + KV_BYTES + P_BYTES + RED_BYTES + PT_BYTES + BAR_BYTES;
    static_assert(KPW % 8 == 0 && NCOL % 16 == 0, "tile split");
    static_assert(!TMA || PTR, "the bulk-copy loads read slots from the page-table ring");
    static_assert(Q_BYTES % 16 == 0 && (MMA_ROW * 2) % 16 == 0 && (MLA_D_QK * 2) % 16 == 0 &&
                      (Q_BYTES + KV_BYTES + P_BYTES + RED_BYTES + PT_BYTES) % 8 == 0,
                  "bulk copies: 16-byte aligned destination rows, size a multiple of 16; 8-byte mbarriers");
    static_assert(MMA_BN * MLA_D_QK * 2 < (1 << 20), "a stage's bytes fit the mbarrier tx-count");
};

/* L2 prefetch of one latent row (1152 bytes). */
GC_DEV void mma_prefetch_row(const uint16_t *row) {
#if defined(LK_EMU) /* the CPU emulator of the tests: no cache, a prefetch does nothing */
    (void)row;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(row), "r"(MLA_D_QK * 2) : "memory");
#else
#pragma unroll
    for (int i = 0; i < MLA_D_QK * 2 / 128; i++)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"((const char *)row + 128 * i) : "memory");
#endif
}

/* 4-byte cp.async (page-table word); !ok: the word is zero-filled, src not read. */
GC_DEV void mma_cp_async4(void *smem_dst, const void *gmem_src, bool ok) {
#if defined(LK_EMU) /* the CPU emulator of the tests: queued, landed at the wait */
    lk_emu_cp_async_n(smem_dst, ok ? gmem_src : nullptr, 4);
#elif defined(GC_HAVE_CP_ASYNC)
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(smem_dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(gmem_src), "r"(ok ? 4 : 0)
                 : "memory");
#else
    *(int32_t *)smem_dst = ok ? *(const int32_t *)gmem_src : 0;
#endif
}

template <int RG, int STAGES, int DT, int MINB, int PTR = 0, int TMA = 0, int MASK = 0>
__global__ __launch_bounds__(MMA_THREADS, MINB) void mla_mma_kernel(mla_fwd_args a) {
    typedef MmaCfg<RG, STAGES, PTR, TMA> C;
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sQ = (uint16_t *)smem;
    uint16_t *sKV = (uint16_t *)(smem + C::Q_BYTES);
    uint16_t *sP = (uint16_t *)(smem + C::Q_BYTES + C::KV_BYTES);
    float *sMax = (float *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES);
    float *sSum = sMax + C::BM * C::SW;
    int32_t *sPT = (int32_t *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES + C::RED_BYTES); /* PTR only */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rg = warp / C::CG, cg = warp % C::CG;
    const int g = lane >> 2, q4 = lane & 3;
    const bool s_warp = cg < C::SW;
    const uint16_t *pool = (const uint16_t *)a.pool;
    const int n_items = mla_hdr(a)->n_items;
    /* TMA only: the full mbarriers (one a stage), tiles loaded so far. */
    const uint32_t bar0 = mla_smem_u32(smem + C::SMEM - C::BAR_BYTES);
    int gt = 0;
    if constexpr (TMA) {
        if (tid < STAGES) mma_mbar_init(bar0 + 8 * tid, 1);
        __syncthreads(); /* initialised (and fenced) before any arrive or copy */
    }

    for (int it = blockIdx.x; it < n_items; it += gridDim.x) {
        const mla_item item = mla_items(a)[it];
        const int64_t prow = mla_pool_row(a, item.b);
        const int nt = (item.kv_end - item.kv_begin + MMA_BN - 1) / MMA_BN;

        /* Q tile (rows past nrows zero); it joins the first KV tile's group.
         * Warp w loads rows w, w + 8, ...: each row's latent and rope
         * addresses (token / head strides) once, its 72 16-byte chunks by
         * the lanes. */
        for (int r = warp; r < C::BM; r += MMA_THREADS / 32) {
            const bool ok = r < item.nrows;
            const int64_t qrow = (int64_t)item.q_row0 + (ok ? r : 0);
            const uint16_t *ql = (const uint16_t *)a.q + mla_q_off(qrow, a.hq, a.q_ts, a.q_hs);
            const uint16_t *qr = (const uint16_t *)a.q_rope + mla_q_off(qrow, a.hq, a.qr_ts, a.qr_hs);
            for (int col = lane; col < 72; col += 32)
                gc_cp_async16(sQ + r * MMA_ROW + col * 8, col < MLA_D_V / 8 ? ql + col * 8 : qr + (col * 8 - MLA_D_V),
                              ok);
        }
        /* Lane kk < 4 of warp w knows the slot of key w + 8 kk of a tile (-1 past the end). */
        auto slot_of = [&](int tile) -> int64_t {
            const int key = item.kv_begin + tile * MMA_BN + warp + 8 * lane;
            return lane < 4 && key < item.kv_end ? mla_slot(a, prow, key) : (int64_t)-1;
        };
        /* PTR: the ring's lookahead LA and prefetch distance (docs/cuda_mla.md). */
        const int pd_r = PTR ? min(a.prefetch > STAGES - 1 ? a.prefetch : 0, MMA_PT_R - STAGES + 1) : 0;
        const int la = (pd_r > STAGES - 1 ? pd_r : STAGES - 1) + STAGES - 1;
        /* Word `lane` of tile t: its req_to_token element (mla_slot's clamps). */
        auto pt_src = [&](int t, bool &ok) -> const int32_t * {
            const mla_index &ix = a.req_to_token;
            const int key = item.kv_begin + t * MMA_BN + lane;
            ok = key < item.kv_end && ix.n > 0;
            const int64_t col = mla_clamp64(key, 0, a.r2t_cols - 1);
            const int64_t e = ok ? mla_clamp64(prow * a.r2t_cols + col, 0, ix.n - 1) : 0;
            return ix.p + (e << ix.shift);
        };
        auto pt_copy = [&](int t) { /* warp 0 */
            bool ok;
            const int32_t *src = pt_src(t, ok);
            mma_cp_async4(sPT + (t % MMA_PT_R) * MMA_BN + lane, src, ok);
        };
        auto pt_l2 = [&](int t) { /* warp 0 */
            bool ok;
            const int32_t *src = pt_src(t, ok);
#ifndef LK_EMU /* the emulator of the tests has no cache */
            if (ok) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(src) : "memory");
#else
            (void)ok, (void)src;
#endif
        };
        /* Lane kk < 4 of warp w: the slot of key w + 8 kk of tile t, from the ring. */
        auto slot_rd = [&](int tile) -> int64_t {
            const int key = item.kv_begin + tile * MMA_BN + warp + 8 * lane;
            return lane < 4 && key < item.kv_end
                       ? mla_clamp64((int64_t)sPT[(tile % MMA_PT_R) * MMA_BN + warp + 8 * lane], 0, a.num_slots - 1)
                       : (int64_t)-1;
        };
        if constexpr (PTR) {
            if (warp == 0) {
                for (int t = 0; t < la && t < nt; t++) pt_copy(t);
                for (int t = la; t < la + MMA_PT_AHEAD && t < nt; t++) pt_l2(t);
            }
            gc_cp_async_commit();
            gc_cp_async_wait<0>();
            __syncthreads(); /* the first LA tiles' words (and Q) are in shared memory */
        }
        auto issue = [&](int tile, int64_t myslot) {
            if constexpr (TMA) {
                const int st = (gt + tile) % STAGES;
                const uint32_t bar = bar0 + 8 * st;
                if (tid == 0) mma_mbar_expect_tx(bar, MMA_BN * MLA_D_QK * 2);
                if (lane < 4) {
                    /* past the item: the tile's first key (tile < nt, so in the item; its ring word
                     * is as visible as this lane's, both were waited for together) */
                    const int64_t s = myslot >= 0 ? myslot
                                                  : mla_clamp64((int64_t)sPT[(tile % MMA_PT_R) * MMA_BN], 0,
                                                                a.num_slots - 1);
                    mma_bulk_g2s(mla_smem_u32(sKV + ((size_t)st * MMA_BN + warp + 8 * lane) * MMA_ROW),
                                 pool + s * MLA_D_QK, MLA_D_QK * 2, bar);
                }
                return;
            }
            uint16_t *dst = sKV + (size_t)(tile % STAGES) * MMA_BN * MMA_ROW;
#pragma unroll(PTR ? 3 : 9)
            for (int i = 0; i < 9; i++) { /* 4 keys x 72 chunks = 288 = 9 x 32 */
                const int c = lane + 32 * i, kk = c / 72, col = c % 72;
                const int64_t s = __shfl_sync(0xffffffffu, myslot, kk);
                const bool ok = s >= 0;
                gc_cp_async16(dst + (warp + 8 * kk) * MMA_ROW + col * 8,
                              pool + (ok ? s : 0) * MLA_D_QK + col * 8, ok);
            }
        };
#pragma unroll
        for (int st = 0; st < STAGES - 1; st++) {
            if (st < nt) issue(st, PTR ? slot_rd(st) : slot_of(st));
            gc_cp_async_commit();
        }
        /* Slots of tiles u and u + 1 (u = the next tile to load): a load's slot
         * is read two iterations before it is used (PTR: from the ring). */
        int64_t kq0 = !PTR && STAGES - 1 < nt ? slot_of(STAGES - 1) : -1;
        int64_t kq1 = !PTR && STAGES < nt ? slot_of(STAGES) : -1;
        /* L2 prefetch stream, same two-deep queue, pd tiles ahead. */
        const int pd = PTR ? pd_r : a.prefetch > STAGES - 1 ? a.prefetch : 0;
        int64_t pq0 = !PTR && pd && pd < nt ? slot_of(pd) : -1;
        int64_t pq1 = !PTR && pd && pd + 1 < nt ? slot_of(pd + 1) : -1;

        /* The two rows this thread holds in S / O fragments: rg*16 + g (+8). */
        int lim[2];
        [[maybe_unused]] int64_t mrow[2]; /* MASK: the rows' custom_mask rows (key_base + 1 = seq_len bytes) */
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int r = rg * 16 + g + 8 * i;
            const int see = item.key_base + (item.row0 + r) / a.hq + 1;
            lim[i] = r < item.nrows && see < item.kv_end ? see : item.kv_end;
            if constexpr (MASK) {
                if (r >= item.nrows) lim[i] = 0; /* no mask row past the request */
                mrow[i] = mla_idx(a.mask_indptr, item.b) + (int64_t)((item.row0 + r) / a.hq) * (item.key_base + 1);
            }
        }
        float m[2] = {MLA_M_INIT, MLA_M_INIT}, l[2] = {0.f, 0.f};
        float o[C::NCOL / 8][4];
#pragma unroll
        for (int n = 0; n < C::NCOL / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;

        for (int j = 0; j < nt; j++) {
            gc_cp_async_wait<STAGES - 2>();
            __syncthreads(); /* tile j visible; everyone is done with tile j - 1 */
            if constexpr (PTR) {
                /* Every thread read the ring entries of tiles < j + STAGES - 1
                 * and of tile j - 1 + pd before the barrier above; tile j + la
                 * takes the entry of tile j + la - MMA_PT_R (la <= MMA_PT_R). */
                const int u = j + STAGES - 1;
                if (u < nt) issue(u, slot_rd(u));
                if (warp == 0) {
                    if (j + la < nt) pt_copy(j + la);
                    if (j + la + MMA_PT_AHEAD < nt) pt_l2(j + la + MMA_PT_AHEAD);
                }
                gc_cp_async_commit(); /* complete at the top of iteration j + STAGES - 1 */
                if (pd && j + pd < nt) {
                    const int64_t s = slot_rd(j + pd);
                    if (s >= 0) mma_prefetch_row(pool + s * MLA_D_QK);
                }
            } else {
                const int u = j + STAGES - 1;
                if (u < nt) issue(u, kq0);
                gc_cp_async_commit();
                kq0 = kq1;
                kq1 = u + 2 < nt ? slot_of(u + 2) : -1;
                if (pd) {
                    if (pq0 >= 0) mma_prefetch_row(pool + pq0 * MLA_D_QK);
                    pq0 = pq1;
                    pq1 = j + pd + 2 < nt ? slot_of(j + pd + 2) : -1;
                }
            }
            const int stage = TMA ? (gt + j) % STAGES : j % STAGES;
            if constexpr (TMA) mma_mbar_wait(bar0 + 8 * stage, (uint32_t)((gt + j) / STAGES) & 1u); /* tile j landed */
            const uint16_t *kv = sKV + (size_t)stage * MMA_BN * MMA_ROW;
            const int kbase = item.kv_begin + j * MMA_BN;

            float sacc[C::KPW / 8][4];
            /* MASK: this thread's keys' mask bytes, loaded before the QK^T steps hide their latency */
            uint32_t mvis = 0;
            if constexpr (MASK) {
                if (s_warp) {
#pragma unroll
                    for (int n = 0; n < C::KPW / 8; n++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int key = kbase + cg * C::KPW + n * 8 + 2 * q4 + (e & 1);
                            if (key < lim[e >> 1] && mla_mask_at(a, mrow[e >> 1] + key)) mvis |= 1u << (4 * n + e);
                        }
                }
            }
            if (s_warp) {
                /* One 8-key tile per warp is one dependent chain of 36 mma: run
                 * two chains (even / odd k-steps) and add them. */
                constexpr int NCH = C::KPW / 8 == 1 ? 2 : 1;
                float sch[NCH][C::KPW / 8][4];
#pragma unroll
                for (int h = 0; h < NCH; h++)
#pragma unroll
                    for (int n = 0; n < C::KPW / 8; n++) sch[h][n][0] = sch[h][n][1] = sch[h][n][2] = sch[h][n][3] = 0.f;
#pragma unroll 4
                for (int ks = 0; ks < MLA_D_QK / 16; ks++) {
                    uint32_t af[4];
                    mla_ldsm_x4(af, sQ + (rg * 16 + (lane & 15)) * MMA_ROW + ks * 16 + (lane >> 4) * 8);
#pragma unroll
                    for (int n = 0; n < C::KPW / 8; n++) {
                        uint32_t bf[2];
                        mla_ldsm_x2(bf, kv + (cg * C::KPW + n * 8 + (lane & 7)) * MMA_ROW + ks * 16 +
                                            ((lane >> 3) & 1) * 8);
                        mla_mma<DT>(sch[ks % NCH][n], af, bf[0], bf[1]);
                    }
                }
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) sacc[n][e] = NCH == 2 ? sch[0][n][e] + sch[NCH - 1][n][e] : sch[0][n][e];
                float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int key = kbase + cg * C::KPW + n * 8 + 2 * q4 + (e & 1);
                        const bool vis = MASK ? ((mvis >> (4 * n + e)) & 1u) != 0 : key < lim[e >> 1];
                        const float s = vis ? sacc[n][e] * a.scale_log2 : -INFINITY;
                        sacc[n][e] = s;
                        mx[e >> 1] = fmaxf(mx[e >> 1], s);
                    }
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
                    mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
                    if (q4 == 0) sMax[(rg * 16 + g + 8 * i) * C::SW + cg] = mx[i];
                }
            }
            __syncthreads(); /* row maxima of the tile */
            float mnew[2], alpha[2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                float mt = -INFINITY;
#pragma unroll
                for (int w = 0; w < C::SW; w++) mt = fmaxf(mt, sMax[(rg * 16 + g + 8 * i) * C::SW + w]);
                mnew[i] = fmaxf(m[i], mt);
                alpha[i] = gc_exp2(m[i] - mnew[i]);
            }
            if (s_warp) {
                float ps[2] = {0.f, 0.f};
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++) {
                    const float p0 = gc_exp2(sacc[n][0] - mnew[0]), p1 = gc_exp2(sacc[n][1] - mnew[0]);
                    const float p2 = gc_exp2(sacc[n][2] - mnew[1]), p3 = gc_exp2(sacc[n][3] - mnew[1]);
                    ps[0] += p0 + p1;
                    ps[1] += p2 + p3;
                    const int col = cg * C::KPW + n * 8 + 2 * q4;
                    *(uint32_t *)(sP + (rg * 16 + g) * MMA_PROW + col) = mla_pack2<DT>(p0, p1);
                    *(uint32_t *)(sP + (rg * 16 + g + 8) * MMA_PROW + col) = mla_pack2<DT>(p2, p3);
                }
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    ps[i] += __shfl_xor_sync(0xffffffffu, ps[i], 1);
                    ps[i] += __shfl_xor_sync(0xffffffffu, ps[i], 2);
                    if (q4 == 0) sSum[(rg * 16 + g + 8 * i) * C::SW + cg] = ps[i];
                }
            }
            __syncthreads(); /* P and the row sums */
#pragma unroll
            for (int i = 0; i < 2; i++) {
                float ps = 0.f;
#pragma unroll
                for (int w = 0; w < C::SW; w++) ps += sSum[(rg * 16 + g + 8 * i) * C::SW + w];
                l[i] = l[i] * alpha[i] + ps;
                m[i] = mnew[i];
            }
            mla_mma_rescale_pv<C, DT, MMA_BN, MMA_ROW, MMA_PROW>(o, alpha, sP, kv, rg, cg, lane);
        }
        gc_cp_async_wait<0>();

        /* Epilogue: rows < nrows only. */
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int r = rg * 16 + g + 8 * i;
            if (r >= item.nrows) continue;
            const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
            if (item.part < 0) {
                uint16_t *orow = (uint16_t *)a.out + ((int64_t)item.q_row0 + r) * MLA_D_V + cg * C::NCOL + 2 * q4;
#pragma unroll
                for (int n = 0; n < C::NCOL / 8; n++)
                    *(uint32_t *)(orow + n * 8) = mla_pack2<DT>(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
            } else {
                const int64_t prow_o = (int64_t)item.part + r;
                float *orow = a.part_o + prow_o * MLA_D_V + cg * C::NCOL + 2 * q4;
#pragma unroll
                for (int n = 0; n < C::NCOL / 8; n++)
                    *(float2 *)(orow + n * 8) = make_float2(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
                if (cg == 0 && q4 == 0) a.part_lse[prow_o] = l[i] > 0.f ? m[i] + __log2f(l[i]) : -INFINITY;
            }
        }
        gt += nt;
        __syncthreads(); /* the next item rewrites shared memory */
    }
}

/* Stages, CTAs per SM and loads of each configuration (MLA_MMA_*). */
template <int RG, int CFG> struct MmaVar {
    static constexpr int S = CFG == MLA_MMA_TWO || CFG == MLA_MMA_RING || CFG == MLA_MMA_TMA ? 2 : (RG == 4 ? 2 : 3);
    static constexpr int MINB = CFG == MLA_MMA_TWO || CFG == MLA_MMA_RING || CFG == MLA_MMA_TMA ? 2 : 1;
    static constexpr int TMA = CFG == MLA_MMA_TMA ? 1 : 0;
    static constexpr int PTR = CFG == MLA_MMA_RING || TMA ? 1 : 0;
    static constexpr size_t SMEM = MmaCfg<RG, S, PTR, TMA>::SMEM;
};

/* The instantiations (tile rows x configuration); 0: none. */
static size_t mma_smem(int32_t rows, int32_t cfg) {
    switch (rows * 8 + cfg) {
    case 16 * 8 + MLA_MMA_BASE: return MmaVar<1, MLA_MMA_BASE>::SMEM;
    case 16 * 8 + MLA_MMA_RING: return MmaVar<1, MLA_MMA_RING>::SMEM;
    case 16 * 8 + MLA_MMA_TMA: return MmaVar<1, MLA_MMA_TMA>::SMEM;
    case 32 * 8 + MLA_MMA_BASE: return MmaVar<2, MLA_MMA_BASE>::SMEM;
    case 32 * 8 + MLA_MMA_TWO: return MmaVar<2, MLA_MMA_TWO>::SMEM;
    case 64 * 8 + MLA_MMA_BASE: return MmaVar<4, MLA_MMA_BASE>::SMEM;
    default: return 0;
    }
}

/* Two blocks of `smem` bytes and their 1 KB reserve each fit in an SM (the
 * opt-in per block + 1 KB). */
static int fits_two(size_t smem, size_t smem_optin) { return smem && 2 * (smem + 1024) <= smem_optin + 1024; }

extern "C" int32_t mla_mma_effective_cfg(int32_t rows, int32_t cfg, size_t smem_optin) {
    /* bulk-copy loads: SM 9.0 only (the backend asks for them nowhere else) */
    if (cfg == MLA_MMA_TMA && rows == 16 && fits_two(mma_smem(16, MLA_MMA_TMA), smem_optin)) return MLA_MMA_TMA;
    if (cfg == MLA_MMA_TMA || cfg == MLA_MMA_RING) {
        if (rows == 16 && fits_two(mma_smem(16, MLA_MMA_RING), smem_optin)) return MLA_MMA_RING;
        /* two 32-row blocks with the ring would need more than SM 9.0's 228 KB */
        if (rows == 32 && fits_two(mma_smem(32, MLA_MMA_TWO), smem_optin)) return MLA_MMA_TWO;
    }
    return MLA_MMA_BASE;
}

extern "C" int32_t mla_mma_ctas_per_sm(int32_t effective_cfg) {
    return effective_cfg == MLA_MMA_TWO || effective_cfg == MLA_MMA_RING || effective_cfg == MLA_MMA_TMA ? 2 : 1;
}

extern "C" size_t mla_mma_smem_bytes(int32_t rows_per_tile, int32_t cfg, size_t smem_optin) {
    const size_t s = mma_smem(rows_per_tile, mla_mma_effective_cfg(rows_per_tile, cfg, smem_optin));
    return s && s <= smem_optin ? s : 0;
}

template <int RG, int CFG, int DT, int MASK = 0> static int launch_mma_t(const mla_fwd_args *a) {
    typedef MmaVar<RG, CFG> V;
    mla_mma_kernel<RG, V::S, DT, V::MINB, V::PTR, V::TMA, MASK>
        <<<a->grid_items, MMA_THREADS, V::SMEM, (cudaStream_t)a->stream>>>(*a);
    return (int)cudaGetLastError();
}

template <int DT> static int launch_mma_dt(const mla_fwd_args *a, int32_t cfg) {
    if (a->mask) { /* tree verify: the base configuration, with the mask (the backend asks for base) */
        if (cfg != MLA_MMA_BASE) return (int)cudaErrorInvalidValue;
        switch (a->rows_per_tile) {
        case 16: return launch_mma_t<1, MLA_MMA_BASE, DT, 1>(a);
        case 32: return launch_mma_t<2, MLA_MMA_BASE, DT, 1>(a);
        case 64: return launch_mma_t<4, MLA_MMA_BASE, DT, 1>(a);
        default: return (int)cudaErrorInvalidValue;
        }
    }
    switch (a->rows_per_tile * 8 + cfg) {
    case 16 * 8 + MLA_MMA_BASE: return launch_mma_t<1, MLA_MMA_BASE, DT>(a);
    case 16 * 8 + MLA_MMA_RING: return launch_mma_t<1, MLA_MMA_RING, DT>(a);
    case 16 * 8 + MLA_MMA_TMA: return launch_mma_t<1, MLA_MMA_TMA, DT>(a);
    case 32 * 8 + MLA_MMA_BASE: return launch_mma_t<2, MLA_MMA_BASE, DT>(a);
    case 32 * 8 + MLA_MMA_TWO: return launch_mma_t<2, MLA_MMA_TWO, DT>(a);
    case 64 * 8 + MLA_MMA_BASE: return launch_mma_t<4, MLA_MMA_BASE, DT>(a);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int mla_launch_mma(const mla_fwd_args *a, size_t smem_optin) {
    if (mla_mma_smem_bytes(a->rows_per_tile, a->mma_cfg, smem_optin) == 0) return (int)cudaErrorInvalidConfiguration;
    if (a->kv_dt != a->q_dt) return (int)cudaErrorInvalidValue;
    if (a->grid_items <= 0) return 0;
    const int32_t cfg = mla_mma_effective_cfg(a->rows_per_tile, a->mma_cfg, smem_optin);
    return a->q_dt == MLA_DT_BF16 ? launch_mma_dt<MLA_DT_BF16>(a, cfg) : launch_mma_dt<MLA_DT_F16>(a, cfg);
}

template <int RG, int CFG, int DT, int MASK = 0> static cudaError_t mma_attr_t(size_t optin) {
    typedef MmaVar<RG, CFG> V;
    if (V::SMEM > optin) return cudaSuccess; /* not runnable here; the launcher never picks it */
    cudaError_t e = cudaFuncSetAttribute(mla_mma_kernel<RG, V::S, DT, V::MINB, V::PTR, V::TMA, MASK>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)V::SMEM);
    /* two CTAs per SM need the whole carveout for shared memory */
    if (e == cudaSuccess && V::MINB > 1)
        e = cudaFuncSetAttribute(mla_mma_kernel<RG, V::S, DT, V::MINB, V::PTR, V::TMA, MASK>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, (int)cudaSharedmemCarveoutMaxShared);
    return e;
}

template <int DT> static cudaError_t mma_attr_dt(size_t optin) {
    cudaError_t e;
    if ((e = mma_attr_t<1, MLA_MMA_BASE, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<1, MLA_MMA_RING, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<1, MLA_MMA_TMA, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<2, MLA_MMA_BASE, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<2, MLA_MMA_TWO, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<4, MLA_MMA_BASE, DT>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<1, MLA_MMA_BASE, DT, 1>(optin)) != cudaSuccess) return e;
    if ((e = mma_attr_t<2, MLA_MMA_BASE, DT, 1>(optin)) != cudaSuccess) return e;
    return mma_attr_t<4, MLA_MMA_BASE, DT, 1>(optin);
}

/* Called by mla_kernels_init (mla_launch.cu). */
extern "C" int mla_mma_init(size_t smem_optin) {
    cudaError_t e = mma_attr_dt<MLA_DT_BF16>(smem_optin);
    if (e == cudaSuccess) e = mma_attr_dt<MLA_DT_F16>(smem_optin);
    return (int)e;
}
