/* test_hybrid_kinds.c - each stateful kind, through its plugin's backend,
 * against the float64 reference of attnctl/harness/linear_ref.c:
 *   - ragged extends with lengths crossing the chunk size, a padded row (-1),
 *   - a second extend continuing the stored state (prefix > 0) and a fresh
 *     request reusing a slot (prefix 0: its old state must be ignored),
 *   - decode steps after that, two linear layers with their own state,
 *   - full-attention layers reaching the inner untouched,
 * for the f32 path at several chunk sizes (and token by token), the f64 path
 * (token by token and chunked: the chunked algebra exact to 1e-20), and
 * bf16 inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_test_util.h"

#define SLOTS 8
#define OWN 2 /* own layers: ids 0 and 2 */

typedef struct layer_w {
    ttensor conv_w, conv_b, A_log, dt_bias, D, decay;
    double *conv_wd, *conv_bd, *A_logd, *dt_biasd, *Dd, *decayd;
} layer_w;

typedef struct scen {
    int kind;
    uint32_t in_dt, state_dt;
    int chunk;           /* -1: the instance's default */
    double tol;          /* NMSE limit */
    sgl_attn_model m;
    hyb_inst *w;
    sgl_attn_backend *b;
    fake_inner inner;
    layer_w lw[OWN];
    double *ref_conv[OWN][SLOTS], *ref_ssm[OWN][SLOTS];
    trng r;
    double worst;
} scen;

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

static void scen_open(scen *s, int kind, const tu_shape *shape, uint32_t in_dt, uint32_t state_dt,
                      int chunk, double tol, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->in_dt = in_dt;
    s->state_dt = state_dt;
    s->chunk = chunk;
    s->tol = tol;
    s->r.s = seed;
    tu_model(&s->m, kind, shape, state_dt, 0);
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
        }
    }
}

static void scen_close(scen *s) {
    print_message("  kind %d in %s state %s chunk %d: worst NMSE %.2e (limit %.0e)\n", s->kind,
                  s->in_dt == SGL_ATTN_DT_F64 ? "f64" : s->in_dt == SGL_ATTN_DT_F32 ? "f32" : "bf16",
                  s->state_dt == SGL_ATTN_DT_F64 ? "f64" : "f32", s->w->chunk, s->worst, s->tol);
    for (int l = 0; l < OWN; l++) {
        free_weights(&s->lw[l]);
        for (int k = 0; k < SLOTS; k++) { free(s->ref_conv[l][k]); free(s->ref_ssm[l][k]); }
    }
    s->b->ops->destroy(s->b);
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
static void run_batch(scen *s, int mode, int bs, const int *slots, const int *n, const int *prefix) {
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
        rc = mode == SGL_ATTN_MODE_EXTEND ? s->b->ops->forward_extend(s->b, &a) : s->b->ops->forward_decode(s->b, &a);
        if (rc) print_error("forward: %s\n", s->b->ops->last_error(s->b));
        assert_int_equal(rc, SGL_ATTN_OK);

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
            if (mode == SGL_ATTN_MODE_EXTEND && prefix[i] == 0) {
                memset(cs, 0, sizeof(double) * (size_t)d->conv_elems);
                memset(ss, 0, sizeof(double) * (size_t)d->ssm_elems);
            }
            lref_in in = {c.xd + (size_t)tok * xd, c.ad + (size_t)tok * acols, c.bd + (size_t)tok * HV,
                          c.qd + (size_t)tok * HV * K, c.kd + (size_t)tok * HV * K, c.vd + (size_t)tok * HV * V,
                          lw->conv_wd, lw->conv_bd, lw->A_logd, lw->dt_biasd, lw->Dd, lw->decayd, 1};
            double *ref = dalloc((size_t)n[i] * orow);
            lref_run(&ld, n[i], &in, cs, ss, ref, NULL, NULL);
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
    rc = mode == SGL_ATTN_MODE_EXTEND ? s->b->ops->forward_extend(s->b, &fa) : s->b->ops->forward_decode(s->b, &fa);
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_int_equal(s->inner.n_extend + s->inner.n_decode, before + 1);
    assert_int_equal(s->inner.last_layer, 1);
    tt_free(&si); tt_free(&el); tt_free(&pl); tt_free(&sl);
}

static void scenario(int kind, const tu_shape *shape, uint32_t in_dt, uint32_t state_dt, int chunk,
                     double tol, uint64_t seed) {
    scen s;
    scen_open(&s, kind, shape, in_dt, state_dt, chunk, tol, seed);
    const int L = chunk > 4 ? chunk : 4;
    {   /* fresh requests, ragged, one padded row; slot 3 gets a state to be discarded later */
        int slots[] = {2, -1, 0, 5, 3}, n[] = {5, 3, L + 3, 2 * L + 1, 4}, pre[] = {0, 0, 0, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 5, slots, n, pre);
    }
    {   /* continue 0 and 2 from their states; 3 is a new request (prefix 0); 6 new */
        int slots[] = {0, 2, 3, 6}, n[] = {7, L, 1, L - 1}, pre[] = {L + 3, 5, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 4, slots, n, pre);
    }
    for (int step = 0; step < 3; step++) {
        int slots[] = {0, 2, -1, 3, 5, 6}, n[] = {1, 1, 1, 1, 1, 1};
        int pre[] = {L + 10 + step, 5 + L + step, 0, 1 + step, 2 * L + 1 + step, L - 1 + step};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 6, slots, n, pre);
    }
    scen_close(&s);
}

static const tu_shape gdn_shape = {2, 4, 16, 8, 4, 0};  /* HK 2, HV 4 (GQA), K 16 != V 8 */
static const tu_shape mamba_shape = {2, 4, 8, 6, 4, 0}; /* G 2, H 4, N 8, P 6 */
static const tu_shape sc_shape = {0, 0, 0, 0, 3, 24};   /* D 24, width 3 */
static const tu_shape light_shape = {3, 3, 12, 10, 0, 0};

static void all_forms(int kind, const tu_shape *sh, uint64_t seed) {
    const uint32_t F32 = SGL_ATTN_DT_F32, F64 = SGL_ATTN_DT_F64;
    scenario(kind, sh, F64, F64, -1, 1e-20, seed + 1);  /* the reference path, token by token */
    scenario(kind, sh, F64, F64, 5, 1e-20, seed + 2);   /* chunked, exact in f64 */
    scenario(kind, sh, F64, F64, 16, 1e-20, seed + 3);
    scenario(kind, sh, F32, F32, 0, 1e-11, seed + 4);    /* f32 token by token */
    scenario(kind, sh, F32, F32, 1, 1e-11, seed + 5);
    scenario(kind, sh, F32, F32, 16, 1e-11, seed + 6);
    scenario(kind, sh, F32, F32, -1, 1e-11, seed + 7);   /* default chunk (64) */
    scenario(kind, sh, SGL_ATTN_DT_BF16, F32, -1, 1e-4, seed + 8); /* bf16 in/out */
}

static void test_gdn(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_GDN, &gdn_shape, 1000); }
static void test_kda(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_KDA, &gdn_shape, 2000); }
static void test_mamba2(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_MAMBA2, &mamba_shape, 3000); }
static void test_short_conv(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_SHORT_CONV, &sc_shape, 4000); }
static void test_lightning(void **st) { (void)st; all_forms(SGL_ATTN_HYBRID_LIGHTNING, &light_shape, 5000); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdn),        cmocka_unit_test(test_kda),
        cmocka_unit_test(test_mamba2),     cmocka_unit_test(test_short_conv),
        cmocka_unit_test(test_lightning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
