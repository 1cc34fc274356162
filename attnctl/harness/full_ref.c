/* full_ref.c - the float64 reference of a built case: cpu_ref's f64 path on
 * host copies of exactly the values the plugin got (inputs rounded to their
 * dtypes, new K/V rounded to the pool dtype as a save would store them; fp8
 * pools dequantised by their scales), with the same page table. */
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

int fa_batch_reference(fa_batch *fb, sgl_attn_host *host, char *err, size_t err_size) {
    const fa_case *c = &fb->c;
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
