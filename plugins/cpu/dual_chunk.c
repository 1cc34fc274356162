/* dual_chunk.c - dual chunk attention (Qwen2.5-1M; docs/dual_chunk.md) on
 * the paged pool, in float64: the forward's dual_chunk block is checked
 * here (q and its two variants may be strided views, rows contiguous), then every (query token, q head) attends to its own chunk with q,
 * the previous chunk with q_succ and every earlier key with q_inter, and
 * the three normalised parts merge by their log-sum-exp.  It is the
 * reference the GPU kernels are checked against, so it follows the
 * definition directly rather than the tiled loops of kernel_impl.h. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "cpu_ref.h"
#include "cref_convert.h"

/* Doubles of scratch one thread uses: q row, and per part the output row. */
static size_t dca_scratch_doubles(int dqk, int dv) {
    return (size_t)dqk + 3 * (size_t)dv;
}

int cref_dual_chunk_check(cref_backend *b, const sgl_attn_forward_args *a) {
    cref_dca *D = &b->dca;
    D->on = 0;
    const sgl_attn_dual_chunk *dc = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk);
    if (!dc) return SGL_ATTN_OK;
    const sgl_attn_layer *L = a->layer;
    const int id = L->layer_id;
    if (dc->struct_size < sizeof *dc) {
        cref_set_error(b, "dual_chunk: struct_size %u < %zu", dc->struct_size, sizeof *dc);
        return SGL_ATTN_E_INVALID;
    }
    if (dc->chunk_size < 1 || dc->local_size < 0 || dc->local_size >= dc->chunk_size ||
        dc->original_max_position < 0) {
        cref_set_error(b,
                       "dual_chunk: chunk_size %d, local_size %d, original_max_position %d; expected 0 <= "
                       "local_size < chunk_size and original_max_position >= 0",
                       dc->chunk_size, dc->local_size, dc->original_max_position);
        return SGL_ATTN_E_INVALID;
    }
    const char *other = L->is_cross                ? "cross attention"
                        : b->has_enc               ? "an encoder-decoder batch"
                        : L->sliding_window >= 0   ? "a sliding window"
                        : L->logit_softcap > 0     ? "a logit soft-cap"
                        : L->sinks                 ? "attention sinks"
                        : L->v_cache == NULL       ? "an MLA pool"
                        : !b->job.plain            ? "a page table, slot map, tree mask or attention type"
                        : SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse) ? "an LSE output (forward args lse)"
                                                   : NULL;
    if (other) {
        cref_set_error(b, "layer %d: dual chunk attention with %s: the engines define neither together", id, other);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc;
    int64_t st[2][SGL_SDK_MAX_DIMS];
    const DLTensor *qv[2] = {dc->q_succ, dc->q_inter};
    /* like q: strided views (sglang's variants are slices of one fused q row), each head's row contiguous */
    for (int i = 0; i < 2; i++) {
        const sgl_sdk_tensor_spec s = {i ? "dual_chunk.q_inter" : "dual_chunk.q_succ",
                                       "num_tokens, num_q_heads, head_dim_qk",
                                       3,
                                       {b->num_tokens, L->num_q_heads, L->head_dim_qk, 0},
                                       CREF_DTYPES,
                                       SGL_SDK_DEV_HOST,
                                       -1,
                                       SGL_SDK_T_MERGED | SGL_SDK_T_ROWS,
                                       0};
        if ((rc = sgl_sdk_check_tensor(qv[i], &s, b->err, sizeof b->err))) return rc;
        sgl_sdk_strides(qv[i], &s, st[i]);
    }
    const uint32_t dt = sgl_attn_dtype_bit(dc->q_succ->dtype);
    if (dt != b->job.q_dt || sgl_attn_dtype_bit(dc->q_inter->dtype) != b->job.q_dt) {
        cref_set_error(b, "layer %d: dual_chunk.q_succ and q_inter must have q's dtype", id);
        return SGL_ATTN_E_INVALID;
    }
    if (dca_scratch_doubles(L->head_dim_qk, L->head_dim_v) * sizeof(double) > b->scratch_stride) {
        cref_set_error(b, "layer %d: dual chunk needs %zu scratch bytes per thread; create sized %zu", id,
                       dca_scratch_doubles(L->head_dim_qk, L->head_dim_v) * sizeof(double), b->scratch_stride);
        return SGL_ATTN_E_INVALID;
    }
    D->q_succ = sgl_sdk_data(dc->q_succ);
    D->q_inter = sgl_sdk_data(dc->q_inter);
    D->qs_ts = st[0][0];
    D->qs_hs = st[0][1];
    D->qi_ts = st[1][0];
    D->qi_hs = st[1][1];
    D->chunk_len = dc->chunk_size - dc->local_size;
    D->original_max_position = dc->original_max_position;
    D->on = 1;
    return SGL_ATTN_OK;
}

/* The request whose new tokens hold token t (requests are in token order). */
static const cref_req *req_of(const cref_backend *b, int32_t t) {
    int lo = 0, hi = b->n_reqs - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (b->reqs[mid].tok0 <= t) lo = mid;
        else hi = mid - 1;
    }
    return &b->reqs[lo];
}

/* One part: keys at positions [kb, ke) of the request, softmax of
 * scale * q.k over them into o (normalised) and its log-sum-exp.  An empty
 * range gives lse = -inf.  A slot outside the pool is noted and skipped. */
static double part(const cref_job *J, const cref_req *r, int kvh, const double *q, double scale, int32_t kb,
                   int32_t ke, double *o) {
    const int dqk = J->dqk, dv = J->dv;
    for (int d = 0; d < dv; d++) o[d] = 0;
    double m = -INFINITY, l = 0;
    const int64_t rbase = r->row * J->r2t_cols;
    for (int32_t p = kb; p < ke; p++) {
        int64_t slot = sgl_sdk_idx(J->r2t, J->r2t_64, rbase + p);
        if ((uint64_t)slot >= (uint64_t)J->pool_slots) {
            cref_bad_note(J->bad, 0, rbase + p, slot);
            continue;
        }
        const int64_t kbase = slot * J->k_slot + (int64_t)kvh * dqk;
        double s = 0;
        for (int d = 0; d < dqk; d++) s += q[d] * cref_load_f(J->k_cache, kbase + d, J->kv_dt);
        s *= scale;
        double mn = s > m ? s : m, c = exp(m - mn), w = exp(s - mn);
        const int64_t vbase = slot * J->v_slot + (int64_t)kvh * J->v_head;
        for (int d = 0; d < dv; d++) o[d] = o[d] * c + w * cref_load_f(J->v_cache, vbase + d, J->kv_dt);
        l = l * c + w;
        m = mn;
    }
    if (l == 0) return -INFINITY;
    for (int d = 0; d < dv; d++) o[d] /= l;
    return m + log(l);
}

static void dca_task(void *ctx, int tid) {
    cref_backend *b = ctx;
    const cref_job *J = &b->job;
    const cref_dca *D = &b->dca;
    double *qd = (double *)(void *)(b->scratch + (size_t)tid * b->scratch_stride);
    double *o[3] = {qd + J->dqk, qd + J->dqk + J->dv, qd + J->dqk + 2 * (size_t)J->dv};
    const unsigned char *qs[3] = {J->q, D->q_succ, D->q_inter};
    const int64_t q_ts[3] = {J->q_ts, D->qs_ts, D->qi_ts}, q_hs[3] = {J->q_hs, D->qs_hs, D->qi_hs};
    const int32_t cl = D->chunk_len;
    int32_t t;
    while ((t = atomic_fetch_add_explicit(&b->next, 1, memory_order_relaxed)) < b->num_tokens) {
        const cref_req *r = req_of(b, t);
        if (t < r->tok0 || t >= r->tok0 + r->n_new) continue; /* padding between requests */
        const int32_t pos = r->prefix + (t - r->tok0);
        const int32_t c0 = pos / cl * cl; /* first key of the query's chunk */
        /* [begin, end) of intra, successor, inter */
        const int32_t kb[3] = {c0, c0 >= cl ? c0 - cl : 0, 0};
        const int32_t ke[3] = {pos + 1, c0, c0 >= cl ? c0 - cl : 0};
        double scale = J->scale;
        if (D->original_max_position > 0) {
            double f = 0.1 * log((double)r->seq_len / D->original_max_position) + 1.0;
            if (f > 1) scale *= f;
        }
        for (int h = 0; h < J->hq; h++) {
            const int kvh = h / J->group;
            double lse[3], mx = -INFINITY;
            for (int p = 0; p < 3; p++) {
                const int64_t qb = (int64_t)t * q_ts[p] + (int64_t)h * q_hs[p];
                for (int d = 0; d < J->dqk; d++) qd[d] = cref_load_f(qs[p], qb + d, J->q_dt);
                lse[p] = part(J, r, kvh, qd, scale, kb[p], ke[p], o[p]);
                if (lse[p] > mx) mx = lse[p];
            }
            double w[3], sum = 0;
            for (int p = 0; p < 3; p++) sum += w[p] = lse[p] == -INFINITY ? 0 : exp(lse[p] - mx);
            const int64_t ob = ((int64_t)t * J->hq + h) * J->dv;
            for (int d = 0; d < J->dv; d++) {
                double v = 0;
                for (int p = 0; p < 3; p++) v += w[p] * o[p][d];
                cref_store_f(J->out, ob + d, J->out_dt, sum > 0 ? v / sum : 0);
            }
        }
    }
}

void cref_dual_chunk_run(cref_backend *b) {
    atomic_store_explicit(&b->next, 0, memory_order_relaxed);
    cref_threads_run(b->threads, dca_task, b);
}
