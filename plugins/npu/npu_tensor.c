/* npu_tensor.c - see npu_tensor.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "npu_tensor.h"

int npu_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape, npu_tclass cls,
                     int64_t *got, char *err, size_t err_size) {
    if (!t) {
        snprintf(err, err_size, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost ||
        t->device.device_type == kDLROCMHost) {
        snprintf(err, err_size, "%s is a host tensor (DLPack device type %d); npu_ascend needs device memory "
                 "from its device_ops (aclrtMalloc)", what, (int)t->device.device_type);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data) {
        snprintf(err, err_size, "%s has no data", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim != ndim || !t->shape) {
        snprintf(err, err_size, "%s has %d dims, expected %d", what, t->ndim, ndim);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] < 0 || (shape && shape[i] >= 0 && t->shape[i] != shape[i])) {
            snprintf(err, err_size, "%s dim %d is %" PRId64 ", expected %" PRId64, what, i, t->shape[i],
                     shape ? shape[i] : -1);
            return SGL_ATTN_E_INVALID;
        }
        if (got) got[i] = t->shape[i];
    }
    DLDataType d = t->dtype;
    if (cls == NPU_T_INDEX) {
        if (d.code != kDLInt || (d.bits != 32 && d.bits != 64) || d.lanes != 1) {
            snprintf(err, err_size, "%s must be int32 or int64 (DLPack code %u, %u bits)", what, d.code, d.bits);
            return SGL_ATTN_E_INVALID;
        }
    } else {
        uint32_t bit = sgl_attn_dtype_bit(d);
        if (bit != SGL_ATTN_DT_F16 && bit != SGL_ATTN_DT_BF16) {
            snprintf(err, err_size, "%s must be float16 or bfloat16 for the fused operator (DLPack code %u, %u bits)",
                     what, d.code, d.bits);
            return bit ? SGL_ATTN_E_UNSUPPORTED : SGL_ATTN_E_INVALID;
        }
    }
    if (t->strides) {
        int64_t expect = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            if (t->shape[i] > 1 && t->strides[i] != expect) {
                snprintf(err, err_size, "%s is not compact row-major; npu_ascend takes compact tensors only", what);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            expect *= t->shape[i];
        }
    }
    if (t->byte_offset % (d.bits / 8)) {
        snprintf(err, err_size, "%s byte_offset %" PRIu64 " is not element aligned", what, t->byte_offset);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int npu_acl_dtype(const DLTensor *t) {
    if (t->dtype.code == kDLInt) return t->dtype.bits == 64 ? ACL_INT64 : ACL_INT32;
    return t->dtype.code == kDLBfloat ? ACL_BF16 : ACL_FLOAT16;
}

void *npu_tensor_addr(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

int npu_host_index_ok(const DLTensor *t, int64_t n) {
    return t && t->data && t->device.device_type == kDLCPU && t->ndim == 1 && t->shape && t->shape[0] == n &&
           t->dtype.code == kDLInt && (t->dtype.bits == 32 || t->dtype.bits == 64) &&
           (!t->strides || n <= 1 || t->strides[0] == 1);
}

int64_t npu_index_at(const void *base, int is64, int64_t i) {
    if (is64) {
        int64_t v;
        memcpy(&v, (const char *)base + i * 8, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, (const char *)base + i * 4, 4);
    return v;
}
