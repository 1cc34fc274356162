/* full_ref.c - the float64 reference of a built case: cpu_ref's f64 path on
 * host copies of exactly the values the plugin got (inputs rounded to their
 * dtypes, new K/V rounded to the pool dtype as a save would store them; fp8
 * pools dequantised by their scales), with the same page table.  Dual chunk
 * cases are worked out here instead, from the definition
 * (docs/dual_chunk.md), so cpu_ref's loops are checked against math that is
 * not theirs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

typedef struct f64t {
    double *p;
    int64_t shape[3];
    DLTensor t;
} f64t;

static void f64_view(f64t *x, const htensor *src) {
    memcpy(x->shape, src->shape, sizeof x->shape);
    memset(&x->t, 0, sizeof x->t);
    x->t.data = x->p;
    x->t.device.device_type = kDLCPU;
    x->t.ndim = src->t.ndim;
    x->t.shape = x->shape;
    x->t.dtype = hdtype_dl(HDT_F64);
}

static int f64_from(f64t *x, const htensor *src, hdtype round_to) {
    const size_t n = src->count;
    x->p = malloc(sizeof(double) * (n ? n : 1));
    if (!x->p) return -1;
    const void *s = htensor_cdata(src);
    for (size_t i = 0; i < n; i++) {
        double v = hdtype_load(src->dt, s, i);
        x->p[i] = round_to == src->dt ? v : hdtype_round(round_to, v);
    }
    f64_view(x, src);
    return 0;
}

/* New K (is_v 0) or V as a save stores them, dequantised (fp8 pools). */
static int f64_saved(f64t *x, const htensor *src, const fa_case *c, int is_v) {
    const size_t n = src->count;
    x->p = malloc(sizeof(double) * (n ? n : 1));
    if (!x->p) return -1;
    const double sc = fa_pool_scale(c, is_v);
    for (size_t i = 0; i < n; i++) x->p[i] = fa_pool_raw(c, is_v, hdtype_load(src->dt, htensor_cdata(src), i)) * sc;
    f64_view(x, src);
    return 0;
}

/* The pool as it was before the call, from the saved copy. */
static int f64_pool(f64t *x, const htensor *src, const unsigned char *init, double scale) {
    const size_t n = src->count;
    x->p = malloc(sizeof(double) * (n ? n : 1));
    if (!x->p) return -1;
    for (size_t i = 0; i < n; i++) x->p[i] = hdtype_load(src->dt, init, i) * scale;
    f64_view(x, src);
    return 0;
}

/* Dual chunk attention, worked out here rather than by cpu_ref (whose
 * dual chunk loops it checks): each part's scores over its keys, a softmax
 * with its own maximum, the part's output and log-sum-exp; then the parts
 * weighted by exp(lse - max lse).  Keys come from the pool as it was, with
 * the new tokens' K/V (rounded to the pool dtype) at their positions. */
static double dca_dot(const double *a, const double *b, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static int dca_reference(fa_batch *fb, char *err, size_t err_size) {
    const fa_case *c = &fb->c;
    const long hq = c->hq, hkv = c->hkv, d = c->d, dv = c->dv, grp = hq / hkv;
    const int64_t cl = c->chunk - c->local;
    f64t q[3] = {{0}}, k = {0}, v = {0}, kc = {0}, vc = {0};
    double *score = NULL, *ref = NULL;
    int rc = -1;
    long maxlen = 1;
    for (int i = 0; i < fb->bs; i++) maxlen = fb->seq[i] > maxlen ? fb->seq[i] : maxlen;
    score = malloc(sizeof(double) * (size_t)maxlen);
    ref = calloc((size_t)(fb->T > 0 ? fb->T : 1) * (size_t)(hq * dv), sizeof(double));
    if (!score || !ref || f64_from(&q[0], &fb->q, fb->q.dt) || f64_from(&q[1], &fb->q_succ, fb->q.dt) ||
        f64_from(&q[2], &fb->q_inter, fb->q.dt) || f64_saved(&k, &fb->k, c, 0) || f64_saved(&v, &fb->v, c, 1) ||
        f64_pool(&kc, &fb->k_cache, fb->k_init, fa_pool_scale(c, 0)) ||
        f64_pool(&vc, &fb->v_cache, fb->v_init, fa_pool_scale(c, 1))) {
        snprintf(err, err_size, "out of host memory for the float64 dual chunk reference");
        goto done;
    }
    if (c->save)
        for (int t = 0; t < fb->T; t++) {
            const int64_t slot = htensor_get_index(&fb->ocl, (size_t)t);
            memcpy(kc.p + slot * hkv * d, k.p + (int64_t)t * hkv * d, sizeof(double) * (size_t)(hkv * d));
            memcpy(vc.p + slot * hkv * dv, v.p + (int64_t)t * hkv * dv, sizeof(double) * (size_t)(hkv * dv));
        }
    for (int i = 0, t = 0; i < fb->bs; i++) {
        double scale = c->scale;
        if (c->omp > 0 && 0.1 * log((double)fb->seq[i] / (double)c->omp) + 1.0 > 1.0)
            scale *= 0.1 * log((double)fb->seq[i] / (double)c->omp) + 1.0;
        for (int j = 0; j < fb->n_new[i]; j++, t++) {
            const int64_t pos = (int64_t)fb->prefix[i] + j, start = pos - pos % cl;
            /* intra [start, pos], successor [start - cl, start), inter [0, start - cl) */
            const int64_t lo[3] = {start, start - cl, 0}, hi[3] = {pos + 1, start, start - cl};
            for (long h = 0; h < hq; h++) {
                const long g = h / grp;
                double lse[3], o[3][2048] = {{0}}, top = -INFINITY;
                for (int p = 0; p < 3; p++) {
                    lse[p] = -INFINITY;
                    if (lo[p] < 0 || hi[p] <= lo[p]) continue;
                    const double *qr = q[p].p + ((int64_t)t * hq + h) * d;
                    double mx = -INFINITY, sum = 0;
                    for (int64_t x = lo[p]; x < hi[p]; x++) {
                        const int64_t slot = htensor_get_index(&fb->r2t, (size_t)(fb->row[i] * fb->cols + x));
                        score[x - lo[p]] = scale * dca_dot(qr, kc.p + (slot * hkv + g) * d, d);
                        mx = score[x - lo[p]] > mx ? score[x - lo[p]] : mx;
                    }
                    for (int64_t x = lo[p]; x < hi[p]; x++) {
                        const int64_t slot = htensor_get_index(&fb->r2t, (size_t)(fb->row[i] * fb->cols + x));
                        const double w = exp(score[x - lo[p]] - mx);
                        sum += w;
                        for (long e = 0; e < dv; e++) o[p][e] += w * vc.p[(slot * hkv + g) * dv + e];
                    }
                    for (long e = 0; e < dv; e++) o[p][e] /= sum;
                    lse[p] = mx + log(sum);
                    top = lse[p] > top ? lse[p] : top;
                }
                double wsum = 0, w[3];
                for (int p = 0; p < 3; p++) wsum += (w[p] = lse[p] == -INFINITY ? 0.0 : exp(lse[p] - top));
                for (long e = 0; e < dv; e++) {
                    double acc = 0;
                    for (int p = 0; p < 3; p++) acc += w[p] * o[p][e];
                    ref[((int64_t)t * hq + h) * dv + e] = acc / wsum;
                }
            }
        }
    }
    free(fb->ref);
    fb->ref = ref;
    ref = NULL;
    rc = 0;
done:
    for (int p = 0; p < 3; p++) free(q[p].p);
    free(k.p);
    free(v.p);
    free(kc.p);
    free(vc.p);
    free(score);
    free(ref);
    return rc;
}

int fa_batch_reference(fa_batch *fb, sgl_attn_host *host, char *err, size_t err_size) {
    const fa_case *c = &fb->c;
    if (c->chunk > 0) return dca_reference(fb, err, err_size);
    if (fa_case_engine(c)) return fa_engine_reference(fb, err, err_size); /* ABI 1.2 inputs: full_engine.c */
    f64t q = {0}, k = {0}, v = {0}, out = {0}, kc = {0}, vc = {0};
    int rc = -1;
    sgl_attn_backend *b = NULL;
    if (f64_from(&q, &fb->q, fb->q.dt) || f64_saved(&k, &fb->k, c, 0) || f64_saved(&v, &fb->v, c, 1) ||
        f64_from(&out, &fb->out, fb->out.dt) || f64_pool(&kc, &fb->k_cache, fb->k_init, fa_pool_scale(c, 0)) ||
        f64_pool(&vc, &fb->v_cache, fb->v_init, fa_pool_scale(c, 1))) {
        snprintf(err, err_size, "out of host memory for the float64 reference");
        goto done;
    }
    /* index tensors and mirrors: host views of what the plugin got */
    DLTensor r2t = htensor_host_view(&fb->r2t), req = htensor_host_view(&fb->req_idx),
             seq = htensor_host_view(&fb->seq_lens), pre = htensor_host_view(&fb->prefix_lens),
             ext = htensor_host_view(&fb->ext_lens), enc = htensor_host_view(&fb->enc_lens),
             ocl = htensor_host_view(&fb->ocl), pos = htensor_host_view(&fb->positions),
             sinks = htensor_host_view(&fb->sinks), st = htensor_host_view(&fb->state_idx);
    sgl_attn_batch bt = fb->batch;
    bt.req_to_token = &r2t;
    bt.req_pool_indices = &req;
    bt.seq_lens = &seq;
    bt.out_cache_loc = &ocl;
    bt.positions = &pos;
    if (bt.extend_prefix_lens) bt.extend_prefix_lens = &pre, bt.extend_seq_lens = &ext;
    if (bt.encoder_lens) bt.encoder_lens = &enc;
    if (bt.state_indices) bt.state_indices = &st;
    bt.stream = NULL;
    sgl_attn_layer L = fb->layer;
    L.k_cache = &kc.t;
    L.k_scale = L.v_scale = 1.0f; /* the pool and new K/V above are dequantised */
    L.k_scale_tensor = L.v_scale_tensor = NULL;
    L.v_cache = c->mla ? NULL : &vc.t;
    if (L.sinks) L.sinks = &sinks;
    sgl_attn_forward_args a = fb->args;
    a.layer = &L;
    a.batch = &bt;
    a.q = &q.t;
    a.k = fb->args.k ? &k.t : NULL;
    a.v = fb->args.v ? &v.t : NULL;
    a.out = &out.t;
    sgl_attn_model m = fb->model;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_F64;
    char e[768] = "";
    int s = href_create(host, &m, &fb->opts, &b, e, sizeof e);
    if (s) {
        snprintf(err, err_size, "reference (cpu_ref f64) create failed: %s", e);
        goto done;
    }
    s = sgl_attn_init_forward_metadata(b, &bt);
    if (!s) s = c->mode == SGL_ATTN_MODE_DECODE ? sgl_attn_forward_decode(b, &a) : sgl_attn_forward_extend(b, &a);
    if (s) {
        snprintf(err, err_size, "reference (cpu_ref f64) refused the case (%s): %s", sgl_attn_status_name(s),
                 sgl_attn_last_error(b));
        goto done;
    }
    free(fb->ref);
    fb->ref = out.p;
    out.p = NULL;
    rc = 0;
done:
    if (b) sgl_attn_destroy(b);
    free(q.p);
    free(k.p);
    free(v.p);
    free(out.p);
    free(kc.p);
    free(vc.p);
    return rc;
}
