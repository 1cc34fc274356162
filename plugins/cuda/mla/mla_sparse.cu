/*
 * mla_sparse.cu - DSA's sparse MLA (mla_sparse.h): mma.sync m16n8k16, SM 8.0+.
 *
 * CTA (blockIdx.x = token * head blocks + head block, .y split: the head
 * blocks of a token run side by side and share its rows in L2), NW warps (8, or 4
 * for two CTAs an SM), BM = 16 RG head rows against the slots of the token's
 * topk row, MMA_BN = 32 a tile:
 *   slots:  lane kk < 32 / NW of warp w reads entry w + NW kk of a tile two tiles
 *           ahead (a slot outside the pool is noted in the fault record and
 *           taken as -1) and broadcasts it by shuffle to the lanes that copy
 *           that row; it also marks the entry valid in shared memory for the
 *           score mask.  A -1 row is zero-filled, never read.  STAGES tiles
 *           in flight (3 where shared memory holds them, else 2).
 * Two CTAs an SM (SM 9.0, 16-bit pools at > 16 heads): NW 4,
 * RG 2 (32 head rows), 2 stages: every warp's share (16 rows, 16 slots of S,
 * 256 value columns) is the 8-warp 64-row kernel's, the registers fit
 * __launch_bounds__(128, 2) and 115,456 B of shared memory fit twice in SM
 * 9.0's 228 KB, so one CTA's cp.async waits and barriers run under the other's
 * MMAs; each tile is gathered once per 32 heads instead of per 64 (twice the
 * L2 -> SM traffic).
 *   S = Q K^T over all 576 dims, masked (-inf) where the entry is -1;
 *   O += P V with V the first 512 dims of the same gathered rows;
 *   the warp split and the softmax exchange are the mma kernel's
 *   (mla_decode_mma.cu): row group rg, column group cg; maxima and sums
 *   through shared memory, P as 16-bit values in shared memory.
 * A row that saw no valid entry has l = 0 and writes zeros (or a partial of
 * lse -inf, weight 0 in the combine).
 *
 * REC (FlashMLA's fp8 record, bf16 q): the ring holds the gathered
 * 656-byte records as they are (41 16-byte chunks a row, -1 rows
 * zero-filled), and one 16-bit tile takes the dequantised rows of the
 * current tile: value = e4m3 x its block's fp32 scale rounded to bf16, the
 * RoPE dims copied.  One more barrier a tile (the dequantised tile complete
 * before the MMA reads it); a record (656 bytes) is smaller than a bf16 row
 * (1152 bytes), so the same stage counts fit beside the extra tile.  The e4m3 bytes move into
 * f16 bit positions (the value times 2^-8, exact for normals and
 * subnormals alike; SM 8.9+ converts with the hardware cvt instead) and
 * the 2^8 joins the scale: the product equals e4m3 x scale rounded once in
 * fp32, then once to bf16.
 */
#include "mla_mma_ops.cuh"
#include "mla_sparse.h"

#define SP_BN MLA_SPARSE_BN
#define SP_ROW (MLA_D_QK + 8) /* padded smem row, elements: ldmatrix conflict-free */
#define SP_PROW (SP_BN + 8)

template <int RG, int STAGES, bool REC = false, int NW = 8> struct SpCfg {
    static constexpr int THREADS = 32 * NW;
    static constexpr int RPW = SP_BN / NW; /* gathered rows a warp: lane kk < RPW reads the slot of one */
    static constexpr int BM = 16 * RG;
    static constexpr int CG = NW / RG;
    static constexpr int SW = CG < SP_BN / 8 ? CG : SP_BN / 8; /* S-warps per row group */
    static constexpr int KPW = SP_BN / SW;                      /* slots per S-warp */
    static constexpr int NCOL = MLA_D_V / CG;                   /* value columns per warp */
    static constexpr size_t Q_BYTES = (size_t)BM * SP_ROW * 2;
    static constexpr size_t KV_BYTES = (size_t)(REC ? 1 : STAGES) * SP_BN * SP_ROW * 2;
    static constexpr size_t P_BYTES = (size_t)BM * SP_PROW * 2;
    static constexpr size_t RED_BYTES = (size_t)2 * BM * SW * 4;
    static constexpr size_t OK_BYTES = (size_t)STAGES * SP_BN * 4;
    static constexpr size_t RAW_BYTES = REC ? (size_t)STAGES * SP_BN * MLA_REC_BYTES : 0; /* the records' ring */
    static constexpr size_t RAW_OFF = Q_BYTES + KV_BYTES + P_BYTES + RED_BYTES + OK_BYTES;
    static constexpr size_t SMEM = RAW_OFF + RAW_BYTES;
    static_assert(KPW % 8 == 0 && NCOL % 16 == 0, "tile split");
    static_assert(Q_BYTES % 16 == 0 && KV_BYTES % 16 == 0, "16-byte rows");
    static_assert(STAGES >= 2, "the loop reloads the stage of tile j - 1");
    static_assert(RAW_OFF % 16 == 0 && MLA_REC_BYTES % 16 == 0, "16-byte record chunks");
    static_assert(SP_BN * 72 % THREADS == 0, "the dequantise loop covers the tile");
    static_assert(NW % RG == 0 && SP_BN % NW == 0 && RPW * 72 % 32 == 0, "warp split of the heads and the gather");
};

/* Record layout (bytes): 512 e4m3, 4 fp32 scales (one per 128 values), 64 bf16. */
#define REC_SCALES MLA_D_V
#define REC_ROPE (MLA_D_V + 16)
#define REC_CHUNKS (MLA_REC_BYTES / 16)

/* Two e4m3 bytes (the low 16 bits of x) times sc (the block scale x 2^8)
 * as a bf16 pair (low byte -> low half).  The bytes become an f16 pair worth
 * the values times 2^-8 (exact for every finite code): SM 8.9+ by the
 * hardware cvt, whose f16 are the values themselves (sc_hw = the scale), else
 * by moving each byte's exponent and mantissa into f16 bit positions; one
 * cvt.rn.bf16x2.f32 rounds the products.  The emulator runs the bit move and
 * the software rounding (the same values: both round to nearest even). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(LK_EMU)
#define REC_HW_CVT 1
#define REC_UNIT 1.f
#else
#define REC_HW_CVT 0
#define REC_UNIT 256.f
#endif
GC_DEV uint32_t rec_pair(uint32_t x, float sc) {
#if REC_HW_CVT
    uint32_t h;
    asm("{\n.reg .b16 lo;\ncvt.u16.u32 lo, %1;\ncvt.rn.f16x2.e4m3x2 %0, lo;\n}\n" : "=r"(h) : "r"(x));
#else
    const uint32_t w = __byte_perm(x, 0u, 0x1404u); /* byte i -> the high byte of half i */
    const uint32_t h = (w & 0x80008000u) | ((w >> 1) & 0x3f803f80u);
#endif
    const float lo = gc_to_f32<GC_F16>((uint16_t)(h & 0xffffu)) * sc, hi = gc_to_f32<GC_F16>((uint16_t)(h >> 16)) * sc;
    return gc_bf16x2_rn(lo, hi);
}

template <int RG, int STAGES, int DT, bool REC = false, int NW = 8>
__global__ __launch_bounds__(32 * NW, NW == 4 ? 2 : 1) void mla_sparse_kernel(mla_sparse_args a) {
    typedef SpCfg<RG, STAGES, REC, NW> C;
    static_assert(!REC || DT == MLA_DT_BF16, "the record's RoPE part is bf16: q too");
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sQ = (uint16_t *)smem;
    uint16_t *sKV = (uint16_t *)(smem + C::Q_BYTES);
    uint16_t *sP = (uint16_t *)(smem + C::Q_BYTES + C::KV_BYTES);
    float *sMax = (float *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES);
    float *sSum = sMax + C::BM * C::SW;
    int32_t *sOk = (int32_t *)(smem + C::Q_BYTES + C::KV_BYTES + C::P_BYTES + C::RED_BYTES);
    unsigned char *sRaw = smem + C::RAW_OFF; /* REC: the records' ring */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int rg = warp / C::CG, cg = warp % C::CG;
    const int g = lane >> 2, q4 = lane & 3;
    const bool s_warp = cg < C::SW;
    const int hblocks = (a.hq + C::BM - 1) / C::BM;
    const int t = blockIdx.x / hblocks, h0 = (blockIdx.x % hblocks) * C::BM, split = blockIdx.y;
    const int nrows = min(C::BM, a.hq - h0);
    const int all_tiles = (a.topk_k + SP_BN - 1) / SP_BN;
    const int tile0 = split * a.tiles_per_split;
    const int nt = max(0, min(a.tiles_per_split, all_tiles - tile0));
    const int32_t *row = a.topk + (int64_t)t * a.topk_k;
    const uint16_t *pool = (const uint16_t *)a.pool;
    const int64_t qrow0 = (int64_t)t * a.hq + h0; /* this CTA's first q / out row */

    /* Q rows (past nrows zero); they join the first tile's group. */
    for (int c = tid; c < C::BM * 72; c += C::THREADS) {
        const int r = c / 72, col = c % 72;
        const bool ok = r < nrows;
        gc_cp_async16(sQ + r * SP_ROW + col * 8, (const uint16_t *)a.q + (qrow0 + (ok ? r : 0)) * MLA_D_QK + col * 8, ok);
    }
    /* Lane kk < RPW of warp w: the slot of entry w + NW kk of tile `tile` (-1: none). */
    auto slot_of = [&](int tile) -> int64_t {
        const int e = (tile0 + tile) * SP_BN + warp + NW * lane;
        if (lane >= C::RPW || e >= a.topk_k) return -1;
        const int64_t s = __ldg(row + e);
        if (s >= a.num_slots || s < -1) {
            sgl_fault_note(a.fault, SGL_FAULT_TOPK_INDICES, (int64_t)t * a.topk_k + e, s, -1, a.num_slots);
            return -1;
        }
        return s;
    };
    auto issue = [&](int tile, int64_t myslot) {
        const int st = tile % STAGES;
        if (REC) {
            unsigned char *dst = sRaw + (size_t)st * SP_BN * MLA_REC_BYTES;
#pragma unroll
            for (int i = 0; i < (C::RPW * REC_CHUNKS + 31) / 32; i++) { /* RPW rows x 41 chunks */
                const int c = lane + 32 * i, kk = c < C::RPW * REC_CHUNKS ? c / REC_CHUNKS : 0, col = c % REC_CHUNKS;
                const int64_t s = __shfl_sync(0xffffffffu, myslot, kk);
                const bool ok = s >= 0;
                if (c < C::RPW * REC_CHUNKS)
                    gc_cp_async16(dst + (warp + NW * kk) * MLA_REC_BYTES + col * 16,
                                  (const unsigned char *)a.pool + (ok ? s : 0) * MLA_REC_BYTES + col * 16, ok);
            }
        } else {
            uint16_t *dst = sKV + (size_t)st * SP_BN * SP_ROW;
#pragma unroll
            for (int i = 0; i < C::RPW * 72 / 32; i++) { /* RPW rows x 72 chunks: 9 or 18 x 32 */
                const int c = lane + 32 * i, kk = c / 72, col = c % 72;
                const int64_t s = __shfl_sync(0xffffffffu, myslot, kk);
                const bool ok = s >= 0;
                gc_cp_async16(dst + (warp + NW * kk) * SP_ROW + col * 8, pool + (ok ? s : 0) * MLA_D_QK + col * 8, ok);
            }
        }
        if (lane < C::RPW) sOk[st * SP_BN + warp + NW * lane] = myslot >= 0;
    };
#pragma unroll
    for (int st = 0; st < STAGES - 1; st++) {
        if (st < nt) issue(st, slot_of(st));
        gc_cp_async_commit();
    }
    /* the slots of tiles u and u + 1 (u = the next tile to load): read two
     * iterations before their loads are issued */
    int64_t kq0 = STAGES - 1 < nt ? slot_of(STAGES - 1) : -1, kq1 = STAGES < nt ? slot_of(STAGES) : -1;

    float m[2] = {MLA_M_INIT, MLA_M_INIT}, l[2] = {0.f, 0.f};
    float o[C::NCOL / 8][4];
#pragma unroll
    for (int n = 0; n < C::NCOL / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;

    for (int j = 0; j < nt; j++) {
        gc_cp_async_wait<STAGES - 2>();
        __syncthreads(); /* tile j visible; everyone is done with tile j - 1 (its stage is reloaded next) */
        const int u = j + STAGES - 1;
        if (u < nt) issue(u, kq0);
        gc_cp_async_commit(); /* one group an iteration, empty or not: the wait above counts them */
        kq0 = kq1;
        kq1 = u + 2 < nt ? slot_of(u + 2) : -1;
        const int stage = j % STAGES;
        const uint16_t *kv = sKV + (size_t)(REC ? 0 : stage) * SP_BN * SP_ROW;
        if (REC) { /* tile j's records -> the 16-bit tile (free: the barrier above) */
            const unsigned char *raw = sRaw + (size_t)stage * SP_BN * MLA_REC_BYTES;
#pragma unroll
            for (int i = 0; i < SP_BN * 72 / C::THREADS; i++) { /* a row: 64 chunks of 8 e4m3, 8 of RoPE */
                const int c = tid + C::THREADS * i, r = c / 72, col = c % 72;
                const unsigned char *src = raw + r * MLA_REC_BYTES;
                uint4 v;
                if (col < MLA_D_V / 8) {
                    const uint2 b = *(const uint2 *)(src + col * 8);
                    const float sc = *(const float *)(src + REC_SCALES + (col >> 4) * 4) * REC_UNIT;
                    v = make_uint4(rec_pair(b.x, sc), rec_pair(b.x >> 16, sc), rec_pair(b.y, sc),
                                   rec_pair(b.y >> 16, sc));
                } else {
                    v = *(const uint4 *)(src + REC_ROPE + (col - MLA_D_V / 8) * 16);
                }
                *(uint4 *)(sKV + r * SP_ROW + col * 8) = v;
            }
            __syncthreads(); /* the tile complete */
        }
        const int32_t *ok = sOk + stage * SP_BN;

        float sacc[C::KPW / 8][4];
        if (s_warp) {
            constexpr int NCH = C::KPW / 8 == 1 ? 2 : 1; /* two dependent chains where one would be long */
            float sch[NCH][C::KPW / 8][4];
#pragma unroll
            for (int h = 0; h < NCH; h++)
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++) sch[h][n][0] = sch[h][n][1] = sch[h][n][2] = sch[h][n][3] = 0.f;
#pragma unroll 4
            for (int ks = 0; ks < MLA_D_QK / 16; ks++) {
                uint32_t af[4];
                mla_ldsm_x4(af, sQ + (rg * 16 + (lane & 15)) * SP_ROW + ks * 16 + (lane >> 4) * 8);
#pragma unroll
                for (int n = 0; n < C::KPW / 8; n++) {
                    uint32_t bf[2];
                    mla_ldsm_x2(bf, kv + (cg * C::KPW + n * 8 + (lane & 7)) * SP_ROW + ks * 16 + ((lane >> 3) & 1) * 8);
                    mla_mma<DT>(sch[ks % NCH][n], af, bf[0], bf[1]);
                }
            }
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < C::KPW / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float v = NCH == 2 ? sch[0][n][e] + sch[NCH - 1][n][e] : sch[0][n][e];
                    const float s = ok[cg * C::KPW + n * 8 + 2 * q4 + (e & 1)] ? v * a.scale_log2 : -INFINITY;
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
                *(uint32_t *)(sP + (rg * 16 + g) * SP_PROW + col) = mla_pack2<DT>(p0, p1);
                *(uint32_t *)(sP + (rg * 16 + g + 8) * SP_PROW + col) = mla_pack2<DT>(p2, p3);
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
        mla_mma_rescale_pv<C, DT, SP_BN, SP_ROW, SP_PROW>(o, alpha, sP, kv, rg, cg, lane);
    }
    gc_cp_async_wait<0>(); /* nothing in flight at exit, even with no tile */

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

/* The splits of each (token, head) row merged: one warp a row, weights
 * 2^(lse_s - max) / sum (0 for a split that saw no valid slot). */
#define SP_COMB_WARPS 4
template <int DT> __global__ __launch_bounds__(SP_COMB_WARPS * 32) void mla_sparse_combine(mla_sparse_args a) {
    __shared__ float sw[SP_COMB_WARPS][MLA_SPARSE_MAX_SPLITS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t rows = (int64_t)a.num_tokens * a.hq, r = (int64_t)blockIdx.x * SP_COMB_WARPS + warp;
    if (r >= rows) return; /* whole warp: no barrier below */
    const int ns = a.nsplit < MLA_SPARSE_MAX_SPLITS ? a.nsplit : MLA_SPARSE_MAX_SPLITS;
    const float lse = lane < ns ? a.part_lse[lane * rows + r] : -INFINITY;
    float mx = lse;
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float w = mx == -INFINITY || lane >= ns ? 0.f : exp2f(lse - mx);
    float sum = w;
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane < ns) sw[warp][lane] = w;
    __syncwarp();
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; i++) acc[i] = 0.f;
    for (int s = 0; s < ns; s++) {
        const float ws = sw[warp][s];
        if (ws == 0.f) continue; /* warp-uniform */
        const float4 *src = (const float4 *)(a.part_o + (s * rows + r) * MLA_D_V);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float4 v = __ldcg(src + lane + 32 * k);
            acc[4 * k] += ws * v.x;
            acc[4 * k + 1] += ws * v.y;
            acc[4 * k + 2] += ws * v.z;
            acc[4 * k + 3] += ws * v.w;
        }
    }
    uint16_t *out = (uint16_t *)a.out + r * MLA_D_V;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint2 v;
        v.x = mla_pack2<DT>(acc[4 * k] * inv, acc[4 * k + 1] * inv);
        v.y = mla_pack2<DT>(acc[4 * k + 2] * inv, acc[4 * k + 3] * inv);
        *(uint2 *)(out + 4 * (lane + 32 * k)) = v;
    }
}

template <int RG, int STAGES, int DT, bool REC, int NW = 8> static int launch_t(const mla_sparse_args *a) {
    const int bm = 16 * RG;
    dim3 grid((unsigned)((int64_t)a->num_tokens * ((a->hq + bm - 1) / bm)), (unsigned)a->nsplit);
    cudaStream_t st = (cudaStream_t)a->stream;
    mla_sparse_kernel<RG, STAGES, DT, REC, NW><<<grid, 32 * NW, SpCfg<RG, STAGES, REC, NW>::SMEM, st>>>(*a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || a->nsplit <= 1) return (int)e;
    const int64_t rows = (int64_t)a->num_tokens * a->hq;
    mla_sparse_combine<DT><<<(unsigned)((rows + SP_COMB_WARPS - 1) / SP_COMB_WARPS), SP_COMB_WARPS * 32, 0, st>>>(*a);
    return (int)cudaGetLastError();
}

/* The instantiations, for 16-bit pools and the record alike: 16-row blocks
 * with 3 stages; 64-row blocks with 3 where the device holds them (SM 9.0),
 * else 2.  Two CTAs an SM (SM 9.0, 16-bit pools): 32-row 4-warp blocks with 2 stages. */
typedef SpCfg<2, 2, false, 4> SpCfg2;
/* Two CTAs of it fit SM 9.0's 228 KB an SM (1 KB reserved a CTA). */
static_assert(2 * (SpCfg2::SMEM + 1024) <= 228 * 1024, "the 32-row sparse kernel: two CTAs an SM");
template <bool REC> static size_t smem_rec(int rows, int stages) {
    if (rows == 16) return stages == 3 ? SpCfg<1, 3, REC>::SMEM : 0;
    if (rows == 32) return !REC && stages == 2 ? SpCfg2::SMEM : 0;
    return stages == 3 ? SpCfg<4, 3, REC>::SMEM : stages == 2 ? SpCfg<4, 2, REC>::SMEM : 0;
}
static size_t smem_of(int rows, int stages, int rec) { return rec ? smem_rec<true>(rows, stages) : smem_rec<false>(rows, stages); }

extern "C" int32_t mla_sparse_stages(int32_t hq, size_t smem_optin, int32_t rec, int32_t ctas) {
    const int rows = mla_sparse_rows(hq, ctas);
    for (int st = 3; st >= 2; st--)
        if (smem_of(rows, st, rec) && smem_of(rows, st, rec) <= smem_optin) return st;
    return 0;
}

extern "C" size_t mla_sparse_smem_bytes(int32_t hq, int32_t stages, int32_t rec, int32_t ctas) {
    return smem_of(mla_sparse_rows(hq, ctas), stages, rec);
}

template <int DT, bool REC> static int launch_dt(const mla_sparse_args *a) {
    const int rows = mla_sparse_rows(a->hq, a->ctas);
    if (rows == 16) return a->stages == 3 ? launch_t<1, 3, DT, REC>(a) : (int)cudaErrorInvalidValue;
    if (rows == 32) return !REC && a->stages == 2 ? launch_t<2, 2, DT, false, 4>(a) : (int)cudaErrorInvalidValue;
    return a->stages == 3   ? launch_t<4, 3, DT, REC>(a)
           : a->stages == 2 ? launch_t<4, 2, DT, REC>(a)
                            : (int)cudaErrorInvalidValue;
}

extern "C" int mla_launch_sparse(const mla_sparse_args *a) {
    if (a->num_tokens <= 0 || a->hq <= 0) return 0;
    if (a->nsplit < 1 || a->nsplit > MLA_SPARSE_MAX_SPLITS || a->tiles_per_split < 1 || a->topk_k < 1 ||
        a->ctas < 1 || a->ctas > 2)
        return (int)cudaErrorInvalidValue;
    if (a->rec) return a->dt == MLA_DT_BF16 ? launch_dt<MLA_DT_BF16, true>(a) : (int)cudaErrorInvalidValue;
    if (a->dt == MLA_DT_BF16) return launch_dt<MLA_DT_BF16, false>(a);
    if (a->dt == MLA_DT_F16) return launch_dt<MLA_DT_F16, false>(a);
    return (int)cudaErrorInvalidValue;
}

template <int RG, int STAGES, int DT, bool REC, int NW = 8> static cudaError_t attr_t(size_t optin) {
    typedef SpCfg<RG, STAGES, REC, NW> C;
    if (C::SMEM > optin) return cudaSuccess; /* never launched here */
    cudaError_t e = cudaFuncSetAttribute(mla_sparse_kernel<RG, STAGES, DT, REC, NW>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM);
    /* two CTAs an SM: the whole carveout as shared memory, so the second fits */
    if (e == cudaSuccess && NW == 4)
        e = cudaFuncSetAttribute(mla_sparse_kernel<RG, STAGES, DT, REC, NW>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, (int)cudaSharedmemCarveoutMaxShared);
    return e;
}

template <int DT, bool REC> static cudaError_t attr_dt(size_t optin) {
    cudaError_t e = attr_t<1, 3, DT, REC>(optin);
    if (e == cudaSuccess) e = attr_t<4, 3, DT, REC>(optin);
    if (e == cudaSuccess) e = attr_t<4, 2, DT, REC>(optin);
    if (e == cudaSuccess && !REC) e = attr_t<2, 2, DT, false, 4>(optin);
    return e;
}

/* The instantiations this device's shared memory holds (the forward refuses
 * a head count none of them serves, by name). */
extern "C" int mla_sparse_init(size_t smem_optin) {
    cudaError_t e = attr_dt<MLA_DT_BF16, false>(smem_optin);
    if (e == cudaSuccess) e = attr_dt<MLA_DT_F16, false>(smem_optin);
    if (e == cudaSuccess) e = attr_dt<MLA_DT_BF16, true>(smem_optin);
    return (int)e;
}
