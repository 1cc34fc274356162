/* broken.c - the fakes that break one way each, chosen by -D (named
 * -DFAKE_NAME); create always refuses, and none of them is ever created:
 *   FAKE_ABI          speaks another ABI (-DFAKE_MAJOR / -DFAKE_MINOR) and
 *                     answers OK regardless (the worst case): the host must
 *                     refuse it itself, before any probe
 *   FAKE_CRASH        a probe that crashes (a real SIGSEGV), and
 *   FAKE_HANG         one that hangs, for the probe isolation tests: never
 *                     probe them in-process
 *   FAKE_UNDEFINED    calls a function nothing defines: RTLD_NOW must refuse
 *                     it at load time, naming the symbol, rather than at the
 *                     first call
 *   FAKE_MISSING_DEP  needs libsglfake_gone.so, which the loader cannot find:
 *                     the status must name that library */
#include <signal.h>
#include <unistd.h>

#include "fake.h"

#ifndef FAKE_ABI
#define FAKE_MAJOR SGL_ATTN_ABI_MAJOR
#define FAKE_MINOR SGL_ATTN_ABI_MINOR
#endif

#ifdef FAKE_UNDEFINED
void sgl_attn_fake_symbol_nobody_defines(void);
#endif
#ifdef FAKE_MISSING_DEP
int sglfake_gone(void);
#endif

static int probe(uint32_t index, sgl_attn_caps *c) {
    (void)index;
    (void)c;
#ifdef FAKE_ABI
    return SGL_ATTN_E_INTERNAL; /* never reached: the host refuses first */
#endif
#ifdef FAKE_CRASH
    volatile uintptr_t addr = 8; /* hidden from the optimiser: a real fault */
    *(volatile int *)addr = 1;
#endif
#ifdef FAKE_HANG
    for (;;) pause();
#endif
#ifdef FAKE_UNDEFINED
    sgl_attn_fake_symbol_nobody_defines();
#endif
#ifdef FAKE_MISSING_DEP
    c->available = sglfake_gone() == 7;
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
#ifdef FAKE_ABI
    (void)host;
    answer->abi_major = FAKE_MAJOR;
    answer->abi_minor = FAKE_MINOR;
    answer->plugin = &plugin;
    return SGL_ATTN_OK;
#else
    return sgl_attn_answer(host, answer, &plugin);
#endif
}
