/* validate_devcopy.c - copy_device_indices: index tensors that live on a
 * device are read through host copies, so their entries get every check a
 * host tensor gets.
 *
 * Off by default.  Asked for with the plugin option copy_device_indices
 * (conf "plugin_options": {"validate": {"copy_device_indices": true}}) or
 * SGL_ATTN_VALIDATE_DEVICE=1, read at create.  The copies go through the
 * device_ops of the plugin at the bottom of the stack, which the host hands
 * the layer when it builds the stack.  The cost, per init_forward_metadata:
 * one synchronous device-to-host copy per device index tensor (batch_size
 * or num_tokens entries) and one per request for its req_to_token row (the
 * columns it uses) - each a wait for the device, tens of microseconds on a
 * GPU - and, at create, host memory for max_reqs x max_context int64 slots.
 * The forwards copy nothing: a device tensor changed after
 * init_forward_metadata is caught by its header only (validate_snapshot.c).
 *
 * req_to_token's copy holds only the rows the batch uses, one per request
 * in request order, so a message about it names rows by request. */
#include <stdio.h>
#include <string.h>

#include "validate_internal.h"

static const DLTensor **field(sgl_attn_batch *bt, int i) {
    switch (i) {
    case VL_T_RTT: return &bt->req_to_token;
    case VL_T_RPI: return &bt->req_pool_indices;
    case VL_T_SEQ: return &bt->seq_lens;
    case VL_T_PRE: return &bt->extend_prefix_lens;
    case VL_T_EXT: return &bt->extend_seq_lens;
    case VL_T_OCL: return &bt->out_cache_loc;
    case VL_T_POS: return &bt->positions;
    case VL_T_ENC: return &bt->encoder_lens;
    case VL_T_STATE: return &bt->state_indices;
    case VL_T_SEQ_CPU: return &bt->seq_lens_cpu;
    case VL_T_PRE_CPU: return &bt->extend_prefix_lens_cpu;
    case VL_T_EXT_CPU: return &bt->extend_seq_lens_cpu;
    default: return &bt->encoder_lens_cpu;
    }
}

/* A compact int32/int64 index tensor of `ndim` dimensions. */
static int copyable(const DLTensor *t, int ndim) {
    if (!t || t->ndim != ndim || !t->shape || t->dtype.code != kDLInt || t->dtype.lanes != 1 ||
        (t->dtype.bits != 32 && t->dtype.bits != 64))
        return 0;
    if (t->strides) {
        int64_t want = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != want) return 0;
            want *= t->shape[d];
        }
    }
    return 1;
}

static void host_view(vl_devcopy *d, int i, int64_t *vals, int64_t n0, int64_t n1, int ndim) {
    DLTensor *v = &d->t[i];
    memset(v, 0, sizeof *v);
    d->shape[i][0] = n0;
    d->shape[i][1] = n1;
    v->data = vals;
    v->device.device_type = kDLCPU;
    v->ndim = ndim;
    v->shape = d->shape[i];
    v->dtype.code = kDLInt;
    v->dtype.bits = 64;
    v->dtype.lanes = 1;
}

/* n entries of a device index tensor at element `at`, widened into dst. */
static int fetch(vl_ctx *c, vl_backend *b, const DLTensor *t, const char *name, int64_t at, int64_t n, int64_t *dst) {
    const size_t esz = t->dtype.bits / 8;
    const unsigned char *src = (const unsigned char *)t->data + t->byte_offset + (size_t)at * esz;
    /* Copied into the tail of dst, then widened front to back. */
    unsigned char *raw = (unsigned char *)dst + (size_t)n * (8 - esz);
    int rc = b->dev.ops->copy_to_host(b->inner->device, raw, src, (size_t)n * esz);
    if (rc)
        return vl_fail(c, "copy_device_indices: copying %s to the host failed (%d%s%s)", name, rc,
                       b->dev.ops->error_string ? ": " : "",
                       b->dev.ops->error_string ? b->dev.ops->error_string(rc) : "");
    for (int64_t k = 0; k < n; k++) dst[k] = sgl_sdk_idx(raw, esz == 8, k);
    return SGL_ATTN_OK;
}

const sgl_attn_batch *vl_host_copy(vl_ctx *c, vl_backend *b, const sgl_attn_batch *bt, int *rc) {
    vl_devcopy *d = &b->dev;
    *rc = SGL_ATTN_OK;
    d->used = 0;
    if (!d->on || !bt || bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0 || bt->forward_mode == SGL_ATTN_MODE_IDLE)
        return NULL;
    if (bt->batch_size < 1 || bt->batch_size > b->max_reqs || bt->num_tokens < 1 || bt->num_tokens > b->max_tokens)
        return NULL; /* the counts are refused by the checks themselves */
    memset(&d->shadow, 0, sizeof d->shadow);
    memcpy(&d->shadow, bt, bt->struct_size < sizeof d->shadow ? bt->struct_size : sizeof d->shadow);
    int any = 0;
    for (int i = 0; i < VL_T_COUNT; i++) {
        const DLTensor *t = *field(&d->shadow, i);
        if (t && !vl_host_readable(t)) any = 1;
    }
    if (!any) return NULL;
    if (!d->ops || !d->ops->copy_to_host) {
        *rc = vl_fail(c, "copy_device_indices is on, but no device_ops reached the layer (it copies through the "
                         "device_ops of the plugin at the bottom of its stack)");
        return NULL;
    }
    /* One-dimensional tensors: their whole length (the checks' shapes). */
    for (int i = 0; i < VL_T_COUNT; i++) {
        const DLTensor **f = field(&d->shadow, i);
        const DLTensor *t = *f;
        if (i == VL_T_RTT || !t || vl_host_readable(t) || !copyable(t, 1) || t->shape[0] > d->stride) continue;
        int64_t *vals = d->vals + (size_t)i * (size_t)d->stride;
        if ((*rc = fetch(c, b, t, "a batch index tensor", 0, t->shape[0], vals))) return NULL;
        host_view(d, i, vals, t->shape[0], 0, 1);
        *f = &d->t[i];
    }
    /* req_to_token: the rows the requests use, when rows and lengths are
     * known and in bounds (else the checks report those first). */
    const DLTensor *rtt = bt->req_to_token, *rpi = d->shadow.req_pool_indices;
    const DLTensor *seq = d->shadow.seq_lens && vl_host_readable(d->shadow.seq_lens) ? d->shadow.seq_lens
                                                                                     : d->shadow.seq_lens_cpu;
    const DLTensor *enc = d->shadow.encoder_lens && vl_host_readable(d->shadow.encoder_lens)
                              ? d->shadow.encoder_lens
                              : d->shadow.encoder_lens_cpu;
    if (rtt && !vl_host_readable(rtt) && copyable(rtt, 2) && rpi && vl_host_readable(rpi) && seq &&
        vl_host_readable(seq) && rpi->ndim == 1 && rpi->shape[0] == bt->batch_size && seq->ndim == 1 &&
        seq->shape[0] == bt->batch_size && (!enc || (vl_host_readable(enc) && enc->ndim == 1 &&
                                                     enc->shape[0] == bt->batch_size))) {
        const int64_t rows = rtt->shape[0], cols = rtt->shape[1], width = b->max_context;
        int ok = 1;
        for (int32_t i = 0; i < bt->batch_size && ok; i++) {
            int64_t row = vl_idx1(rpi, i), used = vl_idx1(seq, i) + (enc ? vl_idx1(enc, i) : 0);
            ok = row >= 0 && row < rows && used >= 0 && used <= cols && used <= width;
        }
        int64_t *ident = d->vals + (size_t)VL_T_RPI * (size_t)d->stride;
        for (int32_t i = 0; i < bt->batch_size && ok; i++) {
            int64_t row = vl_idx1(rpi, i), used = vl_idx1(seq, i) + (enc ? vl_idx1(enc, i) : 0);
            if ((*rc = fetch(c, b, rtt, "batch->req_to_token", row * cols, used, d->rows + (size_t)i * (size_t)width)))
                return NULL;
        }
        if (ok) {
            /* Request i's row is row i of the copy. */
            for (int32_t i = 0; i < bt->batch_size; i++) ident[i] = i;
            host_view(d, VL_T_RPI, ident, bt->batch_size, 0, 1);
            d->shadow.req_pool_indices = &d->t[VL_T_RPI];
            host_view(d, VL_T_RTT, d->rows, bt->batch_size, width, 2);
            d->shadow.req_to_token = &d->t[VL_T_RTT];
        }
    }
    d->used = 1;
    return &d->shadow;
}
