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
 * Sinks join the denominator here, once.  The LSE output (p.lse set) is
 * written here too, from the same (m, l) or the splits' merge, sinks
 * excluded (attn_lse_ln).  Portable.
 */
#ifndef SGL_ATTN_KERNELS_DECODE_FINISH_CUH
#define SGL_ATTN_KERNELS_DECODE_FINISH_CUH

#include "common.cuh"

template <int DT, int D>
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
    attn_decode_finish<DT, D>(p, it, qh0, nh, so, sm, sl, (int)blockIdx.y);
}

#endif
