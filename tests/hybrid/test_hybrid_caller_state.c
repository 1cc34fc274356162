/* test_hybrid_caller_state.c - ABI 1.2 caller-owned linear state and
 * ops->state_batch on the CPU wrappers:
 *   - every stateful kind, with its state in the engine's tensors, gives the
 *     same bits as the same calls on the wrapper's own pool, and both match
 *     the float64 reference, over extend -> decode -> verify -> commit ->
 *     copy / clear / track -> decode (a twin instance, hyb_scen.c);
 *   - the batched operations against values worked out by hand;
 *   - bad state tensors, slots and batches refused with the field named,
 *     before anything is written;
 *   - the caps declare SGL_ATTN_FEAT_CALLER_STATE where it is served. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hyb_scen.h"

#define F32 SGL_ATTN_DT_F32
#define F64 SGL_ATTN_DT_F64

static const tu_shape gdn_shape = {2, 4, 16, 8, 4, 0};
static const tu_shape mamba_shape = {2, 4, 8, 6, 4, 0};
static const tu_shape sc_shape = {0, 0, 0, 0, 3, 24};
static const tu_shape light_shape = {3, 3, 12, 10, 0, 0};

/* extend (two rounds, the second continuing), decode, verify keeping every
 * step, commit, the batched ops, decode again: on the pool and the twin. */
static void sequence(int kind, const tu_shape *sh, uint32_t dt, int chunk, double tol, uint64_t seed) {
    scen s;
    scen_open(&s, kind, sh, dt, dt, chunk, tol, seed, STEPS);
    scen_twin_open(&s);
    {
        int slots[] = {1, 4, -1, 6}, n[] = {7, 70, 2, 3}, pre[] = {0, 0, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 4, slots, n, pre, 0);
    }
    {
        int slots[] = {4, 1, 6}, n[] = {5, 9, 1}, pre[] = {70, 7, 3};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 3, slots, n, pre, 0);
    }
    {   /* the twin's tensors start as garbage (prefix-0 requests never read it):
         * clear the slots no request used, then every slot compares */
        int dst[] = {0, 2, 3, 5, 7};
        scen_state_op(&s, SGL_ATTN_STATE_CLEAR, 5, dst, NULL, NULL, SGL_ATTN_OK);
    }
    scen_twin_same_states(&s);
    {
        int slots[] = {1, 4, 6}, n[] = {1, 1, 1}, pre[] = {16, 75, 4};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 3, slots, n, pre, 0);
    }
    {   /* verify 3 drafts per request, one padded row */
        int slots[] = {1, 4, -1, 6}, n[] = {3, 3, 3, 3}, pre[] = {17, 76, 0, 5};
        run_batch(&s, SGL_ATTN_MODE_TARGET_VERIFY, 4, slots, n, pre, 1);
    }
    scen_twin_same_states(&s); /* verify with keep left the main states alone */
    {   /* slot 1 takes step 2, slot 4 keeps its state, slot 6 step 0 */
        int dst[] = {1, 4, 6}, steps[] = {2, -1, 0};
        scen_state_op(&s, SGL_ATTN_STATE_COMMIT, 3, dst, NULL, steps, SGL_ATTN_OK);
    }
    {   /* the radix cache keeps slot 4's state after draft 1 in slot 0 */
        int dst[] = {0}, src[] = {4}, steps[] = {1};
        scen_state_op(&s, SGL_ATTN_STATE_TRACK, 1, dst, src, steps, SGL_ATTN_OK);
    }
    {   /* a shared prefix: slot 6 into 2 and 3; slot 5 cleared */
        int dst[] = {2, 3, -1}, src[] = {6, 6, 1};
        scen_state_op(&s, SGL_ATTN_STATE_COPY, 3, dst, src, NULL, SGL_ATTN_OK);
        int clr[] = {5};
        scen_state_op(&s, SGL_ATTN_STATE_CLEAR, 1, clr, NULL, NULL, SGL_ATTN_OK);
    }
    scen_twin_same_states(&s);
    for (int k = 0; k < 2; k++) { /* every slot continues from what the ops left */
        int slots[] = {0, 1, 2, 3, 4, 5, 6}, n[] = {1, 1, 1, 1, 1, 1, 1};
        int pre[] = {77 + k, 20 + k, 5 + k, 5 + k, 76 + k, 3 + k, 6 + k};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 7, slots, n, pre, 0);
    }
    scen_twin_same_states(&s);
    scen_close(&s);
}

static void test_twin_gdn(void **st) {
    (void)st;
    sequence(SGL_ATTN_HYBRID_GDN, &gdn_shape, F64, -1, 1e-20, 301);
    sequence(SGL_ATTN_HYBRID_GDN, &gdn_shape, F32, -1, 1e-11, 302);
    sequence(SGL_ATTN_HYBRID_GDN, &gdn_shape, F32, 16, 1e-11, 303);
}
static void test_twin_kda(void **st) {
    (void)st;
    sequence(SGL_ATTN_HYBRID_KDA, &gdn_shape, F64, -1, 1e-20, 311);
    sequence(SGL_ATTN_HYBRID_KDA, &gdn_shape, F32, -1, 1e-11, 312);
}
static void test_twin_mamba2(void **st) {
    (void)st;
    sequence(SGL_ATTN_HYBRID_MAMBA2, &mamba_shape, F64, -1, 1e-20, 321);
    sequence(SGL_ATTN_HYBRID_MAMBA2, &mamba_shape, F32, -1, 1e-11, 322);
}
static void test_twin_short_conv(void **st) {
    (void)st;
    sequence(SGL_ATTN_HYBRID_SHORT_CONV, &sc_shape, F64, -1, 1e-20, 331);
    sequence(SGL_ATTN_HYBRID_SHORT_CONV, &sc_shape, F32, -1, 1e-11, 332);
}
static void test_twin_lightning(void **st) {
    (void)st;
    sequence(SGL_ATTN_HYBRID_LIGHTNING, &light_shape, F64, -1, 1e-20, 341);
    sequence(SGL_ATTN_HYBRID_LIGHTNING, &light_shape, F32, -1, 1e-11, 342);
}

/* ------------------------------------------------- the ops, by hand */

/* A tiny short_conv layer's state: D 2, W 3, so a slot's conv state is
 * [2][2] = 4 elements, and 3 intermediate steps per slot.  Element e of
 * slot k is 10 k + e; step j of slot k's intermediate is 100 + 10 k + j. */
typedef struct tiny {
    scen s;
    float conv[CSLOTS][4], iconv[CSLOTS][STEPS][4];
} tiny;

static const tu_shape tiny_shape = {0, 0, 0, 0, 3, 2};

static void tiny_open(tiny *t) {
    scen_open(&t->s, SGL_ATTN_HYBRID_SHORT_CONV, &tiny_shape, F32, F32, -1, 1e-11, 7, STEPS);
    scen_twin_open(&t->s);
}

static void tiny_fill(tiny *t) {
    float *c = t->s.ts[0].t[0].data, *ic = t->s.ts[0].t[2].data;
    for (int k = 0; k < CSLOTS; k++)
        for (int e = 0; e < 4; e++) {
            c[k * 4 + e] = t->conv[k][e] = (float)(10 * k + e);
            for (int j = 0; j < STEPS; j++) ic[(k * STEPS + j) * 4 + e] = t->iconv[k][j][e] = (float)(100 + 10 * k + j);
        }
}

static int op(tiny *t, int o, int n, const int *dst, const int *src, const int *steps) {
    ttensor td, ts, tp;
    tt_make(&td, tu_dt(0), 1, n > 0 ? n : 1, 0, 0);
    tt_make(&ts, tu_dt(0), 1, n > 0 ? n : 1, 0, 0);
    tt_make(&tp, tu_dt(0), 1, n > 0 ? n : 1, 0, 0);
    for (int i = 0; i < n; i++) {
        tt_set(&td, i, dst[i]);
        if (src) tt_set(&ts, i, src[i]);
        if (steps) tt_set(&tp, i, steps[i]);
    }
    sgl_attn_linear_io io;
    scen_twin_io(&t->s, 0, &io);
    sgl_attn_state_batch_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.op = o;
    a.count = n;
    a.dst = &td.t;
    a.src = src ? &ts.t : NULL;
    a.steps = steps ? &tp.t : NULL;
    a.state = &io;
    int rc = t->s.tb->ops->state_batch(t->s.tb, &a);
    tt_free(&td);
    tt_free(&ts);
    tt_free(&tp);
    return rc;
}

static void tiny_expect(tiny *t) {
    const float *c = t->s.ts[0].t[0].data;
    for (int k = 0; k < CSLOTS; k++)
        for (int e = 0; e < 4; e++) {
            if (c[k * 4 + e] != t->conv[k][e])
                print_error("slot %d element %d: %g, expected %g\n", k, e, (double)c[k * 4 + e], (double)t->conv[k][e]);
            assert_true(c[k * 4 + e] == t->conv[k][e]);
        }
}

static void set_row(float *row, float v0) {
    for (int e = 0; e < 4; e++) row[e] = v0 + (v0 >= 100 ? 0 : (float)e);
}

static void test_ops_by_hand(void **st) {
    (void)st;
    tiny t;
    tiny_open(&t);
    tiny_fill(&t);
    {   /* clear 3 and 11 (past the wrapper's pool of 8: the caller's slots); -1 skipped */
        int dst[] = {3, -1, 11};
        assert_int_equal(op(&t, SGL_ATTN_STATE_CLEAR, 3, dst, NULL, NULL), SGL_ATTN_OK);
        memset(t.conv[3], 0, sizeof t.conv[3]);
        memset(t.conv[11], 0, sizeof t.conv[11]);
        tiny_expect(&t);
    }
    {   /* copy 5 -> 2 and 5 -> 7 (a source read twice), 4 -> 4 (itself: nothing) */
        int dst[] = {2, 7, 4}, src[] = {5, 5, 4};
        assert_int_equal(op(&t, SGL_ATTN_STATE_COPY, 3, dst, src, NULL), SGL_ATTN_OK);
        set_row(t.conv[2], 50);
        set_row(t.conv[7], 50);
        tiny_expect(&t);
    }
    {   /* commit: slot 1 takes its step 2 (102 + 10), slot 6 keeps (-1), slot 9 step 0 */
        int dst[] = {1, 6, 9}, steps[] = {2, -1, 0};
        assert_int_equal(op(&t, SGL_ATTN_STATE_COMMIT, 3, dst, NULL, steps), SGL_ATTN_OK);
        set_row(t.conv[1], 112);
        set_row(t.conv[9], 190);
        tiny_expect(&t);
    }
    {   /* track: slot 0 gets slot 8's step 3, slot 8 gets its own step 1 (reads the
         * intermediate, writes the main state: no conflict) */
        int dst[] = {0, 8}, src[] = {8, 8}, steps[] = {3, 1};
        assert_int_equal(op(&t, SGL_ATTN_STATE_TRACK, 2, dst, src, steps), SGL_ATTN_OK);
        set_row(t.conv[0], 183);
        set_row(t.conv[8], 181);
        tiny_expect(&t);
    }
    /* the pool path: the same ops on the wrapper's own pool, slot by slot */
    {
        hyb_inst *w = t.s.w;
        float *p5 = hyb_pool_conv(&w->pool, 1, 5);
        for (int e = 0; e < 4; e++) p5[e] = (float)(e + 1);
        ttensor td, ts;
        tt_make(&td, tu_dt(0), 1, 1, 0, 0);
        tt_make(&ts, tu_dt(0), 1, 1, 0, 0);
        tt_set(&td, 0, 6);
        tt_set(&ts, 0, 5);
        sgl_attn_state_batch_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.op = SGL_ATTN_STATE_COPY;
        a.count = 1;
        a.dst = &td.t;
        a.src = &ts.t;
        assert_int_equal(t.s.b->ops->state_batch(t.s.b, &a), SGL_ATTN_OK);
        const float *p6 = hyb_pool_conv(&w->pool, 1, 6);
        for (int e = 0; e < 4; e++) assert_true(p6[e] == (float)(e + 1));
        tt_free(&td);
        tt_free(&ts);
    }
    scen_close(&t.s);
}

/* ------------------------------------------------------- refusals */

static void want(sgl_attn_backend *b, int rc, int code, const char *text) {
    const char *e = b->ops->last_error(b);
    if (rc != code || !strstr(e, text)) print_error("rc %d (want %d), error \"%s\" (want \"%s\")\n", rc, code, e, text);
    assert_int_equal(rc, code);
    assert_non_null(strstr(e, text));
}

static void test_ops_refused(void **st) {
    (void)st;
    tiny t;
    tiny_open(&t);
    tiny_fill(&t);
    sgl_attn_backend *b = t.s.tb;
    {
        int dst[] = {1, 2};
        want(b, op(&t, 9, 2, dst, NULL, NULL), SGL_ATTN_E_INVALID, "op = 9; expected 1 (clear)");
        int big[] = {1, CSLOTS};
        want(b, op(&t, SGL_ATTN_STATE_CLEAR, 2, big, NULL, NULL), SGL_ATTN_E_INVALID,
             "dst[1] = 12; expected -1 (skip) or a slot 0..11 (state->conv_state has 12 slots)");
        int neg[] = {-2};
        want(b, op(&t, SGL_ATTN_STATE_CLEAR, 1, neg, NULL, NULL), SGL_ATTN_E_INVALID, "dst[0] = -2");
        int rep[] = {3, 5, 3};
        want(b, op(&t, SGL_ATTN_STATE_CLEAR, 3, rep, NULL, NULL), SGL_ATTN_E_INVALID,
             "dst[2] = 3 repeats dst[0]: one batch writes a slot once");
        want(b, op(&t, SGL_ATTN_STATE_CLEAR, 2, dst, dst, NULL), SGL_ATTN_E_INVALID, "src is set; clear reads no src");
    }
    {
        int dst[] = {1, 2}, src[] = {2, 7};
        want(b, op(&t, SGL_ATTN_STATE_COPY, 2, dst, src, NULL), SGL_ATTN_E_INVALID,
             "dst[1] = 2 is also src[0]: a copy batch may not write a slot another entry reads");
        want(b, op(&t, SGL_ATTN_STATE_COPY, 2, dst, NULL, NULL), SGL_ATTN_E_INVALID, "src is NULL; copy needs [count] src");
        int far[] = {2, 40};
        int d2[] = {4, 5};
        want(b, op(&t, SGL_ATTN_STATE_COPY, 2, d2, far, NULL), SGL_ATTN_E_INVALID, "src[1] = 40");
    }
    {
        int dst[] = {1, 2}, steps[] = {0, STEPS};
        want(b, op(&t, SGL_ATTN_STATE_COMMIT, 2, dst, NULL, steps), SGL_ATTN_E_INVALID,
             "steps[1] = 4; expected -1 (keep) or an intermediate step 0..3");
        want(b, op(&t, SGL_ATTN_STATE_COMMIT, 2, dst, NULL, NULL), SGL_ATTN_E_INVALID, "steps is NULL");
        int rep[] = {1, 1}, s2[] = {0, -1};
        /* a skipped entry (step -1) writes nothing, so it does not repeat */
        assert_int_equal(op(&t, SGL_ATTN_STATE_COMMIT, 2, rep, NULL, s2), SGL_ATTN_OK);
        set_row(t.conv[1], 110);
    }
    tiny_expect(&t); /* nothing refused wrote anything */
    {   /* count past max_reqs, NULL args, and the caller's tensors wrong */
        ttensor td;
        tt_make(&td, tu_dt(0), 1, SLOTS + 1, 0, 0);
        sgl_attn_linear_io io;
        scen_twin_io(&t.s, 0, &io);
        sgl_attn_state_batch_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.op = SGL_ATTN_STATE_CLEAR;
        a.count = SLOTS + 1;
        a.dst = &td.t;
        a.state = &io;
        want(b, b->ops->state_batch(b, &a), SGL_ATTN_E_INVALID, "count = 9; expected 0..8 (create's max_reqs");
        want(b, b->ops->state_batch(b, NULL), SGL_ATTN_E_INVALID, "args are NULL");
        a.count = 1;
        io.kind = SGL_ATTN_HYBRID_GDN;
        want(b, b->ops->state_batch(b, &a), SGL_ATTN_E_INVALID, "state->kind = 1; expected 3 (short_conv)");
        io.kind = SGL_ATTN_HYBRID_SHORT_CONV;
        DLTensor bad = *io.conv_state;
        bad.dtype = tu_dt(F64);
        io.conv_state = &bad;
        want(b, b->ops->state_batch(b, &a), SGL_ATTN_E_UNSUPPORTED, "linear.conv_state has dtype float64; expected float32");
        tt_free(&td);
    }
    {   /* the pool: commit needs the intermediate states a spec_tokens model keeps */
        scen p;
        scen_open(&p, SGL_ATTN_HYBRID_SHORT_CONV, &tiny_shape, F32, F32, -1, 1e-11, 8, 0);
        ttensor td, tp;
        tt_make(&td, tu_dt(0), 1, 1, 0, 0);
        tt_make(&tp, tu_dt(0), 1, 1, 0, 0);
        sgl_attn_state_batch_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.op = SGL_ATTN_STATE_COMMIT;
        a.count = 1;
        a.dst = &td.t;
        a.steps = &tp.t;
        want(p.b, p.b->ops->state_batch(p.b, &a), SGL_ATTN_E_INVALID, "the wrapper's pool keeps no intermediate states");
        a.op = SGL_ATTN_STATE_CLEAR;
        a.steps = NULL;
        tt_set(&td, 0, SLOTS);
        want(p.b, p.b->ops->state_batch(p.b, &a), SGL_ATTN_E_INVALID,
             "dst[0] = 8; expected -1 (skip) or a slot 0..7 (the wrapper's pool has 8 slots)");
        tt_free(&td);
        tt_free(&tp);
        scen_close(&p);
    }
    scen_close(&t.s);
}

/* A forward with bad caller-owned state: refused by name, nothing written. */
typedef struct fcall {
    ttensor si, sl, x, a, b, out, map;
    sgl_attn_batch batch;
    sgl_attn_layer layer;
    sgl_attn_linear_io io;
    sgl_attn_forward_args args;
} fcall;

static void fcall_make(fcall *f, scen *s, int mode, int tpr) {
    const hyb_dims *d = &s->w->d;
    const int bs = 2, T = bs * tpr;
    memset(f, 0, sizeof *f);
    tt_make(&f->si, tu_dt(0), 1, bs, 0, 0);
    tt_make(&f->sl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&f->map, tu_dt(0), 1, bs, 0, 0);
    for (int i = 0; i < bs; i++) {
        tt_set(&f->si, i, 2 * i + 1);
        tt_set(&f->sl, i, 5);
        tt_set(&f->map, i, 2 * i + 1);
    }
    tt_make(&f->x, tu_dt(F32), 2, T, d->x_dim, 0);
    tt_make(&f->a, tu_dt(F32), 2, T, d->hv, 0);
    tt_make(&f->b, tu_dt(F32), 2, T, d->hv, 0);
    tt_make(&f->out, tu_dt(F32), 3, T, d->hv, d->dv);
    f->batch.struct_size = sizeof f->batch;
    f->batch.forward_mode = mode;
    f->batch.batch_size = bs;
    f->batch.num_tokens = T;
    f->batch.page_size = 1;
    f->batch.tokens_per_req = tpr;
    f->batch.seq_lens = &f->sl.t;
    f->batch.state_indices = &f->si.t;
    f->layer.struct_size = sizeof f->layer;
    f->layer.sliding_window = -1;
    scen_twin_io(s, 1, &f->io);
    f->io.x = &f->x.t;
    f->io.a = &f->a.t;
    f->io.b = &f->b.t;
    f->io.conv_weight = &s->lw[0].conv_w.t;
    f->io.conv_bias = &s->lw[0].conv_b.t;
    f->io.A_log = &s->lw[0].A_log.t;
    f->io.dt_bias = &s->lw[0].dt_bias.t;
    f->io.out = &f->out.t;
    f->args.struct_size = sizeof f->args;
    f->args.layer = &f->layer;
    f->args.batch = &f->batch;
    f->args.linear = &f->io;
}

static void fcall_free(fcall *f) {
    tt_free(&f->si); tt_free(&f->sl); tt_free(&f->x); tt_free(&f->a); tt_free(&f->b); tt_free(&f->out);
    tt_free(&f->map);
}

static void test_forward_refused(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_GDN, &gdn_shape, F32, F32, -1, 1e-11, 9, STEPS);
    scen_twin_open(&s);
    sgl_attn_backend *b = s.tb;
    const size_t conv_bytes = (size_t)CSLOTS * s.w->d.conv_elems * 4, ssm_bytes = (size_t)CSLOTS * s.w->d.ssm_elems * 4;
    unsigned char *conv0 = malloc(conv_bytes), *ssm0 = malloc(ssm_bytes);
    memcpy(conv0, s.ts[1].t[0].data, conv_bytes);
    memcpy(ssm0, s.ts[1].t[1].data, ssm_bytes);
    fcall f;
    fcall_make(&f, &s, SGL_ATTN_MODE_DECODE, 1);
    assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
    {   /* the conv state time-major ([S, W-1, C]) is not the contract */
        DLTensor c = *f.io.conv_state;
        int64_t shp[3] = {CSLOTS, 3, s.w->d.conv_dim};
        c.shape = shp;
        DLTensor *keep = f.io.conv_state;
        f.io.conv_state = &c;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "gdn layer 0: linear.conv_state has shape [12, 3, 96]; expected [12, 96, 3] ([slots, conv_dim, W-1], "
             "channel-major, gdn)");
        c.shape = keep->shape;
        c.dtype = tu_dt(SGL_ATTN_DT_BF16);
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_UNSUPPORTED,
             "linear.conv_state has dtype bfloat16; expected float32");
        c.dtype = keep->dtype;
        int64_t strides[3] = {1, CSLOTS, CSLOTS * s.w->d.conv_dim};
        c.strides = strides;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_UNSUPPORTED,
             "linear.conv_state is strided (dim 2 stride 1152); expected a compact tensor");
        f.io.conv_state = keep;
    }
    {
        DLTensor *ssm = f.io.ssm_state;
        f.io.ssm_state = NULL;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.ssm_state is NULL; the caller owns this layer's state");
        DLTensor v = *ssm;
        int64_t shp[4] = {CSLOTS, 4, 16, 8}; /* [S, HV, K, V]: the state is [HV, V, K] */
        v.shape = shp;
        f.io.ssm_state = &v;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.ssm_state has shape [12, 4, 16, 8]; expected [12, 4, 8, 16] ([slots, HV, V, K], gdn)");
        int64_t fewer[4] = {6, 4, 8, 16};
        v.shape = fewer;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID, "linear.ssm_state has shape [6, 4, 8, 16]; "
                                                                         "expected [12, 4, 8, 16]");
        f.io.ssm_state = ssm;
    }
    {   /* slots: the batch's past the caller's tensors; the layer's own repeated or out of range */
        tt_set(&f.map, 0, 3);
        tt_set(&f.map, 1, 3);
        f.io.state_indices = &f.map.t;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.state_indices[1] = 3 names a slot another request of the batch already uses");
        tt_set(&f.map, 1, CSLOTS);
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.state_indices[1] = 12; expected -1 (padding) or a slot 0..11 (linear.conv_state has 12 slots)");
        f.io.state_indices = NULL;
        tt_set(&f.si, 1, 30);
        assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "batch.state_indices[1] = 30; expected -1 (padding) or a slot 0..11 (linear.conv_state has 12 slots)");
        tt_set(&f.si, 1, 3);
    }
    {   /* lightning-style refusals on gdn's kin: no ssm state for short_conv is tested by the twin */
        DLTensor *ic = f.io.intermediate_conv_state;
        DLTensor v = *ic;
        int64_t shp[4] = {CSLOTS, STEPS, s.w->d.conv_dim, 2};
        v.shape = shp;
        f.io.intermediate_conv_state = &v;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.intermediate_conv_state has shape [12, 4, 96, 2]; expected [12, 4, 96, 3]");
        f.io.intermediate_conv_state = ic;
    }
    {   /* the twin has no pool of its own: the calls that need one say so */
        sgl_attn_linear_io io = f.io;
        f.io.conv_state = f.io.ssm_state = f.io.intermediate_conv_state = f.io.intermediate_ssm_state = NULL;
        f.io.state_indices = &f.map.t;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.state_indices is set without a state tensor");
        f.io.state_indices = NULL;
        want(b, b->ops->forward_decode(b, &f.args), SGL_ATTN_E_STATE,
             "gdn layer 0: gdn was created without its own state pool (option state_pool = 0)");
        f.io = io;
        want(b, b->ops->state_clear(b, 1), SGL_ATTN_E_STATE, "state_clear: gdn was created without its own state pool");
    }
    assert_memory_equal(conv0, s.ts[1].t[0].data, conv_bytes); /* nothing written by a refused call */
    assert_memory_equal(ssm0, s.ts[1].t[1].data, ssm_bytes);
    fcall_free(&f);
    {   /* verify with keep: the intermediate tensors are required, with the verify's steps */
        fcall_make(&f, &s, SGL_ATTN_MODE_TARGET_VERIFY, 3);
        f.io.keep_intermediate = 1;
        assert_int_equal(b->ops->init_forward_metadata(b, &f.batch), SGL_ATTN_OK);
        DLTensor *issm = f.io.intermediate_ssm_state;
        f.io.intermediate_ssm_state = NULL;
        want(b, b->ops->forward_extend(b, &f.args), SGL_ATTN_E_INVALID,
             "verify with keep_intermediate needs linear.intermediate_ssm_state");
        f.io.intermediate_ssm_state = issm;
        DLTensor a2 = *f.io.intermediate_conv_state, b2 = *issm;
        int64_t sa[4] = {CSLOTS, 2, s.w->d.conv_dim, 3}, sb[5] = {CSLOTS, 2, 4, 8, 16};
        a2.shape = sa;
        b2.shape = sb;
        f.io.intermediate_conv_state = &a2;
        f.io.intermediate_ssm_state = &b2;
        want(b, b->ops->forward_extend(b, &f.args), SGL_ATTN_E_INVALID,
             "linear.intermediate_conv_state has 2 steps (dim 1); expected at least 3");
        fcall_free(&f);
    }
    free(conv0);
    free(ssm0);
    scen_close(&s);
}

/* state a kind does not keep is refused, not ignored */
static void test_kind_state_sets(void **st) {
    (void)st;
    scen s;
    scen_open(&s, SGL_ATTN_HYBRID_LIGHTNING, &light_shape, F32, F32, -1, 1e-11, 10, 0);
    scen_twin_open(&s);
    assert_null(s.ts[0].t[0].data); /* lightning: no conv */
    sgl_attn_linear_io io;
    scen_twin_io(&s, 0, &io);
    DLTensor conv = *io.ssm_state;
    io.conv_state = &conv;
    ttensor td;
    tt_make(&td, tu_dt(0), 1, 1, 0, 0);
    sgl_attn_state_batch_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.op = SGL_ATTN_STATE_CLEAR;
    a.count = 1;
    a.dst = &td.t;
    a.state = &io;
    want(s.tb, s.tb->ops->state_batch(s.tb, &a), SGL_ATTN_E_INVALID,
         "linear.conv_state is set; lightning keeps no conv state");
    tt_free(&td);
    scen_close(&s);
}

static void test_caps(void **st) {
    (void)st;
    const int kinds[] = {SGL_ATTN_HYBRID_GDN, SGL_ATTN_HYBRID_KDA, SGL_ATTN_HYBRID_MAMBA2,
                         SGL_ATTN_HYBRID_SHORT_CONV, SGL_ATTN_HYBRID_LIGHTNING, SGL_ATTN_HYBRID_MINIMAX_SPARSE};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        sgl_attn_caps c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        assert_int_equal(hyb_probe(0, &c, kinds[i]), SGL_ATTN_OK);
        const int served = kinds[i] != SGL_ATTN_HYBRID_MINIMAX_SPARSE;
        assert_int_equal(!!(c.features & SGL_ATTN_FEAT_CALLER_STATE), served);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twin_gdn),        cmocka_unit_test(test_twin_kda),
        cmocka_unit_test(test_twin_mamba2),     cmocka_unit_test(test_twin_short_conv),
        cmocka_unit_test(test_twin_lightning),  cmocka_unit_test(test_ops_by_hand),
        cmocka_unit_test(test_ops_refused),     cmocka_unit_test(test_forward_refused),
        cmocka_unit_test(test_kind_state_sets), cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
