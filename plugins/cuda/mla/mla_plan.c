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

/* Keys the last row of a tile (rows r0 .. r0 + nr - 1 of a request) sees:
 * its key range is [0, that). */
static int64_t tile_keys(const mla_plan_params *p, int64_t prefix, int64_t q_len, int64_t r0, int64_t nr) {
    return p->tree ? prefix + q_len : prefix + (r0 + nr - 1) / p->hq + 1;
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

    /* Tokens, and the number of tiles. */
    const int64_t hq = p->hq, bm = p->rows_per_tile;
    int64_t nt = 0, max_keys = 0, tok = 0;
    for (int32_t b = 0; b < bs; b++) {
        for (int32_t t = 0; t < q_len[b]; t++, tok++) {
            toks[tok].b = b;
            toks[tok].n_keys = p->tree ? prefix[b] + q_len[b] : prefix[b] + t + 1;
            toks[tok].j = t;
        }
        int64_t rows = (int64_t)q_len[b] * hq;
        nt += cdiv64(rows, bm);
    }
    if (nt > caps->max_comb) {
        snprintf(err, err_size, "plan: %lld tiles exceed the %d planned for at create",
                 (long long)nt, caps->max_comb);
        return SGL_ATTN_E_INVALID;
    }
    /* The tiles' key ranges, for the chunk search (it needs only (nrows,
     * keys); items are written after), in the comb array: it has room for
     * every tile and is written only after the search. */
    tile_len *tl = (tile_len *)comb;
    _Static_assert(sizeof(tile_len) <= sizeof(mla_comb), "scratch fits in the comb array");
    nt = 0;
    for (int32_t b = 0; b < bs; b++) {
        int64_t rows = (int64_t)q_len[b] * hq;
        for (int64_t r0 = 0; r0 < rows; r0 += bm) {
            int64_t nr = rows - r0 < bm ? rows - r0 : bm;
            int64_t keys = tile_keys(p, prefix[b], q_len[b], r0, nr);
            tl[nt].nrows = (int32_t)nr;
            tl[nt].keys = (int32_t)keys;
            if (keys > max_keys) max_keys = keys;
            nt++;
        }
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
            int64_t keys = tile_keys(p, prefix[b], q_len[b], r0, nr), n, ch;
            split_tile(keys, chunk, &n, &ch);
            if (n > max_n) max_n = n;
        }
        int64_t comb0 = n_comb;
        for (int64_t ti = 0; ti < ntile_b; ti++) {
            int64_t r0 = ti * bm, nr = rows - r0 < bm ? rows - r0 : bm;
            int64_t keys = tile_keys(p, prefix[b], q_len[b], r0, nr), n, ch;
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
                int64_t keys = tile_keys(p, prefix[b], q_len[b], r0, nr), n, ch;
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
                it->key_base = p->tree ? prefix[b] + q_len[b] - 1 : prefix[b];
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

int32_t mla_resolve_kernel(int32_t pref, int32_t q_dt, int32_t kv_dt, int32_t page, int32_t rows,
                           int32_t wide_ok) {
    if (kv_dt == MLA_DT_FP8 || q_dt != kv_dt || pref == MLA_KERNEL_SIMPLE) return MLA_KERNEL_SIMPLE;
    if (pref == MLA_KERNEL_MMA) return MLA_KERNEL_MMA;
    /* TMA boxes are min(page, 64) rows of one page, 1024-byte aligned in
     * shared memory; the wide kernel holds up to 4 boxes a 64-key block */
    const int page_ok = page == 16 || page == 32 || (page > 0 && page % 64 == 0);
    const int wide = wide_ok && q_dt == MLA_DT_BF16 && page_ok;
    if (pref == MLA_KERNEL_WIDE) return wide ? MLA_KERNEL_WIDE : MLA_KERNEL_MMA;
    return wide && rows >= 64 ? MLA_KERNEL_WIDE : MLA_KERNEL_MMA;
}
