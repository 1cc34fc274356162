/* sdk_plugin.h - the skeleton every plugin repeats: its descriptor, the entry
 * point that negotiates and answers with it, the parts of a probe no device
 * knows, and a wrapper's calls into an inner backend.
 *
 *   SGL_SDK_PLUGIN(my_plugin, .name = "my_plugin", .version = "0.1.0", ...,
 *                  .probe = my_probe, .create = my_create)
 *
 * defines `static const sgl_attn_plugin my_plugin` (struct_size and ABI
 * version filled in) and the exported sgl_attn_plugin_entry that answers with
 * it.  A plugin embedded in libsglattn (which must not export an entry) names
 * its hidden entry instead: SGL_SDK_EMBEDDED_PLUGIN(sgl_attn_cpu_ref_entry,
 * cref_plugin, ...).  A plugin that must see the host at negotiation uses
 * SGL_SDK_PLUGIN_HOOKED(desc, hook, ...): hook(host) runs after a successful
 * answer, before the entry returns. */
#ifndef SGL_SDK_PLUGIN_H
#define SGL_SDK_PLUGIN_H

#include <stddef.h>

#include "sgl_attn_abi.h"

/* The descriptor's fixed head: its size and the ABI it was built for. */
#define SGL_SDK_PLUGIN_HEAD                                                                                       \
    .struct_size = sizeof(sgl_attn_plugin), .abi_major = SGL_ATTN_ABI_MAJOR, .abi_minor = SGL_ATTN_ABI_MINOR

/* An entry function `fn` (with its prototype) answering with descriptor `desc`. */
#define SGL_SDK_ENTRY_FN(attrs, fn, desc, hook)                                                                   \
    attrs int fn(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);                                 \
    attrs int fn(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {                                \
        int rc_ = sgl_attn_answer(host, answer, &(desc));                                                         \
        if (rc_ == SGL_ATTN_OK) hook(host);                                                                       \
        return rc_;                                                                                               \
    }

static inline void sgl_sdk_no_hook(const sgl_attn_host_api *host) { (void)host; }

#define SGL_SDK_PLUGIN(desc, ...)                                                                                 \
    static const sgl_attn_plugin desc = {SGL_SDK_PLUGIN_HEAD, __VA_ARGS__};                                       \
    SGL_SDK_ENTRY_FN(SGL_ATTN_EXPORT, sgl_attn_plugin_entry, desc, sgl_sdk_no_hook)

#define SGL_SDK_PLUGIN_HOOKED(desc, hook, ...)                                                                    \
    static const sgl_attn_plugin desc = {SGL_SDK_PLUGIN_HEAD, __VA_ARGS__};                                       \
    SGL_SDK_ENTRY_FN(SGL_ATTN_EXPORT, sgl_attn_plugin_entry, desc, hook)

#define SGL_SDK_EMBEDDED_PLUGIN(entry_fn, desc, ...)                                                              \
    static const sgl_attn_plugin desc = {SGL_SDK_PLUGIN_HEAD, __VA_ARGS__};                                       \
    SGL_SDK_ENTRY_FN(, entry_fn, desc, sgl_sdk_no_hook)

/* Caps fields with no architecture to report: all -1. */
static inline void sgl_sdk_caps_no_arch(sgl_attn_caps *c) {
    c->arch_major = c->arch_minor = -1;
    c->arch_min_major = c->arch_min_minor = -1;
    c->arch_max_major = c->arch_max_minor = -1;
}

/* The inner backend's op `f`, or NULL when its (possibly older) vtable
 * stops before it: `int (*fn)(...) = SGL_SDK_INNER_OP(inner, forward_decode);` */
#define SGL_SDK_INNER_OP(inner, f)                                                                                \
    ((inner)->ops_size >= offsetof(sgl_attn_backend_ops, f) + sizeof((inner)->ops->f) ? (inner)->ops->f : NULL)

#endif
