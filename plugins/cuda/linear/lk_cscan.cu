/* lk_cscan.cu - SGL_ATTN_LIN_CSTATE=scan: the split state pass
 * (lk_split2.cu) by groups of m = p.cscan_m chunks, so that a long request's
 * 1024-step chain becomes chains of m steps on many blocks plus a short one.
 *
 * Per chunk the pass does Unew = U - W S^T; S' = S diag(eG) + Unew^T KD, i.e.
 *   S' = S P_c + U^T KD,   P_c = diag(eG) - W^T KD   (K x K, independent of V)
 * and the rows of S evolve independently.  So:
 *   1. (MODE 1 of lin_cstate_kernel) every group but each request's last,
 *      all at once, from zero on V + K rows whose last K start as the
 *      identity with U = 0: at the group's end the first V rows are its
 *      zero-start state Z_g, the last K rows its product P_g = prod P_c.
 *      Only that end tile is stored (float32, p.Zs).
 *   2. (lin_cscan_join_kernel) per (request, value head, 8 state rows),
 *      serial over the request's groups: S_{g+1} = S_g P_g + Z_g from the
 *      pool's state (or zero), in float32 on CUDA cores, each group's start
 *      written over its Z_g (slot g holds the start of g + 1; the start of
 *      group 0 goes to the last group's slot, which step 1 leaves unused).
 *   3. (MODE 3) every group from its start state: the serial pass's per-chunk
 *      work (Hs, Unew stored as there: the output kernel is unchanged); the
 *      request's last group writes the pool.  A one-group request is exactly
 *      the serial pass.
 * Precision: steps 1 and 3 are the serial pass's arithmetic (S and P in
 * float32 accumulators, 16-bit operands of the products); P_g, Z_g, the group
 * starts and step 2 are float32.
 * Row tile: p.cscan_vt (64 where V allows it and the device has the shared
 * memory, else 32): W and KD are loaded once per chunk for 64 rows. */
#include "lk_cstate.cuh"

#define LK_CJ_ROWS 8 /* state rows per join block; K = 128 threads, one per column */

__global__ __launch_bounds__(LIN_TC_K) void lin_cscan_join_kernel(lin_fwd p) {
    constexpr int K = LIN_TC_K, R = LK_CJ_ROWS;
    __shared__ float Ss[R][K];
    const int i = blockIdx.x, h = blockIdx.y, v0 = (int)blockIdx.z * R, c = threadIdx.x, m = p.cscan_m;
    const int slot = p.pl.req_slot[i], rn = p.pl.req_nchunk[i];
    if (p.pl.req_n[i] <= 0 || slot < 0 || m <= 0) return;
    const int ng = (rn + m - 1) / m, gbase = p.pl.req_chunk0[i] / m + i;
    if (ng < 2) return; /* one group: step 3 reads the pool itself */
    const int V = p.V, HV = p.hv;
    auto zs = [&](int gi) { return p.Zs + ((int64_t)(gbase + gi) * HV + h) * (V + K) * K; };
    float acc[R];
    {
        float *st0 = zs(ng - 1) + (int64_t)v0 * K; /* the start of group 0 */
        const int64_t sb = (int64_t)slot * p.ssm_elems + ((int64_t)h * V + v0) * K;
#pragma unroll
        for (int r = 0; r < R; r++) {
            acc[r] = p.pl.req_init[i] ? lk_sget(p.ssm_state, p.st_dt, sb + (int64_t)r * K + c) : 0.f;
            Ss[r][c] = acc[r];
            st0[r * K + c] = acc[r];
        }
    }
    __syncthreads();
    for (int gi = 0; gi + 1 < ng; gi++) {
        float *Z = zs(gi) + (int64_t)v0 * K;
        const float *P = zs(gi) + (int64_t)V * K;
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = Z[r * K + c];
#pragma unroll 8
        for (int k = 0; k < K; k++) {
            const float pk = P[k * K + c];
#pragma unroll
            for (int r = 0; r < R; r++) acc[r] = fmaf(Ss[r][k], pk, acc[r]);
        }
        __syncthreads(); /* every thread is done with S_g */
#pragma unroll
        for (int r = 0; r < R; r++) {
            Ss[r][c] = acc[r];
            Z[r * K + c] = acc[r]; /* the start of group gi + 1 */
        }
        __syncthreads();
    }
}

static_assert(lk_s2<32>::SMEM == (int)LIN_CSCAN_SMEM(32) && lk_s2<64>::SMEM == (int)LIN_CSCAN_SMEM(64),
              "LIN_CSCAN_SMEM (lin_params.h, for create) is the group passes' shared memory");

extern "C" int lin_cscan_setup(int vt) {
    const void *k[2] = {vt == 64 ? (const void *)lin_cstate_kernel<LIN_DT_BF16, 64, 4, 1>
                                 : (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 4, 1>,
                        vt == 64 ? (const void *)lin_cstate_kernel<LIN_DT_BF16, 64, 4, 3>
                                 : (const void *)lin_cstate_kernel<LIN_DT_BF16, 32, 4, 3>};
    int e = 0;
    for (int j = 0; j < 2 && !e; j++)
        e = (int)cudaFuncSetAttribute(k[j], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)LIN_CSCAN_SMEM(vt));
    return e;
}

extern "C" int lin_launch_cscan(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    const int vt = p.cscan_vt, m = p.cscan_m, K = LIN_TC_K;
    if (!p.Zs || m < 1 || (vt != 32 && vt != 64) || p.V % vt || p.K != K) return (int)cudaErrorInvalidValue;
    int64_t chunks = (p.T + LIN_CHUNK - 1) / LIN_CHUNK + p.bs; /* >= the plan's chunk count */
    if (chunks > p.max_chunks) chunks = p.max_chunks;
    const unsigned G = (unsigned)(chunks / m + p.bs); /* > every group index (lk_cscan_group) */
    cudaStream_t st = (cudaStream_t)stream;
    void (*k1)(lin_fwd) = vt == 64 ? lin_cstate_kernel<LIN_DT_BF16, 64, 4, 1> : lin_cstate_kernel<LIN_DT_BF16, 32, 4, 1>;
    void (*k3)(lin_fwd) = vt == 64 ? lin_cstate_kernel<LIN_DT_BF16, 64, 4, 3> : lin_cstate_kernel<LIN_DT_BF16, 32, 4, 3>;
    LK_LAUNCH(k1, dim3(G, (unsigned)(p.hv * ((p.V + K) / vt))), LK_S2_THREADS_NP(4), LIN_CSCAN_SMEM(vt), st, p);
    int e = (int)cudaGetLastError();
    if (e) return e;
    void (*kj)(lin_fwd) = lin_cscan_join_kernel;
    LK_LAUNCH(kj, dim3((unsigned)p.bs, (unsigned)p.hv, (unsigned)(p.V / LK_CJ_ROWS)), LIN_TC_K, 0, st, p);
    if ((e = (int)cudaGetLastError())) return e;
    LK_LAUNCH(k3, dim3(G, (unsigned)(p.hv * (p.V / vt))), LK_S2_THREADS_NP(4), LIN_CSCAN_SMEM(vt), st, p);
    return (int)cudaGetLastError();
}
