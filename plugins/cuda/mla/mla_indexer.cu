/*
 * mla_indexer.cu - DSA's indexer kernels (mla_indexer.h): the key save, the
 * scores on mma.sync (SM 8.0+, f16 operands) and the radix top-k.  A slot or
 * request row outside its tensor is noted (gpu_fault.h) and skipped: its key
 * is never written or read, its score is -inf, its output entry -1.
 */
#include <math.h>

#include "mla_indexer.h"
#include "mla_mma_ops.cuh"

#define IDX_SAVE_THREADS 128
#define IDX_SCORE_THREADS 128
#define IDX_TOPK_THREADS 512
#define IDX_BINS 2048

GC_DEV int idx_popc(uint32_t x) {
#ifdef LK_EMU
    return __builtin_popcount(x);
#else
    return __popc(x);
#endif
}

/* 2^e as a float, e within the normal range. */
GC_DEV float idx_pow2(int e) { return __uint_as_float((uint32_t)(e + 127) << 23); }

/* Query token t's request row of req_to_token and how many keys it sees
 * (its position + 1: causal, also in a tree verify, whose plan gives every
 * token the whole range).  row < 0: req_pool_indices is outside
 * req_to_token (noted). */
struct idx_token {
    int64_t row;
    int32_t n;
};

GC_DEV idx_token idx_token_of(const mla_idx_args &a, int32_t t) {
    const mla_tok *toks = (const mla_tok *)a.toks;
    const mla_tok k = toks[t];
    idx_token r;
    r.n = k.n_keys;
    if (a.tree) { /* n_keys = prefix + q_len; the token sees prefix + j + 1 */
        int32_t last = k.j;
        for (int32_t u = t + 1; u < a.v.t && toks[u].b == k.b && toks[u].j == last + 1; u++) last = toks[u].j;
        r.n = k.n_keys - (last - k.j);
    }
    r.row = mla_idx(a.v.req_pool_indices, k.b);
    if ((uint64_t)r.row >= (uint64_t)a.v.r2t_rows) {
        if (threadIdx.x == 0)
            sgl_fault_note(a.fault, SGL_FAULT_REQ_POOL_INDICES, k.b, r.row, 0, a.v.r2t_rows);
        r.row = -1;
    }
    return r;
}

/* The slot of key p of row `row`, or -1 (outside the pool: noted). */
GC_DEV int64_t idx_slot(const mla_idx_args &a, int64_t row, int32_t p) {
    const int64_t i = row * a.v.r2t_cols + p;
    const int64_t s = mla_idx(a.v.req_to_token, i);
    if ((uint64_t)s >= (uint64_t)a.v.slots) {
        sgl_fault_note(a.fault, SGL_FAULT_REQ_TO_TOKEN, i, s, 0, a.v.slots);
        return -1;
    }
    return s;
}

/* ------------------------------------------------------------------ save */

/* One warp a (token, block of 128): amax, the scale, the 128 e4m3 bytes, as
 * cpu_ref's save_key computes them (fp32 throughout, x / scale an IEEE
 * division, round to nearest even). */
__global__ __launch_bounds__(IDX_SAVE_THREADS) void idx_save_kernel(mla_idx_args a) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t job = (int64_t)blockIdx.x * (IDX_SAVE_THREADS / 32) + (threadIdx.x >> 5);
    if (job >= (int64_t)a.v.t * a.v.nblk) return;
    const int32_t t = (int32_t)(job / a.v.nblk), blk = (int32_t)(job % a.v.nblk);
    const int64_t slot = mla_idx(a.v.loc, t);
    if ((uint64_t)slot >= (uint64_t)a.v.slots) {
        if (lane == 0 && blk == 0) sgl_fault_note(a.fault, SGL_FAULT_OUT_CACHE_LOC, t, slot, 0, a.v.slots);
        return;
    }
    const int64_t i0 = (int64_t)t * a.v.id + (int64_t)blk * SGL_ATTN_DSA_SCALE_BLOCK + lane * 4;
    float x[4];
    if (a.v.k_dt == MLA_IDX_K_F32) {
        const float4 v = *(const float4 *)((const float *)a.v.k + i0);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
        const uint2 v = *(const uint2 *)((const uint16_t *)a.v.k + i0);
        const uint16_t h[4] = {(uint16_t)(v.x & 0xffffu), (uint16_t)(v.x >> 16), (uint16_t)(v.y & 0xffffu),
                               (uint16_t)(v.y >> 16)};
        for (int e = 0; e < 4; e++)
            x[e] = a.v.k_dt == MLA_IDX_K_BF16 ? gc_to_f32<GC_BF16>(h[e]) : gc_to_f32<GC_F16>(h[e]);
    }
    float amax = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (amax < 1e-4f) amax = 1e-4f;
    float s = amax * (1.0f / 448.0f);
    if (a.pow2) { /* up to a power of two (DeepSeek's ue8m0) */
        const uint32_t u = __float_as_uint(s);
        s = idx_pow2((int)((u >> 23) & 0xffu) - 127 + ((u & 0x7fffffu) != 0));
    }
    uint32_t packed = 0;
    for (int e = 0; e < 4; e++) {
        float y = x[e] / s;
        y = fminf(fmaxf(y, -448.f), 448.f);
        packed |= (uint32_t)mla_f32_to_e4m3(y) << (8 * e);
    }
    *(uint32_t *)(a.v.kc + slot * a.v.id + (int64_t)blk * SGL_ATTN_DSA_SCALE_BLOCK + lane * 4) = packed;
    if (lane == 0) a.v.ks[slot * a.v.nblk + blk] = s;
}

/* ---------------------------------------------------------------- scores */

/* Four e4m3 bytes to four f16 (two words, low byte first) equal to the
 * e4m3 values times 2^-8: the exponent and mantissa bits shifted into an
 * f16 (bias 15 against e4m3's 7), subnormals included. */
GC_DEV void idx_e4m3x4_to_f16(uint32_t x, uint32_t &lo, uint32_t &hi) {
    const uint32_t a = __byte_perm(x, 0u, 0x4140u), b = __byte_perm(x, 0u, 0x4342u);
    lo = ((a & 0x007f007fu) << 7) | ((a & 0x00800080u) << 8);
    hi = ((b & 0x007f007fu) << 7) | ((b & 0x00800080u) << 8);
}

/* Element offset (in f16) of 16-byte chunk c of row r in a swizzled tile of
 * `row_chunks` chunks a row: ldmatrix's 8 rows at one chunk hit 8 banks. */
GC_DEV int idx_swz(int r, int c, int row_chunks) { return r * row_chunks * 8 + ((c ^ (r & 7)) << 3); }

/* q elements i .. i + 7 (i a multiple of 8: one aligned vector load, the
 * tensor 16-byte aligned and compact) as floats. */
GC_DEV void idx_q_load8(const mla_idx_args &a, int64_t i, float v[8]) {
    if (a.v.q_dt == MLA_IDX_Q_F32) {
        const float4 x = *(const float4 *)((const float *)a.v.q + i), y = *(const float4 *)((const float *)a.v.q + i + 4);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w, v[4] = y.x, v[5] = y.y, v[6] = y.z, v[7] = y.w;
    } else if (a.v.q_dt == MLA_IDX_Q_FP8) {
        const uint2 x = *(const uint2 *)((const uint8_t *)a.v.q + i);
        for (int e = 0; e < 8; e++) v[e] = mla_e4m3_to_f32(((e < 4 ? x.x : x.y) >> (8 * (e & 3))) & 0xffu);
    } else {
        const uint4 x = *(const uint4 *)((const uint16_t *)a.v.q + i);
        const uint32_t w[4] = {x.x, x.y, x.z, x.w};
        for (int e = 0; e < 8; e++) {
            const uint16_t h = (uint16_t)(w[e >> 1] >> (16 * (e & 1)));
            v[e] = a.v.q_dt == MLA_IDX_Q_BF16 ? gc_to_f32<GC_BF16>(h) : gc_to_f32<GC_F16>(h);
        }
    }
}

/* Grid (key chunks, tokens of the pass); 4 warps, warp w the keys 16w ..
 * 16w + 15 of each 64-key tile, NT x 8 heads (the index heads, zero-padded).
 * SPLIT 2: q is f32, carried as high and low f16 halves. */
template <int NT, int SPLIT>
__global__ __launch_bounds__(IDX_SCORE_THREADS) void idx_score_kernel(mla_idx_args a, int32_t t0) {
    constexpr int HP = NT * 8;
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ float w_s[HP];
    __shared__ int e_s[HP];
    __shared__ float ksc_s[MLA_IDX_TILE];
    __shared__ int valid_s[MLA_IDX_TILE];
    const int tid = (int)threadIdx.x, lane = tid & 31, wp = tid >> 5;
    const int32_t t = t0 + (int32_t)blockIdx.y;
    const idx_token tk = idx_token_of(a, t);
    const int32_t p0 = (int32_t)blockIdx.x * MLA_IDX_CHUNK;
    if (tk.row < 0 || p0 >= tk.n) return;
    const int32_t p_end = tk.n < p0 + MLA_IDX_CHUNK ? tk.n : p0 + MLA_IDX_CHUNK;
    const int id = a.v.id, nblk = a.v.nblk, qc = id / 8; /* f16 chunks of a q row */
    uint16_t *q_hi = (uint16_t *)smem, *q_lo = q_hi + HP * id;
    uint16_t *kt = q_hi + SPLIT * HP * id; /* [64 keys][128] f16 */

    /* q: each head scaled by a power of two into f16's range (2^e_h), the
     * weights times 2^(e_h + 8) (the keys' 2^-8) */
    for (int h = wp; h < HP; h += IDX_SCORE_THREADS / 32) {
        float amax = 0.f;
        if (h < a.v.ih)
            for (int c = lane; c < qc; c += 32) {
                float v[8];
                idx_q_load8(a, ((int64_t)t * a.v.ih + h) * id + c * 8, v);
                for (int e = 0; e < 8; e++) amax = fmaxf(amax, fabsf(v[e]));
            }
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        if (lane == 0) {
            int e = amax > 0.f ? (int)((__float_as_uint(amax) >> 23) & 0xffu) - 127 - 14 : 0;
            e = e < -100 ? -100 : e > 100 ? 100 : e;
            e_s[h] = e;
            w_s[h] = h < a.v.ih ? a.v.w[(int64_t)t * a.v.ih + h] * idx_pow2(e) * 256.f : 0.f;
        }
    }
    __syncthreads();
    for (int c = tid; c < HP * qc; c += IDX_SCORE_THREADS) {
        const int h = c / qc, cc = c % qc;
        uint32_t hw[4] = {0, 0, 0, 0}, lw[4] = {0, 0, 0, 0};
        if (h < a.v.ih) {
            const float inv = idx_pow2(-e_s[h]);
            float qv[8];
            idx_q_load8(a, ((int64_t)t * a.v.ih + h) * id + cc * 8, qv);
            for (int e = 0; e < 8; e++) {
                const float v = qv[e] * inv;
                const uint16_t hv = gc_from_f32<GC_F16>(v);
                hw[e >> 1] |= (uint32_t)hv << (16 * (e & 1));
                if (SPLIT == 2) lw[e >> 1] |= (uint32_t)gc_from_f32<GC_F16>(v - gc_to_f32<GC_F16>(hv)) << (16 * (e & 1));
            }
        }
        const int off = idx_swz(h, cc, qc);
        *(uint4 *)(q_hi + off) = make_uint4(hw[0], hw[1], hw[2], hw[3]);
        if (SPLIT == 2) *(uint4 *)(q_lo + off) = make_uint4(lw[0], lw[1], lw[2], lw[3]);
    }

    /* key loads: thread tid moves 16-byte pieces c = tid + 128 i (key c / 8,
     * bytes 16 (c % 8) ..) of each 128-dim block; tid % 8 == 0 also the scale */
    const int tiles = (p_end - p0 + MLA_IDX_TILE - 1) / MLA_IDX_TILE, items = tiles * nblk;
    int64_t slot[4];
    uint4 pre[4];
    float scv[4];
    int okv[4];
    auto load = [&](int item) {
        const int tile = item / nblk, blk = item % nblk;
        for (int i = 0; i < 4; i++) {
            const int key = (tid >> 3) + 16 * i;
            const int32_t p = p0 + tile * MLA_IDX_TILE + key;
            if (blk == 0) slot[i] = p < p_end ? idx_slot(a, tk.row, p) : -1;
            pre[i] = make_uint4(0, 0, 0, 0);
            okv[i] = slot[i] >= 0;
            scv[i] = 0.f;
            if (okv[i]) {
                pre[i] = *(const uint4 *)(a.v.kc + slot[i] * id + blk * SGL_ATTN_DSA_SCALE_BLOCK + (tid & 7) * 16);
                if ((tid & 7) == 0) scv[i] = a.v.ks[slot[i] * nblk + blk];
            }
        }
    };
    float tot[NT][4];
    for (int nt = 0; nt < NT; nt++)
        for (int i = 0; i < 4; i++) tot[nt][i] = 0.f;
    if (items > 0) load(0);
    __syncthreads(); /* q and the weights in shared memory */
    float wr[NT][2];
    for (int nt = 0; nt < NT; nt++)
        for (int i = 0; i < 2; i++) wr[nt][i] = w_s[nt * 8 + 2 * (lane & 3) + i];
    for (int item = 0; item < items; item++) {
        const int tile = item / nblk, blk = item % nblk;
        for (int i = 0; i < 4; i++) {
            const int key = (tid >> 3) + 16 * i;
            uint32_t f[8];
            idx_e4m3x4_to_f16(pre[i].x, f[0], f[1]);
            idx_e4m3x4_to_f16(pre[i].y, f[2], f[3]);
            idx_e4m3x4_to_f16(pre[i].z, f[4], f[5]);
            idx_e4m3x4_to_f16(pre[i].w, f[6], f[7]);
            *(uint4 *)(kt + idx_swz(key, 2 * (tid & 7), 16)) = make_uint4(f[0], f[1], f[2], f[3]);
            *(uint4 *)(kt + idx_swz(key, 2 * (tid & 7) + 1, 16)) = make_uint4(f[4], f[5], f[6], f[7]);
            if ((tid & 7) == 0) {
                ksc_s[key] = scv[i];
                valid_s[key] = okv[i];
            }
        }
        __syncthreads();
        if (item + 1 < items) { /* the next item's bytes travel while this one computes */
            load(item + 1);
        }
        float acc[NT][4];
        for (int nt = 0; nt < NT; nt++)
            for (int i = 0; i < 4; i++) acc[nt][i] = 0.f;
        const int mi = lane >> 3;
        for (int ks = 0; ks < SGL_ATTN_DSA_SCALE_BLOCK / 16; ks++) {
            uint32_t af[4];
            mla_ldsm_x4(af, kt + idx_swz(wp * 16 + ((mi & 1) << 3) + (lane & 7), ks * 2 + (mi >> 1), 16));
            for (int np = 0; np < NT / 2; np++) {
                const int h = (2 * np + (mi >> 1)) * 8 + (lane & 7);
                const int off = idx_swz(h, blk * 16 + ks * 2 + (mi & 1), qc);
                uint32_t bf[4];
                mla_ldsm_x4(bf, q_hi + off);
                mla_mma<MLA_DT_F16>(acc[2 * np], af, bf[0], bf[1]);
                mla_mma<MLA_DT_F16>(acc[2 * np + 1], af, bf[2], bf[3]);
                if (SPLIT == 2) {
                    mla_ldsm_x4(bf, q_lo + off);
                    mla_mma<MLA_DT_F16>(acc[2 * np], af, bf[0], bf[1]);
                    mla_mma<MLA_DT_F16>(acc[2 * np + 1], af, bf[2], bf[3]);
                }
            }
        }
        const int g = wp * 16 + (lane >> 2);
        const float s0 = ksc_s[g], s1 = ksc_s[g + 8];
        for (int nt = 0; nt < NT; nt++) {
            tot[nt][0] += acc[nt][0] * s0;
            tot[nt][1] += acc[nt][1] * s0;
            tot[nt][2] += acc[nt][2] * s1;
            tot[nt][3] += acc[nt][3] * s1;
        }
        if (blk == nblk - 1) { /* the tile's scores: sum over heads, the quad's lanes */
            float r0 = 0.f, r1 = 0.f;
            for (int nt = 0; nt < NT; nt++) {
                r0 += wr[nt][0] * fmaxf(tot[nt][0], 0.f) + wr[nt][1] * fmaxf(tot[nt][1], 0.f);
                r1 += wr[nt][0] * fmaxf(tot[nt][2], 0.f) + wr[nt][1] * fmaxf(tot[nt][3], 0.f);
                for (int i = 0; i < 4; i++) tot[nt][i] = 0.f;
            }
            r0 += __shfl_xor_sync(0xffffffffu, r0, 1);
            r1 += __shfl_xor_sync(0xffffffffu, r1, 1);
            r0 += __shfl_xor_sync(0xffffffffu, r0, 2);
            r1 += __shfl_xor_sync(0xffffffffu, r1, 2);
            if ((lane & 3) == 0) {
                float *row = a.scores + (int64_t)blockIdx.y * a.ld;
                const int32_t p = p0 + tile * MLA_IDX_TILE + g;
                /* + 0.f: -0 and +0 are one key of the top-k's order */
                if (p < p_end) row[p] = valid_s[g] ? r0 + 0.f : -INFINITY;
                if (p + 8 < p_end) row[p + 8] = valid_s[g + 8] ? r1 + 0.f : -INFINITY;
            }
        }
        __syncthreads(); /* the tile is read before the next is stored */
    }
}

/* ----------------------------------------------------------------- top-k */

/* The order-preserving key of a score: larger score, larger key. */
GC_DEV uint32_t idx_key(float s) {
    const uint32_t u = __float_as_uint(s);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* hist[bin] += 1 for each lane whose bin < IDX_BINS: scores of a row
 * crowd a few bins of the high digits, so the lanes of one bin add once
 * (warp-aggregated: one shared-memory atomic a bin a warp, not a lane). */
GC_DEV void idx_hist_add(uint32_t *hist, uint32_t bin, int lane) {
#ifdef LK_EMU
    (void)lane;
    if (bin < IDX_BINS) atomicAdd(&hist[bin], 1u);
#else
    const uint32_t same = __match_any_sync(0xffffffffu, bin);
    if (bin < IDX_BINS && lane == __ffs(same) - 1) atomicAdd(&hist[bin], (uint32_t)__popc(same));
#endif
}

/* One CTA a token: the row's `topk` best positions as pool slots (all of
 * them, then -1, when it has no more). */
__global__ __launch_bounds__(IDX_TOPK_THREADS) void idx_topk_kernel(mla_idx_args a, int32_t t0) {
    __shared__ uint32_t hist[IDX_BINS];
    __shared__ uint32_t scan[2][IDX_TOPK_THREADS];
    __shared__ uint32_t s_digit, s_rem;
    __shared__ int32_t s_cnt, s_eq_base;
    __shared__ int32_t warp_eq[IDX_TOPK_THREADS / 32];
    const int tid = (int)threadIdx.x, lane = tid & 31, wp = tid >> 5;
    const int32_t t = t0 + (int32_t)blockIdx.x;
    const int32_t topk = a.v.topk;
    int32_t *out = a.v.out + (int64_t)t * topk;
    const idx_token tk = idx_token_of(a, t);
    if (tk.row < 0 || tk.n <= topk) {
        for (int32_t j = tid; j < topk; j += IDX_TOPK_THREADS) {
            int64_t s = -1;
            if (tk.row >= 0 && j < tk.n) s = idx_slot(a, tk.row, j);
            out[j] = (int32_t)s;
        }
        return;
    }
    const float *sc = a.scores + (int64_t)blockIdx.x * a.ld;
    const int32_t n = tk.n;
    uint32_t prefix = 0, pmask = 0, rem = (uint32_t)topk;
    for (int pass = 0; pass < 3; pass++) {
        const int bits = pass < 2 ? 11 : 10, shift = pass == 0 ? 21 : pass == 1 ? 10 : 0;
        const uint32_t nb = 1u << bits;
        for (int i = tid; i < IDX_BINS; i += IDX_TOPK_THREADS) hist[i] = 0;
        __syncthreads();
        for (int32_t base = 0; base < n; base += IDX_TOPK_THREADS) { /* every lane of a warp to the end */
            const int32_t p = base + tid;
            const uint32_t k = p < n ? idx_key(sc[p]) : 0u;
            const bool in = p < n && (k & pmask) == prefix;
            idx_hist_add(hist, in ? (k >> shift) & (nb - 1) : IDX_BINS, lane);
        }
        __syncthreads();
        /* thread tid owns bins 4 tid .. 4 tid + 3; suffix sums over threads */
        const int per = IDX_BINS / IDX_TOPK_THREADS;
        uint32_t mine = 0;
        for (int i = 0; i < per; i++) mine += hist[tid * per + i];
        int cur = 0;
        scan[0][tid] = mine;
        __syncthreads();
        for (int o = 1; o < IDX_TOPK_THREADS; o <<= 1) {
            const uint32_t v = scan[cur][tid] + (tid + o < IDX_TOPK_THREADS ? scan[cur][tid + o] : 0u);
            scan[cur ^ 1][tid] = v;
            cur ^= 1;
            __syncthreads();
        }
        uint32_t cum = scan[cur][tid] - mine; /* keys in the bins above this thread's */
        for (int i = per - 1; i >= 0; i--) {
            const uint32_t c = hist[tid * per + i];
            if (cum < rem && cum + c >= rem) {
                s_digit = (uint32_t)(tid * per + i);
                s_rem = rem - cum;
            }
            cum += c;
        }
        __syncthreads();
        prefix |= s_digit << shift;
        pmask |= (nb - 1) << shift;
        rem = s_rem;
        __syncthreads();
    }
    /* every key above the k-th, and of those equal to it the earliest rem */
    if (tid == 0) s_cnt = 0, s_eq_base = 0;
    __syncthreads();
    for (int32_t base = 0; base < n; base += IDX_TOPK_THREADS) {
        const int32_t p = base + tid;
        const uint32_t k = p < n ? idx_key(sc[p]) : 0u;
        const bool gt = p < n && k > prefix, eq = p < n && k == prefix;
        const uint32_t mg = __ballot_sync(0xffffffffu, gt); /* one counter add a warp */
        int32_t at = 0;
        if (lane == 0 && mg) at = atomicAdd(&s_cnt, idx_popc(mg));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (gt) out[at + idx_popc(mg & ((1u << lane) - 1u))] = (int32_t)idx_slot(a, tk.row, p);
        const uint32_t m = __ballot_sync(0xffffffffu, eq);
        if (lane == 0) warp_eq[wp] = idx_popc(m);
        __syncthreads();
        int32_t r = s_eq_base + idx_popc(m & ((1u << lane) - 1u));
        for (int w = 0; w < wp; w++) r += warp_eq[w];
        if (eq && (uint32_t)r < rem) out[atomicAdd(&s_cnt, 1)] = (int32_t)idx_slot(a, tk.row, p);
        __syncthreads();
        if (tid == 0)
            for (int w = 0; w < IDX_TOPK_THREADS / 32; w++) s_eq_base += warp_eq[w];
        __syncthreads();
    }
}

/* -------------------------------------------------------------- launcher */

template <int NT, int SPLIT> static size_t score_smem(int id) {
    return (size_t)(SPLIT * NT * 8 * id + MLA_IDX_TILE * SGL_ATTN_DSA_SCALE_BLOCK) * 2;
}

template <int NT, int SPLIT> static cudaError_t score_attr(size_t optin) {
    size_t need = score_smem<NT, SPLIT>(MLA_IDX_MAX_DIM);
    if (need > optin) need = optin;
    return cudaFuncSetAttribute(idx_score_kernel<NT, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need);
}

extern "C" int mla_indexer_init(size_t smem_optin) {
    cudaError_t e = score_attr<2, 1>(smem_optin);
    if (e == cudaSuccess) e = score_attr<4, 1>(smem_optin);
    if (e == cudaSuccess) e = score_attr<8, 1>(smem_optin);
    if (e == cudaSuccess) e = score_attr<2, 2>(smem_optin);
    if (e == cudaSuccess) e = score_attr<4, 2>(smem_optin);
    if (e == cudaSuccess) e = score_attr<8, 2>(smem_optin);
    return (int)e;
}

template <int NT, int SPLIT> static void launch_score(const mla_idx_args &a, int32_t t0, int32_t rows, cudaStream_t st) {
    dim3 grid((unsigned)a.key_chunks, (unsigned)rows);
    idx_score_kernel<NT, SPLIT><<<grid, IDX_SCORE_THREADS, score_smem<NT, SPLIT>(a.v.id), st>>>(a, t0);
}

extern "C" int mla_launch_indexer(const mla_idx_args *a) {
    cudaStream_t st = (cudaStream_t)a->stream;
    const int32_t T = a->v.t;
    if (T <= 0) return 0;
    if (a->save) {
        const int64_t jobs = (int64_t)T * a->v.nblk;
        idx_save_kernel<<<(unsigned)((jobs + 3) / 4), IDX_SAVE_THREADS, 0, st>>>(*a);
    }
    const int split = a->v.q_dt == MLA_IDX_Q_F32;
    const int nt = a->v.ih <= 16 ? 2 : a->v.ih <= 32 ? 4 : 8;
    for (int32_t t0 = 0; t0 < T; t0 += a->rows) {
        const int32_t rows = T - t0 < a->rows ? T - t0 : a->rows;
        if (a->key_chunks > 0) {
            if (split) {
                if (nt == 2) launch_score<2, 2>(*a, t0, rows, st);
                else if (nt == 4) launch_score<4, 2>(*a, t0, rows, st);
                else launch_score<8, 2>(*a, t0, rows, st);
            } else {
                if (nt == 2) launch_score<2, 1>(*a, t0, rows, st);
                else if (nt == 4) launch_score<4, 1>(*a, t0, rows, st);
                else launch_score<8, 1>(*a, t0, rows, st);
            }
        }
        idx_topk_kernel<<<(unsigned)rows, IDX_TOPK_THREADS, 0, st>>>(*a, t0);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return (int)e;
    }
    return (int)cudaGetLastError();
}
