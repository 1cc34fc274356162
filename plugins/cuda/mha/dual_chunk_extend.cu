/*
 * dual_chunk_extend.cu - dual chunk attention extend / prefill (dual_chunk.h)
 * on tensor cores with mma.sync m16n8k16 (CUDA, SM 8.0+), on the design of
 * extend_mma.cu: 4 warps of 16 q rows, K/V tiles of BN tokens gathered with
 * cp.async (double-buffered), online softmax in registers.
 *
 * Grid: x = q head, y = work item of the extend plan, z = 64-row sub-tile of
 * the item (the plan's items hold up to block_m rows, which the chosen plain
 * kernel sets).  The 64 rows' three query variants sit in shared memory.  The
 * part of key k for row r is monotone in both (later keys: nearer parts;
 * later rows: farther ones), so a warp's rows x the tile's keys lie in one
 * part unless the tile crosses a row's boundary: then S comes from the
 * variant registers of that part (reloaded from shared memory when the part
 * changes, which happens twice per row over the whole KV); at a boundary the
 * warp scores each 16-key slice once per part it touches and keeps, per
 * element, the score of its part.
 */
#include "dual_chunk.h"
#include "kv_loader.cuh"

#define DCA_E_THREADS 128
#define DCA_E_BM 64

template <int D> struct dca_extend_cfg {
    static constexpr int BM = DCA_E_BM;
    static constexpr int BN = D == 256 ? 32 : 64;
    static constexpr int STAGES = 2;
    static constexpr int Q_ELEMS = BM * D, KV_ELEMS = BN * D; /* Q_ELEMS: one variant */
    static constexpr size_t SMEM = (size_t)(3 * Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2;
};

template <int DT, int D>
__global__ __launch_bounds__(DCA_E_THREADS) void attn_dual_chunk_extend_kernel(attn_fwd p, attn_dca dc) {
    using C = dca_extend_cfg<D>;
    constexpr int BM = C::BM, BN = C::BN, S = C::STAGES, CH = D / 8, NB = D / 8, SN = BN / 8;
    constexpr bool QREG = D <= 128;
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *qs = smem; /* [3][BM][D]: q, q_succ, q_inter */
    uint16_t *ks = smem + 3 * C::Q_ELEMS;
    uint16_t *vs = ks + S * C::KV_ELEMS;

    if ((int)blockIdx.y >= *p.num_items) return;
    const attn_extend_item it = p.eitems[blockIdx.y];
    const int rb = (int)blockIdx.z * BM;
    if (rb >= it.nrows) return;
    const int nrows = min(BM, it.nrows - rb), q_tok0 = it.q_tok0 + rb, q_pos0 = it.q_pos0 + rb;
    const int head = blockIdx.x, kvh = head / p.group;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;

    for (int i = tid; i < 3 * BM * CH; i += DCA_E_THREADS) {
        const int v = i / (BM * CH), r = i / CH % BM, c = i % CH;
        const int tok = q_tok0 + r;
        const bool ok = r < nrows && tok < p.num_tokens;
        const uint16_t *src = dca_q_row(p, dc, v, ok ? tok : 0, head) + c * 8;
        gc_cp_async16(qs + v * C::Q_ELEMS + swz<D>(r, c), src, ok);
    }
    gc_cp_async_commit();

    const int lo = it.kv_lo;
    int hi = it.kv_hi;
    const int seq_len = it.kv_hi; /* the request's keys after this call (self attention: enc 0) */
    if (it.causal && q_pos0 + nrows < hi) hi = q_pos0 + nrows;
    const int ntiles = hi > lo ? (hi - lo + BN - 1) / BN : 0;

    kv_loader_pf<D, BN, DCA_E_THREADS> ld;
    ld.fetch_slots(p, it.row, lo, hi);
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < ntiles) {
            ld.issue(p, kvh, ks + s * C::KV_ELEMS, vs + s * C::KV_ELEMS, lo + s * BN, hi);
            ld.fetch_slots(p, it.row, lo + (s + 1) * BN, hi);
        }
        gc_cp_async_commit();
    }

    float o[NB][4];
#pragma unroll
    for (int n = 0; n < NB; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, l[2] = {0.f, 0.f};
    uint32_t qf[QREG ? D / 16 : 1][4];
    int cur = -1; /* the part whose variant qf holds */
    const int r0 = warp * 16;
    const int cl = dc.chunk_len;
    int chi[2], c0r[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int qpos = q_pos0 + r0 + g + 8 * h;
        chi[h] = it.causal && qpos + 1 < hi ? qpos + 1 : hi;
        c0r[h] = qpos - qpos % cl;
    }
    const int pmin = q_pos0 + r0, pmax = pmin + 15; /* the warp's rows */
    const int c0min = pmin - pmin % cl, c0max = pmax - pmax % cl;
    const float sc = dca_scale_log2(p.scale_log2, dc, seq_len);
    const bool folded = sc > 0.f; /* S stays raw; exp2(s * sc - m) is one FFMA */
    const float csc = folded ? sc : 1.f;

    for (int j = 0; j < ntiles; j++) {
        if (j + S - 1 < ntiles) {
            const int st = (j + S - 1) % S;
            ld.issue(p, kvh, ks + st * C::KV_ELEMS, vs + st * C::KV_ELEMS, lo + (j + S - 1) * BN, hi);
            ld.fetch_slots(p, it.row, lo + (j + S) * BN, hi);
        }
        gc_cp_async_commit();
        gc_cp_async_wait<S - 1>();
        __syncthreads();
        const uint16_t *kt = ks + (j % S) * C::KV_ELEMS;
        const uint16_t *vt = vs + (j % S) * C::KV_ELEMS;
        const int t0 = lo + j * BN;
        const int vlo = dca_part(t0 + BN - 1, c0min, cl), vhi = dca_part(t0, c0max, cl);

        float s[SN][4];
#pragma unroll
        for (int n = 0; n < SN; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        if (vlo == vhi) { /* one part: as extend_mma.cu, with that part's variant */
            const uint16_t *qt = qs + vlo * C::Q_ELEMS;
            if (QREG && cur != vlo) {
#pragma unroll
                for (int kk = 0; kk < (QREG ? D / 16 : 1); kk++)
                    ldsm_x4(qf[kk], qt + swz<D>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                cur = vlo;
            }
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t a[4];
                if (QREG) {
#pragma unroll
                    for (int i = 0; i < 4; i++) a[i] = qf[QREG ? kk : 0][i];
                } else {
                    ldsm_x4(a, qt + swz<D>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                }
#pragma unroll
                for (int n2 = 0; n2 < SN / 2; n2++) {
                    uint32_t b[4];
                    ldsm_x4(b, kt + swz<D>(n2 * 16 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                    mma16816<DT>(s[2 * n2], a, b[0], b[1]);
                    mma16816<DT>(s[2 * n2 + 1], a, b[2], b[3]);
                }
            }
        } else { /* a boundary: per 16-key slice, once per part, kept per element */
#pragma unroll
            for (int n2 = 0; n2 < SN / 2; n2++) {
                for (int vv = vlo; vv <= vhi; vv++) {
                    const uint16_t *qt = qs + vv * C::Q_ELEMS;
                    float t[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
                    for (int kk = 0; kk < D / 16; kk++) {
                        uint32_t a[4], b[4];
                        ldsm_x4(a, qt + swz<D>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                        ldsm_x4(b, kt + swz<D>(n2 * 16 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                        mma16816<DT>(t[0], a, b[0], b[1]);
                        mma16816<DT>(t[1], a, b[2], b[3]);
                    }
#pragma unroll
                    for (int nb = 0; nb < 2; nb++)
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            const int col = t0 + n2 * 16 + nb * 8 + t4 * 2 + (i & 1);
                            if (dca_part(col, c0r[i >> 1], cl) == vv) s[2 * n2 + nb][i] = t[nb][i];
                        }
                }
            }
        }
        if (!folded) {
#pragma unroll
            for (int n = 0; n < SN; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) s[n][i] *= sc;
        }
        /* mask only where some (row, column) pair of the tile can be invisible */
        const bool need_mask = t0 + BN > hi || (it.causal && t0 + BN - 1 > q_pos0);
        if (need_mask) {
#pragma unroll
            for (int n = 0; n < SN; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int col = t0 + n * 8 + t4 * 2 + (i & 1);
                    s[n][i] = col < chi[i >> 1] ? s[n][i] : ATTN_NEG_INF;
                }
        }
        float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
        for (int n = 0; n < SN; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) mx[i >> 1] = fmaxf(mx[i >> 1], s[n][i]);
        float corr[2], mo[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            const float mn = fmaxf(mx[h] * csc, m[h]); /* log2 domain */
            corr[h] = attn_rescale(m[h], mn);
            m[h] = mn;
            l[h] *= corr[h];
            mo[h] = mn == ATTN_NEG_INF ? 0.f : mn;
        }
#pragma unroll
        for (int n = 0; n < SN; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float e = gc_exp2(fmaf(s[n][i], csc, -mo[i >> 1]));
                s[n][i] = e;
                l[i >> 1] += e;
            }
#pragma unroll
        for (int n = 0; n < NB; n++) {
            o[n][0] *= corr[0];
            o[n][1] *= corr[0];
            o[n][2] *= corr[1];
            o[n][3] *= corr[1];
        }
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t pa[4];
            pa[0] = pack2<DT>(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = pack2<DT>(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = pack2<DT>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = pack2<DT>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int db = 0; db < D / 16; db++) {
                uint32_t b[4];
                ldsm_x4_t(b, vt + swz<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * db + (lane >> 4)));
                mma16816<DT>(o[2 * db], pa, b[0], b[1]);
                mma16816<DT>(o[2 * db + 1], pa, b[2], b[3]);
            }
        }
        __syncthreads(); /* this stage is overwritten by the next issue */
    }
    gc_cp_async_wait<0>();

    /* Normalise and store this warp's rows. */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
        const int r = r0 + g + 8 * h, tok = q_tok0 + r;
        if (r >= nrows || tok >= p.num_tokens) continue;
        uint16_t *out = (uint16_t *)p.out + (int64_t)tok * p.o_stride_t + (int64_t)head * p.o_stride_h;
#pragma unroll
        for (int n = 0; n < NB; n++)
            *(uint32_t *)(out + n * 8 + t4 * 2) = pack2<DT>(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
    }
}

template <int DT, int D> static int setup(void) {
    return (int)cudaFuncSetAttribute(attn_dual_chunk_extend_kernel<DT, D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dca_extend_cfg<D>::SMEM);
}

template <int DT, int D>
static int launch(const attn_fwd *p, const attn_dca *dc, int block_m, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items, (unsigned)((block_m + DCA_E_BM - 1) / DCA_E_BM));
    attn_dual_chunk_extend_kernel<DT, D><<<grid, DCA_E_THREADS, dca_extend_cfg<D>::SMEM, st>>>(*p, *dc);
    return (int)cudaGetLastError();
}

extern "C" int attn_dual_chunk_extend_setup(int dtype, int d) {
    ATTN_DISPATCH(cudaErrorInvalidValue, setup, dtype, d, );
}

extern "C" int attn_launch_dual_chunk_extend(int dtype, int d, const attn_fwd *p, const attn_dca *dc, int block_m,
                                             int grid_items, void *stream) {
    if (grid_items <= 0 || block_m <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, launch, dtype, d, p, dc, block_m, grid_items, (cudaStream_t)stream);
}
