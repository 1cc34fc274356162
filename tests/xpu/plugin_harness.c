/* plugin_harness.c - see plugin_harness.h. */
#include "plugin_harness.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *get_option(void *ctx, const char *plugin, const char *key) {
    tplugin *tp = ctx;
    /* The options are this plugin's: asked under another name, there are none. */
    if (tp->p && (!plugin || strcmp(plugin, tp->p->name))) return NULL;
    for (int i = 0; i < 8 && tp->opt_keys[i]; i++)
        if (!strcmp(tp->opt_keys[i], key)) return tp->opt_vals[i];
    return NULL;
}

static void host_log(void *ctx, int level, const char *plugin, const char *fmt, ...) {
    (void)ctx;
    (void)level;
    (void)plugin;
    (void)fmt;
}

static int negotiate(tplugin *tp) {
    sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)(uintptr_t)dlsym(tp->so, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!entry) return -1;
    sgl_attn_host_api api = {
        .struct_size = sizeof api,
        .abi_major = SGL_ATTN_ABI_MAJOR,
        .abi_minor_min = 0,
        .abi_minor_max = SGL_ATTN_ABI_MINOR,
        .host_version = "test",
        .host_ctx = tp,
        .log = host_log,
        .get_option = get_option,
    };
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    /* The api lives on this stack frame only: a plugin must not keep it. */
    if (entry(&api, &ans) != SGL_ATTN_OK || !ans.plugin) return -1;
    tp->p = ans.plugin;
    return 0;
}

const sgl_attn_host_api *tplugin_host;

int tplugin_open(tplugin *tp, const char *path, char *err, size_t err_size) {
    tp->create_host = (sgl_attn_host_api){
        .struct_size = sizeof(sgl_attn_host_api),
        .abi_major = SGL_ATTN_ABI_MAJOR,
        .abi_minor_min = 0,
        .abi_minor_max = SGL_ATTN_ABI_MINOR,
        .host_version = "test",
        .host_ctx = tp,
        .log = host_log,
        .get_option = get_option,
    };
    tplugin_host = &tp->create_host;
    tp->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!tp->so) {
        snprintf(err, err_size, "dlopen %s: %s", path, dlerror());
        return -1;
    }
    if (negotiate(tp)) {
        snprintf(err, err_size, "%s: negotiation failed", path);
        dlclose(tp->so);
        tp->so = NULL;
        return -1;
    }
    return 0;
}

int tplugin_renegotiate(tplugin *tp) { return negotiate(tp); }

void tplugin_close(tplugin *tp) {
    /* Sanitizer runs keep the plugin mapped so leak stacks stay readable. */
    if (tp->so && !getenv("SGL_ATTN_NO_UNLOAD")) dlclose(tp->so);
    tp->so = NULL;
    tp->p = NULL;
}

sgl_attn_model tmodel(int32_t hq, int32_t hkv, int32_t d, uint32_t dtype) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = hq;
    m.num_kv_heads = hkv;
    m.head_dim_qk = m.head_dim_v = d;
    m.dtype = m.kv_dtype = dtype;
    m.sliding_window = -1;
    return m;
}

sgl_attn_create_args tcreate_args(const sgl_attn_model *m, int32_t max_reqs, int32_t max_tokens,
                                  int32_t max_context, char *err, size_t err_size) {
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = m;
    a.max_reqs = max_reqs;
    a.max_tokens = max_tokens;
    a.max_context = max_context;
    a.error = err;
    a.error_size = err_size;
    return a;
}

int tprobe(const sgl_attn_plugin *p, int32_t device, sgl_attn_caps *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    return p->probe(device, c);
}

int dtensor_device_type = kDLOpenCL;

static size_t dl_bytes(DLDataType dt, int ndim, const int64_t *shape) {
    size_t n = (size_t)dt.bits / 8;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}

int dtensor_put(dtensor *x, const sgl_attn_device_ops *ops, int32_t device, DLDataType dt, int ndim,
                const int64_t *shape, const void *host, size_t off, int off_mode) {
    memset(x, 0, sizeof *x);
    x->ops = ops;
    x->device = device;
    x->bytes = dl_bytes(dt, ndim, shape);
    x->off = off_mode ? off : 0;
    for (int i = 0; i < ndim; i++) x->shape[i] = shape[i];
    size_t total = x->bytes + x->off;
    int rc = 0;
    if (ops) {
        rc = ops->alloc(device, total, &x->base);
        if (rc) return rc;
        unsigned char *tmp = calloc(1, total ? total : 1);
        if (!tmp) return -1;
        if (host) memcpy(tmp + x->off, host, x->bytes);
        rc = ops->copy_to_device(device, x->base, tmp, total);
        free(tmp);
    } else {
        x->base = calloc(1, total ? total : 1);
        if (!x->base) return -1;
        if (host) memcpy((char *)x->base + x->off, host, x->bytes);
    }
    x->t.device.device_type = ops ? (DLDeviceType)dtensor_device_type : kDLCPU;
    x->t.device.device_id = device;
    x->t.ndim = ndim;
    x->t.dtype = dt;
    x->t.shape = x->shape;
    x->t.strides = NULL;
    if (off_mode == 2) {
        x->t.data = (char *)x->base + x->off;
        x->t.byte_offset = 0;
    } else {
        x->t.data = x->base;
        x->t.byte_offset = x->off;
    }
    return rc;
}

int dtensor_get(const dtensor *x, void *host) {
    if (!x->ops) {
        memcpy(host, (char *)x->base + x->off, x->bytes);
        return 0;
    }
    size_t total = x->bytes + x->off;
    unsigned char *tmp = malloc(total ? total : 1);
    if (!tmp) return -1;
    int rc = x->ops->copy_to_host(x->device, tmp, x->base, total);
    if (!rc) memcpy(host, tmp + x->off, x->bytes);
    free(tmp);
    return rc;
}

void dtensor_free(dtensor *x) {
    if (!x->base) return;
    if (x->ops) x->ops->free(x->device, x->base);
    else free(x->base);
    x->base = NULL;
}

DLTensor host_index_view(int64_t *v, int64_t *shape_storage, int64_t n) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    *shape_storage = n;
    t.data = v;
    t.device.device_type = kDLCPU;
    t.ndim = 1;
    t.dtype = dl_int(64);
    t.shape = shape_storage;
    return t;
}

DLDataType dl_float(int bits) { return (DLDataType){kDLFloat, (uint8_t)bits, 1}; }
DLDataType dl_bf16(void) { return (DLDataType){kDLBfloat, 16, 1}; }
DLDataType dl_int(int bits) { return (DLDataType){kDLInt, (uint8_t)bits, 1}; }
