/* backend.c - cpu_ref instances: create sizes everything a forward needs
 * (threads, per-thread scratch, split buffers, the request plan) so that
 * forwards never allocate; the ops table; last_error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"

static cref_backend *self(sgl_attn_backend *b) { return (cref_backend *)b; }

static int op_init_forward_metadata(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    cref_backend *c = self(b);
    c->err[0] = 0;
    return cref_plan_batch(c, batch);
}

static int op_forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    cref_backend *c = self(b);
    c->err[0] = 0;
    return cref_forward(c, a);
}

static int op_init_graph_state(sgl_attn_backend *b, int32_t max_bs, int32_t max_num_tokens) {
    (void)max_bs;
    (void)max_num_tokens;
    cref_set_error(self(b), "cpu_ref does not capture graphs (it claims no SGL_ATTN_FEAT_GRAPH_CAPTURE)");
    return SGL_ATTN_E_UNSUPPORTED;
}

static int op_graph_metadata(sgl_attn_backend *b, const sgl_attn_graph_args *g) {
    (void)g;
    return op_init_graph_state(b, 0, 0);
}

/* sglang's default: padded requests get length 1. */
static int32_t op_graph_fill_value(sgl_attn_backend *b) {
    (void)b;
    return 1;
}

static int op_indexer_topk(sgl_attn_backend *b, const sgl_attn_indexer_args *a) {
    cref_backend *c = self(b);
    c->err[0] = 0;
    return cref_indexer_topk(c, a);
}

static int op_forward_ragged(sgl_attn_backend *b, const sgl_attn_ragged_args *a) {
    cref_backend *c = self(b);
    c->err[0] = 0;
    return cref_forward_ragged(c, a);
}

static const char *op_last_error(sgl_attn_backend *b) { return self(b)->err; }

static void op_destroy(sgl_attn_backend *b) {
    cref_backend *c = self(b);
    if (!c) return;
    cref_threads_destroy(c->threads);
    free(c->scratch);
    free(c->partial);
    free(c->reqs);
    free(c->pages);
    free(c->dsa_buf);
    free(c);
}

static const sgl_attn_backend_ops cref_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = op_init_forward_metadata,
    .forward_extend = op_forward,
    .forward_decode = op_forward,
    .init_graph_state = op_init_graph_state,
    .init_forward_metadata_capture = op_graph_metadata,
    .init_forward_metadata_replay = op_graph_metadata,
    .graph_seq_len_fill_value = op_graph_fill_value,
    .last_error = op_last_error,
    .destroy = op_destroy,
    .state_clear = NULL,
    .state_copy = NULL,
    .state_commit = NULL,
    .forward_ragged = op_forward_ragged,
    .indexer_topk = op_indexer_topk,
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* create's error: the message in args->error, the status returned */
#define fail sgl_sdk_create_fail

/* Model checks the caps cannot express (create, and supports_model in entry.c). */
int cref_model_ok(const sgl_attn_model *m, char *why, size_t why_size) {
    if (!m) {
        snprintf(why, why_size, "model is NULL");
        return SGL_ATTN_E_INVALID;
    }
    int hq = m->num_q_heads, hkv = m->num_kv_heads;
    int dqk = m->head_dim_qk, dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk;
    if (hq < 1 || hkv < 1 || hq % hkv) {
        snprintf(why, why_size, "num_q_heads %d / num_kv_heads %d: expected both >= 1 and q a multiple of kv", hq,
                 hkv);
        return SGL_ATTN_E_INVALID;
    }
    if (dqk < 1 || dqk > CREF_MAX_HEAD_DIM || dv < 1 || dv > CREF_MAX_HEAD_DIM) {
        snprintf(why, why_size, "head dims qk %d, v %d: cpu_ref serves 1..%d", dqk, dv, CREF_MAX_HEAD_DIM);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->is_mla) {
        if (hkv != 1 || dv > dqk) {
            snprintf(why, why_size,
                     "MLA model with num_kv_heads %d, head_dim_qk %d, head_dim_v %d: expected one latent head "
                     "and v = the first kv_lora_rank dims of the qk row",
                     hkv, dqk, dv);
            return SGL_ATTN_E_INVALID;
        }
    }
    /* The vertical-slash sparse prefill picks keys from a per-head pattern
     * (sparse_attention_config) that cpu_ref does not read; dense dual chunk
     * attention would differ from it above the threshold. */
    if (m->struct_size >= offsetof(sgl_attn_model, dca_reserved_) && m->dca_chunk_size > 0 && m->dca_sparse) {
        snprintf(why, why_size,
                 "dual chunk attention with sparse_attention_enabled: prompts above %d tokens use the "
                 "vertical-slash sparse prefill, which cpu_ref does not implement; set "
                 "\"sparse_attention_enabled\": false in dual_chunk_attention_config for dense dual chunk attention",
                 m->dca_sparse_threshold);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->index_topk > 0 && !m->is_mla) {
        snprintf(why, why_size,
                 "DeepSeek sparse attention (index_topk %d) is served on MLA models only (sparse MLA); the model "
                 "is not MLA",
                 m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->index_topk > 0 && m->index_head_dim % SGL_ATTN_DSA_SCALE_BLOCK) {
        snprintf(why, why_size, "index_head_dim %d: the indexer's fp8 keys take a multiple of %d",
                 m->index_head_dim, SGL_ATTN_DSA_SCALE_BLOCK);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

int cref_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    if (out) *out = NULL;
    if (!a || !out) return fail(a, SGL_ATTN_E_INVALID, "cpu_ref create: args or out is NULL");
    if (a->struct_size < SGL_ATTN_CREATE_ARGS_SIZE_V1_0)
        return fail(a, SGL_ATTN_E_ABI, "cpu_ref create: args struct_size %u < %u (ABI 1.0)", a->struct_size,
                    SGL_ATTN_CREATE_ARGS_SIZE_V1_0);
    if (a->device != 0)
        return fail(a, SGL_ATTN_E_NOT_FOUND, "cpu_ref has one device (0); create asked for device %d", a->device);
    if (a->inner) return fail(a, SGL_ATTN_E_INVALID, "cpu_ref computes attention itself; it wraps no inner backend");
    if (a->max_reqs < 1 || a->max_tokens < 1 || a->max_context < 1)
        return fail(a, SGL_ATTN_E_INVALID,
                    "cpu_ref create: max_reqs %d, max_tokens %d, max_context %d: expected all >= 1", a->max_reqs,
                    a->max_tokens, a->max_context);
    char why[256];
    int rc = cref_model_ok(a->model, why, sizeof why);
    if (rc) return fail(a, rc, "cpu_ref create: %s", why);
    const sgl_attn_model *m = a->model;

    cref_cpu cpu;
    int nthreads;
    cref_cpu_query(&cpu);
    if ((rc = cref_tuning_read(a, &cpu, &nthreads))) return rc;
    cref_backend *b = calloc(1, sizeof *b);
    if (!b) return fail(a, SGL_ATTN_E_NOMEM, "cpu_ref create: out of memory");
    b->base.ops = &cref_ops;
    b->base.ops_size = cref_ops.struct_size;
    b->base.device = 0;
    b->max_reqs = a->max_reqs;
    b->max_tokens = a->max_tokens;
    b->max_context = a->max_context;
    b->max_hq = m->num_q_heads;
    b->max_group = m->num_q_heads / m->num_kv_heads;
    b->max_dqk = m->head_dim_qk;
    b->max_dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk;
    b->rows_cap = b->max_group > CREF_MIN_ROWS ? b->max_group : CREF_MIN_ROWS;
    b->nthreads = nthreads;
    b->attend_f32 = cpu.avx512 ? cref_attend_f32_avx512 : cpu.avx2 ? cref_attend_f32_avx2 : cref_attend_f32;
    b->combine_f32 = cpu.avx512 ? cref_combine_f32_avx512 : cpu.avx2 ? cref_combine_f32_avx2 : cref_combine_f32;
    b->attend_f64 = cpu.avx2 ? cref_attend_f64_avx2 : cref_attend_f64;
    b->bf16dot = cpu.avx512bf16;
    b->combine_f64 = cpu.avx2 ? cref_combine_f64_avx2 : cref_combine_f64;

    b->scratch_stride = round_up(cref_scratch_bytes(b->rows_cap, b->max_dqk, b->max_dv), CREF_ALIGN);
    b->scratch = aligned_alloc(CREF_ALIGN, b->scratch_stride * (size_t)b->nthreads);
    b->reqs = calloc(2 * (size_t)b->max_reqs, sizeof *b->reqs); /* the batch's plan, then forward_ragged's */
    /* Decode splits: up to 4 per thread, within CREF_SPLIT_BYTES_MAX. */
    size_t per_item = round_up((size_t)b->rows_cap * (size_t)(b->max_dv + 2) * sizeof(double), CREF_ALIGN);
    size_t items = (size_t)b->nthreads * 4;
    if (items * per_item > CREF_SPLIT_BYTES_MAX) items = CREF_SPLIT_BYTES_MAX / per_item;
    if (b->nthreads > 1 && items >= 2) {
        b->partial_bytes = items * per_item;
        b->partial = aligned_alloc(CREF_ALIGN, b->partial_bytes);
    }
    /* DSA: the indexer scores every earlier token of a query's request. */
    if (m->index_topk > 0) b->dsa_buf = calloc((size_t)b->nthreads * (size_t)b->max_context, sizeof *b->dsa_buf);
    if (!b->scratch || !b->reqs || (b->partial_bytes && !b->partial) || (m->index_topk > 0 && !b->dsa_buf)) {
        op_destroy(&b->base);
        return fail(a, SGL_ATTN_E_NOMEM, "cpu_ref create: out of memory for %d threads' scratch (%zu bytes each)",
                    b->nthreads, b->scratch_stride);
    }
    b->job.partial_stride = per_item;
    rc = cref_threads_create(b->nthreads, &b->threads, why, sizeof why);
    if (rc) {
        op_destroy(&b->base);
        return fail(a, rc, "%s", why);
    }
    *out = &b->base;
    return SGL_ATTN_OK;
}
