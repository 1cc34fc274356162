/* state_commit.cu - state_commit on the device: for each request of the last
 * verify batch, the conv and ssm state after its accepted draft step become
 * its main state, in every layer.  All or nothing: every block checks every
 * accepted step first, and if one is out of range nothing is copied. */
#include "kernel_common.cuh"

LK_DEV void lk_copy_bytes(unsigned char *dst, const unsigned char *src, size_t bytes) {
    const bool v16 = bytes % 16 == 0 && (uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0;
    if (v16) {
        for (size_t k = threadIdx.x; k < bytes / 16; k += blockDim.x) ((uint4 *)dst)[k] = ((const uint4 *)src)[k];
    } else {
        for (size_t k = threadIdx.x; k < bytes; k += blockDim.x) dst[k] = src[k];
    }
}

/* Grid: (request, layer). */
__global__ __launch_bounds__(256) void lin_commit_kernel(lin_commit_args c) {
    const int i = blockIdx.x, l = blockIdx.y;
    int bad = 0;
    for (int k = threadIdx.x; k < c.n; k += blockDim.x) {
        const int64_t s = lk_idx(c.accepted, k);
        if (s < -1 || s >= c.steps) {
            bad = 1;
            if (i == 0 && l == 0) lk_flag(c.err, LIN_ERR_ACCEPT, k, s);
        }
    }
    if (__syncthreads_or(bad)) return;
    const int64_t s = lk_idx(c.accepted, i);
    const int slot = c.verify_slot[i];
    if (s < 0 || slot < 0) return;
    const size_t ls = (size_t)l * c.slots + (size_t)slot;
    const size_t cb = (size_t)c.conv_elems * c.esz, sb = (size_t)c.ssm_elems * c.esz;
    if (cb)
        lk_copy_bytes((unsigned char *)c.conv + ls * cb, (const unsigned char *)c.iconv + (ls * c.steps + s) * cb, cb);
    if (sb) lk_copy_bytes((unsigned char *)c.ssm + ls * sb, (const unsigned char *)c.issm + (ls * c.steps + s) * sb, sb);
}

extern "C" int lin_launch_commit(const lin_commit_args *c, void *stream) {
    if (c->n <= 0 || c->layers <= 0 || c->steps <= 0) return 0;
    LK_LAUNCH(lin_commit_kernel, dim3((unsigned)c->n, (unsigned)c->layers), 256, 0, (cudaStream_t)stream, *c);
    return (int)cudaGetLastError();
}
