/* undefined.c - calls a function nothing defines: RTLD_NOW must refuse it at
 * load time, naming the symbol, rather than at the first call. */
#include "fake.h"

void sgl_attn_fake_symbol_nobody_defines(void);

static int probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    (void)c;
    sgl_attn_fake_symbol_nobody_defines();
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
    .name = "fake_undefined",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
