/* sdk_text.c - see sdk_text.h. */
#include "sdk_text.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void sgl_sdk_str(char *dst, size_t n, const char *fmt, ...) {
    if (!dst || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

void sgl_sdk_append(char *dst, size_t n, const char *fmt, ...) {
    if (!dst || !n) return;
    size_t used = strnlen(dst, n);
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, n - used, fmt, ap);
    va_end(ap);
}

void sgl_sdk_caps_reason(sgl_attn_caps *c, const char *fmt, ...) {
    if (!c) return;
    char whole[SGL_ATTN_REASON_LONG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(whole, sizeof whole, fmt, ap);
    va_end(ap);
    size_t len = strlen(whole);
    const int has_long = c->struct_size >= offsetof(sgl_attn_caps, reason_long) + sizeof c->reason_long;
    if (has_long) snprintf(c->reason_long, sizeof c->reason_long, "%s", len >= sizeof c->reason ? whole : "");
    if (len < sizeof c->reason) {
        memcpy(c->reason, whole, len + 1);
        return;
    }
    size_t cut = sizeof c->reason - 4; /* room for "..." and the terminator */
    while (cut > sizeof c->reason / 2 && whole[cut] != ' ') cut--;
    if (whole[cut] != ' ') cut = sizeof c->reason - 4;
    while (cut > 0 && whole[cut - 1] == ' ') cut--;
    while (cut > 0 && ((unsigned char)whole[cut] & 0xc0) == 0x80) cut--; /* not inside a UTF-8 sequence */
    memcpy(c->reason, whole, cut);
    memcpy(c->reason + cut, "...", 4);
}

void sgl_sdk_prepend(char *dst, size_t n, const char *prefix) {
    if (!dst || !n || !prefix || !*prefix) return;
    const size_t p = strlen(prefix), used = strnlen(dst, n - 1);
    if (p >= n - 1) {
        sgl_sdk_str(dst, n, "%s", prefix);
        return;
    }
    const size_t keep = used < n - 1 - p ? used : n - 1 - p;
    memmove(dst + p, dst, keep);
    memcpy(dst, prefix, p);
    dst[p + keep] = 0;
}

int sgl_sdk_create_fail(const sgl_attn_create_args *a, int rc, const char *fmt, ...) {
    if (!a || !a->error || !a->error_size) return rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->error, a->error_size, fmt, ap);
    va_end(ap);
    return rc;
}

const sgl_attn_host_api *sgl_sdk_create_host(const sgl_attn_create_args *a) {
    return a && a->struct_size >= offsetof(sgl_attn_create_args, host) + sizeof a->host ? a->host : NULL;
}

void sgl_sdk_log(const sgl_attn_host_api *h, int level, const char *plugin, const char *fmt, ...) {
    if (!h || h->struct_size < offsetof(sgl_attn_host_api, log) + sizeof h->log || !h->log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    h->log(h->host_ctx, level, plugin, "%s", line);
}

const char *sgl_sdk_dtype_name(DLDataType t, char buf[SGL_SDK_NAME_MAX]) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return "float32";
    case SGL_ATTN_DT_F16: return "float16";
    case SGL_ATTN_DT_BF16: return "bfloat16";
    case SGL_ATTN_DT_F64: return "float64";
    case SGL_ATTN_DT_FP8_E4M3: return "float8_e4m3";
    default: break;
    }
    if (t.code == kDLInt && t.lanes == 1 && t.bits == 32) return "int32";
    if (t.code == kDLInt && t.lanes == 1 && t.bits == 64) return "int64";
    snprintf(buf, SGL_SDK_NAME_MAX, "(code %u, bits %u, lanes %u)", (unsigned)t.code, (unsigned)t.bits,
             (unsigned)t.lanes);
    return buf;
}

void sgl_sdk_dtype_set_name(uint32_t set, char *dst, size_t n) {
    static const char *const names[] = {"float32", "float16", "bfloat16", "float64", "float8_e4m3"};
    const unsigned count = sizeof names / sizeof names[0];
    unsigned total = 0, done = 0;
    for (unsigned i = 0; i < count; i++) total += (set >> i) & 1u;
    sgl_sdk_str(dst, n, "%s", total ? "" : "(none)");
    for (unsigned i = 0; i < count; i++) {
        if (!(set & (1u << i))) continue;
        done++;
        sgl_sdk_append(dst, n, "%s%s", done == 1 ? "" : done == total ? " or " : ", ", names[i]);
    }
}

const char *sgl_sdk_device_name(int32_t device_type) {
    switch (device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLCUDAHost: return "cuda_host";
    case kDLOpenCL: return "opencl";
    case kDLVulkan: return "vulkan";
    case kDLMetal: return "metal";
    case kDLVPI: return "vpi";
    case kDLROCM: return "rocm";
    case kDLROCMHost: return "rocm_host";
    case kDLExtDev: return "ext_dev";
    case kDLCUDAManaged: return "cuda_managed";
    default: return "unknown";
    }
}

void sgl_sdk_shape_str(char *dst, size_t n, int ndim, const int64_t *shape) {
    sgl_sdk_str(dst, n, "[");
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) sgl_sdk_append(dst, n, "%s*", i ? ", " : "");
        else sgl_sdk_append(dst, n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    sgl_sdk_append(dst, n, "]");
}
