/*
 * mla_combine.cu - merge the split-KV partial results of a tile: one warp per
 * row, out = sum_s w_s o_s with w_s = 2^(lse_s - max) / sum 2^(lse_s - max).
 * A split whose rows saw no key has lse = -inf and weight 0.  The grid covers
 * the plan's capacity in graph mode; CTAs past the planned tiles return.
 */
#include "mla_kern_common.cuh"

#define COMB_WARPS 4

template <int QDT> __global__ __launch_bounds__(COMB_WARPS * 32) void mla_combine_kernel(mla_fwd_args a) {
    __shared__ float sw[COMB_WARPS][MLA_MAX_SPLITS];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int c = blockIdx.x;
    if (c >= mla_hdr(a)->n_comb) return;
    const mla_comb cm = mla_combs(a)[c];
    const int r = blockIdx.y * COMB_WARPS + warp;
    if (r >= cm.nrows) return; /* whole warp: no barrier below */
    const int ns = cm.nsplit < MLA_MAX_SPLITS ? cm.nsplit : MLA_MAX_SPLITS;

    float mx = -INFINITY;
    for (int s = lane; s < ns; s += 32) mx = fmaxf(mx, a.part_lse[cm.part0 + (int64_t)s * cm.nrows + r]);
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    for (int s = lane; s < ns; s += 32) {
        float lse = a.part_lse[cm.part0 + (int64_t)s * cm.nrows + r];
        float w = mx == -INFINITY ? 0.f : exp2f(lse - mx);
        sw[warp][s] = w;
        sum += w;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncwarp();
    const float inv = sum > 0.f ? 1.f / sum : 0.f;

    /* lane owns columns 4 * (lane + 32 k), k = 0..3: float4 loads, coalesced. */
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; i++) acc[i] = 0.f;
    for (int s = 0; s < ns; s++) {
        const float w = sw[warp][s];
        if (w == 0.f) continue; /* warp-uniform */
        const float4 *src = (const float4 *)(a.part_o + (cm.part0 + (int64_t)s * cm.nrows + r) * MLA_D_V);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float4 v = __ldcg(src + lane + 32 * k);
            acc[4 * k] += w * v.x;
            acc[4 * k + 1] += w * v.y;
            acc[4 * k + 2] += w * v.z;
            acc[4 * k + 3] += w * v.w;
        }
    }
    uint16_t *out = (uint16_t *)a.out + ((int64_t)cm.q_row0 + r) * MLA_D_V;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint2 v;
        v.x = mla_pack2<QDT>(acc[4 * k] * inv, acc[4 * k + 1] * inv);
        v.y = mla_pack2<QDT>(acc[4 * k + 2] * inv, acc[4 * k + 3] * inv);
        *(uint2 *)(out + 4 * (lane + 32 * k)) = v;
    }
}

extern "C" int mla_launch_combine(const mla_fwd_args *a) {
    if (a->grid_comb <= 0) return 0;
    dim3 grid((unsigned)a->grid_comb, (unsigned)((a->rows_per_tile + COMB_WARPS - 1) / COMB_WARPS));
    cudaStream_t st = (cudaStream_t)a->stream;
    if (a->q_dt == MLA_DT_BF16)
        mla_combine_kernel<MLA_DT_BF16><<<grid, COMB_WARPS * 32, 0, st>>>(*a);
    else
        mla_combine_kernel<MLA_DT_F16><<<grid, COMB_WARPS * 32, 0, st>>>(*a);
    return (int)cudaGetLastError();
}
