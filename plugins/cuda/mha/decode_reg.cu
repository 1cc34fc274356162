/*
 * decode_reg.cu - paged split-KV decode with K and V loaded straight into
 * mma.sync fragments (CUDA, SM 8.0+; head dims 64 / 128, up to
 * ATTN_DECODE_REG_MAX_GROUP q heads per kv head): cuda_attn's decode
 * wherever it serves (cuda_attn_choice.c); decode_mma.cu serves the rest.
 *
 * Why: the smem-staged kernel (decode_mma.cu) spends several times more warp
 * instructions per (token, kv head) on gather address math, cp.async, block
 * barriers and per-element masks, with all its warps in lockstep.  Here each
 * warp owns its tiles, needs no barrier, no shared memory and no ldmatrix:
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
 * 16-byte loads, every load a full 64 B run of a token row).  A block has
 * ATTN_DR_WARPS warps; warp w takes tiles w, w + ATTN_DR_WARPS, ... of the
 * item, so a block's warps read neighbouring tokens (the same pages).  Two
 * register tiles: the next tile's loads are issued before this tile's math
 * (8-16 KB in flight per warp, ~250 registers).  Slots for two tiles come
 * one coalesced read ahead.  Tokens past the end re-read the last valid
 * token (finite data, weight 0).  Blocks run heads-fastest: the kv heads of
 * one item are neighbours in the grid, so they run side by side.
 *
 * The warps' (m, l, O) are merged through shared memory at the end and
 * attn_decode_finish writes out or combines splits, as in the other decodes.
 *
 * fp8 e4m3 pools (template KV = ATTN_KV_FP8): the same tiles and lanes on
 * half the bytes.  The bytes become f16 mma operands in registers
 * (fp8_e4m3.cuh: exact), so both mma run in f16 (q converted once per item,
 * P packed as f16) and the dequant scales apply to the fp32 results: k_scale
 * to S before the softmax, v_scale to O at the end.  K takes 16-byte pieces
 * (lane t: pieces 4j + t of 16 values) with Q loaded in that permutation;
 * V keeps the 16-bit layout's elements per lane, in 8-byte loads.  The
 * conversion is the SM 8.9+ cvt; SM 8.0, which has none, moves bits four
 * bytes at a time (dr_kv), pairing a word's bytes 0 / 2 and 1 / 3, so Q's
 * values are paired the same way there.
 *
 * Fused save (template FS; 16-bit pools): a decode forward that saves its
 * new tokens (save_kv_cache set, self attention, not dual chunk) launches
 * this kernel with the save (attn_launch_decode_reg_save); one that does not
 * save, and every fp8 pool, launches it without (attn_launch_decode_reg).
 * With the save, the block of a request's last split (the one whose columns end at the new
 * token) first copies that token's K and V rows of its kv head into the pool
 * with save_kv.cuh's copy, then a block barrier, then the decode as above, so
 * the forward needs no save launch.  No other block reads that row: a
 * request's splits partition its columns, a kv head's rows are its own and a
 * block serves one (item, kv head).  Its pool loads are ld.global.cg
 * (dr_ldg's CO): the non-coherent path may not read what the kernel wrote.
 */
#include <type_traits>

#include "attn_kernels/decode_finish.cuh"
#define ATTN_SAVE_KV_ROWS_ONLY /* save_kv.cuh's copy, without portable.cu's kernel */
#include "attn_kernels/save_kv.cuh"
#include "cuda_launch.h"
#include "fp8_e4m3.cuh"
#include "mma_sm80.cuh"

#define ATTN_DR_TILE 16
#define ATTN_DR_HEADS ATTN_DECODE_REG_MAX_GROUP /* q heads a block serves */
#define ATTN_DR_HBLOCK 16 /* q heads per grid.y block in the plan (attn_kernel_tiles) */
#define ATTN_DR_WARPS 2
/* Blocks per SM the register count allows (8 warps of ~250 registers). */
#define ATTN_DR_MIN_BLOCKS (8 / ATTN_DR_WARPS)

template <int D> struct decode_reg_cfg {
    static_assert(D == 64 || D == 128, "reg decode: head dim 64 or 128");
    static constexpr int KU = D / 32;     /* 16-byte pieces of K per token and lane (fp8: of Q) */
    static constexpr int VU = D / 64;     /* 16-byte pieces of V per token and lane (fp8: 8-byte) */
    static constexpr int KU8 = D / 64;    /* fp8: 16-byte pieces of K per token and lane */
    static constexpr int KSTEPS = D / 16; /* k-steps of S = Q K^T */
    static constexpr int MT = D / 16;     /* m-tiles of O^T */
};

/* Pure (non-volatile) mma: the scheduler may move it between the loads. */
template <int DT>
GC_DEV void dr_mma(float c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
#ifdef LK_EMU /* the CPU emulator of the tests (tests/emu/): the same fragment semantics */
    const uint32_t a[4] = {a0, a1, a2, a3};
    lk_emu_mma(c, a, b0, b1, DT == GC_BF16);
#else
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
#endif
}

/* 16 bytes of the pool: read-only for the kernel, no reuse (L1 not allocated).
 * CO: the coherent load at L2 (ld.global.cg, neither .nc nor L1), for the
 * fused save's kernel, which reads rows its own block wrote before a barrier:
 * the compiler keeps it after the barrier, the non-coherent path may not see
 * the write. */
template <bool CO = false> GC_DEV uint4 dr_ldg(const uint16_t *p) {
    if constexpr (CO) return __ldcg((const uint4 *)p);
#ifdef LK_EMU
    return __ldg((const uint4 *)p);
#else
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
#endif
}

/* 8 bytes of the pool, as dr_ldg. */
GC_DEV uint2 dr_ldg8(const void *p) {
#ifdef LK_EMU
    return __ldg((const uint2 *)p);
#else
    uint2 v;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
#endif
}

/* 32-bit word w of a run of 16-byte pieces (w is a compile-time constant after unrolling). */
template <int N> GC_DEV uint32_t dr_word(const uint4 (&v)[N], int w) {
    const uint4 &q = v[w >> 2];
    const int c = w & 3;
    return c == 0 ? q.x : c == 1 ? q.y : c == 2 ? q.z : q.w;
}

/* KV element types of the template: 16-bit, or fp8 e4m3 with its bytes
 * converted to f16 by the SM 8.9+ cvt, or by integer moves where no cvt
 * exists (SM 8.0). */
enum { ATTN_KV_16 = 0, ATTN_KV_FP8 = 1 };
template <int KV> struct dr_kv {
    static constexpr bool f8 = KV == ATTN_KV_FP8;
    static constexpr bool kcvt = ATTN_FP8_HW_CVT && f8;
    /* blocks per SM the registers must allow: the fp8 kernel is held to 6
     * (168 registers: 12 warps per SM), its plan splitting by the wave rule
     * on those slots (CA_FP8_DEC_SM_BLOCKS), so more short items run beside each other */
    static constexpr int min_blocks = f8 ? 6 : ATTN_DR_MIN_BLOCKS;
    /* the 16-bit kernel's split merge takes the weights table and 16-byte
     * loads (attn_decode_finish's FM); the fp8 one keeps the per-element loop */
    static constexpr bool fm = KV == ATTN_KV_16;
    static constexpr bool vcvt = kcvt;
    /* what a converted K / V value is multiplied by to give the e4m3 value */
    static constexpr float kunit = kcvt ? 1.0f : ATTN_FP8_INT_UNIT;
    static constexpr float vunit = vcvt ? 1.0f : ATTN_FP8_INT_UNIT;
};

template <int D, int KV, bool F8 = dr_kv<KV>::f8> struct dr_frag {
    uint4 k[2][decode_reg_cfg<D>::KU]; /* tokens g and 8 + g of the tile */
    uint4 v[4][decode_reg_cfg<D>::VU]; /* tokens 2t, 2t+1, 8+2t, 9+2t */
};
template <int D, int KV> struct dr_frag<D, KV, true> {
    uint4 k[2][decode_reg_cfg<D>::KU8]; /* tokens g and 8 + g: e4m3 bytes */
    uint2 v[4][decode_reg_cfg<D>::VU];  /* tokens 2t, 2t+1, 8+2t, 9+2t: e4m3 bytes */
};

/* What every warp of a block shares: the item, the pool rows it reads. */
template <int KV> struct dr_ctx {
    using E = typename std::conditional<dr_kv<KV>::f8, uint8_t, uint16_t>::type;
    const E *kbase, *vbase;        /* pool + kv head + this lane's piece offset */
    int64_t ks, vs;                /* slot strides (elements) */
    int beg, end, ntiles, row;
};

/* Slots of tiles ta (lanes 0..15) and tb (lanes 16..31), token li of each;
 * columns past the end read the last one (its data is finite; weight 0). */
template <int KV> GC_DEV int32_t dr_fetch(const attn_fwd &p, const dr_ctx<KV> &x, int ta, int tb, int lane) {
    const int t = lane < 16 ? ta : tb;
    if (t >= x.ntiles) return 0;
    int col = x.beg + t * ATTN_DR_TILE + (lane & 15);
    if (col >= x.end) col = x.end - 1;
    return attn_slot32(p, x.row, col);
}

/* Issue the loads (K, then V) of one tile whose slots sit in lanes
 * half*16 .. half*16+15 of s (CO: coherent loads, dr_ldg). */
template <int D, int KV, bool CO = false>
GC_DEV void dr_issue(dr_frag<D, KV> &f, const dr_ctx<KV> &x, int32_t s, int half, int g, int t) {
    using C = decode_reg_cfg<D>;
    constexpr bool F8 = dr_kv<KV>::f8;
    const int h = half * 16;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
        const int32_t sl = __shfl_sync(0xffffffffu, s, h + nt * 8 + g);
        const auto *kp = x.kbase + (int64_t)sl * x.ks;
#pragma unroll
        for (int j = 0; j < (F8 ? C::KU8 : C::KU); j++) f.k[nt][j] = dr_ldg<CO>((const uint16_t *)(kp + (F8 ? 64 : 32) * j));
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int tok = 2 * t + (i & 1) + (i >> 1) * 8;
        const int32_t sl = __shfl_sync(0xffffffffu, s, h + tok);
        const auto *vp = x.vbase + (int64_t)sl * x.vs;
#pragma unroll
        for (int u = 0; u < C::VU; u++) {
            if constexpr (F8)
                f.v[i][u] = dr_ldg8(vp + 64 * u);
            else
                f.v[i][u] = dr_ldg<CO>((const uint16_t *)(vp + 64 * u));
        }
    }
}

/* K word w of a tile (the B fragment's register) as the mma's operand type:
 * values 2w, 2w+1 of this lane's K list; with integer moves on fp8 values
 * 4(w/2) + (w%2) and that + 2 (bytes 0, 2 or 1, 3 of a word: Q is permuted
 * the same way, dr_q_pairs). */
template <int D, int KV> GC_DEV uint32_t dr_kword(const dr_frag<D, KV> &f, int nt, int w) {
    if constexpr (dr_kv<KV>::kcvt)
        return fp8_pair(dr_word(f.k[nt], w >> 1), w & 1);
    else if constexpr (dr_kv<KV>::f8) {
        const uint32_t x = dr_word(f.k[nt], w >> 1);
        return fp8_hi_bytes_f16((w & 1) ? x : x << 8);
    } else
        return dr_word(f.k[nt], w);
}

/* V^T's A register: element e of this lane's V slice for tokens ta (low
 * half) and tb (high half) of the frag's four. */
template <int D, int KV> GC_DEV uint32_t dr_vpair(const dr_frag<D, KV> &f, int ta, int tb, int e) {
    if constexpr (dr_kv<KV>::f8) {
        const uint2 &a = f.v[ta][e >> 3], &b = f.v[tb][e >> 3];
        const uint32_t wa = (e & 4) ? a.y : a.x, wb = (e & 4) ? b.y : b.x;
        const uint32_t c = (uint32_t)(e & 3);
        return fp8x2_to_f16x2(__byte_perm(wa, wb, c | ((4u + c) << 4)));
    } else {
        const uint32_t sel = (e & 1) ? 0x7632u : 0x5410u; /* high or low halves of two words */
        return __byte_perm(dr_word(f.v[ta], e >> 1), dr_word(f.v[tb], e >> 1), sel);
    }
}

/* fp8 V by integer moves: dr_vpair's registers for elements e and e + 1 (e
 * even) at once, from one byte permute of the two tokens' words. */
template <int D, int KV>
GC_DEV void dr_vpair2_int(const dr_frag<D, KV> &f, int ta, int tb, int e, uint32_t &r0, uint32_t &r1) {
    const uint2 &a = f.v[ta][e >> 3], &b = f.v[tb][e >> 3];
    const uint32_t wa = (e & 4) ? a.y : a.x, wb = (e & 4) ? b.y : b.x;
    /* bytes (ta e, ta e+1, tb e, tb e+1): bytes 0, 2 -> element e, 1, 3 -> e + 1 */
    fp8x4_to_f16x2x2_int(__byte_perm(wa, wb, (e & 2) ? 0x7632u : 0x5410u), r0, r1);
}

/* Per-warp online-softmax state. */
template <int D> struct dr_state {
    float o[decode_reg_cfg<D>::MT][4]; /* O^T: rows head-dim slice, cols heads 2t, 2t+1 */
    float m, l;                        /* head g (l: this lane's tokens only until the end) */
};

/* S for one tile: s[nt][0..1] = head g, tokens nt*8 + 2t + {0,1}.  CT: the mma's type. */
template <int CT, int D, int KV>
GC_DEV void dr_scores(float s[2][4], const dr_frag<D, KV> &f, const uint4 (&q)[decode_reg_cfg<D>::KU]) {
    using C = decode_reg_cfg<D>;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < C::KSTEPS; kk++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
            dr_mma<CT>(s[nt], dr_word(q, 2 * kk), 0u, dr_word(q, 2 * kk + 1), 0u, dr_kword(f, nt, 2 * kk),
                       dr_kword(f, nt, 2 * kk + 1));
}

/* Online softmax over the tile's scores (times kmul when KSC: the fp8 pool's
 * dequant scale); returns P^T's two B registers. */
template <int CT, int D, bool KSC>
GC_DEV void dr_softmax(const attn_fwd &p, dr_state<D> &st, float s[2][4], int valid, int t, uint32_t pb[2],
                       float kmul) {
    using C = decode_reg_cfg<D>;
    float x[4];
#pragma unroll
    for (int i = 0; i < 4; i++) x[i] = attn_score(p, KSC ? s[i >> 1][i & 1] * kmul : s[i >> 1][i & 1]);
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
    pb[0] = pack2<CT>(e[0], e[1]); /* tokens 2t, 2t+1 */
    pb[1] = pack2<CT>(e[2], e[3]); /* tokens 8+2t, 9+2t */
}

/* O^T += V^T P^T: element ev of lane g's V slice is head-dim 64*(ev/8) + 8g + ev%8. */
template <int CT, int D, int KV> GC_DEV void dr_pv(dr_state<D> &st, const dr_frag<D, KV> &f, const uint32_t pb[2]) {
    using C = decode_reg_cfg<D>;
    if constexpr (dr_kv<KV>::f8 && !dr_kv<KV>::vcvt) { /* two m-tiles per byte permute */
#pragma unroll
        for (int mt = 0; mt < C::MT; mt += 2) {
            uint32_t a0[2], a1[2], a2[2], a3[2];
            dr_vpair2_int(f, 0, 1, mt, a0[0], a0[1]);
            dr_vpair2_int(f, 0, 1, C::MT + mt, a1[0], a1[1]);
            dr_vpair2_int(f, 2, 3, mt, a2[0], a2[1]);
            dr_vpair2_int(f, 2, 3, C::MT + mt, a3[0], a3[1]);
            dr_mma<CT>(st.o[mt], a0[0], a1[0], a2[0], a3[0], pb[0], pb[1]);
            dr_mma<CT>(st.o[mt + 1], a0[1], a1[1], a2[1], a3[1], pb[0], pb[1]);
        }
    } else {
#pragma unroll
        for (int mt = 0; mt < C::MT; mt++) {
            const int e0 = mt, e1 = C::MT + mt; /* rows g and g + 8 of O^T */
            const uint32_t a0 = dr_vpair(f, 0, 1, e0);
            const uint32_t a1 = dr_vpair(f, 0, 1, e1);
            const uint32_t a2 = dr_vpair(f, 2, 3, e0);
            const uint32_t a3 = dr_vpair(f, 2, 3, e1);
            dr_mma<CT>(st.o[mt], a0, a1, a2, a3, pb[0], pb[1]);
        }
    }
}

/* 8 bf16 (DT) or f16 values as f16 (the fp8 path's mma type). */
template <int DT> GC_DEV uint4 dr_q_f16(uint4 v) {
    return make_uint4(attn_q_f16x2<DT>(v.x), attn_q_f16x2<DT>(v.y), attn_q_f16x2<DT>(v.z), attn_q_f16x2<DT>(v.w));
}

/* Q in the K order of integer-moved fp8 words: (q0, q2), (q1, q3) of each
 * four values (dr_kword). */
GC_DEV uint4 dr_q_pairs(uint4 v) {
    return make_uint4(__byte_perm(v.x, v.y, 0x5410u), __byte_perm(v.x, v.y, 0x7632u), __byte_perm(v.z, v.w, 0x5410u),
                      __byte_perm(v.z, v.w, 0x7632u));
}

/* The fused save (FS): a block of a request's last split copies the
 * request's new token's row of kv head kvh into the pool as the save kernel
 * would, then a block barrier, before any warp loads a slot.  That split
 * holds the token's column (plan.cuh gives every request one, an empty one
 * too).  The branch is block-uniform.  Without FS (no s): nothing. */
template <int D> GC_DEV void dr_fused_save(const attn_decode_item &, int) {}
static_assert(ATTN_DR_HEADS <= ATTN_DR_HBLOCK, "the fused save: one block per (item, kv head) writes and reads its row");
template <int D> GC_DEV void dr_fused_save(const attn_decode_item &it, int kvh, const attn_save &s) {
    static_assert(D / 8 <= ATTN_DR_WARPS * 32, "the fused save: a 16-byte piece a thread");
    if (it.split != it.nsplit - 1) return;
    if ((int)threadIdx.x < D / 8) attn_save_kv_piece(s, it.b, kvh, (int)threadIdx.x, threadIdx.x == 0 && kvh == 0);
    __syncthreads();
}

/* S: empty, or the attn_save of the fused save (FS; 16-bit pools). */
template <int DT, int D, int KV, class... S>
__global__ __launch_bounds__(ATTN_DR_WARPS * 32, dr_kv<KV>::min_blocks) void attn_decode_reg_kernel(attn_fwd p,
                                                                                                  S... s) {
    constexpr bool FS = sizeof...(S) > 0;
    static_assert(!FS || !dr_kv<KV>::f8, "the fused save: 16-bit pools");
    using C = decode_reg_cfg<D>;
    constexpr bool F8 = dr_kv<KV>::f8;
    constexpr int CT = F8 ? GC_F16 : DT; /* the mma's type */
    constexpr int NW = ATTN_DR_WARPS;
    __shared__ float wo[NW][ATTN_DR_HEADS][D];
    __shared__ float so[ATTN_DR_HEADS * D];
    __shared__ float wm[NW][ATTN_DR_HEADS], wl[NW][ATTN_DR_HEADS], sm[ATTN_DR_HEADS], sl[ATTN_DR_HEADS];

    /* heads fastest: block (x, y) is number y * gridDim.x + x in launch order */
    const int lin = (int)(blockIdx.y * gridDim.x + blockIdx.x);
    const int item = lin / (int)gridDim.y, hblock = lin % (int)gridDim.y;
    if (item >= *p.num_items) return;
    const attn_decode_item it = p.ditems[item];
    const int hblocks = (p.group + ATTN_DR_HBLOCK - 1) / ATTN_DR_HBLOCK;
    const int kvh = hblock / hblocks;
    const int qh0 = kvh * p.group + (hblock % hblocks) * ATTN_DR_HBLOCK;
    const int nh = min(ATTN_DR_HEADS, p.group - (hblock % hblocks) * ATTN_DR_HBLOCK);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    dr_fused_save<D>(it, kvh, s...);

    dr_ctx<KV> x;
    x.beg = it.kv_begin;
    if (p.window >= 0 && it.q_pos - p.window > x.beg) x.beg = it.q_pos - p.window;
    x.end = it.kv_end;
    x.ntiles = x.end > x.beg ? (x.end - x.beg + ATTN_DR_TILE - 1) / ATTN_DR_TILE : 0;
    x.row = it.row;
    x.ks = p.kc_stride_s;
    x.vs = p.vc_stride_s;
    using E = typename dr_ctx<KV>::E;
    x.kbase = (const E *)p.k_cache + (int64_t)kvh * p.kc_stride_h + (F8 ? 16 : 8) * t;
    x.vbase = (const E *)p.v_cache + (int64_t)kvh * p.vc_stride_h + 8 * g;
    /* fp8: the dequant scales, times what the loads' conversion leaves out */
    const float kmul = F8 ? attn_kv_scale(p.k_scale_dev, p.k_scale) * dr_kv<KV>::kunit : 1.f;

    /* This warp's tiles: w, w + NW, ...; n of them. */
    const int n = x.ntiles > warp ? (x.ntiles - warp + NW - 1) / NW : 0;
#define DR_TILE(i) (warp + (i) * NW)

    dr_state<D> st;
#pragma unroll
    for (int mt = 0; mt < C::MT; mt++) st.o[mt][0] = st.o[mt][1] = st.o[mt][2] = st.o[mt][3] = 0.f;
    st.m = ATTN_NEG_INF;
    st.l = 0.f;

    if (n > 0) {
        /* Q of head g in the K permutation (16-bit: piece 4j + t of 8 values;
         * fp8: halves of piece 4j + t of 16); heads past nh are 0. */
        uint4 q[C::KU];
        {
            const uint16_t *qp = (const uint16_t *)p.q + (int64_t)it.b * p.q_stride_t +
                                 (int64_t)(qh0 + (g < nh ? g : 0)) * p.q_stride_h + (F8 ? 16 : 8) * t;
#pragma unroll
            for (int j = 0; j < C::KU; j++) {
                const int off = F8 ? 64 * (j >> 1) + 8 * (j & 1) : 32 * j;
                q[j] = g < nh ? *(const uint4 *)(qp + off) : make_uint4(0, 0, 0, 0);
                if (F8) q[j] = dr_q_f16<DT>(q[j]);
                if (F8 && !dr_kv<KV>::kcvt) q[j] = dr_q_pairs(q[j]);
            }
        }
        dr_frag<D, KV> fa, fb;
        int32_t s_first = dr_fetch(p, x, DR_TILE(0), DR_TILE(0), lane);
        int32_t s_pair = dr_fetch(p, x, DR_TILE(1), DR_TILE(2), lane); /* tiles i+1, i+2 */
        dr_issue<D, KV, FS>(fa, x, s_first, 0, g, t);

        for (int i = 0; i < n; i += 2) {
            const int32_t s_next = dr_fetch(p, x, DR_TILE(i + 3), DR_TILE(i + 4), lane);
            /* Two steps per trip so the two register tiles need no copies. */
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int ii = i + u;
                if (ii >= n) break;
                const bool more = ii + 1 < n;
                dr_frag<D, KV> &cur = u == 0 ? fa : fb;
                dr_frag<D, KV> &nxt = u == 1 ? fa : fb;
                const int valid = x.end - (x.beg + DR_TILE(ii) * ATTN_DR_TILE);
                float s[2][4];
                uint32_t pb[2];
                if (more) dr_issue<D, KV, FS>(nxt, x, s_pair, u, g, t);
                dr_scores<CT, D, KV>(s, cur, q);
                dr_softmax<CT, D, F8>(p, st, s, valid, t, pb, kmul);
                dr_pv<CT, D, KV>(st, cur, pb);
            }
            s_pair = s_next;
        }
    }
#undef DR_TILE

    /* l over this head's four lanes; then the warps' states through shared memory. */
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 1);
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 2);
    if (F8) { /* O is linear in V: its dequant scale applies once, here */
        const float vmul = attn_kv_scale(p.v_scale_dev, p.v_scale) * dr_kv<KV>::vunit;
#pragma unroll
        for (int mt = 0; mt < C::MT; mt++)
#pragma unroll
            for (int i = 0; i < 4; i++) st.o[mt][i] *= vmul;
    }
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
    attn_decode_finish<DT, D, dr_kv<KV>::fm>(p, it, qh0, nh, so, sm, sl, hblock);
}

/* S: nothing, or the fused save's attn_save (16-bit pools) */
template <int DT, int D, int KV, class... S>
static int decode_reg(const attn_fwd *p, int grid_items, cudaStream_t st, const S &...s) {
    /* grid.y as the plan sized it: kv heads x blocks of 16 q heads (one when group <= 8) */
    const int hblocks = (p->group + ATTN_DR_HBLOCK - 1) / ATTN_DR_HBLOCK;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_reg_kernel<DT, D, KV, S...><<<grid, ATTN_DR_WARPS * 32, 0, st>>>(*p, s...);
    return (int)cudaGetLastError();
}

template <int KV, class... S>
static int decode_reg_kv(int dtype, int d, const attn_fwd *p, int grid_items, cudaStream_t st, const S &...s) {
    if (dtype == ATTN_DT_BF16) {
        if (d == 64) return decode_reg<GC_BF16, 64, KV>(p, grid_items, st, s...);
        if (d == 128) return decode_reg<GC_BF16, 128, KV>(p, grid_items, st, s...);
    } else {
        if (d == 64) return decode_reg<GC_F16, 64, KV>(p, grid_items, st, s...);
        if (d == 128) return decode_reg<GC_F16, 128, KV>(p, grid_items, st, s...);
    }
    return (int)cudaErrorInvalidValue;
}

extern "C" int attn_launch_decode_reg_save(int dtype, int d, const attn_fwd *p, const attn_save *s, int grid_items,
                                           void *stream) {
    /* no grid would leave the tokens unsaved */
    if (grid_items <= 0 || p->group < 1 || p->group > ATTN_DR_HEADS || s->hkv != p->hkv || s->d != d ||
        s->t != p->num_tokens)
        return (int)cudaErrorInvalidValue;
    return decode_reg_kv<ATTN_KV_16>(dtype, d, p, grid_items, (cudaStream_t)stream, *s);
}

extern "C" int attn_launch_decode_reg(int dtype, int kv_fp8, int d, const attn_fwd *p,
                                      int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    if (p->group < 1 || p->group > ATTN_DR_HEADS) return (int)cudaErrorInvalidValue;
    const cudaStream_t st = (cudaStream_t)stream;
    if (!kv_fp8) return decode_reg_kv<ATTN_KV_16>(dtype, d, p, grid_items, st);
    return decode_reg_kv<ATTN_KV_FP8>(dtype, d, p, grid_items, st);
}
