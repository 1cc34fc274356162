/* hf_fields.c - one field of a Hugging Face config.json (text_config
 * first, then the root), with errors that name it.  Shared by model_hf.c
 * and hf_hybrid_policy.c; a leaf: it calls neither. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "model_policy.h"

const cJSON *hf_item(const hf_ctx *h, const char *key, const char **where) {
    static const char *const prefix = "text_config.";
    const cJSON *n = NULL;
    if (h->text != h->root) {
        n = cJSON_GetObjectItemCaseSensitive(h->text, key);
        if (n && !cJSON_IsNull(n)) {
            if (where) *where = prefix;
            return n;
        }
    }
    n = cJSON_GetObjectItemCaseSensitive(h->root, key);
    if (where) *where = "";
    return n && !cJSON_IsNull(n) ? n : NULL;
}

/* Fields a real config.json leaves to its transformers class default, by
 * text model_type (gemma-3-4b-it's text_config names no head counts). */
static const struct {
    const char *type, *key;
    int64_t value;
} class_defaults[] = {
    {"gemma3_text", "num_attention_heads", 8},
    {"gemma3_text", "num_key_value_heads", 4},
    {"gemma3_text", "head_dim", 256},
};

static int class_default(const hf_ctx *h, const char *key, int64_t *out) {
    for (size_t i = 0; i < sizeof class_defaults / sizeof class_defaults[0]; i++)
        if (!strcmp(h->text_type, class_defaults[i].type) && !strcmp(key, class_defaults[i].key)) {
            *out = class_defaults[i].value;
            return 1;
        }
    return 0;
}

int hf_int(const hf_ctx *h, const char *key, int64_t lo, int64_t hi, int64_t *out, int *found) {
    const char *where;
    const cJSON *n = hf_item(h, key, &where);
    *found = n != NULL;
    if (!n) {
        *found = class_default(h, key, out);
        return SGL_ATTN_OK;
    }
    if (!cJSON_IsNumber(n) || floor(n->valuedouble) != n->valuedouble || n->valuedouble < (double)lo ||
        n->valuedouble > (double)hi) {
        char got[64];
        if (cJSON_IsNumber(n)) snprintf(got, sizeof got, "%g", n->valuedouble);
        else snprintf(got, sizeof got, "%s", ju_type_name(n));
        return model_fail(h->err, h->err_size, h->origin, "\"%s%s\": expected an integer in [%lld, %lld], found %s",
                          where, key, (long long)lo, (long long)hi, got);
    }
    *out = (int64_t)n->valuedouble;
    return SGL_ATTN_OK;
}

int hf_need_int(const hf_ctx *h, const char *key, int64_t lo, int64_t hi, int64_t *out, const char *why) {
    int found, rc = hf_int(h, key, lo, hi, out, &found);
    if (rc || found) return rc;
    return model_fail(h->err, h->err_size, h->origin, "missing \"%s\" (%s)", key, why);
}

const char *hf_first_key(const hf_ctx *h, const char *const *keys) {
    int64_t v;
    for (size_t i = 0; keys[i]; i++)
        if (hf_item(h, keys[i], NULL)) return keys[i];
    for (size_t i = 0; keys[i]; i++)
        if (class_default(h, keys[i], &v)) return keys[i];
    return NULL;
}

int hf_type_is(const hf_ctx *h, const char *prefix) {
    size_t n = strlen(prefix);
    return !strncmp(h->model_type, prefix, n) || !strncmp(h->text_type, prefix, n);
}
