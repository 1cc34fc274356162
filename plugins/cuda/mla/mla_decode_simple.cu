/*
 * mla_decode_simple.cu - the obviously-correct MLA kernel: one CTA per (token,
 * head), 128 threads, fp32 throughout, no split.  It runs where the tensor-core
 * kernels do not: fp8 e4m3 pools (exact e4m3 decode x k_scale, or the scale tensor's value), a q dtype that
 * differs from the pool's, and devices whose per-block shared memory holds no
 * mma configuration (SM 8.6 / 8.9 / 12.x: 99 KB); and when asked
 * (SGL_ATTN_MLA_KERNEL=simple), as the reference a fast kernel is compared to.
 *
 * Per chunk of 128 keys: thread i computes the full 576-long dot product of
 * key i, the CTA takes the chunk's max and exp-sum, then every thread adds
 * the chunk's weighted values to its 4 output columns (tid + 128 k).
 * MASK (tree verify): the plan gives each token its request's whole key
 * range and key k counts only where its custom_mask byte is set.
 */
#include "mla_kern_common.cuh"

#define SIMPLE_THREADS 128

GC_DEV float simple_block_max(float v, float *red) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    __syncthreads();
    return v;
}

GC_DEV float simple_block_sum(float v, float *red) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (red[0] + red[1]) + (red[2] + red[3]);
    __syncthreads();
    return v;
}

template <int QDT, int KDT, int MASK>
__global__ __launch_bounds__(SIMPLE_THREADS) void mla_simple_kernel(mla_fwd_args a) {
    __shared__ float sq[MLA_D_QK];
    __shared__ float sp[SIMPLE_THREADS];
    __shared__ int64_t sslot[SIMPLE_THREADS];
    __shared__ float red[4];
    const int tid = threadIdx.x;
    const int64_t tok = blockIdx.x, h = blockIdx.y;
    if (tok >= mla_hdr(a)->n_tokens || tok >= a.num_tokens) return;
    const mla_tok ti = mla_toks(a)[tok];
    const int64_t row = mla_pool_row(a, ti.b);
    const int64_t qrow = tok * a.hq + h;
    const size_t kv_elem = KDT == MLA_DT_FP8 ? 1 : 2;
    /* fp8: the scale tensor, read here so a graph replays the engine's current value */
    const float k_scale = KDT == MLA_DT_FP8 && a.k_scale_t ? __ldg(a.k_scale_t) : a.k_scale;
    const char *pool = (const char *)a.pool;

    for (int d = tid; d < MLA_D_QK; d += SIMPLE_THREADS)
        sq[d] = d < MLA_D_V ? mla_q_elem<QDT>(a.q, tok * a.q_ts + h * a.q_hs + d)
                            : mla_q_elem<QDT>(a.q_rope, tok * a.qr_ts + h * a.qr_hs + (d - MLA_D_V));
    /* tree verify: this token's mask row (n_keys = its request's seq_len), in
     * shared memory so it holds no registers through the key loop */
    __shared__ int64_t mrow;
    if (MASK && tid == 0) mrow = mla_idx(a.mask_indptr, ti.b) + (int64_t)ti.j * ti.n_keys;
    __syncthreads();

    float m = MLA_M_INIT, l = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < ti.n_keys; k0 += SIMPLE_THREADS) {
        const int key = k0 + tid;
        float s = -INFINITY;
        int64_t slot = 0;
        if (key < ti.n_keys && (!MASK || mla_mask_at(a, mrow + key))) {
            slot = mla_slot(a, row, key);
            const void *kr = pool + slot * MLA_D_QK * kv_elem;
            float dot = 0.f;
            for (int d = 0; d < MLA_D_QK; d++) dot += sq[d] * mla_kv_elem<KDT>(kr, d, k_scale);
            s = dot * a.scale_log2;
        }
        sslot[tid] = slot;
        const float m_new = fmaxf(m, simple_block_max(s, red));
        const float p = gc_exp2(s - m_new); /* masked: exp2(-inf) = 0 */
        sp[tid] = p;
        const float alpha = gc_exp2(m - m_new);
        l = l * alpha + simple_block_sum(p, red); /* its barriers publish sp / sslot */
        const int n = ti.n_keys - k0 < SIMPLE_THREADS ? ti.n_keys - k0 : SIMPLE_THREADS;
#pragma unroll
        for (int c = 0; c < 4; c++) acc[c] *= alpha;
        for (int j = 0; j < n; j++) {
            const void *vr = pool + sslot[j] * MLA_D_QK * kv_elem;
            const float pj = sp[j];
#pragma unroll
            for (int c = 0; c < 4; c++)
                acc[c] += pj * mla_kv_elem<KDT>(vr, tid + SIMPLE_THREADS * c, k_scale);
        }
        m = m_new;
        __syncthreads(); /* sp / sslot are rewritten next chunk */
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    uint16_t *out = (uint16_t *)a.out + qrow * MLA_D_V;
#pragma unroll
    for (int c = 0; c < 4; c++) out[tid + SIMPLE_THREADS * c] = mla_from_f32<QDT>(acc[c] * inv);
}

template <int QDT, int KDT> static int launch_simple_t(const mla_fwd_args *a) {
    if (a->num_tokens <= 0 || a->hq <= 0) return 0;
    dim3 grid((unsigned)a->num_tokens, (unsigned)a->hq);
    if (a->mask)
        mla_simple_kernel<QDT, KDT, 1><<<grid, SIMPLE_THREADS, 0, (cudaStream_t)a->stream>>>(*a);
    else
        mla_simple_kernel<QDT, KDT, 0><<<grid, SIMPLE_THREADS, 0, (cudaStream_t)a->stream>>>(*a);
    return (int)cudaGetLastError();
}

extern "C" int mla_launch_simple(const mla_fwd_args *a) {
    if (a->q_dt == MLA_DT_BF16) {
        if (a->kv_dt == MLA_DT_BF16) return launch_simple_t<MLA_DT_BF16, MLA_DT_BF16>(a);
        if (a->kv_dt == MLA_DT_FP8) return launch_simple_t<MLA_DT_BF16, MLA_DT_FP8>(a);
    } else if (a->q_dt == MLA_DT_F16) {
        if (a->kv_dt == MLA_DT_F16) return launch_simple_t<MLA_DT_F16, MLA_DT_F16>(a);
        if (a->kv_dt == MLA_DT_FP8) return launch_simple_t<MLA_DT_F16, MLA_DT_FP8>(a);
    }
    return (int)cudaErrorInvalidValue;
}
