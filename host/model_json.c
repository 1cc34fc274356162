/* model_json.c - our own model format (docs/model.md): strict keys, head
 * counts for the whole model (tp_size divides them), our conventions. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model_policy.h"
#include "rules.h"

typedef struct ours {
    const char *origin;
    char *err;
    size_t err_size;
} ours;

static int check_keys(const ours *o, const cJSON *obj, const char *where, const char *const *allowed) {
    for (const cJSON *c = obj->child; c; c = c->next) {
        int ok = 0;
        for (size_t k = 0; allowed[k]; k++) ok |= !strcmp(c->string, allowed[k]);
        if (!ok) {
            char list[512] = "";
            for (size_t k = 0; allowed[k]; k++) ju_append(list, sizeof list, "%s%s", k ? ", " : "", allowed[k]);
            return model_fail(o->err, o->err_size, o->origin, "unknown key \"%s\" in %s (expected one of: %s)",
                              c->string, where, list);
        }
    }
    return SGL_ATTN_OK;
}

/* An integer field in [lo, hi]; absent leaves *out. */
static int get_int(const ours *o, const cJSON *obj, const char *key, const char *path, int64_t lo, int64_t hi,
                   int32_t *out, int required) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!n) {
        if (!required) return SGL_ATTN_OK;
        return model_fail(o->err, o->err_size, o->origin, "missing \"%s%s\" (an integer in [%lld, %lld])", path, key,
                          (long long)lo, (long long)hi);
    }
    if (!cJSON_IsNumber(n) || floor(n->valuedouble) != n->valuedouble || n->valuedouble < (double)lo ||
        n->valuedouble > (double)hi) {
        char found[64];
        if (cJSON_IsNumber(n)) snprintf(found, sizeof found, "%g", n->valuedouble);
        else snprintf(found, sizeof found, "%s", ju_type_name(n));
        return model_fail(o->err, o->err_size, o->origin, "\"%s%s\": expected an integer in [%lld, %lld], found %s",
                          path, key, (long long)lo, (long long)hi, found);
    }
    *out = (int32_t)n->valuedouble;
    return SGL_ATTN_OK;
}

static int get_bool(const ours *o, const cJSON *obj, const char *key, int32_t *out) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!n) return SGL_ATTN_OK;
    if (!cJSON_IsBool(n))
        return model_fail(o->err, o->err_size, o->origin, "\"%s\": expected true or false, found %s", key,
                          ju_type_name(n));
    *out = cJSON_IsTrue(n);
    return SGL_ATTN_OK;
}

static int get_dtype(const ours *o, const cJSON *obj, const char *key, const char *path, uint32_t *out) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!n) return SGL_ATTN_OK;
    uint32_t dt = cJSON_IsString(n) ? pol_dtype_from_name(n->valuestring) : 0;
    if (!dt)
        return model_fail(o->err, o->err_size, o->origin,
                          "\"%s%s\": expected a dtype (f32, f16, bf16, f64, fp8_e4m3), found %s%s%s%s", path, key,
                          ju_type_name(n), cJSON_IsString(n) ? " \"" : "", cJSON_IsString(n) ? n->valuestring : "",
                          cJSON_IsString(n) ? "\"" : "");
    *out = dt;
    return SGL_ATTN_OK;
}

static int get_str(const ours *o, const cJSON *obj, const char *key, char *dst, size_t size) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!n) return SGL_ATTN_OK;
    if (!cJSON_IsString(n) || strlen(n->valuestring) >= size)
        return model_fail(o->err, o->err_size, o->origin, "\"%s\": expected a string of at most %zu bytes, found %s",
                          key, size - 1, ju_type_name(n));
    str_copy(dst, size, n->valuestring);
    return SGL_ATTN_OK;
}

/* A list of layer ids into a mask. */
static int get_layers(const ours *o, const cJSON *obj, const char *key, uint64_t *mask, int *present) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    *present = n != NULL;
    if (!n) return SGL_ATTN_OK;
    if (!cJSON_IsArray(n))
        return model_fail(o->err, o->err_size, o->origin, "\"hybrid.%s\": expected an array of layer ids, found %s",
                          key, ju_type_name(n));
    int i = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e) || floor(e->valuedouble) != e->valuedouble || e->valuedouble < 0 ||
            e->valuedouble >= SGL_ATTN_MAX_LAYERS)
            return model_fail(o->err, o->err_size, o->origin,
                              "\"hybrid.%s[%d]\": expected a layer id in [0, %d), found %s", key, i,
                              SGL_ATTN_MAX_LAYERS, ju_type_name(e));
        model_mask_set(mask, (int)e->valuedouble);
    }
    return SGL_ATTN_OK;
}

static int read_mla(const ours *o, const cJSON *n, sgl_attn_model *m) {
    static const char *const keys[] = {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", NULL};
    int rc;
    if (!cJSON_IsObject(n))
        return model_fail(o->err, o->err_size, o->origin, "\"mla\": expected an object, found %s", ju_type_name(n));
    if ((rc = check_keys(o, n, "\"mla\"", keys)) || (rc = get_int(o, n, "kv_lora_rank", "mla.", 1, 65535, &m->kv_lora_rank, 1)) ||
        (rc = get_int(o, n, "qk_rope_head_dim", "mla.", 0, 65535, &m->qk_rope_head_dim, 1)) ||
        (rc = get_int(o, n, "qk_nope_head_dim", "mla.", 0, 65535, &m->qk_nope_head_dim, 0)) ||
        (rc = get_int(o, n, "v_head_dim", "mla.", 0, 65535, &m->v_head_dim, 0)))
        return rc;
    m->is_mla = 1;
    m->head_dim_qk = m->kv_lora_rank + m->qk_rope_head_dim;
    m->head_dim_v = m->kv_lora_rank;
    return SGL_ATTN_OK;
}

static int read_hybrid(const ours *o, const cJSON *n, sgl_attn_model *m, model_fields *f) {
    static const char *const keys[] = {"kind", "full_attention_layers", "sparse_layers", "linear", "sparse", NULL};
    static const char *const lin_keys[] = {"num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim",
                                           "conv_kernel", "hidden",      "state_dtype", NULL};
    static const char *const sparse_keys[] = {"topk_blocks", "block_size", NULL};
    int rc, present;
    if (!cJSON_IsObject(n))
        return model_fail(o->err, o->err_size, o->origin, "\"hybrid\": expected an object, found %s", ju_type_name(n));
    if ((rc = check_keys(o, n, "\"hybrid\"", keys))) return rc;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(n, "kind");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : "";
    if (!strncmp(k, "custom:", 7) && k[7] && strlen(k + 7) < sizeof m->hybrid_custom_kind) {
        m->hybrid_kind = SGL_ATTN_HYBRID_CUSTOM;
        str_copy(m->hybrid_custom_kind, sizeof m->hybrid_custom_kind, k + 7);
    } else {
        int v = pol_hybrid_kind_from_name(k);
        if (v < 0 || v == SGL_ATTN_HYBRID_CUSTOM)
            return model_fail(o->err, o->err_size, o->origin,
                              "\"hybrid.kind\": expected gdn, mamba2, short_conv, kda, lightning, minimax_sparse or "
                              "custom:<name> (name up to %zu bytes), found %s%s%s%s",
                              sizeof m->hybrid_custom_kind - 1, ju_type_name(kind), *k ? " \"" : "", k, *k ? "\"" : "");
        m->hybrid_kind = (uint32_t)v;
    }
    if ((rc = get_layers(o, n, "full_attention_layers", m->full_attention_mask, &present))) return rc;
    if (!present)
        return model_fail(o->err, o->err_size, o->origin,
                          "missing \"hybrid.full_attention_layers\" (the ids of the layers the full-attention backend runs)");
    if ((rc = get_layers(o, n, "sparse_layers", m->sparse_layer_mask, &present))) return rc;
    if (present != (m->hybrid_kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE))
        return model_fail(o->err, o->err_size, o->origin, "\"hybrid.sparse_layers\" is %s",
                          present ? "only for kind minimax_sparse" : "required for kind minimax_sparse");
    const cJSON *lin = cJSON_GetObjectItemCaseSensitive(n, "linear");
    if (lin) {
        if (!cJSON_IsObject(lin))
            return model_fail(o->err, o->err_size, o->origin, "\"hybrid.linear\": expected an object, found %s",
                              ju_type_name(lin));
        if ((rc = check_keys(o, lin, "\"hybrid.linear\"", lin_keys)) ||
            (rc = get_int(o, lin, "num_k_heads", "hybrid.linear.", 0, 1 << 16, &m->lin_num_k_heads, 0)) ||
            (rc = get_int(o, lin, "num_v_heads", "hybrid.linear.", 0, 1 << 16, &m->lin_num_v_heads, 0)) ||
            (rc = get_int(o, lin, "head_k_dim", "hybrid.linear.", 0, 65535, &m->lin_head_k_dim, 0)) ||
            (rc = get_int(o, lin, "head_v_dim", "hybrid.linear.", 0, 65535, &m->lin_head_v_dim, 0)) ||
            (rc = get_int(o, lin, "conv_kernel", "hybrid.linear.", 0, 64, &m->lin_conv_kernel, 0)) ||
            (rc = get_int(o, lin, "hidden", "hybrid.linear.", 0, 1 << 20, &m->lin_hidden, 0)) ||
            (rc = get_dtype(o, lin, "state_dtype", "hybrid.linear.", &m->lin_state_dtype)))
            return rc;
    }
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(n, "sparse");
    if (sp) {
        if (!cJSON_IsObject(sp))
            return model_fail(o->err, o->err_size, o->origin, "\"hybrid.sparse\": expected an object, found %s",
                              ju_type_name(sp));
        if ((rc = check_keys(o, sp, "\"hybrid.sparse\"", sparse_keys)) ||
            (rc = get_int(o, sp, "topk_blocks", "hybrid.sparse.", 1, 1 << 20, &m->sparse_topk_blocks, 1)) ||
            (rc = get_int(o, sp, "block_size", "hybrid.sparse.", 1, 1 << 20, &m->sparse_block_size, 1)))
            return rc;
    }
    f->lin_k = "hybrid.linear.num_k_heads";
    f->lin_v = "hybrid.linear.num_v_heads";
    f->lin_hidden = "hybrid.linear.hidden";
    return SGL_ATTN_OK;
}

int model_from_ours(const void *cjson_root, const char *origin, int tp_size, sgl_attn_model *m, char *err,
                    size_t err_size) {
    static const char *const keys[] = {"sglattn_model",  "name",         "model_type",  "num_layers",    "num_q_heads",
                                       "num_kv_heads",   "head_dim",     "head_dim_qk", "head_dim_v",    "dtype",
                                       "kv_dtype",       "mla",          "encoder_decoder", "sliding_window",
                                       "logit_softcap",  "sinks",        "index_topk",  "page_size",     "draft",
                                       "spec_tokens",    "hybrid",       NULL};
    const cJSON *root = cjson_root;
    ours o = {origin, err, err_size};
    model_fields f = {"num_q_heads", "num_kv_heads", NULL, NULL, NULL};
    int32_t version = 0, head_dim = 0;
    int rc;
    model_reset(m);
    if ((rc = check_keys(&o, root, "the model", keys)) ||
        (rc = get_int(&o, root, "sglattn_model", "", 1, 1, &version, 1)) ||
        (rc = get_str(&o, root, "name", m->name, sizeof m->name)) ||
        (rc = get_str(&o, root, "model_type", m->model_type, sizeof m->model_type)) ||
        (rc = get_int(&o, root, "num_layers", "", 1, SGL_ATTN_MAX_LAYERS, &m->num_layers, 1)) ||
        (rc = get_int(&o, root, "num_q_heads", "", 1, 1 << 16, &m->num_q_heads, 1)) ||
        (rc = get_int(&o, root, "num_kv_heads", "", 1, 1 << 16, &m->num_kv_heads, 0)) ||
        (rc = get_int(&o, root, "head_dim", "", 1, 65535, &head_dim, 0)) ||
        (rc = get_int(&o, root, "head_dim_qk", "", 1, 65535, &m->head_dim_qk, 0)) ||
        (rc = get_int(&o, root, "head_dim_v", "", 1, 65535, &m->head_dim_v, 0)) ||
        (rc = get_dtype(&o, root, "dtype", "", &m->dtype)))
        return rc;
    m->kv_dtype = m->dtype;
    /* Our format names the served dtype itself: no --dtype auto here. */
    if (cJSON_GetObjectItemCaseSensitive(root, "dtype")) m->config_dtype = m->dtype;
    if ((rc = get_dtype(&o, root, "kv_dtype", "", &m->kv_dtype)) ||
        (rc = get_bool(&o, root, "encoder_decoder", &m->is_encoder_decoder)) ||
        (rc = get_int(&o, root, "sliding_window", "", -1, 1 << 30, &m->sliding_window, 0)) ||
        (rc = get_bool(&o, root, "sinks", &m->has_sinks)) ||
        (rc = get_int(&o, root, "index_topk", "", 0, 1 << 30, &m->index_topk, 0)) ||
        (rc = get_int(&o, root, "page_size", "", 0, 1 << 20, &m->page_size, 0)) ||
        (rc = get_bool(&o, root, "draft", &m->is_draft)) ||
        (rc = get_int(&o, root, "spec_tokens", "", 0, 1024, &m->spec_tokens, 0)))
        return rc;
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(root, "logit_softcap");
    if (cap) {
        if (!cJSON_IsNumber(cap) || !model_float_ok(cap->valuedouble)) {
            char got[64];
            if (cJSON_IsNumber(cap)) snprintf(got, sizeof got, "%g", cap->valuedouble);
            else snprintf(got, sizeof got, "%s", ju_type_name(cap));
            return model_fail(err, err_size, origin,
                              "\"logit_softcap\": expected 0 or a number in [%g, %g] (a float), found %s",
                              (double)FLT_MIN, (double)FLT_MAX, got);
        }
        m->logit_softcap = (float)cap->valuedouble;
    }
    if (head_dim && (m->head_dim_qk || m->head_dim_v))
        return model_fail(err, err_size, origin, "give \"head_dim\", or \"head_dim_qk\" and \"head_dim_v\", not both");
    if (head_dim) m->head_dim_qk = m->head_dim_v = head_dim;
    else if (!m->head_dim_v) m->head_dim_v = m->head_dim_qk;
    const cJSON *mla = cJSON_GetObjectItemCaseSensitive(root, "mla");
    if (mla) {
        if (head_dim || m->num_kv_heads > 1)
            return model_fail(err, err_size, origin,
                              "an \"mla\" model takes its head dims from \"mla\" (kv_lora_rank + qk_rope_head_dim) "
                              "and has one latent KV head: drop \"head_dim\" and \"num_kv_heads\"");
        if ((rc = read_mla(&o, mla, m))) return rc;
        m->num_kv_heads = 1;
    }
    if (!m->head_dim_qk)
        return model_fail(err, err_size, origin, "missing \"head_dim\" (or \"head_dim_qk\", or \"mla\")");
    if (!m->num_kv_heads) m->num_kv_heads = m->num_q_heads;
    const cJSON *hy = cJSON_GetObjectItemCaseSensitive(root, "hybrid");
    if (hy && (rc = read_hybrid(&o, hy, m, &f))) return rc;
    return model_finish(m, origin, tp_size, &f, err, err_size);
}
