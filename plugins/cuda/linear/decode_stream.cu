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
 * value: the outputs and state are the default's bits. */
#include "decode_row.cuh"

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
    const cudaError_t ce =
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
