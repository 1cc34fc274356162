/* tensor_check.c - the DLTensor checks shared by init_forward_metadata and
 * forward: host memory, compact strides, dtype, shape; every message names
 * the tensor, what it is and what was expected. */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"
#include "tensor_check.h"

const void *cref_data(const DLTensor *t) { return (const unsigned char *)t->data + t->byte_offset; }

int64_t cref_numel(const DLTensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static void fmt_shape(char *buf, size_t size, const DLTensor *t) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int i = 0; i < t->ndim && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

int cref_check_host(cref_backend *b, const DLTensor *t, const char *what) {
    if (!t) {
        cref_set_error(b, "%s is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost &&
        t->device.device_type != kDLROCMHost) {
        cref_set_error(b, "%s is on device type %d (id %d); cpu_ref reads host memory only", what,
                       (int)t->device.device_type, t->device.device_id);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim < 1 || t->ndim > 8 || !t->shape) {
        cref_set_error(b, "%s has ndim %d; expected 1..8 with a shape", what, t->ndim);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0) {
            cref_set_error(b, "%s.shape[%d] = %lld; expected >= 0", what, i, (long long)t->shape[i]);
            return SGL_ATTN_E_INVALID;
        }
    if (t->strides) {
        int64_t expect = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] != 1 && t->strides[i] != expect) {
                cref_set_error(b, "%s.strides[%d] = %lld; cpu_ref takes compact row-major tensors (expected %lld)",
                               what, i, (long long)t->strides[i], (long long)expect);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            expect *= t->shape[i];
        }
    }
    if (!t->data && cref_numel(t) > 0) {
        cref_set_error(b, "%s.data is NULL", what);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int cref_check_shape(cref_backend *b, const DLTensor *t, const char *what, int ndim, const int64_t *shape,
                     const char *meaning) {
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (ok) return SGL_ATTN_OK;
    char got[96], want[96];
    fmt_shape(got, sizeof got, t);
    DLTensor w = {.ndim = ndim, .shape = (int64_t *)(uintptr_t)shape};
    fmt_shape(want, sizeof want, &w);
    cref_set_error(b, "%s has shape %s; expected %s (%s)", what, got, want, meaning);
    return SGL_ATTN_E_INVALID;
}

/* [n0, n1, n2] or its flattened [n0, n1 * n2]. */
int cref_check_shape3(cref_backend *b, const DLTensor *t, const char *what, int64_t n0, int64_t n1, int64_t n2,
                      const char *meaning) {
    if (t->ndim == 2 && t->shape[0] == n0 && t->shape[1] == n1 * n2) return SGL_ATTN_OK;
    const int64_t s[3] = {n0, n1, n2};
    return cref_check_shape(b, t, what, 3, s, meaning);
}

int cref_check_index(cref_backend *b, const DLTensor *t, const char *what, int64_t n, const char *meaning) {
    int rc = cref_check_host(b, t, what);
    if (rc) return rc;
    if (t->dtype.code != kDLInt || t->dtype.lanes != 1 || (t->dtype.bits != 32 && t->dtype.bits != 64)) {
        char buf[64];
        cref_set_error(b, "%s has dtype %s; expected int32 or int64", what, cref_dtype_name(t->dtype, buf, sizeof buf));
        return SGL_ATTN_E_INVALID;
    }
    const int64_t s[1] = {n};
    return cref_check_shape(b, t, what, 1, s, meaning);
}

int cref_check_float(cref_backend *b, const DLTensor *t, const char *what, uint32_t *dt) {
    uint32_t bit = sgl_attn_dtype_bit(t->dtype);
    const uint32_t claimed = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64;
    if (!(bit & claimed)) {
        char buf[64];
        cref_set_error(b, "%s has dtype %s; cpu_ref claims f32, f16, bf16 and f64", what,
                       cref_dtype_name(t->dtype, buf, sizeof buf));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    *dt = bit;
    return SGL_ATTN_OK;
}
