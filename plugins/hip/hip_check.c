/* hip_check.c - tensor and model checks for hip_attn, with messages that name
 * the call, the tensor and what was expected.  The shared kernels' needs are
 * cuda_attn's: 16-byte aligned rows of f16/bf16, head dims 64/128/256. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hip_internal.h"

const void *ha_data(const DLTensor *t) { return (const char *)t->data + t->byte_offset; }

static int check_device(const ha_msg *m, const DLTensor *t, const char *what) {
    if (!t || !t->data || !t->shape) {
        snprintf(m->buf, m->size, "%s: %s is NULL or has no data/shape", m->call, what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost ||
        t->device.device_type == kDLROCMHost) {
        snprintf(m->buf, m->size, "%s: %s is host memory (DLPack device type %d): expected HIP device memory "
                 "(kDLROCM = %d) from hip_attn's device_ops", m->call, what, (int)t->device.device_type, (int)kDLROCM);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ha_check_float3(const ha_msg *m, const DLTensor *t, const char *what, uint32_t dt, int64_t n0, int64_t n1,
                    int64_t n2, int64_t st[3]) {
    int rc = check_device(m, t, what);
    if (rc) return rc;
    if (t->ndim != 3 || t->shape[0] != n0 || t->shape[1] != n1 || t->shape[2] != n2) {
        snprintf(m->buf, m->size, "%s: %s has %d dims [%" PRId64 ", %" PRId64 ", %" PRId64 "]: expected [%" PRId64
                 ", %" PRId64 ", %" PRId64 "]", m->call, what, t->ndim, t->ndim > 0 ? t->shape[0] : 0,
                 t->ndim > 1 ? t->shape[1] : 0, t->ndim > 2 ? t->shape[2] : 0, n0, n1, n2);
        return SGL_ATTN_E_INVALID;
    }
    if (sgl_attn_dtype_bit(t->dtype) != dt) {
        snprintf(m->buf, m->size, "%s: %s dtype (code %u, %u bits) differs from the model's %s", m->call, what,
                 t->dtype.code, t->dtype.bits, dt == SGL_ATTN_DT_BF16 ? "bfloat16" : "float16");
        return SGL_ATTN_E_INVALID;
    }
    st[2] = 1;
    st[1] = n2;
    st[0] = n1 * n2;
    if (t->strides) {
        for (int i = 0; i < 3; i++) st[i] = t->strides[i];
        if (st[2] != 1 || st[1] % 8 || st[0] % 8) {
            snprintf(m->buf, m->size, "%s: %s strides [%" PRId64 ", %" PRId64 ", %" PRId64 "]: the last must be 1 "
                     "and the others multiples of 8 elements", m->call, what, st[0], st[1], st[2]);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    }
    if ((uintptr_t)ha_data(t) % 16) {
        snprintf(m->buf, m->size, "%s: %s data is not 16-byte aligned", m->call, what);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int check_index(const ha_msg *m, const DLTensor *t, const char *what) {
    int rc = check_device(m, t, what);
    if (rc) return rc;
    if (t->dtype.code != kDLInt || (t->dtype.bits != 32 && t->dtype.bits != 64) || t->dtype.lanes != 1) {
        snprintf(m->buf, m->size, "%s: %s must be int32 or int64", m->call, what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->strides) {
        int64_t expect = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] > 1 && t->strides[i] != expect) {
                snprintf(m->buf, m->size, "%s: %s must be compact", m->call, what);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            expect *= t->shape[i];
        }
    }
    return SGL_ATTN_OK;
}

int ha_check_index1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n) {
    int rc = check_index(m, t, what);
    if (!rc && (t->ndim != 1 || t->shape[0] < n)) {
        snprintf(m->buf, m->size, "%s: %s must be 1-dim with at least %" PRId64 " entries", m->call, what, n);
        rc = SGL_ATTN_E_INVALID;
    }
    return rc;
}

int ha_check_index2(const ha_msg *m, const DLTensor *t, const char *what) {
    int rc = check_index(m, t, what);
    if (!rc && (t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1 || t->shape[0] > INT32_MAX ||
                t->shape[1] > INT32_MAX)) {
        snprintf(m->buf, m->size, "%s: %s must be 2-dim [rows, columns], both 1..2^31-1", m->call, what);
        rc = SGL_ATTN_E_INVALID;
    }
    return rc;
}

int ha_check_f32_1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n) {
    int rc = check_device(m, t, what);
    if (!rc && (t->ndim != 1 || t->shape[0] != n || sgl_attn_dtype_bit(t->dtype) != SGL_ATTN_DT_F32)) {
        snprintf(m->buf, m->size, "%s: %s must be float32 [%" PRId64 "]", m->call, what, n);
        rc = SGL_ATTN_E_INVALID;
    }
    return rc;
}

int ha_model_check(const sgl_attn_model *m, char *why, size_t why_size) {
    if (m->is_mla) {
        snprintf(why, why_size, "MLA models are not served by hip_attn (MHA/GQA/MQA only)");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->num_q_heads < 1 || m->num_kv_heads < 1 || m->num_q_heads % m->num_kv_heads) {
        snprintf(why, why_size, "heads %d/%d: num_q_heads must be a positive multiple of num_kv_heads",
                 m->num_q_heads, m->num_kv_heads);
        return SGL_ATTN_E_INVALID;
    }
    if (m->head_dim_qk != m->head_dim_v) {
        snprintf(why, why_size, "head dims qk %d / v %d differ: hip_attn needs qk == v", m->head_dim_qk,
                 m->head_dim_v);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->head_dim_qk != 64 && m->head_dim_qk != 128 && m->head_dim_qk != 256) {
        snprintf(why, why_size, "head dim %d: hip_attn serves 64, 128 and 256", m->head_dim_qk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if ((m->dtype != SGL_ATTN_DT_F16 && m->dtype != SGL_ATTN_DT_BF16) || m->kv_dtype != m->dtype) {
        snprintf(why, why_size, "dtypes q %#x / kv %#x: hip_attn serves f16/f16 and bf16/bf16", m->dtype, m->kv_dtype);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->spec_tokens > 1) {
        snprintf(why, why_size, "speculative verify (%d tokens per request) is not served by hip_attn", m->spec_tokens);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->index_topk > 0) {
        snprintf(why, why_size, "sparse attention (index_topk %d) is not served by hip_attn", m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}
