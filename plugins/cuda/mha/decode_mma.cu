/*
 * decode_mma.cu - paged split-KV decode on tensor cores (CUDA, SM 8.0+), K/V
 * staged in shared memory: cuda_attn's decode where the register-fed one
 * (decode_reg.cu) does not serve: head dim 256 and GQA groups over
 * ATTN_DECODE_REG_MAX_GROUP (cuda_attn_choice.c); every decode with the
 * option kernel=mma.
 *
 * Grid: x = work item (request, KV split), y = kv head x head-block.  The up
 * to 16 q heads of one kv head are the 16 rows of an mma tile (GQA packing:
 * each KV byte is read once per item).  A KV tile of 64 tokens is gathered
 * through the page table with cp.async, STAGES deep; each of the 4 warps
 * scores its 16 tokens (S = Q K^T, 16x16), updates its own online softmax and
 * accumulates P V (16 x D).  The warps' states are merged through shared
 * memory at the end and attn_decode_finish writes out / combines splits.
 *
 * Work per 16 tokens and warp: D/8 mma for S and D/8 for PV; the bytes are
 * 4 * D per token (K and V, 16-bit), so the kernel stays memory-bound.
 *
 * The same kernel, with the template parameter DCA, is the dual chunk
 * attention decode (dual_chunk.h), with its setup and launcher.
 */
#include "attn_kernels/decode_finish.cuh"
#include "dual_chunk.h"
#include "flash_mma.cuh"

#define ATTN_DM_THREADS 128
#define ATTN_DM_WARPS 4
#define ATTN_DM_TILE 64 /* tokens per tile: 16 per warp */
#define ATTN_DM_ROWS 16 /* q heads per block */

/* NQ: the query variants staged in shared memory (1; 3 for dual chunk). */
template <int D, int NQ = 1> struct decode_mma_cfg {
    /* cp.async depth: 3 tiles (100 KB at d128, 2 blocks per SM), 2 at d256 */
    static constexpr int STAGES = D <= 128 ? 3 : 2;
    static constexpr int Q_ELEMS = ATTN_DM_ROWS * D; /* one variant */
    static constexpr int KV_ELEMS = ATTN_DM_TILE * D; /* one K or V tile */
    static constexpr size_t PIPE_BYTES = (size_t)(NQ * Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2;
    /* after the loop the same memory holds the warps' states and the merge */
    static constexpr size_t MERGE_BYTES =
        (size_t)(ATTN_DM_WARPS * ATTN_DM_ROWS * D + ATTN_DM_ROWS * D + 2 * ATTN_DM_WARPS * ATTN_DM_ROWS +
                 2 * ATTN_DM_ROWS) * 4;
    static constexpr size_t SMEM = PIPE_BYTES > MERGE_BYTES ? PIPE_BYTES : MERGE_BYTES;
};

/* DCA: dual chunk attention (dual_chunk.h; dc is read only then): the
 * block's heads' three query variants sit in shared memory (the A operand is
 * read with ldmatrix per tile: the kernel is memory-bound, and registers stay
 * those of one variant); a warp's 16 keys lie in one part except at the two
 * boundaries of the request (c0 - chunk_len and c0), where the warp scores
 * its keys once per part it touches and keeps, per key, the score of that
 * key's part.  Every key is read once, whichever part it is in.  No window,
 * no soft-cap: the length-scaled dca_scale_log2 instead of attn_score.  The
 * plain instantiations compile to the code of the kernel without DCA. */
template <int DT, int D, bool DCA>
__global__ __launch_bounds__(ATTN_DM_THREADS) void attn_decode_mma_kernel(attn_fwd p, attn_dca dc) {
    constexpr int NQ = DCA ? 3 : 1;
    using C = decode_mma_cfg<D, NQ>;
    constexpr int S = C::STAGES, TILE = ATTN_DM_TILE, CH = D / 8, NB = D / 8;
    constexpr bool QREG = !DCA && D <= 128; /* Q fragments kept in registers */
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *qs = smem; /* [NQ][16][D]: q (, q_succ, q_inter) */
    uint16_t *ks = smem + NQ * C::Q_ELEMS;
    uint16_t *vs = ks + S * C::KV_ELEMS;

    const int item = blockIdx.x, hblock = blockIdx.y;
    if (item >= *p.num_items) return;
    const attn_decode_item it = p.ditems[item];
    const int hblocks = (p.group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    const int kvh = hblock / hblocks, hb = hblock % hblocks;
    const int qh0 = kvh * p.group + hb * ATTN_DM_ROWS;
    const int nh = min(ATTN_DM_ROWS, p.group - hb * ATTN_DM_ROWS);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;

    if constexpr (DCA) {
        for (int i = tid; i < 3 * ATTN_DM_ROWS * CH; i += ATTN_DM_THREADS) {
            const int v = i / (ATTN_DM_ROWS * CH), r = i / CH % ATTN_DM_ROWS, c = i % CH;
            const bool ok = r < nh;
            const uint16_t *src = dca_q_row(p, dc, v, it.b, qh0 + (ok ? r : 0)) + c * 8;
            gc_cp_async16(qs + v * C::Q_ELEMS + swz<D>(r, c), src, ok);
        }
    } else {
        for (int i = tid; i < ATTN_DM_ROWS * CH; i += ATTN_DM_THREADS) {
            const int r = i / CH, c = i % CH;
            const bool ok = r < nh;
            const uint16_t *src = (const uint16_t *)p.q + (int64_t)it.b * p.q_stride_t +
                                  (int64_t)(qh0 + (ok ? r : 0)) * p.q_stride_h + c * 8;
            gc_cp_async16(qs + swz<D>(r, c), src, ok);
        }
    }
    gc_cp_async_commit();

    int beg = it.kv_begin;
    if constexpr (!DCA)
        if (p.window >= 0 && it.q_pos - p.window > beg) beg = it.q_pos - p.window;
    const int end = it.kv_end;
    const int ntiles = end > beg ? (end - beg + TILE - 1) / TILE : 0;
    /* DCA: the query's chunk and the length-scaled scale */
    [[maybe_unused]] int cl = 0, c0 = 0;
    [[maybe_unused]] float sc = 0.f;
    if constexpr (DCA) {
        cl = dc.chunk_len;
        c0 = it.q_pos - it.q_pos % cl;
        sc = dca_scale_log2(p.scale_log2, dc, it.q_pos + 1);
    }

    kv_loader<D, TILE, ATTN_DM_THREADS> ld;
    kv_pipe_fill<S, TILE>(ld, p, kvh, ks, vs, C::KV_ELEMS, C::KV_ELEMS, it.row, beg, end, ntiles);

    float o[NB][4];
#pragma unroll
    for (int n = 0; n < NB; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, l[2] = {0.f, 0.f};
    uint32_t qf[QREG ? D / 16 : 1][4];

    for (int j = 0; j < ntiles; j++) {
        if (j + S - 1 < ntiles) {
            const int st = (j + S - 1) % S;
            ld.issue(p, kvh, ks + st * C::KV_ELEMS, vs + st * C::KV_ELEMS, beg + (j + S - 1) * TILE, end);
            ld.fetch_slots(p, it.row, beg + (j + S) * TILE, end);
        }
        gc_cp_async_commit();
        gc_cp_async_wait<S - 1>();
        __syncthreads();
        if (QREG && j == 0) {
#pragma unroll
            for (int kk = 0; kk < (QREG ? D / 16 : 1); kk++)
                ldsm_x4(qf[kk], qs + swz<D>(lane & 15, 2 * kk + (lane >> 4)));
        }
        const uint16_t *kt = ks + (j % S) * C::KV_ELEMS;
        const uint16_t *vt = vs + (j % S) * C::KV_ELEMS;
        const int w0 = warp * 16; /* this warp's tokens in the tile */

        float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        if constexpr (DCA) {
            /* parts of this warp's keys: from its last key's (lowest) to its first's */
            const int tbase = beg + j * TILE + w0;
            const int vlo = dca_part(tbase + 15, c0, cl), vhi = dca_part(tbase, c0, cl);
            for (int vv = vlo; vv <= vhi; vv++) {
                const uint16_t *qt = qs + vv * C::Q_ELEMS;
                float t[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
                    uint32_t a[4], b[4];
                    ldsm_x4(a, qt + swz<D>(lane & 15, 2 * kk + (lane >> 4)));
                    ldsm_x4(b, kt + swz<D>(w0 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                    mma16816<DT>(t[0], a, b[0], b[1]);
                    mma16816<DT>(t[1], a, b[2], b[3]);
                }
#pragma unroll
                for (int nb = 0; nb < 2; nb++)
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const int col = tbase + nb * 8 + t4 * 2 + (i & 1);
                        s[nb][i] = vlo == vhi || dca_part(col, c0, cl) == vv ? t[nb][i] : s[nb][i];
                    }
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t a[4], b[4];
                if (QREG) {
#pragma unroll
                    for (int i = 0; i < 4; i++) a[i] = qf[QREG ? kk : 0][i];
                } else {
                    ldsm_x4(a, qs + swz<D>(lane & 15, 2 * kk + (lane >> 4)));
                }
                ldsm_x4(b, kt + swz<D>(w0 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                mma16816<DT>(s[0], a, b[0], b[1]);
                mma16816<DT>(s[1], a, b[2], b[3]);
            }
        }
        /* scores -> log2 domain, masked past the end; online softmax per row */
        const int tbase = beg + j * TILE + w0;
        float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
        for (int nb = 0; nb < 2; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = tbase + nb * 8 + t4 * 2 + (i & 1);
                const float v = col < end ? (DCA ? s[nb][i] * sc : attn_score(p, s[nb][i])) : ATTN_NEG_INF;
                s[nb][i] = v;
                mx[i >> 1] = v > mx[i >> 1] ? v : mx[i >> 1];
            }
        float corr[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            const float mn = mx[h] > m[h] ? mx[h] : m[h];
            corr[h] = attn_rescale(m[h], mn);
            m[h] = mn;
            l[h] *= corr[h];
        }
#pragma unroll
        for (int nb = 0; nb < 2; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float e = attn_exp2_sub(s[nb][i], m[i >> 1]);
                s[nb][i] = e;
                l[i >> 1] += e;
            }
        o_rescale(o, corr);
        uint32_t pa[4];
        p_pack<DT>(pa, s[0], s[1]);
#pragma unroll
        for (int db = 0; db < D / 16; db++) {
            uint32_t b[4];
            ldsm_x4_t(b, vt + swz<D>(w0 + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * db + (lane >> 4)));
            mma16816<DT>(o[2 * db], pa, b[0], b[1]);
            mma16816<DT>(o[2 * db + 1], pa, b[2], b[3]);
        }
        __syncthreads(); /* this stage is overwritten by the next issue */
    }
    gc_cp_async_wait<0>();
    __syncthreads();

    /* Per-warp states -> shared memory (the pipeline buffers are free now). */
    float *wo = (float *)smem;                                 /* [W][16][D] */
    float *so = wo + ATTN_DM_WARPS * ATTN_DM_ROWS * D;         /* [16][D] */
    float *wm = so + ATTN_DM_ROWS * D;                         /* [W][16] */
    float *wl = wm + ATTN_DM_WARPS * ATTN_DM_ROWS;             /* [W][16] */
    float *sm = wl + ATTN_DM_WARPS * ATTN_DM_ROWS;             /* [16] */
    float *sl = sm + ATTN_DM_ROWS;                             /* [16] */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
#pragma unroll
    for (int n = 0; n < NB; n++) {
        float *r0 = wo + (warp * ATTN_DM_ROWS + g) * D + n * 8 + t4 * 2;
        float *r1 = r0 + 8 * D;
        r0[0] = o[n][0];
        r0[1] = o[n][1];
        r1[0] = o[n][2];
        r1[1] = o[n][3];
    }
    if (t4 == 0) {
        wm[warp * ATTN_DM_ROWS + g] = m[0];
        wm[warp * ATTN_DM_ROWS + g + 8] = m[1];
        wl[warp * ATTN_DM_ROWS + g] = l[0];
        wl[warp * ATTN_DM_ROWS + g + 8] = l[1];
    }
    __syncthreads();
    for (int i = tid; i < ATTN_DM_ROWS * D; i += ATTN_DM_THREADS) {
        const int r = i / D;
        float mxw = ATTN_NEG_INF;
#pragma unroll
        for (int w = 0; w < ATTN_DM_WARPS; w++) mxw = fmaxf(mxw, wm[w * ATTN_DM_ROWS + r]);
        float acc = 0.f, ls = 0.f;
#pragma unroll
        for (int w = 0; w < ATTN_DM_WARPS; w++) {
            const float f = attn_rescale(wm[w * ATTN_DM_ROWS + r], mxw);
            acc += wo[w * ATTN_DM_ROWS * D + i] * f;
            ls += wl[w * ATTN_DM_ROWS + r] * f;
        }
        so[i] = acc;
        if (i % D == 0) {
            sm[r] = mxw;
            sl[r] = ls;
        }
    }
    __syncthreads();
    attn_decode_finish<DT, D>(p, it, qh0, nh, so, sm, sl, hblock);
}

template <int DT, int D> static int setup(void) {
    return (int)cudaFuncSetAttribute(attn_decode_mma_kernel<DT, D, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)decode_mma_cfg<D>::SMEM);
}

template <int DT, int D> static int launch(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_mma_kernel<DT, D, false><<<grid, ATTN_DM_THREADS, decode_mma_cfg<D>::SMEM, st>>>(*p, attn_dca{});
    return (int)cudaGetLastError();
}

extern "C" int attn_decode_mma_setup(int dtype, int d) { ATTN_DISPATCH(cudaErrorInvalidValue, setup, dtype, d, ); }

extern "C" int attn_launch_decode_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, launch, dtype, d, p, grid_items, (cudaStream_t)stream);
}

template <int DT, int D> static int dca_setup(void) {
    return (int)cudaFuncSetAttribute(attn_decode_mma_kernel<DT, D, true>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)decode_mma_cfg<D, 3>::SMEM);
}

template <int DT, int D>
static int dca_launch(const attn_fwd *p, const attn_dca *dc, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_mma_kernel<DT, D, true><<<grid, ATTN_DM_THREADS, decode_mma_cfg<D, 3>::SMEM, st>>>(*p, *dc);
    return (int)cudaGetLastError();
}

extern "C" int attn_dual_chunk_decode_setup(int dtype, int d) {
    ATTN_DISPATCH(cudaErrorInvalidValue, dca_setup, dtype, d, );
}

extern "C" int attn_launch_dual_chunk_decode(int dtype, int d, const attn_fwd *p, const attn_dca *dc,
                                             int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, dca_launch, dtype, d, p, dc, grid_items, (cudaStream_t)stream);
}
