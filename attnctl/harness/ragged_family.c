/* ragged_family.c - forward_ragged (ABI 1.2, SGL_ATTN_FEAT_RAGGED): K/V as
 * tensors with cu_seqlens, neither read from the pool nor written to it,
 * causal (bottom-right) or not, with the optional LSE output; DeepSeek's
 * MLA prefill shape (qk 192 / v 128) and d128.  Judged against this file's
 * own float64 reference on any plugin that declares the bit and offers the
 * op ("not supported" with the reason otherwise).
 *
 * Keys: b, lq (query tokens per request), lk (keys per request; default lq),
 * hq, hkv, d, dv, dtype, causal (1), lse (1), softcap, scale, ragged (lengths
 * vary: request 0 the shortest, the last the longest), idx (32/64), seed.
 *
 * attnctl bench times forward_ragged alone (inputs staged once); FLOPs are
 * 2 (d + dv) per visible (query, key) pair and q head, bytes q, k, v, out
 * and lse once each (docs/harness.md). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const modes[] = {"ragged", NULL};
static const char *const keys[] = {"b",  "lq",    "lk",   "hq",      "hkv",   "d",   "dv",   "dtype",
                                   "causal", "lse", "softcap", "scale", "ragged", "idx", "seed", NULL};

static const char *const matrix[] = {
    "ragged:b=4,lq=200,lk=600,hq=16,hkv=16,d=192,dv=128,dtype=bf16,ragged=1",
    "ragged:b=3,lq=150,lk=400,hq=16,hkv=16,d=192,dv=128,dtype=bf16,causal=0,ragged=1",
    "ragged:b=2,lq=256,hq=16,hkv=16,d=192,dv=128,dtype=f16",
    "ragged:b=4,lq=200,lk=600,hq=8,hkv=2,d=128,dtype=bf16,ragged=1",
    "ragged:b=3,lq=150,lk=400,hq=8,hkv=8,d=128,dtype=f32,causal=0,softcap=30,ragged=1",
    "ragged:b=2,lq=1,lk=3000,hq=16,hkv=16,d=192,dv=128,dtype=bf16,idx=64",
    "ragged:b=3,lq=100,lk=300,hq=16,hkv=16,d=192,dv=128,dtype=bf16,lse=0,ragged=1",
    NULL,
};
static const char *const quick[] = {
    "ragged:b=3,lq=100,lk=300,hq=8,hkv=8,d=192,dv=128,dtype=bf16,ragged=1",
    "ragged:b=2,lq=80,lk=200,hq=8,hkv=2,d=128,dtype=f16,causal=0,idx=64",
    NULL,
};

typedef struct rcase {
    long b, lq, lk, hq, hkv, d, dv, causal, lse, ragged, idx;
    double softcap, scale;
    hdtype dt;
    int has_seed;
    uint64_t seed;
} rcase;

static int parse(const hcase *c, rcase *f, char *err, size_t err_size) {
    memset(f, 0, sizeof *f);
    if (hcase_check_keys(c, keys, err, err_size)) return -1;
    HCASE_INT("b", 1, 1, 4096, f->b);
    HCASE_INT("lq", 128, 1, 1L << 20, f->lq);
    HCASE_INT("lk", f->lq, 1, 1L << 22, f->lk);
    HCASE_INT("hq", 16, 1, 1024, f->hq);
    HCASE_INT("hkv", f->hq, 1, 1024, f->hkv);
    HCASE_INT("d", 192, 1, 2048, f->d);
    HCASE_INT("dv", f->d == 192 ? 128 : f->d, 1, 2048, f->dv);
    HCASE_INT("causal", 1, 0, 1, f->causal);
    HCASE_INT("lse", 1, 0, 1, f->lse);
    HCASE_INT("ragged", 0, 0, 1, f->ragged);
    HCASE_INT("idx", 32, 32, 64, f->idx);
    if (f->hq % f->hkv) return snprintf(err, err_size, "case '%s': hq must be a multiple of hkv", c->text), -1;
    if (f->idx != 32 && f->idx != 64) return snprintf(err, err_size, "case '%s': idx is 32 or 64", c->text), -1;
    if (f->causal && f->lq > f->lk)
        return snprintf(err, err_size, "case '%s': causal needs lq <= lk (bottom-right: a query before key 0 sees none)",
                        c->text),
               -1;
    if (hcase_dtype(c, "dtype", HDT_BF16, &f->dt, err, err_size)) return -1;
    if (hcase_num(c, "softcap", 0, 0, 1e6, &f->softcap, err, err_size)) return -1;
    if (hcase_num(c, "scale", 1.0 / sqrt((double)f->d), 1e-6, 1e3, &f->scale, err, err_size)) return -1;
    if (hcase_get(c, "seed")) {
        long s;
        HCASE_INT("seed", 0, 0, __LONG_MAX__, s);
        f->has_seed = 1, f->seed = (uint64_t)s;
    }
    return 0;
}

static int claimed(const rcase *f, const sgl_attn_caps *c, char *why, size_t why_size) {
    if (!c->available) return snprintf(why, why_size, "device not available: %s", c->reason), 0;
    if (!(c->features & SGL_ATTN_FEAT_RAGGED))
        return snprintf(why, why_size, "the probe does not claim SGL_ATTN_FEAT_RAGGED (forward_ragged)"), 0;
    if (f->lse && !(c->features & SGL_ATTN_FEAT_LSE))
        return snprintf(why, why_size, "the probe does not claim SGL_ATTN_FEAT_LSE (the LSE output)"), 0;
    if (f->softcap > 0 && !(c->features & SGL_ATTN_FEAT_SOFTCAP))
        return snprintf(why, why_size, "the probe does not claim soft-cap"), 0;
    if (!(c->q_dtypes & hdtype_bit(f->dt)))
        return snprintf(why, why_size, "the probe does not claim dtype %s", hdtype_name(f->dt)), 0;
    if (c->n_head_dims > 0) {
        int ok = 0;
        for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
            ok |= c->head_dims[i].qk == f->d && c->head_dims[i].v == f->dv;
        if (!ok) return snprintf(why, why_size, "the probe does not list head dims (%ld, %ld)", f->d, f->dv), 0;
    } else if ((uint32_t)f->d > c->head_dim_qk_max || (uint32_t)f->dv > c->head_dim_v_max) {
        return snprintf(why, why_size, "head dims (%ld, %ld) exceed the probe's (%u, %u)", f->d, f->dv,
                        c->head_dim_qk_max, c->head_dim_v_max),
               0;
    }
    if (f->d != f->dv && !(c->features & SGL_ATTN_FEAT_DIFF_HEAD_DIMS))
        return snprintf(why, why_size, "the probe does not claim different qk/v head dims"), 0;
    if (c->max_gqa_ratio && (uint64_t)(f->hq / f->hkv) > c->max_gqa_ratio)
        return snprintf(why, why_size, "GQA ratio %ld exceeds the probe's %u", f->hq / f->hkv, c->max_gqa_ratio), 0;
    return 1;
}

typedef struct rrun {
    rcase c;
    int bs;
    int64_t Tq, Tk;
    int32_t *lq, *lk;
    int64_t *cq, *ck;
    htensor q, k, v, out, lse, cu_q, cu_k;
    DLTensor cq_cpu, ck_cpu;
    double *ref, *lse_ref;
} rrun;

static void rrun_free(rrun *x) {
    htensor *all[] = {&x->q, &x->k, &x->v, &x->out, &x->lse, &x->cu_q, &x->cu_k};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) htensor_free(all[i]);
    free(x->lq), free(x->lk), free(x->cq), free(x->ck), free(x->ref), free(x->lse_ref);
}

#define ALLOC(t, name, dt, nd, ...)                                                   \
    do {                                                                              \
        const int64_t s_[] = {__VA_ARGS__};                                           \
        if (htensor_alloc(&x->t, dev, name, dt, nd, s_, err, err_size)) return -1;    \
    } while (0)

/* The one-layer model and create options a built run needs (check and bench alike). */
static void run_model(const rrun *x, const hcase *hc, sgl_attn_model *m, sgl_attn_create_options *o) {
    const rcase *c = &x->c;
    sgl_attn_model_init(m);
    m->struct_size = sizeof *m;
    snprintf(m->name, sizeof m->name, "%.63s", hc->text);
    snprintf(m->model_type, sizeof m->model_type, "harness");
    m->num_layers = 1, m->num_q_heads = (int32_t)c->hq, m->num_kv_heads = (int32_t)c->hkv;
    m->head_dim_qk = (int32_t)c->d, m->head_dim_v = (int32_t)c->dv;
    m->dtype = m->kv_dtype = hdtype_bit(c->dt);
    m->logit_softcap = (float)c->softcap;
    m->sliding_window = -1;
    m->page_size = 1;
    m->full_attention_mask[0] = 1;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->max_reqs = x->bs, o->max_tokens = (int32_t)(x->Tq > 0 ? x->Tq : 1), o->max_context = (int32_t)c->lk;
}

static int build(rrun *x, const hdev *dev, uint64_t seed, char *err, size_t err_size) {
    const rcase *c = &x->c;
    hrng r;
    hrng_seed(&r, seed);
    x->bs = (int)c->b;
    x->lq = calloc((size_t)x->bs, sizeof *x->lq), x->lk = calloc((size_t)x->bs, sizeof *x->lk);
    x->cq = calloc((size_t)x->bs + 1, sizeof *x->cq), x->ck = calloc((size_t)x->bs + 1, sizeof *x->ck);
    if (!x->lq || !x->lk || !x->cq || !x->ck) return snprintf(err, err_size, "out of host memory"), -1;
    for (int i = 0; i < x->bs; i++) {
        long q = c->lq, k = c->lk;
        if (c->ragged && x->bs > 1) { /* request 0 the shortest, the last the longest, the others between */
            q = i == 0 ? 1 : i == x->bs - 1 ? c->lq : hrng_range(&r, 1, c->lq);
            const long kmin = c->causal ? q : 1;
            k = i == 0 ? (c->causal ? q : 1) : i == x->bs - 1 ? c->lk : hrng_range(&r, kmin, c->lk);
        }
        x->lq[i] = (int32_t)q, x->lk[i] = (int32_t)k;
        x->cq[i + 1] = x->cq[i] + q, x->ck[i + 1] = x->ck[i] + k;
    }
    x->Tq = x->cq[x->bs], x->Tk = x->ck[x->bs];
    const hdtype it = c->idx == 64 ? HDT_I64 : HDT_I32;
    ALLOC(q, "q", c->dt, 3, x->Tq, c->hq, c->d);
    ALLOC(k, "k", c->dt, 3, x->Tk, c->hkv, c->d);
    ALLOC(v, "v", c->dt, 3, x->Tk, c->hkv, c->dv);
    ALLOC(out, "out", c->dt, 3, x->Tq, c->hq, c->dv);
    ALLOC(lse, "lse", HDT_F32, 2, x->Tq, c->hq);
    ALLOC(cu_q, "cu_seqlens_q", it, 1, (int64_t)x->bs + 1);
    ALLOC(cu_k, "cu_seqlens_k", it, 1, (int64_t)x->bs + 1);
    for (int i = 0; i <= x->bs; i++) htensor_set_index(&x->cu_q, (size_t)i, x->cq[i]), htensor_set_index(&x->cu_k, (size_t)i, x->ck[i]);
    htensor_fill_normal(&x->q, &r, 2.0);
    htensor_fill_normal(&x->k, &r, 1.0);
    htensor_fill_normal(&x->v, &r, 1.0);
    htensor_poison(&x->out);
    htensor_poison(&x->lse);
    htensor *all[] = {&x->q, &x->k, &x->v, &x->out, &x->lse, &x->cu_q, &x->cu_k};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (htensor_upload(all[i], err, err_size)) return -1;
    x->cq_cpu = htensor_host_view(&x->cu_q);
    x->ck_cpu = htensor_host_view(&x->cu_k);
    return 0;
}

static int reference(rrun *x) {
    const rcase *c = &x->c;
    const int G = (int)(c->hq / c->hkv);
    x->ref = malloc(sizeof(double) * (size_t)(x->Tq * c->hq * c->dv + 1));
    x->lse_ref = malloc(sizeof(double) * (size_t)(x->Tq * c->hq + 1));
    double *sc = malloc(sizeof(double) * (size_t)(c->lk + 1)), *acc = malloc(sizeof(double) * (size_t)(c->dv + 1));
    double *q = malloc(sizeof(double) * (x->q.count + 1)), *k = malloc(sizeof(double) * (x->k.count + 1)),
           *v = malloc(sizeof(double) * (x->v.count + 1));
    if (!x->ref || !x->lse_ref || !sc || !acc || !q || !k || !v) return free(sc), free(acc), free(q), free(k), free(v), -1;
    for (size_t e = 0; e < x->q.count; e++) q[e] = hdtype_load(c->dt, htensor_cdata(&x->q), e);
    for (size_t e = 0; e < x->k.count; e++) k[e] = hdtype_load(c->dt, htensor_cdata(&x->k), e);
    for (size_t e = 0; e < x->v.count; e++) v[e] = hdtype_load(c->dt, htensor_cdata(&x->v), e);
    for (int i = 0; i < x->bs; i++)
        for (int j = 0; j < x->lq[i]; j++) {
            const int64_t t = x->cq[i] + j;
            const int64_t hi = c->causal ? x->lk[i] - x->lq[i] + j + 1 : x->lk[i];
            for (int h = 0; h < c->hq; h++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t n = 0; n < hi; n++) {
                    double dot = 0;
                    const double *qr = q + (t * c->hq + h) * c->d, *kr = k + ((x->ck[i] + n) * c->hkv + h / G) * c->d;
                    for (int d = 0; d < c->d; d++) dot += qr[d] * kr[d];
                    double s = dot * c->scale;
                    if (c->softcap > 0) s = c->softcap * tanh(s / c->softcap);
                    sc[n] = s, mx = s > mx ? s : mx;
                }
                for (int64_t n = 0; n < hi; n++) sum += exp(sc[n] - mx);
                x->lse_ref[t * c->hq + h] = mx + log(sum);
                for (int d = 0; d < c->dv; d++) acc[d] = 0;
                for (int64_t n = 0; n < hi; n++) {
                    const double w = exp(sc[n] - mx), *vr = v + ((x->ck[i] + n) * c->hkv + h / G) * c->dv;
                    for (int d = 0; d < c->dv; d++) acc[d] += w * vr[d];
                }
                for (int d = 0; d < c->dv; d++) x->ref[(t * c->hq + h) * c->dv + d] = acc[d] / sum;
            }
        }
    free(sc), free(acc), free(q), free(k), free(v);
    return 0;
}

static void check(const harness_family *fam, const htarget *t, const hcase *hc, uint64_t seed, hresult *r) {
    (void)fam;
    char err[768];
    rrun x;
    memset(&x, 0, sizeof x);
    if (parse(hc, &x.c, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return;
    }
    if (x.c.has_seed) seed = x.c.seed;
    if (!claimed(&x.c, &t->caps, err, sizeof err)) {
        hresult_unsupported(r, "%s", err);
        return;
    }
    sgl_attn_backend *b = NULL;
    if (build(&x, &t->dev, seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        goto done;
    }
    const rcase *c = &x.c;
    sgl_attn_model m;
    sgl_attn_create_options o;
    run_model(&x, hc, &m, &o);
    if (htarget_create(t, &m, &o, &b, r) != SGL_ATTN_OK) goto done;
    if (b->ops_size < offsetof(sgl_attn_backend_ops, forward_ragged) + sizeof b->ops->forward_ragged ||
        !b->ops->forward_ragged) {
        hresult_unsupported(r, "the stack's outermost backend offers no forward_ragged");
        goto done;
    }
    sgl_attn_ragged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.batch_size = x.bs;
    a.num_q_heads = (int32_t)c->hq, a.num_kv_heads = (int32_t)c->hkv;
    a.head_dim_qk = (int32_t)c->d, a.head_dim_v = (int32_t)c->dv;
    a.sm_scale = (float)c->scale;
    a.logit_softcap = (float)c->softcap;
    a.causal = (int32_t)c->causal;
    a.q = &x.q.t, a.k = &x.k.t, a.v = &x.v.t, a.out = &x.out.t;
    a.lse = c->lse ? &x.lse.t : NULL;
    a.cu_seqlens_q = &x.cu_q.t, a.cu_seqlens_k = &x.cu_k.t;
    a.cu_seqlens_q_cpu = &x.cq_cpu, a.cu_seqlens_k_cpu = &x.ck_cpu;
    a.stream = t->dev.stream;
    double t0 = htime_now();
    int rc = b->ops->forward_ragged(b, &a);
    if (rc) {
        hresult_from_call(r, b, "forward_ragged", rc);
        goto done;
    }
    if (hdev_sync(&t->dev, err, sizeof err)) {
        hresult_fail(r, "after forward_ragged: %s", err);
        goto done;
    }
    r->ms_plugin = 1e3 * (htime_now() - t0);
    htensor *dl[] = {&x.q, &x.k, &x.v, &x.out, &x.lse, &x.cu_q, &x.cu_k};
    for (size_t i = 0; i < sizeof dl / sizeof dl[0]; i++)
        if (htensor_download(dl[i], err, sizeof err)) {
            hresult_fail(r, "%s", err);
            goto done;
        }
    t0 = htime_now();
    if (reference(&x)) {
        hresult_error(r, "out of host memory for the float64 reference");
        goto done;
    }
    r->ms_ref = 1e3 * (htime_now() - t0);
    hcompare cmp;
    hcompare_run(&x.out, x.ref, &cmp);
    r->nmse = cmp.nmse, r->max_abs_err = cmp.max_abs_err, r->threshold = hthreshold(c->dt);
    if (cmp.bad_kind) {
        hresult_fail(r, "out element %zu %s", cmp.first_bad, cmp.bad_kind == 2 ? "was never written" : "is NaN or Inf");
        goto done;
    }
    if (!(cmp.nmse <= r->threshold)) {
        hresult_fail(r, "NMSE %.3g > %.3g (worst out element %zu = %.6g, reference %.6g)", cmp.nmse, r->threshold,
                     cmp.worst_index, hdtype_load(c->dt, htensor_cdata(&x.out), cmp.worst_index), x.ref[cmp.worst_index]);
        goto done;
    }
    if (c->lse) {
        hcompare_run(&x.lse, x.lse_ref, &cmp);
        if (cmp.bad_kind || !(cmp.nmse <= hthreshold(HDT_F32))) {
            if (cmp.bad_kind)
                hresult_fail(r, "lse element %zu %s", cmp.first_bad,
                             cmp.bad_kind == 2 ? "was never written" : "is NaN or Inf");
            else
                hresult_fail(r, "lse NMSE %.3g > %.3g (worst element %zu = %.7g, reference %.7g)", cmp.nmse,
                             hthreshold(HDT_F32), cmp.worst_index,
                             hdtype_load(HDT_F32, htensor_cdata(&x.lse), cmp.worst_index), x.lse_ref[cmp.worst_index]);
            goto done;
        }
    } else {
        for (size_t i = 0; i < x.lse.count; i++)
            if (!htensor_is_poison(&x.lse, i)) {
                hresult_fail(r, "lse was not asked for (NULL) but a tensor beside it changed");
                goto done;
            }
    }
    r->verdict = HV_PASS;
done:
    if (b) htarget_destroy(t, b);
    rrun_free(&x);
}

/* ------------------------------------------------------------------ bench */

typedef struct rbench {
    const htarget *t;
    sgl_attn_backend *b;
    sgl_attn_ragged_args a;
    rrun x;
} rbench;

static int bench_call(void *state, char *err, size_t err_size) {
    rbench *s = state;
    const int rc = s->b->ops->forward_ragged(s->b, &s->a);
    if (rc) snprintf(err, err_size, "forward_ragged: %s", sgl_attn_last_error(s->b));
    return rc;
}

static void bench_release(void *state) {
    rbench *s = state;
    if (!s) return;
    if (s->b) htarget_destroy(s->t, s->b);
    rrun_free(&s->x);
    free(s);
}

static int bench_prepare(const harness_family *fam, const htarget *t, const hcase *hc, uint64_t seed, hbench *hb,
                         hresult *r) {
    (void)fam;
    char err[768];
    rbench *s = calloc(1, sizeof *s);
    if (!s) return hresult_error(r, "out of host memory"), -1;
    s->t = t;
    rrun *x = &s->x;
    if (parse(hc, &x->c, err, sizeof err)) {
        hresult_error(r, "%s", err);
        bench_release(s);
        return -1;
    }
    if (x->c.has_seed) seed = x->c.seed;
    if (!claimed(&x->c, &t->caps, err, sizeof err)) {
        hresult_unsupported(r, "%s", err);
        bench_release(s);
        return -1;
    }
    if (build(x, &t->dev, seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        bench_release(s);
        return -1;
    }
    const rcase *c = &x->c;
    sgl_attn_model m;
    sgl_attn_create_options o;
    run_model(x, hc, &m, &o);
    if (htarget_create(t, &m, &o, &s->b, r) != SGL_ATTN_OK) {
        s->b = NULL;
        bench_release(s);
        return -1;
    }
    if (s->b->ops_size < offsetof(sgl_attn_backend_ops, forward_ragged) + sizeof s->b->ops->forward_ragged ||
        !s->b->ops->forward_ragged) {
        hresult_unsupported(r, "the stack's outermost backend offers no forward_ragged");
        bench_release(s);
        return -1;
    }
    sgl_attn_ragged_args *a = &s->a;
    a->struct_size = sizeof *a;
    a->batch_size = x->bs;
    a->num_q_heads = (int32_t)c->hq, a->num_kv_heads = (int32_t)c->hkv;
    a->head_dim_qk = (int32_t)c->d, a->head_dim_v = (int32_t)c->dv;
    a->sm_scale = (float)c->scale;
    a->logit_softcap = (float)c->softcap;
    a->causal = (int32_t)c->causal;
    a->q = &x->q.t, a->k = &x->k.t, a->v = &x->v.t, a->out = &x->out.t;
    a->lse = c->lse ? &x->lse.t : NULL;
    a->cu_seqlens_q = &x->cu_q.t, a->cu_seqlens_k = &x->cu_k.t;
    a->cu_seqlens_q_cpu = &x->cq_cpu, a->cu_seqlens_k_cpu = &x->ck_cpu;
    a->stream = t->dev.stream;
    double pairs = 0;
    for (int i = 0; i < x->bs; i++)
        for (int j = 0; j < x->lq[i]; j++) {
            const int64_t hi = c->causal ? (int64_t)x->lk[i] - x->lq[i] + j + 1 : x->lk[i];
            pairs += hi > 0 ? (double)hi : 0;
        }
    const double dsz = (double)hdtype_size(c->dt);
    hb->state = s;
    hb->call = bench_call;
    hb->release = bench_release;
    hb->flops = 2.0 * (double)c->hq * pairs * (double)(c->d + c->dv);
    hb->bytes = (double)x->Tq * (double)c->hq * (double)(c->d + c->dv) * dsz +  /* q in, out out */
                (double)x->Tk * (double)c->hkv * (double)(c->d + c->dv) * dsz + /* k, v */
                (c->lse ? (double)x->Tq * (double)c->hq * 4.0 : 0);
    return 0;
}

const harness_family harness_family_ragged = {
    .name = "ragged",
    .modes = modes,
    .applies = harness_applies_full,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = NULL, /* none by default: name them with --case (bench/gpu/ragged_lse.sh) */
    .check = check,
    .bench_prepare = bench_prepare,
};
