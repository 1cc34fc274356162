/* validate_batch.c - init_forward_metadata's batch, checked before the inner
 * sees it: counts against create's limits, every index tensor's shape, and,
 * where the values are in host memory, every length, row and slot.
 *
 * Device-resident index tensors cannot be read without a device->host copy,
 * which the forward path never makes: their values are checked through the
 * *_cpu mirrors when given, and req_to_token / req_pool_indices /
 * out_cache_loc on a device are checked by shape and dtype only. */
#include <stdio.h>
#include <string.h>

#include "validate_internal.h"

static const char *mode_name(int32_t m) {
    switch (m) {
    case SGL_ATTN_MODE_IDLE:
        return "idle";
    case SGL_ATTN_MODE_EXTEND:
        return "extend";
    case SGL_ATTN_MODE_DECODE:
        return "decode";
    case SGL_ATTN_MODE_TARGET_VERIFY:
        return "target_verify";
    case SGL_ATTN_MODE_DRAFT_EXTEND:
        return "draft_extend";
    default:
        return "?";
    }
}

/* Extend and draft extend: lengths from extend_seq_lens, through forward_extend. */
static int is_ext(int32_t m) {
    return m == SGL_ATTN_MODE_EXTEND || m == SGL_ATTN_MODE_DRAFT_EXTEND;
}

static int page_size_ok(const sgl_attn_caps *caps, int32_t ps) {
    if (caps->n_page_sizes > 0) {
        uint32_t n = caps->n_page_sizes < SGL_ATTN_MAX_LIST ? caps->n_page_sizes : SGL_ATTN_MAX_LIST;
        for (uint32_t i = 0; i < n; i++)
            if (caps->page_sizes[i] == (uint32_t)ps) return 1;
        return 0;
    }
    return caps->page_size_max == 0 || (uint32_t)ps <= caps->page_size_max;
}

/* A [bs] index tensor: present (when required), right shape, on the call's
 * device or, for a mirror, in host memory. */
static int check_vec(vl_ctx *c, const DLTensor *t, const char *name, int64_t n, const char *dims,
                     int required, int host) {
    if (!t) return required ? vl_fail(c, "%s is NULL", name) : SGL_ATTN_OK;
    vl_tspec s = {name, dims, 1, {n, 0, 0}, 0, 0, host, 0};
    return vl_check_tensor(c, t, &s);
}

/* The readable one of a device tensor and its host mirror (NULL: none). */
static const DLTensor *readable(const DLTensor *dev, const DLTensor *mirror, const char **name,
                                const char *dev_name, const char *mirror_name) {
    if (dev && vl_host_readable(dev)) {
        *name = dev_name;
        return dev;
    }
    if (mirror) {
        *name = mirror_name;
        return mirror;
    }
    return NULL;
}

/* A device tensor and its mirror, both host-readable, must agree. */
static int mirrors_agree(vl_ctx *c, const DLTensor *dev, const DLTensor *mirror, const char *dev_name,
                         const char *mirror_name, int32_t bs) {
    if (!dev || !mirror || !vl_host_readable(dev)) return SGL_ATTN_OK;
    for (int32_t i = 0; i < bs; i++) {
        int64_t a = vl_idx1(dev, i), m = vl_idx1(mirror, i);
        if (a != m)
            return vl_fail(c, "%s[%d] = %lld but %s[%d] = %lld: the host mirror disagrees", mirror_name,
                           (int)i, (long long)m, dev_name, (int)i, (long long)a);
    }
    return SGL_ATTN_OK;
}

static void note_slot(vl_slot_fact *f, int64_t slot, const char *fmt_name, int64_t r, int64_t col,
                      int two_d) {
    if (slot <= f->value) return;
    f->value = slot;
    if (two_d)
        snprintf(f->where, sizeof f->where, "%s[%lld][%lld]", fmt_name, (long long)r, (long long)col);
    else
        snprintf(f->where, sizeof f->where, "%s[%lld]", fmt_name, (long long)r);
}

/* Counts and modes: everything that needs no tensor. */
static int check_counts(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt) {
    if (bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0)
        return vl_fail(c, "batch->struct_size = %u is smaller than the ABI 1.0 batch (%zu bytes)",
                       (unsigned)bt->struct_size, (size_t)SGL_ATTN_BATCH_SIZE_V1_0);
    int32_t m = bt->forward_mode;
    if (m < SGL_ATTN_MODE_IDLE || m > SGL_ATTN_MODE_DRAFT_EXTEND)
        return vl_fail(c, "batch->forward_mode = %d is not a forward mode (0 idle .. 3 target_verify, 4 draft "
                          "extend)",
                       (int)m);
    /* ABI 1.2 batch fields: each only to a backend whose caps claim it. */
    const struct { const DLTensor *t; const char *name; uint32_t feat; const char *feat_name; } v12[] = {
        {SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask), "custom_mask", SGL_ATTN_FEAT_TREE_MASK, "TREE_MASK"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table), "page_table", SGL_ATTN_FEAT_PAGE_TABLE, "PAGE_TABLE"},
        {SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc), "encoder_out_cache_loc",
         SGL_ATTN_FEAT_ENCODER_LOC, "ENCODER_LOC"},
    };
    for (size_t i = 0; i < sizeof v12 / sizeof v12[0]; i++)
        if (v12[i].t && !(b->caps.features & v12[i].feat))
            return vl_fail(c, "batch->%s is set (ABI 1.2) but the backend does not claim SGL_ATTN_FEAT_%s",
                           v12[i].name, v12[i].feat_name);
    if (m == SGL_ATTN_MODE_IDLE) {
        if (bt->batch_size != 0 || bt->num_tokens != 0)
            return vl_fail(c,
                           "batch->forward_mode is idle but batch_size = %d and num_tokens = %d "
                           "(expected 0 and 0)",
                           (int)bt->batch_size, (int)bt->num_tokens);
        return SGL_ATTN_OK;
    }
    if (bt->batch_size < 1 || bt->batch_size > b->max_reqs)
        return vl_fail(c, "batch->batch_size = %d is outside 1..%d (max_reqs given at create)",
                       (int)bt->batch_size, (int)b->max_reqs);
    if (bt->num_tokens < 1 || bt->num_tokens > b->max_tokens)
        return vl_fail(c, "batch->num_tokens = %d is outside 1..%d (max_tokens given at create)",
                       (int)bt->num_tokens, (int)b->max_tokens);
    if (bt->page_size < 1)
        return vl_fail(c, "batch->page_size = %d; expected >= 1", (int)bt->page_size);
    if (!page_size_ok(&b->caps, bt->page_size))
        return vl_fail(c, "batch->page_size = %d is not a page size the backend claims (%s %u)",
                       (int)bt->page_size, b->caps.n_page_sizes ? "list of" : "max",
                       b->caps.n_page_sizes ? (unsigned)b->caps.n_page_sizes
                                            : (unsigned)b->caps.page_size_max);
    uint32_t need = m == SGL_ATTN_MODE_EXTEND ? SGL_ATTN_FEAT_EXTEND : SGL_ATTN_FEAT_DECODE;
    if (m == SGL_ATTN_MODE_TARGET_VERIFY) need = SGL_ATTN_FEAT_SPEC_DECODE;
    if (m == SGL_ATTN_MODE_DRAFT_EXTEND) need = SGL_ATTN_FEAT_DRAFT_EXTEND;
    if (!(b->caps.features & need))
        return vl_fail(c, "batch->forward_mode = %s, which the backend does not claim to serve",
                       mode_name(m));
    if (is_ext(m) && b->model.is_mla && !(b->caps.features & SGL_ATTN_FEAT_MLA_EXTEND))
        return vl_fail(c, "batch->forward_mode = %s on an MLA model; the backend does not "
                          "claim MLA extend", mode_name(m));
    if (!is_ext(m)) {
        if (bt->tokens_per_req < 1)
            return vl_fail(c, "batch->tokens_per_req = %d; expected >= 1 in %s",
                           (int)bt->tokens_per_req, mode_name(m));
        if (m == SGL_ATTN_MODE_DECODE && bt->tokens_per_req > 1 &&
            !(b->caps.features & SGL_ATTN_FEAT_SPEC_DECODE))
            return vl_fail(c,
                           "batch->tokens_per_req = %d in decode; the backend does not claim "
                           "several query tokens per request",
                           (int)bt->tokens_per_req);
        int64_t t = (int64_t)bt->batch_size * bt->tokens_per_req;
        if (t != bt->num_tokens)
            return vl_fail(c, "batch->num_tokens = %d but batch_size * tokens_per_req = %d * %d = %lld",
                           (int)bt->num_tokens, (int)bt->batch_size, (int)bt->tokens_per_req,
                           (long long)t);
    }
    return SGL_ATTN_OK;
}

/* ABI 1.2 batch tensors (NULL when the caller's struct predates them). */
static const DLTensor *page_table(const sgl_attn_batch *bt) {
    return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
}
static const DLTensor *custom_mask(const sgl_attn_batch *bt) {
    return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask);
}
static const DLTensor *mask_indptr(const sgl_attn_batch *bt) {
    return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, mask_indptr);
}
static const DLTensor *enc_loc(const sgl_attn_batch *bt) {
    return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc);
}

/* Columns of a request's row: req_to_token's, or the page table's pages. */
static int64_t row_cols(const sgl_attn_batch *bt) {
    const DLTensor *pt = page_table(bt);
    return pt ? pt->shape[1] * bt->page_size : bt->req_to_token->shape[1];
}

/* Tree verify's mask: 1-D, one byte per entry (uint8 or DLPack's bool, code 6). */
static int check_mask_shapes(vl_ctx *c, const sgl_attn_batch *bt) {
    const DLTensor *m = custom_mask(bt), *ip = mask_indptr(bt);
    if (!m && !ip) return SGL_ATTN_OK;
    if (!m || !ip)
        return vl_fail(c, "batch->%s is set without batch->%s; tree verify needs both", m ? "custom_mask" : "mask_indptr",
                       m ? "mask_indptr" : "custom_mask");
    if (bt->forward_mode != SGL_ATTN_MODE_TARGET_VERIFY)
        return vl_fail(c, "batch->custom_mask is set in forward_mode %d; it is a target-verify (3) input",
                       (int)bt->forward_mode);
    const char *bad = NULL;
    if (m->ndim != 1 || !m->shape) bad = "it is not 1-D";
    else if (!((m->dtype.code == kDLUInt || m->dtype.code == 6) && m->dtype.bits == 8 && m->dtype.lanes == 1))
        bad = "its dtype is not uint8 or bool";
    else if (m->strides && m->shape[0] > 1 && m->strides[0] != 1) bad = "it is not compact";
    else if (!m->data && m->shape[0] > 0) bad = "its data is NULL";
    if (bad) return vl_fail(c, "batch->custom_mask: %s; expected a compact 1-D uint8 / bool tensor", bad);
    return check_vec(c, ip, "batch->mask_indptr", (int64_t)bt->batch_size + 1, "batch_size + 1", 1, 0);
}

/* Shapes of every index tensor the mode uses. */
static int check_shapes(vl_ctx *c, const sgl_attn_batch *bt) {
    int32_t bs = bt->batch_size, m = bt->forward_mode;
    int ext = is_ext(m), rc;
    const DLTensor *pt = page_table(bt);
    if (pt) {
        /* req_to_token and req_pool_indices are not read: not checked */
        vl_tspec s = {"batch->page_table", "batch_size, max_pages", 2, {bs, VL_ANY, 0}, 0, 0, 0, 0};
        if ((rc = vl_check_tensor(c, pt, &s))) return rc;
        if (pt->shape[1] < 1) return vl_fail(c, "batch->page_table has no columns ([%d, 0])", (int)bs);
    } else {
        if (!bt->req_to_token) return vl_fail(c, "batch->req_to_token is NULL (and there is no batch->page_table)");
        vl_tspec rtt = {"batch->req_to_token", "max_reqs, max_context", 2, {VL_ANY, VL_ANY, 0}, 0, 0, 0, 0};
        if ((rc = vl_check_tensor(c, bt->req_to_token, &rtt))) return rc;
        if (bt->req_to_token->shape[0] < 1 || bt->req_to_token->shape[1] < 1)
            return vl_fail(c, "batch->req_to_token is empty ([%lld, %lld])",
                           (long long)bt->req_to_token->shape[0], (long long)bt->req_to_token->shape[1]);
        if ((rc = check_vec(c, bt->req_pool_indices, "batch->req_pool_indices", bs, "batch_size", 1, 0)))
            return rc;
    }
    if ((rc = check_mask_shapes(c, bt))) return rc;
    if (enc_loc(bt)) {
        if (!bt->encoder_lens && !bt->encoder_lens_cpu)
            return vl_fail(c, "batch->encoder_out_cache_loc is set but batch->encoder_lens is NULL");
        if ((rc = check_vec(c, enc_loc(bt), "batch->encoder_out_cache_loc", VL_ANY, "sum of encoder_lens", 1, 0)))
            return rc;
    }
    if ((rc = check_vec(c, bt->seq_lens, "batch->seq_lens", bs, "batch_size", 1, 0))) return rc;
    if ((rc = check_vec(c, bt->extend_prefix_lens, "batch->extend_prefix_lens", bs, "batch_size", ext,
                        0)))
        return rc;
    if ((rc = check_vec(c, bt->extend_seq_lens, "batch->extend_seq_lens", bs, "batch_size", ext, 0)))
        return rc;
    if ((rc = check_vec(c, bt->out_cache_loc, "batch->out_cache_loc", bt->num_tokens, "num_tokens", 1,
                        0)))
        return rc;
    if ((rc = check_vec(c, bt->positions, "batch->positions", bt->num_tokens, "num_tokens", 0, 0)))
        return rc;
    if ((rc = check_vec(c, bt->encoder_lens, "batch->encoder_lens", bs, "batch_size", 0, 0)))
        return rc;
    if ((rc = check_vec(c, bt->state_indices, "batch->state_indices", bs, "batch_size", 0, 0)))
        return rc;
    if ((rc = check_vec(c, bt->seq_lens_cpu, "batch->seq_lens_cpu", bs, "batch_size", 0, 1)))
        return rc;
    if ((rc = check_vec(c, bt->extend_prefix_lens_cpu, "batch->extend_prefix_lens_cpu", bs,
                        "batch_size", 0, 1)))
        return rc;
    if ((rc = check_vec(c, bt->extend_seq_lens_cpu, "batch->extend_seq_lens_cpu", bs, "batch_size", 0,
                        1)))
        return rc;
    if ((rc = check_vec(c, bt->encoder_lens_cpu, "batch->encoder_lens_cpu", bs, "batch_size", 0, 1)))
        return rc;
    return SGL_ATTN_OK;
}

typedef struct lens {
    const DLTensor *seq, *pre, *ext, *enc;
    const char *seq_n, *pre_n, *ext_n, *enc_n;
} lens;

/* Lengths: prefix + new = seq_len, sums, bounds by the row width. */
static int check_lengths(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt, const lens *L) {
    int32_t bs = bt->batch_size, m = bt->forward_mode;
    int64_t cols = row_cols(bt);
    int64_t sum = 0, new_sum = 0;
    for (int32_t i = 0; i < bs; i++) {
        int64_t enc = L->enc ? vl_idx1(L->enc, i) : 0;
        if (enc < 0 || enc > cols)
            return vl_fail(c, "%s[%d] = %lld is outside 0..%lld (%s columns)", L->enc_n, (int)i, (long long)enc,
                           (long long)cols, page_table(bt) ? "page_table" : "req_to_token");
        if (!L->seq) continue;
        int64_t sl = vl_idx1(L->seq, i);
        int64_t least = is_ext(m) ? 1 : bt->tokens_per_req;
        if (sl < least)
            return vl_fail(c, "%s[%d] = %lld; expected >= %lld (it includes the new tokens)", L->seq_n,
                           (int)i, (long long)sl, (long long)least);
        if (sl > b->max_context || enc + sl > cols)
            return vl_fail(c, "%s[%d] = %lld%s does not fit a row of %lld %s (max_context %d)", L->seq_n, (int)i,
                           (long long)sl, enc ? " after the encoder tokens" : "", (long long)cols,
                           page_table(bt) ? "tokens of batch->page_table" : "columns", (int)b->max_context);
        sum += sl;
        if (!is_ext(m)) continue;
        if (L->pre && L->ext) {
            int64_t p = vl_idx1(L->pre, i), e = vl_idx1(L->ext, i);
            if (p < 0) return vl_fail(c, "%s[%d] = %lld is negative", L->pre_n, (int)i, (long long)p);
            if (e < 1)
                return vl_fail(c, "%s[%d] = %lld; expected >= 1 new token", L->ext_n, (int)i,
                               (long long)e);
            /* p and e are >= 0 here and sl <= max_context: compare without overflow. */
            if (p > sl || e != sl - p)
                return vl_fail(c, "%s[%d] + %s[%d] = %lld + %lld != %s[%d] = %lld", L->pre_n, (int)i,
                               L->ext_n, (int)i, (long long)p, (long long)e, L->seq_n, (int)i,
                               (long long)sl);
        }
    }
    if (L->seq && sum != bt->seq_lens_sum)
        return vl_fail(c, "batch->seq_lens_sum = %lld but %s sums to %lld", (long long)bt->seq_lens_sum,
                       L->seq_n, (long long)sum);
    if (is_ext(m) && L->ext) {
        for (int32_t i = 0; i < bs; i++) {
            int64_t e = vl_idx1(L->ext, i);
            if (e < 1 || e > b->max_tokens)
                return vl_fail(c, "%s[%d] = %lld is outside 1..%d (max_tokens)", L->ext_n, (int)i,
                               (long long)e, (int)b->max_tokens);
            new_sum += e;
        }
        if (new_sum != bt->num_tokens)
            return vl_fail(c, "batch->num_tokens = %d but %s sums to %lld", (int)bt->num_tokens,
                           L->ext_n, (long long)new_sum);
    }
    return SGL_ATTN_OK;
}

/* Column of new token j of request i in its row (no encoder columns). */
static int64_t new_token_col(const sgl_attn_batch *bt, const lens *L, int32_t i, int64_t j) {
    if (is_ext(bt->forward_mode)) return vl_idx1(L->pre, i) + j;
    return vl_idx1(L->seq, i) - bt->tokens_per_req + j;
}

/* Slot of column `col` of request i: its req_to_token row, or its page
 * table row (the callers checked that the one read is host-readable). */
static int64_t slot_at(const sgl_attn_batch *bt, int32_t i, int64_t col) {
    const DLTensor *pt = page_table(bt);
    if (pt) return vl_idx2(pt, i, col / bt->page_size) * bt->page_size + col % bt->page_size;
    return vl_idx2(bt->req_to_token, vl_idx1(bt->req_pool_indices, i), col);
}

/* req_to_token's rows: in range, every slot in use >= 0, pages laid out as
 * sglang's paged allocator lays them. */
static int check_rows(vl_ctx *c, const sgl_attn_batch *bt, const lens *L, vl_batch_facts *f) {
    const DLTensor *rtt = bt->req_to_token;
    int32_t bs = bt->batch_size, ps = bt->page_size;
    for (int32_t i = 0; i < bs; i++) {
        int64_t r = vl_idx1(bt->req_pool_indices, i);
        int64_t enc = L->enc ? vl_idx1(L->enc, i) : 0;
        int64_t used = enc + vl_idx1(L->seq, i), prev = -1;
        for (int64_t col = 0; col < used; col++) {
            int64_t s = vl_idx2(rtt, r, col);
            if (s < 0)
                return vl_fail(c, "batch->req_to_token[%lld][%lld] = %lld is a negative slot", (long long)r,
                               (long long)col, (long long)s);
            /* Pages hold consecutive tokens of one request (sglang's
             * paged allocator); encoder rows are laid out apart. */
            if (ps > 1 && !L->enc) {
                if (col % ps == 0 && s % ps != 0)
                    return vl_fail(c,
                                   "batch->req_to_token[%lld][%lld] = %lld starts a page "
                                   "but is not a multiple of page_size %d",
                                   (long long)r, (long long)col, (long long)s, (int)ps);
                if (col % ps != 0 && s != prev + 1)
                    return vl_fail(c,
                                   "batch->req_to_token[%lld][%lld] = %lld; expected %lld "
                                   "(the next slot of the page that holds token %lld)",
                                   (long long)r, (long long)col, (long long)s, (long long)(prev + 1),
                                   (long long)(col - 1));
            }
            prev = s;
            note_slot(&f->max_slot, s, "batch->req_to_token", r, col, 1);
        }
    }
    return SGL_ATTN_OK;
}

/* ABI 1.2 page table: each request's pages in use >= 0, enough columns. */
static int check_pages(vl_ctx *c, const sgl_attn_batch *bt, const lens *L, vl_batch_facts *f) {
    const DLTensor *pt = page_table(bt);
    const int64_t ps = bt->page_size, width = pt->shape[1], page_max = INT64_MAX / ps - 1;
    for (int32_t i = 0; i < bt->batch_size; i++) {
        int64_t used = (L->enc ? vl_idx1(L->enc, i) : 0) + vl_idx1(L->seq, i), np = (used + ps - 1) / ps;
        if (np > width)
            return vl_fail(c, "request %d needs %lld pages (%lld tokens, page_size %lld) but batch->page_table has %lld "
                              "columns",
                           (int)i, (long long)np, (long long)used, (long long)ps, (long long)width);
        for (int64_t j = 0; j < np; j++) {
            int64_t p = vl_idx2(pt, i, j);
            if (p < 0 || p > page_max)
                return vl_fail(c, "batch->page_table[%d][%lld] = %lld is not a page (expected >= 0)", (int)i,
                               (long long)j, (long long)p);
            /* the last slot this page holds for the request */
            int64_t last = ((j + 1) * ps < used ? (j + 1) * ps : used) - 1;
            note_slot(&f->max_slot, p * ps + last % ps, "batch->page_table", i, j, 1);
        }
    }
    return SGL_ATTN_OK;
}

/* Tree verify: request i's mask is its [tokens_per_req, seq_len] block at mask_indptr[i]. */
static int check_mask_values(vl_ctx *c, const sgl_attn_batch *bt, const lens *L) {
    const DLTensor *m = custom_mask(bt), *ip = mask_indptr(bt);
    if (!m || !vl_host_readable(ip) || !L->seq) return SGL_ATTN_OK;
    for (int32_t i = 0; i < bt->batch_size; i++) {
        int64_t a = vl_idx1(ip, i), e = vl_idx1(ip, i + 1), need = (int64_t)bt->tokens_per_req * vl_idx1(L->seq, i);
        if (a < 0 || e - a != need)
            return vl_fail(c,
                           "batch->mask_indptr[%d] = %lld, mask_indptr[%d] = %lld: request %d's mask is %d new tokens x "
                           "%lld %s = %lld entries",
                           (int)i, (long long)a, (int)i + 1, (long long)e, (int)i, (int)bt->tokens_per_req,
                           (long long)vl_idx1(L->seq, i), L->seq_n, (long long)need);
        if (e > m->shape[0])
            return vl_fail(c, "batch->custom_mask has %lld entries but request %d's mask ends at mask_indptr[%d] = %lld",
                           (long long)m->shape[0], (int)i, (int)i + 1, (long long)e);
    }
    return SGL_ATTN_OK;
}

/* Cross attention's encoder slots: encoder token c of request i goes where
 * its row reads it back. */
static int check_enc_loc(vl_ctx *c, const sgl_attn_batch *bt, const lens *L, int rows_ok, vl_batch_facts *f) {
    const DLTensor *el = enc_loc(bt);
    if (!el || !L->enc) return SGL_ATTN_OK;
    int64_t n = 0;
    for (int32_t i = 0; i < bt->batch_size; i++) n += vl_idx1(L->enc, i);
    if (el->shape[0] != n)
        return vl_fail(c, "batch->encoder_out_cache_loc has %lld entries; expected %lld (the sum of %s)",
                       (long long)el->shape[0], (long long)n, L->enc_n);
    if (!vl_host_readable(el)) return SGL_ATTN_OK;
    int64_t e = 0;
    for (int32_t i = 0; i < bt->batch_size; i++)
        for (int64_t col = 0; col < vl_idx1(L->enc, i); col++, e++) {
            int64_t s = vl_idx1(el, e);
            if (s < 0)
                return vl_fail(c, "batch->encoder_out_cache_loc[%lld] = %lld is a negative slot", (long long)e,
                               (long long)s);
            note_slot(&f->max_slot, s, "batch->encoder_out_cache_loc", e, 0, 0);
            if (rows_ok && s != slot_at(bt, i, col))
                return vl_fail(c,
                               "batch->encoder_out_cache_loc[%lld] = %lld but request %d's encoder token %lld is at "
                               "slot %lld (%s)",
                               (long long)e, (long long)s, (int)i, (long long)col, (long long)slot_at(bt, i, col),
                               page_table(bt) ? "batch->page_table" : "batch->req_to_token");
        }
    return SGL_ATTN_OK;
}

/* Rows (or pages), every slot in use, and out_cache_loc against them. */
static int check_slots(vl_ctx *c, const sgl_attn_batch *bt, const lens *L, vl_batch_facts *f) {
    const DLTensor *rtt = bt->req_to_token, *rpi = bt->req_pool_indices, *pt = page_table(bt);
    const DLTensor *ocl = bt->out_cache_loc;
    int32_t bs = bt->batch_size;
    int rows_ok, rc;
    if (pt) {
        rows_ok = vl_host_readable(pt) && L->seq;
        if (rows_ok && (rc = check_pages(c, bt, L, f))) return rc;
    } else {
        rows_ok = vl_host_readable(rpi) && vl_host_readable(rtt) && L->seq;
        int64_t nrows = rtt->shape[0];
        if (vl_host_readable(rpi))
            for (int32_t i = 0; i < bs; i++) {
                int64_t r = vl_idx1(rpi, i);
                if (r < 0 || r >= nrows)
                    return vl_fail(c,
                                   "batch->req_pool_indices[%d] = %lld is outside the %lld rows of "
                                   "req_to_token",
                                   (int)i, (long long)r, (long long)nrows);
            }
        if (rows_ok && (rc = check_rows(c, bt, L, f))) return rc;
    }
    if (rows_ok) f->slots_checked = 1;
    if ((rc = check_mask_values(c, bt, L))) return rc;
    if ((rc = check_enc_loc(c, bt, L, rows_ok, f))) return rc;
    if (!vl_host_readable(ocl)) return SGL_ATTN_OK;
    f->slots_checked = 1;
    for (int32_t t = 0; t < bt->num_tokens; t++) {
        int64_t s = vl_idx1(ocl, t);
        if (s < 0)
            return vl_fail(c, "batch->out_cache_loc[%d] = %lld is a negative slot", (int)t,
                           (long long)s);
        note_slot(&f->max_slot, s, "batch->out_cache_loc", t, 0, 0);
    }
    /* The new tokens' slots must be the ones their rows read back. */
    int ext = is_ext(bt->forward_mode);
    if (!rows_ok || L->enc || (ext && (!L->pre || !L->ext))) return SGL_ATTN_OK;
    int64_t t = 0;
    for (int32_t i = 0; i < bs; i++) {
        int64_t n = ext ? vl_idx1(L->ext, i) : bt->tokens_per_req;
        for (int64_t j = 0; j < n; j++, t++) {
            int64_t s = vl_idx1(ocl, t);
            int64_t col = new_token_col(bt, L, i, j);
            int64_t want = slot_at(bt, i, col);
            if (want != s) {
                if (pt)
                    return vl_fail(c,
                                   "batch->out_cache_loc[%lld] = %lld but batch->page_table gives slot %lld for "
                                   "column %lld of request %d: new token %lld is written where it is not read",
                                   (long long)t, (long long)s, (long long)want, (long long)col, (int)i, (long long)j);
                return vl_fail(c,
                               "batch->out_cache_loc[%lld] = %lld but batch->req_to_token"
                               "[%lld][%lld] = %lld: new token %lld of request %d is "
                               "written where it is not read",
                               (long long)t, (long long)s, (long long)vl_idx1(rpi, i), (long long)col,
                               (long long)want, (long long)j, (int)i);
            }
        }
    }
    return SGL_ATTN_OK;
}

static int check_misc(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt) {
    if (bt->positions && vl_host_readable(bt->positions))
        for (int32_t t = 0; t < bt->num_tokens; t++) {
            int64_t p = vl_idx1(bt->positions, t);
            if (p < 0 || p >= b->max_context)
                return vl_fail(c, "batch->positions[%d] = %lld is outside 0..%d (max_context)", (int)t,
                               (long long)p, (int)b->max_context - 1);
        }
    /* With caller-owned state (ABI 1.2) the slots are the engine's pool's,
     * whose size each linear forward names: bounded there (validate_layer.c). */
    const int64_t top = b->caps.features & SGL_ATTN_FEAT_CALLER_STATE ? INT64_MAX : b->max_reqs;
    if (bt->state_indices && vl_host_readable(bt->state_indices))
        for (int32_t i = 0; i < bt->batch_size; i++) {
            int64_t s = vl_idx1(bt->state_indices, i);
            if (s < -1 || s >= top)
                return vl_fail(c,
                               "batch->state_indices[%d] = %lld is outside -1..%d (the state "
                               "pool's max_reqs slots; -1 = padding)",
                               (int)i, (long long)s, (int)b->max_reqs - 1);
        }
    return SGL_ATTN_OK;
}

int vl_check_batch(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt, vl_batch_facts *f) {
    memset(f, 0, sizeof *f);
    f->max_slot.value = -1;
    if (!bt) return vl_fail(c, "batch is NULL");
    int rc = check_counts(c, b, bt);
    if (rc) return rc;
    f->batch = bt;
    f->forward_mode = bt->forward_mode;
    f->batch_size = bt->batch_size;
    f->num_tokens = bt->num_tokens;
    f->page_size = bt->page_size;
    if (bt->forward_mode == SGL_ATTN_MODE_IDLE) return SGL_ATTN_OK;
    if ((rc = check_shapes(c, bt))) return rc;
    lens L;
    memset(&L, 0, sizeof L);
    L.seq =
        readable(bt->seq_lens, bt->seq_lens_cpu, &L.seq_n, "batch->seq_lens", "batch->seq_lens_cpu");
    L.pre = readable(bt->extend_prefix_lens, bt->extend_prefix_lens_cpu, &L.pre_n,
                     "batch->extend_prefix_lens", "batch->extend_prefix_lens_cpu");
    L.ext = readable(bt->extend_seq_lens, bt->extend_seq_lens_cpu, &L.ext_n, "batch->extend_seq_lens",
                     "batch->extend_seq_lens_cpu");
    L.enc = readable(bt->encoder_lens, bt->encoder_lens_cpu, &L.enc_n, "batch->encoder_lens",
                     "batch->encoder_lens_cpu");
    f->has_encoder = bt->encoder_lens != NULL || bt->encoder_lens_cpu != NULL;
    if ((rc = mirrors_agree(c, bt->seq_lens, bt->seq_lens_cpu, "batch->seq_lens", "batch->seq_lens_cpu",
                            bt->batch_size)) ||
        (rc = mirrors_agree(c, bt->extend_prefix_lens, bt->extend_prefix_lens_cpu,
                            "batch->extend_prefix_lens", "batch->extend_prefix_lens_cpu",
                            bt->batch_size)) ||
        (rc = mirrors_agree(c, bt->extend_seq_lens, bt->extend_seq_lens_cpu, "batch->extend_seq_lens",
                            "batch->extend_seq_lens_cpu", bt->batch_size)) ||
        (rc = mirrors_agree(c, bt->encoder_lens, bt->encoder_lens_cpu, "batch->encoder_lens",
                            "batch->encoder_lens_cpu", bt->batch_size)))
        return rc;
    if ((rc = check_lengths(c, b, bt, &L))) return rc;
    if ((rc = check_slots(c, bt, &L, f))) return rc;
    if ((rc = check_misc(c, b, bt))) return rc;
    f->device_type = c->device_type;
    f->device_id = c->device_id;
    return SGL_ATTN_OK;
}

int vl_check_graph_args(vl_ctx *c, const vl_backend *b, const sgl_attn_graph_args *g) {
    if (!g) return vl_fail(c, "graph args are NULL");
    if (g->struct_size < SGL_ATTN_GRAPH_ARGS_SIZE_V1_0)
        return vl_fail(c, "graph_args->struct_size = %u is smaller than the ABI 1.0 struct (%zu bytes)",
                       (unsigned)g->struct_size, (size_t)SGL_ATTN_GRAPH_ARGS_SIZE_V1_0);
    if (b->graph_max_bs < 1) return vl_fail(c, "called before init_graph_state");
    if (g->batch_size < 1 || g->batch_size > b->graph_max_bs)
        return vl_fail(c, "graph_args->batch_size = %d is outside 1..%d (init_graph_state's max_bs)",
                       (int)g->batch_size, (int)b->graph_max_bs);
    if (g->num_tokens < 1 || g->num_tokens > b->graph_max_tokens)
        return vl_fail(c,
                       "graph_args->num_tokens = %d is outside 1..%d (init_graph_state's "
                       "max_num_tokens)",
                       (int)g->num_tokens, (int)b->graph_max_tokens);
    if (g->forward_mode < SGL_ATTN_MODE_EXTEND || g->forward_mode > SGL_ATTN_MODE_DRAFT_EXTEND)
        return vl_fail(c, "graph_args->forward_mode = %d is not extend, decode, target_verify or draft_extend",
                       (int)g->forward_mode);
    /* a verify batch in a graph: the backend's caps say it captures one */
    if (g->forward_mode == SGL_ATTN_MODE_TARGET_VERIFY && !(b->caps.features & SGL_ATTN_FEAT_GRAPH_VERIFY))
        return vl_fail(c, "graph_args->forward_mode is target_verify but the backend does not claim "
                          "SGL_ATTN_FEAT_GRAPH_VERIFY (graph capture of verify batches)");
    if (!g->batch) return vl_fail(c, "graph_args->batch is NULL");
    if (g->batch->struct_size < SGL_ATTN_BATCH_SIZE_V1_0)
        return vl_fail(c, "graph_args->batch->struct_size = %u is smaller than the ABI 1.0 batch",
                       (unsigned)g->batch->struct_size);
    return SGL_ATTN_OK;
}
