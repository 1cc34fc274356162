/* xpu_tensor.c - DLTensor checks for the xpu_ocl plugin (see xpu_tensor.h):
 * the SDK's checks as the kernels read tensors, then what only OpenCL knows
 * (a cl_mem's size in buffer mode). */
#include <inttypes.h>
#include <stdio.h>

#include "xpu_tensor.h"

int xpu_tensor_check(const DLTensor *t, const char *what, int svm, int ndim, const int64_t *shape,
                     xpu_tclass cls, xpu_tview *v, int64_t *got, char *err, size_t err_size) {
    sgl_sdk_tensor_spec s = {what, NULL, ndim, {0}, 0, SGL_SDK_DEV_NOT_HOST, -1, SGL_SDK_T_COMPACT, 0};
    for (int i = 0; i < ndim && i < SGL_SDK_MAX_DIMS; i++) s.shape[i] = shape ? shape[i] : SGL_SDK_ANY;
    s.dtypes = cls == XPU_T_INDEX ? 0
               : cls == XPU_T_F32 ? SGL_ATTN_DT_F32
                                  : SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    int rc = sgl_sdk_check_tensor(t, &s, err, err_size);
    if (rc) return rc;
    if (!t->data) { /* an empty tensor still needs its handle: the kernels take a cl_mem */
        snprintf(err, err_size, "%s has no data (NULL device pointer)", what);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; got && i < ndim; i++) got[i] = t->shape[i];
    const uint32_t bit = sgl_attn_dtype_bit(t->dtype);
    v->code = cls == XPU_T_INDEX          ? t->dtype.bits == 64
              : bit == SGL_ATTN_DT_F32 ? XPU_DT_F32
              : bit == SGL_ATTN_DT_F16 ? XPU_DT_F16
                                       : XPU_DT_BF16;
    v->mem = t->data;
    v->off = t->byte_offset;
    if (svm) return SGL_ATTN_OK;
    size_t size = 0;
    cl_int e = clGetMemObjectInfo((cl_mem)t->data, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (e != CL_SUCCESS) {
        snprintf(err, err_size, "%s data is not a cl_mem of this device (%s)", what, xpu_cl_error_name(e));
        return SGL_ATTN_E_INVALID;
    }
    const uint64_t need = t->byte_offset + (uint64_t)sgl_sdk_numel(t) * (t->dtype.bits / 8u);
    if (need > size) {
        char a[96];
        sgl_sdk_shape_str(a, sizeof a, t->ndim, t->shape);
        snprintf(err, err_size, "%s %s at byte_offset %" PRIu64 " needs %" PRIu64 " bytes but its cl_mem has %zu",
                 what, a, t->byte_offset, need, size);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int xpu_host_index_check(const DLTensor *t, const char *what, int64_t n, char *err, size_t err_size) {
    const sgl_sdk_tensor_spec s = {what, "batch_size", 1, {n}, 0, SGL_SDK_DEV(kDLCPU), -1, SGL_SDK_T_COMPACT, 0};
    return sgl_sdk_check_tensor(t, &s, err, err_size);
}
