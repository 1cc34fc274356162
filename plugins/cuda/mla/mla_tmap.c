/*
 * mla_tmap.c - the pool's TMA descriptor for the wide kernel.  The driver's
 * cuTensorMapEncodeTiled is reached through the runtime's entry-point query
 * (the plugin never links libcuda); the encode itself is host-only work.
 */
#include <cuda.h>

#include "mla_kernels.h"

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                    const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

_Static_assert(sizeof(CUtensorMap) == 128, "a tensor map is 128 bytes");

int mla_tmap_encode(void *encode_fn, void *tmap128, const void *pool, int64_t num_slots,
                    int32_t box_rows) {
    encode_tiled_fn enc = (encode_tiled_fn)encode_fn;
    if (!enc || !tmap128 || !pool || num_slots <= 0 || box_rows < 1 || box_rows > 64)
        return (int)CUDA_ERROR_INVALID_VALUE;
    /* dim 0: the 576 elements of a latent row; dim 1: the slots. */
    const cuuint64_t dims[2] = {MLA_D_QK, (cuuint64_t)num_slots};
    const cuuint64_t strides[1] = {MLA_D_QK * 2};
    /* 64 elements = 128 bytes: the 128-byte swizzle's span */
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t estr[2] = {1, 1};
    return (int)enc((CUtensorMap *)tmap128, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)pool, dims,
                    strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
