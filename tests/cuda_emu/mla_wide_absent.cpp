/* mla_wide_absent.cpp - the sm_90a wide kernel's entry points
 * (mla_decode_wide_sm90.cu) for the emulated cuda_mla: the emulator runs SM
 * 8.x code only (no wgmma, TMA or setmaxnreg) and reports SM 8.0, so
 * mla_wide_avail is 0 and the backend takes its mma.sync kernels.  The
 * image is absent, as in a binary without sm_90a: the init and launch are
 * never reached and refuse if they are. */
#include <cuda_runtime.h>

#include "mla_kernels.h"

extern "C" {
size_t mla_wide_smem_bytes(void) { return 0; }
int mla_wide_init(void) { return (int)cudaErrorInvalidDeviceFunction; }
int mla_launch_wide(const mla_fwd_args *a) {
    (void)a;
    return (int)cudaErrorInvalidDeviceFunction;
}
}
