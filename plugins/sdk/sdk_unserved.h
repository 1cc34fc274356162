/*
 * sdk_unserved.h - ABI 1.2 fields a plugin does not serve, so that it refuses
 * them by name instead of ignoring them: the first field the caller set whose
 * feature bit (SGL_ATTN_FEAT_*) the plugin's caps do not declare, as the
 * message names it ("batch.page_table"), or NULL.  Only fields within each
 * struct's struct_size are read (an older caller's bytes past it are not its).
 * Header-only, pure C.
 */
#ifndef SGL_SDK_UNSERVED_H
#define SGL_SDK_UNSERVED_H

#include <stddef.h>

#include "sgl_attn_abi.h"

static inline const char *sgl_sdk_unserved_batch(const sgl_attn_batch *b, uint32_t features) {
    if (b->forward_mode == SGL_ATTN_MODE_DRAFT_EXTEND && !(features & SGL_ATTN_FEAT_DRAFT_EXTEND))
        return "batch.forward_mode draft_extend";
    if (!(features & SGL_ATTN_FEAT_TREE_MASK)) {
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, custom_mask)) return "batch.custom_mask";
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, mask_indptr)) return "batch.mask_indptr";
    }
    if (!(features & SGL_ATTN_FEAT_PAGE_TABLE) && SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, page_table))
        return "batch.page_table";
    if (!(features & SGL_ATTN_FEAT_ENCODER_LOC) && SGL_ATTN_FIELD_OR_0(sgl_attn_batch, b, encoder_out_cache_loc))
        return "batch.encoder_out_cache_loc";
    return NULL;
}

/* The layer's and the call's fields (a->layer may be NULL: not read then);
 * topk_indices has no feature bit: a plugin serving sparse MLA checks it itself. */
static inline const char *sgl_sdk_unserved_forward(const sgl_attn_forward_args *a, uint32_t features) {
    if (!(features & SGL_ATTN_FEAT_LSE) && SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, lse))
        return "forward args lse";
    if (!(features & SGL_ATTN_FEAT_MLA_ROPE_SPLIT)) {
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, q_rope)) return "forward args q_rope";
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, k_rope)) return "forward args k_rope";
    }
    if (SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, topk_indices)) return "forward args topk_indices";
    if (!(features & SGL_ATTN_FEAT_DUAL_CHUNK) && SGL_ATTN_FIELD_OR_0(sgl_attn_forward_args, a, dual_chunk))
        return "forward args dual_chunk";
    const sgl_attn_layer *l = a->layer;
    if (!l) return NULL;
    if (!(features & SGL_ATTN_FEAT_SLOT_MAP) && SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, slot_map))
        return "layer.slot_map";
    if (!(features & SGL_ATTN_FEAT_ATTN_TYPES) &&
        SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, attn_type) != SGL_ATTN_TYPE_CAUSAL)
        return "layer.attn_type";
    if (!(features & SGL_ATTN_FEAT_FP8_SCALES)) {
        const float qd = SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale);
        if (qd != 0.f && qd != 1.f) return "layer.q_descale";
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, k_scale_tensor)) return "layer.k_scale_tensor";
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, v_scale_tensor)) return "layer.v_scale_tensor";
        if (SGL_ATTN_FIELD_OR_0(sgl_attn_layer, l, q_descale_tensor)) return "layer.q_descale_tensor";
    }
    return NULL;
}

#endif
