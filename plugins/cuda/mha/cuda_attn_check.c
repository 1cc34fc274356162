/* cuda_attn_check.c - tensor checks (the SDK's tensor specs) and the model
 * check, with messages that name the call, the tensor or field, the value and
 * what was expected (pure C, no CUDA). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_attn.h"
#include "sdk_text.h"

static const char *dt_bit_name(uint32_t dt) {
    return dt == SGL_ATTN_DT_BF16   ? "bf16"
           : dt == SGL_ATTN_DT_F16  ? "f16"
           : dt == SGL_ATTN_DT_F32  ? "f32"
           : dt == SGL_ATTN_DT_FP8_E4M3 ? "fp8_e4m3"
           : dt == SGL_ATTN_DT_FP8_E5M2 ? "fp8_e5m2"
                                        : "?";
}

/* t against spec s named `what`, in CUDA memory of `device`; a failure's
 * message is prefixed with the call (only then: the forwards format nothing
 * on their way to a launch). */
static int check(const ca_msg *m, const DLTensor *t, const char *what, int device, sgl_sdk_tensor_spec s) {
    s.name = what;
    s.devices = SGL_SDK_DEV_CUDA;
    s.device_id = device;
    const int rc = sgl_sdk_check_tensor(t, &s, m->buf, m->size);
    if (rc) {
        char call[48];
        snprintf(call, sizeof call, "%s: ", m->call);
        sgl_sdk_prepend(m->buf, m->size, call);
    }
    return rc;
}

int ca_check_float3(const ca_msg *m, const DLTensor *t, const char *what, int device, uint32_t dt, int64_t n0,
                    int64_t n1, int64_t n2, int allow_merged, int64_t st[3]) {
    const sgl_sdk_tensor_spec s = {
        .ndim = 3, .shape = {n0, n1, n2}, .dtypes = dt, .align = 16, /* the kernels load 16-byte rows */
        .flags = SGL_SDK_T_ROWS | SGL_SDK_T_INT32 | (allow_merged ? SGL_SDK_T_MERGED : 0)};
    int rc = check(m, t, what, device, s);
    if (rc) return rc;
    int64_t e[SGL_SDK_MAX_DIMS];
    sgl_sdk_strides(t, &s, e);
    st[0] = e[0];
    st[1] = e[1];
    st[2] = e[2];
    return SGL_ATTN_OK;
}

int ca_check_index1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n) {
    const sgl_sdk_tensor_spec s = {.ndim = 1, .shape = {n}, .flags = SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST};
    return check(m, t, what, device, s);
}

int ca_check_index2(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t min_rows,
                    int64_t min_cols) {
    const sgl_sdk_tensor_spec s = {.ndim = 2, .shape = {min_rows, min_cols},
                                   .flags = SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST | SGL_SDK_T_INT32};
    return check(m, t, what, device, s);
}

int ca_check_f32_1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n) {
    const sgl_sdk_tensor_spec s = {.ndim = 1, .shape = {n}, .dtypes = SGL_ATTN_DT_F32, .flags = SGL_SDK_T_COMPACT};
    return check(m, t, what, device, s);
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
    if (kvdt == SGL_ATTN_DT_FP8_E4M3) {
        /* fp8 pools run on the register-fed decode (decode_reg.cu's KV template) */
        const int group = hq / hkv;
        if ((dqk != 64 && dqk != 128) || group > ATTN_DECODE_REG_MAX_GROUP) {
            snprintf(why, why_size,
                     "fp8_e4m3 KV with head dim %d, GQA group %d: cuda_attn serves fp8 KV at head dims 64/128 with "
                     "groups up to %d",
                     dqk, group, ATTN_DECODE_REG_MAX_GROUP);
            return SGL_ATTN_E_UNSUPPORTED;
        }
    } else if (kvdt != m->dtype) {
        snprintf(why, why_size,
                 "kv dtype %s differs from q dtype %s: cuda_attn needs them equal (f16/f16 or bf16/bf16) or an "
                 "fp8_e4m3 pool",
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

/* An ABI 1.2 field that is set but not served: refused by name, never ignored. */
static int refuse(const ca_msg *m, const char *what, const char *why) {
    snprintf(m->buf, m->size, "%s: %s is set (ABI 1.2): cuda_attn does not serve it (%s)", m->call, what, why);
    return SGL_ATTN_E_UNSUPPORTED;
}

int ca_refuse_unserved_batch(const ca_msg *m, const sgl_attn_batch *bt) {
    const char *no_caps = "its caps do not declare it";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask)) return refuse(m, "batch.custom_mask", no_caps);
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, mask_indptr)) return refuse(m, "batch.mask_indptr", no_caps);
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc))
        return refuse(m, "batch.encoder_out_cache_loc", no_caps);
    return SGL_ATTN_OK;
}

int ca_refuse_unserved_fwd(const ca_msg *m, const sgl_attn_forward_args *a) {
    const sgl_attn_layer *L = a->layer;
    const char *no_caps = "its caps do not declare it";
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type) != SGL_ATTN_TYPE_CAUSAL)
        return refuse(m, "layer.attn_type (not causal)", no_caps);
    const float qd = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale);
    if (qd != 0.f && qd != 1.f) return refuse(m, "layer.q_descale", "q is f16 / bf16, never fp8");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale_tensor))
        return refuse(m, "layer.q_descale_tensor", "q is f16 / bf16, never fp8");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse)) return refuse(m, "forward args lse", no_caps);
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope)) return refuse(m, "forward args q_rope", "not MLA");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope)) return refuse(m, "forward args k_rope", "not MLA");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices))
        return refuse(m, "forward args topk_indices", "dense attention only");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk))
        return refuse(m, "forward args dual_chunk", "plain attention only (dual chunk is served by cpu_ref)");
    if (a->linear) {
        snprintf(m->buf, m->size, "%s: forward args linear is set: cuda_attn serves attention layers only", m->call);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int ca_check_page_table(const ca_msg *m, const DLTensor *pt, int device, int32_t bs, int32_t page_size,
                        int32_t *shift) {
    *shift = 0;
    if (page_size < 1 || (page_size & (page_size - 1))) {
        snprintf(m->buf, m->size,
                 "%s: batch.page_table with page_size %d: cuda_attn serves page tables of power-of-two page sizes",
                 m->call, page_size);
        return page_size < 1 ? SGL_ATTN_E_INVALID : SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = ca_check_index2(m, pt, "batch.page_table", device, bs > 0 ? bs : 1, 1);
    if (rc) return rc;
    while ((1 << *shift) < page_size) (*shift)++;
    if (pt->shape[1] > (int64_t)(INT32_MAX >> *shift)) {
        snprintf(m->buf, m->size,
                 "%s: batch.page_table has %lld pages per request of %d tokens: expected at most %d tokens per "
                 "request (31 bits)",
                 m->call, (long long)pt->shape[1], page_size, INT32_MAX);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int ca_check_slot_map(const ca_msg *m, const DLTensor *map, int device) {
    int rc = ca_check_index1(m, map, "layer.slot_map", device, 1);
    if (rc) return rc;
    if (map->shape[0] > INT32_MAX) {
        snprintf(m->buf, m->size, "%s: layer.slot_map has %lld entries: expected at most %d (31 bits)", m->call,
                 (long long)map->shape[0], INT32_MAX);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

/* A scale tensor: [1] (or a scalar) fp32 on the device. */
static int check_scale_tensor(const ca_msg *m, const DLTensor *t, const char *what, int device) {
    const sgl_sdk_tensor_spec s = {.ndim = 1, .shape = {1}, .dtypes = SGL_ATTN_DT_F32, .flags = SGL_SDK_T_COMPACT};
    if (t && t->ndim == 0) { /* a 0-d scalar tensor (torch's scalar): one float */
        if (sgl_attn_dtype_bit(t->dtype) != SGL_ATTN_DT_F32) {
            snprintf(m->buf, m->size, "%s: %s: a 0-d tensor of dtype code %u bits %u: expected fp32", m->call, what,
                     t->dtype.code, t->dtype.bits);
            return SGL_ATTN_E_INVALID;
        }
        sgl_sdk_tensor_spec s0 = s;
        s0.ndim = 0;
        return check(m, t, what, device, s0);
    }
    return check(m, t, what, device, s);
}

int ca_check_kv_scales(const ca_msg *m, const sgl_attn_layer *L, int device, const float **k_dev,
                       const float **v_dev) {
    *k_dev = *v_dev = NULL;
    const DLTensor *kt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, k_scale_tensor);
    const DLTensor *vt = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, v_scale_tensor);
    int rc = SGL_ATTN_OK;
    if (kt) rc = check_scale_tensor(m, kt, "layer.k_scale_tensor", device);
    if (!rc && vt) rc = check_scale_tensor(m, vt, "layer.v_scale_tensor", device);
    if (rc) return rc;
    if (!kt && !(isfinite(L->k_scale) && L->k_scale > 0.f)) {
        snprintf(m->buf, m->size, "%s: layer %d k_scale %g for the fp8 pool: expected a finite value > 0", m->call,
                 L->layer_id, (double)L->k_scale);
        return SGL_ATTN_E_INVALID;
    }
    if (!vt && !(isfinite(L->v_scale) && L->v_scale > 0.f)) {
        snprintf(m->buf, m->size, "%s: layer %d v_scale %g for the fp8 pool: expected a finite value > 0", m->call,
                 L->layer_id, (double)L->v_scale);
        return SGL_ATTN_E_INVALID;
    }
    *k_dev = kt ? (const float *)sgl_sdk_data(kt) : NULL;
    *v_dev = vt ? (const float *)sgl_sdk_data(vt) : NULL;
    return SGL_ATTN_OK;
}
