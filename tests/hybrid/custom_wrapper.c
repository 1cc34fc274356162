/* custom_wrapper.c - a test-only third-party hybrid wrapper, written against
 * abi/sgl_attn_abi.h alone as an outside author would: kind HYBRID_CUSTOM
 * ("toy_retention") serving model_type "toy_hybrid_lm", which no shipped
 * wrapper serves.  Its own layers compute out = 2 * x (float32); every
 * full-attention layer goes to the inner backend.  Loaded by
 * test_hybrid_custom from a temporary directory in SGL_ATTN_PLUGIN_PATH. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_attn_abi.h"

typedef struct toy {
    sgl_attn_backend base;
    sgl_attn_backend *inner;
    sgl_attn_model model;
    char err[256];
} toy;

static int meta(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    toy *t = (toy *)b;
    return t->inner->ops->init_forward_metadata ? t->inner->ops->init_forward_metadata(t->inner, batch) : 0;
}

static int own(toy *t, const sgl_attn_forward_args *a) {
    const sgl_attn_linear_io *io = a->linear;
    if (!io || !io->x || !io->out || io->x->dtype.code != kDLFloat || io->x->dtype.bits != 32 ||
        io->out->dtype.code != kDLFloat || io->out->dtype.bits != 32 || io->x->ndim != io->out->ndim) {
        snprintf(t->err, sizeof t->err, "toy_retention: layer %d needs float32 linear.x and linear.out of one shape",
                 a->layer->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    size_t n = 1;
    for (int i = 0; i < io->x->ndim; i++) {
        if (io->x->shape[i] != io->out->shape[i]) {
            snprintf(t->err, sizeof t->err, "toy_retention: linear.x and linear.out differ in dim %d", i);
            return SGL_ATTN_E_INVALID;
        }
        n *= (size_t)io->x->shape[i];
    }
    const float *x = (const float *)((const char *)io->x->data + io->x->byte_offset);
    float *o = (float *)((char *)io->out->data + io->out->byte_offset);
    for (size_t i = 0; i < n; i++) o[i] = 2.0f * x[i];
    return SGL_ATTN_OK;
}

static int fwd(sgl_attn_backend *b, const sgl_attn_forward_args *a, int extend) {
    toy *t = (toy *)b;
    if (!a || !a->layer) return SGL_ATTN_E_INVALID;
    if (!sgl_attn_model_layer_is_full(&t->model, a->layer->layer_id)) return own(t, a);
    return extend ? t->inner->ops->forward_extend(t->inner, a) : t->inner->ops->forward_decode(t->inner, a);
}
static int fwd_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return fwd(b, a, 1); }
static int fwd_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return fwd(b, a, 0); }
static int32_t fill(sgl_attn_backend *b) {
    toy *t = (toy *)b;
    return t->inner->ops->graph_seq_len_fill_value ? t->inner->ops->graph_seq_len_fill_value(t->inner) : 1;
}
static const char *last_error(sgl_attn_backend *b) { return ((toy *)b)->err; }
static void destroy(sgl_attn_backend *b) { free(b); }

static const sgl_attn_backend_ops toy_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = meta,
    .forward_extend = fwd_extend,
    .forward_decode = fwd_decode,
    .graph_seq_len_fill_value = fill,
    .last_error = last_error,
    .destroy = destroy,
};

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    snprintf(c->device_name, sizeof c->device_name, "cpu");
    snprintf(c->arch_name, sizeof c->arch_name, "any");
    c->arch_major = c->arch_minor = c->arch_min_major = c->arch_min_minor = -1;
    c->arch_max_major = c->arch_max_minor = -1;
    c->compute_units = 1;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    c->head_dim_qk_max = c->head_dim_v_max = 1024;
    c->page_size_max = 65536;
    c->score = 5;
    c->state_dtypes = SGL_ATTN_DT_F32;
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    *out = NULL;
    if (!a->inner) {
        snprintf(a->error, a->error_size, "toy_retention wraps a full-attention backend: no inner given");
        return SGL_ATTN_E_INVALID;
    }
    toy *t = calloc(1, sizeof *t);
    if (!t) return SGL_ATTN_E_NOMEM;
    t->base.ops = &toy_ops;
    t->base.ops_size = sizeof toy_ops;
    t->base.device = a->device;
    t->inner = a->inner;
    t->model = *a->model;
    *out = &t->base;
    return SGL_ATTN_OK;
}

/* 1000 bytes per linear layer: a number the test can check end to end */
static uint64_t state_bytes(const sgl_attn_model *m) {
    uint64_t n = 0;
    for (int l = 0; l < m->num_layers; l++) n += !sgl_attn_model_layer_is_full(m, l);
    return 1000 * n;
}

static const char *const model_types[] = {"toy_hybrid_lm", NULL};

static const sgl_attn_plugin toy_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "toy_retention",
    .version = "0.0.1",
    .description = "test-only third-party hybrid wrapper",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_HYBRID,
    .hybrid_kind = SGL_ATTN_HYBRID_CUSTOM,
    .custom_kind = "toy_retention",
    .model_types = model_types,
    .probe = probe,
    .create = create,
    .state_bytes_per_request = state_bytes,
};

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &toy_plugin);
}
