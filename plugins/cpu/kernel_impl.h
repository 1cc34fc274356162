/*
 * kernel_impl.h - cpu_ref's attention loops, written once.  Each kernel_*.c
 * defines REAL (float or double), CREF_F64 (0/1) and CREF_SFX (the function
 * suffix), then includes this file; the compiler flags of that file pick the
 * instruction set.
 *
 * One work item = some query rows (tokens x the q heads of one KV head) over
 * a range of key positions.  Keys go in tiles of CREF_TILE: the tile's K rows
 * are dotted with every query row of the item (so each K/V row is read from
 * memory once for the whole GQA group), then an online-softmax update, then
 * P x V into the rows' accumulators.  One pass over the KV.
 *
 * The KV dtype is a constant inside attend_dt (always inlined per dtype), so
 * each dtype gets its own loops and the conversion (bf16: a shift) is
 * vectorised with them.  Reductions keep LANES independent partial sums,
 * which the compiler vectorises without reassociating anything.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"
#include "cref_expf.h"

#define CREF_CAT2(a, b) a##b
#define CREF_CAT(a, b) CREF_CAT2(a, b)
#define CREF_FN(name) CREF_CAT(name, CREF_SFX)
#define ALWAYS static inline __attribute__((always_inline))

#if CREF_F64
#define LANES 8
#define REXP(x) exp(x)
#define RTANH(x) tanh(x)
#else
#define LANES 16
#define REXP(x) cref_expf(x)
#define RTANH(x) tanhf(x)
#endif

ALWAYS REAL ld(const unsigned char *p, int64_t i, const uint32_t dt) {
#if CREF_F64
    (void)dt;
    return ((const double *)(const void *)p)[i];
#else
    switch (dt) {
    case SGL_ATTN_DT_BF16: return sgl_sdk_bf16_to_f32(((const uint16_t *)(const void *)p)[i]);
    case SGL_ATTN_DT_F16: return sgl_sdk_f16_to_f32(((const uint16_t *)(const void *)p)[i]);
    /* fp8 pools through f16's conversion (no branch, no subnormal float):
     * e5m2 is an f16's top byte; e4m3's bits placed in an f16 read 2^-8 of
     * the value (bias 15 instead of 7).  e4m3fn's NaN codes read as +-480. */
    case SGL_ATTN_DT_FP8_E5M2: return sgl_sdk_f16_to_f32((uint16_t)(p[i] << 8));
    case SGL_ATTN_DT_FP8_E4M3:
        return sgl_sdk_f16_to_f32((uint16_t)(((p[i] & 0x80u) << 8) | ((p[i] & 0x7fu) << 7))) * 256.0f;
    default: return ((const float *)(const void *)p)[i];
    }
#endif
}

/* A row of n elements of dtype dt, times `mul`, into dst. */
static void ld_row(REAL *restrict dst, const unsigned char *src, int n, uint32_t dt, REAL mul) {
#if CREF_F64
    (void)dt;
    for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_F64) * mul;
#else
    switch (dt) {
    case SGL_ATTN_DT_BF16:
        for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_BF16) * mul;
        break;
    case SGL_ATTN_DT_F16:
        for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_F16) * mul;
        break;
    case SGL_ATTN_DT_FP8_E4M3: /* an fp8 q (its descale is in mul) */
        for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_FP8_E4M3) * mul;
        break;
    case SGL_ATTN_DT_FP8_E5M2:
        for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_FP8_E5M2) * mul;
        break;
    default:
        for (int i = 0; i < n; i++) dst[i] = ld(src, i, SGL_ATTN_DT_F32) * mul;
        break;
    }
#endif
}

static void st_row(unsigned char *dst, const REAL *restrict src, int n, uint32_t dt, REAL mul) {
    for (int i = 0; i < n; i++) cref_store_f(dst, i, dt, (double)(src[i] * mul));
}

/* Sum of LANES partial sums as a fixed tree the compiler keeps in registers. */
ALWAYS REAL hsum(const REAL *a) {
    REAL b[8], c[4];
#if LANES == 16
    for (int j = 0; j < 8; j++) b[j] = a[j] + a[j + 8];
#else
    for (int j = 0; j < 8; j++) b[j] = a[j];
#endif
    for (int j = 0; j < 4; j++) c[j] = b[j] + b[j + 4];
    return (c[0] + c[2]) + (c[1] + c[3]);
}

/* Four sums at once: a transpose-and-add written with GNU C vector
 * operations (generic, not intrinsics: any target), which the plain loops
 * were not reliably compiled into inside the big attention function. */
typedef REAL v8r __attribute__((vector_size(8 * sizeof(REAL))));

ALWAYS void half_sum(const REAL *a, v8r *out) {
    v8r lo;
    memcpy(&lo, a, sizeof lo);
#if LANES == 16
    v8r hi;
    memcpy(&hi, a + 8, sizeof hi);
    lo += hi;
#endif
    *out = lo;
}

ALWAYS void hsum4(const REAL *a0, const REAL *a1, const REAL *a2, const REAL *a3, REAL *out) {
    v8r b0, b1, b2, b3;
    half_sum(a0, &b0);
    half_sum(a1, &b1);
    half_sum(a2, &b2);
    half_sum(a3, &b3);
    /* pairs of rows interleaved and added, then pairs of pairs: lane r holds
     * row r's sum of lanes 0-3, lane r + 4 that of lanes 4-7 */
    const v8r t01 = __builtin_shufflevector(b0, b1, 0, 8, 1, 9, 4, 12, 5, 13) +
                    __builtin_shufflevector(b0, b1, 2, 10, 3, 11, 6, 14, 7, 15);
    const v8r t23 = __builtin_shufflevector(b2, b3, 0, 8, 1, 9, 4, 12, 5, 13) +
                    __builtin_shufflevector(b2, b3, 2, 10, 3, 11, 6, 14, 7, 15);
    const v8r u = __builtin_shufflevector(t01, t23, 0, 1, 8, 9, 4, 5, 12, 13) +
                  __builtin_shufflevector(t01, t23, 2, 3, 10, 11, 6, 7, 14, 15);
    for (int r = 0; r < 4; r++) out[r] = u[r] + u[r + 4];
}

/* Four query rows (ldq apart) dotted with one K row. */
ALWAYS void dot4(const REAL *restrict q, int64_t ldq, const unsigned char *k, int n, const uint32_t dt,
                 REAL *out, int64_t ldo) {
    REAL a0[LANES] = {0}, a1[LANES] = {0}, a2[LANES] = {0}, a3[LANES] = {0};
    const REAL *restrict q0 = q, *restrict q1 = q + ldq, *restrict q2 = q + 2 * ldq,
                         *restrict q3 = q + 3 * ldq;
    int d = 0;
    for (; d + LANES <= n; d += LANES)
        for (int j = 0; j < LANES; j++) {
            REAL kv = ld(k, d + j, dt);
            a0[j] += q0[d + j] * kv;
            a1[j] += q1[d + j] * kv;
            a2[j] += q2[d + j] * kv;
            a3[j] += q3[d + j] * kv;
        }
    for (; d < n; d++) {
        REAL kv = ld(k, d, dt);
        a0[0] += q0[d] * kv;
        a1[0] += q1[d] * kv;
        a2[0] += q2[d] * kv;
        a3[0] += q3[d] * kv;
    }
    REAL sums[4];
    hsum4(a0, a1, a2, a3, sums);
    out[0] = sums[0];
    out[ldo] = sums[1];
    out[2 * ldo] = sums[2];
    out[3 * ldo] = sums[3];
}

ALWAYS REAL dot1(const REAL *restrict q, const unsigned char *k, int n, const uint32_t dt) {
    REAL a[LANES] = {0};
    int d = 0;
    for (; d + LANES <= n; d += LANES)
        for (int j = 0; j < LANES; j++) a[j] += q[d + j] * ld(k, d + j, dt);
    for (; d < n; d++) a[0] += q[d] * ld(k, d, dt);
    return hsum(a);
}

/* Four o rows (ldo apart) += sum over the tile's tokens t of p[r][t] * V[t].
 * Chunk-outer, token-inner: each chunk's accumulators stay in registers for
 * the whole tile, so o is loaded and stored once per tile, not per token. */
ALWAYS void pv_tile4(REAL *o, int64_t ldo, const REAL *p, int64_t ldp, const unsigned char *const *vp, int64_t voff,
                     int nt, int n, const uint32_t dt) {
    REAL *restrict o0 = o, *restrict o1 = o + ldo, *restrict o2 = o + 2 * ldo, *restrict o3 = o + 3 * ldo;
    const REAL *p0 = p, *p1 = p + ldp, *p2 = p + 2 * ldp, *p3 = p + 3 * ldp;
    int c = 0;
    for (; c + LANES <= n; c += LANES) {
        REAL a0[LANES], a1[LANES], a2[LANES], a3[LANES];
        for (int j = 0; j < LANES; j++) a0[j] = o0[c + j];
        for (int j = 0; j < LANES; j++) a1[j] = o1[c + j];
        for (int j = 0; j < LANES; j++) a2[j] = o2[c + j];
        for (int j = 0; j < LANES; j++) a3[j] = o3[c + j];
        for (int t = 0; t < nt; t++) {
            const unsigned char *v = vp[t] + voff;
            const REAL w0 = p0[t], w1 = p1[t], w2 = p2[t], w3 = p3[t];
            for (int j = 0; j < LANES; j++) {
                REAL vv = ld(v, c + j, dt);
                a0[j] += w0 * vv;
                a1[j] += w1 * vv;
                a2[j] += w2 * vv;
                a3[j] += w3 * vv;
            }
        }
        for (int j = 0; j < LANES; j++) o0[c + j] = a0[j];
        for (int j = 0; j < LANES; j++) o1[c + j] = a1[j];
        for (int j = 0; j < LANES; j++) o2[c + j] = a2[j];
        for (int j = 0; j < LANES; j++) o3[c + j] = a3[j];
    }
    for (; c < n; c++)
        for (int t = 0; t < nt; t++) {
            REAL vv = ld(vp[t] + voff, c, dt);
            o0[c] += p0[t] * vv;
            o1[c] += p1[t] * vv;
            o2[c] += p2[t] * vv;
            o3[c] += p3[t] * vv;
        }
}

ALWAYS void pv_tile1(REAL *restrict o, const REAL *p, const unsigned char *const *vp, int64_t voff, int nt, int n,
                     const uint32_t dt) {
    int c = 0;
    for (; c + LANES <= n; c += LANES) {
        REAL a[LANES];
        for (int j = 0; j < LANES; j++) a[j] = o[c + j];
        for (int t = 0; t < nt; t++) {
            const REAL w = p[t];
            for (int j = 0; j < LANES; j++) a[j] += w * ld(vp[t] + voff, c + j, dt);
        }
        for (int j = 0; j < LANES; j++) o[c + j] = a[j];
    }
    for (; c < n; c++)
        for (int t = 0; t < nt; t++) o[c] += p[t] * ld(vp[t] + voff, c, dt);
}

typedef struct scr {
    REAL *q, *o, *s, *m, *l;
    int32_t *lo, *hi;
    const unsigned char **kp, **vp;
} scr;

static size_t up(size_t n) { return (n + CREF_ALIGN - 1) & ~(size_t)(CREF_ALIGN - 1); }

/* Must stay within cref_scratch_bytes (forward.c), which sizes for double. */
static scr carve(void *base, int rows, int dqk, int dv) {
    unsigned char *p = base;
    scr s;
    s.q = (REAL *)(void *)p, p += up((size_t)rows * (size_t)dqk * sizeof(REAL));
    s.o = (REAL *)(void *)p, p += up((size_t)rows * (size_t)dv * sizeof(REAL));
    s.s = (REAL *)(void *)p, p += up((size_t)rows * CREF_TILE * sizeof(REAL));
    s.m = (REAL *)(void *)p, p += up((size_t)rows * sizeof(REAL));
    s.l = (REAL *)(void *)p, p += up((size_t)rows * sizeof(REAL));
    s.lo = (int32_t *)(void *)p, p += up((size_t)rows * sizeof(int32_t));
    s.hi = (int32_t *)(void *)p, p += up((size_t)rows * sizeof(int32_t));
    /* 2 * CREF_TILE each: cref_tile512.h keeps three tiles of 16 */
    s.kp = (const unsigned char **)(void *)p, p += up(2 * CREF_TILE * sizeof(void *));
    s.vp = (const unsigned char **)(void *)p;
    return s;
}

/* Normalise one row (sink included) and store it: out = o / l (times the
 * fp8 value scale); the LSE output, when asked for, excludes the sink. */
static void finalize_row(const cref_job *J, int64_t tok, int head, REAL m, REAL l, const REAL *o,
                         unsigned char *dst) {
    if (J->lse) /* no keys (m = -inf, l = 0): -inf */
        J->lse[tok * J->hq + head] = l > 0 ? (float)((double)m + log((double)l)) : -INFINITY;
    REAL mul;
    if (J->sinks) {
        REAL sk = (REAL)J->sinks[head];
        REAL mx = m > sk ? m : sk;
        REAL e = REXP(m - mx); /* m = -inf (no keys): 0 */
        l = l * e + REXP(sk - mx);
        mul = e / l;
    } else {
        mul = l > 0 ? (REAL)1 / l : 0;
    }
    st_row(dst, o, J->dv, J->out_dt, mul * (REAL)J->v_mul);
}

/* Ask for the next tile's K/V while this one computes: pages of the pool
 * are scattered, and hardware prefetchers stop at every 4 KiB boundary. */
ALWAYS void prefetch_bytes(const unsigned char *p, int64_t bytes) {
    int64_t o = 0;
    for (; o + 256 <= bytes; o += 256) { /* four lines per turn: less loop per line */
        __builtin_prefetch(p + o, 0, 3);
        __builtin_prefetch(p + o + 64, 0, 3);
        __builtin_prefetch(p + o + 128, 0, 3);
        __builtin_prefetch(p + o + 192, 0, 3);
    }
    for (; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
}

/* Scores of rows [r0, r1) (all of one KV head) against K row kp at tile
 * position t: four rows per pass over the K row. */
ALWAYS void qk_run(scr *S, int r0, int r1, const unsigned char *kp, int t, int D, const uint32_t kdt) {
    int r = r0;
    for (; r + 4 <= r1; r += 4) dot4(S->q + (size_t)r * D, D, kp, D, kdt, S->s + (size_t)r * CREF_TILE + t, CREF_TILE);
    for (; r < r1; r++) S->s[(size_t)r * CREF_TILE + t] = dot1(S->q + (size_t)r * D, kp, D, kdt);
}

/* Rows [r0, r1) (all of one KV head) += P x the tile's V rows at voff. */
ALWAYS void pv_run(scr *S, int r0, int r1, int64_t voff, int nt, int DV, const uint32_t kdt) {
    int r = r0;
    for (; r + 4 <= r1; r += 4)
        pv_tile4(S->o + (size_t)r * DV, DV, S->s + (size_t)r * CREF_TILE, CREF_TILE, S->vp, voff, nt, DV, kdt);
    for (; r < r1; r++) pv_tile1(S->o + (size_t)r * DV, S->s + (size_t)r * CREF_TILE, S->vp, voff, nt, DV, kdt);
}

/* Row r of an item is (token jj, kv head hl, q head g of its group). */
ALWAYS int64_t row_head(const cref_item *it, int G, int r) {
    const int per_tok = it->nh * G, rem = r % per_tok;
    return (int64_t)(it->h0 + rem / G) * G + rem % G;
}

ALWAYS void attend_dt(const cref_job *J, const cref_item *it, void *scratch, const uint32_t kdt) {
    const cref_req *rq = it->req;
    const int G = J->group, D = J->dqk, DV = J->dv, nq = it->nq, nh = it->nh;
    const int per_tok = nh * G, R = nq * per_tok;
    const int64_t ksz = (int64_t)cref_dt_size(kdt);
    scr S = carve(scratch, J->rows_cap, D, DV);

    /* query rows, scaled once here instead of every score */
    const int64_t qsz = (int64_t)cref_dt_size(J->q_dt);
    const int DQ = J->dq_lat; /* D, or the latent part with q_rope beside it */
    for (int r = 0; r < R; r++) {
        int64_t tok = (int64_t)rq->tok0 + it->j0 + r / per_tok, head = row_head(it, G, r);
        ld_row(S.q + (size_t)r * D, J->q + (tok * J->q_ts + head * J->q_hs) * qsz, DQ, J->q_dt, (REAL)J->scale);
        if (J->q_rope)
            ld_row(S.q + (size_t)r * D + DQ, J->q_rope + (tok * J->qr_ts + head * J->qr_hs) * qsz, D - DQ, J->q_dt,
                   (REAL)J->scale);
    }
    /* keys each query token sees, clipped to this item's range */
    int32_t ulo = INT32_MAX, uhi = 0;
    for (int jj = 0; jj < nq; jj++) {
        int32_t lo, hi;
        if (J->cross) {
            lo = 0;
            hi = rq->enc;
        } else if (J->mask || J->vis == SGL_ATTN_TYPE_BIDIRECTIONAL) { /* the mask picks within */
            lo = 0;
            hi = rq->seq_len;
        } else if (J->vis == SGL_ATTN_TYPE_ENCODER_ONLY) { /* the request's new tokens */
            lo = rq->prefix;
            hi = rq->seq_len;
        } else {
            int32_t pos = rq->prefix + it->j0 + jj;
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
    for (int r = 0; r < R; r++) {
        S.m[r] = -(REAL)INFINITY;
        S.l[r] = 0;
    }
    memset(S.o, 0, (size_t)R * (size_t)DV * sizeof(REAL));

    const int64_t col0 = J->cross ? 0 : rq->enc;
    const int64_t rbase = rq->row * J->r2t_cols + col0;
    const REAL cap = (REAL)J->softcap;
    const int64_t k_head = (int64_t)D * ksz, v_head = J->v_head * ksz;
    for (int32_t ts = ulo; ts < uhi; ts += CREF_TILE) {
        const int nt = uhi - ts < CREF_TILE ? uhi - ts : CREF_TILE;
        /* query tokens whose keys meet this tile */
        int ja = 0, jb = nq;
        while (ja < nq && (S.hi[ja] <= ts || S.lo[ja] >= ts + nt)) ja++;
        while (jb > ja && (S.hi[jb - 1] <= ts || S.lo[jb - 1] >= ts + nt)) jb--;
        if (ja == jb) continue;
        /* the tile's rows, at the item's first head; a slot outside the pool
         * (the batch changed after it was planned) ends the item unwritten */
        for (int t = 0; t < nt; t++) {
            int64_t slot;
            if (J->plain) {
                slot = J->r2t ? sgl_sdk_idx(J->r2t, J->r2t_64, rbase + ts + t) : rbase + ts + t;
                if ((uint64_t)slot >= (uint64_t)J->pool_slots) {
                    cref_bad_note(J->bad, 0, rbase + ts + t, slot);
                    return;
                }
            } else if ((slot = cref_key_slot(J, rq, ts + t, 1)) < 0) {
                return;
            }
            S.kp[t] = J->k_cache + (slot * J->k_slot + (int64_t)it->h0 * D) * ksz;
            S.vp[t] = J->v_cache + (slot * J->v_slot + (int64_t)it->h0 * J->v_head) * ksz;
        }
        /* scores: each K row read once for every row of its head */
        const int ra = ja * per_tok, rb = jb * per_tok;
        const int32_t tn = ts + CREF_TILE;
        for (int t = 0; t < nt; t++) {
            int64_t slot = -1;
            if (tn + t < uhi)
                slot = !J->plain ? cref_key_slot(J, rq, tn + t, 0)
                       : J->r2t  ? sgl_sdk_idx(J->r2t, J->r2t_64, rbase + tn + t)
                                 : rbase + tn + t;
            if ((uint64_t)slot < (uint64_t)J->pool_slots) {
                prefetch_bytes(J->k_cache + (slot * J->k_slot + (int64_t)it->h0 * D) * ksz, nh * k_head);
                if (J->v_cache != J->k_cache)
                    prefetch_bytes(J->v_cache + (slot * J->v_slot + (int64_t)it->h0 * J->v_head) * ksz,
                                   nh * v_head);
            }
            /* one KV head: every row of the item shares the K row */
            if (nh == 1) {
                qk_run(&S, ra, rb, S.kp[t], t, D, kdt);
                continue;
            }
            for (int jj = ja; jj < jb; jj++)
                for (int hl = 0; hl < nh; hl++)
                    qk_run(&S, jj * per_tok + hl * G, jj * per_tok + (hl + 1) * G, S.kp[t] + hl * k_head, t, D, kdt);
        }
        /* mask, soft-cap, online softmax */
        for (int jj = ja; jj < jb; jj++) {
            int a = S.lo[jj] - ts, b = S.hi[jj] - ts;
            a = a > 0 ? a : 0;
            b = b < nt ? b : nt;
            /* tree verify: this token's mask row at the tile */
            const unsigned char *mrow =
                J->mask ? J->mask + rq->mask0 + (int64_t)(it->j0 + jj) * rq->seq_len + ts : NULL;
            for (int r = jj * per_tok; r < (jj + 1) * per_tok; r++) {
                REAL *restrict sr = S.s + (size_t)r * CREF_TILE;
                if (b <= a) { /* this row sees none of the tile */
                    for (int t = 0; t < CREF_TILE; t++) sr[t] = 0;
                    continue;
                }
                if (cap > 0)
                    for (int t = a; t < b; t++) sr[t] = cap * RTANH(sr[t] / cap);
                /* whole tiles (masked and short ones padded with -inf) keep
                 * every loop below at a fixed, vectorisable length */
                for (int t = 0; t < CREF_TILE; t++) sr[t] = (t >= a && t < b) ? sr[t] : -(REAL)INFINITY;
                if (mrow)
                    for (int t = a; t < b; t++) sr[t] = mrow[t] ? sr[t] : -(REAL)INFINITY;
                REAL mx[LANES];
                for (int j = 0; j < LANES; j++) mx[j] = sr[j];
                for (int t0 = LANES; t0 < CREF_TILE; t0 += LANES)
                    for (int j = 0; j < LANES; j++) mx[j] = sr[t0 + j] > mx[j] ? sr[t0 + j] : mx[j];
                REAL mt = mx[0];
                for (int j = 1; j < LANES; j++) mt = mx[j] > mt ? mx[j] : mt;
                const REAL mn = S.m[r] > mt ? S.m[r] : mt;
                if (mn == -(REAL)INFINITY) { /* every key so far masked */
                    for (int t = 0; t < CREF_TILE; t++) sr[t] = 0;
                    continue;
                }
                const REAL alpha = REXP(S.m[r] - mn);
                REAL acc[LANES] = {0};
                for (int t0 = 0; t0 < CREF_TILE; t0 += LANES)
                    for (int j = 0; j < LANES; j++) {
                        REAL e = REXP(sr[t0 + j] - mn);
                        sr[t0 + j] = e;
                        acc[j] += e;
                    }
                S.l[r] = S.l[r] * alpha + hsum(acc);
                S.m[r] = mn;
                if (alpha != 1) {
                    REAL *restrict orow = S.o + (size_t)r * DV;
                    for (int d = 0; d < DV; d++) orow[d] *= alpha;
                }
            }
        }
        /* P x V: the tile's V rows of each head, for the rows of that head */
        if (nh == 1) {
            pv_run(&S, ra, rb, 0, nt, DV, kdt);
        } else {
            for (int jj = ja; jj < jb; jj++)
                for (int hl = 0; hl < nh; hl++)
                    pv_run(&S, jj * per_tok + hl * G, jj * per_tok + (hl + 1) * G, hl * v_head, nt, DV, kdt);
        }
    }

    /* results: a split's partial (m, l, o) or the normalised output */
    for (int r = 0; r < R; r++) {
        if (it->partial) {
            REAL *dst = (REAL *)(void *)(it->partial + (size_t)r * (size_t)(DV + 2) * sizeof(REAL));
            dst[0] = S.m[r];
            dst[1] = S.l[r];
            memcpy(dst + 2, S.o + (size_t)r * DV, (size_t)DV * sizeof(REAL));
        } else {
            int64_t tok = (int64_t)rq->tok0 + it->j0 + r / per_tok, head = row_head(it, G, r);
            finalize_row(J, tok, (int)head, S.m[r], S.l[r], S.o + (size_t)r * DV,
                         J->out + ((tok * J->hq + head) * DV) * (int64_t)cref_dt_size(J->out_dt));
        }
    }
}

#ifdef CREF_TILE512
#include "cref_tile512.h"
#endif

#if !CREF_F64
/* The fp8 pools' loops in functions of their own, so the 16/32-bit ones
 * are compiled exactly as they would be without them. */
__attribute__((noinline)) static void attend_e4m3(const cref_job *J, const cref_item *it, void *scratch) {
    attend_dt(J, it, scratch, SGL_ATTN_DT_FP8_E4M3);
}
__attribute__((noinline)) static void attend_e5m2(const cref_job *J, const cref_item *it, void *scratch) {
    attend_dt(J, it, scratch, SGL_ATTN_DT_FP8_E5M2);
}
#endif

void CREF_FN(cref_attend)(const cref_job *J, const cref_item *it, void *scratch) {
#if CREF_F64
    attend_dt(J, it, scratch, SGL_ATTN_DT_F64);
#else
#ifdef CREF_TILE512
    if (tile512_takes(J)) {
        tile512_attend(J, it, scratch);
        return;
    }
#endif
    switch (J->kv_dt) {
    case SGL_ATTN_DT_BF16: attend_dt(J, it, scratch, SGL_ATTN_DT_BF16); break;
    case SGL_ATTN_DT_F16: attend_dt(J, it, scratch, SGL_ATTN_DT_F16); break;
    case SGL_ATTN_DT_FP8_E4M3: attend_e4m3(J, it, scratch); break;
    case SGL_ATTN_DT_FP8_E5M2: attend_e5m2(J, it, scratch); break;
    default: attend_dt(J, it, scratch, SGL_ATTN_DT_F32); break;
    }
#endif
}

/* The nsplit partials of one (query block, head group), each [rows][dv + 2] =
 * (m, l, o...), merged by their maxima and stored. */
void CREF_FN(cref_combine)(const cref_job *J, const cref_item *it, unsigned char *parts) {
    const int G = J->group, DV = J->dv;
    const size_t row_bytes = (size_t)(DV + 2) * sizeof(REAL);
    const int per_tok = it->nh * G;
    for (int r = 0; r < it->nq * per_tok; r++) {
        REAL mx = -(REAL)INFINITY;
        for (int s = 0; s < J->nsplit; s++) {
            const REAL *p = (const REAL *)(const void *)(parts + (size_t)s * J->partial_stride + r * row_bytes);
            mx = p[0] > mx ? p[0] : mx;
        }
        /* the first split's o row is the accumulator: partials are ours to reuse */
        REAL *acc = (REAL *)(void *)(parts + r * row_bytes) + 2;
        REAL l = 0;
        if (mx == -(REAL)INFINITY) {
            memset(acc, 0, (size_t)DV * sizeof(REAL));
        } else {
            for (int s = 0; s < J->nsplit; s++) {
                const REAL *p = (const REAL *)(const void *)(parts + (size_t)s * J->partial_stride + r * row_bytes);
                const REAL w = REXP(p[0] - mx); /* an empty split (m = -inf) weighs 0 */
                l += p[1] * w;
                if (s == 0) {
                    for (int d = 0; d < DV; d++) acc[d] *= w;
                } else {
                    for (int d = 0; d < DV; d++) acc[d] += w * p[2 + d];
                }
            }
        }
        int64_t tok = (int64_t)it->req->tok0 + it->j0 + r / per_tok, head = row_head(it, G, r);
        finalize_row(J, tok, (int)head, mx, l, acc,
                     J->out + ((tok * J->hq + head) * DV) * (int64_t)cref_dt_size(J->out_dt));
    }
}
