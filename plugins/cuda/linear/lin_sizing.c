/* lin_sizing.c - the layout of an instance's one device allocation (state
 * pools, plan arrays, scratch of the kernel paths it may take) and which
 * kernel paths fit a model.  Pure C: tests/cuda_linear checks it here. */
#include <string.h>

#include "lin.h"
#include "sdk_text.h"

const char *const lin_variant_names[2] = {"simple", "fast"}; /* LIN_VARIANT_* */

const char *lin_variant_name(int v) { return lin_variant_names[v == LIN_VARIANT_SIMPLE ? 0 : 1]; }

int lin_tc_dims_ok(const lin_dims *d) {
    if (d->kind == SGL_ATTN_HYBRID_SHORT_CONV) return 0;
    return d->dk == LIN_TC_K && d->dv >= 32 && d->dv <= LIN_TC_VMAX && d->dv % 32 == 0;
}

int lin_decode_stream_dims_ok(const lin_dims *d, int n) {
    if (d->kind == SGL_ATTN_HYBRID_SHORT_CONV || n < 1 || n > LIN_DECODE_NMAX || d->dk != LIN_TC_K || d->dv < 1)
        return 0;
    /* the prep kernel is the fused kernel's phase A: its shared memory */
    return lin_decode_smem_bytes(d->kind, d->dk, d->dv, d->gsz, d->gc, n) <= LIN_DECODE_SMEM_MAX;
}

int lin_prep_ut_kind_ok(const lin_dims *d) {
    return d->kind == SGL_ATTN_HYBRID_GDN || d->kind == SGL_ATTN_HYBRID_MAMBA2 || d->kind == SGL_ATTN_HYBRID_LIGHTNING ||
           d->kind == SGL_ATTN_HYBRID_KDA;
}

int lin_decode_fused_dims_ok(const lin_dims *d, int n) {
    if (d->kind == SGL_ATTN_HYBRID_SHORT_CONV || n < 1 || n > LIN_DECODE_NMAX) return 0;
    if (d->dk != 32 && d->dk != 64 && d->dk != 128 && d->dk != 256) return 0;
    return lin_decode_smem_bytes(d->kind, d->dk, d->dv, d->gsz, d->gc, n) <= LIN_DECODE_SMEM_MAX;
}

/* acc += a * b * c bytes, rounded up to 256; 0 on overflow. */
static int add(size_t *acc, size_t *at, size_t a, size_t b, size_t c) {
    size_t n;
    if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n)) return 0;
    if (__builtin_add_overflow(n, (size_t)255, &n)) return 0;
    n &= ~(size_t)255;
    *at = *acc;
    return !__builtin_add_overflow(*acc, n, acc);
}

int lin_layout_compute(lin_layout *L, const lin_dims *d, int32_t max_reqs, int32_t max_tokens, int32_t steps,
                       int variant, int tc_ok, char *err, size_t n) {
    memset(L, 0, sizeof *L);
    if (max_reqs < 1 || max_tokens < 1) {
        sgl_sdk_str(err, n, "max_reqs = %d, max_tokens = %d; expected both >= 1", max_reqs, max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    sgl_sdk_lin_pool pool; /* the state and its per-step verify copies: the SDK's, as the CPU wrappers' */
    int ok = sgl_sdk_lin_pool_of(d, max_reqs, steps, &pool);
    L->max_reqs = max_reqs;
    L->max_tokens = max_tokens;
    L->max_chunks = (int32_t)((max_tokens + LIN_CHUNK - 1) / LIN_CHUNK) + max_reqs;
    L->steps = pool.steps;
    const int recurrent = d->ssm_elems > 0;
    L->need_tc = variant == LIN_VARIANT_FAST && recurrent && tc_ok && lin_tc_dims_ok(d);
    /* The token-by-token path: the simple variant, or whatever the fast one
     * cannot take (f32 activations, dims, too many verify tokens). */
    const int decode_ok = lin_decode_fused_dims_ok(d, L->steps > 0 ? L->steps : 1);
    L->need_simple = recurrent && d->kind != SGL_ATTN_HYBRID_LIGHTNING &&
                     (variant == LIN_VARIANT_SIMPLE || !L->need_tc || !decode_ok);
    /* the stream decode (K = 128) and the chunked extend's prep + UT pair */
    L->need_stream = variant == LIN_VARIANT_FAST && recurrent && d->dk == LIN_TC_K && d->kind != SGL_ATTN_HYBRID_SHORT_CONV;
    L->need_prep_ut = L->need_tc && lin_prep_ut_kind_ok(d);
    const size_t esz = (size_t)d->esz, R = (size_t)max_reqs, T = (size_t)max_tokens;
    const size_t S = (size_t)(L->steps ? L->steps : 1);
    const size_t HV = (size_t)d->hv, K = (size_t)d->dk, V = (size_t)d->dv, CH = (size_t)L->max_chunks;
    size_t acc = 0;
    ok &= add(&acc, &L->conv, (size_t)pool.conv, esz, 1);
    ok &= add(&acc, &L->ssm, (size_t)pool.ssm, esz, 1);
    ok &= add(&acc, &L->iconv, (size_t)pool.iconv, esz, 1);
    ok &= add(&acc, &L->issm, (size_t)pool.issm, esz, 1);
    /* plan arrays, in lin_plan_dev order */
    const size_t plan_len[16] = {R, R, R, R, R, R, T, CH, CH, CH, 1, R, R, 4, 8, R};
    for (int i = 0; i < 16; i++) ok &= add(&acc, &L->plan[i], plan_len[i], 1, sizeof(int32_t));
    const int xconv = d->kind != SGL_ATTN_HYBRID_LIGHTNING && d->kind != SGL_ATTN_HYBRID_SHORT_CONV;
    ok &= add(&acc, &L->X, L->need_simple && xconv ? T : 0, (size_t)d->conv_dim, sizeof(float));
    ok &= add(&acc, &L->G, L->need_simple ? T : 0, HV * (size_t)d->gc, sizeof(float));
    ok &= add(&acc, &L->B, L->need_simple ? T : 0, HV, sizeof(float));
    const int delta = d->kind == SGL_ATTN_HYBRID_GDN || d->kind == SGL_ATTN_HYBRID_KDA;
    const size_t tc = L->need_tc ? T * HV : 0;
    ok &= add(&acc, &L->Wt, delta ? tc : 0, K, 2);
    ok &= add(&acc, &L->QGt, tc, K, 2);
    ok &= add(&acc, &L->KDt, tc, K, 2);
    ok &= add(&acc, &L->Ut, tc, V, 2);
    ok &= add(&acc, &L->Mt, tc, LIN_CHUNK, 2);
    ok &= add(&acc, &L->eG, L->need_tc ? CH * HV : 0, K, sizeof(float));
    ok &= add(&acc, &L->Sk, d->kind == SGL_ATTN_HYBRID_MAMBA2 ? tc : 0, V, sizeof(float));
    ok &= add(&acc, &L->dq, L->need_stream ? R * (size_t)d->hk : 0,
              lin_decode_operands_per(d->kind, d->dk, d->dv, d->gsz, d->gc, (int)S), sizeof(float));
    ok &= add(&acc, &L->Qc, L->need_prep_ut ? T * (size_t)d->hk : 0, K, 2);
    ok &= add(&acc, &L->Kc, L->need_prep_ut ? T * (size_t)d->hk : 0, K, 2);
    ok &= add(&acc, &L->Vc, L->need_prep_ut ? T * HV : 0, V, 2);
    ok &= add(&acc, &L->Hs, L->need_tc ? CH * HV : 0, V * K, 2);
    /* host-index staging: the plan's three tensors (a caller-owned layer's forward may read the first),
     * then state_batch's three, so that neither overwrites the other's */
    ok &= add(&acc, &L->stage, 6 * R, 1, sizeof(int32_t));
    L->total = acc;
    if (!ok) {
        sgl_sdk_str(err, n, "the device buffers overflow size_t: %d layers x %d slots, max_tokens %d", d->n_lin,
                    max_reqs, max_tokens);
        return SGL_ATTN_E_NOMEM;
    }
    return SGL_ATTN_OK;
}

/* The auto rule's segments per request for a batch whose serial pass has `blocks` blocks of tile vt.
 * The first segment pass has, per request, segment 0's V / vt row tiles and (V + K) / vt for each
 * middle segment; it should fit the SMs at once (2 blocks per SM at tile 16, chunk_state.cu), so
 * per = 2 + (occ SMs - blocks) / (blocks (1 + K / V)).  Below 3 segments the two passes are the serial
 * chain cut in two (segment 1 waits for segment 0): the rule answers 1, the serial pass. */
static int32_t seg_auto_count(int sm_count, int64_t blocks, int vt, int V, int K) {
    const int64_t cap = (int64_t)sm_count * (vt == 16 ? 2 : 1);
    if (blocks < 1 || 2 * blocks > sm_count || V < 1) return 1;
    const int64_t per = 2 + (cap - blocks) * V / (blocks * (int64_t)(V + K));
    return per < 3 ? 1 : (int32_t)(per > 1024 ? 1024 : per);
}

int lin_layout_segments(lin_layout *L, const lin_dims *d, int seg, int sm_count, char *err, size_t n) {
    L->Zs = 0;
    L->seg_cap = 0;
    if (!L->need_tc || seg == 0) return SGL_ATTN_OK;
    int64_t cap;
    if (seg > 0) { /* every batch may be cut: a slot per LIN_SEG_SLOT */
        cap = ((int64_t)L->max_chunks + seg - 1) / seg + L->max_reqs;
    } else { /* auto: one request (the case the rule cuts most), tile 16 */
        const int32_t per = seg_auto_count(sm_count, (int64_t)d->hv * (d->dv / 16), 16, d->dv, d->dk);
        if (per < 2) return SGL_ATTN_OK;
        cap = 2 * (int64_t)per + 4;
    }
    size_t bytes, acc = L->total;
    if (cap > INT32_MAX || __builtin_mul_overflow((size_t)cap, (size_t)d->hv * (size_t)(d->dv + d->dk) * (size_t)d->dk * 4,
                                                  &bytes) ||
        __builtin_add_overflow(acc, bytes, &acc)) {
        sgl_sdk_str(err, n, "the segmented state pass's buffer overflows size_t: %lld segments", (long long)cap);
        return SGL_ATTN_E_NOMEM;
    }
    L->Zs = L->total;
    L->seg_cap = (int32_t)cap;
    L->total = (acc + 255) & ~(size_t)255;
    return SGL_ATTN_OK;
}

int32_t lin_seg_plan(const lin_layout *L, const lin_dims *d, int seg, int sm_count, int32_t bs, int32_t T, int vt,
                     int32_t *seg_max) {
    *seg_max = 1;
    if (!L->seg_cap || seg == 0 || bs < 1 || T < 1 || vt < 1) return 0;
    const int64_t cmax = ((int64_t)T + LIN_CHUNK - 1) / LIN_CHUNK; /* chunks of the longest request, at most */
    int64_t sc = seg;
    if (seg < 0) {
        const int32_t per = seg_auto_count(sm_count, (int64_t)bs * d->hv * (d->dv / vt), vt, d->dv, d->dk);
        if (per < 2 || cmax < LIN_SEG_AUTO_MIN_CHUNKS) return 0;
        sc = (cmax + per - 1) / per;
        if (sc < LIN_SEG_MIN_CHUNKS) sc = LIN_SEG_MIN_CHUNKS;
    }
    const int64_t smax = (cmax + sc - 1) / sc;
    if (smax < (seg < 0 ? 3 : 2)) return 0; /* auto: 2 segments would be the serial chain in two launches */
    /* the slots LIN_SEG_SLOT reaches: chunks of the batch <= cmax + bs */
    if ((cmax + bs + sc - 1) / sc + bs > L->seg_cap || smax * bs > INT32_MAX / 2) return 0;
    *seg_max = (int32_t)smax;
    return (int32_t)sc;
}

int lin_fused_cp_dims_ok(const lin_dims *d) {
    return d->kind == SGL_ATTN_HYBRID_GDN && d->dk == LIN_TC_K && (d->dv == 64 || d->dv == 128);
}

/* The fused kernel's blocks are (request, value head) pairs, each a serial chain over its chunks: option 1
 * (fused_chunk's default) takes a batch whose pairs fill half the SMs (16 x 8k at Qwen3.5 TP8: 128 blocks; 8 x 4k at Qwen3-Next:
 * 256); fewer pairs keep the unfused kernels, whose state pass runs by segments (lin_seg_plan).  Option 2
 * (always, for the tests) takes every batch, unsegmented. */
int lin_fused_cp_takes(int opt, const lin_dims *d, int sm_count, int32_t bs) {
    if (opt <= 0 || !lin_fused_cp_dims_ok(d) || bs <= 0) return 0;
    return opt == 2 || (int64_t)bs * d->hv * 2 >= (int64_t)sm_count;
}

/* The fused phase 2's tile for mamba2 (0: the state pass and the output kernel): 64 rows, one block an SM, a
 * serial chain per (request, head, tile).  Option 1 (the default) takes a batch whose blocks, bs x hv x V / 64,
 * fill 7/8 of the SMs (Nemotron-H 8B, 128 heads: one request); fewer keep the state pass, whose 8 warps a block
 * and 2 blocks an SM hide more latency when blocks are few (not timed against it).  2 (always, tests) takes
 * every batch.  create leaves the option 0 where the kernel cannot run. */
int lin_fused_p2_tile(int opt, const lin_dims *d, int sm_count, int32_t bs) {
    if (opt <= 0 || d->kind != SGL_ATTN_HYBRID_MAMBA2 || d->dv % 64 || bs <= 0) return 0;
    return opt == 2 || (int64_t)bs * d->hv * (d->dv / 64) * 8 >= (int64_t)sm_count * 7 ? 64 : 0;
}

int lin_decode_l2a_blocks(int opt, int st_dt, int sm_count) {
    if (opt >= 0) return opt;
    /* the bf16 state's stream kernel (4 blocks an SM, issue-bound) gains most from tiles landed in L2 one
     * block per SM ahead; the float32 state's (6 blocks an SM) keeps more of its own loads in flight and
     * gains too little from any distance to pay for the plan reads (docs/lab/linear.md) */
    return st_dt == LIN_DT_BF16 && sm_count > 0 ? sm_count : 0;
}
