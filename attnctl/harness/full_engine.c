/* full_engine.c - the ABI 1.2 engine inputs of a full-attention case
 * (docs/harness.md, "Engine inputs"): a tree mask for verify, draft extend,
 * the bidirectional and encoder-only attention types, cross layers that save
 * the encoder's K/V at encoder_out_cache_loc, a page table in place of
 * req_to_token, and a slot map onto a layer pool of its own.  Their
 * reference is the float64 loop here, written from the header's contract
 * (not cpu_ref's f64 path, which serves the same inputs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

int fa_case_engine(const fa_case *f) { return f->tree || f->draft || f->attn || f->encsave || f->ptable || f->smap; }

int fa_engine_parse(const hcase *c, fa_case *f, char *err, size_t err_size) {
    HCASE_INT("tree", 0, 0, 2, f->tree);
    HCASE_INT("draft", 0, 0, 1, f->draft);
    HCASE_INT("attn", 0, 0, 2, f->attn);
    HCASE_INT("encsave", 0, 0, 1, f->encsave);
    HCASE_INT("ptable", 0, 0, 1, f->ptable);
    HCASE_INT("smap", 0, 0, 1, f->smap);
    if (f->tree && f->mode != SGL_ATTN_MODE_TARGET_VERIFY) return hcase_bad(c, err, err_size, "tree=1/2 is a verify key");
    if (f->tree && f->q > 64) return hcase_bad(c, err, err_size, "tree=1/2 takes q <= 64 draft tokens");
    if (f->tree && f->window >= 0) return hcase_bad(c, err, err_size, "tree=1/2 takes no window");
    if (f->draft && f->mode != SGL_ATTN_MODE_EXTEND) return hcase_bad(c, err, err_size, "draft=1 is an extend key");
    if (f->attn && (f->cross || f->window >= 0 || f->mode == SGL_ATTN_MODE_TARGET_VERIFY))
        return hcase_bad(c, err, err_size, "attn=1/2 takes no cross, window or verify");
    if (f->attn == 2 && f->mla) return hcase_bad(c, err, err_size, "attn=2 (encoder-only) takes separate k and v (no mla)");
    if (f->encsave && !f->cross) return hcase_bad(c, err, err_size, "encsave=1 is a cross-attention key");
    if (f->encsave && f->mla) return hcase_bad(c, err, err_size, "encsave=1 takes no mla");
    return 0;
}

uint32_t fa_engine_needs(const fa_case *f) {
    uint32_t n = 0;
    if (f->tree) n |= SGL_ATTN_FEAT_TREE_MASK;
    if (f->draft) n |= SGL_ATTN_FEAT_DRAFT_EXTEND;
    if (f->attn) n |= SGL_ATTN_FEAT_ATTN_TYPES;
    if (f->encsave) n |= SGL_ATTN_FEAT_ENCODER_LOC;
    if (f->ptable) n |= SGL_ATTN_FEAT_PAGE_TABLE;
    if (f->smap) n |= SGL_ATTN_FEAT_SLOT_MAP;
    return n;
}

int64_t fa_engine_slot(const fa_batch *fb, int64_t s) {
    return fb->c.smap ? htensor_get_index(&fb->smap, (size_t)s) : s;
}

/* Column col of request i: its req_to_token entry (a full-pool slot). */
static int64_t col_slot(const fa_batch *fb, int i, int64_t col) {
    return htensor_get_index(&fb->r2t, (size_t)((int64_t)fb->row[i] * fb->cols + col));
}

#define ALLOC(t, name, dt, nd, ...)                                                          \
    do {                                                                                     \
        const int64_t s_[] = {__VA_ARGS__};                                                  \
        if (htensor_alloc(&fb->t, fb->dev, name, dt, nd, s_, err, err_size)) return -1;       \
        staged[n_staged++] = &fb->t;                                                         \
    } while (0)

/* sglang's EAGLE draft tree with topk 4 over q tokens, as parent[] (token 0
 * is the root, the last verified token; parent[j] < j): step 1 gives the
 * root 4 children; each later step expands the 4 best candidates of the step
 * before (by cumulative score, a child's score its parent's plus a random log
 * probability) with 4 children each; the q - 1 best candidates of every step
 * become tokens 1.. in candidate order.  A child scores below its parent, so
 * each chosen candidate's parent is chosen too (ties go to the earlier one). */
#define EAGLE_TOPK 4
#define EAGLE_CAND (EAGLE_TOPK + 4 * EAGLE_TOPK * EAGLE_TOPK) /* 5 steps: >= 63 candidates */
static void eagle_tree(hrng *r, int q, int parent[64]) {
    double score[EAGLE_CAND];
    int cpar[EAGLE_CAND], tok[EAGLE_CAND], chosen[EAGLE_CAND], beams[EAGLE_TOPK];
    int n = 0, first = 0; /* candidates so far; the current step's first */
    for (int k = 0; k < EAGLE_TOPK; k++, n++) {
        cpar[n] = -1; /* the root */
        score[n] = log(1.0 - hrng_uniform(r));
    }
    while (n < q - 1 && n + EAGLE_TOPK * EAGLE_TOPK <= EAGLE_CAND) {
        /* the step's EAGLE_TOPK best candidates become the beams */
        for (int k = 0; k < EAGLE_TOPK; k++) {
            int best = -1;
            for (int c = first; c < n; c++) {
                int taken = 0;
                for (int kk = 0; kk < k; kk++) taken |= beams[kk] == c;
                if (!taken && (best < 0 || score[c] > score[best])) best = c;
            }
            beams[k] = best;
        }
        first = n;
        for (int k = 0; k < EAGLE_TOPK; k++)
            for (int kk = 0; kk < EAGLE_TOPK; kk++, n++) {
                cpar[n] = beams[k];
                score[n] = score[beams[k]] + log(1.0 - hrng_uniform(r));
            }
    }
    /* the q - 1 best of all candidates, then tokens in candidate order */
    for (int c = 0; c < n; c++) chosen[c] = 0;
    for (int j = 1; j < q; j++) {
        int best = -1;
        for (int c = 0; c < n; c++)
            if (!chosen[c] && (best < 0 || score[c] > score[best])) best = c;
        chosen[best] = 1;
    }
    parent[0] = -1;
    for (int c = 0, j = 1; c < n; c++) {
        if (!chosen[c]) continue;
        tok[c] = j;
        parent[j++] = cpar[c] < 0 ? 0 : tok[cpar[c]];
    }
}

/* A tree per request.  tree=1: a random tree (each draft token's parent
 * uniform among the earlier ones, or none); draft token j sees itself, its
 * ancestors and the prefix with about one key in ten hidden, so single keys
 * and whole runs are masked; request 1 sees its whole prefix, as sglang's
 * masks do, so the kernels that skip all-visible tiles take that path too.
 * tree=2: sglang's EAGLE mask (eagle_tree, topk 4): every draft token sees
 * the whole prefix, the root and its own ancestors. */
static void fill_tree(fa_batch *fb, hrng *r) {
    unsigned char *m = htensor_data(&fb->mask);
    int64_t off = 0;
    for (int i = 0; i < fb->bs; i++) {
        const int q = fb->n_new[i], pre = fb->prefix[i], seq = fb->seq[i];
        int parent[64];
        htensor_set_index(&fb->mask_ip, (size_t)i, off);
        if (fb->c.tree == 2) eagle_tree(r, q, parent);
        for (int j = 0; j < q; j++) {
            if (fb->c.tree == 1) parent[j] = j == 0 ? -1 : (int)hrng_range(r, -1, j - 1);
            unsigned char *row = m + off + (int64_t)j * seq;
            for (int c = 0; c < pre; c++) row[c] = fb->c.tree == 2 || i == 1 || hrng_range(r, 0, 9) != 0;
            for (int c = pre; c < seq; c++) row[c] = 0;
            for (int a = j; a >= 0; a = parent[a]) row[pre + a] = 1;
        }
        off += (int64_t)q * seq;
    }
    htensor_set_index(&fb->mask_ip, (size_t)fb->bs, off);
}

int fa_engine_build(fa_batch *fb, hrng *r, char *err, size_t err_size) {
    const fa_case *c = &fb->c;
    htensor *staged[8];
    int n_staged = 0;
    const hdtype it = c->idx == 64 ? HDT_I64 : HDT_I32;
    sgl_attn_batch *b = &fb->batch;
    sgl_attn_layer *L = &fb->layer;
    if (c->tree) {
        int64_t n = 0;
        for (int i = 0; i < fb->bs; i++) n += (int64_t)fb->n_new[i] * fb->seq[i];
        ALLOC(mask, "custom_mask", HDT_U8, 1, n);
        ALLOC(mask_ip, "mask_indptr", it, 1, fb->bs + 1);
        fill_tree(fb, r);
        b->custom_mask = &fb->mask.t;
        b->mask_indptr = &fb->mask_ip.t;
    }
    if (c->draft) b->forward_mode = SGL_ATTN_MODE_DRAFT_EXTEND;
    if (c->attn) L->attn_type = (int32_t)c->attn;
    if (c->ptable) {
        /* a spare column of valid but wrong pages: reading past a length shows */
        const int64_t w = (fb->cols + c->page - 1) / c->page + 1;
        ALLOC(ptab, "page_table", it, 2, fb->bs, w);
        for (int i = 0; i < fb->bs; i++)
            for (int64_t p = 0; p < w; p++) {
                const int64_t col = p * c->page;
                const int64_t v = col < (int64_t)fb->enc[i] + fb->seq[i] ? col_slot(fb, i, col) / c->page
                                                                          : hrng_range(r, 1, fb->slots / c->page - 1);
                htensor_set_index(&fb->ptab, (size_t)(i * w + p), v);
            }
        b->page_table = &fb->ptab.t;
        b->req_to_token = NULL;
        b->req_pool_indices = NULL;
    }
    if (c->smap) {
        /* a permutation: the layer's pool holds full-pool slot s at map[s] */
        ALLOC(smap, "slot_map", it, 1, fb->slots);
        int64_t *perm = malloc(sizeof(int64_t) * (size_t)fb->slots);
        if (!perm) return snprintf(err, err_size, "out of host memory building the slot map"), -1;
        for (int64_t s = 0; s < fb->slots; s++) perm[s] = s;
        hrng_shuffle(r, perm, (size_t)fb->slots);
        for (int64_t s = 0; s < fb->slots; s++) htensor_set_index(&fb->smap, (size_t)s, perm[s]);
        free(perm);
        L->slot_map = &fb->smap.t;
    }
    if (c->encsave) {
        fb->n_enc = 0;
        for (int i = 0; i < fb->bs; i++) fb->n_enc += fb->enc[i];
        ALLOC(enc_loc, "encoder_out_cache_loc", it, 1, fb->n_enc);
        ALLOC(ek, "k (encoder)", c->dt, 3, fb->n_enc, c->hkv, c->d);
        ALLOC(ev, "v (encoder)", c->dt, 3, fb->n_enc, c->hkv, c->dv);
        int64_t e = 0;
        for (int i = 0; i < fb->bs; i++)
            for (int64_t col = 0; col < fb->enc[i]; col++) htensor_set_index(&fb->enc_loc, (size_t)e++, col_slot(fb, i, col));
        htensor_fill_normal(&fb->ek, r, 1.0);
        htensor_fill_normal(&fb->ev, r, 1.0);
        b->encoder_out_cache_loc = &fb->enc_loc.t;
        fb->args.k = &fb->ek.t;
        fb->args.v = &fb->ev.t;
        fb->args.save_kv_cache = 1;
    }
    for (int i = 0; i < n_staged; i++)
        if (htensor_upload(staged[i], err, err_size)) return -1;
    return 0;
}

void fa_engine_free(fa_batch *fb) {
    htensor *all[] = {&fb->mask, &fb->mask_ip, &fb->ptab, &fb->smap, &fb->enc_loc, &fb->ek, &fb->ev};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) htensor_free(all[i]);
}

/* Whether query token j of request i sees key position p (cross: encoder
 * token p), by the header's rules for the case's inputs. */
static int sees(const fa_batch *fb, const unsigned char *mask, int i, int j, int p) {
    const fa_case *c = &fb->c;
    const int pos = fb->prefix[i] + j;
    if (c->cross) return 1;
    if (c->tree)
        return mask[htensor_get_index(&fb->mask_ip, (size_t)i) + (int64_t)j * fb->seq[i] + p] != 0;
    if (c->attn == SGL_ATTN_TYPE_BIDIRECTIONAL) return 1;
    if (c->attn == SGL_ATTN_TYPE_ENCODER_ONLY) return p >= fb->prefix[i];
    return p <= pos && (c->window < 0 || p >= pos - c->window);
}

int fa_engine_reference(fa_batch *fb, char *err, size_t err_size) {
    const fa_case *c = &fb->c;
    const int64_t krow = c->hkv * c->d, vrow = c->hkv * c->dv, S = fb->slots;
    const int G = (int)(c->hq / c->hkv);
    double *kd = malloc(sizeof(double) * (size_t)(S * krow));
    double *vd = c->mla ? NULL : malloc(sizeof(double) * (size_t)(S * vrow));
    double *ref = malloc(sizeof(double) * (size_t)((int64_t)fb->T * c->hq * c->dv + 1));
    double *sc = malloc(sizeof(double) * (size_t)(fb->cols + 1));
    const double **kr = malloc(sizeof(double *) * (size_t)(fb->cols + 1));
    const double **vr = malloc(sizeof(double *) * (size_t)(fb->cols + 1));
    double *dk = malloc(sizeof(double) * (size_t)((int64_t)fb->T * krow + 1));
    double *dv = malloc(sizeof(double) * (size_t)((int64_t)fb->T * vrow + 1));
    double *qrow = malloc(sizeof(double) * (size_t)c->d);
    int rc = -1;
    if (!qrow || !kd || (!c->mla && !vd) || !ref || !sc || !kr || !vr || !dk || !dv) {
        snprintf(err, err_size, "out of host memory for the float64 reference");
        goto done;
    }
    /* the pool before the call, then the saves as the pool dtype holds them */
    for (int64_t e = 0; e < S * krow; e++) kd[e] = hdtype_load(c->kvdt, fb->k_init, (size_t)e);
    for (int64_t e = 0; vd && e < S * vrow; e++) vd[e] = hdtype_load(c->kvdt, fb->v_init, (size_t)e);
    const int save_new = fb->args.save_kv_cache && !c->encsave;
    const htensor *ks = c->encsave ? &fb->ek : &fb->k, *vs = c->encsave ? &fb->ev : &fb->v;
    const int64_t n_saved = c->encsave ? fb->n_enc : save_new ? fb->T : 0;
    for (int64_t t = 0; t < n_saved; t++) {
        const int64_t s = fa_engine_slot(fb, htensor_get_index(c->encsave ? &fb->enc_loc : &fb->ocl, (size_t)t));
        for (int64_t e = 0; e < krow; e++)
            kd[s * krow + e] = hdtype_round(c->kvdt, hdtype_load(c->dt, htensor_cdata(ks), (size_t)(t * krow + e)));
        for (int64_t e = 0; vd && e < vrow; e++)
            vd[s * vrow + e] = hdtype_round(c->kvdt, hdtype_load(c->dt, htensor_cdata(vs), (size_t)(t * vrow + e)));
    }
    /* encoder-only keys: the call's k / v as given */
    for (int64_t e = 0; e < (int64_t)fb->T * krow; e++) dk[e] = hdtype_load(c->dt, htensor_cdata(&fb->k), (size_t)e);
    for (int64_t e = 0; !c->mla && e < (int64_t)fb->T * vrow; e++)
        dv[e] = hdtype_load(c->dt, htensor_cdata(&fb->v), (size_t)e);
    const unsigned char *mask = c->tree ? htensor_cdata(&fb->mask) : NULL;
    const double *sinks = NULL;
    double sink_v[1024];
    if (c->sinks) {
        for (long h = 0; h < c->hq && h < 1024; h++) sink_v[h] = hdtype_load(HDT_F32, htensor_cdata(&fb->sinks), (size_t)h);
        sinks = sink_v;
    }
    int64_t tok = 0;
    for (int i = 0; i < fb->bs; i++) {
        const int64_t tok0 = tok;
        for (int j = 0; j < fb->n_new[i]; j++, tok++) {
            int64_t nk = 0;
            const int nkeys = c->cross ? fb->enc[i] : fb->seq[i];
            for (int p = 0; p < nkeys; p++) {
                if (!sees(fb, mask, i, j, p)) continue;
                if (c->attn == SGL_ATTN_TYPE_ENCODER_ONLY) {
                    const int64_t row = tok0 + p - fb->prefix[i];
                    kr[nk] = dk + row * krow;
                    vr[nk] = dv + row * vrow;
                } else {
                    const int64_t s = fa_engine_slot(fb, col_slot(fb, i, (c->cross ? 0 : fb->enc[i]) + (int64_t)p));
                    kr[nk] = kd + s * krow;
                    vr[nk] = c->mla ? kd + s * krow : vd + s * vrow;
                }
                nk++;
            }
            for (long h = 0; h < c->hq; h++) {
                const long kh = h / G;
                double mx = -INFINITY;
                for (long d = 0; d < c->d; d++)
                    qrow[d] = hdtype_load(c->dt, htensor_cdata(&fb->q), (size_t)((tok * c->hq + h) * c->d + d));
                for (int64_t k = 0; k < nk; k++) {
                    double dot = 0;
                    for (long d = 0; d < c->d; d++) dot += qrow[d] * kr[k][kh * c->d + d];
                    double x = dot * c->scale;
                    if (c->softcap > 0) x = c->softcap * tanh(x / c->softcap);
                    sc[k] = x;
                    mx = x > mx ? x : mx;
                }
                const double sk = sinks ? sinks[h] : -INFINITY;
                if (sk > mx) mx = sk;
                double den = sinks ? exp(sk - mx) : 0;
                for (int64_t k = 0; k < nk; k++) den += (sc[k] = exp(sc[k] - mx)); /* scores -> weights */
                const long voff = c->mla ? 0 : kh * c->dv;
                double *o = ref + (tok * c->hq + h) * c->dv;
                for (long d = 0; d < c->dv; d++) o[d] = 0;
                for (int64_t k = 0; k < nk; k++)
                    for (long d = 0; d < c->dv; d++) o[d] += sc[k] * vr[k][voff + d];
                for (long d = 0; d < c->dv; d++) o[d] = den > 0 ? o[d] / den : 0;
            }
        }
    }
    free(fb->ref);
    fb->ref = ref;
    ref = NULL;
    rc = 0;
done:
    free(kd);
    free(vd);
    free(ref);
    free(sc);
    free(kr);
    free(vr);
    free(dk);
    free(dv);
    free(qrow);
    return rc;
}
