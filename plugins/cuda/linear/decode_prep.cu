/* decode_prep.cu - the stream decode's prep (decode_stream.cu, K = 128): one
 * block per (request, key head group) makes the group's operands -- the fused
 * decode's phase A: conv1d + SiLU with the slot's conv history moved on in
 * place, l2norm, gates, beta, k.q -- and stores them to the operand scratch
 * p.dq in decode_operands.cuh's layout (padding rows: their zero outputs).
 * Every prep block lets the stream kernel start at once (lk_pdl_trigger); the
 * stream kernel reads dq only after the whole prep grid is done.
 *
 * lin_decode_prep_w4_kernel serves gdn with conv width 4 (every Qwen3-Next /
 * Qwen3.5 layer), x bf16 / f32, conv weights f32 / bf16, aligned rows
 * (lk_dp_w4_ok); lin_decode_prep_kernel, decode_operands.cuh's loop, every
 * other case (kda, mamba2, lightning, other widths, f16 x).
 *
 * Why the w4 form: the general kernel is latency-bound: each of its 256
 * threads walks 2 channels one after the other with scalar loads, the gates
 * are loaded only after the first barrier (a second dependent DRAM round
 * trip), and the operands go through shared memory and a copy pass.  In the
 * w4 form a thread owns 4 consecutive channels and issues all of its loads
 * first (3 x 16-byte history loads for fp32 state, the x, weights and bias
 * vectors), then the gate lanes their scalar loads, so the block waits on
 * DRAM once.  Warp 0 owns the q channels, warp 1 the k channels (lane l:
 * channels 4l .. 4l+3, the mapping of lk_dec_operands' l2norm and k.q, so
 * the sums run in the same order), the warps after them the value channels.
 * l2norm is a warp sum in registers; k.q takes one barrier (k through 512
 * bytes of shared memory per token).  Operands are stored straight to dq.
 * Same formulas and order of additions as the general kernel (bias, history
 * oldest first, then the newest input).  Verify with keep: per-step conv
 * copies to iconv. */
#include "decode_operands.cuh"

/* The general prep: 6 blocks per SM (40 registers; at 8 ptxas spills): it is latency-bound */
__global__ __launch_bounds__(LK_DEC_THREADS, 6) void lin_decode_prep_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K;
    LK_DYN_SMEM(float, sm);
    /* the stream kernel may start now (it reads dq only after its griddepcontrol.wait, which waits for
     * this whole grid); without a programmatic dependent this does nothing */
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

#define LK_DP_W4 4        /* conv width served by the w4 form */
#define LK_DP_W4_NTMAX 256 /* 2 + ceil(gsz V / 128) warps, at most 8 */

/* blocks of 256 threads per SM the registers are budgeted for: 4 (64 registers; 8 blocks of 128 threads,
 * more loads in flight) where ptxas fits them without spills (sm_90a), else 3 (sm_80 spills at 64) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define LK_DP_W4_MINB 3
#else
#define LK_DP_W4_MINB 4
#endif

template <int SDT, int XDT, int WDT>
__global__ __launch_bounds__(LK_DP_W4_NTMAX, LK_DP_W4_MINB) void lin_decode_prep_w4_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = LK_DP_W4, H = W - 1;
    LK_DYN_SMEM(float, ks); /* [n][K]: k after l2norm, for k.q */
    lk_pdl_trigger(); /* as the general prep: the stream kernel may start (it waits for this grid before reading dq) */
    const int i = blockIdx.x, grp = blockIdx.y, NT = (int)blockDim.x;
    /* the plan's three words in one round trip (i < bs: always there) */
    const int n = p.pl.req_n[i], slot = p.pl.req_slot[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    if (n <= 0) return;
    const int V = p.V, HV = p.hv, HK = p.hk, gsz = p.gsz, h0 = grp * gsz, tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    if (slot < 0) { /* padding: zero outputs; the stream kernel skips it */
        for (int idx = tid; idx < n * gsz * V; idx += NT) {
            const int j = idx / (gsz * V), rem = idx % (gsz * V);
            lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + rem / V) * V + rem % V, 0.f);
        }
        return;
    }
    /* my 4 channels: q (warp 0), k (warp 1), v (warps 2..: value channel r2 of the group) */
    const int r2 = 4 * (tid - 64);
    const bool live = warp < 2 || r2 < gsz * V;
    const int ch = warp == 0 ? grp * K + 4 * lane : warp == 1 ? (HK + grp) * K + 4 * lane
                                                              : 2 * HK * K + h0 * V + (live ? r2 : 0);
    const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;

    /* ---- every load first: history (oldest first per channel), weights, bias, the first token's x */
    float hist[4 * H], wt[4 * W], bias[4] = {0.f, 0.f, 0.f, 0.f}, x[4] = {0.f, 0.f, 0.f, 0.f};
    lk_w4_load<SDT, XDT, WDT, W>(p, live, ch, at, tok0, hist, wt, bias, x); /* idle lanes: zeros */
    /* the gates of the first token: lanes 0 .. gsz-1 of warp 1, after their conv loads are out */
    const int okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz;
    float *dst = p.dq + (int64_t)(i * HK + grp) * p.dq_per;
    float ga = 0.f, gb = 0.f, gl = 0.f, gd = 0.f;
    const bool gate = warp == 1 && lane < gsz;
    if (gate) {
        gl = lk_in(p.A_log, h0 + lane);
        gd = lk_in(p.dt_bias, h0 + lane);
        ga = lk_in(p.a, tok0 * HV + h0 + lane);
        gb = lk_in(p.b, tok0 * HV + h0 + lane);
    }

    for (int j = 0; j < n; j++) {
        if (j > 0 && live) lk_sld<XDT, 4>(p.x.p, (tok0 + j) * p.x_dim + ch, x);
        float o[4];
        lk_w4_conv<W>(bias, wt, hist, x, o);
        if (live && p.keep) {
            const int64_t st = ((int64_t)slot * p.steps + j) * p.conv_elems + (int64_t)ch * H;
#pragma unroll
            for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.iconv, st + 4 * m, hist + 4 * m);
        }
        if (warp < 2) {
            if (p.l2norm) lk_w4_l2norm(o);
            lk_sst<LIN_DT_F32, 4>(dst, (int64_t)(warp * n + j) * K + 4 * lane, o);
            if (warp == 1) lk_sst<LIN_DT_F32, 4>(ks, (int64_t)j * K + 4 * lane, o);
        } else if (live) { /* v[j][r2 ..]: the offset 2nK + n leaves it unaligned for n % 4 != 0 */
#pragma unroll
            for (int c = 0; c < 4; c++) dst[ovv + j * gsz * V + r2 + c] = o[c];
        }
        if (gate) { /* e = exp(-exp(A_log) softplus(a + dt_bias)), beta = sigmoid(b) */
            if (j > 0) {
                ga = lk_in(p.a, (tok0 + j) * HV + h0 + lane);
                gb = lk_in(p.b, (tok0 + j) * HV + h0 + lane);
            }
            dst[oee + j * gsz + lane] = lk_gdn_decay(gl, gd, ga);
            dst[obb + j * gsz + lane] = lk_sigmoid(gb);
        }
        __syncthreads(); /* k of token j in ks */
        if (warp == 0) { /* k.q */
            float kk[4];
            lk_sld<LIN_DT_F32, 4>(ks, (int64_t)j * K + 4 * lane, kk);
            const float d = lk_w4_dot(kk, o);
            if (lane == 0) dst[okq + j] = d;
        }
    }
    if (live && !p.keep)
#pragma unroll
        for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
}

/* the w4 form serves gdn, conv width 4, K = 128, V % 4 == 0, gsz V <= 768 (8 warps), gsz <= 32 (the gate
 * lanes), x bf16 / f32 and conv weights (+ bias) f32 / bf16, every vector access aligned (x rows, conv state
 * rows, dq) */
static bool lk_dp_w4_ok(const lin_fwd &p) {
    const size_t xe = p.x.dt == LIN_DT_F32 ? 16 : 8, se = p.st_dt == LIN_DT_F32 ? 16 : 8;
    const bool wdt = p.conv_weight.dt == LIN_DT_F32 || p.conv_weight.dt == LIN_DT_BF16;
    return p.kind == LIN_GDN && p.conv_w == LK_DP_W4 && p.K == LIN_TC_K && p.V % 4 == 0 &&
           p.gsz * p.V <= (LK_DP_W4_NTMAX / 32 - 2) * 128 && p.gsz <= 32 && (p.x.dt == LIN_DT_BF16 || p.x.dt == LIN_DT_F32) && wdt &&
           (!p.conv_bias.p || p.conv_bias.dt == p.conv_weight.dt) && p.x_dim % 4 == 0 && p.conv_elems % 4 == 0 &&
           p.dq_per % 4 == 0 && ((uintptr_t)p.x.p % xe) == 0 && ((uintptr_t)p.conv_state % se) == 0 &&
           (!p.keep || ((uintptr_t)p.iconv % se) == 0) && ((uintptr_t)p.conv_weight.p % 16) == 0 &&
           ((uintptr_t)p.conv_bias.p % 16) == 0 && ((uintptr_t)p.dq % 16) == 0;
}

template <int SDT, int XDT>
static void (*lk_dp_w4_pick(int wdt))(lin_fwd) {
    return wdt == LIN_DT_F32 ? lin_decode_prep_w4_kernel<SDT, XDT, LIN_DT_F32>
                             : lin_decode_prep_w4_kernel<SDT, XDT, LIN_DT_BF16>;
}

/* p.dq_per set by the caller */
extern "C" int lin_launch_decode_prep(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    cudaStream_t st = (cudaStream_t)stream;
    const dim3 grid((unsigned)p.bs, (unsigned)p.hk); /* lightning: hk = hv, one head per group */
    if (!lk_dp_w4_ok(p)) {
        LK_LAUNCH(lin_decode_prep_kernel, grid, LK_DEC_THREADS,
                  lin_decode_smem_bytes(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr), st, p);
        return (int)cudaGetLastError();
    }
    void (*k)(lin_fwd);
    const int wd = p.conv_weight.dt;
    if (p.st_dt == LIN_DT_F32) k = p.x.dt == LIN_DT_F32 ? lk_dp_w4_pick<LIN_DT_F32, LIN_DT_F32>(wd)
                                                         : lk_dp_w4_pick<LIN_DT_F32, LIN_DT_BF16>(wd);
    else k = p.x.dt == LIN_DT_F32 ? lk_dp_w4_pick<LIN_DT_BF16, LIN_DT_F32>(wd) : lk_dp_w4_pick<LIN_DT_BF16, LIN_DT_BF16>(wd);
    const int nt = 32 * (2 + (p.gsz * p.V + 127) / 128);
    LK_LAUNCH(k, grid, nt, (size_t)p.tpr * LIN_TC_K * sizeof(float), st, p);
    return (int)cudaGetLastError();
}
