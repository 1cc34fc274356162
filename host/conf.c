/* conf.c - the conf file (docs/conf.md): where it is found, its strict
 * reading, and the queries the rest of the host asks of it. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rules.h"

#define CONF_MAX_BYTES (4u << 20)
#define NOMEM(cp) (str_printf((cp)->err, (cp)->err_size, "%s: out of memory", (cp)->d->origin), SGL_ATTN_E_NOMEM)

/* ---------------------------------------------------------------- aliases */

static int parse_alias(conf_parser *cp, const ju_path *p, const cJSON *obj, conf_alias *a) {
    static const char *const keys[] = {"plugins", "requires", "deprecated_for", "message", "platforms", "_comment",
                                       NULL};
    char where[256];
    ju_path_str(p, where, sizeof where);
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an alias object", cp->err, cp->err_size);
    if (rc || (rc = ju_check_keys(cp->d, p, obj, keys, cp->err, cp->err_size))) return rc;
    if (!(a->name = ju_arena_strdup(&cp->c->arena, obj->string))) return NOMEM(cp);
    if (!pol_valid_name(a->name))
        return ju_fail(cp->d, p, 1, cp->err, cp->err_size, "alias \"%s\": a name is 1 to %d characters [a-z0-9_]",
                       a->name, SGL_ATTN_NAME_MAX);
    for (const cJSON *e = obj->child; e; e = e->next) {
        ju_path kp = ju_key(p, e->string);
        if (!strcmp(e->string, "plugins")) {
            rc = conf_parse_names(cp, &kp, e, &a->plugins, &a->n_plugins);
        } else if (!strcmp(e->string, "requires")) {
            rc = conf_parse_rows(cp, &kp, e, ROW_REQUIRE, &a->requires, &a->n_requires);
        } else if (!strcmp(e->string, "deprecated_for")) {
            rc = conf_parse_string(cp, &kp, e, &a->deprecated_for);
        } else if (!strcmp(e->string, "message")) {
            rc = conf_parse_string(cp, &kp, e, &a->message);
        } else if (!strcmp(e->string, "platforms")) {
            rc = ju_want(cp->d, &kp, e, cJSON_Object, "an object of platform -> plugin names", cp->err, cp->err_size);
            for (const cJSON *pl = rc ? NULL : e->child; pl && !rc; pl = pl->next) {
                ju_path pp = ju_key(&kp, pl->string);
                int plat = pol_platform_from_name(pl->string);
                if (plat < 0)
                    return ju_fail(cp->d, &pp, 1, cp->err, cp->err_size,
                                   "unknown key \"%s\" in \"%s.platforms\" (expected one of: cpu, cuda, hip, xpu, npu)",
                                   pl->string, where);
                if (a->has_platform[plat])
                    return ju_fail(cp->d, &pp, 1, cp->err, cp->err_size, "duplicate key \"%s\" in \"%s.platforms\"",
                                   pl->string, where);
                a->has_platform[plat] = 1;
                rc = conf_parse_names(cp, &pp, pl, &a->platform_plugins[plat], &a->n_platform_plugins[plat]);
            }
        }
        if (rc) return rc;
    }
    int any_platform = 0;
    for (int i = 0; i < SGL_ATTN_PLATFORM_COUNT_; i++) any_platform |= a->has_platform[i];
    if (!a->n_plugins && !any_platform && !a->deprecated_for && !a->message)
        return ju_fail(cp->d, p, 1, cp->err, cp->err_size,
                       "alias \"%s\": expected \"plugins\", \"platforms\" or \"deprecated_for\" (an alias that "
                       "nothing serves here needs a \"message\" saying why)",
                       a->name);
    if (a->deprecated_for && !a->message)
        return ju_fail(cp->d, p, 1, cp->err, cp->err_size,
                       "alias \"%s\": \"deprecated_for\" needs a \"message\" (the warning users see)", a->name);
    return SGL_ATTN_OK;
}

static int alias_cmp(const void *a, const void *b) {
    return strcmp((*(const conf_alias *const *)a)->name, (*(const conf_alias *const *)b)->name);
}

static int parse_aliases(conf_parser *cp, const ju_path *p, const cJSON *obj) {
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an object of alias name -> alias", cp->err, cp->err_size);
    if (rc) return rc;
    size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;
    cp->c->aliases = ju_arena_alloc(&cp->c->arena, (n ? n : 1) * sizeof *cp->c->aliases);
    if (!cp->c->aliases) return NOMEM(cp);
    for (const cJSON *e = obj->child; e; e = e->next, i++) {
        ju_path ap = ju_key(p, e->string);
        if ((rc = parse_alias(cp, &ap, e, &cp->c->aliases[i]))) return rc;
    }
    cp->c->n_aliases = n;
    /* Sorted for lookups by name: a conf of many aliases and model rules
     * stays n log n to read. */
    if (!(cp->c->alias_by_name = ju_arena_alloc(&cp->c->arena, (n ? n : 1) * sizeof *cp->c->alias_by_name)))
        return NOMEM(cp);
    for (i = 0; i < n; i++) cp->c->alias_by_name[i] = &cp->c->aliases[i];
    if (n) qsort(cp->c->alias_by_name, n, sizeof *cp->c->alias_by_name, alias_cmp);
    /* deprecated_for names a live alias (no chains, so no loops). */
    for (i = 0; i < n; i++) {
        const conf_alias *a = &cp->c->aliases[i];
        if (!a->deprecated_for) continue;
        const conf_alias *t = conf_find_alias(cp->c, a->deprecated_for);
        if (!t || t->deprecated_for) {
            ju_path ap = ju_key(p, a->name);
            ju_path dp = ju_key(&ap, "deprecated_for");
            return ju_fail(cp->d, &dp, 0, cp->err, cp->err_size,
                           "\"%s.%s.deprecated_for\": \"%s\" is %s (expected an alias defined here that is not itself "
                           "deprecated)",
                           "aliases", a->name, a->deprecated_for, t ? "deprecated too" : "not an alias");
        }
    }
    return SGL_ATTN_OK;
}

/* ------------------------------------------------------------- the rest */

static int parse_priority(conf_parser *cp, const ju_path *p, const cJSON *obj) {
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an object of plugin name -> score", cp->err, cp->err_size);
    if (rc) return rc;
    size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;
    conf *c = cp->c;
    if (!(c->priority = ju_arena_alloc(&c->arena, (n ? n : 1) * sizeof *c->priority))) return NOMEM(cp);
    for (const cJSON *e = obj->child; e; e = e->next, i++) {
        ju_path kp = ju_key(p, e->string);
        int64_t v;
        if (!pol_valid_name(e->string))
            return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size, "\"%s\" is not a plugin name ([a-z0-9_]{1,%d})",
                           e->string, SGL_ATTN_NAME_MAX);
        if ((rc = ju_get_int(cp->d, &kp, e, -1000000, 1000000, &v, cp->err, cp->err_size))) return rc;
        c->priority[i].plugin = ju_arena_strdup(&c->arena, e->string);
        if (!c->priority[i].plugin) return NOMEM(cp);
        c->priority[i].score = (int32_t)v;
    }
    c->n_priority = n;
    return SGL_ATTN_OK;
}

static int parse_disabled(conf_parser *cp, const ju_path *p, const cJSON *arr) {
    int rc = ju_want(cp->d, p, arr, cJSON_Array, "an array of plugin-name globs", cp->err, cp->err_size);
    if (rc) return rc;
    size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
    conf *c = cp->c;
    if (!(c->disabled = ju_arena_alloc(&c->arena, (n ? n : 1) * sizeof *c->disabled))) return NOMEM(cp);
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        ju_path ep = ju_idx(p, (int)i);
        if ((rc = ju_want(cp->d, &ep, e, cJSON_String, "a glob (fnmatch) string", cp->err, cp->err_size))) return rc;
        if (!e->valuestring[0])
            return ju_fail(cp->d, &ep, 0, cp->err, cp->err_size, "\"disabled[%zu]\": expected a non-empty glob", i);
        if (!(c->disabled[i] = ju_arena_strdup(&c->arena, e->valuestring))) return NOMEM(cp);
    }
    c->n_disabled = n;
    return SGL_ATTN_OK;
}

static int parse_defaults(conf_parser *cp, const ju_path *p, const cJSON *obj) {
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an object of platform -> rows", cp->err, cp->err_size);
    for (const cJSON *e = rc ? NULL : obj->child; e && !rc; e = e->next) {
        ju_path kp = ju_key(p, e->string);
        int plat = pol_platform_from_name(e->string);
        if (plat < 0)
            return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size,
                           "unknown key \"%s\" in \"defaults\" (expected one of: cpu, cuda, hip, xpu, npu)", e->string);
        if (cp->c->defaults[plat])
            return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size, "duplicate key \"%s\" in \"defaults\"", e->string);
        rc = conf_parse_rows(cp, &kp, e, ROW_DEFAULT, &cp->c->defaults[plat], &cp->c->n_defaults[plat]);
    }
    return rc;
}

static int parse_hybrid(conf_parser *cp, const ju_path *p, const cJSON *obj) {
    static const char *const keys[] = {"refuse", "allow", "_comment", NULL};
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an object of hybrid kind -> rules", cp->err, cp->err_size);
    if (rc) return rc;
    conf *c = cp->c;
    size_t n_custom = 0;
    for (const cJSON *e = obj->child; e; e = e->next)
        if (!strncmp(e->string, "custom:", 7)) n_custom++;
    if (!(c->custom = ju_arena_alloc(&c->arena, (n_custom ? n_custom : 1) * sizeof *c->custom))) return NOMEM(cp);
    for (const cJSON *e = obj->child; e; e = e->next) {
        ju_path kp = ju_key(p, e->string);
        conf_hybrid *h;
        if (!strncmp(e->string, "custom:", 7) && pol_valid_name(e->string + 7)) {
            h = &c->custom[c->n_custom++];
            if (!(h->custom_kind = ju_arena_strdup(&c->arena, e->string + 7))) return NOMEM(cp);
        } else {
            int kind = pol_hybrid_kind_from_name(e->string);
            if (kind < 0 || kind == SGL_ATTN_HYBRID_CUSTOM)
                return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size,
                               "unknown key \"%s\" in \"hybrid\" (expected one of: gdn, mamba2, short_conv, kda, "
                               "lightning, minimax_sparse, custom:<kind>)",
                               e->string);
            h = &c->hybrid[kind];
            if (h->present)
                return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size, "duplicate key \"%s\" in \"hybrid\"", e->string);
        }
        h->present = 1;
        if ((rc = ju_want(cp->d, &kp, e, cJSON_Object, "an object with refuse and allow", cp->err, cp->err_size)) ||
            (rc = ju_check_keys(cp->d, &kp, e, keys, cp->err, cp->err_size)))
            return rc;
        for (const cJSON *r = e->child; r; r = r->next) {
            ju_path rp = ju_key(&kp, r->string);
            if (!strcmp(r->string, "refuse")) rc = conf_parse_rows(cp, &rp, r, ROW_REFUSE, &h->refuse, &h->n_refuse);
            else if (!strcmp(r->string, "allow")) rc = conf_parse_rows(cp, &rp, r, ROW_ALLOW, &h->allow, &h->n_allow);
            if (rc) return rc;
        }
    }
    return SGL_ATTN_OK;
}

/* A number as the plugin will read it: integers without a point. */
static void number_text(double v, char *buf, size_t size) {
    if (floor(v) == v && fabs(v) < 9e15) snprintf(buf, size, "%lld", (long long)v);
    else snprintf(buf, size, "%.17g", v);
}

static int parse_options(conf_parser *cp, const ju_path *p, const cJSON *obj) {
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "an object of plugin name -> options", cp->err, cp->err_size);
    if (rc) return rc;
    conf *c = cp->c;
    size_t total = 0;
    for (const cJSON *e = obj->child; e; e = e->next)
        if (cJSON_IsObject(e)) total += (size_t)cJSON_GetArraySize(e);
    if (!(c->options = ju_arena_alloc(&c->arena, (total ? total : 1) * sizeof *c->options))) return NOMEM(cp);
    for (const cJSON *e = obj->child; e; e = e->next) {
        ju_path kp = ju_key(p, e->string);
        if (!pol_valid_name(e->string))
            return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size, "\"%s\" is not a plugin name ([a-z0-9_]{1,%d})",
                           e->string, SGL_ATTN_NAME_MAX);
        if ((rc = ju_want(cp->d, &kp, e, cJSON_Object, "an object of option -> string, number or boolean", cp->err,
                          cp->err_size)))
            return rc;
        for (const cJSON *o = e->child; o; o = o->next) {
            ju_path op = ju_key(&kp, o->string);
            if ((rc = ju_want(cp->d, &op, o, cJSON_String | cJSON_Number | cJSON_True | cJSON_False,
                              "a string, number or boolean", cp->err, cp->err_size)))
                return rc;
            char num[64];
            const char *text = cJSON_IsString(o) ? o->valuestring : cJSON_IsTrue(o) ? "true" : cJSON_IsFalse(o) ? "false" : num;
            if (cJSON_IsNumber(o)) number_text(o->valuedouble, num, sizeof num);
            conf_option *opt = &c->options[c->n_options++];
            opt->plugin = ju_arena_strdup(&c->arena, e->string);
            opt->key = ju_arena_strdup(&c->arena, o->string);
            opt->value = ju_arena_strdup(&c->arena, text);
            if (!opt->plugin || !opt->key || !opt->value) return NOMEM(cp);
        }
    }
    return SGL_ATTN_OK;
}

static int parse_root(conf_parser *cp) {
    static const char *const keys[] = {"sglattn_conf", "aliases",  "priority",     "disabled",
                                       "defaults",     "fallback", "hybrid",       "model_rules",
                                       "allow_unsafe_paths", "plugin_options", "validation_layer", "_comment", NULL};
    const cJSON *root = cp->d->root;
    ju_path top = {0};
    int rc = ju_want(cp->d, &top, root, cJSON_Object, "an object at the top level", cp->err, cp->err_size);
    if (rc || (rc = ju_check_keys(cp->d, &top, root, keys, cp->err, cp->err_size))) return rc;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "sglattn_conf");
    if (!ver)
        return ju_fail(cp->d, &top, 0, cp->err, cp->err_size,
                       "missing key \"sglattn_conf\" (expected \"sglattn_conf\": 1, the format version)");
    for (const cJSON *e = root->child; e; e = e->next) {
        ju_path kp = ju_key(&top, e->string);
        const char *k = e->string;
        conf *c = cp->c;
        if (!strcmp(k, "sglattn_conf")) {
            int64_t v;
            if ((rc = ju_get_int(cp->d, &kp, e, 1, 1, &v, cp->err, cp->err_size))) return rc;
        } else if (!strcmp(k, "aliases")) {
            rc = parse_aliases(cp, &kp, e);
        } else if (!strcmp(k, "priority")) {
            rc = parse_priority(cp, &kp, e);
        } else if (!strcmp(k, "disabled")) {
            rc = parse_disabled(cp, &kp, e);
        } else if (!strcmp(k, "defaults")) {
            rc = parse_defaults(cp, &kp, e);
        } else if (!strcmp(k, "fallback")) {
            rc = conf_parse_names(cp, &kp, e, &c->fallback, &c->n_fallback);
        } else if (!strcmp(k, "hybrid")) {
            rc = parse_hybrid(cp, &kp, e);
        } else if (!strcmp(k, "model_rules")) {
            rc = conf_parse_rows(cp, &kp, e, ROW_MODEL, &c->model_rules, &c->n_model_rules);
        } else if (!strcmp(k, "allow_unsafe_paths")) {
            rc = ju_get_bool(cp->d, &kp, e, &c->allow_unsafe_paths, cp->err, cp->err_size);
        } else if (!strcmp(k, "plugin_options")) {
            rc = parse_options(cp, &kp, e);
        } else if (!strcmp(k, "validation_layer")) {
            rc = conf_parse_string(cp, &kp, e, &c->validation_layer);
            if (!rc && !pol_valid_name(c->validation_layer))
                rc = ju_fail(cp->d, &kp, 0, cp->err, cp->err_size, "\"validation_layer\": expected a plugin name");
        } else if (!strcmp(k, "_comment")) {
            rc = ju_want(cp->d, &kp, e, cJSON_String | cJSON_Array, "a string or an array of strings", cp->err,
                         cp->err_size);
        }
        if (rc) return rc;
    }
    /* Model rules name an alias that exists here. */
    for (size_t i = 0; i < cp->c->n_model_rules; i++) {
        const rule_row *r = &cp->c->model_rules[i];
        if (!conf_find_alias(cp->c, r->served_by)) {
            ju_path mp = ju_key(&top, "model_rules");
            ju_path rp = ju_idx(&mp, (int)i);
            ju_path sp = ju_key(&rp, "served_by");
            return ju_fail(cp->d, &sp, 0, cp->err, cp->err_size,
                           "\"model_rules[%zu].served_by\": \"%s\" is not an alias defined in \"aliases\"", i,
                           r->served_by);
        }
    }
    return SGL_ATTN_OK;
}

int conf_parse(const char *text, size_t len, const char *origin, conf **out, char *err, size_t err_size) {
    *out = NULL;
    conf *c = calloc(1, sizeof *c);
    if (!c) {
        str_printf(err, err_size, "%s: out of memory", origin ? origin : "conf");
        return SGL_ATTN_E_NOMEM;
    }
    str_copy(c->origin, sizeof c->origin, origin ? origin : "(conf)");
    ju_doc d;
    int rc = ju_parse(&d, text, len, c->origin, err, err_size);
    if (rc == SGL_ATTN_OK) {
        conf_parser cp = {.d = &d, .c = c, .err = err, .err_size = err_size};
        rc = parse_root(&cp);
    }
    ju_doc_free(&d);
    if (rc) {
        conf_free(c);
        return rc;
    }
    *out = c;
    return SGL_ATTN_OK;
}

void conf_free(conf *c) {
    if (!c) return;
    ju_arena_free(&c->arena);
    free(c);
}

/* --------------------------------------------------------------- loading */

static int load_path(const char *path, conf **out, char *used, size_t used_size, char *err, size_t err_size) {
    char *text;
    size_t len;
    int rc = ju_read_file(path, CONF_MAX_BYTES, "conf file", &text, &len, err, err_size);
    if (rc) return rc;
    rc = conf_parse(text, len, path, out, err, err_size);
    free(text);
    if (rc == SGL_ATTN_OK) str_copy(used, used_size, path);
    return rc;
}

static int is_file(const char *path) {
    struct stat st;
    return path[0] && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int conf_load(const char *explicit_path, conf **out, char *used_path, size_t used_size, char *err, size_t err_size) {
    *out = NULL;
    str_copy(used_path, used_size, "");
    if (explicit_path) return load_path(explicit_path, out, used_path, used_size, err, err_size);
    const char *env = secure_getenv("SGL_ATTN_CONF");
    if (env && env[0]) {
        int rc = load_path(env, out, used_path, used_size, err, err_size);
        if (rc == SGL_ATTN_E_NOT_FOUND) {
            char why[512];
            str_copy(why, sizeof why, err);
            str_printf(err, err_size, "SGL_ATTN_CONF=%s: %s", env, why);
        }
        return rc;
    }
    char beside[4096];
    search_path_default_conf(beside, sizeof beside);
    if (is_file(beside)) return load_path(beside, out, used_path, used_size, err, err_size);
#ifdef SGL_ATTN_SOURCE_CONF
    if (is_file(SGL_ATTN_SOURCE_CONF)) return load_path(SGL_ATTN_SOURCE_CONF, out, used_path, used_size, err, err_size);
#endif
    return SGL_ATTN_OK; /* no conf anywhere: built-in defaults */
}

/* --------------------------------------------------------------- queries */

int conf_is_disabled(const conf *c, const char *plugin, const char **pattern) {
    if (pattern) *pattern = NULL;
    for (size_t i = 0; c && i < c->n_disabled; i++)
        if (fnmatch(c->disabled[i], plugin, 0) == 0) {
            if (pattern) *pattern = c->disabled[i];
            return 1;
        }
    return 0;
}

int conf_allow_unsafe_paths(const conf *c) { return c ? c->allow_unsafe_paths : 0; }

const char *conf_plugin_option(const conf *c, const char *plugin, const char *key) {
    for (size_t i = 0; c && plugin && key && i < c->n_options; i++)
        if (!strcmp(c->options[i].plugin, plugin) && !strcmp(c->options[i].key, key)) return c->options[i].value;
    return NULL;
}

int conf_priority(const conf *c, const char *plugin, int32_t *score) {
    for (size_t i = 0; c && i < c->n_priority; i++)
        if (!strcmp(c->priority[i].plugin, plugin)) {
            *score = c->priority[i].score;
            return 1;
        }
    return 0;
}

const conf_alias *conf_find_alias(const conf *c, const char *name) {
    if (!c || !name || !c->alias_by_name) return NULL;
    size_t lo = 0, hi = c->n_aliases;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = strcmp(c->alias_by_name[mid]->name, name);
        if (!d) return c->alias_by_name[mid];
        if (d < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const conf_hybrid *conf_hybrid_rules(const conf *c, int kind, const char *custom_kind) {
    if (!c || kind <= 0 || kind >= SGL_ATTN_HYBRID_COUNT_) return NULL;
    if (kind != SGL_ATTN_HYBRID_CUSTOM) return c->hybrid[kind].present ? &c->hybrid[kind] : NULL;
    for (size_t i = 0; custom_kind && i < c->n_custom; i++)
        if (!strcmp(c->custom[i].custom_kind, custom_kind)) return &c->custom[i];
    return NULL;
}
