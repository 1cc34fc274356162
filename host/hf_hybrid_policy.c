/* hf_hybrid_policy.c - the hybrid families of Hugging Face configs: which
 * layers are full attention, which linear kind the others are, and the
 * linear-attention shapes (docs/model.md has the table). */
#include <math.h>
#include <string.h>

#include "json_util.h"
#include "model_policy.h"
#include "rules.h"

#define FAIL(...) model_fail(h->err, h->err_size, h->origin, __VA_ARGS__)

/* Several required integers at once: {key, lo, hi, &dst}. */
typedef struct want {
    const char *key;
    int64_t lo, hi;
    int32_t *dst;
} want;

static int need_all(const hf_ctx *h, const want *w, size_t n, const char *why) {
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        int rc = hf_need_int(h, w[i].key, w[i].lo, w[i].hi, &v, why);
        if (rc) return rc;
        *w[i].dst = (int32_t)v;
    }
    return SGL_ATTN_OK;
}

/* First present spelling of a field, required. */
static int need_one_of(const hf_ctx *h, const char *const *keys, int64_t lo, int64_t hi, int32_t *dst,
                       const char **used, const char *why) {
    const char *k = hf_first_key(h, keys);
    if (!k) return FAIL("missing \"%s\" (%s)", keys[0], why);
    int64_t v;
    int rc = hf_need_int(h, k, lo, hi, &v, why);
    if (!rc) *dst = (int32_t)v;
    if (used) *used = k;
    return rc;
}

static const cJSON *array_of_len(const hf_ctx *h, const char *key, int n, int *rc) {
    const char *where;
    const cJSON *a = hf_item(h, key, &where);
    *rc = SGL_ATTN_OK;
    if (!a) return NULL;
    if (!cJSON_IsArray(a)) {
        *rc = FAIL("\"%s%s\": expected an array, found %s", where, key, ju_type_name(a));
        return NULL;
    }
    if (cJSON_GetArraySize(a) != n) {
        *rc = FAIL("\"%s%s\" has %d entries, but the model has %d layers", where, key, cJSON_GetArraySize(a), n);
        return NULL;
    }
    return a;
}

/* ------------------------------------------------------------ families */

/* MiniMax sparse (M3): sparse_attention_config.sparse_attention_freq marks
 * the sparse layers (non-zero); the others go to the dense backend. */
static int minimax_sparse(const hf_ctx *h, sgl_attn_model *m, const cJSON *cfg, int *done) {
    const cJSON *use = cJSON_GetObjectItemCaseSensitive(cfg, "use_sparse_attention");
    const cJSON *freq = cJSON_GetObjectItemCaseSensitive(cfg, "sparse_attention_freq");
    if ((use && cJSON_IsFalse(use)) || !cJSON_IsArray(freq)) return SGL_ATTN_OK;
    if (cJSON_GetArraySize(freq) != m->num_layers)
        return FAIL("\"sparse_attention_config.sparse_attention_freq\" has %d entries, but the model has %d layers",
                    cJSON_GetArraySize(freq), m->num_layers);
    int i = 0, any = 0;
    for (const cJSON *e = freq->child; e; e = e->next, i++) {
        if (!(cJSON_IsNumber(e) && isfinite(e->valuedouble)) && !cJSON_IsBool(e))
            return FAIL("\"sparse_attention_config.sparse_attention_freq[%d]\": expected 0/1, found %s%s", i,
                        ju_type_name(e), cJSON_IsNumber(e) ? " that is not finite" : "");
        int sparse = cJSON_IsNumber(e) ? e->valuedouble != 0 : cJSON_IsTrue(e);
        if (sparse) {
            model_mask_set(m->sparse_layer_mask, i);
            any = 1;
        } else {
            model_mask_set(m->full_attention_mask, i);
        }
    }
    if (!any) return SGL_ATTN_OK;
    static const char *const keys[] = {"sparse_topk_blocks", "sparse_block_size"};
    int32_t *dst[] = {&m->sparse_topk_blocks, &m->sparse_block_size};
    for (int k = 0; k < 2; k++) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cfg, keys[k]);
        if (!cJSON_IsNumber(n) || !(n->valuedouble >= 1 && n->valuedouble <= (1 << 30)) ||
            floor(n->valuedouble) != n->valuedouble)
            return FAIL("\"sparse_attention_config.%s\": expected an integer in [1, %d], found %s", keys[k], 1 << 30,
                        ju_type_name(n));
        *dst[k] = (int32_t)n->valuedouble;
    }
    m->hybrid_kind = SGL_ATTN_HYBRID_MINIMAX_SPARSE;
    *done = 1;
    return SGL_ATTN_OK;
}

/* Kimi-Linear: linear_attn_config lists the layers 1-based (the last id
 * equals num_hidden_layers), unless kda_layer_index_base says otherwise. */
static int kimi_linear(const hf_ctx *h, sgl_attn_model *m, model_fields *f, const cJSON *cfg) {
    static const char *const names[] = {"num_heads", "head_dim", "short_conv_kernel_size"};
    int32_t *dst[] = {&m->lin_num_v_heads, &m->lin_head_v_dim, &m->lin_conv_kernel};
    int64_t lo[] = {1, 1, 1}, hi[] = {1 << 16, 65535, 64};
    for (int k = 0; k < 3; k++) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cfg, names[k]);
        if (!cJSON_IsNumber(n) || floor(n->valuedouble) != n->valuedouble || n->valuedouble < (double)lo[k] ||
            n->valuedouble > (double)hi[k])
            return FAIL("\"linear_attn_config.%s\": expected an integer in [%lld, %lld], found %s", names[k],
                        (long long)lo[k], (long long)hi[k], ju_type_name(n));
        *dst[k] = (int32_t)n->valuedouble;
    }
    m->lin_num_k_heads = m->lin_num_v_heads;
    m->lin_head_k_dim = m->lin_head_v_dim;
    int base = 1;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cfg, "kda_layer_index_base");
    if (b) {
        if (!cJSON_IsNumber(b) || (b->valuedouble != 0 && b->valuedouble != 1))
            return FAIL("\"linear_attn_config.kda_layer_index_base\": expected 0 or 1, found %s", ju_type_name(b));
        base = (int)b->valuedouble;
    }
    uint64_t kda[SGL_ATTN_MAX_LAYERS / 64] = {0};
    static const char *const lists[] = {"full_attn_layers", "kda_layers"};
    for (int k = 0; k < 2; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, lists[k]);
        if (!cJSON_IsArray(a))
            return FAIL("\"linear_attn_config.%s\": expected an array of layer ids, found %s", lists[k],
                        ju_type_name(a));
        int i = 0;
        for (const cJSON *e = a->child; e; e = e->next, i++) {
            double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (floor(v) != v || v < base || v > m->num_layers - 1 + base)
                return FAIL("\"linear_attn_config.%s[%d]\": expected a layer id in [%d, %d] (%d-based), found %s%s%g",
                            lists[k], i, base, m->num_layers - 1 + base, base, ju_type_name(e),
                            cJSON_IsNumber(e) ? " " : "", cJSON_IsNumber(e) ? v : 0.0);
            int layer = (int)v - base;
            uint64_t *mask = k == 0 ? m->full_attention_mask : kda;
            if (sgl_attn_model_layer_is_full(m, layer) || ((kda[layer >> 6] >> (layer & 63)) & 1))
                return FAIL("\"linear_attn_config.%s[%d]\": layer %d is listed twice", lists[k], i, (int)v);
            model_mask_set(mask, layer);
        }
    }
    m->hybrid_kind = SGL_ATTN_HYBRID_KDA;
    f->lin_k = f->lin_v = "linear_attn_config.num_heads";
    return SGL_ATTN_OK;
}

/* The Mamba2 shapes under each family's spellings. */
static int mamba_shapes(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    static const char *const heads[] = {"mamba_num_heads", "mamba_n_heads", "n_mamba_heads", NULL};
    static const char *const hdim[] = {"mamba_head_dim", "mamba_d_head", "mamba_headdim", NULL};
    static const char *const state[] = {"ssm_state_size", "mamba_d_state", "state_size", NULL};
    static const char *const groups[] = {"n_groups", "mamba_n_groups", "mamba_ngroups", "mamba_num_groups", NULL};
    static const char *const conv[] = {"conv_kernel", "mamba_d_conv", "conv_dimension", NULL};
    int rc;
    if ((rc = need_one_of(h, hdim, 1, 65535, &m->lin_head_v_dim, NULL, "the Mamba2 head dim P")) ||
        (rc = need_one_of(h, state, 1, 65535, &m->lin_head_k_dim, NULL, "the Mamba2 state size N")) ||
        (rc = need_one_of(h, groups, 1, 1 << 16, &m->lin_num_k_heads, &f->lin_k, "the Mamba2 group count")) ||
        (rc = need_one_of(h, conv, 1, 64, &m->lin_conv_kernel, NULL, "the Mamba2 conv1d width")))
        return rc;
    if (hf_first_key(h, heads))
        return need_one_of(h, heads, 1, 1 << 16, &m->lin_num_v_heads, &f->lin_v, "the Mamba2 head count");
    /* Zamba2 without n_mamba_heads: expand * hidden / head dim. */
    static const char *const expand[] = {"mamba_expand", "expansion_factor", NULL};
    int32_t e = 0, hidden = 0;
    static const char *const hid[] = {"hidden_size", NULL};
    if ((rc = need_one_of(h, expand, 1, 64, &e, NULL, "the Mamba2 expansion, for its head count")) ||
        (rc = need_one_of(h, hid, 1, 1 << 24, &hidden, NULL, "the hidden size, for the Mamba2 head count")))
        return rc;
    if (((int64_t)e * hidden) % m->lin_head_v_dim)
        return FAIL("mamba expand %d x hidden_size %d is not a multiple of the Mamba2 head dim %d", e, hidden,
                    m->lin_head_v_dim);
    m->lin_num_v_heads = (int32_t)((int64_t)e * hidden / m->lin_head_v_dim);
    f->lin_v = "mamba_expand * hidden_size / mamba_headdim";
    return SGL_ATTN_OK;
}

/* Nemotron-H: one character a layer: M mamba, * attention, - MLP, E MoE. */
static int nemotron_h(const hf_ctx *h, sgl_attn_model *m, model_fields *f, const cJSON *pat) {
    if (!cJSON_IsString(pat)) return FAIL("\"hybrid_override_pattern\": expected a string, found %s", ju_type_name(pat));
    const char *s = pat->valuestring;
    if ((int)strlen(s) != m->num_layers)
        return FAIL("\"hybrid_override_pattern\" has %zu characters, but the model has %d layers", strlen(s),
                    m->num_layers);
    for (int i = 0; s[i]; i++) {
        if (s[i] == '*') model_mask_set(m->full_attention_mask, i);
        else if (!strchr("M-E", s[i]))
            return FAIL("\"hybrid_override_pattern\"[%d] is '%c': expected M (Mamba2), * (attention), - (MLP) or E "
                        "(MoE)",
                        i, s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
    }
    m->hybrid_kind = SGL_ATTN_HYBRID_MAMBA2;
    return mamba_shapes(h, m, f);
}

/* layers_block_type, one entry a layer: Zamba2's "mamba" / "hybrid" (mamba
 * + shared attention), Nemotron-H's "mamba" / "attention" / "moe" / "mlp"
 * (the last two have no attention and no state). */
static int block_types(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    int rc;
    const cJSON *a = array_of_len(h, "layers_block_type", m->num_layers, &rc);
    if (!a) return rc;
    int i = 0, mamba = 0;
    uint64_t mask[SGL_ATTN_MAX_LAYERS / 64] = {0};
    for (const cJSON *e = a->child; e; e = e->next, i++) {
        const char *t = cJSON_IsString(e) ? e->valuestring : "";
        if (!strcmp(t, "hybrid") || !strcmp(t, "attention") || !strcmp(t, "full_attention"))
            model_mask_set(mask, i);
        else if (!strcmp(t, "mamba"))
            mamba = 1;
        else if (strcmp(t, "moe") && strcmp(t, "mlp"))
            return FAIL("\"layers_block_type[%d]\": expected \"mamba\", \"hybrid\", \"attention\", \"moe\" or \"mlp\", "
                        "found %s%s%s",
                        i, cJSON_IsString(e) ? "\"" : ju_type_name(e), t, cJSON_IsString(e) ? "\"" : "");
    }
    if (!mamba) return SGL_ATTN_OK; /* no state: every layer is what model_finish makes it */
    memcpy(m->full_attention_mask, mask, sizeof mask);
    m->hybrid_kind = SGL_ATTN_HYBRID_MAMBA2;
    return mamba_shapes(h, m, f);
}

/* Which hybrid kind a family's non-full layer type is. */
static int kind_for(const hf_ctx *h, const char *type) {
    if (!strcmp(type, "linear_attention")) {
        if (hf_type_is(h, "qwen3_next") || hf_type_is(h, "qwen3_5")) return SGL_ATTN_HYBRID_GDN;
        if (hf_type_is(h, "minimax")) return SGL_ATTN_HYBRID_LIGHTNING;
    }
    if (!strcmp(type, "conv") && hf_type_is(h, "lfm2")) return SGL_ATTN_HYBRID_SHORT_CONV;
    if (!strcmp(type, "mamba")) return SGL_ATTN_HYBRID_MAMBA2;
    return SGL_ATTN_HYBRID_CUSTOM;
}

/* A layer type that is softmax attention over the KV cache.  Anything else
 * is a linear kind: an unknown full type is refused later (no wrapper),
 * never run as the wrong computation. */
static int is_full_type(const char *t) {
    static const char *const full[] = {"full_attention",   "sliding_attention", "chunked_attention",
                                       "attention",        "global_attention",  "local_attention",
                                       "deepseek_sparse_attention", NULL};
    for (size_t i = 0; full[i]; i++)
        if (!strcmp(t, full[i])) return 1;
    return 0;
}

/* Shapes of the linear layers for a kind read from layer markers. */
static int linear_shapes(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    int rc;
    switch (m->hybrid_kind) {
    case SGL_ATTN_HYBRID_GDN: {
        want w[] = {{"linear_num_key_heads", 1, 1 << 16, &m->lin_num_k_heads},
                    {"linear_num_value_heads", 1, 1 << 16, &m->lin_num_v_heads},
                    {"linear_key_head_dim", 1, 65535, &m->lin_head_k_dim},
                    {"linear_value_head_dim", 1, 65535, &m->lin_head_v_dim},
                    {"linear_conv_kernel_dim", 1, 64, &m->lin_conv_kernel}};
        f->lin_k = "linear_num_key_heads";
        f->lin_v = "linear_num_value_heads";
        return need_all(h, w, 5, "a Gated DeltaNet layer's shape");
    }
    case SGL_ATTN_HYBRID_SHORT_CONV: {
        want w[] = {{"conv_L_cache", 1, 64, &m->lin_conv_kernel}, {"hidden_size", 1, 1 << 24, &m->lin_hidden}};
        f->lin_hidden = "hidden_size";
        return need_all(h, w, 2, "an LFM2 short-conv layer's shape");
    }
    case SGL_ATTN_HYBRID_LIGHTNING:
        /* Lightning state per head is head_dim x head_dim, heads = attention heads. */
        m->lin_num_k_heads = m->lin_num_v_heads = m->num_q_heads;
        m->lin_head_k_dim = m->lin_head_v_dim = m->head_dim_qk;
        f->lin_k = f->lin_v = "num_attention_heads";
        return SGL_ATTN_OK;
    case SGL_ATTN_HYBRID_MAMBA2: return mamba_shapes(h, m, f);
    default: {
        /* A custom kind: the linear_* fields when the config has them. */
        static const char *const keys[] = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                           "linear_value_head_dim", "linear_conv_kernel_dim"};
        int32_t *dst[] = {&m->lin_num_k_heads, &m->lin_num_v_heads, &m->lin_head_k_dim, &m->lin_head_v_dim,
                          &m->lin_conv_kernel};
        for (int k = 0; k < 5; k++) {
            int64_t v;
            int found;
            if ((rc = hf_int(h, keys[k], 0, 1 << 16, &v, &found))) return rc;
            if (found) *dst[k] = (int32_t)v;
        }
        f->lin_k = "linear_num_key_heads";
        f->lin_v = "linear_num_value_heads";
        return SGL_ATTN_OK;
    }
    }
}

static int set_kind(const hf_ctx *h, sgl_attn_model *m, int kind, const char *type) {
    m->hybrid_kind = (uint32_t)kind;
    if (kind != SGL_ATTN_HYBRID_CUSTOM) return SGL_ATTN_OK;
    if (strlen(type) >= sizeof m->hybrid_custom_kind)
        return FAIL("layer type \"%s\" is longer than %zu bytes: no wrapper can declare it", type,
                    sizeof m->hybrid_custom_kind - 1);
    str_copy(m->hybrid_custom_kind, sizeof m->hybrid_custom_kind, type);
    return SGL_ATTN_OK;
}

/* layer_types: full-attention types (is_full_type) and one linear kind. */
static int layer_types(const hf_ctx *h, sgl_attn_model *m, model_fields *f, const cJSON *types, int *done) {
    int rc;
    if (!array_of_len(h, "layer_types", m->num_layers, &rc)) return rc;
    const char *linear = NULL;
    int i = 0;
    uint64_t mask[SGL_ATTN_MAX_LAYERS / 64] = {0};
    for (const cJSON *e = types->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return FAIL("\"layer_types[%d]\": expected a string, found %s", i, ju_type_name(e));
        if (is_full_type(e->valuestring)) {
            model_mask_set(mask, i);
        } else if (!linear) {
            linear = e->valuestring;
        } else if (strcmp(linear, e->valuestring)) {
            return FAIL("\"layer_types\" mixes linear layer kinds \"%s\" and \"%s\": no one wrapper serves both", linear,
                        e->valuestring);
        }
    }
    if (!linear) return SGL_ATTN_OK; /* all softmax attention */
    memcpy(m->full_attention_mask, mask, sizeof mask);
    *done = 1;
    if ((rc = set_kind(h, m, kind_for(h, linear), linear))) return rc;
    return linear_shapes(h, m, f);
}

/* The full layers one marker implies must equal what layer_types says. */
static int agree(const hf_ctx *h, const sgl_attn_model *m, const uint64_t *mask, const char *field) {
    if (!memcmp(mask, m->full_attention_mask, SGL_ATTN_MAX_LAYERS / 8)) return SGL_ATTN_OK;
    return FAIL("\"%s\" and \"layer_types\" disagree on which layers are full attention", field);
}

static int read_markers(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    int rc, done = 0;
    const cJSON *n;
    if ((n = hf_item(h, "sparse_attention_config", NULL))) {
        if (!cJSON_IsObject(n))
            return FAIL("\"sparse_attention_config\": expected an object, found %s", ju_type_name(n));
        if ((rc = minimax_sparse(h, m, n, &done)) || done) return rc;
        memset(m->full_attention_mask, 0, sizeof m->full_attention_mask);
        memset(m->sparse_layer_mask, 0, sizeof m->sparse_layer_mask);
    } else {
        const cJSON *arch = cJSON_GetObjectItemCaseSensitive(h->root, "architectures");
        if (cJSON_IsArray(arch) && cJSON_IsString(arch->child) &&
            !strncmp(arch->child->valuestring, "MiniMaxM3Sparse", 15))
            return FAIL("architecture %s is MiniMax sparse attention, but the config has no "
                        "\"sparse_attention_config\" saying which layers are sparse",
                        arch->child->valuestring);
    }
    if ((n = hf_item(h, "linear_attn_config", NULL))) {
        if (!cJSON_IsObject(n)) return FAIL("\"linear_attn_config\": expected an object, found %s", ju_type_name(n));
        return kimi_linear(h, m, f, n);
    }
    if ((n = hf_item(h, "hybrid_override_pattern", NULL))) return nemotron_h(h, m, f, n);
    if (hf_item(h, "layers_block_type", NULL)) return block_types(h, m, f);
    if (hf_type_is(h, "falcon_h1")) {
        /* Attention and Mamba2 run side by side in every layer. */
        model_mask_all(m->full_attention_mask, m->num_layers);
        m->hybrid_kind = SGL_ATTN_HYBRID_MAMBA2;
        return mamba_shapes(h, m, f);
    }
    if ((n = hf_item(h, "attn_type_list", NULL))) {
        if (!array_of_len(h, "attn_type_list", m->num_layers, &rc)) return rc;
        int i = 0, lightning = 0;
        uint64_t mask[SGL_ATTN_MAX_LAYERS / 64] = {0};
        for (const cJSON *e = n->child; e; e = e->next, i++) {
            if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1))
                return FAIL("\"attn_type_list[%d]\": expected 0 (lightning) or 1 (softmax), found %s", i,
                            ju_type_name(e));
            if (e->valuedouble == 1) model_mask_set(mask, i);
            else lightning = 1;
        }
        /* MiniMax-M2 lists every layer as softmax: a plain model. */
        if (!lightning) return SGL_ATTN_OK;
        memcpy(m->full_attention_mask, mask, sizeof mask);
        m->hybrid_kind = SGL_ATTN_HYBRID_LIGHTNING;
        return linear_shapes(h, m, f);
    }
    const cJSON *types = hf_item(h, "layer_types", NULL);
    if (types) {
        if (!cJSON_IsArray(types)) return FAIL("\"layer_types\": expected an array, found %s", ju_type_name(types));
        if ((rc = layer_types(h, m, f, types, &done))) return rc;
    }
    int64_t interval;
    int found;
    if ((rc = hf_int(h, "full_attention_interval", 1, SGL_ATTN_MAX_LAYERS, &interval, &found))) return rc;
    if (found) {
        uint64_t mask[SGL_ATTN_MAX_LAYERS / 64] = {0};
        for (int i = 0; i < m->num_layers; i++)
            if ((i + 1) % interval == 0) model_mask_set(mask, i);
        if (done) return agree(h, m, mask, "full_attention_interval");
        if (interval > 1) {
            memcpy(m->full_attention_mask, mask, sizeof mask);
            const char *t = "linear_attention";
            if ((rc = set_kind(h, m, kind_for(h, t), t))) return rc;
            return linear_shapes(h, m, f);
        }
    }
    if ((n = hf_item(h, "full_attn_idxs", NULL))) {
        /* Early LFM2 configs list the attention layers instead of layer_types. */
        uint64_t mask[SGL_ATTN_MAX_LAYERS / 64] = {0};
        if (!cJSON_IsArray(n)) return FAIL("\"full_attn_idxs\": expected an array, found %s", ju_type_name(n));
        int i = 0;
        for (const cJSON *e = n->child; e; e = e->next, i++) {
            double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (floor(v) != v || v < 0 || v >= m->num_layers)
                return FAIL("\"full_attn_idxs[%d]\": expected a layer id in [0, %d), found %s", i, m->num_layers,
                            ju_type_name(e));
            model_mask_set(mask, (int)v);
        }
        if (done) return agree(h, m, mask, "full_attn_idxs");
        memcpy(m->full_attention_mask, mask, sizeof mask);
        const char *t = "conv";
        if ((rc = set_kind(h, m, kind_for(h, t), t))) return rc;
        return linear_shapes(h, m, f);
    }
    return SGL_ATTN_OK;
}

/* The marker that decided the layout, when layer_types is there too: both
 * say which layers are full attention, and they must say the same.  A config
 * whose fields contradict each other is refused, never resolved by reading
 * one of them first. */
int hf_read_hybrid(const hf_ctx *h, sgl_attn_model *m, model_fields *f) {
    int rc = read_markers(h, m, f);
    if (rc) return rc;
    const cJSON *types = hf_item(h, "layer_types", NULL);
    if (!types || hf_item(h, "sparse_attention_config", NULL)) return SGL_ATTN_OK;
    static const char *const markers[] = {"linear_attn_config", "hybrid_override_pattern", "layers_block_type",
                                          "attn_type_list",     "full_attention_interval", "full_attn_idxs", NULL};
    const char *other = NULL;
    for (size_t i = 0; markers[i] && !other; i++)
        if (hf_item(h, markers[i], NULL)) other = markers[i];
    /* A block list with no Mamba layer leaves the model plain (model_finish). */
    if (!other || (!strcmp(other, "layers_block_type") && m->hybrid_kind == SGL_ATTN_HYBRID_NONE)) return SGL_ATTN_OK;
    if (!array_of_len(h, "layer_types", m->num_layers, &rc)) return rc;
    uint64_t said[SGL_ATTN_MAX_LAYERS / 64] = {0};
    int i = 0;
    for (const cJSON *e = types->child; e; e = e->next, i++) {
        if (!cJSON_IsString(e)) return FAIL("\"layer_types[%d]\": expected a string, found %s", i, ju_type_name(e));
        if (is_full_type(e->valuestring)) model_mask_set(said, i);
    }
    const cJSON *e = types->child;
    for (i = 0; i < m->num_layers; i++, e = e->next) {
        int a = sgl_attn_model_layer_is_full(m, i) || m->hybrid_kind == SGL_ATTN_HYBRID_NONE;
        int b = (int)((said[i >> 6] >> (i & 63)) & 1u);
        if (a != b)
            return FAIL("\"%s\" and \"layer_types\" disagree on which layers are full attention: layer %d is %s by "
                        "\"%s\" but \"%s\" in \"layer_types\"",
                        other, i, a ? "full attention" : "not full attention", other, e->valuestring);
    }
    return SGL_ATTN_OK;
}
