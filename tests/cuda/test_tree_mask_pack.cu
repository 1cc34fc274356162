/*
 * test_tree_mask_pack.cu - tree verify's mask packing (cuda_attn's
 * tree_mask_pack.cu) against a host reference on random masks (fresh seed
 * each run; pass one as argv[1] to repeat):
 *   1. attn_bits_pairs (the kernels' gather of a thread's column pairs from a
 *      packed word) on random words, every shift a thread uses
 *   2. the packed bits and the full flags of batches of requests with seq_len
 *      not a multiple of 64, a whole-prefix request (full words), an all-zero
 *      request, an EAGLE-shaped one (the prefix visible, the last mq columns
 *      random), and a request whose block does not split into rows (left as
 *      it was: the buffer's sentinel survives); each request's first word
 *      whose flag is 0 (first[], what the wgmma extend reads)
 * Exit status: 0 passed (or no CUDA device: SKIP), 1 a mismatch, 2 a CUDA error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "../../plugins/cuda/mha/tree_mask_pack.cu"

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

static uint64_t g_rng;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

__global__ void pairs_kernel(const uint64_t *w, uint32_t *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = attn_bits_pairs(w[i / 64] >> (i % 64));
}

static int test_pairs(void) {
    const int nw = 256, n = nw * 64;
    std::vector<uint64_t> w(nw);
    for (auto &x : w) x = rnd();
    uint64_t *dw;
    uint32_t *dout;
    CK(cudaMalloc(&dw, nw * 8));
    CK(cudaMalloc(&dout, n * 4));
    CK(cudaMemcpy(dw, w.data(), nw * 8, cudaMemcpyHostToDevice));
    pairs_kernel<<<(n + 255) / 256, 256>>>(dw, dout, n);
    CK(cudaGetLastError());
    std::vector<uint32_t> out(n);
    CK(cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const uint64_t v = w[i / 64] >> (i % 64);
        uint32_t want = 0;
        for (int m = 0; m < 8; m++)
            for (int e = 0; e < 2; e++) want |= (uint32_t)((v >> (8 * m + e)) & 1u) << (2 * m + e);
        if (out[i] != want && bad++ < 5) fprintf(stderr, "  pairs word %d shift %d: got %#x want %#x\n", i / 64, i % 64, out[i], want);
    }
    CK(cudaFree(dw));
    CK(cudaFree(dout));
    printf("%s 1. attn_bits_pairs: %d words x 64 shifts, %d wrong\n", bad ? "FAIL" : "PASS", nw, bad);
    return bad != 0;
}

/* kind: 0 random (one key in ten hidden), 1 all visible, 2 none, 3 a block that is not mq rows,
 * 4 EAGLE (columns before seq - mq visible, the last mq random) */
static int test_pack(int bs, int mq, int words, const int *seq, const int *kind) {
    std::vector<int64_t> ip(bs + 1, 0);
    for (int b = 0; b < bs; b++) ip[b + 1] = ip[b] + (int64_t)mq * seq[b] + (kind[b] == 3 ? 1 : 0);
    const int64_t len = ip[bs];
    std::vector<uint8_t> m((size_t)len + 1);
    for (int b = 0; b < bs; b++)
        for (int64_t i = ip[b]; i < ip[b + 1]; i++)
            m[i] = kind[b] == 1 || (kind[b] == 4 && (i - ip[b]) % seq[b] < seq[b] - mq) ? (uint8_t)(1 + rnd() % 255)
                   : kind[b] == 2                                                    ? 0
                   : kind[b] == 4                                                    ? (uint8_t)(rnd() % 2)
                                                                                     : (uint8_t)(rnd() % 10 ? rnd() % 255 + 1 : 0);
    const size_t nbits = (size_t)bs * mq * words, nfull = (size_t)bs * words;
    uint8_t *dm;
    int64_t *dip;
    uint64_t *dbits;
    uint8_t *dfull;
    uint32_t *dfirst;
    CK(cudaMalloc(&dm, len + 1));
    CK(cudaMalloc(&dip, (bs + 1) * 8));
    CK(cudaMalloc(&dbits, nbits * 8));
    CK(cudaMalloc(&dfull, nfull));
    CK(cudaMalloc(&dfirst, bs * 4));
    CK(cudaMemcpy(dm, m.data(), len + 1, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dip, ip.data(), (bs + 1) * 8, cudaMemcpyHostToDevice));
    CK(cudaMemset(dbits, 0xA5, nbits * 8)); /* sentinel: what the kernel must not touch keeps it */
    CK(cudaMemset(dfull, 0xA5, nfull));
    CK(cudaMemset(dfirst, 0xA5, bs * 4));
    attn_index ix = {(const int32_t *)dip, 1, bs + 1};
    CK((cudaError_t)attn_launch_tree_mask_pack(dm, len, ix, bs, mq, words, dbits, dfull, dfirst, 0));
    CK(cudaDeviceSynchronize());
    std::vector<uint64_t> bits(nbits);
    std::vector<uint8_t> full(nfull);
    std::vector<uint32_t> first(bs);
    CK(cudaMemcpy(first.data(), dfirst, bs * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bits.data(), dbits, nbits * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(full.data(), dfull, nfull, cudaMemcpyDeviceToHost));
    int bad = 0, nfullw = 0;
    for (int b = 0; b < bs; b++) {
        uint32_t want_first = (uint32_t)words; /* a request left as is: its sentinel flags are nonzero */
        for (int w = 0; w < words; w++) {
            bool all = true;
            for (int r = 0; r < mq; r++) {
                uint64_t want = 0xA5A5A5A5A5A5A5A5ull;
                if (kind[b] != 3) {
                    want = 0;
                    for (int c = 0; c < 64; c++) {
                        const int64_t col = (int64_t)w * 64 + c;
                        const bool v = col < seq[b] ? m[ip[b] + (int64_t)r * seq[b] + col] != 0 : false;
                        want |= (uint64_t)v << c;
                        all = all && (v || col >= seq[b]);
                    }
                }
                const uint64_t got = bits[((size_t)b * mq + r) * words + w];
                if (got != want && bad++ < 5)
                    fprintf(stderr, "  req %d row %d word %d: got %016llx want %016llx\n", b, r, w,
                            (unsigned long long)got, (unsigned long long)want);
            }
            const uint8_t wf = kind[b] == 3 ? 0xA5 : all ? 1 : 0;
            nfullw += wf == 1;
            if (full[(size_t)b * words + w] != wf && bad++ < 5)
                fprintf(stderr, "  req %d word %d: full %d want %d\n", b, w, full[(size_t)b * words + w], wf);
            if (wf == 0 && want_first == (uint32_t)words) want_first = (uint32_t)w;
        }
        if (first[b] != want_first && bad++ < 5) fprintf(stderr, "  req %d: first %u want %u\n", b, first[b], want_first);
    }
    CK(cudaFree(dm));
    CK(cudaFree(dip));
    CK(cudaFree(dbits));
    CK(cudaFree(dfull));
    CK(cudaFree(dfirst));
    printf("%s 2. pack bs %d rows %d words %d: %d full words, %d wrong\n", bad ? "FAIL" : "PASS", bs, mq, words,
           nfullw, bad);
    return bad != 0;
}

int main(int argc, char **argv) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP test_tree_mask_pack: no CUDA device\n");
        return 0;
    }
    const unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (unsigned long long)time(NULL);
    g_rng = seed * 2654435761ull + 1;
    printf("test_tree_mask_pack seed %llu\n", seed);
    int fail = test_pairs();
    {
        const int seq[6] = {700, 64, 129, 1, 300, 257}, kind[6] = {0, 1, 0, 2, 3, 1};
        fail |= test_pack(6, 5, 12, seq, kind);
    }
    {
        const int seq[6] = {4096, 4000, 4033, 64, 4096, 2200}, kind[6] = {1, 0, 1, 0, 4, 4};
        fail |= test_pack(6, 64, 64, seq, kind);
    }
    {
        const int seq[3] = {50, 130, 200}, kind[3] = {0, 1, 0};
        fail |= test_pack(3, 1, 4, seq, kind);
    }
    printf("test_tree_mask_pack: %s\n", fail ? "FAILED" : "passed");
    return fail;
}
