/* lin_check.c - the tensors the kernels read, as SDK tensor specs: float
 * inputs (through sgl_sdk_lin_check_io) and the index tensors of a batch or a
 * commit, with messages that name the tensor, the field, the value and what
 * was expected.  Pure C (no CUDA). */
#include <stdlib.h>

#include "lin.h"
#include "sdk_text.h"

int lin_dt_of(DLDataType t) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return LIN_DT_F32;
    case SGL_ATTN_DT_F16: return LIN_DT_F16;
    case SGL_ATTN_DT_BF16: return LIN_DT_BF16;
    default: return -1;
    }
}

sgl_sdk_tensor_spec lin_float_spec(int device) {
    const sgl_sdk_tensor_spec s = {.dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16,
                                   .devices = SGL_SDK_DEV_CUDA_READ, .device_id = device,
                                   .flags = SGL_SDK_T_COMPACT};
    return s;
}

int lin_check_index(const DLTensor *t, const char *what, int device, int64_t min_len, int *on_host, char *err,
                    size_t n) {
    const sgl_sdk_tensor_spec s = {what, NULL, 1, {min_len}, 0, SGL_SDK_DEV_CUDA_READ | SGL_SDK_DEV(kDLCPU), device,
                                   SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST, 0};
    const int rc = sgl_sdk_check_tensor(t, &s, err, n);
    *on_host = !rc && t->device.device_type == kDLCPU;
    return rc;
}

/* ABI 1.2 fields the wrapper's own (linear) layers do not serve: refused by
 * name, never ignored.  The full-attention layers' batch goes to the inner
 * backend, which answers for its own fields. */
const char *lin_unserved_batch(const sgl_attn_batch *b) {
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, custom_mask)) return "batch.custom_mask (tree verify)";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, mask_indptr)) return "batch.mask_indptr (tree verify)";
    return NULL;
}

const char *lin_unserved_forward(const sgl_attn_forward_args *a) {
    const sgl_attn_layer *l = a->layer;
    if (a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0 || l->struct_size < SGL_ATTN_LAYER_SIZE_V1_0)
        return "forward args / layer struct_size below ABI 1.0's";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse)) return "forward args lse";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope)) return "forward args q_rope";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope)) return "forward args k_rope";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices)) return "forward args topk_indices";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk)) return "forward args dual_chunk";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map)) return "layer.slot_map";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) != SGL_ATTN_TYPE_CAUSAL) return "layer.attn_type";
    return NULL;
}

int lin_check_caller_state(const lin_dims *d, const sgl_attn_linear_io *io, int device, int64_t need_steps,
                           const char *prefix, sgl_sdk_lin_state *cs, char *err, size_t n) {
    (void)sgl_sdk_lin_state_of(io, cs);
    int rc = sgl_sdk_lin_check_state(d, cs, need_steps, SGL_SDK_DEV_CUDA_READ, prefix, err, n);
    if (rc) return rc;
    const struct {
        const DLTensor *t;
        const char *name;
    } all[4] = {{cs->conv, "conv_state"}, {cs->ssm, "ssm_state"}, {cs->iconv, "intermediate_conv_state"},
                {cs->issm, "intermediate_ssm_state"}};
    for (int i = 0; i < 4; i++) {
        if (!all[i].t) continue;
        if (all[i].t->device.device_type != kDLCUDAHost && all[i].t->device.device_id != device) {
            sgl_sdk_str(err, n, "%slinear.%s is on CUDA device %d; expected device %d (the instance's)", prefix,
                        all[i].name, (int)all[i].t->device.device_id, device);
            return SGL_ATTN_E_INVALID;
        }
        /* the kernels move state rows 16 bytes at a time, as in the pool */
        if ((uintptr_t)sgl_sdk_data(all[i].t) % 16) {
            sgl_sdk_str(err, n, "%slinear.%s starts at an address that is not a multiple of 16 bytes (data + "
                        "byte_offset); expected 16-byte aligned state", prefix, all[i].name);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    }
    if (cs->slots > INT32_MAX) {
        sgl_sdk_str(err, n, "%slinear.%s has %lld slots; expected at most %d", prefix,
                    cs->conv ? "conv_state" : "ssm_state", (long long)cs->slots, INT32_MAX);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

const char *lin_sb_op_name(int op) {
    switch (op) {
    case SGL_ATTN_STATE_CLEAR: return "clear";
    case SGL_ATTN_STATE_COPY: return "copy";
    case SGL_ATTN_STATE_COMMIT: return "commit";
    case SGL_ATTN_STATE_TRACK: return "track";
    default: return "?";
    }
}

int lin_sb_check_host(const lin_sb_host *h, uint64_t *keys, char *err, size_t n) {
    const int op = h->op;
    const int has_src = op == SGL_ATTN_STATE_COPY || op == SGL_ATTN_STATE_TRACK;
    const int has_steps = op == SGL_ATTN_STATE_COMMIT || op == SGL_ATTN_STATE_TRACK;
    int64_t nk = 0;
    for (int32_t i = 0; i < h->count; i++) { /* bounds, then repeats: nothing is written before both pass */
        const int64_t d = sgl_sdk_index_at(h->dst, i);
        const int64_t s = has_src ? sgl_sdk_index_at(h->src, i) : -1;
        const int64_t t = has_steps ? sgl_sdk_index_at(h->steps, i) : -1;
        if (d < -1 || d >= h->slots) {
            sgl_sdk_str(err, n, "%sdst[%d] = %lld; expected -1 (skip) or a slot 0..%lld (%s has %lld slots)", h->pre,
                        i, (long long)d, (long long)h->slots - 1, h->where, (long long)h->slots);
            return SGL_ATTN_E_INVALID;
        }
        if (has_src && (s < (d < 0 ? -1 : 0) || s >= h->slots)) {
            sgl_sdk_str(err, n, "%ssrc[%d] = %lld; expected a slot 0..%lld (%s has %lld slots)", h->pre, i,
                        (long long)s, (long long)h->slots - 1, h->where, (long long)h->slots);
            return SGL_ATTN_E_INVALID;
        }
        if (has_steps && (t < -1 || t >= h->nsteps)) {
            sgl_sdk_str(err, n, "%ssteps[%d] = %lld; expected -1 (keep) or an intermediate step 0..%lld (%s keeps "
                        "%lld)", h->pre, i, (long long)t, (long long)h->nsteps - 1, h->steps_where,
                        (long long)h->nsteps);
            return SGL_ATTN_E_INVALID;
        }
        if (d < 0 || (has_steps && t < 0)) continue;
        keys[nk++] = (uint64_t)d << 32 | (uint32_t)i << 1;
        if (op == SGL_ATTN_STATE_COPY && s != d) keys[nk++] = (uint64_t)s << 32 | (uint32_t)i << 1 | 1u;
    }
    if (nk > 1) qsort(keys, (size_t)nk, sizeof *keys, cmp_u64);
    for (int64_t k = 0; k < nk;) {
        int64_t e = k;
        int dsts = 0, srcs = 0, first = -1, reader = -1;
        while (e < nk && keys[e] >> 32 == keys[k] >> 32) {
            const int i = (int)((uint32_t)keys[e] >> 1);
            if (keys[e] & 1u) srcs++, reader = i;
            else if (dsts++ == 0) first = i;
            else {
                sgl_sdk_str(err, n, "%sdst[%d] = %lld repeats dst[%d]: one batch writes a slot once", h->pre, i,
                            (long long)(keys[k] >> 32), first);
                return SGL_ATTN_E_INVALID;
            }
            e++;
        }
        if (dsts && srcs) {
            sgl_sdk_str(err, n, "%sdst[%d] = %lld is also src[%d]: a copy batch may not write a slot another entry "
                        "reads (the order would decide)", h->pre, first, (long long)(keys[k] >> 32), reader);
            return SGL_ATTN_E_INVALID;
        }
        k = e;
    }
    return SGL_ATTN_OK;
}
