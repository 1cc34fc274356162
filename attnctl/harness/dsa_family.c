/* dsa_family.c - DeepSeek sparse attention's case families (docs/harness.md,
 * "DSA cases"), for plugins whose caps.dsa_ops declare them:
 *   sparse   sparse_decode / sparse_extend / sparse_verify: MLA forward over
 *            given topk_indices (SGL_ATTN_DSA_SPARSE_MLA); rec=1 over
 *            FlashMLA's fp8 record pool (SGL_ATTN_DSA_KV_FP8_RECORD)
 *   indexer  indexer_decode / indexer_extend / indexer_verify:
 *            backend_ops.indexer_topk (SGL_ATTN_DSA_INDEXER)
 * Both build their batch (ragged lengths, shuffled pages, req_to_token) with
 * the full-attention family's builder and judge the plugin against float64
 * math written here from the ABI's definition (abi/sgl_attn_abi.h, DSA
 * block), not by calling cpu_ref.  The indexer's e4m3 codes are decoded and
 * rounded here by a table of the format's values, an arithmetic of its own
 * (cpu_ref and dtype.c compute them from the exponent), so the conversions
 * are checked, not reused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

#define DSA_MAX_TOPK 65536
#define DSA_UNWRITTEN 0x7eadbeef /* topk_indices before the call: an entry still holding it was never written */

/* ------------------------------------------------------------ case keys */

/* The case for the full family's builder: the mode of the batch, the case's
 * keys less the DSA ones, plus `add` (key=value pairs, NULL-terminated). */
static int to_full_case(const hcase *c, const char *const *drop, const char *const *add, hcase *out, char *err,
                        size_t err_size) {
    const char *mode = strchr(c->mode, '_') + 1; /* "sparse_decode" -> "decode" */
    *out = *c;
    snprintf(out->mode, sizeof out->mode, "%s", mode);
    out->n = 0;
    for (size_t i = 0; i < c->n; i++) {
        int skip = 0;
        for (const char *const *d = drop; *d && !skip; d++) skip = !strcmp(*d, c->kv[i].key);
        if (!skip) out->kv[out->n++] = c->kv[i];
    }
    for (const char *const *a = add; a[0]; a += 2) {
        if (hcase_get(out, a[0])) continue;
        if (out->n >= HCASE_MAX_KEYS) return snprintf(err, err_size, "case '%s': too many keys", c->text), -1;
        snprintf(out->kv[out->n].key, sizeof out->kv[out->n].key, "%s", a[0]);
        snprintf(out->kv[out->n].val, sizeof out->kv[out->n].val, "%s", a[1]);
        out->n++;
    }
    return 0;
}

/* ------------------------------------------------------------ fp8 e4m3 */

/* The 126 finite positive e4m3 ("fn": no infinities, 0x7f is NaN) values by
 * code 1..126, built from the format's definition. */
static double e4m3_table[127];

static void e4m3_init(void) {
    if (e4m3_table[1] != 0) return;
    for (int c = 0; c < 127; c++) {
        const int e = c >> 3, m = c & 7;
        e4m3_table[c] = e == 0 ? m / 8.0 * ldexp(1.0, -6) : (1.0 + m / 8.0) * ldexp(1.0, e - 7);
    }
}

static double e4m3_value(uint8_t b) {
    const double v = (b & 0x7f) == 0x7f ? NAN : e4m3_table[b & 0x7f];
    return (b & 0x80) ? -v : v;
}

/* x (a float) to the nearest code by the table, ties to the even code
 * (the even mantissa), magnitudes past 448 to 448. */
static uint8_t e4m3_round(float x) {
    const uint8_t sign = signbit(x) ? 0x80 : 0;
    const double a = fabs((double)x);
    int lo = 0, hi = 126;
    if (a >= e4m3_table[126]) return sign | 126;
    while (hi - lo > 1) { /* e4m3_table[lo] <= a < e4m3_table[hi] */
        const int mid = (lo + hi) / 2;
        if (e4m3_table[mid] <= a) lo = mid;
        else hi = mid;
    }
    const double dl = a - e4m3_table[lo], dh = e4m3_table[hi] - a;
    const int c = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return (uint8_t)(sign | c);
}

/* DeepSeek's act_quant scale of a block whose largest magnitude is amax:
 * max(amax, 1e-4) / 448 in fp32 (a multiply by the fp32 1/448), with pow2
 * the next power of two at or above it. */
static float block_scale(float amax, int pow2) {
    const float inv448 = 1.0f / 448.0f;
    float s = (amax < 1e-4f ? 1e-4f : amax) * inv448;
    if (pow2) {
        int e;
        const float f = frexpf(s, &e); /* s = f * 2^e, f in [0.5, 1) */
        s = f == 0.5f ? s : ldexpf(1.0f, e);
    }
    return s;
}

static uint64_t digest(const void *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

/* Download every tensor in `in` and check it kept the digest it had. */
static int inputs_kept(htensor *const *in, size_t n, hresult *r) {
    char err[512];
    for (size_t i = 0; i < n; i++) {
        const uint64_t before = digest(htensor_cdata(in[i]), in[i]->bytes);
        if (htensor_download(in[i], err, sizeof err)) return hresult_fail(r, "%s", err), -1;
        if (digest(htensor_cdata(in[i]), in[i]->bytes) != before)
            return hresult_fail(r, "the input %s was modified by the call", in[i]->name), -1;
    }
    return 0;
}

/* The slot of request i's token at position p (the page table's entry). */
static int64_t slot_of(const fa_batch *fb, int i, int64_t p) {
    return htensor_get_index(&fb->r2t, (size_t)((int64_t)fb->row[i] * fb->cols + p));
}

/* Shared by both families: parse through the full family, claim, build. */
static int build(const harness_family *fam, const htarget *t, const hcase *c, const char *const *drop,
                 const char *const *add, uint64_t *seed, fa_batch *fb, uint32_t dsa_op, hresult *r) {
    char err[768];
    hcase fc;
    fa_case f;
    if (to_full_case(c, drop, add, &fc, err, sizeof err) || fa_case_parse(&fc, &f, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return -1;
    }
    if (!f.mla || f.window >= 0 || f.softcap > 0 || f.sinks || f.cross || f.enc || f.chunk) {
        hresult_error(r, "case '%s': %s cases are MLA (mla=1) without window, softcap, sinks, cross, enc or chunk",
                      c->text, fam->name);
        return -1;
    }
    if (f.has_seed) *seed = f.seed;
    if (!(t->caps.dsa_ops & dsa_op)) {
        hresult_unsupported(r, "the probe does not declare %s in caps.dsa_ops",
                            dsa_op == SGL_ATTN_DSA_INDEXER ? "SGL_ATTN_DSA_INDEXER" : "SGL_ATTN_DSA_SPARSE_MLA");
        return -1;
    }
    if (!fa_case_claimed(&f, &t->caps, err, sizeof err)) {
        hresult_unsupported(r, "%s", err);
        return -1;
    }
    if (fa_batch_build(fb, &f, &t->dev, *seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return -1;
    }
    snprintf(fb->model.name, sizeof fb->model.name, "%.63s", c->text);
    return 0;
}

static int applies_op(const sgl_attn_plugin_info *info, const sgl_attn_caps *caps, uint32_t op) {
    return info->role == SGL_ATTN_ROLE_FULL && (caps->dsa_ops & op);
}

/* ============================================================ sparse MLA */

static const char *const sparse_modes[] = {"sparse_decode", "sparse_extend", "sparse_verify", NULL};

/* topk: the row width; neg=1: -1 entries among the valid ones, and the
 * batch's first row all -1 (such a row writes zeros). */
static const char *const sparse_matrix[] = {
    /* ragged: request 0 has fewer cached tokens than topk */
    "sparse_decode:b=4,l=600,hq=16,dtype=bf16,page=64,topk=128,ragged=1",
    "sparse_decode:b=3,l=300,hq=16,dtype=f32,page=1,topk=64,neg=1,ragged=1",
    "sparse_decode:b=2,l=200,hq=16,dtype=f16,page=16,topk=512",
    "sparse_decode:b=2,l=500,hq=128,dtype=bf16,page=64,topk=256",
    "sparse_decode:b=2,l=3000,hq=16,dtype=bf16,page=64,topk=2048,ragged=1",
    "sparse_decode:b=3,l=300,hq=16,dtype=bf16,page=16,topk=64,idx=64,neg=1,ragged=1",
    "sparse_decode:b=3,l=300,hq=16,dtype=bf16,page=16,topk=128,near=1,neg=1,ragged=1",
    /* extend and verify: every query selects its own (just saved) token */
    "sparse_extend:b=3,l=300,q=100,hq=16,dtype=bf16,page=64,topk=64,ragged=1",
    "sparse_extend:b=2,l=200,q=200,hq=16,dtype=f32,page=16,topk=32,neg=1",
    "sparse_extend:b=2,l=300,q=150,hq=16,dtype=f16,page=1,topk=512,ragged=1",
    "sparse_verify:b=2,l=400,q=3,hq=16,dtype=bf16,page=64,topk=128",
    "sparse_verify:b=3,l=200,q=4,hq=16,dtype=f32,page=16,topk=16,neg=1,ragged=1",
    /* FlashMLA's fp8 record pool: ragged (fewer cached tokens than topk),
     * -1 entries and an all -1 row, pages of 1, 16 and 64, 16 / 32 / 128
     * heads, decode / extend / verify; the saves quantised bit for bit */
    "sparse_decode:b=4,l=600,hq=16,dtype=bf16,page=64,topk=128,ragged=1,rec=1",
    "sparse_decode:b=3,l=300,hq=16,dtype=bf16,page=1,topk=64,neg=1,ragged=1,rec=1",
    "sparse_decode:b=2,l=500,hq=128,dtype=bf16,page=64,topk=256,rec=1",
    "sparse_extend:b=3,l=300,q=100,hq=16,dtype=bf16,page=16,topk=64,ragged=1,rec=1",
    "sparse_extend:b=2,l=200,q=40,hq=32,dtype=bf16,page=64,topk=256,neg=1,rec=1",
    "sparse_verify:b=2,l=400,q=3,hq=16,dtype=bf16,page=64,topk=128,rec=1",
    NULL,
};

static const char *const sparse_quick[] = {
    "sparse_decode:b=3,l=300,hq=16,dtype=f32,page=16,topk=64,neg=1,ragged=1",
    "sparse_extend:b=2,l=200,q=80,hq=16,dtype=bf16,page=64,topk=32,ragged=1",
    "sparse_verify:b=2,l=200,q=3,hq=16,dtype=bf16,page=1,topk=64,neg=1",
    "sparse_extend:b=2,l=200,q=60,hq=16,dtype=bf16,page=16,topk=64,neg=1,ragged=1,rec=1",
    NULL,
};

static const char *const sparse_drop[] = {"topk", "neg", "rec", "near", NULL};
static const char *const sparse_add[] = {"mla", "1", NULL, NULL};

/* Row t's selection: min(topk, pos + 1) distinct positions of t's request
 * at 0..pos, always pos itself (the diagonal, saved by this call), as pool
 * slots; neg=1 drops a quarter of the others to -1; the rest of the row is
 * -1; the row shuffled so -1 stands anywhere.  near=1: the positions are the
 * most recent ones, in order and unshuffled (the pool read page by page, as
 * a dense decode reads it: the access pattern without the random rows). */
static void sparse_rows(const fa_batch *fb, long topk, int neg, int near, hrng *rng, int32_t *rows) {
    int64_t *cand = malloc(sizeof(int64_t) * (size_t)(fb->cols > 0 ? fb->cols : 1));
    if (!cand) return;
    for (int i = 0, t = 0; i < fb->bs; i++)
        for (int j = 0; j < fb->n_new[i]; j++, t++) {
            const int64_t pos = (int64_t)fb->prefix[i] + j;
            int32_t *row = rows + (int64_t)t * topk;
            int64_t n = 0;
            const int64_t want = pos + 1 < topk ? pos + 1 : topk;
            if (near && !(neg && t == 0)) {
                for (int64_t p = pos + 1 - want; p <= pos; p++)
                    row[n++] = neg && p != pos && hrng_uniform(rng) < 0.25 ? -1 : (int32_t)slot_of(fb, i, p);
                while (n < topk) row[n++] = -1;
                continue;
            }
            for (int64_t p = 0; p < pos; p++) cand[p] = p;
            if (!(neg && t == 0)) {
                row[n++] = (int32_t)slot_of(fb, i, pos);
                for (int64_t x = 0; x < want - 1; x++) { /* a partial Fisher-Yates draw */
                    const int64_t y = hrng_range(rng, x, pos - 1);
                    const int64_t p = cand[y];
                    cand[y] = cand[x];
                    cand[x] = p;
                    row[n++] = neg && hrng_uniform(rng) < 0.25 ? -1 : (int32_t)slot_of(fb, i, p);
                }
            }
            while (n < topk) row[n++] = -1;
            for (int64_t x = topk - 1; x > 0; x--) {
                const int64_t y = hrng_range(rng, 0, x);
                const int32_t v = row[y];
                row[y] = row[x];
                row[x] = v;
            }
        }
    free(cand);
}

/* ------------------------------------------------ FlashMLA's fp8 record */

/* A record (abi/sgl_attn_abi.h, SGL_ATTN_DSA_KV_FP8_RECORD): 512 e4m3 bytes,
 * 4 fp32 scales (one per block of 128 latent values), 64 bf16 RoPE values. */
#define REC_BYTES 656
#define REC_LATENT 512
#define REC_SCALES 512
#define REC_ROPE 528

/* The record of one 576-value row x (float values of bf16): per block of
 * 128 DeepSeek's act_quant (the indexer keys' rule: block_scale, then
 * x / scale in fp32, clamped to +-448, rounded to the nearest code), the
 * RoPE dims' bf16 bits as they are. */
static void rec_quantise(const float *x, const uint16_t *rope_bits, unsigned char *rec) {
    for (int blk = 0; blk < REC_LATENT / 128; blk++) {
        float amax = 0;
        for (int e = 0; e < 128; e++) amax = fabsf(x[blk * 128 + e]) > amax ? fabsf(x[blk * 128 + e]) : amax;
        const float sc = block_scale(amax, 0);
        for (int e = 0; e < 128; e++) {
            float y = x[blk * 128 + e] / sc;
            y = y > 448.f ? 448.f : y < -448.f ? -448.f : y;
            rec[blk * 128 + e] = e4m3_round(y);
        }
        memcpy(rec + REC_SCALES + 4 * blk, &sc, 4);
    }
    memcpy(rec + REC_ROPE, rope_bits, 64 * 2);
}

/* Element e (0..575) of a record's row, dequantised. */
static double rec_value(const unsigned char *rec, long e) {
    if (e < REC_LATENT) {
        float sc;
        memcpy(&sc, rec + REC_SCALES + 4 * (e / 128), 4);
        return e4m3_value(rec[e]) * (double)sc;
    }
    uint16_t b;
    memcpy(&b, rec + REC_ROPE + 2 * (e - REC_LATENT), 2);
    return hdtype_load(HDT_BF16, &b, 0);
}

/* The record pool for a rec=1 case: every slot of the bf16 pool the full
 * family drew, each block of 128 first multiplied by a power of two from
 * 2^-3 to 2^2 (so scales differ from block to block and slot to slot),
 * quantised; and the pool expected after the call: the new tokens' k
 * quantised at their slots. */
static int rec_build(fa_batch *fb, const hdev *dev, htensor *rec, unsigned char **want, uint64_t seed, char *err,
                     size_t err_size) {
    const int64_t shape[3] = {fb->slots, 1, REC_BYTES};
    if (htensor_alloc(rec, dev, "k_cache", HDT_U8, 3, shape, err, err_size)) return -1;
    *want = malloc(rec->bytes + 1);
    if (!*want) return snprintf(err, err_size, "out of host memory for the record pool"), -1;
    e4m3_init();
    hrng rng;
    hrng_seed(&rng, seed ^ 0x656u);
    float x[576];
    uint16_t rope[64];
    unsigned char *r = htensor_data(rec);
    for (int64_t s = 0; s < fb->slots; s++) {
        for (int e = 0; e < 576; e++) {
            const double v = hdtype_load(HDT_BF16, fb->k_init, (size_t)s * 576 + (size_t)e);
            x[e] = (float)v;
            if (e >= REC_LATENT) rope[e - REC_LATENT] = ((const uint16_t *)fb->k_init)[s * 576 + e];
        }
        for (int blk = 0; blk < 4; blk++) {
            const float f = ldexpf(1.f, (int)hrng_range(&rng, -3, 2));
            for (int e = 0; e < 128; e++) x[blk * 128 + e] *= f;
        }
        rec_quantise(x, rope, r + s * REC_BYTES);
    }
    memcpy(*want, r, rec->bytes);
    if (fb->c.save)
        for (int t = 0; t < fb->T; t++) {
            const uint16_t *k = (const uint16_t *)htensor_cdata(&fb->k) + (size_t)t * 576;
            for (int e = 0; e < 576; e++) x[e] = (float)hdtype_load(HDT_BF16, k, (size_t)e);
            rec_quantise(x, k + REC_LATENT, *want + htensor_get_index(&fb->ocl, (size_t)t) * REC_BYTES);
        }
    return htensor_upload(rec, err, err_size);
}

/* The record pool after the call against the expected one, byte for byte. */
static int rec_verify(const fa_batch *fb, htensor *rec, const unsigned char *want, hresult *r) {
    char err[512];
    if (htensor_download(rec, err, sizeof err)) return hresult_fail(r, "%s", err), -1;
    const unsigned char *got = htensor_cdata(rec);
    for (size_t i = 0; i < rec->bytes; i++) {
        if (got[i] == want[i]) continue;
        const int64_t slot = (int64_t)(i / REC_BYTES), b = (int64_t)(i % REC_BYTES);
        int64_t tok = -1;
        for (int t = 0; fb->c.save && t < fb->T; t++)
            if (htensor_get_index(&fb->ocl, (size_t)t) == slot) tok = t;
        char who[64];
        if (tok >= 0) snprintf(who, sizeof who, "new token %lld's", (long long)tok);
        else snprintf(who, sizeof who, "no new token's (it must stay as it was)");
        hresult_fail(r, "k_cache (fp8 record) slot %lld, %s byte %lld = 0x%02x; expected 0x%02x (%s record)",
                     (long long)slot,
                     b < REC_LATENT ? "e4m3 value" : b < REC_ROPE ? "block scale" : "RoPE (bf16)", (long long)b,
                     got[i], want[i], who);
        return -1;
    }
    return 0;
}

/* The float64 pool the reference reads: the one before the call with the
 * new tokens' k (rounded to the pool dtype, fp8 by its scale) at their
 * slots, dequantised; or the expected record pool, dequantised. */
static double *sparse_pool(const fa_batch *fb, const unsigned char *rec_want) {
    const fa_case *c = &fb->c;
    const long d = c->d;
    double *pool = malloc(sizeof(double) * fb->k_cache.count);
    if (!pool) return NULL;
    if (rec_want) {
        for (int64_t s = 0; s < fb->slots; s++)
            for (long e = 0; e < d; e++) pool[s * d + e] = rec_value(rec_want + s * REC_BYTES, e);
        return pool;
    }
    const double ks = fa_pool_scale(c, 0); /* 1 but for fp8 pools */
    for (size_t e = 0; e < fb->k_cache.count; e++) pool[e] = hdtype_load(c->kvdt, fb->k_init, e) * ks;
    if (c->save)
        for (int t = 0; t < fb->T; t++) {
            const int64_t slot = htensor_get_index(&fb->ocl, (size_t)t);
            for (long e = 0; e < d; e++)
                pool[slot * d + e] =
                    fa_pool_raw(c, 0, hdtype_load(fb->k.dt, htensor_cdata(&fb->k), (size_t)t * (size_t)d + (size_t)e)) *
                    ks;
        }
    return pool;
}

/* out[t, h, :dv] = softmax over the row's valid slots of scale * q . k
 * (all d dims) times k's first dv dims; zeros for a row with none, over
 * sparse_pool's values. */
static int sparse_reference(fa_batch *fb, const unsigned char *rec_want, const int32_t *rows, long topk, char *err,
                            size_t err_size) {
    const fa_case *c = &fb->c;
    const long hq = c->hq, d = c->d, dv = c->dv;
    double *pool = sparse_pool(fb, rec_want);
    double *ref = calloc((size_t)(fb->T > 0 ? fb->T : 1) * (size_t)(hq * dv), sizeof(double));
    double *s = malloc(sizeof(double) * (size_t)topk);
    double *qd = malloc(sizeof(double) * (fb->q.count ? fb->q.count : 1));
    if (!pool || !ref || !s || !qd) {
        free(pool), free(ref), free(s), free(qd);
        snprintf(err, err_size, "out of host memory for the float64 sparse reference");
        return -1;
    }
    for (size_t e = 0; e < fb->q.count; e++) qd[e] = hdtype_load(fb->q.dt, htensor_cdata(&fb->q), e);
    for (int t = 0; t < fb->T; t++) {
        const int32_t *row = rows + (int64_t)t * topk;
        for (long h = 0; h < hq; h++) {
            const size_t q0 = ((size_t)t * (size_t)hq + (size_t)h) * (size_t)d;
            double mx = -INFINITY, sum = 0;
            for (long x = 0; x < topk; x++) {
                s[x] = -INFINITY;
                if (row[x] < 0) continue;
                double dot = 0;
                for (long e = 0; e < d; e++)
                    dot += qd[q0 + (size_t)e] * pool[(int64_t)row[x] * d + e];
                s[x] = c->scale * dot;
                mx = s[x] > mx ? s[x] : mx;
            }
            if (mx == -INFINITY) continue; /* no valid slot: zeros */
            double *o = ref + ((size_t)t * (size_t)hq + (size_t)h) * (size_t)dv;
            for (long x = 0; x < topk; x++) {
                if (row[x] < 0) continue;
                const double w = exp(s[x] - mx);
                sum += w;
                for (long e = 0; e < dv; e++) o[e] += w * pool[(int64_t)row[x] * d + e];
            }
            for (long e = 0; e < dv; e++) o[e] /= sum;
        }
    }
    free(fb->ref);
    fb->ref = ref;
    free(pool);
    free(s);
    free(qd);
    return 0;
}

static int sparse_applies(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps) {
    (void)f;
    return applies_op(info, caps, SGL_ATTN_DSA_SPARSE_MLA);
}

/* A sparse case staged: the full family's batch, the topk rows (host and
 * device), the record pool and its expected bytes for rec=1; the model and
 * the args carry them. */
typedef struct sparse_run {
    fa_batch fb;
    htensor ti, rec;
    unsigned char *rec_want; /* rec=1: the record pool expected after the call */
    int32_t *rows;           /* [T, topk] */
    long topk;
    int recp;
} sparse_run;

static void sparse_run_free(sparse_run *x) {
    htensor_free(&x->ti);
    htensor_free(&x->rec);
    free(x->rec_want);
    free(x->rows);
    fa_batch_free(&x->fb);
}

/* Stage case c (check and bench alike).  Returns 0, or -1 with r set (x
 * then needs sparse_run_free all the same). */
static int sparse_stage(const harness_family *fam, const htarget *t, const hcase *c, uint64_t *seed, sparse_run *x,
                        hresult *r) {
    char err[768];
    long neg, recp, near;
    memset(x, 0, sizeof *x);
    if (hcase_int(c, "topk", 64, 1, DSA_MAX_TOPK, &x->topk, err, sizeof err) ||
        hcase_int(c, "neg", 0, 0, 1, &neg, err, sizeof err) || hcase_int(c, "rec", 0, 0, 1, &recp, err, sizeof err) ||
        hcase_int(c, "near", 0, 0, 1, &near, err, sizeof err))
        return hresult_error(r, "%s", err), -1;
    x->recp = (int)recp;
    if (build(fam, t, c, sparse_drop, sparse_add, seed, &x->fb, SGL_ATTN_DSA_SPARSE_MLA, r)) return -1;
    fa_batch *fb = &x->fb;
    const long topk = x->topk;
    x->rows = malloc(sizeof(int32_t) * (size_t)(fb->T > 0 ? fb->T : 1) * (size_t)topk);
    const int64_t shape[2] = {fb->T, topk};
    if (!x->rows || htensor_alloc(&x->ti, &t->dev, "topk_indices", HDT_I32, 2, shape, err, sizeof err))
        return hresult_error(r, "%s", x->rows ? err : "out of host memory"), -1;
    hrng rng;
    hrng_seed(&rng, *seed ^ 0xd5a5u);
    sparse_rows(fb, topk, (int)neg, (int)near, &rng, x->rows);
    memcpy(htensor_data(&x->ti), x->rows, x->ti.bytes);
    if (htensor_upload(&x->ti, err, sizeof err)) return hresult_error(r, "%s", err), -1;
    if (recp) { /* the layer reads the record pool; the family's bf16 pool is only its source */
        if (fb->c.dt != HDT_BF16 || fb->c.kvdt != HDT_BF16 || fb->c.d != 576 || fb->c.dv != 512)
            return hresult_error(r, "case '%s': rec=1 cases are bf16 MLA 576 / 512 (the record's RoPE part is bf16)",
                                 c->text),
                   -1;
        if (!(t->caps.dsa_ops & SGL_ATTN_DSA_KV_FP8_RECORD))
            return hresult_unsupported(r, "the probe does not declare SGL_ATTN_DSA_KV_FP8_RECORD in caps.dsa_ops"), -1;
        if (rec_build(fb, &t->dev, &x->rec, &x->rec_want, *seed, err, sizeof err))
            return hresult_error(r, "%s", err), -1;
        fb->layer.k_cache = &x->rec.t;
        fb->model.kv_dtype = SGL_ATTN_DT_FP8_E4M3; /* what an engine with the record declares (fp8 KV) */
    }
    fb->model.index_topk = (int32_t)topk; /* a DSA model: the indexer's DeepSeek-V3.2 shape */
    fb->model.index_n_heads = 64;
    fb->model.index_head_dim = 128;
    fb->args.topk_indices = &x->ti.t;
    return 0;
}

static void sparse_check(const harness_family *fam, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    char err[768];
    sparse_run x;
    if (sparse_stage(fam, t, c, &seed, &x, r)) {
        sparse_run_free(&x);
        return;
    }
    fa_batch *fb = &x.fb;
    sgl_attn_backend *b = NULL;
    if (htarget_create(t, &fb->model, &fb->opts, &b, r) != SGL_ATTN_OK) {
        sparse_run_free(&x);
        return;
    }
    const char *what;
    double t0 = htime_now();
    int rc = fa_batch_call(fb, b, &what);
    if (rc) {
        hresult_from_call(r, b, what, rc);
    } else if (hdev_sync(&t->dev, err, sizeof err)) {
        hresult_fail(r, "after %s: %s", what, err);
    } else {
        r->ms_plugin = 1e3 * (htime_now() - t0);
        t0 = htime_now();
        htensor *in[] = {&x.ti};
        if (sparse_reference(fb, x.rec_want, x.rows, x.topk, err, sizeof err)) {
            hresult_error(r, "%s", err);
        } else if (!inputs_kept(in, 1, r) && !(x.recp && rec_verify(fb, &x.rec, x.rec_want, r))) {
            r->ms_ref = 1e3 * (htime_now() - t0);
            if (x.recp) fb->c.save = 0; /* the bf16 pool was not the layer's: it must be as it was */
            fa_batch_verify(fb, r);
        }
    }
    htarget_destroy(t, b);
    sparse_run_free(&x);
}

/* attnctl bench of a sparse case: staged once, metadata once, then the
 * forward alone per call (the save too where the case has save=1). */
typedef struct sparse_bench {
    sparse_run x;
    sgl_attn_backend *b;
    const htarget *t;
} sparse_bench;

static int sparse_bench_call(void *state, char *err, size_t err_size) {
    sparse_bench *s = state;
    int rc = s->x.fb.c.mode == SGL_ATTN_MODE_DECODE ? sgl_attn_forward_decode(s->b, &s->x.fb.args)
                                                    : sgl_attn_forward_extend(s->b, &s->x.fb.args);
    if (rc) snprintf(err, err_size, "forward returned %s: %s", sgl_attn_status_name(rc), sgl_attn_last_error(s->b));
    return rc ? -1 : 0;
}

static void sparse_bench_release(void *state) {
    sparse_bench *s = state;
    if (!s) return;
    htarget_destroy(s->t, s->b);
    sparse_run_free(&s->x);
    free(s);
}

/* FLOPs as FlashMLA counts them: 2 * tokens * topk * hq * (576 + 512), the
 * full row width (-1 entries included); bytes: each row entry's pool row
 * (1152 B bf16, 656 B the record), q in and out out. */
static int sparse_bench_prepare(const harness_family *fam, const htarget *t, const hcase *c, uint64_t seed, hbench *hb,
                                hresult *r) {
    sparse_bench *s = calloc(1, sizeof *s);
    if (!s) return hresult_error(r, "out of host memory"), -1;
    s->t = t;
    if (sparse_stage(fam, t, c, &seed, &s->x, r)) {
        sparse_bench_release(s);
        return -1;
    }
    const fa_batch *fb = &s->x.fb;
    if (htarget_create(t, &fb->model, &fb->opts, &s->b, r) != SGL_ATTN_OK) {
        s->b = NULL;
        sparse_bench_release(s);
        return -1;
    }
    int rc = sgl_attn_init_forward_metadata(s->b, &s->x.fb.batch);
    if (rc) {
        hresult_from_call(r, s->b, "init_forward_metadata", rc);
        sparse_bench_release(s);
        return -1;
    }
    const double T = (double)fb->T, hq = (double)fb->c.hq, d = (double)fb->c.d, dv = (double)fb->c.dv;
    const double esz = (double)hdtype_size(fb->c.dt);
    hb->state = s;
    hb->call = sparse_bench_call;
    hb->release = sparse_bench_release;
    hb->flops = 2.0 * T * (double)s->x.topk * hq * (d + dv);
    hb->bytes = T * (double)s->x.topk * (s->x.recp ? (double)REC_BYTES : d * esz) + T * hq * (d + dv) * esz;
    return 0;
}

const harness_family harness_family_dsa_sparse = {
    .name = "dsa_sparse",
    .modes = sparse_modes,
    .applies = sparse_applies,
    .matrix = sparse_matrix,
    .quick_matrix = sparse_quick,
    .bench_cases = sparse_quick,
    .check = sparse_check,
    .bench_prepare = sparse_bench_prepare,
};

/* ============================================================ indexer */

static const char *const indexer_modes[] = {"indexer_decode", "indexer_extend", "indexer_verify", NULL};

/* ih, id: index heads and head dim; dtype: of the index q and k; save=0:
 * the new keys are in the cache already; pow2=1: power-of-two scales. */
static const char *const indexer_matrix[] = {
    "indexer_decode:b=4,l=600,ih=8,id=128,dtype=bf16,page=64,topk=64,ragged=1",
    "indexer_decode:b=3,l=300,ih=16,id=128,dtype=f32,page=1,topk=512",
    "indexer_decode:b=2,l=3000,ih=64,id=128,dtype=bf16,page=64,topk=2048,ragged=1",
    "indexer_decode:b=2,l=300,ih=64,id=128,dtype=bf16,page=64,topk=128,save=0",
    "indexer_decode:b=3,l=300,ih=8,id=128,dtype=f16,page=16,topk=64,idx=64,pow2=1,ragged=1",
    /* fp8 e4m3 index queries (their scale folded into the weights by the engine) */
    "indexer_decode:b=3,l=500,ih=64,id=128,dtype=bf16,qdtype=fp8_e4m3,page=64,topk=256,ragged=1",
    "indexer_extend:b=3,l=300,q=100,ih=8,id=128,dtype=bf16,page=16,topk=32,ragged=1",
    "indexer_extend:b=2,l=200,q=200,ih=4,id=256,dtype=f16,page=64,topk=48,pow2=1",
    "indexer_extend:b=2,l=400,q=120,ih=16,id=128,dtype=f32,page=1,topk=256,ragged=1",
    "indexer_verify:b=2,l=400,q=3,ih=8,id=128,dtype=bf16,page=16,topk=64",
    "indexer_verify:b=3,l=200,q=4,ih=8,id=256,dtype=f32,page=64,topk=16,ragged=1",
    /* a tree verify's batch: the selection stays causal by position (the mask is attention's) */
    "indexer_verify:b=3,l=300,q=4,ih=8,id=128,dtype=bf16,page=16,topk=64,tree=1,ragged=1",
    NULL,
};

static const char *const indexer_quick[] = {
    "indexer_decode:b=3,l=300,ih=8,id=128,dtype=bf16,page=16,topk=64,ragged=1",
    "indexer_extend:b=2,l=200,q=80,ih=4,id=256,dtype=f32,page=64,topk=32,pow2=1,ragged=1",
    "indexer_verify:b=2,l=200,q=3,ih=8,id=128,dtype=f16,page=1,topk=100",
    NULL,
};

static const char *const indexer_keys[] = {"b",  "l",    "q",  "prefix", "page", "ragged", "idx",  "seed", "tree",
                                           "ih", "id", "dtype", "topk",  "save", "pow2", "qdtype", NULL};
static const char *const indexer_drop[] = {"ih", "id", "dtype", "topk", "save", "pow2", "qdtype", NULL};
/* the MLA layer around the indexer (its pool is not read) */
static const char *const indexer_add[] = {"mla", "1", "hq", "16", "dtype", "bf16", NULL, NULL};

/* Score tolerance per unit of sum |terms|: the plugin may accumulate in fp32
 * (and round q to a narrower type first when it is f16/bf16). */
static double score_tol(hdtype dt) {
    return dt == HDT_F32 ? 1e-5 : dt == HDT_F64 ? 1e-12 : 2e-3;
}

typedef struct idx_state {
    long ih, id, topk, save, pow2;
    hdtype dt, qdt; /* k's (and by default q's); q's */
    htensor q, w, k, kc, ks, out;
    uint8_t *kc_want;  /* the index-key cache after the call */
    float *ks_want;
} idx_state;

/* The expected cache: as staged, with each new token's key quantised into
 * its slot when save is set. */
static void idx_expected(idx_state *x, const fa_batch *fb) {
    const int64_t nblk = x->id / SGL_ATTN_DSA_SCALE_BLOCK;
    memcpy(x->kc_want, htensor_cdata(&x->kc), x->kc.bytes);
    memcpy(x->ks_want, htensor_cdata(&x->ks), x->ks.bytes);
    if (!x->save) return;
    for (int t = 0; t < fb->T; t++) {
        const int64_t slot = htensor_get_index(&fb->ocl, (size_t)t);
        for (int64_t blk = 0; blk < nblk; blk++) {
            const size_t i0 = (size_t)t * (size_t)x->id + (size_t)(blk * SGL_ATTN_DSA_SCALE_BLOCK);
            float amax = 0;
            for (int e = 0; e < SGL_ATTN_DSA_SCALE_BLOCK; e++) {
                const float v = fabsf((float)hdtype_load(x->dt, htensor_cdata(&x->k), i0 + (size_t)e));
                amax = v > amax ? v : amax;
            }
            const float s = block_scale(amax, (int)x->pow2);
            x->ks_want[slot * nblk + blk] = s;
            for (int e = 0; e < SGL_ATTN_DSA_SCALE_BLOCK; e++) {
                float y = (float)hdtype_load(x->dt, htensor_cdata(&x->k), i0 + (size_t)e) / s;
                x->kc_want[slot * x->id + blk * SGL_ATTN_DSA_SCALE_BLOCK + e] = e4m3_round(y);
            }
        }
    }
}

/* The cache after the call, byte for byte and scale for scale. */
static int idx_check_cache(const idx_state *x, const fa_batch *fb, hresult *r) {
    const uint8_t *kc = htensor_cdata(&x->kc);
    const float *ks = htensor_cdata(&x->ks);
    const int64_t nblk = x->id / SGL_ATTN_DSA_SCALE_BLOCK;
    for (int64_t s = 0; s < fb->slots; s++) {
        for (int64_t b = 0; b < nblk; b++)
            if (memcmp(&ks[s * nblk + b], &x->ks_want[s * nblk + b], sizeof(float)))
                return hresult_fail(r, "index_k_scale[%lld][%lld] = %.9g; expected %.9g (%s)", (long long)s,
                                    (long long)b, (double)ks[s * nblk + b], (double)x->ks_want[s * nblk + b],
                                    x->save ? "per-128 amax / 448 of the saved key, or unchanged" : "unchanged"),
                       -1;
        for (int64_t e = 0; e < x->id; e++)
            if (kc[s * x->id + e] != x->kc_want[s * x->id + e])
                return hresult_fail(r, "index_k_cache[%lld][%lld] = 0x%02x; expected 0x%02x (%s)", (long long)s,
                                    (long long)e, kc[s * x->id + e], x->kc_want[s * x->id + e],
                                    x->save ? "the saved key in e4m3, round to nearest even, or unchanged"
                                            : "unchanged"),
                       -1;
    }
    return 0;
}

typedef struct scored {
    double v, bound;
    int64_t pos;
} scored;

static int by_score_desc(const void *pa, const void *pb) {
    const scored *a = pa, *b = pb;
    return a->v > b->v ? -1 : a->v < b->v ? 1 : (a->pos > b->pos) - (a->pos < b->pos);
}

/* Every row: the right count of valid entries and of -1, each valid entry a
 * distinct slot of the query's request at a position <= its own (causal),
 * and no selected score below the topk-th best, nor an unselected one above
 * it, by more than the tolerance. */
static int idx_check_rows(const idx_state *x, const fa_batch *fb, hresult *r) {
    const int32_t *out = htensor_cdata(&x->out);
    const int64_t nblk = x->id / SGL_ATTN_DSA_SCALE_BLOCK;
    int64_t *pos_of = malloc(sizeof(int64_t) * (size_t)fb->slots);
    int64_t *picked = calloc((size_t)fb->slots, sizeof(int64_t));
    scored *sc = malloc(sizeof(scored) * (size_t)(fb->cols > 0 ? fb->cols : 1));
    double *score = malloc(sizeof(double) * (size_t)(fb->cols > 0 ? fb->cols : 1));
    double *qd = malloc(sizeof(double) * (x->q.count ? x->q.count : 1));
    int rc = -1;
    if (!pos_of || !picked || !sc || !score || !qd) {
        hresult_error(r, "out of host memory checking topk_indices");
        goto done;
    }
    for (size_t e = 0; e < x->q.count; e++) qd[e] = hdtype_load(x->qdt, htensor_cdata(&x->q), e);
    for (int i = 0, t = 0; i < fb->bs; i++) {
        for (int64_t s = 0; s < fb->slots; s++) pos_of[s] = -1;
        for (int64_t p = 0; p < fb->seq[i]; p++) pos_of[slot_of(fb, i, p)] = p;
        for (int j = 0; j < fb->n_new[i]; j++, t++) {
            const int64_t pos = (int64_t)fb->prefix[i] + j, n = pos + 1, want = n < x->topk ? n : x->topk;
            double tol_scale = 0;
            for (int64_t p = 0; p < n; p++) {
                const int64_t slot = slot_of(fb, i, p);
                double total = 0, bound = 0;
                for (long h = 0; h < x->ih; h++) {
                    const size_t q0 = ((size_t)t * (size_t)x->ih + (size_t)h) * (size_t)x->id;
                    double dot = 0, mag = 0;
                    for (int64_t b = 0; b < nblk; b++) {
                        double part = 0, pmag = 0;
                        for (int e = 0; e < SGL_ATTN_DSA_SCALE_BLOCK; e++) {
                            const int64_t de = b * SGL_ATTN_DSA_SCALE_BLOCK + e;
                            const double term = qd[q0 + (size_t)de] * e4m3_value(x->kc_want[slot * x->id + de]);
                            part += term;
                            pmag += fabs(term);
                        }
                        dot += part * (double)x->ks_want[slot * nblk + b];
                        mag += pmag * (double)x->ks_want[slot * nblk + b];
                    }
                    const double w = ((const float *)htensor_cdata(&x->w))[(size_t)t * (size_t)x->ih + (size_t)h];
                    total += w * (dot > 0 ? dot : 0);
                    bound += fabs(w) * mag;
                }
                score[p] = total;
                sc[p].v = total;
                sc[p].bound = bound;
                sc[p].pos = p;
                tol_scale = bound > tol_scale ? bound : tol_scale;
            }
            qsort(sc, (size_t)n, sizeof *sc, by_score_desc);
            const double kth = sc[want - 1].v, tol = score_tol(x->qdt) * tol_scale + 1e-300;
            const int32_t *row = out + (int64_t)t * x->topk;
            int64_t valid = 0;
            for (int64_t e = 0; e < x->topk; e++) {
                const int32_t v = row[e];
                if (v == DSA_UNWRITTEN) {
                    hresult_fail(r, "topk_indices[%d][%lld] was never written", t, (long long)e);
                    goto done;
                }
                if (v == -1) continue;
                if (v < 0 || v >= fb->slots || pos_of[v] < 0) {
                    hresult_fail(r, "topk_indices[%d][%lld] = %d is not a slot of request %d's tokens (query at "
                                    "position %lld)", t, (long long)e, v, i, (long long)pos);
                    goto done;
                }
                if (pos_of[v] > pos) {
                    hresult_fail(r, "topk_indices[%d][%lld] = %d is the token at position %lld, after the query's "
                                    "position %lld (not causal)", t, (long long)e, v, (long long)pos_of[v],
                                 (long long)pos);
                    goto done;
                }
                if (picked[v] == t + 1) {
                    hresult_fail(r, "topk_indices[%d] names slot %d twice", t, v);
                    goto done;
                }
                picked[v] = t + 1;
                valid++;
                if (score[pos_of[v]] < kth - tol) {
                    hresult_fail(r, "topk_indices[%d] keeps position %lld (score %.9g) but the %lld-th best score is "
                                    "%.9g (tolerance %.3g)", t, (long long)pos_of[v], score[pos_of[v]],
                                 (long long)want, kth, tol);
                    goto done;
                }
            }
            if (valid != want) {
                hresult_fail(r, "topk_indices[%d] has %lld valid entries; expected %lld (min(topk %ld, %lld tokens at "
                                "positions 0..%lld)), the rest -1", t, (long long)valid, (long long)want, x->topk,
                             (long long)n, (long long)pos);
                goto done;
            }
            for (int64_t p = 0; p < n; p++)
                if (picked[slot_of(fb, i, p)] != t + 1 && score[p] > kth + tol) {
                    hresult_fail(r, "topk_indices[%d] leaves out position %lld (score %.9g) though the %lld-th best "
                                    "score is %.9g (tolerance %.3g)", t, (long long)p, score[p], (long long)want, kth,
                                 tol);
                    goto done;
                }
        }
    }
    rc = 0;
done:
    free(pos_of);
    free(picked);
    free(sc);
    free(score);
    free(qd);
    return rc;
}

static int indexer_applies(const harness_family *f, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps) {
    (void)f;
    return applies_op(info, caps, SGL_ATTN_DSA_INDEXER);
}

static void idx_free(idx_state *x) {
    htensor *all[] = {&x->q, &x->w, &x->k, &x->kc, &x->ks, &x->out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) htensor_free(all[i]);
    free(x->kc_want);
    free(x->ks_want);
}

static void indexer_check(const harness_family *fam, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    char err[768];
    idx_state x;
    memset(&x, 0, sizeof x);
    e4m3_init();
    if (hcase_check_keys(c, indexer_keys, err, sizeof err) ||
        hcase_int(c, "ih", 8, 1, 256, &x.ih, err, sizeof err) ||
        hcase_int(c, "id", 128, SGL_ATTN_DSA_SCALE_BLOCK, 4096, &x.id, err, sizeof err) ||
        hcase_int(c, "topk", 64, 1, DSA_MAX_TOPK, &x.topk, err, sizeof err) ||
        hcase_int(c, "save", 1, 0, 1, &x.save, err, sizeof err) ||
        hcase_int(c, "pow2", 0, 0, 1, &x.pow2, err, sizeof err) ||
        hcase_dtype(c, "dtype", HDT_BF16, &x.dt, err, sizeof err) ||
        hcase_dtype(c, "qdtype", x.dt, &x.qdt, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return;
    }
    if (x.id % SGL_ATTN_DSA_SCALE_BLOCK || x.dt == HDT_F64 || x.dt == HDT_FP8_E4M3 || x.qdt == HDT_F64) {
        hresult_error(r, "case '%s': id is a multiple of %d, dtype f32, f16 or bf16, qdtype those or fp8_e4m3",
                      c->text, SGL_ATTN_DSA_SCALE_BLOCK);
        return;
    }
    fa_batch fb;
    if (build(fam, t, c, indexer_drop, indexer_add, &seed, &fb, SGL_ATTN_DSA_INDEXER, r)) return;
    const int64_t T = fb.T, nblk = x.id / SGL_ATTN_DSA_SCALE_BLOCK;
    const int64_t sq[3] = {T, x.ih, x.id}, sw[2] = {T, x.ih}, sk[2] = {T, x.id}, sc[2] = {fb.slots, x.id}, ss[2] = {fb.slots, nblk},
                  so[2] = {T, x.topk};
    x.kc_want = malloc((size_t)(fb.slots * x.id));
    x.ks_want = malloc(sizeof(float) * (size_t)(fb.slots * nblk));
    if (!x.kc_want || !x.ks_want || htensor_alloc(&x.q, &t->dev, "indexer q", x.qdt, 3, sq, err, sizeof err) ||
        htensor_alloc(&x.w, &t->dev, "weights", HDT_F32, 2, sw, err, sizeof err) ||
        htensor_alloc(&x.k, &t->dev, "indexer k", x.dt, 2, sk, err, sizeof err) ||
        htensor_alloc(&x.kc, &t->dev, "index_k_cache", HDT_FP8_E4M3, 2, sc, err, sizeof err) ||
        htensor_alloc(&x.ks, &t->dev, "index_k_scale", HDT_F32, 2, ss, err, sizeof err) ||
        htensor_alloc(&x.out, &t->dev, "topk_indices", HDT_I32, 2, so, err, sizeof err)) {
        hresult_error(r, "%s", x.kc_want && x.ks_want ? err : "out of host memory");
        goto done;
    }
    hrng rng;
    hrng_seed(&rng, seed ^ 0x1d3eu);
    htensor_fill_normal(&x.q, &rng, 1.0);
    htensor_fill_normal(&x.w, &rng, 1.0);
    htensor_fill_normal(&x.k, &rng, 1.0);
    /* a later block of each key larger, so the blocks' scales differ */
    for (int64_t tk = 0; tk < T; tk++)
        for (int64_t e = SGL_ATTN_DSA_SCALE_BLOCK; e < x.id; e++) {
            const size_t i = (size_t)(tk * x.id + e);
            hdtype_store(x.dt, htensor_data(&x.k), i, 8.0 * hdtype_load(x.dt, htensor_cdata(&x.k), i));
        }
    uint8_t *kc = htensor_data(&x.kc);
    for (size_t i = 0; i < x.kc.bytes; i++) {
        uint8_t b = (uint8_t)hrng_next(&rng);
        kc[i] = (b & 0x7f) == 0x7f ? b ^ 1 : b; /* no NaN codes */
    }
    float *ks = htensor_data(&x.ks);
    for (int64_t i = 0; i < fb.slots * nblk; i++) ks[i] = (float)(ldexp(1.0, -7) * (0.5 + 1.5 * hrng_uniform(&rng)));
    for (int64_t i = 0; i < T * x.topk; i++) htensor_set_index(&x.out, (size_t)i, DSA_UNWRITTEN);
    htensor *all[] = {&x.q, &x.w, &x.k, &x.kc, &x.ks, &x.out};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (htensor_upload(all[i], err, sizeof err)) {
            hresult_error(r, "%s", err);
            goto done;
        }
    idx_expected(&x, &fb);
    fb.model.index_topk = (int32_t)x.topk;
    fb.model.index_n_heads = (int32_t)x.ih;
    fb.model.index_head_dim = (int32_t)x.id;
    sgl_attn_indexer_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layer_id = fb.layer.layer_id;
    a.topk = (int32_t)x.topk;
    a.save_index_k = (int32_t)x.save;
    a.scale_pow2 = (int32_t)x.pow2;
    a.batch = &fb.batch;
    a.q = &x.q.t;
    a.weights = &x.w.t;
    a.k = x.save ? &x.k.t : NULL;
    a.index_k_cache = &x.kc.t;
    a.index_k_scale = &x.ks.t;
    a.topk_indices = &x.out.t;
    sgl_attn_backend *b = NULL;
    if (htarget_create(t, &fb.model, &fb.opts, &b, r) != SGL_ATTN_OK) goto done;
    const char *what = "init_forward_metadata";
    double t0 = htime_now();
    int rc = sgl_attn_init_forward_metadata(b, &fb.batch);
    if (!rc) {
        what = "indexer_topk";
        rc = sgl_attn_indexer_topk(b, &a);
    }
    if (rc) {
        hresult_from_call(r, b, what, rc);
    } else if (hdev_sync(&t->dev, err, sizeof err)) {
        hresult_fail(r, "after %s: %s", what, err);
    } else {
        r->ms_plugin = 1e3 * (htime_now() - t0);
        t0 = htime_now();
        htensor *in[] = {&x.q, &x.w, &x.k, &fb.r2t, &fb.req_idx, &fb.seq_lens, &fb.prefix_lens, &fb.ext_lens,
                         &fb.ocl, &fb.positions};
        if (!inputs_kept(in, sizeof in / sizeof in[0], r)) {
            if (htensor_download(&x.out, err, sizeof err) || htensor_download(&x.kc, err, sizeof err) ||
                htensor_download(&x.ks, err, sizeof err))
                hresult_fail(r, "%s", err);
            else if (!idx_check_cache(&x, &fb, r) && !idx_check_rows(&x, &fb, r))
                r->verdict = HV_PASS;
            r->ms_ref = 1e3 * (htime_now() - t0);
        }
    }
    htarget_destroy(t, b);
done:
    idx_free(&x);
    fa_batch_free(&fb);
}

const harness_family harness_family_dsa_indexer = {
    .name = "dsa_indexer",
    .modes = indexer_modes,
    .applies = indexer_applies,
    .matrix = indexer_matrix,
    .quick_matrix = indexer_quick,
    .bench_cases = indexer_quick,
    .check = indexer_check,
    .bench_prepare = NULL,
};
