/* lk_decprep3.cu - the stream decode's prep v3 (SGL_ATTN_LIN_DECPREP=v3):
 * v2's per-channel work (lk_decprep2.cu: a thread owns 4 channels, the same
 * formulas in the same order, so the operands are bit-identical) in a
 * persistent grid that pipelines over requests.
 *
 * Why: v2 is 4096 blocks at B 256 (Qwen3-Next), 8 per SM, ~4 waves; each
 * block waits on DRAM once, then computes and stores with nothing in flight,
 * and its blocks fill every SM's registers, so the stream kernel (a PDL
 * dependent) cannot start a block before the last wave: 25 us in front of
 * the 316 us stream, none hidden.  Here LK_DP3_BPS blocks per SM (grid
 * (nbx, hk), nbx ~ BPS * SMs / hk), each keeping one key head group and
 * walking requests bx, bx + nbx, ...:
 *  - the group's weights, bias, A_log and dt_bias are loaded once per block;
 *  - the plan words and first-token gate inputs (a, b) of all its requests
 *    land in shared memory up front (two round trips, once per block);
 *  - item t + LK_DP3_AHEAD's conv history and x lines are prefetched to L2
 *    (prefetch.global.L2: no register, no SM slot held while in flight) and
 *    item t + 1's are loaded into registers before item t's math and stores,
 *    so DRAM sees a steady stream, not wave-by-wave round trips.
 *  Bytes: ~3 TB/s at ~1.5 us loaded latency wants ~4.5 MB in flight, ~34 KB
 *  per SM; an item is ~7 KB of history + x (512 channels x 12 B + 1 KB), so
 *  2 blocks x 4 items ahead = 56 KB per SM of L2 prefetches.
 *  - all blocks are resident at once, so every block's griddepcontrol
 *    trigger fires at the start and the stream kernel's first blocks
 *    (4 per SM beside 2 prep blocks) issue their state loads while the prep
 *    runs (they still wait for the whole prep grid before reading dq).
 * k.q's shared k is double-buffered by barrier parity (the next item's
 * warp 1 may write while warp 0 still reads the last one). */
#include "lk_common.cuh"

#define LK_DP3_W 4       /* conv width served */
#define LK_DP3_NTMAX 256 /* 2 + ceil(gsz V / 128) warps, at most 8 */
#define LK_DP3_BPS 2     /* prep blocks per SM: the rest of the registers stay for stream blocks */
#define LK_DP3_AHEAD 4   /* items prefetched to L2 ahead of the one computed */
#define LK_DP3_SMEM_MAX (48 * 1024)
/* registers: 2 prep blocks of 4 warps at 96 leave 40 K, 4 stream blocks (80 registers x 128 threads);
 * on sm_90a only fp32 state with bf16 x (Qwen3-Next) fits 96 without spills, the others take 104 (3) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define LK_DP3_NREG(SDT, XDT) ((SDT) == LIN_DT_F32 && (XDT) == LIN_DT_BF16 ? 96 : 104)
#else
#define LK_DP3_NREG(SDT, XDT) 96
#endif

struct lk_dp3_item { /* a request's plan words, in shared memory */
    int32_t n, slot;
    int64_t tok0;
};

/* L2 prefetch of the line holding a (a hint: no result, no register) */
LK_DEV void lk_dp3_pf(const void *a) {
#if defined(__CUDA_ARCH__) && !defined(LK_EMU)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
#else
    (void)a;
#endif
}

template <int SDT, int XDT, int WDT>
__global__ __maxnreg__(LK_DP3_NREG(SDT, XDT)) void lin_decprep3_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = LK_DP3_W, H = W - 1, SESZ = SDT == LIN_DT_F32 ? 4 : 2;
    LK_DYN_SMEM(float, sm); /* [ni] lk_dp3_item, ks [2][K], the first tokens' a, b [ni][gsz][2] */
    lk_pdl_trigger(); /* at once: every block is resident, so the stream kernel starts beside them */
    const int bx = blockIdx.x, nbx = gridDim.x, grp = blockIdx.y, NT = (int)blockDim.x, tid = threadIdx.x;
    const int ni = (p.bs - bx + nbx - 1) / nbx; /* my requests: bx + t nbx, t < ni */
    lk_dp3_item *it = (lk_dp3_item *)sm;
    float *ks = sm + 4 * ni, *gab = ks + 2 * K; /* 16-byte items: 4 floats each */
    for (int t = tid; t < ni; t += NT) {
        const int i = bx + t * nbx;
        it[t].n = p.pl.req_n[i];
        it[t].slot = p.pl.req_slot[i];
        it[t].tok0 = p.pl.req_tok0[i];
    }
    const int V = p.V, HV = p.hv, HK = p.hk, gsz = p.gsz, h0 = grp * gsz;
    const int lane = tid & 31, warp = tid >> 5;
    /* my 4 channels (v2's mapping): q (warp 0), k (warp 1), v (warps 2..: value channel r2 of the group) */
    const int r2 = 4 * (tid - 64);
    const bool live = warp < 2 || r2 < gsz * V;
    const int ch = warp == 0 ? grp * K + 4 * lane : warp == 1 ? (HK + grp) * K + 4 * lane
                                                              : 2 * HK * K + h0 * V + (live ? r2 : 0);
    /* the group's constants, while the plan words are on their way */
    float wt[4 * W], bias[4] = {0.f, 0.f, 0.f, 0.f};
    if (live) {
        lk_sld<WDT, 4 * W>(p.conv_weight.p, (int64_t)ch * W, wt);
        if (p.conv_bias.p) lk_sld<WDT, 4>(p.conv_bias.p, ch, bias);
    } else {
#pragma unroll
        for (int m = 0; m < 4 * W; m++) wt[m] = 0.f;
    }
    const bool gate = warp == 1 && lane < gsz;
    float gl = 0.f, gd = 0.f;
    if (gate) {
        gl = lk_in(p.A_log, h0 + lane);
        gd = lk_in(p.dt_bias, h0 + lane);
    }
    __syncthreads(); /* the plan words */
    /* every item's first-token gate inputs to shared memory (registers stay for the history pipeline);
     * the barrier that publishes them waits on DRAM once, with item 0's history loads in flight */
    auto gates = [&] {
        for (int idx = tid; idx < ni * gsz; idx += NT) {
            const int t = idx / gsz, g = idx % gsz;
            if (it[t].n > 0 && it[t].slot >= 0) {
                gab[2 * idx] = lk_in(p.a, it[t].tok0 * HV + h0 + g);
                gab[2 * idx + 1] = lk_in(p.b, it[t].tok0 * HV + h0 + g);
            }
        }
        __syncthreads();
    };
    const int xesz = p.x.dt == LIN_DT_F32 ? 4 : 2;
    /* item t's lines to L2: this thread's history (12 elements, at most 2 lines) and x */
    auto prefetch = [&](int t) {
        const int n = it[t].n, slot = it[t].slot;
        if (n <= 0 || slot < 0) return;
        const int64_t tok0 = it[t].tok0;
        if (live) {
            const char *hb = (const char *)p.conv_state + ((int64_t)slot * p.conv_elems + (int64_t)ch * H) * SESZ;
            lk_dp3_pf(hb);
            lk_dp3_pf(hb + 4 * H * SESZ - 1);
            lk_dp3_pf((const char *)p.x.p + (tok0 * p.x_dim + ch) * xesz);
        }
    };
    /* item t's first-token registers: history (oldest first per channel), x */
    auto load = [&](int t, float *hh, float *xx) {
        const int n = it[t].n, slot = it[t].slot;
        const int64_t tok0 = it[t].tok0;
        if (n > 0 && slot >= 0 && live) {
            const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
#pragma unroll
            for (int m = 0; m < H; m++) lk_sld<SDT, 4>(p.conv_state, at + 4 * m, hh + 4 * m);
            lk_sld<XDT, 4>(p.x.p, tok0 * p.x_dim + ch, xx);
        } else {
#pragma unroll
            for (int m = 0; m < 4 * H; m++) hh[m] = 0.f;
#pragma unroll
            for (int c = 0; c < 4; c++) xx[c] = 0.f;
        }
    };
    for (int t = 0; t < LK_DP3_AHEAD && t < ni; t++) prefetch(t);
    float hist[4 * H], x[4];
    if (ni > 0) load(0, hist, x);
    gates();
    int ph = 0; /* barriers passed, mod 2: which half of ks the next token's k goes to */
    for (int t = 0; t < ni; t++) {
        if (t + LK_DP3_AHEAD < ni) prefetch(t + LK_DP3_AHEAD);
        float hn[4 * H], xn[4];
        if (t + 1 < ni) load(t + 1, hn, xn);
        const int i = bx + t * nbx, n = it[t].n, slot = it[t].slot;
        const int64_t tok0 = it[t].tok0;
        if (n > 0 && slot < 0) { /* padding: zero outputs; the stream kernel skips it */
            for (int idx = tid; idx < n * gsz * V; idx += NT) {
                const int j = idx / (gsz * V), rem = idx % (gsz * V);
                lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + rem / V) * V + rem % V, 0.f);
            }
        } else if (n > 0) { /* ---- v2's token loop, unchanged but for ks's half */
            const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
            const int okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz;
            float *dst = p.dq + (int64_t)(i * HK + grp) * p.dq_per;
            for (int j = 0; j < n; j++) {
                if (j > 0 && live) lk_sld<XDT, 4>(p.x.p, (tok0 + j) * p.x_dim + ch, x);
                float o[4];
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    float acc = bias[c];
#pragma unroll
                    for (int m = 0; m < H; m++) acc += wt[c * W + m] * hist[c * H + m];
                    acc += wt[c * W + H] * x[c];
#pragma unroll
                    for (int m = 0; m + 1 < H; m++) hist[c * H + m] = hist[c * H + m + 1];
                    hist[c * H + H - 1] = x[c];
                    o[c] = lk_silu(acc);
                }
                if (live && p.keep) {
                    const int64_t st = ((int64_t)slot * p.steps + j) * p.conv_elems + (int64_t)ch * H;
#pragma unroll
                    for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.iconv, st + 4 * m, hist + 4 * m);
                }
                if (warp < 2) {
                    if (p.l2norm) {
                        float ss = 0.f;
#pragma unroll
                        for (int c = 0; c < 4; c++) ss += o[c] * o[c];
                        ss = lk_warp_sum(ss);
                        const float inv = 1.f / sqrtf(ss + 1e-6f);
#pragma unroll
                        for (int c = 0; c < 4; c++) o[c] *= inv;
                    }
                    lk_sst<LIN_DT_F32, 4>(dst, (int64_t)(warp * n + j) * K + 4 * lane, o);
                    if (warp == 1) lk_sst<LIN_DT_F32, 4>(ks, (int64_t)ph * K + 4 * lane, o);
                } else if (live) {
#pragma unroll
                    for (int c = 0; c < 4; c++) dst[ovv + j * gsz * V + r2 + c] = o[c];
                }
                if (gate) {
                    float ga = gab[2 * (t * gsz + lane)], gb = gab[2 * (t * gsz + lane) + 1];
                    if (j > 0) {
                        ga = lk_in(p.a, (tok0 + j) * HV + h0 + lane);
                        gb = lk_in(p.b, (tok0 + j) * HV + h0 + lane);
                    }
                    const float g = -expf(gl) * lk_softplus(ga + gd);
                    dst[oee + j * gsz + lane] = expf(g);
                    dst[obb + j * gsz + lane] = lk_sigmoid(gb);
                }
                /* k of token j in ks[ph]; warp 1 writes ks[ph ^ 1] next, after this barrier, and
                 * ks[ph] again only after the next one, which warp 0 reaches after its read */
                __syncthreads();
                if (warp == 0) {
                    float kk[4], d = 0.f;
                    lk_sld<LIN_DT_F32, 4>(ks, (int64_t)ph * K + 4 * lane, kk);
#pragma unroll
                    for (int c = 0; c < 4; c++) d += kk[c] * o[c];
                    d = lk_warp_sum(d);
                    if (lane == 0) dst[okq + j] = d;
                }
                ph ^= 1;
            }
            if (live && !p.keep)
#pragma unroll
                for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
        }
        if (t + 1 < ni) {
#pragma unroll
            for (int m = 0; m < 4 * H; m++) hist[m] = hn[m];
#pragma unroll
            for (int c = 0; c < 4; c++) x[c] = xn[c];
        }
    }
}

static int64_t lk_dp3_smem(int64_t ni, int gsz) {
    return ni * (int64_t)sizeof(lk_dp3_item) + (2 * LIN_TC_K + 2 * ni * gsz) * (int64_t)sizeof(float);
}

/* v3 serves v2's shapes (lk_decprep2.cu's lk_dp2_ok: gdn, conv width 4, K = 128, V % 4 == 0,
 * gsz V <= 768, gsz <= 32, x bf16 / f32, conv weights (+ bias) f32 / bf16, aligned vectors) with
 * the plan words and first-token gate inputs of a block's requests in its shared memory */
static bool lk_dp3_ok(const lin_fwd &p, int nbx) {
    const size_t xe = p.x.dt == LIN_DT_F32 ? 16 : 8, se = p.st_dt == LIN_DT_F32 ? 16 : 8;
    const bool wdt = p.conv_weight.dt == LIN_DT_F32 || p.conv_weight.dt == LIN_DT_BF16;
    const int64_t ni = ((int64_t)p.bs + nbx - 1) / nbx;
    return p.dq_prep == 3 && p.kind == LIN_GDN && p.conv_w == LK_DP3_W && p.K == LIN_TC_K && p.V % 4 == 0 &&
           p.gsz * p.V <= (LK_DP3_NTMAX / 32 - 2) * 128 && p.gsz <= 32 && (p.x.dt == LIN_DT_BF16 || p.x.dt == LIN_DT_F32) &&
           wdt && (!p.conv_bias.p || p.conv_bias.dt == p.conv_weight.dt) && p.x_dim % 4 == 0 && p.conv_elems % 4 == 0 &&
           p.dq_per % 4 == 0 && ((uintptr_t)p.x.p % xe) == 0 && ((uintptr_t)p.conv_state % se) == 0 &&
           (!p.keep || ((uintptr_t)p.iconv % se) == 0) && ((uintptr_t)p.conv_weight.p % 16) == 0 &&
           ((uintptr_t)p.conv_bias.p % 16) == 0 && ((uintptr_t)p.dq % 16) == 0 &&
           lk_dp3_smem(ni, p.gsz) <= LK_DP3_SMEM_MAX;
}

template <int SDT, int XDT>
static void (*lk_dp3_pick_w(int wdt))(lin_fwd) {
    return wdt == LIN_DT_F32 ? lin_decprep3_kernel<SDT, XDT, LIN_DT_F32> : lin_decprep3_kernel<SDT, XDT, LIN_DT_BF16>;
}

/* 0: launched; -1: not served (the caller runs v2 or v1); else a cudaError_t.  Grid (nbx, hk): LK_DP3_BPS
 * blocks per SM, at least 2 requests per block (so that small batches pipeline too) */
extern "C" int lin_launch_decprep3(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    const int sms = p.dq_sms > 0 ? p.dq_sms : 1;
    if (p.hk <= 0 || p.hk > LK_DP3_BPS * sms) return -1; /* a block per group would not fit: v2's grid */
    int nbx = LK_DP3_BPS * sms / p.hk;
    nbx = nbx < (p.bs + 1) / 2 ? nbx : (p.bs + 1) / 2;
    if (nbx < 1) nbx = 1;
    if (!lk_dp3_ok(p, nbx)) return -1;
    void (*k)(lin_fwd);
    const int wd = p.conv_weight.dt;
    if (p.st_dt == LIN_DT_F32) k = p.x.dt == LIN_DT_F32 ? lk_dp3_pick_w<LIN_DT_F32, LIN_DT_F32>(wd)
                                                         : lk_dp3_pick_w<LIN_DT_F32, LIN_DT_BF16>(wd);
    else k = p.x.dt == LIN_DT_F32 ? lk_dp3_pick_w<LIN_DT_BF16, LIN_DT_F32>(wd) : lk_dp3_pick_w<LIN_DT_BF16, LIN_DT_BF16>(wd);
    const int nt = 32 * (2 + (p.gsz * p.V + 127) / 128);
    const int ni = (p.bs + nbx - 1) / nbx;
    const size_t smem = (size_t)lk_dp3_smem(ni, p.gsz);
    LK_LAUNCH(k, dim3((unsigned)nbx, (unsigned)p.hk), nt, smem, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
