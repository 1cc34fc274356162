/*
 * encoder_loc_check.cu - batch.encoder_out_cache_loc against the table, once
 * per planned batch (init_forward_metadata launches it after the plan).
 *
 * A cross layer with save_kv_cache writes the encoder's K/V at these slots
 * and then attends over the table's columns 0 .. encoder_lens[b] - 1, so
 * entry e (request b's encoder column c, request 0's first) must be the
 * slot the table gives that column: req_to_token[req_pool_indices[b]][c],
 * or page_table[b][c >> page_shift] << page_shift | c & page_mask.  The
 * first entry that is not, or a length other than the sum of encoder_lens,
 * is noted in the instance's fault record and fails the next metadata call
 * naming the field and the entry (gpu_fault.h).  A request whose row or
 * encoder length the plan kernel found out of range is skipped here (the
 * plan noted it, first on the stream) and counts no entries.
 *
 * One block per request (block-stride past the grid): its first entry is
 * the sum of the encoder lengths before it (each block sums them; a batch
 * has at most max_reqs requests), then its threads compare its columns.
 */
#include "attn_kernels/common.cuh"
#include "cuda_launch.h"

#define ELC_THREADS 256
#define ELC_MAX_BLOCKS 1024

/* Request j's encoder length, 0 when out of range (the plan notes it). */
GC_DEV int64_t elc_enc(const attn_enc_loc_check &c, int j) {
    const int64_t e = attn_idx(c.encoder_lens, j);
    return e >= 0 && e <= c.max_ctx ? e : 0;
}

__global__ __launch_bounds__(ELC_THREADS) void attn_encoder_loc_check_kernel(attn_enc_loc_check c) {
    __shared__ long long part[ELC_THREADS];
    const int t = threadIdx.x;
    const int sh = c.page_shift, mask = (1 << sh) - 1;
    for (int b = blockIdx.x; b < c.bs; b += gridDim.x) {
        long long s = 0;
        for (int j = t; j < b; j += ELC_THREADS) s += elc_enc(c, j);
        /* a tree sum in shared memory (no 64-bit shuffle: the CPU emulator's are 32-bit) */
        __syncthreads(); /* the previous request's total is read */
        part[t] = s;
        __syncthreads();
        for (int h = ELC_THREADS / 2; h > 0; h >>= 1) {
            if (t < h) part[t] += part[t + h];
            __syncthreads();
        }
        const long long first = part[0];
        const int64_t row = c.req_pool_indices.p ? attn_idx(c.req_pool_indices, b) : b;
        const int64_t enc_raw = attn_idx(c.encoder_lens, b);
        const bool ok = row >= 0 && row < c.max_reqs && enc_raw >= 0 && enc_raw <= c.max_ctx;
        const int64_t enc = ok ? enc_raw : 0;
        if (b == c.bs - 1 && t == 0 && first + enc != c.n)
            sgl_fault_note_code(c.fault, SGL_FAULT_ENCODER_OUT_CACHE_LOC, SGL_FAULT_CODE_LENGTH, -1, c.n, first + enc,
                                first + enc + 1);
        if (!ok) continue;
        for (int64_t col = t; col < enc && first + col < c.n; col += ELC_THREADS) {
            const int64_t page = attn_idx(c.table, row * c.table_cols + (col >> sh));
            const int64_t want = (int64_t)((uint64_t)page << sh) + (col & mask); /* a negative page: the item check names it */
            const int64_t got = attn_idx(c.loc, first + col);
            if (got != want) {
                sgl_fault_note(c.fault, SGL_FAULT_ENCODER_OUT_CACHE_LOC, first + col, got, want, want + 1);
                break;
            }
        }
    }
}

extern "C" int attn_launch_encoder_loc_check(const attn_enc_loc_check *c, void *stream) {
    if (c->bs < 1) return 0;
    const int blocks = c->bs < ELC_MAX_BLOCKS ? c->bs : ELC_MAX_BLOCKS;
    attn_encoder_loc_check_kernel<<<blocks, ELC_THREADS, 0, (cudaStream_t)stream>>>(*c);
    return (int)cudaGetLastError();
}
