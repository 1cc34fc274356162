/* hyb_scen.c - see hyb_scen.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_scen.h"


static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static void weights(scen *s, layer_w *l) {
    const hyb_dims *d = &s->w->d;
    DLDataType dt = tu_dt(s->in_dt);
    const int C = d->conv_dim, W = d->conv_w, HV = d->hv;
    const int nbias = s->kind == SGL_ATTN_HYBRID_KDA ? HV * d->dk : HV;
    memset(l, 0, sizeof *l);
    tt_make(&l->conv_w, dt, 2, C, W > 0 ? W : 1, 0);
    tt_make(&l->conv_b, dt, 1, C > 0 ? C : 1, 0, 0);
    tt_make(&l->A_log, dt, 1, HV > 0 ? HV : 1, 0, 0);
    tt_make(&l->dt_bias, dt, 1, nbias > 0 ? nbias : 1, 0, 0);
    tt_make(&l->D, dt, 1, HV > 0 ? HV : 1, 0, 0);
    tt_make(&l->decay, dt, 1, HV > 0 ? HV : 1, 0, 0);
    l->conv_wd = dalloc(l->conv_w.count);
    l->conv_bd = dalloc(l->conv_b.count);
    l->A_logd = dalloc(l->A_log.count);
    l->dt_biasd = dalloc(l->dt_bias.count);
    l->Dd = dalloc(l->D.count);
    l->decayd = dalloc(l->decay.count);
    tt_fill_normal(&l->conv_w, &s->r, 0.5, l->conv_wd);
    tt_fill_normal(&l->conv_b, &s->r, 0.3, l->conv_bd);
    tt_fill_normal(&l->A_log, &s->r, 0.5, l->A_logd);
    tt_fill_normal(&l->dt_bias, &s->r, 0.5, l->dt_biasd);
    tt_fill_normal(&l->D, &s->r, 1.0, l->Dd);
    for (size_t i = 0; i < l->decay.count; i++) {
        tt_set(&l->decay, i, 0.05 + 0.9 * tr_uniform(&s->r));
        l->decayd[i] = tt_get(&l->decay, i);
    }
}

static void free_weights(layer_w *l) {
    tt_free(&l->conv_w); tt_free(&l->conv_b); tt_free(&l->A_log);
    tt_free(&l->dt_bias); tt_free(&l->D); tt_free(&l->decay);
    free(l->conv_wd); free(l->conv_bd); free(l->A_logd); free(l->dt_biasd); free(l->Dd); free(l->decayd);
}

void scen_open(scen *s, int kind, const tu_shape *shape, uint32_t in_dt, uint32_t state_dt,
               int chunk, double tol, uint64_t seed, int spec_tokens) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->in_dt = in_dt;
    s->state_dt = state_dt;
    s->chunk = chunk;
    s->tol = tol;
    s->r.s = seed;
    tu_model(&s->m, kind, shape, state_dt, spec_tokens);
    fake_inner_init(&s->inner);
    char err[256] = "";
    int rc = tu_create(kind, &s->m, &s->inner, SLOTS, 512, 512, &s->b, err, sizeof err);
    if (rc) print_error("create: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    s->w = (hyb_inst *)s->b;
    if (chunk >= 0) s->w->chunk = chunk;
    for (int l = 0; l < OWN; l++) {
        weights(s, &s->lw[l]);
        for (int k = 0; k < SLOTS; k++) {
            s->ref_conv[l][k] = dalloc((size_t)s->w->d.conv_elems);
            s->ref_ssm[l][k] = dalloc((size_t)s->w->d.ssm_elems);
            s->ref_iconv[l][k] = dalloc((size_t)STEPS * s->w->d.conv_elems);
            s->ref_issm[l][k] = dalloc((size_t)STEPS * s->w->d.ssm_elems);
        }
    }
}

void scen_close(scen *s) {
    print_message("  kind %d in %s state %s chunk %d: worst NMSE %.2e (limit %.0e)\n", s->kind,
                  s->in_dt == SGL_ATTN_DT_F64 ? "f64" : s->in_dt == SGL_ATTN_DT_F32 ? "f32" : "bf16",
                  s->state_dt == SGL_ATTN_DT_F64 ? "f64" : "f32", s->w->chunk, s->worst, s->tol);
    for (int l = 0; l < OWN; l++) {
        free_weights(&s->lw[l]);
        for (int k = 0; k < SLOTS; k++) {
            free(s->ref_conv[l][k]);
            free(s->ref_ssm[l][k]);
            free(s->ref_iconv[l][k]);
            free(s->ref_issm[l][k]);
        }
    }
    s->b->ops->destroy(s->b);
    if (s->tb) {
        s->tb->ops->destroy(s->tb);
        for (int l = 0; l < OWN; l++)
            for (int k = 0; k < 4; k++) free(s->ts[l].t[k].data);
    }
}

/* ------------------------------------------------------------------ twin */

int scen_twin_slot(int l, int k) { return k < 0 ? k : l == 0 ? k + TWIN_OFF : k; }

void scen_twin_open(scen *s) {
    char err[256] = "";
    fake_inner_init(&s->tinner);
    /* without a pool of its own: any use of one would be refused */
    setenv("SGL_ATTN_HYBRID_STATE_POOL", "0", 1);
    int rc = tu_create(s->kind, &s->m, &s->tinner, SLOTS, 512, 512, &s->tb, err, sizeof err);
    unsetenv("SGL_ATTN_HYBRID_STATE_POOL");
    if (rc) print_error("create twin: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    ((hyb_inst *)s->tb)->chunk = s->w->chunk;
    const hyb_dims *d = &s->w->d;
    const int64_t C = d->conv_dim, H = d->conv_w - 1, HV = d->hv, V = d->dv, K = d->dk;
    for (int l = 0; l < OWN; l++) {
        twin_state *t = &s->ts[l];
        const int64_t shp[4][5] = {{CSLOTS, C, H}, {CSLOTS, HV, V, K}, {CSLOTS, STEPS, C, H},
                                   {CSLOTS, STEPS, HV, V, K}};
        const int nd[4] = {3, 4, 4, 5};
        const int keeps[4] = {d->conv_elems > 0, d->ssm_elems > 0, d->conv_elems > 0, d->ssm_elems > 0};
        for (int k = 0; k < 4; k++) {
            memset(&t->t[k], 0, sizeof t->t[k]);
            memcpy(t->shape[k], shp[k], sizeof shp[k]);
            if (!keeps[k]) continue;
            size_t n = 1;
            for (int j = 0; j < nd[k]; j++) n *= (size_t)shp[k][j];
            t->t[k].dtype = tu_dt(s->state_dt);
            t->t[k].device.device_type = kDLCPU;
            t->t[k].ndim = nd[k];
            t->t[k].shape = t->shape[k];
            /* garbage, not zeros: a request without a prefix must not read it */
            t->t[k].data = malloc(n * (size_t)t->t[k].dtype.bits / 8);
            memset(t->t[k].data, 0x5a, n * (size_t)t->t[k].dtype.bits / 8);
        }
    }
}

void scen_twin_io(scen *s, int l, sgl_attn_linear_io *io) {
    memset(io, 0, sizeof *io);
    io->struct_size = sizeof *io;
    io->kind = s->kind;
    DLTensor *t = s->ts[l].t;
    io->conv_state = t[0].data ? &t[0] : NULL;
    io->ssm_state = t[1].data ? &t[1] : NULL;
    io->intermediate_conv_state = t[2].data ? &t[2] : NULL;
    io->intermediate_ssm_state = t[3].data ? &t[3] : NULL;
}

static void index_tensor(ttensor *t, int n, const int *v, int l) {
    tt_make(t, tu_dt(0), 1, n > 0 ? n : 1, 0, 0);
    for (int i = 0; i < n; i++) tt_set(t, i, l < 0 ? v[i] : scen_twin_slot(l, v[i]));
}

void scen_state_op(scen *s, int op, int n, const int *dst, const int *src, const int *steps, int want) {
    for (int target = -1; target < (s->tb ? OWN : 0); target++) {
        ttensor td, ts, tp;
        index_tensor(&td, n, dst, target);
        if (src) index_tensor(&ts, n, src, target);
        if (steps) index_tensor(&tp, n, steps, -1);
        sgl_attn_linear_io io;
        sgl_attn_state_batch_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.op = op;
        a.count = n;
        a.dst = &td.t;
        a.src = src ? &ts.t : NULL;
        a.steps = steps ? &tp.t : NULL;
        sgl_attn_backend *b = s->b;
        if (target >= 0) {
            scen_twin_io(s, target, &io);
            a.state = &io;
            b = s->tb;
        }
        int rc = b->ops->state_batch(b, &a);
        if (rc != want) print_error("state_batch op %d on %s: rc %d (want %d): %s\n", op,
                                    target < 0 ? "the pool" : "the twin", rc, want, b->ops->last_error(b));
        assert_int_equal(rc, want);
        tt_free(&td);
        if (src) tt_free(&ts);
        if (steps) tt_free(&tp);
    }
    if (want != SGL_ATTN_OK) return;
    for (int i = 0; i < n; i++) {
        if (dst[i] < 0 || (steps && steps[i] < 0)) continue;
        switch (op) {
        case SGL_ATTN_STATE_CLEAR: scen_ref_clear(s, dst[i]); break;
        case SGL_ATTN_STATE_COPY: scen_ref_copy(s, src[i], dst[i]); break;
        case SGL_ATTN_STATE_COMMIT: scen_ref_commit(s, dst[i], steps[i]); break;
        case SGL_ATTN_STATE_TRACK: scen_ref_track(s, src[i], steps[i], dst[i]); break;
        default: break;
        }
    }
}

void scen_twin_same_states(scen *s) {
    const hyb_dims *d = &s->w->d;
    const size_t esz = (size_t)d->esz;
    const int C = d->conv_dim, H = d->conv_w - 1;
    for (int l = 0; l < OWN; l++)
        for (int k = 0; k < SLOTS; k++) {
            const int tk = scen_twin_slot(l, k);
            if (d->ssm_elems) {
                const unsigned char *p = hyb_pool_ssm(&s->w->pool, l, k);
                const unsigned char *t = (const unsigned char *)s->ts[l].t[1].data + (size_t)tk * d->ssm_elems * esz;
                assert_memory_equal(p, t, (size_t)d->ssm_elems * esz);
            }
            if (d->conv_elems) { /* the pool is time-major, the caller's channel-major */
                const unsigned char *p = hyb_pool_conv(&s->w->pool, l, k);
                const unsigned char *t = (const unsigned char *)s->ts[l].t[0].data + (size_t)tk * d->conv_elems * esz;
                for (int c = 0; c < C; c++)
                    for (int j = 0; j < H; j++)
                        assert_memory_equal(p + ((size_t)j * C + c) * esz, t + ((size_t)c * H + j) * esz, esz);
            }
        }
}

typedef struct call_in {
    ttensor x, a, b, q, k, v, out;
    double *xd, *ad, *bd, *qd, *kd, *vd;
} call_in;

static void make_call(scen *s, int T, call_in *c) {
    const hyb_dims *d = &s->w->d;
    DLDataType dt = tu_dt(s->in_dt);
    const int HV = d->hv, K = d->dk, V = d->dv;
    memset(c, 0, sizeof *c);
    int acols = s->kind == SGL_ATTN_HYBRID_KDA ? HV * K : HV;
    tt_make(&c->x, dt, 2, T, d->x_dim > 0 ? d->x_dim : 1, 0);
    tt_make(&c->a, dt, 2, T, acols > 0 ? acols : 1, 0);
    tt_make(&c->b, dt, 2, T, HV > 0 ? HV : 1, 0);
    tt_make(&c->q, dt, 3, T, HV > 0 ? HV : 1, K > 0 ? K : 1);
    tt_make(&c->k, dt, 3, T, HV > 0 ? HV : 1, K > 0 ? K : 1);
    tt_make(&c->v, dt, 3, T, HV > 0 ? HV : 1, V > 0 ? V : 1);
    if (s->kind == SGL_ATTN_HYBRID_SHORT_CONV) tt_make(&c->out, dt, 2, T, d->conv_dim, 0);
    else tt_make(&c->out, dt, 3, T, HV, V);
    c->xd = dalloc(c->x.count); c->ad = dalloc(c->a.count); c->bd = dalloc(c->b.count);
    c->qd = dalloc(c->q.count); c->kd = dalloc(c->k.count); c->vd = dalloc(c->v.count);
    tt_fill_normal(&c->x, &s->r, 1.0, c->xd);
    tt_fill_normal(&c->a, &s->r, 1.0, c->ad);
    tt_fill_normal(&c->b, &s->r, 1.0, c->bd);
    tt_fill_normal(&c->q, &s->r, 0.5, c->qd);
    tt_fill_normal(&c->k, &s->r, 0.5, c->kd);
    tt_fill_normal(&c->v, &s->r, 0.5, c->vd);
    tt_fill_nan(&c->out);
}

static void free_call(call_in *c) {
    tt_free(&c->x); tt_free(&c->a); tt_free(&c->b); tt_free(&c->q); tt_free(&c->k);
    tt_free(&c->v); tt_free(&c->out);
    free(c->xd); free(c->ad); free(c->bd); free(c->qd); free(c->kd); free(c->vd);
}

/* One batch through both own layers and one full layer. */
void (*scen_after_metadata)(sgl_attn_batch *batch, void *ctx);
void *scen_after_metadata_ctx;

void run_batch(scen *s, int mode, int bs, const int *slots, const int *n, const int *prefix, int keep) {
    const hyb_dims *d = &s->w->d;
    int T = 0;
    for (int i = 0; i < bs; i++) T += n[i];
    ttensor si, el, pl, sl;
    tt_make(&si, tu_dt(0), 1, bs, 0, 0);
    tt_make(&el, tu_dt(0), 1, bs, 0, 0);
    tt_make(&pl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&sl, tu_dt(0), 1, bs, 0, 0);
    for (int i = 0; i < bs; i++) {
        tt_set(&si, i, slots[i]);
        tt_set(&el, i, n[i]);
        tt_set(&pl, i, prefix[i]);
        tt_set(&sl, i, prefix[i] + n[i]);
    }
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = mode;
    batch.batch_size = bs;
    batch.num_tokens = T;
    batch.page_size = 1;
    batch.tokens_per_req = mode == SGL_ATTN_MODE_EXTEND ? 0 : n[0];
    batch.seq_lens = &sl.t;
    batch.extend_seq_lens = mode == SGL_ATTN_MODE_EXTEND ? &el.t : NULL;
    batch.extend_prefix_lens = mode == SGL_ATTN_MODE_EXTEND ? &pl.t : NULL;
    batch.state_indices = &si.t;
    int meta_before = s->inner.n_meta;
    int rc = s->b->ops->init_forward_metadata(s->b, &batch);
    if (rc) print_error("metadata: %s\n", s->b->ops->last_error(s->b));
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_int_equal(s->inner.n_meta, meta_before + 1); /* metadata reached the inner too */
    if (s->tb) {
        rc = s->tb->ops->init_forward_metadata(s->tb, &batch);
        if (rc) print_error("twin metadata: %s\n", s->tb->ops->last_error(s->tb));
        assert_int_equal(rc, SGL_ATTN_OK);
    }
    if (scen_after_metadata) scen_after_metadata(&batch, scen_after_metadata_ctx);

    for (int l = 0; l < OWN; l++) {
        layer_w *lw = &s->lw[l];
        call_in c;
        make_call(s, T, &c);
        sgl_attn_linear_io io;
        memset(&io, 0, sizeof io);
        io.struct_size = sizeof io;
        io.kind = s->kind;
        io.x = &c.x.t;
        io.a = &c.a.t;
        io.b = &c.b.t;
        io.conv_weight = &lw->conv_w.t;
        io.conv_bias = &lw->conv_b.t;
        io.A_log = &lw->A_log.t;
        io.dt_bias = &lw->dt_bias.t;
        io.D = &lw->D.t;
        io.decay = &lw->decay.t;
        io.out = &c.out.t;
        io.use_qk_l2norm = 1;
        io.keep_intermediate = keep;
        sgl_attn_layer layer;
        memset(&layer, 0, sizeof layer);
        layer.struct_size = sizeof layer;
        layer.layer_id = 2 * l;
        layer.sliding_window = -1;
        sgl_attn_forward_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.layer = &layer;
        a.batch = &batch;
        a.q = &c.q.t;
        a.k = &c.k.t;
        a.v = &c.v.t;
        a.linear = &io;
        /* sglang sends verify through forward_extend */
        rc = mode == SGL_ATTN_MODE_DECODE ? s->b->ops->forward_decode(s->b, &a) : s->b->ops->forward_extend(s->b, &a);
        if (rc) print_error("forward: %s\n", s->b->ops->last_error(s->b));
        assert_int_equal(rc, SGL_ATTN_OK);
        if (s->tb) { /* the same call on caller-owned state: the same bits */
            ttensor out2, map;
            tt_make(&out2, c.out.t.dtype, c.out.t.ndim, c.out.shape[0], c.out.shape[1], c.out.shape[2]);
            tt_fill_nan(&out2);
            sgl_attn_linear_io io2 = io, st;
            scen_twin_io(s, l, &st);
            io2.conv_state = st.conv_state;
            io2.ssm_state = st.ssm_state;
            io2.intermediate_conv_state = st.intermediate_conv_state;
            io2.intermediate_ssm_state = st.intermediate_ssm_state;
            io2.out = &out2.t;
            if (l == 0) { /* layer 0 names its own slots, past the pool's */
                index_tensor(&map, bs, slots, 0);
                io2.state_indices = &map.t;
            }
            sgl_attn_forward_args a2 = a;
            a2.linear = &io2;
            rc = mode == SGL_ATTN_MODE_DECODE ? s->tb->ops->forward_decode(s->tb, &a2)
                                              : s->tb->ops->forward_extend(s->tb, &a2);
            if (rc) print_error("twin forward: %s\n", s->tb->ops->last_error(s->tb));
            assert_int_equal(rc, SGL_ATTN_OK);
            assert_memory_equal(out2.buf, c.out.buf, c.out.count * (size_t)c.out.t.dtype.bits / 8);
            tt_free(&out2);
            if (l == 0) tt_free(&map);
        }

        lref_dims ld = tu_lref_dims(d);
        const int xd = d->x_dim, HV = d->hv, K = d->dk, V = d->dv;
        const int acols = s->kind == SGL_ATTN_HYBRID_KDA ? HV * K : HV;
        const size_t orow = s->kind == SGL_ATTN_HYBRID_SHORT_CONV ? (size_t)d->conv_dim : (size_t)HV * V;
        double num = 0, den = 0;
        int tok = 0;
        for (int i = 0; i < bs; i++) {
            if (slots[i] < 0) { /* padding: zeroed, state untouched */
                for (size_t e = 0; e < (size_t)n[i] * orow; e++) assert_true(tt_get(&c.out, tok * orow + e) == 0.0);
                tok += n[i];
                continue;
            }
            double *cs = s->ref_conv[l][slots[i]], *ss = s->ref_ssm[l][slots[i]];
            double *tmp_c = NULL, *tmp_s = NULL;
            if (keep) { /* verify: run on copies, keep every step, leave the main state */
                tmp_c = dalloc((size_t)d->conv_elems);
                tmp_s = dalloc((size_t)d->ssm_elems);
                memcpy(tmp_c, cs, sizeof(double) * (size_t)d->conv_elems);
                memcpy(tmp_s, ss, sizeof(double) * (size_t)d->ssm_elems);
                cs = tmp_c;
                ss = tmp_s;
            }
            if (mode == SGL_ATTN_MODE_EXTEND && prefix[i] == 0) {
                memset(cs, 0, sizeof(double) * (size_t)d->conv_elems);
                memset(ss, 0, sizeof(double) * (size_t)d->ssm_elems);
            }
            lref_in in = {c.xd + (size_t)tok * xd, c.ad + (size_t)tok * acols, c.bd + (size_t)tok * HV,
                          c.qd + (size_t)tok * HV * K, c.kd + (size_t)tok * HV * K, c.vd + (size_t)tok * HV * V,
                          lw->conv_wd, lw->conv_bd, lw->A_logd, lw->dt_biasd, lw->Dd, lw->decayd, 1};
            double *ref = dalloc((size_t)n[i] * orow);
            lref_run(&ld, n[i], &in, cs, ss, ref, keep ? s->ref_iconv[l][slots[i]] : NULL,
                     keep ? s->ref_issm[l][slots[i]] : NULL);
            free(tmp_c);
            free(tmp_s);
            for (size_t e = 0; e < (size_t)n[i] * orow; e++) {
                double g = tt_get(&c.out, tok * orow + e);
                assert_true(isfinite(g));
                num += (g - ref[e]) * (g - ref[e]);
                den += ref[e] * ref[e];
            }
            free(ref);
            tok += n[i];
        }
        double nmse = den > 0 ? num / den : 0;
        if (nmse > s->worst) s->worst = nmse;
        if (nmse > s->tol)
            print_error("kind %d layer %d mode %d chunk %d state %u: NMSE %.3g > %.3g\n", s->kind, 2 * l,
                        mode, s->w->chunk, s->state_dt, nmse, s->tol);
        assert_true(den > 1e-6); /* compared real numbers, not zeros */
        assert_true(nmse <= s->tol);
        free_call(&c);
    }
    /* a full-attention layer goes to the inner as it is */
    sgl_attn_layer full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    full.layer_id = 1;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.layer = &full;
    fa.batch = &batch;
    int before = s->inner.n_extend + s->inner.n_decode;
    rc = mode == SGL_ATTN_MODE_DECODE ? s->b->ops->forward_decode(s->b, &fa) : s->b->ops->forward_extend(s->b, &fa);
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_int_equal(s->inner.n_extend + s->inner.n_decode, before + 1);
    assert_int_equal(s->inner.last_layer, 1);
    tt_free(&si); tt_free(&el); tt_free(&pl); tt_free(&sl);
}


void scen_ref_copy(scen *s, int src, int dst) {
    for (int l = 0; l < OWN; l++) {
        memcpy(s->ref_conv[l][dst], s->ref_conv[l][src], sizeof(double) * (size_t)s->w->d.conv_elems);
        memcpy(s->ref_ssm[l][dst], s->ref_ssm[l][src], sizeof(double) * (size_t)s->w->d.ssm_elems);
    }
}

void scen_ref_clear(scen *s, int slot) {
    for (int l = 0; l < OWN; l++) {
        memset(s->ref_conv[l][slot], 0, sizeof(double) * (size_t)s->w->d.conv_elems);
        memset(s->ref_ssm[l][slot], 0, sizeof(double) * (size_t)s->w->d.ssm_elems);
    }
}

void scen_ref_commit(scen *s, int slot, int step) {
    const size_t ce = (size_t)s->w->d.conv_elems, se = (size_t)s->w->d.ssm_elems;
    for (int l = 0; l < OWN; l++) {
        memcpy(s->ref_conv[l][slot], s->ref_iconv[l][slot] + (size_t)step * ce, sizeof(double) * ce);
        memcpy(s->ref_ssm[l][slot], s->ref_issm[l][slot] + (size_t)step * se, sizeof(double) * se);
    }
}

void scen_ref_track(scen *s, int src, int step, int dst) {
    const size_t ce = (size_t)s->w->d.conv_elems, se = (size_t)s->w->d.ssm_elems;
    for (int l = 0; l < OWN; l++) {
        memcpy(s->ref_conv[l][dst], s->ref_iconv[l][src] + (size_t)step * ce, sizeof(double) * ce);
        memcpy(s->ref_ssm[l][dst], s->ref_issm[l][src] + (size_t)step * se, sizeof(double) * se);
    }
}
