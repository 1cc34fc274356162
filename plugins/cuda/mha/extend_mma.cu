/*
 * extend_mma.cu - paged extend / prefill / cross attention on tensor cores
 * with mma.sync m16n8k16 (CUDA, SM 8.0+): cuda_attn's extend where the wgmma
 * one (extend_wgmma_sm90.cu) does not run: SM 8.x, head dims 64 and 256, a
 * binary without the sm_90a image, fp8 pools (cuda_attn_choice.c); every
 * extend with the option kernel=mma.
 *
 * Grid: x = q head, y = work item (64 q rows of one request; the plan orders
 * items longest-first).  4 warps, 16 q rows each.  K/V tiles of BN tokens are
 * gathered through the page table with cp.async, double-buffered (the next
 * tile's copies fly while this one computes).  S = Q K^T and O += P V on
 * tensor cores (ldmatrix / ldmatrix.trans from XOR-swizzled tiles), online
 * softmax in registers, P re-packed from the S accumulators as the A operand.
 * Out of the tile loop:
 *   - the page-table reads: kv_loader_pf issues a tile's loads at once, a
 *     tile ahead, and clamps where the copy uses them;
 *   - the soft-cap test: one uniform branch per tile, and without a soft-cap
 *     the scale folds into the exponent (one FFMA + EX2 per score);
 *   - the masks (causal diagonal, window edge, KV end): per-row visible
 *     column bounds [clo, chi) computed once per item, applied with selects,
 *     only on tiles that need them; a tree verify item (ATTN_VIS_TREE) masks
 *     each score by its bit of the batch's packed mask (tree_mask_pack.cu),
 *     on the tiles whose words are not all ones.
 * The LSE output (p.lse set) is written beside the output rows.  Head dims
 * are template parameters, DQK (Q, K) and DV (V, O): equal for the paged
 * extend, qk 192 / v 128 for forward_ragged's DeepSeek shape.  RAGGED: K / V
 * are forward_ragged's tensors, key column c of an item at row `row` + c
 * (kv_loader_rows), instead of the page gather.
 *
 * The same kernel, with the template parameter DCA, is the dual chunk
 * attention extend (dual_chunk.h), with its setup and launcher; with F8 it
 * reads an fp8 e4m3 pool (every fp8 extend, SM 9.0 included: the wgmma
 * extend reads 16-bit pools only), with its loader, setup and launcher.
 */
#include <limits.h>

#include <type_traits>

#include "dual_chunk.h"
#include "flash_mma.cuh"
#include "fp8_e4m3.cuh"

#define ATTN_EM_THREADS 128
#define ATTN_EM_BM 64

/* NQ: the query variants staged in shared memory (1; 3 for dual chunk).
 * EB: bytes of a K/V element (2; 1 for an fp8 pool); the tiles' sizes count
 * 16-bit words. */
template <int DQK, int DV = DQK, int NQ = 1, int EB = 2> struct extend_mma_cfg {
    static constexpr int BM = ATTN_EM_BM;
    /* 32-column tiles at qk 192 / 256: shared memory within SM 8.6's 99 KB */
    static constexpr int BN = DQK > 128 ? 32 : 64;
    static constexpr int STAGES = 2;
    static constexpr int Q_ELEMS = BM * DQK, K_ELEMS = BN * DQK * EB / 2, V_ELEMS = BN * DV * EB / 2; /* Q_ELEMS: one variant */
    static constexpr size_t SMEM = (size_t)(NQ * Q_ELEMS + STAGES * (K_ELEMS + V_ELEMS)) * 2;
};

/* ------------------------------------------------ fp8 e4m3 pools (F8) */

/* Offset (16-bit words) of 16-byte chunk c of row `row` in a swizzled tile
 * of D-byte fp8 rows: chunk c ^ (row & 7) at 8+ chunks a row, c ^ ((row >>
 * 1) & 3) at 4 (d64: 64-byte rows, two to a 128-byte bank line), so the 8
 * row addresses of an ldmatrix fall in 8 different bank groups. */
template <int D> GC_DEV int swz8(int row, int c) {
    constexpr int CH = D / 16;
    static_assert(CH == 4 || (CH >= 8 && CH % 8 == 0), "fp8 rows of 64 or a multiple of 128 bytes");
    return row * (D / 2) + ((CH == 4 ? c ^ ((row >> 1) & 3) : c ^ (row & 7)) << 3);
}

/* kv_loader_pf's gather for fp8 rows (D bytes each, D / 16 chunks) into
 * swz8 tiles: the same raw page-table words a tile ahead, clamped at issue;
 * rows past `end` are zero-filled. */
template <int D, int ROWS, int NT> struct kv_loader_pf8 {
    static constexpr int CH = D / 16;
    static constexpr int RSTEP = NT / CH;
    static constexpr int RPT = ROWS / RSTEP;
    static_assert(NT % CH == 0 && ROWS % RSTEP == 0 && RPT >= 1, "tile split");
    int32_t raw[RPT];
    int c, r0;

    GC_DEV kv_loader_pf8() : c((int)threadIdx.x % CH), r0((int)threadIdx.x / CH) {}

    GC_DEV void fetch_slots(const attn_fwd &p, int req_row, int t0, int end) {
        const int last = end > 0 ? end - 1 : 0;
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int tok = t0 + r0 + k * RSTEP;
            raw[k] = __ldg(attn_table_at(p, req_row, tok < end ? tok : last));
        }
    }
    GC_DEV void issue(const attn_fwd &p, int kvh, uint16_t *ks, uint16_t *vs, int t0, int end) const {
        const uint8_t *kb = (const uint8_t *)p.k_cache + (int64_t)kvh * p.kc_stride_h + c * 16;
        const uint8_t *vb = (const uint8_t *)p.v_cache + (int64_t)kvh * p.vc_stride_h + c * 16;
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int row = r0 + k * RSTEP;
            const bool ok = t0 + row < end;
            const int64_t slot = ok ? attn_slot_of(p, raw[k], t0 + row) : 0;
            gc_cp_async16(ks + swz8<D>(row, c), kb + slot * p.kc_stride_s, ok);
            gc_cp_async16(vs + swz8<D>(row, c), vb + slot * p.vc_stride_s, ok);
        }
    }
};

/* TREE: the instantiation for batches with a tree mask (p.mask set); the
 * others carry no mask code, so their registers are the plain kernel's.
 * DCA: dual chunk attention (dual_chunk.h; dc is read only then), paged, no
 * window, soft-cap, sinks or LSE: grid z is the 64-row sub-tile of an item
 * (the plan's items hold up to block_m rows, which the chosen plain kernel
 * sets), the 64 rows' three query variants sit in shared memory.  The part of
 * key k for row r is monotone in both (later keys: nearer parts; later rows:
 * farther ones), so a warp's rows x the tile's keys lie in one part unless
 * the tile crosses a row's boundary: then S comes from the variant registers
 * of that part (reloaded from shared memory when the part changes, which
 * happens twice per row over the whole KV); at a boundary the warp scores
 * each 16-key slice once per part it touches and keeps, per element, the
 * score of its part.  The instantiations without DCA compile to the code of
 * the kernel before it had DCA.
 * F8: an fp8 e4m3 pool (head dims 64 / 128, paged, no dual chunk).  The
 * tiles hold the pool's bytes (half the copies and shared memory); the
 * fragments are converted in registers to f16 (fp8_e4m3.cuh: exact), so both
 * mma run in f16 (q converted once per item, P packed as f16) and the dequant
 * scales apply to fp32 results: k_scale with the softmax scale, v_scale to O
 * at the end.  ldmatrix moves 16-bit words, so the operands are the tiles'
 * bytes in a permuted order, which a dot product does not see:
 *   S:  a K fragment word is dims 4 t4 .. 4 t4 + 3 of token g (one 16-dim
 *       chunk a matrix, four 8-token blocks an ldmatrix): the low pair is
 *       k 2 t4, 2 t4 + 1 of the mma, the high pair k 8 + 2 t4, 9 + 2 t4, and
 *       q's A fragment is read from its tile in that order;
 *   PV: ldmatrix.trans of V gives tokens 2 t4, 2 t4 + 1 at dims 2g, 2g + 1 of
 *       a 16-dim chunk; a byte permute splits that into the B fragments of
 *       the even dims (one mma) and the odd dims (another), and the thread's
 *       outputs are dims 4 t4 .. 4 t4 + 3 of each chunk. */
template <int DT, int DQK, int DV, bool RAGGED, bool TREE, bool DCA, bool F8 = false>
__global__ __launch_bounds__(ATTN_EM_THREADS) void attn_extend_mma_kernel(attn_fwd p, attn_dca dc) {
    constexpr int NQ = DCA ? 3 : 1;
    using C = extend_mma_cfg<DQK, DV, NQ, F8 ? 1 : 2>;
    constexpr int BM = C::BM, BN = C::BN, S = C::STAGES, CH = DQK / 8, NB = DV / 8, SN = BN / 8;
    constexpr bool QREG = DQK <= 128;
    constexpr int CT = F8 ? GC_F16 : DT; /* the mma's type */
    static_assert(RAGGED || DQK == DV, "the page gather loads K and V rows of one width");
    static_assert(!DCA || (!RAGGED && !TREE), "dual chunk: the paged extend without a tree mask");
    static_assert(!F8 || (!RAGGED && !DCA && QREG && BN % 32 == 0 && DV % 32 == 0), "fp8: the paged extend, d 64 / 128");
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *qs = smem; /* [NQ][BM][DQK]: q (, q_succ, q_inter) */
    uint16_t *ks = smem + NQ * C::Q_ELEMS;
    uint16_t *vs = ks + S * C::K_ELEMS;

    if ((int)blockIdx.y >= *p.num_items) return;
    const attn_extend_item it = p.eitems[blockIdx.y];
    const int rb = DCA ? (int)blockIdx.z * BM : 0; /* DCA: the sub-tile's first row */
    if (DCA && rb >= it.nrows) return;
    const int nrows = DCA ? min(BM, it.nrows - rb) : it.nrows, q_tok0 = it.q_tok0 + rb, q_pos0 = it.q_pos0 + rb;
    const int head = blockIdx.x, kvh = head / p.group;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    /* DCA: a tree item is causal too (dual chunk takes no tree mask) */
    const bool causal = DCA ? it.causal != 0 : it.causal == ATTN_VIS_CAUSAL;
    const bool tree = TREE && it.causal == ATTN_VIS_TREE;
    const int window = !DCA && causal ? p.window : -1;

    for (int i = tid; i < NQ * BM * CH; i += ATTN_EM_THREADS) {
        const int v = DCA ? i / (BM * CH) : 0, r = DCA ? i / CH % BM : i / CH, c = i % CH;
        const int tok = q_tok0 + r;
        const bool ok = r < nrows && tok < p.num_tokens;
        const uint16_t *src = DCA ? dca_q_row(p, dc, v, ok ? tok : 0, head) + c * 8
                                  : (const uint16_t *)p.q + (int64_t)(ok ? tok : 0) * p.q_stride_t +
                                        (int64_t)head * p.q_stride_h + c * 8;
        gc_cp_async16(qs + v * C::Q_ELEMS + swz<DQK>(r, c), src, ok);
    }
    gc_cp_async_commit();

    int lo = it.kv_lo, hi = it.kv_hi;
    if (causal && q_pos0 + nrows < hi) hi = q_pos0 + nrows;
    if (window >= 0 && q_pos0 - window > lo) lo = q_pos0 - window;
    const int ntiles = hi > lo ? (hi - lo + BN - 1) / BN : 0;

    typename std::conditional<
        RAGGED, kv_loader_rows<DQK, DV, BN, ATTN_EM_THREADS>,
        typename std::conditional<F8, kv_loader_pf8<DQK, BN, ATTN_EM_THREADS>, kv_loader_pf<DQK, BN, ATTN_EM_THREADS>>::type>::type ld;
    kv_pipe_fill<S, BN>(ld, p, kvh, ks, vs, C::K_ELEMS, C::V_ELEMS, it.row, lo, hi, ntiles);

    float o[NB][4];
#pragma unroll
    for (int n = 0; n < NB; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, l[2] = {0.f, 0.f};
    uint32_t qf[QREG ? DQK / 16 : 1][4];
    [[maybe_unused]] int cur = -1; /* DCA: the part whose variant qf holds */
    const int r0 = warp * 16; /* this warp's q rows */
    const int qpos_lo = q_pos0 + r0 + g, qpos_hi = qpos_lo + 8; /* rows of c0,c1 / c2,c3 */
    const int qmin = q_pos0, qmax = q_pos0 + BM - 1;
    /* Row h sees columns [clo[h], chi[h]): col < hi, causal col <= qpos, window
     * col >= qpos - window (attn_visible, as bounds). */
    int chi[2], clo[2];
    /* Tree verify: row h's packed mask words start at mrow[h] (a row past the item sees nothing). */
    int64_t mrow[2] = {0, 0};
    /* DCA: the chunk of row h's query (c0r), of the warp's first and last rows */
    [[maybe_unused]] int c0r[2], cl = 0, c0min = 0, c0max = 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int qpos = h ? qpos_hi : qpos_lo;
        chi[h] = causal && qpos + 1 < hi ? qpos + 1 : hi;
        clo[h] = window >= 0 ? qpos - window : INT_MIN;
        if constexpr (TREE) {
            if (tree) {
                const int r = r0 + g + 8 * h;
                mrow[h] = ((int64_t)it.b * p.mask_q + it.q_pos0 - (it.kv_hi - p.mask_q) + r) * p.mask_words;
                if (r >= it.nrows) chi[h] = INT_MIN;
            }
        }
        if constexpr (DCA) c0r[h] = qpos - qpos % dc.chunk_len;
    }
    /* Without a soft-cap (and a positive scale) S stays raw: the row max of raw
     * scores scales to the max of scaled ones, exp2(s * c - m) is one FFMA.
     * DCA scales by the request's length (seq_len: its keys after this call). */
    [[maybe_unused]] float sc = 0.f;
    bool folded;
    if constexpr (DCA) {
        cl = dc.chunk_len;
        const int pmin = q_pos0 + r0, pmax = pmin + 15; /* the warp's rows */
        c0min = pmin - pmin % cl;
        c0max = pmax - pmax % cl;
        sc = dca_scale_log2(p.scale_log2, dc, it.kv_hi);
        folded = sc > 0.f;
    } else {
        folded = !(p.softcap > 0.f) && p.scale_log2 > 0.f;
    }
    /* fp8: k_scale, times what the loads' conversion leaves out, joins the softmax scale */
    [[maybe_unused]] const float kmul = F8 ? attn_kv_scale(p.k_scale_dev, p.k_scale) * ATTN_FP8_UNIT : 1.f;
    const float csc = folded ? (DCA ? sc : F8 ? p.scale_log2 * kmul : p.scale_log2) : 1.f;

    for (int j = 0; j < ntiles; j++) {
        if (j + S - 1 < ntiles) {
            const int st = (j + S - 1) % S;
            ld.issue(p, kvh, ks + st * C::K_ELEMS, vs + st * C::V_ELEMS, lo + (j + S - 1) * BN, hi);
            ld.fetch_slots(p, it.row, lo + (j + S) * BN, hi);
        }
        gc_cp_async_commit();
        gc_cp_async_wait<S - 1>();
        __syncthreads();
        if (!DCA && QREG && j == 0) {
            if constexpr (F8) { /* dims 4 t4 .. 4 t4 + 3 of each 16, as f16 (the K fragments' order) */
#pragma unroll
                for (int kk = 0; kk < DQK / 16; kk++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint2 w = *(const uint2 *)(qs + swz<DQK>(r0 + g + 8 * h, 2 * kk + (t4 >> 1)) + 4 * (t4 & 1));
                        qf[kk][h] = attn_q_f16x2<DT>(w.x);
                        qf[kk][2 + h] = attn_q_f16x2<DT>(w.y);
                    }
            } else {
#pragma unroll
                for (int kk = 0; kk < (QREG ? DQK / 16 : 1); kk++)
                    ldsm_x4(qf[kk], qs + swz<DQK>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
            }
        }
        const uint16_t *kt = ks + (j % S) * C::K_ELEMS;
        const uint16_t *vt = vs + (j % S) * C::V_ELEMS;
        const int t0 = lo + j * BN;

        float s[SN][4];
#pragma unroll
        for (int n = 0; n < SN; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        /* DCA: the parts of the tile's keys for the warp's rows (vlo == vhi: one part) */
        [[maybe_unused]] int vlo = 0, vhi = 0;
        if constexpr (DCA) {
            vlo = dca_part(t0 + BN - 1, c0min, cl);
            vhi = dca_part(t0, c0max, cl);
        }
        if constexpr (F8) { /* matrix i of an ldmatrix: tokens 32 n4 + 8 i .., the 16 dims of step kk */
#pragma unroll
            for (int kk = 0; kk < DQK / 16; kk++)
#pragma unroll
                for (int n4 = 0; n4 < BN / 32; n4++) {
                    uint32_t b[4];
                    ldsm_x4(b, kt + swz8<DQK>(n4 * 32 + lane, kk));
#pragma unroll
                    for (int i = 0; i < 4; i++) mma16816<CT>(s[4 * n4 + i], qf[kk], fp8_pair(b[i], 0), fp8_pair(b[i], 1));
                }
        } else if (!DCA || vlo == vhi) { /* one part: q, or that part's variant */
            const uint16_t *qt = DCA ? qs + vlo * C::Q_ELEMS : qs;
            if (DCA && QREG && cur != vlo) {
#pragma unroll
                for (int kk = 0; kk < (QREG ? DQK / 16 : 1); kk++)
                    ldsm_x4(qf[kk], qt + swz<DQK>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                cur = vlo;
            }
#pragma unroll
            for (int kk = 0; kk < DQK / 16; kk++) {
                uint32_t a[4];
                if (QREG) {
#pragma unroll
                    for (int i = 0; i < 4; i++) a[i] = qf[QREG ? kk : 0][i];
                } else {
                    ldsm_x4(a, qt + swz<DQK>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                }
#pragma unroll
                for (int n2 = 0; n2 < SN / 2; n2++) {
                    uint32_t b[4];
                    ldsm_x4(b, kt + swz<DQK>(n2 * 16 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                    mma16816<DT>(s[2 * n2], a, b[0], b[1]);
                    mma16816<DT>(s[2 * n2 + 1], a, b[2], b[3]);
                }
            }
        } else { /* DCA at a boundary: per 16-key slice, once per part, kept per element */
#pragma unroll
            for (int n2 = 0; n2 < SN / 2; n2++) {
                for (int vv = vlo; vv <= vhi; vv++) {
                    const uint16_t *qt = qs + vv * C::Q_ELEMS;
                    float t[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
                    for (int kk = 0; kk < DQK / 16; kk++) {
                        uint32_t a[4], b[4];
                        ldsm_x4(a, qt + swz<DQK>(r0 + (lane & 15), 2 * kk + (lane >> 4)));
                        ldsm_x4(b, kt + swz<DQK>(n2 * 16 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
                        mma16816<DT>(t[0], a, b[0], b[1]);
                        mma16816<DT>(t[1], a, b[2], b[3]);
                    }
#pragma unroll
                    for (int nb = 0; nb < 2; nb++)
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            const int col = t0 + n2 * 16 + nb * 8 + t4 * 2 + (i & 1);
                            if (dca_part(col, c0r[i >> 1], cl) == vv) s[2 * n2 + nb][i] = t[nb][i];
                        }
                }
            }
        }
        if (!folded) {
#pragma unroll
            for (int n = 0; n < SN; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) s[n][i] = DCA ? s[n][i] * sc : attn_score(p, F8 ? s[n][i] * kmul : s[n][i]);
        }
        /* tree verify: the tile's bits of the thread's two rows from their
         * packed words (bit 2n + e: column t0 + 8n + 2 t4 + e); none on a tile
         * whose words are all ones for every row (tfull: it takes no mask) */
        uint32_t tbits[2] = {0u, 0u};
        bool tfull = false;
        if constexpr (TREE) {
            static_assert(BN <= 64 && 64 % BN == 0, "a tile's columns lie in one packed word");
            if (tree) {
                const int c0 = j * BN; /* the tile's first mask column (lo = kv_lo) */
                tfull = __ldg(p.mask_full + (int64_t)it.b * p.mask_words + (c0 >> 6)) != 0;
                if (!tfull) {
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        if (chi[h] != INT_MIN)
                            tbits[h] = attn_bits_pairs(__ldg(p.mask_bits + mrow[h] + (c0 >> 6)) >> ((c0 & 63) + 2 * t4));
                }
            }
        }
        /* mask only where some (row, column) pair of the tile can be invisible */
        const bool need_mask = (tree && !tfull) || t0 + BN > hi || (causal && t0 + BN - 1 > qmin) ||
                               (window >= 0 && t0 < qmax - window);
        if (need_mask) {
#pragma unroll
            for (int n = 0; n < SN; n++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int col = t0 + n * 8 + t4 * 2 + (i & 1);
                    bool vis = (col < chi[i >> 1]) & (col >= clo[i >> 1]);
                    if constexpr (TREE) /* the mask replaces causality */
                        vis = vis && (!tree || ((tbits[i >> 1] >> (2 * n + (i & 1))) & 1u));
                    s[n][i] = vis ? s[n][i] : ATTN_NEG_INF;
                }
        }
        float mx[2] = {ATTN_NEG_INF, ATTN_NEG_INF};
#pragma unroll
        for (int n = 0; n < SN; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) mx[i >> 1] = fmaxf(mx[i >> 1], s[n][i]);
        float corr[2], mo[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            const float mn = fmaxf(mx[h] * csc, m[h]); /* log2 domain */
            corr[h] = attn_rescale(m[h], mn);
            m[h] = mn;
            l[h] *= corr[h];
            mo[h] = mn == ATTN_NEG_INF ? 0.f : mn; /* nothing visible yet: every score is -inf, exp2 gives 0 */
        }
#pragma unroll
        for (int n = 0; n < SN; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float e = gc_exp2(fmaf(s[n][i], csc, -mo[i >> 1]));
                s[n][i] = e;
                l[i >> 1] += e;
            }
        o_rescale(o, corr);
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t pa[4];
            p_pack<CT>(pa, s[2 * kk], s[2 * kk + 1]);
            if constexpr (F8) { /* matrices: tokens +0 / +8 of dims 32 dp + 0 .. 15, then + 16 .. 31 */
#pragma unroll
                for (int dp = 0; dp < DV / 32; dp++) {
                    uint32_t b[4];
                    ldsm_x4_t(b, vt + swz8<DV>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * dp + (lane >> 4)));
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        /* [tok 2t dim 2g, tok 2t+1 dim 2g, tok 2t dim 2g+1, tok 2t+1 dim 2g+1] */
                        const uint32_t x0 = __byte_perm(b[2 * h], 0u, 0x3120u), x1 = __byte_perm(b[2 * h + 1], 0u, 0x3120u);
                        mma16816<CT>(o[4 * dp + 2 * h], pa, fp8_pair(x0, 0), fp8_pair(x1, 0));     /* even dims */
                        mma16816<CT>(o[4 * dp + 2 * h + 1], pa, fp8_pair(x0, 1), fp8_pair(x1, 1)); /* odd dims */
                    }
                }
            } else {
#pragma unroll
                for (int db = 0; db < DV / 16; db++) {
                    uint32_t b[4];
                    ldsm_x4_t(b, vt + swz<DV>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * db + (lane >> 4)));
                    mma16816<DT>(o[2 * db], pa, b[0], b[1]);
                    mma16816<DT>(o[2 * db + 1], pa, b[2], b[3]);
                }
            }
        }
        __syncthreads(); /* this stage is overwritten by the next issue */
    }
    gc_cp_async_wait<0>();

    /* Normalise (sinks join the denominator) and store this warp's rows; the
     * LSE (p.lse set: a uniform branch) excludes the sinks. */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        if (!DCA && p.lse) {
            const int r = r0 + g + 8 * h, tok = q_tok0 + r;
            if (t4 == 0 && r < nrows && tok < p.num_tokens) p.lse[(int64_t)tok * p.hq + head] = attn_lse_ln(m[h], l[h]);
        }
        float w = 1.f;
        if (!DCA && p.sinks) {
            const float sk = p.sinks[head] * ATTN_LOG2E;
            const float mm = m[h] > sk ? m[h] : sk;
            w = attn_exp2_sub(m[h], mm);
            l[h] = l[h] * w + gc_exp2(sk - mm);
        }
        float inv = l[h] > 0.f ? w / l[h] : 0.f;
        if constexpr (F8) inv *= attn_kv_scale(p.v_scale_dev, p.v_scale) * ATTN_FP8_UNIT; /* O is linear in V */
        const int r = r0 + g + 8 * h, tok = q_tok0 + r;
        if (r >= nrows || tok >= p.num_tokens) continue;
        uint16_t *out = (uint16_t *)p.out + (int64_t)tok * p.o_stride_t + (int64_t)head * p.o_stride_h;
        if constexpr (F8) { /* chunk db: o[2 db] its even dims, o[2 db + 1] its odd ones */
#pragma unroll
            for (int db = 0; db < DV / 16; db++) {
                const float(&e)[4] = o[2 * db], (&d)[4] = o[2 * db + 1];
                *(uint32_t *)(out + db * 16 + t4 * 4) = pack2<DT>(e[2 * h] * inv, d[2 * h] * inv);
                *(uint32_t *)(out + db * 16 + t4 * 4 + 2) = pack2<DT>(e[2 * h + 1] * inv, d[2 * h + 1] * inv);
            }
        } else {
#pragma unroll
            for (int n = 0; n < NB; n++)
                *(uint32_t *)(out + n * 8 + t4 * 2) = pack2<DT>(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
        }
    }
}

template <int DT, int DQK, int DV = DQK, bool RAGGED = false> static int setup(void) {
    int e = (int)cudaFuncSetAttribute(attn_extend_mma_kernel<DT, DQK, DV, RAGGED, false, false>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)extend_mma_cfg<DQK, DV>::SMEM);
    if constexpr (!RAGGED) /* forward_ragged takes no tree mask */
        if (!e)
            e = (int)cudaFuncSetAttribute(attn_extend_mma_kernel<DT, DQK, DV, false, true, false>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, (int)extend_mma_cfg<DQK, DV>::SMEM);
    return e;
}

template <int DT, int DQK, int DV = DQK, bool RAGGED = false>
static int launch(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    constexpr size_t smem = extend_mma_cfg<DQK, DV>::SMEM;
    if constexpr (!RAGGED)
        if (p->mask) {
            attn_extend_mma_kernel<DT, DQK, DV, false, true, false><<<grid, ATTN_EM_THREADS, smem, st>>>(*p, attn_dca{});
            return (int)cudaGetLastError();
        }
    attn_extend_mma_kernel<DT, DQK, DV, RAGGED, false, false><<<grid, ATTN_EM_THREADS, smem, st>>>(*p, attn_dca{});
    return (int)cudaGetLastError();
}

extern "C" int attn_extend_mma_setup(int dtype, int d) { ATTN_DISPATCH(cudaErrorInvalidValue, setup, dtype, d, ); }

extern "C" int attn_launch_extend_mma(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, launch, dtype, d, p, grid_items, (cudaStream_t)stream);
}

/* fp8 e4m3 pools: head dims 64 / 128, with and without a tree mask. */
template <int DT, int D> static int fp8_setup(void) {
    constexpr int smem = (int)extend_mma_cfg<D, D, 1, 1>::SMEM;
    int e = (int)cudaFuncSetAttribute(attn_extend_mma_kernel<DT, D, D, false, false, false, true>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (!e)
        e = (int)cudaFuncSetAttribute(attn_extend_mma_kernel<DT, D, D, false, true, false, true>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    return e;
}

template <int DT, int D> static int fp8_launch(const attn_fwd *p, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items);
    constexpr size_t smem = extend_mma_cfg<D, D, 1, 1>::SMEM;
    if (p->mask)
        attn_extend_mma_kernel<DT, D, D, false, true, false, true><<<grid, ATTN_EM_THREADS, smem, st>>>(*p, attn_dca{});
    else
        attn_extend_mma_kernel<DT, D, D, false, false, false, true><<<grid, ATTN_EM_THREADS, smem, st>>>(*p, attn_dca{});
    return (int)cudaGetLastError();
}

#define ATTN_FP8_DISPATCH(fn, dtype, d, ...)                                                             \
    do {                                                                                                 \
        if ((d) != 64 && (d) != 128) return (int)cudaErrorInvalidValue;                                  \
        if ((dtype) == ATTN_DT_BF16)                                                                     \
            return (d) == 64 ? fn<GC_BF16, 64>(__VA_ARGS__) : fn<GC_BF16, 128>(__VA_ARGS__);             \
        return (d) == 64 ? fn<GC_F16, 64>(__VA_ARGS__) : fn<GC_F16, 128>(__VA_ARGS__);                   \
    } while (0)

extern "C" int attn_extend_mma_fp8_setup(int dtype, int d) { ATTN_FP8_DISPATCH(fp8_setup, dtype, d, ); }

extern "C" int attn_launch_extend_mma_fp8(int dtype, int d, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_FP8_DISPATCH(fp8_launch, dtype, d, p, grid_items, (cudaStream_t)stream);
}

/* forward_ragged's kernels: qk 128 / v 128 and qk 192 / v 128. */
#define ATTN_RAGGED_DISPATCH(fn, dtype, dqk, dv, ...)                                                    \
    do {                                                                                                 \
        if ((dv) != 128 || ((dqk) != 128 && (dqk) != 192)) return (int)cudaErrorInvalidValue;           \
        if ((dtype) == ATTN_DT_BF16)                                                                     \
            return (dqk) == 192 ? fn<GC_BF16, 192, 128, true>(__VA_ARGS__) : fn<GC_BF16, 128, 128, true>(__VA_ARGS__); \
        return (dqk) == 192 ? fn<GC_F16, 192, 128, true>(__VA_ARGS__) : fn<GC_F16, 128, 128, true>(__VA_ARGS__);      \
    } while (0)

extern "C" int attn_ragged_mma_setup(int dtype, int dqk, int dv) { ATTN_RAGGED_DISPATCH(setup, dtype, dqk, dv, ); }

extern "C" int attn_launch_ragged_mma(int dtype, int dqk, int dv, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    ATTN_RAGGED_DISPATCH(launch, dtype, dqk, dv, p, grid_items, (cudaStream_t)stream);
}

template <int DT, int D> static int dca_setup(void) {
    return (int)cudaFuncSetAttribute(attn_extend_mma_kernel<DT, D, D, false, false, true>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)extend_mma_cfg<D, D, 3>::SMEM);
}

template <int DT, int D>
static int dca_launch(const attn_fwd *p, const attn_dca *dc, int block_m, int grid_items, cudaStream_t st) {
    dim3 grid((unsigned)p->hq, (unsigned)grid_items, (unsigned)((block_m + ATTN_EM_BM - 1) / ATTN_EM_BM));
    attn_extend_mma_kernel<DT, D, D, false, false, true><<<grid, ATTN_EM_THREADS, extend_mma_cfg<D, D, 3>::SMEM, st>>>(*p, *dc);
    return (int)cudaGetLastError();
}

extern "C" int attn_dual_chunk_extend_setup(int dtype, int d) {
    ATTN_DISPATCH(cudaErrorInvalidValue, dca_setup, dtype, d, );
}

extern "C" int attn_launch_dual_chunk_extend(int dtype, int d, const attn_fwd *p, const attn_dca *dc, int block_m,
                                             int grid_items, void *stream) {
    if (grid_items <= 0 || block_m <= 0) return 0;
    ATTN_DISPATCH(cudaErrorInvalidValue, dca_launch, dtype, d, p, dc, block_m, grid_items, (cudaStream_t)stream);
}
