/* cuda_attn_check.c - tensor checks (the SDK's tensor specs) and the model
 * check, with messages that name the call, the tensor or field, the value and
 * what was expected (pure C, no CUDA). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_attn.h"
#include "sdk_text.h"

#define CA_DL_BOOL 6 /* DLPack's kDLBool (newer than the dlpack.h we build with) */

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

int ca_check_mask(const ca_msg *m, const DLTensor *t, int device) {
    const char *bad = NULL;
    int rc = SGL_ATTN_E_INVALID;
    if (!t->data) bad = "its data is NULL";
    else if (!(t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged) ||
             t->device.device_id != device)
        bad = "it is not in this device's memory";
    else if (t->ndim != 1 || !t->shape || t->shape[0] < 0) bad = "it is not 1-D";
    else if (!((t->dtype.code == kDLUInt || t->dtype.code == CA_DL_BOOL) && t->dtype.bits == 8 && t->dtype.lanes == 1))
        bad = "its dtype is not uint8 or bool";
    else if (t->strides && t->shape[0] > 1 && t->strides[0] != 1) bad = "it is not compact", rc = SGL_ATTN_E_UNSUPPORTED;
    if (!bad) return SGL_ATTN_OK;
    snprintf(m->buf, m->size, "%s: batch.custom_mask: %s; expected a compact 1-D uint8 / bool tensor on device %d",
             m->call, bad, device);
    return rc;
}

int ca_check_f32_1(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t n) {
    const sgl_sdk_tensor_spec s = {.ndim = 1, .shape = {n}, .dtypes = SGL_ATTN_DT_F32, .flags = SGL_SDK_T_COMPACT};
    return check(m, t, what, device, s);
}

int ca_check_lse(const ca_msg *m, const DLTensor *t, const char *what, int device, int64_t t_rows, int64_t hq) {
    const sgl_sdk_tensor_spec s = {.ndim = 2, .shape = {t_rows, hq}, .dtypes = SGL_ATTN_DT_F32,
                                   .flags = SGL_SDK_T_COMPACT | SGL_SDK_T_WRITTEN | SGL_SDK_T_INT32};
    return check(m, t, what, device, s);
}

int ca_check_ragged_shape(const ca_msg *m, const sgl_attn_ragged_args *a, int32_t max_reqs) {
    if (a->batch_size < 0 || a->batch_size > max_reqs) {
        snprintf(m->buf, m->size, "%s: batch_size %d: expected 0..%d (create's max_reqs)", m->call, a->batch_size,
                 max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (a->num_q_heads < 1 || a->num_kv_heads < 1 || a->num_q_heads % a->num_kv_heads) {
        snprintf(m->buf, m->size, "%s: num_q_heads %d / num_kv_heads %d: expected both >= 1 and q a multiple of kv",
                 m->call, a->num_q_heads, a->num_kv_heads);
        return SGL_ATTN_E_INVALID;
    }
    if (a->head_dim_v != CA_RAGGED_DV || (a->head_dim_qk != 128 && a->head_dim_qk != CA_RAGGED_DQK)) {
        snprintf(m->buf, m->size, "%s: head_dim_qk %d / head_dim_v %d: cuda_attn serves qk 128 / v 128 and qk %d / v %d",
                 m->call, a->head_dim_qk, a->head_dim_v, CA_RAGGED_DQK, CA_RAGGED_DV);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (!isfinite(a->sm_scale) || !isfinite(a->logit_softcap) || a->logit_softcap < 0.f ||
        (a->causal != 0 && a->causal != 1)) {
        snprintf(m->buf, m->size, "%s: sm_scale %g, logit_softcap %g, causal %d: expected finite, soft-cap >= 0, causal 0 or 1",
                 m->call, (double)a->sm_scale, (double)a->logit_softcap, a->causal);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

int ca_check_cu_mirror(const ca_msg *m, const DLTensor *t, const char *what, int32_t bs, int64_t rows,
                       int64_t *longest) {
    *longest = -1;
    if (!t) return SGL_ATTN_OK;
    const sgl_sdk_tensor_spec s = {.name = what, .ndim = 1, .shape = {(int64_t)bs + 1}, .devices = SGL_SDK_DEV_HOST,
                                   .device_id = -1, .flags = SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST};
    int rc = sgl_sdk_check_tensor(t, &s, m->buf, m->size);
    if (rc) {
        char call[48];
        snprintf(call, sizeof call, "%s: ", m->call);
        sgl_sdk_prepend(m->buf, m->size, call);
        return rc;
    }
    int64_t prev = 0, lg = 0;
    for (int32_t i = 0; i <= bs; i++) {
        const int64_t v = sgl_sdk_index_at(t, i);
        if ((i == 0 && v != 0) || v < prev || v > rows) {
            snprintf(m->buf, m->size, "%s: %s[%d] = %lld after %lld: expected 0 first, never decreasing, at most %lld "
                     "(the tensor's rows)", m->call, what, i, (long long)v, (long long)prev, (long long)rows);
            return SGL_ATTN_E_INVALID;
        }
        if (i && v - prev > lg) lg = v - prev;
        prev = v;
    }
    *longest = lg;
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
    if (dqk != dv && !(dqk == CA_RAGGED_DQK && dv == CA_RAGGED_DV)) {
        snprintf(why, why_size,
                 "head dims qk %d / v %d differ: cuda_attn needs qk == v, or qk %d / v %d (forward_ragged only)", dqk,
                 dv, CA_RAGGED_DQK, CA_RAGGED_DV);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (dqk == dv && dqk != 64 && dqk != 128 && dqk != 256) {
        snprintf(why, why_size, "head dim %d: cuda_attn serves 64, 128 and 256", dqk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const uint32_t ok = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    const uint32_t kvdt = m->kv_dtype ? m->kv_dtype : m->dtype;
    if (!(m->dtype & ok) || (m->dtype & (m->dtype - 1))) {
        snprintf(why, why_size, "dtype %s: cuda_attn serves f16 and bf16", dt_bit_name(m->dtype));
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (kvdt == SGL_ATTN_DT_FP8_E4M3 && dqk != dv) {
        snprintf(why, why_size, "fp8_e4m3 KV with head dims qk %d / v %d: forward_ragged takes f16 / bf16 K and V",
                 dqk, dv);
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
    const int32_t type = SGL_ATTN_FIELD_OR_0(sgl_attn_model, m, attn_type);
    if (type < SGL_ATTN_TYPE_CAUSAL || type > SGL_ATTN_TYPE_ENCODER_ONLY) {
        snprintf(why, why_size, "attn_type %d: expected 0 causal, 1 bidirectional or 2 encoder-only", type);
        return SGL_ATTN_E_INVALID;
    }
    if (type != SGL_ATTN_TYPE_CAUSAL && m->sliding_window >= 0) {
        snprintf(why, why_size, "attn_type %d with sliding_window %d: cuda_attn serves a window on causal models only",
                 type, m->sliding_window);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->index_topk > 0) {
        snprintf(why, why_size, "sparse attention (index_topk %d) is not served by cuda_attn", m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->struct_size >= offsetof(sgl_attn_model, dca_reserved_) && m->dca_chunk_size > 0) {
        /* dense dual chunk attention only (the DCA kernels of decode_mma.cu / extend_mma.cu) */
        if (m->dca_sparse) {
            snprintf(why, why_size,
                     "dual chunk attention with sparse_attention_enabled: prompts above %d tokens use the "
                     "vertical-slash sparse prefill, which cuda_attn does not implement; set "
                     "\"sparse_attention_enabled\": false in dual_chunk_attention_config for dense dual chunk "
                     "attention",
                     m->dca_sparse_threshold);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (kvdt == SGL_ATTN_DT_FP8_E4M3) {
            snprintf(why, why_size, "dual chunk attention with an fp8_e4m3 KV pool: cuda_attn serves it on f16 / "
                                    "bf16 pools");
            return SGL_ATTN_E_UNSUPPORTED;
        }
    }
    return SGL_ATTN_OK;
}

int ca_check_dual_chunk(const ca_msg *m, const sgl_attn_forward_args *a, const ca_dca_ctx *c, int64_t qs_st[3],
                        int64_t qi_st[3]) {
    const sgl_attn_dual_chunk *dc = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk);
    const sgl_attn_layer *L = a->layer;
    if (dc->struct_size < sizeof *dc) {
        snprintf(m->buf, m->size, "%s: dual_chunk.struct_size %u: expected at least %zu", m->call, dc->struct_size,
                 sizeof *dc);
        return SGL_ATTN_E_INVALID;
    }
    if (dc->chunk_size < 1 || dc->local_size < 0 || dc->local_size >= dc->chunk_size ||
        dc->original_max_position < 0) {
        snprintf(m->buf, m->size,
                 "%s: dual_chunk chunk_size %d, local_size %d, original_max_position %d: expected 0 <= local_size < "
                 "chunk_size and original_max_position >= 0",
                 m->call, dc->chunk_size, dc->local_size, dc->original_max_position);
        return SGL_ATTN_E_INVALID;
    }
    const char *other = L->is_cross                 ? "cross attention"
                        : c->has_enc                ? "an encoder-decoder batch (encoder_lens)"
                        : L->sliding_window >= 0    ? "a sliding window"
                        : L->logit_softcap > 0.f    ? "a logit soft-cap"
                        : L->sinks                  ? "attention sinks"
                        : c->kv_fp8                 ? "an fp8_e4m3 KV pool"
                        : SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, slot_map) ? "a slot map (layer.slot_map)"
                        : a->batch && SGL_ATTN_FIELD_OR_0(sgl_attn_batch, a->batch, page_table)
                            ? "a page table (batch.page_table)"
                        : SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse) ? "an LSE output (forward args lse)"
                                                                            : NULL;
    if (other) {
        snprintf(m->buf, m->size,
                 "%s: layer %d: dual chunk attention with %s: cuda_attn serves dual chunk attention on plain "
                 "causal layers only",
                 m->call, L->layer_id, other);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = ca_check_float3(m, dc->q_succ, "dual_chunk.q_succ", c->device, c->dt, c->tokens, c->hq, c->head_dim, 1,
                             qs_st);
    if (!rc)
        rc = ca_check_float3(m, dc->q_inter, "dual_chunk.q_inter", c->device, c->dt, c->tokens, c->hq, c->head_dim,
                             1, qi_st);
    return rc;
}

/* An ABI 1.2 field that is set but not served: refused by name, never ignored. */
static int refuse(const ca_msg *m, const char *what, const char *why) {
    snprintf(m->buf, m->size, "%s: %s is set (ABI 1.2): cuda_attn does not serve it (%s)", m->call, what, why);
    return SGL_ATTN_E_UNSUPPORTED;
}

int ca_check_enc_loc(const ca_msg *m, const sgl_attn_batch *bt, int device, int32_t bs, int64_t *n) {
    *n = -1;
    const DLTensor *el = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, encoder_out_cache_loc);
    if (!el) return SGL_ATTN_OK;
    if (!bt->encoder_lens) {
        snprintf(m->buf, m->size, "%s: batch.encoder_out_cache_loc is set but batch.encoder_lens is NULL", m->call);
        return SGL_ATTN_E_INVALID;
    }
    /* its entries against the table: on the device (encoder_loc_check.cu) */
    const sgl_sdk_tensor_spec s = {.meaning = "sum of encoder_lens", .ndim = 1, .shape = {0},
                                   .flags = SGL_SDK_T_COMPACT | SGL_SDK_T_AT_LEAST | SGL_SDK_T_INT32};
    int rc = check(m, el, "batch.encoder_out_cache_loc", device, s);
    if (rc) return rc;
    const DLTensor *en = bt->encoder_lens_cpu;
    if (sgl_sdk_host_index(en, bs)) {
        int64_t sum = 0;
        for (int32_t i = 0; i < bs; i++) sum += sgl_sdk_index_at(en, i);
        if (sum != el->shape[0]) {
            snprintf(m->buf, m->size,
                     "%s: batch.encoder_out_cache_loc has %lld entries: expected the sum of encoder_lens, %lld",
                     m->call, (long long)el->shape[0], (long long)sum);
            return SGL_ATTN_E_INVALID;
        }
    }
    *n = el->shape[0];
    return SGL_ATTN_OK;
}

int ca_refuse_unserved_fwd(const ca_msg *m, const sgl_attn_forward_args *a) {
    const sgl_attn_layer *L = a->layer;
    const float qd = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale);
    if (qd != 0.f && qd != 1.f) return refuse(m, "layer.q_descale", "q is f16 / bf16, never fp8");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, q_descale_tensor))
        return refuse(m, "layer.q_descale_tensor", "q is f16 / bf16, never fp8");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope)) return refuse(m, "forward args q_rope", "not MLA");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope)) return refuse(m, "forward args k_rope", "not MLA");
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices))
        return refuse(m, "forward args topk_indices", "dense attention only");
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
