/* decode_operands.cuh - the operands of one (request, key head group) for the
 * decode / verify step: phase A of the fused decode kernel (decode_fused.cu),
 * shared with the stream decode's general prep kernel (decode_prep.cu).
 *
 * In shared memory sm (lin_decode_smem_bytes): q[n][K] k[n][K] kq[n]
 * v[n][gsz][V] e[n][gsz][gc] beta[n][gsz] (mamba2: + skip[n][gsz][V]).  The
 * causal conv1d + SiLU of every channel the group owns (q, k of its key head,
 * v of its value heads; mamba2: B, C of the group, x of its heads) for the
 * request's n tokens, the slot's conv history updated in place (each channel
 * belongs to exactly one block), l2norm, gates, beta, k.q.  Needs
 * LK_DEC_THREADS threads; ends with a barrier. */
#ifndef SGL_LIN_DECODE_OPERANDS_CUH
#define SGL_LIN_DECODE_OPERANDS_CUH

#include "kernel_common.cuh"

#define LK_DEC_THREADS 256

template <int EPL>
LK_DEV void lk_dec_operands(const lin_fwd &p, float *sm, int grp, int slot, int n, int64_t tok0) {
    constexpr int K = 32 * EPL;
    constexpr int NT = LK_DEC_THREADS;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA;
    const bool GCH = KIND == LIN_KDA;
    const int GC = GCH ? K : 1;
    const int V = p.V, HV = p.hv, gsz = p.gsz, h0 = grp * gsz;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = NT / 32;
    float *qv = sm, *kv = qv + n * K, *kq = kv + n * K, *vv = kq + n, *ee = vv + n * gsz * V;
    float *bb = ee + n * gsz * GC, *sk = bb + n * gsz;
    /* ---- phase A: operands */
    if (KIND != LIN_LIGHTNING) {
        const int W = p.conv_w, H = W - 1, nch = 2 * K + gsz * V;
        for (int idx = tid; idx < nch; idx += NT) {
            int ch, stride;
            float *dst;
            if (idx < 2 * K) {
                const int c = idx % K;
                const bool first = idx < K; /* gdn/kda: q then k; mamba2: B then C */
                if (KIND == LIN_MAMBA2) {
                    ch = HV * V + (first ? 0 : p.hk * K) + grp * K + c;
                    dst = (first ? kv : qv) + c;
                } else {
                    ch = (first ? grp : p.hk + grp) * K + c;
                    dst = (first ? qv : kv) + c;
                }
                stride = K;
            } else {
                const int r2 = idx - 2 * K;
                ch = (KIND == LIN_MAMBA2 ? 0 : 2 * p.hk * K) + h0 * V + r2;
                dst = vv + r2;
                stride = gsz * V;
            }
            const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
            float hist[LIN_CONV_W_MAX];
#pragma unroll
            for (int m = 0; m < LIN_CONV_W_MAX; m++) hist[m] = m < H ? lk_sget(p.conv_state, p.st_dt, at + m) : 0.f;
            const float bias = lk_in0(p.conv_bias, ch);
            for (int j = 0; j < n; j++) {
                const float x = lk_in(p.x, (tok0 + j) * p.x_dim + ch);
                float acc = bias;
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m < H) acc += lk_in(p.conv_weight, (int64_t)ch * W + m) * hist[m];
                acc += lk_in(p.conv_weight, (int64_t)ch * W + H) * x;
#pragma unroll
                for (int m = 0; m + 1 < LIN_CONV_W_MAX; m++)
                    if (m + 1 < H) hist[m] = hist[m + 1];
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m == H - 1) hist[m] = x;
                dst[j * stride] = lk_silu(acc);
                if (p.keep) {
                    const int64_t st = ((int64_t)slot * p.steps + j) * p.conv_elems + (int64_t)ch * H;
#pragma unroll
                    for (int m = 0; m < LIN_CONV_W_MAX; m++)
                        if (m < H) lk_sput(p.iconv, p.st_dt, st + m, hist[m]);
                }
            }
            if (!p.keep) {
#pragma unroll
                for (int m = 0; m < LIN_CONV_W_MAX; m++)
                    if (m < H) lk_sput(p.conv_state, p.st_dt, at + m, hist[m]);
            }
        }
    } else { /* lightning: q, k, v of head h0 from the forward args */
        for (int idx = tid; idx < n * K; idx += NT) {
            const int j = idx / K, c = idx % K;
            qv[idx] = lk_in(p.q, ((tok0 + j) * HV + h0) * K + c);
            kv[idx] = lk_in(p.k, ((tok0 + j) * HV + h0) * K + c);
        }
        for (int idx = tid; idx < n * V; idx += NT) {
            const int j = idx / V, r = idx % V;
            vv[idx] = lk_in(p.v, ((tok0 + j) * HV + h0) * V + r);
        }
    }
    __syncthreads();
    if (DELTA && p.l2norm) {
        for (int vec = warp; vec < 2 * n; vec += nw) {
            float *x = vec < n ? qv + vec * K : kv + (vec - n) * K, ss = 0.f;
#pragma unroll
            for (int e = 0; e < EPL; e++) ss += x[lane * EPL + e] * x[lane * EPL + e];
            ss = lk_warp_sum(ss);
            const float inv = 1.f / sqrtf(ss + 1e-6f);
#pragma unroll
            for (int e = 0; e < EPL; e++) x[lane * EPL + e] *= inv;
        }
    }
    for (int idx = tid; idx < n * gsz; idx += NT) {
        const int j = idx / gsz, h = h0 + idx % gsz;
        const int64_t t = tok0 + j;
        if (KIND == LIN_GDN) {
            const float g = -expf(lk_in(p.A_log, h)) * lk_softplus(lk_in(p.a, t * HV + h) + lk_in(p.dt_bias, h));
            ee[idx] = expf(g);
        } else if (KIND == LIN_MAMBA2) {
            const float dt = lk_softplus(lk_in(p.a, t * HV + h) + lk_in(p.dt_bias, h));
            ee[idx] = expf(-expf(lk_in(p.A_log, h)) * dt);
            bb[idx] = dt;
        } else if (KIND == LIN_LIGHTNING) {
            ee[idx] = expf(-lk_in(p.decay, h));
        }
        if (DELTA) bb[idx] = lk_sigmoid(lk_in(p.b, t * HV + h));
    }
    if (GCH)
        for (int idx = tid; idx < n * gsz * K; idx += NT) {
            const int j = idx / (gsz * K), rem = idx % (gsz * K), h = h0 + rem / K, c = rem % K;
            const int64_t t = tok0 + j;
            const float raw = lk_in(p.a, (t * HV + h) * K + c) + lk_in(p.dt_bias, (int64_t)h * K + c);
            ee[idx] = expf(-expf(lk_in(p.A_log, h)) * lk_softplus(raw));
        }
    __syncthreads();
    if (KIND == LIN_MAMBA2)
        for (int idx = tid; idx < n * gsz * V; idx += NT) {
            const int jh = (idx / V) % gsz;
            const float x = vv[idx];
            sk[idx] = lk_in0(p.D, h0 + jh) * x;
            vv[idx] = bb[idx / V] * x; /* v = dt x */
        }
    if (DELTA)
        for (int j = warp; j < n; j += nw) {
            float d = 0.f;
#pragma unroll
            for (int e = 0; e < EPL; e++) d += kv[j * K + lane * EPL + e] * qv[j * K + lane * EPL + e];
            d = lk_warp_sum(d);
            if (lane == 0) kq[j] = d;
        }
    __syncthreads();
}

/* ---- the w4 form's pieces (gdn, conv width W = 4): a thread owns 4 consecutive channels ch .. ch+3, its
 * history hist[c * H + m] (oldest first per channel), weights wt[c * W + m], bias and x in registers.
 * Run by decode_prep.cu's lin_decode_prep_w4_kernel. */

/* Every load of the 4 channels first: history, weights, bias, the first token's x (zeros where !live:
 * idle lanes stay for the barriers) */
template <int SDT, int XDT, int WDT, int W>
LK_DEV void lk_w4_load(const lin_fwd &p, bool live, int ch, int64_t at, int64_t tok0, float (&hist)[4 * (W - 1)],
                       float (&wt)[4 * W], float (&bias)[4], float (&x)[4]) {
    constexpr int H = W - 1;
    if (live) {
#pragma unroll
        for (int m = 0; m < H; m++) lk_sld<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
        lk_sld<WDT, 4 * W>(p.conv_weight.p, (int64_t)ch * W, wt);
        if (p.conv_bias.p) lk_sld<WDT, 4>(p.conv_bias.p, ch, bias);
        lk_sld<XDT, 4>(p.x.p, tok0 * p.x_dim + ch, x);
    } else {
#pragma unroll
        for (int m = 0; m < 4 * H; m++) hist[m] = 0.f;
#pragma unroll
        for (int m = 0; m < 4 * W; m++) wt[m] = 0.f;
    }
}

/* One token of the conv1d + SiLU on the 4 channels, lk_dec_operands' order (bias, history oldest first, then
 * the newest input), the history moved on by x */
template <int W>
LK_DEV void lk_w4_conv(const float (&bias)[4], const float (&wt)[4 * W], float (&hist)[4 * (W - 1)],
                       const float (&x)[4], float (&o)[4]) {
    constexpr int H = W - 1;
#pragma unroll
    for (int c = 0; c < 4; c++) { /* the 4 channels' histories are 12 consecutive elements */
        float acc = bias[c];
#pragma unroll
        for (int m = 0; m < H; m++) acc += wt[c * W + m] * hist[c * H + m];
        acc += wt[c * W + H] * x[c];
#pragma unroll
        for (int m = 0; m + 1 < H; m++) hist[c * H + m] = hist[c * H + m + 1];
        hist[c * H + H - 1] = x[c];
        o[c] = lk_silu(acc);
    }
}

/* l2norm of a 128-vector held 4 per lane by one warp, lk_dec_operands' order: the lane's 4 squares, then
 * the warp sum */
LK_DEV void lk_w4_l2norm(float (&o)[4]) {
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < 4; c++) ss += o[c] * o[c];
    ss = lk_warp_sum(ss);
    const float inv = 1.f / sqrtf(ss + 1e-6f);
#pragma unroll
    for (int c = 0; c < 4; c++) o[c] *= inv;
}

/* k.q of a 128-vector pair held 4 per lane by one warp, lk_dec_operands' order (the warp's sum) */
LK_DEV float lk_w4_dot(const float (&k)[4], const float (&q)[4]) {
    float d = 0.f;
#pragma unroll
    for (int c = 0; c < 4; c++) d += k[c] * q[c];
    return lk_warp_sum(d);
}

/* gdn's decay gate of one (token, head): e = exp(-exp(A_log) softplus(a + dt_bias)) (beta = sigmoid(b)) */
LK_DEV float lk_gdn_decay(float A_log, float dt_bias, float a) {
    const float g = -expf(A_log) * lk_softplus(a + dt_bias);
    return expf(g);
}

#endif
