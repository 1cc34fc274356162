/* validate_snapshot.c - the batch as init_forward_metadata accepted it, and
 * the check at every forward that it is still that batch.
 *
 * A caller may change an index tensor between init_forward_metadata and a
 * forward (the backend then reads what was never checked).  So the layer
 * keeps, for every tensor of the batch, its header (data pointer, device,
 * dtype, shape, strides, offset) and, for a host-readable one-dimensional
 * tensor, its entries; for req_to_token, a hash of the slots each request
 * uses.  A forward compares all of it first and refuses any change, naming
 * the tensor and, for a one-dimensional one, the entry and both values.
 * Entries of device-resident tensors cannot be compared without a copy:
 * only their headers are (docs/reliability.md).
 *
 * Cost at a forward: the header compares, one pass over the kept entries
 * (batch_size and num_tokens of them per tensor) and one over the slots
 * the batch uses; nothing is allocated (the buffers are sized at create). */
#include <stdio.h>
#include <string.h>

#include "validate_internal.h"

static const char *const tensor_name[VL_T_COUNT] = {
    "batch->req_to_token",      "batch->req_pool_indices",        "batch->seq_lens",
    "batch->extend_prefix_lens", "batch->extend_seq_lens",         "batch->out_cache_loc",
    "batch->positions",          "batch->encoder_lens",            "batch->state_indices",
    "batch->seq_lens_cpu",       "batch->extend_prefix_lens_cpu", "batch->extend_seq_lens_cpu",
    "batch->encoder_lens_cpu"};

static const DLTensor *tensor_of(const sgl_attn_batch *bt, int i) {
    switch (i) {
    case VL_T_RTT: return bt->req_to_token;
    case VL_T_RPI: return bt->req_pool_indices;
    case VL_T_SEQ: return bt->seq_lens;
    case VL_T_PRE: return bt->extend_prefix_lens;
    case VL_T_EXT: return bt->extend_seq_lens;
    case VL_T_OCL: return bt->out_cache_loc;
    case VL_T_POS: return bt->positions;
    case VL_T_ENC: return bt->encoder_lens;
    case VL_T_STATE: return bt->state_indices;
    case VL_T_SEQ_CPU: return bt->seq_lens_cpu;
    case VL_T_PRE_CPU: return bt->extend_prefix_lens_cpu;
    case VL_T_EXT_CPU: return bt->extend_seq_lens_cpu;
    default: return bt->encoder_lens_cpu;
    }
}

static const char *const tensor12_name[VL_T12_COUNT] = {"batch->page_table", "batch->custom_mask",
                                                        "batch->mask_indptr", "batch->encoder_out_cache_loc"};

static const DLTensor *tensor12_of(const sgl_attn_batch *bt, int i) {
    switch (i) {
    case VL_T12_PAGE_TABLE: return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
    case VL_T12_MASK: return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask);
    case VL_T12_INDPTR: return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, mask_indptr);
    default: return SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc);
    }
}

size_t vl_snapshot_entries(int32_t max_reqs, int32_t max_tokens) {
    /* 1-D tensors of batch_size entries (9 kinds) and of num_tokens (2). */
    return 9 * (size_t)max_reqs + 2 * (size_t)max_tokens;
}

static void keep_header(vl_tsnap *s, const DLTensor *t) {
    memset(s, 0, sizeof *s);
    s->t = t;
    if (!t) return;
    s->head = *t;
    s->head.shape = NULL;
    s->head.strides = NULL;
    for (int d = 0; d < t->ndim && d < 2; d++) {
        s->shape[d] = t->shape ? t->shape[d] : 0;
        if (t->strides) s->strides[d] = t->strides[d];
    }
    s->has_strides = t->strides != NULL;
}

static int same_header(const vl_tsnap *s, const DLTensor *t) {
    if (!t) return !s->t;
    if (t != s->t || t->data != s->head.data || t->byte_offset != s->head.byte_offset || t->ndim != s->head.ndim ||
        t->device.device_type != s->head.device.device_type || t->device.device_id != s->head.device.device_id ||
        t->dtype.code != s->head.dtype.code || t->dtype.bits != s->head.dtype.bits ||
        t->dtype.lanes != s->head.dtype.lanes || (t->strides != NULL) != s->has_strides || !t->shape)
        return 0;
    for (int d = 0; d < t->ndim && d < 2; d++)
        if (t->shape[d] != s->shape[d] || (t->strides && t->strides[d] != s->strides[d])) return 0;
    return 1;
}

/* The slots request i uses, as check_slots walked them; 0 when it did not. */
static uint64_t row_hash(const DLTensor *rtt, int64_t row, int64_t used) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)row;
    for (int64_t col = 0; col < used; col++) h = (h ^ (uint64_t)vl_idx2(rtt, row, col)) * 0x100000001b3ull;
    return h;
}

/* The kept entries of the readable lengths tensor (device, else mirror). */
static const vl_tsnap *lens(const vl_snapshot *s, int dev, int mirror) {
    if (s->t[dev].n) return &s->t[dev];
    if (s->t[mirror].n) return &s->t[mirror];
    return NULL;
}

void vl_snapshot_take(vl_backend *b, const sgl_attn_batch *bt) {
    vl_snapshot *s = &b->snap;
    memset(&s->batch, 0, sizeof s->batch);
    memcpy(&s->batch, bt, bt->struct_size < sizeof s->batch ? bt->struct_size : sizeof s->batch);
    s->rows_hashed = 0;
    for (int i = 0; i < VL_T12_COUNT; i++) keep_header(&s->t12[i], tensor12_of(bt, i));
    int64_t *next = b->snap_vals;
    for (int i = 0; i < VL_T_COUNT; i++) {
        const DLTensor *t = tensor_of(bt, i);
        keep_header(&s->t[i], t);
        if (!t || t->ndim != 1 || !vl_host_readable(t) || i == VL_T_RTT) continue;
        /* Entries the checks read: batch_size of them, or num_tokens. */
        int64_t n = (i == VL_T_OCL || i == VL_T_POS) ? bt->num_tokens : bt->batch_size;
        if (n > t->shape[0]) n = t->shape[0];
        s->t[i].vals = next;
        s->t[i].n = n;
        for (int64_t k = 0; k < n; k++) next[k] = vl_idx1(t, k);
        next += n;
    }
    const DLTensor *rtt = bt->req_to_token;
    const vl_tsnap *rpi = &s->t[VL_T_RPI], *seq = lens(s, VL_T_SEQ, VL_T_SEQ_CPU), *enc = lens(s, VL_T_ENC, VL_T_ENC_CPU);
    int enc_given = bt->encoder_lens || bt->encoder_lens_cpu;
    /* with a page table, req_to_token is not read, so not checked: not hashed */
    if (!b->facts.slots_checked || !rtt || !vl_host_readable(rtt) || !rpi->n || !seq || (enc_given && !enc) ||
        SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table))
        return;
    for (int32_t i = 0; i < bt->batch_size; i++)
        b->snap_rows[i] = row_hash(rtt, rpi->vals[i], (enc ? enc->vals[i] : 0) + seq->vals[i]);
    s->rows_hashed = 1;
}

int vl_snapshot_same(vl_ctx *c, const vl_backend *b, const sgl_attn_batch *bt) {
    const vl_snapshot *s = &b->snap;
    const sgl_attn_batch *k = &s->batch;
    static const char *const later = "the batch changed after init_forward_metadata accepted it";
    const struct {
        const char *name;
        int64_t was, now;
    } scalars[] = {{"forward_mode", k->forward_mode, bt->forward_mode},
                   {"batch_size", k->batch_size, bt->batch_size},
                   {"num_tokens", k->num_tokens, bt->num_tokens},
                   {"page_size", k->page_size, bt->page_size},
                   {"tokens_per_req", k->tokens_per_req, bt->tokens_per_req},
                   {"seq_lens_sum", k->seq_lens_sum, bt->seq_lens_sum}};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if (scalars[i].was != scalars[i].now)
            return vl_fail(c, "batch->%s = %lld, but it was %lld: %s", scalars[i].name,
                           (long long)scalars[i].now, (long long)scalars[i].was, later);
    for (int i = 0; i < VL_T_COUNT; i++) {
        const DLTensor *t = tensor_of(bt, i);
        if (t != s->t[i].t)
            return vl_fail(c, "%s points to another tensor (%p, was %p): %s", tensor_name[i],
                           (const void *)t, (const void *)s->t[i].t, later);
        if (!same_header(&s->t[i], t))
            return vl_fail(c, "%s: its data pointer, device, dtype, shape or strides are not what they were: %s",
                           tensor_name[i], later);
        for (int64_t e = 0; e < s->t[i].n; e++) {
            int64_t now = vl_idx1(t, e);
            if (now != s->t[i].vals[e])
                return vl_fail(c, "%s[%lld] = %lld, but it was %lld: %s", tensor_name[i],
                               (long long)e, (long long)now, (long long)s->t[i].vals[e], later);
        }
    }
    /* ABI 1.2 tensors: their headers (their entries are the inner's to read) */
    for (int i = 0; i < VL_T12_COUNT; i++) {
        const DLTensor *t = tensor12_of(bt, i);
        if (t != s->t12[i].t)
            return vl_fail(c, "%s points to another tensor (%p, was %p): %s", tensor12_name[i], (const void *)t,
                           (const void *)s->t12[i].t, later);
        if (!same_header(&s->t12[i], t))
            return vl_fail(c, "%s: its data pointer, device, dtype, shape or strides are not what they were: %s",
                           tensor12_name[i], later);
    }
    if (bt->stream != k->stream) return vl_fail(c, "batch->stream is not what it was: %s", later);
    if (!s->rows_hashed) return SGL_ATTN_OK;
    /* The lengths and rows are the kept ones (equal to the live ones, just
     * compared), which init_forward_metadata bounded: the walk stays inside. */
    const vl_tsnap *rpi = &s->t[VL_T_RPI], *seq = lens(s, VL_T_SEQ, VL_T_SEQ_CPU), *enc = lens(s, VL_T_ENC, VL_T_ENC_CPU);
    for (int32_t i = 0; i < bt->batch_size; i++) {
        int64_t row = rpi->vals[i], used = (enc ? enc->vals[i] : 0) + seq->vals[i];
        if (row_hash(bt->req_to_token, row, used) != b->snap_rows[i])
            return vl_fail(c, "batch->req_to_token[%lld] (request %d's row) holds another slot where the request "
                           "reads: %s", (long long)row, (int)i, later);
    }
    return SGL_ATTN_OK;
}
