/* model_hf.c - a Hugging Face config.json as a model (docs/model.md): the
 * attention shape, MLA, encoder-decoder, window, soft-cap, sinks, dtype and
 * DeepSeek sparse attention.  The hybrid families are in hf_hybrid_policy.c. */
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "model_policy.h"
#include "rules.h"

static const char *str_field(const cJSON *obj, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

/* Heads and head dims, with the spellings of decoder-only and enc-dec configs. */
static int read_shape(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    static const char *const layer_keys[] = {"num_hidden_layers", "decoder_layers", "n_layer", "num_layers", NULL};
    static const char *const q_keys[] = {"num_attention_heads", "decoder_attention_heads", "n_head", NULL};
    static const char *const hidden_keys[] = {"hidden_size", "d_model", "n_embd", NULL};
    int64_t v;
    int found, rc;
    const char *lk = hf_first_key(h, layer_keys), *qk = hf_first_key(h, q_keys), *hk = hf_first_key(h, hidden_keys);
    if (!lk) return model_fail(h->err, h->err_size, h->origin, "missing \"num_hidden_layers\" (the layer count)");
    if (!qk)
        return model_fail(h->err, h->err_size, h->origin,
                          "missing \"num_attention_heads\" (or \"decoder_attention_heads\"): the query head count");
    if ((rc = hf_need_int(h, lk, 1, SGL_ATTN_MAX_LAYERS, &v, "the layer count"))) return rc;
    m->num_layers = (int32_t)v;
    if ((rc = hf_need_int(h, qk, 1, 1 << 16, &v, "the query head count"))) return rc;
    m->num_q_heads = (int32_t)v;
    f->q_heads = qk;
    m->num_kv_heads = m->num_q_heads;
    f->kv_heads = qk;
    if ((rc = hf_int(h, "num_key_value_heads", 1, 1 << 16, &v, &found))) return rc;
    if (found) {
        m->num_kv_heads = (int32_t)v;
        f->kv_heads = "num_key_value_heads";
    }
    int64_t hidden = 0;
    if (hk && (rc = hf_int(h, hk, 1, 1 << 24, &hidden, &found))) return rc;
    if ((rc = hf_int(h, "head_dim", 1, 65535, &v, &found))) return rc;
    if (!found && (rc = hf_int(h, "attention_head_dim", 1, 65535, &v, &found))) return rc;
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
    return SGL_ATTN_OK;
}

/* MLA (absorbed): the latent pool row is kv_lora_rank + rope, one KV head. */
static int read_mla(const hf_ctx *h, sgl_attn_model *m) {
    int64_t v;
    int found, rc;
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

static int read_dtype(const hf_ctx *h, sgl_attn_model *m) {
    const char *where, *key = "torch_dtype";
    const cJSON *n = hf_item(h, key, &where);
    if (!n) n = hf_item(h, key = "dtype", &where);
    if (!n) return SGL_ATTN_OK; /* bf16, sglang's choice for a config that says nothing */
    uint32_t dt = cJSON_IsString(n) ? pol_dtype_from_name(n->valuestring) : 0;
    if (!dt)
        return model_fail(h->err, h->err_size, h->origin,
                          "\"%s%s\": expected float32, float16 or bfloat16, found %s%s%s%s", where, key,
                          ju_type_name(n), cJSON_IsString(n) ? " \"" : "", cJSON_IsString(n) ? n->valuestring : "",
                          cJSON_IsString(n) ? "\"" : "");
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

    if ((rc = read_shape(&h, m, &f)) || (rc = read_mla(&h, m)) || (rc = read_dtype(&h, m)) ||
        (rc = read_window(&h, m)))
        return rc;
    const cJSON *ed = hf_item(&h, "is_encoder_decoder", NULL);
    const cJSON *cross = hf_item(&h, "cross_attention_layers", NULL);
    m->is_encoder_decoder = (ed && cJSON_IsTrue(ed)) || (cJSON_IsArray(cross) && cross->child);
    const char *where;
    const cJSON *cap = hf_item(&h, "attn_logit_softcapping", &where);
    if (cap) {
        if (!cJSON_IsNumber(cap) || cap->valuedouble < 0)
            return model_fail(err, err_size, origin, "\"%sattn_logit_softcapping\": expected a number >= 0, found %s",
                              where, ju_type_name(cap));
        m->logit_softcap = (float)cap->valuedouble;
    }
    /* gpt-oss: a learned sink logit per head joins every softmax. */
    m->has_sinks = hf_type_is(&h, "gpt_oss");
    int64_t topk;
    int found;
    if ((rc = hf_int(&h, "index_topk", 0, 1 << 30, &topk, &found))) return rc;
    if (found) m->index_topk = (int32_t)topk;
    if ((rc = hf_read_hybrid(&h, m, &f))) return rc;
    return model_finish(m, origin, tp_size, &f, err, err_size);
}
