/* state_pool.c - per-request state of the linear layers, indexed by the
 * request's slot (batch->state_indices), allocated once at create:
 *   conv [layers][slots][W-1][conv_dim]        the conv1d history, time-major
 *   ssm  [layers][slots][HV * V * K]           the recurrent state
 * and, when the model verifies speculative drafts (spec_tokens > 1), the
 * state after each draft token, [layers][slots][steps][...], which
 * state_commit copies into the main pool for the accepted step. */
#include <stdlib.h>
#include <string.h>

#include "hyb.h"

static int mul_ok(size_t *acc, size_t x) { return !__builtin_mul_overflow(*acc, x, acc); }

static unsigned char *alloc_elems(int64_t per, const hyb_pool *p, int32_t steps, int *fail) {
    size_t n = 1;
    if (per <= 0) return NULL;
    if (!mul_ok(&n, (size_t)per) || !mul_ok(&n, (size_t)p->layers) || !mul_ok(&n, (size_t)p->slots) ||
        !mul_ok(&n, (size_t)(steps > 0 ? steps : 1)) || !mul_ok(&n, p->esz)) {
        *fail = 1;
        return NULL;
    }
    unsigned char *m = calloc(1, n);
    if (!m) *fail = 1;
    return m;
}

int hyb_pool_init(hyb_pool *p, const hyb_dims *d, int32_t slots, int32_t steps, size_t esz,
                  char *err, size_t n) {
    memset(p, 0, sizeof *p);
    p->esz = esz;
    p->layers = d->n_lin;
    p->slots = slots;
    p->steps = steps > 1 ? steps : 0;
    p->conv_elems = d->conv_elems;
    p->ssm_elems = d->ssm_elems;
    if (!d->stateful || d->n_lin == 0) return SGL_ATTN_OK;
    int fail = 0;
    p->conv = alloc_elems(p->conv_elems, p, 0, &fail);
    p->ssm = alloc_elems(p->ssm_elems, p, 0, &fail);
    if (p->steps) {
        p->iconv = alloc_elems(p->conv_elems, p, p->steps, &fail);
        p->issm = alloc_elems(p->ssm_elems, p, p->steps, &fail);
    }
    if (fail) {
        sgl_sdk_str(err, n, "cannot allocate the state pool: %d layers x %d slots x (%lld conv + "
                        "%lld ssm) elements of %zu bytes%s", p->layers, slots,
                (long long)p->conv_elems, (long long)p->ssm_elems, esz,
                p->steps ? ", plus per-draft-token copies for verification" : "");
        hyb_pool_free(p);
        return SGL_ATTN_E_NOMEM;
    }
    return SGL_ATTN_OK;
}

void hyb_pool_free(hyb_pool *p) {
    free(p->conv);
    free(p->ssm);
    free(p->iconv);
    free(p->issm);
    p->conv = p->ssm = p->iconv = p->issm = NULL;
}

static size_t off(const hyb_pool *p, int64_t elems, int layer, int slot, int step, int nsteps) {
    return ((((size_t)layer * p->slots + (size_t)slot) * (size_t)(nsteps ? nsteps : 1)) + (size_t)step) *
           (size_t)elems * p->esz;
}

void *hyb_pool_conv(const hyb_pool *p, int layer, int slot) {
    return p->conv ? p->conv + off(p, p->conv_elems, layer, slot, 0, 0) : NULL;
}
void *hyb_pool_ssm(const hyb_pool *p, int layer, int slot) {
    return p->ssm ? p->ssm + off(p, p->ssm_elems, layer, slot, 0, 0) : NULL;
}
void *hyb_pool_iconv(const hyb_pool *p, int layer, int slot, int step) {
    return p->iconv ? p->iconv + off(p, p->conv_elems, layer, slot, step, p->steps) : NULL;
}
void *hyb_pool_issm(const hyb_pool *p, int layer, int slot, int step) {
    return p->issm ? p->issm + off(p, p->ssm_elems, layer, slot, step, p->steps) : NULL;
}

void hyb_pool_clear(hyb_pool *p, int slot) {
    for (int l = 0; l < p->layers; l++) {
        if (p->conv) memset(hyb_pool_conv(p, l, slot), 0, (size_t)p->conv_elems * p->esz);
        if (p->ssm) memset(hyb_pool_ssm(p, l, slot), 0, (size_t)p->ssm_elems * p->esz);
    }
}

void hyb_pool_copy(hyb_pool *p, int src, int dst) {
    if (src == dst) return;
    for (int l = 0; l < p->layers; l++) {
        if (p->conv) memcpy(hyb_pool_conv(p, l, dst), hyb_pool_conv(p, l, src), (size_t)p->conv_elems * p->esz);
        if (p->ssm) memcpy(hyb_pool_ssm(p, l, dst), hyb_pool_ssm(p, l, src), (size_t)p->ssm_elems * p->esz);
    }
}

void hyb_pool_commit(hyb_pool *p, int slot, int step) {
    for (int l = 0; l < p->layers; l++) {
        if (p->iconv) memcpy(hyb_pool_conv(p, l, slot), hyb_pool_iconv(p, l, slot, step), (size_t)p->conv_elems * p->esz);
        if (p->issm) memcpy(hyb_pool_ssm(p, l, slot), hyb_pool_issm(p, l, slot, step), (size_t)p->ssm_elems * p->esz);
    }
}

void hyb_pool_track(hyb_pool *p, int src, int step, int dst) {
    for (int l = 0; l < p->layers; l++) {
        if (p->iconv) memcpy(hyb_pool_conv(p, l, dst), hyb_pool_iconv(p, l, src, step), (size_t)p->conv_elems * p->esz);
        if (p->issm) memcpy(hyb_pool_ssm(p, l, dst), hyb_pool_issm(p, l, src, step), (size_t)p->ssm_elems * p->esz);
    }
}
