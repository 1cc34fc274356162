/* cref_fixture.c - see cref_fixture.h. */
#include "cref_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t tc_rand(uint64_t *st) {
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tc_normal(uint64_t *st) {
    double u1 = ((double)(tc_rand(st) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(tc_rand(st) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

size_t tc_size(uint32_t dt) {
    return dt == SGL_ATTN_DT_F64 ? 8 : dt == SGL_ATTN_DT_F32 ? 4 : 2;
}

/* f16 by arithmetic (frexp / ldexp / nearbyint), not by bit tricks, so it
 * checks the plugin's conversions rather than repeating them. */
static uint16_t to_f16(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (isnan(x)) return 0x7e00;
    if (a < ldexp(1.0, -14)) return (uint16_t)(sign | (uint16_t)nearbyint(a * ldexp(1.0, 24)));
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    e -= 1;       /* a in [2^e, 2^(e+1)) */
    double m = nearbyint(a * ldexp(1.0, 10 - e));
    if (m >= 2048) {
        m /= 2;
        e += 1;
    }
    if (e > 15) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024));
}

static double from_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t to_bf16(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t low = u & 0xffff, hi = u >> 16;
    if (low > 0x8000 || (low == 0x8000 && (hi & 1))) hi++;
    return (uint16_t)hi;
}

static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

double tc_load(uint32_t dt, const void *p, size_t i) {
    switch (dt) {
    case SGL_ATTN_DT_F32: return ((const float *)p)[i];
    case SGL_ATTN_DT_F16: return from_f16(((const uint16_t *)p)[i]);
    case SGL_ATTN_DT_BF16: return from_bf16(((const uint16_t *)p)[i]);
    default: return ((const double *)p)[i];
    }
}

void tc_store(uint32_t dt, void *p, size_t i, double v) {
    switch (dt) {
    case SGL_ATTN_DT_F32: ((float *)p)[i] = (float)v; break;
    case SGL_ATTN_DT_F16: ((uint16_t *)p)[i] = to_f16(v); break;
    case SGL_ATTN_DT_BF16: ((uint16_t *)p)[i] = to_bf16(v); break;
    default: ((double *)p)[i] = v; break;
    }
}

static DLDataType dl_of(uint32_t dt) {
    DLDataType t = {kDLFloat, 32, 1};
    if (dt == SGL_ATTN_DT_F16) t.bits = 16;
    if (dt == SGL_ATTN_DT_BF16) t.code = kDLBfloat, t.bits = 16;
    if (dt == SGL_ATTN_DT_F64) t.bits = 64;
    return t;
}

void tc_wrap(DLTensor *t, void *data, DLDataType dt, int ndim, int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device.device_type = kDLCPU;
    t->dtype = dt;
    t->ndim = ndim;
    t->shape = shape;
}

static void idx_set(void *p, int is64, int64_t i, int64_t v) {
    if (is64) ((int64_t *)p)[i] = v;
    else ((int32_t *)p)[i] = (int32_t)v;
}
static int64_t idx_get(const void *p, int is64, int64_t i) {
    return is64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

int64_t tc_slot(const tc_run *r, int i, int64_t c) {
    int64_t row = idx_get(r->req_idx, r->s.idx64, i);
    return idx_get(r->r2t, r->s.idx64, row * r->cols + c);
}

static int n_new(const tc_spec *s, int i) {
    return s->mode == SGL_ATTN_MODE_EXTEND ? s->seq[i] - s->prefix[i] : s->tpr;
}

void tc_build(tc_run *r, const tc_spec *spec, uint64_t layout_seed, uint64_t value_seed) {
    memset(r, 0, sizeof *r);
    r->s = *spec;
    tc_spec *s = &r->s;
    if (s->tpr < 1) s->tpr = 1;
    if (s->mla) s->hkv = 1;
    if (s->dv == 0) s->dv = s->dqk;
    if (s->scale == 0) s->scale = (float)(1.0 / sqrt((double)s->dqk));
    uint64_t lr = layout_seed * 2 + 1, vr = value_seed * 2 + 7;
    const int bs = s->bs, isz = s->idx64 ? 8 : 4;
    int64_t need_max = 0, pages = 1;
    r->T = 0;
    for (int i = 0; i < bs; i++) {
        int64_t n = (int64_t)s->enc[i] + s->seq[i];
        need_max = n > need_max ? n : need_max;
        pages += (n + s->page - 1) / s->page;
        r->T += n_new(s, i);
    }
    pages += 2; /* spare pages stay free */
    r->slots = pages * s->page;
    r->rows = bs + 2;
    r->cols = need_max + s->page;
    /* pages 1.. shuffled; page 0 holds the reserved slot 0 */
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)pages);
    for (int64_t p = 0; p < pages; p++) perm[p] = p;
    for (int64_t p = pages - 1; p > 1; p--) {
        int64_t q = 1 + (int64_t)(tc_rand(&lr) % (uint64_t)p);
        int64_t t = perm[p];
        perm[p] = perm[q];
        perm[q] = t;
    }
    int64_t rowperm[TC_MAX_REQS + 2];
    for (int64_t i = 0; i < r->rows; i++) rowperm[i] = i;
    for (int64_t i = r->rows - 1; i > 0; i--) {
        int64_t q = (int64_t)(tc_rand(&lr) % (uint64_t)(i + 1));
        int64_t t = rowperm[i];
        rowperm[i] = rowperm[q];
        rowperm[q] = t;
    }
    r->r2t = malloc((size_t)(r->rows * r->cols) * (size_t)isz);
    for (int64_t e = 0; e < r->rows * r->cols; e++)
        idx_set(r->r2t, s->idx64, e, (int64_t)(tc_rand(&lr) % (uint64_t)r->slots));
    r->req_idx = malloc((size_t)bs * (size_t)isz + 8);
    r->seq_lens = malloc((size_t)bs * (size_t)isz + 8);
    r->prefix_lens = malloc((size_t)bs * (size_t)isz + 8);
    r->ext_lens = malloc((size_t)bs * (size_t)isz + 8);
    r->enc_lens = malloc((size_t)bs * (size_t)isz + 8);
    r->ocl = malloc((size_t)r->T * (size_t)isz + 8);
    int64_t next_page = 1, tok = 0;
    for (int i = 0; i < bs; i++) {
        int64_t row = rowperm[i], n = (int64_t)s->enc[i] + s->seq[i];
        idx_set(r->req_idx, s->idx64, i, row);
        idx_set(r->seq_lens, s->idx64, i, s->seq[i]);
        idx_set(r->prefix_lens, s->idx64, i, s->prefix[i]);
        idx_set(r->ext_lens, s->idx64, i, s->seq[i] - s->prefix[i]);
        idx_set(r->enc_lens, s->idx64, i, s->enc[i]);
        for (int64_t c = 0; c < n; c++) {
            if (c % s->page == 0) next_page++;
            idx_set(r->r2t, s->idx64, row * r->cols + c, perm[next_page - 1] * s->page + c % s->page);
        }
        int first = s->mode == SGL_ATTN_MODE_EXTEND ? s->prefix[i] : s->seq[i] - s->tpr;
        for (int j = 0; j < n_new(s, i); j++)
            idx_set(r->ocl, s->idx64, tok++, tc_slot(r, i, (int64_t)s->enc[i] + first + j));
    }
    free(perm);

    const size_t kvsz = tc_size(s->kv_dt), dsz = tc_size(s->dt);
    const int64_t krow = (int64_t)s->hkv * s->dqk, vrow = (int64_t)s->hkv * s->dv;
    r->k_cache = malloc((size_t)(r->slots * krow) * kvsz);
    r->v_cache = s->mla ? NULL : malloc((size_t)(r->slots * vrow) * kvsz);
    /* garbage everywhere from the layout stream, then the logical tokens'
     * values from the value stream, so the values do not depend on layout */
    for (int64_t e = 0; e < r->slots * krow; e++) tc_store(s->kv_dt, r->k_cache, (size_t)e, tc_normal(&lr));
    if (r->v_cache)
        for (int64_t e = 0; e < r->slots * vrow; e++) tc_store(s->kv_dt, r->v_cache, (size_t)e, tc_normal(&lr));
    for (int i = 0; i < bs; i++)
        for (int64_t c = 0; c < (int64_t)s->enc[i] + s->seq[i]; c++) {
            int64_t slot = tc_slot(r, i, c);
            for (int64_t e = 0; e < krow; e++)
                tc_store(s->kv_dt, r->k_cache, (size_t)(slot * krow + e), tc_normal(&vr));
            if (r->v_cache)
                for (int64_t e = 0; e < vrow; e++)
                    tc_store(s->kv_dt, r->v_cache, (size_t)(slot * vrow + e), tc_normal(&vr));
        }
    const int64_t T = r->T;
    r->q = malloc((size_t)(T * s->hq * s->dqk) * dsz + 8);
    r->k = malloc((size_t)(T * krow) * dsz + 8);
    r->v = malloc((size_t)(T * vrow) * dsz + 8);
    r->out = malloc((size_t)(T * s->hq * s->dv) * dsz + 8);
    for (int64_t e = 0; e < T * s->hq * s->dqk; e++) tc_store(s->dt, r->q, (size_t)e, 1.5 * tc_normal(&vr));
    for (int64_t e = 0; e < T * krow; e++) tc_store(s->dt, r->k, (size_t)e, tc_normal(&vr));
    for (int64_t e = 0; e < T * vrow; e++) tc_store(s->dt, r->v, (size_t)e, tc_normal(&vr));
    memset(r->out, 0xff, (size_t)(T * s->hq * s->dv) * dsz); /* NaN: unwritten shows */
    r->sinks = malloc(sizeof(float) * (size_t)s->hq);
    for (int h = 0; h < s->hq; h++) r->sinks[h] = (float)(2.0 * tc_normal(&vr));

    DLDataType it = {kDLInt, (uint8_t)(isz * 8), 1};
    r->sh_kc[0] = r->slots, r->sh_kc[1] = s->hkv, r->sh_kc[2] = s->dqk;
    r->sh_vc[0] = r->slots, r->sh_vc[1] = s->hkv, r->sh_vc[2] = s->dv;
    r->sh_r2t[0] = r->rows, r->sh_r2t[1] = r->cols;
    r->sh_bs[0] = bs;
    r->sh_T[0] = T;
    r->sh_q[0] = T, r->sh_q[1] = s->hq, r->sh_q[2] = s->dqk;
    r->sh_k[0] = T, r->sh_k[1] = s->hkv, r->sh_k[2] = s->dqk;
    r->sh_v[0] = T, r->sh_v[1] = s->hkv, r->sh_v[2] = s->dv;
    r->sh_out[0] = T, r->sh_out[1] = s->hq, r->sh_out[2] = s->dv;
    r->sh_sink[0] = s->hq;
    tc_wrap(&r->t_kc, r->k_cache, dl_of(s->kv_dt), 3, r->sh_kc);
    tc_wrap(&r->t_vc, r->v_cache, dl_of(s->kv_dt), 3, r->sh_vc);
    tc_wrap(&r->t_r2t, r->r2t, it, 2, r->sh_r2t);
    tc_wrap(&r->t_req, r->req_idx, it, 1, r->sh_bs);
    tc_wrap(&r->t_seq, r->seq_lens, it, 1, r->sh_bs);
    tc_wrap(&r->t_pre, r->prefix_lens, it, 1, r->sh_bs);
    tc_wrap(&r->t_ext, r->ext_lens, it, 1, r->sh_bs);
    tc_wrap(&r->t_enc, r->enc_lens, it, 1, r->sh_bs);
    tc_wrap(&r->t_ocl, r->ocl, it, 1, r->sh_T);
    tc_wrap(&r->t_q, r->q, dl_of(s->dt), 3, r->sh_q);
    tc_wrap(&r->t_k, r->k, dl_of(s->dt), 3, r->sh_k);
    tc_wrap(&r->t_v, r->v, dl_of(s->dt), 3, r->sh_v);
    tc_wrap(&r->t_out, r->out, dl_of(s->dt), 3, r->sh_out);
    tc_wrap(&r->t_sink, r->sinks, dl_of(SGL_ATTN_DT_F32), 1, r->sh_sink);

    sgl_attn_batch *b = &r->batch;
    b->struct_size = sizeof *b;
    b->forward_mode = s->mode;
    b->batch_size = bs;
    b->num_tokens = (int32_t)T;
    b->page_size = s->page;
    b->tokens_per_req = s->mode == SGL_ATTN_MODE_EXTEND ? 0 : s->tpr;
    for (int i = 0; i < bs; i++) b->seq_lens_sum += s->seq[i];
    b->req_to_token = &r->t_r2t;
    b->req_pool_indices = &r->t_req;
    b->seq_lens = &r->t_seq;
    b->extend_prefix_lens = s->mode == SGL_ATTN_MODE_EXTEND ? &r->t_pre : NULL;
    b->extend_seq_lens = s->mode == SGL_ATTN_MODE_EXTEND ? &r->t_ext : NULL;
    b->out_cache_loc = &r->t_ocl;
    b->encoder_lens = s->has_enc ? &r->t_enc : NULL;

    sgl_attn_layer *L = &r->layer;
    L->struct_size = sizeof *L;
    L->num_q_heads = s->hq;
    L->num_kv_heads = s->hkv;
    L->head_dim_qk = s->dqk;
    L->head_dim_v = s->dv;
    L->sm_scale = s->scale;
    L->logit_softcap = s->softcap;
    L->sliding_window = s->window;
    L->is_cross = s->cross;
    L->sinks = s->sinks ? &r->t_sink : NULL;
    L->k_cache = &r->t_kc;
    L->v_cache = s->mla ? NULL : &r->t_vc;
    L->k_scale = L->v_scale = 1;

    sgl_attn_forward_args *a = &r->args;
    a->struct_size = sizeof *a;
    a->save_kv_cache = s->save;
    a->layer = L;
    a->batch = b;
    a->q = &r->t_q;
    a->k = &r->t_k;
    a->v = s->mla ? NULL : &r->t_v;
    a->out = &r->t_out;

    sgl_attn_model *m = &r->model;
    m->struct_size = sizeof *m;
    m->num_layers = 1;
    m->num_q_heads = s->hq;
    m->num_kv_heads = s->hkv;
    m->head_dim_qk = s->dqk;
    m->head_dim_v = s->dv;
    m->dtype = s->dt;
    m->kv_dtype = s->kv_dt;
    m->is_mla = s->mla;
    m->sliding_window = s->window;
    m->logit_softcap = s->softcap;
    m->has_sinks = s->sinks;
    m->is_encoder_decoder = s->has_enc;
    m->page_size = s->page;
}

void tc_free(tc_run *r) {
    free(r->k_cache);
    free(r->v_cache);
    free(r->r2t);
    free(r->req_idx);
    free(r->seq_lens);
    free(r->prefix_lens);
    free(r->ext_lens);
    free(r->enc_lens);
    free(r->ocl);
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->out);
    free(r->sinks);
    memset(r, 0, sizeof *r);
}

static void test_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx, (void)level, (void)plugin, (void)fmt;
}
static const char *test_opt(void *ctx, const char *plugin, const char *key) {
    (void)ctx, (void)plugin, (void)key;
    return NULL;
}

int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

const sgl_attn_plugin *tc_plugin(void) {
    sgl_attn_host_api api = {.struct_size = sizeof api, .abi_major = SGL_ATTN_ABI_MAJOR, .abi_minor_min = 0,
                             .abi_minor_max = SGL_ATTN_ABI_MINOR, .host_version = "test", .log = test_log,
                             .get_option = test_opt};
    sgl_attn_plugin_answer ans = {.struct_size = sizeof ans};
    if (sgl_attn_cpu_ref_entry(&api, &ans) != SGL_ATTN_OK) return NULL;
    return ans.plugin;
}

sgl_attn_backend *tc_create(const tc_run *r, char *err, size_t err_size) {
    const sgl_attn_plugin *p = tc_plugin();
    sgl_attn_create_args a = {.struct_size = sizeof a, .model = &r->model, .device = 0,
                              .max_reqs = (int32_t)r->rows, .max_tokens = r->T > 0 ? r->T : 1,
                              .max_context = (int32_t)r->cols, .error = err, .error_size = (uint32_t)err_size};
    sgl_attn_backend *b = NULL;
    if (!p || p->create(&a, &b) != SGL_ATTN_OK) return NULL;
    return b;
}

int tc_forward(tc_run *r, sgl_attn_backend *b) {
    int rc = b->ops->init_forward_metadata(b, &r->batch);
    if (rc) return rc;
    return r->s.mode == SGL_ATTN_MODE_EXTEND ? b->ops->forward_extend(b, &r->args)
                                             : b->ops->forward_decode(b, &r->args);
}

double tc_limit(uint32_t dt) {
    switch (dt) {
    case SGL_ATTN_DT_F64: return 1e-24;
    case SGL_ATTN_DT_F32: return 1e-11;
    case SGL_ATTN_DT_F16: return 2e-6;
    default: return 3e-5;
    }
}

sgl_attn_backend *tc_create_forward(tc_run *r, char *err, size_t err_size) {
    char why[256] = "";
    sgl_attn_backend *b = tc_create(r, why, sizeof why);
    if (!b) {
        snprintf(err, err_size, "create failed: %s", why);
        return NULL;
    }
    const int rc = tc_forward(r, b);
    if (rc) {
        snprintf(err, err_size, "forward returned %d: %s", rc, b->ops->last_error(b));
        b->ops->destroy(b);
        return NULL;
    }
    return b;
}

size_t tc_out_count(const tc_run *r) { return (size_t)r->T * (size_t)r->s.hq * (size_t)r->s.dv; }

double tc_out(const tc_run *r, size_t i) { return tc_load(r->s.dt, r->out, i); }

void tc_naive(const tc_run *r, double *ref) {
    const tc_spec *s = &r->s;
    const int64_t krow = (int64_t)s->hkv * s->dqk, vrow = (int64_t)s->hkv * s->dv;
    double *kd = malloc(sizeof(double) * (size_t)(r->slots * krow));
    double *vd = s->mla ? NULL : malloc(sizeof(double) * (size_t)(r->slots * vrow));
    for (int64_t e = 0; e < r->slots * krow; e++) kd[e] = tc_load(s->kv_dt, r->k_cache, (size_t)e);
    if (vd)
        for (int64_t e = 0; e < r->slots * vrow; e++) vd[e] = tc_load(s->kv_dt, r->v_cache, (size_t)e);
    unsigned char tmp[8];
    if (s->save) /* new K/V as the pool will hold them */
        for (int64_t t = 0; t < r->T; t++) {
            int64_t slot = idx_get(r->ocl, s->idx64, t);
            for (int64_t e = 0; e < krow; e++) {
                tc_store(s->kv_dt, tmp, 0, tc_load(s->dt, r->k, (size_t)(t * krow + e)));
                kd[slot * krow + e] = tc_load(s->kv_dt, tmp, 0);
            }
            for (int64_t e = 0; vd && e < vrow; e++) {
                tc_store(s->kv_dt, tmp, 0, tc_load(s->dt, r->v, (size_t)(t * vrow + e)));
                vd[slot * vrow + e] = tc_load(s->kv_dt, tmp, 0);
            }
        }
    const int G = s->hq / s->hkv;
    const int64_t maxk = r->cols;
    double *sc = malloc(sizeof(double) * (size_t)maxk);
    int64_t *cols = malloc(sizeof(int64_t) * (size_t)maxk);
    int64_t tok = 0;
    for (int i = 0; i < s->bs; i++) {
        int nn = n_new(s, i);
        int first = s->mode == SGL_ATTN_MODE_EXTEND ? s->prefix[i] : s->seq[i] - s->tpr;
        for (int j = 0; j < nn; j++, tok++) {
            int pos = first + j;
            int64_t nk = 0;
            if (s->cross) {
                for (int c = 0; c < s->enc[i]; c++) cols[nk++] = c;
            } else {
                int lo = s->window >= 0 ? pos - s->window : 0;
                for (int p = lo < 0 ? 0 : lo; p <= pos; p++) cols[nk++] = (int64_t)s->enc[i] + p;
            }
            for (int h = 0; h < s->hq; h++) {
                const int kh = h / G;
                double mx = -INFINITY;
                for (int64_t n = 0; n < nk; n++) {
                    int64_t slot = tc_slot(r, i, cols[n]);
                    double dot = 0;
                    for (int d = 0; d < s->dqk; d++)
                        dot += tc_load(s->dt, r->q, (size_t)((tok * s->hq + h) * s->dqk + d)) *
                               kd[slot * krow + kh * s->dqk + d];
                    double x = dot * (double)s->scale;
                    if (s->softcap > 0) x = s->softcap * tanh(x / s->softcap);
                    sc[n] = x;
                    mx = x > mx ? x : mx;
                }
                double sink = s->sinks ? (double)r->sinks[h] : -INFINITY;
                if (sink > mx) mx = sink;
                double den = s->sinks ? exp(sink - mx) : 0;
                for (int64_t n = 0; n < nk; n++) den += exp(sc[n] - mx);
                for (int d = 0; d < s->dv; d++) {
                    double num = 0;
                    for (int64_t n = 0; n < nk; n++) {
                        int64_t slot = tc_slot(r, i, cols[n]);
                        double vv = s->mla ? kd[slot * krow + d] : vd[slot * vrow + kh * s->dv + d];
                        num += exp(sc[n] - mx) * vv;
                    }
                    ref[(tok * s->hq + h) * s->dv + d] = den > 0 ? num / den : 0;
                }
            }
        }
    }
    free(sc);
    free(cols);
    free(kd);
    free(vd);
}

double tc_nmse(const tc_run *r, const double *ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < tc_out_count(r); i++) {
        double x = tc_out(r, i);
        if (!isfinite(x)) return INFINITY;
        num += (x - ref[i]) * (x - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}
