/*
 * cuda_error.h - CUDA runtime errors as text, for every CUDA plugin.
 *
 * The host-side C of the CUDA plugins (probe, device ops, backends) reports a
 * failed runtime call with the call, the runtime's error name and its own
 * words, e.g. "cudaMalloc(1073741824 bytes): cudaErrorMemoryAllocation (2):
 * out of memory".  Plain C11 over the static cudart's C API.
 */
#ifndef SGL_CUDA_ERROR_H
#define SGL_CUDA_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "<what>: <cudaErrorName> (<code>): <cudaGetErrorString>" into buf (always
 * terminated).  `code` is a cudaError_t. */
void sgl_cuda_format_error(char *buf, size_t size, const char *what, int code);

/* The runtime's description of `code` (never NULL). */
const char *sgl_cuda_error_text(int code);

#ifdef __cplusplus
}
#endif
#endif
