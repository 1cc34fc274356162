/*
 * launch_wgmma.cu - the sm_90a extend path.  NOT WRITTEN YET: until a
 * warpgroup-MMA kernel exists and has been validated on an H200,
 * attn_wgmma_available() answers 0, so "auto" picks mma and an explicit
 * SGL_ATTN_CUDA_KERNEL=wgmma falls back to mma with a warning (create logs it).
 */
#include "attn_launch.h"

extern "C" int attn_wgmma_available(int device) {
    (void)device;
    return 0;
}

extern "C" int attn_wgmma_setup(int dtype, int head_dim) { return attn_mma_setup(dtype, head_dim); }

extern "C" int attn_launch_extend_wgmma(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    return attn_launch_extend_mma(dtype, head_dim, p, grid_items, stream);
}
