/* lk_decode2.cu - the split decode / verify step (SGL_ATTN_LIN_DECODE=split)
 * of gdn, kda, mamba2 and lightning, K = 128: one block per (request, value
 * head, tile of RT state rows), 4 warps, so that many blocks stream the state
 * at once (B = 256, Qwen3-Next: 32k blocks of 16 KB each instead of 4k blocks
 * of 128 KB with a serial phase in front).
 *
 * A thread's whole share of the tile is loaded first (NLD 16-byte loads:
 * fp32 rows of 128 = 32 lanes x 4, bf16 rows = 16 lanes x 8, so the bf16
 * state moves half the bytes in as many instructions), then the block builds
 * its operands while the loads fly: the conv1d + SiLU of q, k of its key head
 * (every block of the key head computes them: 2 K channels) and of its own
 * value rows, l2norm, gates; then per token the same formulas as lk_decode.cu:
 *   delta:  m = s.(e k), sq = s.(e q), u = beta (v - m), s = e s + u k,
 *           o = scale (sq + u k.q)
 *   declin: s = e s + v k, o = scale s.q (+ D x for mamba2)
 *
 * The conv history: a value row's channel belongs to one block, which moves
 * its history on.  The q/k channels of a key head are read by gsz * tiles
 * blocks; each block, when done (at its very end, nothing waits for it),
 * counts itself in cnt[request][key head] with an atomic after a fence; the
 * last one moves those channels' history on (old history ++ this call's
 * inputs, as lin_convstate_kernel) and resets the counter to 0 for the next
 * launch.  Verify with keep writes the step copies (nobody reads them here):
 * the q/k ones from the tile-0 block of the key head's first value head. */
#include "lk_common.cuh"

#define LK_D2_THREADS 128
#define LK_D2_NLD 8 /* 16-byte state loads per thread */

template <int SDT> struct lk_d2 {
    static constexpr int K = LIN_TC_K, ESZ = SDT == LIN_DT_F32 ? 4 : 2, CPL = 16 / ESZ, LPR = K / CPL,
                         RPI = 32 / LPR, RPW = LK_D2_NLD * RPI, RT = 4 * RPW;
};

static_assert(lk_d2<LIN_DT_F32>::RT == LIN_D2_ROWS(LIN_DT_F32) && lk_d2<LIN_DT_BF16>::RT == LIN_D2_ROWS(LIN_DT_BF16),
              "lin_params.h LIN_D2_ROWS and the kernel's tile differ");

/* The conv history of channel ch after this call's n inputs (rows tok0 ..):
 * the last H of (old history ++ inputs), as lin_convstate_kernel. */
LK_DEV void lk_d2_hist_move(const lin_fwd &p, int slot, int64_t tok0, int n, int ch) {
    const int H = p.conv_w - 1;
    const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
    float hist[LIN_CONV_W_MAX];
#pragma unroll
    for (int m = 0; m < LIN_CONV_W_MAX; m++) hist[m] = m < H ? lk_sget(p.conv_state, p.st_dt, at + m) : 0.f;
    for (int j = 0; j < n; j++) { /* the window moves by one per input (selects, no local memory) */
        const float x = lk_in(p.x, (tok0 + j) * p.x_dim + ch);
        float nh[LIN_CONV_W_MAX];
#pragma unroll
        for (int m = 0; m < LIN_CONV_W_MAX; m++)
            nh[m] = m + 1 < H ? hist[m + 1 < LIN_CONV_W_MAX ? m + 1 : m] : m + 1 == H ? x : 0.f;
#pragma unroll
        for (int m = 0; m < LIN_CONV_W_MAX; m++) hist[m] = nh[m];
    }
#pragma unroll
    for (int m = 0; m < LIN_CONV_W_MAX; m++)
        if (m < H) lk_sput(p.conv_state, p.st_dt, at + m, hist[m]);
}

template <int SDT>
__global__ __launch_bounds__(LK_D2_THREADS, SDT == LIN_DT_F32 ? 6 : 3) void lin_decode2_kernel(lin_fwd p) {
    using D = lk_d2<SDT>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = D::RT, NLD = LK_D2_NLD;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA;
    const bool M2 = KIND == LIN_MAMBA2, LIGHT = KIND == LIN_LIGHTNING;
    const int GC = GCH ? K : 1;
    LK_DYN_SMEM(float, sm);
    __shared__ int last_flag;
    const int i = blockIdx.x, h = blockIdx.y, r0 = (int)blockIdx.z * RT;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int V = p.V, HV = p.hv, HK = p.hk, kh = h / p.gsz;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nr = min(RT, V - r0); /* rows of this tile */
    if (slot < 0) { /* padding */
        for (int idx = tid; idx < n * nr; idx += LK_D2_THREADS)
            lk_st(p.out, p.out_dt, ((tok0 + idx / nr) * HV + h) * V + r0 + idx % nr, 0.f);
        return;
    }
    float *qv = sm, *kv = qv + n * K, *kq = kv + n * K, *vv = kq + n, *ee = vv + n * RT, *bb = ee + n * GC;
    float *sk = bb + n; /* mamba2: D x [n][RT] */

    /* ---- the tile's state: every load issued before anything else */
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)h * V * K;
    float s[NLD][CPL];
#pragma unroll
    for (int l = 0; l < NLD; l++) {
        const int r = r0 + warp * RPW + l * RPI + sub;
        if (r < V) {
            lk_sld<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
        } else {
#pragma unroll
            for (int e = 0; e < CPL; e++) s[l][e] = 0.f;
        }
    }

    /* ---- operands: conv + SiLU of q, k (key head kh) and of the tile's value rows */
    const bool qk_steps = p.keep && h % p.gsz == 0 && blockIdx.z == 0; /* writes the q/k step copies */
    if (!LIGHT) {
        const int W = p.conv_w, H = W - 1, nch = 2 * K + nr;
        for (int idx = tid; idx < nch; idx += LK_D2_THREADS) {
            int ch, stride;
            float *dst;
            bool own;
            if (idx < 2 * K) {
                const int c = idx % K;
                const bool first = idx < K; /* gdn/kda: q then k; mamba2: B (k) then C (q) */
                if (M2) {
                    ch = HV * V + (first ? 0 : HK * K) + kh * K + c;
                    dst = (first ? kv : qv) + c;
                } else {
                    ch = (first ? kh : HK + kh) * K + c;
                    dst = (first ? qv : kv) + c;
                }
                stride = K;
                own = qk_steps; /* main history: the last block of the key head, below */
            } else {
                const int r2 = idx - 2 * K;
                ch = (M2 ? 0 : 2 * HK * K) + h * V + r0 + r2;
                dst = vv + r2;
                stride = RT;
                own = true;
            }
            const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
            float hist[LIN_CONV_W_MAX], wt[LIN_CONV_W_MAX];
#pragma unroll
            for (int m = 0; m < LIN_CONV_W_MAX; m++) {
                hist[m] = m < H ? lk_sget(p.conv_state, p.st_dt, at + m) : 0.f;
                wt[m] = m < W ? lk_in(p.conv_weight, (int64_t)ch * W + m) : 0.f;
            }
            const float bias = lk_in0(p.conv_bias, ch);
            for (int j = 0; j < n; j++) {
                const float x = lk_in(p.x, (tok0 + j) * p.x_dim + ch);
                float acc = bias;
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m < H) acc += wt[m] * hist[m];
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m == H) acc += wt[m] * x;
                /* the window moves by one: selects with constant indices (no local memory) */
                float nh[LIN_CONV_W_MAX];
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    nh[m] = m + 1 < H ? hist[m + 1 < LIN_CONV_W_MAX ? m + 1 : m] : m + 1 == H ? x : 0.f;
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++) hist[m] = nh[m];
                dst[j * stride] = lk_silu(acc);
                if (p.keep && own) {
                    const int64_t st = ((int64_t)slot * p.steps + j) * p.conv_elems + (int64_t)ch * H;
#pragma unroll
                    for (int m = 0; m < LIN_CONV_W_MAX; m++)
                        if (m < H) lk_sput(p.iconv, p.st_dt, st + m, hist[m]);
                }
            }
            if (!p.keep && idx >= 2 * K) {
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m < H) lk_sput(p.conv_state, p.st_dt, at + m, hist[m]);
            }
        }
    } else { /* lightning: q, k, v of head h from the forward args */
        for (int idx = tid; idx < n * K; idx += LK_D2_THREADS) {
            const int j = idx / K, c = idx % K;
            qv[idx] = lk_in(p.q, ((tok0 + j) * HV + h) * K + c);
            kv[idx] = lk_in(p.k, ((tok0 + j) * HV + h) * K + c);
        }
        for (int idx = tid; idx < n * nr; idx += LK_D2_THREADS) {
            const int j = idx / nr, r = idx % nr;
            vv[j * RT + r] = lk_in(p.v, ((tok0 + j) * HV + h) * V + r0 + r);
        }
    }
    /* gates of head h (no shared memory read: before the barrier) */
    for (int j = tid; j < n; j += LK_D2_THREADS) {
        const int64_t t = tok0 + j;
        if (KIND == LIN_GDN) {
            const float g = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, t * HV + h) + lk_in(p.dt_bias, h));
            ee[j] = expf(g);
        } else if (M2) {
            const float dt = lk_softplus(lk_in(p.a, t * HV + h) + lk_in(p.dt_bias, h));
            ee[j] = expf(-expf(lk_in(p.A_log, h)) * dt);
            bb[j] = dt;
        } else if (LIGHT) {
            ee[j] = expf(-lk_in(p.decay, h));
        }
        if (DELTA) bb[j] = lk_sigmoid(lk_in(p.b, t * HV + h));
    }
    if (GCH)
        for (int idx = tid; idx < n * K; idx += LK_D2_THREADS) {
            const int j = idx / K, c = idx % K;
            const int64_t t = tok0 + j;
            const float raw = lk_in(p.a, (t * HV + h) * K + c) + lk_in(p.dt_bias, (int64_t)h * K + c);
            ee[idx] = expf(-expf(lk_in(p.A_log, h)) * lk_softplus(raw));
        }
    __syncthreads();
    if (DELTA && p.l2norm) {
        for (int vec = warp; vec < 2 * n; vec += LK_D2_THREADS / 32) {
            float *x = vec < n ? qv + vec * K : kv + (vec - n) * K, ss = 0.f;
#pragma unroll
            for (int e = 0; e < K / 32; e++) ss += x[lane + 32 * e] * x[lane + 32 * e];
            ss = lk_warp_sum(ss);
            const float inv = 1.f / sqrtf(ss + 1e-6f);
#pragma unroll
            for (int e = 0; e < K / 32; e++) x[lane + 32 * e] *= inv;
        }
    }
    if (M2)
        for (int idx = tid; idx < n * nr; idx += LK_D2_THREADS) {
            const int j = idx / nr, r = idx % nr;
            const float x = vv[j * RT + r];
            sk[j * RT + r] = lk_in0(p.D, h) * x;
            vv[j * RT + r] = bb[j] * x; /* v = dt x */
        }
    __syncthreads();
    if (DELTA)
        for (int j = warp; j < n; j += LK_D2_THREADS / 32) {
            float d = 0.f;
#pragma unroll
            for (int e = 0; e < K / 32; e++) d += kv[j * K + lane + 32 * e] * qv[j * K + lane + 32 * e];
            d = lk_warp_sum(d);
            if (lane == 0) kq[j] = d;
        }
    __syncthreads();

    /* ---- the recurrence over the request's tokens */
    for (int j = 0; j < n; j++) {
        float kj[CPL], qj[CPL], ec[CPL];
#pragma unroll
        for (int e = 0; e < CPL; e++) {
            kj[e] = kv[j * K + cc + e];
            qj[e] = qv[j * K + cc + e];
            ec[e] = GCH ? ee[j * K + cc + e] : ee[j];
        }
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
                const float v = rl < nr ? vv[j * RT + rl] : 0.f;
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
            const int rl = warp * RPW + l * RPI + sub, r = r0 + rl;
            const bool live = rl < nr;
            float out;
            if (DELTA) {
                const float u = live ? bb[j] * (vv[j * RT + rl] - a1[l]) : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) s[l][e] = ec[e] * s[l][e] + u * kj[e];
                out = p.scale * (a2[l] + u * kq[j]);
            } else {
                out = p.scale * a2[l] + (M2 && live ? sk[j * RT + rl] : 0.f);
            }
            if (live) {
                if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h) * V + r, out);
                if (p.keep)
                    lk_sst<SDT, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + ((int64_t)h * V + r) * K + cc,
                                     s[l]);
            }
        }
    }
    if (!p.keep)
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int r = r0 + warp * RPW + l * RPI + sub;
            if (r < V) lk_sst<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
        }

    /* ---- the q/k conv history of key head kh: the last of its blocks moves it on */
    if (LIGHT || p.keep || p.conv_w <= 1) return;
    __syncthreads(); /* every read of the old history in this block is done */
    if (tid == 0) {
        const int total = p.gsz * (int)gridDim.z;
        __threadfence();
        last_flag = atomicAdd(&p.cnt[i * HK + kh], 1) == total - 1;
        __threadfence();
    }
    __syncthreads();
    if (!last_flag) return;
    for (int idx = tid; idx < 2 * K; idx += LK_D2_THREADS) {
        const int c = idx % K;
        const int ch = M2 ? HV * V + (idx < K ? 0 : HK * K) + kh * K + c : (idx < K ? kh : HK + kh) * K + c;
        lk_d2_hist_move(p, slot, tok0, n, ch);
    }
    if (tid == 0) p.cnt[i * HK + kh] = 0;
}

extern "C" int lin_launch_decode2(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (p.T <= 0 || p.bs <= 0) return 0;
    if ((p.kind != LIN_GDN && p.kind != LIN_KDA && p.kind != LIN_MAMBA2 && p.kind != LIN_LIGHTNING) || p.K != LIN_TC_K)
        return (int)cudaErrorInvalidValue;
    const int RT = LIN_D2_ROWS(p.st_dt);
    const size_t smem = lin_decode2_smem_bytes(p.kind, p.K, RT, p.gc, p.tpr);
    if (smem > LIN_DECODE_SMEM_MAX) return (int)cudaErrorInvalidValue;
    dim3 grid((unsigned)p.bs, (unsigned)p.hv, (unsigned)((p.V + RT - 1) / RT));
    if (p.st_dt == LIN_DT_BF16) LK_LAUNCH(lin_decode2_kernel<LIN_DT_BF16>, grid, LK_D2_THREADS, smem, (cudaStream_t)stream, p);
    else LK_LAUNCH(lin_decode2_kernel<LIN_DT_F32>, grid, LK_D2_THREADS, smem, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
