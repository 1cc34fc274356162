/* sparse_mla.c - DSA's sparse MLA on cpu_ref: each query token attends over
 * the pool slots its row of topk_indices names (page-encoded, -1 = none),
 * in float64, with the absorbed MLA layout (one latent head: scores over all
 * head_dim_qk dims, values = its first head_dim_v dims).  The dense job
 * (check_args.c) is reused for q, out, the pool and the scale. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"

const DLTensor *cref_topk_of(const sgl_attn_forward_args *a) {
    if (a->struct_size < offsetof(sgl_attn_forward_args, topk_indices) + sizeof a->topk_indices) return NULL;
    return a->topk_indices;
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
    if (J->lse || J->q_rope || ((J->q_dt | J->kv_dt) & CREF_FP8_DTYPES))
        return cref_set_error(b, "layer %d: topk_indices given with %s: cpu_ref's sparse MLA takes the "
                                 "concatenated q, a 16/32/64-bit pool and no LSE output",
                              L->layer_id, J->lse ? "an LSE output" : J->q_rope ? "q_rope / k_rope" : "fp8 q or pool"),
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

/* Query token t, head h: online softmax over the row's valid slots. */
static void attend_row(const cref_job *J, const int32_t *row, int64_t K, int64_t t, int h, double *acc) {
    const unsigned char *q = J->q;
    const int64_t q0 = (t * J->hq + h) * J->dqk, o0 = (t * J->hq + h) * J->dv;
    double mx = -INFINITY, sum = 0;
    for (int d = 0; d < J->dv; d++) acc[d] = 0;
    for (int64_t j = 0; j < K; j++) {
        if (row[j] < 0) continue;
        const int64_t k0 = (int64_t)row[j] * J->k_slot;
        double s = 0;
        for (int d = 0; d < J->dqk; d++) s += cref_load_f(q, q0 + d, J->q_dt) * cref_load_f(J->k_cache, k0 + d, J->kv_dt);
        s *= J->scale;
        double c = 1, p = 1;
        if (s > mx) {
            c = exp(mx - s); /* exp(-inf) = 0 on the first key */
            mx = s;
        } else {
            p = exp(s - mx);
        }
        sum = sum * c + p;
        for (int d = 0; d < J->dv; d++) acc[d] = acc[d] * c + p * cref_load_f(J->k_cache, k0 + d, J->kv_dt);
    }
    const double inv = sum > 0 ? 1.0 / sum : 0; /* no valid slot: zeros */
    for (int d = 0; d < J->dv; d++) cref_store_f(J->out, o0 + d, J->out_dt, acc[d] * inv);
}

static void sparse_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const cref_job *J = &b->job;
    double *acc = (double *)(b->scratch + (size_t)tid * b->scratch_stride);
    int32_t k;
    while ((k = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->num_tokens * J->hq) {
        const int64_t t = k / J->hq;
        attend_row(J, b->topk + t * b->topk_k, b->topk_k, t, k % J->hq, acc);
    }
}

void cref_sparse_run(cref_backend *b) {
    atomic_store_explicit(&b->next, 0, memory_order_relaxed);
    cref_threads_run(b->threads, sparse_task, b);
}
