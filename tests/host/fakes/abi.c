/* abi.c - a fake that speaks another ABI: -DFAKE_MAJOR / -DFAKE_MINOR.  It
 * answers OK regardless (the worst case): the host must refuse it itself. */
#include "fake.h"

static int probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    (void)c;
    return SGL_ATTN_E_INTERNAL; /* never reached: the host refuses first */
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    (void)out;
    return SGL_ATTN_E_INTERNAL;
}

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = FAKE_MAJOR,
    .abi_minor = FAKE_MINOR,
    .name = FAKE_NAME,
    .version = "1.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    (void)host;
    answer->abi_major = FAKE_MAJOR;
    answer->abi_minor = FAKE_MINOR;
    answer->plugin = &plugin;
    return SGL_ATTN_OK;
}
