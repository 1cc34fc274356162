/*
 * kern_decode_reg.cuh - paged split-KV decode with K and V loaded straight
 * into mma.sync fragments (CUDA, SM 8.0+; D 64/128, up to 8 q heads per kv
 * head).  The "reg" decode kernels of docs/cuda.md ("decode performance").
 *
 * Why: the smem-staged kernel (kern_decode_mma.cuh) spends ~45 warp
 * instructions per (token, kv head) on gather address math, cp.async, block
 * barriers and per-element masks, with 8 warps per SM in lockstep; at
 * 4.2 TB/s an SM has ~120 issue slots per (token, kv head).  Here each warp
 * owns its tiles, needs no barrier, no shared memory and no ldmatrix:
 *
 *   S  = Q K^T   m16n8k16, rows = q heads (a1 = a3 = 0: heads 8..15 unused),
 *                n = 8 tokens, k = head dim.  Any permutation of the head dim
 *                gives the same dot product, so lane (g, t) holds 16-byte
 *                pieces 4j + t of token g's row for K, and Q uses the same
 *                permutation: the B fragment is the loaded register itself.
 *   O^T += V^T P^T  m16n8k16, rows = head-dim slice, n = 8 q heads, k = 16
 *                tokens.  P^T's B fragment is S's C fragment repacked (same
 *                lane owns the same (head, token) pair); V^T's A fragment
 *                pairs two tokens per register: one byte-permute each.
 *
 * A tile is 16 tokens (8 KB of K+V per kv head at d128, 256 B per lane in
 * 16-byte loads, every load a full 64 B run of a token row).  Warp w takes
 * tiles w, w + NW, ... of the item, so a block's warps read neighbouring
 * tokens (the same pages).  NBUF = 2: the next tile's loads are issued before
 * this tile's math (8-16 KB in flight per warp, ~250 registers, 8 warps per
 * SM); NBUF = 1: K of the next tile is issued once S is done, V once P V is
 * (~170 registers, 12 warps per SM).  Slots for two tiles come one coalesced
 * read ahead.  Tokens past the end re-read the last valid token (finite
 * data, weight 0).
 *
 * The warps' (m, l, O) are merged through shared memory at the end and
 * attn_decode_finish writes out or combines splits, as in the other decodes.
 */
#ifndef SGL_CUDA_KERN_DECODE_REG_CUH
#define SGL_CUDA_KERN_DECODE_REG_CUH

#include "attn_kernels/decode_finish.cuh"
#include "mma_sm80.cuh"

#define ATTN_DR_TILE 16
#define ATTN_DR_HEADS 8   /* q heads a block serves (the launcher checks group <= 8) */
#define ATTN_DR_HBLOCK 16 /* q heads per grid.y block in the plan (attn_variant_tiles) */

template <int D> struct decode_reg_cfg {
    static_assert(D == 64 || D == 128, "reg decode: head dim 64 or 128");
    static constexpr int KU = D / 32;     /* 16-byte pieces of K per token and lane */
    static constexpr int VU = D / 64;     /* 16-byte pieces of V per token and lane */
    static constexpr int KSTEPS = D / 16; /* k-steps of S = Q K^T */
    static constexpr int MT = D / 16;     /* m-tiles of O^T */
};

/* Registers bound the occupancy: two register tiles need ~250 registers (8
 * warps per SM), one ~170 (12 warps per SM); the register cap follows. */
template <int NW, int NBUF> struct decode_reg_bounds {
    static constexpr int WARPS_PER_SM = NBUF == 2 ? 8 : 12;
    static constexpr int MIN_BLOCKS = WARPS_PER_SM / NW > 0 ? WARPS_PER_SM / NW : 1;
};

/* Pure (non-volatile) mma: the scheduler may move it between the loads. */
template <int DT>
GC_DEV void dr_mma(float c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
    if (DT == GC_BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* 16 bytes of the pool: read-only for the kernel, no reuse (L1 not allocated). */
GC_DEV uint4 dr_ldg(const uint16_t *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

/* 32-bit word w of a run of 16-byte pieces (w is a compile-time constant after unrolling). */
template <int N> GC_DEV uint32_t dr_word(const uint4 (&v)[N], int w) {
    const uint4 &q = v[w >> 2];
    const int c = w & 3;
    return c == 0 ? q.x : c == 1 ? q.y : c == 2 ? q.z : q.w;
}

template <int D> struct dr_frag {
    uint4 k[2][decode_reg_cfg<D>::KU]; /* tokens g and 8 + g of the tile */
    uint4 v[4][decode_reg_cfg<D>::VU]; /* tokens 2t, 2t+1, 8+2t, 9+2t */
};

/* What every warp of a block shares: the item, the pool rows it reads. */
struct dr_ctx {
    const uint16_t *kbase, *vbase; /* pool + kv head + this lane's piece offset */
    int64_t ks, vs;                /* slot strides (elements) */
    int beg, end, ntiles, row, b, diag;
};

/* Slots of tiles ta (lanes 0..15) and tb (lanes 16..31), token li of each;
 * columns past the end read the last one (its data is finite; weight 0). */
GC_DEV int32_t dr_fetch(const attn_fwd &p, const dr_ctx &x, int ta, int tb, int lane) {
    const int t = lane < 16 ? ta : tb;
    if (t >= x.ntiles) return 0;
    int col = x.beg + t * ATTN_DR_TILE + (lane & 15);
    if (col >= x.end) col = x.end - 1;
    if (x.diag) /* bench probe: one contiguous run per request, page table ignored */
        return (int32_t)(((int64_t)x.b * p.max_ctx + col) % p.num_slots);
    return attn_slot32(p, x.row, col);
}

/* Issue the loads of one tile whose slots sit in lanes half*16 .. half*16+15 of s. */
template <int D, bool DO_K, bool DO_V>
GC_DEV void dr_issue(dr_frag<D> &f, const dr_ctx &x, int32_t s, int half, int g, int t) {
    using C = decode_reg_cfg<D>;
    const int h = half * 16;
    if (DO_K) {
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const int32_t sl = __shfl_sync(0xffffffffu, s, h + nt * 8 + g);
            const uint16_t *kp = x.kbase + (int64_t)sl * x.ks;
#pragma unroll
            for (int j = 0; j < C::KU; j++) f.k[nt][j] = dr_ldg(kp + 32 * j);
        }
    }
    if (DO_V) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int tok = 2 * t + (i & 1) + (i >> 1) * 8;
            const int32_t sl = __shfl_sync(0xffffffffu, s, h + tok);
            const uint16_t *vp = x.vbase + (int64_t)sl * x.vs;
#pragma unroll
            for (int u = 0; u < C::VU; u++) f.v[i][u] = dr_ldg(vp + 64 * u);
        }
    }
}

/* Per-warp online-softmax state. */
template <int D> struct dr_state {
    float o[decode_reg_cfg<D>::MT][4]; /* O^T: rows head-dim slice, cols heads 2t, 2t+1 */
    float m, l;                        /* head g (l: this lane's tokens only until the end) */
};

/* S for one tile: s[nt][0..1] = head g, tokens nt*8 + 2t + {0,1}. */
template <int DT, int D>
GC_DEV void dr_scores(float s[2][4], const dr_frag<D> &f, const uint4 (&q)[decode_reg_cfg<D>::KU]) {
    using C = decode_reg_cfg<D>;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < C::KSTEPS; kk++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
            dr_mma<DT>(s[nt], dr_word(q, 2 * kk), 0u, dr_word(q, 2 * kk + 1), 0u, dr_word(f.k[nt], 2 * kk),
                       dr_word(f.k[nt], 2 * kk + 1));
}

/* Online softmax over the tile's scores; returns P^T's two B registers. */
template <int DT, int D>
GC_DEV void dr_softmax(const attn_fwd &p, dr_state<D> &st, float s[2][4], int valid, int t, uint32_t pb[2]) {
    using C = decode_reg_cfg<D>;
    float x[4];
#pragma unroll
    for (int i = 0; i < 4; i++) x[i] = attn_score(p, s[i >> 1][i & 1]);
    if (valid < ATTN_DR_TILE) { /* the item's last tile */
#pragma unroll
        for (int i = 0; i < 4; i++)
            if ((i >> 1) * 8 + 2 * t + (i & 1) >= valid) x[i] = ATTN_NEG_INF;
    }
    float mx = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mn = fmaxf(st.m, mx);
    /* Rescale only when some head's max grew (rare after the first tiles). */
    if (__any_sync(0xffffffffu, mn > st.m)) {
        const float corr = attn_rescale(st.m, mn);
        st.l *= corr;
        const float ca = __shfl_sync(0xffffffffu, corr, 8 * t), cb = __shfl_sync(0xffffffffu, corr, 8 * t + 4);
#pragma unroll
        for (int mt = 0; mt < C::MT; mt++) {
            st.o[mt][0] *= ca;
            st.o[mt][1] *= cb;
            st.o[mt][2] *= ca;
            st.o[mt][3] *= cb;
        }
        st.m = mn;
    }
    float e[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        e[i] = attn_exp2_sub(x[i], st.m);
        st.l += e[i];
    }
    pb[0] = pack2<DT>(e[0], e[1]); /* tokens 2t, 2t+1 */
    pb[1] = pack2<DT>(e[2], e[3]); /* tokens 8+2t, 9+2t */
}

/* O^T += V^T P^T: element ev of lane g's V slice is head-dim 64*(ev/8) + 8g + ev%8. */
template <int DT, int D> GC_DEV void dr_pv(dr_state<D> &st, const dr_frag<D> &f, const uint32_t pb[2]) {
    using C = decode_reg_cfg<D>;
#pragma unroll
    for (int mt = 0; mt < C::MT; mt++) {
        const int w0 = mt >> 1, w1 = (C::MT + mt) >> 1;
        const uint32_t sel = (mt & 1) ? 0x7632u : 0x5410u; /* high or low halves of two words */
        const uint32_t a0 = __byte_perm(dr_word(f.v[0], w0), dr_word(f.v[1], w0), sel);
        const uint32_t a1 = __byte_perm(dr_word(f.v[0], w1), dr_word(f.v[1], w1), sel);
        const uint32_t a2 = __byte_perm(dr_word(f.v[2], w0), dr_word(f.v[3], w0), sel);
        const uint32_t a3 = __byte_perm(dr_word(f.v[2], w1), dr_word(f.v[3], w1), sel);
        dr_mma<DT>(st.o[mt], a0, a1, a2, a3, pb[0], pb[1]);
    }
}

template <int DT, int D, int NW, int NBUF>
__global__ __launch_bounds__(NW * 32, (decode_reg_bounds<NW, NBUF>::MIN_BLOCKS)) void attn_decode_reg_kernel(
    attn_fwd p, int order, int diag) {
    using C = decode_reg_cfg<D>;
    static_assert(NBUF == 1 || NBUF == 2, "one or two tiles of registers");
    __shared__ float wo[NW][ATTN_DR_HEADS][D];
    __shared__ float so[ATTN_DR_HEADS * D];
    __shared__ float wm[NW][ATTN_DR_HEADS], wl[NW][ATTN_DR_HEADS], sm[ATTN_DR_HEADS], sl[ATTN_DR_HEADS];

    /* order 1: heads fastest, so the kv heads of one item run side by side */
    int item = blockIdx.x, hblock = blockIdx.y;
    if (order) {
        const int lin = (int)(blockIdx.y * gridDim.x + blockIdx.x);
        item = lin / (int)gridDim.y;
        hblock = lin % (int)gridDim.y;
    }
    if (item >= *p.num_items) return;
    const attn_decode_item it = p.ditems[item];
    const int hblocks = (p.group + ATTN_DR_HBLOCK - 1) / ATTN_DR_HBLOCK;
    const int kvh = hblock / hblocks;
    const int qh0 = kvh * p.group + (hblock % hblocks) * ATTN_DR_HBLOCK;
    const int nh = min(ATTN_DR_HEADS, p.group - (hblock % hblocks) * ATTN_DR_HBLOCK);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;

    dr_ctx x;
    x.beg = it.kv_begin;
    if (p.window >= 0 && it.q_pos - p.window > x.beg) x.beg = it.q_pos - p.window;
    x.end = it.kv_end;
    x.ntiles = x.end > x.beg ? (x.end - x.beg + ATTN_DR_TILE - 1) / ATTN_DR_TILE : 0;
    x.row = it.row;
    x.b = it.b;
    x.diag = diag;
    x.ks = p.kc_stride_s;
    x.vs = p.vc_stride_s;
    x.kbase = (const uint16_t *)p.k_cache + (int64_t)kvh * p.kc_stride_h + 8 * t;
    x.vbase = (const uint16_t *)p.v_cache + (int64_t)kvh * p.vc_stride_h + 8 * g;

    /* This warp's tiles: w, w + NW, ...; n of them. */
    const int n = x.ntiles > warp ? (x.ntiles - warp + NW - 1) / NW : 0;
#define DR_TILE(i) (warp + (i) * NW)

    dr_state<D> st;
#pragma unroll
    for (int mt = 0; mt < C::MT; mt++) st.o[mt][0] = st.o[mt][1] = st.o[mt][2] = st.o[mt][3] = 0.f;
    st.m = ATTN_NEG_INF;
    st.l = 0.f;

    if (n > 0) {
        /* Q of head g in the K permutation (piece 4j + t of the row); heads past nh are 0. */
        uint4 q[C::KU];
        {
            const uint16_t *qp =
                (const uint16_t *)p.q + (int64_t)it.b * p.q_stride_t + (int64_t)(qh0 + (g < nh ? g : 0)) * p.q_stride_h + 8 * t;
#pragma unroll
            for (int j = 0; j < C::KU; j++) q[j] = g < nh ? *(const uint4 *)(qp + 32 * j) : make_uint4(0, 0, 0, 0);
        }
        dr_frag<D> fa, fb;
        int32_t s_first = dr_fetch(p, x, DR_TILE(0), DR_TILE(0), lane);
        int32_t s_pair = dr_fetch(p, x, DR_TILE(1), DR_TILE(2), lane); /* tiles i+1, i+2 */
        dr_issue<D, true, true>(fa, x, s_first, 0, g, t);

        for (int i = 0; i < n; i += 2) {
            const int32_t s_next = dr_fetch(p, x, DR_TILE(i + 3), DR_TILE(i + 4), lane);
            /* Two steps per trip so the two register tiles need no copies. */
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int ii = i + u;
                if (ii >= n) break;
                const bool more = ii + 1 < n;
                dr_frag<D> &cur = (NBUF == 1 || u == 0) ? fa : fb;
                dr_frag<D> &nxt = (NBUF == 1 || u == 1) ? fa : fb;
                const int valid = x.end - (x.beg + DR_TILE(ii) * ATTN_DR_TILE);
                float s[2][4];
                uint32_t pb[2];
                if (NBUF == 2) {
                    if (more) dr_issue<D, true, true>(nxt, x, s_pair, u, g, t);
                    dr_scores<DT, D>(s, cur, q);
                    dr_softmax<DT, D>(p, st, s, valid, t, pb);
                    dr_pv<DT, D>(st, cur, pb);
                } else { /* K of the next tile once S is done, V once P V is */
                    dr_scores<DT, D>(s, cur, q);
                    if (more) dr_issue<D, true, false>(nxt, x, s_pair, u, g, t);
                    dr_softmax<DT, D>(p, st, s, valid, t, pb);
                    dr_pv<DT, D>(st, cur, pb);
                    if (more) dr_issue<D, false, true>(nxt, x, s_pair, u, g, t);
                }
            }
            s_pair = s_next;
        }
    }
#undef DR_TILE

    /* l over this head's four lanes; then the warps' states through shared memory. */
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 1);
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 2);
#pragma unroll
    for (int mt = 0; mt < C::MT; mt++) {
        const int e0 = mt, e1 = C::MT + mt; /* V slice elements of rows g and g + 8 */
        const int d0 = 64 * (e0 >> 3) + 8 * g + (e0 & 7), d1 = 64 * (e1 >> 3) + 8 * g + (e1 & 7);
        wo[warp][2 * t][d0] = st.o[mt][0];
        wo[warp][2 * t + 1][d0] = st.o[mt][1];
        wo[warp][2 * t][d1] = st.o[mt][2];
        wo[warp][2 * t + 1][d1] = st.o[mt][3];
    }
    if (t == 0) {
        wm[warp][g] = st.m;
        wl[warp][g] = st.l;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nh * D; i += NW * 32) {
        const int h = i / D, d = i % D;
        float mxw = ATTN_NEG_INF;
#pragma unroll
        for (int w = 0; w < NW; w++) mxw = fmaxf(mxw, wm[w][h]);
        float acc = 0.f, ls = 0.f;
#pragma unroll
        for (int w = 0; w < NW; w++) {
            const float f = attn_rescale(wm[w][h], mxw);
            acc += wo[w][h][d] * f;
            ls += wl[w][h] * f;
        }
        so[i] = acc;
        if (d == 0) {
            sm[h] = mxw;
            sl[h] = ls;
        }
    }
    __syncthreads();
    attn_decode_finish<DT, D>(p, it, qh0, nh, so, sm, sl, hblock);
}

#endif
