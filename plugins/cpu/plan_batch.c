/* plan_batch.c - init_forward_metadata: check every length and every index
 * the batch will use, once per batch, and plan the requests.  What depends
 * on a layer's pool (its number of slots) is checked per forward against
 * the largest slot found here.
 *
 * A forward uses what was planned here: the requests' rows and lengths are
 * copies, req_to_token and out_cache_loc are read through the data pointers
 * and shapes recorded here, and each slot read from them is checked against
 * the pool where it is used (the caller may change the values between
 * init_forward_metadata and a forward; the kernels refuse what is out of
 * range rather than read or write outside the pool). */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"

#define WHERE "init_forward_metadata: "

typedef struct ix {
    const void *p;
    int is64;
} ix;

static ix index_of(const DLTensor *t) {
    ix r = {sgl_sdk_data(t), t->dtype.bits == 64};
    return r;
}
static int64_t at(ix x, int64_t i) { return sgl_sdk_idx(x.p, x.is64, i); }

/* A 1-D host index tensor of n entries. */
static int check_index(cref_backend *b, const DLTensor *t, const char *what, int64_t n, const char *meaning) {
    return cref_check(b, t, what, meaning, 0, 0, 1, n, 0, 0);
}

/* A host mirror (*_cpu), when given, must say the same as its tensor. */
static int check_mirror(cref_backend *b, const DLTensor *mirror, const char *name, ix main, int64_t n) {
    if (!mirror) return SGL_ATTN_OK;
    char what[64];
    snprintf(what, sizeof what, WHERE "batch.%s", name);
    int rc = check_index(b, mirror, what, n, "batch_size");
    if (rc) return rc;
    ix m = index_of(mirror);
    for (int64_t i = 0; i < n; i++)
        if (at(m, i) != at(main, i)) {
            cref_set_error(b, WHERE "batch.%s[%lld] = %lld but its device tensor says %lld", name, (long long)i,
                           (long long)at(m, i), (long long)at(main, i));
            return SGL_ATTN_E_INVALID;
        }
    return SGL_ATTN_OK;
}

/* Extend and draft extend (ABI 1.2) read their lengths from extend_*_lens. */
static int is_extend(const sgl_attn_batch *bt) {
    return bt->forward_mode == SGL_ATTN_MODE_EXTEND || bt->forward_mode == SGL_ATTN_MODE_DRAFT_EXTEND;
}

/* With a page table (ABI 1.2), req_to_token and req_pool_indices are not read. */
static int has_pages(const sgl_attn_batch *bt) { return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table) != NULL; }

static int check_batch_tensors(cref_backend *b, const sgl_attn_batch *bt, int64_t bs) {
    int rc;
    if (!has_pages(bt) && (rc = cref_check(b, bt->req_to_token, WHERE "batch.req_to_token", "max_reqs, max_context",
                                           0, 0, 2, SGL_SDK_ANY, SGL_SDK_ANY, 0)))
        return rc;
    if (!has_pages(bt) &&
        (rc = check_index(b, bt->req_pool_indices, WHERE "batch.req_pool_indices", bs, "batch_size")))
        return rc;
    if ((rc = check_index(b, bt->seq_lens, WHERE "batch.seq_lens", bs, "batch_size"))) return rc;
    if (is_extend(bt)) {
        if ((rc = check_index(b, bt->extend_prefix_lens, WHERE "batch.extend_prefix_lens", bs, "batch_size")))
            return rc;
        if ((rc = check_index(b, bt->extend_seq_lens, WHERE "batch.extend_seq_lens", bs, "batch_size")))
            return rc;
    }
    if (bt->encoder_lens &&
        (rc = check_index(b, bt->encoder_lens, WHERE "batch.encoder_lens", bs, "batch_size")))
        return rc;
    if (bt->out_cache_loc &&
        (rc = check_index(b, bt->out_cache_loc, WHERE "batch.out_cache_loc", bt->num_tokens, "num_tokens")))
        return rc;
    return SGL_ATTN_OK;
}

/* Lengths of request i, from the batch's mode. */
static int plan_request(cref_backend *b, const sgl_attn_batch *bt, int64_t i, int32_t tpr, int64_t *tok) {
    cref_req *r = &b->reqs[i];
    const int pages = has_pages(bt);
    const DLTensor *r2t = bt->req_to_token;
    int64_t rows = pages ? 1 : r2t->shape[0];
    int64_t row = pages ? 0 : at(index_of(bt->req_pool_indices), i);
    int64_t seq = at(index_of(bt->seq_lens), i);
    int64_t enc = bt->encoder_lens ? at(index_of(bt->encoder_lens), i) : 0;
    if (row < 0 || row >= rows) {
        cref_set_error(b, WHERE "req_pool_indices[%lld] = %lld; expected a row of req_to_token in [0, %lld)",
                       (long long)i, (long long)row, (long long)rows);
        return SGL_ATTN_E_INVALID;
    }
    if (seq < 0 || seq > INT32_MAX) {
        cref_set_error(b, WHERE "seq_lens[%lld] = %lld; expected 0..%d", (long long)i, (long long)seq, INT32_MAX);
        return SGL_ATTN_E_INVALID;
    }
    if (enc < 0 || enc > INT32_MAX) {
        cref_set_error(b, WHERE "encoder_lens[%lld] = %lld; expected >= 0", (long long)i, (long long)enc);
        return SGL_ATTN_E_INVALID;
    }
    int64_t prefix, n_new;
    if (is_extend(bt)) {
        prefix = at(index_of(bt->extend_prefix_lens), i);
        n_new = at(index_of(bt->extend_seq_lens), i);
        if (prefix < 0 || n_new < 0 || prefix > INT32_MAX || n_new > INT32_MAX) {
            cref_set_error(b, WHERE "extend_prefix_lens[%lld] = %lld, extend_seq_lens[%lld] = %lld; expected 0..2^31-1",
                           (long long)i, (long long)prefix, (long long)i, (long long)n_new);
            return SGL_ATTN_E_INVALID;
        }
        if (prefix + n_new != seq) {
            cref_set_error(b,
                           WHERE "extend_prefix_lens[%lld] + extend_seq_lens[%lld] = %lld + %lld != seq_lens[%lld] = %lld",
                           (long long)i, (long long)i, (long long)prefix, (long long)n_new, (long long)i,
                           (long long)seq);
            return SGL_ATTN_E_INVALID;
        }
    } else {
        n_new = tpr;
        if (seq < tpr) {
            cref_set_error(b, WHERE "seq_lens[%lld] = %lld; expected >= %d (it includes the request's new tokens)",
                           (long long)i, (long long)seq, tpr);
            return SGL_ATTN_E_INVALID;
        }
        prefix = seq - tpr;
    }
    int64_t cols = enc + seq;
    if ((!pages && cols > r2t->shape[1]) || cols > b->max_context) {
        cref_set_error(b,
                       WHERE "request %lld needs %lld columns (encoder_lens %lld + seq_lens %lld) but req_to_token "
                       "has %lld and create's max_context is %d",
                       (long long)i, (long long)cols, (long long)enc, (long long)seq,
                       (long long)(pages ? cols : r2t->shape[1]), b->max_context);
        return SGL_ATTN_E_INVALID;
    }
    r->row = row;
    r->pg0 = 0;
    r->mask0 = 0;
    r->seq_len = (int32_t)seq;
    r->n_new = (int32_t)n_new;
    r->prefix = (int32_t)prefix;
    r->enc = (int32_t)enc;
    r->tok0 = (int32_t)*tok;
    *tok += n_new;
    b->max_kv_len = r->seq_len > b->max_kv_len ? r->seq_len : b->max_kv_len;
    b->max_enc = r->enc > b->max_enc ? r->enc : b->max_enc;
    return SGL_ATTN_OK;
}

/* Every req_to_token entry the request uses: a slot >= 0 at its column's
 * offset within a page; the largest is remembered for the pool check. */
static int check_slots(cref_backend *b, const sgl_attn_batch *bt, int64_t i) {
    const cref_req *r = &b->reqs[i];
    ix t = index_of(bt->req_to_token);
    const int64_t cols = bt->req_to_token->shape[1], ps = bt->page_size;
    const int64_t base = r->row * cols;
    for (int64_t c = 0; c < (int64_t)r->enc + r->seq_len; c++) {
        int64_t s = at(t, base + c);
        if (s < 0) {
            cref_set_error(b, WHERE "req_to_token[%lld][%lld] = %lld (request %lld); expected a slot >= 0",
                           (long long)r->row, (long long)c, (long long)s, (long long)i);
            return SGL_ATTN_E_INVALID;
        }
        if (s % ps != c % ps) {
            cref_set_error(b,
                           WHERE "req_to_token[%lld][%lld] = %lld (request %lld) is at offset %lld of its page but "
                           "column %lld is at offset %lld (page_size %lld)",
                           (long long)r->row, (long long)c, (long long)s, (long long)i, (long long)(s % ps),
                           (long long)c, (long long)(c % ps), (long long)ps);
            return SGL_ATTN_E_INVALID;
        }
        if (s > b->max_slot) {
            b->max_slot = s;
            snprintf(b->max_slot_where, sizeof b->max_slot_where, "req_to_token[%lld][%lld] = %lld", (long long)r->row,
                     (long long)c, (long long)s);
        }
    }
    return SGL_ATTN_OK;
}

/* out_cache_loc: each new token's slot, which must be its req_to_token entry
 * (the attention reads the new K/V back from the pool). */
static int check_out_loc(cref_backend *b, const sgl_attn_batch *bt, int64_t i) {
    const cref_req *r = &b->reqs[i];
    ix o = index_of(bt->out_cache_loc);
    for (int64_t j = 0; j < r->n_new; j++) {
        int64_t tok = r->tok0 + j, col = (int64_t)r->enc + r->prefix + j;
        int64_t s = at(o, tok), want = cref_plan_slot(b, bt, i, col);
        if (s != want) {
            cref_set_error(b,
                           WHERE "out_cache_loc[%lld] = %lld but request %lld's column %lld is slot %lld (%s, new "
                           "token %lld): a new token's slot must be its req_to_token / page_table entry",
                           (long long)tok, (long long)s, (long long)i, (long long)col, (long long)want,
                           has_pages(bt) ? "page_table" : "req_to_token", (long long)j);
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}

int cref_plan_batch(cref_backend *b, const sgl_attn_batch *bt) {
    b->batch = NULL;
    if (!bt) {
        cref_set_error(b, WHERE "batch is NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0) {
        cref_set_error(b, WHERE "batch.struct_size %u < %u (ABI 1.0)", bt->struct_size, SGL_ATTN_BATCH_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    /* A draft extend plans and runs as an extend (causal over each request's accepted tokens). */
    b->mode = is_extend(bt) ? SGL_ATTN_MODE_EXTEND : bt->forward_mode;
    b->n_reqs = 0;
    b->num_tokens = 0;
    b->max_kv_len = 0;
    b->max_enc = 0;
    b->max_slot = -1;
    b->max_slot_where[0] = 0;
    b->has_enc = bt->encoder_lens != NULL;
    b->out_cache_loc = NULL;
    b->page_size = 0;
    b->mask = NULL;
    b->enc_loc = NULL;
    b->n_enc_tok = 0;
    if (bt->forward_mode == SGL_ATTN_MODE_IDLE) {
        b->batch = bt;
        return SGL_ATTN_OK;
    }
    if (!is_extend(bt) && bt->forward_mode != SGL_ATTN_MODE_DECODE &&
        bt->forward_mode != SGL_ATTN_MODE_TARGET_VERIFY) {
        cref_set_error(b,
                       WHERE "batch.forward_mode = %d; expected 0 idle, 1 extend, 2 decode, 3 target verify or 4 "
                             "draft extend",
                       bt->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    int rc;
    if (bt->batch_size < 0 || bt->batch_size > b->max_reqs) {
        cref_set_error(b, WHERE "batch.batch_size = %d; expected 0..%d (create's max_reqs)", bt->batch_size,
                       b->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (bt->num_tokens < 0 || bt->num_tokens > b->max_tokens) {
        cref_set_error(b, WHERE "batch.num_tokens = %d; expected 0..%d (create's max_tokens)", bt->num_tokens,
                       b->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    if (bt->page_size < 1) {
        cref_set_error(b, WHERE "batch.page_size = %d; expected >= 1", bt->page_size);
        return SGL_ATTN_E_INVALID;
    }
    int32_t tpr = bt->tokens_per_req;
    if (bt->forward_mode == SGL_ATTN_MODE_DECODE && tpr == 0) tpr = 1;
    if (!is_extend(bt)) {
        if (tpr < 1) {
            cref_set_error(b, WHERE "batch.tokens_per_req = %d; expected >= 1", bt->tokens_per_req);
            return SGL_ATTN_E_INVALID;
        }
        if ((int64_t)bt->batch_size * tpr != bt->num_tokens) {
            cref_set_error(b, WHERE "batch.num_tokens = %d but batch_size %d x tokens_per_req %d = %lld",
                           bt->num_tokens, bt->batch_size, tpr, (long long)bt->batch_size * tpr);
            return SGL_ATTN_E_INVALID;
        }
    }
    rc = check_batch_tensors(b, bt, bt->batch_size);
    if (rc) return rc;

    int64_t tok = 0, sum = 0;
    for (int64_t i = 0; i < bt->batch_size; i++) {
        if ((rc = plan_request(b, bt, i, tpr, &tok))) return rc;
        sum += b->reqs[i].seq_len;
        if (tok > bt->num_tokens) break; /* reported below */
    }
    if (tok != bt->num_tokens) {
        cref_set_error(b, WHERE "the requests' new tokens add up to %s%lld but batch.num_tokens = %d",
                       tok > bt->num_tokens ? "at least " : "", (long long)tok, bt->num_tokens);
        return SGL_ATTN_E_INVALID;
    }
    if (bt->seq_lens_sum != 0 && bt->seq_lens_sum != sum) {
        cref_set_error(b, WHERE "batch.seq_lens_sum = %lld but seq_lens add up to %lld", (long long)bt->seq_lens_sum,
                       (long long)sum);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = cref_plan_pages(b, bt))) return rc;
    for (int64_t i = 0; i < bt->batch_size; i++) {
        if (!has_pages(bt) && (rc = check_slots(b, bt, i))) return rc;
        if (bt->out_cache_loc && (rc = check_out_loc(b, bt, i))) return rc;
    }
    if ((rc = cref_plan_extras(b, bt))) return rc;
    if ((rc = check_mirror(b, bt->seq_lens_cpu, "seq_lens_cpu", index_of(bt->seq_lens), bt->batch_size))) return rc;
    if (is_extend(bt)) {
        if ((rc = check_mirror(b, bt->extend_prefix_lens_cpu, "extend_prefix_lens_cpu",
                               index_of(bt->extend_prefix_lens), bt->batch_size)))
            return rc;
        if ((rc = check_mirror(b, bt->extend_seq_lens_cpu, "extend_seq_lens_cpu", index_of(bt->extend_seq_lens),
                               bt->batch_size)))
            return rc;
    }
    if (bt->encoder_lens &&
        (rc = check_mirror(b, bt->encoder_lens_cpu, "encoder_lens_cpu", index_of(bt->encoder_lens), bt->batch_size)))
        return rc;
    if (bt->out_cache_loc) {
        b->out_cache_loc = sgl_sdk_data(bt->out_cache_loc);
        b->ocl_64 = bt->out_cache_loc->dtype.bits == 64;
    }
    b->r2t = NULL;
    b->r2t_64 = 0;
    b->r2t_rows = b->r2t_cols = 0;
    if (!has_pages(bt)) {
        b->r2t = sgl_sdk_data(bt->req_to_token);
        b->r2t_64 = bt->req_to_token->dtype.bits == 64;
        b->r2t_rows = bt->req_to_token->shape[0];
        b->r2t_cols = bt->req_to_token->shape[1];
    }
    b->n_reqs = bt->batch_size;
    b->num_tokens = bt->num_tokens;
    b->tokens_per_req = tpr;
    b->batch = bt;
    return SGL_ATTN_OK;
}
