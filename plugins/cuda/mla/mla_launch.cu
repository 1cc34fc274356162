/*
 * mla_launch.cu - per-device kernel attributes (the dynamic shared memory each
 * tensor-core kernel asks for), set once at create.  The launchers
 * themselves live beside their kernels.
 */
#include <stdio.h>

#include "mla_kern_common.cuh"

extern "C" int mla_mma_init(size_t smem_optin);
extern "C" int mla_wgmma_init(void);
extern "C" int mla_narrow_init(void);
extern "C" int mla_wgmma0_init(void);

extern "C" int mla_kernels_init(int sm_major, size_t smem_optin, char *err, size_t err_size) {
    int e = mla_mma_init(smem_optin);
    if (e) {
        snprintf(err, err_size, "cudaFuncSetAttribute (mma kernels): %s", cudaGetErrorString((cudaError_t)e));
        return e;
    }
    if (sm_major == 9 && smem_optin >= mla_wgmma_smem_bytes()) {
        e = mla_wgmma_init();
        if (!e && smem_optin >= mla_wgmma0_smem_bytes()) e = mla_wgmma0_init();
        if (e) {
            snprintf(err, err_size, "cudaFuncSetAttribute (wgmma kernel, %zu bytes): %s",
                     mla_wgmma_smem_bytes(), cudaGetErrorString((cudaError_t)e));
            return e;
        }
    }
    if (sm_major == 9 && smem_optin >= mla_narrow_smem_bytes(32)) {
        e = mla_narrow_init();
        if (e) {
            snprintf(err, err_size, "cudaFuncSetAttribute (narrow kernel, %zu bytes): %s",
                     mla_narrow_smem_bytes(32), cudaGetErrorString((cudaError_t)e));
            return e;
        }
    }
    return 0;
}
