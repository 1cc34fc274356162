/* chunk_prep_stream.cu - the chunked extend's prep for gdn, kda and mamba2 with
 * conv width 4 and 16-byte bf16 x rows as a stream along time: q / k / v
 * [T][heads][128] 16-bit for the UT, state and output kernels (or the fused
 * chunk kernel); mamba2 (the M2 instance) also the skip D x in float32, or,
 * for the fused phase 2's group form, x and dt in place of dt x and the skip.
 *
 * Why: where a block has one chunk's 64 tokens of one head tile (the prep
 * this one replaced, docs/lab/levers.md), it waits on its plan words, then on its 7 input rows per thread (3 of
 * them re-read history), then on a barrier for the weights, then computes and
 * stores with nothing in flight, and 117 registers x 256 threads leave 2
 * blocks (16 warps) per SM: latency-bound at a fifth of DRAM.
 *
 * Here a group of 16 lanes owns one 128-channel head tile (q head, k head,
 * value head) over a run of LK_PS_RUN tokens of one chunk; lane o owns
 * channels 8o .. 8o+7, one 16-byte x row per token, read once, and walks the
 * run in order with the conv window (the 3 inputs before the token) in
 * registers and the conv weights in registers for the whole run.  The loads
 * of the next LK_PS_DEPTH tokens (x rows, beta's b) stay in flight in a
 * register ring while the current token computes, so every warp keeps
 * DEPTH x 512 bytes in flight from its first token to its last.  No shared
 * memory and no barrier.  The window's history is the slot's conv state at a
 * request's first token (zeros without a prefix), else the 3 x rows before
 * the run (one re-read per run: 3 / LK_PS_RUN of the loads, L2 hits).
 *
 * A value tile is 128 channels: one head where V is not 64 (lanes past V
 * idle), two heads at V = 64 (lanes 0-7 the first, 8-15 the second, each with
 * its own scale), so mamba2's and gdn's 64-wide heads leave no lane idle.
 *
 * Grid: groups (run, tile) in run-major order, tiles padded to an even count,
 * 8 groups per 128-thread block, so a warp's two groups share a run (every
 * exit and the loop are warp-uniform) and a q / k warp never holds a value
 * tile (the butterfly's shuffles see all 32 lanes).  A run never crosses a
 * chunk, so it never crosses a request.
 *
 * Same operations in the same order as the general prep: conv = bias, then the
 * taps oldest first (acc += w * x); SiLU; for q / k the sum of the lane's 8
 * squares in channel order, the 16-lane butterfly (8, 4, 2, 1), 1 / sqrtf;
 * for the values sigmoid(b) * conv; 16-bit stores of 8 channels. */
#include "chunk_mma.cuh"

#define LK_PS_THREADS 128
#define LK_PS_GROUPS (LK_PS_THREADS / 16) /* 16-lane groups per block */
#define LK_PS_RUN 32                      /* tokens per run: half a chunk */
#define LK_PS_DEPTH 8                     /* tokens whose x rows are in flight ahead of the one computed */
#define LK_PS_MINB 4                      /* blocks per SM the registers must allow */

static_assert(LIN_CHUNK % LK_PS_RUN == 0, "runs tile a chunk");
static_assert(LK_PS_RUN == 32, "the values' sigmoid(b): two tokens per lane of a 16-lane group");
static_assert(LK_PS_GROUPS % 2 == 0, "a warp's two groups share a run");
static_assert(LK_PS_RUN % LK_PS_DEPTH == 0, "the loop's unrolled body is the ring");

/* value heads a 128-channel value tile holds (docs above) */
GC_HD int lk_ps_heads_per_tile(int V) { return V == 64 ? 2 : 1; }
/* q and k tiles, then the value tiles */
GC_HD int lk_ps_tiles(int HK, int HV, int V) {
    const int vpt = lk_ps_heads_per_tile(V);
    return 2 * HK + (HV + vpt - 1) / vpt;
}

/* 8 bf16 of a 16-byte row -> floats (exact) */
LK_DEV void lk_ps_unpack(const uint4 v, float f[8]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
        f[2 * q] = gc_bf16_to_f32((uint16_t)(w[q] & 0xffffu));
        f[2 * q + 1] = gc_bf16_to_f32((uint16_t)(w[q] >> 16));
    }
}

template <int OT, bool M2 = false> /* M2: mamba2's layout, scale and skip */
__global__ __launch_bounds__(LK_PS_THREADS, LK_PS_MINB) void lin_chunk_prep_stream_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, W = 4, H = W - 1, RUN = LK_PS_RUN, D = LK_PS_DEPTH, RPC = LIN_CHUNK / RUN;
    /* the ring: x rows of tokens u .. u + D - 1 of the run, each thread's own 16 bytes (its copies, its
     * waits, its reads: no barrier) */
    __shared__ __align__(16) uint4 ring[D][LK_PS_THREADS];
    const int HV = p.hv, HK = p.hk, V = p.V;
    const int vpt = lk_ps_heads_per_tile(V), nt = lk_ps_tiles(HK, HV, V), ntp = nt + (nt & 1);
    const int tid = threadIdx.x, lane = tid & 31, o = tid & 15;
    const int64_t grp = (int64_t)blockIdx.x * LK_PS_GROUPS + (tid >> 4);
    const int64_t run = grp / ntp;
    const int y = (int)(grp % ntp);
    if (run >= (int64_t)p.max_chunks * RPC) return; /* the grid's last block (warp-uniform: a warp is one run) */
    const int j = (int)(run / RPC), tb = (int)(run % RPC) * RUN;
    /* the chunk's plan words at once (the arrays hold max_chunks entries; a stale one past num_chunks is read,
     * not used) */
    const int nc = *p.pl.num_chunks, len = p.pl.chunk_len[j], i = p.pl.chunk_req[j];
    const int64_t ct0 = p.pl.chunk_tok0[j];
    if (j >= nc || tb >= len) return;
    /* which: 0 q, 1 k, 2 values, 3 the padding tile; a warp is all q / k or all values / padding; hh the lane's
     * head, co its first channel in the head */
    const int which = y < HK ? 0 : y < 2 * HK ? 1 : y < nt ? 2 : 3;
    const int hh = which == 0 ? y : which == 1 ? y - HK : (y - 2 * HK) * vpt + (vpt == 2 ? o >> 3 : 0);
    const int co = which >= 2 && vpt == 2 ? 8 * (o & 7) : 8 * o;
    const bool val = which >= 2, vhead = which == 2 && hh < HV; /* a value head (not past HV in the last pair) */
    /* idle lanes (channels past V in a one-head tile, the padding tile, a pair's half past HV) load and store
     * nothing but stay for the values' shuffles */
    const bool live = which < 2 || (vhead && co < V);
    /* mamba2: x [H*P] | B [G*N] | C [G*N]: q = C, k = B; the values dt x and the skip D x */
    const int ch = !live ? 0
                   : M2  ? (which == 0 ? HV * V + HK * K + hh * K : which == 1 ? HV * V + hh * K : hh * V) + co
                         : (which == 0 ? hh * K : which == 1 ? (HK + hh) * K : 2 * HK * K + hh * V) + co;
    const int n = min(RUN, len - tb);
    const int64_t xd = p.x_dim;
    const uint16_t *xs = (const uint16_t *)p.x.p + (ct0 + tb) * xd + ch; /* token u of the run: xs + u xd */

#pragma unroll
    for (int k = 0; k < D; k++) {
        if (k < n && live) gc_cp_async16(&ring[k][tid], xs + (int64_t)k * xd, true);
        lk_cp_async_commit();
    }
    /* the 3 x rows before the run where they are rows of x (kept only when they are the request's) */
    uint4 hx[H];
#pragma unroll
    for (int r = 0; r < H; r++) {
        hx[r] = make_uint4(0u, 0u, 0u, 0u);
        if (live && ct0 + tb - H + r >= 0) {
            LK_ALIGNED(xs + (int64_t)(r - H) * xd, 16);
            hx[r] = *(const uint4 *)(xs + (int64_t)(r - H) * xd);
        }
    }
    /* the values: lane o of a group makes the scale (sigmoid(b); mamba2: dt = softplus(a + dt_bias)) of its head
     * at tokens o and o + 16 of the run (two heads a tile: tokens (o & 7) + 8 q, q < 4); the lane computing token
     * u's values takes it by a shuffle */
    float sb[4] = {0.f, 0.f, 0.f, 0.f};
    auto sb_tok = [&](int q) { return vpt == 2 ? (o & 7) + 8 * q : o + 16 * q; };
    if (vhead)
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (q < 2 * vpt && sb_tok(q) < n) sb[q] = lk_in(M2 ? p.a : p.b, (ct0 + tb + sb_tok(q)) * HV + hh);
    const float dskip = M2 && vhead ? lk_in0(p.D, hh) : 0.f;
    /* the conv weights and biases of the lane's 8 channels, for the whole run */
    float wt[8][W], bias[8];
#pragma unroll
    for (int c = 0; c < 8; c++) {
#pragma unroll
        for (int m = 0; m < W; m++) wt[c][m] = live ? lk_in(p.conv_weight, (int64_t)(ch + c) * W + m) : 0.f;
        bias[c] = live ? lk_in0(p.conv_bias, ch + c) : 0.f;
    }
    const int slot = p.pl.req_slot[i], init = p.pl.req_init[i];
    const int64_t rt0 = p.pl.req_tok0[i];
    if (slot < 0) { /* padding: the outputs are zeroed by phase 2 */
        lk_cp_async_wait_all();
        return;
    }
    const int crel = (int)(ct0 - rt0);
    /* the window: h[0] the oldest; positions before the request read the slot's history (oldest first) when
     * init, else 0 */
    float h[H][8];
#pragma unroll
    for (int r = 0; r < H; r++) {
        const int pos = crel + tb - H + r;
        if (pos >= 0) {
            lk_ps_unpack(hx[r], h[r]);
        } else {
#pragma unroll
            for (int c = 0; c < 8; c++)
                h[r][c] = init && live ? lk_sget(p.conv_state, p.st_dt,
                                                 (int64_t)slot * p.conv_elems + (int64_t)(ch + c) * H + H + pos)
                                       : 0.f;
        }
    }
    if (vhead && M2) {
        const float db = lk_in(p.dt_bias, hh);
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (q < 2 * vpt) sb[q] = lk_softplus(sb[q] + db);
        if (p.grp) { /* the fused phase 2's group form takes dt and makes the gates -e^{A_log} dt itself:
                      * eG [chunk][head][t] */
            float *gv = p.eG + ((int64_t)j * HV + hh) * K + tb;
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (q < 2 * vpt && sb_tok(q) < n) gv[sb_tok(q)] = sb[q];
        }
    } else if (vhead) {
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (q < 2 * vpt) sb[q] = lk_sigmoid(sb[q]);
    }
    uint16_t *dst = (uint16_t *)(which == 0 ? p.Qc : which == 1 ? p.Kc : p.Vc) +
                    (which == 0 || which == 1 ? ((ct0 + tb) * HK + hh) * K : ((ct0 + tb) * HV + hh) * V) + co;
    const int64_t dstride = which < 2 ? (int64_t)HK * K : (int64_t)HV * V;
    const int l2 = p.l2norm && !M2;
    /* D x, float32 (none for the fused phase 2's group form: it makes it from x) */
    float *skip = M2 && vhead && !p.grp ? p.Sk + ((ct0 + tb) * HV + hh) * V + co : NULL;

    for (int u0 = 0; u0 < n; u0 += D) {
#pragma unroll
        for (int k = 0; k < D; k++) {
            const int u = u0 + k;
            if (u < n) {
                lk_cp_async_wait<D - 1>(); /* token u's row has landed */
                float e[8];
                lk_ps_unpack(ring[k][tid], e);
                /* the slot's next token, in flight while this one and the D - 1 after it compute */
                if (u + D < n && live) gc_cp_async16(&ring[k][tid], xs + (int64_t)(u + D) * xd, true);
                lk_cp_async_commit();
                float s[8];
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    float acc = bias[c];
                    acc += wt[c][0] * h[0][c];
                    acc += wt[c][1] * h[1][c];
                    acc += wt[c][2] * h[2][c];
                    acc += wt[c][3] * e[c];
                    s[c] = lk_silu(acc);
                    h[0][c] = h[1][c];
                    h[1][c] = h[2][c];
                    h[2][c] = e[c];
                }
                uint4 v;
                if (!val) { /* q or k: l2norm over the 16 lanes of the head */
                    float inv = 1.f;
                    if (l2) {
                        float ss = 0.f;
#pragma unroll
                        for (int c = 0; c < 8; c++) ss += s[c] * s[c];
#pragma unroll
                        for (int d = 8; d; d >>= 1) ss += gc_shfl_xor(ss, d);
                        inv = 1.f / sqrtf(ss + 1e-6f);
                    }
                    v.x = lk_pack2<OT>(s[0] * inv, s[1] * inv);
                    v.y = lk_pack2<OT>(s[2] * inv, s[3] * inv);
                    v.z = lk_pack2<OT>(s[4] * inv, s[5] * inv);
                    v.w = lk_pack2<OT>(s[6] * inv, s[7] * inv);
                } else { /* beta v; mamba2 dt x, and the skip D x */
                    if (skip && live) {
                        LK_ALIGNED(skip + (int64_t)u * dstride, 16);
                        float4 *sk = (float4 *)(skip + (int64_t)u * dstride);
                        sk[0] = make_float4(dskip * s[0], dskip * s[1], dskip * s[2], dskip * s[3]);
                        sk[1] = make_float4(dskip * s[4], dskip * s[5], dskip * s[6], dskip * s[7]);
                    }
                    /* the group form: x itself (the fused phase 2 takes dt from eG) */
                    const float sc = M2 && p.grp ? 1.f
                                     : vpt == 2 ? gc_shfl(u & 16 ? (u & 8 ? sb[3] : sb[2]) : (u & 8 ? sb[1] : sb[0]),
                                                          (lane & 24) | (u & 7))
                                                : gc_shfl(u & 16 ? sb[1] : sb[0], (lane & 16) | (u & 15));
                    v.x = lk_pack2<OT>(sc * s[0], sc * s[1]);
                    v.y = lk_pack2<OT>(sc * s[2], sc * s[3]);
                    v.z = lk_pack2<OT>(sc * s[4], sc * s[5]);
                    v.w = lk_pack2<OT>(sc * s[6], sc * s[7]);
                }
                if (live) {
                    LK_ALIGNED(dst + (int64_t)u * dstride, 16);
                    *(uint4 *)(dst + (int64_t)u * dstride) = v;
                }
            }
        }
    }
    lk_cp_async_wait_all();
}

/* gdn, kda and mamba2 (with its skip buffer) with conv width 4, bf16 x in 16-byte rows (x_dim a multiple of 8, a
 * 16-byte aligned base), K = 128, V a multiple of 8 up to LIN_TC_VMAX, and the chunked operand buffers */
extern "C" int lin_chunk_prep_stream_serves(const lin_fwd *p) {
    return (p->kind == LIN_GDN || p->kind == LIN_KDA || (p->kind == LIN_MAMBA2 && p->Sk)) && p->conv_w == 4 &&
           p->x.dt == LIN_DT_BF16 && p->x_dim % 8 == 0 && ((uintptr_t)p->x.p & 15) == 0 && p->K == LIN_TC_K &&
           p->V % 8 == 0 && p->V <= LIN_TC_VMAX && p->Qc && p->Kc && p->Vc;
}

/* The grid covers every chunk the plan may make (the plan's count is on the device): runs x the
 * tiles padded to even, in 16-lane groups, 8 a block. */
extern "C" int lin_launch_chunk_prep_stream(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (!lin_chunk_prep_stream_serves(pp)) return (int)cudaErrorInvalidValue;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    if (chunks <= 0) return 0;
    const int64_t nt = lk_ps_tiles(p.hk, p.hv, p.V), groups = chunks * (LIN_CHUNK / LK_PS_RUN) * (nt + (nt & 1));
    const int64_t blocks = (groups + LK_PS_GROUPS - 1) / LK_PS_GROUPS;
    if (blocks > 0x7fffffff) return (int)cudaErrorInvalidValue;
    void (*k0)(lin_fwd) = p.kind == LIN_MAMBA2 ? lin_chunk_prep_stream_kernel<LIN_DT_BF16, true>
                                                : lin_chunk_prep_stream_kernel<LIN_DT_BF16>;
    LK_LAUNCH(k0, dim3((unsigned)blocks), LK_PS_THREADS, 0, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}
