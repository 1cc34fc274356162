/* hip_check.c - tensor and model checks for hip_attn, with messages that name
 * the call, the tensor and what was expected (the SDK's tensor checks).  The
 * shared kernels' needs are cuda_attn's: 16-byte aligned rows of f16/bf16,
 * head dims 64/128/256. */
#include <inttypes.h>
#include <stdio.h>

#include "hip_internal.h"

/* The SDK's check with "<call>: <what>" as the tensor's name: HIP device memory. */
static int check(const ha_msg *m, const DLTensor *t, const char *what, int ndim, int64_t n0, int64_t n1,
                 uint32_t dtypes, uint32_t flags, uint32_t align) {
    char name[96];
    snprintf(name, sizeof name, "%s: %s", m->call, what);
    const sgl_sdk_tensor_spec s = {name, NULL, ndim, {n0, n1, 0, 0}, dtypes, SGL_SDK_DEV(kDLROCM), -1, flags, align};
    return sgl_sdk_check_tensor(t, &s, m->buf, m->size);
}

int ha_check_float3(const ha_msg *m, const DLTensor *t, const char *what, uint32_t dt, int64_t n0, int64_t n1,
                    int64_t n2, int64_t st[3]) {
    char name[96];
    snprintf(name, sizeof name, "%s: %s", m->call, what);
    /* the kernels load 16-byte rows */
    const sgl_sdk_tensor_spec s = {name, NULL, 3, {n0, n1, n2, 0}, dt, SGL_SDK_DEV(kDLROCM), -1, SGL_SDK_T_ROWS, 16};
    int rc = sgl_sdk_check_tensor(t, &s, m->buf, m->size);
    if (rc) return rc;
    st[0] = t->strides ? t->strides[0] : n1 * n2;
    st[1] = t->strides ? t->strides[1] : n2;
    st[2] = 1;
    return SGL_ATTN_OK;
}

int ha_check_index1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n) {
    return check(m, t, what, 1, n, 0, 0, SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST, 0);
}

int ha_check_index2(const ha_msg *m, const DLTensor *t, const char *what) {
    int rc = check(m, t, what, 2, 1, 1, 0, SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST, 0);
    if (!rc && (t->shape[0] > INT32_MAX || t->shape[1] > INT32_MAX)) {
        snprintf(m->buf, m->size, "%s: %s is [%" PRId64 ", %" PRId64 "]: expected both extents up to 2^31-1", m->call,
                 what, t->shape[0], t->shape[1]);
        rc = SGL_ATTN_E_UNSUPPORTED;
    }
    return rc;
}

int ha_check_f32_1(const ha_msg *m, const DLTensor *t, const char *what, int64_t n) {
    return check(m, t, what, 1, n, 0, SGL_ATTN_DT_F32, SGL_SDK_T_COMPACT, 0);
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
