/* chunk_segment.cu - the chunked extend's state pass by segments (bf16),
 * for batches of few long requests, where the serial pass (one block per
 * request, value head and row tile) leaves SMs idle: each request is cut into
 * segments of p.seg_chunks chunks (lin_seg_plan, lin_sizing.c, chooses it per
 * call) and
 *   1  lin_chunk_state_kernel<., MODE 1>: segment 0 from its true start, and
 *      every middle segment's zero-start end state Z and state product P (K
 *      x K), all segments at once (chunk_state.cu says how);
 *   2  lin_seg_join_kernel: per (request, value head, 16 state rows), serial
 *      over the segments, S_start(s) = S_start(s - 1) P(s - 1) + Z(s - 1) in
 *      float32, written over Z(s - 1);
 *   3  lin_chunk_state_kernel<., MODE 2>: segments 1 .. from their true
 *      starts at once, storing the per-chunk states Hs and Unew as the
 *      serial pass does (the output kernel is unchanged); the last segment
 *      writes the pool.
 * The rows of S evolve independently (S' = S P_c + U^T KD), which is what
 * lets a product row run the serial pass's code from an identity row. */
#include "chunk_mma.cuh"

#define LK_SJ_THREADS 256
#define LK_SJ_ROWS 16 /* state rows per join block: 8 per thread, one column each */

__global__ __launch_bounds__(LK_SJ_THREADS) void lin_seg_join_kernel(lin_fwd p) {
    __shared__ float Sp[LK_SJ_ROWS][LIN_TC_K]; /* S_start(s - 1), these rows */
    constexpr int K = LIN_TC_K, RT = LK_SJ_ROWS / 2;
    const int i = blockIdx.x, V = p.V, HV = p.hv, ntile = V / LK_SJ_ROWS;
    const int h = blockIdx.y / ntile, r0 = (blockIdx.y % ntile) * LK_SJ_ROWS;
    if (p.pl.req_n[i] <= 0 || p.pl.req_slot[i] < 0) return;
    const int rc0 = p.pl.req_chunk0[i], sc = p.seg_chunks;
    const int nseg = (p.pl.req_nchunk[i] + sc - 1) / sc;
    const int k = threadIdx.x % K, rh = threadIdx.x / K; /* column, half of the rows */
    auto rows = [&](int s) { return p.Zs + (LIN_SEG_SLOT(rc0, i, s, sc) * HV + h) * (int64_t)(V + K) * K; };
    if (nseg < 3) return; /* segment 1 starts from segment 0's true end state as it is */
    {
        const float *z0 = rows(0) + (int64_t)r0 * K;
#pragma unroll
        for (int r = 0; r < RT; r++) Sp[RT * rh + r][k] = z0[(RT * rh + r) * K + k];
    }
    __syncthreads();
    for (int s = 1; s < nseg - 1; s++) {
        float *z = rows(s);
        const float *P = z + (int64_t)V * K;
        float acc[RT];
#pragma unroll
        for (int r = 0; r < RT; r++) acc[r] = z[(int64_t)(r0 + RT * rh + r) * K + k];
#pragma unroll 8
        for (int j = 0; j < K; j++) {
            const float pj = P[j * K + k];
#pragma unroll
            for (int r = 0; r < RT; r++) acc[r] += Sp[RT * rh + r][j] * pj;
        }
        __syncthreads(); /* every thread done reading Sp */
#pragma unroll
        for (int r = 0; r < RT; r++) {
            Sp[RT * rh + r][k] = acc[r];
            z[(int64_t)(r0 + RT * rh + r) * K + k] = acc[r]; /* S_start(s + 1) over Z(s) */
        }
        __syncthreads();
    }
}

/* the join alone */
static int lk_launch_seg_join(const lin_fwd *pp, void *stream) {
    const lin_fwd &p = *pp;
    if (!p.Zs || p.seg_chunks < 1 || p.V % LK_SJ_ROWS) return (int)cudaErrorInvalidValue;
    const dim3 grid((unsigned)p.bs, (unsigned)(p.hv * (p.V / LK_SJ_ROWS)));
    LK_LAUNCH(lin_seg_join_kernel, grid, LK_SJ_THREADS, 0, (cudaStream_t)stream, p);
    return (int)cudaGetLastError();
}

/* bf16 operands; vt 16 or 32; p->Zs, p->seg_chunks >= 1, p->seg_max (segments per request at most) */
extern "C" int lin_launch_chunk_segments(const lin_fwd *pp, int vt, void *stream) {
    const lin_fwd &p = *pp;
    if (!p.Zs || p.seg_chunks < 1 || p.seg_max < 1 || p.V % LK_SJ_ROWS) return (int)cudaErrorInvalidValue;
    int e = lin_launch_chunk_state_mode(pp, vt, 1, stream);
    if (!e && p.seg_max > 2) e = lk_launch_seg_join(pp, stream);
    return e ? e : lin_launch_chunk_state_mode(pp, vt, 2, stream);
}
