/*
 * mla_sparse_producer.cu - DSA's sparse MLA with a producer warp (option
 * sparse_producer, mla_sparse.h): mma.sync m16n8k16, SM 8.0+, 16-bit pools at
 * > 16 heads.
 *
 * CTA (blockIdx.x = token * head blocks + head block, .y split, the grid of
 * mla_sparse.cu's 64-row kernel): 64 head rows, 9 warps.
 *   Warps 0..7 (consumers): the 64-row kernel's math unchanged (row group rg
 *     = warp / 2, column group cg = warp % 2: 16 rows, 16 slots of S, 256
 *     value columns a warp), and no loads: they wait for a stage to be full,
 *     compute on it and hand it back.
 *   Warp 8 (producer): Q, then the key tiles, STAGES in a ring of 32-slot
 *     tiles of whole 1152-byte rows by 16-byte cp.async into the layout the
 *     consumers' ldmatrix reads (the 64-row kernel's), -1 rows zero-filled and
 *     marked invalid for the score mask; lane i reads entry i of the next
 *     tile's slots a tile ahead.
 * Hand-over by named barriers, one pair a stage: FULL(s) (the producer's
 * bar.arrive after its cp.async group of the tile landed, the consumers'
 * bar.sync) and EMPTY(s) (the consumers' bar.arrive after their last read of
 * the stage, the producer's bar.sync before it refills it).  The softmax
 * exchange (row maxima, P, row sums) stays inside a row group: its two warps
 * meet at a barrier of 64 threads, so the four row groups run apart within a
 * tile and the whole CTA meets once a tile, at FULL.  The producer never
 * waits on the math except for a free stage, and the consumers never wait on
 * a cp.async of their own.  The producer publishes tile d before it
 * waits for tile d - 1's stage, so the consumers find tile d full while it
 * issues tile d + STAGES - 1.
 * Each tile is gathered once per 64 heads (the 64-row kernel's L2 -> SM
 * bytes, half the 32-row kernel's).  Registers: under __launch_bounds__(288,
 * 1) ptxas holds a thread to 168, as three of the 9 warps share one of the
 * SM's four 16,384-register files (3 x 32 x 168 = 16,128); the MMA warps'
 * 128 accumulators fit it without spilling.
 * A row that saw no valid entry has l = 0 and writes zeros (or a partial of
 * lse -inf, weight 0 in mla_sparse.cu's combine).
 */
#include "mla_mma_ops.cuh"
#include "mla_sparse.h"

#define PR_BN MLA_SPARSE_BN
#define PR_ROW (MLA_D_QK + 8) /* padded smem row, elements: ldmatrix conflict-free */
#define PR_PROW (PR_BN + 8)
#define PR_CW 8                  /* consumer warps */
#define PR_CT (32 * PR_CW)       /* consumer threads */
#define PR_THREADS (PR_CT + 32)  /* and the producer warp */

/* Named barrier id (1..15; 0 is __syncthreads') of n threads: bar.sync waits
 * for the phase, bar.arrive only counts; both order the caller's earlier
 * shared-memory accesses before the waiters' later ones. */
#ifdef LK_EMU
GC_DEV void pr_bar_sync(int id, int n) { lk_emu_bar(id, n, 1); }
GC_DEV void pr_bar_arrive(int id, int n) { lk_emu_bar(id, n, 0); }
#else
GC_DEV void pr_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
GC_DEV void pr_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
#endif

template <int STAGES> struct PrCfg {
    static constexpr int RG = 4, CG = 2, BM = 64;
    static constexpr int SW = CG;              /* S-warps per row group: every warp */
    static constexpr int KPW = PR_BN / SW;     /* slots per S-warp */
    static constexpr int NCOL = MLA_D_V / CG;  /* value columns per warp */
    static constexpr size_t Q_BYTES = (size_t)BM * PR_ROW * 2;
    static constexpr size_t KV_BYTES = (size_t)STAGES * PR_BN * PR_ROW * 2;
    static constexpr size_t P_BYTES = (size_t)BM * PR_PROW * 2;
    static constexpr size_t RED_BYTES = (size_t)2 * BM * SW * 4;
    static constexpr size_t OK_BYTES = (size_t)STAGES * PR_BN * 4;
    static constexpr size_t SMEM = Q_BYTES + KV_BYTES + P_BYTES + RED_BYTES + OK_BYTES;
    static constexpr int FULL0 = 1, EMPTY0 = 1 + STAGES, PAIR0 = 1 + 2 * STAGES;
    static_assert(PAIR0 + RG - 1 <= 15, "named barrier ids");
    static_assert(STAGES >= 2, "the producer refills tile d - 1's stage while tile d is computed");
    static_assert(RG * CG == PR_CW && KPW % 8 == 0 && NCOL % 16 == 0, "warp split");
    static_assert(Q_BYTES % 16 == 0 && KV_BYTES % 16 == 0, "16-byte rows");
    static_assert(PR_BN == 32, "lane i of the producer reads entry i of a tile");
};

template <int STAGES, int DT>
__global__ __launch_bounds__(PR_THREADS, 1) void mla_sparse_producer_kernel(mla_sparse_args a) {
    typedef PrCfg<STAGES> C;
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sQ = (uint16_t *)smem;
    uint16_t *sKV = (uint16_t *)(smem + C::Q_BYTES);
    uint16_t *sP = (uint16_t *)(smem + C::Q_BYTES + C::KV_BYTES);
    float *sMax = (float *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES);
    float *sSum = sMax + C::BM * C::SW;
    int32_t *sOk = (int32_t *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES + C::RED_BYTES);

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int hblocks = (a.hq + C::BM - 1) / C::BM;
    const int t = blockIdx.x / hblocks, h0 = (blockIdx.x % hblocks) * C::BM, split = blockIdx.y;
    const int nrows = min(C::BM, a.hq - h0);
    const int all_tiles = (a.topk_k + PR_BN - 1) / PR_BN;
    const int tile0 = split * a.tiles_per_split;
    const int nt = max(0, min(a.tiles_per_split, all_tiles - tile0));
    const int64_t qrow0 = (int64_t)t * a.hq + h0; /* this CTA's first q / out row */

    if (warp == PR_CW) { /* the producer */
        const int32_t *row = a.topk + (int64_t)t * a.topk_k;
        const uint16_t *pool = (const uint16_t *)a.pool;
        /* Q rows (past nrows zero); they join tile 0's group. */
        for (int c = lane; c < C::BM * 72; c += 32) {
            const int r = c / 72, col = c % 72;
            const bool ok = r < nrows;
            gc_cp_async16(sQ + r * PR_ROW + col * 8, (const uint16_t *)a.q + (qrow0 + (ok ? r : 0)) * MLA_D_QK + col * 8,
                          ok);
        }
        /* Lane i: the slot of entry i of tile `tile` (-1: none or outside the pool, noted). */
        auto slot_of = [&](int tile) -> int64_t {
            const int e = (tile0 + tile) * PR_BN + lane;
            if (e >= a.topk_k) return -1;
            const int64_t s = __ldg(row + e);
            if (s >= a.num_slots || s < -1) {
                sgl_fault_note(a.fault, SGL_FAULT_TOPK_INDICES, (int64_t)t * a.topk_k + e, s, -1, a.num_slots);
                return -1;
            }
            return s;
        };
        /* Tile `tile` into its stage: 32 rows x 72 chunks, the warp's 32
         * lanes on consecutive chunks; the validity of lane i's entry. */
        auto issue = [&](int tile, int64_t myslot) {
            const int st = tile % STAGES;
            uint16_t *dst = sKV + (size_t)st * PR_BN * PR_ROW;
#pragma unroll 8
            for (int i = 0; i < 72; i++) {
                const int c = lane + 32 * i, kk = c / 72, col = c % 72;
                const int64_t s = __shfl_sync(0xffffffffu, myslot, kk);
                const bool ok = s >= 0;
                gc_cp_async16(dst + kk * PR_ROW + col * 8, pool + (ok ? s : 0) * MLA_D_QK + col * 8, ok);
            }
            sOk[st * PR_BN + lane] = myslot >= 0;
        };
        int64_t kq = nt > 0 ? slot_of(0) : -1; /* the slots of the next tile to issue */
#pragma unroll
        for (int u = 0; u < STAGES - 1; u++) {
            if (u < nt) {
                const int64_t nx = u + 1 < nt ? slot_of(u + 1) : -1;
                issue(u, kq);
                kq = nx;
            }
            gc_cp_async_commit();
        }
        for (int d = 0; d < nt; d++) {
            /* groups committed: STAGES - 1 + d; tile d's is group d */
            gc_cp_async_wait<STAGES - 2>();
            __syncwarp();
            pr_bar_arrive(C::FULL0 + d % STAGES, PR_THREADS);
            const int u = d + STAGES - 1; /* into tile d - 1's stage */
            if (u < nt) {
                const int64_t nx = u + 1 < nt ? slot_of(u + 1) : -1;
                if (u >= STAGES) pr_bar_sync(C::EMPTY0 + u % STAGES, PR_THREADS);
                issue(u, kq);
                kq = nx;
            }
            gc_cp_async_commit(); /* one group an iteration, empty or not: the wait above counts them */
        }
        gc_cp_async_wait<0>(); /* nothing in flight at exit, even with no tile */
        return;
    }

    /* The consumers. */
    const int rg = warp / C::CG, cg = warp % C::CG;
    const int g = lane >> 2, q4 = lane & 3;
    float m[2] = {MLA_M_INIT, MLA_M_INIT}, l[2] = {0.f, 0.f};
    float o[C::NCOL / 8][4];
#pragma unroll
    for (int n = 0; n < C::NCOL / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;

    for (int j = 0; j < nt; j++) {
        const int stage = j % STAGES;
        pr_bar_sync(C::FULL0 + stage, PR_THREADS); /* tile j landed; every consumer is done with tile j - 1 */
        const uint16_t *kv = sKV + (size_t)stage * PR_BN * PR_ROW;
        const int32_t *ok = sOk + stage * PR_BN;

        float sacc[C::KPW / 8][4];
        {
            float sch[C::KPW / 8][4];
#pragma unroll
            for (int n = 0; n < C::KPW / 8; n++) sch[n][0] = sch[n][1] = sch[n][2] = sch[n][3] = 0.f;
#pragma unroll 4
            for (int ks = 0; ks < MLA_D_QK / 16; ks++) {
                uint32_t af[4];
                mla_ldsm_x4(af, sQ + (rg * 16 + (lane & 15)) * PR_ROW + ks * 16 + (lane >> 4) * 8);
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++) {
                    uint32_t bf[2];
                    mla_ldsm_x2(bf, kv + (cg * C::KPW + n * 8 + (lane & 7)) * PR_ROW + ks * 16 + ((lane >> 3) & 1) * 8);
                    mla_mma<DT>(sch[n], af, bf[0], bf[1]);
                }
            }
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < C::KPW / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float s = ok[cg * C::KPW + n * 8 + 2 * q4 + (e & 1)] ? sch[n][e] * a.scale_log2 : -INFINITY;
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
        pr_bar_sync(C::PAIR0 + rg, 32 * C::CG); /* row maxima of the tile (the row group's warps) */
        float mnew[2], alpha[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float mt = -INFINITY;
#pragma unroll
            for (int w = 0; w < C::SW; w++) mt = fmaxf(mt, sMax[(rg * 16 + g + 8 * i) * C::SW + w]);
            mnew[i] = fmaxf(m[i], mt);
            alpha[i] = gc_exp2(m[i] - mnew[i]);
        }
        {
            float ps[2] = {0.f, 0.f};
#pragma unroll
            for (int n = 0; n < C::KPW / 8; n++) {
                const float p0 = gc_exp2(sacc[n][0] - mnew[0]), p1 = gc_exp2(sacc[n][1] - mnew[0]);
                const float p2 = gc_exp2(sacc[n][2] - mnew[1]), p3 = gc_exp2(sacc[n][3] - mnew[1]);
                ps[0] += p0 + p1;
                ps[1] += p2 + p3;
                const int col = cg * C::KPW + n * 8 + 2 * q4;
                *(uint32_t *)(sP + (rg * 16 + g) * PR_PROW + col) = mla_pack2<DT>(p0, p1);
                *(uint32_t *)(sP + (rg * 16 + g + 8) * PR_PROW + col) = mla_pack2<DT>(p2, p3);
            }
#pragma unroll
            for (int i = 0; i < 2; i++) {
                ps[i] += __shfl_xor_sync(0xffffffffu, ps[i], 1);
                ps[i] += __shfl_xor_sync(0xffffffffu, ps[i], 2);
                if (q4 == 0) sSum[(rg * 16 + g + 8 * i) * C::SW + cg] = ps[i];
            }
        }
        pr_bar_sync(C::PAIR0 + rg, 32 * C::CG); /* P and the row sums (the row group's) */
#pragma unroll
        for (int i = 0; i < 2; i++) {
            float ps = 0.f;
#pragma unroll
            for (int w = 0; w < C::SW; w++) ps += sSum[(rg * 16 + g + 8 * i) * C::SW + w];
            l[i] = l[i] * alpha[i] + ps;
            m[i] = mnew[i];
        }
        mla_mma_rescale_pv<C, DT, PR_BN, PR_ROW, PR_PROW>(o, alpha, sP, kv, rg, cg, lane);
        /* the stage back to the producer where it refills it (tile j + STAGES) */
        if (j + STAGES < nt) pr_bar_arrive(C::EMPTY0 + stage, PR_THREADS);
    }

    /* Rows < nrows: out, or this split's partial row [split][T * hq]. */
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int r = rg * 16 + g + 8 * i;
        if (r >= nrows) continue;
        const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
        if (a.nsplit <= 1) {
            uint16_t *orow = (uint16_t *)a.out + (qrow0 + r) * MLA_D_V + cg * C::NCOL + 2 * q4;
#pragma unroll
            for (int n = 0; n < C::NCOL / 8; n++)
                *(uint32_t *)(orow + n * 8) = mla_pack2<DT>(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
        } else {
            const int64_t prow = (int64_t)split * a.num_tokens * a.hq + qrow0 + r;
            float *orow = a.part_o + prow * MLA_D_V + cg * C::NCOL + 2 * q4;
#pragma unroll
            for (int n = 0; n < C::NCOL / 8; n++)
                *(float2 *)(orow + n * 8) = make_float2(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
            if (cg == 0 && q4 == 0) a.part_lse[prow] = l[i] > 0.f ? m[i] + __log2f(l[i]) : -INFINITY;
        }
    }
}

/* The instantiations: 4 stages where the device's shared memory holds them
 * (SM 9.0 / 10.x: 230,912 B), else 2 (SM 8.0: 155,904 B). */
template <int STAGES, int DT> static int launch_t(const mla_sparse_args *a) {
    dim3 grid((unsigned)((int64_t)a->num_tokens * ((a->hq + 63) / 64)), (unsigned)a->nsplit);
    mla_sparse_producer_kernel<STAGES, DT><<<grid, PR_THREADS, PrCfg<STAGES>::SMEM, (cudaStream_t)a->stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int32_t mla_sparse_producer_stages(size_t smem_optin) {
    return PrCfg<4>::SMEM <= smem_optin ? 4 : PrCfg<2>::SMEM <= smem_optin ? 2 : 0;
}

extern "C" size_t mla_sparse_producer_smem_bytes(int32_t stages) {
    return stages == 4 ? PrCfg<4>::SMEM : stages == 2 ? PrCfg<2>::SMEM : 0;
}

extern "C" int mla_sparse_producer_launch(const mla_sparse_args *a) {
    if (a->rec || a->hq <= 16) return (int)cudaErrorInvalidValue;
    if (a->stages == 4) return a->dt == MLA_DT_BF16 ? launch_t<4, MLA_DT_BF16>(a) : launch_t<4, MLA_DT_F16>(a);
    if (a->stages == 2) return a->dt == MLA_DT_BF16 ? launch_t<2, MLA_DT_BF16>(a) : launch_t<2, MLA_DT_F16>(a);
    return (int)cudaErrorInvalidValue;
}

template <int STAGES, int DT> static cudaError_t attr_t(size_t optin) {
    if (PrCfg<STAGES>::SMEM > optin) return cudaSuccess; /* never launched here */
    return cudaFuncSetAttribute(mla_sparse_producer_kernel<STAGES, DT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)PrCfg<STAGES>::SMEM);
}

extern "C" int mla_sparse_producer_init(size_t smem_optin) {
    cudaError_t e = attr_t<4, MLA_DT_BF16>(smem_optin);
    if (e == cudaSuccess) e = attr_t<4, MLA_DT_F16>(smem_optin);
    if (e == cudaSuccess) e = attr_t<2, MLA_DT_BF16>(smem_optin);
    if (e == cudaSuccess) e = attr_t<2, MLA_DT_F16>(smem_optin);
    return (int)e;
}
