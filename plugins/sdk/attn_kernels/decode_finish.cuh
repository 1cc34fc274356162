/*
 * decode_finish.cuh - the end of every split-KV decode block: from the
 * block's state for its KV split, in shared memory as
 *     so[h * D + d]  unnormalised output (relative to sm[h])
 *     sm[h]          running max, log2 domain
 *     sl[h]          running sum
 * either write the output (request not split), or write a partial result and,
 * in the block that finishes last, merge the splits (the "fast combine": no
 * second launch, so it stays graph-capturable).  The last block is found with
 * a per-(request, head-block) counter (hblock: the block's kv head x
 * head-block index, whatever order the grid runs in): every block fences its
 * partial, then bumps the counter; the one that sees nsplit - 1 merges and
 * re-arms it to 0.
 * FM (cuda_attn's 16-bit register-fed decode): the merging block puts each
 * head's split weights, normalised, in a shared table first (one pass over
 * the LSEs, ATTN_FM_SPLITS splits and ATTN_FM_HEADS heads at most: the loop
 * below serves more), then reads the partial outputs four floats a load with
 * the splits unrolled by 8, so a thread's loads are in flight together instead of
 * one dependent LSE and output read per element and split.
 * Sinks join the denominator here, once.  The LSE output (p.lse set) is
 * written here too, from the same (m, l) or the splits' merge, sinks
 * excluded (attn_lse_ln).  Portable.
 */
#ifndef SGL_ATTN_KERNELS_DECODE_FINISH_CUH
#define SGL_ATTN_KERNELS_DECODE_FINISH_CUH

#include "common.cuh"

#define ATTN_FM_SPLITS 64
#define ATTN_FM_HEADS 16

/* gc_ld_cg's four floats at a 16-byte-aligned address in one load (FM). */
GC_DEV float4 attn_ld_cg4(const float *p) {
#ifdef GC_HIP
    const volatile float *v = p;
    return make_float4(v[0], v[1], v[2], v[3]);
#else
    return __ldcg((const float4 *)p);
#endif
}

template <int DT, int D, bool FM = false>
GC_DEV void attn_decode_finish(const attn_fwd &p, const attn_decode_item &it, int qh0, int nh,
                               const float *so, const float *sm, const float *sl, int hblock) {
    const int tid = threadIdx.x, nt = blockDim.x;
    __shared__ int s_last;
    if (it.nsplit <= 1) {
        for (int i = tid; i < nh * D; i += nt) {
            const int h = i / D, d = i % D;
            float m = sm[h], l = sl[h], w = 1.f;
            if (d == 0 && p.lse) p.lse[(int64_t)it.b * p.hq + qh0 + h] = attn_lse_ln(m, l);
            if (p.sinks) {
                const float sk = p.sinks[qh0 + h] * ATTN_LOG2E;
                const float mm = m > sk ? m : sk;
                w = attn_exp2_sub(m, mm);
                l = l * w + gc_exp2(sk - mm);
            }
            const float o = l > 0.f ? so[i] * w / l : 0.f;
            uint16_t *out = (uint16_t *)p.out + (int64_t)it.b * p.o_stride_t + (int64_t)(qh0 + h) * p.o_stride_h;
            out[d] = gc_from_f32<DT>(o);
        }
        return;
    }
    /* This split's normalised output and log-sum-exp. */
    for (int i = tid; i < nh * D; i += nt) {
        const int h = i / D, d = i % D;
        const float l = sl[h];
        p.part_o[((int64_t)it.part * p.hq + qh0 + h) * D + d] = l > 0.f ? so[i] / l : 0.f;
    }
    for (int h = tid; h < nh; h += nt) {
        const float l = sl[h];
        p.part_lse[(int64_t)it.part * p.hq + qh0 + h] = l > 0.f ? sm[h] + log2f(l) : ATTN_NEG_INF;
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        int *cnt = p.counters + (int64_t)it.b * p.counters_per_req + hblock;
        const int old = atomicAdd(cnt, 1);
        s_last = old == it.nsplit - 1;
        if (s_last) atomicExch(cnt, 0);
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    const int part0 = it.part - it.split;
    if constexpr (FM) {
        if (D % 4 == 0 && it.nsplit <= ATTN_FM_SPLITS && nh <= ATTN_FM_HEADS) {
            __shared__ float s_w[ATTN_FM_HEADS * ATTN_FM_SPLITS]; /* [h][split]: LSE, then weight / den */
            const int ns = it.nsplit;
            for (int i = tid; i < nh * ns; i += nt) {
                const int h = i / ns, s = i % ns;
                s_w[i] = gc_ld_cg(p.part_lse + (int64_t)(part0 + s) * p.hq + qh0 + h);
            }
            __syncthreads();
            for (int h = tid; h < nh; h += nt) {
                float *w = s_w + h * ns;
                float mx = ATTN_NEG_INF;
                for (int s = 0; s < ns; s++) mx = w[s] > mx ? w[s] : mx;
                if (p.lse) { /* the splits' merge without the sink */
                    float sum = 0.f;
                    for (int s = 0; s < ns; s++) sum += attn_exp2_sub(w[s], mx);
                    p.lse[(int64_t)it.b * p.hq + qh0 + h] = attn_lse_ln(mx, sum);
                }
                float sk = ATTN_NEG_INF;
                if (p.sinks) {
                    sk = p.sinks[qh0 + h] * ATTN_LOG2E;
                    mx = sk > mx ? sk : mx;
                }
                float den = p.sinks ? attn_exp2_sub(sk, mx) : 0.f;
                for (int s = 0; s < ns; s++) {
                    w[s] = attn_exp2_sub(w[s], mx);
                    den += w[s];
                }
                const float r = den > 0.f ? 1.f / den : 0.f;
                for (int s = 0; s < ns; s++) w[s] *= r;
            }
            __syncthreads();
            const int64_t pst = (int64_t)p.hq * D; /* floats from one split's partial to the next */
            for (int i = tid; i < nh * D / 4; i += nt) {
                const int h = 4 * i / D, d = 4 * i % D;
                const float *w = s_w + h * ns;
                const float *po = p.part_o + ((int64_t)part0 * p.hq + qh0 + h) * D + d;
                float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
#pragma unroll 8
                for (int s = 0; s < ns; s++) {
                    const float4 v = attn_ld_cg4(po + s * pst);
                    a0 += w[s] * v.x;
                    a1 += w[s] * v.y;
                    a2 += w[s] * v.z;
                    a3 += w[s] * v.w;
                }
                uint16_t *out = (uint16_t *)p.out + (int64_t)it.b * p.o_stride_t + (int64_t)(qh0 + h) * p.o_stride_h + d;
                out[0] = gc_from_f32<DT>(a0);
                out[1] = gc_from_f32<DT>(a1);
                out[2] = gc_from_f32<DT>(a2);
                out[3] = gc_from_f32<DT>(a3);
            }
            return;
        }
    }
    for (int i = tid; i < nh * D; i += nt) {
        const int h = i / D, d = i % D;
        const float *lse = p.part_lse + (int64_t)part0 * p.hq + qh0 + h;
        float mx = ATTN_NEG_INF;
        for (int s = 0; s < it.nsplit; s++) {
            const float v = gc_ld_cg(lse + (int64_t)s * p.hq);
            mx = v > mx ? v : mx;
        }
        if (d == 0 && p.lse) { /* the splits' merge without the sink */
            float sum = 0.f;
            for (int s = 0; s < it.nsplit; s++) sum += attn_exp2_sub(gc_ld_cg(lse + (int64_t)s * p.hq), mx);
            p.lse[(int64_t)it.b * p.hq + qh0 + h] = attn_lse_ln(mx, sum);
        }
        float sk = ATTN_NEG_INF;
        if (p.sinks) {
            sk = p.sinks[qh0 + h] * ATTN_LOG2E;
            mx = sk > mx ? sk : mx;
        }
        float num = 0.f, den = p.sinks ? attn_exp2_sub(sk, mx) : 0.f;
        for (int s = 0; s < it.nsplit; s++) {
            const float w = attn_exp2_sub(gc_ld_cg(lse + (int64_t)s * p.hq), mx);
            den += w;
            num += w * gc_ld_cg(p.part_o + ((int64_t)(part0 + s) * p.hq + qh0 + h) * D + d);
        }
        uint16_t *out = (uint16_t *)p.out + (int64_t)it.b * p.o_stride_t + (int64_t)(qh0 + h) * p.o_stride_h;
        out[d] = gc_from_f32<DT>(den > 0.f ? num / den : 0.f);
    }
}

/* The same for a block whose head-block is blockIdx.y (kernels that do not
 * reorder their grid). */
template <int DT, int D>
GC_DEV void attn_decode_finish(const attn_fwd &p, const attn_decode_item &it, int qh0, int nh,
                               const float *so, const float *sm, const float *sl) {
    attn_decode_finish<DT, D, false>(p, it, qh0, nh, so, sm, sl, (int)blockIdx.y);
}

#endif
