/* paged12_family.c - ABI 1.2 additions on the paged forwards, each a mode:
 *   lse        forward_args.lse: the natural-log LSE of every query row
 *   fp8        an fp8 KV pool (e4m3 private code, DLPack 1.1's e4m3fn, e5m2)
 *              with k_scale / v_scale as floats or scale tensors (scalet=1)
 *   ropesplit  MLA's q_rope / k_rope beside the latent q / k
 * A case is a full-attention case (key `op`: decode, extend or verify; the
 * other keys as docs/harness.md lists them) laid out and staged by
 * full_batch.c, plus what its addition adds; it is judged against this
 * file's own float64 reference, on any plugin whose caps declare the
 * addition ("not supported" with the reason otherwise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

static const char *const modes[] = {"lse", "fp8", "ropesplit", NULL};

/* keys this file reads itself; the rest go to fa_case_parse */
static const char *const own_keys[] = {"op", "lse", "kvdtype", "kscale", "vscale", "scalet", NULL};
static const char *const fa_keys[] = {"b",     "l",    "q",    "prefix", "hq",    "hkv",    "d",    "dv",
                                      "dtype", "page", "window", "softcap", "sinks", "mla",  "rank", "rope",
                                      "ragged", "scale", "idx", "save",   "seed",  NULL};

static const char *const matrix[] = {
    "lse:op=extend,b=4,l=500,q=150,hq=8,hkv=2,d=128,dtype=bf16,page=16,ragged=1",
    "lse:op=decode,b=1,l=3000,hq=8,hkv=2,d=128,dtype=f32,page=16",
    "lse:op=decode,b=4,l=600,hq=32,hkv=8,d=128,dtype=f16,page=1,ragged=1",
    "lse:op=verify,b=3,l=400,q=4,hq=8,hkv=2,d=128,dtype=bf16,page=16,window=64,sinks=1,softcap=30",
    "lse:op=extend,b=2,l=300,q=100,hq=8,hkv=2,d=192,dv=128,dtype=bf16,page=64",
    "lse:op=decode,b=3,l=500,hq=16,mla=1,dtype=bf16,page=64,ragged=1",
    "fp8:op=decode,b=4,l=600,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=e4m3fn,kscale=0.5,vscale=0.25,page=16,ragged=1",
    "fp8:op=decode,b=3,l=500,hq=8,hkv=2,d=128,dtype=f16,kvdtype=e4m3,kscale=2,vscale=2,page=1",
    "fp8:op=decode,b=3,l=500,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e5m2,scalet=1,kscale=0.5,vscale=4,page=16",
    "fp8:op=extend,b=3,l=400,q=120,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e4m3fn,scalet=1,kscale=0.25,vscale=0.5,"
    "page=16,ragged=1",
    "fp8:op=verify,b=3,l=300,q=3,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e4m3fn,kscale=0.5,vscale=0.5,page=16",
    /* the LSE of the fp8 split extend (SM 9.0): the two parts' merge */
    "lse:op=extend,b=4,l=500,q=150,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=fp8_e4m3,kscale=0.5,vscale=0.25,"
    "page=16,ragged=1",
    "fp8:op=decode,b=3,l=400,hq=16,mla=1,dtype=bf16,kvdtype=e4m3fn,kscale=0.25,page=64",
    "fp8:op=decode,b=3,l=400,hq=16,mla=1,dtype=bf16,kvdtype=e4m3fn,scalet=1,kscale=0.25,page=64",
    "fp8:op=extend,b=2,l=300,q=60,hq=16,mla=1,dtype=f16,kvdtype=e4m3fn,scalet=1,kscale=0.5,page=16,ragged=1",
    "fp8:op=decode,b=3,l=400,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e4m3fn,kscale=0.004,page=16",
    "ropesplit:op=decode,b=4,l=500,hq=16,dtype=bf16,page=64,ragged=1",
    "ropesplit:op=extend,b=2,l=300,q=100,hq=16,dtype=bf16,page=64,ragged=1",
    "ropesplit:op=verify,b=2,l=400,q=2,hq=16,dtype=f16,page=16,lse=1",
    "ropesplit:op=decode,b=2,l=300,hq=16,dtype=bf16,kvdtype=e4m3fn,kscale=0.5,page=64",
    "ropesplit:op=verify,b=2,l=400,q=2,hq=16,dtype=f16,page=16",
    "ropesplit:op=verify,b=2,l=500,q=4,hq=16,dtype=bf16,page=64",
    "ropesplit:op=decode,b=3,l=600,hq=128,dtype=bf16,page=64",
    "ropesplit:op=decode,b=2,l=300,hq=16,dtype=bf16,kvdtype=e4m3fn,page=64",
    "ropesplit:op=verify,b=2,l=300,q=2,hq=16,dtype=bf16,kvdtype=e4m3fn,scalet=1,kscale=0.5,page=64",
    NULL,
};

static const char *const quick[] = {
    "lse:op=extend,b=3,l=300,q=100,hq=8,hkv=2,d=128,dtype=bf16,page=16,ragged=1,sinks=1",
    "fp8:op=decode,b=3,l=400,hq=8,hkv=2,d=128,dtype=bf16,kvdtype=e4m3fn,scalet=1,kscale=0.5,vscale=0.25,page=16",
    "fp8:op=extend,b=2,l=200,q=60,hq=8,hkv=2,d=128,dtype=f16,kvdtype=e5m2,kscale=2,vscale=0.5,page=16",
    "ropesplit:op=decode,b=2,l=300,hq=16,dtype=bf16,page=64,lse=1",
    NULL,
};

typedef struct p12 {
    fa_case f;
    int lse, split, scalet;
    double ks, vs; /* the pool's dequant scales (1 for a 16/32/64-bit pool) */
} p12;

static int in(const char *const *v, const char *k) {
    for (; *v; v++)
        if (!strcmp(*v, k)) return 1;
    return 0;
}

static int parse(const hcase *c, p12 *p, char *err, size_t err_size) {
    memset(p, 0, sizeof *p);
    const int m_lse = !strcmp(c->mode, "lse"), m_fp8 = !strcmp(c->mode, "fp8"), m_rope = !strcmp(c->mode, "ropesplit");
    for (size_t i = 0; i < c->n; i++)
        if (!in(own_keys, c->kv[i].key) && !in(fa_keys, c->kv[i].key)) {
            snprintf(err, err_size, "case '%s': unknown key '%s' (the %s mode takes op, lse, kvdtype, kscale, vscale, "
                                    "scalet and the full-attention keys but cross and enc)",
                     c->text, c->kv[i].key, c->mode);
            return -1;
        }
    /* the full-attention case under it: mode = op, its keys only */
    hcase fc = *c;
    const char *op = hcase_get(c, "op");
    snprintf(fc.mode, sizeof fc.mode, "%s", op ? op : "decode");
    fc.n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (in(fa_keys, c->kv[i].key)) fc.kv[fc.n++] = c->kv[i];
    if (m_rope && !hcase_get(c, "mla")) snprintf(fc.kv[fc.n].key, sizeof fc.kv[0].key, "mla"),
                                         snprintf(fc.kv[fc.n].val, sizeof fc.kv[0].val, "1"), fc.n++;
    if (fa_case_parse(&fc, &p->f, err, err_size)) return -1;
    long v;
    if (hcase_int(c, "lse", m_lse, 0, 1, &v, err, err_size)) return -1;
    p->lse = (int)v;
    if (hcase_int(c, "scalet", 0, 0, 1, &v, err, err_size)) return -1;
    p->scalet = (int)v;
    p->split = m_rope;
    if (m_rope && !p->f.mla) return snprintf(err, err_size, "case '%s': ropesplit is MLA's (mla=1)", c->text), -1;
    const char *kd = hcase_get(c, "kvdtype");
    p->f.kvdt = p->f.dt;
    if (kd && hdtype_parse(kd, &p->f.kvdt))
        return snprintf(err, err_size, "case '%s': kvdtype '%s' unknown (f32 f16 bf16 f64 e4m3 e4m3fn (fp8_e4m3) e5m2)", c->text,
                        kd),
               -1;
    const int fp8 = p->f.kvdt == HDT_FP8_E4M3 || p->f.kvdt == HDT_E4M3 || p->f.kvdt == HDT_E5M2;
    if (m_fp8 && !fp8) return snprintf(err, err_size, "case '%s': the fp8 mode needs kvdtype=e4m3, e4m3fn or e5m2", c->text), -1;
    if (!fp8 && !hdtype_is_float(p->f.kvdt)) return snprintf(err, err_size, "case '%s': kvdtype '%s'", c->text, kd), -1;
    if (hcase_num(c, "kscale", 1, 1e-6, 1e6, &p->ks, err, err_size) ||
        hcase_num(c, "vscale", p->f.mla ? p->ks : 1, 1e-6, 1e6, &p->vs, err, err_size))
        return -1;
    if (!fp8 && (p->ks != 1 || p->vs != 1 || p->scalet))
        return snprintf(err, err_size, "case '%s': kscale / vscale / scalet dequantise an fp8 pool", c->text), -1;
    if (p->f.mla && p->vs != p->ks)
        return snprintf(err, err_size, "case '%s': an MLA pool's value is its latent row: vscale = kscale", c->text), -1;
    return 0;
}

static int claimed(const p12 *p, const sgl_attn_caps *caps, char *why, size_t why_size) {
    if (!fa_case_claimed(&p->f, caps, why, why_size)) return 0;
    const int fp8 = p->f.kvdt == HDT_FP8_E4M3 || p->f.kvdt >= HDT_E4M3;
    const struct {
        int need;
        uint32_t bit;
        const char *name;
    } f[] = {{p->lse, SGL_ATTN_FEAT_LSE, "SGL_ATTN_FEAT_LSE (the LSE output)"},
             {fp8 && (p->scalet || p->ks != 1 || p->vs != 1), SGL_ATTN_FEAT_FP8_SCALES,
              "SGL_ATTN_FEAT_FP8_SCALES (fp8 pool scales)"},
             {p->split, SGL_ATTN_FEAT_MLA_ROPE_SPLIT, "SGL_ATTN_FEAT_MLA_ROPE_SPLIT (q_rope / k_rope)"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].need && !(caps->features & f[i].bit))
            return snprintf(why, why_size, "the probe does not claim %s", f[i].name), 0;
    return 1;
}

/* Everything a case adds to the full-attention batch. */
typedef struct p12_run {
    p12 p;
    fa_batch fb;
    htensor lse, ks_t, vs_t, q_lat, q_rope, k_lat, k_rope;
    double *lse_ref;
} p12_run;

#define ALLOC(t, name, dt, nd, ...)                                                   \
    do {                                                                              \
        const int64_t s_[] = {__VA_ARGS__};                                           \
        if (htensor_alloc(&x->t, dev, name, dt, nd, s_, err, err_size)) return -1;    \
    } while (0)

static int stage_extras(p12_run *x, const hdev *dev, char *err, size_t err_size) {
    fa_batch *fb = &x->fb;
    const fa_case *c = &fb->c;
    const int64_t T = fb->T;
    if (x->p.lse) {
        ALLOC(lse, "lse", HDT_F32, 2, T, c->hq);
        htensor_poison(&x->lse);
        if (htensor_upload(&x->lse, err, err_size)) return -1;
        fb->args.lse = &x->lse.t;
    }
    fb->layer.k_scale = (float)x->p.ks;
    fb->layer.v_scale = (float)x->p.vs;
    if (x->p.scalet) { /* the tensors hold the scales; the floats stay at their default */
        ALLOC(ks_t, "k_scale_tensor", HDT_F32, 1, 1);
        *(float *)htensor_data(&x->ks_t) = (float)x->p.ks;
        if (htensor_upload(&x->ks_t, err, err_size)) return -1;
        fb->layer.k_scale_tensor = &x->ks_t.t;
        fb->layer.k_scale = 1;
        if (!c->mla) {
            ALLOC(vs_t, "v_scale_tensor", HDT_F32, 1, 1);
            *(float *)htensor_data(&x->vs_t) = (float)x->p.vs;
            if (htensor_upload(&x->vs_t, err, err_size)) return -1;
            fb->layer.v_scale_tensor = &x->vs_t.t;
            fb->layer.v_scale = 1;
        }
    }
    if (x->p.split) {
        const int64_t rank = c->rank, rope = c->rope, esz = (int64_t)hdtype_size(c->dt);
        ALLOC(q_lat, "q (latent)", c->dt, 3, T, c->hq, rank);
        ALLOC(q_rope, "q_rope", c->dt, 3, T, c->hq, rope);
        ALLOC(k_lat, "k (latent)", c->dt, 3, T, 1, rank);
        ALLOC(k_rope, "k_rope", c->dt, 3, T, 1, rope);
        const unsigned char *q = htensor_cdata(&fb->q), *k = htensor_cdata(&fb->k);
        for (int64_t r = 0; r < T * c->hq; r++) {
            memcpy((unsigned char *)htensor_data(&x->q_lat) + r * rank * esz, q + r * c->d * esz, (size_t)(rank * esz));
            memcpy((unsigned char *)htensor_data(&x->q_rope) + r * rope * esz, q + (r * c->d + rank) * esz,
                   (size_t)(rope * esz));
        }
        for (int64_t t = 0; t < T; t++) {
            memcpy((unsigned char *)htensor_data(&x->k_lat) + t * rank * esz, k + t * c->d * esz, (size_t)(rank * esz));
            memcpy((unsigned char *)htensor_data(&x->k_rope) + t * rope * esz, k + (t * c->d + rank) * esz,
                   (size_t)(rope * esz));
        }
        htensor *all[] = {&x->q_lat, &x->q_rope, &x->k_lat, &x->k_rope};
        for (int i = 0; i < 4; i++)
            if (htensor_upload(all[i], err, err_size)) return -1;
        fb->args.q = &x->q_lat.t;
        fb->args.q_rope = &x->q_rope.t;
        fb->args.k = c->save ? &x->k_lat.t : NULL;
        fb->args.k_rope = c->save ? &x->k_rope.t : NULL;
    }
    return 0;
}

static void p12_free(p12_run *x) {
    htensor *all[] = {&x->lse, &x->ks_t, &x->vs_t, &x->q_lat, &x->q_rope, &x->k_lat, &x->k_rope};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) htensor_free(all[i]);
    free(x->lse_ref);
    fa_batch_free(&x->fb);
}

/* The pool as it should be after the call, dequantised: the initial one
 * with each new token's k / v stored (k / scale rounded to the pool dtype). */
static double *expected_pool(const p12_run *x, const htensor *pool, const unsigned char *init, const htensor *src,
                             double scale) {
    const fa_batch *fb = &x->fb;
    double *e = malloc(sizeof(double) * (pool->count ? pool->count : 1));
    if (!e) return NULL;
    for (size_t i = 0; i < pool->count; i++) e[i] = hdtype_load(pool->dt, init, i) * scale;
    if (!fb->c.save) return e;
    const size_t row = pool->count / (size_t)fb->slots;
    for (int64_t t = 0; t < fb->T; t++) {
        const int64_t slot = htensor_get_index(&fb->ocl, (size_t)t);
        for (size_t d = 0; d < row; d++)
            e[(size_t)slot * row + d] =
                hdtype_round(pool->dt, hdtype_load(src->dt, htensor_cdata(src), (size_t)t * row + d) / scale) * scale;
    }
    return e;
}

/* float64 attention over the expected pool: fb->ref and x->lse_ref. */
static int reference(p12_run *x, const double *kp, const double *vp) {
    fa_batch *fb = &x->fb;
    const fa_case *c = &fb->c;
    const int G = (int)(c->hq / c->hkv);
    const int64_t krow = c->hkv * c->d, vrow = c->mla ? krow : c->hkv * c->dv;
    fb->ref = malloc(sizeof(double) * (size_t)(fb->T * c->hq * c->dv + 1));
    x->lse_ref = malloc(sizeof(double) * (size_t)(fb->T * c->hq + 1));
    double *sc = malloc(sizeof(double) * (size_t)(fb->cols + 1));
    double *qd = malloc(sizeof(double) * (fb->q.count + 1)), *acc = malloc(sizeof(double) * (size_t)(c->dv + 1));
    if (!fb->ref || !x->lse_ref || !sc || !qd || !acc) return free(sc), free(qd), free(acc), -1;
    for (size_t e = 0; e < fb->q.count; e++) qd[e] = hdtype_load(c->dt, htensor_cdata(&fb->q), e);
    const float *sinks = htensor_cdata(&fb->sinks);
    int64_t tok = 0;
    for (int i = 0; i < fb->bs; i++)
        for (int j = 0; j < fb->n_new[i]; j++, tok++) {
            int64_t lo, hi;
            fa_batch_visible(fb, i, j, &lo, &hi);
            for (int h = 0; h < c->hq; h++) {
                const int kh = h / G;
                double mx = -INFINITY;
                for (int64_t p = lo; p < hi; p++) {
                    const int64_t slot = htensor_get_index(&fb->r2t, (size_t)(fb->row[i] * fb->cols + p));
                    double dot = 0;
                    const double *qr = qd + (tok * c->hq + h) * c->d, *kr = kp + slot * krow + kh * c->d;
                    for (int d = 0; d < c->d; d++) dot += qr[d] * kr[d];
                    double s = dot * c->scale;
                    if (c->softcap > 0) s = c->softcap * tanh(s / c->softcap);
                    sc[p - lo] = s;
                    mx = s > mx ? s : mx;
                }
                double sum = 0;
                for (int64_t p = lo; p < hi; p++) sum += exp(sc[p - lo] - mx);
                x->lse_ref[tok * c->hq + h] = mx + log(sum); /* sinks excluded */
                double den = sum;
                if (c->sinks) den += exp((double)sinks[h] - mx);
                for (int d = 0; d < c->dv; d++) acc[d] = 0;
                for (int64_t p = lo; p < hi; p++) {
                    const int64_t slot = htensor_get_index(&fb->r2t, (size_t)(fb->row[i] * fb->cols + p));
                    const double w = exp(sc[p - lo] - mx);
                    const double *vr = c->mla ? kp + slot * krow : vp + slot * vrow + kh * c->dv;
                    for (int d = 0; d < c->dv; d++) acc[d] += w * vr[d];
                }
                for (int d = 0; d < c->dv; d++) fb->ref[(tok * c->hq + h) * c->dv + d] = acc[d] / den;
            }
        }
    free(sc), free(qd), free(acc);
    return 0;
}

/* One step of dtype t at magnitude |v| (its spacing there; subnormal: the least). */
static double step_of(hdtype t, double v) {
    const int mb = t == HDT_F32 ? 23 : t == HDT_F16 ? 10 : t == HDT_BF16 ? 7 : t == HDT_F64 ? 52 : t == HDT_E5M2 ? 2 : 3;
    const int emin = t == HDT_F16 ? -14 : t == HDT_F64 ? -1022 : t == HDT_E5M2 ? -14 : t == HDT_FP8_E4M3 || t == HDT_E4M3 ? -6 : -126;
    int e;
    frexp(fabs(v), &e);
    e -= 1;
    return ldexp(1.0, (e < emin ? emin : e) - mb);
}

/* The pool after the call against the expected one: slots no new token is
 * saved to unchanged, saved ones within one step of the pool dtype (the
 * division by the scale may round a tie the other way). */
static int pool_ok(const p12_run *x, const htensor *pool, const double *e, double scale, hresult *r) {
    const fa_batch *fb = &x->fb;
    const size_t row = pool->count / (size_t)fb->slots;
    unsigned char *saved = calloc((size_t)fb->slots, 1);
    if (!saved) return hresult_error(r, "out of host memory"), -1;
    for (int64_t t = 0; fb->c.save && t < fb->T; t++) saved[htensor_get_index(&fb->ocl, (size_t)t)] = 1;
    for (size_t i = 0; i < pool->count; i++) {
        const double have = hdtype_load(pool->dt, htensor_cdata(pool), i) * scale;
        const double tol = saved[i / row] ? step_of(pool->dt, e[i] / scale) * scale : 0;
        if (!(fabs(have - e[i]) <= tol)) {
            hresult_fail(r, "%s slot %zu element %zu = %.9g; expected %.9g (%s)", pool->name, i / row, i % row, have,
                         e[i], saved[i / row] ? "a saved new token" : "no new token is saved there");
            free(saved);
            return -1;
        }
    }
    free(saved);
    return 0;
}

static void check(const harness_family *fam, const htarget *t, const hcase *hc, uint64_t seed, hresult *r) {
    (void)fam;
    char err[768];
    p12_run x;
    memset(&x, 0, sizeof x);
    if (parse(hc, &x.p, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return;
    }
    if (x.p.f.has_seed) seed = x.p.f.seed;
    if (!claimed(&x.p, &t->caps, err, sizeof err)) {
        hresult_unsupported(r, "%s", err);
        return;
    }
    if (fa_batch_build(&x.fb, &x.p.f, &t->dev, seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return;
    }
    fa_batch *fb = &x.fb;
    snprintf(fb->model.name, sizeof fb->model.name, "%.63s", hc->text);
    sgl_attn_backend *b = NULL;
    if (stage_extras(&x, &t->dev, err, sizeof err)) {
        hresult_error(r, "%s", err);
        goto done;
    }
    if (htarget_create(t, &fb->model, &fb->opts, &b, r) != SGL_ATTN_OK) goto done;
    const char *what;
    double t0 = htime_now();
    int rc = fa_batch_call(fb, b, &what);
    if (rc) {
        hresult_from_call(r, b, what, rc);
        goto done;
    }
    if (hdev_sync(&t->dev, err, sizeof err)) {
        hresult_fail(r, "after %s: %s", what, err);
        goto done;
    }
    r->ms_plugin = 1e3 * (htime_now() - t0);
    htensor *dl[] = {&fb->q,  &fb->k,   &fb->v,     &fb->r2t,  &fb->ocl,    &fb->out,  &fb->k_cache,
                     &fb->v_cache, &x.lse, &x.ks_t, &x.vs_t, &x.q_lat, &x.q_rope, &x.k_lat, &x.k_rope};
    for (size_t i = 0; i < sizeof dl / sizeof dl[0]; i++)
        if (dl[i]->host && htensor_download(dl[i], err, sizeof err)) {
            hresult_fail(r, "%s", err);
            goto done;
        }
    t0 = htime_now();
    const double vs = x.p.f.mla ? x.p.ks : x.p.vs;
    /* the reference attends over the pool as a save leaves it, and the
     * plugin's pool is judged against the same (with q_rope / k_rope the
     * plugin got fb->k's rows in two parts: the saved row is the same) */
    double *kp = expected_pool(&x, &fb->k_cache, fb->k_init, &fb->k, x.p.ks);
    double *vp = fb->c.mla ? NULL : expected_pool(&x, &fb->v_cache, fb->v_init, &fb->v, vs);
    if (!kp || (!fb->c.mla && !vp) || reference(&x, kp, vp)) {
        hresult_error(r, "out of host memory for the float64 reference");
        free(kp), free(vp);
        goto done;
    }
    r->ms_ref = 1e3 * (htime_now() - t0);
    hcompare cmp;
    hcompare_run(&fb->out, fb->ref, &cmp);
    r->nmse = cmp.nmse;
    r->max_abs_err = cmp.max_abs_err;
    r->threshold = hthreshold(fb->c.dt);
    if (cmp.bad_kind) {
        hresult_fail(r, "out element %zu %s", cmp.first_bad, cmp.bad_kind == 2 ? "was never written" : "is NaN or Inf");
    } else if (!(cmp.nmse <= r->threshold)) {
        hresult_fail(r, "NMSE %.3g > %.3g (worst out element %zu = %.6g, reference %.6g)", cmp.nmse, r->threshold,
                     cmp.worst_index, hdtype_load(fb->out.dt, htensor_cdata(&fb->out), cmp.worst_index),
                     fb->ref[cmp.worst_index]);
    } else if (x.p.lse && (hcompare_run(&x.lse, x.lse_ref, &cmp), cmp.bad_kind || !(cmp.nmse <= hthreshold(HDT_F32)))) {
        if (cmp.bad_kind)
            hresult_fail(r, "lse element %zu %s", cmp.first_bad, cmp.bad_kind == 2 ? "was never written" : "is NaN or Inf");
        else
            hresult_fail(r, "lse NMSE %.3g > %.3g (worst element %zu = %.7g, reference %.7g)", cmp.nmse,
                         hthreshold(HDT_F32), cmp.worst_index, hdtype_load(HDT_F32, htensor_cdata(&x.lse), cmp.worst_index),
                         x.lse_ref[cmp.worst_index]);
    } else if (!pool_ok(&x, &fb->k_cache, kp, x.p.ks, r) && (fb->c.mla || !pool_ok(&x, &fb->v_cache, vp, vs, r))) {
        r->verdict = HV_PASS;
    }
    free(kp), free(vp);
done:
    if (b) htarget_destroy(t, b);
    p12_free(&x);
}


const harness_family harness_family_paged12 = {
    .name = "paged12",
    .modes = modes,
    .applies = harness_applies_full,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = NULL, /* no bench yet: attnctl bench times the full family */
    .check = check,
    .bench_prepare = NULL,
};
