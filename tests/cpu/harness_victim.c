/* harness_victim.c - a layer plugin for testing the harness itself: it
 * forwards to its inner backend, then breaks the result the way
 * $SGL_ATTN_VICTIM says (read at create), so tests/cpu/harness_selftest.sh
 * can show that `attnctl check` catches each kind of wrong plugin:
 *   ok       nothing (must pass)
 *   oob      writes one byte past the end of out
 *   under    writes one byte before the start of out
 *   nowrite  leaves one element of out as it was (unwritten)
 *   nan      puts a NaN in out
 *   nmse     scales out by 1.1
 *   pool     writes into slot 0 of k_cache, which no new token owns
 *   input    changes q
 *   unsup    answers SGL_ATTN_E_UNSUPPORTED from forward
 *   invalid  answers SGL_ATTN_E_INVALID from forward
 * and for DSA's indexer (indexer_topk, passed on to the inner):
 *   topk     drops one kept token of the last row of topk_indices to -1
 *   idxcache changes index_k_scale of slot 0, which no new token owns
 *   future   puts the last new token's slot into the row before it (an
 *            extend: the query one position earlier must not see it) */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_attn_abi.h"

typedef struct victim {
    sgl_attn_backend base;
    sgl_attn_backend *inner;
    char mode[16];
    char err[128];
} victim;

static victim *V(sgl_attn_backend *b) { return (victim *)b; }
static unsigned char *bytes_of(const DLTensor *t) { return (unsigned char *)t->data + t->byte_offset; }
static size_t size_of(const DLTensor *t) {
    size_t n = (size_t)t->dtype.bits / 8;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

static int meta(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    return V(b)->inner->ops->init_forward_metadata(V(b)->inner, batch);
}

static int forward(sgl_attn_backend *b, const sgl_attn_forward_args *a, int extend) {
    victim *v = V(b);
    const char *m = v->mode;
    if (!strcmp(m, "unsup") || !strcmp(m, "invalid")) {
        strcpy(v->err, "harness_victim refuses on purpose");
        return m[0] == 'u' ? SGL_ATTN_E_UNSUPPORTED : SGL_ATTN_E_INVALID;
    }
    unsigned char *out = bytes_of(a->out);
    const size_t esz = (size_t)a->out->dtype.bits / 8;
    unsigned char keep[8];
    memcpy(keep, out + 5 * esz, esz);
    int rc = extend ? v->inner->ops->forward_extend(v->inner, a) : v->inner->ops->forward_decode(v->inner, a);
    if (rc) return rc;
    if (!strcmp(m, "oob")) out[size_of(a->out)] ^= 0x5a;
    else if (!strcmp(m, "under")) out[-1] ^= 0x5a;
    else if (!strcmp(m, "nowrite")) memcpy(out + 5 * esz, keep, esz);
    else if (!strcmp(m, "nan")) memset(out + 3 * esz, 0xff, esz);
    else if (!strcmp(m, "pool")) bytes_of(a->layer->k_cache)[1] ^= 0x01;
    else if (!strcmp(m, "input")) bytes_of(a->q)[0] ^= 0x01;
    else if (!strcmp(m, "nmse") && a->out->dtype.code == kDLFloat && a->out->dtype.bits == 32)
        for (size_t i = 0; i < size_of(a->out) / 4; i++) ((float *)(void *)out)[i] *= 1.1f;
    return SGL_ATTN_OK;
}

static int indexer(sgl_attn_backend *b, const sgl_attn_indexer_args *a) {
    victim *v = V(b);
    const sgl_attn_backend *in = v->inner;
    if (in->ops_size < offsetof(sgl_attn_backend_ops, indexer_topk) + sizeof in->ops->indexer_topk ||
        !in->ops->indexer_topk) {
        strcpy(v->err, "harness_victim: the inner has no indexer_topk");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = in->ops->indexer_topk(v->inner, a);
    if (rc) return rc;
    if (!strcmp(v->mode, "topk") && a->topk_indices->shape[0] > 0) {
        int32_t *row = (int32_t *)(void *)bytes_of(a->topk_indices) + (a->topk_indices->shape[0] - 1) * a->topk;
        for (int32_t j = 0; j < a->topk; j++)
            if (row[j] >= 0) {
                row[j] = -1;
                break;
            }
    } else if (!strcmp(v->mode, "idxcache")) {
        bytes_of(a->index_k_scale)[0] ^= 0x01;
    } else if (!strcmp(v->mode, "future") && a->topk_indices->shape[0] > 1) {
        const DLTensor *ocl = a->batch->out_cache_loc;
        const int64_t T = a->topk_indices->shape[0];
        const int64_t last = ocl->dtype.bits == 64 ? ((const int64_t *)(const void *)bytes_of(ocl))[T - 1]
                                                   : ((const int32_t *)(const void *)bytes_of(ocl))[T - 1];
        int32_t *row = (int32_t *)(void *)bytes_of(a->topk_indices) + (T - 2) * a->topk;
        for (int32_t j = 0; j < a->topk; j++)
            if (row[j] >= 0) {
                row[j] = (int32_t)last;
                break;
            }
    }
    return SGL_ATTN_OK;
}

static int fwd_extend(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return forward(b, a, 1); }
static int fwd_decode(sgl_attn_backend *b, const sgl_attn_forward_args *a) { return forward(b, a, 0); }
static const char *last_error(sgl_attn_backend *b) { return V(b)->err; }
static void destroy(sgl_attn_backend *b) { free(b); }

static const sgl_attn_backend_ops ops = {
    .struct_size = sizeof ops,
    .init_forward_metadata = meta,
    .forward_extend = fwd_extend,
    .forward_decode = fwd_decode,
    .last_error = last_error,
    .destroy = destroy,
    .indexer_topk = indexer,
};

static int probe(uint32_t i, sgl_attn_caps *c) {
    if (i > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    strcpy(c->device_name, "any");
    strcpy(c->arch_name, "any");
    c->arch_major = c->arch_minor = c->arch_min_major = c->arch_min_minor = c->arch_max_major = c->arch_max_minor = -1;
    c->attn_kinds = 0x1f;
    c->q_dtypes = c->kv_dtypes = 0x0f;
    c->features = 0x1ff & ~(uint32_t)SGL_ATTN_FEAT_GRAPH_CAPTURE;
    c->head_dim_qk_max = c->head_dim_v_max = 1024;
    c->page_size_max = 1u << 20;
    c->score = 0; /* never chosen automatically */
    c->dsa_ops = SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER; /* passed on to the inner */
    return SGL_ATTN_OK;
}

static int create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    *out = NULL;
    if (!a->inner) return SGL_ATTN_E_INVALID;
    victim *v = calloc(1, sizeof *v);
    if (!v) return SGL_ATTN_E_NOMEM;
    v->base.ops = &ops;
    v->base.ops_size = ops.struct_size;
    v->inner = a->inner;
    const char *m = getenv("SGL_ATTN_VICTIM");
    strncpy(v->mode, m ? m : "ok", sizeof v->mode - 1);
    *out = &v->base;
    return SGL_ATTN_OK;
}

static const sgl_attn_plugin plugin = {
    .struct_size = sizeof plugin,
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = "harness_victim",
    .version = "0",
    .description = "breaks results on purpose (harness self-test)",
    .license = "MIT",
    .platform = SGL_ATTN_PLATFORM_NONE,
    .role = SGL_ATTN_ROLE_LAYER,
    .probe = probe,
    .create = create,
};

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &plugin);
}
