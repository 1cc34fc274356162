/* sparse_mla.c - DSA's sparse MLA on cpu_ref: each query token attends over
 * the pool slots its row of topk_indices names (page-encoded, -1 = none),
 * in float64, with the absorbed MLA layout (one latent head: scores over all
 * head_dim_qk dims, values = its first head_dim_v dims).  The dense job
 * (check_args.c) is reused for q, out, the pool and the scale.  The pool may
 * be FlashMLA's fp8 record (SGL_ATTN_DSA_KV_FP8_RECORD), dequantised here:
 * e4m3 x its block's scale, RoPE bf16. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"

const DLTensor *cref_topk_of(const sgl_attn_forward_args *a) {
    if (a->struct_size < offsetof(sgl_attn_forward_args, topk_indices) + sizeof a->topk_indices) return NULL;
    return a->topk_indices;
}

int cref_record_check(cref_backend *b, const sgl_attn_forward_args *a, int *rec) {
    const sgl_attn_layer *L = a->layer;
    const DLTensor *kc = L->k_cache;
    const int id = L->layer_id;
    *rec = 0;
    if (!kc) return SGL_ATTN_OK;
    const DLDataType dt = kc->dtype;
    const int u8 = dt.code == kDLUInt && dt.bits == 8 && dt.lanes == 1;
    const int wide = kc->ndim == 3 && kc->shape && kc->shape[2] == CREF_REC_BYTES;
    if (!u8 && !wide) return SGL_ATTN_OK; /* a pool of values: check_args.c checks it */
    if (!u8)
        return cref_set_error(b, "layer %d: k_cache [.., .., 656] of dtype code %d, %d bits: FlashMLA's fp8 record "
                                 "pool is uint8 [slots, 1, 656] (512 e4m3 bytes, 4 fp32 scales, 64 bf16 RoPE values)",
                              id, dt.code, dt.bits),
               SGL_ATTN_E_INVALID;
    if (!wide || kc->shape[1] != 1)
        return cref_set_error(b, "layer %d: k_cache is uint8 %s: FlashMLA's fp8 record pool is [slots, 1, 656] (512 "
                                 "e4m3 bytes, 4 fp32 scales, 64 bf16 RoPE values)",
                              id, kc->ndim == 3 && kc->shape ? "of another shape" : "but not 3-D"),
               SGL_ATTN_E_INVALID;
    if (!cref_topk_of(a))
        return cref_set_error(b, "layer %d: k_cache is FlashMLA's fp8 record (uint8 [slots, 1, 656]): cpu_ref reads "
                                 "it in DSA sparse MLA only (topk_indices given); dense MLA reads a [slots, 1, 576] "
                                 "pool",
                              id),
               SGL_ATTN_E_UNSUPPORTED;
    if (L->v_cache || L->num_kv_heads != 1 || L->head_dim_qk != CREF_REC_DIMS || L->head_dim_v != CREF_REC_LATENT)
        return cref_set_error(b, "layer %d: k_cache is FlashMLA's fp8 record, which holds MLA's 576-dim latent row; "
                                 "expected v_cache NULL, num_kv_heads 1, head_dim_qk 576, head_dim_v 512 (got %s, %d, "
                                 "%d, %d)",
                              id, L->v_cache ? "a v_cache" : "NULL", L->num_kv_heads, L->head_dim_qk, L->head_dim_v),
               SGL_ATTN_E_INVALID;
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, k_scale_tensor) ||
        SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, v_scale_tensor) || L->k_scale != 1.f)
        return cref_set_error(b, "layer %d: k_cache is FlashMLA's fp8 record, which holds its own scales; expected "
                                 "k_scale 1 and no k_scale_tensor / v_scale_tensor (got k_scale %g%s)",
                              id, (double)L->k_scale,
                              SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, k_scale_tensor) ? " and a k_scale_tensor"
                              : SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, v_scale_tensor) ? " and a v_scale_tensor"
                                                                                         : ""),
               SGL_ATTN_E_INVALID;
    DLTensor bytes = *kc; /* the bytes as one-byte elements: the checker's place and layout tests */
    bytes.dtype.code = SGL_ATTN_DL_FLOAT8_E4M3FN_CODE;
    int rc = cref_check(b, &bytes, "layer.k_cache", "slots, 1, 656: FlashMLA's fp8 record", SGL_ATTN_DT_FP8_E4M3, 0, 3,
                        SGL_SDK_ANY, 1, CREF_REC_BYTES);
    *rec = rc == SGL_ATTN_OK;
    return rc;
}

int cref_sparse_check(cref_backend *b, const sgl_attn_forward_args *a, const DLTensor *ti) {
    const sgl_attn_layer *L = a->layer;
    const cref_job *J = &b->job;
    if (L->v_cache != NULL || J->hkv != 1)
        return cref_set_error(b, "layer %d: topk_indices given, but sparse attention (DSA) is MLA only: expected "
                                 "v_cache NULL and one latent KV head (num_kv_heads %d)",
                              L->layer_id, J->hkv),
               SGL_ATTN_E_UNSUPPORTED;
    if (J->window >= 0 || J->softcap != 0 || J->sinks || J->cross)
        return cref_set_error(b, "layer %d: topk_indices given with a sliding window, soft-cap, sinks or cross "
                                 "attention: DSA's sparse MLA has none of them",
                              L->layer_id),
               SGL_ATTN_E_UNSUPPORTED;
    const int fp8_q = (J->q_dt & CREF_FP8_DTYPES) != 0, fp8_pool = !J->rec && (J->kv_dt & CREF_FP8_DTYPES);
    if (J->lse || J->q_rope || fp8_q || fp8_pool)
        return cref_set_error(b, "layer %d: topk_indices given with %s: cpu_ref's sparse MLA takes the "
                                 "concatenated q of 16/32/64 bits, a 16/32/64-bit pool or FlashMLA's fp8 record "
                                 "(uint8 [slots, 1, 656]), and no LSE output",
                              L->layer_id,
                              J->lse      ? "an LSE output"
                              : J->q_rope ? "q_rope / k_rope"
                              : fp8_q     ? "an fp8 q"
                                          : "an fp8 pool of values ([slots, 1, head_dim_qk])"),
               SGL_ATTN_E_UNSUPPORTED;
    int rc = cref_check(b, ti, "topk_indices", "DSA's selected pool slots per query token", 0, 0, 2,
                        b->num_tokens, SGL_SDK_ANY, 0);
    if (rc) return rc;
    if (ti->dtype.code != kDLInt || ti->dtype.bits != 32)
        return cref_set_error(b, "topk_indices: expected int32 (page-encoded pool slots, -1 = none), got %d-bit "
                                 "code %d",
                              ti->dtype.bits, ti->dtype.code),
               SGL_ATTN_E_INVALID;
    const int64_t K = ti->shape[1], n = (int64_t)b->num_tokens * K;
    const int32_t *idx = sgl_sdk_data(ti);
    if (K < 1) return cref_set_error(b, "topk_indices: [%d, 0]: expected at least one column", b->num_tokens),
                      SGL_ATTN_E_INVALID;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < -1 || idx[i] >= J->pool_slots)
            return cref_set_error(b, "topk_indices[%lld][%lld] = %d: expected -1 (none) or a pool slot "
                                     "0..%lld",
                                  (long long)(i / K), (long long)(i % K), idx[i], (long long)J->pool_slots - 1),
                   SGL_ATTN_E_INVALID;
    b->topk = idx;
    b->topk_k = K;
    return SGL_ATTN_OK;
}

/* Slot s's key row in float64: the pool's values, or a record dequantised. */
static void key_row(const cref_job *J, int64_t slot, double *k) {
    if (!J->rec) {
        for (int d = 0; d < J->dqk; d++) k[d] = cref_load_f(J->k_cache, slot * J->k_slot + d, J->kv_dt);
        return;
    }
    const unsigned char *r = J->k_cache + slot * CREF_REC_BYTES;
    float sc[CREF_REC_LATENT / SGL_ATTN_DSA_SCALE_BLOCK];
    memcpy(sc, r + CREF_REC_SCALES, sizeof sc);
    for (int d = 0; d < CREF_REC_LATENT; d++) k[d] = cref_e4m3_to_f64(r[d]) * (double)sc[d / SGL_ATTN_DSA_SCALE_BLOCK];
    for (int d = CREF_REC_LATENT; d < CREF_REC_DIMS; d++) {
        uint16_t v;
        memcpy(&v, r + CREF_REC_ROPE + 2 * (d - CREF_REC_LATENT), sizeof v);
        k[d] = sgl_sdk_bf16_to_f32(v);
    }
}

/* Query token t, head h: online softmax over the row's valid slots; acc
 * holds dv values, k a key row (dqk). */
static void attend_row(const cref_job *J, const int32_t *row, int64_t K, int64_t t, int h, double *acc, double *k) {
    const unsigned char *q = J->q;
    const int64_t q0 = t * J->q_ts + h * J->q_hs, o0 = (t * J->hq + h) * J->dv;
    double mx = -INFINITY, sum = 0;
    for (int d = 0; d < J->dv; d++) acc[d] = 0;
    for (int64_t j = 0; j < K; j++) {
        if (row[j] < 0) continue;
        key_row(J, row[j], k);
        double s = 0;
        for (int d = 0; d < J->dqk; d++) s += cref_load_f(q, q0 + d, J->q_dt) * k[d];
        s *= J->scale;
        double c = 1, p = 1;
        if (s > mx) {
            c = exp(mx - s); /* exp(-inf) = 0 on the first key */
            mx = s;
        } else {
            p = exp(s - mx);
        }
        sum = sum * c + p;
        for (int d = 0; d < J->dv; d++) acc[d] = acc[d] * c + p * k[d];
    }
    const double inv = sum > 0 ? 1.0 / sum : 0; /* no valid slot: zeros */
    for (int d = 0; d < J->dv; d++) cref_store_f(J->out, o0 + d, J->out_dt, acc[d] * inv);
}

static void sparse_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const cref_job *J = &b->job;
    double *acc = (double *)(b->scratch + (size_t)tid * b->scratch_stride), *k = acc + J->dv;
    int32_t n;
    while ((n = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->num_tokens * J->hq) {
        const int64_t t = n / J->hq;
        attend_row(J, b->topk + t * b->topk_k, b->topk_k, t, n % J->hq, acc, k);
    }
}

void cref_sparse_run(cref_backend *b) {
    atomic_store_explicit(&b->next, 0, memory_order_relaxed);
    cref_threads_run(b->threads, sparse_task, b);
}
