/*
 * xpu_internal.h - how the parts of the xpu_ocl plugin fit together.
 *
 *   xpu_plugin.c    descriptor, entry, probe, plugin options
 *   xpu_levelzero.c the Level Zero look for an Intel GPU (libze_loader, dlopen'd)
 *   xpu_devices.c   OpenCL device enumeration and ranking, shared contexts
 *   xpu_devops.c    sgl_attn_device_ops over cl_mem buffers
 *   xpu_cl_error.c  OpenCL status names (a leaf: calls no other file)
 *   xpu_program.c   program build with an on-disk binary cache
 *   xpu_tensor.c    DLTensor checks, kernel argument views
 *   xpu_backend.c   backend instance: create, metadata, forward
 *   xpu_attn.cl     the kernels (embedded as xpu_attn_cl.c at build time)
 *
 * Device memory, two models chosen per device when its context opens:
 *  - SVM (default where the device has OpenCL >= 2.0 coarse-grained buffer
 *    SVM: Intel GPUs, PoCL 3.1): a device pointer is a clSVMAlloc address,
 *    so data + k is valid (the harness's guard layout, engines' views).
 *  - buffer (OpenCL 1.2 devices, or SGL_ATTN_XPU_MEMORY=buffer): a device
 *    pointer is a cl_mem handle, as DLPack 0.6 prescribes for kDLOpenCL; the
 *    offset must travel in DLTensor.byte_offset and copies start at the
 *    buffer's beginning.
 * Tensors carry DLPack device type kDLOpenCL either way.
 *
 * Plugin-wide state (the probe and device_ops carry no context): the device
 * list, enumerated once, and per device a reference-counted cl_context,
 * in-order queue and program.  Buffers, streams and instances each hold a
 * reference; the last release frees the context, so nothing outlives use.
 */
#ifndef SGL_XPU_INTERNAL_H
#define SGL_XPU_INTERNAL_H

/* 2.0 for the SVM calls; clCreateCommandQueue (1.2) stays for 1.2 devices. */
#define CL_TARGET_OPENCL_VERSION 200
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

#define XPU_PLUGIN_NAME "xpu_ocl"
#define XPU_MAX_DEVICES 16

/* Kernel limits, mirrored by -D options of the program build. */
#define XPU_WG 64          /* work-group size of the attention kernel */
#define XPU_QK_MAX 1024    /* head_dim_qk held in local memory */
#define XPU_V_MAX 512      /* head_dim_v accumulated in private registers */

/* Error bits the kernels set in the per-instance error word. */
#define XPU_E_ROW 1u    /* req_pool_indices entry outside req_to_token rows */
#define XPU_E_SEQ 2u    /* seq_lens entry < tokens_per_req or > req_to_token columns */
#define XPU_E_TOKENS 4u /* extend lengths do not add up (prefix + new != seq, sum != T) */
#define XPU_E_SLOT 8u   /* req_to_token / out_cache_loc slot outside the KV pool */

/* Device ranking: lower is preferred. */
typedef enum xpu_kind {
    XPU_KIND_INTEL_GPU = 0,
    XPU_KIND_OTHER_GPU = 1,
    XPU_KIND_ACCEL = 2,
    XPU_KIND_CPU = 3
} xpu_kind;

typedef struct xpu_device {
    cl_platform_id platform;
    cl_device_id id;
    xpu_kind kind;
    char name[96];
    char platform_name[64];
    char version[64];        /* CL_DEVICE_VERSION */
    char driver[64];         /* CL_DRIVER_VERSION */
    char c_version[48];      /* CL_DEVICE_OPENCL_C_VERSION */
    cl_ulong mem_bytes;
    cl_ulong local_mem;
    cl_uint compute_units;
    size_t max_wg;
    int has_fp16;
    int svm_capable;         /* OpenCL >= 2.0 with coarse-grained buffer SVM */
    /* Shared objects, created on first use; guarded by the table lock. */
    int refs;
    int svm;                 /* memory model while held (see above) */
    cl_context ctx;
    cl_command_queue queue;
    cl_program program;
    char cache_note[160];    /* how the program was obtained ("cache hit ...") */
    /* SVM allocations of device_ops (base, size), so copies and frees of
     * foreign pointers fail cleanly instead of corrupting memory. */
    struct xpu_alloc { char *base; size_t size; } *allocs;
    size_t n_allocs, cap_allocs;
} xpu_device;

/* ------------------------------------------------------ xpu_levelzero.c */

/* Look for Intel GPUs through Level Zero.  Returns their count (0 when none
 * or no runtime) and writes one line for the probe ("zeInit(GPU_ONLY) ->
 * 0x78000001 ZE_RESULT_ERROR_UNINITIALIZED"...). */
int xpu_levelzero_scan(char *note, size_t note_size);

/* ------------------------------------------------------- xpu_devices.c */

/* Enumerate once.  Returns the number of OpenCL devices found (all kinds). */
int xpu_devices_count(void);
/* The summary of what enumeration saw ("OpenCL: 1 platform ..."). */
const char *xpu_devices_summary(void);
/* The Level Zero line. */
const char *xpu_devices_levelzero_note(void);
/* Visible index -> device (GPUs first, CPUs only when allowed). NULL past the end. */
xpu_device *xpu_device_visible(int32_t index);
int xpu_devices_visible_count(void);
/* Whether CPU devices are visible: $SGL_ATTN_XPU_ALLOW_CPU when set, else the
 * conf option allow_cpu as the last negotiating host gave it (a probe has no
 * host to ask).  by[by_size] (may be NULL) gets the source when they are, ""
 * when they are not, or why a bad value counts as no. */
#define XPU_ENV_ALLOW_CPU "SGL_ATTN_XPU_ALLOW_CPU"
int xpu_allow_cpu(char *by, size_t by_size);
void xpu_set_conf_allow_cpu(int v);
/* Take / drop a reference on a visible device's shared context, queue and
 * program.  acquire creates them on first use. */
int xpu_device_acquire(int32_t index, xpu_device **out, char *err, size_t err_size);
void xpu_device_release(xpu_device *d);
/* SVM bookkeeping (device held): record / forget an allocation; find whether
 * [p, p + bytes) lies inside one. */
int xpu_svm_record(xpu_device *d, void *base, size_t size);
int xpu_svm_forget(xpu_device *d, void *base);
int xpu_svm_contains(xpu_device *d, const void *p, size_t bytes);
/* The device if it is held (buffers, streams or instances exist), else NULL. */
xpu_device *xpu_device_held(int32_t index);
/* The device's program, built (or read from the cache) on first request
 * while the device is held. */
int xpu_device_program(xpu_device *d, cl_program *out, char *err, size_t err_size);

/* --------------------------------------------------------- xpu_program.c */

/* Build (or load from the cache) the kernels for d->ctx.  d->cache_note says how. */
int xpu_program_build(xpu_device *d, cl_program *out, char *err, size_t err_size);
/* The cache directory in use, or "" when caching is off (reason in why). */
int xpu_cache_dir(char *dir, size_t size, char *why, size_t why_size);

extern const char xpu_attn_cl_source[];

/* ---------------------------------------------------------- xpu_devops.c */

extern const sgl_attn_device_ops xpu_device_ops;

/* -------------------------------------------------------- xpu_cl_error.c */

const char *xpu_cl_error_name(int code);

/* ---------------------------------------------------------- xpu_backend.c */

int xpu_create(const sgl_attn_create_args *args, sgl_attn_backend **out);

#endif
