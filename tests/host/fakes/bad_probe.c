/* bad_probe.c - a probe that crashes (-DFAKE_CRASH: a real SIGSEGV) or
 * hangs (-DFAKE_HANG), for the probe isolation tests.  Never probe it
 * in-process. */
#include <signal.h>
#include <unistd.h>

#include "fake.h"

static int probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    (void)c;
#ifdef FAKE_CRASH
    volatile uintptr_t addr = 8; /* hidden from the optimiser: a real fault */
    *(volatile int *)addr = 1;
#endif
#ifdef FAKE_HANG
    for (;;) pause();
#endif
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
    .name = FAKE_NAME,
    .version = "1.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
