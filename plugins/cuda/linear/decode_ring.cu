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
 * writes the state), the operands read after it.
 *
 * lin_decode_ring_fold_kernel (below, option decode_ring_fold=1) is the same
 * ring with the prep folded into its tiles: one launch, no prep. */
#include "decode_operands.cuh"
#include "decode_row.cuh"

#define LK_RING_THREADS 128
#define LK_RING_NLD 8 /* 16-byte state pieces per thread and tile (16 KB per tile) */
#define LK_RING_NS 3  /* stages: 48 KB of shared memory, no opt-in */
#define LK_RING_BPS LIN_RING_BLOCKS_PER_SM /* resident blocks per SM the registers are budgeted for (128 x 128) */

static_assert(LK_RING_NS * LK_RING_NLD * LK_RING_THREADS * 16 == LIN_RING_SMEM, "lin_params.h LIN_RING_SMEM");

static_assert(LK_RING_THREADS == LK_ROWS_THREADS, "decode_row.cuh's tile is 4 warps");
template <int SDT> using lk_ring = lk_rows<SDT, LK_RING_NLD>;
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

/* The walk's step to tile it (st: its stage): the tile NS - 1 ahead goes into the stage this thread emptied
 * last (its values are used), then tile it's group is waited for; returns tile it's stage, st moved on */
template <int SDT>
LK_DEV const unsigned char *lk_ring_advance(const lin_fwd &p, int it, int items, int G, unsigned char *ring,
                                            int &st) {
    constexpr int NS = LK_RING_NS, STAGE = LK_RING_NLD * LK_RING_THREADS * 16;
    lk_ring_issue<SDT>(p, it + (NS - 1) * G, items, ring + (st == 0 ? NS - 1 : st - 1) * STAGE);
    lk_cp_async_wait<NS - 1>();
    const unsigned char *stage = ring + st * STAGE;
    st = st == NS - 1 ? 0 : st + 1;
    return stage;
}

/* One tile's math for the fold, lin_decode_ring_kernel's (the stream kernel's): the state from this
 * thread's pieces of `stage`, the operands from op (decode_operands.cuh's layout of the tile's (request,
 * group), in shared memory), the outputs and the new state stored. */
template <int SDT>
LK_DEV void lk_ring_tile(const lin_fwd &p, const lk_ring_item &t, int n, int slot, int64_t tok0,
                         const unsigned char *stage, const float *op) {
    using D = lk_ring<SDT>;
    constexpr int K = D::K, CPL = D::CPL, RT = D::RT, NLD = LK_RING_NLD;
    const int KIND = p.kind;
    const int V = p.V, HV = p.hv, gsz = p.gsz;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int jh = t.head % gsz, R0 = t.r0, NR = min(RT, V - R0);
    const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)t.head * V * K;
    float s[NLD][CPL];
#pragma unroll
    for (int l = 0; l < NLD; l++) /* rows past V landed as zeros (the copy's source size 0) */
        lk_sld<SDT, CPL>(stage, ((int64_t)l * LK_RING_THREADS + threadIdx.x) * CPL, s[l]);
    lk_rows_steps<SDT, NLD>(p, s, op, n, slot, tok0, KIND, V, HV, gsz, lane, warp, [&] { return t.head; }, [&] { return jh; },
                            [&] { return R0; }, [&] { return NR; });
    lk_rows_store<SDT, NLD>(p, s, sbase, V, R0, lane, warp);
}

/* The ring after the prep */
template <int SDT>
__global__ __launch_bounds__(LK_RING_THREADS, LK_RING_BPS) void lin_decode_ring_kernel(lin_fwd p, int items) {
    using D = lk_ring<SDT>;
    constexpr int K = D::K, CPL = D::CPL, RT = D::RT, NLD = LK_RING_NLD, NS = LK_RING_NS,
                  STAGE = NLD * LK_RING_THREADS * 16;
    LK_DYN_SMEM(unsigned char, ring);
    const int KIND = p.kind;
    const int V = p.V, HV = p.hv, gsz = p.gsz, G = (int)gridDim.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

#pragma unroll
    for (int k = 0; k < NS - 1; k++) lk_ring_issue<SDT>(p, (int)blockIdx.x + k * G, items, ring + k * STAGE);
    /* the prep's operands are read below, after its grid is done (the ring's loads stay in flight) */
    lk_pdl_wait();

    int st = 0; /* the stage of tile it */
    for (int it = (int)blockIdx.x; it < items; it += G) {
        const unsigned char *stage = lk_ring_advance<SDT>(p, it, items, G, ring, st);
        const lk_ring_item t = lk_ring_at(p, it, RT);
        const int n = p.pl.req_n[t.req];
        if (n <= 0) continue;
        const int slot = p.pl.req_slot[t.req];
        if (slot < 0) continue; /* padding: the prep kernel wrote its zero outputs */
        const int64_t tok0 = p.pl.req_tok0[t.req];
        /* lk_ring_tile written out, the operand pointer after the state reads (as a call, ptxas spills the
         * bf16 tile at the 128-register budget) */
        const int grp = t.head / gsz, jh = t.head % gsz, R0 = t.r0, NR = min(RT, V - R0);
        const int64_t sbase = (int64_t)slot * p.ssm_elems + (int64_t)t.head * V * K;
        float s[NLD][CPL];
#pragma unroll
        for (int l = 0; l < NLD; l++) /* rows past V landed as zeros (the copy's source size 0) */
            lk_sld<SDT, CPL>(stage, ((int64_t)l * LK_RING_THREADS + threadIdx.x) * CPL, s[l]);
        const float *op = p.dq + (int64_t)(t.req * p.hk + grp) * p.dq_per;
        lk_rows_steps<SDT, NLD>(p, s, op, n, slot, tok0, KIND, V, HV, gsz, lane, warp, [&] { return t.head; },
                                [&] { return jh; }, [&] { return R0; }, [&] { return NR; });
        lk_rows_store<SDT, NLD>(p, s, sbase, V, R0, lane, warp);
    }
    lk_cp_async_wait_all(); /* nothing left in flight at exit (the groups past the end are empty) */
}

/* ------------------------------------------------------------------ the prep folded into the tiles
 * (decode_ring_fold=1; gdn, conv width 4: decode_prep.cu's w4 form and its conditions, lk_ring_fold_ok).
 * One launch: each tile makes the operands it reads in its own block's shared memory, in
 * decode_operands.cuh's layout of its (request, group) (only its head's gates and its own rows of v are
 * filled), with the w4 prep's mapping and order of operations, so they are the prep's bits: warp 0 the
 * group's q channels, warp 1 its k channels (lane l: channels 4l .. 4l+3; l2norm a warp sum, k.q after a
 * barrier), the lanes of warps 2 and 3 the tile's own value channels, 4 each; the gates of its head.
 * The conv history moves on in place: each tile writes its own value channels' history; the group's q / k
 * history is read by every tile of the group, so each tile counts itself on the group's counter (p.dcnt)
 * after its reads, and the last to count writes the new q / k history (old history and the new x, read
 * again) and rewinds the counter, ready for the next call or graph replay.  No block waits on another.
 * Verify with keep writes the step copies instead: q / k by the group's first tile, value channels by
 * their own.  A padding request's tiles write its zero outputs. */
#define LK_FOLD_W 4
#define LK_FOLD_H (LK_FOLD_W - 1)

template <int SDT, int XDT, int WDT>
LK_DEV void lk_fold_operands(const lin_fwd &p, const lk_ring_item &t, int n, int slot, int64_t tok0, float *op,
                             int *last_flag) {
    constexpr int K = LIN_TC_K, W = LK_FOLD_W, H = LK_FOLD_H;
    const int V = p.V, HV = p.hv, HK = p.hk, gsz = p.gsz, grp = t.head / gsz, jh = t.head % gsz;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int NR = min(LIN_STREAM_ROWS(SDT), V - t.r0);
    /* my 4 channels: q (warp 0), k (warp 1), the tile's value rows (warps 2, 3: rows r0 + 4u ..) */
    const int u = tid - 64, r2 = jh * V + t.r0 + 4 * u; /* value channel of the group, as the w4 prep's r2 */
    const bool live = warp < 2 || 4 * u < NR;
    const int ch = warp == 0 ? grp * K + 4 * lane : warp == 1 ? (HK + grp) * K + 4 * lane
                                                              : 2 * HK * K + grp * gsz * V + (live ? r2 : 0);
    const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
    float hist[4 * H], wt[4 * W], bias[4] = {0.f, 0.f, 0.f, 0.f}, x[4] = {0.f, 0.f, 0.f, 0.f};
    lk_w4_load<SDT, XDT, WDT, W>(p, live, ch, at, tok0, hist, wt, bias, x);
    const int okq = 2 * n * K, ovv = okq + n, oee = ovv + n * gsz * V, obb = oee + n * gsz;
    float ga = 0.f, gb = 0.f, gl = 0.f, gd = 0.f;
    const bool gate = warp == 1 && lane == 0; /* the tile's head only */
    if (gate) {
        gl = lk_in(p.A_log, t.head);
        gd = lk_in(p.dt_bias, t.head);
        ga = lk_in(p.a, tok0 * HV + t.head);
        gb = lk_in(p.b, tok0 * HV + t.head);
    }
    /* q / k step copies (verify with keep) by the group's first tile */
    const bool qk_owner = jh == 0 && t.r0 == 0;
    for (int j = 0; j < n; j++) {
        if (j > 0 && live) lk_sld<XDT, 4>(p.x.p, (tok0 + j) * p.x_dim + ch, x);
        float o[4];
        lk_w4_conv<W>(bias, wt, hist, x, o);
        if (live && p.keep && (warp >= 2 || qk_owner)) {
            const int64_t sc = ((int64_t)slot * p.steps + j) * p.conv_elems + (int64_t)ch * H;
#pragma unroll
            for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.iconv, sc + 4 * m, hist + 4 * m);
        }
        if (warp < 2) {
            if (p.l2norm) lk_w4_l2norm(o);
            lk_sst<LIN_DT_F32, 4>(op, (int64_t)(warp * n + j) * K + 4 * lane, o);
        } else if (live) {
#pragma unroll
            for (int c = 0; c < 4; c++) op[ovv + j * gsz * V + r2 + c] = o[c];
        }
        if (gate) {
            if (j > 0) {
                ga = lk_in(p.a, (tok0 + j) * HV + t.head);
                gb = lk_in(p.b, (tok0 + j) * HV + t.head);
            }
            op[oee + j * gsz + jh] = lk_gdn_decay(gl, gd, ga);
            op[obb + j * gsz + jh] = lk_sigmoid(gb);
        }
        __syncthreads(); /* k of token j in op */
        if (warp == 0) {
            float kk[4];
            lk_sld<LIN_DT_F32, 4>(op, (int64_t)(n + j) * K + 4 * lane, kk);
            const float d = lk_w4_dot(kk, o);
            if (lane == 0) op[okq + j] = d;
        }
    }
    /* the tile's own value channels' history (nobody else reads them) */
    if (live && warp >= 2 && !p.keep)
#pragma unroll
        for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
    __syncthreads(); /* the operands complete; every thread's history reads done */
    if (!p.keep && tid == 0) { /* count this tile on its group after the reads (the last writes q / k) */
        const int ng = gsz * ((V + LIN_STREAM_ROWS(SDT) - 1) / LIN_STREAM_ROWS(SDT));
        int *cnt = p.dcnt + t.req * HK + grp;
        __threadfence();
        const int was = atomicAdd(cnt, 1);
        const int last = was == ng - 1;
        if (last) *cnt = 0; /* every tile of the group has counted: rewound for the next call */
        *last_flag = last;
    }
}

/* The last tile of a group to count: the group's new q / k history, from the old history and the newest
 * inputs (the same values the tiles' conv shifted in), by warps 0 and 1 */
template <int SDT, int XDT>
LK_DEV void lk_fold_qk_history(const lin_fwd &p, const lk_ring_item &t, int n, int slot, int64_t tok0) {
    constexpr int K = LIN_TC_K, H = LK_FOLD_H;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, grp = t.head / p.gsz;
    const int ch = warp == 0 ? grp * K + 4 * lane : (p.hk + grp) * K + 4 * lane;
    const int64_t at = (int64_t)slot * p.conv_elems + (int64_t)ch * H;
    float hist[4 * H];
#pragma unroll
    for (int m = 0; m < H; m++) lk_sld<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
    for (int j = 0; j < n; j++) {
        float x[4];
        lk_sld<XDT, 4>(p.x.p, (tok0 + j) * p.x_dim + ch, x);
#pragma unroll
        for (int c = 0; c < 4; c++) {
#pragma unroll
            for (int m = 0; m + 1 < H; m++) hist[c * H + m] = hist[c * H + m + 1];
            hist[c * H + H - 1] = x[c];
        }
    }
#pragma unroll
    for (int m = 0; m < H; m++) lk_sst<SDT, 4>(p.conv_state, at + 4 * m, hist + 4 * m);
}

/* bf16 state: 3 blocks per SM (the conv's registers on top of the 64 of the tile's rows) */
template <int SDT, int XDT, int WDT>
__global__ __launch_bounds__(LK_RING_THREADS, SDT == LIN_DT_BF16 ? LK_RING_BPS - 1 : LK_RING_BPS) void
lin_decode_ring_fold_kernel(lin_fwd p, int items) {
    using D = lk_ring<SDT>;
    constexpr int RT = D::RT, NS = LK_RING_NS, STAGE = LK_RING_NLD * LK_RING_THREADS * 16;
    LK_DYN_SMEM(unsigned char, ring); /* NS stages, then the operands, then the last-tile flag */
    float *op = (float *)(ring + NS * STAGE);
    int *last_flag = (int *)(op + p.dq_per);
    const int G = (int)gridDim.x;
#pragma unroll
    for (int k = 0; k < NS - 1; k++) lk_ring_issue<SDT>(p, (int)blockIdx.x + k * G, items, ring + k * STAGE);
    /* no kernel of this forward runs before it: nothing to wait for (a plain launch) */
    int st = 0;
    for (int it = (int)blockIdx.x; it < items; it += G) {
        const unsigned char *stage = lk_ring_advance<SDT>(p, it, items, G, ring, st);
        const lk_ring_item t = lk_ring_at(p, it, RT);
        const int n = p.pl.req_n[t.req];
        if (n <= 0) continue;
        const int slot = p.pl.req_slot[t.req];
        const int64_t tok0 = p.pl.req_tok0[t.req];
        if (slot < 0) { /* padding: the tile's rows of its zero outputs */
            const int NR = min(RT, p.V - t.r0);
            for (int idx = threadIdx.x; idx < n * NR; idx += LK_RING_THREADS)
                lk_st(p.out, p.out_dt, ((tok0 + idx / NR) * p.hv + t.head) * p.V + t.r0 + idx % NR, 0.f);
            continue;
        }
        __syncthreads(); /* the previous tile's reads of op and last_flag are done */
        lk_fold_operands<SDT, XDT, WDT>(p, t, n, slot, tok0, op, last_flag);
        lk_ring_tile<SDT>(p, t, n, slot, tok0, stage, op);
        __syncthreads(); /* last_flag written */
        if (!p.keep && *last_flag && threadIdx.x < 64) lk_fold_qk_history<SDT, XDT>(p, t, n, slot, tok0);
    }
    lk_cp_async_wait_all();
}

/* The fold's conditions: decode_prep.cu's w4 form (gdn, conv width 4, K = 128, V % 4 == 0, x bf16 / f32,
 * conv weights (+ bias) f32 / bf16, every vector access aligned) and the counters */
static bool lk_ring_fold_ok(const lin_fwd &p) {
    const size_t xe = p.x.dt == LIN_DT_F32 ? 16 : 8, se = p.st_dt == LIN_DT_F32 ? 16 : 8;
    const bool wdt = p.conv_weight.dt == LIN_DT_F32 || p.conv_weight.dt == LIN_DT_BF16;
    return p.dcnt && p.kind == LIN_GDN && p.conv_w == LK_FOLD_W && p.K == LIN_TC_K && p.V % 4 == 0 &&
           (p.x.dt == LIN_DT_BF16 || p.x.dt == LIN_DT_F32) && wdt &&
           (!p.conv_bias.p || p.conv_bias.dt == p.conv_weight.dt) && p.x_dim % 4 == 0 && p.conv_elems % 4 == 0 &&
           ((uintptr_t)p.x.p % xe) == 0 && ((uintptr_t)p.conv_state % se) == 0 &&
           (!p.keep || ((uintptr_t)p.iconv % se) == 0) && ((uintptr_t)p.conv_weight.p % 16) == 0 &&
           ((uintptr_t)p.conv_bias.p % 16) == 0 && (size_t)p.dq_per * sizeof(float) <= LIN_DECODE_SMEM_MAX;
}

template <int SDT, int XDT>
static void (*lk_fold_pick(int wdt))(lin_fwd, int) {
    return wdt == LIN_DT_F32 ? lin_decode_ring_fold_kernel<SDT, XDT, LIN_DT_F32>
                             : lin_decode_ring_fold_kernel<SDT, XDT, LIN_DT_BF16>;
}
static void (*lk_fold_kernel(const lin_fwd &p))(lin_fwd, int) {
    const int wd = p.conv_weight.dt;
    if (p.st_dt == LIN_DT_F32)
        return p.x.dt == LIN_DT_F32 ? lk_fold_pick<LIN_DT_F32, LIN_DT_F32>(wd) : lk_fold_pick<LIN_DT_F32, LIN_DT_BF16>(wd);
    return p.x.dt == LIN_DT_F32 ? lk_fold_pick<LIN_DT_BF16, LIN_DT_F32>(wd) : lk_fold_pick<LIN_DT_BF16, LIN_DT_BF16>(wd);
}
#define LK_FOLD_SMEM_MAX (LIN_RING_SMEM + LIN_DECODE_SMEM_MAX + 16)

/* The ring's carve-out: the most shared memory per SM, so that LK_RING_BPS blocks of 48 KB fit (a hint;
 * on a device with less, fewer blocks are resident and the grid runs in more rounds, correctly). */
extern "C" int lin_decode_ring_setup(void) {
    cudaError_t e = cudaFuncSetAttribute(lin_decode_ring_kernel<LIN_DT_F32>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(lin_decode_ring_kernel<LIN_DT_BF16>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 100);
    /* the fold's operands after the stages: up to LIN_DECODE_SMEM_MAX more (opt-in past 48 KB) */
    static const int sdt[2] = {LIN_DT_F32, LIN_DT_BF16}, xdt[2] = {LIN_DT_F32, LIN_DT_BF16};
    for (int a = 0; a < 2 && e == cudaSuccess; a++)
        for (int b = 0; b < 2 && e == cudaSuccess; b++)
            for (int c = 0; c < 2 && e == cudaSuccess; c++) {
                lin_fwd q = {};
                q.st_dt = sdt[a], q.x.dt = xdt[b], q.conv_weight.dt = sdt[c];
                void (*k)(lin_fwd, int) = lk_fold_kernel(q);
                e = cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
                if (e == cudaSuccess)
                    e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, LK_FOLD_SMEM_MAX);
            }
    return (int)e;
}

/* The prep folded into the ring's tiles, one launch (p.dec_ring > 0, p.dec_fold, lin_ring_fold_ok; p.dq_per
 * set): nonzero when it does not apply (the caller then runs the prep and the ring) */
extern "C" int lin_decode_ring_fold_ok(const lin_fwd *p) { return lk_ring_fold_ok(*p); }
extern "C" int lin_launch_decode_ring_fold(const lin_fwd *pp, void *stream) {
    const lin_fwd p = *pp;
    const int RT = LIN_STREAM_ROWS(p.st_dt);
    const int64_t items64 = (int64_t)p.bs * p.hv * ((p.V + RT - 1) / RT);
    if (items64 + (int64_t)LK_RING_NS * p.dec_ring > INT32_MAX || p.dec_ring <= 0 || !lk_ring_fold_ok(p))
        return (int)cudaErrorInvalidValue;
    const int items = (int)items64;
    const int grid = items < p.dec_ring ? items : p.dec_ring;
    const size_t smem = LIN_RING_SMEM + (size_t)p.dq_per * sizeof(float) + 16;
    LK_LAUNCH(lk_fold_kernel(p), grid, LK_RING_THREADS, smem, (cudaStream_t)stream, p, items);
    return (int)cudaGetLastError();
}

/* The state kernel of the stream decode as the ring (p.dec_ring blocks at most; the prep has run, p.dq_per set) */
extern "C" int lin_launch_decode_ring(const lin_fwd *pp, void *stream) {
    const lin_fwd p = *pp;
    const int RT = LIN_STREAM_ROWS(p.st_dt);
    const int64_t items64 = (int64_t)p.bs * p.hv * ((p.V + RT - 1) / RT);
    /* the tile indices, up to NS - 1 grids past the last tile, fit an int */
    if (items64 + (int64_t)LK_RING_NS * p.dec_ring > INT32_MAX || p.dec_ring <= 0) return (int)cudaErrorInvalidValue;
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
