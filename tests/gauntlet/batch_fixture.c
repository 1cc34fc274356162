/* batch_fixture.c - see batch_fixture.h.  Pages are handed out from a
 * shuffled free list that never includes page 0 (slot 0 is padding). */
#include "batch_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t fx_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int32_t fx_range(uint64_t *s, int32_t lo, int32_t hi) {
    return lo + (int32_t)(fx_rand(s) % (uint64_t)(hi - lo + 1));
}

uint64_t fx_test_seed(void) {
    const char *e = getenv("SGL_ATTN_TEST_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    fprintf(stderr, "# SGL_ATTN_TEST_SEED=%llu\n", (unsigned long long)seed);
    return seed;
}

int64_t fx_get(const DLTensor *t, int64_t i) {
    if (t->dtype.bits == 32) return ((const int32_t *)t->data)[i];
    return ((const int64_t *)t->data)[i];
}

void fx_set(DLTensor *t, int64_t i, int64_t v) {
    if (t->dtype.bits == 32)
        ((int32_t *)t->data)[i] = (int32_t)v;
    else
        ((int64_t *)t->data)[i] = v;
}

int64_t fx_rtt_get(const fx *f, int64_t row, int64_t col) {
    return fx_get(&f->t_rtt, row * f->max_ctx + col);
}

void fx_rtt_set(fx *f, int64_t row, int64_t col, int64_t v) {
    fx_set(&f->t_rtt, row * f->max_ctx + col, v);
}

static void tensor(DLTensor *t, void *data, int ndim, int64_t *shape, uint8_t code, uint8_t bits) {
    memset(t, 0, sizeof *t);
    t->data = data;
    t->device.device_type = kDLCPU;
    t->ndim = ndim;
    t->shape = shape;
    t->dtype.code = code;
    t->dtype.bits = bits;
    t->dtype.lanes = 1;
}

static float *rand_floats(uint64_t *s, size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)(fx_rand(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    return p;
}

static void *idx_alloc(const fx *f, size_t n) {
    return calloc(n ? n : 1, f->s.idx_bits == 32 ? 4 : 8);
}

static void fill_caps(fx *f) {
    sgl_attn_caps *c = &f->caps;
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->available = 1;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                  SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                  SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    c->head_dim_qk_max = c->head_dim_v_max = 256;
    c->page_size_max = 256;
    c->score = 1;
}

static void fill_model(fx *f) {
    sgl_attn_model *m = &f->model;
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    snprintf(m->name, sizeof m->name, "fixture");
    m->num_layers = 4;
    m->num_q_heads = f->s.hq;
    m->num_kv_heads = f->s.hkv;
    m->head_dim_qk = m->head_dim_v = f->s.d;
    m->dtype = m->kv_dtype = SGL_ATTN_DT_F32;
    m->sliding_window = -1;
    for (int i = 0; i < m->num_layers; i++)
        m->full_attention_mask[0] |= 1ull << i;
}

int fx_build(fx *f, const fx_shape *shape, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->rng = seed;
    f->s = *shape;
    uint64_t *r = &f->rng;
    int32_t bs = shape->bs, ps = shape->page, ext_mode = shape->mode == SGL_ATTN_MODE_EXTEND;
    fill_model(f);
    fill_caps(f);
    f->max_reqs = bs + fx_range(r, 1, 8);
    f->max_ctx = (shape->max_len + ps - 1) / ps * ps + ps;
    /* Enough pages for every row at its longest, plus page 0 and spares. */
    int32_t pages_per_row = f->max_ctx / ps;
    int32_t n_pages = 1 + bs * pages_per_row + fx_range(r, 1, 4);
    f->slots = n_pages * ps;

    int32_t *lens = calloc((size_t)bs, sizeof *lens), *pre = calloc((size_t)bs, sizeof *pre);
    int32_t *rows = calloc((size_t)f->max_reqs, sizeof *rows);
    int32_t *free_pages = calloc((size_t)n_pages, sizeof *free_pages);
    if (!lens || !pre || !rows || !free_pages) goto oom;
    f->T = 0;
    int64_t sum = 0;
    for (int32_t i = 0; i < bs; i++) {
        lens[i] = fx_range(r, 1, shape->max_len);
        pre[i] = ext_mode ? fx_range(r, 0, lens[i] - 1) : lens[i] - 1;
        f->T += lens[i] - pre[i];
        sum += lens[i];
    }
    f->max_tokens = f->T + fx_range(r, 0, 16);
    /* Rows: a random permutation; pages: shuffled 1..n_pages-1. */
    for (int32_t i = 0; i < f->max_reqs; i++)
        rows[i] = i;
    for (int32_t i = f->max_reqs - 1; i > 0; i--) {
        int32_t j = fx_range(r, 0, i), t = rows[i];
        rows[i] = rows[j];
        rows[j] = t;
    }
    for (int32_t i = 0; i < n_pages - 1; i++)
        free_pages[i] = i + 1;
    for (int32_t i = n_pages - 2; i > 0; i--) {
        int32_t j = fx_range(r, 0, i), t = free_pages[i];
        free_pages[i] = free_pages[j];
        free_pages[j] = t;
    }

    f->rtt = idx_alloc(f, (size_t)f->max_reqs * (size_t)f->max_ctx);
    f->rpi = idx_alloc(f, (size_t)bs);
    f->seq = idx_alloc(f, (size_t)bs);
    f->seq_cpu = idx_alloc(f, (size_t)bs);
    f->pre = idx_alloc(f, (size_t)bs);
    f->ext = idx_alloc(f, (size_t)bs);
    f->ocl = idx_alloc(f, (size_t)f->T);
    f->pos = idx_alloc(f, (size_t)f->T);
    size_t nq = (size_t)f->T * (size_t)shape->hq * (size_t)shape->d;
    size_t nkv = (size_t)f->T * (size_t)shape->hkv * (size_t)shape->d;
    size_t npool = (size_t)f->slots * (size_t)shape->hkv * (size_t)shape->d;
    f->q = rand_floats(r, nq);
    f->k = rand_floats(r, nkv);
    f->v = rand_floats(r, nkv);
    f->out = rand_floats(r, nq);
    f->kc = rand_floats(r, npool);
    f->vc = rand_floats(r, npool);
    if (!f->rtt || !f->rpi || !f->seq || !f->seq_cpu || !f->pre || !f->ext || !f->ocl || !f->pos ||
        !f->q || !f->k || !f->v || !f->out || !f->kc || !f->vc)
        goto oom;

    uint8_t ib = (uint8_t)shape->idx_bits;
    f->sh_rtt[0] = f->max_reqs;
    f->sh_rtt[1] = f->max_ctx;
    f->sh_bs[0] = bs;
    f->sh_T[0] = f->T;
    int64_t q3[3] = {f->T, shape->hq, shape->d}, kv3[3] = {f->T, shape->hkv, shape->d};
    int64_t p3[3] = {f->slots, shape->hkv, shape->d};
    memcpy(f->sh_q, q3, sizeof q3);
    memcpy(f->sh_out, q3, sizeof q3);
    memcpy(f->sh_kv, kv3, sizeof kv3);
    memcpy(f->sh_pool, p3, sizeof p3);
    tensor(&f->t_rtt, f->rtt, 2, f->sh_rtt, kDLInt, ib);
    tensor(&f->t_rpi, f->rpi, 1, f->sh_bs, kDLInt, ib);
    tensor(&f->t_seq, f->seq, 1, f->sh_bs, kDLInt, ib);
    tensor(&f->t_seq_cpu, f->seq_cpu, 1, f->sh_bs, kDLInt, ib);
    tensor(&f->t_pre, f->pre, 1, f->sh_bs, kDLInt, ib);
    tensor(&f->t_ext, f->ext, 1, f->sh_bs, kDLInt, ib);
    tensor(&f->t_ocl, f->ocl, 1, f->sh_T, kDLInt, ib);
    tensor(&f->t_pos, f->pos, 1, f->sh_T, kDLInt, ib);
    tensor(&f->t_q, f->q, 3, f->sh_q, kDLFloat, 32);
    tensor(&f->t_out, f->out, 3, f->sh_out, kDLFloat, 32);
    tensor(&f->t_k, f->k, 3, f->sh_kv, kDLFloat, 32);
    tensor(&f->t_v, f->v, 3, f->sh_kv, kDLFloat, 32);
    tensor(&f->t_kc, f->kc, 3, f->sh_pool, kDLFloat, 32);
    tensor(&f->t_vc, f->vc, 3, f->sh_pool, kDLFloat, 32);

    /* Unused cells of req_to_token hold random junk, as in a live pool. */
    for (int64_t i = 0; i < (int64_t)f->max_reqs * f->max_ctx; i++)
        fx_set(&f->t_rtt, i, fx_range(r, 0, f->slots * 4));
    int32_t next_page = 0, t = 0;
    for (int32_t i = 0; i < bs; i++) {
        int32_t row = rows[i];
        fx_set(&f->t_rpi, i, row);
        fx_set(&f->t_seq, i, lens[i]);
        fx_set(&f->t_seq_cpu, i, lens[i]);
        fx_set(&f->t_pre, i, pre[i]);
        fx_set(&f->t_ext, i, lens[i] - pre[i]);
        for (int32_t col = 0; col < lens[i]; col++) {
            if (col % ps == 0) next_page++;
            int32_t slot = free_pages[next_page - 1] * ps + col % ps;
            fx_rtt_set(f, row, col, slot);
            if (col >= pre[i]) {
                fx_set(&f->t_ocl, t, slot);
                fx_set(&f->t_pos, t, col);
                t++;
            }
        }
    }

    sgl_attn_batch *b = &f->batch;
    b->struct_size = sizeof *b;
    b->forward_mode = shape->mode;
    b->batch_size = bs;
    b->num_tokens = f->T;
    b->page_size = ps;
    b->tokens_per_req = 1;
    b->seq_lens_sum = sum;
    b->req_to_token = &f->t_rtt;
    b->req_pool_indices = &f->t_rpi;
    b->seq_lens = &f->t_seq;
    b->seq_lens_cpu = &f->t_seq_cpu;
    if (ext_mode) {
        b->extend_prefix_lens = &f->t_pre;
        b->extend_seq_lens = &f->t_ext;
    }
    b->out_cache_loc = &f->t_ocl;
    b->positions = &f->t_pos;

    sgl_attn_layer *l = &f->layer;
    l->struct_size = sizeof *l;
    l->layer_id = fx_range(r, 0, f->model.num_layers - 1);
    l->num_q_heads = shape->hq;
    l->num_kv_heads = shape->hkv;
    l->head_dim_qk = l->head_dim_v = shape->d;
    l->sm_scale = 1.0f / (float)shape->d;
    l->sliding_window = -1;
    l->k_cache = &f->t_kc;
    l->v_cache = &f->t_vc;
    l->k_scale = l->v_scale = 1.0f;

    sgl_attn_forward_args *a = &f->args;
    a->struct_size = sizeof *a;
    a->save_kv_cache = 1;
    a->layer = l;
    a->batch = b;
    a->q = &f->t_q;
    a->k = &f->t_k;
    a->v = &f->t_v;
    a->out = &f->t_out;
    free(lens);
    free(pre);
    free(rows);
    free(free_pages);
    return 0;
oom:
    free(lens);
    free(pre);
    free(rows);
    free(free_pages);
    fx_free(f);
    return -1;
}

void fx_free(fx *f) {
    void *p[] = {f->rtt, f->rpi, f->seq, f->seq_cpu, f->pre, f->ext, f->ocl,
                 f->pos, f->q,   f->k,   f->v,       f->out, f->kc,  f->vc};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
    memset(f, 0, sizeof *f);
}
