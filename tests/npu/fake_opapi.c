/*
 * fake_opapi.c - a fake libopapi.so: aclnnFusedInferAttentionScoreV2 and
 * aclnnInplaceIndexCopy, two-phase like the real ones, computed on the CPU
 * in float64 for the subset npu_ascend uses (BSND query, paged BnBsH KV via
 * block table, sparse_mode 0 or 3).  GetWorkspaceSize checks the
 * constraints CANN documents for that subset and records the arguments.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_acl.h"

#define EXPORT __attribute__((visibility("default")))
#define PARAM_INVALID 161002
#define FAKE_WS (1u << 20)

typedef struct aclTensor aclTensor;
typedef struct aclTensorList aclTensorList;
typedef struct aclIntArray aclIntArray;

typedef struct aclOpExecutor {
    int magic;
    int kind; /* 1 attention, 2 index copy */
    const aclTensor *q, *k, *v, *mask, *table, *out, *index, *src;
    aclTensor *self;
    int64_t qlen[512], kvlen[512];
    int n_qlen, n_kvlen;
    int64_t heads, kv_heads, sparse, block;
    double scale;
    uint64_t ws;
} aclOpExecutor;

/* aclnnFusedInferAttentionScoreV2GetWorkspaceSize's parameters, written once
 * for its prototype and its definition. */
#define FIA_V2_GWS_PARAMS ( \
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pse_shift, \
    const aclTensor *atten_mask, const aclIntArray *actual_seq_lengths, const aclIntArray *actual_seq_lengths_kv, \
    const aclTensor *deq_scale1, const aclTensor *quant_scale1, const aclTensor *deq_scale2, \
    const aclTensor *quant_scale2, const aclTensor *quant_offset2, const aclTensor *antiquant_scale, \
    const aclTensor *antiquant_offset, const aclTensor *block_table, const aclTensor *query_padding_size, \
    const aclTensor *kv_padding_size, const aclTensor *key_antiquant_scale, const aclTensor *key_antiquant_offset, \
    const aclTensor *value_antiquant_scale, const aclTensor *value_antiquant_offset, \
    const aclTensor *key_shared_prefix, const aclTensor *value_shared_prefix, \
    const aclIntArray *actual_shared_prefix_len, int64_t num_heads, double scale_value, int64_t pre_tokens, \
    int64_t next_tokens, char *input_layout, int64_t num_key_value_heads, int64_t sparse_mode, int64_t inner_precise, \
    int64_t block_size, int64_t antiquant_mode, bool softmax_lse_flag, int64_t key_antiquant_mode, \
    int64_t value_antiquant_mode, const aclTensor *attention_out, const aclTensor *softmax_lse, \
    uint64_t *workspace_size, aclOpExecutor **executor)
EXPORT int aclnnFusedInferAttentionScoreV2GetWorkspaceSize FIA_V2_GWS_PARAMS;
EXPORT int aclnnFusedInferAttentionScoreV2(void *ws, uint64_t ws_size, aclOpExecutor *ex, void *stream);
EXPORT int aclnnInplaceIndexCopyGetWorkspaceSize(aclTensor *self, int64_t dim, const aclTensor *index,
                                                 const aclTensor *source, uint64_t *ws, aclOpExecutor **ex);
EXPORT int aclnnInplaceIndexCopy(void *ws, uint64_t ws_size, aclOpExecutor *ex, void *stream);

static const char *dt_name(int dt) {
    switch (dt) {
    case 0: return "f32";
    case 1: return "f16";
    case 3: return "i32";
    case 9: return "i64";
    case 12: return "bool";
    case 27: return "bf16";
    default: return "?";
    }
}

/* `count` integers (int64, or int32 when !is64) as "<open>a,b,...<close>";
 * the length written (snprintf's, so >= n when cut short). */
static size_t ints(char *buf, size_t n, const char *open_close, const void *v, int64_t count, int is64) {
    size_t u = (size_t)snprintf(buf, n, "%c", open_close[0]);
    for (int64_t i = 0; i < count && u < n; i++) {
        int64_t x = is64 ? ((const int64_t *)v)[i] : ((const int32_t *)v)[i];
        u += (size_t)snprintf(buf + u, n - u, "%s%" PRId64, i ? "," : "", x);
    }
    if (u < n) u += (size_t)snprintf(buf + u, n - u, "%c", open_close[1]);
    return u;
}

/* "[d0,d1,...]:dtype" */
static void tdesc(const aclTensor *t, char *buf, size_t n) {
    if (!t) {
        snprintf(buf, n, "none");
        return;
    }
    size_t u = ints(buf, n, "[]", t->dims, t->ndim, 1);
    if (u < n) snprintf(buf + u, n - u, ":%s", dt_name(t->dtype));
}

static void adesc(const aclIntArray *a, char *buf, size_t n) {
    if (!a) snprintf(buf, n, "none");
    else ints(buf, n, "[]", a->v, (int64_t)a->n, 1);
}

/* int tensor contents "{a,b,...}" (host memory in this fake) */
static void idata(const aclTensor *t, char *buf, size_t n) {
    int64_t count = 1;
    for (int i = 0; i < t->ndim; i++) count *= t->dims[i];
    ints(buf, n, "{}", t->data, count, t->dtype == 9);
}

static double load(int dt, const void *p, int64_t i) {
    if (dt == 1) return (double)((const _Float16 *)p)[i];
    if (dt == 27) {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    return ((const float *)p)[i];
}

static void store(int dt, void *p, int64_t i, double v) {
    if (dt == 1) {
        ((_Float16 *)p)[i] = (_Float16)(float)v;
    } else if (dt == 27) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        u += 0x7fffu + ((u >> 16) & 1u);
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    } else {
        ((float *)p)[i] = (float)v;
    }
}

static int reject(const char *why) {
    fake_acl_set_error(why);
    fake_acl_record("rejected: %s", why);
    return PARAM_INVALID;
}

EXPORT int aclnnFusedInferAttentionScoreV2GetWorkspaceSize FIA_V2_GWS_PARAMS {
    char qd[64], kd[64], vd[64], md[64], od[64], td[64], aq[256], akv[256], tv[1024];
    tdesc(query, qd, sizeof qd);
    tdesc(key && key->n ? key->t[0] : NULL, kd, sizeof kd);
    tdesc(value && value->n ? value->t[0] : NULL, vd, sizeof vd);
    tdesc(atten_mask, md, sizeof md);
    tdesc(attention_out, od, sizeof od);
    tdesc(block_table, td, sizeof td);
    adesc(actual_seq_lengths, aq, sizeof aq);
    adesc(actual_seq_lengths_kv, akv, sizeof akv);
    if (block_table) idata(block_table, tv, sizeof tv);
    else snprintf(tv, sizeof tv, "{}");
    fake_acl_record("aclnnFusedInferAttentionScoreV2GetWorkspaceSize q=%s k=%s v=%s mask=%s actualSeqLengths=%s "
                    "actualSeqLengthsKv=%s blockTable=%s%s numHeads=%" PRId64 " numKeyValueHeads=%" PRId64
                    " scale=%.6g layout=%s sparseMode=%" PRId64 " blockSize=%" PRId64 " preTokens=%" PRId64
                    " nextTokens=%" PRId64 " innerPrecise=%" PRId64 " out=%s lse=%s",
                    qd, kd, vd, md, aq, akv, td, tv, num_heads, num_key_value_heads, scale_value,
                    input_layout ? input_layout : "NULL", sparse_mode, block_size, pre_tokens, next_tokens,
                    inner_precise, od, softmax_lse ? "set" : "none");
    /* What npu_ascend never passes must stay NULL / 0. */
    if (pse_shift || deq_scale1 || quant_scale1 || deq_scale2 || quant_scale2 || quant_offset2 || antiquant_scale ||
        antiquant_offset || query_padding_size || kv_padding_size || key_antiquant_scale || key_antiquant_offset ||
        value_antiquant_scale || value_antiquant_offset || key_shared_prefix || value_shared_prefix ||
        actual_shared_prefix_len || antiquant_mode || softmax_lse_flag || key_antiquant_mode || value_antiquant_mode)
        return reject("fake: quantisation/prefix/padding inputs are not implemented");
    if (!query || !key || !value || !attention_out || !workspace_size || !executor) return 161001;
    if (!input_layout || strcmp(input_layout, "BSND")) return reject("fake: only input_layout BSND is implemented");
    if (query->ndim != 4 || attention_out->ndim != 4) return reject("query/out must be 4-dim for BSND");
    for (int i = 0; i < 4; i++)
        if (query->dims[i] != attention_out->dims[i]) return reject("attentionOut shape differs from query");
    const int64_t B = query->dims[0], S = query->dims[1], N = query->dims[2], D = query->dims[3];
    if (query->dtype != 1 && query->dtype != 27) return reject("query must be FLOAT16 or BFLOAT16");
    if (attention_out->dtype != query->dtype) return reject("attentionOut dtype differs from query");
    if (N != num_heads) return reject("numHeads differs from query's N axis");
    if (num_key_value_heads < 1 || N % num_key_value_heads || N / num_key_value_heads > 64)
        return reject("numHeads must be a multiple of numKeyValueHeads, ratio <= 64");
    if (D > 512 || D % 16) return reject("D must be <= 512 and 16-element aligned for FLOAT16/BFLOAT16");
    if (key->n != 1 || value->n != 1) return reject("paged attention takes one key and one value tensor");
    const aclTensor *k = key->t[0], *v = value->t[0];
    if (k->ndim != 3 || v->ndim != 3) return reject("paged KV must be (blocknum, blocksize, H)");
    for (int i = 0; i < 3; i++)
        if (k->dims[i] != v->dims[i]) return reject("key and value shapes differ");
    if (k->dtype != query->dtype || v->dtype != query->dtype) return reject("key/value dtype differs from query");
    if (!block_table || block_table->ndim != 2 || block_table->dtype != 3) return reject("blockTable must be 2-dim INT32");
    if (block_table->dims[0] != B) return reject("blockTable's first dim must equal B");
    if (block_size < 1 || block_size > 512) return reject("blockSize must be in 1..512");
    if (S > 1 && block_size % 128) return reject("blockSize must be a multiple of 128 when Q_S > 1");
    if (k->dims[1] != block_size) return reject("KV block dim differs from blockSize");
    if (k->dims[2] != num_key_value_heads * D) return reject("KV H differs from numKeyValueHeads * D");
    if (!actual_seq_lengths_kv) return reject("paged attention needs actualSeqLengthsKv");
    if (actual_seq_lengths_kv->n != 1 && (int64_t)actual_seq_lengths_kv->n < B)
        return reject("actualSeqLengthsKv must have 1 or >= B entries");
    if (sparse_mode != 0 && sparse_mode != 3) return reject("fake: sparseMode 0 and 3 only");
    if (sparse_mode == 3 && (!atten_mask || atten_mask->ndim != 2 || atten_mask->dims[0] != 2048 ||
                             atten_mask->dims[1] != 2048 || atten_mask->dtype != 12))
        return reject("sparseMode 3 needs the optimised 2048x2048 BOOL attenMask");
    if (B > 512) return reject("fake: B <= 512");
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (!e) return 361001;
    e->magic = FAKE_MAGIC_EXEC;
    e->kind = 1;
    e->q = query;
    e->k = k;
    e->v = v;
    e->mask = atten_mask;
    e->table = block_table;
    e->out = attention_out;
    for (int64_t b = 0; b < B; b++) {
        e->kvlen[b] = actual_seq_lengths_kv->v[actual_seq_lengths_kv->n == 1 ? 0 : b];
        e->qlen[b] = actual_seq_lengths ? actual_seq_lengths->v[actual_seq_lengths->n == 1 ? 0 : b] : S;
        if (e->kvlen[b] < 0 || e->kvlen[b] > block_table->dims[1] * block_size || e->qlen[b] > S || e->qlen[b] < 0) {
            free(e);
            return reject("actual lengths exceed the blockTable / query S");
        }
    }
    e->heads = N;
    e->kv_heads = num_key_value_heads;
    e->sparse = sparse_mode;
    e->block = block_size;
    e->scale = scale_value;
    e->ws = FAKE_WS;
    fake_acl_live_add(1);
    *workspace_size = FAKE_WS;
    *executor = e;
    return 0;
}

static int check_exec(aclOpExecutor *e, int kind, void *ws, uint64_t ws_size) {
    if (!e || e->magic != FAKE_MAGIC_EXEC || e->kind != kind) return reject("executor is not one of this op's");
    if (ws_size < e->ws || (e->ws && !ws)) return reject("workspace smaller than GetWorkspaceSize asked");
    return 0;
}

static void free_exec(aclOpExecutor *e) {
    e->magic = 0;
    fake_acl_live_add(-1);
    free(e);
}

EXPORT int aclnnFusedInferAttentionScoreV2(void *ws, uint64_t ws_size, aclOpExecutor *e, void *stream) {
    fake_acl_record("aclnnFusedInferAttentionScoreV2 ws=%" PRIu64 " stream=%s", ws_size, stream ? "set" : "NULL");
    int rc = check_exec(e, 1, ws, ws_size);
    if (rc) return rc;
    const int64_t B = e->q->dims[0], S = e->q->dims[1], N = e->q->dims[2], D = e->q->dims[3];
    const int64_t H = e->k->dims[2], bs = e->block, blocks = e->k->dims[0], M = e->table->dims[1];
    const int dt = e->q->dtype;
    const int32_t *table = e->table->data;
    double *s = malloc(sizeof(double) * (size_t)(M * bs + 1));
    for (int64_t b = 0; b < B && s && !rc; b++) {
        const int64_t kvlen = e->kvlen[b], qlen = e->qlen[b];
        for (int64_t i = 0; i < S && !rc; i++) {
            for (int64_t n = 0; n < N; n++) {
                const int64_t kvh = n / (N / e->kv_heads);
                /* rightDownCausal: query i of qlen sees kv up to kvlen - qlen + i. */
                int64_t vis = e->sparse == 3 ? kvlen - qlen + i + 1 : kvlen;
                if (i >= qlen || vis < 0) vis = 0;
                if (vis > kvlen) vis = kvlen;
                const int64_t qb = ((b * S + i) * N + n) * D;
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < vis; j++) {
                    int64_t blk = table[b * M + j / bs];
                    if (blk < 0 || blk >= blocks) {
                        rc = reject("block id outside the KV pool");
                        break;
                    }
                    const int64_t kb = (blk * bs + j % bs) * H + kvh * D;
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += load(dt, e->q->data, qb + d) * load(dt, e->k->data, kb + d);
                    s[j] = dot * e->scale;
                    if (s[j] > m) m = s[j];
                }
                for (int64_t j = 0; j < vis && !rc; j++) l += (s[j] = exp(s[j] - m));
                for (int64_t d = 0; d < D && !rc; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < vis; j++) {
                        int64_t blk = table[b * M + j / bs];
                        acc += s[j] * load(dt, e->v->data, (blk * bs + j % bs) * H + kvh * D + d);
                    }
                    store(dt, e->out->data, qb + d, vis ? acc / l : 0.0);
                }
            }
        }
    }
    free(s);
    free_exec(e);
    return rc;
}

EXPORT int aclnnInplaceIndexCopyGetWorkspaceSize(aclTensor *self, int64_t dim, const aclTensor *index,
                                                 const aclTensor *source, uint64_t *ws, aclOpExecutor **ex) {
    char sd[64], id[64], rd[64], iv[1024];
    tdesc(self, sd, sizeof sd);
    tdesc(index, id, sizeof id);
    tdesc(source, rd, sizeof rd);
    if (index) idata(index, iv, sizeof iv);
    fake_acl_record("aclnnInplaceIndexCopyGetWorkspaceSize self=%s dim=%" PRId64 " index=%s%s source=%s", sd, dim, id,
                    index ? iv : "", rd);
    if (!self || !index || !source || !ws || !ex) return 161001;
    if (dim != 0 || self->ndim != 2 || source->ndim != 2 || index->ndim != 1) return reject("fake: 2-dim rows on dim 0 only");
    if (self->dtype != source->dtype) return reject("selfRef and source dtypes differ");
    if (index->dtype != 3 && index->dtype != 9) return reject("index must be INT32 or INT64");
    if (index->dims[0] != source->dims[0] || self->dims[1] != source->dims[1])
        return reject("index/source/self sizes disagree");
    aclOpExecutor *e = calloc(1, sizeof *e);
    if (!e) return 361001;
    e->magic = FAKE_MAGIC_EXEC;
    e->kind = 2;
    e->self = self;
    e->index = index;
    e->src = source;
    fake_acl_live_add(1);
    *ws = 0;
    *ex = e;
    return 0;
}

EXPORT int aclnnInplaceIndexCopy(void *ws, uint64_t ws_size, aclOpExecutor *e, void *stream) {
    fake_acl_record("aclnnInplaceIndexCopy stream=%s", stream ? "set" : "NULL");
    int rc = check_exec(e, 2, ws, ws_size);
    if (rc) return rc;
    const int64_t rows = e->self->dims[0], w = e->self->dims[1], n = e->index->dims[0];
    const size_t es = e->self->dtype == 0 ? 4 : 2;
    for (int64_t i = 0; i < n && !rc; i++) {
        int64_t r = e->index->dtype == 9 ? ((const int64_t *)e->index->data)[i] : ((const int32_t *)e->index->data)[i];
        if (r < 0 || r >= rows) {
            rc = reject("index outside selfRef");
            break;
        }
        memcpy((char *)e->self->data + (size_t)(r * w) * es, (const char *)e->src->data + (size_t)(i * w) * es,
               (size_t)w * es);
    }
    free_exec(e);
    return rc;
}
