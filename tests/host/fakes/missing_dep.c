/* missing_dep.c - needs libsglfake_gone.so, which the loader cannot find:
 * the status must name that library. */
#include "fake.h"

int sglfake_gone(void);

static int probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    c->available = sglfake_gone() == 7;
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    (void)out;
    return SGL_ATTN_E_INTERNAL;
}

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "fake_missing_dep",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
