/*
 * extend_wgmma_sm90.cuh - paged extend / prefill / cross attention on Hopper
 * warpgroup MMA at head dims 64, 128 and 256 (64-column tiles at 256,
 * wg_paged_bn): cuda_attn's extend
 * on an SM 9.0 device (cuda_attn_choice.c; extend_wgmma_sm90.cu launches it).  sm_90a only:
 * every other pass compiles the kernel to an empty stub, and the launcher
 * never starts it there.
 *
 * One persistent block per SM walks the (work item, q head) pairs of the
 * extend plan (attn_kernels/plan.cuh: items of <= 128 q rows of one request, ordered
 * longest-first; pair w = item w / hq, head w % hq, so the longest items go
 * first; blocks stride by gridDim.x).  384 threads, warp-specialised:
 *   warpgroup 0 (producer, setmaxnreg down): gathers the 128-row Q tile and
 *     BN-row K/V tiles through req_to_token into 128B-swizzled shared memory
 *     (wgmma_sm90.cuh), STAGES deep.  Two producers, one template:
 *     TMA = true (pages of a multiple of 16 tokens: wg_tma_boxes) brings
 *     each whole 16-row box of a page with one TMA copy per 64-column block
 *     and gathers the rest (the last tile's partial box) with 16-byte
 *     cp.async; TMA = false gathers every row with cp.async (any page size,
 *     one slot read per row per tile).
 *   warpgroups 1, 2 (consumers, setmaxnreg up): 64 q rows each.
 *     S = Q K^T: SS wgmma m64nBNk16 (K-major Q and K);  online softmax in
 *     registers (masks only on tiles that need them);  O += P V: RS wgmma
 *     m64nDk16 with P re-packed from S as the A fragment and V read MN-major
 *     (trans-b) from the same swizzled layout.
 *
 * Synchronisation (mbarriers in shared memory):
 *   full[s]  (128 arrivals: every producer thread; + the TMA bytes) - stage s holds tile g
 *   empty[s] (8: lane 0 of each consumer warp)     - stage s may be refilled
 *   q_full (128) / q_empty (8)                      - the Q tile, per item
 * Global tile counter g (both roles count identically): stage g % STAGES,
 * phase parity (g / STAGES) & 1; producers wait "empty" on the opposite
 * parity so the first STAGES waits pass at once.  A producer thread signals
 * an event (Q or a tile) after cp.async.wait_group shows its copies landed
 * and a fence.proxy.async (generic-proxy writes -> wgmma's async-proxy
 * reads).  It signals event e after issuing e + 1, so copies overlap, but
 * flushes before waiting on q_empty (which depends on the previous pair's
 * last tile).  A pair's tile 0 is issued before its Q, so it loads while the
 * consumers finish the previous pair.
 *
 * Numerics and masking are the mma kernel's (extend_mma.cu):
 * attn_score (scale, soft-cap, log2 domain), attn_visible (causal, window),
 * sinks in the final normalisation, rows with nothing visible give 0; the
 * LSE output (p.lse set) is m + log2(l) per row in natural-log units.
 *
 * Head dims are template parameters: DQK (Q and K: 128, or 192 for
 * DeepSeek's MLA prefill; 64 / 256 with DV = DQK on the paged body) and DV
 * (V and O: 128); the consumers' registers
 * depend on DV and BN only, so DQK 192 costs shared memory (64-column
 * tiles, four stages), not registers.  RAGGED: forward_ragged, whose K / V are
 * tensors with cu_seqlens: the item's `row` is the request's first key row
 * and key column c is row row + c (no page-table read); the TMA producer
 * then takes every whole 16-row box of the tile (any start row) by TMA
 * (wg_tma_rows), the rest by cp.async with its zero-fill.
 *
 * A tree verify item (ATTN_VIS_TREE) masks each tile by the batch's packed
 * mask (tree_mask_pack.cu): the tiles before the request's first word
 * that is not full (the prefix sglang's EAGLE masks open; first[] of the
 * pack) take no mask and load no word; on the later tiles each consumer
 * thread loads its two rows' words (one per 64 columns) one tile ahead of
 * their use, so the loads' latency hides behind a whole tile's wgmmas and
 * softmax, and masks where they are not all ones.  A consumer warpgroup whose rows all lie past a short item
 * only keeps the barrier counts.  HP (head pairs: a verify batch whose items
 * all have <= 64 rows, an even GQA group; the others keep one q head a pair):
 * a pair is (item, q heads h and h + 1 of one kv head);
 * the Q tile's rows 64 g.. hold head h + g's rows, so consumer warpgroup g
 * serves head h + g on the same K/V tiles: both warpgroups busy, half the
 * pairs and K/V tile loads.
 *
 * DCA: dual chunk attention (dual_chunk.h) on the same body, the paged
 * extend at head dim 128: the pair's Q is up to three 128-row tiles (q,
 * q_succ, q_inter, the variants its keys meet), the K/V ring two stages
 * deep to fit, and each score takes the variant of its key's part for its
 * row (wg_consumer, wg_dca_boundary); the scale is the request's
 * length-scaled one.  The barrier protocol is the plain kernel's.
 *
 * F8: an fp8 e4m3 pool (the fp8 split extend's prefix items on SM 9.0;
 * the paged body at head dim 128, no TMA, tree, head
 * pairs or DCA).  wgmma reads 16-bit shared memory only, so the producer is
 * the conversion stage (wg_producer_f8): cp.async brings the pool's e4m3
 * rows through the page table into a 2-stage byte ring, two tiles ahead of
 * the conversion, and each thread converts the chunks it copied in
 * registers to f16 (fp8_e4m3.cuh: exact) into the swizzled tiles of a
 * 2-stage 16-bit ring (Q 32 KB + 2 x 64 KB f16 K/V + 2 x 32 KB bytes = 224
 * KB, as the plain kernel's three 16-bit stages).  Q loads as f16 through
 * registers (bf16 q saturates at +-65504, as the fp8 mma extend's q).  Both
 * wgmma then run in f16, P packs as f16, and the dequant scales apply to
 * fp32 results as in the fp8 mma extend: k_scale (times ATTN_FP8_UNIT) with
 * the softmax scale, v_scale to O at the end; the output and LSE are the mma
 * path's, so split_merge joins them unchanged.  The conversion's stores are
 * generic-proxy writes: fence.proxy.async before the arrive.
 */
#ifndef SGL_CUDA_ATTN_EXTEND_WGMMA_SM90_CUH
#define SGL_CUDA_ATTN_EXTEND_WGMMA_SM90_CUH

#include <limits.h>

#include "attn_tmap.h"   /* attn_kv_tmaps, ATTN_TMA_BOX_ROWS */
#include "dual_chunk.h"  /* attn_dca, dca_part */
#include "fp8_e4m3.cuh"  /* F8: fp8x2_to_f16x2, attn_kv_scale, attn_q_f16x2 */
#include "mma_sm80.cuh" /* pack2, attn_slot32 */
#include "pdl_sm90.cuh"   /* ca_pdl_trigger: the direct extend's new-token pass */
#include "wgmma_sm90.cuh"

#define ATTN_WG_THREADS 384
#define ATTN_WG_BM 128 /* q rows per item: 2 consumer warpgroups x 64 */
/* Registers per thread: the block starts with 65536 / 384 -> 168 each; the
 * producer gives back down to PRODUCER and the consumers take up to
 * CONSUMER (2 * CONSUMER + PRODUCER = 3 * 168). */
#define ATTN_WG_REGS_ENTRY 168
#ifndef ATTN_WG_REGS_PRODUCER
#define ATTN_WG_REGS_PRODUCER 56
#define ATTN_WG_REGS_CONSUMER 224
#endif
#define ATTN_WG_SMEM_MAX 232448 /* sharedMemPerBlockOptin on SM 9.0 (227 KB) */
/* The kernels' TREE parameter: no tree mask code, or the tree verify
 * instantiation (p.mask_first_off set): the tiles before the request's
 * first word that is not full load no mask word and take no mask; the later
 * ones load their words one tile ahead of their use and load no full flag (a
 * thread masks where its two rows' words are not all ones). */
#define ATTN_WG_TREE_NONE 0
#define ATTN_WG_TREE_PLAIN 1

/* NQ: the query variants a pair's Q tiles hold (1; 3 for dual chunk: q,
 * q_succ, q_inter, one BM x DQK tile each).  BNT: KV tokens per tile, 128;
 * 64 for the paged head dim 256 kernel (wg_paged_bn) and the ragged qk 192
 * kernel (every qk 192 kernel), whose
 * 40 KB stages fit four deep (Q 48 KB + 4 x 40 KB) where 128-column ones
 * fit two. */
/* The paged kernel's tile width by head dim: 64 columns at 256 (Q 64 KB and
 * 64 KB stages: two fit, where 128-column 128 KB stages do not fit beside Q),
 * 128 at the others. */
GC_HD constexpr int wg_paged_bn(int dqk) { return dqk == 256 ? 64 : 128; }

template <int DQK, int DV = DQK, int NQ = 1, bool F8 = false, int BNT = wg_paged_bn(DQK)> struct extend_wg_cfg {
    static constexpr int BM = ATTN_WG_BM;
    static constexpr int BN = BNT;   /* KV tokens per tile */
    /* K/V ring depth: what fits 227 KB beside the Q tiles (F8: and the byte
     * ring); head dim 64 (16 KB Q, 32 KB stages) stops at four */
    static constexpr int STAGES = BNT == 64 ? (DQK == 256 ? 2 : 4)
                                  : F8 || DQK > 128 || NQ > 1 ? 2
                                  : DQK == 64                 ? 4
                                                              : 3;
    static constexpr int CH = DQK / 8; /* 16-byte chunks per Q / K row */
    static constexpr int CHV = DV / 8; /* per V row */
    static constexpr int DB = DQK / 64; /* 128-byte column blocks of Q / K */
    static constexpr int DBV = DV / 64; /* of V */
    static constexpr uint32_t Q_BYTES = wg_sw_bytes<BM, DQK>();
    static constexpr uint32_t K_BYTES = wg_sw_bytes<BN, DQK>();
    static constexpr uint32_t V_BYTES = wg_sw_bytes<BN, DV>();
    static constexpr uint32_t OFF_Q = 0;
    static constexpr uint32_t OFF_K = OFF_Q + NQ * Q_BYTES;
    static constexpr uint32_t OFF_V = OFF_K + STAGES * K_BYTES;
    /* F8: the byte ring (wg_producer_f8), B8_STAGES stages of the pool's
     * e4m3 K rows then V rows, DQK and DV bytes each; none otherwise */
    static constexpr int B8_STAGES = F8 ? 2 : 0;
    static constexpr uint32_t B8_BYTES = BN * (DQK + DV);
    static constexpr uint32_t OFF_B8 = OFF_V + STAGES * V_BYTES;
    static constexpr uint32_t OFF_BAR = OFF_B8 + B8_STAGES * B8_BYTES;
    static constexpr int NBAR = 2 * STAGES + 2; /* full[S], empty[S], q_full, q_empty */
    /* + 1024: the dynamic shared memory base is only 16-byte aligned; the
     * kernel rounds it up to the 1024 bytes the swizzle atoms need. */
    static constexpr size_t SMEM = OFF_BAR + NBAR * 8 + 1024;
    static constexpr int PRODUCER_ROWS_PER_WARP = BN / 4;
    static constexpr int PRODUCER_ITERS = PRODUCER_ROWS_PER_WARP * CH / 32; /* cp.async of K per tile */
    static constexpr int PRODUCER_ITERS_V = PRODUCER_ROWS_PER_WARP * CHV / 32; /* of V */

    static_assert(((DQK == 128 || DQK == 192) && DV == 128) || ((DQK == 64 || DQK == 256) && DV == DQK && !F8),
                  "the wgmma extend serves qk 128 / 192 with v 128, and qk = v 64 / 256 (16-bit); the mma extend "
                  "serves the others");
    static_assert(NQ == 1 || (NQ == 3 && DQK == 128), "dual chunk: three query variants at head dim 128");
    static_assert(BNT == 128 || (BNT == 64 && (DQK == 192 || DQK == 256) && NQ == 1 && !F8),
                  "64-column tiles: the ragged qk 192 kernel and the paged head dim 256 one");
    static_assert(!F8 || (NQ == 1 && DQK == DV), "F8: the paged body, K and V rows of one width");
    static_assert(OFF_B8 % 16 == 0 && B8_BYTES % 16 == 0, "the byte ring takes 16-byte cp.async");
    static_assert(BN % 16 == 0 && BN <= 128 && BN >= 64, "S = Q K^T is an SS wgmma m64nBNk16");
    static_assert(BM == 128, "two consumer warpgroups of 64 rows");
    static_assert(STAGES >= 2, "the producer signals a tile after issuing the next one");
    static_assert(OFF_K % ATTN_SW_ATOM_BYTES == 0 && OFF_V % ATTN_SW_ATOM_BYTES == 0 &&
                      K_BYTES % ATTN_SW_ATOM_BYTES == 0 && V_BYTES % ATTN_SW_ATOM_BYTES == 0 &&
                      Q_BYTES % ATTN_SW_ATOM_BYTES == 0,
                  "every sw128 block starts on a 1024-byte boundary (descriptor base offset 0)");
    static_assert((64 * ATTN_SW_ROW_BYTES) % ATTN_SW_ATOM_BYTES == 0, "the second warpgroup's Q rows too");
    static_assert(OFF_BAR % 8 == 0, "mbarriers are 8-byte aligned");
    static_assert(SMEM <= ATTN_WG_SMEM_MAX, "fits the SM 9.0 opt-in shared memory");
    static_assert(PRODUCER_ROWS_PER_WARP <= 32 && (PRODUCER_ROWS_PER_WARP * CH) % 32 == 0 &&
                      (PRODUCER_ROWS_PER_WARP * CHV) % 32 == 0,
                  "a producer warp's lanes hold the slots of its rows");
    static_assert((BM * CH) % 128 == 0, "Q chunks split evenly over the producer warpgroup");
    static_assert(2 * ATTN_WG_REGS_CONSUMER + ATTN_WG_REGS_PRODUCER <= 3 * ATTN_WG_REGS_ENTRY,
                  "setmaxnreg: the consumers take only what the producer gave back");
};

/* What one (item, head) pair covers; both roles derive it the same way.
 * HP (head pairs, every item <= 64 rows, an even GQA group): pair w is
 * (item w / (hq / 2), heads 2 (w % (hq / 2)) and the next one, of one kv
 * head); `head` is the first, consumer warpgroup g serves head + g. */
struct wg_work {
    int row, q_tok0, nrows, q_pos0, causal, tree, window; /* causal, tree: the item's ATTN_VIS_* */
    int lo, hi, ntiles, head, kvh;
    long long item;
};

template <int BN, bool HP = false> GC_DEV wg_work wg_work_at(const attn_fwd &p, long long w) {
    wg_work k;
    const int nh = HP ? p.hq / 2 : p.hq;
    k.item = w / nh;
    k.head = (int)(w % nh) * (HP ? 2 : 1);
    const attn_extend_item it = p.eitems[k.item];
    k.kvh = k.head / p.group;
    k.row = it.row;
    k.q_tok0 = it.q_tok0;
    k.nrows = it.nrows;
    k.q_pos0 = it.q_pos0;
    k.causal = it.causal == ATTN_VIS_CAUSAL;
    k.tree = it.causal == ATTN_VIS_TREE;
    k.window = k.causal ? p.window : -1;
    /* KV columns the tile can see: causal rows never look past the last row,
     * windowed rows never before the first row's window. */
    k.lo = it.kv_lo;
    k.hi = it.kv_hi;
    if (k.causal && it.q_pos0 + it.nrows < k.hi) k.hi = it.q_pos0 + it.nrows;
    if (k.window >= 0 && it.q_pos0 - k.window > k.lo) k.lo = it.q_pos0 - k.window;
    k.ntiles = k.hi > k.lo ? (k.hi - k.lo + BN - 1) / BN : 0;
    return k;
}

#if defined(ATTN_HAVE_WGMMA)

/* Barrier addresses (shared-window offsets). */
template <int STAGES> struct wg_bars {
    uint32_t base;
    GC_DEV uint32_t full(int s) const { return base + 8u * s; }
    GC_DEV uint32_t empty(int s) const { return base + 8u * (STAGES + s); }
    GC_DEV uint32_t q_full() const { return base + 8u * (2 * STAGES); }
    GC_DEV uint32_t q_empty() const { return base + 8u * (2 * STAGES + 1); }
};

/* ------------------------------------------------------------- the producer */

/* Signal the pending event once this thread's copies for it have landed.
 * WAIT: cp.async groups allowed to stay in flight (1: the one just issued). */
template <int WAIT> GC_DEV void wg_signal(uint32_t &pending) {
    if (!pending) return;
    cp_async_wait<WAIT>();
    fence_proxy_async();
    mbar_arrive(pending);
    pending = 0;
}

/* Q tile: BM rows of the item's q head; rows past the item (or past T) are zeros.
 * HP: rows 64 g.. are the item's rows of head + g.  DCA: the tiles of
 * variants 0 .. nv - 1 (q, q_succ, q_inter: dca_q_row), one after the other;
 * the variants the pair's keys never meet stay unloaded. */
template <int DQK, int DV, bool HP = false, bool DCA = false>
GC_DEV void wg_load_q(const attn_fwd &p, const wg_work &k, uint8_t *qs, int t, const attn_dca *dc = nullptr,
                      int nv = 1) {
    static_assert(!(HP && DCA), "head pairs serve verify batches, DCA dual chunk extends");
    using C = extend_wg_cfg<DQK, DV>;
    if constexpr (DCA) {
        for (int v = 0; v < nv; v++) {
#pragma unroll 4
            for (int i = 0; i < C::BM * C::CH / 128; i++) {
                const int e = i * 128 + t, r = e / C::CH, c = e % C::CH;
                const int tok = k.q_tok0 + r;
                const bool ok = r < k.nrows && tok < p.num_tokens;
                gc_cp_async16(qs + v * C::Q_BYTES + wg_sw_off<C::BM>(r, c),
                              dca_q_row(p, *dc, v, ok ? tok : 0, k.head) + c * 8, ok);
            }
        }
    } else {
#pragma unroll 4
        for (int i = 0; i < C::BM * C::CH / 128; i++) {
            const int e = i * 128 + t, r = e / C::CH, c = e % C::CH;
            const int ir = HP ? r & 63 : r, head = HP ? k.head + (r >> 6) : k.head; /* item row, q head */
            const int tok = k.q_tok0 + ir;
            const bool ok = ir < k.nrows && tok < p.num_tokens;
            const uint16_t *src =
                (const uint16_t *)p.q + (int64_t)(ok ? tok : 0) * p.q_stride_t + (int64_t)head * p.q_stride_h + c * 8;
            gc_cp_async16(qs + wg_sw_off<C::BM>(r, c), src, ok);
        }
    }
}

/* K and V of the tile at column t0: warp w copies rows [w RPW, (w+1) RPW);
 * lane l holds the slot of row w RPW + l % RPW (one req_to_token read per
 * row), the copy loop takes it by shuffle.  Rows >= hi are zero-filled (their
 * scores are masked; zeros keep P.V finite). */
template <int DQK, int DV, bool COV = false>
GC_DEV void wg_load_kv(const attn_fwd &p, const wg_work &k, int t0, int32_t slot, uint8_t *ks, uint8_t *vs,
                       int warp, int lane, uint32_t cov = 0) {
    using C = extend_wg_cfg<DQK, DV>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP;
    const uint16_t *kb = (const uint16_t *)p.k_cache + (int64_t)k.kvh * p.kc_stride_h;
    const uint16_t *vb = (const uint16_t *)p.v_cache + (int64_t)k.kvh * p.vc_stride_h;
    static_assert(DQK == DV, "the page gather loads K and V rows of one width");
#pragma unroll
    for (int i = 0; i < C::PRODUCER_ITERS; i++) {
        const int e = i * 32 + lane, rl = e / C::CH, c = e % C::CH, r = warp * RPW + rl;
        const int32_t sl = __shfl_sync(0xffffffffu, slot, rl);
        /* COV: rows of a box the TMA brings (bit rl & ~15 of cov: wg_tma_boxes) */
        if (COV && ((cov >> (rl & ~(ATTN_TMA_BOX_ROWS - 1))) & 1u)) continue;
        const bool ok = t0 + r < k.hi;
        gc_cp_async16(ks + wg_sw_off<C::BN>(r, c), kb + (int64_t)sl * p.kc_stride_s + c * 8, ok);
        gc_cp_async16(vs + wg_sw_off<C::BN>(r, c), vb + (int64_t)sl * p.vc_stride_s + c * 8, ok);
    }
}

/* The ragged producer's cp.async: key row of tile row r is k.row + t0 + r
 * (no slot to shuffle), K rows DQK wide and V rows DV; rows >= hi are
 * zero-filled; COV as wg_load_kv (rows wg_tma_rows took).  Partly unrolled:
 * the producer's 56 registers hold a few rows' addresses at a time. */
template <int DQK, int DV, bool COV = false, int BNT = 128>
GC_DEV void wg_load_rows(const attn_fwd &p, const wg_work &k, int t0, uint8_t *ks, uint8_t *vs, int warp, int lane,
                         uint32_t cov = 0) {
    using C = extend_wg_cfg<DQK, DV, 1, false, BNT>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP;
    const uint16_t *kb = (const uint16_t *)p.k_cache + (int64_t)k.kvh * p.kc_stride_h;
    const uint16_t *vb = (const uint16_t *)p.v_cache + (int64_t)k.kvh * p.vc_stride_h;
    const int64_t last = p.num_slots - 1;
#pragma unroll 4
    for (int i = 0; i < C::PRODUCER_ITERS + C::PRODUCER_ITERS_V; i++) {
        const bool isv = i >= C::PRODUCER_ITERS;
        const int chn = isv ? C::CHV : C::CH;
        const int e = (isv ? i - C::PRODUCER_ITERS : i) * 32 + lane, rl = e / chn, c = e % chn, r = warp * RPW + rl;
        if (COV && ((cov >> (rl & ~(ATTN_TMA_BOX_ROWS - 1))) & 1u)) continue;
        const bool ok = t0 + r < k.hi;
        int64_t row = ok ? (int64_t)k.row + t0 + r : 0;
        row = row < last ? row : last;
        const uint16_t *src = isv ? vb + row * p.vc_stride_s : kb + row * p.kc_stride_s;
        gc_cp_async16((isv ? vs : ks) + wg_sw_off<C::BN>(r, c), src + c * 8, ok);
    }
}

/* F8's Q tile: as wg_load_q, each 16-byte chunk through registers as f16. */
template <int DT, int DQK, int DV>
GC_DEV void wg_load_q_f8(const attn_fwd &p, const wg_work &k, uint8_t *qs, int t) {
    using C = extend_wg_cfg<DQK, DV>;
#pragma unroll 4
    for (int i = 0; i < C::BM * C::CH / 128; i++) {
        const int e = i * 128 + t, r = e / C::CH, c = e % C::CH;
        const int tok = k.q_tok0 + r;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (r < k.nrows && tok < p.num_tokens)
            v = __ldg((const uint4 *)((const uint16_t *)p.q + (int64_t)tok * p.q_stride_t +
                                      (int64_t)k.head * p.q_stride_h + c * 8));
        *(uint4 *)(qs + wg_sw_off<C::BM>(r, c)) =
            make_uint4(attn_q_f16x2<DT>(v.x), attn_q_f16x2<DT>(v.y), attn_q_f16x2<DT>(v.z), attn_q_f16x2<DT>(v.w));
    }
}

/* F8's byte ring: the K and V bytes of the tile at column t0 into byte
 * stage b8 (row-major, D bytes a row: K's BN rows, then V's) by 16-byte
 * cp.async through the page table.  Chunk e = i 32 + lane of warp w is row
 * w RPW + e / (D / 16), bytes 16 (e % (D / 16)); lane l holds the slot of row
 * w RPW + l % RPW (wg_load_kv's rule).  The thread converts exactly the
 * chunks it copies (wg_f8_convert), so its own cp.async.wait_group orders the
 * landing before the conversion: no barrier guards the byte ring.  Rows >= hi
 * are zero-filled. */
template <int D>
GC_DEV void wg_f8_issue(const attn_fwd &p, const wg_work &k, int t0, int32_t slot, uint8_t *b8, int warp, int lane) {
    using C = extend_wg_cfg<D, D, 1, true>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP, CH8 = D / 16, IT = RPW * CH8 / 32;
    static_assert((RPW * CH8) % 32 == 0, "a warp's fp8 chunks in whole rounds of its lanes");
    const uint8_t *kb = (const uint8_t *)p.k_cache + (int64_t)k.kvh * p.kc_stride_h;
    const uint8_t *vb = (const uint8_t *)p.v_cache + (int64_t)k.kvh * p.vc_stride_h;
#pragma unroll
    for (int i = 0; i < IT; i++) {
        const int e = i * 32 + lane, rl = e / CH8, c = e % CH8, r = warp * RPW + rl;
        const int32_t sl = __shfl_sync(0xffffffffu, slot, rl);
        const bool ok = t0 + r < k.hi;
        gc_cp_async16(b8 + r * D + c * 16, kb + (int64_t)sl * p.kc_stride_s + c * 16, ok);
        gc_cp_async16(b8 + C::BN * D + r * D + c * 16, vb + (int64_t)sl * p.vc_stride_s + c * 16, ok);
    }
}

/* F8: the chunks wg_f8_issue copied into byte stage b8, converted in
 * registers to f16 (fp8_e4m3.cuh: exact) into the 128B-swizzled K and V
 * tiles: e4m3 chunk c of a row becomes 16-bit chunks 2c and 2c + 1.  A warp
 * reads 512 contiguous bytes a round (no bank conflict). */
template <int D> GC_DEV void wg_f8_convert(const uint8_t *b8, uint8_t *ks, uint8_t *vs, int warp, int lane) {
    using C = extend_wg_cfg<D, D, 1, true>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP, CH8 = D / 16, IT = RPW * CH8 / 32;
#pragma unroll 4
    for (int i = 0; i < 2 * IT; i++) {
        const int isv = i >= IT, e = (isv ? i - IT : i) * 32 + lane, rl = e / CH8, c = e % CH8;
        const int r = warp * RPW + rl;
        const uint4 v = *(const uint4 *)(b8 + (isv ? C::BN * D : 0) + r * D + c * 16);
        uint8_t *dst = isv ? vs : ks;
        *(uint4 *)(dst + wg_sw_off<C::BN>(r, 2 * c)) = make_uint4(
            fp8x2_to_f16x2(v.x), fp8x2_to_f16x2(v.x >> 16), fp8x2_to_f16x2(v.y), fp8x2_to_f16x2(v.y >> 16));
        *(uint4 *)(dst + wg_sw_off<C::BN>(r, 2 * c + 1)) = make_uint4(
            fp8x2_to_f16x2(v.z), fp8x2_to_f16x2(v.z >> 16), fp8x2_to_f16x2(v.w), fp8x2_to_f16x2(v.w >> 16));
    }
}

/* The TMA boxes of a tile (the TMA producer; the host launches it only for
 * pages of a multiple of ATTN_TMA_BOX_ROWS tokens).  Warp w's rows [w RPW,
 * (w+1) RPW) of the tile split into boxes of 16 rows; box b goes by TMA (one
 * box of the pool's tensor map per 64-column block and operand, issued by one
 * lane each) when its 16 columns are all < hi, start on a multiple of 16 and
 * its first column's slot s0 (clamped, as the cp.async path uses it) is a
 * multiple of 16 with s0 + 16 <= num_slots, and its 16 rows' slots are
 * s0 .. s0 + 15 (one page, the page table's contract; checked, not assumed).  Any other
 * row (the last tile's partial box, rows past hi, an unaligned window start)
 * stays with cp.async and its zero-fill.  The lanes add the boxes' bytes to
 * the stage's full barrier before the copies, and arrive later with the rest
 * of the warpgroup as before (wg_signal), so the phase completes only when the
 * cp.async rows have been signalled and the TMA bytes have landed.  Returns
 * the warp's mask: bit rl of a box's first row rl set when TMA takes it. */
template <int D>
GC_DEV uint32_t wg_tma_boxes(const attn_fwd &p, const wg_work &k, int t0, int32_t slot, uint32_t ks, uint32_t vs,
                             uint32_t full, const attn_kv_tmaps *tm, int warp, int lane) {
    using C = extend_wg_cfg<D, D>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP, BR = ATTN_TMA_BOX_ROWS;
    constexpr int NOPS = RPW / BR * C::DB * 2; /* boxes x column blocks x (K, V) */
    static_assert(RPW % BR == 0 && NOPS <= 32 && BR == 16, "a warp's boxes, one copy per lane; the gap mask is 16 bits");
    const int rl = lane % RPW, b0 = rl & ~(BR - 1);
    const int32_t s0 = __shfl_sync(0xffffffffu, slot, b0);
    /* The box's rows really are slots s0 .. s0 + 15 (lanes < RPW hold every row
     * once): a table that breaks the page contract loads by cp.async, correctly. */
    const uint32_t gap = __ballot_sync(0xffffffffu, slot != s0 + (rl & (BR - 1)));
    const bool ok = (rl & (BR - 1)) == 0 && (t0 & (BR - 1)) == 0 && t0 + warp * RPW + b0 + BR <= k.hi &&
                    (s0 & (BR - 1)) == 0 && (int64_t)s0 + BR <= p.num_slots && ((gap >> b0) & 0xffffu) == 0;
    const uint32_t cov = __ballot_sync(0xffffffffu, ok);
    const int op = lane & 1, cb = (lane >> 1) % C::DB, br = (lane % NOPS) / (2 * C::DB) * BR;
    const int32_t sb = __shfl_sync(0xffffffffu, slot, br);
    if (lane < NOPS && ((cov >> br) & 1u)) {
        const uint32_t dst =
            (op ? vs : ks) + (uint32_t)(cb * (C::BN * ATTN_SW_ROW_BYTES) + (warp * RPW + br) * ATTN_SW_ROW_BYTES);
        mbar_expect_tx(full, BR * ATTN_SW_ROW_BYTES);
        tma_load_3d(dst, op ? (const void *)tm->v : (const void *)tm->k, cb * 64, k.kvh, sb, full);
    }
    return cov;
}

/* The ragged producer's TMA boxes: key rows are contiguous (row + column),
 * so every 16-row box of warp w's rows whose rows all lie below hi goes by
 * TMA, wherever it starts; the maps are K [DQK] and V [DV] wide.  Lane l of
 * the first NOPS issues box l / (DB + DBV), column block l % (DB + DBV)
 * (K's blocks first).  The rest as wg_tma_boxes: cp.async for the rows the
 * returned mask leaves out. */
template <int DQK, int DV, int BNT = 128>
GC_DEV uint32_t wg_tma_rows(const wg_work &k, int t0, uint32_t ks, uint32_t vs, uint32_t full,
                            const attn_kv_tmaps *tm, int warp, int lane) {
    using C = extend_wg_cfg<DQK, DV, 1, false, BNT>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP, BR = ATTN_TMA_BOX_ROWS, NB = C::DB + C::DBV;
    constexpr int NOPS = RPW / BR * NB;
    static_assert(RPW % BR == 0 && NOPS <= 32 && BR == 16, "a warp's boxes, one copy per lane");
    const int rl = lane % RPW;
    const bool ok = (rl & (BR - 1)) == 0 && t0 + warp * RPW + rl + BR <= k.hi;
    const uint32_t cov = __ballot_sync(0xffffffffu, ok);
    const int br = lane / NB * BR, j = lane % NB, op = j >= C::DB, cb = op ? j - C::DB : j;
    if (lane < NOPS && ((cov >> br) & 1u)) {
        const uint32_t dst = (op ? vs : ks) + (uint32_t)(cb * (C::BN * ATTN_SW_ROW_BYTES) + (warp * RPW + br) * ATTN_SW_ROW_BYTES);
        mbar_expect_tx(full, BR * ATTN_SW_ROW_BYTES);
        tma_load_3d(dst, op ? (const void *)tm->v : (const void *)tm->k, cb * 64, k.kvh, k.row + t0 + warp * RPW + br,
                    full);
    }
    return cov;
}

/* The producer warpgroup.  Per pair: tile 0 first (it needs only a free
 * stage, a tile >= 2 back and already signalled, so its copies overlap the
 * previous pair's last tile), then everything signalled and Q loaded once
 * the consumers released it (after their last S of the previous pair), then
 * tiles 1.. .  The page-table word of tile j + 1 is loaded when tile j is
 * issued (one unconditional load per lane, a column past hi reads hi - 1)
 * and clamped into the pool when tile j + 1 uses it, so its latency hides
 * behind a tile's wait and copies.  TMA: whole 16-row page boxes by TMA,
 * the rest by cp.async (wg_tma_boxes).  RAGGED: the slot is row + column,
 * no page-table word (wg_tma_rows for the boxes).  DCA: the pair's Q is the
 * query variants its keys meet (wg_load_q), one event as the single Q. */
template <int DQK, int DV, bool TMA, bool RAGGED, bool HP = false, bool DCA = false, int BNT = wg_paged_bn(DQK)>
GC_DEV void wg_producer(const attn_fwd &p, uint8_t *sm,
                        const wg_bars<extend_wg_cfg<DQK, DV, DCA ? 3 : 1, false, BNT>::STAGES> &bar,
                        long long total, const attn_kv_tmaps *tm, const attn_dca *dc = nullptr) {
    using C = extend_wg_cfg<DQK, DV, DCA ? 3 : 1, false, BNT>;
    static_assert(BNT == 128 || (RAGGED && !HP && !DCA) || (BNT == wg_paged_bn(DQK) && !DCA),
                  "64-column tiles: the ragged kernel and the paged head dim 256 one");
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP;
    const int t = (int)threadIdx.x, warp = t >> 5, lane = t & 31;
    const int myrow = warp * RPW + lane % RPW; /* the tile row whose slot this lane holds */
    uint32_t g = 0, kq = 0, pending = 0;
    int32_t raw = 0; /* table word of the next tile's row myrow (common.cuh), not yet a slot */
    auto tile_raw = [&](const wg_work &k, int j) -> int32_t {
        const int tok = k.lo + j * C::BN + myrow;
        if constexpr (RAGGED) return k.row + (tok < k.hi ? tok : k.hi - 1); /* a key row of the request */
        const int col = tok < k.hi ? tok : k.hi - 1; /* hi > lo >= 0 when the pair has tiles */
        return __ldg(attn_table_at(p, k.row, col));
    };
    auto issue_tile = [&](const wg_work &k, int j) {
        const int t0 = k.lo + j * C::BN;
        const int32_t slot = t0 + myrow < k.hi ? (int32_t)attn_slot_of(p, raw, t0 + myrow) : 0; /* attn_slot's rest */
        if (j + 1 < k.ntiles) raw = tile_raw(k, j + 1); /* in flight during this tile's wait and copies */
        const int s = (int)(g % C::STAGES);
        mbar_wait(bar.empty(s), ((g / C::STAGES) & 1) ^ 1);
        fence_proxy_async(); /* the wgmma reads of the stage's old tile are done (async -> generic) */
        uint8_t *const kst = sm + C::OFF_K + s * C::K_BYTES, *const vst = sm + C::OFF_V + s * C::V_BYTES;
        if constexpr (TMA) {
            const uint32_t sb = wg_smem(sm);
            uint32_t cov;
            if constexpr (RAGGED)
                cov = wg_tma_rows<DQK, DV, BNT>(k, t0, sb + C::OFF_K + s * C::K_BYTES, sb + C::OFF_V + s * C::V_BYTES,
                                           bar.full(s), tm, warp, lane);
            else
                cov = wg_tma_boxes<DQK>(p, k, t0, slot, sb + C::OFF_K + s * C::K_BYTES, sb + C::OFF_V + s * C::V_BYTES,
                                        bar.full(s), tm, warp, lane);
            /* every box by TMA: nothing left for cp.async (warp-uniform) */
            if (cov != __ballot_sync(0xffffffffu, (myrow & (ATTN_TMA_BOX_ROWS - 1)) == 0)) {
                if constexpr (RAGGED)
                    wg_load_rows<DQK, DV, true, BNT>(p, k, t0, kst, vst, warp, lane, cov);
                else
                    wg_load_kv<DQK, DV, true>(p, k, t0, slot, kst, vst, warp, lane, cov);
            }
        } else if constexpr (RAGGED) {
            wg_load_rows<DQK, DV, false, BNT>(p, k, t0, kst, vst, warp, lane);
        } else {
            wg_load_kv<DQK, DV>(p, k, t0, slot, kst, vst, warp, lane);
        }
        gc_cp_async_commit();
        wg_signal<1>(pending);
        pending = bar.full(s);
        g++;
    };
    for (long long w = blockIdx.x; w < total; w += gridDim.x) {
        const wg_work k = wg_work_at<C::BN, HP>(p, w);
        if (k.ntiles > 0) {
            raw = tile_raw(k, 0);
            issue_tile(k, 0);
        }
        wg_signal<0>(pending);
        mbar_wait(bar.q_empty(), (kq & 1) ^ 1);
        fence_proxy_async();
        if constexpr (DCA) {
            /* the farthest part any (row, key) pair of the item reaches: the
             * last row's against the first key (dca_part is monotone in both) */
            const int last = k.q_pos0 + k.nrows - 1, cl = dc->chunk_len;
            const int nv = k.ntiles > 0 ? 1 + dca_part(k.lo, last - last % cl, cl) : 1;
            wg_load_q<DQK, DV, false, true>(p, k, sm + C::OFF_Q, t, dc, nv);
        } else {
            wg_load_q<DQK, DV, HP>(p, k, sm + C::OFF_Q, t);
        }
        gc_cp_async_commit();
        pending = bar.q_full();
        kq++;
        for (int j = 1; j < k.ntiles; j++) issue_tile(k, j);
    }
    wg_signal<0>(pending);
    (void)tm;
}

/* F8's producer (the fp8 split extend's prefix items: the paged body, head
 * dim D, no TMA, tree, head pairs or DCA).  Two rings: the byte ring
 * (B8_STAGES stages of e4m3 K and V bytes, wg_f8_issue) runs two tiles ahead
 * of the 16-bit ring the consumers read (STAGES stages).  Tile c is
 * converted (wg_f8_convert) once its bytes have landed (cp.async.wait_group
 * 1: tile c + 1's stay in flight) and its 16-bit stage is free, then
 * signalled (st.shared: fence.proxy.async before the arrive); its byte stage
 * then takes tile c + 2.  A cursor runs the issue order ahead of the pairs'
 * order, across pairs, so the next pair's first tiles land during this
 * pair's last conversions and its Q load; the page-table word of the
 * cursor's tile is read when the cursor moves, used at its issue.  Per pair:
 * tile 0 converted, then Q (wg_load_q_f8, beside the consumers' last tile of
 * the previous pair), then tiles 1.. . */
template <int DT, int D>
GC_DEV void wg_producer_f8(const attn_fwd &p, uint8_t *sm, const wg_bars<extend_wg_cfg<D, D, 1, true>::STAGES> &bar,
                           long long total) {
    using C = extend_wg_cfg<D, D, 1, true>;
    constexpr int RPW = C::PRODUCER_ROWS_PER_WARP;
    const int t = (int)threadIdx.x, warp = t >> 5, lane = t & 31;
    const int myrow = warp * RPW + lane % RPW; /* the tile row whose slot this lane holds */
    /* the cursor: tile nj of pair nw (its work nk) is the next to issue; nw >= total: none */
    long long nw = blockIdx.x;
    int nj = 0;
    int32_t nraw = 0; /* its table word of row myrow (common.cuh), not yet a slot */
    wg_work nk = {};
    uint32_t issued = 0, conv = 0, kq = 0;
    auto seek = [&]() { /* the cursor onto the first tile at or after (nw, nj) */
        while (nw < total) {
            if (nj < nk.ntiles) {
                const int tok = nk.lo + nj * C::BN + myrow;
                nraw = __ldg(attn_table_at(p, nk.row, tok < nk.hi ? tok : nk.hi - 1));
                return;
            }
            nw += gridDim.x;
            nj = 0;
            if (nw < total) nk = wg_work_at<C::BN>(p, nw);
        }
    };
    auto issue = [&]() { /* the cursor's tile into byte stage issued % B8_STAGES; the cursor on */
        if (nw >= total) return;
        const int t0 = nk.lo + nj * C::BN;
        const int32_t slot = t0 + myrow < nk.hi ? (int32_t)attn_slot_of(p, nraw, t0 + myrow) : 0;
        wg_f8_issue<D>(p, nk, t0, slot, sm + C::OFF_B8 + (issued % C::B8_STAGES) * C::B8_BYTES, warp, lane);
        gc_cp_async_commit();
        issued++;
        nj++;
        seek();
    };
    auto convert = [&]() { /* tile conv: bytes -> 16-bit stage, signalled; its byte stage refilled */
        static_assert(C::B8_STAGES == 2, "the wait below keeps exactly the next tile's group in flight");
        if (issued > conv + 1)
            cp_async_wait<1>();
        else
            cp_async_wait<0>();
        const int s = (int)(conv % C::STAGES);
        mbar_wait(bar.empty(s), ((conv / C::STAGES) & 1) ^ 1);
        fence_proxy_async(); /* the wgmma reads of the stage's old tile are done (async -> generic) */
        wg_f8_convert<D>(sm + C::OFF_B8 + (conv % C::B8_STAGES) * C::B8_BYTES, sm + C::OFF_K + s * C::K_BYTES,
                         sm + C::OFF_V + s * C::V_BYTES, warp, lane);
        fence_proxy_async(); /* the stores are generic-proxy writes the wgmma reads (generic -> async) */
        mbar_arrive(bar.full(s));
        conv++;
        issue();
    };
    if (nw < total) nk = wg_work_at<C::BN>(p, nw);
    seek();
    for (int i = 0; i < C::B8_STAGES; i++) issue();
    for (long long w = blockIdx.x; w < total; w += gridDim.x) {
        const wg_work k = wg_work_at<C::BN>(p, w);
        if (k.ntiles > 0) convert();
        mbar_wait(bar.q_empty(), (kq & 1) ^ 1);
        fence_proxy_async();
        wg_load_q_f8<DT, D, D>(p, k, sm + C::OFF_Q, t);
        fence_proxy_async();
        mbar_arrive(bar.q_full());
        kq++;
        for (int j = 1; j < k.ntiles; j++) convert();
    }
}

/* ------------------------------------------------------------- the consumers */

/* S[64 x BN] = Q_wg[64 x D] K^T: D / 16 SS wgmmas (first one overwrites S). */
template <int DT, int D, int BN> GC_DEV void wg_qk(float (&s)[BN / 2], uint32_t q_addr, uint32_t k_addr) {
    /* D = DQK: D / 64 column blocks of Q (BM rows each) and of K (BN rows each) */
    const uint64_t dq = wg_desc_k(q_addr), dk = wg_desc_k(k_addr);
#pragma unroll
    for (int kb = 0; kb < D / 64; kb++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wg_mma_ss<DT, BN, 0>(s, wg_desc_add(dq, kb * (ATTN_WG_BM * ATTN_SW_ROW_BYTES) + kk * 32),
                                 wg_desc_add(dk, kb * (BN * ATTN_SW_ROW_BYTES) + kk * 32), (kb | kk) != 0);
}

/* O[64 x D] += P[64 x BN] V[BN x D]: BN / 16 RS wgmmas, V MN-major.  D 256
 * runs as two n128 halves (O's columns 0..127 are o[0..63], the second
 * half's V starts two 64-column blocks on), the RS shapes being n64 / n128. */
template <int DT, int D, int BN>
GC_DEV void wg_pv(float (&o)[D / 2], const uint32_t (&pa)[BN / 16][4], uint32_t v_addr) {
    constexpr int NW = D > 128 ? 128 : D, NH = D / NW; /* the wgmma's width, the halves */
    const uint64_t dv = wg_desc_mn<BN>(v_addr);
#pragma unroll
    for (int h = 0; h < NH; h++)
#pragma unroll
        for (int kt = 0; kt < BN / 16; kt++)
            wg_mma_rs<DT, NW, 1>(*reinterpret_cast<float(*)[NW / 2]>(o + h * (NW / 2)), pa[kt],
                                 wg_desc_add(dv, h * (NW / 64) * (BN * ATTN_SW_ROW_BYTES) + kt * 16 * ATTN_SW_ROW_BYTES),
                                 1);
}

/* P (16-bit) as the m64k16 A fragments, from the S accumulator layout:
 * k-step kt = columns 16kt..16kt+15 = accumulator blocks 2kt, 2kt+1. */
template <int DT, int BN> GC_DEV void wg_pack_p(uint32_t (&pa)[BN / 16][4], const float (&s)[BN / 2]) {
#pragma unroll
    for (int kt = 0; kt < BN / 16; kt++) {
        pa[kt][0] = pack2<DT>(s[8 * kt + 0], s[8 * kt + 1]);
        pa[kt][1] = pack2<DT>(s[8 * kt + 2], s[8 * kt + 3]);
        pa[kt][2] = pack2<DT>(s[8 * kt + 4], s[8 * kt + 5]);
        pa[kt][3] = pack2<DT>(s[8 * kt + 6], s[8 * kt + 7]);
    }
}

/* Per-thread softmax state for its two rows (lo = g, hi = g + 8 of its warp's 16). */
struct wg_rows {
    float m[2], l[2];
    int qpos[2];
};

/* One tile's online-softmax step on S (raw dot products -> probabilities in
 * place).  corr: the factor the rows' earlier O and l take.  Without a
 * soft-cap the scale folds into the exponent (one FFMA + EX2 per score, FA3's
 * trick; the row max of the raw scores scales to the max of the scaled ones
 * because scale > 0); with one, each score goes through attn_score first.
 * Masks (only on tiles that need them) are attn_visible as per-row column
 * bounds [clo, chi) and a select per score: no branch per score.
 * DCA: the scale is dsc (the request's length-scaled one, dual_chunk.h; dual
 * chunk takes no soft-cap). */
template <int BN, int TREE, bool DCA = false, bool F8 = false>
GC_DEV void wg_softmax(float (&s)[BN / 2], wg_rows &st, float corr[2], const attn_fwd &p, const wg_work &k, int t0,
                       bool need_mask, int q4, const uint32_t (&tbits)[2], float dsc = 0.f, float kmul = 1.f) {
    const bool folded = DCA ? dsc > 0.f : !(p.softcap > 0.f) && p.scale_log2 > 0.f;
    /* F8: kmul (k_scale times ATTN_FP8_UNIT) joins the softmax scale */
    const float c = folded ? (DCA ? dsc : F8 ? p.scale_log2 * kmul : p.scale_log2) : 1.f;
    if (!folded) {
#pragma unroll
        for (int i = 0; i < BN / 2; i++) s[i] = DCA ? s[i] * dsc : attn_score(p, F8 ? s[i] * kmul : s[i]);
    }
    if (need_mask) {
        int chi[2], clo[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            chi[h] = k.causal && st.qpos[h] + 1 < k.hi ? st.qpos[h] + 1 : k.hi;
            clo[h] = k.window >= 0 ? st.qpos[h] - k.window : INT_MIN;
        }
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int col = t0 + 8 * j + 2 * q4 + (i & 1);
                bool vis = (col < chi[i >> 1]) & (col >= clo[i >> 1]);
                if constexpr (TREE) /* the mask replaces causality */
                    vis = vis && (!k.tree || ((tbits[i >> 1] >> (2 * j + (i & 1))) & 1u));
                s[4 * j + i] = vis ? s[4 * j + i] : ATTN_NEG_INF;
            }
    }
    float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) mx[i >> 1] = fmaxf(mx[i >> 1], s[4 * j + i]);
    float mo[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float mn = fmaxf(mx[h] * c, st.m[h]); /* log2 domain */
        corr[h] = attn_rescale(st.m[h], mn);
        st.m[h] = mn;
        st.l[h] *= corr[h];
        mo[h] = mn == ATTN_NEG_INF ? 0.f : mn; /* nothing visible yet: every score is -inf, exp2 gives 0 */
    }
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float e = gc_exp2(fmaf(s[4 * j + i], c, -mo[i >> 1]));
            s[4 * j + i] = e;
            st.l[i >> 1] += e;
        }
}

template <int D> GC_DEV void wg_scale_o(float (&o)[D / 2], const float corr[2]) {
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        o[4 * j + 0] *= corr[0];
        o[4 * j + 1] *= corr[0];
        o[4 * j + 2] *= corr[1];
        o[4 * j + 3] *= corr[1];
    }
}

/* Normalise (sinks join the denominator) and store this thread's two rows;
 * the LSE (p.lse set: a uniform branch) excludes the sinks. */
template <int DT, int D, bool F8 = false>
GC_DEV void wg_store_o(const attn_fwd &p, const wg_work &k, const float (&o)[D / 2], wg_rows &st, int row_lo,
                       int q4, float vmul = 1.f) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float l = st.l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (p.lse) {
            const int r = row_lo + 8 * h, tok = k.q_tok0 + r;
            if (q4 == 0 && r < k.nrows && tok < p.num_tokens)
                p.lse[(int64_t)tok * p.hq + k.head] = attn_lse_ln(st.m[h], l);
        }
        float w = 1.f;
        if (p.sinks) {
            const float sk = p.sinks[k.head] * ATTN_LOG2E;
            const float mm = fmaxf(st.m[h], sk);
            w = attn_exp2_sub(st.m[h], mm);
            l = l * w + gc_exp2(sk - mm);
        }
        float inv = l > 0.f ? w / l : 0.f;
        if constexpr (F8) inv *= vmul; /* O is linear in V */
        const int r = row_lo + 8 * h, tok = k.q_tok0 + r;
        if (r >= k.nrows || tok >= p.num_tokens) continue;
        uint16_t *out = (uint16_t *)p.out + (int64_t)tok * p.o_stride_t + (int64_t)k.head * p.o_stride_h + 2 * q4;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            *(uint32_t *)(out + 8 * j) = pack2<DT>(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    }
}

/* Dual chunk, a tile whose keys meet several parts for the warpgroup's rows
 * (vlo < vhi; s holds the scores of variant vlo): per 32-column slice, each
 * further part the slice's keys meet is scored (an SS m64n32 wgmma per k16
 * step from that variant's Q tile, wait) and every element whose key lies in
 * that part for its row (chunk start c0r[h]) takes it.  The parts of a slice
 * lie between those of its last key for the first row (c0min) and its first
 * key for the last row (c0max): warpgroup-uniform bounds, as wgmma needs. */
template <int DT, int DQK, int BN>
GC_DEV void wg_dca_boundary(float (&s)[BN / 2], uint32_t q_addr, uint32_t k_addr, int t0, int vlo, int c0min,
                            int c0max, const int (&c0r)[2], int cl, int q4) {
    constexpr int SL = 32;
    constexpr uint32_t QB = wg_sw_bytes<ATTN_WG_BM, DQK>();
#pragma unroll
    for (int sl = 0; sl < BN / SL; sl++) {
        const int a = t0 + sl * SL;
        const int plo = dca_part(a + SL - 1, c0min, cl), phi = dca_part(a, c0max, cl);
        for (int vv = plo; vv <= phi; vv++) {
            if (vv == vlo) continue;
            float t[SL / 2];
            const uint64_t dq = wg_desc_k(q_addr + vv * QB), dk = wg_desc_k(k_addr + sl * SL * ATTN_SW_ROW_BYTES);
            wg_pin(t);
            wg_fence();
#pragma unroll
            for (int kb = 0; kb < DQK / 64; kb++)
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    wg_mma_ss<DT, SL, 0>(t, wg_desc_add(dq, kb * (ATTN_WG_BM * ATTN_SW_ROW_BYTES) + kk * 32),
                                         wg_desc_add(dk, kb * (BN * ATTN_SW_ROW_BYTES) + kk * 32), (kb | kk) != 0);
            wg_commit();
            wg_wait<0>();
            wg_pin(t);
#pragma unroll
            for (int j = 0; j < SL / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int col = a + 8 * j + 2 * q4 + (i & 1);
                    if (dca_part(col, c0r[i >> 1], cl) == vv) s[4 * (sl * SL / 8 + j) + i] = t[4 * j + i];
                }
        }
    }
}

/* Lane 0 of each consumer warp releases a barrier (expected count 8). */
GC_DEV void wg_release(uint32_t bar, int lane) {
    if (lane == 0) mbar_arrive(bar);
}

/* A consumer warpgroup: per tile, S = Q K^T, wait, the softmax, O += P V,
 * wait, release the stage; Q is released after the pair's last S.
 * DCA (dual chunk, dual_chunk.h): a key's score takes the query variant of
 * its part for the row.  The part is monotone in both (later keys: nearer
 * parts; later rows: farther ones), so the warpgroup's 64 rows x a tile's
 * keys lie in one part unless the tile crosses a row's boundary: S is the SS
 * wgmma from that part's Q tile, as plain attention's from q; at a boundary
 * wg_dca_boundary rescores the elements of the further parts (Q is released
 * after it). */
template <int DT, int DQK, int DV, int TREE, bool HP = false, bool DCA = false, bool F8 = false,
          int BNT = wg_paged_bn(DQK)>
GC_DEV void wg_consumer(const attn_fwd &p, uint32_t sbase,
                        const wg_bars<extend_wg_cfg<DQK, DV, DCA ? 3 : 1, F8, BNT>::STAGES> &bar, long long total,
                        int wg, const attn_dca *dc = nullptr) {
    using C = extend_wg_cfg<DQK, DV, DCA ? 3 : 1, F8, BNT>;
    constexpr int BN = C::BN, ST = C::STAGES, D = DV;
    constexpr int CT = F8 ? GC_F16 : DT; /* the wgmma's type: F8's tiles are f16 */
    const int t = (int)threadIdx.x - 128 * (1 + wg), lane = t & 31, q4 = lane & 3;
    /* F8: the dequant scales (fp8_e4m3.cuh), read once */
    [[maybe_unused]] const float kmul = F8 ? attn_kv_scale(p.k_scale_dev, p.k_scale) * ATTN_FP8_UNIT : 1.f;
    [[maybe_unused]] const float vmul = F8 ? attn_kv_scale(p.v_scale_dev, p.v_scale) * ATTN_FP8_UNIT : 1.f;
    const int wrow = HP ? 0 : 64 * wg; /* the item row of the warpgroup's first (HP: each serves rows 0..63) */
    const int row_lo = wrow + 16 * (t >> 5) + (lane >> 2); /* item row of this thread's d[4j + 0/1] */
    const uint32_t q_addr = sbase + C::OFF_Q + wg * 64 * ATTN_SW_ROW_BYTES;
    const uint32_t k_addr = sbase + C::OFF_K, v_addr = sbase + C::OFF_V;
    float s[BN / 2], o[D / 2];
    uint32_t pa[BN / 16][4];
    uint32_t g = 0, kq = 0;

    for (long long w = blockIdx.x; w < total; w += gridDim.x) {
        wg_work k = wg_work_at<BN, HP>(p, w);
        if constexpr (HP) k.head += wg; /* this warpgroup's q head */
        wg_rows st;
        st.m[0] = st.m[1] = ATTN_NEG_INF;
        st.l[0] = st.l[1] = 0.f;
        st.qpos[0] = k.q_pos0 + row_lo;
        st.qpos[1] = st.qpos[0] + 8;
        const int qmin = k.q_pos0 + wrow, qmax = qmin + 63; /* this warpgroup's rows */
        /* A warpgroup whose 64 rows all lie past the item (a short item: verify's
         * draft tokens) computes nothing: it only keeps the barriers' counts. */
        const bool idle = wrow >= k.nrows;
        /* DCA: the chunk starts of this thread's rows (c0r), of the warpgroup's
         * first and last rows in the item (c0min, c0max: the producer loaded the
         * variants up to the last row's farthest part), the request's scale */
        [[maybe_unused]] int cl = 1, c0min = 0, c0max = 0, c0r[2] = {0, 0};
        [[maybe_unused]] float dsc = 0.f;
        if constexpr (DCA) {
            cl = dc->chunk_len;
            const int last = min(qmax, k.q_pos0 + k.nrows - 1);
            c0min = qmin - qmin % cl;
            c0max = last - last % cl;
            c0r[0] = st.qpos[0] - st.qpos[0] % cl;
            c0r[1] = st.qpos[1] - st.qpos[1] % cl;
            dsc = dca_scale_log2(p.scale_log2, *dc, p.eitems[k.item].kv_hi);
        }
        /* Tree verify: the packed words of this thread's first row start at
         * mrow, its second row's 8 rows later. */
        const uint64_t *mrow = p.mask_bits;
        /* the tiles before jplain lie in the request's leading full words (no mask,
         * no loads); its load is first used after the Q wait below */
        [[maybe_unused]] int jplain = 0;
        if (TREE && k.tree) {
            const attn_extend_item it = p.eitems[k.item];
            mrow += ((int64_t)it.b * p.mask_q + it.q_pos0 - (it.kv_hi - p.mask_q) + row_lo) * p.mask_words;
            const uint32_t fw = __ldg((const uint32_t *)(p.mask_full + p.mask_first_off) + it.b);
            jplain = (int)(fw < (uint32_t)p.mask_words ? fw : (uint32_t)p.mask_words) / (BN / 64);
        }
        /* Tree verify: the raw words of the next tile, loaded a whole tile
         * before their use (the loads' latency hides behind the tile's softmax
         * and both wgmmas); a word past seq_len or of a row past the item is 0
         * (those rows see nothing). */
        uint64_t nw[2][BN / 64];
        auto load_words = [&](int jt) {
            const int c0 = jt * BN, seq = k.hi - k.lo;
#pragma unroll
            for (int ww = 0; ww < BN / 64; ww++) {
                const bool in = c0 + 64 * ww < seq;
#pragma unroll
                for (int h = 0; h < 2; h++)
                    nw[h][ww] = in && row_lo + 8 * h < k.nrows
                                    ? __ldg(mrow + (int64_t)(8 * h) * p.mask_words + (c0 >> 6) + ww)
                                    : 0ull;
            }
        };
        if (TREE && k.tree && !idle && k.ntiles > 0) load_words(0);
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] = 0.f;
        mbar_wait(bar.q_full(), kq & 1);
        fence_proxy_async();
        kq++;
        if (k.ntiles == 0) wg_release(bar.q_empty(), lane);
        /* mask only where some (row, column) pair of the tile can be invisible */
        auto need_mask = [&](int t0, bool tfull) {
            return (TREE && k.tree && !tfull) || t0 + BN > k.hi || (k.causal && t0 + BN - 1 > qmin) ||
                   (k.window >= 0 && t0 < qmax - k.window);
        };
        for (int j = 0; j < k.ntiles; j++, g++) {
            const int sidx = (int)(g % ST), t0 = k.lo + j * BN;
            mbar_wait(bar.full(sidx), (g / ST) & 1);
            if (idle) {
                if (j == k.ntiles - 1) wg_release(bar.q_empty(), lane);
                wg_release(bar.empty(sidx), lane);
                continue;
            }
            fence_proxy_async();
            /* DCA: the parts of the tile's keys for the warpgroup's rows (vlo == vhi: one part) */
            [[maybe_unused]] int vlo = 0, vhi = 0;
            if constexpr (DCA) {
                vlo = dca_part(t0 + BN - 1, c0min, cl);
                vhi = dca_part(t0, c0max, cl);
            }
            wg_pin(s);
            wg_fence();
            wg_qk<CT, DQK, BN>(s, DCA ? q_addr + vlo * C::Q_BYTES : q_addr, k_addr + sidx * C::K_BYTES);
            wg_commit();
            /* tree verify: this tile's mask bits of the thread's two rows (bit
             * 2j + e: column t0 + 8j + 2 q4 + e) from the words load_words brought
             * during the tile before (or before the loop), none on a tile whose
             * words are all ones for every row (tfull: the tile takes no mask);
             * then the next tile's words, while this S wgmma runs */
            uint32_t tbits[2] = {0u, 0u};
            bool tfull = false;
            if (TREE && k.tree && j < jplain) {
                /* the leading full words: no mask; the first tile after them loads its words here */
                tfull = true;
                if (j + 1 == jplain && j + 1 < k.ntiles) load_words(j + 1);
            } else if (TREE && k.tree) {
                /* this thread's two rows alone (no flag loads) */
                uint64_t all = ~0ull;
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int ww = 0; ww < BN / 64; ww++) all &= nw[h][ww];
                tfull = all == ~0ull;
                if (!tfull) {
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int ww = 0; ww < BN / 64; ww++)
                            tbits[h] |= attn_bits_pairs(nw[h][ww] >> (2 * q4)) << (16 * ww);
                }
                if (j + 1 < k.ntiles) load_words(j + 1);
            }
            wg_wait<0>();
            wg_pin(s);
            if constexpr (DCA)
                if (vlo != vhi)
                    wg_dca_boundary<DT, DQK, BN>(s, q_addr, k_addr + sidx * C::K_BYTES, t0, vlo, c0min, c0max, c0r,
                                                 cl, q4);
            if (j == k.ntiles - 1) wg_release(bar.q_empty(), lane);
            float corr[2];
            wg_softmax<BN, TREE, DCA, F8>(s, st, corr, p, k, t0, need_mask(t0, tfull), q4, tbits, dsc, kmul);
            wg_scale_o<D>(o, corr);
            wg_pack_p<CT, BN>(pa, s);
            wg_pin(o);
            wg_pin(pa);
            wg_fence();
            wg_pv<CT, D, BN>(o, pa, v_addr + sidx * C::V_BYTES);
            wg_commit();
            wg_wait<0>();
            wg_pin(o);
            wg_pin(pa);
            wg_release(bar.empty(sidx), lane);
        }
        wg_store_o<DT, D, F8>(p, k, o, st, row_lo, q4, vmul);
    }
}

#endif /* ATTN_HAVE_WGMMA */

/* The kernels: grid = min(SMs, pairs), 384 threads, extend_wg_cfg<DQK, DV>::SMEM
 * bytes of dynamic shared memory (set by attn_wgmma_setup).  One body, the
 * producer as a template parameter: attn_extend_wgmma_kernel gathers with
 * cp.async, attn_extend_wgmma_tma_kernel takes page boxes (RAGGED: row
 * boxes) by TMA.  TREE: the instantiation for tree verify batches (the mask
 * bits in the consumer); the others carry no mask code.  DCA: dual chunk
 * attention (attn_extend_wgmma_dca_kernel, the paged extend at head dim 128:
 * three Q tiles, two K/V stages); the instantiations without it compile to
 * the code they had before it existed. */
#if defined(ATTN_HAVE_WGMMA)
template <int DT, int DQK, int DV, bool TMA, bool RAGGED, int TREE, bool HP, bool DCA = false, bool F8 = false,
          int BNT = wg_paged_bn(DQK)>
GC_DEV void wg_kernel_body(const attn_fwd &p, const attn_kv_tmaps *tm, const attn_dca *dc = nullptr) {
    using C = extend_wg_cfg<DQK, DV, DCA ? 3 : 1, F8, BNT>;
    static_assert(!F8 || (!TMA && !RAGGED && !HP && !DCA && TREE == ATTN_WG_TREE_NONE),
                  "F8: the paged body, its producer converting the pool's bytes");
#ifdef LK_EMU /* the CPU emulator (tests/emu/): emu_cu.py rewrites the .cu files' declarations, not a header's */
    uint8_t *const wg_smem_raw = (uint8_t *)lk_emu_dyn_smem();
#else
    extern __shared__ __align__(16) uint8_t wg_smem_raw[];
#endif
    const uint32_t raw = wg_smem(wg_smem_raw);
    const uint32_t sbase = (raw + (ATTN_SW_ATOM_BYTES - 1)) & ~(uint32_t)(ATTN_SW_ATOM_BYTES - 1);
    uint8_t *sm = wg_smem_raw + (sbase - raw);
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
    const int n = *p.num_items;
    const long long total = (long long)(n > 0 ? n : 0) * (HP ? p.hq / 2 : p.hq);
    if (threadIdx.x < 128) {
        setmaxnreg_dec<ATTN_WG_REGS_PRODUCER>();
        if constexpr (F8)
            wg_producer_f8<DT, DQK>(p, sm, bar, total);
        else
            wg_producer<DQK, DV, TMA, RAGGED, HP, DCA, BNT>(p, sm, bar, total, tm, dc);
    } else {
        setmaxnreg_inc<ATTN_WG_REGS_CONSUMER>();
        wg_consumer<DT, DQK, DV, TREE, HP, DCA, F8, BNT>(p, sbase, bar, total, (int)(threadIdx.x >> 7) - 1, dc);
    }
}
#endif

template <int DT, int DQK, int DV = DQK, bool RAGGED = false, int TREE = ATTN_WG_TREE_NONE, bool HP = false>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_kernel(const attn_fwd p) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, DQK, DV, false, RAGGED, TREE, HP>(p, nullptr);
#else
    (void)p;
#endif
}

/* The pool's K and V tensor maps ride in the parameters (__grid_constant__:
 * the TMA reads them there). */
template <int DT, int DQK, int DV = DQK, bool RAGGED = false, int TREE = ATTN_WG_TREE_NONE, bool HP = false>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_tma_kernel(const attn_fwd p,
                                                                                 const __grid_constant__ attn_kv_tmaps tm) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, DQK, DV, true, RAGGED, TREE, HP>(p, &tm);
#else
    (void)p;
    (void)tm;
#endif
}

/* The direct extend's new-token pass (an extend without a prefix,
 * cuda_attn_forward.c): the RAGGED body at head dim 128 over the call's k / v
 * rows, after a programmatic-dependent trigger (pdl_sm90.cuh) that lets the
 * save-KV launched after it start beside it (it reads no row that save
 * writes).  Separate entries, so the ragged kernels above keep their code. */
template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_new_kernel(const attn_fwd p) {
#if defined(ATTN_HAVE_WGMMA)
    ca_pdl_trigger();
    wg_kernel_body<DT, 128, 128, false, true, ATTN_WG_TREE_NONE, false>(p, nullptr);
#else
    (void)p;
#endif
}

template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_new_tma_kernel(
    const attn_fwd p, const __grid_constant__ attn_kv_tmaps tm) {
#if defined(ATTN_HAVE_WGMMA)
    ca_pdl_trigger();
    wg_kernel_body<DT, 128, 128, true, true, ATTN_WG_TREE_NONE, false>(p, &tm);
#else
    (void)p;
    (void)tm;
#endif
}

/* forward_ragged at qk 192 / v 128: the RAGGED body with 64-column tiles,
 * four K/V stages deep (extend_wg_cfg<192, 128, 1, false, 64>::SMEM bytes;
 * 128-column tiles fit two). */
template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_ragged192_kernel(const attn_fwd p) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, 192, 128, false, true, ATTN_WG_TREE_NONE, false, false, false, 64>(p, nullptr);
#else
    (void)p;
#endif
}

template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_ragged192_tma_kernel(
    const attn_fwd p, const __grid_constant__ attn_kv_tmaps tm) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, 192, 128, true, true, ATTN_WG_TREE_NONE, false, false, false, 64>(p, &tm);
#else
    (void)p;
    (void)tm;
#endif
}

/* Dual chunk attention (dual_chunk.h) on the same body: the cp.async and the
 * TMA producer, head dim 128, extend_wg_cfg<128, 128, 3>::SMEM bytes. */
template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_dca_kernel(const attn_fwd p,
                                                                                 const __grid_constant__ attn_dca dc) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, 128, 128, false, false, ATTN_WG_TREE_NONE, false, true>(p, nullptr, &dc);
#else
    (void)p;
    (void)dc;
#endif
}

template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_dca_tma_kernel(
    const attn_fwd p, const __grid_constant__ attn_kv_tmaps tm, const __grid_constant__ attn_dca dc) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, 128, 128, true, false, ATTN_WG_TREE_NONE, false, true>(p, &tm, &dc);
#else
    (void)p;
    (void)tm;
    (void)dc;
#endif
}

/* The fp8 split extend's prefix pass (split_extend,
 * cuda_attn_forward.c): the paged body over an fp8 e4m3 pool (F8), the
 * producer's byte ring and conversion (wg_producer_f8), head dim 128,
 * extend_wg_cfg<128, 128, 1, true>::SMEM bytes.  A separate entry, so the
 * 16-bit kernels keep their code. */
template <int DT>
__global__ __launch_bounds__(ATTN_WG_THREADS, 1) void attn_extend_wgmma_fp8_kernel(const attn_fwd p) {
#if defined(ATTN_HAVE_WGMMA)
    wg_kernel_body<DT, 128, 128, false, false, ATTN_WG_TREE_NONE, false, false, true>(p, nullptr);
#else
    (void)p;
#endif
}

#endif
