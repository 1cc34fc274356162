/* plan.c - init_forward_metadata for the wrapper's own layers: checks the
 * batch once and lays out each request's token range, pool slot and whether
 * it starts from a stored state, so a layer's forward only reads the plan
 * (copies: the caller's index tensors may change before the forward; the
 * sparse layers' pool slots are read at the forward and checked there). */
#include <inttypes.h>
#include <string.h>

#include "hyb.h"

/* host mirror when given (no device read needed), else the tensor itself */
static const DLTensor *pick(const DLTensor *cpu, const DLTensor *dev) { return cpu ? cpu : dev; }

static int fail(hyb_inst *w, int rc) { w->plan.valid = 0; return rc; }

int hyb_plan_build(hyb_inst *w, const sgl_attn_batch *b) {
    hyb_plan *p = &w->plan;
    const char *nm = w->impl->name;
    int rc;
    p->valid = 0;
    p->batch = b;
    p->max_kv_slot = -1;
    p->pool_over = -1;
    p->max_slot = -1;
    if (!b) {
        hyb_set_err(w, "%s: init_forward_metadata got a NULL batch", nm);
        return SGL_ATTN_E_INVALID;
    }
    p->mode = b->forward_mode;
    p->bs = b->batch_size;
    p->T = b->num_tokens;
    p->tpr = b->tokens_per_req > 0 ? b->tokens_per_req : 1;
    if (p->mode == SGL_ATTN_MODE_IDLE) {
        p->bs = p->T = 0;
        p->valid = 1;
        return SGL_ATTN_OK;
    }
    if (p->mode != SGL_ATTN_MODE_EXTEND && p->mode != SGL_ATTN_MODE_DECODE &&
        p->mode != SGL_ATTN_MODE_TARGET_VERIFY) {
        hyb_set_err(w, "%s: batch.forward_mode = %d; expected idle, extend, decode or verify", nm, p->mode);
        return SGL_ATTN_E_INVALID;
    }
    if (p->bs < 0 || p->bs > w->max_reqs) {
        hyb_set_err(w, "%s: batch.batch_size = %d; expected 0..%d (create's max_reqs)", nm, p->bs, w->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (p->T < 0 || p->T > w->max_tokens) {
        hyb_set_err(w, "%s: batch.num_tokens = %d; expected 0..%d (create's max_tokens)", nm, p->T, w->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    const int sparse = !w->d.stateful;
    if (!sparse && (rc = hyb_index_check(w, b->state_indices, "batch.state_indices", p->bs))) {
        if (!b->state_indices)
            hyb_set_err(w, "%s: batch.state_indices is NULL; a hybrid wrapper needs each "
                        "request's slot in its state pool ([bs] int32/int64, -1 = padding)", nm);
        return fail(w, rc);
    }
    const DLTensor *seq = pick(b->seq_lens_cpu, b->seq_lens);
    if ((sparse || seq) && (rc = hyb_index_check(w, seq, "batch.seq_lens", p->bs))) return fail(w, rc);

    const DLTensor *elen = NULL, *epre = NULL;
    if (p->mode == SGL_ATTN_MODE_EXTEND) {
        elen = pick(b->extend_seq_lens_cpu, b->extend_seq_lens);
        epre = pick(b->extend_prefix_lens_cpu, b->extend_prefix_lens);
        if ((rc = hyb_index_check(w, elen, "batch.extend_seq_lens", p->bs))) return fail(w, rc);
        if ((rc = hyb_index_check(w, epre, "batch.extend_prefix_lens", p->bs))) return fail(w, rc);
    } else if ((int64_t)p->bs * p->tpr != p->T) {
        hyb_set_err(w, "%s: batch.num_tokens = %d; expected batch_size * tokens_per_req = %d * %d",
                    nm, p->T, p->bs, p->tpr);
        return SGL_ATTN_E_INVALID;
    }
    int64_t tok = 0, nslots = 0;
    for (int i = 0; i < p->bs; i++) {
        hyb_req *r = &p->req[i];
        memset(r, 0, sizeof *r);
        r->tok = tok;
        int64_t prefix;
        if (elen) {
            int64_t n = hyb_index_get(elen, i);
            prefix = hyb_index_get(epre, i);
            if (n < 0 || n > p->T || prefix < 0) {
                hyb_set_err(w, "%s: request %d: extend_seq_lens = %" PRId64 ", extend_prefix_lens = %"
                            PRId64 "; expected 0 <= new tokens <= num_tokens and prefix >= 0", nm, i, n, prefix);
                return fail(w, SGL_ATTN_E_INVALID);
            }
            r->n = (int32_t)n;
        } else {
            r->n = p->tpr;
            prefix = -1; /* unknown: decode always continues a stored state */
        }
        r->has_init = elen ? prefix > 0 : 1;
        tok += r->n;
        if (tok > p->T) {
            hyb_set_err(w, "%s: extend_seq_lens sum past num_tokens = %d at request %d", nm, p->T, i);
            return fail(w, SGL_ATTN_E_INVALID);
        }
        r->seq_len = seq ? hyb_index_get(seq, i) : (prefix >= 0 ? prefix + r->n : r->n);
        if (r->seq_len < r->n || (prefix >= 0 && seq && r->seq_len != prefix + r->n)) {
            hyb_set_err(w, "%s: request %d: seq_lens = %" PRId64 " with %d new tokens and prefix %"
                        PRId64 "; expected seq_lens = prefix + new tokens", nm, i, r->seq_len, r->n,
                        prefix);
            return fail(w, SGL_ATTN_E_INVALID);
        }
        if (!sparse) {
            int64_t s = hyb_index_get(b->state_indices, i);
            /* A slot past the pool is the caller's business when it owns
             * the state (ABI 1.2); a forward on the pool refuses it. */
            if (s < -1 || s > INT32_MAX) {
                hyb_set_err(w, "%s: batch.state_indices[%d] = %" PRId64 "; expected -1 (padding) or "
                            "a slot 0..%d", nm, i, s, w->max_reqs - 1);
                return fail(w, SGL_ATTN_E_INVALID);
            }
            if (s >= w->max_reqs && p->pool_over < 0) p->pool_over = i;
            if (s > p->max_slot) p->max_slot = s;
            if (s >= 0) w->sortbuf[nslots++] = (uint64_t)s << 32 | (uint32_t)i;
            r->slot = (int32_t)s;
        }
    }
    const int64_t rep = hyb_find_repeat(w->sortbuf, nslots);
    if (rep >= 0) {
        const int i = (int)(uint32_t)w->sortbuf[rep];
        hyb_set_err(w, "%s: batch.state_indices[%d] = %d names a slot another request of the batch "
                    "already uses", nm, i, p->req[i].slot);
        return fail(w, SGL_ATTN_E_INVALID);
    }
    if (tok != p->T) {
        hyb_set_err(w, "%s: extend_seq_lens sum to %" PRId64 "; batch.num_tokens = %d", nm, tok, p->T);
        return fail(w, SGL_ATTN_E_INVALID);
    }
    if (sparse) {
        const DLTensor *rtt = b->req_to_token;
        const sgl_sdk_tensor_spec rs = hyb_spec("batch.req_to_token", 0, 0, 2, SGL_SDK_ANY, SGL_SDK_ANY, 0);
        if ((rc = hyb_index_check(w, b->req_pool_indices, "batch.req_pool_indices", p->bs)) ||
            (rc = sgl_sdk_check_tensor(rtt, &rs, w->err, sizeof w->err)) ||
            (rc = hyb_index_check(w, b->out_cache_loc, "batch.out_cache_loc", p->T)))
            return fail(w, rc);
        if (rtt->shape[1] > w->max_context) {
            hyb_set_err(w, "%s: batch.req_to_token must be [max_reqs, max_ctx] with max_ctx <= %d "
                        "(create's max_context)", nm, w->max_context);
            return fail(w, SGL_ATTN_E_INVALID);
        }
        for (int i = 0; i < p->bs; i++) {
            hyb_req *r = &p->req[i];
            int64_t row = hyb_index_get(b->req_pool_indices, i);
            if (row < 0 || row >= rtt->shape[0] || r->seq_len > rtt->shape[1]) {
                hyb_set_err(w, "%s: request %d: req_pool_indices = %" PRId64 ", seq_lens = %" PRId64
                            "; req_to_token is [%" PRId64 ", %" PRId64 "]", nm, i, row, r->seq_len,
                            rtt->shape[0], rtt->shape[1]);
                return fail(w, SGL_ATTN_E_INVALID);
            }
            r->row = (int32_t)row;
            for (int64_t j = 0; j < r->seq_len; j++) {
                int64_t s = hyb_index_get(rtt, row * rtt->shape[1] + j);
                if (s < 0) {
                    hyb_set_err(w, "%s: req_to_token[%" PRId64 "][%" PRId64 "] = %" PRId64 "; expected a "
                                "slot >= 0", nm, row, j, s);
                    return fail(w, SGL_ATTN_E_INVALID);
                }
                if (s > p->max_kv_slot) p->max_kv_slot = s;
            }
        }
        p->rtt = sgl_sdk_data(rtt);
        p->rtt64 = rtt->dtype.bits == 64;
        p->rtt_cols = rtt->shape[1];
        p->ocl = sgl_sdk_data(b->out_cache_loc);
        p->ocl64 = b->out_cache_loc->dtype.bits == 64;
        for (int64_t t = 0; t < p->T; t++) {
            int64_t s = hyb_index_get(b->out_cache_loc, t);
            if (s < 0) {
                hyb_set_err(w, "%s: out_cache_loc[%" PRId64 "] = %" PRId64 "; expected a slot >= 0", nm, t, s);
                return fail(w, SGL_ATTN_E_INVALID);
            }
            if (s > p->max_kv_slot) p->max_kv_slot = s;
        }
    }
    if (p->mode == SGL_ATTN_MODE_TARGET_VERIFY && !sparse) {
        for (int i = 0; i < p->bs; i++) w->verify_slots[i] = p->req[i].slot;
        w->verify_n = p->bs;
        w->verify_steps = p->tpr;
        w->verify_kept = 0;
    }
    p->valid = 1;
    return SGL_ATTN_OK;
}
