/*
 * test_wgmma_primitives.cu - cuda_attn's sm_90a extend (extend_wgmma_sm90.cuh)
 * block by block, against host references on random data (fresh seed each
 * run; pass one as argv[1] to repeat).  Each block prints PASS/FAIL with its
 * error, so a failing GPU run says which layer is wrong:
 *   0. the kernels' attributes (the registers the setmaxnreg split assumes)
 *   1. one m64n128k16 SS wgmma per k-step (descriptor encoding, 128B
 *      swizzle, the +32 B k-step advance inside a swizzle row)
 *   2. a full S tile, S = Q K^T (the kernel's wg_qk)
 *   3. the RS form O = P V (the kernel's wg_pack_p + wg_pv: A fragments from
 *      registers, V MN-major through trans-b)
 *   4. the producer ring: the kernel's cp.async producer gathers Q/K/V through
 *      a shuffled page table (pages 1 and 16) into the STAGES-deep ring over
 *      many items; consumers follow the kernel's barrier protocol and check
 *      every byte of every stage in place (swizzle, zero fill, phases, WAR)
 *   5. the whole kernel (plan kernel + attn_extend_wgmma_kernel) against
 *      float64: causal with prefix, ragged, page 1/16, window, soft-cap,
 *      sinks, cross, GQA, fp16/bf16, a small persistent grid
 * The TMA producer's kernel runs in `attnctl check` (pages of 16 and 64).
 * Exit status: 0 all passed (or no SM 9.0 device: SKIP), 1 a failure,
 * 2 a CUDA error.  Needs the sm_90a build (tests/cuda/wgmma.mk).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "attn_kernels/plan.cuh"
#include "../../plugins/cuda/mha/extend_wgmma_sm90.cuh"

/* ------------------------------------------------------------------ host side */

static int g_fail = 0;

#define CK(call)                                                                                          \
    do {                                                                                                  \
        cudaError_t e_ = (call);                                                                          \
        if (e_ != cudaSuccess) {                                                                          \
            printf("CUDA ERROR %s at %s:%d: %s (%s)\n", #call, __FILE__, __LINE__, cudaGetErrorName(e_), \
                   cudaGetErrorString(e_));                                                               \
            exit(2);                                                                                      \
        }                                                                                                 \
    } while (0)

static uint64_t g_rng;
static uint32_t rnd32() {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
static float rndf(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() & 0xFFFFFF) / 16777216.f; }
static int rndi(int n) { return (int)(rnd32() % (uint32_t)n); }

static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2h(float f) {
    const __half_raw r = __half_raw(__float2half_rn(f));
    return r.x;
}
static float h2f(uint16_t u) {
    __half_raw r;
    r.x = u;
    return __half2float(__half(r));
}
template <int DT> static uint16_t to16(float f) { return DT == GC_BF16 ? f2bf(f) : f2h(f); }
template <int DT> static float from16(uint16_t u) { return DT == GC_BF16 ? bf2f(u) : h2f(u); }
static const char *dtn(int dt) { return dt == GC_BF16 ? "bf16" : "f16"; }

/* Random 16-bit matrix, values exactly representable; returns the floats too. */
template <int DT> static void fill16(std::vector<uint16_t> &v, std::vector<float> &f, size_t n, float lo, float hi) {
    v.resize(n);
    f.resize(n);
    for (size_t i = 0; i < n; i++) {
        v[i] = to16<DT>(rndf(lo, hi));
        f[i] = from16<DT>(v[i]);
    }
}

template <typename T> static T *dev_copy(const std::vector<T> &h) {
    T *d = nullptr;
    CK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
    CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
template <typename T> static std::vector<T> host_copy(const T *d, size_t n) {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static void report(const char *block, const char *what, bool ok, double err, const char *unit) {
    printf("%-4s %-8s %-58s %s = %.3e\n", ok ? "PASS" : "FAIL", block, what, unit, err);
    if (!ok) g_fail = 1;
    fflush(stdout);
}

/* -------------------------------------------------------------- device side */

/* Dynamic shared memory rounded up to 1024 bytes (the swizzle atom). */
__device__ __forceinline__ uint8_t *t_smem_1k(uint8_t *raw) {
#if defined(ATTN_HAVE_WGMMA)
    const uint32_t a = wg_smem(raw);
    return raw + (((a + 1023u) & ~1023u) - a);
#else
    return raw;
#endif
}

/* Copy a row-major ROWS x W 16-bit matrix into an sw128 tile (block-wide). */
template <int ROWS, int W> __device__ void t_stage(uint8_t *tile, const uint16_t *g) {
    for (int i = threadIdx.x; i < ROWS * (W / 8); i += blockDim.x) {
        const int r = i / (W / 8), c = i % (W / 8);
        *(uint4 *)(tile + wg_sw_off<ROWS>(r, c)) = *(const uint4 *)(g + (size_t)r * W + c * 8);
    }
}

/* Where accumulator value v of this thread lands in a 64 x N tile. */
__device__ __forceinline__ void t_acc_pos(int v, int &r, int &c) {
    const int t = threadIdx.x & 127, w = t >> 5, lane = t & 31;
    const int j = v >> 2, i = v & 3;
    r = 16 * w + (lane >> 2) + 8 * (i >> 1);
    c = 8 * j + 2 * (lane & 3) + (i & 1);
}

/* 1: A 64x64 (M x K), B 128x64 (N x K), both K-major sw128;
 * D[kk] = A[:, 16kk..] B[:, 16kk..]^T (64 x 128). */
template <int DT> __global__ void t1_kernel(const uint16_t *A, const uint16_t *B, float *D) {
#if defined(ATTN_HAVE_WGMMA)
    extern __shared__ uint8_t raw[];
    uint8_t *sa = t_smem_1k(raw), *sb = sa + 64 * 64 * 2;
    t_stage<64, 64>(sa, A);
    t_stage<128, 64>(sb, B);
    fence_proxy_async();
    __syncthreads();
    for (int kk = 0; kk < 4; kk++) {
        float d[64];
#pragma unroll
        for (int i = 0; i < 64; i++) d[i] = 0.f;
        wg_pin(d);
        wg_fence();
        wg_mma_ss<DT, 128, 0>(d, wg_desc_add(wg_desc_k(wg_smem(sa)), kk * 32),
                              wg_desc_add(wg_desc_k(wg_smem(sb)), kk * 32), 0);
        wg_commit();
        wg_wait<0>();
        wg_pin(d);
#pragma unroll
        for (int v = 0; v < 64; v++) {
            int r, c;
            t_acc_pos(v, r, c);
            D[kk * 64 * 128 + r * 128 + c] = d[v];
        }
    }
#endif
}

/* 2: S[128 x BN] = Q[128 x D] K[BN x D]^T with the kernel's wg_qk (2 warpgroups). */
template <int DT, int D> __global__ void t2_kernel(const uint16_t *Q, const uint16_t *K, float *S) {
#if defined(ATTN_HAVE_WGMMA)
    using C = extend_wg_cfg<D>;
    extern __shared__ uint8_t raw[];
    uint8_t *sq = t_smem_1k(raw), *sk = sq + C::Q_BYTES;
    t_stage<128, D>(sq, Q);
    t_stage<C::BN, D>(sk, K);
    fence_proxy_async();
    __syncthreads();
    const int wg = threadIdx.x >> 7;
    float s[C::BN / 2];
    wg_pin(s);
    wg_fence();
    wg_qk<DT, D, C::BN>(s, wg_smem(sq) + wg * 64 * ATTN_SW_ROW_BYTES, wg_smem(sk));
    wg_commit();
    wg_wait<0>();
    wg_pin(s);
#pragma unroll
    for (int v = 0; v < C::BN / 2; v++) {
        int r, c;
        t_acc_pos(v, r, c);
        S[(64 * wg + r) * C::BN + c] = s[v];
    }
#endif
}

/* 3: O[128 x D] = P[128 x BN] V[BN x D] with wg_pack_p + wg_pv (P enters as
 * accumulator-layout floats, like the softmax output). */
template <int DT, int D> __global__ void t3_kernel(const float *P, const uint16_t *V, float *O) {
#if defined(ATTN_HAVE_WGMMA)
    using C = extend_wg_cfg<D>;
    extern __shared__ uint8_t raw[];
    uint8_t *sv = t_smem_1k(raw);
    t_stage<C::BN, D>(sv, V);
    fence_proxy_async();
    __syncthreads();
    const int wg = threadIdx.x >> 7;
    float s[C::BN / 2], o[D / 2];
    uint32_t pa[C::BN / 16][4];
#pragma unroll
    for (int v = 0; v < C::BN / 2; v++) {
        int r, c;
        t_acc_pos(v, r, c);
        s[v] = P[(64 * wg + r) * C::BN + c];
    }
#pragma unroll
    for (int i = 0; i < D / 2; i++) o[i] = 0.f;
    wg_pack_p<DT, C::BN>(pa, s);
    wg_pin(o);
    wg_pin(pa);
    wg_fence();
    wg_pv<DT, D, C::BN>(o, pa, wg_smem(sv));
    wg_commit();
    wg_wait<0>();
    wg_pin(o);
#pragma unroll
    for (int v = 0; v < D / 2; v++) {
        int r, c;
        t_acc_pos(v, r, c);
        O[(64 * wg + r) * D + c] = o[v];
    }
#endif
}

/* 4: the kernel's producer feeding checking consumers (same barrier protocol
 * as wg_consumer).  err[0]: mismatching chunks; err[1..4]: the first one
 * (kind 0 Q / 1 K / 2 V, item pair, row, chunk). */
template <int D> __global__ __launch_bounds__(384, 1) void t4_kernel(const attn_fwd p, int *err) {
#if defined(ATTN_HAVE_WGMMA)
    using C = extend_wg_cfg<D>;
    extern __shared__ uint8_t raw[];
    uint8_t *sm = t_smem_1k(raw);
    const uint32_t sbase = wg_smem(sm);
    const wg_bars<C::STAGES> bar{sbase + C::OFF_BAR};
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; s++) {
            mbar_init(bar.full(s), 128);
            mbar_init(bar.empty(s), 8);
        }
        mbar_init(bar.q_full(), 128);
        mbar_init(bar.q_empty(), 8);
        mbar_init_fence();
    }
    __syncthreads();
    const long long total = (long long)*p.num_items * p.hq;
    if (threadIdx.x < 128) {
        wg_producer<D, D, false, false>(p, sm, bar, total, nullptr);
        return;
    }
    const int t = threadIdx.x - 128, lane = t & 31;
    uint32_t g = 0, kq = 0;
    auto bad = [&](int kind, long long w, int r, int c) {
        if (atomicAdd(&err[0], 1) == 0) {
            err[1] = kind;
            err[2] = (int)w;
            err[3] = r;
            err[4] = c;
        }
    };
    auto check_q = [&](const wg_work &k, long long w) {
        for (int i = t; i < C::BM * C::CH; i += 256) {
            const int r = i / C::CH, c = i % C::CH, tok = k.q_tok0 + r;
            uint4 want = make_uint4(0, 0, 0, 0);
            if (r < k.nrows && tok < p.num_tokens)
                want = *(const uint4 *)((const uint16_t *)p.q + (int64_t)tok * p.q_stride_t +
                                        (int64_t)k.head * p.q_stride_h + c * 8);
            const uint4 got = *(const uint4 *)(sm + C::OFF_Q + wg_sw_off<C::BM>(r, c));
            if (got.x != want.x || got.y != want.y || got.z != want.z || got.w != want.w) bad(0, w, r, c);
        }
    };
    for (long long w = blockIdx.x; w < total; w += gridDim.x) {
        const wg_work k = wg_work_at<C::BN>(p, w);
        mbar_wait(bar.q_full(), kq & 1);
        kq++;
        check_q(k, w);
        for (int j = 0; j < k.ntiles; j++, g++) {
            const int s = (int)(g % C::STAGES), t0 = k.lo + j * C::BN;
            mbar_wait(bar.full(s), (g / C::STAGES) & 1);
            for (int i = t; i < C::BN * C::CH; i += 256) {
                const int r = i / C::CH, c = i % C::CH;
                uint4 wk = make_uint4(0, 0, 0, 0), wv = wk;
                if (t0 + r < k.hi) {
                    const int64_t sl = attn_slot(p, k.row, t0 + r);
                    wk = *(const uint4 *)((const uint16_t *)p.k_cache + sl * p.kc_stride_s +
                                          (int64_t)k.kvh * p.kc_stride_h + c * 8);
                    wv = *(const uint4 *)((const uint16_t *)p.v_cache + sl * p.vc_stride_s +
                                          (int64_t)k.kvh * p.vc_stride_h + c * 8);
                }
                const uint4 gk = *(const uint4 *)(sm + C::OFF_K + s * C::K_BYTES + wg_sw_off<C::BN>(r, c));
                const uint4 gv = *(const uint4 *)(sm + C::OFF_V + s * C::V_BYTES + wg_sw_off<C::BN>(r, c));
                if (gk.x != wk.x || gk.y != wk.y || gk.z != wk.z || gk.w != wk.w) bad(1, w, r, c);
                if (gv.x != wv.x || gv.y != wv.y || gv.z != wv.z || gv.w != wv.w) bad(2, w, r, c);
            }
            if (j == k.ntiles - 1) check_q(k, w); /* still intact: the producer waits for q_empty */
            __syncwarp();
            if (j == k.ntiles - 1 && lane == 0) mbar_arrive(bar.q_empty());
            if (lane == 0) mbar_arrive(bar.empty(s));
        }
        if (k.ntiles == 0) {
            __syncwarp();
            if (lane == 0) mbar_arrive(bar.q_empty());
        }
    }
#endif
}

/* ------------------------------------------------------------ blocks 1 - 3 */

template <int DT> static void test1() {
    std::vector<uint16_t> a, b;
    std::vector<float> af, bfv;
    fill16<DT>(a, af, 64 * 64, -2.f, 2.f);
    fill16<DT>(b, bfv, 128 * 64, -2.f, 2.f);
    uint16_t *da = dev_copy(a), *db = dev_copy(b);
    float *dd;
    CK(cudaMalloc(&dd, 4 * 64 * 128 * sizeof(float)));
    CK(cudaMemset(dd, 0xFF, 4 * 64 * 128 * sizeof(float)));
    const int smem = (64 + 128) * 64 * 2 + 1024;
    CK(cudaFuncSetAttribute(t1_kernel<DT>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    t1_kernel<DT><<<1, 128, smem>>>(da, db, dd);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> d = host_copy(dd, 4 * 64 * 128);
    for (int kk = 0; kk < 4; kk++) {
        double err = 0, ref_max = 0;
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < 128; n++) {
                double ref = 0;
                for (int k = 16 * kk; k < 16 * kk + 16; k++) ref += (double)af[m * 64 + k] * bfv[n * 64 + k];
                const double got = d[kk * 64 * 128 + m * 128 + n];
                const double e = fabs(got - ref);
                err = isnan(got) ? INFINITY : (e > err ? e : err);
                ref_max = fabs(ref) > ref_max ? fabs(ref) : ref_max;
            }
        char what[96];
        snprintf(what, sizeof what, "SS m64n128k16 %s, k-step %d (desc +%d B)", dtn(DT), kk, 32 * kk);
        report("1-wgmma", what, err <= 1e-3 * (ref_max + 1), err, "max abs err");
    }
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dd));
}

template <int DT, int D> static void test2() {
    using C = extend_wg_cfg<D>;
    constexpr int BN = C::BN;
    std::vector<uint16_t> q, k;
    std::vector<float> qf, kf;
    fill16<DT>(q, qf, 128 * D, -2.f, 2.f);
    fill16<DT>(k, kf, BN * D, -2.f, 2.f);
    uint16_t *dq = dev_copy(q), *dk = dev_copy(k);
    float *ds;
    CK(cudaMalloc(&ds, 128 * BN * sizeof(float)));
    CK(cudaMemset(ds, 0xFF, 128 * BN * sizeof(float)));
    const int smem = (int)(C::Q_BYTES + C::K_BYTES) + 1024;
    CK(cudaFuncSetAttribute(t2_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    t2_kernel<DT, D><<<1, 256, smem>>>(dq, dk, ds);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> s = host_copy(ds, 128 * BN);
    double err = 0, ref_max = 0;
    for (int m = 0; m < 128; m++)
        for (int n = 0; n < BN; n++) {
            double ref = 0;
            for (int x = 0; x < D; x++) ref += (double)qf[m * D + x] * kf[n * D + x];
            const double got = s[m * BN + n], e = fabs(got - ref);
            err = isnan(got) ? INFINITY : (e > err ? e : err);
            ref_max = fabs(ref) > ref_max ? fabs(ref) : ref_max;
        }
    char what[96];
    snprintf(what, sizeof what, "S = Q K^T 128x%dx%d %s (wg_qk, 2 warpgroups)", BN, D, dtn(DT));
    report("2-S", what, err <= 1e-3 * (1 + ref_max), err, "max abs err");
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(ds));
}

template <int DT, int D> static void test3() {
    using C = extend_wg_cfg<D>;
    constexpr int BN = C::BN;
    std::vector<float> P(128 * BN), Pr(128 * BN);
    for (int i = 0; i < 128 * BN; i++) {
        P[i] = rndf(0.f, 1.f);
        Pr[i] = from16<DT>(to16<DT>(P[i])); /* what wg_pack_p rounds to */
    }
    std::vector<uint16_t> v;
    std::vector<float> vf;
    fill16<DT>(v, vf, BN * D, -1.f, 1.f);
    float *dp = dev_copy(P), *dout;
    uint16_t *dv = dev_copy(v);
    CK(cudaMalloc(&dout, 128 * D * sizeof(float)));
    CK(cudaMemset(dout, 0xFF, 128 * D * sizeof(float)));
    const int smem = (int)C::K_BYTES + 1024;
    CK(cudaFuncSetAttribute(t3_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    t3_kernel<DT, D><<<1, 256, smem>>>(dp, dv, dout);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> o = host_copy(dout, 128 * D);
    double err = 0;
    for (int m = 0; m < 128; m++)
        for (int n = 0; n < D; n++) {
            double ref = 0;
            for (int x = 0; x < BN; x++) ref += (double)Pr[m * BN + x] * vf[x * D + n];
            const double got = o[m * D + n], e = fabs(got - ref);
            err = isnan(got) ? INFINITY : (e > err ? e : err);
        }
    char what[96];
    snprintf(what, sizeof what, "O = P V 128x%dx%d %s (RS, V MN-major, trans-b)", D, BN, dtn(DT));
    report("3-PV", what, err <= 1e-3, err, "max abs err");
    CK(cudaFree(dp));
    CK(cudaFree(dv));
    CK(cudaFree(dout));
}

/* --------------------------------------------------- a paged batch (4 and 5) */

struct batch_spec {
    const char *name;
    int dt, d, hq, hkv, page;
    std::vector<int> prefix, ext, enc; /* enc empty: self attention */
    int cross;                          /* plan the cross set (attend [0, enc)) */
    int window;                         /* < 0 off */
    float softcap;
    int sinks;
    int grid; /* 0: one block per SM */
};

struct batch {
    batch_spec s;
    int bs = 0, T = 0, max_ctx = 0, slots = 0;
    std::vector<int> seq, r2t, qoff;
    std::vector<uint16_t> q, k, v;
    std::vector<float> qf, kf, vf, sinks;
    /* device */
    uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
    int32_t *dr2t = nullptr, *drpi = nullptr, *dseq = nullptr, *dext = nullptr, *denc = nullptr, *dnum = nullptr;
    float *dsinks = nullptr;
    attn_extend_item *ditems = nullptr;
    int max_items = 0;
};

template <int DT> static void make_batch(batch &b, const batch_spec &s) {
    b.s = s;
    b.bs = (int)s.prefix.size();
    const int D = s.d;
    b.seq.resize(b.bs);
    b.qoff.resize(b.bs + 1);
    b.max_ctx = 0;
    b.T = 0;
    for (int i = 0; i < b.bs; i++) {
        const int enc = s.enc.empty() ? 0 : s.enc[i];
        b.seq[i] = s.prefix[i] + s.ext[i];
        b.qoff[i] = b.T;
        b.T += s.ext[i];
        const int ctx = enc + b.seq[i] + 3; /* a little slack past the last column */
        b.max_ctx = ctx > b.max_ctx ? ctx : b.max_ctx;
    }
    b.qoff[b.bs] = b.T;
    /* Pages: shuffled, page 0 reserved (slot 0 is padding). */
    const int P = s.page;
    const int pages_per_row = (b.max_ctx + P - 1) / P;
    const int npages = 1 + b.bs * pages_per_row + 7;
    std::vector<int> perm(npages - 1);
    for (int i = 0; i < npages - 1; i++) perm[i] = i + 1;
    for (int i = npages - 2; i > 0; i--) {
        const int j = rndi(i + 1);
        const int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    b.slots = npages * P;
    b.r2t.assign((size_t)b.bs * b.max_ctx, 0);
    for (int i = 0; i < b.bs; i++)
        for (int c = 0; c < b.max_ctx; c++) b.r2t[(size_t)i * b.max_ctx + c] = perm[i * pages_per_row + c / P] * P + c % P;
    fill16<DT>(b.q, b.qf, (size_t)b.T * s.hq * D, -2.f, 2.f);
    fill16<DT>(b.k, b.kf, (size_t)b.slots * s.hkv * D, -2.f, 2.f);
    fill16<DT>(b.v, b.vf, (size_t)b.slots * s.hkv * D, -1.f, 1.f);
    b.sinks.resize(s.hq);
    for (int h = 0; h < s.hq; h++) b.sinks[h] = rndf(-1.f, 2.f);

    b.dq = dev_copy(b.q);
    b.dk = dev_copy(b.k);
    b.dv = dev_copy(b.v);
    CK(cudaMalloc(&b.dout, (size_t)b.T * s.hq * D * 2 + 16));
    std::vector<int32_t> rpi(b.bs), ext(s.ext.begin(), s.ext.end()), seq(b.seq.begin(), b.seq.end());
    for (int i = 0; i < b.bs; i++) rpi[i] = i;
    b.dr2t = dev_copy(std::vector<int32_t>(b.r2t.begin(), b.r2t.end()));
    b.drpi = dev_copy(rpi);
    b.dseq = dev_copy(seq);
    b.dext = dev_copy(ext);
    if (!s.enc.empty()) b.denc = dev_copy(std::vector<int32_t>(s.enc.begin(), s.enc.end()));
    b.dsinks = dev_copy(b.sinks);
    b.max_items = (b.T + ATTN_WG_BM - 1) / ATTN_WG_BM + b.bs;
    CK(cudaMalloc(&b.ditems, (size_t)b.max_items * sizeof(attn_extend_item)));
    CK(cudaMalloc(&b.dnum, sizeof(int32_t)));
}

static void free_batch(batch &b) {
    void *ptrs[] = {b.dq, b.dk, b.dv, b.dout, b.dr2t, b.drpi, b.dseq, b.dext, b.denc, b.dnum, b.dsinks, b.ditems};
    for (void *x : ptrs)
        if (x) CK(cudaFree(x));
}

static attn_index ix(const int32_t *p, int n) {
    attn_index r;
    r.p = p;
    r.shift = 0;
    r.n = n;
    return r;
}

/* Plan on the device (the mma path's plan kernel, 128-row items) and fill the forward. */
static attn_fwd plan_batch(batch &b) {
    const batch_spec &s = b.s;
    attn_plan_in in;
    memset(&in, 0, sizeof in);
    in.req_pool_indices = ix(b.drpi, b.bs);
    in.seq_lens = ix(b.dseq, b.bs);
    in.extend_seq_lens = ix(b.dext, b.bs);
    if (b.denc) in.encoder_lens = ix(b.denc, b.bs);
    in.bs = b.bs;
    in.max_reqs = b.bs;
    in.max_ctx = b.max_ctx;
    attn_extend_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.items = b.ditems;
    pl.num_items = b.dnum;
    pl.max_items = b.max_items;
    pl.block_m = ATTN_WG_BM;
    pl.block_n = 128;
    pl.cross = s.cross;
    attn_plan_extend_kernel<<<1, ATTN_PLAN_THREADS>>>(in, pl);
    CK(cudaGetLastError());

    attn_fwd p;
    memset(&p, 0, sizeof p);
    const int D = s.d;
    p.q = b.dq;
    p.out = b.dout;
    p.k_cache = b.dk;
    p.v_cache = b.dv;
    p.sinks = s.sinks ? b.dsinks : nullptr;
    p.req_to_token = ix(b.dr2t, b.bs * b.max_ctx);
    p.r2t_row_words = b.max_ctx;
    p.q_stride_t = (int64_t)s.hq * D;
    p.q_stride_h = D;
    p.o_stride_t = (int64_t)s.hq * D;
    p.o_stride_h = D;
    p.kc_stride_s = p.vc_stride_s = (int64_t)s.hkv * D;
    p.kc_stride_h = p.vc_stride_h = D;
    p.num_slots = b.slots;
    p.hq = s.hq;
    p.hkv = s.hkv;
    p.group = s.hq / s.hkv;
    p.max_reqs = b.bs;
    p.max_ctx = b.max_ctx;
    p.num_tokens = b.T;
    p.scale = 1.f / sqrtf((float)D);
    p.scale_log2 = p.scale * 1.4426950408889634f;
    p.softcap = s.softcap;
    p.window = s.cross ? -1 : s.window;
    p.eitems = b.ditems;
    p.num_items = b.dnum;
    return p;
}

/* float64 reference of one (token, head) row, per docs/contributing.md. */
static void ref_row(const batch &b, int req, int j, int h, double *out) {
    const batch_spec &s = b.s;
    const int D = s.d, kvh = h / (s.hq / s.hkv);
    const int enc = s.enc.empty() ? 0 : s.enc[req];
    int lo, hi, qpos;
    if (s.cross) {
        lo = 0;
        hi = enc;
        qpos = INT32_MAX;
    } else {
        qpos = enc + s.prefix[req] + j;
        lo = enc;
        hi = qpos + 1;
        if (s.window >= 0 && qpos - s.window > lo) lo = qpos - s.window;
    }
    const float *q = &b.qf[((size_t)(b.qoff[req] + j) * s.hq + h) * D];
    std::vector<double> sc(hi > lo ? hi - lo : 0);
    double mx = -INFINITY;
    for (int c = lo; c < hi; c++) {
        const int slot = b.r2t[(size_t)req * b.max_ctx + c];
        const float *k = &b.kf[((size_t)slot * s.hkv + kvh) * D];
        double dot = 0;
        for (int x = 0; x < D; x++) dot += (double)q[x] * k[x];
        dot *= 1.0 / sqrt((double)D);
        if (s.softcap > 0) dot = s.softcap * tanh(dot / s.softcap);
        sc[c - lo] = dot;
        mx = dot > mx ? dot : mx;
    }
    if (s.sinks) mx = b.sinks[h] > mx ? b.sinks[h] : mx;
    double den = s.sinks ? exp(b.sinks[h] - mx) : 0;
    for (int x = 0; x < D; x++) out[x] = 0;
    for (int c = lo; c < hi; c++) {
        const double w = exp(sc[c - lo] - mx);
        den += w;
        const int slot = b.r2t[(size_t)req * b.max_ctx + c];
        const float *v = &b.vf[((size_t)slot * s.hkv + kvh) * D];
        for (int x = 0; x < D; x++) out[x] += w * v[x];
    }
    for (int x = 0; x < D; x++) out[x] = den > 0 ? out[x] / den : 0;
}

/* A wait that timed out (wgmma_sm90.cuh, ATTN_WG_DEBUG): say where, reset. */
static bool watchdog_fired(const char *block) {
    unsigned int ab = 0, info[4] = {0, 0, 0, 0};
    CK(cudaMemcpyFromSymbol(&ab, attn_wg_abort, sizeof ab));
    if (!ab) return false;
    CK(cudaMemcpyFromSymbol(info, attn_wg_abort_info, sizeof info));
    printf("FAIL %-8s watchdog: block %u thread %u waited > 5 s on the mbarrier at shared 0x%x, parity %u "
           "(a protocol deadlock; the launch was ended early)\n", block, info[0], info[1], info[2], info[3]);
    g_fail = 1;
    ab = 0;
    CK(cudaMemcpyToSymbol(attn_wg_abort, &ab, sizeof ab));
    return true;
}

static int sm_count() {
    int dev = 0, n = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
}

/* 4: the ring, on batch b (only the data layout matters, not the options). */
template <int D> static void test4(batch &b) {
    using C = extend_wg_cfg<D>;
    attn_fwd p = plan_batch(b);
    int *derr;
    CK(cudaMalloc(&derr, 5 * sizeof(int)));
    CK(cudaMemset(derr, 0, 5 * sizeof(int)));
    CK(cudaFuncSetAttribute(t4_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM));
    const int grid = b.s.grid > 0 ? b.s.grid : sm_count();
    t4_kernel<D><<<grid, 384, C::SMEM>>>(p, derr);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (watchdog_fired("4-ring")) {
        CK(cudaFree(derr));
        return;
    }
    std::vector<int> e = host_copy(derr, 5);
    char what[128];
    snprintf(what, sizeof what, "ring %s: d%d page %d, %d stages, grid %d", b.s.name, D, b.s.page, C::STAGES, grid);
    report("4-ring", what, e[0] == 0, (double)e[0], "bad 16B chunks");
    if (e[0])
        printf("     first: %s, pair %d, row %d, chunk %d\n", e[1] == 0 ? "Q" : e[1] == 1 ? "K" : "V", e[2], e[3], e[4]);
    CK(cudaFree(derr));
}

/* 5: the kernel on batch b, one variant, against the float64 reference. */
template <int DT, int D> static void test5_run(batch &b, const std::vector<double> &ref) {
    using C = extend_wg_cfg<D>;
    const batch_spec &s = b.s;
    attn_fwd p = plan_batch(b);
    CK(cudaMemset(b.dout, 0xFF, (size_t)b.T * s.hq * D * 2)); /* NaN poison: every element must be written */
    CK(cudaFuncSetAttribute(attn_extend_wgmma_kernel<DT, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)C::SMEM));
    const int grid = s.grid > 0 ? s.grid : sm_count();
    attn_extend_wgmma_kernel<DT, D><<<grid, ATTN_WG_THREADS, C::SMEM>>>(p);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (watchdog_fired("5-attn")) return;
    std::vector<uint16_t> out = host_copy(b.dout, (size_t)b.T * s.hq * D);
    double num = 0, den = 0, maxe = 0;
    long long nan_count = 0;
    for (size_t i = 0; i < out.size(); i++) {
        const double got = from16<DT>(out[i]);
        if (!isfinite(got)) {
            nan_count++;
            continue;
        }
        const double e = fabs(got - ref[i]);
        num += e * e;
        den += ref[i] * ref[i];
        maxe = e > maxe ? e : maxe;
    }
    const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    const double tol = DT == GC_BF16 ? 1e-2 : 2e-3;
    char what[160];
    snprintf(what, sizeof what, "%s %s d%d (rel L2 %.2e%s)", s.name, dtn(DT), D, rel,
             nan_count ? ", NON-FINITE" : "");
    report("5-attn", what, nan_count == 0 && rel <= tol && maxe <= 10 * tol, maxe, "max abs err");
    if (nan_count) printf("     %lld outputs not finite (unwritten or NaN)\n", nan_count);
}

template <int DT, int D> static void test5(const batch_spec &s) {
    batch b;
    make_batch<DT>(b, s);
    std::vector<double> ref((size_t)b.T * s.hq * D); /* [T, hq, D], like out */
    for (int r = 0; r < b.bs; r++)
        for (int j = 0; j < s.ext[r]; j++)
            for (int h = 0; h < s.hq; h++) ref_row(b, r, j, h, &ref[((size_t)(b.qoff[r] + j) * s.hq + h) * D]);
    test5_run<DT, D>(b, ref);
    free_batch(b);
}

template <typename K> static void attrs(K fn, const char *name) {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, fn));
    char what[128];
    snprintf(what, sizeof what, "%s: %d regs, %zu B local, binary sm_%d", name, fa.numRegs, fa.localSizeBytes,
             fa.binaryVersion);
    report("0-attr", what, fa.numRegs == ATTN_WG_REGS_ENTRY && fa.localSizeBytes == 0 && fa.binaryVersion == 90,
           (double)fa.numRegs, "registers");
}

int main(int argc, char **argv) {
    g_rng = argc > 1 ? strtoull(argv[1], nullptr, 0) : (uint64_t)time(nullptr) * 2654435761ull;
    if (!g_rng) g_rng = 88172645463325252ull;
    printf("test_wgmma_primitives: seed %llu\n", (unsigned long long)g_rng);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, SM %d.%d, %d SMs, %zu B shared per block (opt-in)\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, prop.sharedMemPerBlockOptin);
    if (prop.major != 9 || prop.minor != 0) {
        printf("SKIP: the wgmma path needs SM 9.0\n");
        return 0;
    }

    printf("-- 0. kernel attributes (the setmaxnreg split assumes %d registers at entry)\n", ATTN_WG_REGS_ENTRY);
    attrs(attn_extend_wgmma_kernel<GC_BF16, 128>, "bf16 cp.async producer");
    attrs(attn_extend_wgmma_kernel<GC_F16, 128>, "f16 cp.async producer");
    attrs(attn_extend_wgmma_tma_kernel<GC_BF16, 128>, "bf16 TMA producer");
    attrs(attn_extend_wgmma_tma_kernel<GC_F16, 128>, "f16 TMA producer");
    printf("-- 1. one wgmma (descriptor, swizzle, k-step)\n");
    test1<GC_BF16>();
    test1<GC_F16>();
    printf("-- 2. S tile (SS)\n");
    test2<GC_BF16, 128>();
    test2<GC_F16, 128>();
    printf("-- 3. P V (RS, trans-b)\n");
    test3<GC_BF16, 128>();
    test3<GC_F16, 128>();

    printf("-- 4. producer ring (cp.async gather, mbarriers)\n");
    {
        batch_spec s{"ragged", GC_BF16, 128, 4, 2, 1, {0, 200, 1000, 37}, {300, 77, 129, 1}, {}, 0, -1, 0.f, 0, 0};
        batch b;
        make_batch<GC_BF16>(b, s);
        test4<128>(b);
        free_batch(b);
        s.page = 16;
        s.grid = 3; /* several pairs per block: the ring and Q barriers cross items */
        make_batch<GC_BF16>(b, s);
        test4<128>(b);
        free_batch(b);
    }

    printf("-- 5. the kernel vs float64\n");
    test5<GC_BF16, 128>({"one tile", GC_BF16, 128, 1, 1, 16, {0}, {128}, {}, 0, -1, 0.f, 0, 0});
    test5<GC_BF16, 128>({"prefix+ragged p1", GC_BF16, 128, 4, 4, 1, {0, 200, 1000, 37}, {300, 77, 129, 1}, {}, 0,
                         -1, 0.f, 0, 0});
    test5<GC_F16, 128>({"win+cap+sinks", GC_F16, 128, 4, 2, 16, {64, 0}, {250, 190}, {}, 0, 100, 30.f, 1, 0});
    test5<GC_BF16, 128>({"GQA 8/2 sinks", GC_BF16, 128, 8, 2, 16, {130, 7}, {140, 300}, {}, 0, -1, 0.f, 1, 0});
    test5<GC_BF16, 128>({"cross enc", GC_BF16, 128, 4, 4, 16, {0, 3}, {40, 130}, {77, 300}, 1, -1, 0.f, 0, 0});
    test5<GC_BF16, 128>({"enc offset self", GC_BF16, 128, 4, 2, 16, {10, 0}, {100, 200}, {90, 33}, 0, -1, 0.f, 0, 0});
    test5<GC_BF16, 128>({"long, grid 5", GC_BF16, 128, 2, 1, 16, {0}, {2048}, {}, 0, -1, 0.f, 0, 5});

    printf(g_fail ? "RESULT: FAIL\n" : "RESULT: all PASS\n");
    return g_fail;
}
