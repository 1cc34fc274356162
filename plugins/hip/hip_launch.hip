/* hip_launch.hip - HIP launchers of the kernels shared with cuda_attn
 * (plugins/sdk/attn_kernels/, over gpu_compat.h): the plan and save-KV
 * kernels and the portable decode and extend, with the signatures of
 * attn_kernels/portable_launch.h (cuda_attn's twin: plugins/cuda/mha/
 * portable.cu).  Each returns a hipError_t as int, allocates nothing and
 * never waits. */
#include "attn_kernels/decode_portable.cuh"
#include "attn_kernels/extend_portable.cuh"
#include "attn_kernels/plan.cuh"
#include "attn_kernels/portable_launch.h"
#include "attn_kernels/save_kv.cuh"
#include "attn_kernels/sizing.h"

extern "C" int attn_launch_plan_decode(const attn_plan_in *in, const attn_decode_plan *pl, void *stream) {
    hipLaunchKernelGGL(attn_plan_decode_kernel, dim3(1), dim3(ATTN_PLAN_THREADS), 0, (hipStream_t)stream, *in, *pl);
    return (int)hipGetLastError();
}

extern "C" int attn_launch_plan_extend(const attn_plan_in *in, const attn_extend_plan *pl, void *stream) {
    hipLaunchKernelGGL(attn_plan_extend_kernel, dim3(1), dim3(ATTN_PLAN_THREADS), 0, (hipStream_t)stream, *in, *pl);
    return (int)hipGetLastError();
}

extern "C" int attn_launch_save_kv(const attn_save *s, void *stream) {
    const long long n = (long long)s->t * s->hkv * (s->d / 8);
    if (n <= 0) return 0;
    long long blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* the kernel's grid-stride loop covers the rest */
    hipLaunchKernelGGL(attn_save_kv_kernel, dim3((unsigned)blocks), dim3(256), 0, (hipStream_t)stream, *s);
    return (int)hipGetLastError();
}

template <int DT, int D> static int decode_portable(const attn_fwd *p, int grid_items, hipStream_t st) {
    const int hb = attn_portable_decode_heads(p->group);
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * ((p->group + hb - 1) / hb)));
    if (hb == 1)
        hipLaunchKernelGGL((attn_decode_portable_kernel<DT, D, 1>), grid, dim3(ATTN_PD_THREADS), 0, st, *p);
    else
        hipLaunchKernelGGL((attn_decode_portable_kernel<DT, D, 4>), grid, dim3(ATTN_PD_THREADS), 0, st, *p);
    return (int)hipGetLastError();
}

template <int DT, int D> static int extend_portable(const attn_fwd *p, int grid_items, hipStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    hipLaunchKernelGGL((attn_extend_portable_kernel<DT, D>), grid, dim3(ATTN_PE_THREADS), 0, st, *p);
    return (int)hipGetLastError();
}

extern "C" int attn_launch_decode_portable(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(hipErrorInvalidValue, decode_portable, dtype, d, p, grid_items, (hipStream_t)stream);
}

extern "C" int attn_launch_extend_portable(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(hipErrorInvalidValue, extend_portable, dtype, d, p, grid_items, (hipStream_t)stream);
}
