/* mla_gpu_util.c - see mla_gpu_util.h. */
#include "mla_gpu_util.h"
#include "mla_plugin_path.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define DQK 576
#define DV 512

uint16_t mg_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
float mg_from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t to_f16(float f) {
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
static float from_f16(uint16_t u) {
    _Float16 h;
    memcpy(&h, &u, 2);
    return (float)h;
}
/* e4m3 (fn): the same rounding as the device (nearest even, saturating). */
uint8_t mg_to_e4m3(float f) {
    uint8_t s = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (a != a) return s | 0x7f;
    if (a >= 448.f) return s | 0x7e;
    if (a < 0.015625f) return s | (uint8_t)rintf(a * 512.f);
    uint32_t b;
    memcpy(&b, &a, 4);
    uint32_t e = (b >> 23) - 120u, m = b & 0x7fffffu, r = (e << 3) | (m >> 20), rest = m & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (r & 1u))) r++;
    if (r > 0x7eu) r = 0x7eu;
    return (uint8_t)(s | r);
}
float mg_from_e4m3(uint8_t v) {
    uint32_t e = (v >> 3) & 15u, m = v & 7u;
    float x = e == 0 ? (float)m / 512.f : ldexpf(1.f + (float)m / 8.f, (int)e - 7);
    if (e == 15 && m == 7) x = NAN;
    return v & 0x80 ? -x : x;
}

static uint64_t rs;
static double urand(void) {
    rs ^= rs >> 12, rs ^= rs << 25, rs ^= rs >> 27;
    return (double)((rs * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand()); }
static int64_t irand(int64_t n) { return (int64_t)(urand() * (double)n); }

int mg_open(mg_plugin *pl, char *why, size_t n) {
    memset(pl, 0, sizeof *pl);
    char so[4200];
    if (mla_plugin_path(so, sizeof so)) {
        snprintf(why, n, "%s", so);
        return -1;
    }
    pl->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!pl->handle) {
        snprintf(why, n, "dlopen %s: %s", so, dlerror());
        return -1;
    }
    sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)dlsym(pl->handle, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    static sgl_attn_host_api api = {.struct_size = sizeof(sgl_attn_host_api),
                                    .abi_major = SGL_ATTN_ABI_MAJOR,
                                    .abi_minor_max = SGL_ATTN_ABI_MINOR,
                                    .host_version = "test"};
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (!entry || entry(&api, &ans) != SGL_ATTN_OK || !ans.plugin) {
        snprintf(why, n, "entry point failed");
        return -1;
    }
    pl->p = ans.plugin;
    pl->ops = pl->p->device_ops;
    pl->caps.struct_size = sizeof pl->caps;
    if (pl->p->probe(0, &pl->caps) != SGL_ATTN_OK) {
        snprintf(why, n, "probe(0) failed");
        return -1;
    }
    if (!pl->caps.available) {
        snprintf(why, n, "%s", pl->caps.reason);
        return 1;
    }
    return 0;
}

void mg_close(mg_plugin *pl) {
    if (pl->handle) dlclose(pl->handle);
    memset(pl, 0, sizeof *pl);
}

static size_t kv_elem(int kv_dt) { return kv_dt == MG_FP8 ? 1 : 2; }
static float q_val(const mg_run *r, const uint16_t *p, size_t i) {
    return r->c.dt == MG_BF16 ? mg_from_bf16(p[i]) : from_f16(p[i]);
}
static uint16_t q_round(const mg_run *r, float f) { return r->c.dt == MG_BF16 ? mg_to_bf16(f) : to_f16(f); }
static float pool_val(const mg_run *r, int64_t slot, int d) {
    const unsigned char *p = (const unsigned char *)r->pool + (size_t)slot * DQK * kv_elem(r->c.kv_dt);
    if (r->c.kv_dt == MG_FP8) return mg_from_e4m3(p[d]) * r->k_scale;
    uint16_t h;
    memcpy(&h, p + 2 * d, 2);
    return r->c.kv_dt == MG_BF16 ? mg_from_bf16(h) : from_f16(h);
}
static void pool_store(mg_run *r, int64_t slot, int d, float v) {
    unsigned char *p = (unsigned char *)r->pool + (size_t)slot * DQK * kv_elem(r->c.kv_dt);
    if (r->c.kv_dt == MG_FP8) {
        p[d] = mg_to_e4m3(v / r->k_scale);
        return;
    }
    uint16_t h = r->c.kv_dt == MG_BF16 ? mg_to_bf16(v) : to_f16(v);
    memcpy(p + 2 * d, &h, 2);
}

#define OPS(call, what)                                                                     \
    do {                                                                                    \
        int e_ = (call);                                                                    \
        if (e_) {                                                                           \
            snprintf(err, n, "%s: %s", what, r->pl->ops->error_string(e_));                 \
            return -1;                                                                      \
        }                                                                                   \
    } while (0)

static DLTensor dlt(void *data, int ndim, int64_t *shape, uint8_t code, uint8_t bits, int dev) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.ndim = ndim;
    t.shape = shape;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.device.device_type = dev ? kDLCUDA : kDLCPU;
    t.device.device_id = 0;
    return t;
}

static void reference(mg_run *r) {
    const int hq = r->c.hq;
    double *s = malloc(sizeof(double) * (size_t)(r->maxctx + 1));
    float *kv = malloc(sizeof(float) * (size_t)DQK * (size_t)(r->maxctx + 1));
    const double scale = 1.0 / sqrt(192.0);
    int tok = 0;
    for (int b = 0; b < r->c.bs; b++) {
        const int row = r->rpi[b];
        const int nk_all = r->prefix[b] + r->q_len[b];
        for (int k = 0; k < nk_all; k++)
            for (int d = 0; d < DQK; d++) kv[(size_t)k * DQK + d] = pool_val(r, r->r2t[(size_t)row * r->maxctx + k], d);
        for (int t = 0; t < r->q_len[b]; t++, tok++) {
            const int nk = r->prefix[b] + t + 1;
            for (int h = 0; h < hq; h++) {
                const uint16_t *q = (const uint16_t *)r->q + ((size_t)tok * hq + h) * DQK;
                double mx = -INFINITY, sum = 0;
                for (int k = 0; k < nk; k++) {
                    double dot = 0;
                    for (int d = 0; d < DQK; d++) dot += (double)q_val(r, q, d) * kv[(size_t)k * DQK + d];
                    s[k] = dot * scale;
                    mx = s[k] > mx ? s[k] : mx;
                }
                for (int k = 0; k < nk; k++) sum += (s[k] = exp(s[k] - mx));
                double *o = r->ref + ((size_t)tok * hq + h) * DV;
                for (int d = 0; d < DV; d++) o[d] = 0;
                for (int k = 0; k < nk; k++) {
                    const double p = s[k] / sum;
                    for (int d = 0; d < DV; d++) o[d] += p * kv[(size_t)k * DQK + d];
                }
            }
        }
    }
    free(s);
    free(kv);
}

int mg_setup(mg_run *r, const mg_plugin *pl, const mg_case *c, uint64_t seed, char *err, size_t n) {
    memset(r, 0, sizeof *r);
    r->c = *c;
    r->pl = pl;
    rs = seed * 0x9e3779b97f4a7c15ull + 1;
    const int bs = c->bs, hq = c->hq, page = c->page;
    r->q_len = calloc((size_t)bs, 4);
    r->prefix = calloc((size_t)bs, 4);
    r->seq = calloc((size_t)bs, 4);
    r->ext_len = calloc((size_t)bs, 4);
    r->pre_len = calloc((size_t)bs, 4);
    r->rpi = calloc((size_t)bs, 4);
    r->maxctx = c->len + 8;
    for (int b = 0; b < bs; b++) {
        const int q = c->mode == MG_DECODE ? 1 : c->q;
        int len = c->len;
        if (c->ragged) len = q + (int)irand(c->len - q + 1);
        if (c->ragged && b == 0) len = q;
        if (c->ragged && b == bs - 1) len = c->len;
        r->q_len[b] = q;
        r->prefix[b] = len - q;
        r->seq[b] = len;
        r->ext_len[b] = q;
        r->pre_len[b] = len - q;
        r->t += q;
    }
    /* pages: 0 reserved, the rest shuffled and handed out in order */
    /* sized for the longest lengths, so a case's pool does not depend on its draw */
    const int64_t npages = 1 + 4 + (int64_t)bs * ((c->len + page - 1) / page);
    r->slots = npages * page;
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)npages);
    for (int64_t i = 0; i < npages - 1; i++) perm[i] = i + 1;
    for (int64_t i = npages - 2; i > 0; i--) {
        int64_t j = irand(i + 1), tmp = perm[i];
        perm[i] = perm[j], perm[j] = tmp;
    }
    const int nrows = bs + 2;
    r->rows = nrows;
    r->r2t = malloc(sizeof(int32_t) * (size_t)nrows * (size_t)r->maxctx);
    for (size_t i = 0; i < (size_t)nrows * (size_t)r->maxctx; i++) r->r2t[i] = (int32_t)irand(r->slots);
    int64_t next_page = 0;
    for (int b = 0; b < bs; b++) {
        r->rpi[b] = (b * 7 + 3) % nrows; /* distinct rows (7 coprime to nrows unless nrows % 7 == 0) */
        if (nrows % 7 == 0) r->rpi[b] = b + 1;
        for (int k = 0; k < r->seq[b]; k++) {
            if (k % page == 0) next_page++;
            r->r2t[(size_t)r->rpi[b] * r->maxctx + k] = (int32_t)(perm[next_page - 1] * page + k % page);
        }
    }
    free(perm);
    r->loc = malloc(sizeof(int32_t) * (size_t)r->t);
    for (int b = 0, tok = 0; b < bs; b++)
        for (int t = 0; t < r->q_len[b]; t++, tok++) r->loc[tok] = r->r2t[(size_t)r->rpi[b] * r->maxctx + r->prefix[b] + t];

    r->k_scale = c->kv_dt == MG_FP8 ? 0.0625f : 1.f;
    r->pool_bytes = (size_t)r->slots * DQK * kv_elem(c->kv_dt);
    r->pool = malloc(r->pool_bytes);
    r->q = malloc((size_t)r->t * hq * DQK * 2);
    r->k = malloc((size_t)r->t * DQK * 2);
    if (!r->pool || !r->q || !r->k) {
        snprintf(err, n, "host memory");
        return -1;
    }
    const int64_t fill_slots = c->fill ? (int64_t)(1 << 16) : r->slots; /* bench: 64 Ki rows repeated */
    for (int64_t sl = 0; sl < (fill_slots < r->slots ? fill_slots : r->slots); sl++)
        for (int d = 0; d < DQK; d++) pool_store(r, sl, d, (float)nrand());
    for (int64_t sl = fill_slots; sl < r->slots; sl++)
        memcpy((char *)r->pool + (size_t)sl * DQK * kv_elem(c->kv_dt),
               (char *)r->pool + (size_t)(sl % fill_slots) * DQK * kv_elem(c->kv_dt), DQK * kv_elem(c->kv_dt));
    for (size_t i = 0; i < (size_t)r->t * hq * DQK; i++) ((uint16_t *)r->q)[i] = q_round(r, (float)(1.5 * nrand()));
    for (size_t i = 0; i < (size_t)r->t * DQK; i++) ((uint16_t *)r->k)[i] = q_round(r, (float)nrand());

    const sgl_attn_device_ops *ops = pl->ops;
    OPS(ops->stream_create ? ops->stream_create(0, &r->stream) : 0, "stream_create");
    const size_t qb = (size_t)r->t * hq * DQK * 2, ob = (size_t)r->t * hq * DV * 2;
    OPS(ops->alloc(0, qb, &r->d_q), "alloc q");
    OPS(ops->alloc(0, (size_t)r->t * DQK * 2, &r->d_k), "alloc k");
    OPS(ops->alloc(0, ob, &r->d_out), "alloc out");
    OPS(ops->alloc(0, r->pool_bytes, &r->d_pool), "alloc pool");
    OPS(ops->alloc(0, sizeof(int32_t) * (size_t)nrows * r->maxctx, &r->d_r2t), "alloc r2t");
    OPS(ops->alloc(0, sizeof(int32_t) * (size_t)bs, &r->d_rpi), "alloc rpi");
    OPS(ops->alloc(0, sizeof(int32_t) * (size_t)r->t, &r->d_loc), "alloc loc");
    OPS(ops->alloc(0, sizeof(int32_t) * (size_t)bs, &r->d_seq), "alloc seq");
    OPS(ops->copy_to_device(0, r->d_q, r->q, qb), "upload q");
    OPS(ops->copy_to_device(0, r->d_k, r->k, (size_t)r->t * DQK * 2), "upload k");
    OPS(ops->copy_to_device(0, r->d_pool, r->pool, r->pool_bytes), "upload pool");
    OPS(ops->copy_to_device(0, r->d_r2t, r->r2t, sizeof(int32_t) * (size_t)nrows * r->maxctx), "upload r2t");
    OPS(ops->copy_to_device(0, r->d_rpi, r->rpi, sizeof(int32_t) * (size_t)bs), "upload rpi");
    OPS(ops->copy_to_device(0, r->d_loc, r->loc, sizeof(int32_t) * (size_t)r->t), "upload loc");
    OPS(ops->copy_to_device(0, r->d_seq, r->seq, sizeof(int32_t) * (size_t)bs), "upload seq");

    /* the pool as it must be after the save, for the reference and the pool check */
    for (int tok = 0; tok < r->t; tok++)
        for (int d = 0; d < DQK; d++) pool_store(r, r->loc[tok], d, q_val(r, (const uint16_t *)r->k + (size_t)tok * DQK, d));
    if (c->ref) {
        r->ref = malloc(sizeof(double) * (size_t)r->t * hq * DV);
        reference(r);
    }

    const uint8_t qcode = c->dt == MG_BF16 ? kDLBfloat : kDLFloat;
    r->s_q[0] = r->t, r->s_q[1] = hq, r->s_q[2] = DQK;
    r->s_k[0] = r->t, r->s_k[1] = 1, r->s_k[2] = DQK;
    r->s_out[0] = r->t, r->s_out[1] = hq, r->s_out[2] = DV;
    r->s_pool[0] = r->slots, r->s_pool[1] = 1, r->s_pool[2] = DQK;
    r->s_r2t[0] = nrows, r->s_r2t[1] = r->maxctx;
    r->s_rpi[0] = bs, r->s_loc[0] = r->t, r->s_seq[0] = bs, r->s_pre[0] = bs, r->s_ext[0] = bs;
    r->tq = dlt(r->d_q, 3, r->s_q, qcode, 16, 1);
    r->tk = dlt(r->d_k, 3, r->s_k, qcode, 16, 1);
    r->tout = dlt(r->d_out, 3, r->s_out, qcode, 16, 1);
    r->tpool = c->kv_dt == MG_FP8 ? dlt(r->d_pool, 3, r->s_pool, SGL_ATTN_DL_FLOAT8_E4M3_CODE, 8, 1)
                                  : dlt(r->d_pool, 3, r->s_pool, c->kv_dt == MG_BF16 ? kDLBfloat : kDLFloat, 16, 1);
    r->tr2t = dlt(r->d_r2t, 2, r->s_r2t, kDLInt, 32, 1);
    r->trpi = dlt(r->d_rpi, 1, r->s_rpi, kDLInt, 32, 1);
    r->tloc = dlt(r->d_loc, 1, r->s_loc, kDLInt, 32, 1);
    r->tseq = dlt(r->d_seq, 1, r->s_seq, kDLInt, 32, 1);
    r->tseq_cpu = dlt(r->seq, 1, r->s_seq, kDLInt, 32, 0);
    r->tpre_cpu = dlt(r->pre_len, 1, r->s_pre, kDLInt, 32, 0);
    r->text_cpu = dlt(r->ext_len, 1, r->s_ext, kDLInt, 32, 0);

    sgl_attn_batch *bt = &r->batch;
    bt->struct_size = sizeof *bt;
    bt->forward_mode = c->mode == MG_DECODE ? SGL_ATTN_MODE_DECODE
                     : c->mode == MG_VERIFY ? SGL_ATTN_MODE_TARGET_VERIFY
                                            : SGL_ATTN_MODE_EXTEND;
    bt->batch_size = bs;
    bt->num_tokens = r->t;
    bt->page_size = page;
    bt->tokens_per_req = c->mode == MG_EXTEND ? 0 : r->q_len[0];
    bt->req_to_token = &r->tr2t;
    bt->req_pool_indices = &r->trpi;
    bt->seq_lens = &r->tseq;
    bt->out_cache_loc = &r->tloc;
    bt->seq_lens_cpu = &r->tseq_cpu;
    if (c->mode == MG_EXTEND) {
        bt->extend_prefix_lens_cpu = &r->tpre_cpu;
        bt->extend_seq_lens_cpu = &r->text_cpu;
    }
    bt->stream = r->stream;
    sgl_attn_layer *l = &r->layer;
    l->struct_size = sizeof *l;
    l->num_q_heads = hq;
    l->num_kv_heads = 1;
    l->head_dim_qk = DQK;
    l->head_dim_v = DV;
    l->sm_scale = (float)(1.0 / sqrt(192.0));
    l->sliding_window = -1;
    l->k_cache = &r->tpool;
    l->k_scale = l->v_scale = r->k_scale;
    sgl_attn_forward_args *fa = &r->fa;
    fa->struct_size = sizeof *fa;
    fa->save_kv_cache = 1;
    fa->layer = l;
    fa->batch = bt;
    fa->q = &r->tq;
    fa->k = &r->tk;
    fa->out = &r->tout;
    sgl_attn_model *m = &r->model;
    m->struct_size = sizeof *m;
    snprintf(m->name, sizeof m->name, "mla-test");
    m->num_layers = 1;
    m->num_q_heads = hq;
    m->num_kv_heads = 1;
    m->head_dim_qk = DQK;
    m->head_dim_v = DV;
    m->dtype = c->dt == MG_BF16 ? SGL_ATTN_DT_BF16 : SGL_ATTN_DT_F16;
    m->kv_dtype = c->kv_dt == MG_FP8 ? SGL_ATTN_DT_FP8_E4M3 : m->dtype;
    m->is_mla = 1;
    m->kv_lora_rank = 512;
    m->qk_rope_head_dim = 64;
    m->sliding_window = -1;
    m->page_size = page;
    return 0;
}

int mg_variant_env(const char *variant, char *err, size_t n) {
    char buf[96];
    if (snprintf(buf, sizeof buf, "%s", variant) >= (int)sizeof buf) {
        snprintf(err, n, "variant %s: too long", variant);
        return -1;
    }
    unsetenv("SGL_ATTN_MLA_MMA");
    char *save = NULL, *tok = strtok_r(buf, "+", &save);
    setenv("SGL_ATTN_MLA_KERNEL", tok ? tok : "auto", 1);
    while ((tok = strtok_r(NULL, "+", &save))) {
        if (!strcmp(tok, "base") || !strcmp(tok, "ring") || !strcmp(tok, "tma")) {
            setenv("SGL_ATTN_MLA_MMA", tok, 1);
        } else {
            snprintf(err, n, "variant %s: unknown part '%s' (expected base, ring or tma)", variant, tok);
            return -1;
        }
    }
    return 0;
}

int mg_create(mg_run *r, const char *kernel, sgl_attn_backend **b, char *err, size_t n) {
    if (mg_variant_env(kernel, err, n)) return -1;
    char why[512] = "";
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &r->model;
    a.device = 0;
    a.max_reqs = r->c.bs;
    a.max_tokens = r->t;
    a.max_context = r->maxctx;
    a.error = why;
    a.error_size = sizeof why;
    int rc = r->pl->p->create(&a, b);
    if (rc) snprintf(err, n, "create (%s): %d %s", kernel, rc, why);
    return rc;
}

int mg_reset_pool(mg_run *r, char *err, size_t n) {
    /* the host copy already holds the saved rows; the device must start without them */
    void *orig = malloc(r->pool_bytes);
    memcpy(orig, r->pool, r->pool_bytes);
    /* undo: rows at loc get random other content, so a kernel that skips the save reads wrong rows */
    for (int tok = 0; tok < r->t; tok++)
        memset((char *)orig + (size_t)r->loc[tok] * DQK * kv_elem(r->c.kv_dt), 0x3c, DQK * kv_elem(r->c.kv_dt));
    int e = r->pl->ops->copy_to_device(0, r->d_pool, orig, r->pool_bytes);
    free(orig);
    if (e) snprintf(err, n, "pool upload: %s", r->pl->ops->error_string(e));
    return e ? -1 : 0;
}

int mg_poison(mg_run *r, char *err, size_t n) {
    const size_t ob = (size_t)r->t * r->c.hq * DV * 2;
    uint16_t *p = malloc(ob);
    for (size_t i = 0; i < ob / 2; i++) p[i] = 0x7fa5; /* NaN in bf16 and f16 */
    int e = r->pl->ops->copy_to_device(0, r->d_out, p, ob);
    free(p);
    if (e) snprintf(err, n, "poison: %s", r->pl->ops->error_string(e));
    return e ? -1 : 0;
}

int mg_forward_only(mg_run *r, sgl_attn_backend *b, char *err, size_t n) {
    int rc = r->c.mode == MG_EXTEND ? b->ops->forward_extend(b, &r->fa) : b->ops->forward_decode(b, &r->fa);
    if (rc) snprintf(err, n, "forward: %d %s", rc, b->ops->last_error(b));
    return rc;
}

int mg_forward(mg_run *r, sgl_attn_backend *b, char *err, size_t n) {
    int rc = b->ops->init_forward_metadata(b, &r->batch);
    if (rc) {
        snprintf(err, n, "init_forward_metadata: %d %s", rc, b->ops->last_error(b));
        return rc;
    }
    return mg_forward_only(r, b, err, n);
}

double mg_compare(mg_run *r, char *err, size_t n) {
    const sgl_attn_device_ops *ops = r->pl->ops;
    int e = ops->synchronize(0, r->stream);
    if (e) {
        snprintf(err, n, "synchronize: %s", ops->error_string(e));
        return -1;
    }
    const size_t cnt = (size_t)r->t * r->c.hq * DV;
    uint16_t *o = malloc(cnt * 2);
    e = ops->copy_to_host(0, o, r->d_out, cnt * 2);
    double num = 0, den = 0;
    for (size_t i = 0; !e && i < cnt; i++) {
        const float v = q_val(r, o, i);
        if (!isfinite(v)) {
            snprintf(err, n, "out[%zu] (token %zu, head %zu, col %zu) = %g (%s)", i, i / ((size_t)r->c.hq * DV),
                     i / DV % (size_t)r->c.hq, i % DV, v, o[i] == 0x7fa5 ? "never written" : "NaN/Inf");
            free(o);
            return -1;
        }
        num += (v - r->ref[i]) * (v - r->ref[i]);
        den += r->ref[i] * r->ref[i];
    }
    free(o);
    if (e) {
        snprintf(err, n, "download: %s", ops->error_string(e));
        return -1;
    }
    /* the saved rows */
    unsigned char *pool = malloc(r->pool_bytes);
    e = ops->copy_to_host(0, pool, r->d_pool, r->pool_bytes);
    for (int tok = 0; !e && tok < r->t; tok++) {
        size_t off = (size_t)r->loc[tok] * DQK * kv_elem(r->c.kv_dt);
        if (memcmp(pool + off, (char *)r->pool + off, DQK * kv_elem(r->c.kv_dt))) {
            snprintf(err, n, "pool slot %d (token %d) differs from the saved row", r->loc[tok], tok);
            free(pool);
            return -1;
        }
    }
    free(pool);
    return den > 0 ? num / den : num;
}

void mg_free(mg_run *r) {
    const sgl_attn_device_ops *ops = r->pl ? r->pl->ops : NULL;
    if (ops) {
        void *d[] = {r->d_q, r->d_k, r->d_out, r->d_pool, r->d_r2t, r->d_rpi, r->d_loc, r->d_seq};
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) if (d[i]) ops->free(0, d[i]);
        if (r->stream && ops->stream_destroy) ops->stream_destroy(0, r->stream);
    }
    free(r->q_len), free(r->prefix), free(r->seq), free(r->ext_len), free(r->pre_len);
    free(r->rpi), free(r->r2t), free(r->loc), free(r->pool), free(r->q), free(r->k), free(r->ref);
    memset(r, 0, sizeof *r);
}

double mg_bytes(const mg_run *r) {
    double rows = 0;
    for (int b = 0; b < r->c.bs; b++) rows += r->seq[b];
    return rows * DQK * (double)kv_elem(r->c.kv_dt);
}

double mg_flops(const mg_run *r) {
    double pairs = 0;
    for (int b = 0; b < r->c.bs; b++)
        for (int t = 0; t < r->q_len[b]; t++) pairs += r->prefix[b] + t + 1;
    return 2.0 * r->c.hq * (DQK + DV) * pairs;
}
