/* npu_tensor.c - see npu_tensor.h. */
#include "npu_tensor.h"

int npu_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape, npu_tclass cls,
                     int64_t *got, char *err, size_t err_size) {
    sgl_sdk_tensor_spec s = {what, NULL, ndim, {0}, cls == NPU_T_INDEX ? 0u : SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16,
                             SGL_SDK_DEV_NOT_HOST, -1, SGL_SDK_T_COMPACT, 0};
    for (int i = 0; i < ndim && i < SGL_SDK_MAX_DIMS; i++) s.shape[i] = shape ? shape[i] : SGL_SDK_ANY;
    int rc = sgl_sdk_check_tensor(t, &s, err, err_size);
    if (rc) return rc;
    if (!t->data) {
        sgl_sdk_str(err, err_size, "%s has no data", what);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; got && i < ndim; i++) got[i] = t->shape[i];
    return SGL_ATTN_OK;
}

int npu_acl_dtype(const DLTensor *t) {
    if (t->dtype.code == kDLInt) return t->dtype.bits == 64 ? ACL_INT64 : ACL_INT32;
    return t->dtype.code == kDLBfloat ? ACL_BF16 : ACL_FLOAT16;
}

void *npu_tensor_addr(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

int npu_host_index_ok(const DLTensor *t, int64_t n) {
    const sgl_sdk_tensor_spec s = {"", NULL, 1, {n}, 0, SGL_SDK_DEV(kDLCPU), -1, SGL_SDK_T_COMPACT, 0};
    return t && t->data && sgl_sdk_check_tensor(t, &s, NULL, 0) == SGL_ATTN_OK;
}
