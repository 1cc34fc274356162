/* linear_family.c - the engine of the stateful linear kinds' cases (gdn,
 * kda, mamba2, short_conv, lightning): `attnctl check` / `bench` of one case
 * of a row of linear_kinds.c, judged against the float64 reference in
 * linear_ref.c (docs/hybrid.md, "Harness cases").  What differs between the
 * kinds is data in the row: inputs, shapes, defaults.
 *
 * One check: a wrapper stacked on the target's inner over a two-layer model
 * (layer 0 linear, layer 1 full); an extend of each request's prefix through
 * the plugin (so the state is carried across calls), then the case's call:
 * an extend of the new tokens, a decode step, or a verify that keeps one
 * state per draft token followed by state_commit of random accepted steps and
 * a decode step that shows what was committed.  Every call's output is
 * compared; a padded row (state index -1) must read back as zeros.
 *
 * owner=caller (ABI 1.2, SGL_ATTN_FEAT_CALLER_STATE): the same calls with
 * the state in tensors the harness owns, as an engine's MambaPool, passed
 * in linear_io (conv [S, conv_dim, W-1], ssm [S, HV, V, K], their per-step
 * copies for verify), with slots up to twice the wrapper's max_reqs and the
 * tensors poisoned at the start (a request without a prefix must not read
 * them); the commit is ops->state_batch on them, and at the end every live
 * slot's state must match the reference's: the plugin used the tensors, not
 * its own pool.  A stack that does not serve it is "not supported". */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear_family.h"
#include "linear_ref.h"

/* free a tensor only if it was allocated (some of a case's may not be) */
static void tfree(htensor *t) {
    if (t->host) htensor_free(t);
}

enum { FWD_EXTEND, FWD_DECODE, FWD_VERIFY };
#define LF_MAXR 257

typedef struct lcase {
    int b, q, prefix, fwd, ragged, pad, caller, slow;
    int hk, hv, dk, dv, conv, hidden;
    hdtype dt, sdt;
} lcase;

static int parse_case(const lfam_kind *k, const hcase *c, lcase *lc, hresult *r) {
    static const char *const keys[] = {"b",  "q",  "prefix", "fwd",  "ragged", "pad",   "hk",   "hv",
                                       "dk", "dv", "conv",   "hidden", "dtype", "state", "seed", "owner",
                                       "decay", NULL};
    char err[384];
    long v;
    memset(lc, 0, sizeof *lc);
    if (hcase_check_keys(c, keys, err, sizeof err)) goto bad;
    const char *f = hcase_get(c, "fwd");
    lc->fwd = !f || !strcmp(f, "extend") ? FWD_EXTEND : !strcmp(f, "decode") ? FWD_DECODE
            : !strcmp(f, "verify") ? FWD_VERIFY : -1;
    if (lc->fwd < 0) {
        hresult_error(r, "%s: fwd=%s; expected extend, decode or verify", c->text, f);
        return -1;
    }
    const char *dc = hcase_get(c, "decay");
    lc->slow = !dc || !strcmp(dc, "fast") ? 0 : !strcmp(dc, "slow") ? 1 : -1;
    if (lc->slow < 0) {
        hresult_error(r, "%s: decay=%s; expected fast (gates that forget most of a state within a few tokens) or "
                      "slow (most of it kept across chunks)", c->text, dc);
        return -1;
    }
    const char *o = hcase_get(c, "owner");
    lc->caller = !o || !strcmp(o, "plugin") ? 0 : !strcmp(o, "caller") ? 1 : -1;
    if (lc->caller < 0) {
        hresult_error(r, "%s: owner=%s; expected plugin (the wrapper's pool) or caller (state tensors in linear_io)",
                      c->text, o);
        return -1;
    }
#define INT(key, def, lo, hi, dst)                                              \
    do {                                                                        \
        if (hcase_int(c, key, def, lo, hi, &v, err, sizeof err)) goto bad;      \
        dst = (int)v;                                                           \
    } while (0)
    INT("b", 4, 1, LF_MAXR - 2, lc->b);
    INT("q", lc->fwd == FWD_VERIFY ? 3 : 64, 1, 65536, lc->q);
    INT("prefix", lc->fwd == FWD_EXTEND ? 0 : 16, 0, 1 << 20, lc->prefix);
    INT("ragged", 1, 0, 1, lc->ragged);
    INT("pad", 1, 0, 1, lc->pad);
    INT("hk", k->hk, 1, 1024, lc->hk);
    INT("hv", k->hv, 1, 1024, lc->hv);
    INT("dk", k->dk, 1, 1024, lc->dk);
    INT("dv", k->dv, 1, 1024, lc->dv);
    INT("conv", k->conv, 0, 8, lc->conv);
    INT("hidden", k->hidden, 1, 1 << 16, lc->hidden);
#undef INT
    if (hcase_dtype(c, "dtype", HDT_F32, &lc->dt, err, sizeof err)) goto bad;
    if (hcase_dtype(c, "state", lc->dt == HDT_F64 ? HDT_F64 : HDT_F32, &lc->sdt, err, sizeof err)) goto bad;
    if (!hdtype_is_float(lc->dt) || (lc->sdt != HDT_F32 && lc->sdt != HDT_F64)) {
        hresult_error(r, "%s: dtype must be f32, f16, bf16 or f64 and state f32 or f64", c->text);
        return -1;
    }
    if (lc->fwd != FWD_EXTEND && lc->prefix < 1) {
        hresult_error(r, "%s: decode and verify continue a request: prefix must be >= 1", c->text);
        return -1;
    }
    if (lc->fwd == FWD_DECODE) lc->q = 1;
    if (k->heads_tied) lc->hk = lc->hv;
    if (k->conv_channels == LF_CONV_NONE) lc->conv = 0;
    if (k->conv_channels == LF_CONV_QKV && lc->hv % lc->hk) {
        hresult_error(r, "%s: hv=%d must be a multiple of hk=%d", c->text, lc->hv, lc->hk);
        return -1;
    }
    if (k->conv_channels != LF_CONV_NONE && lc->conv < 1) {
        hresult_error(r, "%s: conv=%d; expected 1..8", c->text, lc->conv);
        return -1;
    }
    return 0;
bad:
    hresult_error(r, "%s", err);
    return -1;
}

/* ------------------------------------------------------------ one case */

enum { LF_MAXCALLS = 4 }; /* the prefix, then at most verify and the decode after it */

typedef struct lctx {
    const htarget *t;
    const lfam_kind *k;
    lcase lc;
    lref_dims ld;
    int x_dim, acols, orow;   /* columns of x, of a, and of one output row */
    size_t conv_n, ssm_n;     /* reference state elements per request */
    sgl_attn_backend *be;
    hrng rng;
    int nreq, max_reqs, max_ctx;
    int slot[LF_MAXR], done[LF_MAXR], nnew[LF_MAXR]; /* slot (-1 padded), tokens so far, the case's new tokens */
    htensor cw, cb, alog, dtb, dd, decay;   /* layer parameters, staged once */
    double *cwd, *cbd, *alogd, *dtbd, *ddd, *decayd;
    double *rconv[LF_MAXR], *rssm[LF_MAXR], *sconv[LF_MAXR], *sssm[LF_MAXR];
    /* owner=caller: the state tensors (slots = cslots) and the 5-D view of
     * the per-step ssm copies (staged 4-D: [S, steps, HV, V*K]) */
    int cslots;
    htensor cst, sst, icst, isst;
    DLTensor isst5;
    int64_t isst5_shape[5];
    /* Every call's output is judged at the end of the case (phase_check, case_verdict), against the
     * case's output scale as well as its own: a call of one or two tokens is a handful of q·k
     * products times v, and a product that happens to cancel makes the bf16 operands' rounding
     * (~2^-9 of |q||k|) a large fraction of that call's output. */
    hcall_err call[LF_MAXCALLS];
    int calls;
} lctx;

/* the tensors of one call */
typedef struct lphase {
    int mode, keep, bs, T;
    int req[LF_MAXR], n[LF_MAXR];   /* batch row -> request, its new tokens */
    htensor si, el, pl, sl, rpi, rtt, loc, pos, x, a, b, q, k, v, out;
    DLTensor sl_cpu, el_cpu, pl_cpu;
    sgl_attn_batch batch;
    sgl_attn_linear_io io;
    sgl_attn_layer layer;
    sgl_attn_forward_args args;
} lphase;

static double *dcopy(const htensor *t) {
    double *d = calloc(t->count ? t->count : 1, sizeof *d);
    if (d)
        for (size_t i = 0; i < t->count; i++) d[i] = hdtype_load(t->dt, htensor_cdata(t), i);
    return d;
}

static int alloc_t(lctx *x, htensor *t, const char *name, hdtype dt, int nd, int64_t d0, int64_t d1,
                   int64_t d2, hresult *r) {
    int64_t shape[3] = {d0 > 0 ? d0 : 1, d1 > 0 ? d1 : 1, d2 > 0 ? d2 : 1};
    char err[256];
    if (htensor_alloc(t, &x->t->dev, name, dt, nd, shape, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return -1;
    }
    return 0;
}

static void fill_uniform(htensor *t, hrng *g, double lo, double hi) {
    for (size_t i = 0; i < t->count; i++) hdtype_store(t->dt, htensor_data(t), i, lo + (hi - lo) * hrng_uniform(g));
}

static int upload(htensor *t, hresult *r) {
    char err[256];
    if (htensor_upload(t, err, sizeof err)) { hresult_error(r, "%s", err); return -1; }
    return 0;
}

static int make_params(lctx *x, hresult *r) {
    const lcase *lc = &x->lc;
    const int C = x->ld.conv_dim, W = lc->conv > 0 ? lc->conv : 1, HV = lc->hv;
    const int nbias = x->acols;
    if (alloc_t(x, &x->cw, "conv_weight", lc->dt, 2, C, W, 0, r) ||
        alloc_t(x, &x->cb, "conv_bias", lc->dt, 1, C, 0, 0, r) ||
        alloc_t(x, &x->alog, "A_log", lc->dt, 1, HV, 0, 0, r) ||
        alloc_t(x, &x->dtb, "dt_bias", lc->dt, 1, nbias, 0, 0, r) ||
        alloc_t(x, &x->dd, "D", lc->dt, 1, HV, 0, 0, r) ||
        alloc_t(x, &x->decay, "decay", lc->dt, 1, HV, 0, 0, r))
        return -1;
    htensor_fill_normal(&x->cw, &x->rng, 0.5);
    htensor_fill_normal(&x->cb, &x->rng, 0.3);
    /* decay=slow: gates near 1 (exp(A_log) about 1e-3), so a state carried across calls, chunks and
     * segments still weighs in the outputs hundreds of tokens later; the default forgets in a few tokens */
    if (x->lc.slow) fill_uniform(&x->alog, &x->rng, -7.0, -5.0);
    else htensor_fill_normal(&x->alog, &x->rng, 0.5);
    htensor_fill_normal(&x->dtb, &x->rng, 0.5);
    htensor_fill_normal(&x->dd, &x->rng, 1.0);
    if (x->lc.slow) fill_uniform(&x->decay, &x->rng, 0.001, 0.01);
    else fill_uniform(&x->decay, &x->rng, 0.05, 0.95);
    if (!(x->cwd = dcopy(&x->cw)) || !(x->cbd = dcopy(&x->cb)) || !(x->alogd = dcopy(&x->alog)) ||
        !(x->dtbd = dcopy(&x->dtb)) || !(x->ddd = dcopy(&x->dd)) || !(x->decayd = dcopy(&x->decay))) {
        hresult_error(r, "out of memory");
        return -1;
    }
    return upload(&x->cw, r) || upload(&x->cb, r) || upload(&x->alog, r) || upload(&x->dtb, r) ||
           upload(&x->dd, r) || upload(&x->decay, r) ? -1 : 0;
}

static void phase_free(lphase *p) {
    htensor *ts[] = {&p->si, &p->el, &p->pl, &p->sl, &p->rpi, &p->rtt, &p->loc, &p->pos,
                     &p->x,  &p->a,  &p->b,  &p->q,  &p->k,   &p->v,   &p->out};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) tfree(ts[i]);
}

/* Stage one call: requests with n[i] > 0, random inputs, poisoned output. */
static int phase_build(lctx *x, lphase *p, int mode, const int *n, int keep, hresult *r) {
    const lcase *lc = &x->lc;
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->keep = keep;
    for (int i = 0; i < x->nreq; i++)
        if (n[i] > 0) {
            p->req[p->bs] = i;
            p->n[p->bs++] = n[i];
            p->T += n[i];
        }
    const int bs = p->bs, T = p->T;
    const hdtype it = HDT_I32;
    if (alloc_t(x, &p->si, "state_indices", it, 1, bs, 0, 0, r) || alloc_t(x, &p->el, "extend_seq_lens", it, 1, bs, 0, 0, r) ||
        alloc_t(x, &p->pl, "extend_prefix_lens", it, 1, bs, 0, 0, r) || alloc_t(x, &p->sl, "seq_lens", it, 1, bs, 0, 0, r) ||
        alloc_t(x, &p->rpi, "req_pool_indices", it, 1, bs, 0, 0, r) ||
        alloc_t(x, &p->rtt, "req_to_token", it, 2, x->max_reqs, x->max_ctx, 0, r) ||
        alloc_t(x, &p->loc, "out_cache_loc", it, 1, T, 0, 0, r) || alloc_t(x, &p->pos, "positions", it, 1, T, 0, 0, r) ||
        alloc_t(x, &p->x, "x", lc->dt, 2, T, x->x_dim, 0, r) || alloc_t(x, &p->a, "a", lc->dt, 2, T, x->acols, 0, r) ||
        alloc_t(x, &p->b, "b", lc->dt, 2, T, lc->hv, 0, r) || alloc_t(x, &p->q, "q", lc->dt, 3, T, lc->hv, lc->dk, r) ||
        alloc_t(x, &p->k, "k", lc->dt, 3, T, lc->hv, lc->dk, r) || alloc_t(x, &p->v, "v", lc->dt, 3, T, lc->hv, lc->dv, r) ||
        (x->k->out_hidden ? alloc_t(x, &p->out, "out", lc->dt, 2, T, lc->hidden, 0, r)
                          : alloc_t(x, &p->out, "out", lc->dt, 3, T, lc->hv, lc->dv, r)))
        return -1;
    /* KV slots for the inner's metadata: row i holds slots 1 + i*max_ctx + j */
    for (int row = 0; row < x->max_reqs; row++)
        for (int j = 0; j < x->max_ctx; j++) htensor_set_index(&p->rtt, (size_t)row * x->max_ctx + j, 1 + (int64_t)row * x->max_ctx + j);
    for (int i = 0, tok = 0; i < bs; i++) {
        const int q = p->req[i];
        htensor_set_index(&p->si, i, x->slot[q]);
        htensor_set_index(&p->el, i, p->n[i]);
        htensor_set_index(&p->pl, i, x->done[q]);
        htensor_set_index(&p->sl, i, x->done[q] + p->n[i]);
        htensor_set_index(&p->rpi, i, q);
        for (int j = 0; j < p->n[i]; j++, tok++) {
            htensor_set_index(&p->loc, tok, 1 + (int64_t)q * x->max_ctx + x->done[q] + j);
            htensor_set_index(&p->pos, tok, x->done[q] + j);
        }
    }
    htensor_fill_normal(&p->x, &x->rng, 1.0);
    htensor_fill_normal(&p->a, &x->rng, 1.0);
    htensor_fill_normal(&p->b, &x->rng, 1.0);
    htensor_fill_normal(&p->q, &x->rng, 0.5);
    htensor_fill_normal(&p->k, &x->rng, 0.5);
    htensor_fill_normal(&p->v, &x->rng, 0.5);
    htensor_poison(&p->out);
    htensor *up[] = {&p->si, &p->el, &p->pl, &p->sl, &p->rpi, &p->rtt, &p->loc, &p->pos,
                     &p->x,  &p->a,  &p->b,  &p->q,  &p->k,   &p->v,   &p->out};
    for (size_t i = 0; i < sizeof up / sizeof *up; i++)
        if (upload(up[i], r)) return -1;
    p->sl_cpu = htensor_host_view(&p->sl);
    p->el_cpu = htensor_host_view(&p->el);
    p->pl_cpu = htensor_host_view(&p->pl);
    sgl_attn_batch *B = &p->batch;
    B->struct_size = sizeof *B;
    B->forward_mode = mode == FWD_EXTEND ? SGL_ATTN_MODE_EXTEND : mode == FWD_DECODE ? SGL_ATTN_MODE_DECODE
                                                                                  : SGL_ATTN_MODE_TARGET_VERIFY;
    B->batch_size = bs;
    B->num_tokens = T;
    B->page_size = 1;
    B->tokens_per_req = mode == FWD_EXTEND ? 0 : p->n[0];
    for (int i = 0; i < bs; i++) B->seq_lens_sum += x->done[p->req[i]] + p->n[i];
    B->req_to_token = &p->rtt.t;
    B->req_pool_indices = &p->rpi.t;
    B->seq_lens = &p->sl.t;
    B->seq_lens_cpu = &p->sl_cpu;
    if (mode == FWD_EXTEND) {
        B->extend_prefix_lens = &p->pl.t;
        B->extend_seq_lens = &p->el.t;
        B->extend_prefix_lens_cpu = &p->pl_cpu;
        B->extend_seq_lens_cpu = &p->el_cpu;
    }
    B->out_cache_loc = &p->loc.t;
    B->positions = &p->pos.t;
    B->state_indices = &p->si.t;
    B->stream = x->t->dev.stream;
    sgl_attn_linear_io *io = &p->io;
    io->struct_size = sizeof *io;
    io->kind = x->k->kind;
    const unsigned in = x->k->inputs;
    io->x = in & LF_IN_X ? &p->x.t : NULL;
    io->a = in & LF_IN_A ? &p->a.t : NULL;
    io->b = in & LF_IN_B ? &p->b.t : NULL;
    io->conv_weight = x->k->conv_channels != LF_CONV_NONE ? &x->cw.t : NULL;
    io->conv_bias = io->conv_weight ? &x->cb.t : NULL;
    io->A_log = io->a ? &x->alog.t : NULL;
    io->dt_bias = io->a ? &x->dtb.t : NULL;
    io->D = in & LF_IN_D ? &x->dd.t : NULL;
    io->decay = in & LF_IN_DECAY ? &x->decay.t : NULL;
    io->out = &p->out.t;
    io->keep_intermediate = keep;
    io->use_qk_l2norm = 1;
    if (lc->caller) {
        io->conv_state = x->conv_n ? &x->cst.t : NULL;
        io->ssm_state = x->ssm_n ? &x->sst.t : NULL;
        io->intermediate_conv_state = x->conv_n && x->icst.host ? &x->icst.t : NULL;
        io->intermediate_ssm_state = x->ssm_n && x->isst.host ? &x->isst5 : NULL;
    }
    p->layer.struct_size = sizeof p->layer;
    p->layer.layer_id = 0;
    p->layer.num_q_heads = p->layer.num_kv_heads = 4;
    p->layer.head_dim_qk = p->layer.head_dim_v = 64;
    p->layer.sm_scale = 0.125f;
    p->layer.sliding_window = -1;
    p->layer.k_scale = p->layer.v_scale = 1;
    p->args.struct_size = sizeof p->args;
    p->args.layer = &p->layer;
    p->args.batch = &p->batch;
    if (in & LF_IN_QKV) {
        p->args.q = &p->q.t;
        p->args.k = &p->k.t;
        p->args.v = &p->v.t;
    }
    p->args.linear = io;
    return 0;
}

static int phase_forward(lctx *x, lphase *p, hresult *r) {
    int rc = p->mode == FWD_DECODE ? sgl_attn_forward_decode(x->be, &p->args)
                                   : sgl_attn_forward_extend(x->be, &p->args); /* verify: extend, as sglang */
    if (rc) {
        hresult_from_call(r, x->be, p->mode == FWD_DECODE ? "forward_decode" : "forward_extend", rc);
        return -1;
    }
    return 0;
}

/* Run, download, compare with the reference (which advances its states). */
static int phase_check(lctx *x, lphase *p, const char *what, hresult *r) {
    char err[256];
    double t0 = htime_now();
    int rc = sgl_attn_init_forward_metadata(x->be, &p->batch);
    if (rc) {
        hresult_from_call(r, x->be, "init_forward_metadata", rc);
        return -1;
    }
    if (phase_forward(x, p, r)) return -1;
    if (hdev_sync(&x->t->dev, err, sizeof err)) { hresult_fail(r, "%s: %s", what, err); return -1; }
    r->ms_plugin += 1e3 * (htime_now() - t0);
    htensor *dn[] = {&p->out, &p->x, &p->a, &p->b, &p->q, &p->k, &p->v};
    for (size_t i = 0; i < sizeof dn / sizeof *dn; i++)
        if (htensor_download(dn[i], err, sizeof err)) { hresult_fail(r, "%s: %s", what, err); return -1; }
    const lcase *lc = &x->lc;
    double *ref = calloc((size_t)p->T * x->orow + 1, sizeof *ref);
    double *xd = dcopy(&p->x), *ad = dcopy(&p->a), *bd = dcopy(&p->b), *qd = dcopy(&p->q), *kd = dcopy(&p->k),
           *vd = dcopy(&p->v);
    int ok = ref && xd && ad && bd && qd && kd && vd;
    t0 = htime_now();
    for (int i = 0, tok = 0; ok && i < p->bs; tok += p->n[i], i++) {
        const int q = p->req[i];
        if (x->slot[q] < 0) continue; /* padded: zeros */
        double *cs = x->rconv[q], *ss = x->rssm[q];
        if (p->keep) { /* verify: the steps from a copy; the main state stays */
            memcpy(x->sconv[q], cs, x->conv_n * sizeof(double));
            memcpy(x->sssm[q], ss, x->ssm_n * sizeof(double));
            cs = x->sconv[q];
            ss = x->sssm[q];
        }
        if (p->mode == FWD_EXTEND && x->done[q] == 0) {
            memset(cs, 0, x->conv_n * sizeof(double));
            memset(ss, 0, x->ssm_n * sizeof(double));
        }
        lref_in in = {xd + (size_t)tok * x->x_dim, ad + (size_t)tok * x->acols, bd + (size_t)tok * lc->hv,
                      qd + (size_t)tok * lc->hv * lc->dk, kd + (size_t)tok * lc->hv * lc->dk,
                      vd + (size_t)tok * lc->hv * lc->dv, x->cwd, x->cbd, x->alogd, x->dtbd, x->ddd, x->decayd, 1};
        lref_run(&x->ld, p->n[i], &in, cs, ss, ref + (size_t)tok * x->orow,
                 p->keep ? x->sconv[q] + x->conv_n : NULL, p->keep ? x->sssm[q] + x->ssm_n : NULL);
    }
    r->ms_ref += 1e3 * (htime_now() - t0);
    if (ok) {
        hcompare cmp;
        hcompare_run(&p->out, ref, &cmp);
        double thr = hthreshold(lc->dt) > hthreshold(lc->sdt) ? hthreshold(lc->dt) : hthreshold(lc->sdt);
        r->threshold = thr;
        if (cmp.bad_kind) {
            r->nmse = r->max_abs_err = NAN;
            hresult_fail(r, "%s: out[%zu] is %s", what, cmp.first_bad, cmp.bad_kind == 1 ? "NaN/Inf" : "never written");
        } else if (x->calls == LF_MAXCALLS) {
            hresult_error(r, "%s: more calls than the harness judges (%d)", what, LF_MAXCALLS);
        } else {
            x->call[x->calls++] = (hcall_err){what, cmp.sum_err2, cmp.sum_ref2, cmp.max_abs_err,
                                              p->out.count, cmp.worst_index};
            if (cmp.max_abs_err > r->max_abs_err) r->max_abs_err = cmp.max_abs_err;
        }
        ok = r->verdict == HV_PASS;
    } else {
        hresult_error(r, "out of memory");
    }
    free(ref); free(xd); free(ad); free(bd); free(qd); free(kd); free(vd);
    if (ok && !p->keep)
        for (int i = 0; i < p->bs; i++) x->done[p->req[i]] += p->n[i];
    return ok ? 0 : -1;
}

/* ------------------------------------------------ caller-owned state */

/* The stack serves caller-owned state: the ABI 1.2 op in its vtable. */
static int serves_caller_state(const sgl_attn_backend *be) {
    return be->ops_size >= offsetof(sgl_attn_backend_ops, state_batch) + sizeof be->ops->state_batch &&
           be->ops->state_batch;
}

/* Allocate the state tensors, poisoned: the plugin writes every state it reads. */
static int caller_state_open(lctx *x, hresult *r) {
    const lcase *lc = &x->lc;
    if (!serves_caller_state(x->be)) {
        hresult_unsupported(r, "%s: the stack has no ops->state_batch (ABI 1.2 caller-owned state, "
                               "SGL_ATTN_FEAT_CALLER_STATE)", x->t->label);
        return -1;
    }
    const int S = x->cslots, C = x->ld.conv_dim, H = lc->conv - 1, steps = lc->fwd == FWD_VERIFY ? lc->q : 0;
    char err[256];
    htensor *all[4] = {&x->cst, &x->sst, &x->icst, &x->isst};
    const int64_t shp[4][4] = {{S, C, H, 1}, {S, lc->hv, lc->dv, lc->dk}, {S, steps, C, H},
                               {S, steps, lc->hv, (int64_t)lc->dv * lc->dk}};
    const int nd[4] = {3, 4, 4, 4};
    const int want[4] = {x->conv_n > 0, x->ssm_n > 0, x->conv_n > 0 && steps > 0, x->ssm_n > 0 && steps > 0};
    const char *names[4] = {"conv_state", "ssm_state", "intermediate_conv_state", "intermediate_ssm_state"};
    for (int i = 0; i < 4; i++) {
        if (!want[i]) continue;
        if (htensor_alloc(all[i], &x->t->dev, names[i], lc->sdt, nd[i], shp[i], err, sizeof err)) {
            hresult_error(r, "%s", err);
            return -1;
        }
        htensor_poison(all[i]);
        if (upload(all[i], r)) return -1;
    }
    if (x->isst.host) {
        x->isst5 = x->isst.t;
        const int64_t s5[5] = {S, steps, lc->hv, lc->dv, lc->dk};
        memcpy(x->isst5_shape, s5, sizeof s5);
        x->isst5.ndim = 5;
        x->isst5.shape = x->isst5_shape;
        x->isst5.strides = NULL;
    }
    return 0;
}

/* After verify: ops->state_batch COMMIT of the accepted steps on the tensors. */
static int caller_commit(lctx *x, lphase *p, htensor *acc, hresult *r) {
    htensor dst;
    if (alloc_t(x, &dst, "dst", HDT_I32, 1, p->bs, 0, 0, r)) return -1;
    for (int i = 0; i < p->bs; i++) htensor_set_index(&dst, i, x->slot[p->req[i]]);
    int rc = upload(&dst, r);
    if (!rc) {
        sgl_attn_state_batch_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.op = SGL_ATTN_STATE_COMMIT;
        a.count = p->bs;
        a.dst = &dst.t;
        a.steps = &acc->t;
        a.state = &p->io;
        a.stream = x->t->dev.stream;
        if ((rc = x->be->ops->state_batch(x->be, &a))) hresult_from_call(r, x->be, "state_batch commit", rc);
    }
    tfree(&dst);
    return rc ? -1 : 0;
}

/* Every live slot of the tensors holds the reference's state. */
static void caller_state_check(lctx *x, hresult *r) {
    char err[256];
    const lcase *lc = &x->lc;
    const double thr = hthreshold(lc->dt) > hthreshold(lc->sdt) ? hthreshold(lc->dt) : hthreshold(lc->sdt);
    struct {
        htensor *t;
        size_t n;
        int conv;
    } parts[2] = {{&x->cst, x->conv_n, 1}, {&x->sst, x->ssm_n, 0}};
    for (int k = 0; k < 2; k++) {
        if (!parts[k].n) continue;
        if (hdev_sync(&x->t->dev, err, sizeof err) || htensor_download(parts[k].t, err, sizeof err)) {
            hresult_fail(r, "caller-owned %s: %s", parts[k].t->name, err);
            return;
        }
        double num = 0, den = 0;
        for (int q = 0; q < x->nreq; q++) {
            if (x->slot[q] < 0) continue;
            const double *ref = parts[k].conv ? x->rconv[q] : x->rssm[q];
            const size_t at = (size_t)x->slot[q] * parts[k].n;
            for (size_t e = 0; e < parts[k].n; e++) {
                const double g = hdtype_load(parts[k].t->dt, htensor_cdata(parts[k].t), at + e);
                num += (g - ref[e]) * (g - ref[e]);
                den += ref[e] * ref[e];
            }
        }
        const double nmse = den > 0 ? num / den : (num > 0 ? INFINITY : 0);
        if (!(nmse <= thr)) {
            hresult_fail(r, "caller-owned %s after the calls: NMSE %.3g against the reference's state, above the "
                            "limit %.0e (the plugin did not keep its state in the engine's tensors)",
                         parts[k].t->name, nmse, thr);
            return;
        }
    }
}

static void ctx_free(lctx *x) {
    if (x->be) htarget_destroy(x->t, x->be);
    htensor *ts[] = {&x->cw, &x->cb, &x->alog, &x->dtb, &x->dd, &x->decay, &x->cst, &x->sst, &x->icst, &x->isst};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) tfree(ts[i]);
    free(x->cwd); free(x->cbd); free(x->alogd); free(x->dtbd); free(x->ddd); free(x->decayd);
    for (int i = 0; i < LF_MAXR; i++) { free(x->rconv[i]); free(x->rssm[i]); free(x->sconv[i]); free(x->sssm[i]); }
    free(x);
}

/* Parse, build the model and the stack, lay out requests, run the prefix. */
static lctx *ctx_open(const lfam_kind *k, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    lctx *x = calloc(1, sizeof *x);
    if (!x) { hresult_error(r, "out of memory"); return NULL; }
    x->t = t;
    x->k = k;
    if (parse_case(k, c, &x->lc, r)) { free(x); return NULL; }
    const lcase *lc = &x->lc;
    long sv;
    char err[256];
    if (hcase_get(c, "seed") && !hcase_int(c, "seed", 0, 0, 0x7fffffffL, &sv, err, sizeof err)) seed = (uint64_t)sv;
    hrng_seed(&x->rng, seed);
    const int HK = lc->hk, HV = lc->hv;
    x->ld.kind = k->kind;
    x->ld.hk = HK;
    x->ld.hv = k->out_hidden ? 0 : HV;
    x->ld.dk = lc->dk;
    x->ld.dv = lc->dv;
    x->ld.conv_w = lc->conv;
    x->ld.conv_dim = k->conv_channels == LF_CONV_HIDDEN ? lc->hidden
                   : k->conv_channels == LF_CONV_QKV    ? 2 * HK * lc->dk + HV * lc->dv
                                                        : 0;
    x->x_dim = k->conv_channels == LF_CONV_HIDDEN ? 3 * lc->hidden : x->ld.conv_dim;
    x->acols = k->gate_per_k ? HV * lc->dk : HV;
    x->orow = k->out_hidden ? lc->hidden : HV * lc->dv;
    x->conv_n = lc->conv > 1 ? (size_t)x->ld.conv_dim * (lc->conv - 1) : 0;
    x->ssm_n = k->out_hidden ? 0 : (size_t)HV * lc->dv * lc->dk;

    /* requests: ragged lengths, random distinct slots, one padded row */
    x->nreq = lc->b + lc->pad;
    x->max_reqs = lc->b + 3;
    /* caller-owned state: slots of an engine pool larger than the running requests */
    int64_t perm[2 * LF_MAXR + 8];
    x->cslots = lc->caller ? 2 * x->max_reqs : x->max_reqs;
    for (int i = 0; i < x->cslots; i++) perm[i] = i;
    hrng_shuffle(&x->rng, perm, (size_t)x->cslots);
    int maxlen = 1;
    for (int i = 0; i < x->nreq; i++) {
        int pre = lc->prefix, nn = lc->q;
        const int pmin = lc->fwd == FWD_EXTEND ? 0 : 1;
        if (lc->ragged && lc->b > 1 && i < lc->b) {
            if (i == 0) { pre = pmin; nn = 1; }
            else if (i < lc->b - 1) {
                pre = (int)hrng_range(&x->rng, pmin, lc->prefix);
                nn = (int)hrng_range(&x->rng, 1, lc->q);
            }
        }
        if (lc->fwd != FWD_EXTEND) nn = lc->fwd == FWD_DECODE ? 1 : lc->q;
        if (i == lc->b) { pre = lc->prefix; nn = lc->fwd == FWD_EXTEND ? 2 : nn; } /* the padded row */
        x->slot[i] = i == lc->b ? -1 : (int)perm[i];
        x->done[i] = 0;
        x->rconv[i] = calloc(x->conv_n + 1, sizeof(double));
        x->rssm[i] = calloc(x->ssm_n + 1, sizeof(double));
        x->sconv[i] = calloc((size_t)(lc->q + 1) * x->conv_n + 1, sizeof(double));
        x->sssm[i] = calloc((size_t)(lc->q + 1) * x->ssm_n + 1, sizeof(double));
        if (!x->rconv[i] || !x->rssm[i] || !x->sconv[i] || !x->sssm[i]) {
            hresult_error(r, "out of memory for the reference states");
            ctx_free(x);
            return NULL;
        }
        x->nnew[i] = nn;
        x->done[i] = pre; /* for now: the prefix to run */
        if (pre + nn + 2 > maxlen) maxlen = pre + nn + 2;
    }
    x->max_ctx = maxlen;

    sgl_attn_model m;
    sgl_attn_model_init(&m);
    snprintf(m.name, sizeof m.name, "harness %s", k->family.name);
    snprintf(m.model_type, sizeof m.model_type, "harness_%s", k->family.name);
    m.num_layers = 2;
    m.num_q_heads = m.num_kv_heads = 4;
    m.head_dim_qk = m.head_dim_v = 64;
    m.dtype = m.kv_dtype = hdtype_bit(lc->dt);
    m.hybrid_kind = (uint32_t)k->kind;
    memset(m.full_attention_mask, 0, sizeof m.full_attention_mask);
    m.full_attention_mask[0] = 2; /* layer 1 full, layer 0 linear */
    m.lin_num_k_heads = HK;
    m.lin_num_v_heads = HV;
    m.lin_head_k_dim = lc->dk;
    m.lin_head_v_dim = lc->dv;
    m.lin_conv_kernel = lc->conv;
    m.lin_hidden = lc->hidden;
    m.lin_state_dtype = hdtype_bit(lc->sdt);
    m.spec_tokens = lc->fwd == FWD_VERIFY ? lc->q : 0;
    int T1 = 0, T2 = 0;
    for (int i = 0; i < x->nreq; i++) { T1 += x->done[i]; T2 += x->nnew[i]; }
    sgl_attn_create_options o = {sizeof o, x->max_reqs, T1 > T2 ? T1 : T2, x->max_ctx};
    if (htarget_create(t, &m, &o, &x->be, r) != SGL_ATTN_OK) { ctx_free(x); return NULL; }
    if (make_params(x, r)) { ctx_free(x); return NULL; }
    if (lc->caller && caller_state_open(x, r)) { ctx_free(x); return NULL; }

    /* the prefix, through the plugin: later calls continue its state */
    int pre[LF_MAXR];
    for (int i = 0; i < x->nreq; i++) { pre[i] = x->done[i]; x->done[i] = 0; }
    if (T1 > 0) {
        lphase p;
        int rc = phase_build(x, &p, FWD_EXTEND, pre, 0, r) || phase_check(x, &p, "extend of the prefix", r);
        phase_free(&p);
        if (rc) { ctx_free(x); return NULL; }
    }
    for (int i = 0; i < x->nreq; i++) x->done[i] = pre[i]; /* the padded row counts its prefix too */
    return x;
}

/* state_commit of the wrapper at the top of the stack, when its vtable has it */
static int commit(lctx *x, lphase *p, hresult *r) {
    const sgl_attn_backend_ops *ops = x->be->ops;
    if (x->be->ops_size < offsetof(sgl_attn_backend_ops, state_commit) + sizeof ops->state_commit ||
        !ops->state_commit) {
        hresult_fail(r, "verify: the stack has no state_commit");
        return -1;
    }
    htensor acc;
    if (alloc_t(x, &acc, "accepted_steps", HDT_I32, 1, p->bs, 0, 0, r)) return -1;
    int steps[LF_MAXR];
    for (int i = 0; i < p->bs; i++) {
        const int q = p->req[i];
        /* the first request keeps its old state (-1); the others accept a random step */
        steps[i] = x->slot[q] < 0 || i == 0 ? -1 : (int)hrng_range(&x->rng, 0, p->n[i] - 1);
        htensor_set_index(&acc, i, steps[i]);
    }
    int rc = upload(&acc, r);
    if (!rc && x->lc.caller) rc = caller_commit(x, p, &acc, r);
    else if (!rc && (rc = ops->state_commit(x->be, &acc.t))) hresult_from_call(r, x->be, "state_commit", rc);
    tfree(&acc);
    if (rc) return -1;
    for (int i = 0; i < p->bs; i++) {
        const int q = p->req[i];
        if (steps[i] < 0) continue;
        memcpy(x->rconv[q], x->sconv[q] + (size_t)(1 + steps[i]) * x->conv_n, x->conv_n * sizeof(double));
        memcpy(x->rssm[q], x->sssm[q] + (size_t)(1 + steps[i]) * x->ssm_n, x->ssm_n * sizeof(double));
        x->done[q] += steps[i] + 1;
    }
    return 0;
}

/* The case's verdict: every call judged with the others (hcalls_judge). */
static void case_verdict(const lctx *x, hresult *r) {
    if (r->verdict != HV_PASS || x->calls == 0) return;
    double score = 0;
    const int w = hcalls_judge(x->call, x->calls, &score);
    r->nmse = score;
    if (score <= r->threshold) return;
    const hdtype dt = hthreshold(x->lc.dt) >= hthreshold(x->lc.sdt) ? x->lc.dt : x->lc.sdt;
    hresult_fail(r, "%s: NMSE %.3g above the %s limit %.0e (max abs error %.3g at %zu)", x->call[w].what, score,
                 hdtype_name(dt), r->threshold, x->call[w].max_abs, x->call[w].worst_at);
}

void lfam_check(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    lctx *x = ctx_open((const lfam_kind *)f, t, c, seed, r);
    if (!x) return;
    lphase p;
    if (x->lc.fwd == FWD_VERIFY) {
        int rc = phase_build(x, &p, FWD_VERIFY, x->nnew, 1, r) || phase_check(x, &p, "verify", r) || commit(x, &p, r);
        phase_free(&p);
        if (!rc) {
            int one[LF_MAXR];
            for (int i = 0; i < x->nreq; i++) one[i] = 1;
            if (!phase_build(x, &p, FWD_DECODE, one, 0, r)) phase_check(x, &p, "decode after state_commit", r);
            phase_free(&p);
        }
    } else {
        if (!phase_build(x, &p, x->lc.fwd, x->nnew, 0, r))
            phase_check(x, &p, x->lc.fwd == FWD_EXTEND ? "extend" : "decode", r);
        phase_free(&p);
    }
    case_verdict(x, r);
    if (x->lc.caller && r->verdict == HV_PASS) caller_state_check(x, r);
    ctx_free(x);
}

/* ------------------------------------------------------------ bench */

typedef struct lbench {
    lctx *x;
    lphase p;
} lbench;

static int bench_call(void *state, char *err, size_t err_size) {
    lbench *b = state;
    int rc = b->p.mode == FWD_DECODE ? sgl_attn_forward_decode(b->x->be, &b->p.args)
                                     : sgl_attn_forward_extend(b->x->be, &b->p.args);
    if (rc) snprintf(err, err_size, "%s", sgl_attn_last_error(b->x->be));
    return rc;
}

static void bench_release(void *state) {
    lbench *b = state;
    phase_free(&b->p);
    ctx_free(b->x);
    free(b);
}

/* FLOPs per call: the conv (2·W per channel and token) and the state passes,
 * each K·V multiply-adds per token and value head, as many as the row's
 * state_mads (three for the delta rule, two for decayed linear attention).  Bytes:
 * each request's state read and written once, inputs read and output
 * written once. */
int lfam_bench_prepare(const harness_family *f, const htarget *t, const hcase *c, uint64_t seed, hbench *hb,
                       hresult *r) {
    const lfam_kind *k = (const lfam_kind *)f;
    lctx *x = ctx_open(k, t, c, seed, r);
    if (!x) return -1;
    case_verdict(x, r); /* the prefix, the one call checked before timing */
    if (r->verdict != HV_PASS) { ctx_free(x); return -1; }
    if (x->lc.fwd == FWD_VERIFY) {
        hresult_error(r, "%s: bench times extend or decode cases", c->text);
        ctx_free(x);
        return -1;
    }
    lbench *b = calloc(1, sizeof *b);
    if (!b) { hresult_error(r, "out of memory"); ctx_free(x); return -1; }
    b->x = x;
    if (phase_build(x, &b->p, x->lc.fwd, x->nnew, 0, r)) { bench_release(b); return -1; }
    int rc = sgl_attn_init_forward_metadata(x->be, &b->p.batch);
    if (rc) { hresult_from_call(r, x->be, "init_forward_metadata", rc); bench_release(b); return -1; }
    const lcase *lc = &x->lc;
    const double T = b->p.T, KV = (double)lc->dk * lc->dv * lc->hv;
    double fl = T * 2.0 * (lc->conv > 0 ? lc->conv : 0) * x->ld.conv_dim;
    fl += T * 2.0 * k->state_mads * KV;
    const double esz = lc->sdt == HDT_F64 ? 8 : 4, dsz = (double)hdtype_size(lc->dt);
    int real = 0;
    for (int i = 0; i < b->p.bs; i++) real += x->slot[b->p.req[i]] >= 0;
    double in_cols = (b->p.io.x ? x->x_dim : 0) + (b->p.io.a ? x->acols : 0) + (b->p.io.b ? lc->hv : 0) +
                     (k->inputs & LF_IN_QKV ? (double)lc->hv * (2 * lc->dk + lc->dv) : 0);
    hb->state = b;
    hb->call = bench_call;
    hb->release = bench_release;
    hb->flops = fl;
    hb->bytes = real * 2.0 * (double)(x->conv_n + x->ssm_n) * esz + T * (in_cols + x->orow) * dsz;
    return 0;
}
