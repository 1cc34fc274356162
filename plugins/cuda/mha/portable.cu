/* portable.cu - the kernels cuda_attn shares with hip_attn
 * (plugins/sdk/attn_kernels/), launched on CUDA: the plan and save-KV
 * kernels (every instance), the portable decode and extend (the option
 * kernel=portable).  attn_kernels/portable_launch.h has the signatures;
 * plugins/hip/hip_launch.hip is the HIP twin of this file. */
#include "attn_kernels/decode_portable.cuh"
#include "attn_kernels/extend_portable.cuh"
#include "attn_kernels/plan.cuh"
#include "attn_kernels/portable_launch.h"
#include "attn_kernels/save_kv.cuh"
#include "attn_kernels/sizing.h"

extern "C" int attn_launch_plan_decode(const attn_plan_in *in, const attn_decode_plan *pl, void *stream) {
    attn_plan_decode_kernel<<<1, ATTN_PLAN_THREADS, 0, (cudaStream_t)stream>>>(*in, *pl);
    return (int)cudaGetLastError();
}

extern "C" int attn_launch_plan_extend(const attn_plan_in *in, const attn_extend_plan *pl, void *stream) {
    attn_plan_extend_kernel<<<1, ATTN_PLAN_THREADS, 0, (cudaStream_t)stream>>>(*in, *pl);
    return (int)cudaGetLastError();
}

extern "C" int attn_launch_check_items(const attn_check *c, int grid_items, void *stream) {
    if (c->nsets < 1 || grid_items < 1) return 0;
    /* grid.z: the blocks that share an item's columns, enough for the longest
     * item the table allows, within ATTN_CHECK_TARGET_BLOCKS in all (a block
     * past an item's end exits at once) */
    long long z = ((long long)c->max_ctx + ATTN_CHECK_CHUNK - 1) / ATTN_CHECK_CHUNK;
    const long long fit = ATTN_CHECK_TARGET_BLOCKS / ((long long)grid_items * c->nsets);
    if (z > fit) z = fit;
    if (z < 1) z = 1;
    attn_check_items_kernel<<<dim3((unsigned)grid_items, (unsigned)c->nsets, (unsigned)z), ATTN_CHECK_THREADS, 0,
                              (cudaStream_t)stream>>>(*c);
    return (int)cudaGetLastError();
}

extern "C" int attn_launch_save_kv(const attn_save *s, void *stream) {
    const long long n = (long long)s->t * s->hkv * (s->d / 8);
    if (n <= 0) return 0;
    long long blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* grid-stride loop covers the rest */
    attn_save_kv_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(*s);
    return (int)cudaGetLastError();
}

template <int DT, int D> static int decode_portable(const attn_fwd *p, int grid_items, cudaStream_t st) {
    const int hb = attn_portable_decode_heads(p->group);
    dim3 grid((unsigned)grid_items, (unsigned)(p->hkv * ((p->group + hb - 1) / hb)));
    if (hb == 1)
        attn_decode_portable_kernel<DT, D, 1><<<grid, ATTN_PD_THREADS, 0, st>>>(*p);
    else
        attn_decode_portable_kernel<DT, D, 4><<<grid, ATTN_PD_THREADS, 0, st>>>(*p);
    return (int)cudaGetLastError();
}

template <int DT, int D> static int extend_portable(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    if (p->mask)
        attn_extend_portable_kernel<DT, D, true><<<grid, ATTN_PE_THREADS, 0, st>>>(*p);
    else
        attn_extend_portable_kernel<DT, D, false><<<grid, ATTN_PE_THREADS, 0, st>>>(*p);
    return (int)cudaGetLastError();
}

extern "C" int attn_launch_decode_portable(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, decode_portable, dtype, d, p, grid_items, (cudaStream_t)stream);
}

extern "C" int attn_launch_extend_portable(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, extend_portable, dtype, d, p, grid_items, (cudaStream_t)stream);
}
