/* unavailable.c - loads fine, but its probe finds no device and says why in
 * the runtime's words. */
#include "fake.h"

#define FAKE_REASON "fake runtime: no device found (error 100)"

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 0;
    fake_copy(c->reason, sizeof c->reason, FAKE_REASON);
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)out;
    snprintf(a->error, a->error_size, FAKE_REASON);
    return SGL_ATTN_E_DEVICE;
}

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "fake_unavail",
    .version = "1.0",
    .platform = SGL_ATTN_PLATFORM_CUDA,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
