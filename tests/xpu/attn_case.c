/* attn_case.c - see attn_case.h. */
#include "attn_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static DLDataType dl_of(rdt t) { return t == RT_F32 ? dl_float(32) : t == RT_F16 ? dl_float(16) : dl_bf16(); }

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Fill n values ~ N(0, sigma) rounded to t: doubles in d, dtype bits in h. */
static void fill(rrng *r, rdt t, double sigma, double *d, void *h, size_t n) {
    for (size_t i = 0; i < n; i++) {
        d[i] = rdt_round(t, rrng_normal(r, sigma));
        if (h) rdt_store(t, h, i, d[i]);
    }
}

static void store_index(void *buf, int is64, size_t i, int64_t v) {
    if (is64) ((int64_t *)buf)[i] = v;
    else ((int32_t *)buf)[i] = (int32_t)v;
}

#define NT 16 /* device tensors */

int (*acase_after_metadata)(sgl_attn_batch *bt);

int acase_run(const sgl_attn_plugin *p, int32_t device, const acase *c, uint64_t seed, acase_tamper tamper,
              void *tamper_ctx, aresult *r) {
    memset(r, 0, sizeof *r);
    r->pool_ok = 1;
    r->nmse = NAN;
    rrng rng = {seed ^ hash_str(c->name)};
    const int bs = c->bs, tpr = c->tpr ? c->tpr : 1;
    const int dec = c->mode != SGL_ATTN_MODE_EXTEND;
    int *seq = calloc((size_t)bs, sizeof(int)), *ext = calloc((size_t)bs, sizeof(int));
    for (int i = 0; i < bs; i++) {
        if (dec) {
            ext[i] = tpr;
            seq[i] = c->fixed_lens || i == bs - 1 ? c->maxlen : i == 0 ? tpr : rrng_int(&rng, tpr, c->maxlen);
        } else {
            ext[i] = c->fixed_lens || i == 0 ? c->maxext : rrng_int(&rng, 1, c->maxext);
            int pre = c->fixed_lens ? c->maxlen - ext[i] : i == 0 ? 0 : i == bs - 1 ? c->maxlen - ext[i]
                                                                     : rrng_int(&rng, 0, c->maxlen - ext[i]);
            seq[i] = pre + ext[i];
        }
    }
    ref_batch b;
    ref_batch_build(&b, &rng, bs, seq, ext, c->page);
    free(seq);
    free(ext);
    b.tpr = tpr;
    const int Hq = c->Hq, Hkv = c->mla ? 1 : c->Hkv, Dqk = c->Dqk, Dv = c->Dv, T = b.T;
    const size_t kslot = (size_t)Hkv * Dqk, vslot = (size_t)Hkv * Dv, S = (size_t)b.slots;
    const size_t ks = rdt_size(c->kvdt), qs = rdt_size(c->qdt);
    double *kp = malloc(S * kslot * sizeof(double)), *vp = c->mla ? NULL : malloc(S * vslot * sizeof(double));
    void *kp_h = malloc(S * kslot * ks), *vp_h = c->mla ? NULL : malloc(S * vslot * ks);
    double *q = malloc((size_t)T * Hq * Dqk * sizeof(double));
    double *kn = malloc((size_t)T * kslot * sizeof(double)), *vn = malloc((size_t)T * vslot * sizeof(double));
    void *q_h = malloc((size_t)T * Hq * Dqk * qs), *kn_h = malloc((size_t)T * kslot * qs),
         *vn_h = malloc((size_t)T * vslot * qs);
    double sinks[512];
    float sinks_h[512];
    double *out = malloc((size_t)T * Hq * Dv * sizeof(double)), *ref = malloc((size_t)T * Hq * Dv * sizeof(double));
    void *out_h = malloc((size_t)T * Hq * Dv * qs);
    const int ib = c->idx64 ? 8 : 4;
    void *r2t_h = malloc((size_t)b.rows * b.cols * ib), *rpi_h = malloc((size_t)bs * ib), *seq_h = malloc((size_t)bs * ib),
         *pre_h = malloc((size_t)bs * ib), *ext_h = malloc((size_t)bs * ib), *loc_h = malloc((size_t)T * ib);
    int64_t rpi[512], seq_c[512], pre_c[512], ext_c[512];
    dtensor dt[NT];
    memset(dt, 0, sizeof dt);
    sgl_attn_backend *be = NULL;
    void *stream = NULL;
    const sgl_attn_device_ops *ops = p->device_ops;
    if (bs > 512 || Hq > 512) {
        snprintf(r->err, sizeof r->err, "test case too large");
        r->stage = 4;
        goto done;
    }
    fill(&rng, c->kvdt, 1.0, kp, kp_h, S * kslot);
    if (vp) fill(&rng, c->kvdt, 1.0, vp, vp_h, S * vslot);
    fill(&rng, c->qdt, 2.0, q, q_h, (size_t)T * Hq * Dqk);
    fill(&rng, c->qdt, 1.0, kn, kn_h, (size_t)T * kslot);
    fill(&rng, c->qdt, 1.0, vn, vn_h, (size_t)T * vslot);
    for (int h = 0; h < Hq; h++) sinks_h[h] = (float)(sinks[h] = (double)(float)rrng_normal(&rng, 2.0));
    /* The pool the reference attends to holds the new K/V at out_cache_loc,
     * rounded to the pool dtype.  Without save the engine did that already. */
    for (int t = 0; t < T; t++) {
        size_t sl = (size_t)b.loc[t];
        for (size_t i = 0; i < kslot; i++) {
            kp[sl * kslot + i] = rdt_round(c->kvdt, kn[(size_t)t * kslot + i]);
            if (!c->save) rdt_store(c->kvdt, kp_h, sl * kslot + i, kp[sl * kslot + i]);
        }
        for (size_t i = 0; vp && i < vslot; i++) {
            vp[sl * vslot + i] = rdt_round(c->kvdt, vn[(size_t)t * vslot + i]);
            if (!c->save) rdt_store(c->kvdt, vp_h, sl * vslot + i, vp[sl * vslot + i]);
        }
    }
    for (int i = 0; i < bs; i++) rpi[i] = b.row[i];
    int tampered = tamper && tamper(&b, rpi, tamper_ctx);
    for (size_t i = 0; i < (size_t)b.rows * b.cols; i++) store_index(r2t_h, c->idx64, i, b.r2t[i]);
    for (int i = 0; i < bs; i++) {
        store_index(rpi_h, c->idx64, (size_t)i, rpi[i]);
        store_index(seq_h, c->idx64, (size_t)i, seq_c[i] = b.seq[i]);
        store_index(pre_h, c->idx64, (size_t)i, pre_c[i] = b.pre[i]);
        store_index(ext_h, c->idx64, (size_t)i, ext_c[i] = b.ext[i]);
    }
    for (int t = 0; t < T; t++) store_index(loc_h, c->idx64, (size_t)t, b.loc[t]);

    /* stage */
    const DLDataType di = dl_int(c->idx64 ? 64 : 32), dq = dl_of(c->qdt), dk = dl_of(c->kvdt);
    const size_t off = c->off_mode ? 256 : 0;
    int64_t sh_r2t[2] = {b.rows, b.cols}, sh_bs[1] = {bs}, sh_T[1] = {T};
    int64_t sh_q[3] = {T, Hq, Dqk}, sh_k[3] = {T, Hkv, Dqk}, sh_v[3] = {T, Hkv, Dv}, sh_o[3] = {T, Hq, Dv};
    int64_t sh_kp[3] = {b.slots, Hkv, Dqk}, sh_vp[3] = {b.slots, Hkv, Dv}, sh_s[1] = {Hq};
    int rc = 0;
    rc |= dtensor_put(&dt[0], ops, device, di, 2, sh_r2t, r2t_h, off, c->off_mode);
    rc |= dtensor_put(&dt[1], ops, device, di, 1, sh_bs, rpi_h, off, c->off_mode);
    rc |= dtensor_put(&dt[2], ops, device, di, 1, sh_bs, seq_h, off, c->off_mode);
    rc |= dtensor_put(&dt[3], ops, device, di, 1, sh_bs, pre_h, off, c->off_mode);
    rc |= dtensor_put(&dt[4], ops, device, di, 1, sh_bs, ext_h, off, c->off_mode);
    rc |= dtensor_put(&dt[5], ops, device, di, 1, sh_T, loc_h, off, c->off_mode);
    rc |= dtensor_put(&dt[6], ops, device, dq, 3, sh_q, q_h, off, c->off_mode);
    rc |= dtensor_put(&dt[7], ops, device, dq, 3, sh_k, kn_h, off, c->off_mode);
    rc |= dtensor_put(&dt[8], ops, device, dq, 3, sh_v, vn_h, off, c->off_mode);
    rc |= dtensor_put(&dt[9], ops, device, dq, 3, sh_o, NULL, off, c->off_mode);
    rc |= dtensor_put(&dt[10], ops, device, dk, 3, sh_kp, kp_h, off, c->off_mode);
    if (vp) rc |= dtensor_put(&dt[11], ops, device, dk, 3, sh_vp, vp_h, off, c->off_mode);
    rc |= dtensor_put(&dt[12], ops, device, dl_float(32), 1, sh_s, sinks_h, off, c->off_mode);
    if (rc) {
        snprintf(r->err, sizeof r->err, "staging tensors failed (%d)", rc);
        r->stage = 4;
        goto done;
    }
    if (c->use_stream && ops && ops->stream_create && (rc = ops->stream_create(device, &stream))) {
        snprintf(r->err, sizeof r->err, "stream_create failed (%d)", rc);
        r->stage = 4;
        goto done;
    }

    /* create */
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    snprintf(m.name, sizeof m.name, "%s", c->name);
    m.num_layers = 1;
    m.num_q_heads = Hq;
    m.num_kv_heads = Hkv;
    m.head_dim_qk = Dqk;
    m.head_dim_v = Dv;
    m.dtype = c->qdt == RT_F32 ? SGL_ATTN_DT_F32 : c->qdt == RT_F16 ? SGL_ATTN_DT_F16 : SGL_ATTN_DT_BF16;
    m.kv_dtype = c->kvdt == RT_F32 ? SGL_ATTN_DT_F32 : c->kvdt == RT_F16 ? SGL_ATTN_DT_F16 : SGL_ATTN_DT_BF16;
    m.is_mla = c->mla;
    if (c->mla) {
        m.kv_lora_rank = Dv;
        m.qk_rope_head_dim = Dqk - Dv;
    }
    m.sliding_window = c->window;
    m.logit_softcap = (float)c->softcap;
    m.has_sinks = c->sinks;
    m.page_size = c->page;
    m.full_attention_mask[0] = 1;
    char cerr[512] = "";
    sgl_attn_create_args ca;
    memset(&ca, 0, sizeof ca);
    ca.struct_size = sizeof ca;
    ca.model = &m;
    ca.device = device;
    ca.max_reqs = b.rows;
    ca.max_tokens = T;
    ca.max_context = b.cols;
    ca.error = cerr;
    ca.error_size = sizeof cerr;
    ca.host = tplugin_host;
    if ((r->rc = p->create(&ca, &be)) != SGL_ATTN_OK) {
        snprintf(r->err, sizeof r->err, "%s", cerr);
        r->stage = 1;
        goto done;
    }

    /* batch */
    int64_t shp[3];
    DLTensor seq_cpu = host_index_view(seq_c, &shp[0], bs), pre_cpu = host_index_view(pre_c, &shp[1], bs),
             ext_cpu = host_index_view(ext_c, &shp[2], bs);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = c->mode;
    bt.batch_size = bs;
    bt.num_tokens = T;
    bt.page_size = c->page;
    bt.tokens_per_req = dec ? tpr : 1;
    for (int i = 0; i < bs; i++) bt.seq_lens_sum += b.seq[i];
    bt.req_to_token = &dt[0].t;
    bt.req_pool_indices = &dt[1].t;
    bt.seq_lens = &dt[2].t;
    if (!dec) {
        bt.extend_prefix_lens = &dt[3].t;
        bt.extend_seq_lens = &dt[4].t;
    }
    bt.out_cache_loc = &dt[5].t;
    if (c->cpu_mirrors) {
        bt.seq_lens_cpu = &seq_cpu;
        if (!dec) {
            bt.extend_prefix_lens_cpu = &pre_cpu;
            bt.extend_seq_lens_cpu = &ext_cpu;
        }
    }
    bt.stream = stream;
    if ((r->rc = be->ops->init_forward_metadata(be, &bt)) != SGL_ATTN_OK) {
        snprintf(r->err, sizeof r->err, "%s", be->ops->last_error(be));
        r->stage = 2;
        goto done;
    }
    if (acase_after_metadata && !acase_after_metadata(&bt)) tampered = 1;
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.num_q_heads = Hq;
    L.num_kv_heads = Hkv;
    L.head_dim_qk = Dqk;
    L.head_dim_v = Dv;
    L.sm_scale = (float)(1.0 / sqrt((double)(c->mla ? 192 : Dqk)));
    L.logit_softcap = (float)c->softcap;
    L.sliding_window = c->window;
    L.sinks = c->sinks ? &dt[12].t : NULL;
    L.k_cache = &dt[10].t;
    L.v_cache = vp ? &dt[11].t : NULL;
    L.k_scale = L.v_scale = 1.0f;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.save_kv_cache = c->save;
    fa.layer = &L;
    fa.batch = &bt;
    fa.q = &dt[6].t;
    fa.k = &dt[7].t;
    fa.v = c->mla ? NULL : &dt[8].t;
    fa.out = &dt[9].t;
    r->rc = c->mode == SGL_ATTN_MODE_DECODE ? be->ops->forward_decode(be, &fa) : be->ops->forward_extend(be, &fa);
    if (r->rc != SGL_ATTN_OK) {
        snprintf(r->err, sizeof r->err, "%s", be->ops->last_error(be));
        r->stage = 3;
        goto done;
    }
    if (ops && (rc = ops->synchronize(device, stream))) {
        snprintf(r->err, sizeof r->err, "synchronize failed (%d)", rc);
        r->stage = 4;
        goto done;
    }
    /* Device-side index errors surface through last_error after the fact. */
    snprintf(r->err, sizeof r->err, "%s", be->ops->last_error(be));

    /* compare (a tampered batch has no meaningful reference) */
    if (tampered) goto done;
    if (dtensor_get(&dt[9], out_h)) {
        r->stage = 4;
        snprintf(r->err, sizeof r->err, "downloading out failed");
        goto done;
    }
    for (size_t i = 0; i < (size_t)T * Hq * Dv; i++) out[i] = rdt_load(c->qdt, out_h, i);
    ref_attention(&b, q, kp, vp, Hq, Hkv, Dqk, Dv, L.sm_scale, c->softcap, c->window, c->sinks ? sinks : NULL, ref);
    r->nmse = ref_nmse(out, ref, (size_t)T * Hq * Dv);
    r->limit = fmax(rdt_nmse_limit(c->qdt), rdt_nmse_limit(c->kvdt));
    for (int part = 0; part < (vp ? 2 : 1) && r->pool_ok; part++) {
        size_t n = S * (part ? vslot : kslot);
        void *h = malloc(n * ks);
        const double *want = part ? vp : kp;
        if (!h || dtensor_get(&dt[10 + part], h)) {
            r->pool_ok = 0;
            snprintf(r->pool_msg, sizeof r->pool_msg, "downloading the pool failed");
        }
        for (size_t i = 0; h && r->pool_ok && i < n; i++)
            if (rdt_load(c->kvdt, h, i) != want[i]) {
                r->pool_ok = 0;
                snprintf(r->pool_msg, sizeof r->pool_msg, "%s pool element %zu (slot %zu) is %g, expected %g",
                         part ? "v" : "k", i, i / (part ? vslot : kslot), rdt_load(c->kvdt, h, i), want[i]);
            }
        free(h);
    }
done:
    if (be) be->ops->destroy(be);
    if (stream) ops->stream_destroy(device, stream);
    for (int i = 0; i < NT; i++) dtensor_free(&dt[i]);
    ref_batch_free(&b);
    free(kp);
    free(vp);
    free(kp_h);
    free(vp_h);
    free(q);
    free(kn);
    free(vn);
    free(q_h);
    free(kn_h);
    free(vn_h);
    free(out);
    free(ref);
    free(out_h);
    free(r2t_h);
    free(rpi_h);
    free(seq_h);
    free(pre_h);
    free(ext_h);
    free(loc_h);
    return r->stage == 0 ? 0 : -1;
}
