/*
 * hip_backend.c - a hip_attn instance: one device allocation carved by
 * the shared sizing (attn_kernels/sizing.h: work lists, split buffers,
 * counters), device-side
 * planning in init_forward_metadata (the shared plan kernels), and the
 * forwards (save-KV, then the portable decode / extend kernels) on the
 * batch's stream.  The forward path checks, fills a parameter struct and
 * launches: nothing allocated, nothing waited for.  Same flow as
 * cuda_attn with the option kernel=portable, over the HIP runtime.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hip/hip_runtime_api.h>

#include "hip_internal.h"
#include "sdk_unserved.h"

#define HA_DECODE_BLOCKS_PER_CU 4

typedef struct ha_backend {
    sgl_attn_backend base; /* first: the ABI's header */
    int32_t device;
    int dtype;             /* ATTN_DT_* */
    uint32_t dt_bit;
    int32_t hq, hkv, group, head_dim, model_window;
    attn_sizing sz;
    void *dev_mem;
    int planned_mode;
    int32_t planned_bs, planned_tokens, grid_items, r2t_rows, r2t_cols;
    int has_dplan[ATTN_DPLAN_COUNT], has_eplan[ATTN_EPLAN_COUNT];
    char err[HA_ERR_MAX];
} ha_backend;

static char *dev_at(ha_backend *b, size_t off) { return (char *)b->dev_mem + off; }
static int32_t *num_items_ptr(ha_backend *b, int set) { return (int32_t *)dev_at(b, b->sz.off_num) + set; }

static attn_index index_of(const DLTensor *t) {
    attn_index ix;
    memset(&ix, 0, sizeof ix);
    if (!t) return ix;
    ix.p = (const int32_t *)ha_data(t);
    ix.shift = t->dtype.bits == 64 ? 1 : 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    ix.n = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
    return ix;
}

static const char *hb_last_error(sgl_attn_backend *bb) { return ((ha_backend *)bb)->err; }

static void hb_destroy(sgl_attn_backend *bb) {
    ha_backend *b = (ha_backend *)bb;
    if (!b) return;
    if (b->dev_mem && hipSetDevice(b->device) == hipSuccess) (void)hipFree(b->dev_mem);
    free(b);
}

/* Host mirrors, when given, are checked before any kernel sees the lengths. */
static int check_mirrors(ha_backend *b, const sgl_attn_batch *bt, int32_t bs, int mode) {
    const DLTensor *sl = bt->seq_lens_cpu;
    if (!sl || sl->device.device_type != kDLCPU || sl->ndim != 1 || !sl->shape || sl->shape[0] < bs ||
        sl->dtype.code != kDLInt || (sl->dtype.bits != 32 && sl->dtype.bits != 64) || sl->strides)
        return SGL_ATTN_OK;
    for (int32_t i = 0; i < bs; i++) {
        const char *d = ha_data(sl);
        int64_t v = sl->dtype.bits == 64 ? ((const int64_t *)d)[i] : ((const int32_t *)d)[i];
        if (v < (mode == SGL_ATTN_MODE_DECODE ? 1 : 0) || v > b->r2t_cols) {
            snprintf(b->err, sizeof b->err, "init_forward_metadata: seq_lens[%d] = %" PRId64 ": expected up to %d "
                     "(req_to_token columns)", i, v, b->r2t_cols);
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}

static int hb_metadata(sgl_attn_backend *bb, const sgl_attn_batch *bt) {
    ha_backend *b = (ha_backend *)bb;
    const char *call = "init_forward_metadata";
    ha_msg m = {b->err, sizeof b->err, call};
    b->err[0] = 0;
    b->planned_mode = 0;
    if (!bt || bt->struct_size < SGL_ATTN_BATCH_SIZE_V1_0) {
        snprintf(b->err, sizeof b->err, "%s: batch is NULL or older than ABI 1.0", call);
        return SGL_ATTN_E_INVALID;
    }
    const char *unserved = sgl_sdk_unserved_batch(bt, 0);
    if (unserved) {
        snprintf(b->err, sizeof b->err, "%s: %s is set (ABI 1.2): hip_attn does not serve it", call, unserved);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    const int mode = bt->forward_mode;
    const int32_t bs = bt->batch_size, tokens = bt->num_tokens;
    /* HIP's current device is per thread: the engine's thread may not be create's. */
    hipError_t he = hipSetDevice(b->device);
    if (he != hipSuccess) {
        ha_format_error(b->err, sizeof b->err, "init_forward_metadata: hipSetDevice", (int)he);
        return SGL_ATTN_E_DEVICE;
    }
    if (mode == SGL_ATTN_MODE_IDLE) {
        b->planned_mode = mode;
        return SGL_ATTN_OK;
    }
    if (mode == SGL_ATTN_MODE_TARGET_VERIFY) {
        snprintf(b->err, sizeof b->err, "%s: forward_mode target_verify: hip_attn does not serve speculative verify", call);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (mode != SGL_ATTN_MODE_DECODE && mode != SGL_ATTN_MODE_EXTEND) {
        snprintf(b->err, sizeof b->err, "%s: forward_mode %d: expected idle, extend or decode", call, mode);
        return SGL_ATTN_E_INVALID;
    }
    if (bs < 0 || bs > b->sz.max_reqs || tokens < 0 || tokens > b->sz.max_tokens ||
        (mode == SGL_ATTN_MODE_DECODE && tokens != bs)) {
        snprintf(b->err, sizeof b->err, "%s: batch_size %d / num_tokens %d: expected up to %d / %d (decode: equal)",
                 call, bs, tokens, b->sz.max_reqs, b->sz.max_tokens);
        return SGL_ATTN_E_INVALID;
    }
    if (mode == SGL_ATTN_MODE_DECODE && bt->tokens_per_req > 1) {
        snprintf(b->err, sizeof b->err, "%s: tokens_per_req %d: hip_attn decodes one token per request", call,
                 bt->tokens_per_req);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    int rc = ha_check_index2(&m, bt->req_to_token, "req_to_token");
    if (!rc) rc = ha_check_index1(&m, bt->req_pool_indices, "req_pool_indices", bs);
    if (!rc) rc = ha_check_index1(&m, bt->seq_lens, "seq_lens", bs);
    if (!rc && mode == SGL_ATTN_MODE_EXTEND) rc = ha_check_index1(&m, bt->extend_seq_lens, "extend_seq_lens", bs);
    if (!rc && bt->encoder_lens) rc = ha_check_index1(&m, bt->encoder_lens, "encoder_lens", bs);
    if (rc) return rc;
    b->r2t_rows = (int32_t)bt->req_to_token->shape[0];
    b->r2t_cols = (int32_t)bt->req_to_token->shape[1];
    if ((rc = check_mirrors(b, bt, bs, mode))) return rc;

    attn_plan_in in;
    memset(&in, 0, sizeof in);
    in.req_pool_indices = index_of(bt->req_pool_indices);
    in.seq_lens = index_of(bt->seq_lens);
    in.extend_seq_lens = index_of(mode == SGL_ATTN_MODE_EXTEND ? bt->extend_seq_lens : NULL);
    in.encoder_lens = index_of(bt->encoder_lens);
    in.bs = bs;
    in.max_reqs = b->r2t_rows;
    in.max_ctx = b->r2t_cols;
    memset(b->has_dplan, 0, sizeof b->has_dplan);
    memset(b->has_eplan, 0, sizeof b->has_eplan);
    int ce = 0;
    if (mode == SGL_ATTN_MODE_DECODE) {
        for (int set = 0; set < ATTN_DPLAN_COUNT && !ce; set++) {
            if ((set == ATTN_DPLAN_WINDOW && b->model_window < 0) || (set == ATTN_DPLAN_CROSS && !bt->encoder_lens))
                continue;
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
            ce = attn_launch_plan_decode(&in, &pl, bt->stream);
            b->has_dplan[set] = 1;
        }
        b->grid_items = attn_decode_grid_items(&b->sz, bs);
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
            ce = attn_launch_plan_extend(&in, &pl, bt->stream);
            b->has_eplan[set] = 1;
        }
        b->grid_items = attn_extend_grid_items(&b->sz, bs, tokens);
    }
    if (ce) {
        ha_format_error(b->err, sizeof b->err, "init_forward_metadata: plan kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    b->planned_mode = mode;
    b->planned_bs = bs;
    b->planned_tokens = tokens;
    return SGL_ATTN_OK;
}

/* Checks shared by both forwards; fills p (all but the work lists), saves K/V. */
static int forward_setup(ha_backend *b, const sgl_attn_forward_args *a, int mode, const char *call, attn_fwd *p) {
    ha_msg m = {b->err, sizeof b->err, call};
    b->err[0] = 0;
    if (!a || a->struct_size < SGL_ATTN_FORWARD_ARGS_SIZE_V1_0 || !a->layer || !a->batch ||
        a->layer->struct_size < SGL_ATTN_LAYER_SIZE_V1_0) {
        snprintf(b->err, sizeof b->err, "%s: args, layer or batch is NULL (or args / layer older than ABI 1.0)", call);
        return SGL_ATTN_E_INVALID;
    }
    const char *unserved = sgl_sdk_unserved_forward(a, 0);
    if (unserved) {
        snprintf(b->err, sizeof b->err, "%s: %s is set (ABI 1.2): hip_attn does not serve it", call, unserved);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (b->planned_mode != mode) {
        snprintf(b->err, sizeof b->err, "%s: init_forward_metadata did not plan this mode: call it first", call);
        return SGL_ATTN_E_STATE;
    }
    const sgl_attn_layer *L = a->layer;
    if (L->num_q_heads != b->hq || L->num_kv_heads != b->hkv || L->head_dim_qk != b->head_dim ||
        L->head_dim_v != b->head_dim) {
        snprintf(b->err, sizeof b->err, "%s: layer %d has heads %d/%d, dims %d/%d: expected %d/%d, %d/%d (the model's)",
                 call, L->layer_id, L->num_q_heads, L->num_kv_heads, L->head_dim_qk, L->head_dim_v, b->hq, b->hkv,
                 b->head_dim, b->head_dim);
        return SGL_ATTN_E_INVALID;
    }
    if (!isfinite(L->sm_scale) || !isfinite(L->logit_softcap) || L->logit_softcap < 0.f) {
        snprintf(b->err, sizeof b->err, "%s: layer %d sm_scale / logit_softcap must be finite (soft-cap >= 0)", call,
                 L->layer_id);
        return SGL_ATTN_E_INVALID;
    }
    if (L->is_cross && !(mode == SGL_ATTN_MODE_DECODE ? b->has_dplan[ATTN_DPLAN_CROSS] : b->has_eplan[ATTN_EPLAN_CROSS])) {
        snprintf(b->err, sizeof b->err, "%s: layer %d is cross attention but the batch had no encoder_lens", call,
                 L->layer_id);
        return SGL_ATTN_E_STATE;
    }
    const int32_t t = b->planned_tokens;
    int64_t qs[3], os[3], ks[3], vs[3];
    const int64_t slots = L->k_cache && L->k_cache->ndim >= 1 && L->k_cache->shape ? L->k_cache->shape[0] : 0;
    int rc = ha_check_float3(&m, a->q, "q", b->dt_bit, t, b->hq, b->head_dim, qs);
    if (!rc) rc = ha_check_float3(&m, a->out, "out", b->dt_bit, t, b->hq, b->head_dim, os);
    if (!rc) rc = ha_check_float3(&m, L->k_cache, "layer.k_cache", b->dt_bit, slots, b->hkv, b->head_dim, ks);
    if (!rc) rc = ha_check_float3(&m, L->v_cache, "layer.v_cache", b->dt_bit, slots, b->hkv, b->head_dim, vs);
    if (!rc && (slots < 1 || slots > INT32_MAX)) {
        snprintf(b->err, sizeof b->err, "%s: the KV pool has %" PRId64 " slots: expected 1..2^31-1", call, slots);
        rc = slots < 1 ? SGL_ATTN_E_INVALID : SGL_ATTN_E_UNSUPPORTED;
    }
    if (!rc && L->sinks) rc = ha_check_f32_1(&m, L->sinks, "layer.sinks", b->hq);
    if (rc) return rc;
    if (a->batch->req_to_token->shape[0] != b->r2t_rows || a->batch->req_to_token->shape[1] != b->r2t_cols) {
        snprintf(b->err, sizeof b->err, "%s: batch.req_to_token changed shape since init_forward_metadata", call);
        return SGL_ATTN_E_STATE;
    }
    memset(p, 0, sizeof *p);
    p->q = ha_data(a->q);
    p->out = (void *)ha_data(a->out);
    p->k_cache = ha_data(L->k_cache);
    p->v_cache = ha_data(L->v_cache);
    p->sinks = L->sinks ? (const float *)ha_data(L->sinks) : NULL;
    p->req_to_token = index_of(a->batch->req_to_token);
    p->r2t_row_words = (int64_t)b->r2t_cols << p->req_to_token.shift;
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
    if (a->save_kv_cache && t > 0) {
        if (L->is_cross) {
            snprintf(b->err, sizeof b->err, "%s: save_kv_cache on cross-attention layer %d", call, L->layer_id);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        int64_t kst[3], vst[3];
        rc = ha_check_float3(&m, a->k, "k", b->dt_bit, t, b->hkv, b->head_dim, kst);
        if (!rc) rc = ha_check_float3(&m, a->v, "v", b->dt_bit, t, b->hkv, b->head_dim, vst);
        if (!rc) rc = ha_check_index1(&m, a->batch->out_cache_loc, "batch.out_cache_loc", t);
        if (rc) return rc;
        attn_save s;
        memset(&s, 0, sizeof s);
        s.k = ha_data(a->k);
        s.v = ha_data(a->v);
        s.k_cache = (void *)p->k_cache;
        s.v_cache = (void *)p->v_cache;
        s.loc = index_of(a->batch->out_cache_loc);
        s.k_stride_t = kst[0];
        s.k_stride_h = kst[1];
        s.v_stride_t = vst[0];
        s.v_stride_h = vst[1];
        s.kc_stride_s = ks[0];
        s.kc_stride_h = ks[1];
        s.vc_stride_s = vs[0];
        s.vc_stride_h = vs[1];
        s.num_slots = slots;
        s.t = t;
        s.hkv = b->hkv;
        s.d = b->head_dim;
        int ce = attn_launch_save_kv(&s, a->batch->stream);
        if (ce) {
            ha_format_error(b->err, sizeof b->err, "save_kv_cache launch", ce);
            return SGL_ATTN_E_DEVICE;
        }
    }
    return SGL_ATTN_OK;
}

static int hb_decode(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    ha_backend *b = (ha_backend *)bb;
    attn_fwd p;
    int rc = forward_setup(b, a, SGL_ATTN_MODE_DECODE, "forward_decode", &p);
    if (rc || b->planned_tokens == 0) return rc;
    const sgl_attn_layer *L = a->layer;
    int set = ATTN_DPLAN_FULL;
    if (L->is_cross) set = ATTN_DPLAN_CROSS;
    else if (L->sliding_window >= 0 && L->sliding_window == b->model_window && b->has_dplan[ATTN_DPLAN_WINDOW])
        set = ATTN_DPLAN_WINDOW;
    p.ditems = (const attn_decode_item *)dev_at(b, b->sz.off_ditems[set]);
    p.num_items = num_items_ptr(b, set);
    int ce = attn_launch_decode_portable(b->dtype, b->head_dim, &p, b->grid_items, a->batch->stream);
    if (ce) {
        ha_format_error(b->err, sizeof b->err, "forward_decode: kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

static int hb_extend(sgl_attn_backend *bb, const sgl_attn_forward_args *a) {
    ha_backend *b = (ha_backend *)bb;
    attn_fwd p;
    int rc = forward_setup(b, a, SGL_ATTN_MODE_EXTEND, "forward_extend", &p);
    if (rc || b->planned_tokens == 0) return rc;
    const int set = a->layer->is_cross ? ATTN_EPLAN_CROSS : ATTN_EPLAN_SELF;
    p.eitems = (const attn_extend_item *)dev_at(b, b->sz.off_eitems[set]);
    p.num_items = num_items_ptr(b, ATTN_DPLAN_COUNT + set);
    int ce = attn_launch_extend_portable(b->dtype, b->head_dim, &p, b->grid_items, a->batch->stream);
    if (ce) {
        ha_format_error(b->err, sizeof b->err, "forward_extend: kernel launch", ce);
        return SGL_ATTN_E_DEVICE;
    }
    return SGL_ATTN_OK;
}

static const sgl_attn_backend_ops ha_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = hb_metadata,
    .forward_extend = hb_extend,
    .forward_decode = hb_decode,
    .last_error = hb_last_error,
    .destroy = hb_destroy,
};

int ha_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    char scratch[HA_ERR_MAX];
    char *err = a && a->error && a->error_size ? a->error : scratch;
    size_t err_size = a && a->error && a->error_size ? a->error_size : sizeof scratch;
    if (!out) return SGL_ATTN_E_INVALID;
    *out = NULL;
    if (!a || a->struct_size < sizeof(sgl_attn_create_args) || !a->model) {
        snprintf(err, err_size, "create: args or model is NULL");
        return SGL_ATTN_E_INVALID;
    }
    const sgl_attn_model *m = a->model;
    char why[256];
    int rc = ha_model_check(m, why, sizeof why);
    if (rc) {
        snprintf(err, err_size, "create: %s", why);
        return rc;
    }
    ha_device_info dev;
    if ((rc = ha_device_query(a->device, &dev, err, err_size))) return rc;
    if (!ha_arch_supported(dev.arch)) {
        snprintf(err, err_size, "create: device %d (%s) is %s: hip_attn carries code for %s only", a->device, dev.name,
                 dev.arch, HA_ARCHS);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    hipError_t he = hipSetDevice(a->device);
    if (he != hipSuccess) {
        ha_format_error(err, err_size, "create: hipSetDevice", (int)he);
        return SGL_ATTN_E_DEVICE;
    }
    ha_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_size, "create: out of host memory");
        return SGL_ATTN_E_NOMEM;
    }
    b->base.ops = &ha_ops;
    b->base.ops_size = ha_ops.struct_size;
    b->base.device = a->device;
    b->device = a->device;
    b->dt_bit = m->dtype;
    b->dtype = m->dtype == SGL_ATTN_DT_BF16 ? ATTN_DT_BF16 : ATTN_DT_F16;
    b->hq = m->num_q_heads;
    b->hkv = m->num_kv_heads;
    b->group = b->hq / b->hkv;
    b->head_dim = m->head_dim_qk;
    b->model_window = m->sliding_window;
    attn_tiles tiles = attn_portable_tiles(b->group);
    rc = attn_sizing_compute(&b->sz, a->max_reqs, a->max_tokens, a->max_context, b->hq, b->hkv, b->head_dim, &tiles,
                             dev.cu_count, HA_DECODE_BLOCKS_PER_CU, err, err_size);
    if (rc) {
        free(b);
        return rc;
    }
    he = hipMalloc(&b->dev_mem, b->sz.total_bytes);
    if (he == hipSuccess) he = hipMemset(b->dev_mem, 0, b->sz.total_bytes);
    if (he != hipSuccess) {
        (void)hipGetLastError();
        ha_format_error(err, err_size, "create: hipMalloc/hipMemset of the work buffers", (int)he);
        hb_destroy(&b->base);
        return he == hipErrorOutOfMemory ? SGL_ATTN_E_NOMEM : SGL_ATTN_E_DEVICE;
    }
    *out = &b->base;
    return SGL_ATTN_OK;
}
