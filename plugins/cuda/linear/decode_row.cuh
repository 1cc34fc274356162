/* decode_row.cuh - the stream decode's state step of one tile of rows, run by
 * lin_decode_stream_kernel (decode_stream.cu); its xor-butterfly row sum is
 * also the fused decode's (decode_fused.cu), so both reduce in one order.
 *
 * A tile is RT = 4 warps x NLD x RPI rows of one (request, value head); lane
 * `lane` of warp `warp` holds CPL consecutive channels (from cc) of rows
 * warp * RPW + l * RPI + sub, l < NLD, in s[l] (fp32 rows of 128 = 32 lanes x
 * 4, bf16 = 16 lanes x 8).  Per token, in this order:
 *   delta:  m = s.(e k), sq = s.(e q), u = beta (v - m), s = e s + u k,
 *           o = scale (sq + u k.q)
 *   declin: s = e s + v k, o = scale s.q (+ D x for mamba2)
 * the operands read from decode_operands.cuh's layout of the tile's (request,
 * key head group). */
#ifndef SGL_LIN_DECODE_ROW_CUH
#define SGL_LIN_DECODE_ROW_CUH

#include "kernel_common.cuh"

#define LK_ROWS_THREADS 128 /* 4 warps per tile */

template <int SDT, int NLD> struct lk_rows {
    static constexpr int K = LIN_TC_K, ESZ = SDT == LIN_DT_F32 ? 4 : 2, CPL = 16 / ESZ, LPR = K / CPL,
                         RPI = 32 / LPR, RPW = NLD * RPI, RT = 4 * RPW;
};

/* Per row l: a2[l] (and a1[l] when both) summed over the W lanes that hold the row (a butterfly of xor
 * shuffles, W a power of 2), every lane left with the sum; the order of the fused decode's (decode_fused.cu,
 * W = 32) and the stream tile's (W = LPR) reductions */
template <int N, int W>
LK_DEV void lk_rows_xor_sum(float (&a1)[N], float (&a2)[N], bool both) {
#pragma unroll
    for (int o = W / 2; o; o >>= 1)
#pragma unroll
        for (int l = 0; l < N; l++) {
            if (both) a1[l] += gc_shfl_xor(a1[l], o);
            a2[l] += gc_shfl_xor(a2[l], o);
        }
}

/* The n tokens of one tile on this thread's rows s (the new state stored by lk_rows_store).
 * head, jh, r0 and nr (the tile's value head, its index in the group, its first row, its rows) are
 * callables: the stream kernel reads its block indices again at each use rather than holding them in
 * registers (its fp32 tile is at its register budget).  KIND, V, HV, gsz are p.kind,
 * p.V, p.hv, p.gsz read by the caller at its start: read here, after the stream kernel's griddepcontrol.wait
 * (a memory clobber), they are loaded again and the kernel's code changes. */
template <int SDT, int NLD, class FH, class FJ, class FR, class FN>
LK_DEV void lk_rows_steps(const lin_fwd &p, float (&s)[NLD][lk_rows<SDT, NLD>::CPL], const float *op, int n,
                          int slot, int64_t tok0, int KIND, int V, int HV, int gsz, int lane, int warp,
                          FH head, FJ jh, FR R0, FN NR) {
    using D = lk_rows<SDT, NLD>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2;
    const int GC = GCH ? K : 1;
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;
    /* offsets from op (32-bit: fewer registers than eight pointers) */
    const int okv = n * K, okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz * GC,
              osk = obb + n * gsz;

    for (int j = 0; j < n; j++) {
        const int hj = j * gsz + jh();
        float kj[CPL], qj[CPL], ec[CPL];
        lk_sld<LIN_DT_F32, CPL>(op, okv + j * K + cc, kj);
        lk_sld<LIN_DT_F32, CPL>(op, j * K + cc, qj);
        if (GCH) { /* kda: per channel, scalar loads (the layout leaves them unaligned) */
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
            a1[l] = a2[l] = 0.f;
            if (DELTA) {
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    a1[l] += s[l][e] * (ec[e] * kj[e]);
                    a2[l] += s[l][e] * (ec[e] * qj[e]);
                }
            } else {
                const int rl = warp * RPW + l * RPI + sub;
                const float v = rl < NR() ? op[ovv + hj * V + R0() + rl] : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) {
                    s[l][e] = ec[e] * s[l][e] + v * kj[e];
                    a2[l] += s[l][e] * qj[e];
                }
            }
        }
        lk_rows_xor_sum<NLD, LPR>(a1, a2, DELTA);
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int rl = warp * RPW + l * RPI + sub, r = R0() + rl;
            const bool live = rl < NR();
            float out;
            if (DELTA) {
                const float u = live ? beta * (op[ovv + hj * V + r] - a1[l]) : 0.f;
#pragma unroll
                for (int e = 0; e < CPL; e++) s[l][e] = ec[e] * s[l][e] + u * kj[e];
                out = p.scale * (a2[l] + u * kqj);
            } else {
                out = p.scale * a2[l] + (M2 && live ? op[osk + hj * V + r] : 0.f);
            }
            if (live) {
                if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + head()) * V + r, out);
                if (p.keep)
                    lk_sst<SDT, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + ((int64_t)head() * V + r) * K + cc,
                                     s[l]);
            }
        }
    }
}

/* Without keep, this thread's rows s of the tile from row R0 stored to the state at sbase (the slot's value
 * head) */
template <int SDT, int NLD>
LK_DEV void lk_rows_store(const lin_fwd &p, const float (&s)[NLD][lk_rows<SDT, NLD>::CPL], int64_t sbase, int V,
                          int R0, int lane, int warp) {
    using D = lk_rows<SDT, NLD>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW;
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;
    if (!p.keep)
#pragma unroll
        for (int l = 0; l < NLD; l++) {
            const int r = R0 + warp * RPW + l * RPI + sub;
            if (r < V) lk_sst<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
        }
}

#endif
