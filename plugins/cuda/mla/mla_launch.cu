/*
 * mla_launch.cu - per-device kernel attributes (the dynamic shared memory each
 * tensor-core kernel asks for), set once at create.  The launchers
 * themselves live beside their kernels.
 */
#include <stdio.h>

#include "mla_kern_common.cuh"

extern "C" int mla_mma_init(size_t smem_optin);
extern "C" int mla_wide_init(void);

extern "C" int mla_kernels_init(int sm_major, size_t smem_optin, char *err, size_t err_size) {
    int e = mla_mma_init(smem_optin);
    if (e) {
        snprintf(err, err_size, "cudaFuncSetAttribute (mma kernels): %s", cudaGetErrorString((cudaError_t)e));
        return e;
    }
    /* the wide kernel where it fits; mla_wide_avail tells the backend */
    if (sm_major != 9 || smem_optin < mla_wide_smem_bytes()) return 0;
    e = mla_wide_init();
    if (e)
        snprintf(err, err_size, "cudaFuncSetAttribute (wide kernel, %zu bytes): %s", mla_wide_smem_bytes(),
                 cudaGetErrorString((cudaError_t)e));
    return e;
}

extern "C" int mla_wide_avail(int sm_major, size_t smem_optin, int have_encoder) {
    return sm_major == 9 && have_encoder && smem_optin >= mla_wide_smem_bytes();
}
