/* sdk_text.h - message helpers every plugin writes errors with: bounded
 * formatting, names of dtypes, devices and shapes, create's error, and lines
 * to the host's log.  A leaf of the SDK: sdk_text.c calls nothing else of it. */
#ifndef SGL_SDK_TEXT_H
#define SGL_SDK_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

#if defined(__GNUC__)
#define SGL_SDK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SGL_SDK_PRINTF(f, a)
#endif

/* snprintf into dst[n]; nothing when dst is NULL or n is 0. */
void sgl_sdk_str(char *dst, size_t n, const char *fmt, ...) SGL_SDK_PRINTF(3, 4);
/* Appends to the string already in dst[n] (truncating, always terminated). */
void sgl_sdk_append(char *dst, size_t n, const char *fmt, ...) SGL_SDK_PRINTF(3, 4);
/* Puts `prefix` before the string already in dst[n]: a message written by a
 * check, named for its call only when it fails ("forward_decode: " + ...). */
void sgl_sdk_prepend(char *dst, size_t n, const char *prefix);

/* A probe's reason, whole: in caps->reason_long when the host's caps have
 * it (ABI 1.2), and its start, cut at a word boundary with "...", in
 * caps->reason for hosts that predate 1.2. */
void sgl_sdk_caps_reason(sgl_attn_caps *c, const char *fmt, ...) SGL_SDK_PRINTF(2, 3);

/* Writes "fmt..." to create_args.error (when the caller gave one) and
 * returns rc: `return sgl_sdk_create_fail(a, SGL_ATTN_E_INVALID, "...")`. */
int sgl_sdk_create_fail(const sgl_attn_create_args *a, int rc, const char *fmt, ...) SGL_SDK_PRINTF(3, 4);

/* The host that creates the instance (create_args.host, ABI 1.1); NULL from
 * a 1.0 host.  An instance that logs keeps it: no plugin needs a global. */
const sgl_attn_host_api *sgl_sdk_create_host(const sgl_attn_create_args *a);
/* One line "fmt..." to h's log as `plugin` at SGL_ATTN_LOG_* `level`;
 * nothing when h is NULL or has no log. */
void sgl_sdk_log(const sgl_attn_host_api *h, int level, const char *plugin, const char *fmt, ...)
    SGL_SDK_PRINTF(4, 5);

#define SGL_SDK_NAME_MAX 48

/* "float32", "bfloat16", "float8_e4m3", "int64", else "(code 7, bits 16, lanes 1)" in buf. */
const char *sgl_sdk_dtype_name(DLDataType t, char buf[SGL_SDK_NAME_MAX]);
/* A set of SGL_ATTN_DT_* bits: "float32, float16 or bfloat16". */
void sgl_sdk_dtype_set_name(uint32_t set, char *dst, size_t n);
/* DLPack device type: "cpu", "cuda", "cuda_host", "opencl", "rocm" ... */
const char *sgl_sdk_device_name(int32_t device_type);
/* "[4, 8, 128]"; an extent < 0 prints as "*". */
void sgl_sdk_shape_str(char *dst, size_t n, int ndim, const int64_t *shape);

#endif
