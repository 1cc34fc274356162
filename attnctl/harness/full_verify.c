/* full_verify.c - judging one call: every tensor's guards, the inputs left
 * as they were, the output against the float64 reference (poison, NaN,
 * NMSE), and the pool against the expected pool after save_kv_cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

/* One unit in the last place of v in dtype t. */
static double ulp(hdtype t, double v) {
    const int mant = t == HDT_F16 ? 10 : t == HDT_BF16 ? 7 : t == HDT_F32 ? 23 : t == HDT_FP8_E4M3 ? 3 : 52;
    const int emin = t == HDT_F16 ? -14 : t == HDT_F64 ? -1022 : t == HDT_FP8_E4M3 ? -6 : -126;
    int e;
    frexp(fabs(v), &e);
    e -= 1;
    if (e < emin) e = emin;
    return ldexp(1.0, e - mant);
}

/* Row-major index -> "[a, b, c]". */
static void coords(const htensor *t, size_t i, char *buf, size_t size) {
    int64_t c[HT_MAX_DIMS];
    for (int d = t->t.ndim - 1; d >= 0; d--) {
        c[d] = (int64_t)(i % (size_t)t->shape[d]);
        i /= (size_t)t->shape[d];
    }
    size_t o = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->t.ndim && o < size; d++) o += (size_t)snprintf(buf + o, size - o, "%s%lld", d ? ", " : "", (long long)c[d]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

static int check_pool(fa_batch *fb, htensor *pool, const unsigned char *init, const htensor *src, int is_v,
                      hresult *r) {
    const fa_case *c = &fb->c;
    const size_t row = pool->count / (size_t)fb->slots, esz = hdtype_size(pool->dt);
    int64_t *writer = malloc(sizeof(int64_t) * (size_t)fb->slots);
    if (!writer) {
        hresult_error(r, "out of memory checking %s", pool->name);
        return -1;
    }
    for (int64_t s = 0; s < fb->slots; s++) writer[s] = -1;
    if (c->save && !c->encsave) /* through the case's slot map, if any */
        for (int64_t t = 0; t < fb->T; t++) writer[fa_engine_slot(fb, htensor_get_index(&fb->ocl, (size_t)t))] = t;
    if (c->encsave) /* a cross layer saves the encoder's tokens */
        for (int64_t t = 0; t < fb->n_enc; t++)
            writer[fa_engine_slot(fb, htensor_get_index(&fb->enc_loc, (size_t)t))] = t;
    const unsigned char *got = htensor_cdata(pool);
    for (int64_t s = 0; s < fb->slots; s++) {
        const size_t off = (size_t)s * row;
        if (writer[s] < 0) {
            if (memcmp(got + off * esz, init + off * esz, row * esz)) {
                size_t e = 0;
                while (e < row && !memcmp(got + (off + e) * esz, init + (off + e) * esz, esz)) e++;
                hresult_fail(r, "%s slot %lld changed (element %zu) but no new token is saved there", pool->name,
                             (long long)s, e);
                free(writer);
                return -1;
            }
            continue;
        }
        const int64_t t = writer[s];
        for (size_t e = 0; e < row; e++) {
            const double x = hdtype_load(src->dt, htensor_cdata(src), (size_t)t * row + e);
            double want = fa_pool_raw(c, is_v, x);
            double have = hdtype_load(pool->dt, got, off + e);
            /* fp8: the saves' f32 quotient rounded once, as fa_pool_raw does: exact */
            double tol = src->dt == pool->dt || pool->dt == HDT_FP8_E4M3 ? 0 : ulp(pool->dt, want);
            if (!(fabs(have - want) <= tol)) {
                hresult_fail(r, "%s slot %lld (new token %lld) element %zu = %.9g; expected %.9g from %s", pool->name,
                             (long long)s, (long long)t, e, have, want, src->name);
                free(writer);
                return -1;
            }
        }
    }
    free(writer);
    return 0;
}

static uint64_t digest(const htensor *t) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const unsigned char *p = htensor_cdata(t);
    for (size_t i = 0; i < t->bytes; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void fa_batch_verify(fa_batch *fb, hresult *r) {
    const fa_case *c = &fb->c;
    char err[512];
    htensor *inputs[] = {&fb->q,   &fb->k,        &fb->v,        &fb->sinks,    &fb->r2t,  &fb->req_idx, &fb->seq_lens,
                         &fb->prefix_lens, &fb->ext_lens, &fb->enc_lens, &fb->ocl, &fb->positions, &fb->state_idx};
    enum { NIN = sizeof inputs / sizeof inputs[0] };
    uint64_t before[NIN];
    for (int i = 0; i < NIN; i++) before[i] = digest(inputs[i]);
    for (int i = 0; i < NIN; i++) {
        if (htensor_download(inputs[i], err, sizeof err)) {
            hresult_fail(r, "%s", err);
            return;
        }
        if (digest(inputs[i]) != before[i]) {
            hresult_fail(r, "the input %s was modified by the call", inputs[i]->name);
            return;
        }
    }
    if (htensor_download(&fb->out, err, sizeof err) || htensor_download(&fb->k_cache, err, sizeof err) ||
        htensor_download(&fb->v_cache, err, sizeof err)) {
        hresult_fail(r, "%s", err);
        return;
    }
    hcompare cmp;
    hcompare_run(&fb->out, fb->ref, &cmp);
    r->nmse = cmp.nmse;
    r->max_abs_err = cmp.max_abs_err;
    r->threshold = fa_case_threshold(c);
    char at[64];
    if (cmp.bad_kind) {
        coords(&fb->out, cmp.first_bad, at, sizeof at);
        hresult_fail(r, "out%s %s", at, cmp.bad_kind == 2 ? "was never written" : "is NaN or Inf");
        return;
    }
    if (!(cmp.nmse <= r->threshold)) {
        coords(&fb->out, cmp.worst_index, at, sizeof at);
        hresult_fail(r, "NMSE %.3g > %.3g (worst out%s = %.6g, reference %.6g)", cmp.nmse, r->threshold, at,
                     hdtype_load(fb->out.dt, htensor_cdata(&fb->out), cmp.worst_index), fb->ref[cmp.worst_index]);
        return;
    }
    if (check_pool(fb, &fb->k_cache, fb->k_init, c->encsave ? &fb->ek : &fb->k, 0, r)) return;
    if (!c->mla && check_pool(fb, &fb->v_cache, fb->v_init, c->encsave ? &fb->ev : &fb->v, 1, r)) return;
    r->verdict = HV_PASS;
}
