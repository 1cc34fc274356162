/* hyb_test_util.c - see hyb_test_util.h. */
#include "hyb_test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const sgl_attn_plugin *tu_plugin(int kind) {
    switch (kind) {
    case SGL_ATTN_HYBRID_GDN: return &hyb_plugin_gdn;
    case SGL_ATTN_HYBRID_KDA: return &hyb_plugin_kda;
    case SGL_ATTN_HYBRID_MAMBA2: return &hyb_plugin_mamba2;
    case SGL_ATTN_HYBRID_SHORT_CONV: return &hyb_plugin_short_conv;
    case SGL_ATTN_HYBRID_LIGHTNING: return &hyb_plugin_lightning;
    case SGL_ATTN_HYBRID_MINIMAX_SPARSE: return &hyb_plugin_minimax_sparse;
    default: return NULL;
    }
}

/* ------------------------------------------------------------ fake inner */

static fake_inner *fi(sgl_attn_backend *b) { return (fake_inner *)b; }
static int f_meta(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    fi(b)->n_meta++;
    fi(b)->last_batch = batch;
    return 0;
}
static int f_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fi(b)->n_extend++;
    fi(b)->last_layer = a->layer->layer_id;
    return fi(b)->fail_forward ? SGL_ATTN_E_DEVICE : 0;
}
static int f_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fi(b)->n_decode++;
    fi(b)->last_layer = a->layer->layer_id;
    return fi(b)->fail_forward ? SGL_ATTN_E_DEVICE : 0;
}
static int f_graph_init(sgl_attn_backend *b, int32_t bs, int32_t nt) {
    (void)bs;
    (void)nt;
    fi(b)->n_graph_init++;
    return 0;
}
static int f_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    fi(b)->n_capture++;
    return 0;
}
static int f_replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    fi(b)->n_replay++;
    return 0;
}
static int32_t f_fill(sgl_attn_backend *b) { return fi(b)->fill; }
static const char *f_err(sgl_attn_backend *b) {
    return fi(b)->fail_forward ? "fake inner: device lost" : "";
}
static void f_destroy(sgl_attn_backend *b) { (void)b; }

static const sgl_attn_backend_ops fake_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = f_meta,
    .forward_extend = f_extend,
    .forward_decode = f_decode,
    .init_graph_state = f_graph_init,
    .init_forward_metadata_capture = f_capture,
    .init_forward_metadata_replay = f_replay,
    .graph_seq_len_fill_value = f_fill,
    .last_error = f_err,
    .destroy = f_destroy,
};

void fake_inner_init(fake_inner *f) {
    memset(f, 0, sizeof *f);
    f->base.ops = &fake_ops;
    f->base.ops_size = sizeof fake_ops;
    f->fill = 7;
    f->last_layer = -1;
}

/* ------------------------------------------------------------ tensors */

DLDataType tu_dt(uint32_t bit) {
    DLDataType t = {kDLFloat, 32, 1};
    switch (bit) {
    case SGL_ATTN_DT_F64: t.bits = 64; break;
    case SGL_ATTN_DT_F16: t.bits = 16; break;
    case SGL_ATTN_DT_BF16: t.code = kDLBfloat; t.bits = 16; break;
    case 0: t.code = kDLInt; break;
    default: break;
    }
    return t;
}

void tt_make(ttensor *t, DLDataType dt, int ndim, int64_t d0, int64_t d1, int64_t d2) {
    memset(t, 0, sizeof *t);
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    t->count = 1;
    for (int i = 0; i < ndim; i++) t->count *= (size_t)t->shape[i];
    t->buf = calloc(t->count ? t->count : 1, dt.bits / 8);
    t->t.data = t->buf;
    t->t.device.device_type = kDLCPU;
    t->t.ndim = ndim;
    t->t.dtype = dt;
    t->t.shape = t->shape;
}

void tt_free(ttensor *t) {
    free(t->buf);
    t->buf = NULL;
}

static float bf16f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

double tt_get(const ttensor *t, size_t i) {
    if (t->t.dtype.code == kDLInt) return t->t.dtype.bits == 32 ? ((int32_t *)t->buf)[i] : (double)((int64_t *)t->buf)[i];
    if (t->t.dtype.code == kDLBfloat) return bf16f(((uint16_t *)t->buf)[i]);
    if (t->t.dtype.bits == 64) return ((double *)t->buf)[i];
    return ((float *)t->buf)[i];
}

void tt_set(ttensor *t, size_t i, double v) {
    if (t->t.dtype.code == kDLInt) {
        if (t->t.dtype.bits == 32) ((int32_t *)t->buf)[i] = (int32_t)v;
        else ((int64_t *)t->buf)[i] = (int64_t)v;
    } else if (t->t.dtype.code == kDLBfloat) {
        ((uint16_t *)t->buf)[i] = f2bf((float)v);
    } else if (t->t.dtype.bits == 64) {
        ((double *)t->buf)[i] = v;
    } else {
        ((float *)t->buf)[i] = (float)v;
    }
}

void tt_fill_nan(ttensor *t) {
    for (size_t i = 0; i < t->count; i++) tt_set(t, i, NAN);
}

/* ------------------------------------------------------------ random */

static uint64_t next(trng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
double tr_uniform(trng *r) { return (double)(next(r) >> 11) * 0x1.0p-53; }
double tr_normal(trng *r) {
    double u = tr_uniform(r), v = tr_uniform(r);
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}
int tr_range(trng *r, int lo, int hi) { return lo + (int)(tr_uniform(r) * (hi - lo + 1)); }

void tt_fill_normal(ttensor *t, trng *r, double sigma, double *ref) {
    for (size_t i = 0; i < t->count; i++) {
        tt_set(t, i, sigma * tr_normal(r));
        if (ref) ref[i] = tt_get(t, i);
    }
}

/* ------------------------------------------------------------ models */

void tu_model(sgl_attn_model *m, int kind, const tu_shape *s, uint32_t state_dt, int spec_tokens) {
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    strcpy(m->name, "test");
    strcpy(m->model_type, "test_hybrid");
    m->num_layers = 4;
    m->num_q_heads = 4;
    m->num_kv_heads = 2;
    m->head_dim_qk = 16;
    m->head_dim_v = 8;
    m->dtype = SGL_ATTN_DT_F32;
    m->kv_dtype = SGL_ATTN_DT_F32;
    m->sliding_window = -1;
    m->hybrid_kind = (uint32_t)kind;
    m->full_attention_mask[0] = (1u << 1) | (1u << 3);
    if (kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) {
        m->full_attention_mask[0] = 0xf;
        m->sparse_layer_mask[0] = (1u << 0) | (1u << 2);
        m->sparse_block_size = 4;
        m->sparse_topk_blocks = 2;
    }
    m->lin_num_k_heads = s->hk;
    m->lin_num_v_heads = s->hv;
    m->lin_head_k_dim = s->dk;
    m->lin_head_v_dim = s->dv;
    m->lin_conv_kernel = s->conv_w;
    m->lin_hidden = s->hidden;
    m->lin_state_dtype = state_dt;
    m->spec_tokens = spec_tokens;
}

lref_dims tu_lref_dims(const hyb_dims *d) {
    lref_dims r = {d->kind, d->hk, d->hv, d->dk, d->dv, d->conv_w, d->conv_dim};
    return r;
}

int tu_create(int kind, const sgl_attn_model *m, fake_inner *inner, int max_reqs, int max_tokens,
              int max_context, sgl_attn_backend **out, char *err, size_t n) {
    sgl_attn_caps caps;
    memset(&caps, 0, sizeof caps);
    caps.struct_size = sizeof caps;
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = m;
    a.max_reqs = max_reqs;
    a.max_tokens = max_tokens;
    a.max_context = max_context;
    a.inner = inner ? &inner->base : NULL;
    a.inner_caps = &caps;
    a.error = err;
    a.error_size = (uint32_t)n;
    return tu_plugin(kind)->create(&a, out);
}

double tu_nmse(const ttensor *got, size_t at, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double g = tt_get(got, at + i), e = g - ref[i];
        if (!isfinite(g)) return INFINITY;
        num += e * e;
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

void tu_attn_call(sgl_attn_layer *L, sgl_attn_forward_args *a, const sgl_attn_batch *batch, int hq, int hkv,
                  int dqk, int dv, ttensor *kc, ttensor *vc, ttensor *q, ttensor *k, ttensor *v, ttensor *out) {
    memset(L, 0, sizeof *L);
    L->struct_size = sizeof *L;
    L->layer_id = 0;
    L->num_q_heads = hq;
    L->num_kv_heads = hkv;
    L->head_dim_qk = dqk;
    L->head_dim_v = dv;
    L->sm_scale = 0.25f;
    L->sliding_window = -1;
    L->k_cache = &kc->t;
    L->v_cache = &vc->t;
    L->k_scale = L->v_scale = 1;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->save_kv_cache = 1;
    a->layer = L;
    a->batch = batch;
    a->q = &q->t;
    a->k = &k->t;
    a->v = &v->t;
    a->out = &out->t;
}
