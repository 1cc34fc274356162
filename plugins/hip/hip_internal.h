/*
 * hip_internal.h - how the parts of the hip_attn plugin fit together.
 *
 *   hip_launch.hip   launchers of the kernels shared with cuda_attn
 *                    (plugins/sdk/attn_kernels/, over gpu_compat.h): plan,
 *                    save-KV, portable split-KV decode, portable extend
 *   hip_runtime.c    HIP error text, device query, device_ops
 *   hip_check.c      tensor / batch / model checks with messages
 *   hip_backend.c    create, metadata (device-side plan), forwards
 *   hip_plugin.c     descriptor, entry, probe
 *
 * Sizing (tiles, work-list buffers, grid bounds) is the shared kernels' pure
 * C (plugins/sdk/attn_kernels/sizing.c), linked in, so both plugins plan
 * identically for them.  Built by hipcc for gfx90a, gfx940 and
 * gfx1030 only; not yet run on AMD hardware (docs/platforms.md).
 */
#ifndef SGL_HIP_INTERNAL_H
#define SGL_HIP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attn_kernels/portable_launch.h"
#include "attn_kernels/sizing.h"
#include "sdk_tensor.h"
#include "sgl_attn_abi.h"

#define HA_NAME "hip_attn"
#define HA_ERR_MAX 512

/* The archs the kernels are built for (module.mk's --offload-arch list). */
#define HA_ARCHS "gfx90a, gfx940, gfx1030"

typedef struct ha_device_info {
    char name[96];
    char arch[48];      /* "gfx90a" (features after ':' dropped) */
    uint64_t mem_bytes;
    int cu_count;
} ha_device_info;

/* "what: hipErrorNoDevice (100): no ROCm-capable device is detected" */
void ha_format_error(char *dst, size_t size, const char *what, int code);
/* Devices the runtime sees (0 with why set when none / no runtime). */
int ha_device_count(char *why, size_t why_size);
int ha_device_query(int device, ha_device_info *out, char *err, size_t err_size);
/* 1 when `arch` is one this build carries code for. */
int ha_arch_supported(const char *arch);

extern const sgl_attn_device_ops ha_device_ops;

/* ------------------------------------------------------------ hip_check.c */

typedef struct ha_msg {
    char *buf;
    size_t size;
    const char *call;
} ha_msg;

int ha_model_check(const sgl_attn_model *m, char *why, size_t why_size);
/* A [n0, n1, n2] HIP device tensor of dtype bit dt, last stride 1, the
 * others whole 16-byte rows, 16-byte aligned; strides to st[]. */
int ha_check_float3(const ha_msg *m, const DLTensor *t, const char *what, uint32_t dt, int64_t n0, int64_t n1,
                    int64_t n2, int64_t st[3]);
int ha_check_index1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n);
int ha_check_index2(const ha_msg *m, const DLTensor *t, const char *what);
int ha_check_f32_1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n);
#define ha_data sgl_sdk_data

/* ---------------------------------------------------------- hip_backend.c */

int ha_create(const sgl_attn_create_args *args, sgl_attn_backend **out);

#endif
