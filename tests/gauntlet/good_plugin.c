/* good_plugin.c - a well-behaved CPU plugin that the gauntlet puts beside
 * every bad one: it must stay usable whatever its neighbours do.  Its
 * forward writes out[i] = 2 * q[i] (f32), so a test can tell that the call
 * really ran.  GOOD_NAME picks the descriptor name (shadowing tests). */
#include <stdlib.h>
#include <string.h>

#include "sgl_attn_abi.h"

#ifndef GOOD_NAME
#define GOOD_NAME "gauntlet_good"
#endif

typedef struct good_backend {
    sgl_attn_backend base;
    char err[64];
} good_backend;

static int good_init(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)b;
    return batch ? SGL_ATTN_OK : SGL_ATTN_E_INVALID;
}

static int good_forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    good_backend *g = (good_backend *)b;
    if (!a || !a->q || !a->out || a->q->dtype.bits != 32 || a->out->dtype.bits != 32) {
        strcpy(g->err, "gauntlet_good: needs f32 q and out");
        return SGL_ATTN_E_INVALID;
    }
    int64_t n = 1;
    for (int i = 0; i < a->q->ndim; i++)
        n *= a->q->shape[i];
    const float *q = a->q->data;
    float *out = a->out->data;
    for (int64_t i = 0; i < n; i++)
        out[i] = 2.0f * q[i];
    g->err[0] = 0;
    return SGL_ATTN_OK;
}

static const char *good_last_error(sgl_attn_backend *b) {
    return ((good_backend *)b)->err;
}

static void good_destroy(sgl_attn_backend *b) {
    free(b);
}

static const sgl_attn_backend_ops good_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = good_init,
    .forward_extend = good_forward,
    .forward_decode = good_forward,
    .last_error = good_last_error,
    .destroy = good_destroy,
};

static int good_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    good_backend *g = calloc(1, sizeof *g);
    if (!g) return SGL_ATTN_E_NOMEM;
    g->base.ops = &good_ops;
    g->base.ops_size = good_ops.struct_size;
    *out = &g->base;
    return SGL_ATTN_OK;
}

static int good_probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    strcpy(c->device_name, "gauntlet cpu");
    strcpy(c->arch_name, "any");
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32;
    c->features = SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_EXTEND;
    c->head_dim_qk_max = c->head_dim_v_max = 256;
    c->page_size_max = 256;
    c->score = 0; /* never chosen automatically over the real backends */
    return SGL_ATTN_OK;
}

static const sgl_attn_plugin good_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = GOOD_NAME,
    .version = "1.0",
    .description = "gauntlet: the good neighbour",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = good_probe,
    .create = good_create,
};

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host,
                                          sgl_attn_plugin_answer *answer);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host,
                                          sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &good_plugin);
}
