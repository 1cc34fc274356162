/*
 * save_kv_pdl.cu - save-KV as a programmatic dependent of the attention
 * launched before it (the direct extend of a batch without a prefix,
 * cuda_attn_forward.c).  That attention reads the call's k / v, never the
 * rows this kernel writes, and lets this grid
 * start at once (pdl_sm90.cuh), so the copy runs beside it on the SMs it
 * frees.  The copy is save_kv.cuh's; block 0's thread 0 then waits for the
 * attention's grid (ca_pdl_wait), so this grid completes only after it: the
 * next kernel of the stream (the next layer's) sees both finished.
 */
#define ATTN_SAVE_KV_ROWS_ONLY /* save_kv.cuh's copy, without portable.cu's kernel */
#include "attn_kernels/save_kv.cuh"
#include "cuda_launch.h"
#include "pdl_sm90.cuh"

/* 8 blocks of 256 per SM (<= 32 registers), as the plain save's 30 allow */
__global__ __launch_bounds__(256, 8) void attn_save_kv_after_kernel(attn_save s) {
    attn_save_kv_rows(s);
    if (blockIdx.x == 0 && threadIdx.x == 0) ca_pdl_wait();
}

extern "C" int attn_launch_save_kv_after(const attn_save *s, void *stream) {
    const long long n = (long long)s->t * s->hkv * (s->d / 8);
    if (n <= 0) return 0;
    long long blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535; /* grid-stride loop covers the rest */
    const cudaError_t e = ca_launch_pdl(attn_save_kv_after_kernel, dim3((unsigned)blocks), dim3(256), 0,
                                        (cudaStream_t)stream, *s);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* the refusal is returned, not left for a later call */
        return (int)e;
    }
    return (int)cudaGetLastError();
}
