/* mla_wide_absent.cpp - the sm_90a wide kernel's entry points
 * (mla_decode_wide_sm90.cu) for the emulated cuda_mla: its own wgmma / TMA
 * code (mla_wgmma_ops.cuh) has no emulated twins (cuda_attn's
 * wgmma_sm90.cuh has).  The image is absent, as
 * in a binary without sm_90a: its shared memory fits no device (SIZE_MAX),
 * so mla_kernels_init skips its attribute and mla_wide_avail is 0, on the
 * SM 8.0 runtime and on the SM 9.0 one alike, and the backend takes its
 * mma.sync kernels.  The init and launch are never reached and refuse if
 * they are. */
#include <stdint.h>

#include <cuda_runtime.h>

#include "mla_kernels.h"

extern "C" {
size_t mla_wide_smem_bytes(void) { return SIZE_MAX; }
int mla_wide_init(void) { return (int)cudaErrorInvalidDeviceFunction; }
int mla_launch_wide(const mla_fwd_args *a) {
    (void)a;
    return (int)cudaErrorInvalidDeviceFunction;
}
}
