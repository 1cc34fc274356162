/* launch_simple.cu - launchers of the portable (plain-core) kernels. */
#include "attn_launch.h"
#include "attn_kernels/decode_portable.cuh"
#include "attn_kernels/extend_portable.cuh"

template <int DT, int D>
static int decode_simple(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hb = p->group == 1 ? 1 : 4;
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * ((p->group + hb - 1) / hb)));
    if (hb == 1)
        attn_decode_portable_kernel<DT, D, 1><<<grid, ATTN_PD_THREADS, 0, st>>>(*p);
    else
        attn_decode_portable_kernel<DT, D, 4><<<grid, ATTN_PD_THREADS, 0, st>>>(*p);
    return (int)cudaGetLastError();
}

template <int DT, int D>
static int extend_simple(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    attn_extend_portable_kernel<DT, D><<<grid, ATTN_PE_THREADS, 0, st>>>(*p);
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

extern "C" int attn_launch_decode_simple(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(decode_simple, dtype, d, p, grid_items, (cudaStream_t)stream);
}

extern "C" int attn_launch_extend_simple(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(extend_simple, dtype, d, p, grid_items, (cudaStream_t)stream);
}
