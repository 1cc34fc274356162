/* full_batch.c - one full-attention case made concrete: per-request lengths
 * (ragged as docs/harness.md says), a pool whose pages are shuffled with
 * slot 0 reserved, a page table with spare rows and columns pointing at
 * wrong-but-valid slots, random inputs, and every tensor staged with guards
 * on the target's device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

#define ALLOC(t, name, dt, nd, ...)                                                          \
    do {                                                                                     \
        const int64_t s_[] = {__VA_ARGS__};                                                  \
        if (htensor_alloc(&fb->t, fb->dev, name, dt, nd, s_, err, err_size)) goto fail;       \
    } while (0)

static void lengths(fa_batch *fb, hrng *r) {
    const fa_case *c = &fb->c;
    const int bs = fb->bs;
    for (int i = 0; i < bs; i++) {
        const int first = i == 0, last = i == bs - 1 && bs > 1;
        if (c->mode == SGL_ATTN_MODE_EXTEND) {
            long q = c->q, p = c->prefix;
            if (c->ragged) {
                q = first ? c->q : hrng_range(r, 1, c->q);
                p = first ? 0 : last ? c->prefix : hrng_range(r, 0, c->prefix);
            }
            fb->prefix[i] = (int32_t)p;
            fb->n_new[i] = (int32_t)q;
        } else {
            long l = c->l;
            if (c->ragged) l = first ? c->q : last ? c->l : hrng_range(r, c->q, c->l);
            fb->prefix[i] = (int32_t)(l - c->q);
            fb->n_new[i] = (int32_t)c->q;
        }
        fb->seq[i] = fb->prefix[i] + fb->n_new[i];
        fb->enc[i] = (int32_t)(c->ragged && c->enc > 0 && !last ? hrng_range(r, 1, c->enc) : c->enc);
    }
}

void fa_batch_visible(const fa_batch *fb, int i, int j, int64_t *lo, int64_t *hi) {
    if (fb->c.cross) {
        *lo = 0;
        *hi = fb->enc[i];
        return;
    }
    /* the attention types of abi/sgl_attn.h: the count follows what each one lets a token see */
    if (fb->c.attn == SGL_ATTN_TYPE_BIDIRECTIONAL || fb->c.attn == SGL_ATTN_TYPE_ENCODER_ONLY) {
        *lo = fb->c.attn == SGL_ATTN_TYPE_ENCODER_ONLY ? fb->prefix[i] : 0;
        *hi = fb->seq[i];
        return;
    }
    const int64_t pos = (int64_t)fb->prefix[i] + j;
    *hi = pos + 1;
    *lo = fb->c.window >= 0 && pos - fb->c.window > 0 ? pos - fb->c.window : 0;
}

static void set_tensors(fa_batch *fb) {
    const fa_case *c = &fb->c;
    sgl_attn_batch *b = &fb->batch;
    memset(b, 0, sizeof *b);
    b->struct_size = sizeof *b;
    b->forward_mode = c->mode;
    b->batch_size = fb->bs;
    b->num_tokens = fb->T;
    b->page_size = (int32_t)c->page;
    b->tokens_per_req = c->mode == SGL_ATTN_MODE_EXTEND ? 0 : (int32_t)c->q;
    for (int i = 0; i < fb->bs; i++) b->seq_lens_sum += fb->seq[i];
    b->req_to_token = &fb->r2t.t;
    b->req_pool_indices = &fb->req_idx.t;
    b->seq_lens = &fb->seq_lens.t;
    b->out_cache_loc = &fb->ocl.t;
    b->positions = &fb->positions.t;
    fb->seq_cpu = htensor_host_view(&fb->seq_lens);
    b->seq_lens_cpu = &fb->seq_cpu;
    if (c->mode != SGL_ATTN_MODE_DECODE) { /* verify fills them too, for plugins that plan it as an extend */
        b->extend_prefix_lens = &fb->prefix_lens.t;
        b->extend_seq_lens = &fb->ext_lens.t;
        fb->prefix_cpu = htensor_host_view(&fb->prefix_lens);
        fb->ext_cpu = htensor_host_view(&fb->ext_lens);
        b->extend_prefix_lens_cpu = &fb->prefix_cpu;
        b->extend_seq_lens_cpu = &fb->ext_cpu;
    }
    if (c->enc > 0) {
        b->encoder_lens = &fb->enc_lens.t;
        fb->enc_cpu = htensor_host_view(&fb->enc_lens);
        b->encoder_lens_cpu = &fb->enc_cpu;
    }
    if (c->state) b->state_indices = &fb->state_idx.t;
    b->stream = fb->dev->stream;

    sgl_attn_layer *L = &fb->layer;
    memset(L, 0, sizeof *L);
    L->struct_size = sizeof *L;
    L->layer_id = (int32_t)c->layer;
    L->num_q_heads = (int32_t)c->hq;
    L->num_kv_heads = (int32_t)c->hkv;
    L->head_dim_qk = (int32_t)c->d;
    L->head_dim_v = (int32_t)c->dv;
    L->sm_scale = (float)c->scale;
    L->logit_softcap = (float)c->softcap;
    L->sliding_window = (int32_t)c->window;
    L->is_cross = (int32_t)c->cross;
    L->sinks = c->sinks ? &fb->sinks.t : NULL;
    L->k_cache = &fb->k_cache.t;
    L->v_cache = c->mla ? NULL : &fb->v_cache.t;
    L->k_scale = (float)fa_pool_scale(c, 0);
    L->v_scale = (float)fa_pool_scale(c, 1);
    if (c->scalet) { /* the tensors replace the floats: a wrong decoy there shows if one is read */
        L->k_scale_tensor = &fb->k_scale_t.t;
        L->v_scale_tensor = &fb->v_scale_t.t;
        L->k_scale = L->v_scale = 1.0f;
    }

    sgl_attn_forward_args *a = &fb->args;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->save_kv_cache = (int32_t)c->save;
    a->layer = L;
    a->batch = b;
    a->q = &fb->q.t;
    a->k = c->cross ? NULL : &fb->k.t;
    a->v = c->cross || c->mla ? NULL : &fb->v.t;
    a->out = &fb->out.t;
    if (c->chunk > 0) {
        sgl_attn_dual_chunk *d = &fb->dca;
        memset(d, 0, sizeof *d);
        d->struct_size = sizeof *d;
        d->chunk_size = (int32_t)c->chunk;
        d->local_size = (int32_t)c->local;
        d->original_max_position = (int32_t)c->omp;
        d->q_succ = &fb->q_succ.t;
        d->q_inter = &fb->q_inter.t;
        a->dual_chunk = d;
    }

    memset(&fb->opts, 0, sizeof fb->opts);
    fb->opts.struct_size = sizeof fb->opts;
    fb->opts.max_reqs = (int32_t)fb->rows;
    fb->opts.max_tokens = fb->T > 0 ? fb->T : 1;
    fb->opts.max_context = (int32_t)fb->cols;
}

int fa_batch_build(fa_batch *fb, const fa_case *c, const hdev *dev, uint64_t seed, char *err, size_t err_size) {
    memset(fb, 0, sizeof *fb);
    fb->c = *c;
    fb->dev = dev;
    fb->bs = (int)c->b;
    hrng r;
    hrng_seed(&r, seed);
    const size_t bs = (size_t)fb->bs;
    int64_t *perm = NULL;
    fb->seq = calloc(bs, sizeof(int32_t));
    fb->prefix = calloc(bs, sizeof(int32_t));
    fb->n_new = calloc(bs, sizeof(int32_t));
    fb->enc = calloc(bs, sizeof(int32_t));
    fb->row = calloc(bs, sizeof(int32_t));
    if (!fb->seq || !fb->prefix || !fb->n_new || !fb->enc || !fb->row) goto oom;
    lengths(fb, &r);
    int64_t T = 0, need = 0, pages = 1;
    for (size_t i = 0; i < bs; i++) {
        int64_t n = (int64_t)fb->enc[i] + fb->seq[i];
        T += fb->n_new[i];
        need = n > need ? n : need;
        pages += (n + c->page - 1) / c->page;
    }
    if (T > INT32_MAX / 2) {
        snprintf(err, err_size, "the case has %lld new tokens; too many", (long long)T);
        goto fail;
    }
    fb->T = (int)T;
    pages += pages / 4 + 2; /* free pages the plugin must not touch */
    fb->slots = pages * c->page;
    fb->rows = fb->bs + 3;
    fb->cols = need + hrng_range(&r, 0, c->page);

    /* pages 1.. shuffled; page 0 holds the reserved slot 0 */
    perm = malloc(sizeof(int64_t) * (size_t)pages);
    if (!perm) goto oom;
    for (int64_t p = 0; p < pages - 1; p++) perm[p] = p + 1;
    hrng_shuffle(&r, perm, (size_t)(pages - 1));
    int64_t rowperm[FA_MAX_REQS + 3];
    for (int64_t i = 0; i < fb->rows; i++) rowperm[i] = i;
    hrng_shuffle(&r, rowperm, (size_t)fb->rows);

    const hdtype it = c->idx == 64 ? HDT_I64 : HDT_I32;
    ALLOC(r2t, "req_to_token", it, 2, fb->rows, fb->cols);
    ALLOC(req_idx, "req_pool_indices", it, 1, fb->bs);
    ALLOC(seq_lens, "seq_lens", it, 1, fb->bs);
    ALLOC(prefix_lens, "extend_prefix_lens", it, 1, fb->bs);
    ALLOC(ext_lens, "extend_seq_lens", it, 1, fb->bs);
    ALLOC(enc_lens, "encoder_lens", it, 1, fb->bs);
    ALLOC(ocl, "out_cache_loc", it, 1, fb->T);
    ALLOC(positions, "positions", it, 1, fb->T);
    ALLOC(state_idx, "state_indices", it, 1, fb->bs);
    /* every entry a valid slot, most of them wrong: reading past a length
     * shows up in the numbers, not as a crash */
    for (size_t e = 0; e < fb->r2t.count; e++) htensor_set_index(&fb->r2t, e, hrng_range(&r, 1, fb->slots - 1));
    int64_t next = 0, tok = 0;
    for (size_t i = 0; i < bs; i++) {
        const int64_t row = rowperm[i], n = (int64_t)fb->enc[i] + fb->seq[i];
        fb->row[i] = (int32_t)row;
        for (int64_t col = 0; col < n; col++) {
            if (col % c->page == 0) next++;
            htensor_set_index(&fb->r2t, (size_t)(row * fb->cols + col), perm[next - 1] * c->page + col % c->page);
        }
        htensor_set_index(&fb->req_idx, i, row);
        htensor_set_index(&fb->seq_lens, i, fb->seq[i]);
        htensor_set_index(&fb->prefix_lens, i, fb->prefix[i]);
        htensor_set_index(&fb->ext_lens, i, fb->n_new[i]);
        htensor_set_index(&fb->enc_lens, i, fb->enc[i]);
        htensor_set_index(&fb->state_idx, i, (int64_t)i); /* request i's slot of a wrapper's state pool */
        for (int j = 0; j < fb->n_new[i]; j++, tok++) {
            const int64_t col = (int64_t)fb->enc[i] + fb->prefix[i] + j;
            htensor_set_index(&fb->ocl, (size_t)tok, htensor_get_index(&fb->r2t, (size_t)(row * fb->cols + col)));
            htensor_set_index(&fb->positions, (size_t)tok, (int64_t)fb->prefix[i] + j);
        }
    }
    free(perm);
    perm = NULL;

    const int64_t Tn = fb->T > 0 ? fb->T : 0;
    ALLOC(q, "q", c->dt, 3, Tn, c->hq, c->d);
    ALLOC(k, "k", c->dt, 3, Tn, c->hkv, c->d);
    ALLOC(v, "v", c->dt, 3, Tn, c->hkv, c->dv);
    ALLOC(out, "out", c->dt, 3, Tn, c->hq, c->dv);
    ALLOC(k_cache, "k_cache", c->kvdt, 3, fb->slots, c->hkv, c->d);
    ALLOC(v_cache, "v_cache", c->kvdt, 3, c->mla ? 1 : fb->slots, c->hkv, c->dv);
    ALLOC(sinks, "sinks", HDT_F32, 1, c->hq);
    ALLOC(k_scale_t, "k_scale_tensor", HDT_F32, 1, 1);
    ALLOC(v_scale_t, "v_scale_tensor", HDT_F32, 1, 1);
    hdtype_store(HDT_F32, htensor_data(&fb->k_scale_t), 0, fa_pool_scale(c, 0));
    hdtype_store(HDT_F32, htensor_data(&fb->v_scale_t), 0, fa_pool_scale(c, 1));
    ALLOC(q_succ, "q_succ", c->dt, 3, c->chunk > 0 ? Tn : 0, c->hq, c->d);
    ALLOC(q_inter, "q_inter", c->dt, 3, c->chunk > 0 ? Tn : 0, c->hq, c->d);
    /* scores of deviation ~2, or ~softcap/2 so the cap bends them */
    const double qs = c->softcap > 0 && c->softcap / 4 > 1 ? 2.0 * c->softcap / 4 : 2.0;
    htensor_fill_normal(&fb->q, &r, qs);
    htensor_fill_normal(&fb->k, &r, 1.0);
    htensor_fill_normal(&fb->v, &r, 1.0);
    htensor_fill_normal(&fb->sinks, &r, 2.0);
    /* fp8 pools: stored values of deviation 1 / scale, values of deviation 1 */
    htensor_fill_uniform(&fb->k_cache, &r, 1.0 / fa_pool_scale(c, 0));
    htensor_fill_uniform(&fb->v_cache, &r, 1.0 / fa_pool_scale(c, 1));
    htensor_poison(&fb->out);
    /* after every other draw, so the inputs of the other cases stay as they were */
    htensor_fill_normal(&fb->q_succ, &r, qs);
    htensor_fill_normal(&fb->q_inter, &r, qs);
    fb->k_init = malloc(fb->k_cache.bytes + 1);
    fb->v_init = malloc(fb->v_cache.bytes + 1);
    if (!fb->k_init || !fb->v_init) goto oom;
    memcpy(fb->k_init, htensor_cdata(&fb->k_cache), fb->k_cache.bytes);
    memcpy(fb->v_init, htensor_cdata(&fb->v_cache), fb->v_cache.bytes);
    fa_case_model(c, "harness case", &fb->model);
    set_tensors(fb);
    htensor *all[] = {&fb->r2t,  &fb->req_idx,   &fb->seq_lens, &fb->prefix_lens, &fb->ext_lens,
                      &fb->enc_lens, &fb->ocl, &fb->positions, &fb->state_idx, &fb->q,
                      &fb->k,    &fb->v,       &fb->out,      &fb->k_cache,     &fb->v_cache, &fb->sinks,
                      &fb->k_scale_t, &fb->v_scale_t, &fb->q_succ, &fb->q_inter};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (htensor_upload(all[i], err, err_size)) goto fail;
    if (fa_case_engine(c) && fa_engine_build(fb, &r, err, err_size)) goto fail;
    return 0;
oom:
    snprintf(err, err_size, "out of host memory building the case");
fail:
    free(perm);
    fa_batch_free(fb);
    return -1;
}

int fa_batch_restage(fa_batch *fb, char *err, size_t err_size) {
    memcpy(htensor_data(&fb->k_cache), fb->k_init, fb->k_cache.bytes);
    memcpy(htensor_data(&fb->v_cache), fb->v_init, fb->v_cache.bytes);
    htensor_poison(&fb->out);
    if (htensor_upload(&fb->k_cache, err, err_size) || htensor_upload(&fb->v_cache, err, err_size) ||
        htensor_upload(&fb->out, err, err_size))
        return -1;
    return 0;
}

void fa_batch_free(fa_batch *fb) {
    htensor *all[] = {&fb->r2t,  &fb->req_idx,   &fb->seq_lens, &fb->prefix_lens, &fb->ext_lens,
                      &fb->enc_lens, &fb->ocl, &fb->positions, &fb->state_idx, &fb->q,
                      &fb->k,    &fb->v,       &fb->out,      &fb->k_cache,     &fb->v_cache, &fb->sinks,
                      &fb->k_scale_t, &fb->v_scale_t, &fb->q_succ, &fb->q_inter};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) htensor_free(all[i]);
    fa_engine_free(fb);
    free(fb->seq);
    free(fb->prefix);
    free(fb->n_new);
    free(fb->enc);
    free(fb->row);
    free(fb->k_init);
    free(fb->v_init);
    free(fb->ref);
    memset(fb, 0, sizeof *fb);
}

int fa_batch_call(fa_batch *fb, sgl_attn_backend *b, const char **what) {
    *what = "init_forward_metadata";
    int rc = sgl_attn_init_forward_metadata(b, &fb->batch);
    if (rc) return rc;
    if (fb->c.mode == SGL_ATTN_MODE_DECODE) {
        *what = "forward_decode";
        return sgl_attn_forward_decode(b, &fb->args);
    }
    *what = "forward_extend";
    return sgl_attn_forward_extend(b, &fb->args);
}

void fa_batch_count(const fa_batch *fb, double *flops, double *bytes) {
    const fa_case *c = &fb->c;
    const double kvsz = (double)hdtype_size(c->kvdt), dsz = (double)hdtype_size(c->dt);
    const double isz = c->idx == 64 ? 8 : 4;
    double pairs = 0, kv_rows = 0, cols = 0;
    for (int i = 0; i < fb->bs; i++) {
        int64_t ulo = INT64_MAX, uhi = 0;
        for (int j = 0; j < fb->n_new[i]; j++) {
            int64_t lo, hi;
            fa_batch_visible(fb, i, j, &lo, &hi);
            pairs += (double)(hi - lo);
            if (hi > lo) ulo = lo < ulo ? lo : ulo, uhi = hi > uhi ? hi : uhi;
        }
        if (uhi > ulo) kv_rows += (double)(uhi - ulo); /* each visible row read once */
        cols += uhi > ulo ? (double)(uhi - ulo) : 0;
    }
    *flops = 2.0 * (double)c->hq * pairs * (double)(c->d + c->dv);
    const double kv_row_bytes = (double)c->hkv * (double)(c->mla ? c->d : c->d + c->dv) * kvsz;
    double b = kv_rows * kv_row_bytes;                                    /* the pool */
    b += (double)fb->T * (double)c->hq * (double)(c->d + c->dv) * dsz;    /* q in, out out */
    if (c->save) {
        const double per = (double)c->hkv * (double)(c->mla ? c->d : c->d + c->dv);
        b += (double)fb->T * per * (dsz + kvsz); /* new k/v read, written into the pool */
    }
    b += (cols + 3.0 * fb->bs + fb->T) * isz; /* page-table entries, lengths, out_cache_loc */
    *bytes = b;
}
