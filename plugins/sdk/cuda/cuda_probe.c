/* cuda_probe.c - the device half of a probe, and the device query (sdk_cuda.h). */
#include "sdk_cuda.h"

#include <string.h>

#include <cuda_runtime_api.h>

#include "sdk_text.h"

/* The device count, or the runtime's reason for none. */
static int device_count(int *count, char *why, size_t why_size) {
    int n = 0; /* the runtime leaves it unset when the driver is missing */
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* do not leave it for the next caller */
        sgl_sdk_str(why, why_size, "%s (%s)", sgl_sdk_cuda_error_text((int)e),
                 cudaGetErrorName(e) ? cudaGetErrorName(e) : "cudaError?");
        *count = 0;
        return (int)e;
    }
    *count = n;
    if (n <= 0) sgl_sdk_str(why, why_size, "no CUDA device found (cudaGetDeviceCount returned 0)");
    return 0;
}

int sgl_sdk_cuda_probe(uint32_t index, sgl_attn_caps *caps, int min_major, int min_minor) {
    if (!caps) return SGL_ATTN_E_INVALID;
    caps->arch_major = caps->arch_minor = -1;
    caps->arch_min_major = min_major;
    caps->arch_min_minor = min_minor;
    caps->arch_max_major = caps->arch_max_minor = -1;

    int count = 0;
    char why[SGL_ATTN_REASON_MAX];
    device_count(&count, why, sizeof why);
    if (count <= 0) {
        if (index > 0) return SGL_ATTN_E_NOT_FOUND;
        caps->available = 0;
        sgl_sdk_str(caps->reason, sizeof caps->reason, "%s", why);
        sgl_sdk_str(caps->device_name, sizeof caps->device_name, "none");
        sgl_sdk_str(caps->arch_name, sizeof caps->arch_name, "none");
        return SGL_ATTN_OK;
    }
    if (index >= (uint32_t)count) return SGL_ATTN_E_NOT_FOUND;

    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, (int)index);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        caps->available = 0;
        sgl_sdk_cuda_format_error(caps->reason, sizeof caps->reason, "cudaGetDeviceProperties", (int)e);
        sgl_sdk_str(caps->device_name, sizeof caps->device_name, "unknown");
        return SGL_ATTN_OK;
    }
    sgl_sdk_str(caps->device_name, sizeof caps->device_name, "%s", p.name);
    sgl_sdk_str(caps->arch_name, sizeof caps->arch_name, "sm_%d%d", p.major, p.minor);
    caps->arch_major = p.major;
    caps->arch_minor = p.minor;
    caps->memory_bytes = (uint64_t)p.totalGlobalMem;
    caps->compute_units = (uint32_t)p.multiProcessorCount;
    if (p.major < min_major || (p.major == min_major && p.minor < min_minor)) {
        caps->available = 0;
        sgl_sdk_str(caps->reason, sizeof caps->reason,
                 "needs SM %d.%d or newer; device %u (%s) is SM %d.%d", min_major, min_minor, index,
                 p.name, p.major, p.minor);
        return SGL_ATTN_OK;
    }
    caps->available = 1;
    caps->reason[0] = 0;
    return SGL_ATTN_OK;
}

int sgl_sdk_cuda_device_query(int device, sgl_sdk_cuda_device *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    int count = 0;
    char why[SGL_ATTN_REASON_MAX];
    int rc = device_count(&count, why, sizeof why);
    if (rc != 0 || count <= 0) {
        sgl_sdk_str(err, err_size, "CUDA device %d: %s", device, why);
        return rc != 0 ? SGL_ATTN_E_DEVICE : SGL_ATTN_E_NOT_FOUND;
    }
    if (device < 0 || device >= count) {
        sgl_sdk_str(err, err_size, "CUDA device %d does not exist (%d device%s)", device, count,
                 count == 1 ? "" : "s");
        return SGL_ATTN_E_NOT_FOUND;
    }
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        sgl_sdk_cuda_format_error(err, err_size, "cudaGetDeviceProperties", (int)e);
        return SGL_ATTN_E_DEVICE;
    }
    out->sm_major = p.major;
    out->sm_minor = p.minor;
    out->sm_count = p.multiProcessorCount;
    out->smem_per_block_optin = p.sharedMemPerBlockOptin;
    out->smem_per_sm = p.sharedMemPerMultiprocessor;
    out->l2_bytes = p.l2CacheSize;
    out->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    sgl_sdk_str(out->name, sizeof out->name, "%s", p.name);
    return SGL_ATTN_OK;
}
