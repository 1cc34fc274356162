/*
 * mla_narrow.cu - the SM 9.0a MLA kernel for narrow tiles: 16 or 32 query
 * rows (decode at 16 heads, 16 heads x 2 tokens, 32 heads), the memory-bound
 * shapes of issue 7.
 *
 * Why transposed: wgmma's M is always 64.  With rows as M (the wgmma kernel)
 * 16 heads waste 3/4 of every product; here the keys and the value columns
 * are M and the query rows are N (N = 16 or 32), so nothing is padded:
 *   S^T[64 keys x N]   = sum over 9 sub-tiles  K_sub (K-major) . Q_sub^T
 *   O^T[512 dims x N] += V^T (MN-major, the same key rows) . P^T (K-major)
 * The softmax runs down the columns of S^T (one query row per column): a
 * column's max crosses the 4 warps once per block through shared memory;
 * the row sums stay per thread until the item ends.
 *
 * Threads: one consumer warpgroup (wgmma, softmax) and one producer warp.
 * The producer streams every 64-key block as 9 sub-tiles of 64 keys x 64
 * dims (8 KB, 128-byte swizzle) through a ring of NS slots (full / empty
 * mbarriers), across item boundaries, so ~100 KB stay in flight while the
 * consumer works.  Its page-table lookups run a batch of 32 boxes ahead
 * (never waited for in the loop), and with a.prefetch = d > 0 it prefetches
 * block j + d into L2 when it loads block j.  The consumer keeps block j's
 * value sub-tiles until P V of block j is done, releasing the rope sub-tile
 * right after S.
 *
 * Keys past the item's range: scores masked to -inf; in the last block of an
 * item the value rows past the end are zeroed in shared memory before P V
 * (a slot may hold a stale or partial box; 0 * NaN is NaN).
 */
#include <string.h>

#include <cuda.h>

#include "mla_wgmma_ops.cuh"

#define NAR_CONSUMERS 128
#define NAR_THREADS (NAR_CONSUMERS + 32)
#define NAR_SUB 8192
#define NAR_SMEM_MAX (227 * 1024) /* dynamic shared memory per block on SM 9.0 */
#define NAR_BAR_C 1               /* named barrier of the consumer warpgroup */

template <int N> struct NarCfg {
    static constexpr int QSUB = N * 128;                 /* one 64-dim slice of Q (or P^T): N rows x 128 B */
    static constexpr int OFF_Q = 0;                      /* 9 slices */
    static constexpr int OFF_P = 9 * QSUB;               /* P^T: N rows x 64 keys */
    static constexpr int OFF_RING = ((OFF_P + QSUB + 1023) / 1024) * 1024;
    static constexpr int TAIL = 4 * N * 4 + 2 * 64 * 8;  /* column maxima / sums [4 warps][N]; barriers */
    static constexpr int NS = (NAR_SMEM_MAX - 1024 - OFF_RING - TAIL) / NAR_SUB;
    static constexpr int OFF_RED = OFF_RING + NS * NAR_SUB;
    static constexpr int OFF_BAR = OFF_RED + 4 * N * 4;  /* full[NS], empty[NS] */
    static constexpr int USED = OFF_BAR + 2 * NS * 8;
    static constexpr int ALLOC = USED + 1024;            /* room to align the base to 1024 */
    static_assert(NS >= 18, "the ring must hold a block in S and the previous one in P V");
    static_assert(ALLOC <= NAR_SMEM_MAX, "shared memory");
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MLA_HAVE_WGMMA 1
#endif

/* A position in the ring: slot index and the parity of its current use. */
struct NarPos {
    int idx;
    uint32_t ph;
};

/* p + k for 0 <= k <= NS, without a branch (a branch between two wgmma makes
 * ptxas fence them, C7519). */
template <int NS> GC_DEV NarPos nar_adv(NarPos p, int k) {
    p.idx += k;
    const bool wrap = p.idx >= NS;
    p.idx -= wrap ? NS : 0;
    p.ph ^= wrap ? 1u : 0u;
    return p;
}

template <int N>
__global__ __launch_bounds__(NAR_THREADS, 1) void mla_narrow_kernel(const __grid_constant__ mla_fwd_args a,
                                                                    const __grid_constant__ CUtensorMap tmap) {
#ifdef MLA_HAVE_WGMMA
    typedef NarCfg<N> C;
    constexpr int NS = C::NS;
    constexpr int NV = N / 2;  /* accumulator floats per thread of one m64nN product */
    constexpr int NC = N / 4;  /* distinct query rows (columns) a thread holds */
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const uint32_t raw = mla_smem_u32(smem_raw);
    unsigned char *smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    const uint32_t sbase = mla_smem_u32(smem);
    const uint32_t ring = sbase + C::OFF_RING;
    const uint32_t full0 = sbase + C::OFF_BAR, empty0 = full0 + 8 * NS;
    const int tid = threadIdx.x;
    const int box = a.page_size < 64 ? a.page_size : 64, nseg = 64 / box;
    const int n_items = mla_hdr(a)->n_items;

    if (tid == 0) {
        for (int i = 0; i < NS; i++) {
            mla_mbar_init(full0 + 8 * i, 1);
            mla_mbar_init(empty0 + 8 * i, 1);
        }
        mla_mbar_init_fence();
    }
    __syncthreads();

    if (tid >= NAR_CONSUMERS) {
        /* ------------------------------ producer warp ------------------------------ */
        const int lane = tid & 31;
        const int pd = a.prefetch <= 0 ? 0 : (a.prefetch * nseg > 32 ? 32 / nseg : a.prefetch);
        NarPos pos = {0, 0};
        for (int itx = blockIdx.x; itx < n_items; itx += gridDim.x) {
            const mla_item item = mla_items(a)[itx];
            const int64_t prow = mla_pool_row(a, item.b);
            const int nblk = (item.kv_end - item.kv_begin + 63) / 64;
            /* Lane l holds the slot of box b0 + l of the item (-1: past the end). */
            auto lookup = [&](int b0) -> int32_t {
                const int bx = b0 + lane, j = bx / nseg, sb = bx % nseg;
                const int key = item.kv_begin + 64 * j + box * sb;
                return j < nblk && key < item.kv_end ? (int32_t)mla_slot(a, prow, key) : -1;
            };
            int bb = 0;
            int32_t cur = lookup(0), nxt = lookup(32);
            for (int j = 0; j < nblk; j++) {
                if (j * nseg >= bb + 32) { /* a block never straddles two batches: 32 % nseg == 0 */
                    bb += 32;
                    cur = nxt;
                    nxt = lookup(bb + 32);
                }
                int32_t sl[8];
                int nv = 0;
#pragma unroll
                for (int sb = 0; sb < 8; sb++) {
                    sl[sb] = __shfl_sync(0xffffffffu, cur, (j * nseg + sb - bb) & 31);
                    if (sb >= nseg) sl[sb] = -1;
                    nv += sl[sb] >= 0;
                }
                /* L2 prefetch of block j + pd: its boxes are in this batch or the next. */
                int32_t pf[8];
                const int jp = j + pd;
#pragma unroll
                for (int sb = 0; sb < 8; sb++) {
                    /* warp-uniform branches; nxt is read only once needed, so its
                     * loads stay in flight until then */
                    const int x = jp * nseg + sb - bb;
                    pf[sb] = -1;
                    if (pd > 0 && jp < nblk && sb < nseg)
                        pf[sb] = x < 32 ? __shfl_sync(0xffffffffu, cur, x) : __shfl_sync(0xffffffffu, nxt, x - 32);
                }
                if (lane == 0) {
                    for (int k = 0; k < 9; k++) {
                        const int sub = k; /* sub-tiles 0-7: value columns; 8: rope */
                        mla_mbar_wait(empty0 + 8 * pos.idx, pos.ph ^ 1u);
                        const uint32_t full = full0 + 8 * pos.idx, dst = ring + (uint32_t)pos.idx * NAR_SUB;
                        mla_mbar_expect_tx(full, (uint32_t)(nv * box * 128));
#pragma unroll
                        for (int sb = 0; sb < 8; sb++) /* sl[sb] = -1 from nseg on */
                            if (sl[sb] >= 0) mla_tma_load_2d(dst + sb * box * 128, &tmap, sub * 64, sl[sb], full);
                        pos = nar_adv<NS>(pos, 1);
                    }
#pragma unroll
                    for (int sb = 0; sb < 8; sb++) {
                        if (pf[sb] < 0) continue;
                        const int64_t rows = a.num_slots - pf[sb] < box ? a.num_slots - pf[sb] : box;
                        mla_prefetch_l2((const uint16_t *)a.pool + (int64_t)pf[sb] * MLA_D_QK,
                                        (uint32_t)(rows * MLA_D_QK * 2));
                    }
                }
            }
        }
        return;
    }

    /* ------------------------------ consumer warpgroup ------------------------------ */
    const int t = tid, w = t >> 5, lane = t & 31, g = lane >> 2, q4 = lane & 3;
    float *red = (float *)(smem + C::OFF_RED); /* [4 warps][N] */
    NarPos pos = {0, 0};                       /* the block's first sub-tile */

    for (int itx = blockIdx.x; itx < n_items; itx += gridDim.x) {
        const mla_item item = mla_items(a)[itx];
        const int nblk = (item.kv_end - item.kv_begin + 63) / 64;
        const int tail = item.kv_end - (item.kv_begin + 64 * (nblk - 1)); /* 1..64 valid keys */

        /* Q (N rows x 576) into 9 K-major swizzled slices; rows past nrows are zero. */
        const uint16_t *qg = (const uint16_t *)a.q + (int64_t)item.q_row0 * MLA_D_QK;
        for (int ci = t; ci < N * 72; ci += NAR_CONSUMERS) {
            const int r = ci / 72, ch = ci % 72, sl = ch >> 3, c8 = ch & 7;
            const uint4 v = r < item.nrows ? __ldg((const uint4 *)(qg + r * MLA_D_QK + ch * 8)) : make_uint4(0, 0, 0, 0);
            *(uint4 *)(smem + C::OFF_Q + sl * C::QSUB + r * 128 + ((c8 ^ (r & 7)) << 4)) = v;
        }
        /* This thread's columns n = 8c + 2 q4 + e (c < N/8, e < 2): index 2c + e. */
        int lim[NC];
        float m[NC], l[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            const int n = 8 * (ci >> 1) + 2 * q4 + (ci & 1);
            const int see = item.key_base + (item.row0 + n) / a.hq + 1;
            lim[ci] = n < item.nrows && see < item.kv_end ? see : item.kv_end;
            m[ci] = MLA_M_INIT;
            l[ci] = 0.f;
        }
        float o[8][NV], s[NV];
#pragma unroll
        for (int mt = 0; mt < 8; mt++)
#pragma unroll
            for (int i = 0; i < NV; i++) o[mt][i] = 0.f;
        mla_fence_proxy_async();
        mla_bar_sync(NAR_BAR_C, NAR_CONSUMERS);

        /* S^T of the block whose sub-tiles start at p (9 waits, 36 products). */
        auto qk = [&](NarPos p) {
#pragma unroll
            for (int k = 0; k < 9; k++) {
                const NarPos pk = nar_adv<NS>(p, k);
                mla_mbar_wait(full0 + 8 * pk.idx, pk.ph);
                mla_wgmma_fence(); /* after the wait loop: keeps ptxas from serialising */
                const uint32_t kb = ring + (uint32_t)pk.idx * NAR_SUB, qb = sbase + C::OFF_Q + k * C::QSUB;
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    mla_wgmma_nar<N, 0>(s, mla_desc_kmajor(kb + 32 * kk), mla_desc_kmajor(qb + 32 * kk),
                                        k > 0 || kk > 0);
            }
            mla_wgmma_commit();
        };
        auto release = [&](NarPos p, int k0, int k1) { /* slots p + k0 .. p + k1 - 1 */
            if (t == 0)
                for (int k = k0; k < k1; k++) mla_mbar_arrive(empty0 + 8 * nar_adv<NS>(p, k).idx);
        };

        qk(pos);
        mla_wgmma_wait<0>();
        mla_fence_regs(s);
        release(pos, 8, 9);

        for (int j = 0; j < nblk; j++) {
            const int kb = item.kv_begin + 64 * j;
            if (j == nblk - 1 && tail < 64) {
                /* value rows past the end of the range: zero (before P V reads them) */
                for (int i = t; i < 8 * (64 - tail) * 8; i += NAR_CONSUMERS) {
                    const int sub = i / ((64 - tail) * 8), rem = i % ((64 - tail) * 8);
                    const int r = tail + rem / 8, ch = rem % 8;
                    *(uint4 *)(smem + C::OFF_RING + nar_adv<NS>(pos, sub).idx * NAR_SUB + r * 128 + ch * 16) =
                        make_uint4(0, 0, 0, 0);
                }
            }
            /* softmax down the columns: mask, column max (4 warps), exponentiate */
            float mx[NC];
#pragma unroll
            for (int ci = 0; ci < NC; ci++) mx[ci] = -INFINITY;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int ci = 2 * (i >> 2) + (i & 1);
                const int key = kb + 16 * w + g + 8 * ((i >> 1) & 1);
                const float v = key < lim[ci] ? s[i] * a.scale_log2 : -INFINITY;
                s[i] = v;
                mx[ci] = fmaxf(mx[ci], v);
            }
#pragma unroll
            for (int ci = 0; ci < NC; ci++) {
                mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 4));
                mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 8));
                mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 16));
                if (g == 0) red[w * N + 8 * (ci >> 1) + 2 * q4 + (ci & 1)] = mx[ci];
            }
            mla_bar_sync(NAR_BAR_C, NAR_CONSUMERS);
            float alpha[NC];
            bool same = true;
#pragma unroll
            for (int ci = 0; ci < NC; ci++) {
                const int n = 8 * (ci >> 1) + 2 * q4 + (ci & 1);
                const float bm = fmaxf(fmaxf(red[n], red[N + n]), fmaxf(red[2 * N + n], red[3 * N + n]));
                const float mn = fmaxf(m[ci], bm);
                alpha[ci] = gc_exp2(m[ci] - mn);
                same = same && alpha[ci] == 1.f;
                m[ci] = mn;
                l[ci] *= alpha[ci];
            }
            unsigned char *pt = smem + C::OFF_P;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int ci = 2 * (i >> 2) + (i & 1), n = 8 * (i >> 2) + 2 * q4 + (i & 1);
                const int key = 16 * w + g + 8 * ((i >> 1) & 1);
                const float p = gc_exp2(s[i] - m[ci]);
                l[ci] += p;
                /* P^T[n][key]: K-major, 128-byte swizzle */
                *(uint16_t *)(pt + n * 128 + ((((key >> 3) ^ (n & 7)) << 4) | ((key & 7) * 2))) =
                    mla_from_f32<MLA_DT_BF16>(p);
            }
            if (!__all_sync(0xffffffffu, same)) {
#pragma unroll
                for (int mt = 0; mt < 8; mt++)
#pragma unroll
                    for (int i = 0; i < NV; i++) o[mt][i] *= alpha[2 * (i >> 2) + (i & 1)];
            }
            mla_fence_proxy_async(); /* P^T (and zeroed rows) to the async proxy */
            mla_bar_sync(NAR_BAR_C, NAR_CONSUMERS);

            /* O^T += V^T P^T over the 8 value sub-tiles of this block; the
             * register fence keeps the rescale above the wgmma fence */
            uint32_t vb[8];
#pragma unroll
            for (int mt = 0; mt < 8; mt++) {
                vb[mt] = ring + (uint32_t)nar_adv<NS>(pos, mt).idx * NAR_SUB;
                mla_fence_regs(o[mt]);
            }
            mla_wgmma_fence();
#pragma unroll
            for (int mt = 0; mt < 8; mt++)
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    mla_wgmma_nar<N, 1>(o[mt], mla_desc_mnmajor(vb[mt] + 2048 * kk),
                                        mla_desc_kmajor(sbase + C::OFF_P + 32 * kk), 1);
            mla_wgmma_commit();
            const NarPos next = nar_adv<NS>(pos, 9);
            if (j + 1 < nblk) {
                qk(next); /* S^T of the next block runs behind P V */
                mla_wgmma_wait<1>();
#pragma unroll
                for (int mt = 0; mt < 8; mt++) mla_fence_regs(o[mt]);
                release(pos, 0, 8);
                mla_wgmma_wait<0>();
                mla_fence_regs(s);
                release(next, 8, 9);
            } else {
                mla_wgmma_wait<0>();
#pragma unroll
                for (int mt = 0; mt < 8; mt++) mla_fence_regs(o[mt]);
                release(pos, 0, 8);
            }
            pos = next;
        }

        /* Epilogue: column sums across lanes and warps, then out (or a partial). */
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            l[ci] += __shfl_xor_sync(0xffffffffu, l[ci], 4);
            l[ci] += __shfl_xor_sync(0xffffffffu, l[ci], 8);
            l[ci] += __shfl_xor_sync(0xffffffffu, l[ci], 16);
        }
        /* every thread has read red (block maxima) before the last P barrier */
#pragma unroll
        for (int ci = 0; ci < NC; ci++)
            if (g == 0) red[w * N + 8 * (ci >> 1) + 2 * q4 + (ci & 1)] = l[ci];
        mla_bar_sync(NAR_BAR_C, NAR_CONSUMERS);
        float inv[NC], lt[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            const int n = 8 * (ci >> 1) + 2 * q4 + (ci & 1);
            lt[ci] = red[n] + red[N + n] + red[2 * N + n] + red[3 * N + n];
            inv[ci] = lt[ci] > 0.f ? 1.f / lt[ci] : 0.f;
        }
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int ci = 2 * (i >> 2) + (i & 1), n = 8 * (i >> 2) + 2 * q4 + (i & 1);
            if (n >= item.nrows) continue;
            const int d0 = 16 * w + g + 8 * ((i >> 1) & 1);
            if (item.part < 0) {
                uint16_t *orow = (uint16_t *)a.out + ((int64_t)item.q_row0 + n) * MLA_D_V + d0;
#pragma unroll
                for (int mt = 0; mt < 8; mt++) orow[64 * mt] = mla_from_f32<MLA_DT_BF16>(o[mt][i] * inv[ci]);
            } else {
                float *orow = a.part_o + ((int64_t)item.part + n) * MLA_D_V + d0;
#pragma unroll
                for (int mt = 0; mt < 8; mt++) orow[64 * mt] = o[mt][i] * inv[ci];
                if (w == 0 && g == 0 && ((i >> 1) & 1) == 0)
                    a.part_lse[item.part + n] = lt[ci] > 0.f ? m[ci] + __log2f(lt[ci]) : -INFINITY;
            }
        }
        /* red and Q are rewritten by the next item */
        mla_bar_sync(NAR_BAR_C, NAR_CONSUMERS);
    }
#else
    (void)a;
    (void)tmap;
    __trap();
#endif
}

extern "C" size_t mla_narrow_smem_bytes(int32_t rows_per_tile) {
    return rows_per_tile == 16 ? NarCfg<16>::ALLOC : rows_per_tile == 32 ? NarCfg<32>::ALLOC : 0;
}

extern "C" int mla_launch_narrow(const mla_fwd_args *a) {
    if (a->grid_items <= 0) return 0;
    if (a->q_dt != MLA_DT_BF16 || a->kv_dt != MLA_DT_BF16 || !a->tmap ||
        (a->rows_per_tile != 16 && a->rows_per_tile != 32))
        return (int)cudaErrorInvalidValue;
    CUtensorMap tm;
    memcpy(&tm, a->tmap, sizeof tm);
    cudaStream_t st = (cudaStream_t)a->stream;
    if (a->rows_per_tile == 16)
        mla_narrow_kernel<16><<<a->grid_items, NAR_THREADS, NarCfg<16>::ALLOC, st>>>(*a, tm);
    else
        mla_narrow_kernel<32><<<a->grid_items, NAR_THREADS, NarCfg<32>::ALLOC, st>>>(*a, tm);
    return (int)cudaGetLastError();
}

extern "C" int mla_narrow_init(void) {
    cudaError_t e = cudaFuncSetAttribute(mla_narrow_kernel<16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)NarCfg<16>::ALLOC);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(mla_narrow_kernel<32>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)NarCfg<32>::ALLOC);
    return (int)e;
}
