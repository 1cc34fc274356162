/* cli_fake.c - fakes for the attnctl tests (tests/cli), one source built
 * under several names (tests/cli/module.mk):
 *   -DFAKE_NAME="..."         the plugin's name
 *   -DFAKE_GPU                a CUDA-platform plugin (else CPU), head dims up to 128
 *   -DFAKE_ABSENT             its one device is not here (unavailable, "none")
 *   -DFAKE_EVIL               reason, device and arch names carry escape
 *                             sequences, an OSC 52 clipboard write and a carriage
 *                             return; the reason is longer than caps.reason
 *   -DFAKE_ALIAS1/2="..."     descriptor aliases
 * It is only ever selected and listed, never created with real work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_attn_abi.h"

#ifndef FAKE_NAME
#define FAKE_NAME "cli_fake"
#endif

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

static void copy(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

#define EVIL_SEQ "\033[2J\033[H\033]52;c;cm0gLXJmIH4=\007\rusable "

static int probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW | SGL_ATTN_FEAT_SOFTCAP;
    c->page_size_max = 256;
#if defined(FAKE_GPU)
    c->head_dim_qk_max = c->head_dim_v_max = 128;
    c->score = 50;
#if defined(FAKE_ABSENT)
    c->available = 0;
    copy(c->device_name, sizeof c->device_name, "none");
    copy(c->reason, sizeof c->reason, "no fake GPU here (fakeErrorNoDevice)");
#else
    c->available = 1;
    copy(c->device_name, sizeof c->device_name, "Fake GPU 0");
    copy(c->arch_name, sizeof c->arch_name, "sm_90");
    c->arch_major = 9;
    c->arch_minor = 0;
    c->memory_bytes = 150754820096ull;
    c->compute_units = 132;
#endif
#else
    c->head_dim_qk_max = c->head_dim_v_max = 256;
    c->score = 0; /* never chosen automatically: only by name */
    c->available = 1;
    copy(c->device_name, sizeof c->device_name, "fake cpu");
    copy(c->arch_name, sizeof c->arch_name, "fake1");
#endif
#if defined(FAKE_EVIL)
    c->available = 0;
    copy(c->device_name, sizeof c->device_name, "evil\033[31m device\033]0;title\007");
    copy(c->arch_name, sizeof c->arch_name, "sm\r\033[K90");
    {
        /* longer than caps.reason: the whole text goes in reason_long */
        char whole[SGL_ATTN_REASON_LONG_MAX];
        int n = snprintf(whole, sizeof whole, "%s", EVIL_SEQ);
        for (int i = 0; i < 40 && n < 700; i++) n += snprintf(whole + n, sizeof whole - (size_t)n, "word%02d ", i);
        snprintf(whole + n, sizeof whole - (size_t)n, "END");
        copy(c->reason, sizeof c->reason, whole);
        if (c->struct_size >= offsetof(sgl_attn_caps, reason_long) + sizeof c->reason_long)
            copy(c->reason_long, sizeof c->reason_long, whole);
    }
#endif
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)out;
    snprintf(a->error, a->error_size, FAKE_NAME " is a test fake and creates nothing");
    return SGL_ATTN_E_UNSUPPORTED;
}

static const char *const aliases[] = {
#ifdef FAKE_ALIAS1
    FAKE_ALIAS1,
#endif
#ifdef FAKE_ALIAS2
    FAKE_ALIAS2,
#endif
    NULL};

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = FAKE_NAME,
    .version = "1.0",
    .description = "attnctl test fake",
    .license = "Apache-2.0",
#if defined(FAKE_GPU)
    .platform = SGL_ATTN_PLATFORM_CUDA,
#else
    .platform = SGL_ATTN_PLATFORM_CPU,
#endif
    .role = SGL_ATTN_ROLE_FULL,
    .aliases = aliases,
    .probe = probe,
    .create = create,
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
