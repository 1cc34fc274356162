/* token_step.cu - the token-by-token path: plain, obviously-correct kernels
 * that follow the CPU wrappers step by step in float32.  The "simple" variant
 * (kernel=simple) runs every mode through them; the fast variant falls back
 * to them where its kernels do not apply: an extend with float32 activations
 * or K != 128 or V not a multiple of 32 up to 128 (the chunked kernels), a
 * decode / verify with K not 32, 64, 128 or 256 or more tokens per request
 * than the fused decode's shared memory holds.  short_conv has nothing
 * recurrent and always runs here.
 *   token_prep   conv1d + SiLU of every channel of a token, l2norm of q/k,
 *                log-decays and beta (mamba2: dt) -> X, G, B scratch
 *   convstate    the slot's new conv history (verify: after each draft token);
 *                the chunked extend uses it too
 *   token_recur  one block per (request, value head), one thread per state
 *                row, token by token, state read and written in the pool
 *   shortconv    LFM2: C * conv(B * x), no activation */
#include "kernel_common.cuh"

/* Grid: one block per token row. */
__global__ __launch_bounds__(256) void lin_token_prep_kernel(lin_fwd p) {
    const int64_t t = blockIdx.x;
    const int i = p.pl.tok_req[t];
    if (i < 0) return;
    const int slot = p.pl.req_slot[i];
    if (slot < 0) return; /* padding: recur zeroes its output */
    const int64_t tok0 = p.pl.req_tok0[i];
    const int rel = (int)(t - tok0), init = p.pl.req_init[i];
    const int tid = threadIdx.x, nt = blockDim.x;
    float *X = p.X + t * p.conv_dim;
    for (int ch = tid; ch < p.conv_dim; ch += nt) X[ch] = lk_conv_at(p, tok0, rel, ch, slot, init, 1);
    __syncthreads(); /* this block's global writes are visible to it */
    const bool delta = p.kind == LIN_GDN || p.kind == LIN_KDA;
    if (delta && p.l2norm) { /* q heads then k heads: the first 2*HK*K channels */
        const int lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
        for (int vec = warp; vec < 2 * p.hk; vec += nw) {
            float *x = X + (int64_t)vec * p.K, ss = 0.f;
            for (int c = lane; c < p.K; c += 32) ss += x[c] * x[c];
            ss = lk_warp_sum(ss);
            const float inv = 1.f / sqrtf(ss + 1e-6f);
            for (int c = lane; c < p.K; c += 32) x[c] *= inv;
        }
    }
    if (p.kind == LIN_KDA) {
        for (int idx = tid; idx < p.hv * p.K; idx += nt) {
            const int h = idx / p.K;
            const float raw = lk_in(p.a, t * p.hv * p.K + idx) + lk_in(p.dt_bias, idx);
            p.G[t * p.hv * p.K + idx] = -expf(lk_in(p.A_log, h)) * lk_softplus(raw);
        }
    } else {
        for (int h = tid; h < p.hv; h += nt) {
            const float raw = lk_softplus(lk_in(p.a, t * p.hv + h) + lk_in(p.dt_bias, h));
            p.G[t * p.hv + h] = -expf(lk_in(p.A_log, h)) * raw; /* mamba2: raw is dt */
            if (p.kind == LIN_MAMBA2) p.B[t * p.hv + h] = raw;
        }
    }
    if (delta)
        for (int h = tid; h < p.hv; h += nt) p.B[t * p.hv + h] = lk_sigmoid(lk_in(p.b, t * p.hv + h));
}

/* Grid: (request, 256-channel block). */
__global__ __launch_bounds__(256) void lin_convstate_kernel(lin_fwd p) {
    const int i = blockIdx.x, ch = blockIdx.y * blockDim.x + threadIdx.x;
    const int H = p.conv_w - 1;
    if (ch >= p.conv_dim || H <= 0) return;
    const int slot = p.pl.req_slot[i], n = p.pl.req_n[i];
    if (slot < 0 || n <= 0) return;
    const int64_t tok0 = p.pl.req_tok0[i];
    const int init = p.pl.req_init[i];
    const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
    float old[LIN_CONV_W_MAX], nw[LIN_CONV_W_MAX];
#pragma unroll
    for (int j = 0; j < LIN_CONV_W_MAX; j++) old[j] = init && j < H ? lk_sget(p.conv_state, p.st_dt, at + j) : 0.f;
    if (p.keep) { /* the history after each draft token; the main state stays */
        for (int s = 0; s < n; s++) {
            const float x = lk_conv_input(p, tok0 + s, ch);
#pragma unroll
            for (int j = 0; j + 1 < LIN_CONV_W_MAX; j++)
                if (j + 1 < H) old[j] = old[j + 1];
            old[H - 1] = x;
            const int64_t st = ((int64_t)slot * p.steps + s) * p.conv_elems + (int64_t)ch * H;
            for (int j = 0; j < H; j++) lk_sput(p.iconv, p.st_dt, st + j, old[j]);
        }
        return;
    }
    /* the last H inputs of (old history ++ this call's tokens) */
#pragma unroll
    for (int j = 0; j < LIN_CONV_W_MAX; j++) {
        if (j >= H) break;
        const int pos = n - H + j;
        nw[j] = pos >= 0 ? lk_conv_input(p, tok0 + pos, ch) : old[H + pos];
    }
    for (int j = 0; j < H; j++) lk_sput(p.conv_state, p.st_dt, at + j, nw[j]);
}

/* Grid: (request, value head); block: one thread per value row (V rounded up
 * to 32).  Shared memory: q[K], k[K], exp(g)[K]. */
__global__ __launch_bounds__(1024) void lin_token_recur_kernel(lin_fwd p) {
    LK_DYN_SMEM(float, sm);
    float *qs = sm, *ks = sm + p.K, *es = sm + 2 * p.K;
    const int i = blockIdx.x, h = blockIdx.y, r = threadIdx.x;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int K = p.K, V = p.V, HV = p.hv, C = p.conv_dim;
    if (slot < 0) {
        for (int j = 0; r < V && j < n; j++) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h) * V + r, 0.f);
        return;
    }
    const int hk = h / p.gsz;
    const bool delta = p.kind == LIN_GDN || p.kind == LIN_KDA;
    const int64_t row = (int64_t)(h * V + r) * K;
    for (int j = 0; j < n; j++) {
        const int64_t t = tok0 + j;
        __syncthreads(); /* the previous token's q, k, e are no longer read */
        for (int c = r; c < K; c += blockDim.x) {
            const float *X = p.X + t * C;
            if (p.kind == LIN_LIGHTNING) {
                qs[c] = lk_in(p.q, (t * HV + h) * K + c);
                ks[c] = lk_in(p.k, (t * HV + h) * K + c);
                es[c] = expf(-lk_in(p.decay, h));
            } else if (p.kind == LIN_MAMBA2) { /* x [H*P] | B [G*N] | C [G*N] */
                ks[c] = X[(int64_t)HV * V + (int64_t)hk * K + c];
                qs[c] = X[(int64_t)HV * V + (int64_t)p.hk * K + (int64_t)hk * K + c];
                es[c] = expf(p.G[t * HV + h]);
            } else { /* q [HK*K] | k [HK*K] | v [HV*V] */
                qs[c] = X[(int64_t)hk * K + c];
                ks[c] = X[(int64_t)(p.hk + hk) * K + c];
                es[c] = expf(p.kind == LIN_KDA ? p.G[(t * HV + h) * K + c] : p.G[t * HV + h]);
            }
        }
        __syncthreads();
        if (r >= V) continue;
        float v;
        if (p.kind == LIN_LIGHTNING) v = lk_in(p.v, (t * HV + h) * V + r);
        else if (p.kind == LIN_MAMBA2) v = p.B[t * HV + h] * p.X[t * C + (int64_t)h * V + r];
        else v = p.X[t * C + (int64_t)2 * p.hk * K + (int64_t)h * V + r];
        /* verify keeps the state after each token in step j; the main state stays */
        const void *src = p.keep && j > 0 ? p.issm : p.ssm_state;
        const int64_t src_at = (p.keep && j > 0 ? ((int64_t)slot * p.steps + j - 1) : (int64_t)slot) * p.ssm_elems + row;
        void *dst = p.keep ? p.issm : p.ssm_state;
        const int64_t dst_at = (p.keep ? ((int64_t)slot * p.steps + j) : (int64_t)slot) * p.ssm_elems + row;
        const bool zero = j == 0 && !init;
        float o = 0.f;
        if (delta) { /* S' = S diag(e); u = beta (v - S'k); S = S' + u k^T; o = S q */
            float m = 0.f;
            for (int c = 0; c < K; c++) m += (zero ? 0.f : lk_sget(src, p.st_dt, src_at + c)) * es[c] * ks[c];
            const float u = p.B[t * HV + h] * (v - m);
            for (int c = 0; c < K; c++) {
                const float s = (zero ? 0.f : lk_sget(src, p.st_dt, src_at + c)) * es[c] + u * ks[c];
                lk_sput(dst, p.st_dt, dst_at + c, s);
                o += s * qs[c];
            }
        } else { /* S = e S + v k^T; o = S q */
            for (int c = 0; c < K; c++) {
                const float s = es[c] * (zero ? 0.f : lk_sget(src, p.st_dt, src_at + c)) + v * ks[c];
                lk_sput(dst, p.st_dt, dst_at + c, s);
                o += s * qs[c];
            }
        }
        o *= p.scale;
        if (p.kind == LIN_MAMBA2) o += lk_in0(p.D, h) * p.X[t * C + (int64_t)h * V + r];
        lk_st(p.out, p.out_dt, (t * HV + h) * V + r, o);
    }
}

/* Grid: (token row, 256-channel block). */
__global__ __launch_bounds__(256) void lin_shortconv_kernel(lin_fwd p) {
    const int64_t t = blockIdx.x;
    const int ch = blockIdx.y * blockDim.x + threadIdx.x, D = p.conv_dim;
    if (ch >= D) return;
    const int i = p.pl.tok_req[t];
    if (i < 0) return;
    const int slot = p.pl.req_slot[i];
    if (slot < 0) {
        lk_st(p.out, p.out_dt, t * D + ch, 0.f);
        return;
    }
    const int64_t tok0 = p.pl.req_tok0[i];
    const float c = lk_conv_at(p, tok0, (int)(t - tok0), ch, slot, p.pl.req_init[i], 0);
    lk_st(p.out, p.out_dt, t * D + ch, lk_in(p.x, t * 3 * D + D + ch) * c);
}

extern "C" int lin_launch_convstate(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (p.conv_w <= 1 || p.bs <= 0) return 0;
    LK_LAUNCH(lin_convstate_kernel, dim3((unsigned)p.bs, (unsigned)((p.conv_dim + 255) / 256)), 256, 0, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}

extern "C" int lin_launch_token_step(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    cudaStream_t st = (cudaStream_t)stream;
    if (p.T <= 0 || p.bs <= 0) return 0;
    const unsigned cblocks = (unsigned)((p.conv_dim + 255) / 256);
    if (p.kind == LIN_SHORT_CONV)
        LK_LAUNCH(lin_shortconv_kernel, dim3((unsigned)p.T, cblocks), 256, 0, st, p);
    else if (p.kind != LIN_LIGHTNING)
        LK_LAUNCH(lin_token_prep_kernel, (unsigned)p.T, 256, 0, st, p);
    int e = (int)cudaPeekAtLastError();
    if (e) return (int)cudaGetLastError();
    /* after every read of the old history above */
    if ((e = lin_launch_convstate(pp, stream))) return e;
    if (p.kind != LIN_SHORT_CONV) {
        const int threads = (p.V + 31) / 32 * 32;
        LK_LAUNCH(lin_token_recur_kernel, dim3((unsigned)p.bs, (unsigned)p.hv), threads, (size_t)3 * p.K * sizeof(float), st, p);
    }
    return (int)cudaGetLastError();
}
