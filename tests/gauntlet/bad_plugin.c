/* bad_plugin.c - one broken plugin per build: -DBAD_<KIND> picks what is
 * wrong with it (tests/gauntlet/module.mk builds each kind into
 * $(TESTDIR)/gauntlet/bad_<kind>.so).  Everything not named by the kind is
 * correct, so the host's verdict can only come from that one defect. */
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sgl_attn_abi.h"

#define ENTRY_DECL                                                                                     \
    SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host,                           \
                                              sgl_attn_plugin_answer *answer)

/* ---------------------------------------------------------- the probe */

#if defined(BAD_PROBE_CRASH)
/* A real wild store, not raise(): what a buggy driver query does.  The
 * pointer comes from getenv so the compiler cannot fold it away. */
__attribute__((no_sanitize("undefined"))) static void crash(void) {
    volatile int *p = (volatile int *)getenv("SGL_ATTN_GAUNTLET_NEVER_SET");
    *p = 1;
}
#endif

__attribute__((unused)) static int bad_probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
#if defined(BAD_PROBE_CRASH)
    crash();
#elif defined(BAD_PROBE_HANG)
    for (;;)
        pause(); /* a driver call that never returns */
#elif defined(BAD_PROBE_FAILS)
    return SGL_ATTN_E_DEVICE;
#endif
    c->available = 1;
    strcpy(c->device_name, "gauntlet");
    c->attn_kinds = SGL_ATTN_KIND_MHA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32;
    c->features = SGL_ATTN_FEAT_DECODE;
#if defined(BAD_CAPS_BITS)
    c->features |= 1u << 27;
#elif defined(BAD_CAPS_LIST)
    c->n_head_dims = SGL_ATTN_MAX_LIST + 1;
#elif defined(BAD_CAPS_AVAILABLE)
    c->available = 7;
#elif defined(BAD_CAPS_ARCH)
    c->arch_min_major = 9;
    c->arch_min_minor = 0;
    c->arch_max_major = 8;
    c->arch_max_minor = 9;
#elif defined(BAD_CAPS_UNTERMINATED)
    memset(c->device_name, 'x', sizeof c->device_name);
#endif
    return SGL_ATTN_OK;
}

static int bad_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    *out = NULL;
    return SGL_ATTN_E_UNSUPPORTED;
}

/* ----------------------------------------------------- device memory ops */

#if defined(BAD_DEVICE_OPS) || defined(BAD_DEVICE_STREAMS)
static int d_alloc(int32_t device, size_t bytes, void **ptr) {
    (void)device;
    *ptr = malloc(bytes ? bytes : 1);
    return *ptr ? 0 : 1;
}
static int d_free(int32_t device, void *ptr) {
    (void)device;
    free(ptr);
    return 0;
}
static int d_copy(int32_t device, void *dst, const void *src, size_t bytes) {
    (void)device;
    memcpy(dst, src, bytes);
    return 0;
}
static int d_sync(int32_t device, void *stream) {
    (void)device, (void)stream;
    return 0;
}
__attribute__((unused)) static int d_stream(int32_t device, void **stream) {
    (void)device;
    *stream = NULL;
    return 0;
}
/* One member missing: the host would call it unchecked when staging tensors. */
static const sgl_attn_device_ops dops = {
    .struct_size = sizeof(sgl_attn_device_ops),
    .alloc = d_alloc,
    .free = d_free,
    .copy_to_device = d_copy,
#if defined(BAD_DEVICE_OPS)
    .copy_to_host = NULL,
#else
    .copy_to_host = d_copy,
#endif
    .synchronize = d_sync,
#if defined(BAD_DEVICE_STREAMS)
    .stream_create = d_stream, /* without stream_destroy */
#endif
};
#endif

/* ----------------------------------------------------- the descriptor */

#if defined(BAD_LONG_NAME)
#define BAD_NAME "a_name_of_sixty_four_characters_which_is_one_more_than_allowed_x"
#elif defined(BAD_NAME_CHARS)
#define BAD_NAME "Gauntlet-Plugin"
#elif defined(BAD_NULL_NAME)
#define BAD_NAME NULL
#elif defined(DUP_NAME)
#define BAD_NAME DUP_NAME
#elif defined(BAD_KIND_NAME)
#define BAD_NAME BAD_KIND_NAME /* gauntlet_bad_<kind>: one name each */
#else
#define BAD_NAME "gauntlet_bad"
#endif

#if defined(BAD_ALIASES)
static const char *const aliases[] = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8",
                                      "a9", "b0", "b1", "b2", "b3", "b4", "b5", "b6", NULL};
#else
static const char *const aliases[] = {"gauntlet_alias", NULL};
#endif

static const sgl_attn_plugin plugin = {
#if defined(BAD_SMALL_STRUCT)
    .struct_size = (uint32_t)offsetof(sgl_attn_plugin, create),
#else
    .struct_size = sizeof(sgl_attn_plugin),
#endif
#if defined(BAD_MAJOR)
    .abi_major = SGL_ATTN_ABI_MAJOR + 1,
#else
    .abi_major = SGL_ATTN_ABI_MAJOR,
#endif
#if defined(BAD_MINOR)
    .abi_minor = SGL_ATTN_ABI_MINOR + 1,
#else
    .abi_minor = SGL_ATTN_ABI_MINOR,
#endif
    .name = BAD_NAME,
    .version = "1.0",
    .description = "gauntlet: a plugin with one defect",
    .license = "Apache-2.0",
#if defined(BAD_PLATFORM)
    .platform = 99,
#else
    .platform = SGL_ATTN_PLATFORM_CPU,
#endif
#if defined(BAD_ROLE)
    .role = 0,
#elif defined(BAD_HYBRID_KIND)
    .role = SGL_ATTN_ROLE_HYBRID,
    .hybrid_kind = 42,
#else
    .role = SGL_ATTN_ROLE_FULL,
#endif
    .aliases = aliases,
#if !defined(BAD_NO_PROBE)
    .probe = bad_probe,
#endif
    .create = bad_create,
#if defined(BAD_DEVICE_OPS) || defined(BAD_DEVICE_STREAMS)
    .device_ops = &dops,
#endif
};

/* ---------------------------------------------------------- the entry */

#if defined(BAD_UNDEFINED)
/* Declared, never defined anywhere: RTLD_NOW must refuse the file. */
extern int gauntlet_undefined_function(void);
#elif defined(BAD_MISSING_DEP)
/* Defined in libgauntlet_dep.so, which the test never puts on the path. */
extern int gauntlet_dep_function(void);
#endif

static void answer_versions(sgl_attn_plugin_answer *answer) {
    answer->abi_major = plugin.abi_major;
    answer->abi_minor = plugin.abi_minor;
}

#if defined(BAD_NO_ENTRY)
/* Exports something, but not the entry point. */
SGL_ATTN_EXPORT int sgl_attn_plugin_entry_v0(const sgl_attn_host_api *host,
                                             sgl_attn_plugin_answer *answer);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry_v0(const sgl_attn_host_api *host,
                                             sgl_attn_plugin_answer *answer) {
    (void)host;
    answer_versions(answer);
    answer->plugin = &plugin;
    return SGL_ATTN_OK;
}
#else
ENTRY_DECL;
ENTRY_DECL {
    (void)host;
    answer_versions(answer);
    answer->plugin = &plugin;
    answer->refusal[0] = 0;
#if defined(BAD_UNDEFINED)
    if (gauntlet_undefined_function()) return SGL_ATTN_E_INTERNAL;
#elif defined(BAD_MISSING_DEP)
    if (gauntlet_dep_function()) return SGL_ATTN_E_INTERNAL;
#elif defined(BAD_NULL_PLUGIN)
    answer->plugin = NULL;
#elif defined(BAD_REFUSES)
    answer->plugin = NULL;
    strcpy(answer->refusal, "this build needs the gauntlet runtime 9");
    return SGL_ATTN_E_ABI;
#elif defined(BAD_ENTRY_FAILS)
    answer->plugin = NULL;
    return SGL_ATTN_E_INTERNAL;
#endif
    return SGL_ATTN_OK;
}
#endif
