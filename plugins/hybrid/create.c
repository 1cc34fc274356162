/* create.c - a wrapper instance: dims from the model, the layer routing, the
 * state pool, and every buffer a forward will touch, so forwards never
 * allocate.  The instance does not own the inner backend (the host built it
 * and destroys it). */
#include <stdlib.h>
#include <string.h>

#include "hyb.h"
#include "sdk_cpu.h"
#include "sdk_option.h"

size_t hyb_wbuf_elems(const hyb_dims *d, const sgl_attn_model *m, int32_t max_context) {
    size_t need = 0;
    /* phase A: new history + a working copy of the conv state + one row of x */
    size_t a = 2 * (size_t)d->conv_elems + (size_t)d->x_dim;
    need = a > need ? a : need;
    if (d->ssm_elems) { /* phase B: see carve() in drive.c */
        const size_t C = HYB_CHUNK_MAX, K = (size_t)d->dk, V = (size_t)d->dv;
        size_t w1 = hyb_delta_work_elems_f64(d->dk, d->dv, HYB_CHUNK_MAX);
        size_t w2 = hyb_declin_work_elems_f64(d->dk, d->dv, HYB_CHUNK_MAX);
        size_t b = C * (3 * K + 3 * V + 1) + V * K + (w1 > w2 ? w1 : w2);
        need = b > need ? b : need;
    }
    if (d->kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) { /* see item() in minimax_sparse.c */
        const size_t G = (size_t)(m->num_q_heads / m->num_kv_heads), ctx = (size_t)max_context;
        const size_t Dk = (size_t)m->head_dim_qk, Dv = (size_t)m->head_dim_v;
        size_t s = ctx * (2 + G) + G * Dk + Dk + Dv + G * Dv + (2 * ctx) / sizeof(float) + 2;
        size_t row = (size_t)m->num_kv_heads * (Dk > Dv ? Dk : Dv);
        need = s > need ? s : need;
        need = row > need ? row : need;
    }
    return need + 8;
}

static void *alloc_bytes(size_t elems, size_t esz, int *fail) {
    size_t n;
    if (__builtin_mul_overflow(elems ? elems : 1, esz, &n)) { *fail = 1; return NULL; }
    void *p = calloc(1, n);
    if (!p) *fail = 1;
    return p;
}

int hyb_create(const hyb_kind_impl *impl, const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char *err = a ? a->error : NULL;
    size_t en = a ? a->error_size : 0;
    if (out) *out = NULL;
    if (!a || !out || !a->model) {
        sgl_sdk_str(err, en, "%s: create needs args, a model and an out pointer", impl->name);
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_model *m = a->model;
    if (!a->inner || !a->inner->ops) {
        sgl_sdk_str(err, en, "%s is a hybrid wrapper: create_args.inner must be the full-attention "
                         "backend it wraps", impl->name);
        return SGL_ATTN_E_INVALID;
    }
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1) {
        sgl_sdk_str(err, en, "%s: max_reqs = %d, max_tokens = %d, max_context = %d; expected all >= 1",
                impl->name, a->max_reqs, a->max_tokens, a->max_context);
        return SGL_ATTN_E_INVALID;
    }
    char why[256];
    hyb_dims d;
    int rc = sgl_sdk_lin_supports(impl->kind, m, HYB_STATE_DTYPES, why, sizeof why);
    if (rc || (rc = sgl_sdk_lin_dims_of(impl->kind, m, HYB_STATE_DTYPES, &d, why, sizeof why))) {
        sgl_sdk_str(err, en, "%s: %s", impl->name, why);
        return rc;
    }
    /* Worker threads: option threads / $SGL_ATTN_HYBRID_THREADS, default the usable CPUs. */
    sgl_sdk_cpu cpu;
    sgl_sdk_cpu_describe(&cpu);
    const sgl_sdk_opts opts = sgl_sdk_opts_of(a, impl->name);
    int64_t threads;
    if ((rc = sgl_sdk_opt_int(&opts, "threads", "SGL_ATTN_HYBRID_THREADS", cpu.cores, 1, 256, &threads))) return rc;
    /* Own state pool: option state_pool / $SGL_ATTN_HYBRID_STATE_POOL, default on.  An
     * engine that passes its own state (ABI 1.2) turns it off and saves its memory. */
    int pool_on;
    if ((rc = sgl_sdk_opt_bool(&opts, "state_pool", "SGL_ATTN_HYBRID_STATE_POOL", 1, &pool_on))) return rc;
    hyb_inst *w = calloc(1, sizeof *w);
    if (!w) {
        sgl_sdk_str(err, en, "%s: out of memory", impl->name);
        return SGL_ATTN_E_NOMEM;
    }
    w->base.ops = &hyb_backend_ops;
    w->base.ops_size = hyb_backend_ops.struct_size;
    w->base.device = a->device;
    w->impl = impl;
    w->model = *m; /* the host's struct is never smaller than ours */
    w->d = d;
    w->inner = a->inner;
    const size_t esz = (size_t)d.esz;
    w->f64 = esz == 8;
    w->chunk = w->f64 ? 0 : HYB_CHUNK_DEFAULT; /* the reference extends token by token */
    w->max_reqs = a->max_reqs;
    w->max_tokens = a->max_tokens;
    w->max_context = a->max_context;
    w->pool_on = pool_on;
    for (int l = 0, i = 0; l < SGL_ATTN_MAX_LAYERS; l++)
        w->lin_index[l] = (int16_t)(sgl_sdk_lin_layer_is_own(impl->kind, m, l) ? i++ : -1);

    if (pool_on && (rc = hyb_pool_init(&w->pool, &d, a->max_reqs, m->spec_tokens, esz, why, sizeof why))) {
        sgl_sdk_str(err, en, "%s: %s", impl->name, why);
        free(w);
        return rc;
    }
    int fail = 0;
    w->plan.req = alloc_bytes((size_t)a->max_reqs, sizeof(hyb_req), &fail);
    w->call_slots = alloc_bytes((size_t)a->max_reqs, sizeof(int32_t), &fail);
    w->sortbuf = alloc_bytes(2 * (size_t)a->max_reqs, sizeof(uint64_t), &fail);
    w->verify_slots = alloc_bytes((size_t)a->max_reqs, sizeof(int32_t), &fail);
    w->scratch = alloc_bytes((size_t)a->max_tokens * (size_t)d.conv_dim, esz, &fail);
    w->params = alloc_bytes((size_t)d.conv_dim * (size_t)(d.conv_w + 1) + (size_t)d.hv * (size_t)d.dk +
                                4 * (size_t)d.hv + 16, esz, &fail);
    if (!fail) fail = hyb_workers_create((int)threads, &w->workers) != SGL_ATTN_OK;
    if (!fail) {
        w->n_workers = hyb_workers_count(w->workers);
        w->wbuf = calloc((size_t)w->n_workers, sizeof *w->wbuf);
        const size_t we = hyb_wbuf_elems(&d, m, a->max_context);
        for (int i = 0; !fail && w->wbuf && i < w->n_workers; i++) {
            w->wbuf[i].mem = alloc_bytes(we, sizeof(double), &fail);
            w->wbuf[i].bytes = we * sizeof(double);
        }
        fail |= !w->wbuf;
    }
    if (fail) {
        sgl_sdk_str(err, en, "%s: out of memory for the working buffers (max_tokens %d x %d channels, "
                         "%d threads)", impl->name, a->max_tokens, d.conv_dim, (int)threads);
        w->base.ops->destroy(&w->base);
        return SGL_ATTN_E_NOMEM;
    }
    *out = &w->base;
    return SGL_ATTN_OK;
}
