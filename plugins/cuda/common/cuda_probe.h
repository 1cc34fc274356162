/*
 * cuda_probe.h - what a CUDA device is, for every CUDA plugin's probe and create.
 *
 * sgl_cuda_probe_device() fills the device half of sgl_attn_caps (available,
 * reason, names, SM version, memory, SM count, the needed arch range); the
 * plugin then adds its own kinds, dtypes and features.  With no driver or no
 * GPU, index 0 answers available = 0 with the runtime's own words (e.g. "CUDA
 * driver version is insufficient for CUDA runtime version") and any larger
 * index is SGL_ATTN_E_NOT_FOUND, as the ABI asks.
 */
#ifndef SGL_CUDA_PROBE_H
#define SGL_CUDA_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill caps for device `index`; the device is usable only at SM
 * min_major.min_minor or newer.  Returns SGL_ATTN_OK (caps filled, available
 * or not) or SGL_ATTN_E_NOT_FOUND (index past the last device). */
int sgl_cuda_probe_device(uint32_t index, sgl_attn_caps *caps, int min_major, int min_minor);

/* What create and planning need to know about a device. */
typedef struct sgl_cuda_device_info {
    int sm_major, sm_minor;
    int sm_count;
    size_t smem_per_block_optin; /* largest dynamic + static smem one block may ask for */
    size_t smem_per_sm;
    int l2_bytes;
    int max_threads_per_sm;
    char name[96];
} sgl_cuda_device_info;

/* Query device `device`; on failure returns SGL_ATTN_E_DEVICE / E_NOT_FOUND
 * with the runtime's words in err. */
int sgl_cuda_device_query(int device, sgl_cuda_device_info *out, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
