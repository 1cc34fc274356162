/* layer_engine.c - forward's ABI 1.2 layer inputs: attention types, slot
 * maps, and the batch's page table and tree mask as a layer reads them.
 * Everything here is decided once per forward, so the loops branch per tile
 * or per query token, never per element, and a plain layer keeps their fast
 * paths (job.plain). */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"

static const char *type_name(int32_t t) {
    return t == SGL_ATTN_TYPE_BIDIRECTIONAL ? "bidirectional" : t == SGL_ATTN_TYPE_ENCODER_ONLY ? "encoder-only" : "causal";
}

static int check_type(cref_backend *b, const sgl_attn_layer *L, int32_t type, const sgl_attn_forward_args *a) {
    const int id = L->layer_id;
    if (type < SGL_ATTN_TYPE_CAUSAL || type > SGL_ATTN_TYPE_ENCODER_ONLY) {
        cref_set_error(b, "layer %d: layer.attn_type = %d; expected 0 causal, 1 bidirectional or 2 encoder-only", id,
                       type);
        return SGL_ATTN_E_INVALID;
    }
    if (type == SGL_ATTN_TYPE_CAUSAL) return SGL_ATTN_OK;
    if (L->is_cross) {
        cref_set_error(b, "layer %d: layer.attn_type = %d (%s) on a cross-attention layer; cross attention is "
                          "non-causal over the encoder already and takes attn_type 0",
                       id, type, type_name(type));
        return SGL_ATTN_E_INVALID;
    }
    if (L->sliding_window >= 0) {
        cref_set_error(b, "layer %d: layer.attn_type = %d (%s) with sliding_window %d; cpu_ref serves a window on "
                          "causal layers only",
                       id, type, type_name(type), L->sliding_window);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (b->mask) {
        cref_set_error(b, "layer %d: layer.attn_type = %d (%s) in a batch with custom_mask; a tree mask is for causal "
                          "layers",
                       id, type, type_name(type));
        return SGL_ATTN_E_INVALID;
    }
    if (type == SGL_ATTN_TYPE_ENCODER_ONLY) {
        if (L->v_cache == NULL) {
            cref_set_error(b, "layer %d: layer.attn_type = 2 (encoder-only) on an MLA layer; cpu_ref serves "
                              "encoder-only attention with separate k and v",
                           id);
            return SGL_ATTN_E_UNSUPPORTED;
        }
        if (b->k_dt != b->v_dt) {
            char b1[SGL_SDK_NAME_MAX], b2[SGL_SDK_NAME_MAX];
            cref_set_error(b, "layer %d: encoder-only attention reads k (%s) and v (%s) as its keys; expected one dtype",
                           id, sgl_sdk_dtype_name(a->k->dtype, b1), sgl_sdk_dtype_name(a->v->dtype, b2));
            return SGL_ATTN_E_UNSUPPORTED;
        }
    }
    return SGL_ATTN_OK;
}

/* Column c of request i's slot as planned (the plan's page copy, or
 * req_to_token through the pointer and shape the plan recorded). */
static int64_t planned_slot(const cref_backend *b, int64_t i, int64_t c) {
    const cref_req *r = &b->reqs[i];
    if (b->page_size) return b->pages[r->pg0 + c / b->page_size] * b->page_size + c % b->page_size;
    return sgl_sdk_idx(b->r2t, b->r2t_64, r->row * b->r2t_cols + c);
}

/* Every slot the batch names, through the map, inside this layer's pool. */
static int check_slot_map(cref_backend *b, const sgl_attn_layer *L, const DLTensor *map, int64_t pool) {
    const int id = L->layer_id;
    int rc = cref_check(b, map, "layer.slot_map", "full-pool slots", 0, 0, 1, SGL_SDK_ANY, 0, 0);
    if (rc) return rc;
    const int64_t n = map->shape[0];
    if (b->max_slot >= n) {
        cref_set_error(b, "layer %d: batch %s is outside layer.slot_map (%lld entries)", id, b->max_slot_where,
                       (long long)n);
        return SGL_ATTN_E_INVALID;
    }
    const void *m = sgl_sdk_data(map);
    const int m64 = map->dtype.bits == 64;
    for (int64_t i = 0; i < b->n_reqs; i++) {
        const cref_req *r = &b->reqs[i];
        for (int64_t c = 0; c < (int64_t)r->enc + r->seq_len; c++) {
            const int64_t s = planned_slot(b, i, c);
            if ((uint64_t)s >= (uint64_t)n) {
                cref_set_error(b, "layer %d: request %lld's column %lld is slot %lld, outside layer.slot_map (%lld "
                                  "entries): the batch changed after init_forward_metadata checked it",
                               id, (long long)i, (long long)c, (long long)s, (long long)n);
                return SGL_ATTN_E_INVALID;
            }
            const int64_t v = sgl_sdk_idx(m, m64, s);
            if ((uint64_t)v >= (uint64_t)pool) {
                cref_set_error(b,
                               "layer %d: layer.slot_map[%lld] = %lld (request %lld, column %lld) is outside the pool "
                               "(k_cache has %lld slots)",
                               id, (long long)s, (long long)v, (long long)i, (long long)c, (long long)pool);
                return SGL_ATTN_E_INVALID;
            }
        }
    }
    return SGL_ATTN_OK;
}

int cref_layer_engine(cref_backend *b, const sgl_attn_forward_args *a, const sgl_attn_layer *L) {
    cref_job *J = &b->job;
    const int32_t type = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, attn_type);
    const DLTensor *map = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, L, slot_map);
    J->vis = SGL_ATTN_TYPE_CAUSAL;
    J->direct = 0;
    J->pages = b->page_size ? b->pages : NULL;
    J->page_size = b->page_size;
    J->slot_map = NULL;
    J->map_64 = 0;
    J->map_len = 0;
    /* a cross layer sees every encoder token: the tree mask is over self keys */
    J->mask = J->cross ? NULL : b->mask;
    b->enc_only = 0;
    int rc = check_type(b, L, type, a);
    if (rc) return rc;
    if (J->mask && L->sliding_window >= 0) {
        cref_set_error(b, "layer %d: batch.custom_mask with sliding_window %d; cpu_ref serves tree verify on layers "
                          "without a window",
                       L->layer_id, L->sliding_window);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (map) {
        if ((rc = check_slot_map(b, L, map, J->pool_slots))) return rc;
        J->slot_map = sgl_sdk_data(map);
        J->map_64 = map->dtype.bits == 64;
        J->map_len = map->shape[0];
    }
    J->vis = type;
    J->plain = type == SGL_ATTN_TYPE_CAUSAL && !map && !J->pages && !J->mask;
    if (!J->plain && cref_topk_of(a)) {
        cref_set_error(b, "layer %d: topk_indices (sparse MLA) with a page table, slot map, tree mask or attention "
                          "type; cpu_ref serves sparse MLA on plain batches only",
                       L->layer_id);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (type == SGL_ATTN_TYPE_ENCODER_ONLY) {
        b->enc_only = 1;
        b->k_in = sgl_sdk_data(a->k);
        b->v_in = sgl_sdk_data(a->v);
    }
    return SGL_ATTN_OK;
}

/* Encoder-only: after any save, the keys are the call's k / v rows. */
void cref_direct_keys(cref_backend *b) {
    cref_job *J = &b->job;
    J->direct = 1;
    J->k_cache = b->k_in;
    J->v_cache = b->v_in;
    J->kv_dt = b->k_dt;
    J->k_slot = (int64_t)J->hkv * J->dqk;
    J->v_slot = (int64_t)J->hkv * J->dv;
    J->v_head = J->dv;
    J->pool_slots = b->num_tokens;
    J->slot_map = NULL;
    /* the keys are the call's k / v, not pool codes: an fp8 pool's dequant
     * scales (fp8_scales.c, folded into scale and v_mul) do not apply */
    J->scale /= J->k_div;
    J->v_mul = 1;
}

int64_t cref_new_slot(cref_backend *b, int64_t t) {
    const cref_job *J = &b->job;
    const int enc = J->cross;
    const int64_t s = sgl_sdk_idx(enc ? b->enc_loc : b->out_cache_loc, enc ? b->enc_loc_64 : b->ocl_64, t);
    if (J->slot_map) {
        if ((uint64_t)s >= (uint64_t)J->map_len) {
            cref_bad_note(&b->bad, 1, t, s);
            return -1;
        }
        const int64_t m = sgl_sdk_idx(J->slot_map, J->map_64, s);
        if ((uint64_t)m >= (uint64_t)J->pool_slots) {
            cref_bad_note(&b->bad, 2, s, m);
            return -1;
        }
        return m;
    }
    if ((uint64_t)s >= (uint64_t)J->pool_slots) {
        cref_bad_note(&b->bad, 1, t, s);
        return -1;
    }
    return s;
}
