/* good.c - a complete full-attention fake on two CPU "devices" (device 1
 * is busy).  Its forward really computes: out = 2 * q for compact f32
 * tensors of one shape, so a test can check that the call arrived whole.
 * Built under several names: -DFAKE_NAME, -DFAKE_VERSION. */
#include <stdlib.h>

#include "fake.h"

#ifndef FAKE_NAME
#define FAKE_NAME "fake_good"
#endif
#ifndef FAKE_VERSION
#define FAKE_VERSION "1.0"
#endif

FAKE_EVENT_HOOKS

SGL_ATTN_EXPORT void *fake_last_backend(void);
static void *_Atomic last_backend; /* the latest instance, for a test to compare */
void *fake_last_backend(void) { return last_backend; }

typedef struct good_backend {
    sgl_attn_backend base;
    char err[128];
    const sgl_attn_host_api *host;
} good_backend;


static int64_t numel(const DLTensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static int is_f32_compact(const DLTensor *t) {
    return t && !t->strides && t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static int metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)b;
    fake_event("meta %s %d", FAKE_NAME, batch ? batch->forward_mode : -1);
    return SGL_ATTN_OK;
}

static int twice(good_backend *g, const sgl_attn_forward_args *a) {
    if (!a || !is_f32_compact(a->q) || !is_f32_compact(a->out) || numel(a->q) != numel(a->out)) {
        snprintf(g->err, sizeof g->err, FAKE_NAME ": q and out must be compact f32 of one size");
        return SGL_ATTN_E_INVALID;
    }
    const float *q = (const float *)((const char *)a->q->data + a->q->byte_offset);
    float *o = (float *)((char *)a->out->data + a->out->byte_offset);
    for (int64_t i = 0, n = numel(a->q); i < n; i++) o[i] = 2.0f * q[i];
    g->err[0] = 0;
    return SGL_ATTN_OK;
}

static int fwd_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fake_event("extend %s", FAKE_NAME);
    return twice((good_backend *)b, a);
}

static int fwd_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    fake_event("decode %s", FAKE_NAME);
    return twice((good_backend *)b, a);
}

static const char *last_error(sgl_attn_backend *b) { return ((good_backend *)b)->err; }

static void destroy(sgl_attn_backend *b) {
    fake_event("destroy %s", FAKE_NAME);
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
    if (index > 1) return SGL_ATTN_E_NOT_FOUND;
    fake_cpu_caps(c);
    if (index == 1) {
        c->available = 0;
        fake_copy(c->reason, sizeof c->reason, "fake device 1 is busy");
    }
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    if (a->inner) {
        snprintf(a->error, a->error_size, FAKE_NAME " computes full attention; it wraps nothing");
        return SGL_ATTN_E_INVALID;
    }
    if (a->max_reqs == 7777) { /* lets a test see a failed create */
        snprintf(a->error, a->error_size, "max_reqs 7777 is the test's failure trigger");
        return SGL_ATTN_E_DEVICE;
    }
    good_backend *g = calloc(1, sizeof *g);
    if (!g) return SGL_ATTN_E_NOMEM;
    g->base.ops = &ops;
    g->base.ops_size = ops.struct_size;
    g->base.device = a->device;
    fake_event("create %s dev=%d reqs=%d", FAKE_NAME, a->device, a->max_reqs);
    last_backend = g;
    *out = &g->base;
    return SGL_ATTN_OK;
}

static const char *const aliases[] = {FAKE_NAME "_alias", NULL};

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = FAKE_NAME,
    .version = FAKE_VERSION,
    .description = "fake full attention for the host tests",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .aliases = aliases,
    .probe = probe,
    .create = create,
};

/* The host api is valid during the call; a conf option read here shows the
 * host passes plugin options through. */
int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    const char *greeting = host && host->get_option ? host->get_option(host->host_ctx, FAKE_NAME, "greeting") : NULL;
    if (greeting) fake_event("option greeting=%s", greeting);
    if (host && host->log) host->log(host->host_ctx, SGL_ATTN_LOG_DEBUG, FAKE_NAME, "entry called (%d)", 42);
    return sgl_attn_answer(host, answer, &plugin);
}
