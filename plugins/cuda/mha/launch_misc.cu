/* launch_misc.cu - launchers of the plan and save-KV kernels. */
#include "attn_launch.h"
#include "attn_kernels/plan.cuh"
#include "attn_kernels/save_kv.cuh"

extern "C" int attn_launch_plan_decode(const attn_plan_in *in, const attn_decode_plan *pl, void *stream) {
    attn_plan_decode_kernel<<<1, ATTN_PLAN_THREADS, 0, (cudaStream_t)stream>>>(*in, *pl);
    return (int)cudaGetLastError();
}

extern "C" int attn_launch_plan_extend(const attn_plan_in *in, const attn_extend_plan *pl, void *stream) {
    attn_plan_extend_kernel<<<1, ATTN_PLAN_THREADS, 0, (cudaStream_t)stream>>>(*in, *pl);
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
