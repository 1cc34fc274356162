/*
 * sdk_cuda.h - the CUDA runtime glue every CUDA plugin shares: runtime errors
 * as text, the device half of a probe, a device query for create, and the
 * plugin's sgl_attn_device_ops.  Plain C11 over the static cudart's C API;
 * built only where nvcc is (cuda.mk), into $(SDK_CUDA_OBJS).
 *
 *   #include "cuda/sdk_cuda.h"
 */
#ifndef SGL_SDK_CUDA_H
#define SGL_SDK_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_fault.h"
#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------- errors */

/* "<what>: <cudaErrorName> (<code>): <cudaGetErrorString>" into buf (always
 * terminated), e.g. "cudaMalloc(1073741824 bytes): cudaErrorMemoryAllocation
 * (2): out of memory".  `code` is a cudaError_t. */
void sgl_sdk_cuda_format_error(char *buf, size_t size, const char *what, int code);

/* The runtime's description of `code` (never NULL). */
const char *sgl_sdk_cuda_error_text(int code);

/* ------------------------------------------------------------------ probe */

/* Fill the device half of caps for device `index` (available, reason, names,
 * SM version, memory, SM count, the needed arch range); the device is usable
 * only at SM min_major.min_minor or newer.  With no driver or no GPU, index 0
 * answers available = 0 with the runtime's own words (the static cudart
 * loads without a driver).  Returns SGL_ATTN_OK (caps filled, available or
 * not) or SGL_ATTN_E_NOT_FOUND (index past the last device, as the ABI asks). */
int sgl_sdk_cuda_probe(uint32_t index, sgl_attn_caps *caps, int min_major, int min_minor);

/* What create and planning need to know about a device. */
typedef struct sgl_sdk_cuda_device {
    int sm_major, sm_minor;
    int sm_count;
    size_t smem_per_block_optin; /* largest dynamic + static smem one block may ask for */
    size_t smem_per_sm;
    int l2_bytes;
    int max_threads_per_sm;
    char name[96];
} sgl_sdk_cuda_device;

/* Query device `device`; on failure SGL_ATTN_E_DEVICE / E_NOT_FOUND with the
 * runtime's words in err. */
int sgl_sdk_cuda_device_query(int device, sgl_sdk_cuda_device *out, char *err, size_t err_size);

/* ------------------------------------------------------------- device ops */

/* sgl_attn_device_ops over the CUDA runtime (descriptor field `device_ops`).
 * Return codes: 0 on success; a positive value is the cudaError_t the runtime
 * returned (error_string() gives its words); a negative value is an
 * sgl_attn_status (SGL_ATTN_E_INVALID for a NULL pointer...).  Every call
 * first makes `device` current on the calling thread. */
extern const sgl_attn_device_ops sgl_sdk_cuda_device_ops;

/* ---------------------------------------------------------- index faults */

/* An instance's index fault record (gpu_fault.h): the mapped pinned host
 * record and the device claim word, allocated at create. */
typedef struct sgl_sdk_cuda_fault {
    sgl_gpu_fault *host;   /* the record as the host reads it */
    sgl_gpu_fault_ref dev; /* what the kernels are handed */
} sgl_sdk_cuda_fault;

/* Allocate and clear the record on the current device (create only). */
int sgl_sdk_cuda_fault_alloc(sgl_sdk_cuda_fault *f, char *err, size_t err_size);
void sgl_sdk_cuda_fault_free(sgl_sdk_cuda_fault *f);
/* The metadata calls' check, with no sync: when a kernel has recorded a
 * fault, write "<call>: <what was out of range>" into buf, clear the record
 * (the claim is released by an async memset on `stream`, after the kernels
 * already queued there) and return 1; else 0 (also while `stream` is under
 * graph capture: the record then waits for the next call).  A fault shows here once the
 * kernel that met it has run: the call after the faulting batch, or later
 * when the engine has not waited on the stream since. */
int sgl_sdk_cuda_fault_take(sgl_sdk_cuda_fault *f, void *stream, const char *call, char *buf, size_t size);
/* Read and clear the record with no sync, as sgl_sdk_cuda_fault_take, but
 * hand back the record itself (for a plugin with its own codes); 1 if one. */
int sgl_sdk_cuda_fault_take_raw(sgl_sdk_cuda_fault *f, void *stream, sgl_gpu_fault *out);
/* The tensor's name for a SGL_FAULT_* value ("index tensor" for others). */
const char *sgl_sdk_fault_tensor_name(int tensor);

#ifdef __cplusplus
}
#endif
#endif
