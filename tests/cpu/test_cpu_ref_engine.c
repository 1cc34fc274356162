/* test_cpu_ref_engine.c - cpu_ref's ABI 1.2 engine inputs against float64
 * math written here (its own key lists, slot lookups and two-pass softmax):
 * tree verify (custom_mask / mask_indptr), draft extend, the bidirectional
 * and encoder-only attention types, encoder slots of cross layers, page
 * tables (copied at planning: a table changed afterwards is not read) and
 * slot maps; on the f64 path and the f32/f16/bf16 paths.  Each group also
 * shows a bad input refused with a message naming the field and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

static const DLDataType i64 = {kDLInt, 64, 1}, u8 = {kDLUInt, 8, 1}, f32t = {kDLFloat, 32, 1};

/* What a case adds to the fixture's run. */
typedef struct eng {
    tc_run r;
    int type;                      /* layer.attn_type */
    unsigned char *mask;           /* [sum q_i * seq_i] */
    int64_t *mask_ip;              /* [bs + 1] */
    int64_t sh_mask[1], sh_ip[1];
    DLTensor t_mask, t_ip;
    int64_t *pt;                   /* [bs, max_pages] */
    int64_t sh_pt[2];
    DLTensor t_pt;
    int64_t *map;                  /* [slots]: full-pool slot -> layer slot */
    void *kc2, *vc2;               /* the layer's own pool */
    int64_t sh_map[1];
    DLTensor t_map, t_kc2, t_vc2;
    int64_t *enc_loc;              /* [sum enc] */
    void *ek, *ev;                 /* encoder K/V [sum enc, hkv, d] */
    int64_t n_enc, sh_el[1], sh_ek[3], sh_ev[3];
    DLTensor t_el, t_ek, t_ev;
} eng;

static int n_new_of(const tc_spec *s, int i) {
    return s->mode == SGL_ATTN_MODE_EXTEND || s->mode == SGL_ATTN_MODE_DRAFT_EXTEND ? s->seq[i] - s->prefix[i]
                                                                                     : s->tpr;
}

static void eng_build(eng *e, const tc_spec *s, uint64_t seed) {
    memset(e, 0, sizeof *e);
    tc_spec sp = *s;
    const int draft = s->mode == SGL_ATTN_MODE_DRAFT_EXTEND;
    if (draft) sp.mode = SGL_ATTN_MODE_EXTEND; /* the fixture builds it as the extend it is */
    tc_build(&e->r, &sp, seed, seed ^ 0x5eed);
    if (draft) {
        e->r.s.mode = SGL_ATTN_MODE_DRAFT_EXTEND;
        e->r.batch.forward_mode = SGL_ATTN_MODE_DRAFT_EXTEND;
    }
}

/* A tree mask: the prefix mostly visible (some keys hidden, so whole tiles
 * and single keys are masked), each draft token seeing itself and its
 * ancestors in a random tree; request 0's last token sees nothing. */
static void eng_tree(eng *e, uint64_t seed) {
    const tc_spec *s = &e->r.s;
    uint64_t st = seed * 3 + 1;
    int64_t n = 0;
    for (int i = 0; i < s->bs; i++) n += (int64_t)s->tpr * s->seq[i];
    e->mask = calloc((size_t)n + 1, 1);
    e->mask_ip = calloc((size_t)s->bs + 1, sizeof(int64_t));
    int64_t off = 0;
    for (int i = 0; i < s->bs; i++) {
        const int q = s->tpr, pre = s->seq[i] - q;
        int parent[64];
        e->mask_ip[i] = off;
        for (int j = 0; j < q; j++) {
            parent[j] = j == 0 ? -1 : (int)(tc_rand(&st) % (uint64_t)(j + 1)) - 1;
            unsigned char *row = e->mask + off + (int64_t)j * s->seq[i];
            for (int c = 0; c < pre; c++) row[c] = (tc_rand(&st) % 10) != 0 && !(c >= 32 && c < 64);
            for (int a = j; a >= 0; a = parent[a]) row[pre + a] = 1;
            if (i == 0 && j == q - 1) memset(row, 0, (size_t)s->seq[i]);
        }
        off += (int64_t)q * s->seq[i];
    }
    e->mask_ip[s->bs] = off;
    e->sh_mask[0] = off;
    e->sh_ip[0] = s->bs + 1;
    tc_wrap(&e->t_mask, e->mask, u8, 1, e->sh_mask);
    tc_wrap(&e->t_ip, e->mask_ip, i64, 1, e->sh_ip);
    e->r.batch.custom_mask = &e->t_mask;
    e->r.batch.mask_indptr = &e->t_ip;
}

/* The page table the fixture's req_to_token implies; req_to_token and
 * req_pool_indices then go (NULL: not read). */
static void eng_pages(eng *e) {
    tc_run *r = &e->r;
    const tc_spec *s = &r->s;
    int64_t w = 0;
    for (int i = 0; i < s->bs; i++) {
        int64_t np = ((int64_t)s->enc[i] + s->seq[i] + s->page - 1) / s->page;
        w = np > w ? np : w;
    }
    w += 1; /* a spare column */
    e->pt = malloc(sizeof(int64_t) * (size_t)(s->bs * w));
    for (int i = 0; i < s->bs; i++)
        for (int64_t j = 0; j < w; j++) {
            int64_t c = j * s->page;
            e->pt[i * w + j] = c < (int64_t)s->enc[i] + s->seq[i] ? tc_slot(r, i, c) / s->page : 999999;
        }
    e->sh_pt[0] = s->bs, e->sh_pt[1] = w;
    tc_wrap(&e->t_pt, e->pt, i64, 2, e->sh_pt);
    r->batch.page_table = &e->t_pt;
    r->batch.req_to_token = NULL;
    r->batch.req_pool_indices = NULL;
}

/* A layer pool of its own: layer slot map[s] holds what full-pool slot s holds. */
static void eng_map(eng *e, uint64_t seed) {
    tc_run *r = &e->r;
    const tc_spec *s = &r->s;
    uint64_t st = seed * 5 + 3;
    const int64_t n = r->slots;
    e->map = malloc(sizeof(int64_t) * (size_t)n);
    for (int64_t i = 0; i < n; i++) e->map[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(tc_rand(&st) % (uint64_t)(i + 1)), t = e->map[i];
        e->map[i] = e->map[j];
        e->map[j] = t;
    }
    const size_t ksz = tc_size(s->kv_dt), krow = (size_t)s->hkv * (size_t)s->dqk, vrow = (size_t)s->hkv * (size_t)s->dv;
    e->kc2 = malloc((size_t)n * krow * ksz);
    e->vc2 = malloc((size_t)n * vrow * ksz);
    for (int64_t i = 0; i < n; i++) {
        memcpy((char *)e->kc2 + (size_t)e->map[i] * krow * ksz, (char *)r->k_cache + (size_t)i * krow * ksz, krow * ksz);
        memcpy((char *)e->vc2 + (size_t)e->map[i] * vrow * ksz, (char *)r->v_cache + (size_t)i * vrow * ksz, vrow * ksz);
    }
    /* the full pool no longer holds the values: reading it instead shows */
    for (size_t i = 0; i < (size_t)n * krow; i++) tc_store(s->kv_dt, r->k_cache, i, 100.0);
    e->sh_map[0] = n;
    tc_wrap(&e->t_map, e->map, i64, 1, e->sh_map);
    e->t_kc2 = r->t_kc;
    e->t_kc2.data = e->kc2;
    e->t_vc2 = r->t_vc;
    e->t_vc2.data = e->vc2;
    r->layer.slot_map = &e->t_map;
    r->layer.k_cache = &e->t_kc2;
    r->layer.v_cache = &e->t_vc2;
}

/* Cross attention that saves the encoder's K/V at encoder_out_cache_loc. */
static void eng_enc_save(eng *e, uint64_t seed) {
    tc_run *r = &e->r;
    const tc_spec *s = &r->s;
    uint64_t st = seed * 7 + 5;
    e->n_enc = 0;
    for (int i = 0; i < s->bs; i++) e->n_enc += s->enc[i];
    e->enc_loc = malloc(sizeof(int64_t) * (size_t)e->n_enc);
    int64_t k = 0;
    for (int i = 0; i < s->bs; i++)
        for (int c = 0; c < s->enc[i]; c++) e->enc_loc[k++] = tc_slot(r, i, c);
    const size_t dsz = tc_size(s->dt), kn = (size_t)e->n_enc * (size_t)s->hkv * (size_t)s->dqk,
                 vn = (size_t)e->n_enc * (size_t)s->hkv * (size_t)s->dv;
    e->ek = malloc(kn * dsz + 8);
    e->ev = malloc(vn * dsz + 8);
    for (size_t i = 0; i < kn; i++) tc_store(s->dt, e->ek, i, tc_normal(&st));
    for (size_t i = 0; i < vn; i++) tc_store(s->dt, e->ev, i, tc_normal(&st));
    e->sh_el[0] = e->n_enc;
    e->sh_ek[0] = e->n_enc, e->sh_ek[1] = s->hkv, e->sh_ek[2] = s->dqk;
    e->sh_ev[0] = e->n_enc, e->sh_ev[1] = s->hkv, e->sh_ev[2] = s->dv;
    tc_wrap(&e->t_el, e->enc_loc, i64, 1, e->sh_el);
    e->t_ek = r->t_k;
    e->t_ek.data = e->ek, e->t_ek.shape = e->sh_ek;
    e->t_ev = r->t_v;
    e->t_ev.data = e->ev, e->t_ev.shape = e->sh_ev;
    r->batch.encoder_out_cache_loc = &e->t_el;
    r->args.k = &e->t_ek;
    r->args.v = &e->t_ev;
    r->args.save_kv_cache = 1;
}

static void eng_free(eng *e) {
    free(e->mask);
    free(e->mask_ip);
    free(e->pt);
    free(e->map);
    free(e->kc2);
    free(e->vc2);
    free(e->enc_loc);
    free(e->ek);
    free(e->ev);
    tc_free(&e->r);
}

static int64_t ref_idx(const void *p, int is64, int64_t i) {
    return is64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/* The float64 answer: the layer's pool (after the save the call makes),
 * the keys each query token sees by the case's rules, two-pass softmax. */
static void eng_naive(const eng *e, double *ref) {
    const tc_run *r = &e->r;
    const tc_spec *s = &r->s;
    const int64_t krow = (int64_t)s->hkv * s->dqk, vrow = (int64_t)s->hkv * s->dv, n = r->slots;
    const void *kp = e->map ? e->kc2 : r->k_cache, *vp = e->map ? e->vc2 : r->v_cache;
    double *kd = malloc(sizeof(double) * (size_t)(n * krow)), *vd = malloc(sizeof(double) * (size_t)(n * vrow));
    for (int64_t i = 0; i < n * krow; i++) kd[i] = tc_load(s->kv_dt, kp, (size_t)i);
    for (int64_t i = 0; i < n * vrow; i++) vd[i] = tc_load(s->kv_dt, vp, (size_t)i);
    unsigned char tmp[8];
    const int save = r->args.save_kv_cache;
    const int64_t n_save = s->cross ? e->n_enc : r->T;
    const void *ksrc = s->cross ? e->ek : r->k, *vsrc = s->cross ? e->ev : r->v;
    for (int64_t t = 0; save && t < n_save; t++) {
        int64_t slot = s->cross ? e->enc_loc[t] : ref_idx(r->ocl, s->idx64, t);
        if (e->map) slot = e->map[slot];
        for (int64_t x = 0; x < krow; x++) {
            tc_store(s->kv_dt, tmp, 0, tc_load(s->dt, ksrc, (size_t)(t * krow + x)));
            kd[slot * krow + x] = tc_load(s->kv_dt, tmp, 0);
        }
        for (int64_t x = 0; x < vrow; x++) {
            tc_store(s->kv_dt, tmp, 0, tc_load(s->dt, vsrc, (size_t)(t * vrow + x)));
            vd[slot * vrow + x] = tc_load(s->kv_dt, tmp, 0);
        }
    }
    const int G = s->hq / s->hkv;
    const int64_t maxk = r->cols + 1;
    double *sc = malloc(sizeof(double) * (size_t)maxk);
    const double **krows = malloc(sizeof(double *) * (size_t)maxk), **vrows = malloc(sizeof(double *) * (size_t)maxk);
    double *direct_k = malloc(sizeof(double) * (size_t)(r->T * krow + 1)),
           *direct_v = malloc(sizeof(double) * (size_t)(r->T * vrow + 1));
    for (int64_t i = 0; i < r->T * krow; i++) direct_k[i] = tc_load(s->dt, r->k, (size_t)i);
    for (int64_t i = 0; i < r->T * vrow; i++) direct_v[i] = tc_load(s->dt, r->v, (size_t)i);
    int64_t tok = 0;
    for (int i = 0; i < s->bs; i++) {
        const int nn = n_new_of(s, i);
        const int first = s->seq[i] - nn, tok0 = (int)tok;
        for (int j = 0; j < nn; j++, tok++) {
            const int pos = first + j;
            int64_t nk = 0;
            for (int p = 0; p < (s->cross ? s->enc[i] : s->seq[i]); p++) {
                int see;
                if (s->cross) see = 1;
                else if (e->mask) see = e->mask[e->mask_ip[i] + (int64_t)j * s->seq[i] + p];
                else if (e->type == SGL_ATTN_TYPE_BIDIRECTIONAL) see = 1;
                else if (e->type == SGL_ATTN_TYPE_ENCODER_ONLY) see = p >= first;
                else see = p <= pos && (s->window < 0 || p >= pos - s->window);
                if (!see) continue;
                if (e->type == SGL_ATTN_TYPE_ENCODER_ONLY) {
                    krows[nk] = direct_k + (tok0 + p - first) * krow;
                    vrows[nk] = direct_v + (tok0 + p - first) * vrow;
                } else {
                    int64_t slot = tc_slot(r, i, (s->cross ? 0 : s->enc[i]) + (int64_t)p);
                    if (e->map) slot = e->map[slot];
                    krows[nk] = kd + slot * krow;
                    vrows[nk] = vd + slot * vrow;
                }
                nk++;
            }
            for (int h = 0; h < s->hq; h++) {
                const int kh = h / G;
                double mx = -INFINITY;
                for (int64_t k = 0; k < nk; k++) {
                    double dot = 0;
                    for (int d = 0; d < s->dqk; d++)
                        dot += tc_load(s->dt, r->q, (size_t)((tok * s->hq + h) * s->dqk + d)) * krows[k][kh * s->dqk + d];
                    double x = dot * (double)s->scale;
                    if (s->softcap > 0) x = s->softcap * tanh(x / s->softcap);
                    sc[k] = x;
                    mx = x > mx ? x : mx;
                }
                const double sink = s->sinks ? (double)r->sinks[h] : -INFINITY;
                if (sink > mx) mx = sink;
                double den = s->sinks ? exp(sink - mx) : 0;
                for (int64_t k = 0; k < nk; k++) den += (sc[k] = exp(sc[k] - mx)); /* scores -> weights */
                for (int d = 0; d < s->dv; d++) {
                    double num = 0;
                    for (int64_t k = 0; k < nk; k++) num += sc[k] * vrows[k][kh * s->dv + d];
                    ref[(tok * s->hq + h) * s->dv + d] = den > 0 ? num / den : 0;
                }
            }
        }
    }
    free(sc);
    free(krows);
    free(vrows);
    free(direct_k);
    free(direct_v);
    free(kd);
    free(vd);
}

static int eng_forward(eng *e, sgl_attn_backend *b) {
    int rc = b->ops->init_forward_metadata(b, &e->r.batch);
    if (rc) return rc;
    return e->r.s.mode == SGL_ATTN_MODE_DECODE || e->r.s.mode == SGL_ATTN_MODE_TARGET_VERIFY
               ? b->ops->forward_decode(b, &e->r.args)
               : b->ops->forward_extend(b, &e->r.args);
}

static void compare(eng *e, const char *what) {
    double *ref = malloc(sizeof(double) * tc_out_count(&e->r) + 8);
    eng_naive(e, ref);
    double nmse = tc_nmse(&e->r, ref);
    uint32_t worst = tc_limit(e->r.s.kv_dt) > tc_limit(e->r.s.dt) ? e->r.s.kv_dt : e->r.s.dt;
    free(ref);
    if (!(nmse <= tc_limit(worst))) fail_msg("%s: NMSE %.3g > %.3g", what, nmse, tc_limit(worst));
}

static sgl_attn_backend *create_for(eng *e, const char *what) {
    char err[512] = "";
    sgl_attn_backend *b = tc_create(&e->r, err, sizeof err);
    if (!b) fail_msg("%s: create: %s", what, err);
    return b;
}

static void run_ok(eng *e, const char *what) {
    sgl_attn_backend *b = create_for(e, what);
    int rc = eng_forward(e, b);
    if (rc) fail_msg("%s: status %d: %s", what, rc, b->ops->last_error(b));
    compare(e, what);
    b->ops->destroy(b);
}

static void run_bad(eng *e, const char *what, int status, const char *mention) {
    sgl_attn_backend *b = create_for(e, what);
    int rc = eng_forward(e, b);
    const char *msg = b->ops->last_error(b);
    if (rc == SGL_ATTN_OK) fail_msg("%s: accepted", what);
    if (rc != status) fail_msg("%s: status %d, expected %d (%s)", what, rc, status, msg);
    if (!strstr(msg, mention)) fail_msg("%s: message '%s' does not mention '%s'", what, msg, mention);
    b->ops->destroy(b);
}

static tc_spec spec_of(int mode, uint32_t dt, uint32_t kv_dt) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode;
    s.bs = 3;
    s.hq = 8, s.hkv = 2, s.dqk = s.dv = 32;
    s.page = 16;
    s.window = -1;
    s.save = 1;
    s.tpr = 1;
    s.dt = dt, s.kv_dt = kv_dt;
    s.seq[0] = 150, s.seq[1] = 77, s.seq[2] = 300;
    s.prefix[0] = 100, s.prefix[1] = 0, s.prefix[2] = 260;
    return s;
}

static const uint32_t dts[][2] = {{SGL_ATTN_DT_F64, SGL_ATTN_DT_F64},
                                  {SGL_ATTN_DT_F32, SGL_ATTN_DT_BF16},
                                  {SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16},
                                  {SGL_ATTN_DT_F16, SGL_ATTN_DT_F32}};
/* SGL_ATTN_TEST_QUICK (the valgrind run): the f64 path and one mixed f32/bf16 only */
static int n_dts(void) {
    const char *q = getenv("SGL_ATTN_TEST_QUICK");
    return q && q[0] == '1' ? 2 : (int)(sizeof dts / sizeof dts[0]);
}
#define N_DTS n_dts()

/* Tree verify: random trees, GQA, one request long enough for decode splits,
 * sinks and soft-cap on some; and the chain case with no mask. */
static void test_tree_verify(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++)
        for (int v = 0; v < 3; v++) {
            tc_spec s = spec_of(SGL_ATTN_MODE_TARGET_VERIFY, dts[d][0], dts[d][1]);
            s.tpr = v == 0 ? 5 : v == 1 ? 16 : 3;
            s.page = v == 2 ? 1 : 16;
            s.sinks = v == 1;
            s.softcap = v == 2 ? 30.0f : 0;
            if (v == 2) s.bs = 1, s.seq[0] = 1600; /* one long request: KV splits */
            s.idx64 = v == 1;
            eng e;
            eng_build(&e, &s, 100 + (uint64_t)(d * 3 + v));
            eng_tree(&e, 7 + (uint64_t)v);
            char what[96];
            snprintf(what, sizeof what, "tree verify dt %u/%u variant %d", dts[d][0], dts[d][1], v);
            run_ok(&e, what);
            eng_free(&e);
        }
    /* chain (no mask) keeps working */
    tc_spec s = spec_of(SGL_ATTN_MODE_TARGET_VERIFY, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    s.tpr = 4;
    eng e;
    eng_build(&e, &s, 55);
    run_ok(&e, "chain verify");
    eng_free(&e);
}

static void test_tree_bad(void **state) {
    (void)state;
    tc_spec s = spec_of(SGL_ATTN_MODE_TARGET_VERIFY, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    s.tpr = 4;
    eng e;
    eng_build(&e, &s, 9);
    eng_tree(&e, 9);
    e.sh_mask[0] -= 1; /* too short */
    run_bad(&e, "mask too short", SGL_ATTN_E_INVALID, "custom_mask has");
    e.sh_mask[0] += 1;
    e.mask_ip[1] += 1;
    run_bad(&e, "mask_indptr", SGL_ATTN_E_INVALID, "mask_indptr[1]");
    e.mask_ip[1] -= 1;
    e.t_mask.dtype = f32t;
    run_bad(&e, "mask dtype", SGL_ATTN_E_INVALID, "custom_mask: its dtype is not uint8 or bool");
    e.t_mask.dtype = u8;
    e.r.batch.mask_indptr = NULL;
    run_bad(&e, "mask alone", SGL_ATTN_E_INVALID, "custom_mask is set without batch.mask_indptr");
    e.r.batch.mask_indptr = &e.t_ip;
    e.r.layer.sliding_window = 64;
    run_bad(&e, "mask with window", SGL_ATTN_E_UNSUPPORTED, "sliding_window 64");
    eng_free(&e);
}

/* Draft extend: each request's accepted tokens, causal, as an extend. */
static void test_draft_extend(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++) {
        tc_spec s = spec_of(SGL_ATTN_MODE_DRAFT_EXTEND, dts[d][0], dts[d][1]);
        s.prefix[0] = 147, s.prefix[1] = 76, s.prefix[2] = 298; /* 3, 1, 2 accepted */
        eng e;
        eng_build(&e, &s, 200 + (uint64_t)d);
        run_ok(&e, "draft extend");
        eng_free(&e);
    }
}

static void test_attn_types(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++)
        for (int type = 1; type <= 2; type++)
            for (int save = 0; save <= 1; save++) {
                tc_spec s = spec_of(SGL_ATTN_MODE_EXTEND, dts[d][0], dts[d][1]);
                s.save = save;
                s.sinks = save;
                eng e;
                eng_build(&e, &s, 300 + (uint64_t)(d * 4 + type * 2 + save));
                e.type = type;
                e.r.layer.attn_type = type;
                char what[96];
                snprintf(what, sizeof what, "attn_type %d save %d dt %u/%u", type, save, dts[d][0], dts[d][1]);
                run_ok(&e, what);
                eng_free(&e);
            }
    /* bad: an unknown type, a type with a window, encoder-only on MLA */
    tc_spec s = spec_of(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    eng e;
    eng_build(&e, &s, 9);
    e.r.layer.attn_type = 7;
    run_bad(&e, "attn_type 7", SGL_ATTN_E_INVALID, "layer.attn_type = 7");
    e.r.layer.attn_type = 1;
    e.r.layer.sliding_window = 16;
    run_bad(&e, "bidirectional window", SGL_ATTN_E_UNSUPPORTED, "attn_type = 1 (bidirectional) with sliding_window 16");
    e.r.layer.sliding_window = -1;
    e.r.layer.attn_type = 2;
    e.r.t_v.dtype = f32t; /* k bf16, v f32 */
    run_bad(&e, "encoder-only dtypes", SGL_ATTN_E_UNSUPPORTED, "expected one dtype");
    /* dual chunk attention runs on plain layers only */
    e.r.t_v.dtype = e.r.t_k.dtype;
    e.r.layer.attn_type = 1;
    const sgl_attn_dual_chunk dc = {.struct_size = sizeof dc, .chunk_size = 64, .local_size = 16};
    e.r.args.dual_chunk = &dc;
    run_bad(&e, "dual chunk bidirectional", SGL_ATTN_E_UNSUPPORTED,
            "dual chunk attention with a page table, slot map, tree mask or attention type");
    e.r.args.dual_chunk = NULL;
    eng_free(&e);
}

/* Cross layers save the encoder's K/V, then attend over them. */
static void test_encoder_slots(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++)
        for (int mode = 0; mode < 2; mode++) {
            tc_spec s = spec_of(mode ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, dts[d][0], dts[d][1]);
            s.cross = 1;
            s.has_enc = 1;
            s.enc[0] = 40, s.enc[1] = 90, s.enc[2] = 7;
            s.save = 0;
            eng e;
            eng_build(&e, &s, 400 + (uint64_t)(d * 2 + mode));
            eng_enc_save(&e, 3);
            run_ok(&e, mode ? "encoder slots extend" : "encoder slots decode");
            eng_free(&e);
        }
    tc_spec s = spec_of(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    s.cross = 1, s.has_enc = 1, s.save = 0;
    s.enc[0] = 40, s.enc[1] = 90, s.enc[2] = 7;
    eng e;
    eng_build(&e, &s, 9);
    eng_enc_save(&e, 3);
    e.enc_loc[41] += 1;
    run_bad(&e, "encoder slot", SGL_ATTN_E_INVALID, "encoder_out_cache_loc[41]");
    e.enc_loc[41] -= 1;
    e.r.batch.encoder_out_cache_loc = NULL;
    run_bad(&e, "no encoder slots", SGL_ATTN_E_INVALID, "needs batch.encoder_out_cache_loc");
    eng_free(&e);
}

/* Page tables: req_to_token absent; the table is copied at planning, so a
 * table the caller overwrites after init_forward_metadata is not read. */
static void test_page_table(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++)
        for (int mode = 0; mode < 3; mode++) {
            static const int modes[] = {SGL_ATTN_MODE_EXTEND, SGL_ATTN_MODE_DECODE, SGL_ATTN_MODE_TARGET_VERIFY};
            tc_spec s = spec_of(modes[mode], dts[d][0], dts[d][1]);
            s.tpr = mode == 2 ? 4 : 1;
            s.page = mode == 1 ? 1 : 16;
            s.has_enc = mode == 0;
            s.enc[0] = s.has_enc ? 20 : 0, s.enc[2] = s.has_enc ? 33 : 0;
            eng e;
            eng_build(&e, &s, 500 + (uint64_t)(d * 3 + mode));
            eng_pages(&e);
            if (mode == 2) eng_tree(&e, 5);
            sgl_attn_backend *b = create_for(&e, "page table");
            int rc = b->ops->init_forward_metadata(b, &e.r.batch);
            if (rc) fail_msg("page table: plan: %s", b->ops->last_error(b));
            int64_t *keep = malloc(sizeof(int64_t) * (size_t)(e.sh_pt[0] * e.sh_pt[1]));
            memcpy(keep, e.pt, sizeof(int64_t) * (size_t)(e.sh_pt[0] * e.sh_pt[1]));
            for (int64_t i = 0; i < e.sh_pt[0] * e.sh_pt[1]; i++) e.pt[i] = -1; /* the caller reuses its table */
            rc = mode ? b->ops->forward_decode(b, &e.r.args) : b->ops->forward_extend(b, &e.r.args);
            if (rc) fail_msg("page table mode %d: %s", mode, b->ops->last_error(b));
            compare(&e, "page table");
            memcpy(e.pt, keep, sizeof(int64_t) * (size_t)(e.sh_pt[0] * e.sh_pt[1]));
            free(keep);
            b->ops->destroy(b);
            eng_free(&e);
        }
    tc_spec s = spec_of(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    eng e;
    eng_build(&e, &s, 9);
    eng_pages(&e);
    e.pt[1] = (e.r.slots / s.page) + 3; /* past the pool */
    run_bad(&e, "page past the pool", SGL_ATTN_E_INVALID, "page_table[0][1]");
    e.pt[1] = -2;
    run_bad(&e, "negative page", SGL_ATTN_E_INVALID, "page_table[0][1] = -2");
    e.pt[1] = tc_slot(&e.r, 0, s.page) / s.page;
    e.sh_pt[1] = 2;
    run_bad(&e, "narrow table", SGL_ATTN_E_INVALID, "but batch.page_table has 2 columns");
    e.t_pt.dtype = f32t;
    run_bad(&e, "page table dtype", SGL_ATTN_E_INVALID, "batch.page_table has dtype float32");
    eng_free(&e);
}

/* Slot maps: the layer's own pool, permuted; with req_to_token and with a
 * page table; the full pool holds garbage so an unmapped read shows. */
static void test_slot_map(void **state) {
    (void)state;
    for (int d = 0; d < N_DTS; d++)
        for (int v = 0; v < 3; v++) {
            tc_spec s = spec_of(v == 2 ? SGL_ATTN_MODE_DECODE : SGL_ATTN_MODE_EXTEND, dts[d][0], dts[d][1]);
            s.window = v == 1 ? 40 : -1;
            s.idx64 = v == 0;
            eng e;
            eng_build(&e, &s, 600 + (uint64_t)(d * 3 + v));
            eng_map(&e, 11);
            if (v == 2) eng_pages(&e);
            char what[96];
            snprintf(what, sizeof what, "slot map dt %u/%u variant %d", dts[d][0], dts[d][1], v);
            run_ok(&e, what);
            eng_free(&e);
        }
    tc_spec s = spec_of(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16, SGL_ATTN_DT_BF16);
    eng e;
    eng_build(&e, &s, 9);
    eng_map(&e, 11);
    const int64_t used = tc_slot(&e.r, 1, 5), keep = e.map[used];
    e.map[used] = e.r.slots + 5;
    char want[96];
    snprintf(want, sizeof want, "layer.slot_map[%lld] = %lld", (long long)used, (long long)(e.r.slots + 5));
    run_bad(&e, "slot map out of range", SGL_ATTN_E_INVALID, want);
    e.map[used] = keep;
    e.sh_map[0] = 3;
    run_bad(&e, "short slot map", SGL_ATTN_E_INVALID, "outside layer.slot_map (3 entries)");
    e.sh_map[0] = e.r.slots;
    e.t_map.dtype = f32t;
    run_bad(&e, "slot map dtype", SGL_ATTN_E_INVALID, "layer.slot_map has dtype float32");
    eng_free(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_verify),  cmocka_unit_test(test_tree_bad),      cmocka_unit_test(test_draft_extend),
        cmocka_unit_test(test_attn_types),   cmocka_unit_test(test_encoder_slots), cmocka_unit_test(test_page_table),
        cmocka_unit_test(test_slot_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
