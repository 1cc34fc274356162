/* lin_check.c - the tensors the kernels read, as SDK tensor specs: float
 * inputs (through sgl_sdk_lin_check_io) and the index tensors of a batch or a
 * commit, with messages that name the tensor, the field, the value and what
 * was expected.  Pure C (no CUDA). */
#include "lin.h"

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
