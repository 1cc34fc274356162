/*
 * rules.h - the conf file as data (docs/conf.md), shared by conf.c, which
 * fills it, and the selection, which reads it.  Not installed.
 *
 * Everything lives in one arena and is immutable after conf_parse, so any
 * number of threads may read one conf at once.
 */
#ifndef SGL_ATTN_RULES_H
#define SGL_ATTN_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "host_internal.h"
#include "json_util.h"

/* A condition on the model and the device.  -1 / empty = any. */
typedef struct rule_clause {
    int mla;             /* model is MLA */
    int encoder_decoder; /* model has cross attention */
    int dsa;             /* model uses DeepSeek sparse attention (index_topk > 0) */
    int dual_chunk;      /* model uses dual chunk attention (dca_chunk_size > 0) */
    int sinks;           /* model has attention sinks */
    int diff_head_dims;  /* qk head dim != v head dim */
    int has_arch;        /* arch_min / arch_max given: the device must report an arch */
    int arch_min_major, arch_min_minor; /* -1 = unbounded */
    int arch_max_major, arch_max_minor; /* minor 999 = any minor of that major */
    size_t n_q_heads_in;
    int32_t q_heads_in[SGL_ATTN_MAX_LIST]; /* per-rank q heads in this set */
} rule_clause;

/* One row: scope (platforms) + condition (one clause or any_of) + message. */
typedef struct rule_row {
    const char *id;
    uint32_t platforms;  /* bit (1 << platform); 0 = every platform */
    rule_clause *any_of; /* the condition holds when any clause does */
    size_t n_any;
    const char *message; /* may contain {alternative} */
    /* hybrid allow rows: the backends (sglang names or plugins) allowed */
    const char **backends;
    size_t n_backends;
    /* defaults rows: names to prefer, in order */
    const char **prefer;
    size_t n_prefer;
    /* model rules: the alias whose plugins serve models matching the row */
    const char *served_by;
    /* model rules: a name asked for other than served_by is refused too
     * (sglang's dual chunk rule is about the name, not the plugin) */
    int binds_name;
} rule_row;

typedef struct conf_alias {
    const char *name;
    const char **plugins; /* any platform */
    size_t n_plugins;
    int has_platform[SGL_ATTN_PLATFORM_COUNT_]; /* a per-platform list replaces `plugins` there */
    const char **platform_plugins[SGL_ATTN_PLATFORM_COUNT_];
    size_t n_platform_plugins[SGL_ATTN_PLATFORM_COUNT_];
    rule_row *requires;
    size_t n_requires;
    const char *deprecated_for; /* use that alias, after warning with `message` */
    const char *message;        /* deprecation warning, or why nothing serves it here */
} conf_alias;

typedef struct conf_priority_entry {
    const char *plugin;
    int32_t score;
} conf_priority_entry;

typedef struct conf_option {
    const char *plugin, *key, *value; /* value as a string: "64", "true", "fast" */
} conf_option;

typedef struct conf_hybrid {
    int present;
    const char *custom_kind; /* for "custom:<name>" sections */
    rule_row *refuse;        /* the model/platform is refused when a row holds */
    size_t n_refuse;
    rule_row *allow;         /* in scope, the inner must be one of `backends` */
    size_t n_allow;
} conf_hybrid;

struct conf {
    ju_arena arena;
    char origin[512];
    conf_alias *aliases;
    size_t n_aliases;
    const conf_alias **alias_by_name; /* the same, sorted by name (conf_find_alias) */
    conf_priority_entry *priority;
    size_t n_priority;
    const char **disabled; /* fnmatch globs */
    size_t n_disabled;
    rule_row *defaults[SGL_ATTN_PLATFORM_COUNT_];
    size_t n_defaults[SGL_ATTN_PLATFORM_COUNT_];
    const char **fallback; /* tried, in order, when nothing else serves automatically */
    size_t n_fallback;
    conf_hybrid hybrid[SGL_ATTN_HYBRID_COUNT_]; /* by kind; CUSTOM uses `custom` below */
    conf_hybrid *custom;
    size_t n_custom;
    rule_row *model_rules;
    size_t n_model_rules;
    int allow_unsafe_paths;
    conf_option *options;
    size_t n_options;
    const char *validation_layer; /* NULL: any ROLE_LAYER plugin */
};

/* Lookups (c may be NULL: nothing found). */
const conf_alias *conf_find_alias(const conf *c, const char *name);
const conf_hybrid *conf_hybrid_rules(const conf *c, int kind, const char *custom_kind);

/* Names -> enums (-1 when unknown); the other way is sgl_attn_*_name(). */
int pol_platform_from_name(const char *name);
int pol_hybrid_kind_from_name(const char *name);
const char *pol_dtype_name(uint32_t dt_bit);
uint32_t pol_dtype_from_name(const char *name); /* "bf16", "bfloat16", "float16"... ; 0 unknown */

/* Plugin and alias names: [a-z0-9_]{1,63}. */
int pol_valid_name(const char *s);

/* ------------------------------------------------- parsing (conf*.c) */

typedef struct conf_parser {
    const ju_doc *d;
    conf *c;
    char *err;
    size_t err_size;
} conf_parser;

enum { ROW_REQUIRE, ROW_REFUSE, ROW_ALLOW, ROW_DEFAULT, ROW_MODEL };

/* An array of rows of one kind (which keys each kind takes: docs/conf.md). */
int conf_parse_rows(conf_parser *cp, const ju_path *p, const cJSON *arr, int kind, rule_row **out, size_t *n);
/* An array of plugin/alias names. */
int conf_parse_names(conf_parser *cp, const ju_path *p, const cJSON *arr, const char ***out, size_t *n);
/* A string value copied into the arena. */
int conf_parse_string(conf_parser *cp, const ju_path *p, const cJSON *n, const char **out);

#endif
