/* wrapper.c - a fake hybrid GDN wrapper: forwards every call to its inner
 * and records the inner caps it was given (fake_inner_caps), so a test can
 * check the host intersected them.  Its own caps narrow the inner's: f32 and
 * bf16 only, head dims (128,128) and (256,256), page sizes 1 and 16. */
#include <stdlib.h>

#include "fake.h"

FAKE_EVENT_HOOKS

SGL_ATTN_EXPORT const sgl_attn_caps *fake_inner_caps(void);

static sgl_attn_caps last_inner; /* written by create, read by the test */

const sgl_attn_caps *fake_inner_caps(void) { return &last_inner; }

typedef struct wrap_backend {
    sgl_attn_backend base;
    sgl_attn_backend *inner;
} wrap_backend;

static sgl_attn_backend *inner_of(sgl_attn_backend *b) { return ((wrap_backend *)b)->inner; }

static int metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    fake_event("meta fake_gdn");
    return inner_of(b)->ops->init_forward_metadata(inner_of(b), batch);
}

static int fwd_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fake_event("extend fake_gdn");
    return inner_of(b)->ops->forward_extend(inner_of(b), a);
}

static int fwd_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fake_event("decode fake_gdn");
    return inner_of(b)->ops->forward_decode(inner_of(b), a);
}

static const char *last_error(sgl_attn_backend *b) {
    return inner_of(b)->ops->last_error ? inner_of(b)->ops->last_error(inner_of(b)) : "";
}

/* The host destroys the inner itself, after this one.  The goodbye call
 * lands in the inner's event log before its own "destroy", which is how a
 * test sees the order (and a sanitizer would see a destroyed inner). */
static void destroy(sgl_attn_backend *b) {
    fake_event("destroy fake_gdn");
    sgl_attn_batch idle = {.struct_size = sizeof idle, .forward_mode = SGL_ATTN_MODE_IDLE};
    inner_of(b)->ops->init_forward_metadata(inner_of(b), &idle);
    free(b);
}

static const sgl_attn_backend_ops ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = metadata,
    .forward_extend = fwd_extend,
    .forward_decode = fwd_decode,
    .last_error = last_error,
    .destroy = destroy,
};

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    fake_copy(c->device_name, sizeof c->device_name, "wherever the inner runs");
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA;
    c->q_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16;
    c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_BF16;
    c->state_dtypes = SGL_ATTN_DT_F32;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_GRAPH_CAPTURE;
    c->n_head_dims = 2;
    c->head_dims[0] = (sgl_attn_head_dims){128, 128};
    c->head_dims[1] = (sgl_attn_head_dims){256, 256};
    c->n_page_sizes = 2;
    c->page_sizes[0] = 1;
    c->page_sizes[1] = 16;
    c->score = 5;
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    if (!a->inner || !a->inner_caps) {
        snprintf(a->error, a->error_size, "fake_gdn wraps a full-attention backend; inner is NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (a->max_reqs == 8888) { /* a test's trigger: fail after the inner exists */
        snprintf(a->error, a->error_size, "max_reqs 8888 is the test's failure trigger");
        return SGL_ATTN_E_DEVICE;
    }
    wrap_backend *w = calloc(1, sizeof *w);
    if (!w) return SGL_ATTN_E_NOMEM;
    pthread_mutex_lock(&fake_mu); /* creates may run on several threads */
    last_inner = *a->inner_caps;
    pthread_mutex_unlock(&fake_mu);
    w->base.ops = &ops;
    w->base.ops_size = ops.struct_size;
    w->base.device = a->device;
    w->inner = a->inner;
    fake_event("create fake_gdn");
    *out = &w->base;
    return SGL_ATTN_OK;
}

static const char *const model_types[] = {"qwen3_next", NULL};

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "fake_gdn",
    .version = "1.0",
    .description = "fake hybrid GDN wrapper",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_NONE,
    .role = SGL_ATTN_ROLE_HYBRID,
    .hybrid_kind = SGL_ATTN_HYBRID_GDN,
    .model_types = model_types,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
