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
 *  - each thread's conv history and x of item t + NS - 1 go to a ring of NS
 *    stages in shared memory by cp.async before item t's math and stores
 *    (its own pieces only: cp.async.wait_group, no barrier), and item
 *    t + LK_DP3_AHEAD's lines are prefetched to L2 (prefetch.global.L2), so
 *    DRAM sees a steady stream, not wave-by-wave round trips, and no
 *    register holds a byte in flight.
 *  Bytes: ~3 TB/s at ~1.5 us loaded latency wants ~4.5 MB in flight, ~34 KB
 *  per SM; an item is ~7 KB of history + x (512 channels x 12 B + 1 KB), so
 *  2 blocks x 3 items ahead = 42 KB per SM by cp.async (28 KB of ring per
 *  block), L2 prefetches 3 items beyond.
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
#define LK_DP3_NS 4      /* ring stages: items NS - 1 ahead in flight by cp.async */
#define LK_DP3_AHEAD 6   /* items prefetched to L2 ahead of the one computed */
#define LK_DP3_SMEM_MAX (48 * 1024)
/* registers: 2 prep blocks of 4 warps at 96 leave 40 K: 4 fp32 stream blocks (80 x 128 threads);
 * ptxas fits every dtype pair in 92-96 without spills (sm_80, sm_90a) */
#define LK_DP3_NREG 96

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

/* cp.async of N = 8 or 16 bytes (16: .cg, past L1; 8: .ca, the only form of that size) */
template <int N> LK_DEV void lk_dp3_cp(void *dst, const void *src) {
#ifdef LK_EMU
    lk_emu_cp_async_n(dst, src, N);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if (N == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
    else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(N) : "memory");
#else
    memcpy(dst, src, N); /* never launched below SM 8.0 (the plugins build sm_80 and up) */
#endif
}

template <int SDT, int XDT, int WDT>
__global__ __maxnreg__(LK_DP3_NREG) void lin_decprep3_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = LK_DP3_W, H = W - 1, NS = LK_DP3_NS;
    constexpr int SESZ = SDT == LIN_DT_F32 ? 4 : 2, XESZ = XDT == LIN_DT_F32 ? 4 : 2, HB = 4 * SESZ, XB = 4 * XESZ;
    /* the ring [NS][H][NT] history pieces of HB bytes + [NS][NT] x pieces of XB bytes (each thread's own),
     * then [ni] lk_dp3_item, ks [2][K], the first tokens' a, b [ni][gsz][2] */
    LK_DYN_SMEM(unsigned char, ring);
    lk_pdl_trigger(); /* at once: every block is resident, so the stream kernel starts beside them */
    const int bx = blockIdx.x, nbx = gridDim.x, grp = blockIdx.y, NT = (int)blockDim.x, tid = threadIdx.x;
    const int ni = (p.bs - bx + nbx - 1) / nbx; /* my requests: bx + t nbx, t < ni */
    const int SB = NT * (H * HB + XB);            /* a stage's bytes */
    lk_dp3_item *it = (lk_dp3_item *)(ring + NS * SB);
    float *ks = (float *)(it + ni), *gab = ks + 2 * K;
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
    /* every item's first-token gate inputs to shared memory (no register pipeline for them); the
     * barrier that publishes them waits on DRAM once, with items 0 .. NS - 2's copies in flight */
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
    /* item t's lines to L2 (a further LK_DP3_AHEAD - NS + 1 items ahead of the ring): this thread's
     * history (12 elements, at most 2 lines) and x */
    auto prefetch = [&](int t) {
        const int n = it[t].n, slot = it[t].slot;
        if (n <= 0 || slot < 0) return;
        const int64_t tok0 = it[t].tok0;
        if (live) {
            const char *hb = (const char *)p.conv_state + ((int64_t)slot * p.conv_elems + (int64_t)ch * H) * SESZ;
            lk_dp3_pf(hb);
            lk_dp3_pf(hb + 4 * H * SESZ - 1);
            lk_dp3_pf((const char *)p.x.p + (tok0 * p.x_dim + ch) * XESZ);
        }
    };
    /* item t's first-token history (oldest first per channel) and x into ring stage t % NS, then the
     * commit of this thread's group (empty for skipped items: every thread commits one per item) */
    auto issue = [&](int t) {
        if (t < ni && it[t].n > 0 && it[t].slot >= 0 && live) {
            unsigned char *sg = ring + (t % NS) * SB;
            const char *hs = (const char *)p.conv_state + ((int64_t)it[t].slot * p.conv_elems + (int64_t)ch * H) * SESZ;
#pragma unroll
            for (int m = 0; m < H; m++) lk_dp3_cp<HB>(sg + (m * NT + tid) * HB, hs + m * HB);
            lk_dp3_cp<XB>(sg + H * NT * HB + tid * XB, (const char *)p.x.p + (it[t].tok0 * p.x_dim + ch) * XESZ);
        }
        lk_cp_async_commit();
    };
    for (int t = 0; t < LK_DP3_AHEAD && t < ni; t++) prefetch(t);
    for (int t = 0; t < NS - 1; t++) issue(t);
    gates();
    int ph = 0; /* barriers passed, mod 2: which half of ks the next token's k goes to */
    for (int t = 0; t < ni; t++) {
        if (t + LK_DP3_AHEAD < ni) prefetch(t + LK_DP3_AHEAD);
        issue(t + NS - 1); /* into the stage item t - 1 left: only this thread read its pieces there */
        lk_cp_async_wait<NS - 1>(); /* item t's group (this thread's copies) has landed */
        const int i = bx + t * nbx, n = it[t].n, slot = it[t].slot;
        float hist[4 * H], x[4];
        if (n > 0 && slot >= 0 && live) {
            const unsigned char *sg = ring + (t % NS) * SB;
#pragma unroll
            for (int m = 0; m < H; m++) lk_sld<SDT, 4>(sg + (m * NT + tid) * HB, 0, hist + 4 * m);
            lk_sld<XDT, 4>(sg + H * NT * HB + tid * XB, 0, x);
        } else {
#pragma unroll
            for (int m = 0; m < 4 * H; m++) hist[m] = 0.f;
#pragma unroll
            for (int c = 0; c < 4; c++) x[c] = 0.f;
        }
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
    }
    lk_cp_async_wait<0>(); /* nothing of this thread's left in flight (the last groups are empty) */
}

static int64_t lk_dp3_smem(int64_t ni, int gsz, int nt, int sesz, int xesz) {
    return (int64_t)LK_DP3_NS * nt * 4 * ((LK_DP3_W - 1) * sesz + xesz) + ni * (int64_t)sizeof(lk_dp3_item) +
           (2 * LIN_TC_K + 2 * ni * gsz) * (int64_t)sizeof(float);
}

static int lk_dp3_nt(const lin_fwd &p) { return 32 * (2 + (p.gsz * p.V + 127) / 128); }

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
           lk_dp3_smem(ni, p.gsz, lk_dp3_nt(p), p.st_dt == LIN_DT_F32 ? 4 : 2, p.x.dt == LIN_DT_F32 ? 4 : 2) <=
               LK_DP3_SMEM_MAX;
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
    const int nt = lk_dp3_nt(p), ni = (p.bs + nbx - 1) / nbx;
    const size_t smem = (size_t)lk_dp3_smem(ni, p.gsz, nt, p.st_dt == LIN_DT_F32 ? 4 : 2, p.x.dt == LIN_DT_F32 ? 4 : 2);
    LK_LAUNCH(k, dim3((unsigned)nbx, (unsigned)p.hk), nt, smem, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
