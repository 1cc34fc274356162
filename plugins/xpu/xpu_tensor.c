/* xpu_tensor.c - DLTensor checks for the xpu_ocl plugin (see xpu_tensor.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "xpu_tensor.h"

static const char *dtype_str(DLDataType t, char *buf, size_t n) {
    const char *c = t.code == kDLFloat ? "float" : t.code == kDLBfloat ? "bfloat" : t.code == kDLInt ? "int"
                    : t.code == kDLUInt ? "uint" : "code";
    snprintf(buf, n, "%s%u", c, (unsigned)t.bits);
    if (t.code > kDLBfloat) snprintf(buf, n, "code%u/%u bits", (unsigned)t.code, (unsigned)t.bits);
    if (t.lanes != 1) snprintf(buf + strlen(buf), n - strlen(buf), "x%u", (unsigned)t.lanes);
    return buf;
}

static void shape_str(const DLTensor *t, char *buf, size_t n) {
    size_t u = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && u < n; i++)
        u += (size_t)snprintf(buf + u, n - u, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    if (u < n) snprintf(buf + u, n - u, "]");
}

int xpu_tensor_check(const DLTensor *t, const char *what, int svm, int ndim, const int64_t *shape,
                     xpu_tclass cls, xpu_tview *v, int64_t *got, char *err, size_t err_size) {
    char a[96], b[32];
    if (!t) {
        snprintf(err, err_size, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost ||
        t->device.device_type == kDLROCMHost) {
        snprintf(err, err_size, "%s is a host tensor (DLPack device type %d); xpu_ocl needs a cl_mem "
                 "(kDLOpenCL) tensor allocated with its device_ops", what, (int)t->device.device_type);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data) {
        snprintf(err, err_size, "%s has no data (NULL device pointer)", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim != ndim || !t->shape) {
        snprintf(err, err_size, "%s has %d dims, expected %d", what, t->ndim, ndim);
        return SGL_ATTN_E_INVALID;
    }
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] < 0 || (shape && shape[i] >= 0 && t->shape[i] != shape[i])) {
            shape_str(t, a, sizeof a);
            char e[96];
            size_t u = (size_t)snprintf(e, sizeof e, "[");
            for (int k = 0; k < ndim && u < sizeof e; k++) {
                if (shape && shape[k] >= 0)
                    u += (size_t)snprintf(e + u, sizeof e - u, "%s%" PRId64, k ? ", " : "", shape[k]);
                else
                    u += (size_t)snprintf(e + u, sizeof e - u, "%s*", k ? ", " : "");
            }
            if (u < sizeof e) snprintf(e + u, sizeof e - u, "]");
            snprintf(err, err_size, "%s has shape %s, expected %s", what, a, e);
            return SGL_ATTN_E_INVALID;
        }
        if (got) got[i] = t->shape[i];
        count *= t->shape[i];
    }
    size_t elem = 0;
    DLDataType dt = t->dtype;
    if (cls == XPU_T_INDEX) {
        if (dt.code != kDLInt || (dt.bits != 32 && dt.bits != 64) || dt.lanes != 1) {
            snprintf(err, err_size, "%s has dtype %s, expected int32 or int64", what, dtype_str(dt, b, sizeof b));
            return SGL_ATTN_E_INVALID;
        }
        v->code = dt.bits == 64;
        elem = dt.bits / 8;
    } else {
        uint32_t bit = sgl_attn_dtype_bit(dt);
        int ok = cls == XPU_T_F32 ? bit == SGL_ATTN_DT_F32
                                  : (bit == SGL_ATTN_DT_F32 || bit == SGL_ATTN_DT_F16 || bit == SGL_ATTN_DT_BF16);
        if (!ok) {
            snprintf(err, err_size, "%s has dtype %s, expected %s", what, dtype_str(dt, b, sizeof b),
                     cls == XPU_T_F32 ? "float32" : "float32, float16 or bfloat16");
            return bit ? SGL_ATTN_E_UNSUPPORTED : SGL_ATTN_E_INVALID;
        }
        v->code = bit == SGL_ATTN_DT_F32 ? XPU_DT_F32 : bit == SGL_ATTN_DT_F16 ? XPU_DT_F16 : XPU_DT_BF16;
        elem = dt.bits / 8;
    }
    if (t->strides) {
        int64_t expect = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            if (t->shape[i] > 1 && t->strides[i] != expect) {
                snprintf(err, err_size, "%s is not compact row-major (stride[%d] = %" PRId64 ", expected %" PRId64
                         "); xpu_ocl takes compact tensors only", what, i, t->strides[i], expect);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            expect *= t->shape[i];
        }
    }
    if (t->byte_offset % elem) {
        snprintf(err, err_size, "%s byte_offset %" PRIu64 " is not a multiple of its element size %zu", what,
                 t->byte_offset, elem);
        return SGL_ATTN_E_INVALID;
    }
    v->mem = t->data;
    v->off = t->byte_offset;
    if (svm) return SGL_ATTN_OK;
    size_t size = 0;
    cl_int e = clGetMemObjectInfo((cl_mem)t->data, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (e != CL_SUCCESS) {
        snprintf(err, err_size, "%s data is not a cl_mem of this device (%s)", what, xpu_cl_error_name(e));
        return SGL_ATTN_E_INVALID;
    }
    uint64_t need = t->byte_offset + (uint64_t)count * elem;
    if (need > size) {
        shape_str(t, a, sizeof a);
        snprintf(err, err_size, "%s %s at byte_offset %" PRIu64 " needs %" PRIu64 " bytes but its cl_mem has %zu",
                 what, a, t->byte_offset, need, size);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int xpu_host_index_check(const DLTensor *t, const char *what, int64_t n, char *err, size_t err_size) {
    char b[32];
    if (t->device.device_type != kDLCPU) {
        snprintf(err, err_size, "%s is not a host (kDLCPU) tensor", what);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data || t->ndim != 1 || !t->shape || t->shape[0] != n) {
        snprintf(err, err_size, "%s must be a 1-dim host tensor of %" PRId64 " entries", what, n);
        return SGL_ATTN_E_INVALID;
    }
    if (t->dtype.code != kDLInt || (t->dtype.bits != 32 && t->dtype.bits != 64) || t->dtype.lanes != 1) {
        snprintf(err, err_size, "%s has dtype %s, expected int32 or int64", what, dtype_str(t->dtype, b, sizeof b));
        return SGL_ATTN_E_INVALID;
    }
    if (t->strides && n > 1 && t->strides[0] != 1) {
        snprintf(err, err_size, "%s is not compact", what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int64_t xpu_host_index(const DLTensor *t, int64_t i) {
    const char *p = (const char *)t->data + t->byte_offset;
    if (t->dtype.bits == 64) {
        int64_t v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p + i * 4, 4);
    return v;
}
