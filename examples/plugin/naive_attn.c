/*
 * naive_attn.c - a complete third-party sglattn plugin in one file.
 *
 * Full attention over sglang's paged token pool, computed on the CPU with
 * plain loops in fp32: MHA, GQA and MQA; q, k, v, out and the pool each
 * f32, f16 or bf16; decode, extend (with a cached prefix) and speculative
 * verify; sliding window, logit soft-cap and attention sinks; qk and v head
 * dims up to 256, independently; any page size; int32 or int64 indices.
 * Not served (refused with SGL_ATTN_E_UNSUPPORTED and a message): MLA,
 * encoder-decoder models, DeepSeek sparse attention.  Not offered: graph
 * capture (those ops are NULL).  Score 0: used only when named.
 *
 * It includes abi/sgl_attn_abi.h and nothing else of sglattn, and it does
 * not link the host.  docs/abi.md walks through it; `make example-plugin`
 * checks it against the float64 reference with `attnctl check`.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_attn_abi.h"

#define NAIVE_NAME "naive_attn"
#define NAIVE_MAX_DIM 256

/* The only symbol the plugin exports (build with -fvisibility=hidden). */
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

/* A reader never touches a field beyond the struct_size it was given. */
#define HAS_FIELD(s, type, field) ((s)->struct_size >= offsetof(type, field) + sizeof((s)->field))

/* ------------------------------------------------------------------ dtypes */

static float bf16_to_f32(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float f16_to_f32(uint16_t h) { /* exact */
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t u;
    if (e == 31) {
        u = sign | 0x7f800000u | (m << 13); /* infinity, NaN */
    } else if (e) {
        u = sign | ((e + 112) << 23) | (m << 13); /* exponent bias 15 -> 127 */
    } else {
        const float v = (float)m * 0x1p-24f; /* zero, subnormal */
        memcpy(&u, &v, sizeof u);
        u |= sign;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_f16(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;            /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u;           /* >= 65520 rounds to infinity */
    if (a < 0x38800000u)                                   /* below 2^-14: subnormal or zero */
        return sign | (uint16_t)lrintf(fabsf(f) * 0x1p24f); /* units of 2^-24 */
    uint32_t r = a - 0x38000000u;                          /* exponent bias 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

/* The dtypes this plugin reads and writes, as SGL_ATTN_DT_* bits. */
#define NAIVE_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16)

/* Element i of a tensor whose dtype bit is dt.  byte_offset is part of the
 * address: an engine (and attnctl check) may hand over views into a larger
 * allocation. */
static float load(uint32_t dt, const DLTensor *t, int64_t i) {
    const char *p = (const char *)t->data + t->byte_offset;
    if (dt == SGL_ATTN_DT_F32) return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return dt == SGL_ATTN_DT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

static void store(uint32_t dt, DLTensor *t, int64_t i, float v) {
    char *p = (char *)t->data + t->byte_offset;
    if (dt == SGL_ATTN_DT_F32)
        ((float *)p)[i] = v;
    else
        ((uint16_t *)p)[i] = dt == SGL_ATTN_DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
}

/* Index tensors are int32 or int64. */
static int64_t index_at(const DLTensor *t, int64_t i) {
    const char *p = (const char *)t->data + t->byte_offset;
    return t->dtype.bits == 64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/* ---------------------------------------------------------------- instance */

typedef struct naive_req {
    int64_t row;       /* row of req_to_token */
    int64_t seq_len;   /* tokens in the pool after this call, new ones included */
    int64_t n_new;     /* new (query) tokens */
    int64_t first_tok; /* index of its first new token in q / out / out_cache_loc */
} naive_req;

typedef struct naive {
    sgl_attn_backend base; /* first: the host and wrappers see only this header */
    int32_t max_reqs;
    int32_t max_tokens;
    naive_req *reqs;             /* max_reqs entries, allocated at create */
    const sgl_attn_batch *batch; /* the batch init_forward_metadata accepted */
    int64_t max_slot;            /* largest pool slot the batch uses */
    char err[320];
} naive;

static int fail(naive *n, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(naive *n, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->err, sizeof n->err, fmt, ap);
    va_end(ap);
    return status;
}

/* ------------------------------------------------------------- tensor checks */

static int compact(const DLTensor *t) {
    if (!t->strides) return 1;
    int64_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != want) return 0;
        want *= t->shape[d];
    }
    return 1;
}

/* Present, in host memory, compact (strides NULL or row-major). */
static int check_common(naive *n, const DLTensor *t, const char *name) {
    if (!t) return fail(n, SGL_ATTN_E_INVALID, "%s is NULL", name);
    if (!t->data) return fail(n, SGL_ATTN_E_INVALID, "%s has no data", name);
    if (t->device.device_type != kDLCPU)
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "%s is on device type %d; " NAIVE_NAME " reads host memory (kDLCPU)",
                    name, (int)t->device.device_type);
    if (!compact(t))
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "%s is strided; " NAIVE_NAME " takes compact tensors", name);
    return SGL_ATTN_OK;
}

/* An index tensor: int32 or int64, `ndim` dims, dim 0 of at least `rows`. */
static int check_index(naive *n, const DLTensor *t, const char *name, int ndim, int64_t rows) {
    int rc = check_common(n, t, name);
    if (rc) return rc;
    if (t->dtype.code != kDLInt || (t->dtype.bits != 32 && t->dtype.bits != 64) || t->dtype.lanes != 1)
        return fail(n, SGL_ATTN_E_INVALID, "%s must be int32 or int64", name);
    if (t->ndim != ndim || t->shape[0] < rows)
        return fail(n, SGL_ATTN_E_INVALID, "%s has %d dims and %lld rows; expected %d dims and >= %lld rows", name,
                    t->ndim, (long long)(t->ndim ? t->shape[0] : 0), ndim, (long long)rows);
    return SGL_ATTN_OK;
}

/* Rows of heads x dim: [rows, heads, dim] or flattened [rows, heads * dim].
 * rows < 0 takes dim 0 as it is (a pool's slot count).  *dt gets its dtype. */
static int check_rows(naive *n, const DLTensor *t, const char *name, int64_t rows, int64_t heads, int64_t dim,
                      uint32_t *dt) {
    int rc = check_common(n, t, name);
    if (rc) return rc;
    *dt = sgl_attn_dtype_bit(t->dtype);
    if (!(*dt & NAIVE_DTYPES))
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "%s has a dtype " NAIVE_NAME " does not claim (code %u, %u bits)", name,
                    t->dtype.code, t->dtype.bits);
    const int ok3 = t->ndim == 3 && t->shape[1] == heads && t->shape[2] == dim;
    const int ok2 = t->ndim == 2 && t->shape[1] == heads * dim;
    if ((!ok3 && !ok2) || (rows >= 0 && t->shape[0] != rows))
        return fail(n, SGL_ATTN_E_INVALID, "%s has %d dims [%lld, %lld, ...]; expected [%lld, %lld, %lld]", name,
                    t->ndim, (long long)(t->ndim > 0 ? t->shape[0] : 0),
                    (long long)(t->ndim > 1 ? t->shape[1] : 0), (long long)rows, (long long)heads, (long long)dim);
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------ batch: plan */

/* Once per batch: check every index the layers will use, remember each
 * request's lengths, and the largest slot.  The forwards then only check
 * their own tensors. */
static int naive_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    naive *n = (naive *)b;
    n->batch = NULL;
    if (!batch || !HAS_FIELD(batch, sgl_attn_batch, encoder_lens))
        return fail(n, SGL_ATTN_E_INVALID, "init_forward_metadata: batch is NULL or older than ABI 1.0");
    const int32_t mode = batch->forward_mode, bs = batch->batch_size;
    if (mode == SGL_ATTN_MODE_IDLE) {
        n->batch = batch;
        n->max_slot = -1;
        return SGL_ATTN_OK;
    }
    if (mode != SGL_ATTN_MODE_EXTEND && mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_TARGET_VERIFY)
        return fail(n, SGL_ATTN_E_INVALID, "batch.forward_mode %d is not a mode of ABI 1.0", mode);
    if (bs < 0 || bs > n->max_reqs)
        return fail(n, SGL_ATTN_E_INVALID, "batch.batch_size %d; expected 0..%d (max_reqs at create)", bs, n->max_reqs);
    if (batch->num_tokens < 0 || batch->num_tokens > n->max_tokens)
        return fail(n, SGL_ATTN_E_INVALID, "batch.num_tokens %d; expected 0..%d (max_tokens at create)",
                    batch->num_tokens, n->max_tokens);
    if (batch->encoder_lens)
        return fail(n, SGL_ATTN_E_UNSUPPORTED, NAIVE_NAME " does not serve encoder-decoder batches");
    int rc;
    if ((rc = check_index(n, batch->req_to_token, "batch.req_to_token", 2, 0)) ||
        (rc = check_index(n, batch->req_pool_indices, "batch.req_pool_indices", 1, bs)) ||
        (rc = check_index(n, batch->seq_lens, "batch.seq_lens", 1, bs)) ||
        (rc = check_index(n, batch->out_cache_loc, "batch.out_cache_loc", 1, batch->num_tokens)))
        return rc;
    if (mode == SGL_ATTN_MODE_EXTEND && (rc = check_index(n, batch->extend_seq_lens, "batch.extend_seq_lens", 1, bs)))
        return rc;
    const DLTensor *r2t = batch->req_to_token;
    const int64_t rows = r2t->shape[0], cols = r2t->shape[1];
    const int64_t per_req = batch->tokens_per_req > 0 ? batch->tokens_per_req : 1;
    int64_t tok = 0, max_slot = -1;
    for (int32_t i = 0; i < bs; i++) {
        naive_req *r = &n->reqs[i];
        r->row = index_at(batch->req_pool_indices, i);
        r->seq_len = index_at(batch->seq_lens, i);
        r->n_new = mode == SGL_ATTN_MODE_EXTEND ? index_at(batch->extend_seq_lens, i) : per_req;
        r->first_tok = tok;
        if (r->row < 0 || r->row >= rows)
            return fail(n, SGL_ATTN_E_INVALID, "batch.req_pool_indices[%d] = %lld; expected 0..%lld", i,
                        (long long)r->row, (long long)rows - 1);
        if (r->n_new < 0 || r->n_new > r->seq_len || r->seq_len > cols)
            return fail(n, SGL_ATTN_E_INVALID,
                        "request %d: %lld new tokens, seq_lens %lld; expected 0 <= new <= seq_len <= %lld "
                        "(req_to_token columns)",
                        i, (long long)r->n_new, (long long)r->seq_len, (long long)cols);
        for (int64_t c = 0; c < r->seq_len; c++) {
            const int64_t slot = index_at(r2t, r->row * cols + c);
            if (slot < 0)
                return fail(n, SGL_ATTN_E_INVALID, "batch.req_to_token[%lld][%lld] = %lld is negative",
                            (long long)r->row, (long long)c, (long long)slot);
            if (slot > max_slot) max_slot = slot;
        }
        tok += r->n_new;
    }
    if (tok != batch->num_tokens)
        return fail(n, SGL_ATTN_E_INVALID, "the requests have %lld new tokens but batch.num_tokens is %d",
                    (long long)tok, batch->num_tokens);
    for (int64_t t = 0; t < tok; t++) {
        const int64_t slot = index_at(batch->out_cache_loc, t);
        if (slot < 0)
            return fail(n, SGL_ATTN_E_INVALID, "batch.out_cache_loc[%lld] = %lld is negative", (long long)t,
                        (long long)slot);
        if (slot > max_slot) max_slot = slot;
    }
    n->max_slot = max_slot;
    n->batch = batch;
    n->err[0] = 0;
    return SGL_ATTN_OK;
}

/* ---------------------------------------------------------------- forward */

/* One query row: softmax(scale * q.K) . V over keys [lo, hi) of request r,
 * with the soft-cap and the sink, online (one pass over the keys). */
static void attend_row(const sgl_attn_layer *L, const naive_req *r, const DLTensor *r2t, const float *q,
                       int64_t kv_head, int64_t lo, int64_t hi, float sink, int has_sink, uint32_t kdt,
                       uint32_t vdt, float *acc) {
    const int64_t dq = L->head_dim_qk, dv = L->head_dim_v, hkv = L->num_kv_heads;
    const int64_t cols = r2t->shape[1];
    float m = has_sink ? sink : -INFINITY, l = has_sink ? 1.0f : 0.0f;
    for (int64_t d = 0; d < dv; d++) acc[d] = 0.0f;
    for (int64_t c = lo; c < hi; c++) {
        const int64_t slot = index_at(r2t, r->row * cols + c);
        const int64_t kbase = (slot * hkv + kv_head) * dq, vbase = (slot * hkv + kv_head) * dv;
        float s = 0.0f;
        for (int64_t d = 0; d < dq; d++) s += q[d] * load(kdt, L->k_cache, kbase + d);
        s *= L->sm_scale;
        if (L->logit_softcap > 0.0f) s = L->logit_softcap * tanhf(s / L->logit_softcap);
        if (s > m) { /* new maximum: rescale what was summed so far */
            const float a = expf(m - s);
            l *= a;
            for (int64_t d = 0; d < dv; d++) acc[d] *= a;
            m = s;
        }
        const float w = expf(s - m);
        l += w;
        for (int64_t d = 0; d < dv; d++) acc[d] += w * load(vdt, L->v_cache, vbase + d);
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int64_t d = 0; d < dv; d++) acc[d] *= inv;
}

static int naive_forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    naive *n = (naive *)b;
    if (!a || !HAS_FIELD(a, sgl_attn_forward_args, out) || !a->layer || !a->batch ||
        !HAS_FIELD(a->layer, sgl_attn_layer, v_cache))
        return fail(n, SGL_ATTN_E_INVALID, "forward: args, layer or batch is NULL or older than ABI 1.0");
    if (a->batch != n->batch)
        return fail(n, SGL_ATTN_E_STATE, "forward: this batch was not given to init_forward_metadata");
    const sgl_attn_batch *batch = a->batch;
    if (batch->forward_mode == SGL_ATTN_MODE_IDLE || batch->num_tokens == 0) return SGL_ATTN_OK;
    const sgl_attn_layer *L = a->layer;
    const int64_t T = batch->num_tokens, hq = L->num_q_heads, hkv = L->num_kv_heads;
    const int64_t dq = L->head_dim_qk, dv = L->head_dim_v;
    if (!L->v_cache)
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "layer %d: v_cache is NULL (MLA); " NAIVE_NAME " has no MLA",
                    L->layer_id);
    if (L->is_cross)
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "layer %d: cross attention is not served", L->layer_id);
    if (hq < 1 || hkv < 1 || hq % hkv)
        return fail(n, SGL_ATTN_E_INVALID, "layer %d: %lld q heads do not group over %lld kv heads", L->layer_id,
                    (long long)hq, (long long)hkv);
    if (dq < 1 || dq > NAIVE_MAX_DIM || dv < 1 || dv > NAIVE_MAX_DIM)
        return fail(n, SGL_ATTN_E_UNSUPPORTED, "layer %d: head dims (%lld, %lld); " NAIVE_NAME " serves 1..%d",
                    L->layer_id, (long long)dq, (long long)dv, NAIVE_MAX_DIM);
    uint32_t qdt, odt, kcdt, vcdt, kdt = 0, vdt = 0;
    int rc;
    if ((rc = check_rows(n, a->q, "q", T, hq, dq, &qdt)) || (rc = check_rows(n, a->out, "out", T, hq, dv, &odt)) ||
        (rc = check_rows(n, L->k_cache, "layer.k_cache", -1, hkv, dq, &kcdt)) ||
        (rc = check_rows(n, L->v_cache, "layer.v_cache", L->k_cache->shape[0], hkv, dv, &vcdt)))
        return rc;
    if (a->save_kv_cache &&
        ((rc = check_rows(n, a->k, "k", T, hkv, dq, &kdt)) || (rc = check_rows(n, a->v, "v", T, hkv, dv, &vdt))))
        return rc;
    if (n->max_slot >= L->k_cache->shape[0])
        return fail(n, SGL_ATTN_E_INVALID, "layer %d: the batch uses slot %lld; the KV pool has %lld slots",
                    L->layer_id, (long long)n->max_slot, (long long)L->k_cache->shape[0]);
    if (L->sinks) {
        if ((rc = check_common(n, L->sinks, "layer.sinks"))) return rc;
        if (sgl_attn_dtype_bit(L->sinks->dtype) != SGL_ATTN_DT_F32 || L->sinks->ndim != 1 || L->sinks->shape[0] != hq)
            return fail(n, SGL_ATTN_E_INVALID, "layer.sinks must be float32 [%lld] (one logit per q head)",
                        (long long)hq);
    }

    /* Everything is checked: from here on nothing fails. */
    if (a->save_kv_cache) /* the new K/V go into the pool first, then are attended like the rest */
        for (int64_t t = 0; t < T; t++) {
            const int64_t slot = index_at(batch->out_cache_loc, t);
            for (int64_t e = 0; e < hkv * dq; e++)
                store(kcdt, L->k_cache, slot * hkv * dq + e, load(kdt, a->k, t * hkv * dq + e));
            for (int64_t e = 0; e < hkv * dv; e++)
                store(vcdt, L->v_cache, slot * hkv * dv + e, load(vdt, a->v, t * hkv * dv + e));
        }
    float q[NAIVE_MAX_DIM], acc[NAIVE_MAX_DIM];
    for (int32_t i = 0; i < batch->batch_size; i++) {
        const naive_req *r = &n->reqs[i];
        for (int64_t j = 0; j < r->n_new; j++) {
            const int64_t t = r->first_tok + j;
            const int64_t pos = r->seq_len - r->n_new + j; /* causal: sees positions 0..pos */
            const int64_t lo = L->sliding_window >= 0 && pos - L->sliding_window > 0 ? pos - L->sliding_window : 0;
            for (int64_t h = 0; h < hq; h++) {
                for (int64_t d = 0; d < dq; d++) q[d] = load(qdt, a->q, (t * hq + h) * dq + d);
                const float sink = L->sinks ? load(SGL_ATTN_DT_F32, L->sinks, h) : 0.0f;
                attend_row(L, r, batch->req_to_token, q, h / (hq / hkv), lo, pos + 1, sink, L->sinks != NULL, kcdt,
                           vcdt, acc);
                for (int64_t d = 0; d < dv; d++) store(odt, a->out, (t * hq + h) * dv + d, acc[d]);
            }
        }
    }
    n->err[0] = 0;
    return SGL_ATTN_OK;
}

static const char *naive_last_error(sgl_attn_backend *b) { return ((naive *)b)->err; }

static void naive_destroy(sgl_attn_backend *b) {
    naive *n = (naive *)b;
    free(n->reqs);
    free(n);
}

/* Graph and state ops are left NULL: this backend does not offer them, and
 * callers check before calling an optional op. */
static const sgl_attn_backend_ops naive_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = naive_init_forward_metadata,
    .forward_extend = naive_forward, /* the batch's forward_mode says extend or verify */
    .forward_decode = naive_forward,
    .last_error = naive_last_error,
    .destroy = naive_destroy,
};

/* ------------------------------------------------------- model and create */

/* Model checks beyond the caps; the host asks before choosing this plugin. */
static int naive_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    const char *no = m->is_mla               ? "MLA models"
                     : m->is_encoder_decoder ? "encoder-decoder models"
                     : m->index_topk > 0     ? "DeepSeek sparse attention (index_topk)"
                                             : NULL;
    if (!no) return SGL_ATTN_OK;
    snprintf(why, why_size, NAIVE_NAME " does not serve %s", no);
    return SGL_ATTN_E_UNSUPPORTED;
}

static int naive_create(const sgl_attn_create_args *args, sgl_attn_backend **out) {
    *out = NULL;
    if (args->inner) {
        snprintf(args->error, args->error_size, NAIVE_NAME " computes full attention; it wraps nothing");
        return SGL_ATTN_E_INVALID;
    }
    if (args->device != 0) {
        snprintf(args->error, args->error_size, NAIVE_NAME " has one device (0), not %d", args->device);
        return SGL_ATTN_E_NOT_FOUND;
    }
    /* create_stack does not call supports_model: repeat its checks here. */
    int rc = naive_supports_model(args->model, NULL, args->error, args->error_size);
    if (rc) return rc;
    const sgl_attn_model *m = args->model;
    if (m->head_dim_qk > NAIVE_MAX_DIM || m->head_dim_v > NAIVE_MAX_DIM) {
        snprintf(args->error, args->error_size, NAIVE_NAME " serves head dims up to %d, not (%d, %d)", NAIVE_MAX_DIM,
                 m->head_dim_qk, m->head_dim_v);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (args->max_reqs < 1 || args->max_tokens < 1) {
        snprintf(args->error, args->error_size, "max_reqs %d and max_tokens %d must be >= 1", args->max_reqs,
                 args->max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    /* Every allocation happens here; the forward path allocates nothing. */
    naive *n = calloc(1, sizeof *n);
    if (!n || !(n->reqs = calloc((size_t)args->max_reqs, sizeof *n->reqs))) {
        free(n);
        snprintf(args->error, args->error_size, "out of memory");
        return SGL_ATTN_E_NOMEM;
    }
    n->base.ops = &naive_ops;
    n->base.ops_size = naive_ops.struct_size;
    n->base.device = args->device;
    n->max_reqs = args->max_reqs;
    n->max_tokens = args->max_tokens;
    *out = &n->base;
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------------ probe */

static int naive_probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND; /* one device: this process's CPU */
    if (!c || c->struct_size < sizeof *c) return SGL_ATTN_E_INVALID;
    c->available = 1;
    snprintf(c->device_name, sizeof c->device_name, "CPU (one thread, plain loops)");
    snprintf(c->arch_name, sizeof c->arch_name, "any");
    c->compute_units = 1;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = NAIVE_DTYPES;
    c->kv_dtypes = NAIVE_DTYPES;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SPEC_DECODE |
                  SGL_ATTN_FEAT_SLIDING_WINDOW | SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS |
                  SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    c->head_dim_qk_max = NAIVE_MAX_DIM; /* n_head_dims = 0: any pair up to these */
    c->head_dim_v_max = NAIVE_MAX_DIM;
    c->page_size_max = INT32_MAX; /* n_page_sizes = 0: any page size up to this */
    c->max_gqa_ratio = 0;         /* any */
    c->score = 0;                 /* never chosen automatically: only by name */
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------- descriptor */

static const sgl_attn_plugin naive_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = NAIVE_NAME,
    .version = "1.0.0",
    .description = "example: naive fp32 CPU attention over the paged pool",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = NULL, /* sglang names it would answer to, e.g. {"torch_native", NULL} */
    .probe = naive_probe,
    .supports_model = naive_supports_model,
    .create = naive_create,
    .device_ops = NULL, /* host memory */
};

int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &naive_plugin);
}
