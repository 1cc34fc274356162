/* decode_fused.cu - the fused decode / verify step of gdn, kda, mamba2 and
 * lightning: one block per (request, key head group), 8 warps, one launch.
 * It runs where the stream decode (decode_stream.cu) does not: K = 32, 64 or
 * 256, and K = 128 with more tokens per request than the pool keeps draft
 * steps for (a verify without keep_intermediate longer than
 * model.spec_tokens: the stream decode's operand scratch is sized for those).
 *
 * Phase A (shared memory; decode_operands.cuh, shared with the stream decode's
 * general prep kernel): the causal conv1d + SiLU of every channel the group
 * owns (q, k of its key head, v of its value heads; mamba2: B, C of the
 * group, x of its heads) for the request's n tokens, the slot's conv history
 * updated in place (each channel belongs to exactly one block, so no other
 * block reads it); l2norm, gates, beta, k.q.
 * Phase B: the state rows of the group's heads stream through registers: a
 * warp holds 4 rows (lane l: columns l*K/32 ..), so each row is read and
 * written once per call whatever n is.  Per token, with e = exp(g):
 *   delta:  m = s.(e k), sq = s.(e q), u = beta (v - m), s = e s + u k,
 *           o = scale (sq + u k.q)                     (= S_new q)
 *   declin: s = e s + v k, o = scale s.q (+ D x for mamba2)
 * Verify with keep writes the state after each token to the step copies and
 * leaves the main state (and conv history) alone. */
#include "decode_operands.cuh"
#include "decode_row.cuh"

#define LK_DEC_RPW 4 /* rows per warp in flight */

/* Rows r0 .. r0+3 of the group's state (rows past R repeat the last: they
 * are computed, never stored); lane l holds columns l*EPL .. */
template <int EPL>
LK_DEV void lk_dec_rows(const lin_fwd &p, int64_t sbase, int h0, int r0, int R, float (*s)[EPL], int *jh, int *vr) {
    const int lane = threadIdx.x & 31, K = 32 * EPL;
#pragma unroll
    for (int q = 0; q < LK_DEC_RPW; q++) {
        const int r = min(r0 + q, R - 1);
        jh[q] = r / p.V;
        vr[q] = r % p.V;
        lk_srow_ld<EPL>(p, p.ssm_state, sbase + ((int64_t)(h0 + jh[q]) * p.V + vr[q]) * K + lane * EPL, s[q]);
    }
}

/* K = 32 * EPL; the kind is a runtime value (uniform branches), which keeps
 * one kernel per K in the binary. */
template <int EPL>
__global__ __launch_bounds__(LK_DEC_THREADS, 2) void lin_decode_fused_kernel(lin_fwd p) {
    constexpr int K = 32 * EPL;
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA;
    const bool GCH = KIND == LIN_KDA;
    const int GC = GCH ? K : 1;
    LK_DYN_SMEM(float, sm);
    const int i = blockIdx.x, grp = blockIdx.y;
    const int n = p.pl.req_n[i];
    if (n <= 0) return;
    const int slot = p.pl.req_slot[i];
    const int64_t tok0 = p.pl.req_tok0[i];
    const int V = p.V, HV = p.hv, gsz = p.gsz, h0 = grp * gsz;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = LK_DEC_THREADS / 32;
    if (slot < 0) { /* padding */
        for (int idx = tid; idx < n * gsz * V; idx += LK_DEC_THREADS) {
            const int j = idx / (gsz * V), rem = idx % (gsz * V);
            lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + rem / V) * V + rem % V, 0.f);
        }
        return;
    }
    float *qv = sm, *kv = qv + n * K, *kq = kv + n * K, *vv = kq + n, *ee = vv + n * gsz * V;
    float *bb = ee + n * gsz * GC, *sk = bb + n * gsz;
    /* The first rows' loads fly while phase A runs (phase A never touches
     * the recurrent state). */
    const int R = gsz * V, stride = nw * LK_DEC_RPW;
    const int64_t sbase = (int64_t)slot * p.ssm_elems;
    float s[LK_DEC_RPW][EPL];
    int jh[LK_DEC_RPW], vr[LK_DEC_RPW];
    if (warp * LK_DEC_RPW < R) lk_dec_rows<EPL>(p, sbase, h0, warp * LK_DEC_RPW, R, s, jh, vr);

    lk_dec_operands<EPL>(p, sm, grp, slot, n, tok0);

    /* ---- phase B: the state rows; the next group's loads fly while this
     * group computes */
    for (int r0 = warp * LK_DEC_RPW; r0 < R; r0 += stride) {
        float nx[LK_DEC_RPW][EPL];
        int njh[LK_DEC_RPW], nvr[LK_DEC_RPW];
        const bool more = r0 + stride < R;
        if (more) lk_dec_rows<EPL>(p, sbase, h0, r0 + stride, R, nx, njh, nvr);
        for (int j = 0; j < n; j++) {
            float kj[EPL], qj[EPL];
#pragma unroll
            for (int e = 0; e < EPL; e++) {
                kj[e] = kv[j * K + lane * EPL + e];
                qj[e] = qv[j * K + lane * EPL + e];
            }
            /* e = exp(g): one per row (scalar gates) or per column (kda, from shared memory) */
            float a1[LK_DEC_RPW], a2[LK_DEC_RPW], e1[LK_DEC_RPW];
#pragma unroll
            for (int q = 0; q < LK_DEC_RPW; q++) {
                const int hj = j * gsz + jh[q];
                const float *ec = ee + hj * K + lane * EPL;
                e1[q] = GCH ? 0.f : ee[hj];
                a1[q] = a2[q] = 0.f;
                if (DELTA) {
#pragma unroll
                    for (int e = 0; e < EPL; e++) {
                        const float ev = GCH ? ec[e] : e1[q];
                        a1[q] += s[q][e] * (ev * kj[e]);
                        a2[q] += s[q][e] * (ev * qj[e]);
                    }
                } else {
                    const float v = vv[hj * V + vr[q]];
#pragma unroll
                    for (int e = 0; e < EPL; e++) {
                        s[q][e] = e1[q] * s[q][e] + v * kj[e];
                        a2[q] += s[q][e] * qj[e];
                    }
                }
            }
            lk_rows_xor_sum<LK_DEC_RPW, 32>(a1, a2, DELTA);
#pragma unroll
            for (int q = 0; q < LK_DEC_RPW; q++) {
                const int hj = j * gsz + jh[q];
                float out;
                if (DELTA) {
                    const float u = bb[hj] * (vv[hj * V + vr[q]] - a1[q]);
                    const float *ec = ee + hj * K + lane * EPL;
#pragma unroll
                    for (int e = 0; e < EPL; e++) s[q][e] = (GCH ? ec[e] : e1[q]) * s[q][e] + u * kj[e];
                    out = p.scale * (a2[q] + u * kq[j]);
                } else {
                    out = p.scale * a2[q] + (KIND == LIN_MAMBA2 ? sk[hj * V + vr[q]] : 0.f);
                }
                if (r0 + q < R) {
                    const int64_t row = (int64_t)(h0 + jh[q]) * V + vr[q];
                    if (lane == q) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + h0 + jh[q]) * V + vr[q], out);
                    if (p.keep) lk_srow_st<EPL>(p, p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + row * K + lane * EPL, s[q]);
                }
            }
        }
        if (!p.keep)
#pragma unroll
            for (int q = 0; q < LK_DEC_RPW; q++)
                if (r0 + q < R)
                    lk_srow_st<EPL>(p, p.ssm_state, sbase + ((int64_t)(h0 + jh[q]) * V + vr[q]) * K + lane * EPL, s[q]);
        if (more)
#pragma unroll
            for (int q = 0; q < LK_DEC_RPW; q++) {
                jh[q] = njh[q];
                vr[q] = nvr[q];
#pragma unroll
                for (int e = 0; e < EPL; e++) s[q][e] = nx[q][e];
            }
    }
}

extern "C" int lin_launch_decode_fused(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (p.T <= 0 || p.bs <= 0) return 0;
    if (p.kind != LIN_GDN && p.kind != LIN_KDA && p.kind != LIN_MAMBA2 && p.kind != LIN_LIGHTNING)
        return (int)cudaErrorInvalidValue;
    const size_t smem = lin_decode_smem_bytes(p.kind, p.K, p.V, p.gsz, p.gc, p.tpr);
    if (smem > LIN_DECODE_SMEM_MAX) return (int)cudaErrorInvalidValue;
    cudaStream_t st = (cudaStream_t)stream;
    dim3 grid((unsigned)p.bs, (unsigned)p.hk); /* lightning: hk = hv, one head per group */
    void (*k)(lin_fwd) = p.K == 32    ? lin_decode_fused_kernel<1>
                         : p.K == 64  ? lin_decode_fused_kernel<2>
                         : p.K == 128 ? lin_decode_fused_kernel<4>
                         : p.K == 256 ? lin_decode_fused_kernel<8>
                                      : nullptr;
    if (!k) return (int)cudaErrorInvalidValue;
    LK_LAUNCH(k, grid, LK_DEC_THREADS, smem, st, p);
    return (int)cudaGetLastError();
}
