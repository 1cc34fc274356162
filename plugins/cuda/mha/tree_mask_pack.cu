/*
 * tree_mask_pack.cu - tree verify's mask, packed once per batch.
 *
 * batch.custom_mask holds one byte per (row, column) of each request's
 * block, [tokens_per_req, seq_len] row-major from mask_indptr[b].  The
 * extend kernels read the same bytes once per head; this kernel, launched by
 * init_forward_metadata after the plan, turns them into bits once:
 *
 *   bits[(b * mq + r) * words + (c >> 6)] bit (c & 63) = byte (r, c) != 0
 *   full[b * words + w] = 1 when every row's word w is all ones (columns
 *                         past seq_len count as ones), else 0
 *
 * so a kernel loads one 64-bit word per row per 64 columns, and skips the
 * mask entirely on a tile whose words are full (the prefix columns sglang's
 * mask opens to every draft token).  One block per (request, word): each
 * warp packs one row's word at a time by two ballots over coalesced bytes.
 * A request whose block does not split into mq rows inside the mask is left
 * as is: the plan has already emptied its items (it attends nothing).
 */
#include "attn_kernels/common.cuh"
#include "cuda_launch.h"

#define TMP_THREADS 128

__global__ __launch_bounds__(TMP_THREADS) void attn_tree_mask_pack_kernel(const uint8_t *mask, int64_t mask_len,
                                                                        attn_index indptr, int32_t bs, int32_t mq,
                                                                        int32_t words, uint64_t *bits, uint8_t *full) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long pairs = (long long)bs * words;
    for (long long pw = blockIdx.x; pw < pairs; pw += gridDim.x) {
        const int b = (int)(pw / words), w = (int)(pw % words);
        const int64_t a = attn_idx(indptr, b), e = attn_idx(indptr, b + 1);
        /* uniform across the block: every thread reads the same offsets */
        if (a < 0 || e < a || e > mask_len || (e - a) % mq != 0) continue;
        const int64_t seq = (e - a) / mq;
        const int64_t c0 = (int64_t)w * 64;
        bool all = true;
        for (int r = warp; r < mq; r += TMP_THREADS / 32) {
            const uint8_t *row = mask + a + (int64_t)r * seq;
            const int64_t ca = c0 + lane, cb = c0 + 32 + lane;
            const uint32_t lo = __ballot_sync(0xffffffffu, ca < seq && row[ca] != 0);
            const uint32_t hi = __ballot_sync(0xffffffffu, cb < seq && row[cb] != 0);
            const uint64_t v = (uint64_t)hi << 32 | lo;
            if (lane == 0) bits[((int64_t)b * mq + r) * words + w] = v;
            /* columns past seq_len count as ones for the flag */
            const int64_t n = seq - c0; /* columns of the word inside seq */
            const uint64_t past = n >= 64 ? 0ull : n <= 0 ? ~0ull : ~0ull << n;
            all = all && (v | past) == ~0ull;
        }
        const int f = __syncthreads_and(all);
        if (threadIdx.x == 0) full[(int64_t)b * words + w] = (uint8_t)f;
    }
}

/* first[b]: request b's first word whose full flag is 0 (words when every
 * flag is 1), one warp per request, 32 flags a ballot, after the pack kernel
 * wrote the flags (same stream).  The wgmma extend then runs the tiles before
 * that word with no mask and loads none of their words: sglang's EAGLE
 * masks open the whole prefix. */
__global__ __launch_bounds__(TMP_THREADS) void attn_tree_mask_first_kernel(const uint8_t *full, int32_t bs,
                                                                         int32_t words, uint32_t *first) {
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (TMP_THREADS / 32);
    for (long long b = (long long)blockIdx.x * (TMP_THREADS / 32) + (threadIdx.x >> 5); b < bs; b += warps) {
        const uint8_t *f = full + b * words;
        int at = words;
        for (int w0 = 0; w0 < words; w0 += 32) {
            const uint32_t zero = __ballot_sync(0xffffffffu, w0 + lane < words && f[w0 + lane] == 0);
            if (zero) { /* its lowest set bit (once per request) */
                int lo = 0;
                while (!((zero >> lo) & 1u)) lo++;
                at = w0 + lo;
                break;
            }
        }
        if (lane == 0) first[b] = (uint32_t)at;
    }
}

extern "C" int attn_launch_tree_mask_pack(const uint8_t *mask, int64_t mask_len, attn_index indptr, int32_t bs,
                                          int32_t mq, int32_t words, uint64_t *bits, uint8_t *full, uint32_t *first,
                                          void *stream) {
    if (bs <= 0 || mq <= 0 || words <= 0) return 0;
    const long long pairs = (long long)bs * words;
    const unsigned grid = (unsigned)(pairs < 4096 ? pairs : 4096);
    attn_tree_mask_pack_kernel<<<grid, TMP_THREADS, 0, (cudaStream_t)stream>>>(mask, mask_len, indptr, bs, mq, words,
                                                                              bits, full);
    if (first) {
        const int per = TMP_THREADS / 32;
        const long long blocks = ((long long)bs + per - 1) / per;
        attn_tree_mask_first_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), TMP_THREADS, 0,
                                      (cudaStream_t)stream>>>(full, bs, words, first);
    }
    return (int)cudaGetLastError();
}
