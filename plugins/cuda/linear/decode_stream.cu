/* decode_stream.cu - the stream decode / verify step of gdn, kda, mamba2 and
 * lightning, K = 128 (the fused decode, decode_fused.cu, takes other K), in
 * two launches:
 *
 * 1. prep (decode_prep.cu), one block per (request, key head group): the
 *    group's operands -- conv1d + SiLU with the slot's conv history moved on
 *    in place, l2norm, gates, beta, k.q; padding rows' zero outputs -- to the
 *    operand scratch p.dq.
 * 2. stream (here), one block per (request, value head, tile of RT state
 *    rows), 4 warps: nothing serial in front of the state: every thread
 *    issues all of its NLD 16-byte state loads first (16 KB per block in
 *    flight, fp32 rows of 128 = 32 lanes x 4, bf16 = 16 lanes x 8), then its
 *    operands (L2 hits), then per token the fused kernel's formulas, in the
 *    same order:
 *      delta:  m = s.(e k), sq = s.(e q), u = beta (v - m), s = e s + u k,
 *              o = scale (sq + u k.q)
 *      declin: s = e s + v k, o = scale s.q (+ D x for mamba2)
 *    and the stores.  Blocks are short and many (B 256, Qwen3-Next: 32k), 6
 *    (fp32) / 4 (bf16) resident per SM, so that the loads of some overlap the
 *    math and stores of others.
 * On SM 9.0 and newer the stream kernel is a programmatic dependent launch of
 * the prep (p.dq_pdl): the prep's blocks let it start at once
 * (griddepcontrol.launch_dependents), so its first blocks are resident while
 * the prep's last wave runs; they issue their state loads (the prep never
 * writes the state) and only then wait for the prep's completion and memory
 * (griddepcontrol.wait) to read dq.  On SM 8.x the same kernel is launched
 * plainly (the griddepcontrol instructions compile to nothing there).
 * Verify with keep writes the state after each token to the step copies and
 * leaves the main state alone (the prep: the conv step copies).
 * The L2 prefetch ahead (p.dec_l2a = D > 0; the kernel's L2A instantiation):
 * each block also asks L2 for the state tile of block b + D, b its own index
 * in launch order (x fastest, then y, then z): blocks start roughly in that
 * order, so the tile is in L2 when its block starts and loads it, and the
 * DRAM reads no longer rise and fall with the resident blocks' load / compute
 * phases.  D is one block per SM for the bf16 state by default and 0 (the
 * instantiation without it) for the float32 state, whose decode it speeds up
 * by too little (lin_decode_l2a_blocks; the option decode_l2_ahead_blocks
 * sets D for either); a grid of D blocks or fewer has nothing to prefetch
 * and takes the kernel without it.  The tile is contiguous (RT rows of K):
 * one cp.async.bulk.prefetch.L2 by one thread on SM 9.0, one
 * prefetch.global.L2 per 128-byte line on SM 8.x.  A prefetch changes no
 * value: the outputs and state are the default's bits.
 * The bulk state tile (p.dec_bulk = option decode_bulk_state, the float32
 * state on SM 9.0; lin_decode_stream_bulk_kernel): thread 0 arms an mbarrier
 * for the tile's bytes and issues one cp.async.bulk of the tile (RT rows of K,
 * contiguous) into shared memory, before griddepcontrol.wait (this kernel has
 * no L2 prefetch ahead); the threads then wait on the barrier and read and write
 * their rows' values there, token by token, and store them as the default
 * does.  No register holds a byte in flight or the tile between tokens, so the
 * kernel fits 64 registers and 8 blocks an SM (16 KB of shared memory each)
 * rather than 6, with the same formulas in the same order: the default's
 * bits.  A 16-bit state keeps the register kernel: between tokens it is
 * float32 in registers, which a 16-bit tile in shared memory would round. */
#include "decode_row.cuh"
#if defined(LK_EMU)
#include "emu_sm90.h"
#endif

#define LK_STREAM_THREADS 128
#define LK_STREAM_NLD 8 /* 16-byte state loads per thread */

static_assert(LK_STREAM_THREADS == LK_ROWS_THREADS, "decode_row.cuh's tile is 4 warps");

template <int SDT> struct lk_stream : lk_rows<SDT, LK_STREAM_NLD> {
    /* resident blocks per SM the registers are budgeted for (fp32: 6 x 16 KB in flight, 80 registers; at
     * 8 blocks ptxas spills) */
    static constexpr int MINB = SDT == LIN_DT_F32 ? 6 : 4;
    static constexpr int TILE_BYTES = lk_rows<SDT, LK_STREAM_NLD>::RT * LIN_TC_K * lk_rows<SDT, LK_STREAM_NLD>::ESZ;
};

static_assert(lk_stream<LIN_DT_F32>::RT == LIN_STREAM_ROWS(LIN_DT_F32) &&
                  lk_stream<LIN_DT_BF16>::RT == LIN_STREAM_ROWS(LIN_DT_BF16),
              "lin_params.h LIN_STREAM_ROWS and the kernel's tile differ");

static_assert(lk_stream<LIN_DT_F32>::TILE_BYTES == LK_STREAM_THREADS * 128 &&
                  lk_stream<LIN_DT_BF16>::TILE_BYTES == LK_STREAM_THREADS * 128,
              "the SM 8.x L2 prefetch: one 128-byte line of the tile per thread");

/* L2 prefetch of bytes (a multiple of 128, a 16-byte aligned address) at a, by the block's threads: one bulk
 * prefetch by thread 0 on SM 9.0; below, thread t the 128-byte line t (the tile has one line per thread).  The
 * CPU emulator has no cache (lk_emu_l2_prefetch: a bounds check and a byte count, once a block). */
LK_DEV void lk_l2_prefetch(const char *a, int bytes) {
#if defined(LK_EMU)
    if (threadIdx.x == 0) lk_emu_l2_prefetch(a, (size_t)bytes);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(bytes));
#else
    if ((int)threadIdx.x * 128 < bytes) asm volatile("prefetch.global.L2 [%0];" ::"l"(a + threadIdx.x * 128));
#endif
}

/* The L2 prefetch ahead: the state tile of the block p.dec_l2a blocks after this one in launch order, unless that is
 * past the grid or its request is padding or empty (the plan words: written by an earlier kernel, so read
 * before lk_pdl_wait; a warp that waits on them waits once, with its own state loads already in flight) */
template <int SDT> LK_DEV void lk_stream_l2_ahead(const lin_fwd &p) {
    using D = lk_stream<SDT>;
#if !defined(LK_EMU) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x != 0) return; /* one bulk prefetch: the other warps go on to their math at once */
#endif
    const unsigned gx = gridDim.x, gxy = gridDim.x * gridDim.y;
    const unsigned b = blockIdx.x + gx * blockIdx.y + gxy * blockIdx.z + (unsigned)p.dec_l2a;
    if (b >= gxy * gridDim.z) return;
    const int x = (int)(b % gx), y = (int)(b % gxy / gx), r0 = (int)(b / gxy) * D::RT;
    const int n = p.pl.req_n[x], slot = p.pl.req_slot[x]; /* both in flight together (x < bs) */
    if (n <= 0 || slot < 0) return;
    const int64_t e = (int64_t)slot * p.ssm_elems + ((int64_t)y * p.V + r0) * D::K;
    lk_l2_prefetch((const char *)p.ssm_state + e * D::ESZ, min(D::RT, p.V - r0) * D::K * D::ESZ);
}

/* One stream tile: request blockIdx.x, value head blockIdx.y, rows blockIdx.z * RT ..  The block indices
 * are read again at each use (the lambdas) rather than held in registers: the fp32 tile is at its
 * register budget. */
template <int SDT, bool L2A>
__global__ __launch_bounds__(LK_STREAM_THREADS, lk_stream<SDT>::MINB) void lin_decode_stream_kernel(lin_fwd p) {
    using D = lk_stream<SDT>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = D::RT, NLD = LK_STREAM_NLD;
    const int KIND = p.kind;
    auto R0 = [&] { return (int)blockIdx.z * RT; };
    const int n = p.pl.req_n[(int)blockIdx.x];
    if (n <= 0) {
        if constexpr (L2A) lk_stream_l2_ahead<SDT>(p);
        return;
    }
    const int slot = p.pl.req_slot[(int)blockIdx.x];
    if (slot < 0) { /* padding: the prep kernel wrote its zero outputs */
        if constexpr (L2A) lk_stream_l2_ahead<SDT>(p);
        return;
    }
    const int64_t tok0 = p.pl.req_tok0[(int)blockIdx.x];
    const int V = p.V, HV = p.hv, gsz = p.gsz;
    auto GRP = [&] { return (int)blockIdx.y / gsz; };
    auto JH = [&] { return (int)blockIdx.y % gsz; };
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    auto NR = [&] { return min(RT, V - R0()); }; /* rows of this tile */
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;

    /* ---- the tile's state: every load issued before anything else */
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)(int)blockIdx.y * V * K;
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

    /* ---- the L2 prefetch ahead: after this tile's loads, which it does not delay */
    if constexpr (L2A) lk_stream_l2_ahead<SDT>(p);

    /* ---- the operands of the prep kernel (decode_operands.cuh's layout), after the prep grid is done (the
     * state loads above stay in flight; the plan arrays read before were written by an earlier kernel) */
    lk_pdl_wait();
    const float *op = p.dq + (int64_t)((int)blockIdx.x * p.hk + GRP()) * p.dq_per;
    lk_rows_steps<SDT, NLD>(p, s, op, n, slot, tok0, KIND, V, HV, gsz, lane, warp, [&] { return (int)blockIdx.y; }, JH, R0, NR);
    lk_rows_store<SDT, NLD>(p, s, sbase, V, R0(), lane, warp);
}

/* ---- the bulk state tile (p.dec_bulk) */
#define LK_STREAM_BULK_MINB 8 /* resident blocks per SM: 64 registers a thread */
using lk_bulk = lk_stream<LIN_DT_F32>;
/* the tile, then its mbarrier */
#define LK_STREAM_BULK_SMEM (lk_bulk::TILE_BYTES + 16)

LK_DEV uint32_t lk_smem_u32(const void *a) {
#if defined(LK_EMU)
    return lk_emu_smem_addr(a);
#else
    return (uint32_t)__cvta_generic_to_shared(a);
#endif
}

/* By one thread: the barrier at bar initialised for one arrival, armed for `bytes` (its arrival) and the bulk
 * copy of them from global src to shared dst issued, completing on it.  Below SM 9.0 it traps: the launcher
 * never takes the bulk kernel there. */
LK_DEV void lk_bulk_tile_issue(void *dst, const void *src, uint32_t bytes, void *bar) {
    const uint32_t d = lk_smem_u32(dst), b = lk_smem_u32(bar);
#if defined(LK_EMU)
    lk_emu_mbar_init(b, 1);
    lk_emu_mbar_expect_tx(b, bytes);
    lk_emu_mbar_arrive(b);
    lk_emu_bulk_g2s(d, src, bytes, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(d),
                 "l"(src), "r"(bytes), "r"(b)
                 : "memory");
#else
    (void)d, (void)b, (void)src, (void)bytes;
    __trap();
#endif
}

/* Every thread: until the barrier's first phase (the tile's bytes) completes */
LK_DEV void lk_bulk_tile_wait(void *bar) {
    const uint32_t b = lk_smem_u32(bar);
#if defined(LK_EMU)
    lk_emu_mbar_wait(b, 0);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{\n.reg .pred p;\nLK_BULK_TILE_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 "@!p bra LK_BULK_TILE_WAIT;\n}\n" ::"r"(b)
                 : "memory");
#else
    (void)b;
    __trap();
#endif
}

/* lk_rows_steps (decode_row.cuh) with this thread's rows in the shared tile ts (row rl at ts + rl K) rather than
 * in registers: each is read where the register kernel reads s[l] and written back where it writes s[l], so the
 * formulas and their order are the same; rows past the tile's are zeros, as the register kernel's.  A copy rather
 * than lk_rows_steps over a state accessor: that would change the default kernel's code while this is a lever
 * (docs/lab/linear.md); whichever loses on the GPU goes. */
template <class FH, class FJ, class FR, class FN>
LK_DEV void lk_bulk_steps(const lin_fwd &p, float *ts, const float *op, int n, int slot, int64_t tok0, int KIND, int V,
                          int HV, int gsz, int lane, int warp, FH head, FJ jh, FR R0, FN NR) {
    using D = lk_bulk;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, NLD = LK_STREAM_NLD;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2;
    const int GC = GCH ? K : 1;
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;
    const int okv = n * K, okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz * GC,
              osk = obb + n * gsz;
    auto ROW = [&](int l) { return ts + (warp * RPW + l * RPI + sub) * K + cc; };
    auto LD = [&](int l, float (&s)[CPL]) {
        if (warp * RPW + l * RPI + sub < NR()) {
            const float4 v = *(const float4 *)ROW(l);
            s[0] = v.x, s[1] = v.y, s[2] = v.z, s[3] = v.w;
        } else {
#pragma unroll
            for (int e = 0; e < CPL; e++) s[e] = 0.f;
        }
    };
    auto ST = [&](int l, const float (&s)[CPL]) {
        if (warp * RPW + l * RPI + sub < NR()) *(float4 *)ROW(l) = make_float4(s[0], s[1], s[2], s[3]);
    };
    static_assert(CPL == 4, "the float32 tile: a float4 per lane and row");

    for (int j = 0; j < n; j++) {
        const int hj = j * gsz + jh();
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
        const float beta = DELTA ? op[obb + hj] : 0.f, kqj = DELTA ? op[okq + j] : 0.f;
        float a1[NLD], a2[NLD];
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            float s[CPL];
            LD(l, s);
            a1[l] = a2[l] = 0.f;
            if (DELTA) {
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    a1[l] += s[e] * (ec[e] * kj[e]);
                    a2[l] += s[e] * (ec[e] * qj[e]);
                }
            } else {
                const int rl = warp * RPW + l * RPI + sub;
                const float v = rl < NR() ? op[ovv + hj * V + R0() + rl] : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    s[e] = ec[e] * s[e] + v * kj[e];
                    a2[l] += s[e] * qj[e];
                }
                ST(l, s);
            }
        }
        lk_rows_xor_sum<NLD, LPR>(a1, a2, DELTA);
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int rl = warp * RPW + l * RPI + sub, r = R0() + rl;
            const bool live = rl < NR();
            float out, s[CPL];
            if (DELTA) {
                LD(l, s);
                const float u = live ? beta * (op[ovv + hj * V + r] - a1[l]) : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) s[e] = ec[e] * s[e] + u * kj[e];
                ST(l, s);
                out = p.scale * (a2[l] + u * kqj);
            } else {
                out = p.scale * a2[l] + (M2 && live ? op[osk + hj * V + r] : 0.f);
            }
            if (live) {
                if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + head()) * V + r, out);
                if (p.keep) {
                    if (!DELTA) LD(l, s);
                    lk_sst<LIN_DT_F32, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems +
                                                        ((int64_t)head() * V + r) * K + cc,
                                            s);
                }
            }
        }
    }
    /* without keep, the tile's rows stored to the state, as lk_rows_store */
    if (!p.keep)
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int rl = warp * RPW + l * RPI + sub;
            if (rl < NR()) {
                float s[CPL];
                LD(l, s);
                lk_sst<LIN_DT_F32, CPL>(p.ssm_state, (int64_t)slot * p.ssm_elems + ((int64_t)head() * V + R0() + rl) * K + cc, s);
            }
        }
}

/* One stream tile of the float32 state by one bulk copy (the grid and block of lin_decode_stream_kernel).  No L2
 * prefetch ahead (the float32 state's default has none; with it ptxas spills at 64 registers). */
__global__ __launch_bounds__(LK_STREAM_THREADS, LK_STREAM_BULK_MINB) void lin_decode_stream_bulk_kernel(lin_fwd p) {
    using D = lk_bulk;
    constexpr int K = D::K, RT = D::RT;
    LK_DYN_SMEM(float, ts); /* the tile (RT rows of K), then its mbarrier */
    void *bar = (void *)(ts + RT * K);
    const int KIND = p.kind;
    auto R0 = [&] { return (int)blockIdx.z * RT; };
    const int n = p.pl.req_n[(int)blockIdx.x];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[(int)blockIdx.x];
    if (slot < 0) return; /* padding: the prep kernel wrote its zero outputs */
    const int V = p.V;
    auto NR = [&] { return min(RT, V - R0()); };
    /* ---- the tile: contiguous rows R0 .. R0 + NR - 1 of the slot's value head, one copy before anything else
     * (the prep never writes the state; the plan words were written by an earlier kernel) */
    if (threadIdx.x == 0)
        lk_bulk_tile_issue(ts,
                           (const float *)p.ssm_state + (int64_t)slot * p.ssm_elems +
                               ((int64_t)(int)blockIdx.y * V + R0()) * K,
                           (uint32_t)(NR() * K * D::ESZ), bar);
    const int64_t tok0 = p.pl.req_tok0[(int)blockIdx.x];
    const int HV = p.hv, gsz = p.gsz;
    auto GRP = [&] { return (int)blockIdx.y / gsz; };
    auto JH = [&] { return (int)blockIdx.y % gsz; };
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* the barrier's initialisation before any thread waits on it */
    lk_pdl_wait();
    const float *op = p.dq + (int64_t)((int)blockIdx.x * p.hk + GRP()) * p.dq_per;
    lk_bulk_tile_wait(bar);
    lk_bulk_steps(p, ts, op, n, slot, tok0, KIND, V, HV, gsz, lane, warp, [&] { return (int)blockIdx.y; }, JH, R0, NR);
}

/* 8 blocks of 16 KB an SM need shared memory's largest carveout: asked for once, at create, so that the driver
 * does not choose a smaller one by the kernel's size */
extern "C" int lin_decode_stream_bulk_setup(void) {
    return (int)cudaFuncSetAttribute((const void *)lin_decode_stream_bulk_kernel,
                                     cudaFuncAttributePreferredSharedMemoryCarveout, 100);
}

extern "C" int lin_launch_decode_stream(const lin_fwd *pp, void *stream) {
    lin_fwd p = *pp;
    if (p.T <= 0 || p.bs <= 0) return 0;
    if ((p.kind != LIN_GDN && p.kind != LIN_KDA && p.kind != LIN_MAMBA2 && p.kind != LIN_LIGHTNING) ||
        p.K != LIN_TC_K || !p.dq)
        return (int)cudaErrorInvalidValue;
    if (lin_decode_smem_bytes(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr) > LIN_DECODE_SMEM_MAX)
        return (int)cudaErrorInvalidValue;
    /* the scratch stride: the whole call's tokens per request (no request has more) */
    p.dq_per = (int32_t)lin_decode_operands_per(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr);
    int e = lin_launch_decode_prep(&p, stream);
    if (e) return e;
    cudaStream_t st = (cudaStream_t)stream;
    const int RT = LIN_STREAM_ROWS(p.st_dt);
    const dim3 grid((unsigned)p.bs, (unsigned)p.hv, (unsigned)((p.V + RT - 1) / RT));
    /* the L2 prefetch ahead where some block has a successor D blocks on */
    const bool l2a = p.dec_l2a > 0 && (int64_t)p.dec_l2a < (int64_t)grid.x * grid.y * grid.z;
    cudaError_t ce;
    if (p.dec_bulk && p.st_dt == LIN_DT_F32) /* its carveout set at create (lin_decode_stream_bulk_setup) */
        ce = LK_LAUNCH_PDL(p.dq_pdl, lin_decode_stream_bulk_kernel, grid, LK_STREAM_THREADS, LK_STREAM_BULK_SMEM, st, p);
    else
        ce =
        p.st_dt == LIN_DT_BF16
            ? (l2a ? LK_LAUNCH_PDL(p.dq_pdl, (lin_decode_stream_kernel<LIN_DT_BF16, true>), grid, LK_STREAM_THREADS, 0, st, p)
                   : LK_LAUNCH_PDL(p.dq_pdl, (lin_decode_stream_kernel<LIN_DT_BF16, false>), grid, LK_STREAM_THREADS, 0, st, p))
            : (l2a ? LK_LAUNCH_PDL(p.dq_pdl, (lin_decode_stream_kernel<LIN_DT_F32, true>), grid, LK_STREAM_THREADS, 0, st, p)
                   : LK_LAUNCH_PDL(p.dq_pdl, (lin_decode_stream_kernel<LIN_DT_F32, false>), grid, LK_STREAM_THREADS, 0, st, p));
    if (ce != cudaSuccess) { /* cudaLaunchKernelEx's refusal: not left behind for a later call */
        (void)cudaGetLastError();
        return (int)ce;
    }
    return (int)cudaGetLastError();
}
