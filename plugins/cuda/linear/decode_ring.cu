/* decode_ring.cu - the stream decode's state kernel as a persistent ring
 * (option decode_ring=1, off by default; docs/cuda_linear.md, "Stream decode"):
 * the same tiles, formulas and order of operations as decode_stream.cu's
 * lin_decode_stream_kernel, so the outputs and states are the same bits, but
 * a grid of LK_RING_BPS blocks per SM, each walking the tiles blockIdx.x,
 * blockIdx.x + gridDim.x, ... with the state of the next LK_RING_NS - 1 tiles
 * in flight by cp.async into a ring of shared-memory stages while it computes
 * and stores the current one.
 *
 * Why: the stream kernel's blocks load their 16 KB, then compute and store with
 * nothing in flight, so the bytes in flight per SM swing with the blocks'
 * phases (docs/lab/linear.md, "The stream decode's state kernel as a ring",
 * has the profile).  Here every block keeps two tiles (32 KB) in flight at all
 * times, 128 KB per SM, and no register holds a byte in flight.
 *
 * Each thread copies its own NLD 16-byte pieces of a tile into its own slots
 * of a stage and reads back only those (cp.async.wait_group of its own
 * groups): no barrier.  A stage is refilled by the thread that read it, after
 * its values were used.  One commit group per tile, empty for a tile past the
 * end or of a padding request, so that wait_group<NS - 1> always means "the
 * current tile has landed".  The prep (decode_prep.cu) is unchanged and runs
 * first; on SM 9.0+ this kernel is its programmatic dependent launch: the
 * ring's first tiles are issued before griddepcontrol.wait (the prep never
 * writes the state), the operands read after it. */
#include "kernel_common.cuh"

#define LK_RING_THREADS 128
#define LK_RING_NLD 8 /* 16-byte state pieces per thread and tile (16 KB per tile) */
#define LK_RING_NS 3  /* stages: 48 KB of shared memory, no opt-in */
#define LK_RING_BPS LIN_RING_BLOCKS_PER_SM /* resident blocks per SM the registers are budgeted for (128 x 128) */

static_assert(LK_RING_NS * LK_RING_NLD * LK_RING_THREADS * 16 == LIN_RING_SMEM, "lin_params.h LIN_RING_SMEM");

template <int SDT> struct lk_ring {
    static constexpr int K = LIN_TC_K, ESZ = SDT == LIN_DT_F32 ? 4 : 2, CPL = 16 / ESZ, LPR = K / CPL,
                         RPI = 32 / LPR, RPW = LK_RING_NLD * RPI, RT = 4 * RPW;
};
static_assert(lk_ring<LIN_DT_F32>::RT == LIN_STREAM_ROWS(LIN_DT_F32) &&
                  lk_ring<LIN_DT_BF16>::RT == LIN_STREAM_ROWS(LIN_DT_BF16),
              "lin_params.h LIN_STREAM_ROWS and the ring's tile differ");

/* The request, value head and first row of tile `it` (the stream kernel's block order: requests fastest) */
struct lk_ring_item {
    int req, head, r0;
};
LK_DEV lk_ring_item lk_ring_at(const lin_fwd &p, int it, int RT) {
    lk_ring_item t;
    t.req = it % p.bs;
    const int rest = it / p.bs;
    t.head = rest % p.hv;
    t.r0 = rest / p.hv * RT;
    return t;
}

/* Issue tile it's state pieces of this thread into stage st (nothing for a tile past the end or a request
 * with no tokens or no slot), then close the group. */
template <int SDT>
LK_DEV void lk_ring_issue(const lin_fwd &p, int it, int items, unsigned char *stage) {
    using D = lk_ring<SDT>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = D::RT;
    if (it < items) {
        const lk_ring_item t = lk_ring_at(p, it, RT);
        const int n = p.pl.req_n[t.req], slot = p.pl.req_slot[t.req];
        if (n > 0 && slot >= 0) {
            const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane / LPR, cc = (lane % LPR) * CPL;
            const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)t.head * p.V * K;
#pragma unroll
            for (int l = 0; l < LK_RING_NLD; l++) {
                const int r = t.r0 + warp * RPW + l * RPI + sub;
                const bool live = r < p.V;
                const unsigned char *src =
                    (const unsigned char *)p.ssm_state + (live ? (sbase + (int64_t)r * K + cc) * D::ESZ : 0);
                lk_cp_async16(stage + ((size_t)l * LK_RING_THREADS + threadIdx.x) * 16, src, live);
            }
        }
    }
    lk_cp_async_commit();
}

template <int SDT>
__global__ __launch_bounds__(LK_RING_THREADS, LK_RING_BPS) void lin_decode_ring_kernel(lin_fwd p, int items) {
    using D = lk_ring<SDT>;
    constexpr int K = D::K, CPL = D::CPL, LPR = D::LPR, RPI = D::RPI, RPW = D::RPW, RT = D::RT, NLD = LK_RING_NLD,
                  NS = LK_RING_NS, STAGE = NLD * LK_RING_THREADS * 16;
    LK_DYN_SMEM(unsigned char, ring);
    const int KIND = p.kind;
    const bool DELTA = KIND == LIN_GDN || KIND == LIN_KDA, GCH = KIND == LIN_KDA, M2 = KIND == LIN_MAMBA2;
    const int GC = GCH ? K : 1;
    const int V = p.V, HV = p.hv, gsz = p.gsz, G = (int)gridDim.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int sub = lane / LPR, cc = (lane % LPR) * CPL;

#pragma unroll
    for (int k = 0; k < NS - 1; k++) lk_ring_issue<SDT>(p, (int)blockIdx.x + k * G, items, ring + k * STAGE);
    /* the prep's operands are read below, after its grid is done (the ring's loads stay in flight) */
    lk_pdl_wait();

    int st = 0; /* the stage of tile it */
    for (int it = (int)blockIdx.x; it < items; it += G) {
        /* the tile NS - 1 ahead goes into the stage this thread emptied last (its values are used) */
        lk_ring_issue<SDT>(p, it + (NS - 1) * G, items, ring + (st == 0 ? NS - 1 : st - 1) * STAGE);
        lk_cp_async_wait<NS - 1>();
        const unsigned char *stage = ring + st * STAGE;
        st = st == NS - 1 ? 0 : st + 1;
        const lk_ring_item t = lk_ring_at(p, it, RT);
        const int n = p.pl.req_n[t.req];
        if (n <= 0) continue;
        const int slot = p.pl.req_slot[t.req];
        if (slot < 0) continue; /* padding: the prep kernel wrote its zero outputs */
        const int64_t tok0 = p.pl.req_tok0[t.req];
        const int grp = t.head / gsz, jh = t.head % gsz, R0 = t.r0, NR = min(RT, V - R0);
        const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)t.head * V * K;
        float s[NLD][CPL];
#pragma unroll
        for (int l = 0; l < NLD; l++) /* rows past V landed as zeros (the copy's source size 0) */
            lk_sld<SDT, CPL>(stage, ((int64_t)l * LK_RING_THREADS + threadIdx.x) * CPL, s[l]);

        const float *op = p.dq + (int64_t)(t.req * p.hk + grp) * p.dq_per;
        const int okv = n * K, okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz * GC,
                  osk = obb + n * gsz;
        for (int j = 0; j < n; j++) {
            const int hj = j * gsz + jh;
            float kj[CPL], qj[CPL], ec[CPL];
            lk_sld<LIN_DT_F32, CPL>(op, okv + j * K + cc, kj);
            lk_sld<LIN_DT_F32, CPL>(op, j * K + cc, qj);
            if (GCH) {
#pragma unroll
                for (int e = 0; e < CPL; e++) ec[e] = op[oee + hj * K + cc + e];
            } else {
                const float e1 = op[oee + hj];
#pragma unroll
                for (int e = 0; e < CPL; e++) ec[e] = e1;
            }
            const float beta = DELTA ? op[obb + hj] : 0.f, kqj = DELTA ? op[okq + j] : 0.f;
            float a1[NLD], a2[NLD];
#pragma unroll
            for (int l = 0; l < NLD; l++) {
                a1[l] = a2[l] = 0.f;
                if (DELTA) {
#pragma unroll
                    for (int e = 0; e < CPL; e++) {
                        a1[l] += s[l][e] * (ec[e] * kj[e]);
                        a2[l] += s[l][e] * (ec[e] * qj[e]);
                    }
                } else {
                    const int rl = warp * RPW + l * RPI + sub;
                    const float v = rl < NR ? op[ovv + hj * V + R0 + rl] : 0.f;
#pragma unroll
                    for (int e = 0; e < CPL; e++) {
                        s[l][e] = ec[e] * s[l][e] + v * kj[e];
                        a2[l] += s[l][e] * qj[e];
                    }
                }
            }
#pragma unroll
            for (int o = LPR / 2; o; o >>= 1)
#pragma unroll
                for (int l = 0; l < NLD; l++) {
                    if (DELTA) a1[l] += gc_shfl_xor(a1[l], o);
                    a2[l] += gc_shfl_xor(a2[l], o);
                }
#pragma unroll
            for (int l = 0; l < NLD; l++) {
                const int rl = warp * RPW + l * RPI + sub, r = R0 + rl;
                const bool live = rl < NR;
                float out;
                if (DELTA) {
                    const float u = live ? beta * (op[ovv + hj * V + r] - a1[l]) : 0.f;
#pragma unroll
                    for (int e = 0; e < CPL; e++) s[l][e] = ec[e] * s[l][e] + u * kj[e];
                    out = p.scale * (a2[l] + u * kqj);
                } else {
                    out = p.scale * a2[l] + (M2 && live ? op[osk + hj * V + r] : 0.f);
                }
                if (live) {
                    if (lane % LPR == 0) lk_st(p.out, p.out_dt, ((tok0 + j) * HV + t.head) * V + r, out);
                    if (p.keep)
                        lk_sst<SDT, CPL>(p.issm, ((int64_t)slot * p.steps + j) * p.ssm_elems + ((int64_t)t.head * V + r) * K + cc,
                                         s[l]);
                }
            }
        }
        if (!p.keep)
#pragma unroll
            for (int l = 0; l < NLD; l++) {
                const int r = R0 + warp * RPW + l * RPI + sub;
                if (r < V) lk_sst<SDT, CPL>(p.ssm_state, sbase + (int64_t)r * K + cc, s[l]);
            }
    }
    lk_cp_async_wait_all(); /* nothing left in flight at exit (the groups past the end are empty) */
}

/* The ring's carve-out: the most shared memory per SM, so that LK_RING_BPS blocks of 48 KB fit (a hint;
 * on a device with less, fewer blocks are resident and the grid runs in more rounds, correctly). */
extern "C" int lin_decode_ring_setup(void) {
    cudaError_t e = cudaFuncSetAttribute(lin_decode_ring_kernel<LIN_DT_F32>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(lin_decode_ring_kernel<LIN_DT_BF16>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 100);
    return (int)e;
}

/* The state kernel of the stream decode as the ring (p.dec_ring blocks at most; the prep has run, p.dq_per set) */
extern "C" int lin_launch_decode_ring(const lin_fwd *pp, void *stream) {
    const lin_fwd p = *pp;
    const int RT = LIN_STREAM_ROWS(p.st_dt);
    const int64_t items64 = (int64_t)p.bs * p.hv * ((p.V + RT - 1) / RT);
    if (items64 > INT32_MAX || p.dec_ring <= 0) return (int)cudaErrorInvalidValue;
    const int items = (int)items64;
    const int grid = items < p.dec_ring ? items : p.dec_ring;
    cudaStream_t st = (cudaStream_t)stream;
    const cudaError_t ce =
        p.st_dt == LIN_DT_BF16
            ? LK_LAUNCH_PDL(p.dq_pdl, lin_decode_ring_kernel<LIN_DT_BF16>, grid, LK_RING_THREADS, LIN_RING_SMEM, st,
                            p, items)
            : LK_LAUNCH_PDL(p.dq_pdl, lin_decode_ring_kernel<LIN_DT_F32>, grid, LK_RING_THREADS, LIN_RING_SMEM, st,
                            p, items);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        return (int)ce;
    }
    return (int)cudaGetLastError();
}
