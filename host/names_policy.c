/* names_policy.c - names the conf and model files use for platforms, hybrid
 * kinds and dtypes, read back into enums. */
#include <string.h>

#include "rules.h"

/* The names are the public ones (names.c); these read them back. */
int pol_platform_from_name(const char *name) {
    for (int i = 1; i < SGL_ATTN_PLATFORM_COUNT_; i++)
        if (!strcmp(name, sgl_attn_platform_name(i))) return i;
    return -1;
}

int pol_hybrid_kind_from_name(const char *name) {
    for (int i = 1; i < SGL_ATTN_HYBRID_COUNT_; i++)
        if (!strcmp(name, sgl_attn_hybrid_kind_name(i))) return i;
    return -1;
}

static const struct {
    const char *name;
    uint32_t bit;
} dtypes[] = {
    {"f32", SGL_ATTN_DT_F32},         {"float32", SGL_ATTN_DT_F32},  {"fp32", SGL_ATTN_DT_F32},
    {"f16", SGL_ATTN_DT_F16},         {"float16", SGL_ATTN_DT_F16},  {"fp16", SGL_ATTN_DT_F16},
    {"half", SGL_ATTN_DT_F16},        {"bf16", SGL_ATTN_DT_BF16},    {"bfloat16", SGL_ATTN_DT_BF16},
    {"f64", SGL_ATTN_DT_F64},         {"float64", SGL_ATTN_DT_F64},  {"fp8_e4m3", SGL_ATTN_DT_FP8_E4M3},
    {"float8_e4m3fn", SGL_ATTN_DT_FP8_E4M3},
};

const char *pol_dtype_name(uint32_t dt_bit) {
    switch (dt_bit) {
    case SGL_ATTN_DT_F32: return "f32";
    case SGL_ATTN_DT_F16: return "f16";
    case SGL_ATTN_DT_BF16: return "bf16";
    case SGL_ATTN_DT_F64: return "f64";
    case SGL_ATTN_DT_FP8_E4M3: return "fp8_e4m3";
    default: return "?";
    }
}

uint32_t pol_dtype_from_name(const char *name) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(name, dtypes[i].name)) return dtypes[i].bit;
    return 0;
}

int pol_valid_name(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')) return 0;
    return n >= 1 && n <= SGL_ATTN_NAME_MAX;
}
