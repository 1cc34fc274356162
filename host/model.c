/* model.c - the public model API: read a file and tell our format from a
 * Hugging Face config.json; the readers end with model_finish.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_util.h"
#include "model_policy.h"

#define MODEL_MAX_BYTES (16u << 20)

int host_model_import(const sgl_attn_model *in, sgl_attn_model *out, const char *who, char *err,
                      size_t err_size) {
    memset(out, 0, sizeof *out);
    if (!in) {
        snprintf(err, err_size, "%s: the model is NULL", who);
        return SGL_ATTN_E_INVALID;
    }
    if (in->struct_size < SGL_ATTN_MODEL_SIZE_V1_0) {
        snprintf(err, err_size, "%s: model struct_size %u, expected at least %u (ABI 1.0; fill it with "
                 "sgl_attn_model_init)", who, in->struct_size, SGL_ATTN_MODEL_SIZE_V1_0);
        return SGL_ATTN_E_INVALID;
    }
    size_t n = in->struct_size < sizeof *out ? in->struct_size : sizeof *out;
    memcpy(out, in, n);
    out->reserved_v1_1_tail_ = 0; /* an ABI 1.1 writer's padding: never read */
    out->struct_size = (uint32_t)sizeof *out;
    return SGL_ATTN_OK;
}

void sgl_attn_model_init(sgl_attn_model *m) {
    if (!m) return;
    model_reset(m);
    /* Every layer an engine may use is a full-attention layer. */
    model_mask_all(m->full_attention_mask, SGL_ATTN_MAX_LAYERS);
}

int sgl_attn_model_from_json(const char *json, size_t len, const char *origin, int tp_size, sgl_attn_model *m,
                             char *err, size_t err_size) {
    if (!origin) origin = "(model json)";
    if (!json || !m) {
        str_printf(err, err_size, "%s: no text or no model to fill", origin);
        return SGL_ATTN_E_INVALID;
    }
    ju_doc d;
    int rc = ju_parse(&d, json, len, origin, err, err_size);
    if (rc) return rc;
    const cJSON *root = d.root;
    sgl_attn_model tmp; /* *m changes only on success */
    if (!cJSON_IsObject(root)) {
        rc = model_fail(err, err_size, origin, "expected a JSON object at the top level, found %s",
                        ju_type_name(root));
    } else if (cJSON_GetObjectItemCaseSensitive(root, "sglattn_model")) {
        rc = model_from_ours(root, origin, tp_size, &tmp, err, err_size);
    } else if (cJSON_GetObjectItemCaseSensitive(root, "model_type") ||
               cJSON_GetObjectItemCaseSensitive(root, "architectures")) {
        rc = model_from_hf(root, origin, tp_size, &tmp, err, err_size);
    } else {
        rc = model_fail(err, err_size, origin,
                        "not a model description: expected our format (key \"sglattn_model\", docs/model.md) or a "
                        "Hugging Face config.json (key \"model_type\" or \"architectures\")");
    }
    ju_doc_free(&d);
    if (rc == SGL_ATTN_OK) *m = tmp;
    return rc;
}

int sgl_attn_model_from_file(const char *path, int tp_size, sgl_attn_model *m, char *err, size_t err_size) {
    if (!path || !m) {
        str_printf(err, err_size, "no model file given");
        return SGL_ATTN_E_INVALID;
    }
    /* A model directory (a Hugging Face checkout) stands for its config.json. */
    char dir_config[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/') n--;
        if (n + sizeof "/config.json" > sizeof dir_config) {
            str_printf(err, err_size, "%s: directory name longer than %zu bytes", path,
                       sizeof dir_config - sizeof "/config.json");
            return SGL_ATTN_E_INVALID;
        }
        snprintf(dir_config, sizeof dir_config, "%.*s/config.json", (int)n, path);
        if (stat(dir_config, &st) != 0) {
            str_printf(err, err_size, "%s: a directory without config.json (expected a model file, or a model "
                                      "directory holding config.json)", path);
            return SGL_ATTN_E_NOT_FOUND;
        }
        path = dir_config;
    }
    char *buf;
    size_t n;
    int rc = ju_read_file(path, MODEL_MAX_BYTES, "model file (our JSON or a config.json)", &buf, &n, err, err_size);
    if (rc) return rc;
    rc = sgl_attn_model_from_json(buf, n, path, tp_size, m, err, err_size);
    free(buf);
    return rc;
}
