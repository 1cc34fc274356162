/*
 * mla_kern_common.cuh - device helpers of the MLA kernels: guarded index
 * reads, the plan arrays, 16-bit / fp8 conversions.  CUDA only.
 */
#ifndef SGL_MLA_KERN_COMMON_CUH
#define SGL_MLA_KERN_COMMON_CUH

#include <math.h>
#include <stdint.h>

#include "gpu_compat.h"
#include "mla_kernels.h"
#include "mla_sched.h"

#define MLA_LOG2E 1.4426950408889634f
/* The running max starts finite: exp2(m_old - m_new) is then 1 while a row has
 * seen no key (no -inf - -inf), and a masked score (-inf) gives exactly 0. */
#define MLA_M_INIT (-1e30f)

GC_DEV int64_t mla_clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Element i of an index tensor, i clamped into [0, n). */
GC_DEV int64_t mla_idx(const mla_index &ix, int64_t i) {
    if (ix.n <= 0) return 0;
    i = mla_clamp64(i, 0, ix.n - 1);
    if (ix.shift) return (int64_t)__ldg((const long long *)ix.p + i);
    return (int64_t)__ldg(ix.p + i);
}

/* The req_to_token row of request b, clamped into the tensor.  The rows and
 * entries the planned items read were checked whole before the first
 * attention kernel of the batch (mla_item_check.cu: an item with a bad one
 * attends nothing), so the clamps here only keep a tensor changed after that
 * check inside its bounds; they never move a checked value. */
GC_DEV int64_t mla_pool_row(const mla_fwd_args &a, int b) {
    return mla_clamp64(mla_idx(a.req_pool_indices, b), 0, a.r2t_rows - 1);
}

/* The pool slot of key `col` of req_to_token row `row`, clamped into the pool
 * (see mla_pool_row: a read guard, never a move of a checked entry). */
GC_DEV int64_t mla_slot(const mla_fwd_args &a, int64_t row, int64_t col) {
    col = mla_clamp64(col, 0, a.r2t_cols - 1);
    int64_t s = mla_idx(a.req_to_token, row * a.r2t_cols + col);
    return mla_clamp64(s, 0, a.num_slots - 1);
}

/* Element offset of q row `row` (= token * hq + head) in a tensor of token
 * stride ts and head stride hs (rows count in 32 bits: the plan's q_row0). */
GC_DEV int64_t mla_q_off(int64_t row, int32_t hq, int64_t ts, int64_t hs) {
    const uint32_t t = (uint32_t)row / (uint32_t)hq;
    return (int64_t)t * ts + (int64_t)((uint32_t)row - t * (uint32_t)hq) * hs;
}

/* Tree verify: custom_mask entry i != 0, i clamped into the tensor (its
 * mask_indptr values are the device's; a read guard, as mla_slot's). */
GC_DEV bool mla_mask_at(const mla_fwd_args &a, int64_t i) {
    return __ldg(a.mask + mla_clamp64(i, 0, a.mask_n - 1)) != 0;
}

GC_DEV const mla_plan_hdr *mla_hdr(const mla_fwd_args &a) {
    return (const mla_plan_hdr *)a.plan;
}
GC_DEV const mla_item *mla_items(const mla_fwd_args &a) {
    return (const mla_item *)((const char *)a.plan + a.lay.items);
}
GC_DEV const mla_comb *mla_combs(const mla_fwd_args &a) {
    return (const mla_comb *)((const char *)a.plan + a.lay.comb);
}
GC_DEV const mla_tok *mla_toks(const mla_fwd_args &a) {
    return (const mla_tok *)((const char *)a.plan + a.lay.toks);
}

/* fp8 e4m3 (no inf; 0x7f / 0xff are NaN) to float, exactly. */
GC_DEV float mla_e4m3_to_f32(uint32_t v) {
    uint32_t s = (v & 0x80u) << 24, e = (v >> 3) & 0xfu, m = v & 7u;
    if (e == 0xfu && m == 7u) return __uint_as_float(0x7fc00000u | s);
    if (e == 0) return (s ? -1.f : 1.f) * (float)m * 0.001953125f; /* m * 2^-9 */
    return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
}

/* float to e4m3, round to nearest even, saturating at +-448 (NaN stays NaN). */
GC_DEV uint8_t mla_f32_to_e4m3(float f) {
    uint32_t u = __float_as_uint(f), s = (u >> 24) & 0x80u;
    float a = fabsf(f);
    if (a != a) return (uint8_t)(s | 0x7fu);
    if (a >= 448.f) return (uint8_t)(s | 0x7eu);
    if (a < 0.015625f) { /* below 2^-6: subnormal, steps of 2^-9 */
        float m = rintf(a * 512.f);
        return (uint8_t)(s | (uint32_t)m); /* m == 8 is the smallest normal, 0x08 */
    }
    uint32_t b = __float_as_uint(a);
    uint32_t e = (b >> 23) - 120u, m = b & 0x7fffffu;
    uint32_t r = (e << 3) | (m >> 20);
    uint32_t rest = m & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (r & 1u))) r++;
    if (r > 0x7eu) r = 0x7eu;
    return (uint8_t)(s | r);
}

/* One pool element as float. */
template <int KDT> GC_DEV float mla_kv_elem(const void *row, int i, float k_scale) {
    if (KDT == MLA_DT_FP8) return mla_e4m3_to_f32(((const uint8_t *)row)[i]) * k_scale;
    return gc_to_f32<KDT == MLA_DT_BF16 ? GC_BF16 : GC_F16>(((const uint16_t *)row)[i]);
}

template <int DT> GC_DEV float mla_q_elem(const void *p, int64_t i) {
    return gc_to_f32<DT == MLA_DT_BF16 ? GC_BF16 : GC_F16>(((const uint16_t *)p)[i]);
}

/* float -> 16 bits, round to nearest even; bf16 by the hardware cvt on the
 * GPU (gpu_compat.h's gc_bf16_rn): P is rounded every tile. */
template <int DT> GC_DEV uint16_t mla_from_f32(float f) {
    return DT == MLA_DT_BF16 ? gc_bf16_rn(f) : gc_f32_to_f16(f);
}

/* Two floats to a packed pair of 16-bit values (lo = a). */
template <int DT> GC_DEV uint32_t mla_pack2(float a, float b) {
    if (DT == MLA_DT_BF16) return gc_bf16x2_rn(a, b);
    return (uint32_t)mla_from_f32<DT>(a) | ((uint32_t)mla_from_f32<DT>(b) << 16);
}

#endif
