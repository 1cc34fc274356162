/* state_ops.c - ops->state_batch (ABI 1.2, SGL_ATTN_FEAT_CALLER_STATE):
 * clear, copy, commit and track as batched operations on index tensors,
 * on the wrapper's own pool (args->state NULL: every own layer) or on the
 * caller-owned tensors of one layer (args->state, docs/abi.md "Linear state
 * contract").  The CPU runs them at once: the stream orders nothing here.
 *
 * Every entry is checked before anything is written, and one batch is the
 * same whatever order its entries run in (a device runs them in parallel):
 *   - an entry with dst -1 (or, for commit and track, step -1) is skipped;
 *   - a slot is written by one entry at most: a dst repeated is refused;
 *   - copy reads the main state it writes, so a slot that is a dst of one
 *     entry and the src of another is refused (its own entry's src == dst
 *     is a no-op);
 *   - commit and track read the intermediate states and write the main
 *     ones, so a src repeated, or equal to a dst, is fine.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hyb.h"

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t hyb_find_repeat(uint64_t *keys, int64_t n) {
    if (n < 2) return -1;
    qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
    for (int64_t i = 1; i < n; i++)
        if (keys[i] >> 32 == keys[i - 1] >> 32) return i;
    return -1;
}

static const char *op_name(int op) {
    switch (op) {
    case SGL_ATTN_STATE_CLEAR: return "clear";
    case SGL_ATTN_STATE_COPY: return "copy";
    case SGL_ATTN_STATE_COMMIT: return "commit";
    case SGL_ATTN_STATE_TRACK: return "track";
    default: return "?";
    }
}

/* What one batch acts on: the pool's slots and steps, or one layer's tensors. */
typedef struct target {
    int caller;
    int64_t slots, steps;
    sgl_sdk_lin_state cs;
    size_t conv_bytes, ssm_bytes; /* per slot and step, caller-owned */
} target;

static unsigned char *row(const DLTensor *t, int64_t index, size_t bytes) {
    return (unsigned char *)sgl_sdk_data(t) + (size_t)index * bytes;
}

/* One entry on caller-owned tensors: main state of dst from (copy) the main
 * state of src, (commit) dst's step, (track) src's step; clear zeroes it. */
static void apply_caller(const target *g, int op, int64_t dst, int64_t src, int64_t step) {
    const sgl_sdk_lin_state *cs = &g->cs;
    const struct {
        DLTensor *main, *inter;
        size_t bytes;
    } parts[2] = {{cs->conv, cs->iconv, g->conv_bytes}, {cs->ssm, cs->issm, g->ssm_bytes}};
    for (int k = 0; k < 2; k++) {
        if (!parts[k].main || !parts[k].bytes) continue;
        unsigned char *d = row(parts[k].main, dst, parts[k].bytes);
        const size_t b = parts[k].bytes;
        switch (op) {
        case SGL_ATTN_STATE_CLEAR: memset(d, 0, b); break;
        case SGL_ATTN_STATE_COPY:
            if (src != dst) memcpy(d, row(parts[k].main, src, b), b);
            break;
        case SGL_ATTN_STATE_COMMIT: memcpy(d, row(parts[k].inter, dst * g->steps + step, b), b); break;
        case SGL_ATTN_STATE_TRACK: memcpy(d, row(parts[k].inter, src * g->steps + step, b), b); break;
        default: break;
        }
    }
}

static void apply_pool(hyb_pool *p, int op, int64_t dst, int64_t src, int64_t step) {
    switch (op) {
    case SGL_ATTN_STATE_CLEAR: hyb_pool_clear(p, (int)dst); break;
    case SGL_ATTN_STATE_COPY: hyb_pool_copy(p, (int)src, (int)dst); break;
    case SGL_ATTN_STATE_COMMIT: hyb_pool_commit(p, (int)dst, (int)step); break;
    case SGL_ATTN_STATE_TRACK: hyb_pool_track(p, (int)src, (int)step, (int)dst); break;
    default: break;
    }
}

static int target_of(hyb_inst *w, const sgl_attn_state_batch_args *a, int reads_steps, const char *pre,
                     target *g) {
    memset(g, 0, sizeof *g);
    if (!a->state) {
        if (!hyb_pool_ready(w, pre)) return SGL_ATTN_E_STATE;
        g->slots = w->pool.slots;
        g->steps = w->pool.steps;
        if (reads_steps && !g->steps) {
            hyb_set_err(w, "%sthe wrapper's pool keeps no intermediate states (model.spec_tokens = %d; "
                        "they exist when it is > 1)", pre, w->model.spec_tokens);
            return SGL_ATTN_E_INVALID;
        }
        return SGL_ATTN_OK;
    }
    const sgl_attn_linear_io *io = a->state;
    if (io->struct_size < SGL_ATTN_LINEAR_IO_SIZE_V1_0) {
        hyb_set_err(w, "%sstate->struct_size = %u; expected >= %u", pre, io->struct_size,
                    SGL_ATTN_LINEAR_IO_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    if (io->kind != w->d.kind) {
        hyb_set_err(w, "%sstate->kind = %d; expected %d (%s)", pre, io->kind, w->d.kind,
                    sgl_sdk_lin_kind_name(w->d.kind));
        return SGL_ATTN_E_INVALID;
    }
    if (!sgl_sdk_lin_state_of(io, &g->cs)) {
        hyb_set_err(w, "%sstate names no state tensor (conv_state, ssm_state ...); pass NULL to act on the "
                    "wrapper's own pool", pre);
        return SGL_ATTN_E_INVALID;
    }
    int rc = sgl_sdk_lin_check_state(&w->d, &g->cs, reads_steps, SGL_SDK_DEV_HOST, pre, w->err, sizeof w->err);
    if (rc) return rc;
    g->caller = 1;
    g->slots = g->cs.slots;
    g->steps = g->cs.steps;
    g->conv_bytes = (size_t)w->d.conv_elems * (size_t)w->d.esz;
    g->ssm_bytes = (size_t)w->d.ssm_elems * (size_t)w->d.esz;
    return SGL_ATTN_OK;
}

/* An index tensor of the batch: present when needed, refused when set but unread. */
static int index_arg(hyb_inst *w, const DLTensor *t, int needed, const char *pre, const char *field, int op,
                     int32_t count) {
    if (!needed) {
        if (!t) return SGL_ATTN_OK;
        hyb_set_err(w, "%s%s is set; %s reads no %s (expected NULL)", pre, field, op_name(op), field);
        return SGL_ATTN_E_INVALID;
    }
    char name[96];
    sgl_sdk_str(name, sizeof name, "%s%s", pre, field);
    int rc = hyb_index_check(w, t, name, count);
    if (rc && !t) hyb_set_err(w, "%s%s is NULL; %s needs [count] %s", pre, field, op_name(op), field);
    return rc;
}

int hyb_state_batch(sgl_attn_backend *b, const sgl_attn_state_batch_args *a) {
    hyb_inst *w = (hyb_inst *)b;
    char pre[64];
    sgl_sdk_str(pre, sizeof pre, "%s state_batch: ", w->impl->name);
    w->err[0] = 0;
    if (!a || a->struct_size < offsetof(sgl_attn_state_batch_args, stream) + sizeof a->stream) {
        hyb_set_err(w, "%sargs are NULL or args->struct_size = %u is below the ABI 1.2 size %zu", pre,
                    a ? a->struct_size : 0u, offsetof(sgl_attn_state_batch_args, stream) + sizeof a->stream);
        return SGL_ATTN_E_INVALID;
    }
    const int op = a->op;
    if (op < SGL_ATTN_STATE_CLEAR || op > SGL_ATTN_STATE_TRACK) {
        hyb_set_err(w, "%sop = %d; expected 1 (clear), 2 (copy), 3 (commit) or 4 (track)", pre, op);
        return SGL_ATTN_E_INVALID;
    }
    if (!w->d.stateful) {
        hyb_set_err(w, "%s%s keeps no linear-attention state", pre, w->impl->name);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (a->count < 0 || a->count > w->max_reqs) {
        hyb_set_err(w, "%scount = %d; expected 0..%d (create's max_reqs: split larger batches)", pre, a->count,
                    w->max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    const int has_src = op == SGL_ATTN_STATE_COPY || op == SGL_ATTN_STATE_TRACK;
    const int has_steps = op == SGL_ATTN_STATE_COMMIT || op == SGL_ATTN_STATE_TRACK;
    target g;
    int rc;
    if ((rc = target_of(w, a, has_steps, pre, &g))) return rc;
    const int32_t n = a->count;
    if ((rc = index_arg(w, a->dst, 1, pre, "dst", op, n)) || (rc = index_arg(w, a->src, has_src, pre, "src", op, n)) ||
        (rc = index_arg(w, a->steps, has_steps, pre, "steps", op, n)))
        return rc;
    /* bounds, then repeats: nothing is written before both pass */
    const char *where = g.caller ? (g.cs.conv ? "state->conv_state" : "state->ssm_state") : "the wrapper's pool";
    int64_t keys = 0;
    for (int32_t i = 0; i < n; i++) {
        const int64_t d = hyb_index_get(a->dst, i);
        const int64_t s = has_src ? hyb_index_get(a->src, i) : -1;
        const int64_t t = has_steps ? hyb_index_get(a->steps, i) : -1;
        if (d < -1 || d >= g.slots) {
            hyb_set_err(w, "%sdst[%d] = %" PRId64 "; expected -1 (skip) or a slot 0..%" PRId64 " (%s has %" PRId64
                        " slots)", pre, i, d, g.slots - 1, where, g.slots);
            return SGL_ATTN_E_INVALID;
        }
        if (has_src && (s < (d < 0 ? -1 : 0) || s >= g.slots)) {
            hyb_set_err(w, "%ssrc[%d] = %" PRId64 "; expected a slot 0..%" PRId64 " (%s has %" PRId64 " slots)", pre,
                        i, s, g.slots - 1, where, g.slots);
            return SGL_ATTN_E_INVALID;
        }
        if (has_steps && (t < -1 || t >= g.steps)) {
            hyb_set_err(w, "%ssteps[%d] = %" PRId64 "; expected -1 (keep) or an intermediate step 0..%" PRId64 " (%s "
                        "keeps %" PRId64 ")", pre, i, t, g.steps - 1,
                        g.caller ? "state->intermediate_*_state" : "the pool", g.steps);
            return SGL_ATTN_E_INVALID;
        }
        if (d < 0 || (has_steps && t < 0)) continue;
        w->sortbuf[keys++] = (uint64_t)d << 32 | (uint32_t)i << 1;
        if (op == SGL_ATTN_STATE_COPY && s != d) w->sortbuf[keys++] = (uint64_t)s << 32 | (uint32_t)i << 1 | 1u;
    }
    if (keys > 1) {
        qsort(w->sortbuf, (size_t)keys, sizeof *w->sortbuf, cmp_u64);
        for (int64_t k = 0; k < keys;) {
            int64_t e = k;
            int dsts = 0, srcs = 0, first = -1, reader = -1;
            while (e < keys && w->sortbuf[e] >> 32 == w->sortbuf[k] >> 32) {
                const int i = (int)((uint32_t)w->sortbuf[e] >> 1);
                if (w->sortbuf[e] & 1u) srcs++, reader = i;
                else if (dsts++ == 0) first = i;
                else {
                    hyb_set_err(w, "%sdst[%d] = %" PRId64 " repeats dst[%d]: one batch writes a slot once", pre, i,
                                (int64_t)(w->sortbuf[k] >> 32), first);
                    return SGL_ATTN_E_INVALID;
                }
                e++;
            }
            if (dsts && srcs) {
                hyb_set_err(w, "%sdst[%d] = %" PRId64 " is also src[%d]: a copy batch may not write a slot another "
                            "entry reads (the order would decide)", pre, first, (int64_t)(w->sortbuf[k] >> 32),
                            reader);
                return SGL_ATTN_E_INVALID;
            }
            k = e;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        const int64_t d = hyb_index_get(a->dst, i);
        const int64_t s = has_src ? hyb_index_get(a->src, i) : -1;
        const int64_t t = has_steps ? hyb_index_get(a->steps, i) : -1;
        if (d < 0 || (has_steps && t < 0)) continue;
        if (g.caller) apply_caller(&g, op, d, s, t);
        else apply_pool(&w->pool, op, d, s, t);
    }
    return SGL_ATTN_OK;
}
