/*
 * cuda_device_ops.h - sgl_attn_device_ops over the CUDA runtime, shared by
 * every CUDA plugin (descriptor field `device_ops`).
 *
 * Return codes: 0 on success; a positive value is the cudaError_t the runtime
 * returned (error_string() gives its words); a negative value is an
 * sgl_attn_status (SGL_ATTN_E_INVALID for a NULL pointer...).  Every call
 * first makes `device` current on the calling thread.
 */
#ifndef SGL_CUDA_DEVICE_OPS_H
#define SGL_CUDA_DEVICE_OPS_H

#include "sgl_attn_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table itself (usable in a static descriptor initialiser), and a getter. */
extern const sgl_attn_device_ops sgl_cuda_device_ops_table;
const sgl_attn_device_ops *sgl_cuda_device_ops(void);

#ifdef __cplusplus
}
#endif
#endif
