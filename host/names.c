/* names.c - the short names of statuses and enumerations, as printed by
 * attnctl and used in JSON.  Unknown values get "unknown", never NULL. */
#include <stddef.h>

#include "host_internal.h"

#define NAME_OF(table, v) \
    ((v) >= 0 && (size_t)(v) < sizeof(table) / sizeof(table)[0] && (table)[v] ? (table)[v] : "unknown")

const char *sgl_attn_plugin_status_name(int status) {
    static const char *const t[] = {"usable", "unavailable", "load-error", "abi-mismatch", "shadowed",
                                    "disabled"};
    return NAME_OF(t, status);
}

const char *sgl_attn_platform_name(int platform) {
    static const char *const t[] = {"none", "cpu", "cuda", "hip", "xpu", "npu"};
    return NAME_OF(t, platform);
}

const char *sgl_attn_hybrid_kind_name(int kind) {
    static const char *const t[] = {"none", "gdn", "mamba2", "short_conv", "kda",
                                    "lightning", "minimax_sparse", "custom"};
    return NAME_OF(t, kind);
}

const char *sgl_attn_status_name(int status) {
    static const char *const t[] = {"ok", "invalid", "unsupported", "nomem", "device",
                                    "abi", "not-found", "state", "internal"};
    return NAME_OF(t, -status);
}

const char *sgl_attn_caps_reason(const sgl_attn_caps *c) {
    if (!c) return "";
    if (c->struct_size >= offsetof(sgl_attn_caps, reason_long) + sizeof c->reason_long && c->reason_long[0])
        return c->reason_long;
    return c->reason;
}
