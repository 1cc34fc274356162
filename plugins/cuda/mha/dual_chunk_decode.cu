/*
 * dual_chunk_decode.cu - dual chunk attention decode (dual_chunk.h) on tensor
 * cores (CUDA, SM 8.0+), on the design of decode_mma.cu: work items
 * (request, KV split) of the decode plan, the up to 16 q heads of a kv head
 * as the rows of one mma tile, KV tiles of 64 tokens gathered with cp.async,
 * 4 warps of 16 tokens each, attn_decode_finish for the output and the split
 * combine.
 *
 * The three query variants of the block's heads sit in shared memory (the
 * A operand is read with ldmatrix per tile: the kernel is memory-bound, and
 * registers stay those of one variant).  A warp's 16 keys lie in one part
 * except at the two boundaries of the request (c0 - chunk_len and c0); there
 * the warp scores its keys once per part it touches and keeps, per key, the
 * score of that key's part.  Every key is read once, whichever part it is in.
 */
#include "attn_kernels/decode_finish.cuh"
#include "dual_chunk.h"
#include "kv_loader.cuh"

#define DCA_D_THREADS 128
#define DCA_D_WARPS 4
#define DCA_D_TILE 64 /* tokens per tile: 16 per warp */
#define DCA_D_ROWS 16 /* q heads per block */

template <int D> struct dca_decode_cfg {
    static constexpr int STAGES = D <= 128 ? 3 : 2;
    static constexpr int Q_ELEMS = DCA_D_ROWS * D; /* one variant */
    static constexpr int KV_ELEMS = DCA_D_TILE * D;
    static constexpr size_t PIPE_BYTES = (size_t)(3 * Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2;
    static constexpr size_t MERGE_BYTES =
        (size_t)(DCA_D_WARPS * DCA_D_ROWS * D + DCA_D_ROWS * D + 2 * DCA_D_WARPS * DCA_D_ROWS + 2 * DCA_D_ROWS) * 4;
    static constexpr size_t SMEM = PIPE_BYTES > MERGE_BYTES ? PIPE_BYTES : MERGE_BYTES;
};

template <int DT, int D>
__global__ __launch_bounds__(DCA_D_THREADS) void attn_dual_chunk_decode_kernel(attn_fwd p, attn_dca dc) {
    using C = dca_decode_cfg<D>;
    constexpr int S = C::STAGES, TILE = DCA_D_TILE, CH = D / 8, NB = D / 8;
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *qs = smem; /* [3][16][D]: q, q_succ, q_inter */
    uint16_t *ks = smem + 3 * C::Q_ELEMS;
    uint16_t *vs = ks + S * C::KV_ELEMS;

    const int item = blockIdx.x, hblock = blockIdx.y;
    if (item >= *p.num_items) return;
    const attn_decode_item it = p.ditems[item];
    const int hblocks = (p.group + DCA_D_ROWS - 1) / DCA_D_ROWS;
    const int kvh = hblock / hblocks, hb = hblock % hblocks;
    const int qh0 = kvh * p.group + hb * DCA_D_ROWS;
    const int nh = min(DCA_D_ROWS, p.group - hb * DCA_D_ROWS);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;

    for (int i = tid; i < 3 * DCA_D_ROWS * CH; i += DCA_D_THREADS) {
        const int v = i / (DCA_D_ROWS * CH), r = i / CH % DCA_D_ROWS, c = i % CH;
        const bool ok = r < nh;
        const uint16_t *src = dca_q_row(p, dc, v, it.b, qh0 + (ok ? r : 0)) + c * 8;
        gc_cp_async16(qs + v * C::Q_ELEMS + swz<D>(r, c), src, ok);
    }
    gc_cp_async_commit();

    const int beg = it.kv_begin, end = it.kv_end;
    const int ntiles = end > beg ? (end - beg + TILE - 1) / TILE : 0;
    const int cl = dc.chunk_len, c0 = it.q_pos - it.q_pos % cl; /* the query's chunk */
    const float sc = dca_scale_log2(p.scale_log2, dc, it.q_pos + 1);

    kv_loader<D, TILE, DCA_D_THREADS> ld;
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

    for (int j = 0; j < ntiles; j++) {
        if (j + S - 1 < ntiles) {
            const int st = (j + S - 1) % S;
            ld.issue(p, kvh, ks + st * C::KV_ELEMS, vs + st * C::KV_ELEMS, beg + (j + S - 1) * TILE, end);
            ld.fetch_slots(p, it.row, beg + (j + S) * TILE, end);
        }
        gc_cp_async_commit();
        gc_cp_async_wait<S - 1>();
        __syncthreads();
        const uint16_t *kt = ks + (j % S) * C::KV_ELEMS;
        const uint16_t *vt = vs + (j % S) * C::KV_ELEMS;
        const int w0 = warp * 16;
        const int tbase = beg + j * TILE + w0;
        /* parts of this warp's keys: from its last key's (lowest) to its first's */
        const int vlo = dca_part(tbase + 15, c0, cl), vhi = dca_part(tbase, c0, cl);

        float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
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
        /* scores -> log2 domain, masked past the end; online softmax per row */
        float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
        for (int nb = 0; nb < 2; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = tbase + nb * 8 + t4 * 2 + (i & 1);
                const float v = col < end ? s[nb][i] * sc : ATTN_NEG_INF;
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
    float *wo = (float *)smem;                         /* [W][16][D] */
    float *so = wo + DCA_D_WARPS * DCA_D_ROWS * D;     /* [16][D] */
    float *wm = so + DCA_D_ROWS * D;                   /* [W][16] */
    float *wl = wm + DCA_D_WARPS * DCA_D_ROWS;         /* [W][16] */
    float *sm = wl + DCA_D_WARPS * DCA_D_ROWS;         /* [16] */
    float *sl = sm + DCA_D_ROWS;                       /* [16] */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
#pragma unroll
    for (int n = 0; n < NB; n++) {
        float *r0 = wo + (warp * DCA_D_ROWS + g) * D + n * 8 + t4 * 2;
        float *r1 = r0 + 8 * D;
        r0[0] = o[n][0];
        r0[1] = o[n][1];
        r1[0] = o[n][2];
        r1[1] = o[n][3];
    }
    if (t4 == 0) {
        wm[warp * DCA_D_ROWS + g] = m[0];
        wm[warp * DCA_D_ROWS + g + 8] = m[1];
        wl[warp * DCA_D_ROWS + g] = l[0];
        wl[warp * DCA_D_ROWS + g + 8] = l[1];
    }
    __syncthreads();
    for (int i = tid; i < DCA_D_ROWS * D; i += DCA_D_THREADS) {
        const int r = i / D;
        float mxw = ATTN_NEG_INF;
#pragma unroll
        for (int w = 0; w < DCA_D_WARPS; w++) mxw = fmaxf(mxw, wm[w * DCA_D_ROWS + r]);
        float acc = 0.f, ls = 0.f;
#pragma unroll
        for (int w = 0; w < DCA_D_WARPS; w++) {
            const float f = attn_rescale(wm[w * DCA_D_ROWS + r], mxw);
            acc += wo[w * DCA_D_ROWS * D + i] * f;
            ls += wl[w * DCA_D_ROWS + r] * f;
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
    return (int)cudaFuncSetAttribute(attn_dual_chunk_decode_kernel<DT, D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dca_decode_cfg<D>::SMEM);
}

template <int DT, int D> static int launch(const attn_fwd *p, const attn_dca *dc, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + DCA_D_ROWS - 1) / DCA_D_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_dual_chunk_decode_kernel<DT, D><<<grid, DCA_D_THREADS, dca_decode_cfg<D>::SMEM, st>>>(*p, *dc);
    return (int)cudaGetLastError();
}

extern "C" int attn_dual_chunk_decode_setup(int dtype, int d) {
    ATTN_DISPATCH(cudaErrorInvalidValue, setup, dtype, d, );
}

extern "C" int attn_launch_dual_chunk_decode(int dtype, int d, const attn_fwd *p, const attn_dca *dc,
                                             int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, launch, dtype, d, p, dc, grid_items, (cudaStream_t)stream);
}
