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
extern "C" int mla_wgmma2_init(void);
extern "C" int mla_wgmma3_init(void);
extern "C" int mla_wgmma4_init(void);
extern "C" int mla_wgmma5_init(void);

extern "C" int mla_kernels_init(int sm_major, size_t smem_optin, char *err, size_t err_size) {
    int e = mla_mma_init(smem_optin);
    if (e) {
        snprintf(err, err_size, "cudaFuncSetAttribute (mma kernels): %s", cudaGetErrorString((cudaError_t)e));
        return e;
    }
    if (sm_major != 9) return 0;
    /* Each TMA kernel on its own: one that does not fit must not take the
     * others with it (mla_kernel_avail says which can run). */
    const struct {
        const char *name;
        size_t bytes;
        int (*init)(void);
    } k[] = {{"wgmma", mla_wgmma_smem_bytes(), mla_wgmma_init},
             {"wgmma0", mla_wgmma0_smem_bytes(), mla_wgmma0_init},
             {"wgmma2", mla_wgmma2_smem_bytes(), mla_wgmma2_init},
             {"wgmma3", mla_wgmma3_smem_bytes(), mla_wgmma3_init},
             {"wgmma4", mla_wgmma4_smem_bytes(), mla_wgmma4_init},
             {"wgmma5", mla_wgmma5_smem_bytes(), mla_wgmma5_init},
             {"narrow", mla_narrow_smem_bytes(32), mla_narrow_init}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (smem_optin < k[i].bytes) continue;
        e = k[i].init();
        if (e) {
            snprintf(err, err_size, "cudaFuncSetAttribute (%s kernel, %zu bytes): %s", k[i].name, k[i].bytes,
                     cudaGetErrorString((cudaError_t)e));
            return e;
        }
    }
    return 0;
}

extern "C" uint32_t mla_kernel_avail(int sm_major, size_t smem_optin, int have_encoder) {
    if (sm_major != 9 || !have_encoder) return 0;
    uint32_t m = 0;
    if (smem_optin >= mla_wgmma_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA;
    if (smem_optin >= mla_wgmma0_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA0;
    if (smem_optin >= mla_wgmma2_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA2;
    if (smem_optin >= mla_wgmma3_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA3;
    if (smem_optin >= mla_wgmma4_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA4;
    if (smem_optin >= mla_wgmma5_smem_bytes()) m |= 1u << MLA_KERNEL_WGMMA5;
    if (smem_optin >= mla_narrow_smem_bytes(16) && smem_optin >= mla_narrow_smem_bytes(32))
        m |= 1u << MLA_KERNEL_NARROW;
    return m;
}
