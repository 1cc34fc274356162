/* noop.c - the dispatch benchmark's plugin: every op returns at once.  It
 * names itself after its file (bench copies it 32 times under different
 * names, and names must be unique). */
#include <dlfcn.h>
#include <stdlib.h>

#include "fake.h"

static char name[SGL_ATTN_NAME_MAX + 1] = "noop";

static int metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)b;
    (void)batch;
    return SGL_ATTN_OK;
}

static int forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    (void)b;
    (void)a;
    return SGL_ATTN_OK;
}

static const char *last_error(sgl_attn_backend *b) {
    (void)b;
    return "";
}

static void destroy(sgl_attn_backend *b) { free(b); }

static const sgl_attn_backend_ops ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = metadata,
    .forward_extend = forward,
    .forward_decode = forward,
    .last_error = last_error,
    .destroy = destroy,
};

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    fake_cpu_caps(c);
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    sgl_attn_backend *b = calloc(1, sizeof *b);
    if (!b) return SGL_ATTN_E_NOMEM;
    b->ops = &ops;
    b->ops_size = ops.struct_size;
    b->device = a->device;
    *out = b;
    return SGL_ATTN_OK;
}

static sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = name,
    .version = "1.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

/* name = file name without ".so", kept to [a-z0-9_]. */
int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    Dl_info info;
    if (dladdr((void *)&plugin, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
        size_t n = 0;
        for (; base[n] && base[n] != '.' && n < SGL_ATTN_NAME_MAX; n++)
            name[n] = (base[n] >= 'a' && base[n] <= 'z') || (base[n] >= '0' && base[n] <= '9') ? base[n] : '_';
        name[n] = 0;
    }
    return sgl_attn_answer(host, answer, &plugin);
}
