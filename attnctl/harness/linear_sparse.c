/* linear_sparse.c - `attnctl check` cases of minimax_sparse: its sparse
 * layer over a paged KV pool (shuffled pages, prefixes already in the pool,
 * new K/V saved at out_cache_loc) against lref_sparse_query, the float64
 * statement of the block choice and the softmax (docs/hybrid.md).  q and k are
 * multiples of 1/16 in [-2, 2] so every q.k is exact in float32 and the block
 * choice cannot differ between the plugin and the reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear_family.h"
#include "linear_ref.h"

/* free a tensor only if it was allocated (some of a case's may not be) */
static void tfree(htensor *t) {
    if (t->host) htensor_free(t);
}

#define LS_MAXR 64

typedef struct scase {
    int b, l, q, hq, hkv, d, dv, page, block, topk, decode, ragged;
    hdtype dt;
} scase;

static int parse(const hcase *c, scase *s, hresult *r) {
    static const char *const keys[] = {"b", "l", "q", "hq", "hkv", "d", "dv", "page", "block", "topk",
                                       "fwd", "ragged", "dtype", "seed", NULL};
    char err[384];
    long v;
    memset(s, 0, sizeof *s);
    if (hcase_check_keys(c, keys, err, sizeof err)) goto bad;
    const char *f = hcase_get(c, "fwd");
    if (f && strcmp(f, "extend") && strcmp(f, "decode")) {
        hresult_error(r, "%s: fwd=%s; expected extend or decode", c->text, f);
        return -1;
    }
    s->decode = f && !strcmp(f, "decode");
#define INT(key, def, lo, hi, dst)                                              \
    do {                                                                        \
        if (hcase_int(c, key, def, lo, hi, &v, err, sizeof err)) goto bad;      \
        dst = (int)v;                                                           \
    } while (0)
    INT("b", 3, 1, LS_MAXR, s->b);
    INT("l", 300, 1, 1 << 16, s->l);
    INT("q", s->decode ? 1 : 40, 1, 1 << 16, s->q);
    INT("hq", 8, 1, 256, s->hq);
    INT("hkv", 2, 1, 256, s->hkv);
    INT("d", 64, 1, 512, s->d);
    INT("dv", s->d, 1, 512, s->dv);
    INT("page", 16, 1, 1024, s->page);
    INT("block", 32, 1, 4096, s->block);
    INT("topk", 4, 1, 4096, s->topk);
    INT("ragged", 1, 0, 1, s->ragged);
#undef INT
    if (hcase_dtype(c, "dtype", HDT_F32, &s->dt, err, sizeof err)) goto bad;
    if (s->decode) s->q = 1;
    if (s->q > s->l || s->hq % s->hkv || !hdtype_is_float(s->dt)) {
        hresult_error(r, "%s: need q <= l, hq a multiple of hkv and a float dtype", c->text);
        return -1;
    }
    return 0;
bad:
    hresult_error(r, "%s", err);
    return -1;
}

static double qval(hrng *g) { return (double)hrng_range(g, -32, 32) / 16.0; }

void lfam_sparse_check(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    (void)f;
    scase s;
    if (parse(c, &s, r)) return;
    long sv;
    char err[256];
    if (hcase_get(c, "seed") && !hcase_int(c, "seed", 0, 0, 0x7fffffffL, &sv, err, sizeof err)) seed = (uint64_t)sv;
    hrng g;
    hrng_seed(&g, seed);
    int len[LS_MAXR], nq[LS_MAXR], T = 0, pages_needed = 0;
    for (int i = 0; i < s.b; i++) { /* ragged: request 0 the shortest, the last the longest */
        len[i] = s.l;
        nq[i] = s.q;
        if (s.ragged && s.b > 1 && i < s.b - 1)
            len[i] = i == 0 ? s.q : (int)hrng_range(&g, s.q, s.l);
        T += nq[i];
        pages_needed += (len[i] + s.page - 1) / s.page;
    }
    const int max_ctx = s.l + 1, npages = pages_needed + 3, slots = npages * s.page;
    sgl_attn_model m;
    sgl_attn_model_init(&m);
    snprintf(m.name, sizeof m.name, "harness minimax_sparse");
    snprintf(m.model_type, sizeof m.model_type, "harness_minimax_sparse");
    m.num_layers = 2;
    m.num_q_heads = s.hq;
    m.num_kv_heads = s.hkv;
    m.head_dim_qk = s.d;
    m.head_dim_v = s.dv;
    m.dtype = m.kv_dtype = hdtype_bit(s.dt);
    m.hybrid_kind = SGL_ATTN_HYBRID_MINIMAX_SPARSE;
    m.sparse_layer_mask[0] = 1; /* layer 0 sparse, layer 1 dense */
    m.sparse_block_size = s.block;
    m.sparse_topk_blocks = s.topk;
    sgl_attn_create_options o = {sizeof o, s.b + 1, T, max_ctx};
    sgl_attn_backend *be = NULL;
    if (htarget_create(t, &m, &o, &be, r) != SGL_ATTN_OK) return;

    htensor kc, vc, rtt, rpi, sl, pl, el, loc, pos, q, k, v, out;
    memset(&kc, 0, sizeof kc);
    htensor *all[] = {&kc, &vc, &rtt, &rpi, &sl, &pl, &el, &loc, &pos, &q, &k, &v, &out};
    for (size_t i = 1; i < sizeof all / sizeof *all; i++) memset(all[i], 0, sizeof *all[i]);
    double *kd = NULL, *vd = NULL, *ref = NULL, *kk = NULL, *vv = NULL, *qq = NULL;
    int64_t shape[3];
#define ALLOC(t_, name, dt_, nd, a0, a1, a2)                                                      \
    (shape[0] = (a0), shape[1] = (a1), shape[2] = (a2),                                          \
     htensor_alloc((t_), &t->dev, (name), (dt_), (nd), shape, err, sizeof err))
    if (ALLOC(&kc, "k_cache", s.dt, 3, slots, s.hkv, s.d) || ALLOC(&vc, "v_cache", s.dt, 3, slots, s.hkv, s.dv) ||
        ALLOC(&rtt, "req_to_token", HDT_I32, 2, s.b + 1, max_ctx, 1) || ALLOC(&rpi, "req_pool_indices", HDT_I32, 1, s.b, 1, 1) ||
        ALLOC(&sl, "seq_lens", HDT_I32, 1, s.b, 1, 1) || ALLOC(&pl, "extend_prefix_lens", HDT_I32, 1, s.b, 1, 1) ||
        ALLOC(&el, "extend_seq_lens", HDT_I32, 1, s.b, 1, 1) || ALLOC(&loc, "out_cache_loc", HDT_I32, 1, T, 1, 1) ||
        ALLOC(&pos, "positions", HDT_I32, 1, T, 1, 1) || ALLOC(&q, "q", s.dt, 3, T, s.hq, s.d) ||
        ALLOC(&k, "k", s.dt, 3, T, s.hkv, s.d) || ALLOC(&v, "v", s.dt, 3, T, s.hkv, s.dv) ||
        ALLOC(&out, "out", s.dt, 3, T, s.hq, s.dv)) {
        hresult_error(r, "%s", err);
        goto done;
    }
#undef ALLOC
    /* pool: random everywhere; pages 1.. shuffled and handed out in order */
    for (size_t i = 0; i < kc.count; i++) hdtype_store(s.dt, htensor_data(&kc), i, qval(&g));
    htensor_fill_normal(&vc, &g, 1.0);
    for (size_t i = 0; i < q.count; i++) hdtype_store(s.dt, htensor_data(&q), i, qval(&g));
    for (size_t i = 0; i < k.count; i++) hdtype_store(s.dt, htensor_data(&k), i, qval(&g));
    htensor_fill_normal(&v, &g, 1.0);
    htensor_poison(&out);
    int64_t perm[4096];
    int np = npages - 1 < 4096 ? npages - 1 : 4096;
    for (int i = 0; i < np; i++) perm[i] = i + 1;
    hrng_shuffle(&g, perm, (size_t)np);
    for (size_t i = 0; i < rtt.count; i++) htensor_set_index(&rtt, i, hrng_range(&g, 0, slots - 1));
    int next = 0;
    for (int i = 0, tok = 0; i < s.b; i++) {
        int row = s.b - i; /* rows not in batch order */
        htensor_set_index(&rpi, i, row);
        htensor_set_index(&sl, i, len[i]);
        htensor_set_index(&pl, i, len[i] - nq[i]);
        htensor_set_index(&el, i, nq[i]);
        for (int j = 0; j < len[i]; j += s.page) {
            int64_t pg = perm[next++];
            for (int e = 0; e < s.page && j + e < len[i]; e++) htensor_set_index(&rtt, (size_t)row * max_ctx + j + e, pg * s.page + e);
        }
        for (int j = len[i] - nq[i]; j < len[i]; j++, tok++) {
            htensor_set_index(&loc, tok, htensor_get_index(&rtt, (size_t)row * max_ctx + j));
            htensor_set_index(&pos, tok, j);
        }
    }
    /* the pool as it must be after the call: the new K/V saved at out_cache_loc */
    kd = calloc(kc.count, sizeof *kd);
    vd = calloc(vc.count, sizeof *vd);
    if (!kd || !vd) { hresult_error(r, "out of memory"); goto done; }
    for (size_t i = 0; i < kc.count; i++) kd[i] = hdtype_load(s.dt, htensor_cdata(&kc), i);
    for (size_t i = 0; i < vc.count; i++) vd[i] = hdtype_load(s.dt, htensor_cdata(&vc), i);
    for (int tok = 0; tok < T; tok++) {
        int64_t slot = htensor_get_index(&loc, tok);
        for (int e = 0; e < s.hkv * s.d; e++) kd[slot * s.hkv * s.d + e] = hdtype_load(s.dt, htensor_cdata(&k), (size_t)tok * s.hkv * s.d + e);
        for (int e = 0; e < s.hkv * s.dv; e++) vd[slot * s.hkv * s.dv + e] = hdtype_load(s.dt, htensor_cdata(&v), (size_t)tok * s.hkv * s.dv + e);
    }
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (htensor_upload(all[i], err, sizeof err)) { hresult_error(r, "%s", err); goto done; }
    DLTensor sl_cpu = htensor_host_view(&sl), pl_cpu = htensor_host_view(&pl), el_cpu = htensor_host_view(&el);
    sgl_attn_batch B;
    memset(&B, 0, sizeof B);
    B.struct_size = sizeof B;
    B.forward_mode = s.decode ? SGL_ATTN_MODE_DECODE : SGL_ATTN_MODE_EXTEND;
    B.batch_size = s.b;
    B.num_tokens = T;
    B.page_size = s.page;
    B.tokens_per_req = s.decode ? 1 : 0;
    for (int i = 0; i < s.b; i++) B.seq_lens_sum += len[i];
    B.req_to_token = &rtt.t;
    B.req_pool_indices = &rpi.t;
    B.seq_lens = &sl.t;
    B.seq_lens_cpu = &sl_cpu;
    if (!s.decode) {
        B.extend_prefix_lens = &pl.t;
        B.extend_seq_lens = &el.t;
        B.extend_prefix_lens_cpu = &pl_cpu;
        B.extend_seq_lens_cpu = &el_cpu;
    }
    B.out_cache_loc = &loc.t;
    B.positions = &pos.t;
    B.stream = t->dev.stream;
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.layer_id = 0;
    L.num_q_heads = s.hq;
    L.num_kv_heads = s.hkv;
    L.head_dim_qk = s.d;
    L.head_dim_v = s.dv;
    L.sm_scale = (float)(1.0 / sqrt((double)s.d));
    L.sliding_window = -1;
    L.k_cache = &kc.t;
    L.v_cache = &vc.t;
    L.k_scale = L.v_scale = 1;
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.save_kv_cache = 1;
    a.layer = &L;
    a.batch = &B;
    a.q = &q.t;
    a.k = &k.t;
    a.v = &v.t;
    a.out = &out.t;
    double t0 = htime_now();
    int rc = sgl_attn_init_forward_metadata(be, &B);
    if (rc) { hresult_from_call(r, be, "init_forward_metadata", rc); goto done; }
    rc = s.decode ? sgl_attn_forward_decode(be, &a) : sgl_attn_forward_extend(be, &a);
    if (rc) { hresult_from_call(r, be, s.decode ? "forward_decode" : "forward_extend", rc); goto done; }
    if (hdev_sync(&t->dev, err, sizeof err)) { hresult_fail(r, "%s", err); goto done; }
    r->ms_plugin = 1e3 * (htime_now() - t0);
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (htensor_download(all[i], err, sizeof err)) { hresult_fail(r, "%s", err); goto done; }
    for (size_t i = 0; i < kc.count; i++)
        if (hdtype_load(s.dt, htensor_cdata(&kc), i) != kd[i]) { hresult_fail(r, "k_cache[%zu] differs from the expected pool", i); goto done; }
    for (size_t i = 0; i < vc.count; i++)
        if (hdtype_load(s.dt, htensor_cdata(&vc), i) != vd[i]) { hresult_fail(r, "v_cache[%zu] differs from the expected pool", i); goto done; }
    /* the reference, query by query */
    ref = calloc((size_t)T * s.hq * s.dv, sizeof *ref);
    kk = calloc((size_t)max_ctx * s.hkv * s.d, sizeof *kk);
    vv = calloc((size_t)max_ctx * s.hkv * s.dv, sizeof *vv);
    qq = calloc((size_t)s.hq * s.d, sizeof *qq);
    if (!ref || !kk || !vv || !qq) { hresult_error(r, "out of memory"); goto done; }
    t0 = htime_now();
    for (int i = 0, tok = 0; i < s.b; i++) {
        int row = s.b - i;
        for (int j = 0; j < len[i]; j++) {
            int64_t slot = htensor_get_index(&rtt, (size_t)row * max_ctx + j);
            memcpy(kk + (size_t)j * s.hkv * s.d, kd + slot * s.hkv * s.d, sizeof(double) * s.hkv * s.d);
            memcpy(vv + (size_t)j * s.hkv * s.dv, vd + slot * s.hkv * s.dv, sizeof(double) * s.hkv * s.dv);
        }
        for (int j = 0; j < nq[i]; j++, tok++) {
            for (int e = 0; e < s.hq * s.d; e++) qq[e] = hdtype_load(s.dt, htensor_cdata(&q), (size_t)tok * s.hq * s.d + e);
            lref_sparse_query(s.hq, s.hkv, s.d, s.dv, qq, kk, vv, len[i] - nq[i] + j, s.block, s.topk, 1, 1,
                              (double)L.sm_scale, ref + (size_t)tok * s.hq * s.dv);
        }
    }
    r->ms_ref = 1e3 * (htime_now() - t0);
    hcompare cmp;
    hcompare_run(&out, ref, &cmp);
    r->nmse = cmp.nmse;
    r->max_abs_err = cmp.max_abs_err;
    r->threshold = hthreshold(s.dt);
    if (cmp.bad_kind)
        hresult_fail(r, "out[%zu] is %s", cmp.first_bad, cmp.bad_kind == 1 ? "NaN/Inf" : "never written");
    else if (!(cmp.nmse <= r->threshold))
        hresult_fail(r, "NMSE %.3g above the %s limit %.0e", cmp.nmse, hdtype_name(s.dt), r->threshold);
done:
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) tfree(all[i]);
    free(kd); free(vd); free(ref); free(kk); free(vv); free(qq);
    htarget_destroy(t, be);
}
