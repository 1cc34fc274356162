/* plugin_def.h - defines one wrapper's descriptor `hyb_plugin_<name>`; each
 * plugin_<kind>.c is one use of it.  entry.c exports it from its .so. */
#ifndef HYB_PLUGIN_DEF_H
#define HYB_PLUGIN_DEF_H

#include "hyb.h"
#include "sdk_plugin.h"

#define HYB_DEFINE_PLUGIN(NAME, KIND, DESCRIPTION, ...)                                        \
    static const hyb_kind_impl impl_ = {KIND, #NAME, hyb_##NAME##_forward_f32,                  \
                                        hyb_##NAME##_forward_f64};                              \
    static int probe_(uint32_t i, sgl_attn_caps *c) { return hyb_probe(i, c, KIND); }          \
    static int supports_(const sgl_attn_model *m, const sgl_attn_caps *c, char *why, size_t n) { \
        (void)c;                                                                               \
        return sgl_sdk_lin_supports(KIND, m, HYB_STATE_DTYPES, why, n);                        \
    }                                                                                          \
    static int create_(const sgl_attn_create_args *a, sgl_attn_backend **o) {                  \
        return hyb_create(&impl_, a, o);                                                       \
    }                                                                                          \
    static uint64_t state_bytes_(const sgl_attn_model *m) {                                    \
        return sgl_sdk_lin_state_bytes(KIND, m, HYB_STATE_DTYPES);                             \
    }                                                                                          \
    static const char *const model_types_[] = {__VA_ARGS__, NULL};                             \
    extern const sgl_attn_plugin hyb_plugin_##NAME;                                            \
    const sgl_attn_plugin hyb_plugin_##NAME = {                                                \
        SGL_SDK_PLUGIN_HEAD,                                                                   \
        .name = #NAME,                                                                         \
        .version = "0.1.0",                                                                    \
        .description = DESCRIPTION,                                                            \
        .license = "Apache-2.0",                                                               \
        .platform = SGL_ATTN_PLATFORM_CPU,                                                     \
        .role = SGL_ATTN_ROLE_HYBRID,                                                          \
        .hybrid_kind = KIND,                                                                   \
        .model_types = model_types_,                                                           \
        .probe = probe_,                                                                       \
        .supports_model = supports_,                                                           \
        .create = create_,                                                                     \
        .state_bytes_per_request = state_bytes_,                                               \
    };

#endif
