/* cuda_attn_check.c - tensor and model checks with messages that name the
 * call, the argument, the value and what was expected (pure C, no CUDA). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cuda_attn.h"

const void *ca_data(const DLTensor *t) { return (const char *)t->data + t->byte_offset; }

const char *ca_dtype_name(DLDataType t, char *buf, size_t size) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return "f32";
    case SGL_ATTN_DT_F16: return "f16";
    case SGL_ATTN_DT_BF16: return "bf16";
    case SGL_ATTN_DT_F64: return "f64";
    case SGL_ATTN_DT_FP8_E4M3: return "fp8_e4m3";
    default: break;
    }
    if (t.code == kDLInt && t.lanes == 1 && (t.bits == 32 || t.bits == 64)) return t.bits == 32 ? "int32" : "int64";
    snprintf(buf, size, "(code %u, bits %u, lanes %u)", t.code, t.bits, t.lanes);
    return buf;
}

static const char *dt_bit_name(uint32_t dt) {
    return dt == SGL_ATTN_DT_BF16 ? "bf16" : dt == SGL_ATTN_DT_F16 ? "f16" : dt == SGL_ATTN_DT_F32 ? "f32" : "?";
}

static void shape_str(const DLTensor *t, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    n += (size_t)snprintf(buf + n, size - n, "[");
    for (int i = 0; i < t->ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? ", " : "", t->shape[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

/* Present, on this CUDA device, with a shape array. */
static int check_device(const ca_msg *m, const DLTensor *t, const char *what, int device) {
    if (!t) {
        snprintf(m->buf, m->size, "%s: %s is NULL", m->call, what);
        return SGL_ATTN_E_INVALID;
    }
    if (!t->data) {
        snprintf(m->buf, m->size, "%s: %s has no data (NULL pointer)", m->call, what);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged) {
        snprintf(m->buf, m->size, "%s: %s is on device type %d: expected CUDA memory (kDLCUDA = %d)", m->call,
                 what, (int)t->device.device_type, (int)kDLCUDA);
        return SGL_ATTN_E_INVALID;
    }
    if (t->device.device_id != device) {
        snprintf(m->buf, m->size, "%s: %s is on CUDA device %d: expected device %d (the backend's)", m->call, what,
                 t->device.device_id, device);
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim < 1 || t->ndim > 8 || !t->shape) {
        snprintf(m->buf, m->size, "%s: %s has ndim %d: expected 1..8 with a shape", m->call, what, t->ndim);
        return SGL_ATTN_E_INVALID;
    }
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0) {
            snprintf(m->buf, m->size, "%s: %s dim %d is %" PRId64 ": expected >= 0", m->call, what, i, t->shape[i]);
            return SGL_ATTN_E_INVALID;
        }
    return SGL_ATTN_OK;
}

int ca_check_float3(const ca_msg *m, const DLTensor *t, const char *what, int device, uint32_t dt, int64_t n0,
                    int64_t n1, int64_t n2, int allow_merged, int64_t st[3]) {
    int rc = check_device(m, t, what, device);
    if (rc) return rc;
    char b1[64], b2[160];
    if (sgl_attn_dtype_bit(t->dtype) != dt) {
        snprintf(m->buf, m->size, "%s: %s dtype is %s: expected %s (the model's)", m->call, what,
                 ca_dtype_name(t->dtype, b1, sizeof b1), dt_bit_name(dt));
        return sgl_attn_dtype_bit(t->dtype) ? SGL_ATTN_E_UNSUPPORTED : SGL_ATTN_E_INVALID;
    }
    const int merged = t->ndim == 2 && allow_merged;
    if (!(t->ndim == 3 && t->shape[0] == n0 && t->shape[1] == n1 && t->shape[2] == n2) &&
        !(merged && t->shape[0] == n0 && t->shape[1] == n1 * n2)) {
        shape_str(t, b2, sizeof b2);
        snprintf(m->buf, m->size, "%s: %s shape is %s: expected [%" PRId64 ", %" PRId64 ", %" PRId64 "]%s", m->call,
                 what, b2, n0, n1, n2, allow_merged ? " (or the last two merged)" : "");
        return SGL_ATTN_E_INVALID;
    }
    if (t->strides) {
        if (t->strides[t->ndim - 1] != 1) {
            snprintf(m->buf, m->size, "%s: %s innermost stride is %" PRId64 ": expected 1", m->call, what,
                     t->strides[t->ndim - 1]);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (merged) {
            st[0] = t->strides[0];
            st[1] = n2;
        } else {
            st[0] = t->strides[0];
            st[1] = t->strides[1];
        }
        st[2] = 1;
    } else {
        st[2] = 1;
        st[1] = n2;
        st[0] = n1 * n2;
    }
    if (st[0] % 8 || st[1] % 8 || st[0] < 0 || st[1] < 0) {
        snprintf(m->buf, m->size, "%s: %s strides are (%" PRId64 ", %" PRId64 ", 1): expected multiples of 8 elements (16-byte rows)",
                 m->call, what, st[0], st[1]);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if ((uintptr_t)ca_data(t) % 16) {
        snprintf(m->buf, m->size, "%s: %s data at %p is not 16-byte aligned: expected 16-byte alignment", m->call,
                 what, ca_data(t));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int check_index_common(const ca_msg *m, const DLTensor *t, const char *what, int device) {
    int rc = check_device(m, t, what, device);
    if (rc) return rc;
    char b1[64];
    if (!(t->dtype.code == kDLInt && t->dtype.lanes == 1 && (t->dtype.bits == 32 || t->dtype.bits == 64))) {
        snprintf(m->buf, m->size, "%s: %s dtype is %s: expected int32 or int64", m->call, what,
                 ca_dtype_name(t->dtype, b1, sizeof b1));
        return SGL_ATTN_E_INVALID;
    }
    if (t->strides) {
        int64_t want = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (t->shape[i] > 1 && t->strides[i] != want) {
                snprintf(m->buf, m->size, "%s: %s is not compact (stride %" PRId64 " at dim %d, expected %" PRId64 ")",
                         m->call, what, t->strides[i], i, want);
                return SGL_ATTN_E_UNSUPPORTED;
            }
            want *= t->shape[i];
        }
    }
    if ((uintptr_t)ca_data(t) % (uintptr_t)(t->dtype.bits / 8)) {
        snprintf(m->buf, m->size, "%s: %s data at %p is misaligned for %s", m->call, what, ca_data(t),
                 ca_dtype_name(t->dtype, b1, sizeof b1));
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ca_check_index1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n) {
    int rc = check_index_common(m, t, what, device);
    if (rc) return rc;
    if (t->ndim != 1 || t->shape[0] < n) {
        char b[160];
        shape_str(t, b, sizeof b);
        snprintf(m->buf, m->size, "%s: %s shape is %s: expected [%" PRId64 "]", m->call, what, b, n);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ca_check_index2(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t min_rows,
                    int64_t min_cols) {
    int rc = check_index_common(m, t, what, device);
    if (rc) return rc;
    if (t->ndim != 2 || t->shape[0] < min_rows || t->shape[1] < min_cols || t->shape[0] > INT32_MAX ||
        t->shape[1] > INT32_MAX) {
        char b[160];
        shape_str(t, b, sizeof b);
        snprintf(m->buf, m->size, "%s: %s shape is %s: expected 2-D with >= %" PRId64 " rows and >= %" PRId64 " columns",
                 m->call, what, b, min_rows, min_cols);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ca_check_f32_1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n) {
    int rc = check_device(m, t, what, device);
    if (rc) return rc;
    char b1[64], b2[160];
    if (sgl_attn_dtype_bit(t->dtype) != SGL_ATTN_DT_F32) {
        snprintf(m->buf, m->size, "%s: %s dtype is %s: expected f32", m->call, what,
                 ca_dtype_name(t->dtype, b1, sizeof b1));
        return SGL_ATTN_E_INVALID;
    }
    if (t->ndim != 1 || t->shape[0] != n || (t->strides && t->strides[0] != 1)) {
        shape_str(t, b2, sizeof b2);
        snprintf(m->buf, m->size, "%s: %s shape is %s: expected compact [%" PRId64 "]", m->call, what, b2, n);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ca_model_check(const sgl_attn_model *m, char *why, size_t why_size) {
    if (!m) {
        snprintf(why, why_size, "model is NULL");
        return SGL_ATTN_E_INVALID;
    }
    if (m->is_mla) {
        snprintf(why, why_size, "MLA models are not served by cuda_attn (MHA/GQA/MQA only): use an MLA backend");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int hq = m->num_q_heads, hkv = m->num_kv_heads;
    if (hq < 1 || hkv < 1 || hq % hkv) {
        snprintf(why, why_size, "num_q_heads %d / num_kv_heads %d: expected both >= 1 and q a multiple of kv", hq,
                 hkv);
        return SGL_ATTN_E_INVALID;
    }
    const int dqk = m->head_dim_qk, dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk;
    if (dqk != dv) {
        snprintf(why, why_size, "head dims qk %d / v %d differ: cuda_attn needs qk == v", dqk, dv);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (dqk != 64 && dqk != 128 && dqk != 256) {
        snprintf(why, why_size, "head dim %d: cuda_attn serves 64, 128 and 256", dqk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const uint32_t ok = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    const uint32_t kvdt = m->kv_dtype ? m->kv_dtype : m->dtype;
    if (!(m->dtype & ok) || (m->dtype & (m->dtype - 1))) {
        snprintf(why, why_size, "dtype %s: cuda_attn serves f16 and bf16", dt_bit_name(m->dtype));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (kvdt != m->dtype) {
        snprintf(why, why_size, "kv dtype %s differs from q dtype %s: cuda_attn needs them equal (f16/f16 or bf16/bf16)",
                 dt_bit_name(kvdt), dt_bit_name(m->dtype));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->spec_tokens > 1) {
        snprintf(why, why_size, "speculative verify with %d tokens per request: cuda_attn decodes one token per request",
                 m->spec_tokens);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->index_topk > 0) {
        snprintf(why, why_size, "sparse attention (index_topk %d) is not served by cuda_attn", m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}
