/* test_wgmma_emu.cpp - the CPU emulator's Hopper primitives (tests/emu/emu_sm90.h)
 * through wgmma_sm90.cuh's LK_EMU twins, against double-precision products
 * of random bf16 / f16 data:
 *   SS wgmma m64n128k16 (K-major A and B in sw128 tiles, descriptors advanced
 *     by +32 B per k16 step) chained over k = 64, f16 and bf16;
 *   RS wgmma with A from register fragments and B MN-major (trans-b), the
 *     P.V form, chained over k = 128;
 *   accumulators held until wgmma.wait_group (unchanged before it);
 *   a TMA tiled load (tensor map from the emulated cuTensorMapEncodeTiled,
 *     128B swizzle, rows past the tensor zero-filled) completing the bytes
 *     an mbarrier expects, its data landing with the phase;
 *   mbarrier phases and parities, and a wait that never completes aborting
 *     (in a child process) instead of hanging. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "wgmma_sm90.cuh"

static int fails;
#define CHECK(c, ...)                                                                                                   \
    do {                                                                                                                \
        if (!(c)) {                                                                                                     \
            fails++;                                                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                        \
            fprintf(stderr, __VA_ARGS__);                                                                               \
            fprintf(stderr, "\n");                                                                                      \
        }                                                                                                               \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand() {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.f * 2.f - 1.f;
}
/* 16-bit values of a float (truncated mantissa: exact round trips are all the test needs) */
static uint16_t h16(float f, int bf) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (bf) return (uint16_t)(u >> 16);
    const int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)((u >> 16) & 0x8000u);
    return (uint16_t)(((u >> 16) & 0x8000u) | ((uint32_t)e << 10) | ((u >> 13) & 0x3ffu));
}
static double f16v(uint16_t h, int bf) {
    if (bf) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double v = e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp((double)m, -24);
    return h & 0x8000u ? -v : v;
}

/* one warpgroup: S = A B^T (SS, k = 64) and O = P V (RS, V MN-major, k = 128) */
static void test_mma(int bf) {
    enum { M = 64, N = 128, K = 64, KV = 128 };
    static uint16_t A[M][K], B[N][K], P[M][KV], V[KV][N];
    for (auto &r : A) for (auto &x : r) x = h16(urand(), bf);
    for (auto &r : B) for (auto &x : r) x = h16(urand(), bf);
    for (auto &r : P) for (auto &x : r) x = h16(urand(), bf);
    for (auto &r : V) for (auto &x : r) x = h16(urand(), bf);
    static float S[M][N], O[M][N];
    static int held_ok;
    held_ok = 1;
    lk_emu_launch(dim3(1), dim3(128), 64 * 1024 + 1024, nullptr, [&] {
        uint8_t *raw = (uint8_t *)lk_emu_dyn_smem();
        const uint32_t r0 = wg_smem(raw), base = (r0 + 1023u) & ~1023u;
        uint8_t *sm = raw + (base - r0);
        const uint32_t oa = 0, ob = oa + M * K * 2, ov = ob + N * K * 2; /* all 1024-aligned */
        const int t = (int)threadIdx.x;
        for (int e = t; e < M * K; e += 128)
            std::memcpy(sm + oa + wg_sw_off<M>(e / K, e % K / 8) + e % 8 * 2, &A[e / K][e % K], 2);
        for (int e = t; e < N * K; e += 128)
            std::memcpy(sm + ob + wg_sw_off<N>(e / K, e % K / 8) + e % 8 * 2, &B[e / K][e % K], 2);
        for (int e = t; e < KV * N; e += 128)
            std::memcpy(sm + ov + wg_sw_off<KV>(e / N, e % N / 8) + e % 8 * 2, &V[e / N][e % N], 2);
        __syncthreads();
        const int w = t / 32, g = t % 32 / 4, q = t % 4;
        float d[N / 2];
        for (float &x : d) x = 7.f;
        wg_fence();
        for (int kk = 0; kk < K / 16; kk++) {
            if (bf) wg_mma_ss<GC_BF16, N, 0>(d, wg_desc_add(wg_desc_k(base + oa), kk * 32), wg_desc_add(wg_desc_k(base + ob), kk * 32), kk != 0);
            else wg_mma_ss<GC_F16, N, 0>(d, wg_desc_add(wg_desc_k(base + oa), kk * 32), wg_desc_add(wg_desc_k(base + ob), kk * 32), kk != 0);
        }
        wg_commit();
        for (float x : d) held_ok &= x == 7.f; /* not landed before the wait */
        wg_wait<0>();
        for (int j = 0; j < N / 8; j++)
            for (int v = 0; v < 4; v++) S[16 * w + g + 8 * (v >> 1)][8 * j + 2 * q + (v & 1)] = d[4 * j + v];
        float o[N / 2] = {};
        for (int kt = 0; kt < KV / 16; kt++) {
            uint32_t a[4];
            for (int i = 0; i < 4; i++) {
                const int row = 16 * w + g + 8 * (i & 1), col = 16 * kt + 8 * (i >> 1) + 2 * q;
                a[i] = (uint32_t)P[row][col] | (uint32_t)P[row][col + 1] << 16;
            }
            if (bf) wg_mma_rs<GC_BF16, N, 1>(o, a, wg_desc_add(wg_desc_mn<KV>(base + ov), kt * 16 * ATTN_SW_ROW_BYTES), 1);
            else wg_mma_rs<GC_F16, N, 1>(o, a, wg_desc_add(wg_desc_mn<KV>(base + ov), kt * 16 * ATTN_SW_ROW_BYTES), 1);
            wg_commit();
        }
        wg_wait<0>();
        for (int j = 0; j < N / 8; j++)
            for (int v = 0; v < 4; v++) O[16 * w + g + 8 * (v >> 1)][8 * j + 2 * q + (v & 1)] = o[4 * j + v];
    });
    double es = 0, eo = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0, o = 0;
            for (int k = 0; k < K; k++) s += f16v(A[m][k], bf) * f16v(B[n][k], bf);
            for (int k = 0; k < KV; k++) o += f16v(P[m][k], bf) * f16v(V[k][n], bf);
            es = std::fmax(es, std::fabs(s - S[m][n]));
            eo = std::fmax(eo, std::fabs(o - O[m][n]));
        }
    CHECK(held_ok, "%s: accumulators changed before wgmma.wait_group", bf ? "bf16" : "f16");
    CHECK(es < 1e-4, "%s SS wgmma: max error %g", bf ? "bf16" : "f16", es);
    CHECK(eo < 1e-4, "%s RS wgmma (MN-major B): max error %g", bf ? "bf16" : "f16", eo);
}

/* a TMA box of a [slots][heads][64] pool into sw128 shared memory, through an mbarrier */
static void test_tma(void) {
    enum { SLOTS = 40, HEADS = 2, D = 64, BOX = 16 };
    static uint16_t pool[SLOTS][HEADS][D];
    for (auto &s : pool) for (auto &h : s) for (auto &x : h) x = h16(urand(), 1);
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
              q == cudaDriverEntryPointSuccess && fn,
          "no emulated cuTensorMapEncodeTiled");
    if (!fn) return;
    typedef CUresult (*enc_t)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    alignas(64) static CUtensorMap map;
    const cuuint64_t dims[3] = {D, HEADS, SLOTS}, strides[2] = {D * 2, HEADS * D * 2};
    const cuuint32_t box[3] = {D, 1, BOX}, es[3] = {1, 1, 1};
    CHECK(((enc_t)fn)(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, pool, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS,
          "encode refused a valid map");
    const cuuint32_t bad_box[3] = {128, 1, BOX}; /* 256-byte rows: past the 128-byte swizzle span */
    CHECK(((enc_t)fn)(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, pool, dims, strides, bad_box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS,
          "encode took a box wider than the swizzle span");
    ((enc_t)fn)(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, pool, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    static uint16_t got[BOX][D];
    static int early_poisoned, parity_ok;
    lk_emu_launch(dim3(1), dim3(64), 4096 + 1024, nullptr, [&] {
        uint8_t *raw = (uint8_t *)lk_emu_dyn_smem();
        const uint32_t r0 = wg_smem(raw), base = (r0 + 1023u) & ~1023u;
        uint8_t *sm = raw + (base - r0);
        const uint32_t bar = base + 2048;
        if (threadIdx.x == 0) {
            mbar_init(bar, 64);
            mbar_init_fence();
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            parity_ok = mbar_try_wait(bar, 1) && !mbar_try_wait(bar, 0); /* a fresh barrier: phase "-1" done */
            mbar_expect_tx(bar, BOX * 128);
            tma_load_3d(base, &map, 0, 1, 32, bar); /* slots 32 .. 47: 40 .. 47 past the pool */
            uint16_t x;
            std::memcpy(&x, sm, 2);
            early_poisoned = x == 0xffff; /* arrivals missing: not landed */
        }
        mbar_arrive(bar);
        mbar_wait(bar, 0);
        for (int e = (int)threadIdx.x; e < BOX * D; e += 64)
            std::memcpy(&got[e / D][e % D], sm + wg_sw_off<BOX>(e / D, e % D / 8) + e % 8 * 2, 2);
        if (threadIdx.x == 0) parity_ok &= mbar_try_wait(bar, 0) && !mbar_try_wait(bar, 1);
    });
    int bad = 0;
    for (int r = 0; r < BOX; r++)
        for (int c = 0; c < D; c++) bad += got[r][c] != (32 + r < SLOTS ? pool[32 + r][1][c] : 0);
    CHECK(!bad, "TMA box: %d elements wrong (sw128 placement or zero fill)", bad);
    CHECK(early_poisoned, "TMA data landed before its mbarrier phase completed");
    CHECK(parity_ok, "mbarrier parities");
}

/* a wait nothing completes: the emulator aborts (the scheduler's deadlock check) */
static void test_deadlock(void) {
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        lk_emu_launch(dim3(1), dim3(32), 2048, nullptr, [] {
            const uint32_t bar = (wg_smem(lk_emu_dyn_smem()) + 7u) & ~7u;
            if (threadIdx.x == 0) mbar_init(bar, 33); /* one arrival more than there are threads */
            __syncthreads();
            mbar_arrive(bar);
            mbar_wait(bar, 0);
        });
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a never-completing mbarrier wait did not abort (status %d)", st);
}

int main(void) {
    test_mma(1);
    test_mma(0);
    test_tma();
    test_deadlock();
    if (fails) {
        fprintf(stderr, "test_wgmma_emu: %d failed\n", fails);
        return 1;
    }
    printf("test_wgmma_emu: SS / RS wgmma (bf16, f16), held accumulators, TMA + mbarrier, deadlock abort: ok\n");
    return 0;
}
