/* lt_scen.c - see lt_scen.h. */
#include "lt_scen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static uint32_t dt_bit(int dt) {
    return dt == LT_BF16 ? SGL_ATTN_DT_BF16 : dt == LT_F16 ? SGL_ATTN_DT_F16 : SGL_ATTN_DT_F32;
}

void lt_model(sgl_attn_model *m, int kind, const lt_shape *s, uint32_t io_dt_bit, uint32_t state_dt_bit) {
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    snprintf(m->name, sizeof m->name, "test");
    snprintf(m->model_type, sizeof m->model_type, "test_hybrid");
    m->num_layers = 4;
    m->num_q_heads = 4;
    m->num_kv_heads = 2;
    m->head_dim_qk = m->head_dim_v = 128;
    m->dtype = m->kv_dtype = io_dt_bit;
    m->sliding_window = -1;
    m->hybrid_kind = (uint32_t)kind;
    m->full_attention_mask[0] = (1u << 1) | (1u << 3);
    m->lin_num_k_heads = s->hk;
    m->lin_num_v_heads = s->hv;
    m->lin_head_k_dim = s->dk;
    m->lin_head_v_dim = s->dv;
    m->lin_conv_kernel = s->conv_w;
    m->lin_hidden = s->hidden;
    m->lin_state_dtype = state_dt_bit;
    m->spec_tokens = LT_STEPS;
}

static double *zalloc(size_t n) {
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(2);
    }
    return p;
}

int lt_max_tokens = 512, lt_slow_decay = 0, lt_weight_dt = LT_F32;
int lt_caller_mode = 0, lt_rec_mode = 0;
size_t lt_rec_ndiff = 0;

/* the recorded outputs (lt_rec_mode 1) and the read position (2) */
static double *rec_buf;
static size_t rec_n, rec_cap, rec_at;

void lt_rec_rewind(void) { rec_at = 0; }

void lt_rec_reset(void) {
    free(rec_buf);
    rec_buf = NULL;
    rec_n = rec_cap = rec_at = 0;
}

static void rec_outputs(lt_scen *s, const double *got, size_t n) {
    if (lt_rec_mode == 1) {
        if (rec_n + n > rec_cap) {
            rec_cap = (rec_n + n) * 2;
            rec_buf = realloc(rec_buf, rec_cap * sizeof *rec_buf);
            if (!rec_buf) {
                fprintf(stderr, "FATAL: out of host memory\n");
                exit(2);
            }
        }
        memcpy(rec_buf + rec_n, got, n * sizeof *got);
        rec_n += n;
    } else if (lt_rec_mode == 2) {
        size_t bad = n;
        if (rec_at + n <= rec_n)
            for (size_t e = 0; e < n && bad == n; e++)
                if (memcmp(&got[e], &rec_buf[rec_at + e], sizeof *got) != 0) bad = e;
        LT_CHECK(rec_at + n <= rec_n && bad == n, "%s: output %zu differs from the recorded run's (%g vs %g)", s->label,
                 rec_at + (bad < n ? bad : 0), bad < n ? got[bad] : 0.0,
                 bad < n && rec_at + bad < rec_n ? rec_buf[rec_at + bad] : 0.0);
        rec_at += n;
    } else if (lt_rec_mode == 3) {
        LT_CHECK(rec_at + n <= rec_n, "%s: %zu outputs past the recorded run's %zu", s->label, rec_at + n, rec_n);
        for (size_t e = 0; e < n && rec_at + e < rec_n; e++)
            lt_rec_ndiff += memcmp(&got[e], &rec_buf[rec_at + e], sizeof *got) != 0;
        rec_at += n;
    }
}

int scen_cslot(const lt_scen *s, int k) { return k < 0 ? -1 : s->caller == 2 ? LT_CSLOTS - 1 - k : k; }

void scen_state_io(lt_scen *s, int l, sgl_attn_linear_io *io) {
    memset(io, 0, sizeof *io);
    io->struct_size = sizeof *io;
    io->kind = s->kind;
    io->conv_state = s->conv_n ? &s->cst[l].t : NULL;
    io->ssm_state = s->ssm_n ? &s->sst[l].t : NULL;
    io->intermediate_conv_state = s->conv_n ? &s->icst[l].t : NULL;
    io->intermediate_ssm_state = s->ssm_n ? &s->isst5[l] : NULL;
}

/* the caller's tensors of each own layer, poisoned: a request without a prefix must not read them */
static void caller_open(lt_scen *s, uint32_t state_dt_bit) {
    const int dt = state_dt_bit == SGL_ATTN_DT_BF16 ? LT_BF16 : LT_F32;
    const int64_t S = LT_CSLOTS, C = s->rd.conv_dim, H = s->rd.conv_w - 1;
    for (int l = 0; l < LT_OWN; l++) {
        if (s->conv_n) {
            lt_make(&s->cst[l], dt, 3, (int64_t[]){S, C, H}, 0);
            lt_make(&s->icst[l], dt, 4, (int64_t[]){S, LT_STEPS, C, H}, 0);
            lt_poison(&s->cst[l]);
            lt_poison(&s->icst[l]);
        }
        if (s->ssm_n) {
            lt_make(&s->sst[l], dt, 4, (int64_t[]){S, s->rd.hv, s->rd.dv, s->rd.dk}, 0);
            lt_make(&s->isst[l], dt, 4, (int64_t[]){S, LT_STEPS, s->rd.hv, (int64_t)s->rd.dv * s->rd.dk}, 0);
            lt_poison(&s->sst[l]);
            lt_poison(&s->isst[l]);
            s->isst5[l] = s->isst[l].t;
            const int64_t s5[5] = {S, LT_STEPS, s->rd.hv, s->rd.dv, s->rd.dk};
            memcpy(s->isst5_shape[l], s5, sizeof s5);
            s->isst5[l].ndim = 5;
            s->isst5[l].shape = s->isst5_shape[l];
            s->isst5[l].strides = NULL;
        }
    }
}

int scen_open(lt_scen *s, const sgl_attn_plugin *pl, int kind, const lt_shape *sh, int io_dt, uint32_t state_dt_bit,
              double tol, uint64_t seed, const char *label) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->io_dt = io_dt;
    s->tol = tol;
    s->plugin = pl;
    s->l2norm = 1;
    s->x_sigma = 1.0;
    s->r.s = seed | 1;
    snprintf(s->label, sizeof s->label, "%s", label);
    lt_model(&s->m, kind, sh, dt_bit(io_dt), state_dt_bit);
    lt_inner_init(&s->inner);
    sgl_attn_caps caps;
    lt_inner_caps(&caps);
    char err[512] = "";
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &s->m;
    a.device = 0;
    a.max_reqs = LT_SLOTS;
    a.max_tokens = lt_max_tokens;
    a.max_context = 1024;
    a.inner = &s->inner.base;
    a.inner_caps = &caps;
    a.host = lt_host_api(); /* the create line: lt_create_log */
    a.error = err;
    a.error_size = sizeof err;
    int rc = pl->create(&a, &s->b);
    if (rc || !s->b) {
        lt_note("%s: create failed (%d): %s", label, rc, err);
        return -1;
    }
    /* dims as the reference sees them */
    const int conv = kind != SGL_ATTN_HYBRID_LIGHTNING;
    s->rd.kind = kind;
    s->rd.hk = kind == SGL_ATTN_HYBRID_LIGHTNING ? sh->hv : sh->hk;
    s->rd.hv = sh->hv;
    s->rd.dk = sh->dk;
    s->rd.dv = kind == SGL_ATTN_HYBRID_LIGHTNING && !sh->dv ? sh->dk : sh->dv;
    s->rd.conv_w = conv ? sh->conv_w : 0;
    s->rd.conv_dim = kind == SGL_ATTN_HYBRID_SHORT_CONV ? sh->hidden : conv ? 2 * sh->hk * sh->dk + sh->hv * sh->dv : 0;
    s->x_dim = kind == SGL_ATTN_HYBRID_SHORT_CONV ? 3 * s->rd.conv_dim : s->rd.conv_dim;
    s->conv_n = conv && s->rd.conv_w > 1 ? (size_t)s->rd.conv_dim * (s->rd.conv_w - 1) : 0;
    s->ssm_n = kind == SGL_ATTN_HYBRID_SHORT_CONV ? 0 : (size_t)s->rd.hv * s->rd.dv * s->rd.dk;
    for (int l = 0; l < LT_OWN; l++)
        for (int k = 0; k < LT_SLOTS; k++) {
            s->conv[l][k] = zalloc(s->conv_n);
            s->ssm[l][k] = zalloc(s->ssm_n);
            s->iconv[l][k] = zalloc(s->conv_n * LT_STEPS);
            s->issm[l][k] = zalloc(s->ssm_n * LT_STEPS);
        }
    /* weights, per own layer, float32 (what a model passes them as; the conv's in lt_weight_dt) */
    for (int l = 0; l < LT_OWN; l++) {
        lt_layer *w = &s->lw[l];
        const int64_t C = s->rd.conv_dim, W = s->rd.conv_w, HV = sh->hv, HK = (int64_t)sh->dk * HV;
        if (conv) {
            lt_make(&w->conv_w, lt_weight_dt, 2, (int64_t[]){C, W}, 0);
            lt_fill_normal(&w->conv_w, &s->r, 0.5);
            lt_make(&w->conv_b, lt_weight_dt, 1, (int64_t[]){C}, 0);
            lt_fill_normal(&w->conv_b, &s->r, 0.2);
        }
        lt_make(&w->A_log, LT_F32, 1, (int64_t[]){HV}, 0);
        lt_fill_uniform(&w->A_log, &s->r, lt_slow_decay > 0 ? -7.0 : lt_slow_decay < 0 ? 0.5 : -1.5,
                        lt_slow_decay > 0 ? -5.0 : lt_slow_decay < 0 ? 1.5 : 0.5);
        lt_make(&w->dt_bias, LT_F32, 1, (int64_t[]){kind == SGL_ATTN_HYBRID_KDA ? HK : HV}, 0);
        lt_fill_normal(&w->dt_bias, &s->r, 0.5);
        lt_make(&w->D, LT_F32, 1, (int64_t[]){HV}, 0);
        lt_fill_normal(&w->D, &s->r, 1.0);
        lt_make(&w->decay, LT_F32, 1, (int64_t[]){HV}, 0);
        lt_fill_uniform(&w->decay, &s->r, lt_slow_decay > 0 ? 0.001 : 0.05, lt_slow_decay > 0 ? 0.01 : 0.8);
    }
    cudaStream_t st = NULL;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
        lt_note("%s: cudaStreamCreate failed", label);
        return -1;
    }
    s->stream = st;
    s->caller = lt_caller_mode;
    if (s->caller) caller_open(s, state_dt_bit);
    return 0;
}

void scen_close(lt_scen *s) {
    if (s->b) s->b->ops->destroy(s->b);
    s->b = NULL;
    for (int l = 0; l < LT_OWN; l++) {
        lt_layer *w = &s->lw[l];
        lt_tensor *ts[] = {&w->conv_w, &w->conv_b, &w->A_log, &w->dt_bias, &w->D, &w->decay};
        for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
            if (ts[i]->ref) lt_free(ts[i]);
        lt_tensor *cs[] = {&s->cst[l], &s->sst[l], &s->icst[l], &s->isst[l]};
        for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
            if (cs[i]->ref) lt_free(cs[i]);
        for (int k = 0; k < LT_SLOTS; k++) {
            free(s->conv[l][k]);
            free(s->ssm[l][k]);
            free(s->iconv[l][k]);
            free(s->issm[l][k]);
        }
    }
    if (s->stream) cudaStreamDestroy((cudaStream_t)s->stream);
    s->stream = NULL;
}

void lt_index_tensor(lt_tensor *t, int n, const int *v, int on_host) {
    lt_make(t, LT_I32, 1, (int64_t[]){n > 0 ? n : 1}, on_host);
    for (int i = 0; i < n; i++) lt_set(t, (size_t)i, v[i]);
    lt_upload(t);
}

void lt_io_make(lt_scen *s, int l, int T, int keep, const sgl_attn_batch *bt, lt_io *o) {
    const int kind = s->kind, HV = s->rd.hv, K = s->rd.dk, V = s->rd.dv;
    const int light = kind == SGL_ATTN_HYBRID_LIGHTNING, sc = kind == SGL_ATTN_HYBRID_SHORT_CONV;
    lt_layer *w = &s->lw[l];
    memset(o, 0, sizeof *o);
    if (!light) {
        lt_make(&o->x, s->io_dt, 2, (int64_t[]){T, s->x_dim}, 0);
        lt_fill_normal(&o->x, &s->r, s->x_sigma);
    }
    if (!sc && !light) {
        lt_make(&o->a, s->io_dt, 2, (int64_t[]){T, kind == SGL_ATTN_HYBRID_KDA ? (int64_t)HV * K : HV}, 0);
        lt_fill_normal(&o->a, &s->r, 1.0);
        lt_make(&o->b, s->io_dt, 2, (int64_t[]){T, HV}, 0);
        lt_fill_normal(&o->b, &s->r, 1.0);
    }
    if (light) {
        lt_make(&o->q, s->io_dt, 3, (int64_t[]){T, HV, K}, 0);
        lt_fill_normal(&o->q, &s->r, 0.2);
        lt_make(&o->k, s->io_dt, 3, (int64_t[]){T, HV, K}, 0);
        lt_fill_normal(&o->k, &s->r, 0.2);
        lt_make(&o->v, s->io_dt, 3, (int64_t[]){T, HV, V}, 0);
        lt_fill_normal(&o->v, &s->r, 1.0);
    }
    if (sc) lt_make(&o->out, s->io_dt, 2, (int64_t[]){T, s->rd.conv_dim}, 0);
    else lt_make(&o->out, s->io_dt, 3, (int64_t[]){T, HV, V}, 0);
    lt_poison(&o->out);
    sgl_attn_linear_io *io = &o->io;
    io->struct_size = sizeof *io;
    io->kind = kind;
    io->x = light ? NULL : &o->x.t;
    io->a = (!sc && !light) ? &o->a.t : NULL;
    io->b = (kind == SGL_ATTN_HYBRID_GDN || kind == SGL_ATTN_HYBRID_KDA) ? &o->b.t : NULL;
    io->conv_weight = light ? NULL : &w->conv_w.t;
    io->conv_bias = light ? NULL : &w->conv_b.t;
    io->A_log = (!sc && !light) ? &w->A_log.t : NULL;
    io->dt_bias = (!sc && !light) ? &w->dt_bias.t : NULL;
    io->D = kind == SGL_ATTN_HYBRID_MAMBA2 ? &w->D.t : NULL;
    io->decay = light ? &w->decay.t : NULL;
    io->out = &o->out.t;
    io->keep_intermediate = keep;
    io->use_qk_l2norm = s->l2norm;
    if (s->caller) {
        sgl_attn_linear_io st;
        scen_state_io(s, l, &st);
        io->conv_state = st.conv_state;
        io->ssm_state = st.ssm_state;
        io->intermediate_conv_state = keep ? st.intermediate_conv_state : NULL;
        io->intermediate_ssm_state = keep ? st.intermediate_ssm_state : NULL;
        if (s->caller == 2) {
            int m[LT_SLOTS];
            for (int i = 0; i < s->cur_bs; i++) m[i] = scen_cslot(s, s->cur_slots[i]);
            lt_index_tensor(&o->csi, s->cur_bs, m, 0);
            io->state_indices = &o->csi.t;
        }
    }
    o->layer.struct_size = sizeof o->layer;
    o->layer.layer_id = 2 * l;
    o->layer.sliding_window = -1;
    o->fa.struct_size = sizeof o->fa;
    o->fa.layer = &o->layer;
    o->fa.batch = bt;
    o->fa.q = light ? &o->q.t : NULL;
    o->fa.k = light ? &o->k.t : NULL;
    o->fa.v = light ? &o->v.t : NULL;
    o->fa.out = &o->out.t;
    o->fa.linear = io;
}

void lt_io_free(lt_io *o) {
    lt_tensor *ts[] = {&o->x, &o->a, &o->b, &o->q, &o->k, &o->v, &o->out, &o->csi};
    for (size_t e = 0; e < sizeof ts / sizeof *ts; e++)
        if (ts[e]->ref) lt_free(ts[e]);
}

void lt_io_check(lt_scen *s, int l, lt_io *o, int mode, int bs, const int *slots, const int *n, const int *prefix,
                 int keep, int T) {
    const int kind = s->kind, HV = s->rd.hv, K = s->rd.dk, V = s->rd.dv;
    const int light = kind == SGL_ATTN_HYBRID_LIGHTNING, sc = kind == SGL_ATTN_HYBRID_SHORT_CONV;
    lt_layer *w = &s->lw[l];
    const size_t orow = sc ? (size_t)s->rd.conv_dim : (size_t)HV * V;
    double *want = zalloc((size_t)T * orow);
    int tok = 0;
    for (int i = 0; i < bs; i++) {
        const int ni = n[i], sl = slots[i];
        if (sl >= 0 && ni > 0) {
            double *cs = s->conv[l][sl], *ss = s->ssm[l][sl];
            double *ck = NULL, *sk = NULL;
            if (mode == SGL_ATTN_MODE_EXTEND && prefix[i] == 0) { /* no prefix: zero state, whatever the pool holds */
                memset(cs, 0, s->conv_n * sizeof(double));
                memset(ss, 0, s->ssm_n * sizeof(double));
            }
            if (keep) { /* work on copies; the steps go to the verify copies */
                ck = zalloc(s->conv_n);
                sk = zalloc(s->ssm_n);
                memcpy(ck, cs, s->conv_n * sizeof(double));
                memcpy(sk, ss, s->ssm_n * sizeof(double));
                cs = ck;
                ss = sk;
            }
            lref_in in;
            memset(&in, 0, sizeof in);
            in.x = light ? NULL : o->x.ref + (size_t)tok * s->x_dim;
            in.a = (!sc && !light) ? o->a.ref + (size_t)tok * o->a.shape[1] : NULL;
            in.b = o->b.ref ? o->b.ref + (size_t)tok * HV : NULL;
            in.q = light ? o->q.ref + (size_t)tok * HV * K : NULL;
            in.k = light ? o->k.ref + (size_t)tok * HV * K : NULL;
            in.v = light ? o->v.ref + (size_t)tok * HV * V : NULL;
            in.conv_weight = light ? NULL : w->conv_w.ref;
            in.conv_bias = light ? NULL : w->conv_b.ref;
            in.A_log = w->A_log.ref;
            in.dt_bias = w->dt_bias.ref;
            in.D = w->D.ref;
            in.decay = w->decay.ref;
            in.use_qk_l2norm = s->l2norm;
            lref_run(&s->rd, ni, &in, cs, ss, want + (size_t)tok * orow, keep ? s->iconv[l][sl] : NULL,
                     keep ? s->issm[l][sl] : NULL);
            free(ck);
            free(sk);
        }
        tok += ni;
    }
    for (size_t e = 0; e < (size_t)T * orow; e++) want[e] = lt_round(s->io_dt, want[e]);
    const double nm = lt_nmse(&o->out, want);
    if (nm > s->worst || nm != nm) s->worst = nm;
    LT_CHECK(nm == nm && nm <= s->tol, "%s layer %d mode %d bs %d: NMSE %.3g (limit %.1g)", s->label, 2 * l, mode, bs,
             nm, s->tol);
    double *got = zalloc(o->out.n); /* padded requests: exact zeros */
    lt_download(&o->out, got);
    rec_outputs(s, got, o->out.n);
    for (int i = 0; i < bs; i++)
        if (slots[i] >= 0 && n[i] > 0 && !keep) s->live[slots[i]] = 1;
    tok = 0;
    for (int i = 0; i < bs; i++) {
        if (slots[i] < 0)
            for (size_t e = (size_t)tok * orow; e < (size_t)(tok + n[i]) * orow; e++)
                if (got[e] != 0.0) {
                    LT_CHECK(got[e] == 0.0, "%s: padded request %d output[%zu] = %g", s->label, i, e, got[e]);
                    break;
                }
        tok += n[i];
    }
    free(got);
    free(want);
}

/* one own layer of one batch, and its reference */
static void own_layer(lt_scen *s, int l, const sgl_attn_batch *bt, int mode, int bs, const int *slots, const int *n,
                      const int *prefix, int keep, int T) {
    lt_io o;
    lt_io_make(s, l, T, keep, bt, &o);
    int rc = mode == SGL_ATTN_MODE_EXTEND ? s->b->ops->forward_extend(s->b, &o.fa)
                                          : s->b->ops->forward_decode(s->b, &o.fa);
    LT_CHECK(rc == SGL_ATTN_OK, "%s layer %d: forward returned %d: %s", s->label, 2 * l, rc,
             s->b->ops->last_error(s->b));
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)s->stream);
    LT_CHECK(e == cudaSuccess, "%s layer %d: the stream failed: %s", s->label, 2 * l, cudaGetErrorString(e));
    lt_io_check(s, l, &o, mode, bs, slots, n, prefix, keep, T);
    lt_io_free(&o);
}

void scen_batch(lt_scen *s, int mode, int bs, const int *slots, const int *n, const int *prefix, int keep) {
    int T = 0, pre[LT_SLOTS] = {0}, seq[LT_SLOTS] = {0};
    for (int i = 0; i < bs; i++) {
        T += n[i];
        pre[i] = mode == SGL_ATTN_MODE_EXTEND ? prefix[i] : 0;
        seq[i] = pre[i] + n[i];
    }
    lt_tensor si, el, ep, sl;
    lt_index_tensor(&si, bs, slots, 0);
    lt_index_tensor(&el, bs, n, 0);
    lt_index_tensor(&ep, bs, pre, 0);
    lt_index_tensor(&sl, bs, seq, 0);
    lt_tensor elh, eph, slh; /* the host mirrors */
    lt_index_tensor(&elh, bs, n, 1);
    lt_index_tensor(&eph, bs, pre, 1);
    lt_index_tensor(&slh, bs, seq, 1);
    sgl_attn_batch bt;
    lt_batch_init(&bt, mode, bs, T, mode == SGL_ATTN_MODE_EXTEND ? 1 : (bs ? n[0] : 1), &si, s->stream);
    bt.seq_lens = &sl.t;
    bt.seq_lens_cpu = &slh.t;
    if (mode == SGL_ATTN_MODE_EXTEND) {
        bt.extend_seq_lens = &el.t;
        bt.extend_prefix_lens = &ep.t;
        bt.extend_seq_lens_cpu = &elh.t;
        bt.extend_prefix_lens_cpu = &eph.t;
    }
    s->cur_bs = bs;
    memcpy(s->cur_slots, slots, (size_t)bs * sizeof *slots);
    int rc = s->b->ops->init_forward_metadata(s->b, &bt);
    LT_CHECK(rc == SGL_ATTN_OK, "%s: init_forward_metadata returned %d: %s", s->label, rc, s->b->ops->last_error(s->b));
    if (rc == SGL_ATTN_OK) {
        for (int l = 0; l < LT_OWN; l++) own_layer(s, l, &bt, mode, bs, slots, n, prefix, keep, T);
        /* a full-attention layer goes to the inner untouched */
        sgl_attn_layer layer;
        memset(&layer, 0, sizeof layer);
        layer.struct_size = sizeof layer;
        layer.layer_id = 1;
        sgl_attn_forward_args fa;
        memset(&fa, 0, sizeof fa);
        fa.struct_size = sizeof fa;
        fa.layer = &layer;
        fa.batch = &bt;
        const int before = s->inner.n_extend + s->inner.n_decode;
        rc = mode == SGL_ATTN_MODE_EXTEND ? s->b->ops->forward_extend(s->b, &fa) : s->b->ops->forward_decode(s->b, &fa);
        LT_CHECK(rc == SGL_ATTN_OK && s->inner.n_extend + s->inner.n_decode == before + 1 && s->inner.last_layer == 1,
                 "%s: full-attention layer 1 did not reach the inner (rc %d)", s->label, rc);
    }
    if (mode == SGL_ATTN_MODE_TARGET_VERIFY) {
        s->verify_bs = bs;
        memcpy(s->verify_slots, slots, (size_t)bs * sizeof(int));
    }
    lt_tensor *ts[] = {&si, &el, &ep, &sl, &elh, &eph, &slh};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) lt_free(ts[i]);
}

void scen_commit(lt_scen *s, const int *accepted) {
    if (s->caller) {
        scen_state_batch(s, SGL_ATTN_STATE_COMMIT, s->verify_bs, s->verify_slots, NULL, accepted, 0);
        return;
    }
    lt_tensor acc;
    lt_index_tensor(&acc, s->verify_bs, accepted, 0);
    int rc = s->b->ops->state_commit(s->b, &acc.t);
    LT_CHECK(rc == SGL_ATTN_OK, "%s: state_commit returned %d: %s", s->label, rc, s->b->ops->last_error(s->b));
    for (int i = 0; i < s->verify_bs; i++) {
        const int sl = s->verify_slots[i], st = accepted[i];
        if (sl < 0 || st < 0) continue;
        for (int l = 0; l < LT_OWN; l++) {
            memcpy(s->conv[l][sl], s->iconv[l][sl] + (size_t)st * s->conv_n, s->conv_n * sizeof(double));
            memcpy(s->ssm[l][sl], s->issm[l][sl] + (size_t)st * s->ssm_n, s->ssm_n * sizeof(double));
        }
    }
    lt_free(&acc);
}

void scen_copy(lt_scen *s, int src, int dst) {
    if (s->caller) {
        scen_state_batch(s, SGL_ATTN_STATE_COPY, 1, &dst, &src, NULL, 0);
        return;
    }
    int rc = s->b->ops->state_copy(s->b, src, dst);
    LT_CHECK(rc == SGL_ATTN_OK, "%s: state_copy returned %d: %s", s->label, rc, s->b->ops->last_error(s->b));
    for (int l = 0; l < LT_OWN; l++) {
        memcpy(s->conv[l][dst], s->conv[l][src], s->conv_n * sizeof(double));
        memcpy(s->ssm[l][dst], s->ssm[l][src], s->ssm_n * sizeof(double));
    }
}

void scen_clear(lt_scen *s, int slot) {
    if (s->caller) {
        scen_state_batch(s, SGL_ATTN_STATE_CLEAR, 1, &slot, NULL, NULL, 1);
        return;
    }
    int rc = s->b->ops->state_clear(s->b, slot);
    LT_CHECK(rc == SGL_ATTN_OK, "%s: state_clear returned %d: %s", s->label, rc, s->b->ops->last_error(s->b));
    for (int l = 0; l < LT_OWN; l++) {
        memset(s->conv[l][slot], 0, s->conv_n * sizeof(double));
        memset(s->ssm[l][slot], 0, s->ssm_n * sizeof(double));
    }
}

void lt_batch_init(sgl_attn_batch *bt, int mode, int bs, int T, int tpr, lt_tensor *si, void *stream) {
    memset(bt, 0, sizeof *bt);
    bt->struct_size = sizeof *bt;
    bt->forward_mode = mode;
    bt->batch_size = bs;
    bt->num_tokens = T;
    bt->page_size = 1;
    bt->tokens_per_req = tpr;
    bt->state_indices = si ? &si->t : NULL;
    bt->stream = stream;
}

void lt_graph_args_init(sgl_attn_graph_args *g, const sgl_attn_batch *bt) {
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
    g->batch_size = bt->batch_size;
    g->num_tokens = bt->num_tokens;
    g->forward_mode = bt->forward_mode;
    g->batch = bt;
}

void lt_state_args(sgl_attn_state_batch_args *a, int op, int count, lt_tensor *dst, lt_tensor *src, lt_tensor *steps,
                   sgl_attn_linear_io *state, void *stream) {
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->op = op;
    a->count = count;
    a->dst = &dst->t;
    a->src = src ? &src->t : NULL;
    a->steps = steps ? &steps->t : NULL;
    a->state = state;
    a->stream = stream;
}

void scen_state_batch(lt_scen *s, int op, int n, const int *dst, const int *src, const int *steps, int on_host) {
    int md[LT_SLOTS], ms[LT_SLOTS];
    for (int i = 0; i < n; i++) {
        md[i] = scen_cslot(s, dst[i]);
        ms[i] = src ? scen_cslot(s, src[i]) : -1;
    }
    lt_tensor td, ts, tt;
    memset(&ts, 0, sizeof ts);
    memset(&tt, 0, sizeof tt);
    lt_index_tensor(&td, n, md, on_host);
    if (src) lt_index_tensor(&ts, n, ms, on_host);
    if (steps) lt_index_tensor(&tt, n, steps, on_host);
    sgl_attn_state_batch_args a;
    lt_state_args(&a, op, n, &td, src ? &ts : NULL, steps ? &tt : NULL, NULL, s->stream);
    for (int l = 0; l < (s->caller ? LT_OWN : 1); l++) {
        sgl_attn_linear_io io;
        if (s->caller) {
            scen_state_io(s, l, &io);
            a.state = &io;
        }
        const int rc = s->b->ops->state_batch(s->b, &a);
        LT_CHECK(rc == SGL_ATTN_OK, "%s: state_batch op %d layer %d returned %d: %s", s->label, op, l, rc,
                 s->b->ops->last_error(s->b));
    }
    LT_CHECK(cudaStreamSynchronize((cudaStream_t)s->stream) == cudaSuccess, "%s: state_batch's stream", s->label);
    /* the reference: no entry reads what another writes (the batch's rules) */
    for (int i = 0; i < n; i++) {
        const int d = dst[i], sr = src ? src[i] : -1, t = steps ? steps[i] : -1;
        if (d < 0 || (steps && t < 0)) continue;
        for (int l = 0; l < LT_OWN; l++) {
            double *mc = s->conv[l][d], *ms2 = s->ssm[l][d];
            const size_t cb = s->conv_n * sizeof(double), sb = s->ssm_n * sizeof(double);
            switch (op) {
            case SGL_ATTN_STATE_CLEAR: memset(mc, 0, cb), memset(ms2, 0, sb); break;
            case SGL_ATTN_STATE_COPY:
                if (sr != d) memcpy(mc, s->conv[l][sr], cb), memcpy(ms2, s->ssm[l][sr], sb);
                break;
            case SGL_ATTN_STATE_COMMIT:
                memcpy(mc, s->iconv[l][d] + (size_t)t * s->conv_n, cb);
                memcpy(ms2, s->issm[l][d] + (size_t)t * s->ssm_n, sb);
                break;
            default: /* track */
                memcpy(mc, s->iconv[l][sr] + (size_t)t * s->conv_n, cb);
                memcpy(ms2, s->issm[l][sr] + (size_t)t * s->ssm_n, sb);
                break;
            }
        }
        s->live[d] = op == SGL_ATTN_STATE_COPY ? s->live[sr] : 1;
    }
    lt_free(&td);
    if (src) lt_free(&ts);
    if (steps) lt_free(&tt);
}

void scen_check_caller_state(lt_scen *s) {
    if (!s->caller) return;
    for (int l = 0; l < LT_OWN; l++) {
        lt_tensor *parts[2] = {s->conv_n ? &s->cst[l] : NULL, s->ssm_n ? &s->sst[l] : NULL};
        for (int k = 0; k < 2; k++) {
            if (!parts[k]) continue;
            const size_t per = k ? s->ssm_n : s->conv_n;
            double *got = zalloc(parts[k]->n);
            lt_download(parts[k], got);
            double num = 0, den = 0;
            for (int sl = 0; sl < LT_SLOTS; sl++) {
                if (!s->live[sl]) continue;
                const double *want = k ? s->ssm[l][sl] : s->conv[l][sl];
                const double *g = got + (size_t)scen_cslot(s, sl) * per;
                for (size_t e = 0; e < per; e++) {
                    const double w = lt_round(parts[k]->dt, want[e]);
                    num += (g[e] - w) * (g[e] - w);
                    den += w * w;
                }
            }
            const double nm = den > 0 ? num / den : num;
            LT_CHECK(nm == nm && nm <= s->tol, "%s: caller-owned %s of layer %d: NMSE %.3g against the reference's "
                     "state (limit %.1g)", s->label, k ? "ssm_state" : "conv_state", 2 * l, nm, s->tol);
            if (nm > s->worst || nm != nm) s->worst = nm;
            free(got);
        }
    }
}
