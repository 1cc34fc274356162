/* cref_tile512.h - cpu_ref's loops for a bf16 KV pool, with AVX-512
 * intrinsics (included by kernel_impl.h into kernel_f32_avx512.c only; the
 * CPU was checked at create).  The same attention as attend_dt, shaped for
 * GQA decode, where the generic loops were compute-bound:
 *
 * - Keys in tiles of T5 = 16: one zmm of scores per query row.
 * - Per tile and KV head, query rows in blocks of up to 4 (the q heads of a
 *   group): QK^T for 4 keys x 4 rows at a time with 16 accumulators, each K
 *   chunk converted once for the 4 rows; the 16 dot products reduced
 *   together by a shuffle tree and transposed into the rows' score vectors.
 * - One online-softmax update per row and tile, vectorised (exp as
 *   cref_expf, lane-wise); the rescale of o by alpha is folded into P x V.
 * - P x V: 64 dims of the 4 rows in 16 accumulators over the tile's tokens,
 *   each V chunk converted once, p broadcast from memory.
 * - bf16 -> f32 without shuffles: a 32-bit lane holds dims 2i (low half) and
 *   2i+1 (high half), so a shift gives the even dim and a mask the odd one.
 *   q and o therefore keep each 32-dim chunk as [16 even dims, 16 odd dims],
 *   permuted on the way in and out (only the dot products' summation order
 *   differs from attend_dt; each o element sums its terms in the same order).
 * - The tile's page-table lookups are done once for all heads, one tile
 *   ahead, and the next tile's rows of each head are prefetched while the
 *   current one computes (pool pages are scattered). */
#ifndef CREF_TILE512_H
#define CREF_TILE512_H

#include <immintrin.h>

#define T5 16 /* keys per tile */
#ifndef T5_PF
#define T5_PF 2 /* tiles ahead to prefetch: 1 or 2 */
#endif
#ifndef T5_HINT
#define T5_HINT _MM_HINT_T1
#endif

/* Outside the AVX-512 region: called from the AVX2 dispatcher. */
static int tile512_takes(const cref_job *J) {
    return J->plain && J->kv_dt == SGL_ATTN_DT_BF16 && J->dqk % 32 == 0 && J->dv % 32 == 0 && J->rows_cap * CREF_TILE >= 64 &&
           J->rows_cap * CREF_TILE >= J->dqk && J->rows_cap * CREF_TILE >= J->dv;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma")

ALWAYS __m512 t5_even(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
ALWAYS __m512 t5_odd(__m512i v) {
    return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
}

/* natural order -> [even, odd] per 32-dim chunk, and back */
static void t5_perm_in(float *restrict dst, const float *restrict src, int n) {
    for (int c = 0; c < n; c += 32)
        for (int i = 0; i < 16; i++) {
            dst[c + i] = src[c + 2 * i];
            dst[c + 16 + i] = src[c + 2 * i + 1];
        }
}
static void t5_perm_out(float *restrict dst, const float *restrict src, int n) {
    for (int c = 0; c < n; c += 32)
        for (int i = 0; i < 16; i++) {
            dst[c + 2 * i] = src[c + i];
            dst[c + 2 * i + 1] = src[c + 16 + i];
        }
}

/* Sixteen sums at once: lane 4j + k of the result is the sum of x[4k + j]'s
 * lanes (halves of 256, then 128 bits across pairs of vectors, then within
 * 128-bit lanes). */
ALWAYS __m512 t5_sum16(const __m512 *x) {
    __m512 y[8], z[4], w[2];
    for (int i = 0; i < 8; i++)
        y[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xee));
    for (int i = 0; i < 4; i++)
        z[i] = _mm512_add_ps(_mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0xdd));
    for (int i = 0; i < 2; i++)
        w[i] = _mm512_add_ps(_mm512_unpacklo_ps(z[2 * i], z[2 * i + 1]), _mm512_unpackhi_ps(z[2 * i], z[2 * i + 1]));
    const __m512d a = _mm512_castps_pd(w[0]), b = _mm512_castps_pd(w[1]);
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
}

/* Max and sum within each group of 4 lanes (4r .. 4r + 3: row r's keys t,
 * t + 4, ...), the result in all 4 lanes of the group: swap neighbours,
 * then pairs, inside 128-bit lanes.  The max keeps a NaN of either operand
 * (vmaxps alone drops a NaN first operand), so a NaN score reaches the
 * row's max and its output, as it does in attend_dt. */
ALWAYS __m512 t5_max2(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}
ALWAYS __m512 t5_max4(__m512 x) {
    const __m512 y = t5_max2(x, _mm512_permute_ps(x, 0xb1)); /* lanes 1,0,3,2 */
    return t5_max2(y, _mm512_permute_ps(y, 0x4e));           /* lanes 2,3,0,1 */
}
ALWAYS __m512 t5_sum4(__m512 x) {
    const __m512 y = _mm512_add_ps(x, _mm512_permute_ps(x, 0xb1));
    return _mm512_add_ps(y, _mm512_permute_ps(y, 0x4e));
}

/* cref_expf on 16 lanes: the same reduction, polynomial and clamps. */
ALWAYS __m512 t5_exp(__m512 x) {
    const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365447505531f);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 xc = _mm512_max_ps(lo, _mm512_min_ps(hi, x)); /* NaN stays NaN */
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), magic), magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    const __m512i ni = _mm512_cvtps_epi32(n), n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
    const __m512i bias = _mm512_set1_epi32(127);
    const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
    const __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
}

/* NR rows of q (D apart, permuted) dotted with 4 K rows: lane 4r + t is
 * row r's score for key t. */
ALWAYS __m512 t5_qk4(const float *q, int D, const unsigned char *const *kt, int64_t koff, const unsigned char *const *pf,
                     const int NR) {
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    const unsigned char *k0 = kt[0] + koff, *k1 = kt[1] + koff, *k2 = kt[2] + koff, *k3 = kt[3] + koff;
    for (int c = 0; c < D; c += 32) {
        __m512 qe[4], qo[4];
        for (int r = 0; r < NR; r++) {
            qe[r] = _mm512_load_ps(q + (size_t)r * (size_t)D + c);
            qo[r] = _mm512_load_ps(q + (size_t)r * (size_t)D + c + 16);
        }
        const unsigned char *k[4] = {k0 + 2 * c, k1 + 2 * c, k2 + 2 * c, k3 + 2 * c};
        for (int t = 0; t < 4; t++) _mm_prefetch((const char *)pf[t] + koff + 2 * c, T5_HINT);
        for (int t = 0; t < 4; t++) {
            const __m512i kv = _mm512_loadu_si512((const void *)k[t]);
            const __m512 ke = t5_even(kv), ko = t5_odd(kv);
            for (int r = 0; r < NR; r++) {
                acc[4 * t + r] = _mm512_fmadd_ps(qe[r], ke, acc[4 * t + r]);
                acc[4 * t + r] = _mm512_fmadd_ps(qo[r], ko, acc[4 * t + r]);
            }
        }
    }
    return t5_sum16(acc);
}

/* The same with bf16 q rows (D apart, natural order) and vdpbf16ps: each
 * lane sums the exact products of a pair of dims in f32, so no conversions,
 * half the multiply-adds; the caller scales the scores instead of q. */
ALWAYS __m512 t5_qk4_dp(const uint16_t *q, int D, const unsigned char *const *kt, int64_t koff,
                        const unsigned char *const *pf, const int NR) {
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    const unsigned char *k0 = kt[0] + koff, *k1 = kt[1] + koff, *k2 = kt[2] + koff, *k3 = kt[3] + koff;
    for (int c = 0; c < D; c += 32) {
        __m512bh qv[4];
        for (int r = 0; r < NR; r++) qv[r] = (__m512bh)_mm512_loadu_si512((const void *)(q + (size_t)r * (size_t)D + c));
        const unsigned char *k[4] = {k0 + 2 * c, k1 + 2 * c, k2 + 2 * c, k3 + 2 * c};
        for (int t = 0; t < 4; t++) _mm_prefetch((const char *)pf[t] + koff + 2 * c, T5_HINT);
        for (int t = 0; t < 4; t++) {
            const __m512bh kv = (__m512bh)_mm512_loadu_si512((const void *)k[t]);
            for (int r = 0; r < NR; r++) acc[4 * t + r] = _mm512_dpbf16_ps(acc[4 * t + r], qv[r], kv);
        }
    }
    return t5_sum16(acc);
}

/* NR o rows (DV apart), 32 * H dims at o: += sum over keys t < n of
 * p[r][t] V[t] (p rows T5 apart). */
ALWAYS void t5_pv_chunk(float *o, int DV, const float *p, const unsigned char *const *vp, int64_t off, int n,
                        const unsigned char *const *pf, const int NR, const int H) {
    __m512 acc[4][4];
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < 2 * H; j++) acc[r][j] = _mm512_load_ps(o + (size_t)r * (size_t)DV + 16 * j);
    for (int t = 0; t < n; t++) {
        const unsigned char *v = vp[t] + off;
        for (int h = 0; h < H; h++) _mm_prefetch((const char *)pf[t] + off + 64 * h, T5_HINT);
        __m512 ve[4];
        for (int h = 0; h < H; h++) {
            const __m512i x = _mm512_loadu_si512((const void *)(v + 64 * h));
            ve[2 * h] = t5_even(x);
            ve[2 * h + 1] = t5_odd(x);
        }
        for (int r = 0; r < NR; r++) {
            const __m512 pr = _mm512_set1_ps(p[16 * (t >> 2) + 4 * r + (t & 3)]);
            for (int j = 0; j < 2 * H; j++) acc[r][j] = _mm512_fmadd_ps(pr, ve[j], acc[r][j]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < 2 * H; j++) _mm512_store_ps(o + (size_t)r * (size_t)DV + 16 * j, acc[r][j]);
}


/* Rows r0 .. r0 + NR - 1 (one query token, one KV head) over keys [a, b)
 * of a tile of nt: scores 4 keys at a time (transposed in registers into a
 * vector per row), the softmax update per row, P x V over the tile. */
ALWAYS void t5_block(scr *S, int r0, const int NR, const int BF, float scale, const unsigned char *const *kp,
                     int64_t koff, const unsigned char *const *vp, int64_t voff, const unsigned char *const *kn,
                     const unsigned char *const *vn, int nt, int a, int b, int D, int DV, float cap) {
    __m512 v[4];
    const int nb = (nt + 3) / 4;
#pragma GCC unroll 1
    for (int tb = 0; tb < nb; tb++)
#ifdef T5_SKIPQK
        v[tb] = _mm512_set1_ps(0.25f * tb + scale), (void)kp, (void)kn, (void)koff, (void)BF, (void)D;
#else
        v[tb] = BF ? _mm512_mul_ps(t5_qk4_dp((const uint16_t *)(const void *)S->q + (size_t)r0 * (size_t)D, D,
                                              kp + 4 * tb, koff, kn + 4 * tb, NR),
                                    _mm512_set1_ps(scale))
                   : t5_qk4(S->q + (size_t)r0 * (size_t)D, D, kp + 4 * tb, koff, kn + 4 * tb, NR);
#endif
    for (int tb = nb; tb < 4; tb++) v[tb] = _mm512_setzero_ps();
    /* The online-softmax step of the NR rows at once, on v[tb] (lane 4r + t
     * = row r, key 4 tb + t) as they come: no transpose; p is stored the
     * same way (pb[16 tb + 4 r + t]). */
    float *pb = S->s + (size_t)r0 * T5; /* 64 floats; blocks run one at a time */
    const unsigned keys = ((1u << b) - 1) & ~((1u << a) - 1);
    __m512 x[4];
    for (int tb = 0; tb < 4; tb++) {
        x[tb] = v[tb];
        if (cap > 0) {
            _mm512_storeu_ps(pb + 16 * tb, x[tb]);
            for (int i = 0; i < 16; i++)
                if (keys >> (4 * tb + (i & 3)) & 1) pb[16 * tb + i] = cap * tanhf(pb[16 * tb + i] / cap);
            x[tb] = _mm512_loadu_ps(pb + 16 * tb);
        }
        x[tb] = _mm512_mask_blend_ps((__mmask16)((keys >> 4 * tb & 15u) * 0x1111u), _mm512_set1_ps(-INFINITY), x[tb]);
    }
    const __mmask8 rm = (__mmask8)((1u << NR) - 1);
    const __mmask16 rl = (__mmask16)((1u << 4 * NR) - 1);
    const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    const __m512i gather = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
    const __m512 mo = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_maskz_loadu_ps(rm, S->m + r0)));
    __m512 l = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_maskz_loadu_ps(rm, S->l + r0)));
    const __m512 mt = t5_max4(_mm512_max_ps(_mm512_max_ps(x[0], x[1]), _mm512_max_ps(x[2], x[3])));
    const __m512 mn = _mm512_max_ps(mo, mt); /* a NaN score stays NaN, as in attend_dt */
    if (_mm512_cmp_ps_mask(mn, mo, _CMP_NEQ_UQ) & rl) {
        /* a running max moved (rare after the first keys): rescale l and o */
        const __m512 alpha = t5_exp(_mm512_sub_ps(mo, mn));
        l = _mm512_mul_ps(l, alpha);
        float al[16];
        _mm512_storeu_ps(al, alpha);
        for (int r = 0; r < NR; r++)
            if (al[4 * r] != 1) {
                float *orow = S->o + (size_t)(r0 + r) * (size_t)DV;
                const __m512 f = _mm512_set1_ps(al[4 * r]);
                for (int d = 0; d < DV; d += 16) _mm512_store_ps(orow + d, _mm512_mul_ps(_mm512_load_ps(orow + d), f));
            }
    }
    __m512 sum = _mm512_setzero_ps();
    for (int tb = 0; tb < 4; tb++) {
        const __m512 e = t5_exp(_mm512_sub_ps(x[tb], mn));
        sum = _mm512_add_ps(sum, e);
        _mm512_storeu_ps(pb + 16 * tb, e);
    }
    l = _mm512_add_ps(l, t5_sum4(sum));
    _mm_mask_storeu_ps(S->m + r0, rm, _mm512_castps512_ps128(_mm512_permutexvar_ps(gather, mn)));
    _mm_mask_storeu_ps(S->l + r0, rm, _mm512_castps512_ps128(_mm512_permutexvar_ps(gather, l)));
    float *o = S->o + (size_t)r0 * (size_t)DV;
    int c = 0;
    for (; c + 64 <= DV; c += 64) t5_pv_chunk(o + c, DV, pb, vp, voff + 2 * c, nt, vn, NR, 2);
    if (c < DV) t5_pv_chunk(o + c, DV, pb, vp, voff + 2 * c, nt, vn, NR, 1);
}


/* K and V row pointers (at the item's first head) of keys [t0, t0 + n);
 * entries n .. T5 - 1 repeat the last (the 4-key QK steps may read them).
 * A slot outside the pool (the batch changed after it was planned) is noted
 * and read as slot 0, so nothing outside the pool is touched; the forward
 * then fails. */
static void t5_rows(const cref_job *J, int64_t rbase, int32_t t0, int n, int h0, const unsigned char **kp,
                    const unsigned char **vp) {
    for (int t = 0; t < n; t++) {
        int64_t slot = J->r2t ? sgl_sdk_idx(J->r2t, J->r2t_64, rbase + t0 + t) : rbase + t0 + t;
        if ((uint64_t)slot >= (uint64_t)J->pool_slots) {
            cref_bad_note(J->bad, 0, rbase + t0 + t, slot);
            slot = 0;
        }
        kp[t] = J->k_cache + (slot * J->k_slot + (int64_t)h0 * J->dqk) * 2;
        vp[t] = J->v_cache + (slot * J->v_slot + (int64_t)h0 * J->v_head) * 2;
    }
    for (int t = n; t < T5; t++) kp[t] = kp[n - 1], vp[t] = vp[n - 1];
}

__attribute__((noinline)) static void tile512_attend(const cref_job *J, const cref_item *it, void *scratch) {
    const cref_req *rq = it->req;
    const int G = J->group, D = J->dqk, DV = J->dv, nq = it->nq, nh = it->nh;
    const int per_tok = nh * G, R = nq * per_tok;
    scr S = carve(scratch, J->rows_cap, D, DV);
    float *tmp = S.s; /* rows_cap * CREF_TILE floats: a row of q or o (tile512_takes) */

    /* query rows: bf16 as they are, for vdpbf16ps (the scores are scaled);
     * else scaled once, chunks permuted */
    const int bf = J->bf16dot && J->q_dt == SGL_ATTN_DT_BF16;
    const float scale = (float)J->scale;
    const int64_t qsz = (int64_t)cref_dt_size(J->q_dt);
    const int DQ = J->dq_lat; /* D, or the latent part with q_rope beside it */
    for (int r = 0; r < R; r++) {
        const int64_t tok = (int64_t)rq->tok0 + it->j0 + r / per_tok, head = row_head(it, G, r);
        const unsigned char *src = J->q + (tok * J->q_ts + head * J->q_hs) * qsz;
        const unsigned char *rsrc = J->q_rope ? J->q_rope + (tok * J->qr_ts + head * J->qr_hs) * qsz : NULL;
        if (bf) { /* as given, bf16 rows D apart */
            memcpy((uint16_t *)(void *)S.q + (size_t)r * (size_t)D, src, (size_t)DQ * 2);
            if (rsrc) memcpy((uint16_t *)(void *)S.q + (size_t)r * (size_t)D + DQ, rsrc, (size_t)(D - DQ) * 2);
        } else {
            ld_row(tmp, src, DQ, J->q_dt, (float)J->scale);
            if (rsrc) ld_row(tmp + DQ, rsrc, D - DQ, J->q_dt, (float)J->scale);
            t5_perm_in(S.q + (size_t)r * (size_t)D, tmp, D);
        }
    }
    /* keys each query token sees, clipped to this item's range */
    int32_t ulo = INT32_MAX, uhi = 0;
    for (int jj = 0; jj < nq; jj++) {
        int32_t lo, hi;
        if (J->cross) {
            lo = 0;
            hi = rq->enc;
        } else {
            const int32_t pos = rq->prefix + it->j0 + jj;
            hi = pos + 1;
            lo = (J->window >= 0 && pos - J->window > 0) ? pos - J->window : 0;
        }
        lo = lo > it->kb ? lo : it->kb;
        hi = hi < it->ke ? hi : it->ke;
        if (hi < lo) hi = lo;
        S.lo[jj] = lo;
        S.hi[jj] = hi;
        if (hi > lo) {
            ulo = lo < ulo ? lo : ulo;
            uhi = hi > uhi ? hi : uhi;
        }
    }
    if (ulo >= uhi) ulo = uhi = 0; /* no row sees a key (ulo is still INT32_MAX): no tiles, nothing to prefetch */
    for (int r = 0; r < R; r++) {
        S.m[r] = -INFINITY;
        S.l[r] = 0;
    }
    memset(S.o, 0, (size_t)R * (size_t)DV * sizeof(float));

    const int64_t col0 = J->cross ? 0 : rq->enc;
    const int64_t rbase = rq->row * J->r2t_cols + col0;
    const float cap = (float)J->softcap;
    const int64_t k_head = (int64_t)D * 2, v_head = J->v_head * 2;
    /* row pointers of this tile and of the next (prefetched head by head
     * while this one computes: the pool's pages are scattered) */
    const unsigned char **kp = S.kp, **vp = S.vp, **kn = S.kp + T5, **vn = S.vp + T5;
    const unsigned char **kf = S.kp + 2 * T5, **vf = S.vp + 2 * T5;
    for (int i = 0; i < T5_PF; i++) {
        const unsigned char **k = i ? kn : kp, **v = i ? vn : vp;
        const int32_t t0 = ulo + i * T5;
        if (t0 < uhi) t5_rows(J, rbase, t0, uhi - t0 < T5 ? uhi - t0 : T5, it->h0, k, v);
    }
    for (int32_t ts = ulo; ts < uhi; ts += T5) {
        const int nt = uhi - ts < T5 ? uhi - ts : T5;
        /* rows of the tile T5_PF ahead, prefetched inside the loops, a line
         * per key and 32 dims, spread over the compute (in bursts most
         * prefetches were dropped: the miss buffers were full); past the
         * end, this tile's own (harmless) */
        const int32_t tf = ts + T5_PF * T5;
        const unsigned char **kq = T5_PF == 1 ? kn : kf, **vq = T5_PF == 1 ? vn : vf;
        if (tf < uhi) t5_rows(J, rbase, tf, uhi - tf < T5 ? uhi - tf : T5, it->h0, kq, vq);
        else
            for (int t = 0; t < T5; t++) kq[t] = kp[t], vq[t] = vp[t];
        /* query tokens whose keys meet this tile */
        int ja = 0, jb = nq;
        while (ja < nq && (S.hi[ja] <= ts || S.lo[ja] >= ts + nt)) ja++;
        while (jb > ja && (S.hi[jb - 1] <= ts || S.lo[jb - 1] >= ts + nt)) jb--;
        for (int hl = 0; hl < nh; hl++) {
            const int64_t ko = hl * k_head, vo = hl * v_head;
            for (int jj = ja; jj < jb; jj++) {
                const int a = S.lo[jj] > ts ? S.lo[jj] - ts : 0, b = S.hi[jj] - ts < nt ? S.hi[jj] - ts : nt;
                if (b <= a) continue; /* none of the tile: nothing changes */
                const int rb = jj * per_tok + hl * G;
#define T5_BLOCK(NR, BF) t5_block(&S, rb + g, NR, BF, scale, kp, ko, vp, vo, kq, vq, nt, a, b, D, DV, cap)
                for (int g = 0; g < G; g += 4) switch ((G - g < 4 ? G - g : 4) + 4 * bf) {
                    case 1: T5_BLOCK(1, 0); break;
                    case 2: T5_BLOCK(2, 0); break;
                    case 3: T5_BLOCK(3, 0); break;
                    case 4: T5_BLOCK(4, 0); break;
                    case 5: T5_BLOCK(1, 1); break;
                    case 6: T5_BLOCK(2, 1); break;
                    case 7: T5_BLOCK(3, 1); break;
                    default: T5_BLOCK(4, 1); break;
                    }
#undef T5_BLOCK
            }
        }
        /* rotate: next becomes current, the prefetched one next */
        const unsigned char **t;
        if (T5_PF == 1) {
            t = kp, kp = kn, kn = t;
            t = vp, vp = vn, vn = t;
        } else {
            t = kp, kp = kn, kn = kf, kf = t;
            t = vp, vp = vn, vn = vf, vf = t;
        }
    }

    /* results in natural order: a split's partial (m, l, o) or the output */
    for (int r = 0; r < R; r++) {
        t5_perm_out(tmp, S.o + (size_t)r * (size_t)DV, DV);
        if (it->partial) {
            float *dst = (float *)(void *)(it->partial + (size_t)r * (size_t)(DV + 2) * sizeof(float));
            dst[0] = S.m[r];
            dst[1] = S.l[r];
            memcpy(dst + 2, tmp, (size_t)DV * sizeof(float));
        } else {
            const int64_t tok = (int64_t)rq->tok0 + it->j0 + r / per_tok, head = row_head(it, G, r);
            finalize_row(J, tok, (int)head, S.m[r], S.l[r], tmp,
                         J->out + ((tok * J->hq + head) * DV) * (int64_t)cref_dt_size(J->out_dt));
        }
    }
}

#pragma GCC pop_options

#endif
