/* launch_mma.cu - launchers of the mma.sync decode and extend kernels. */
#include "attn_launch.h"
#include "kern_decode_mma.cuh"
#include "kern_extend_mma.cuh"

template <int DT, int D> static int setup_one() {
    cudaError_t e = cudaFuncSetAttribute(attn_decode_mma_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)decode_mma_cfg<D>::SMEM);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(attn_extend_mma_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)extend_mma_cfg<D>::SMEM);
    return (int)e;
}

template <int DT, int D> static int decode_mma(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hblocks = (p->group + ATTN_DM_ROWS - 1) / ATTN_DM_ROWS;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * hblocks));
    attn_decode_mma_kernel<DT, D><<<grid, ATTN_DM_THREADS, decode_mma_cfg<D>::SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

template <int DT, int D> static int extend_mma(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    attn_extend_mma_kernel<DT, D><<<grid, ATTN_EM_THREADS, extend_mma_cfg<D>::SMEM, st>>>(*p);
    return (int)cudaGetLastError();
}

#define ATTN_DISPATCH(fn, dtype, d, ...)                                                   \
    do {                                                                                   \
        if (dtype == ATTN_DT_BF16) {                                                       \
            if (d == 64) return fn<GC_BF16, 64>(__VA_ARGS__);                              \
            if (d == 128) return fn<GC_BF16, 128>(__VA_ARGS__);                            \
            if (d == 256) return fn<GC_BF16, 256>(__VA_ARGS__);                            \
        } else {                                                                           \
            if (d == 64) return fn<GC_F16, 64>(__VA_ARGS__);                               \
            if (d == 128) return fn<GC_F16, 128>(__VA_ARGS__);                             \
            if (d == 256) return fn<GC_F16, 256>(__VA_ARGS__);                             \
        }                                                                                  \
        return (int)cudaErrorInvalidValue;                                                 \
    } while (0)

extern "C" int attn_mma_setup(int dtype, int d) { ATTN_DISPATCH(setup_one, dtype, d, ); }

extern "C" int attn_launch_decode_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(decode_mma, dtype, d, p, grid_items, (cudaStream_t)stream);
}

extern "C" int attn_launch_extend_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(extend_mma, dtype, d, p, grid_items, (cudaStream_t)stream);
}
