/* model_hf.c - a Hugging Face config.json as a model (docs/model.md): the
 * attention shape, MLA, encoder-decoder, window, soft-cap, sinks, dtype and
 * DeepSeek sparse attention.  The hybrid families are in hf_hybrid_policy.c. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "model_policy.h"

static const char *str_field(const cJSON *obj, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

static int hf_true(const hf_ctx *h, const char *key) {
    const cJSON *n = hf_item(h, key, NULL);
    return n && cJSON_IsTrue(n);
}

/* The first architecture (root, else text_config) starts with `prefix`. */
static int arch_is(const hf_ctx *h, const char *prefix) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(h->root, "architectures");
    if (!cJSON_IsArray(a) || !cJSON_IsString(a->child))
        a = cJSON_GetObjectItemCaseSensitive(h->text, "architectures");
    return cJSON_IsArray(a) && cJSON_IsString(a->child) && !strncmp(a->child->valuestring, prefix, strlen(prefix));
}

/* DeepSeek-V4: one latent row of head_dim that is both key and value, rope
 * on its last qk_rope_head_dim dims (sglang: is_deepseek_v4, by architecture). */
static int is_deepseek_v4(const hf_ctx *h) { return arch_is(h, "DeepseekV4ForCausalLM") || hf_type_is(h, "deepseek_v4"); }

/* Nemotron-NAS (DeciLM) gives no num_key_value_heads: each block of
 * block_configs has attention.n_heads_in_group query heads per KV head, or
 * attention.no_op (no attention there).  One model holds one KV head count,
 * so blocks that differ are refused, as sglang refuses them. */
static int nas_kv_heads(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    const cJSON *blocks = hf_item(h, "block_configs", NULL);
    if (!blocks) return SGL_ATTN_OK;
    if (!cJSON_IsArray(blocks))
        return model_fail(h->err, h->err_size, h->origin, "\"block_configs\": expected an array, found %s",
                          ju_type_name(blocks));
    int group = 0, i = 0;
    for (const cJSON *b = blocks->child; b; b = b->next, i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(b, "attention");
        const cJSON *noop = cJSON_GetObjectItemCaseSensitive(a, "no_op");
        if (!cJSON_IsObject(a) || cJSON_IsTrue(noop)) continue;
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(a, "n_heads_in_group");
        if (!cJSON_IsNumber(g) || !(g->valuedouble >= 1 && g->valuedouble <= m->num_q_heads) ||
            floor(g->valuedouble) != g->valuedouble || m->num_q_heads % (int)g->valuedouble)
            return model_fail(h->err, h->err_size, h->origin,
                              "\"block_configs[%d].attention.n_heads_in_group\": expected a divisor of %d (the query "
                              "heads), found %s",
                              i, m->num_q_heads, ju_type_name(g));
        if (group && group != (int)g->valuedouble)
            return model_fail(h->err, h->err_size, h->origin,
                              "\"block_configs[%d].attention.n_heads_in_group\" is %d, an earlier block's is %d: the "
                              "model has one KV head count, so blocks with different GQA are not served",
                              i, (int)g->valuedouble, group);
        group = (int)g->valuedouble;
    }
    if (group) {
        m->num_kv_heads = m->num_q_heads / group;
        f->kv_heads = "num_attention_heads / block_configs[].attention.n_heads_in_group";
    }
    return SGL_ATTN_OK;
}

/* Heads and head dims, with the spellings of decoder-only and enc-dec
 * configs (T5: num_heads, d_kv, num_decoder_layers).  An encoder-decoder's
 * layers are its decoder's: those hold the KV cache.  An MLA model's head
 * dims come from read_mla, so hidden / heads need not divide there. */
static int read_shape(const hf_ctx *h, sgl_attn_model *m, model_fields *f, int mla) {
    static const char *const layer_keys[] = {"num_hidden_layers", "decoder_layers", "num_decoder_layers", "n_layer",
                                             "num_layers", NULL};
    static const char *const dec_layer_keys[] = {"decoder_layers", "num_decoder_layers", "num_hidden_layers", "n_layer",
                                                 "num_layers", NULL};
    static const char *const q_keys[] = {"num_attention_heads", "decoder_attention_heads", "n_head", "num_heads", NULL};
    static const char *const hidden_keys[] = {"hidden_size", "d_model", "n_embd", NULL};
    static const char *const dim_keys[] = {"head_dim", "attention_head_dim", "d_kv", NULL};
    int64_t v;
    int found, rc;
    const char *lk = hf_first_key(h, hf_true(h, "is_encoder_decoder") ? dec_layer_keys : layer_keys);
    const char *qk = hf_first_key(h, q_keys), *hk = hf_first_key(h, hidden_keys);
    const cJSON *blocks = hf_item(h, "layers_block_type", NULL);
    if (!lk && cJSON_IsArray(blocks) && cJSON_GetArraySize(blocks) > 0) {
        /* Nemotron-H without num_hidden_layers: one entry a layer. */
        int n = cJSON_GetArraySize(blocks);
        if (n > SGL_ATTN_MAX_LAYERS)
            return model_fail(h->err, h->err_size, h->origin, "\"layers_block_type\" has %d entries: expected 1 to %d",
                              n, SGL_ATTN_MAX_LAYERS);
        m->num_layers = n;
    } else if (!lk) {
        return model_fail(h->err, h->err_size, h->origin, "missing \"num_hidden_layers\" (the layer count)");
    } else {
        if ((rc = hf_need_int(h, lk, 1, SGL_ATTN_MAX_LAYERS, &v, "the layer count"))) return rc;
        m->num_layers = (int32_t)v;
    }
    if (!qk)
        return model_fail(h->err, h->err_size, h->origin,
                          "missing \"num_attention_heads\" (or \"decoder_attention_heads\", \"num_heads\"): the query "
                          "head count");
    if ((rc = hf_need_int(h, qk, 1, 1 << 16, &v, "the query head count"))) return rc;
    m->num_q_heads = (int32_t)v;
    f->q_heads = qk;
    m->num_kv_heads = m->num_q_heads;
    f->kv_heads = qk;
    if ((rc = hf_int(h, "num_key_value_heads", 1, 1 << 16, &v, &found))) return rc;
    if (found) {
        m->num_kv_heads = (int32_t)v;
        f->kv_heads = "num_key_value_heads";
    } else if ((rc = nas_kv_heads(h, m, f))) {
        return rc;
    }
    int64_t hidden = 0;
    if (hk && (rc = hf_int(h, hk, 1, 1 << 24, &hidden, &found))) return rc;
    const char *dk = hf_first_key(h, dim_keys);
    found = 0;
    if (dk && (rc = hf_int(h, dk, 1, 65535, &v, &found))) return rc;
    if (!found && mla) return SGL_ATTN_OK; /* read_mla sets both head dims */
    if (!found && hf_type_is(h, "zamba2") && hidden) {
        /* Zamba2's shared attention runs on concat(hidden, embeddings). */
        if ((2 * hidden) % m->num_q_heads)
            return model_fail(h->err, h->err_size, h->origin, "2 * \"%s\" (%lld) is not a multiple of \"%s\" (%d)", hk,
                              (long long)hidden, qk, m->num_q_heads);
        v = 2 * hidden / m->num_q_heads;
        found = 1;
    }
    if (!found) {
        if (!hidden)
            return model_fail(h->err, h->err_size, h->origin,
                              "missing \"head_dim\" and \"hidden_size\": cannot tell the head dim");
        if (hidden % m->num_q_heads)
            return model_fail(h->err, h->err_size, h->origin,
                              "no \"head_dim\", and \"%s\" (%lld) is not a multiple of \"%s\" (%d)", hk,
                              (long long)hidden, qk, m->num_q_heads);
        v = hidden / m->num_q_heads;
    }
    m->head_dim_qk = m->head_dim_v = (int32_t)v;
    /* A value head dim of its own (MiMo-V2-Flash: qk 192, v 128); an MLA
     * model's v_head_dim is read_mla's. */
    if (mla) return SGL_ATTN_OK;
    if ((rc = hf_int(h, "v_head_dim", 1, 65535, &v, &found))) return rc;
    if (found) m->head_dim_v = (int32_t)v;
    return SGL_ATTN_OK;
}

/* MLA (absorbed): the latent pool row is kv_lora_rank + rope, one KV head.
 * DeepSeek-V4's row is head_dim wide with the rope inside it, and the whole
 * row is the value: qk = v = kv_lora_rank = head_dim. */
static int read_mla(const hf_ctx *h, sgl_attn_model *m) {
    int64_t v;
    int found, rc;
    if (is_deepseek_v4(h)) {
        int64_t d, rope;
        if ((rc = hf_need_int(h, "head_dim", 1, 65535, &d, "DeepSeek-V4's latent row width")) ||
            (rc = hf_need_int(h, "qk_rope_head_dim", 0, 65535, &rope, "the rotary part of DeepSeek-V4's row")))
            return rc;
        if (rope >= d)
            return model_fail(h->err, h->err_size, h->origin,
                              "\"qk_rope_head_dim\" (%lld) is not smaller than \"head_dim\" (%lld)", (long long)rope,
                              (long long)d);
        m->is_mla = 1;
        m->kv_lora_rank = m->head_dim_qk = m->head_dim_v = m->v_head_dim = (int32_t)d;
        m->qk_rope_head_dim = (int32_t)rope;
        m->qk_nope_head_dim = (int32_t)(d - rope);
        m->num_kv_heads = 1;
        return SGL_ATTN_OK;
    }
    if ((rc = hf_int(h, "kv_lora_rank", 1, 65535, &v, &found)) || !found) return rc;
    m->is_mla = 1;
    m->kv_lora_rank = (int32_t)v;
    if ((rc = hf_need_int(h, "qk_rope_head_dim", 0, 65535, &v, "an MLA model's rotary part of the key"))) return rc;
    m->qk_rope_head_dim = (int32_t)v;
    if ((rc = hf_int(h, "qk_nope_head_dim", 0, 65535, &v, &found))) return rc;
    if (found) m->qk_nope_head_dim = (int32_t)v;
    if ((rc = hf_int(h, "v_head_dim", 0, 65535, &v, &found))) return rc;
    if (found) m->v_head_dim = (int32_t)v;
    m->head_dim_qk = m->kv_lora_rank + m->qk_rope_head_dim;
    m->head_dim_v = m->kv_lora_rank;
    m->num_kv_heads = 1;
    return SGL_ATTN_OK;
}

/* sglang's --dtype auto (model_config.py, _get_and_verify_dtype): the
 * text config's dtype is served as it is, except float32 or none at all,
 * served in float16, or bfloat16 for a model_type starting with "gemma".
 * config_dtype keeps what the file says. */
static int read_dtype(const hf_ctx *h, sgl_attn_model *m) {
    const char *where, *key = "torch_dtype";
    const cJSON *n = hf_item(h, key, &where);
    if (!n) n = hf_item(h, key = "dtype", &where);
    uint32_t dt = 0;
    if (n) {
        const char *s = cJSON_IsString(n) ? n->valuestring : "";
        dt = !strcmp(s, "float32") || !strcmp(s, "float")  ? SGL_ATTN_DT_F32
             : !strcmp(s, "float16") || !strcmp(s, "half") ? SGL_ATTN_DT_F16
             : !strcmp(s, "bfloat16")                      ? SGL_ATTN_DT_BF16
                                                           : 0;
        if (!dt)
            return model_fail(h->err, h->err_size, h->origin,
                              "\"%s%s\": expected float32, float16 or bfloat16, found %s%s%s%s", where, key,
                              ju_type_name(n), cJSON_IsString(n) ? " \"" : "", s, cJSON_IsString(n) ? "\"" : "");
    }
    m->config_dtype = dt;
    if (!dt || dt == SGL_ATTN_DT_F32)
        dt = !strncmp(h->text_type, "gemma", 5) ? SGL_ATTN_DT_BF16 : SGL_ATTN_DT_F16;
    m->dtype = m->kv_dtype = dt;
    return SGL_ATTN_OK;
}

/* Some layer uses a window: layer_types with "sliding_attention", a
 * sliding_window_pattern, or a window with neither (every layer). */
static int read_window(const hf_ctx *h, sgl_attn_model *m) {
    int64_t w;
    int found, rc;
    const cJSON *use = hf_item(h, "use_sliding_window", NULL);
    if (use && cJSON_IsFalse(use)) return SGL_ATTN_OK;
    if ((rc = hf_int(h, "sliding_window", 0, 1 << 30, &w, &found)) || !found || w == 0) return rc;
    const cJSON *types = hf_item(h, "layer_types", NULL);
    if (cJSON_IsArray(types)) {
        int any = 0;
        for (const cJSON *t = types->child; t; t = t->next)
            any |= cJSON_IsString(t) && !strcmp(t->valuestring, "sliding_attention");
        if (!any) return SGL_ATTN_OK;
    }
    /* HF counts the query token in the window; ours is the left span. */
    m->sliding_window = (int32_t)(w - 1);
    return SGL_ATTN_OK;
}

/* One integer of dual_chunk_attention_config, named in its errors. */
static int dca_int(const hf_ctx *h, const cJSON *o, const char *where, const char *key, int64_t lo, int64_t hi,
                   int64_t dflt, int64_t *out) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!n || cJSON_IsNull(n)) {
        *out = dflt;
        return SGL_ATTN_OK;
    }
    if (!cJSON_IsNumber(n) || floor(n->valuedouble) != n->valuedouble || n->valuedouble < (double)lo ||
        n->valuedouble > (double)hi) {
        char got[64];
        if (cJSON_IsNumber(n)) snprintf(got, sizeof got, "%g", n->valuedouble);
        else snprintf(got, sizeof got, "%s", ju_type_name(n));
        return model_fail(h->err, h->err_size, h->origin,
                          "\"%sdual_chunk_attention_config.%s\": expected an integer in [%lld, %lld], found %s", where,
                          key, (long long)lo, (long long)hi, got);
    }
    *out = (int64_t)n->valuedouble;
    return SGL_ATTN_OK;
}

/* Qwen2.5-1M's dual chunk attention.  Absent sizes take the defaults the
 * engines use (chunk 8192, local 1024); sparse attention is on when the
 * config says so, or when it carries a sparse_attention_config and does not
 * say otherwise. */
static int read_dual_chunk(const hf_ctx *h, sgl_attn_model *m) {
    const char *where;
    const cJSON *o = hf_item(h, "dual_chunk_attention_config", &where);
    if (!o) return SGL_ATTN_OK;
    if (!cJSON_IsObject(o))
        return model_fail(h->err, h->err_size, h->origin, "\"%sdual_chunk_attention_config\": expected an object, found %s",
                          where, ju_type_name(o));
    int64_t chunk, local, orig, thr;
    int rc;
    if ((rc = dca_int(h, o, where, "chunk_size", 2, 1 << 30, 8192, &chunk)) ||
        (rc = dca_int(h, o, where, "local_size", 0, 1 << 30, 1024, &local)) ||
        (rc = dca_int(h, o, where, "original_max_position_embeddings", 0, 1 << 30, 0, &orig)) ||
        (rc = dca_int(h, o, where, "sparse_attention_threshold", 0, 1 << 30, 32768, &thr)))
        return rc;
    if (local >= chunk)
        return model_fail(h->err, h->err_size, h->origin,
                          "\"%sdual_chunk_attention_config\": local_size %lld must be below chunk_size %lld (keys per "
                          "chunk are chunk_size - local_size)",
                          where, (long long)local, (long long)chunk);
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "sparse_attention_enabled");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "sparse_attention_config");
    int sparse;
    if (en && !cJSON_IsNull(en)) {
        if (!cJSON_IsBool(en))
            return model_fail(h->err, h->err_size, h->origin,
                              "\"%sdual_chunk_attention_config.sparse_attention_enabled\": expected true or false, "
                              "found %s",
                              where, ju_type_name(en));
        sparse = cJSON_IsTrue(en);
    } else {
        sparse = sc && !cJSON_IsNull(sc);
    }
    m->dca_chunk_size = (int32_t)chunk;
    m->dca_local_size = (int32_t)local;
    m->dca_original_max_position = (int32_t)orig;
    m->dca_sparse = sparse;
    m->dca_sparse_threshold = (int32_t)thr;
    return SGL_ATTN_OK;
}

int model_from_hf(const void *cjson_root, const char *origin, int tp_size, sgl_attn_model *m, char *err,
                  size_t err_size) {
    const cJSON *root = cjson_root;
    hf_ctx h = {.root = root, .text = root, .origin = origin, .err = err, .err_size = err_size};
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if (tc && !cJSON_IsNull(tc)) {
        if (!cJSON_IsObject(tc))
            return model_fail(err, err_size, origin, "\"text_config\": expected an object, found %s", ju_type_name(tc));
        h.text = tc;
    }
    const char *mt = str_field(root, "model_type"), *tt = str_field(h.text, "model_type");
    h.model_type = mt ? mt : tt ? tt : "";
    h.text_type = tt ? tt : h.model_type;
    model_fields f = {0};
    int rc;
    model_reset(m);
    str_copy(m->model_type, sizeof m->model_type, h.model_type);
    const char *name = str_field(root, "_name_or_path");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    if ((!name || !name[0]) && cJSON_IsArray(arch) && cJSON_IsString(arch->child)) name = arch->child->valuestring;
    str_copy(m->name, sizeof m->name, name && name[0] ? name : h.model_type);

    int64_t rank;
    int found, mla = is_deepseek_v4(&h);
    if (!mla && (rc = hf_int(&h, "kv_lora_rank", 1, 65535, &rank, &mla))) return rc;
    if ((rc = read_shape(&h, m, &f, mla)) || (rc = read_mla(&h, m)) || (rc = read_dtype(&h, m)) ||
        (rc = read_window(&h, m)) || (rc = read_dual_chunk(&h, m)))
        return rc;
    const cJSON *cross = hf_item(&h, "cross_attention_layers", NULL);
    m->is_encoder_decoder = hf_true(&h, "is_encoder_decoder") || (cJSON_IsArray(cross) && cross->child);
    const char *where;
    const cJSON *cap = hf_item(&h, "attn_logit_softcapping", &where);
    if (cap) {
        /* The field is a float: a value it cannot hold (1e300 would be +inf,
         * 1e-50 would be 0, which means no soft-cap) is refused, not rounded. */
        if (!cJSON_IsNumber(cap) || !model_float_ok(cap->valuedouble)) {
            char got[64];
            if (cJSON_IsNumber(cap)) snprintf(got, sizeof got, "%g", cap->valuedouble);
            else snprintf(got, sizeof got, "%s", ju_type_name(cap));
            return model_fail(err, err_size, origin,
                              "\"%sattn_logit_softcapping\": expected 0 or a number in [%g, %g] (a float), found %s",
                              where, (double)FLT_MIN, (double)FLT_MAX, got);
        }
        m->logit_softcap = (float)cap->valuedouble;
    }
    /* A learned sink logit per head joins the softmax: always in gpt-oss,
     * and in MiMo-V2 where its config turns the sink bias on (sglang's
     * _detect_attention_sinks). */
    m->has_sinks = hf_type_is(&h, "gpt_oss") || hf_true(&h, "add_swa_attention_sink_bias") ||
                   hf_true(&h, "add_full_attention_sink_bias");
    /* DeepSeek sparse attention.  DeepSeek-V4's index_topk belongs to its
     * compressed attention (sglang's dsv4 backend, not dsa): not read there. */
    int64_t topk;
    if (!is_deepseek_v4(&h) && (rc = hf_int(&h, "index_topk", 0, 1 << 30, &topk, &found))) return rc;
    if (!is_deepseek_v4(&h) && found) m->index_topk = (int32_t)topk;
    /* The indexer's shape; its heads are not split by tensor parallelism
     * (sglang replicates the indexer on every rank). */
    if (m->index_topk > 0) {
        int64_t ih = 0, id = 0;
        if ((rc = hf_int(&h, "index_n_heads", 1, 1 << 16, &ih, &found))) return rc;
        if ((rc = hf_int(&h, "index_head_dim", 1, 1 << 16, &id, &found))) return rc;
        m->index_n_heads = (int32_t)ih;
        m->index_head_dim = (int32_t)id;
    }
    if ((rc = hf_read_hybrid(&h, m, &f))) return rc;
    return model_finish(m, origin, tp_size, &f, err, err_size);
}
