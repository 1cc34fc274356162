/* cuda_attn_forward.c - init_forward_metadata (the index faults the kernels
 * noted, checks, then the plan kernels on the batch's stream) and the two forwards (checks, then launches on the
 * batch's stream).  None of them reads the environment, a file or a clock,
 * creates an event, synchronises or allocates; they write only the instance
 * (its error text, the planned batch, the per-layer TMA map cache). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_tmap.h"
#include "cuda/sdk_cuda.h"
#include "cuda_attn.h"
#include "dual_chunk.h"
#include "sdk_text.h"

static char *dev_at(ca_backend *b, size_t off) { return (char *)b->dev_mem + off; }
static int32_t *num_items_ptr(ca_backend *b, int set) { return (int32_t *)dev_at(b, b->sz.off_num) + set; }

static attn_index index_of(const DLTensor *t) {
    attn_index ix;
    memset(&ix, 0, sizeof ix);
    if (!t) return ix;
    ix.p = (const int32_t *)sgl_sdk_data(t);
    ix.shift = t->dtype.bits == 64 ? 1 : 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    ix.n = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
    return ix;
}

/* Lengths the host mirrors show (the *_cpu tensors the host may read; the
 * device tensors are the plan kernels'), checked before any kernel sees them. */
static int check_mirrors(ca_backend *b, const sgl_attn_batch *bt, int32_t bs, int32_t tokens, int mode,
                         const char *call) {
    const DLTensor *sl = bt->seq_lens_cpu, *el = bt->extend_seq_lens_cpu, *en = bt->encoder_lens_cpu;
    const int have_sl = sgl_sdk_host_index(sl, bs), have_el = sgl_sdk_host_index(el, bs),
              have_en = sgl_sdk_host_index(en, bs);
    int64_t sum_ext = 0;
    for (int32_t i = 0; i < bs; i++) {
        const int64_t enc = have_en ? sgl_sdk_index_at(en, i) : 0;
        if (enc < 0 || enc > b->r2t_cols) {
            snprintf(b->err, sizeof b->err, "%s: encoder_lens[%d] = %" PRId64 ": expected 0..%d (%s columns)", call, i,
                     enc, b->r2t_cols, b->paged ? "page_table pages x page_size" : "req_to_token");
            return SGL_ATTN_E_INVALID;
        }
        if (!have_sl) continue;
        const int64_t len = sgl_sdk_index_at(sl, i);
        if (len < (mode == SGL_ATTN_MODE_DECODE ? 1 : 0) || enc + len > b->r2t_cols) {
            snprintf(b->err, sizeof b->err,
                     "%s: seq_lens[%d] = %" PRId64 ": expected %d..%" PRId64 " (%s has %d columns%s)", call, i, len,
                     mode == SGL_ATTN_MODE_DECODE ? 1 : 0, (int64_t)b->r2t_cols - enc,
                     b->paged ? "page_table (pages x page_size)" : "req_to_token", b->r2t_cols,
                     enc ? ", minus the encoder tokens" : "");
            return SGL_ATTN_E_INVALID;
        }
        if (mode == SGL_ATTN_MODE_TARGET_VERIFY && len < tokens / (bs > 0 ? bs : 1)) {
            snprintf(b->err, sizeof b->err,
                     "%s: seq_lens[%d] = %" PRId64 ": a verify request counts its tokens_per_req = %d new tokens",
                     call, i, len, tokens / (bs > 0 ? bs : 1));
            return SGL_ATTN_E_INVALID;
        }
        if (mode == SGL_ATTN_MODE_EXTEND && have_el) {
            const int64_t ext = sgl_sdk_index_at(el, i);
            if (ext < 0 || ext > len) {
                snprintf(b->err, sizeof b->err, "%s: extend_seq_lens[%d] = %" PRId64 ": expected 0..seq_lens[%d] = %" PRId64,
                         call, i, ext, i, len);
                return SGL_ATTN_E_INVALID;
            }
            sum_ext += ext;
        }
    }
    if (mode == SGL_ATTN_MODE_EXTEND && have_el && sum_ext != tokens) {
        snprintf(b->err, sizeof b->err, "%s: extend_seq_lens sum to %" PRId64 ": expected num_tokens = %d", call,
                 sum_ext, tokens);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

/* Tree verify's mask (batch.custom_mask / mask_indptr) and what the batch's
 * self-attention items see (*self_vis: ATTN_SELF_*, from the model's
 * attn_type or the mask).  The blocks' lengths are checked by the plan kernel
 * (plan.cuh: a request whose block is not new tokens x seq_len attends nothing
 * and the next metadata call fails, naming mask_indptr). */
static int plan_mask(ca_backend *b, const ca_msg *m, const sgl_attn_batch *bt, int32_t bs, int verify,
                     int *self_vis) {
    const DLTensor *mk = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, custom_mask);
    const DLTensor *ip = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, mask_indptr);
    b->planned_mask = NULL;
    memset(&b->planned_mask_indptr, 0, sizeof b->planned_mask_indptr);
    *self_vis = b->model_attn_type == SGL_ATTN_TYPE_BIDIRECTIONAL  ? ATTN_SELF_ALL
                : b->model_attn_type == SGL_ATTN_TYPE_ENCODER_ONLY ? ATTN_SELF_NEW_ONLY
                                                                   : ATTN_SELF_CAUSAL;
    if (!mk && !ip) return SGL_ATTN_OK;
    if (!mk || !ip) {
        snprintf(b->err, sizeof b->err, "%s: batch.%s is set without batch.%s: tree verify needs both", m->call,
                 mk ? "custom_mask" : "mask_indptr", mk ? "mask_indptr" : "custom_mask");
        return SGL_ATTN_E_INVALID;
    }
    if (!verify) {
        snprintf(b->err, sizeof b->err, "%s: batch.custom_mask is set in forward_mode %d: it is a target verify (3) input",
                 m->call, bt->forward_mode);
        return SGL_ATTN_E_INVALID;
    }
    if (b->model_attn_type != SGL_ATTN_TYPE_CAUSAL) {
        snprintf(b->err, sizeof b->err,
                 "%s: batch.custom_mask for a model with attn_type %d: a tree mask is for causal layers", m->call,
                 b->model_attn_type);
        return SGL_ATTN_E_INVALID;
    }
    int rc = ca_check_mask(m, mk, b->device);
    if (!rc) rc = ca_check_index1(m, ip, "batch.mask_indptr", b->device, (int64_t)bs + 1);
    if (rc) return rc;
    b->planned_mask = (const uint8_t *)sgl_sdk_data(mk);
    b->planned_mask_indptr = index_of(ip);
    *self_vis = ATTN_SELF_TREE;
    return SGL_ATTN_OK;
}

int ca_plan(ca_backend *b, const sgl_attn_batch *bt, int32_t bs, int32_t tokens, int mode) {
    const char *call = "init_forward_metadata";
    ca_msg m = {b->err, sizeof b->err, call};
    b->err[0] = 0;
    b->planned_mode = 0;
    if (!bt || bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0) {
        snprintf(b->err, sizeof b->err, "%s: batch is NULL or older than ABI 1.0 (struct_size %u)", call,
                 bt ? bt->struct_size : 0u);
        return SGL_ATTN_E_INVALID;
    }
    b->planned_enc_n = -1;
    memset(&b->planned_enc_loc, 0, sizeof b->planned_enc_loc);
    int rc = SGL_ATTN_OK;
    /* An index fault a kernel of an earlier batch met (no sync: the record is
     * mapped host memory; it shows once that kernel has run). */
    if (sgl_sdk_cuda_fault_take(&b->fault, bt->stream, call, b->err, sizeof b->err)) return SGL_ATTN_E_INVALID;
    if (mode == SGL_ATTN_MODE_IDLE) {
        b->planned_mode = SGL_ATTN_MODE_IDLE;
        return SGL_ATTN_OK;
    }
    /* Draft extend is an extend (the accepted tokens, causal); verify is an
     * extend of tokens_per_req tokens per request, through forward_extend. */
    if (mode == SGL_ATTN_MODE_DRAFT_EXTEND) mode = SGL_ATTN_MODE_EXTEND;
    const int verify = mode == SGL_ATTN_MODE_TARGET_VERIFY;
    if (mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_EXTEND && !verify) {
        snprintf(b->err, sizeof b->err, "%s: forward_mode %d: expected idle, extend, decode, target verify or draft extend",
                 call, mode);
        return SGL_ATTN_E_INVALID;
    }
    if (bs < 0 || bs > b->sz.max_reqs) {
        snprintf(b->err, sizeof b->err, "%s: batch_size %d: expected 0..%d (create's max_reqs)", call, bs, b->sz.max_reqs);
        return SGL_ATTN_E_INVALID;
    }
    if (mode == SGL_ATTN_MODE_DECODE) {
        if (bt->tokens_per_req > 1) {
            snprintf(b->err, sizeof b->err, "%s: tokens_per_req %d: cuda_attn decodes one token per request", call,
                     bt->tokens_per_req);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (tokens != bs) {
            snprintf(b->err, sizeof b->err, "%s: decode num_tokens %d: expected batch_size %d", call, tokens, bs);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (verify) {
        if (bt->tokens_per_req < 1) {
            snprintf(b->err, sizeof b->err, "%s: tokens_per_req %d in a target verify batch: expected >= 1", call,
                     bt->tokens_per_req);
            return SGL_ATTN_E_INVALID;
        }
        if ((int64_t)bs * bt->tokens_per_req != tokens) {
            snprintf(b->err, sizeof b->err, "%s: verify num_tokens %d: expected batch_size %d x tokens_per_req %d", call,
                     tokens, bs, bt->tokens_per_req);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (tokens < 0 || tokens > b->sz.max_tokens) {
        snprintf(b->err, sizeof b->err, "%s: num_tokens %d: expected 0..%d (create's max_tokens)", call, tokens,
                 b->sz.max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    if (bt->page_size < 1 || bt->page_size > 1024) {
        snprintf(b->err, sizeof b->err, "%s: page_size %d: expected 1..1024", call, bt->page_size);
        return bt->page_size < 1 ? SGL_ATTN_E_INVALID : SGL_ATTN_E_UNSUPPORTED;
    }
    /* A page table replaces req_to_token and req_pool_indices (neither is read). */
    const DLTensor *pt = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, bt, page_table);
    int32_t shift = 0;
    if (pt) {
        rc = ca_check_page_table(&m, pt, b->device, bs, bt->page_size, &shift);
    } else {
        rc = ca_check_index2(&m, bt->req_to_token, "req_to_token", b->device, 1, 1);
        if (!rc) rc = ca_check_index1(&m, bt->req_pool_indices, "req_pool_indices", b->device, bs);
    }
    if (!rc) rc = ca_check_index1(&m, bt->seq_lens, "seq_lens", b->device, bs);
    if (!rc && mode == SGL_ATTN_MODE_EXTEND)
        rc = ca_check_index1(&m, bt->extend_seq_lens, "extend_seq_lens", b->device, bs);
    int self_vis = ATTN_SELF_CAUSAL;
    if (!rc) rc = plan_mask(b, &m, bt, bs, verify, &self_vis);
    if (!rc && bt->encoder_lens) rc = ca_check_index1(&m, bt->encoder_lens, "encoder_lens", b->device, bs);
    int64_t n_enc = -1;
    if (!rc) rc = ca_check_enc_loc(&m, bt, b->device, bs, &n_enc);
    if (rc) return rc;
    const DLTensor *table = pt ? pt : bt->req_to_token;
    b->paged = pt != NULL;
    b->page_shift = shift;
    b->page_size = 1 << shift;
    b->r2t_rows = (int32_t)table->shape[0];
    b->r2t_cols = (int32_t)(table->shape[1] << shift);
    rc = check_mirrors(b, bt, bs, tokens, mode, call);
    if (rc) return rc;
    /* tree verify: the packed mask's rows hold the table's columns (every seq_len fits them);
     * the batch's rows x words and requests x words within what create sized (tmask_rows
     * and max_reqs rows of max_context columns) */
    b->planned_mask_words = 0;
    if (self_vis == ATTN_SELF_TREE) {
        const int64_t words = ((int64_t)b->r2t_cols + 63) / 64, rows = (int64_t)bs * bt->tokens_per_req;
        if (!b->tmask_bits || rows * words > (int64_t)b->tmask_rows * b->tmask_words ||
            (int64_t)bs * words > (int64_t)b->sz.max_reqs * b->tmask_words) {
            snprintf(b->err, sizeof b->err,
                     "%s: batch.custom_mask: %lld rows of %lld columns (the table's) exceed the packed mask sized at "
                     "create (%d rows: max_reqs x the model's spec_tokens, at most max_tokens; of max_context %lld "
                     "columns; a model with spec_tokens <= 1 has none)",
                     call, (long long)rows, (long long)b->r2t_cols, (int)b->tmask_rows,
                     (long long)b->tmask_words * 64);
            return SGL_ATTN_E_INVALID;
        }
        b->planned_mask_words = (int32_t)words;
    }

    attn_plan_in in;
    memset(&in, 0, sizeof in);
    in.req_pool_indices = index_of(pt ? NULL : bt->req_pool_indices); /* absent: row b of the page table */
    in.seq_lens = index_of(bt->seq_lens);
    in.extend_seq_lens = index_of(mode == SGL_ATTN_MODE_EXTEND ? bt->extend_seq_lens : NULL);
    in.ext_uniform = verify ? bt->tokens_per_req : 0;
    if (self_vis == ATTN_SELF_TREE) {
        in.mask_indptr = b->planned_mask_indptr;
        in.mask_len = bt->custom_mask->shape[0];
    }
    in.encoder_lens = index_of(bt->encoder_lens);
    in.bs = bs;
    in.max_reqs = b->r2t_rows;
    in.max_ctx = b->r2t_cols;
    in.fault = b->fault.dev;
    memset(b->has_dplan, 0, sizeof b->has_dplan);
    memset(b->has_eplan, 0, sizeof b->has_eplan);
    b->planned_split = 0;
    int ce = 0, split = 0;
    if (mode == SGL_ATTN_MODE_DECODE) {
        const int32_t wave_aim = b->dec_wave_aim ? b->dec_wave_aim[bs < b->sz.max_reqs ? bs : b->sz.max_reqs] : 0;
        for (int set = 0; set < ATTN_DPLAN_COUNT && !ce; set++) {
            if (set == ATTN_DPLAN_WINDOW && b->model_window < 0) continue;
            if (set == ATTN_DPLAN_CROSS && !bt->encoder_lens) continue;
            attn_decode_plan pl;
            memset(&pl, 0, sizeof pl);
            pl.items = (attn_decode_item *)dev_at(b, b->sz.off_ditems[set]);
            pl.num_items = num_items_ptr(b, set);
            pl.max_items = b->sz.decode_max_items;
            pl.max_parts = b->sz.decode_max_parts;
            pl.target_items = b->sz.decode_target_items;
            pl.min_chunk = b->sz.decode_min_chunk;
            pl.chunk_align = b->sz.decode_chunk_align;
            pl.window = set == ATTN_DPLAN_WINDOW ? b->model_window : -1;
            pl.cross = set == ATTN_DPLAN_CROSS;
            pl.counters = (int32_t *)dev_at(b, b->sz.off_counters);
            pl.counters_per_req = b->sz.counters_per_req;
            if (wave_aim) { /* an fp8 pool: the wave rule's aim for bs, ceil splits */
                pl.target_items = wave_aim;
                pl.split_ceil = 1;
            }
            ce = attn_launch_plan_decode(&in, &pl, bt->stream);
            b->has_dplan[set] = 1;
        }
        b->grid_items = wave_aim ? ca_dec_wave_grid_items(&b->sz, wave_aim, bs) : attn_decode_grid_items(&b->sz, bs);
    } else {
        for (int set = 0; set < ATTN_EPLAN_COUNT && !ce; set++) {
            if (set == ATTN_EPLAN_CROSS && !bt->encoder_lens) continue;
            attn_extend_plan pl;
            memset(&pl, 0, sizeof pl);
            pl.items = (attn_extend_item *)dev_at(b, b->sz.off_eitems[set]);
            pl.num_items = num_items_ptr(b, ATTN_DPLAN_COUNT + set);
            pl.max_items = b->sz.extend_max_items;
            pl.block_m = b->sz.extend_block_m;
            pl.block_n = b->sz.extend_block_n;
            pl.cross = set == ATTN_EPLAN_CROSS;
            pl.self_vis = self_vis;
            ce = attn_launch_plan_extend(&in, &pl, bt->stream);
            b->has_eplan[set] = 1;
        }
        b->grid_items = attn_extend_grid_items(&b->sz, bs, tokens);
        /* the split's lists (extend_fp8_split.cu), for the causal self-attention layers of
         * the batch: an fp8 pool's split extend (the others run the fp8 mma extend alone), or
         * a 16-bit pool's direct extend where ca_split_planned allows (the others keep the
         * save-KV launch and the paged extend over all columns) */
        const int causal_split = !ce && b->sp_mem && self_vis == ATTN_SELF_CAUSAL;
        const int no_prefix = causal_split && ca_no_prefix_shown(bt, bs);
        if (causal_split && ca_split_planned(b->sp_direct, verify, b->plan_graph, no_prefix)) {
            attn_split_plan sp;
            memset(&sp, 0, sizeof sp);
            sp.fresh = b->sp_new;
            sp.pre = b->sp_pre;
            sp.num = b->sp_num;
            sp.max_new = b->sp_max_new;
            sp.max_pre = b->sp_max_pre;
            sp.block_new = 128; /* the ragged wgmma kernel's rows */
            sp.block_pre = b->sp_pre_wgmma ? 128 : b->sz.extend_block_m; /* the prefix kernel's rows */
            sp.block_n = b->sz.extend_block_n;
            ce = attn_launch_split_plan(&in, &sp, bt->stream);
            const int64_t gn = ((int64_t)tokens + 127) / 128 + bs, gp = attn_extend_grid_items(&b->sz, bs, tokens);
            b->sp_grid_new = (int32_t)(gn < b->sp_max_new ? gn : b->sp_max_new);
            b->sp_grid_pre = gp < b->sp_max_pre ? gp : b->sp_max_pre;
            split = 1;
            b->sp_prefix = !no_prefix;
        }
        /* tree verify: the mask's bits, once for every layer and head of the batch */
        if (!ce && self_vis == ATTN_SELF_TREE)
            ce = attn_launch_tree_mask_pack(b->planned_mask, bt->custom_mask->shape[0], b->planned_mask_indptr, bs,
                                            bt->tokens_per_req, b->planned_mask_words, b->tmask_bits,
                                            b->tmask_full, b->tmask_first, bt->stream);
    }
    /* cross attention's encoder slots against the table (after the plan, which notes a bad row
     * or encoder length first) */
    if (!ce && n_enc >= 0) {
        attn_enc_loc_check ec;
        memset(&ec, 0, sizeof ec);
        ec.loc = index_of(bt->encoder_out_cache_loc);
        ec.encoder_lens = in.encoder_lens;
        ec.req_pool_indices = in.req_pool_indices;
        ec.table = index_of(table);
        ec.table_cols = table->shape[1];
        ec.n = n_enc;
        ec.bs = bs;
        ec.max_reqs = b->r2t_rows;
        ec.max_ctx = b->r2t_cols;
        ec.page_shift = shift;
        ec.fault = b->fault.dev;
        ce = attn_launch_encoder_loc_check(&ec, bt->stream);
    }
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "init_forward_metadata: plan kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    b->planned_mode = verify ? SGL_ATTN_MODE_EXTEND : mode;
    b->planned_verify = verify;
    b->planned_self = self_vis;
    b->planned_split = split;
    b->planned_tpr = verify ? bt->tokens_per_req : 0;
    b->checked_slots = INT64_MAX; /* the item check runs at the first forward */
    b->checked_map = NULL;        /* and at the first forward with each slot map */
    b->planned_bs = bs;
    b->planned_tokens = tokens;
    if (n_enc >= 0) {
        b->planned_enc_n = n_enc;
        b->planned_enc_loc = index_of(bt->encoder_out_cache_loc);
    }
    return SGL_ATTN_OK;
}

int ca_init_forward_metadata(sgl_attn_backend *bb, const sgl_attn_batch *bt) {
    ca_backend *b = (ca_backend *)bb;
    if (!bt) {
        snprintf(b->err, sizeof b->err, "init_forward_metadata: batch is NULL");
        return SGL_ATTN_E_INVALID;
    }
    return ca_plan(b, bt, bt->batch_size, bt->num_tokens, bt->forward_mode);
}

/* The layer's attention type against what the batch planned: the extend
 * plan's self-attention items are planned for the model's type (plan.cuh,
 * ATTN_SELF_*), so a self-attention layer of another type is refused; a
 * decode token is its request's last, so a bidirectional decode is the causal
 * one.  The tree mask replaces causality on causal layers without a window. */
static int check_attn_type(ca_backend *b, const sgl_attn_layer *L, int mode, const char *call) {
    const int32_t type = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type);
    static const char *const names[] = {"causal", "bidirectional", "encoder-only"};
    if (type < SGL_ATTN_TYPE_CAUSAL || type > SGL_ATTN_TYPE_ENCODER_ONLY) {
        snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = %d; expected 0 causal, 1 bidirectional or 2 "
                 "encoder-only", call, L->layer_id, type);
        return SGL_ATTN_E_INVALID;
    }
    if (type != SGL_ATTN_TYPE_CAUSAL) {
        if (L->is_cross) {
            snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = %d (%s) on a cross-attention layer; cross "
                     "attention is non-causal over the encoder already and takes attn_type 0",
                     call, L->layer_id, type, names[type]);
            return SGL_ATTN_E_INVALID;
        }
        if (L->sliding_window >= 0) {
            snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = %d (%s) with sliding_window %d; cuda_attn "
                     "serves a window on causal layers only",
                     call, L->layer_id, type, names[type], L->sliding_window);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (b->planned_mask) {
            snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = %d (%s) in a batch with custom_mask; a tree "
                     "mask is for causal layers", call, L->layer_id, type, names[type]);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (b->planned_mask && !L->is_cross && L->sliding_window >= 0) {
        snprintf(b->err, sizeof b->err, "%s: layer %d: batch.custom_mask with sliding_window %d; cuda_attn serves tree "
                 "verify on layers without a window", call, L->layer_id, L->sliding_window);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (L->is_cross) return SGL_ATTN_OK;
    if (mode == SGL_ATTN_MODE_DECODE) {
        if (type == SGL_ATTN_TYPE_ENCODER_ONLY) {
            snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = 2 (encoder-only) in a decode batch; "
                     "cuda_attn serves encoder-only layers in extend", call, L->layer_id);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        return SGL_ATTN_OK;
    }
    if (type != b->model_attn_type) {
        snprintf(b->err, sizeof b->err, "%s: layer %d: layer.attn_type = %d (%s) but the model's attn_type is %d (%s); "
                 "cuda_attn plans a batch for the model's type", call, L->layer_id, type, names[type],
                 b->model_attn_type, names[b->model_attn_type]);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

/* A cross layer's save: the batch's encoder slots, the ones planned. */
static int check_enc_save(ca_backend *b, const sgl_attn_forward_args *a, const char *call) {
    const DLTensor *el = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, a->batch, encoder_out_cache_loc);
    if (!el) {
        snprintf(b->err, sizeof b->err,
                 "%s: save_kv_cache on cross-attention layer %d needs batch.encoder_out_cache_loc (ABI 1.2): the "
                 "slots of the encoder K/V it writes",
                 call, a->layer->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    if (b->planned_enc_n < 0 || sgl_sdk_data(el) != (const void *)b->planned_enc_loc.p || el->ndim != 1 || !el->shape ||
        el->shape[0] != b->planned_enc_n) {
        snprintf(b->err, sizeof b->err,
                 "%s: batch.encoder_out_cache_loc %s since init_forward_metadata: plan the batch again", call,
                 b->planned_enc_n < 0 ? "was set" : "changed");
        return SGL_ATTN_E_STATE;
    }
    return SGL_ATTN_OK;
}

/* Checks shared by both forwards; fills p (all but the work lists) and, when
 * the forward has a dual_chunk block, *dual = 1 and dca.  The new tokens'
 * save goes to *late instead of a launch where the caller's kernel does it
 * (the direct extend's programmatic dependent; the 16-bit register-fed decode). */
static int forward_setup(ca_backend *b, const sgl_attn_forward_args *a, int mode, const char *call, attn_fwd *p,
                         int32_t *T, int *dual, attn_dca *dca, int *split, attn_save *late) {
    ca_msg m = {b->err, sizeof b->err, call};
    b->err[0] = 0;
    if (!a || !a->layer || !a->batch) {
        snprintf(b->err, sizeof b->err, "%s: args, layer or batch is NULL", call);
        return SGL_ATTN_E_INVALID;
    }
    if (a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0 || a->layer->struct_size < SGL_ATTN_LAYER_SIZE_V1_0) {
        snprintf(b->err, sizeof b->err, "%s: forward args / layer struct_size %u / %u: expected at least %u / %u (ABI 1.0)",
                 call, a->struct_size, a->layer->struct_size, SGL_ATTN_FORWARD_ARGS_SIZE_V1_0,
                 SGL_ATTN_LAYER_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    int rc = ca_refuse_unserved_fwd(&m, a);
    if (rc) return rc;
    if (b->ragged_only) {
        snprintf(b->err, sizeof b->err, "%s: the model's head dims qk %d / v %d: cuda_attn serves them in forward_ragged only",
                 call, CA_RAGGED_DQK, CA_RAGGED_DV);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    DLTensor *lse = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse);
    if (lse && mode == SGL_ATTN_MODE_EXTEND && b->kern.extend == ATTN_EXTEND_PORTABLE) {
        snprintf(b->err, sizeof b->err, "%s: forward args lse: the portable extend (option kernel=portable) does not write "
                 "the LSE; the default kernels do", call);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (b->planned_mode != mode) {
        snprintf(b->err, sizeof b->err, "%s: init_forward_metadata planned %s: call it with this mode first", call,
                 b->planned_mode == SGL_ATTN_MODE_DECODE ? "decode"
                 : b->planned_mode == SGL_ATTN_MODE_EXTEND ? "extend"
                 : b->planned_mode == SGL_ATTN_MODE_IDLE ? "idle" : "nothing");
        return SGL_ATTN_E_STATE;
    }
    const sgl_attn_layer *L = a->layer;
    if (L->num_q_heads != b->hq || L->num_kv_heads != b->hkv || L->head_dim_qk != b->head_dim ||
        L->head_dim_v != b->head_dim) {
        snprintf(b->err, sizeof b->err,
                 "%s: layer %d has heads %d/%d, dims %d/%d: expected %d/%d, %d/%d (the model's)", call, L->layer_id,
                 L->num_q_heads, L->num_kv_heads, L->head_dim_qk, L->head_dim_v, b->hq, b->hkv, b->head_dim,
                 b->head_dim);
        return SGL_ATTN_E_INVALID;
    }
    if (!isfinite(L->sm_scale) || !isfinite(L->logit_softcap) || L->logit_softcap < 0.f) {
        snprintf(b->err, sizeof b->err, "%s: layer %d sm_scale %g / logit_softcap %g: expected finite, soft-cap >= 0",
                 call, L->layer_id, (double)L->sm_scale, (double)L->logit_softcap);
        return SGL_ATTN_E_INVALID;
    }
    if ((rc = check_attn_type(b, L, mode, call))) return rc;
    if (L->is_cross && !(mode == SGL_ATTN_MODE_DECODE ? b->has_dplan[ATTN_DPLAN_CROSS] : b->has_eplan[ATTN_EPLAN_CROSS])) {
        snprintf(b->err, sizeof b->err, "%s: layer %d is cross attention but the batch had no encoder_lens", call,
                 L->layer_id);
        return SGL_ATTN_E_STATE;
    }
    const int32_t t = b->planned_tokens;
    *T = t;
    int64_t qs[3], os[3], ks[3], vs[3];
    rc = ca_check_float3(&m, a->q, "q", b->device, b->dt_bit, t, b->hq, b->head_dim, 1, qs);
    if (!rc) rc = ca_check_float3(&m, a->out, "out", b->device, b->dt_bit, t, b->hq, b->head_dim, 1, os);
    const int64_t slots = L->k_cache && L->k_cache->ndim >= 1 && L->k_cache->shape ? L->k_cache->shape[0] : 0;
    if (!rc) rc = ca_check_float3(&m, L->k_cache, "layer.k_cache", b->device, b->kv_bit, slots, b->hkv, b->head_dim, 0, ks);
    if (!rc) rc = ca_check_float3(&m, L->v_cache, "layer.v_cache", b->device, b->kv_bit, slots, b->hkv, b->head_dim, 0, vs);
    const float *k_scale_dev = NULL, *v_scale_dev = NULL;
    if (!rc && b->kern.kv_fp8) rc = ca_check_kv_scales(&m, L, b->device, &k_scale_dev, &v_scale_dev);
    if (!rc && slots < 1) {
        snprintf(b->err, sizeof b->err, "%s: the KV pool has no slots", call);
        rc = SGL_ATTN_E_INVALID;
    }
    if (!rc && L->sinks) rc = ca_check_f32_1(&m, L->sinks, "layer.sinks", b->device, b->hq);
    if (!rc && lse) rc = ca_check_lse(&m, lse, "lse", b->device, t, b->hq);
    const sgl_attn_dual_chunk *dc = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk);
    int64_t dqs[3] = {0, 0, 0}, dqi[3] = {0, 0, 0};
    if (!rc && dc) {
        const ca_dca_ctx c = {b->device,
                              mode == SGL_ATTN_MODE_DECODE ? b->has_dplan[ATTN_DPLAN_CROSS] : b->has_eplan[ATTN_EPLAN_CROSS],
                              b->kern.kv_fp8, b->dt_bit, t, b->hq, b->head_dim};
        rc = ca_check_dual_chunk(&m, a, &c, dqs, dqi);
    }
    if (!rc && dc && (b->planned_tpr > 0 || b->planned_mask || b->planned_self != ATTN_SELF_CAUSAL ||
                      SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type) != SGL_ATTN_TYPE_CAUSAL)) {
        snprintf(b->err, sizeof b->err,
                 "%s: layer %d: dual chunk attention with speculative verify, a tree mask or a "
                 "non-causal attn_type: cuda_attn serves it on causal decode and extend only",
                 call, L->layer_id);
        rc = SGL_ATTN_E_UNSUPPORTED;
    }
    if (!rc && dc && !b->kern.dual_chunk) {
        snprintf(b->err, sizeof b->err,
                 "%s: dual chunk attention at head dim %d: its kernels' shared memory does not fit this device "
                 "(devices with 99 KB per block, SM 8.6 / 8.9, serve it at head dim 64 only)",
                 call, b->head_dim);
        rc = SGL_ATTN_E_UNSUPPORTED;
    }
    if (rc) return rc;
    *dual = dc != NULL;
    /* The split extend (extend_fp8_split.cu) where the batch planned it: a causal self
     * layer without window, sinks or dual chunk that saves this call's K/V (the save
     * writes the new rows it attends). */
    *split = mode == SGL_ATTN_MODE_EXTEND && b->planned_split && !L->is_cross && !dc && L->sliding_window < 0 &&
             !L->sinks && a->save_kv_cache && t > 0;
    memset(dca, 0, sizeof *dca);
    if (dc) {
        dca->q_succ = sgl_sdk_data(dc->q_succ);
        dca->q_inter = sgl_sdk_data(dc->q_inter);
        dca->qs_stride_t = dqs[0];
        dca->qs_stride_h = dqs[1];
        dca->qi_stride_t = dqi[0];
        dca->qi_stride_h = dqi[1];
        dca->chunk_len = dc->chunk_size - dc->local_size;
        dca->original_max_position = dc->original_max_position;
    }
    const DLTensor *pt = SGL_ATTN_FIELD_OR_0(sgl_attn_batch, a->batch, page_table);
    const DLTensor *table = b->paged ? pt : a->batch->req_to_token;
    if ((pt != NULL) != (b->paged != 0) || !table || table->shape[0] != b->r2t_rows ||
        (table->shape[1] << b->page_shift) != b->r2t_cols || (b->paged && a->batch->page_size != b->page_size)) {
        snprintf(b->err, sizeof b->err, "%s: batch.%s changed %s since init_forward_metadata", call,
                 b->paged ? "page_table" : "req_to_token",
                 (pt != NULL) != (b->paged != 0) ? (pt ? "to a page_table" : "from a page_table") : "shape or page_size");
        return SGL_ATTN_E_STATE;
    }
    const DLTensor *map = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, slot_map);
    if (map && (rc = ca_check_slot_map(&m, map, b->device))) return rc;
    memset(p, 0, sizeof *p);
    p->q = sgl_sdk_data(a->q);
    p->out = (void *)sgl_sdk_data(a->out);
    p->k_cache = sgl_sdk_data(L->k_cache);
    p->v_cache = sgl_sdk_data(L->v_cache);
    p->sinks = L->sinks ? (const float *)sgl_sdk_data(L->sinks) : NULL;
    p->req_to_token = index_of(table);
    p->r2t_row_words = table->shape[1] << p->req_to_token.shift;
    p->page_shift = b->page_shift;
    p->page_mask = b->page_size - 1;
    p->slot_map = index_of(map);
    p->q_stride_t = qs[0];
    p->q_stride_h = qs[1];
    p->o_stride_t = os[0];
    p->o_stride_h = os[1];
    p->kc_stride_s = ks[0];
    p->kc_stride_h = ks[1];
    p->vc_stride_s = vs[0];
    p->vc_stride_h = vs[1];
    p->num_slots = slots;
    p->hq = b->hq;
    p->hkv = b->hkv;
    p->group = b->group;
    p->max_reqs = b->r2t_rows;
    p->max_ctx = b->r2t_cols;
    p->num_tokens = t;
    p->scale = L->sm_scale;
    p->scale_log2 = L->sm_scale * 1.4426950408889634f;
    p->softcap = L->logit_softcap;
    p->window = L->is_cross ? -1 : (L->sliding_window < 0 ? -1 : L->sliding_window);
    p->part_o = (float *)dev_at(b, b->sz.off_part_o);
    p->part_lse = (float *)dev_at(b, b->sz.off_part_lse);
    p->counters = (int32_t *)dev_at(b, b->sz.off_counters);
    p->counters_per_req = b->sz.counters_per_req;
    p->k_scale_dev = k_scale_dev;
    p->v_scale_dev = v_scale_dev;
    p->k_scale = L->k_scale;
    p->v_scale = L->v_scale;
    p->lse = lse ? (float *)sgl_sdk_data(lse) : NULL;

    /* The item check, once per planned batch (again for a layer whose pool
     * is smaller than the one checked, or with another slot map): every
     * req_to_token / page-table entry the planned items read, checked whole
     * against this pool (through the map: against the map, and the map's
     * entries against the pool), so the attention kernels below need no
     * check of their own (attn_params.h: attn_check).  Unmapped layers and
     * the last mapped one keep their own record, so layers that alternate
     * (gpt-oss, Gemma) check twice per batch, not once per layer. */
    const int check_due = map ? (sgl_sdk_data(map) != b->checked_map || map->shape[0] != b->checked_map_n ||
                                 slots < b->checked_map_slots)
                              : slots < b->checked_slots;
    if (t > 0 && check_due) {
        attn_check c;
        memset(&c, 0, sizeof c);
        c.req_to_token = p->req_to_token;
        c.r2t_row_words = p->r2t_row_words;
        c.page_shift = p->page_shift;
        c.slot_map = p->slot_map;
        c.num_slots = slots;
        c.max_ctx = b->r2t_cols;
        c.extend = mode == SGL_ATTN_MODE_EXTEND;
        c.max_items = c.extend ? b->sz.extend_max_items : b->sz.decode_max_items;
        c.fault = b->fault.dev;
        const int nlists = c.extend ? ATTN_EPLAN_COUNT : ATTN_DPLAN_COUNT;
        for (int set = 0; set < nlists && c.nsets < ATTN_CHECK_SETS; set++) {
            if (!(c.extend ? b->has_eplan[set] : b->has_dplan[set])) continue;
            /* encoder-only items read the identity table, not req_to_token */
            if (c.extend && set == ATTN_EPLAN_SELF && b->planned_self == ATTN_SELF_NEW_ONLY) continue;
            c.items[c.nsets] = dev_at(b, c.extend ? b->sz.off_eitems[set] : b->sz.off_ditems[set]);
            c.num_items[c.nsets] = num_items_ptr(b, c.extend ? ATTN_DPLAN_COUNT + set : set);
            c.nsets++;
        }
        /* the split's prefix items read the table too (its new-token items read none) */
        if (c.extend && b->planned_split && c.nsets < ATTN_CHECK_SETS) {
            c.items[c.nsets] = b->sp_pre;
            c.num_items[c.nsets] = b->sp_num + 1;
            c.nsets++;
        }
        const int grid = b->grid_items < CA_CHECK_MAX_BLOCKS ? b->grid_items : CA_CHECK_MAX_BLOCKS;
        int ce = attn_launch_check_items(&c, grid, a->batch->stream);
        if (ce) {
            sgl_sdk_cuda_format_error(b->err, sizeof b->err, "item check launch", ce);
            return SGL_ATTN_E_DEVICE;
        }
        if (map) {
            b->checked_map = sgl_sdk_data(map);
            b->checked_map_n = map->shape[0];
            b->checked_map_slots = slots;
        } else {
            b->checked_slots = slots;
        }
    }

    /* Save the new K/V first, so the attention below sees them: a cross
     * layer's are the encoder tokens', at the slots planned (checked against
     * the table at planning: encoder_loc_check.cu). */
    const int64_t ts = L->is_cross ? b->planned_enc_n : t;
    if (a->save_kv_cache && t > 0 && L->is_cross && (rc = check_enc_save(b, a, call))) return rc;
    if (a->save_kv_cache && t > 0 && ts > 0) {
        int64_t kst[3], vst[3];
        rc = ca_check_float3(&m, a->k, "k", b->device, b->dt_bit, ts, b->hkv, b->head_dim, 1, kst);
        if (!rc) rc = ca_check_float3(&m, a->v, "v", b->device, b->dt_bit, ts, b->hkv, b->head_dim, 1, vst);
        if (!rc && !L->is_cross)
            rc = ca_check_index1(&m, a->batch->out_cache_loc, "batch.out_cache_loc", b->device, t);
        if (rc) return rc;
        attn_save s;
        memset(&s, 0, sizeof s);
        s.k = sgl_sdk_data(a->k);
        s.v = sgl_sdk_data(a->v);
        s.k_cache = (void *)p->k_cache;
        s.v_cache = (void *)p->v_cache;
        s.loc = L->is_cross ? b->planned_enc_loc : index_of(a->batch->out_cache_loc);
        s.k_stride_t = kst[0];
        s.k_stride_h = kst[1];
        s.v_stride_t = vst[0];
        s.v_stride_h = vst[1];
        s.kc_stride_s = ks[0];
        s.kc_stride_h = ks[1];
        s.vc_stride_s = vs[0];
        s.vc_stride_h = vs[1];
        s.num_slots = slots;
        s.t = (int32_t)ts;
        s.hkv = b->hkv;
        s.d = b->head_dim;
        s.fault = b->fault.dev;
        s.slot_map = p->slot_map;
        if (*split && b->sp_direct && late) { /* the direct extend launches it after its attention */
            *late = s;
            return SGL_ATTN_OK;
        }
        /* a 16-bit pool's register-fed decode saves them itself, each request's
         * last split block before its loads (decode_reg.cu): one launch a decode
         * forward.  Cross attention (the encoder's rows, no new token a request),
         * dual chunk, fp8 pools, the other decodes and every extend keep the
         * save-KV launch before their kernel. */
        if (mode == SGL_ATTN_MODE_DECODE && b->kern.dec_save && !L->is_cross && !*dual && late) {
            *late = s;
            return SGL_ATTN_OK;
        }
        int ce;
        if (b->kern.kv_fp8) {
            attn_save_fp8 s8 = {s, k_scale_dev, v_scale_dev, L->k_scale, L->v_scale, NULL, NULL};
            if (*split) {
                s8.k_deq = b->sp_k;
                s8.v_deq = b->sp_v;
            }
            ce = attn_launch_save_kv_fp8(b->kern.dtype, &s8, a->batch->stream);
        } else {
            ce = attn_launch_save_kv(&s, a->batch->stream);
        }
        if (ce) {
            sgl_sdk_cuda_format_error(b->err, sizeof b->err, "save_kv_cache launch", ce);
            return SGL_ATTN_E_DEVICE;
        }
    }
    return SGL_ATTN_OK;
}

int ca_forward_decode(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    ca_backend *b = (ca_backend *)bb;
    attn_fwd p;
    attn_dca dca;
    int32_t T = 0;
    int dual = 0;
    int split = 0;
    attn_save fused; /* set (t > 0) where the decode grid saves the new tokens */
    memset(&fused, 0, sizeof fused);
    int rc = forward_setup(b, a, SGL_ATTN_MODE_DECODE, "forward_decode", &p, &T, &dual, &dca, &split, &fused);
    if (rc) return rc;
    if (T == 0) return SGL_ATTN_OK;
    const sgl_attn_layer *L = a->layer;
    int set = ATTN_DPLAN_FULL;
    if (L->is_cross)
        set = ATTN_DPLAN_CROSS;
    else if (L->sliding_window >= 0 && L->sliding_window == b->model_window && b->has_dplan[ATTN_DPLAN_WINDOW])
        set = ATTN_DPLAN_WINDOW; /* planned for this window; the kernel still applies it */
    p.ditems = (const attn_decode_item *)dev_at(b, b->sz.off_ditems[set]);
    p.num_items = num_items_ptr(b, set);
    void *st = a->batch->stream;
    int ce = dual          ? attn_launch_dual_chunk_decode(b->kern.dtype, b->head_dim, &p, &dca, b->grid_items, st)
             : fused.t > 0 ? attn_launch_decode_reg_save(b->kern.dtype, b->head_dim, &p, &fused, b->grid_items, st)
                           : attn_launch_decode(&b->kern, &p, b->grid_items, st);
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_decode: kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

/* Encoder-only: after any save, the keys are the call's k / v rows, as given
 * (the extend kernels read them through the identity table: plan.cuh's
 * ATTN_SELF_NEW_ONLY rows make row + column the token). */
static int direct_keys(ca_backend *b, const sgl_attn_forward_args *a, attn_fwd *p) {
    ca_msg m = {b->err, sizeof b->err, "forward_extend"};
    int64_t kst[3], vst[3];
    const int32_t t = p->num_tokens;
    int rc = ca_check_float3(&m, a->k, "k (encoder-only keys)", b->device, b->dt_bit, t, b->hkv, b->head_dim, 1, kst);
    if (!rc) rc = ca_check_float3(&m, a->v, "v (encoder-only values)", b->device, b->dt_bit, t, b->hkv, b->head_dim, 1, vst);
    if (rc) return rc;
    if (!b->iota) {
        snprintf(b->err, sizeof b->err, "forward_extend: encoder-only layer %d without the identity table", a->layer->layer_id);
        return SGL_ATTN_E_STATE;
    }
    p->k_cache = sgl_sdk_data(a->k);
    p->v_cache = sgl_sdk_data(a->v);
    p->kc_stride_s = kst[0];
    p->kc_stride_h = kst[1];
    p->vc_stride_s = vst[0];
    p->vc_stride_h = vst[1];
    p->num_slots = t;
    p->req_to_token.p = b->iota;
    p->req_to_token.shift = 0;
    p->req_to_token.n = b->sz.max_tokens;
    p->r2t_row_words = 1;
    /* one-token pages and no slot map: the identity table's rows are k / v's */
    p->page_shift = 0;
    p->page_mask = 0;
    memset(&p->slot_map, 0, sizeof p->slot_map);
    return SGL_ATTN_OK;
}

/* The split's LSE merge: the prefix pass's partial rows (sp_part, sp_lse_pre) joined into the new tokens'
 * output and LSE, per the split plan's prefix items. */
static int split_merge(const ca_backend *b, const attn_fwd *p, float *lse, void *stream) {
    attn_split_merge mg;
    memset(&mg, 0, sizeof mg);
    mg.out = p->out;
    mg.lse = lse;
    mg.part = b->sp_part;
    mg.part_lse = b->sp_lse_pre;
    mg.items = b->sp_pre;
    mg.num_items = b->sp_num + 1;
    mg.o_stride_t = p->o_stride_t;
    mg.o_stride_h = p->o_stride_h;
    mg.hq = b->hq;
    mg.num_tokens = p->num_tokens;
    return attn_launch_split_merge(b->kern.dtype, &mg, b->sp_grid_pre, stream);
}

/* The split extend on an fp8 pool (extend_fp8_split.cu), after the save wrote
 * the new rows dequantised: the new tokens by the ragged wgmma kernel into
 * out (its LSE into the caller's lse, else the split's), the prefix by the
 * wgmma extend from its byte ring (the fp8 mma extend where that kernel's
 * setup failed) into the split's output, then their merge into out / lse. */
static int split_extend(ca_backend *b, const sgl_attn_forward_args *a, const attn_fwd *p) {
    void *stream = a->batch->stream;
    DLTensor *lse_t = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse);
    float *lse = lse_t ? (float *)sgl_sdk_data(lse_t) : b->sp_lse_new;
    attn_fwd n = *p; /* the new tokens: their rows, as forward_ragged's K / V */
    n.k_cache = b->sp_k;
    n.v_cache = b->sp_v;
    n.kc_stride_s = n.vc_stride_s = (int64_t)b->hkv * 128;
    n.kc_stride_h = n.vc_stride_h = 128;
    n.num_slots = b->sz.max_tokens; /* the rows sized at create: the maps do not change with the batch */
    memset(&n.req_to_token, 0, sizeof n.req_to_token);
    n.r2t_row_words = 0;
    n.page_shift = n.page_mask = 0;
    memset(&n.slot_map, 0, sizeof n.slot_map);
    n.k_scale_dev = n.v_scale_dev = NULL;
    n.eitems = b->sp_new;
    n.num_items = b->sp_num;
    n.lse = lse;
    /* the rows' maps were encoded at create (NULL: cp.async) */
    int ce = attn_launch_ragged_wgmma(b->kern.dtype, 128, 128, &n, b->sp_tmaps, b->kern.sm_count, b->sp_grid_new,
                                      stream);
    if (!ce && b->sp_prefix) { /* else the mirrors showed no prefix: the new tokens are all */
        attn_fwd q = *p; /* the prefix: the pool's columns before the new tokens */
        q.out = b->sp_part;
        q.o_stride_t = (int64_t)b->hq * 128;
        q.o_stride_h = 128;
        q.eitems = b->sp_pre;
        q.num_items = b->sp_num + 1;
        q.lse = b->sp_lse_pre;
        ce = b->sp_pre_wgmma
                 ? attn_launch_extend_wgmma_fp8(b->kern.dtype, &q, b->kern.sm_count, b->sp_grid_pre, stream)
                 : attn_launch_extend(&b->kern, &q, NULL, b->sp_grid_pre, stream);
        if (!ce) ce = split_merge(b, p, lse, stream);
    }
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_extend: split extend launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

/* The direct extend (16-bit pools, SM 9.0 d128; docs/cuda.md "Save-KV"), for
 * a batch planned with no prefix: the new tokens are every key, so the ragged
 * body attends them from the call's k / v rows (sv: the save forward_setup
 * checked and left) into out, then that save runs as the attention's
 * programmatic dependent: neither reads a row the other writes, so the copy
 * runs beside the attention, and its grid completes after the attention's, so
 * whatever the stream runs next sees out and the pool written. */
static int direct_extend(ca_backend *b, const sgl_attn_forward_args *a, const attn_fwd *p, const attn_save *sv) {
    void *stream = a->batch->stream;
    DLTensor *lse_t = SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse);
    attn_fwd n = *p; /* the new tokens: the call's k / v rows, as forward_ragged's K / V */
    n.k_cache = sv->k;
    n.v_cache = sv->v;
    n.kc_stride_s = sv->k_stride_t;
    n.kc_stride_h = sv->k_stride_h;
    n.vc_stride_s = sv->v_stride_t;
    n.vc_stride_h = sv->v_stride_h;
    n.num_slots = p->num_tokens;
    memset(&n.req_to_token, 0, sizeof n.req_to_token);
    n.r2t_row_words = 0;
    n.page_shift = n.page_mask = 0;
    memset(&n.slot_map, 0, sizeof n.slot_map);
    n.eitems = b->sp_new;
    n.num_items = b->sp_num;
    n.lse = lse_t ? (float *)sgl_sdk_data(lse_t) : b->sp_lse_new;
    attn_kv_tmaps maps; /* the kernel takes them by value */
    const attn_kv_tmaps *tm = NULL;
    if (b->sp_new_tma && b->rg_tma && b->tmaps && !attn_tmap_ragged(b->tmaps, &n, 128, 128, &maps)) tm = &maps;
    int ce = attn_launch_new_wgmma(b->kern.dtype, &n, tm, b->kern.sm_count, b->sp_grid_new, stream);
    if (!ce) ce = attn_launch_save_kv_after(sv, stream);
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_extend: direct extend launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

int ca_forward_extend(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    ca_backend *b = (ca_backend *)bb;
    attn_fwd p;
    attn_dca dca;
    int32_t T = 0;
    int dual = 0;
    int split = 0;
    attn_save late;
    memset(&late, 0, sizeof late);
    int rc = forward_setup(b, a, SGL_ATTN_MODE_EXTEND, "forward_extend", &p, &T, &dual, &dca, &split, &late);
    if (rc) return rc;
    if (T == 0) return SGL_ATTN_OK;
    if (split) return b->sp_direct ? direct_extend(b, a, &p, &late) : split_extend(b, a, &p);
    const int set = a->layer->is_cross ? ATTN_EPLAN_CROSS : ATTN_EPLAN_SELF;
    p.eitems = (const attn_extend_item *)dev_at(b, b->sz.off_eitems[set]);
    p.num_items = num_items_ptr(b, ATTN_DPLAN_COUNT + set);
    p.mask = b->planned_mask;
    p.mask_indptr = b->planned_mask_indptr;
    p.mask_q = b->planned_tpr;
    if (b->planned_mask) {
        p.mask_bits = b->tmask_bits;
        p.mask_full = b->tmask_full;
        p.mask_first_off = b->tmask_first ? (int32_t)((const uint8_t *)b->tmask_first - b->tmask_full) : 0;
        p.mask_words = b->planned_mask_words;
    }
    const int direct = !a->layer->is_cross && b->planned_self == ATTN_SELF_NEW_ONLY;
    if (direct && (rc = direct_keys(b, a, &p))) return rc;
    /* The wgmma extend's TMA producer (plain, or dual chunk's DCA kernel)
     * where its 16-row boxes lie in one page (page size a multiple of 16); the
     * layer's maps are re-encoded only when its pool moved.  Other page sizes
     * take the cp.async producer. */
    const int wg_tma = dual ? b->kern.dc_extend == ATTN_EXTEND_WGMMA && b->kern.dc_tma
                            : b->kern.extend == ATTN_EXTEND_WGMMA && b->kern.tma;
    const attn_kv_tmaps *tm = NULL;
    if (b->tmaps && !direct && wg_tma && a->batch->page_size > 0 && a->batch->page_size % ATTN_TMA_BOX_ROWS == 0) {
        int cu = 0;
        tm = attn_tmap_for(b->tmaps, a->layer->layer_id, &p, b->head_dim, &cu);
        if (cu)
            sgl_sdk_log(b->host, SGL_ATTN_LOG_WARN, CA_NAME,
                        "cuTensorMapEncodeTiled refused the pool of layer %d (CUresult %d): cp.async for it",
                        a->layer->layer_id, cu);
    }
    if (dual) {
        const int ce = attn_launch_dual_chunk_extend_k(&b->kern, &p, &dca, tm, b->sz.extend_block_m, b->grid_items,
                                                       a->batch->stream);
        if (ce) {
            sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_extend: dual chunk kernel launch", ce);
            return SGL_ATTN_E_DEVICE;
        }
        return SGL_ATTN_OK;
    }
    /* an encoder-only layer's keys are its own k / v (16-bit) even on an fp8
     * pool: the 16-bit kernel, no dequant scales (cpu_ref's rule) */
    attn_kernels k16 = b->kern;
    k16.kv_fp8 = 0;
    const int ce = attn_launch_extend(direct ? &k16 : &b->kern, &p, tm, b->grid_items, a->batch->stream);
    if (ce) {
        sgl_sdk_cuda_format_error(b->err, sizeof b->err, "forward_extend: kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}
