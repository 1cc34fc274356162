/* lk_decode3.cu - the stream decode / verify step (SGL_ATTN_LIN_DECODE=stream)
 * of gdn, kda, mamba2 and lightning, K = 128, in two launches:
 *
 * 1. prep, one block per (request, key head group), 8 warps: the fused
 *    kernel's phase A (lk_decop.cuh: conv1d + SiLU with the slot's conv
 *    history moved on in place, l2norm, gates, beta, k.q; padding rows'
 *    zero outputs), its shared memory copied to the operand scratch p.dq.
 * 2. stream, one block per (request, value head, tile of RT state rows), 4
 *    warps: nothing serial in front of the state: every thread issues all of
 *    its NLD 16-byte state loads first (16 KB per block in flight, fp32 rows
 *    of 128 = 32 lanes x 4, bf16 = 16 lanes x 8), then its operands (L2
 *    hits), then per token the fused kernel's formulas, in the same order:
 *      delta:  m = s.(e k), sq = s.(e q), u = beta (v - m), s = e s + u k,
 *              o = scale (sq + u k.q)
 *      declin: s = e s + v k, o = scale s.q (+ D x for mamba2)
 *    and the stores.  Blocks are short and many (B 256, Qwen3-Next: 32k), 8
 *    resident per SM, so that the loads of some overlap the math and stores
 *    of others: ~128 KB of state reads in flight per SM (the fused kernel:
 *    ~64 KB at its peak, none during its serial phase A).
 *    SGL_ATTN_LIN_DECODE=stream_cp: the same with the tile landing in shared
 *    memory by cp.async (lin_decode3a_kernel): 12 blocks of 16 KB per SM.
 *    SGL_ATTN_LIN_DECODE=stream_pdl (SM 9.0+): the stream kernel is a
 *    programmatic dependent launch of the prep: the prep's blocks let it
 *    start at once (griddepcontrol.launch_dependents), so its first blocks
 *    are resident while the prep's last wave runs; they issue their state
 *    loads (the prep never writes the state) and only then wait for the
 *    prep's completion and memory (griddepcontrol.wait) to read dq.
 *    stream_pdl64: the same with 8-warp blocks (64 fp32 / 128 bf16 rows, half
 *    as many blocks, 3 / 2 of them per SM: the same bytes in flight).
 *    SGL_ATTN_LIN_DECODE=stream_one: prep and stream items in one launch
 *    (lin_decode4_kernel, below): the prep's traffic and latency under the
 *    stream; ticket order and ready flags instead of a grid boundary.
 * Verify with keep writes the state after each token to the step copies and
 * leaves the main state alone (the prep kernel: the conv step copies). */
#include "lk_decop.cuh"
#ifdef LK_EMU
#include <cstdio>
#include <cstdlib>
#endif

#define LK_D3_THREADS 128
#define LK_D3_NLD 8 /* 16-byte state loads per thread */

template <int SDT> struct lk_d3 { /* the 4-warp tile; NW warps: NW * RPW rows */
    static constexpr int K = LIN_TC_K, ESZ = SDT == LIN_DT_F32 ? 4 : 2, CPL = 16 / ESZ, LPR = K / CPL,
                         RPI = 32 / LPR, RPW = LK_D3_NLD * RPI, RT = 4 * RPW;
    /* resident blocks per SM the registers are budgeted for (fp32: 6 x 16 KB in flight, 80
     * registers; at 8 blocks ptxas spills) */
    static constexpr int MINB = SDT == LIN_DT_F32 ? 6 : 4; /* NW warps: MINB * 4 / NW, the same registers */
    /* the cp.async form: 12 (fp32, 38 registers) / 7 (bf16, 72; at 8 ptxas spills on sm_80) blocks
     * of 16 KB (shared memory: 12 x 17 KB fits the H200's 228 KB) */
    static constexpr int MINB_CP = SDT == LIN_DT_F32 ? 12 : 7;
};

static_assert(lk_d3<LIN_DT_F32>::RT == LIN_D3_ROWS(LIN_DT_F32) && lk_d3<LIN_DT_BF16>::RT == LIN_D3_ROWS(LIN_DT_BF16),
              "lin_params.h LIN_D3_ROWS and the kernel's tile differ");

/* 6 blocks per SM (40 registers; at 8 ptxas spills): it is latency-bound */
__global__ __launch_bounds__(LK_DEC_THREADS, 6) void lin_decprep_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K;
    LK_DYN_SMEM(float, sm);
    /* stream_pdl: the stream kernel may start now (it reads dq only after its griddepcontrol.wait, which
     * waits for this whole grid); without a programmatic dependent this does nothing */
    lk_pdl_trigger();
    const int i = blockIdx.x, grp = blockIdx.y;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int V = p.V, HV = p.hv, gsz = p.gsz, h0 = grp * gsz, tid = threadIdx.x;
    if (slot < 0) { /* padding: zero outputs; the stream kernel skips it */
        for (int idx = tid; idx < n * gsz * V; idx += LK_DEC_THREADS) {
            const int j = idx / (gsz * V), rem = idx % (gsz * V);
            lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + rem / V) * V + rem % V, 0.f);
        }
        return;
    }
    lk_dec_operands<K / 32>(p, sm, grp, slot, n, tok0); /* ends with a barrier */
    /* lin_decode_smem_bytes / 4 */
    const int used = n * (2 * K + 1 + gsz * (V + p.gc + 1 + (p.kind == LIN_MAMBA2 ? V : 0)));
    float *dst = p.dq + (int64_t)(i * p.hk + grp) * p.dq_per;
    for (int idx = tid; idx < used; idx += LK_DEC_THREADS) dst[idx] = sm[idx];
}

/* How the stream tile meets its operands: written by an earlier launch (plain), by the prep grid this
 * launch depends on programmatically (PDL: griddepcontrol.wait), or by a prep item of the same launch
 * (FLAG, stream_one: its ready flag, lk_d4_wait) */
enum { LK_D3_PLAIN = 0, LK_D3_PDL = 1, LK_D3_FLAG = 2 };

/* stream_one's hand-off (one flag per (request, key head group), the launch's epoch as its value):
 * release after the prep item's writes, acquire before the stream item's operand loads */
LK_DEV void lk_d4_release(int32_t *f, int v) {
#if defined(__CUDA_ARCH__) && !defined(LK_EMU)
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(f), "r"(v) : "memory");
#else
    *(volatile int32_t *)f = v;
#endif
}
LK_DEV int lk_d4_acquire(const int32_t *f) {
#if defined(__CUDA_ARCH__) && !defined(LK_EMU)
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
    return v;
#else
    return *(const volatile int32_t *)f;
#endif
}
/* thread 0 waits for the flag (acquire, then a fence as cooperative groups' grid sync has it), the
 * barrier hands it to the block: the block's plain loads after it see the prep item's writes (PTX memory
 * model: release -> acquire -> bar.sync is a causality chain).  The producer holds a lower ticket
 * (lin_decode4_kernel), so it is running or done: the wait always ends.  The emulator runs blocks one
 * after another in ticket order, so there the flag is always set already: anything else is a bug. */
LK_DEV void lk_d4_wait(const int32_t *f, int ep) {
    if (threadIdx.x == 0) {
#ifdef LK_EMU
        if (lk_d4_acquire(f) != ep) {
            fprintf(stderr, "EMU: stream_one: a stream item before its prep item\n");
            abort();
        }
#else
        /* the spin count in shared memory: at the wait every register the tile has is taken */
        __shared__ unsigned s_spin;
        volatile unsigned *spin = &s_spin;
        *spin = 0;
        while (lk_d4_acquire(f) != ep) {
            __nanosleep(64);
            if ((*spin += 1) > (1u << 24)) __trap(); /* stream_one_static on blocks out of order: an error, not a hang */
        }
        __threadfence();
#endif
    }
    __syncthreads();
}

/* Where a stream tile finds its item: the block's index (one block per tile), or stream_one's ticket in
 * shared memory, read again at every use (volatile) so that no register holds it across the tile: the
 * fp32 tile is at its register budget, and blockIdx costs none either (the compiler re-reads it). */
struct lk_d3_bix {
    LK_DEV int i() const { return (int)blockIdx.x; }
    LK_DEV int h() const { return (int)blockIdx.y; }
    LK_DEV int z() const { return (int)blockIdx.z; }
    LK_DEV int ep() const { return 0; }
};
struct lk_d4_six {
    const volatile int *v; /* request, value head, tile, epoch */
    LK_DEV int i() const { return v[0]; }
    LK_DEV int h() const { return v[1]; }
    LK_DEV int z() const { return v[2]; }
    LK_DEV int ep() const { return v[3]; }
};

/* One stream tile, NW warps: request ix.i(), value head ix.h(), rows ix.z() * RT .. */
template <int SDT, int NW, int MODE, class IX> LK_DEV void lk_d3_tile(const lin_fwd &p, const IX &ix) {
    using D = lk_d3<SDT>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = NW * RPW, NLD = LK_D3_NLD;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2;
    const int GC = GCH ? K : 1;
    auto R0 = [&] { return ix.z() * RT; };
    const int n = p.pl.req_n[ix.i()];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[ix.i()];
    if (slot < 0) return; /* padding: the prep kernel wrote its zero outputs */
    const int64_t tok0 = p.pl.req_tok0[ix.i()];
    const int V = p.V, HV = p.hv, gsz = p.gsz;
    auto GRP = [&] { return ix.h() / gsz; };
    auto JH = [&] { return ix.h() % gsz; };
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    auto NR = [&] { return min(RT, V - R0()); }; /* rows of this tile */
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;

    /* ---- the tile's state: every load issued before anything else */
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)ix.h() * V * K;
    float s[NLD][CPL];
#pragma unroll
    for (int l = 0; l < NLD; l++) {
        const int r = R0() + warp * RPW + l * RPI + sub;
        if (r < V) {
            lk_sld<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
        } else {
#pragma unroll
            for (int e = 0; e < CPL; e++) s[l][e] = 0.f;
        }
    }

    /* ---- the operands of the prep kernel (lk_decop.cuh's layout); PDL: after the prep grid is done (the
     * state loads above stay in flight; the plan arrays read before were written by an earlier kernel) */
    if (MODE == LK_D3_PDL) lk_pdl_wait();
    if (MODE == LK_D3_FLAG) lk_d4_wait(p.dq_sync + 4 + ix.i() * p.hk + GRP(), ix.ep());
    const float *op = p.dq + (int64_t)(ix.i() * p.hk + GRP()) * p.dq_per;
    /* offsets from op (32-bit: fewer registers than eight pointers) */
    const int okv = n * K, okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz * GC,
              osk = obb + n * gsz;

    for (int j = 0; j < n; j++) {
        const int hj = j * gsz + JH();
        float kj[CPL], qj[CPL], ec[CPL];
        lk_sld<LIN_DT_F32, CPL>(op, okv + j * K + cc, kj);
        lk_sld<LIN_DT_F32, CPL>(op, j * K + cc, qj);
        if (GCH) { /* kda: per channel, scalar loads (the layout leaves them unaligned) */
#pragma unroll
            for (int e = 0; e < CPL; e++) ec[e] = op[oee + hj * K + cc + e];
        } else {
            const float e1 = op[oee + hj];
#pragma unroll
            for (int e = 0; e < CPL; e++) ec[e] = e1;
        }
        const float beta = DELTA ? op[obb + hj] : 0.f, kqj = DELTA ? op[okq + j] : 0.f;
        float a1[NLD], a2[NLD];
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            a1[l] = a2[l] = 0.f;
            if (DELTA) {
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    a1[l] += s[l][e] * (ec[e] * kj[e]);
                    a2[l] += s[l][e] * (ec[e] * qj[e]);
                }
            } else {
                const int rl = warp * RPW + l * RPI + sub;
                const float v = rl < NR() ? op[ovv + hj * V + R0() + rl] : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    s[l][e] = ec[e] * s[l][e] + v * kj[e];
                    a2[l] += s[l][e] * qj[e];
                }
            }
        }
#pragma unroll
        for (int o = LPR / 2; o; o >>= 1)
#pragma unroll
            for (int l = 0; l < NLD; l++) {
                if (DELTA) a1[l] += gc_shfl_xor(a1[l], o);
                a2[l] += gc_shfl_xor(a2[l], o);
            }
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int rl = warp * RPW + l * RPI + sub, r = R0() + rl;
            const bool live = rl < NR();
            float out;
            if (DELTA) {
                const float u = live ? beta * (op[ovv + hj * V + r] - a1[l]) : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) s[l][e] = ec[e] * s[l][e] + u * kj[e];
                out = p.scale * (a2[l] + u * kqj);
            } else {
                out = p.scale * a2[l] + (M2 && live ? op[osk + hj * V + r] : 0.f);
            }
            if (live) {
                if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + ix.h()) * V + r, out);
                if (p.keep)
                    lk_sst<SDT, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + ((int64_t)ix.h() * V + r) * K + cc,
                                     s[l]);
            }
        }
    }
    if (!p.keep)
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int r = R0() + warp * RPW + l * RPI + sub;
            if (r < V) lk_sst<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
        }
}

/* NW warps; PDL: a programmatic dependent of the prep kernel (stream_pdl): the state loads are issued
 * before the wait for the prep's operands */
template <int SDT, int NW, int MODE>
__global__ __launch_bounds__(NW * 32, lk_d3<SDT>::MINB * 4 / NW) void lin_decode3_kernel(lin_fwd p) {
    lk_d3_tile<SDT, NW, MODE>(p, lk_d3_bix());
}

/* SGL_ATTN_LIN_DECODE=stream_one: prep and stream in ONE launch of 4-warp blocks, so that the prep's
 * conv-state traffic and latency hide under the state stream instead of running before it.  Each block
 * takes a ticket (an atomic counter, so the order is the order in which blocks really start, whatever the
 * hardware's dispatch order) and the ticket names its item: the prep items of requests 0 .. L-1 first
 * (L = LIN_D4_LEAD), then per request i its stream items followed by the prep items of request i + L.
 * A prep item (request, key head group) runs lk_dec_operands with 128 threads straight into the dq
 * scratch, then releases its flag; a stream item issues its state loads, then waits on its group's flag
 * (always held by a lower ticket: a block that already runs, so no deadlock), then lk_d3_tile as above.
 * The sync words reset themselves: the last block to finish rewinds the ticket and done counters and
 * advances the epoch the flags are compared with (CUDA-graph replays see the same clean state). */
/* L2 prefetch of the 128-byte lines that bytes [off, off + len) of base touch (each line holds some of
 * those bytes): line k by thread (k0 + k) % 128; k0 moves on, so consecutive ranges share the threads */
LK_DEV void lk_d4_pf(const void *base, int64_t off, int64_t len, int &k0) {
    const uintptr_t s0 = (uintptr_t)base + (uintptr_t)off, a = s0 & ~(uintptr_t)127;
    const int64_t nl = (int64_t)((s0 + (uintptr_t)len - a + 127) >> 7);
    const int first = ((int)threadIdx.x - k0 + LK_D3_THREADS) % LK_D3_THREADS;
    for (int64_t k = first; k < nl; k += LK_D3_THREADS) {
#if defined(__CUDA_ARCH__) && !defined(LK_EMU)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a + ((uintptr_t)k << 7)));
#else
        (void)a;
#endif
    }
    k0 = (int)((k0 + nl) % LK_D3_THREADS);
}

/* The prep item's conv histories (q, k of its key head, v of its value heads; mamba2: B, C, x) and
 * this request's x columns: one L2 prefetch per line up front, so that lk_dec_operands' channel loop
 * (4 channels per thread, one after another) waits on DRAM once rather than at every channel. */
LK_DEV void lk_d4_prefetch(const lin_fwd &p, int slot, int64_t tok0, int n, int grp) {
    constexpr int K = LIN_TC_K;
    if (p.kind == LIN_LIGHTNING) return;
    const int H = p.conv_w - 1, sesz = p.st_dt == LIN_DT_F32 ? 4 : 2, xesz = p.x.dt == LIN_DT_F32 ? 4 : 2;
    const int M2 = p.kind == LIN_MAMBA2, vb = M2 ? 0 : 2 * p.hk * K, kb = M2 ? p.hv * p.V : 0;
    const int c0[3] = {kb + grp * K, kb + p.hk * K + grp * K, vb + grp * p.gsz * p.V};
    const int cn[3] = {K, K, p.gsz * p.V};
    int k0 = 0;
    for (int r = 0; r < 3; r++) {
        lk_d4_pf(p.conv_state, ((int64_t)slot * p.conv_elems + (int64_t)c0[r] * H) * sesz, (int64_t)cn[r] * H * sesz, k0);
        for (int j = 0; j < n; j++) lk_d4_pf(p.x.p, ((tok0 + j) * p.x_dim + c0[r]) * xesz, (int64_t)cn[r] * xesz, k0);
    }
}

LK_DEV void lk_d4_prep(const lin_fwd &p, int i, int grp, int ep) {
    constexpr int K = LIN_TC_K;
    const int n = p.pl.req_n[i];
    if (n > 0) {
        const int slot = p.pl.req_slot[i];
        const int64_t tok0 = p.pl.req_tok0[i];
        const int V = p.V, HV = p.hv, gsz = p.gsz, h0 = grp * gsz;
        if (slot >= 0 && p.dq_pf) lk_d4_prefetch(p, slot, tok0, n, grp);
        if (slot < 0) { /* padding: zero outputs; the stream items skip it */
            for (int idx = threadIdx.x; idx < n * gsz * V; idx += LK_D3_THREADS) {
                const int j = idx / (gsz * V), rem = idx % (gsz * V);
                lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + rem / V) * V + rem % V, 0.f);
            }
        } else {
            lk_dec_operands<K / 32, LK_D3_THREADS>(p, p.dq + (int64_t)(i * p.hk + grp) * p.dq_per, grp, slot, n, tok0);
        }
    }
    __threadfence(); /* every thread's writes, then the barrier, then thread 0's release */
    __syncthreads();
    if (threadIdx.x == 0) lk_d4_release(p.dq_sync + 4 + i * p.hk + grp, ep);
}

/* TICKET = false (stream_one_static): the block index is the ticket, which saves the atomic's round
 * trip in front of the state loads but relies on the hardware starting blocks in index order (what
 * NVIDIA GPUs do, not a documented guarantee): a wait past 2^24 polls (seconds) traps, not hangs. */
template <int SDT, bool TICKET>
__global__ __launch_bounds__(LK_D3_THREADS, lk_d3<SDT>::MINB) void lin_decode4_kernel(lin_fwd p, int ntile) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    if (!TICKET) return; /* stream_one_static is launched on SM 9.0+ only (on 8.x its tile spills) */
#endif
    __shared__ int s_ix[4]; /* request, value head / -(group + 1) for a prep item, tile, epoch */
    if (threadIdx.x == 0) {
        const int t = TICKET ? atomicAdd(&p.dq_sync[0], 1) : (int)blockIdx.x;
        const int bs = p.bs, hk = p.hk, ns = p.hv * ntile, L = min(LIN_D4_LEAD, (bs + 1) / 2), seg = ns + hk;
        int i, r; /* r < 0: prep item (request i, group -r - 1); else stream item r of request i */
        if (t < L * hk) {
            i = t / hk, r = -(t % hk) - 1;
        } else if (t - L * hk < (bs - L) * seg) {
            const int u = t - L * hk;
            i = u / seg, r = u % seg;
            if (r >= ns) i += L, r = -(r - ns) - 1;
        } else {
            const int v = t - L * hk - (bs - L) * seg;
            i = bs - L + v / ns, r = v % ns;
        }
        s_ix[0] = i;
        s_ix[1] = r < 0 ? r : r / ntile;
        s_ix[2] = r < 0 ? 0 : r % ntile;
        s_ix[3] = lk_d4_acquire(&p.dq_sync[2]) + 1; /* the last launch's epoch + 1 (set by its last block) */
    }
    __syncthreads();
    if (s_ix[1] < 0) lk_d4_prep(p, s_ix[0], -s_ix[1] - 1, s_ix[3]);
    else lk_d3_tile<SDT, 4, LK_D3_FLAG>(p, lk_d4_six{s_ix});
    if (threadIdx.x == 0) { /* nothing of the above stays live: the counts come from the parameters again */
        const int total = p.bs * (p.hk + p.hv * ntile);
        __threadfence(); /* this block's ticket and epoch reads before its count */
        if (atomicAdd(&p.dq_sync[1], 1) == total - 1) { /* every block has its ticket and epoch: rewind */
            if (TICKET) atomicAdd(&p.dq_sync[0], -total);
            atomicAdd(&p.dq_sync[1], -total);
            atomicAdd(&p.dq_sync[2], 1);
        }
    }
}

/* The same step with the tile landing in shared memory by cp.async
 * (SGL_ATTN_LIN_DECODE=stream_cp): no registers hold the bytes in flight, so
 * a thread needs few (one row at a time, its tokens innermost) and more
 * blocks fit an SM (12 x 16 KB in flight).  Each thread reads back only the
 * 16-byte pieces it copied itself: its own cp.async.wait_group 0, no barrier.
 * Per row the same arithmetic in the same order as above. */
template <int SDT>
__global__ __launch_bounds__(LK_D3_THREADS, lk_d3<SDT>::MINB_CP) void lin_decode3a_kernel(lin_fwd p) {
    using D = lk_d3<SDT>;
    constexpr int K = D::K, ESZ = D::ESZ, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = D::RT,
                  NLD = LK_D3_NLD;
    LK_DYN_SMEM(unsigned char, tile); /* [RT][K] state elements */
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2;
    const int GC = GCH ? K : 1;
    const int i = blockIdx.x, h = blockIdx.y, r0 = (int)blockIdx.z * RT;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: the prep kernel wrote its zero outputs */
    const int64_t tok0 = p.pl.req_tok0[i];
    const int V = p.V, HV = p.hv, gsz = p.gsz, grp = h / gsz, jh = h % gsz;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nr = min(RT, V - r0);
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)h * V * K;
    const char *src = (const char *)p.ssm_state;
#pragma unroll
    for (int l = 0; l < NLD; l++) {
        const int rl = warp * RPW + l * RPI + sub;
        const int r = r0 + rl < V ? r0 + rl : V - 1; /* rows past V: zero-filled, never stored */
        lk_cp_async16(tile + ((size_t)rl * K + cc) * ESZ, src + (size_t)(sbase + (int64_t)r * K + cc) * ESZ, r0 + rl < V);
    }
    lk_cp_async_commit();
    const float *op = p.dq + (int64_t)(i * p.hk + grp) * p.dq_per;
    const int okv = n * K, okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz * GC,
              osk = obb + n * gsz;
    lk_cp_async_wait_all();
#pragma unroll 2
    for (int l = 0; l < NLD; l++) {
        const int rl = warp * RPW + l * RPI + sub, r = r0 + rl;
        const bool live = rl < nr;
        float s[CPL];
        lk_sld<SDT, CPL>(tile, (int64_t)rl * K + cc, s);
        for (int j = 0; j < n; j++) {
            const int hj = j * gsz + jh;
            float kj[CPL], qj[CPL], ec[CPL];
            lk_sld<LIN_DT_F32, CPL>(op, okv + j * K + cc, kj);
            lk_sld<LIN_DT_F32, CPL>(op, j * K + cc, qj);
            if (GCH) {
#pragma unroll
                for (int e = 0; e < CPL; e++) ec[e] = op[oee + hj * K + cc + e];
            } else {
                const float e1 = op[oee + hj];
#pragma unroll
                for (int e = 0; e < CPL; e++) ec[e] = e1;
            }
            float a1 = 0.f, a2 = 0.f;
            if (DELTA) {
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    a1 += s[e] * (ec[e] * kj[e]);
                    a2 += s[e] * (ec[e] * qj[e]);
                }
            } else {
                const float v = live ? op[ovv + hj * V + r] : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    s[e] = ec[e] * s[e] + v * kj[e];
                    a2 += s[e] * qj[e];
                }
            }
#pragma unroll
            for (int o = LPR / 2; o; o >>= 1) {
                if (DELTA) a1 += gc_shfl_xor(a1, o);
                a2 += gc_shfl_xor(a2, o);
            }
            float out;
            if (DELTA) {
                const float u = live ? op[obb + hj] * (op[ovv + hj * V + r] - a1) : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) s[e] = ec[e] * s[e] + u * kj[e];
                out = p.scale * (a2 + u * op[okq + j]);
            } else {
                out = p.scale * a2 + (M2 && live ? op[osk + hj * V + r] : 0.f);
            }
            if (live) {
                if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h) * V + r, out);
                if (p.keep)
                    lk_sst<SDT, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + ((int64_t)h * V + r) * K + cc, s);
            }
        }
        if (!p.keep && live) lk_sst<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s);
    }
}

/* At create (never under capture): the cp.async form wants the whole
 * carveout as shared memory (12 x 16 KB per SM); a refusal only costs
 * occupancy, so it is not an error. */
extern "C" int lin_decode3_setup(void) {
    const void *k[2] = {(const void *)lin_decode3a_kernel<LIN_DT_F32>, (const void *)lin_decode3a_kernel<LIN_DT_BF16>};
    for (int i = 0; i < 2; i++)
        if (cudaFuncSetAttribute(k[i], cudaFuncAttributePreferredSharedMemoryCarveout, (int)cudaSharedmemCarveoutMaxShared) !=
            cudaSuccess)
            (void)cudaGetLastError();
    return 0;
}

extern "C" int lin_launch_decode3(const lin_fwd *pp, void *stream) {
    lin_fwd p = *pp;
    if (p.T <= 0 || p.bs <= 0) return 0;
    if ((p.kind != LIN_GDN && p.kind != LIN_KDA && p.kind != LIN_MAMBA2 && p.kind != LIN_LIGHTNING) ||
        p.K != LIN_TC_K || !p.dq)
        return (int)cudaErrorInvalidValue;
    const size_t smem = lin_decode_smem_bytes(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr);
    if (smem > LIN_DECODE_SMEM_MAX) return (int)cudaErrorInvalidValue;
    /* the scratch stride: the whole call's tokens per request (no request has more) */
    p.dq_per = (int32_t)lin_decode3_per(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr);
    cudaStream_t st = (cudaStream_t)stream;
    const int RT = LIN_D3_ROWS(p.st_dt);
    if (p.dq_one) { /* stream_one: one launch, bs * (hk + hv * tiles) blocks (tickets, not blockIdx) */
        if (!p.dq_sync || (int64_t)p.bs * (p.hk + (int64_t)p.hv * ((p.V + RT - 1) / RT)) > INT32_MAX)
            return (int)cudaErrorInvalidValue;
        const int ntile = (p.V + RT - 1) / RT;
        const unsigned nb = (unsigned)(p.bs * (p.hk + p.hv * ntile));
        const int bf = p.st_dt == LIN_DT_BF16;
        if (bf && p.dq_static) LK_LAUNCH((lin_decode4_kernel<LIN_DT_BF16, false>), dim3(nb), LK_D3_THREADS, 0, st, p, ntile);
        else if (bf) LK_LAUNCH((lin_decode4_kernel<LIN_DT_BF16, true>), dim3(nb), LK_D3_THREADS, 0, st, p, ntile);
        else if (p.dq_static) LK_LAUNCH((lin_decode4_kernel<LIN_DT_F32, false>), dim3(nb), LK_D3_THREADS, 0, st, p, ntile);
        else LK_LAUNCH((lin_decode4_kernel<LIN_DT_F32, true>), dim3(nb), LK_D3_THREADS, 0, st, p, ntile);
        return (int)cudaGetLastError();
    }
    /* lightning: hk = hv, one head per group */
    /* SGL_ATTN_LIN_DECPREP=v2: lk_decprep2.cu where it serves the shape (gdn, conv width 4), else v1;
     * v3: lk_decprep3.cu, else v2 (v3 also refuses more key heads than 2 blocks per SM), else v1 */
    int pv2 = p.dq_prep == 3 ? lin_launch_decprep3(&p, stream) : -1;
    if (pv2 < 0 && p.dq_prep >= 2) {
        lin_fwd q = p;
        q.dq_prep = 2;
        pv2 = lin_launch_decprep2(&q, stream);
    }
    if (pv2 > 0) return pv2;
    if (pv2 < 0) LK_LAUNCH(lin_decprep_kernel, dim3((unsigned)p.bs, (unsigned)p.hk), LK_DEC_THREADS, smem, st, p);
    dim3 grid((unsigned)p.bs, (unsigned)p.hv, (unsigned)((p.V + RT - 1) / RT));
    if (p.dq_wide || p.dq_pdl) { /* stream_pdl64: 8 warps, twice the rows; stream_pdl: 4 warps */
        const int R = p.dq_wide ? 2 * RT : RT;
        const dim3 gp((unsigned)p.bs, (unsigned)p.hv, (unsigned)((p.V + R - 1) / R));
        const int bf = p.st_dt == LIN_DT_BF16;
        cudaError_t e;
        if (p.dq_wide && bf) e = LK_LAUNCH_PDL(p.dq_pdl, (lin_decode3_kernel<LIN_DT_BF16, 8, LK_D3_PDL>), gp, 256, 0, st, p);
        else if (p.dq_wide) e = LK_LAUNCH_PDL(p.dq_pdl, (lin_decode3_kernel<LIN_DT_F32, 8, LK_D3_PDL>), gp, 256, 0, st, p);
        else if (bf) e = LK_LAUNCH_PDL(1, (lin_decode3_kernel<LIN_DT_BF16, 4, LK_D3_PDL>), gp, LK_D3_THREADS, 0, st, p);
        else e = LK_LAUNCH_PDL(1, (lin_decode3_kernel<LIN_DT_F32, 4, LK_D3_PDL>), gp, LK_D3_THREADS, 0, st, p);
        if (e != cudaSuccess) { /* cudaLaunchKernelEx's refusal: not left behind for a later call */
            (void)cudaGetLastError();
            return (int)e;
        }
    } else if (p.dq_async) { /* the tile in shared memory: RT rows of K elements */
        const size_t tb = (size_t)RT * LIN_TC_K * (p.st_dt == LIN_DT_BF16 ? 2 : 4);
        if (p.st_dt == LIN_DT_BF16) LK_LAUNCH(lin_decode3a_kernel<LIN_DT_BF16>, grid, LK_D3_THREADS, tb, st, p);
        else LK_LAUNCH(lin_decode3a_kernel<LIN_DT_F32>, grid, LK_D3_THREADS, tb, st, p);
    } else if (p.st_dt == LIN_DT_BF16) {
        LK_LAUNCH((lin_decode3_kernel<LIN_DT_BF16, 4, LK_D3_PLAIN>), grid, LK_D3_THREADS, 0, st, p);
    } else {
        LK_LAUNCH((lin_decode3_kernel<LIN_DT_F32, 4, LK_D3_PLAIN>), grid, LK_D3_THREADS, 0, st, p);
    }
    return (int)cudaGetLastError();
}
