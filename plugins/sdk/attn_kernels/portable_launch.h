/*
 * portable_launch.h - the C face of the shared kernels: the launchers each
 * plugin built on them defines with these signatures (cuda_attn in
 * plugins/cuda/mha/portable.cu, hip_attn in plugins/hip/hip_launch.hip).
 * Each returns the runtime's error code as int (0 = launched), allocates
 * nothing and never waits.
 */
#ifndef SGL_ATTN_KERNELS_PORTABLE_LAUNCH_H
#define SGL_ATTN_KERNELS_PORTABLE_LAUNCH_H

#include "attn_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dtype of q, kv and out (one for all three). */
enum { ATTN_DT_F16 = 0, ATTN_DT_BF16 = 1 };

int attn_launch_plan_decode(const attn_plan_in *in, const attn_decode_plan *pl, void *stream);
int attn_launch_plan_extend(const attn_plan_in *in, const attn_extend_plan *pl, void *stream);
int attn_launch_save_kv(const attn_save *s, void *stream);
/* The item check of a planned batch (attn_params.h: attn_check); grid_items:
 * the blocks per list (they stride over the list). */
int attn_launch_check_items(const attn_check *c, int grid_items, void *stream);
/* grid_items: upper bound of the plan's items (blocks past num_items exit). */
int attn_launch_decode_portable(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);
int attn_launch_extend_portable(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);

#ifdef __cplusplus
}
#endif

/* For the launchers (C++): dtype x head dim 64 / 128 / 256 -> return
 * fn<DT, D>(...); any other pair returns `invalid` (the runtime's invalid
 * value error). */
#define ATTN_DISPATCH(invalid, fn, dtype, d, ...)                                          \
    do {                                                                                   \
        if ((dtype) == ATTN_DT_BF16) {                                                     \
            if ((d) == 64) return fn<GC_BF16, 64>(__VA_ARGS__);                            \
            if ((d) == 128) return fn<GC_BF16, 128>(__VA_ARGS__);                          \
            if ((d) == 256) return fn<GC_BF16, 256>(__VA_ARGS__);                          \
        } else {                                                                           \
            if ((d) == 64) return fn<GC_F16, 64>(__VA_ARGS__);                             \
            if ((d) == 128) return fn<GC_F16, 128>(__VA_ARGS__);                           \
            if ((d) == 256) return fn<GC_F16, 256>(__VA_ARGS__);                           \
        }                                                                                  \
        return (int)(invalid);                                                             \
    } while (0)

#endif
