/* plan_engine.c - init_forward_metadata's ABI 1.2 batch inputs: page tables
 * (copied here, so a forward never reads the caller's table), tree-verify
 * masks and the encoder slots of cross attention.  Every index is checked
 * here, once per batch; what depends on a layer's pool is checked per
 * forward against the largest slot found (plan_batch.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"

#define WHERE "init_forward_metadata: "
/* DLPack's bool code (kDLBool, 6, newer than the 0.6 header we build with) */
#define CREF_DL_BOOL 6

static int64_t idx_at(const DLTensor *t, int64_t i) { return sgl_sdk_idx(sgl_sdk_data(t), t->dtype.bits == 64, i); }

int64_t cref_plan_slot(const cref_backend *b, const sgl_attn_batch *bt, int64_t i, int64_t c) {
    const cref_req *r = &b->reqs[i];
    if (b->page_size) return b->pages[r->pg0 + c / b->page_size] * b->page_size + c % b->page_size;
    return idx_at(bt->req_to_token, r->row * bt->req_to_token->shape[1] + c);
}

/* The pages of every request, copied; each page checked and the largest
 * slot the batch reads remembered for the pool check. */
int cref_plan_pages(cref_backend *b, const sgl_attn_batch *bt) {
    const DLTensor *pt = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
    b->page_size = 0;
    if (!pt) return SGL_ATTN_OK;
    const int64_t bs = bt->batch_size, ps = bt->page_size;
    int rc = cref_check(b, pt, WHERE "batch.page_table", "batch_size, max_pages", 0, 0, 2, bs, SGL_SDK_ANY, 0);
    if (rc) return rc;
    const int64_t width = pt->shape[1];
    int64_t total = 0;
    for (int64_t i = 0; i < bs; i++) {
        const cref_req *r = &b->reqs[i];
        const int64_t cols = (int64_t)r->enc + r->seq_len, np = (cols + ps - 1) / ps;
        if (np > width) {
            cref_set_error(b,
                           WHERE "request %lld needs %lld pages (encoder_lens %d + seq_lens %d tokens, page_size "
                                 "%lld) but batch.page_table has %lld columns",
                           (long long)i, (long long)np, r->enc, r->seq_len, (long long)ps, (long long)width);
            return SGL_ATTN_E_INVALID;
        }
        total += np;
    }
    if (total > b->pages_cap) {
        int64_t *p = realloc(b->pages, sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
        if (!p) {
            cref_set_error(b, WHERE "out of memory copying %lld page-table entries", (long long)total);
            return SGL_ATTN_E_NOMEM;
        }
        b->pages = p;
        b->pages_cap = total;
    }
    const int64_t page_max = INT64_MAX / ps - 1;
    int64_t k = 0;
    for (int64_t i = 0; i < bs; i++) {
        cref_req *r = &b->reqs[i];
        const int64_t cols = (int64_t)r->enc + r->seq_len, np = (cols + ps - 1) / ps;
        r->pg0 = k;
        for (int64_t j = 0; j < np; j++, k++) {
            const int64_t p = idx_at(pt, i * width + j);
            if (p < 0 || p > page_max) {
                cref_set_error(b, WHERE "batch.page_table[%lld][%lld] = %lld (request %lld); expected a page >= 0",
                               (long long)i, (long long)j, (long long)p, (long long)i);
                return SGL_ATTN_E_INVALID;
            }
            b->pages[k] = p;
            /* the last column this page holds */
            const int64_t last = ((j + 1) * ps < cols ? (j + 1) * ps : cols) - 1;
            const int64_t s = p * ps + last % ps;
            if (s > b->max_slot) {
                b->max_slot = s;
                snprintf(b->max_slot_where, sizeof b->max_slot_where, "page_table[%lld][%lld] = %lld (slot %lld)",
                         (long long)i, (long long)j, (long long)p, (long long)s);
            }
        }
    }
    b->page_size = ps;
    return SGL_ATTN_OK;
}

/* custom_mask: one byte per entry, uint8 or bool, in host memory, compact. */
static int check_mask_tensor(cref_backend *b, const DLTensor *m) {
    const char *bad = NULL;
    if (!m->data) bad = "its data is NULL";
    else if (!sgl_sdk_host_readable(m)) bad = "it is not in host memory";
    else if (m->ndim != 1) bad = "it is not 1-D";
    else if (!((m->dtype.code == kDLUInt || m->dtype.code == CREF_DL_BOOL) && m->dtype.bits == 8 && m->dtype.lanes == 1))
        bad = "its dtype is not uint8 or bool";
    else if (m->strides && m->shape[0] > 1 && m->strides[0] != 1) bad = "it is not compact";
    if (!bad) return SGL_ATTN_OK;
    cref_set_error(b, WHERE "batch.custom_mask: %s; expected a compact 1-D uint8 / bool host tensor", bad);
    return SGL_ATTN_E_INVALID;
}

/* Tree verify: request i's mask is [n_new, seq_len] from mask_indptr[i]. */
static int plan_mask(cref_backend *b, const sgl_attn_batch *bt) {
    const DLTensor *m = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask);
    const DLTensor *ip = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, mask_indptr);
    if (!m && !ip) return SGL_ATTN_OK;
    if (!m || !ip) {
        cref_set_error(b, WHERE "batch.%s is set without batch.%s; tree verify needs both", m ? "custom_mask" : "mask_indptr",
                       m ? "mask_indptr" : "custom_mask");
        return SGL_ATTN_E_INVALID;
    }
    if (bt->forward_mode != SGL_ATTN_MODE_TARGET_VERIFY) {
        cref_set_error(b, WHERE "batch.custom_mask is set in forward_mode %d; it is a target-verify (3) input",
                       bt->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    int rc = check_mask_tensor(b, m);
    if (rc) return rc;
    const int64_t bs = bt->batch_size;
    if ((rc = cref_check(b, ip, WHERE "batch.mask_indptr", "batch_size + 1", 0, 0, 1, bs + 1, 0, 0))) return rc;
    const int64_t len = m->shape[0];
    for (int64_t i = 0; i < bs; i++) {
        cref_req *r = &b->reqs[i];
        const int64_t a = idx_at(ip, i), e = idx_at(ip, i + 1), need = (int64_t)r->n_new * r->seq_len;
        if (a < 0 || e - a != need) {
            cref_set_error(b,
                           WHERE "batch.mask_indptr[%lld] = %lld, mask_indptr[%lld] = %lld: request %lld's mask is "
                                 "%d new tokens x %d seq_lens = %lld entries",
                           (long long)i, (long long)a, (long long)i + 1, (long long)e, (long long)i, r->n_new,
                           r->seq_len, (long long)need);
            return SGL_ATTN_E_INVALID;
        }
        if (e > len) {
            cref_set_error(b,
                           WHERE "batch.custom_mask has %lld entries but request %lld's mask ends at mask_indptr[%lld] "
                                 "= %lld",
                           (long long)len, (long long)i, (long long)i + 1, (long long)e);
            return SGL_ATTN_E_INVALID;
        }
        r->mask0 = a;
    }
    b->mask = (const unsigned char *)sgl_sdk_data(m);
    return SGL_ATTN_OK;
}

/* Cross attention's encoder slots: each the request's req_to_token (or page
 * table) entry of that encoder token, so the attention reads them back. */
static int plan_enc_loc(cref_backend *b, const sgl_attn_batch *bt) {
    const DLTensor *el = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc);
    if (!el) return SGL_ATTN_OK;
    if (!bt->encoder_lens) {
        cref_set_error(b, WHERE "batch.encoder_out_cache_loc is set but batch.encoder_lens is NULL");
        return SGL_ATTN_E_INVALID;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < bt->batch_size; i++) n += b->reqs[i].enc;
    int rc = cref_check(b, el, WHERE "batch.encoder_out_cache_loc", "sum of encoder_lens", 0, 0, 1, n, 0, 0);
    if (rc) return rc;
    int64_t e = 0;
    for (int64_t i = 0; i < bt->batch_size; i++)
        for (int64_t c = 0; c < b->reqs[i].enc; c++, e++) {
            const int64_t s = idx_at(el, e), want = cref_plan_slot(b, bt, i, c);
            if (s != want) {
                cref_set_error(b,
                               WHERE "batch.encoder_out_cache_loc[%lld] = %lld but request %lld's encoder token %lld "
                                     "is at slot %lld (%s)",
                               (long long)e, (long long)s, (long long)i, (long long)c, (long long)want,
                               b->page_size ? "page_table" : "req_to_token");
                return SGL_ATTN_E_INVALID;
            }
        }
    b->enc_loc = sgl_sdk_data(el);
    b->enc_loc_64 = el->dtype.bits == 64;
    b->n_enc_tok = n;
    return SGL_ATTN_OK;
}

int cref_plan_extras(cref_backend *b, const sgl_attn_batch *bt) {
    b->mask = NULL;
    b->enc_loc = NULL;
    b->n_enc_tok = 0;
    int rc = plan_mask(b, bt);
    return rc ? rc : plan_enc_loc(b, bt);
}
