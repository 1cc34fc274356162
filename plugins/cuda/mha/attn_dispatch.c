/* attn_dispatch.c - variant -> launcher.  The wgmma variant only changes the
 * extend kernel; its decode is the mma one. */
#include "attn_launch.h"

int attn_kernels_setup(int variant, int dtype, int head_dim) {
    if (variant == ATTN_VARIANT_SIMPLE) return 0; /* static shared memory only */
    int e = attn_mma_setup(dtype, head_dim);
    if (!e && variant == ATTN_VARIANT_WGMMA) e = attn_wgmma_setup(dtype, head_dim);
    return e;
}

int attn_launch_decode(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (variant == ATTN_VARIANT_SIMPLE) return attn_launch_decode_simple(dtype, head_dim, p, grid_items, stream);
    return attn_launch_decode_mma(dtype, head_dim, p, grid_items, stream);
}

int attn_launch_extend(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (variant == ATTN_VARIANT_SIMPLE) return attn_launch_extend_simple(dtype, head_dim, p, grid_items, stream);
    if (variant == ATTN_VARIANT_WGMMA) return attn_launch_extend_wgmma(dtype, head_dim, p, grid_items, stream);
    return attn_launch_extend_mma(dtype, head_dim, p, grid_items, stream);
}
