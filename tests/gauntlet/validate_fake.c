/* validate_fake.c - see validate_fake.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "validate_fake.h"

static fake_inner *fi(sgl_attn_backend *b) {
    fake_inner *f = (fake_inner *)b;
    f->calls++;
    return f;
}
static int fake_init(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)batch;
    fake_inner *f = fi(b);
    f->n_init++;
    if (f->fail_init) {
        snprintf(f->err, sizeof f->err, "fake: device lost");
        return SGL_ATTN_E_DEVICE;
    }
    f->err[0] = 0;
    return SGL_ATTN_OK;
}
static int fake_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    (void)a;
    fi(b)->n_decode++;
    return SGL_ATTN_OK;
}
static int fake_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    (void)a;
    fi(b)->n_extend++;
    return SGL_ATTN_OK;
}
static int fake_graph_state(sgl_attn_backend *b, int32_t bs, int32_t t) {
    (void)bs, (void)t;
    fi(b)->n_graph++;
    return SGL_ATTN_OK;
}
static int fake_capture(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    fi(b)->n_graph++;
    return SGL_ATTN_OK;
}
static int fake_state_clear(sgl_attn_backend *b, int32_t slot) {
    (void)slot;
    fi(b)->n_state++;
    return SGL_ATTN_OK;
}
static int fake_ragged(sgl_attn_backend *b, const sgl_attn_ragged_args *a) {
    (void)a;
    fi(b);
    return SGL_ATTN_OK;
}
static int fake_state_batch(sgl_attn_backend *b, const sgl_attn_state_batch_args *a) {
    (void)a;
    fi(b);
    return SGL_ATTN_OK;
}
static int fake_indexer(sgl_attn_backend *b, const sgl_attn_indexer_args *a) {
    (void)a;
    fi(b);
    return SGL_ATTN_OK;
}
static const char *fake_last_error(sgl_attn_backend *b) {
    return ((fake_inner *)b)->err;
}
static void fake_destroy(sgl_attn_backend *b) {
    ((fake_inner *)b)->n_destroy++;
}

void fake_make(fake_inner *f, int ops) {
    memset(f, 0, sizeof *f);
    f->ops.struct_size = (ops & VF_V11_SIZE) ? offsetof(sgl_attn_backend_ops, forward_ragged) : sizeof f->ops;
    f->ops.init_forward_metadata = fake_init;
    f->ops.forward_decode = fake_decode;
    f->ops.forward_extend = fake_extend;
    f->ops.last_error = fake_last_error;
    f->ops.destroy = fake_destroy;
    if (ops & VF_GRAPH) {
        f->ops.init_graph_state = fake_graph_state;
        f->ops.init_forward_metadata_capture = fake_capture;
        f->ops.state_clear = fake_state_clear;
    }
    if (ops & VF_V12) {
        f->ops.forward_ragged = fake_ragged;
        f->ops.init_forward_metadata_in_graph = fake_capture;
        f->ops.state_batch = fake_state_batch;
        f->ops.indexer_topk = fake_indexer;
    }
    f->base.ops = &f->ops;
    f->base.ops_size = f->ops.struct_size;
}

static void host_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx, (void)level, (void)plugin, (void)fmt;
}

const sgl_attn_plugin *validate_plugin(void) {
    static const sgl_attn_host_api api = {
        sizeof api, SGL_ATTN_ABI_MAJOR, 0, SGL_ATTN_ABI_MINOR, 0, "test", NULL, host_log, NULL};
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    assert_int_equal(sgl_attn_validate_entry(&api, &ans), SGL_ATTN_OK);
    assert_non_null(ans.plugin);
    assert_string_equal(ans.plugin->name, "validate");
    assert_int_equal(ans.plugin->role, SGL_ATTN_ROLE_LAYER);
    assert_int_equal(ans.plugin->platform, SGL_ATTN_PLATFORM_NONE);
    return ans.plugin;
}

sgl_attn_backend *make_layer(fx *f, fake_inner *inner, int ops) {
    fake_make(inner, ops);
    char err[256] = "";
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &f->model;
    a.max_reqs = f->max_reqs;
    a.max_tokens = f->max_tokens;
    a.max_context = f->max_ctx;
    a.inner = &inner->base;
    a.inner_caps = &f->caps;
    a.error = err;
    a.error_size = sizeof err;
    sgl_attn_backend *b = NULL;
    int rc = validate_plugin()->create(&a, &b);
    if (rc) fprintf(stderr, "create: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    assert_non_null(b);
    return b;
}

int run_forward(sgl_attn_backend *b, fx *f) {
    return f->batch.forward_mode == SGL_ATTN_MODE_EXTEND ? b->ops->forward_extend(b, &f->args)
                                                         : b->ops->forward_decode(b, &f->args);
}
