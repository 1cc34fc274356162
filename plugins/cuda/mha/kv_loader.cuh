/*
 * kv_loader.cuh - gathers a tile of ROWS KV tokens through the page table
 * into swizzled shared memory with cp.async (CUDA, SM 8.0+).  Each of NT
 * threads owns one 16-byte chunk column and every (NT / chunks)-th row; the
 * slots of the next tile are read into registers one tile ahead, so their
 * latency hides behind a tile of compute and the copies can be issued at once.
 */
#ifndef SGL_CUDA_ATTN_KV_LOADER_CUH
#define SGL_CUDA_ATTN_KV_LOADER_CUH

#include "mma_sm80.cuh"

template <int D, int ROWS, int NT> struct kv_loader {
    static constexpr int CH = D / 8;
    static constexpr int RSTEP = NT / CH;
    static constexpr int RPT = ROWS / RSTEP;
    static_assert(NT % CH == 0 && ROWS % RSTEP == 0 && RPT >= 1, "tile split");
    int32_t slot[RPT];
    int c, r0;

    GC_DEV kv_loader() : c((int)threadIdx.x % CH), r0((int)threadIdx.x / CH) {}

    /* Slots of the tile starting at column t0 (columns >= end: slot 0, never
     * read).  attn_slot in three passes, so a slot map's loads go out
     * together behind one uniform branch (per slot, its temporaries push the
     * d128 kernel past its register cap). */
    GC_DEV void fetch_slots(const attn_fwd &p, int req_row, int t0, int end) {
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int tok = t0 + r0 + k * RSTEP;
            slot[k] = tok < end ? attn_page_slot(p, __ldg(attn_table_at(p, req_row, tok)), tok) : 0;
        }
        if (p.slot_map.p) {
#pragma unroll
            for (int k = 0; k < RPT; k++) slot[k] = attn_map_slot(p, slot[k]);
        }
#pragma unroll
        for (int k = 0; k < RPT; k++) slot[k] = attn_pool_clamp(p, slot[k]);
    }
    /* cp.async the tile whose slots were fetched; rows past `end` are zero-filled. */
    GC_DEV void issue(const attn_fwd &p, int kvh, uint16_t *ks, uint16_t *vs, int t0, int end) const {
        const uint16_t *kb = (const uint16_t *)p.k_cache + (int64_t)kvh * p.kc_stride_h + c * 8;
        const uint16_t *vb = (const uint16_t *)p.v_cache + (int64_t)kvh * p.vc_stride_h + c * 8;
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int row = r0 + k * RSTEP;
            const bool ok = t0 + row < end;
            gc_cp_async16(ks + swz<D>(row, c), kb + (int64_t)slot[k] * p.kc_stride_s, ok);
            gc_cp_async16(vs + swz<D>(row, c), vb + (int64_t)slot[k] * p.vc_stride_s, ok);
        }
    }
};

/* The mma extend's loader: the same tile split and copies as kv_loader (the
 * mma decode's), but the page-table words of a tile are read raw, all at
 * once and without a branch (a column past `end` reads the last visible one
 * instead), and clamped into the pool only where `issue` uses them, so the
 * loads of tile j + S are in flight together during tile j's compute.
 * (kv_loader's per-row `tok < end ? attn_slot32 : 0` compiles to a branch
 * around each load with the clamp right behind it: one L2 round trip per
 * load, one after the other.) */
template <int D, int ROWS, int NT> struct kv_loader_pf {
    static constexpr int CH = D / 8;
    static constexpr int RSTEP = NT / CH;
    static constexpr int RPT = ROWS / RSTEP;
    static_assert(NT % CH == 0 && ROWS % RSTEP == 0 && RPT >= 1, "tile split");
    int32_t raw[RPT]; /* table words (req_to_token entries or pages), not yet slots */
    int c, r0;

    GC_DEV kv_loader_pf() : c((int)threadIdx.x % CH), r0((int)threadIdx.x / CH) {}

    /* Raw slots of the tile starting at column t0 (columns >= end read column
     * max(end - 1, 0), a column of the row that exists; issue never uses them). */
    GC_DEV void fetch_slots(const attn_fwd &p, int req_row, int t0, int end) {
        const int last = end > 0 ? end - 1 : 0;
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int tok = t0 + r0 + k * RSTEP;
            const int col = tok < end ? tok : last;
            raw[k] = __ldg(attn_table_at(p, req_row, col));
        }
    }
    /* cp.async the fetched tile; rows past `end` are zero-filled (slot 0, as kv_loader). */
    GC_DEV void issue(const attn_fwd &p, int kvh, uint16_t *ks, uint16_t *vs, int t0, int end) const {
        const uint16_t *kb = (const uint16_t *)p.k_cache + (int64_t)kvh * p.kc_stride_h + c * 8;
        const uint16_t *vb = (const uint16_t *)p.v_cache + (int64_t)kvh * p.vc_stride_h + c * 8;
#pragma unroll
        for (int k = 0; k < RPT; k++) {
            const int row = r0 + k * RSTEP;
            const bool ok = t0 + row < end;
            /* the word's page offset, map and clamp here instead of at the load */
            const int64_t slot = ok ? attn_slot_of(p, raw[k], t0 + row) : 0;
            gc_cp_async16(ks + swz<D>(row, c), kb + slot * p.kc_stride_s, ok);
            gc_cp_async16(vs + swz<D>(row, c), vb + slot * p.vc_stride_s, ok);
        }
    }
};

#endif
