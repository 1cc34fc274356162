/* recorder.c - a full-attention fake that records every vtable call, for the
 * Python adapter's call-order tests.  It computes nothing (out is left as
 * it is); it claims graph capture, so the adapter drives the graph ops.
 *
 * Events (recorder_events(), ';'-separated), with batch structs numbered
 * b0, b1, ... in the order this instance first saw them:
 *   create | state <max_bs> <max_tokens> | meta <mode> <bs> <T> b<i>
 *   capture <mode> <bs> <T> b<i> | replay <mode> <bs> <T> b<i> | fill
 *   extend|decode L<layer> T<rows of q> b<i> save<0|1> ocl<0|1> | destroy
 * A forward whose batch is not the one last given to metadata or capture is
 * refused with SGL_ATTN_E_STATE, as a real plugin may. */
#include <stdlib.h>

#include "fake.h"

FAKE_EVENT_HOOKS

typedef struct rec_backend {
    sgl_attn_backend base;
    const void *seen[64];
    int n_seen;
    const sgl_attn_batch *planned;
    char err[160];
} rec_backend;

static int batch_id(rec_backend *r, const void *p) {
    for (int i = 0; i < r->n_seen; i++)
        if (r->seen[i] == p) return i;
    if (r->n_seen < 64) r->seen[r->n_seen] = p;
    return r->n_seen < 64 ? r->n_seen++ : 63;
}

static int meta(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    rec_backend *r = (rec_backend *)b;
    fake_event("meta %d %d %d b%d", batch->forward_mode, batch->batch_size, batch->num_tokens, batch_id(r, batch));
    r->planned = batch;
    return SGL_ATTN_OK;
}

static int forward(rec_backend *r, const sgl_attn_forward_args *a, const char *what) {
    const int64_t rows = a->q ? a->q->shape[0] : -1;
    fake_event("%s L%d T%lld b%d save%d ocl%d", what, a->layer->layer_id, (long long)rows, batch_id(r, a->batch),
               a->save_kv_cache, a->batch->out_cache_loc != NULL);
    if (a->batch != r->planned) {
        snprintf(r->err, sizeof r->err, "%s: the batch is not the one last planned", what);
        return SGL_ATTN_E_STATE;
    }
    r->err[0] = 0;
    return SGL_ATTN_OK;
}

static int fwd_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    return forward((rec_backend *)b, a, "extend");
}

static int fwd_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    return forward((rec_backend *)b, a, "decode");
}

static int graph_state(sgl_attn_backend *b, int32_t max_bs, int32_t max_tokens) {
    (void)b;
    fake_event("state %d %d", max_bs, max_tokens);
    return SGL_ATTN_OK;
}

static int capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    rec_backend *r = (rec_backend *)b;
    fake_event("capture %d %d %d b%d", g->forward_mode, g->batch_size, g->num_tokens, batch_id(r, g->batch));
    r->planned = g->batch;
    return SGL_ATTN_OK;
}

static int replay(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    rec_backend *r = (rec_backend *)b;
    fake_event("replay %d %d %d b%d", g->forward_mode, g->batch_size, g->num_tokens, batch_id(r, g->batch));
    return SGL_ATTN_OK;
}

static int32_t fill(sgl_attn_backend *b) {
    (void)b;
    fake_event("fill");
    return 1;
}

static const char *last_error(sgl_attn_backend *b) { return ((rec_backend *)b)->err; }

static void destroy(sgl_attn_backend *b) {
    fake_event("destroy");
    free(b);
}

static const sgl_attn_backend_ops ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = meta,
    .forward_extend = fwd_extend,
    .forward_decode = fwd_decode,
    .init_graph_state = graph_state,
    .init_forward_metadata_capture = capture,
    .init_forward_metadata_replay = replay,
    .graph_seq_len_fill_value = fill,
    .last_error = last_error,
    .destroy = destroy,
};

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    fake_cpu_caps(c);
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features |= SGL_ATTN_FEAT_GRAPH_CAPTURE | SGL_ATTN_FEAT_SPEC_DECODE;
    c->page_size_max = 1024;
    c->score = 0; /* only when named */
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    rec_backend *r = calloc(1, sizeof *r);
    if (!r) return SGL_ATTN_E_NOMEM;
    r->base.ops = &ops;
    r->base.ops_size = ops.struct_size;
    r->base.device = a->device;
    fake_event("create");
    *out = &r->base;
    return SGL_ATTN_OK;
}

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "recorder",
    .version = "1.0",
    .description = "records every vtable call (tests/python)",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
