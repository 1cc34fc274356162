/*
 * model_policy.h - what the model readers (ours, Hugging Face) share: the
 * common finish step (tensor-parallel split, checks, layer masks) and
 * error helpers.  Not installed.
 */
#ifndef SGL_ATTN_MODEL_POLICY_H
#define SGL_ATTN_MODEL_POLICY_H

#include <cjson/cJSON.h>

#include "host_internal.h"

/* The file's own names for the fields tp_size divides, for messages. */
typedef struct model_fields {
    const char *q_heads;    /* "num_attention_heads" */
    const char *kv_heads;   /* "num_key_value_heads" */
    const char *lin_k;      /* "linear_num_key_heads", "n_groups"... */
    const char *lin_v;      /* "linear_num_value_heads", "mamba_num_heads"... */
    const char *lin_hidden; /* "hidden_size" (short_conv) */
} model_fields;

/* ------------------------------------------------------ model_finish.c */

/* Zero `m` with the defaults of sgl_attn_model_init. */
void model_reset(sgl_attn_model *m);
void model_mask_set(uint64_t *mask, int layer);
void model_mask_all(uint64_t *mask, int n_layers);
int model_mask_count(const uint64_t *mask);

/* After a reader: divide head counts by tp (refusing what does not divide,
 * naming the field), check every field, fill the full-attention mask of a
 * plain model.  Head counts are whole-model on entry, per rank on return. */
int model_finish(sgl_attn_model *m, const char *origin, int tp, const model_fields *f, char *err,
                 size_t err_size);

/* A non-negative number a float field holds as itself: 0, or in
 * [FLT_MIN, FLT_MAX] (no overflow to inf, no underflow to 0). */
int model_float_ok(double v);

/* "origin: message" into err; returns SGL_ATTN_E_INVALID. */
int model_fail(char *err, size_t err_size, const char *origin, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------ Hugging Face */

/* A config.json being read: fields come from text_config first, then the root. */
typedef struct hf_ctx {
    const cJSON *root;
    const cJSON *text; /* text_config, or the root */
    const char *origin;
    char *err;
    size_t err_size;
    const char *model_type; /* root's, else text_config's; "" when none */
    const char *text_type;  /* text_config's model_type, else model_type */
} hf_ctx;

/* hf_fields.c.  The field (NULL when absent or null) and its name as
 * written ("text_config.x"). */
const cJSON *hf_item(const hf_ctx *h, const char *key, const char **where);
/* Integer field: 0 ok (*found says whether present), else an error naming it. */
int hf_int(const hf_ctx *h, const char *key, int64_t lo, int64_t hi, int64_t *out, int *found);
/* As hf_int, but absence is an error that says what the field is for. */
int hf_need_int(const hf_ctx *h, const char *key, int64_t lo, int64_t hi, int64_t *out, const char *why);
/* The first of several spellings that is present (NULL if none). */
const char *hf_first_key(const hf_ctx *h, const char *const *keys);
int hf_type_is(const hf_ctx *h, const char *prefix); /* model_type or text type starts with prefix */

/* The hybrid families (hf_hybrid_policy.c): set hybrid_kind, the masks and
 * the lin_* fields, or leave the model plain. */
int hf_read_hybrid(const hf_ctx *h, sgl_attn_model *m, model_fields *f);

#endif
