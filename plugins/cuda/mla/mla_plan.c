/* mla_plan.c - see mla_plan.h. */
#include "mla_plan.h"

#include <stdio.h>
#include <string.h>

#include "mla_kernels.h"
#include "sgl_attn_abi.h"

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_block(int64_t x) { return cdiv64(x, MLA_KV_BLOCK) * MLA_KV_BLOCK; }

int32_t mla_rows_per_tile(int32_t max_rows) {
    if (max_rows <= 16) return 16;
    if (max_rows <= 32) return 32;
    return 64;
}

mla_plan_caps mla_plan_caps_for(int32_t max_reqs, int32_t max_tokens, int32_t hq,
                                int32_t max_part_rows) {
    mla_plan_caps c;
    /* A request of n rows has ceil(n / tile) tiles: one when n <= 64 (the
     * tile is then >= its rows), else <= n / 64 + 1. */
    int64_t tiles = cdiv64((int64_t)max_tokens * hq, MLA_MAX_TILE_ROWS) + max_reqs;
    /* Items = unsplit tiles + one per split part, and each part holds >= 1 row. */
    int64_t items = tiles + max_part_rows;
    if (items > INT32_MAX / 2) items = INT32_MAX / 2;
    c.max_items = (int32_t)items;
    c.max_comb = (int32_t)(tiles > INT32_MAX / 2 ? INT32_MAX / 2 : tiles);
    c.max_parts = max_part_rows;
    c.max_tokens = max_tokens;
    return c;
}

/* One tile as the chunk search sees it. */
typedef struct tile_len {
    int32_t nrows;
    int32_t keys; /* keys the last row sees: the tile's key range is [0, keys) */
} tile_len;

/* Splits of a tile of `keys` keys for chunk size c: (count, chunk). */
static void split_tile(int64_t keys, int64_t c, int64_t *n, int64_t *chunk) {
    int64_t k = cdiv64(keys, c);
    if (k > MLA_MAX_SPLITS) k = MLA_MAX_SPLITS;
    int64_t ch = round_block(cdiv64(keys, k));
    *n = cdiv64(keys, ch);
    *chunk = ch;
}

/* The chunk size for the tiles: see mla_plan.h. */
static int64_t choose_chunk(const mla_plan_params *p, const tile_len *t, int64_t nt,
                            int64_t max_keys) {
    int64_t no_split = round_block(max_keys);
    if (p->no_split || nt >= p->target_ctas || nt == 0) return no_split;
    int64_t smax = 2 * cdiv64(p->target_ctas, nt) + 1;
    if (smax > MLA_MAX_SPLITS) smax = MLA_MAX_SPLITS;
    int64_t min_chunk = round_block(p->min_chunk > 0 ? p->min_chunk : MLA_KV_BLOCK);
    int64_t best = no_split;
    double best_cost = -1.0;
    for (int64_t s = 1; s <= smax; s++) {
        int64_t c = round_block(cdiv64(max_keys, s));
        if (c < min_chunk) c = min_chunk;
        int64_t items = 0, part_rows = 0, largest = 0;
        for (int64_t i = 0; i < nt; i++) {
            int64_t n, ch;
            split_tile(t[i].keys, c, &n, &ch);
            items += n;
            if (n > 1) part_rows += n * t[i].nrows;
            if (ch > largest) largest = ch;
        }
        if (part_rows > p->max_part_rows) break; /* only grows with s */
        double cost = (double)cdiv64(items, p->target_ctas) * (double)(largest + p->item_overhead);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = c;
        }
        if (c == min_chunk) break;
    }
    return best;
}

/* Block b of the concatenated tiles belongs to share c with
 * floor(c TB / G) <= b < floor((c + 1) TB / G) (TB >= G: no share is empty). */
static int64_t share_of(int64_t b, int64_t tb, int64_t g) { return ((b + 1) * g + tb - 1) / tb - 1; }
static int64_t share_start(int64_t c, int64_t tb, int64_t g) { return c * tb / g; }

/* The balanced plan (mla_plan.h); 0 when it does not apply (the caller then
 * plans as usual), 1 when written, < 0 an error code. */
static int plan_balanced(const mla_plan_params *p, const mla_plan_caps *caps, const int32_t *q_len,
                         const int32_t *prefix, int32_t bs, mla_item *items, mla_comb *comb, int64_t *n_items_out,
                         int64_t *n_comb_out) {
    const int64_t g = p->target_ctas, hq = p->hq, bm = p->rows_per_tile;
    if (g < 1 || g > MLA_BALANCE_MAX_CTAS) return 0;
    int64_t tb = 0;
    for (int32_t b = 0; b < bs; b++) {
        const int64_t rows = (int64_t)q_len[b] * hq;
        for (int64_t r0 = 0; r0 < rows; r0 += bm) {
            const int64_t nr = rows - r0 < bm ? rows - r0 : bm;
            tb += cdiv64(prefix[b] + (r0 + nr - 1) / hq + 1, MLA_KV_BLOCK);
        }
    }
    /* shares below min_chunk keys: an item's start would cost more than it saves */
    const int64_t min_blocks = cdiv64(p->min_chunk > 0 ? p->min_chunk : MLA_KV_BLOCK, MLA_KV_BLOCK);
    if (tb < g * min_blocks) return 0;
    /* items per share: 1 + the tile starts strictly inside it; splits and partial rows per tile */
    int32_t cnt[MLA_BALANCE_MAX_CTAS], slot[MLA_BALANCE_MAX_CTAS];
    for (int64_t c = 0; c < g; c++) cnt[c] = 1;
    int64_t gpos = 0, n_items = 0, n_comb = 0, parts = 0;
    for (int32_t b = 0; b < bs; b++) {
        const int64_t rows = (int64_t)q_len[b] * hq;
        for (int64_t r0 = 0; r0 < rows; r0 += bm) {
            const int64_t nr = rows - r0 < bm ? rows - r0 : bm;
            const int64_t blocks = cdiv64(prefix[b] + (r0 + nr - 1) / hq + 1, MLA_KV_BLOCK);
            const int64_t c0 = share_of(gpos, tb, g), c1 = share_of(gpos + blocks - 1, tb, g);
            if (gpos > share_start(c0, tb, g)) cnt[c0]++;
            const int64_t nsplit = c1 - c0 + 1;
            if (nsplit > MLA_MAX_SPLITS) return 0;
            if (nsplit > 1) parts += nsplit * nr, n_comb++;
            n_items += nsplit;
            gpos += blocks;
        }
    }
    int32_t lo = cnt[0], hi = cnt[0];
    for (int64_t c = 1; c < g; c++) lo = cnt[c] < lo ? cnt[c] : lo, hi = cnt[c] > hi ? cnt[c] : hi;
    if (hi > lo + 1 || n_items > caps->max_items || n_comb > caps->max_comb || parts > caps->max_parts) return 0;
    /* shares with lo + 1 items take the low CTA numbers: the last round is items lo G .. n_items - 1 */
    int64_t n_hi = 0;
    for (int64_t c = 0; c < g; c++) n_hi += cnt[c] > lo;
    for (int64_t c = 0, h = 0, l = 0; c < g; c++) slot[c] = (int32_t)(cnt[c] > lo ? h++ : n_hi + l++);
    for (int64_t c = 0; c < g; c++) cnt[c] = 0; /* now: the next item of share c */
    gpos = 0, n_comb = 0, parts = 0;
    int64_t q_start = 0, written = 0;
    for (int32_t b = 0; b < bs; b++) {
        const int64_t rows = (int64_t)q_len[b] * hq;
        for (int64_t r0 = 0; r0 < rows; r0 += bm) {
            const int64_t nr = rows - r0 < bm ? rows - r0 : bm;
            const int64_t keys = prefix[b] + (r0 + nr - 1) / hq + 1, blocks = cdiv64(keys, MLA_KV_BLOCK);
            const int64_t c0 = share_of(gpos, tb, g), c1 = share_of(gpos + blocks - 1, tb, g);
            const int64_t nsplit = c1 - c0 + 1, part0 = parts;
            if (nsplit > 1) {
                comb[n_comb].q_row0 = (int32_t)(q_start * hq + r0);
                comb[n_comb].nrows = (int32_t)nr;
                comb[n_comb].part0 = (int32_t)part0;
                comb[n_comb].nsplit = (int32_t)nsplit;
                n_comb++;
                parts += nsplit * nr;
            }
            for (int64_t c = c0, ps = gpos, sp = 0; c <= c1; c++, sp++) {
                const int64_t e = share_start(c + 1, tb, g), pe = e < gpos + blocks ? e : gpos + blocks;
                const int64_t pos = (int64_t)cnt[c]++ * g + slot[c];
                if (pos >= n_items) return SGL_ATTN_E_INTERNAL; /* cannot happen: counted above */
                mla_item *it = &items[pos];
                it->b = b;
                it->row0 = (int32_t)r0;
                it->nrows = (int32_t)nr;
                it->kv_begin = (int32_t)((ps - gpos) * MLA_KV_BLOCK);
                it->kv_end = (int32_t)((pe - gpos) * MLA_KV_BLOCK < keys ? (pe - gpos) * MLA_KV_BLOCK : keys);
                it->part = nsplit > 1 ? (int32_t)(part0 + sp * nr) : -1;
                it->q_row0 = (int32_t)(q_start * hq + r0);
                it->key_base = prefix[b];
                written++;
                ps = pe;
            }
            gpos += blocks;
        }
        q_start += q_len[b];
    }
    if (written != n_items) return SGL_ATTN_E_INTERNAL;
    *n_items_out = n_items;
    *n_comb_out = n_comb;
    return 1;
}

int mla_plan_build(const mla_plan_params *p, const mla_plan_caps *caps, const int32_t *q_len,
                   const int32_t *prefix, int32_t bs, int32_t num_tokens, void *buf, char *err,
                   size_t err_size) {
    if (p->hq < 1 || (p->rows_per_tile != 16 && p->rows_per_tile != 32 && p->rows_per_tile != 64)) {
        snprintf(err, err_size, "plan: hq %d / rows_per_tile %d out of range", p->hq,
                 p->rows_per_tile);
        return SGL_ATTN_E_INVALID;
    }
    if (bs < 0 || num_tokens < 0 || num_tokens > caps->max_tokens) {
        snprintf(err, err_size, "num_tokens %d is outside 0..%d (max_tokens given at create)",
                 num_tokens, caps->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    int64_t tokens = 0;
    for (int32_t b = 0; b < bs; b++) {
        if (q_len[b] < 0 || prefix[b] < 0 ||
            (int64_t)q_len[b] + prefix[b] > (int64_t)p->max_context) {
            snprintf(err, err_size,
                     "request %d: %d new token(s) after a prefix of %d: expected both >= 0 and "
                     "their sum (the sequence length) <= %d (req_to_token columns)",
                     b, q_len[b], prefix[b], p->max_context);
            return SGL_ATTN_E_INVALID;
        }
        tokens += q_len[b];
    }
    if (tokens != num_tokens) {
        snprintf(err, err_size,
                 "the requests' new tokens add up to %lld but the batch has num_tokens = %d",
                 (long long)tokens, num_tokens);
        return SGL_ATTN_E_INVALID;
    }

    mla_plan_layout lay = mla_plan_layout_of(caps);
    unsigned char *base = (unsigned char *)buf;
    mla_plan_hdr *hdr = (mla_plan_hdr *)base;
    mla_item *items = (mla_item *)(base + lay.items);
    mla_comb *comb = (mla_comb *)(base + lay.comb);
    mla_tok *toks = (mla_tok *)(base + lay.toks);
    memset(hdr, 0, sizeof *hdr);

    /* Tokens, and the tiles' key ranges (kept in the items array for now:
     * the search needs only (nrows, keys); items are written after). */
    const int64_t hq = p->hq, bm = p->rows_per_tile;
    int64_t nt = 0, max_keys = 0, tok = 0;
    for (int32_t b = 0; b < bs; b++) {
        for (int32_t t = 0; t < q_len[b]; t++, tok++) {
            toks[tok].b = b;
            toks[tok].n_keys = prefix[b] + t + 1;
        }
        int64_t rows = (int64_t)q_len[b] * hq;
        nt += cdiv64(rows, bm);
    }
    if (nt > caps->max_comb) {
        snprintf(err, err_size, "plan: %lld tiles exceed the %d planned for at create",
                 (long long)nt, caps->max_comb);
        return SGL_ATTN_E_INVALID;
    }
    /* The search's scratch: the comb array has room for every tile. */
    tile_len *tl = (tile_len *)comb;
    _Static_assert(sizeof(tile_len) <= sizeof(mla_comb), "scratch fits in the comb array");
    nt = 0;
    for (int32_t b = 0; b < bs; b++) {
        int64_t rows = (int64_t)q_len[b] * hq;
        for (int64_t r0 = 0; r0 < rows; r0 += bm) {
            int64_t nr = rows - r0 < bm ? rows - r0 : bm;
            int64_t keys = prefix[b] + (r0 + nr - 1) / hq + 1;
            tl[nt].nrows = (int32_t)nr;
            tl[nt].keys = (int32_t)keys;
            if (keys > max_keys) max_keys = keys;
            nt++;
        }
    }
    if (p->balanced && !p->no_split && nt < p->target_ctas) {
        int64_t bi = 0, bc = 0;
        const int rc = plan_balanced(p, caps, q_len, prefix, bs, items, comb, &bi, &bc);
        if (rc < 0) {
            snprintf(err, err_size, "plan: balanced plan inconsistent (internal error)");
            return rc;
        }
        if (rc == 1) {
            hdr->n_items = (int32_t)bi;
            hdr->n_comb = (int32_t)bc;
            hdr->n_tokens = num_tokens;
            hdr->bs = bs;
            hdr->rows_per_tile = p->rows_per_tile;
            hdr->hq = p->hq;
            return SGL_ATTN_OK;
        }
        /* 0: not applicable; nothing was written (the tile list in comb is intact) */
    }
    int64_t chunk = choose_chunk(p, tl, nt, max_keys);

    /* Items in (request, split, tile) order, so the tiles of one request
     * that read the same keys run side by side and share them in L2. */
    int64_t n_items = 0, n_comb = 0, part_rows = 0, q_start = 0;
    for (int32_t b = 0; b < bs; b++) {
        int64_t rows = (int64_t)q_len[b] * hq;
        int64_t ntile_b = cdiv64(rows, bm);
        /* Split counts of this request's tiles (the last tile sees the most keys). */
        int64_t max_n = 0;
        for (int64_t ti = 0; ti < ntile_b; ti++) {
            int64_t r0 = ti * bm, nr = rows - r0 < bm ? rows - r0 : bm;
            int64_t keys = prefix[b] + (r0 + nr - 1) / hq + 1, n, ch;
            split_tile(keys, chunk, &n, &ch);
            if (n > max_n) max_n = n;
        }
        int64_t comb0 = n_comb;
        for (int64_t ti = 0; ti < ntile_b; ti++) {
            int64_t r0 = ti * bm, nr = rows - r0 < bm ? rows - r0 : bm;
            int64_t keys = prefix[b] + (r0 + nr - 1) / hq + 1, n, ch;
            split_tile(keys, chunk, &n, &ch);
            if (n > 1) {
                if (n_comb >= caps->max_comb || part_rows + n * nr > caps->max_parts) {
                    snprintf(err, err_size, "plan: partial buffers (%d rows) too small",
                             caps->max_parts);
                    return SGL_ATTN_E_INVALID;
                }
                comb[n_comb].q_row0 = (int32_t)(q_start * hq + r0);
                comb[n_comb].nrows = (int32_t)nr;
                comb[n_comb].part0 = (int32_t)part_rows;
                comb[n_comb].nsplit = (int32_t)n;
                n_comb++;
                part_rows += n * nr;
            }
        }
        /* Emit split-major: for s, for tile. */
        for (int64_t s = 0; s < max_n; s++) {
            int64_t ci = comb0;
            for (int64_t ti = 0; ti < ntile_b; ti++) {
                int64_t r0 = ti * bm, nr = rows - r0 < bm ? rows - r0 : bm;
                int64_t keys = prefix[b] + (r0 + nr - 1) / hq + 1, n, ch;
                split_tile(keys, chunk, &n, &ch);
                int64_t part_base = -1;
                if (n > 1) part_base = comb[ci++].part0;
                if (s >= n) continue;
                if (n_items >= caps->max_items) {
                    snprintf(err, err_size, "plan: more than %d work items", caps->max_items);
                    return SGL_ATTN_E_INVALID;
                }
                mla_item *it = &items[n_items++];
                it->b = b;
                it->row0 = (int32_t)r0;
                it->nrows = (int32_t)nr;
                it->kv_begin = (int32_t)(s * ch);
                it->kv_end = (int32_t)((s + 1) * ch < keys ? (s + 1) * ch : keys);
                it->part = n > 1 ? (int32_t)(part_base + s * nr) : -1;
                it->q_row0 = (int32_t)(q_start * hq + r0);
                it->key_base = prefix[b];
            }
        }
        q_start += q_len[b];
    }
    hdr->n_items = (int32_t)n_items;
    hdr->n_comb = (int32_t)n_comb;
    hdr->n_tokens = num_tokens;
    hdr->bs = bs;
    hdr->rows_per_tile = p->rows_per_tile;
    hdr->hq = p->hq;
    return SGL_ATTN_OK;
}

/* TMA boxes are min(page, 64) rows of one page, 1024-byte aligned in smem.
 * The wgmma kernels hold up to 4 boxes a block (page 16 and up); narrow 8. */
static int page_fits(int32_t kernel, int32_t page) {
    const int pow_ok = page == 16 || page == 32 || (page > 0 && page % 64 == 0);
    return kernel == MLA_KERNEL_NARROW ? pow_ok || page == 8 : pow_ok;
}

int32_t mla_resolve_kernel(int32_t pref, int32_t q_dt, int32_t kv_dt, int32_t page, int32_t rows,
                           int32_t extend, int32_t sm_major, const mla_kernel_policy *pol) {
    if (kv_dt == MLA_DT_FP8 || q_dt != kv_dt || pref == MLA_KERNEL_SIMPLE) return MLA_KERNEL_SIMPLE;
    const uint32_t avail = pol ? pol->avail : 0;
#define TMA_OK(k) ((avail >> (k) & 1u) && sm_major == 9 && q_dt == MLA_DT_BF16 && page_fits((k), page))
    if (pref == MLA_KERNEL_NARROW && TMA_OK(MLA_KERNEL_NARROW) && rows <= 32 && !extend) return MLA_KERNEL_NARROW;
    if (pref == MLA_KERNEL_WGMMA || pref == MLA_KERNEL_WGMMA0 || pref == MLA_KERNEL_WGMMA2 ||
        pref == MLA_KERNEL_WGMMA3 || pref == MLA_KERNEL_WGMMA4 || pref == MLA_KERNEL_WGMMA5)
        return TMA_OK(pref) ? pref : MLA_KERNEL_MMA;
    if (pref == MLA_KERNEL_MMA) return MLA_KERNEL_MMA;
    /* auto (and narrow where it does not apply): 64-row tiles need >= 64 rows
     * a request; below that the 16/32-row tiles waste no tensor-core work. */
    const int32_t wide = pol ? pol->auto_wide : MLA_KERNEL_MMA, thin = pol ? pol->auto_narrow : MLA_KERNEL_MMA;
    if (rows >= 64)
        return (wide == MLA_KERNEL_WGMMA || wide == MLA_KERNEL_WGMMA0 || wide == MLA_KERNEL_WGMMA2 ||
                wide == MLA_KERNEL_WGMMA3 || wide == MLA_KERNEL_WGMMA4 || wide == MLA_KERNEL_WGMMA5) &&
                       TMA_OK(wide)
                   ? wide
                   : MLA_KERNEL_MMA;
    if (rows <= 32 && !extend && thin == MLA_KERNEL_NARROW && TMA_OK(MLA_KERNEL_NARROW)) return MLA_KERNEL_NARROW;
    return MLA_KERNEL_MMA;
#undef TMA_OK
}
