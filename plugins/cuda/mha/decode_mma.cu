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
 */
#include "attn_kernels/decode_finish.cuh"
#include "cuda_launch.h"
#include "kv_loader.cuh"

#define ATTN_DM_THREADS 128
#define ATTN_DM_WARPS 4
#define ATTN_DM_TILE 64 /* tokens per tile: 16 per warp */
#define ATTN_DM_ROWS 16 /* q heads per block */

template <int D> struct decode_mma_cfg {
    /* cp.async depth: 3 tiles (100 KB at d128, 2 blocks per SM), 2 at d256 */
    static constexpr int STAGES = D <= 128 ? 3 : 2;
    static constexpr int Q_ELEMS = ATTN_DM_ROWS * D;
    static constexpr int KV_ELEMS = ATTN_DM_TILE * D; /* one K or V tile */
    static constexpr size_t PIPE_BYTES = (size_t)(Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2;
    /* after the loop the same memory holds the warps' states and the merge */
    static constexpr size_t MERGE_BYTES =
        (size_t)(ATTN_DM_WARPS * ATTN_DM_ROWS * D + ATTN_DM_ROWS * D + 2 * ATTN_DM_WARPS * ATTN_DM_ROWS +
                 2 * ATTN_DM_ROWS) * 4;
    static constexpr size_t SMEM = PIPE_BYTES > MERGE_BYTES ? PIPE_BYTES : MERGE_BYTES;
};

template <int DT, int D>
__global__ __launch_bounds__(ATTN_DM_THREADS) void attn_decode_mma_kernel(attn_fwd p) {
    using C = decode_mma_cfg<D>;
    constexpr int S = C::STAGES, TILE = ATTN_DM_TILE, CH = D / 8, NB = D / 8;
    constexpr bool QREG = D <= 128; /* Q fragments kept in registers */
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *qs = smem;
    uint16_t *ks = smem + C::Q_ELEMS;
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

    for (int i = tid; i < ATTN_DM_ROWS * CH; i += ATTN_DM_THREADS) {
        const int r = i / CH, c = i % CH;
        const bool ok = r < nh;
        const uint16_t *src = (const uint16_t *)p.q + (int64_t)it.b * p.q_stride_t +
                              (int64_t)(qh0 + (ok ? r : 0)) * p.q_stride_h + c * 8;
        gc_cp_async16(qs + swz<D>(r, c), src, ok);
    }
    gc_cp_async_commit();

    int beg = it.kv_begin;
    if (p.window >= 0 && it.q_pos - p.window > beg) beg = it.q_pos - p.window;
    const int end = it.kv_end;
    const int ntiles = end > beg ? (end - beg + TILE - 1) / TILE : 0;

    kv_loader<D, TILE, ATTN_DM_THREADS> ld;
    ld.fetch_slots(p, it.row, beg, end);
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < ntiles) {
            ld.issue(p, kvh, ks + s * C::KV_ELEMS, vs + s * C::KV_ELEMS, beg + s * TILE, end);
            ld.fetch_slots(p, it.row, beg + (s + 1) * TILE, end);
        }
        gc_cp_async_commit();
    }

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
        /* scores -> log2 domain, masked past the end; online softmax per row */
        const int tbase = beg + j * TILE + w0;
        float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
        for (int nb = 0; nb < 2; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = tbase + nb * 8 + t4 * 2 + (i & 1);
                const float v = col < end ? attn_score(p, s[nb][i]) : ATTN_NEG_INF;
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
#pragma unroll
        for (int n = 0; n < NB; n++) {
            o[n][0] *= corr[0];
            o[n][1] *= corr[0];
            o[n][2] *= corr[1];
            o[n][3] *= corr[1];
        }
        uint32_t pa[4];
        pa[0] = pack2<DT>(s[0][0], s[0][1]);
        pa[1] = pack2<DT>(s[0][2], s[0][3]);
        pa[2] = pack2<DT>(s[1][0], s[1][1]);
        pa[3] = pack2<DT>(s[1][2], s[1][3]);
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
    return (int)cudaFuncSetAttribute(attn_decode_mma_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)decode_mma_cfg<D>::SMEM);
}

template <int DT, int D> static int launch(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_mma_kernel<DT, D><<<grid, ATTN_DM_THREADS, decode_mma_cfg<D>::SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

extern "C" int attn_decode_mma_setup(int dtype, int d) { ATTN_DISPATCH(cudaErrorInvalidValue, setup, dtype, d, ); }

extern "C" int attn_launch_decode_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, launch, dtype, d, p, grid_items, (cudaStream_t)stream);
}
