/* conf_rows_policy.c - rule rows and their conditions in the conf file:
 * requirement rows of aliases, hybrid refusals and allow-lists, per-platform
 * defaults, model rules.  One row shape for all (docs/conf.md). */
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define NOMEM(cp) (str_printf((cp)->err, (cp)->err_size, "%s: out of memory", (cp)->d->origin), SGL_ATTN_E_NOMEM)

int conf_parse_string(conf_parser *cp, const ju_path *p, const cJSON *n, const char **out) {
    int rc = ju_want(cp->d, p, n, cJSON_String, "a string", cp->err, cp->err_size);
    if (rc) return rc;
    *out = ju_arena_strdup(&cp->c->arena, n->valuestring);
    return *out ? SGL_ATTN_OK : NOMEM(cp);
}

int conf_parse_names(conf_parser *cp, const ju_path *p, const cJSON *arr, const char ***out, size_t *n) {
    int rc = ju_want(cp->d, p, arr, cJSON_Array, "an array of plugin or backend names", cp->err, cp->err_size);
    if (rc) return rc;
    size_t count = (size_t)cJSON_GetArraySize(arr), i = 0;
    const char **v = ju_arena_alloc(&cp->c->arena, (count ? count : 1) * sizeof *v);
    if (!v) return NOMEM(cp);
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        ju_path ep = ju_idx(p, (int)i);
        char where[256];
        ju_path_str(&ep, where, sizeof where);
        if (!cJSON_IsString(e) || !pol_valid_name(e->valuestring))
            return ju_fail(cp->d, &ep, 0, cp->err, cp->err_size,
                           "\"%s\": expected a name of 1 to %d characters [a-z0-9_], found %s%s%s%s", where,
                           SGL_ATTN_NAME_MAX, ju_type_name(e), cJSON_IsString(e) ? " \"" : "",
                           cJSON_IsString(e) ? e->valuestring : "", cJSON_IsString(e) ? "\"" : "");
        if (!(v[i] = ju_arena_strdup(&cp->c->arena, e->valuestring))) return NOMEM(cp);
    }
    *out = v;
    *n = count;
    return SGL_ATTN_OK;
}

/* "9" (any minor: as a maximum, 9.x) or "9.0". */
static int parse_arch(conf_parser *cp, const ju_path *p, const cJSON *n, int is_max, int *major, int *minor) {
    char where[256];
    ju_path_str(p, where, sizeof where);
    const char *s = cJSON_IsString(n) ? n->valuestring : NULL;
    int ma = -1, mi = -1, ok = 0;
    if (s) {
        char *end;
        long a = strtol(s, &end, 10);
        if (end != s && a >= 0 && a < 1000 && s[0] >= '0' && s[0] <= '9') {
            if (*end == 0) {
                ma = (int)a;
                mi = is_max ? 999 : 0;
                ok = 1;
            } else if (*end == '.' && end[1] >= '0' && end[1] <= '9') {
                char *e2;
                long b = strtol(end + 1, &e2, 10);
                if (*e2 == 0 && b >= 0 && b < 1000) {
                    ma = (int)a;
                    mi = (int)b;
                    ok = 1;
                }
            }
        }
    }
    if (!ok)
        return ju_fail(cp->d, p, 0, cp->err, cp->err_size,
                       "\"%s\": expected an architecture as a string \"MAJOR\" or \"MAJOR.MINOR\" (e.g. \"9\" or "
                       "\"8.0\"), found %s%s%s%s",
                       where, ju_type_name(n), s ? " \"" : "", s ? s : "", s ? "\"" : "");
    *major = ma;
    *minor = mi;
    return SGL_ATTN_OK;
}

static const char *const clause_keys[] = {"mla",      "encoder_decoder", "dsa", "dual_chunk",        "sinks",
                                          "diff_head_dims", "arch_min", "arch_max", "q_heads_in", NULL};

static int is_clause_key(const char *k) {
    for (size_t i = 0; clause_keys[i]; i++)
        if (!strcmp(k, clause_keys[i])) return 1;
    return 0;
}

static void clause_init(rule_clause *cl) {
    memset(cl, 0, sizeof *cl);
    cl->mla = cl->encoder_decoder = cl->dsa = cl->dual_chunk = cl->sinks = cl->diff_head_dims = -1;
    cl->arch_min_major = cl->arch_min_minor = cl->arch_max_major = cl->arch_max_minor = -1;
}

/* Read the condition keys of `obj` (others were checked by the caller). */
static int parse_clause(conf_parser *cp, const ju_path *p, const cJSON *obj, rule_clause *cl) {
    clause_init(cl);
    for (const cJSON *e = obj->child; e; e = e->next) {
        if (!is_clause_key(e->string)) continue;
        ju_path kp = ju_key(p, e->string);
        int rc = SGL_ATTN_OK, b = 0;
        if (!strcmp(e->string, "arch_min")) {
            rc = parse_arch(cp, &kp, e, 0, &cl->arch_min_major, &cl->arch_min_minor);
            cl->has_arch = 1;
        } else if (!strcmp(e->string, "arch_max")) {
            rc = parse_arch(cp, &kp, e, 1, &cl->arch_max_major, &cl->arch_max_minor);
            cl->has_arch = 1;
        } else if (!strcmp(e->string, "q_heads_in")) {
            rc = ju_want(cp->d, &kp, e, cJSON_Array, "an array of head counts", cp->err, cp->err_size);
            int i = 0;
            for (const cJSON *h = rc ? NULL : e->child; h && !rc; h = h->next, i++) {
                ju_path hp = ju_idx(&kp, i);
                int64_t v;
                if (i >= SGL_ATTN_MAX_LIST)
                    return ju_fail(cp->d, &hp, 0, cp->err, cp->err_size, "at most %d head counts", SGL_ATTN_MAX_LIST);
                rc = ju_get_int(cp->d, &hp, h, 1, 1 << 20, &v, cp->err, cp->err_size);
                if (!rc) cl->q_heads_in[cl->n_q_heads_in++] = (int32_t)v;
            }
        } else {
            rc = ju_get_bool(cp->d, &kp, e, &b, cp->err, cp->err_size);
            if (!strcmp(e->string, "mla")) cl->mla = b;
            else if (!strcmp(e->string, "encoder_decoder")) cl->encoder_decoder = b;
            else if (!strcmp(e->string, "dsa")) cl->dsa = b;
            else if (!strcmp(e->string, "dual_chunk")) cl->dual_chunk = b;
            else if (!strcmp(e->string, "sinks")) cl->sinks = b;
            else cl->diff_head_dims = b;
        }
        if (rc) return rc;
    }
    if (cl->arch_min_major >= 0 && cl->arch_max_major >= 0 &&
        (cl->arch_min_major > cl->arch_max_major ||
         (cl->arch_min_major == cl->arch_max_major && cl->arch_min_minor > cl->arch_max_minor))) {
        ju_path kp = ju_key(p, "arch_min");
        return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size, "arch_min is above arch_max: the range is empty");
    }
    return SGL_ATTN_OK;
}

/* Which keys a row of each kind takes, and which it must have. */
static const char *const *row_keys(int kind) {
    static const char *const require[] = {"id",       "platforms", "any_of",   "message", "mla", "encoder_decoder",
                                          "dsa", "dual_chunk",      "sinks",     "diff_head_dims", "arch_min", "arch_max",
                                          "q_heads_in", "_comment", NULL};
    static const char *const allow[] = {"id",       "platforms", "any_of",   "message", "backends", "mla",
                                        "encoder_decoder", "dsa", "dual_chunk", "sinks",  "diff_head_dims", "arch_min",
                                        "arch_max", "q_heads_in", "_comment", NULL};
    static const char *const deflt[] = {"id",       "platforms", "any_of",   "prefer", "mla", "encoder_decoder",
                                        "dsa", "dual_chunk",      "sinks",     "diff_head_dims", "arch_min", "arch_max",
                                        "q_heads_in", "_comment", NULL};
    static const char *const model[] = {"id",       "platforms", "any_of",   "message", "served_by", "binds_name", "mla",
                                        "encoder_decoder", "dsa", "dual_chunk", "sinks",  "diff_head_dims", "arch_min",
                                        "arch_max", "q_heads_in", "_comment", NULL};
    switch (kind) {
    case ROW_ALLOW: return allow;
    case ROW_DEFAULT: return deflt;
    case ROW_MODEL: return model;
    default: return require;
    }
}

static int parse_row(conf_parser *cp, const ju_path *p, const cJSON *obj, int kind, rule_row *row) {
    int rc = ju_want(cp->d, p, obj, cJSON_Object, "a rule object", cp->err, cp->err_size);
    if (rc || (rc = ju_check_keys(cp->d, p, obj, row_keys(kind), cp->err, cp->err_size))) return rc;
    char where[256];
    ju_path_str(p, where, sizeof where);
    const char *need[3] = {NULL, NULL, NULL};
    if (kind != ROW_DEFAULT) {
        need[0] = "id";
        need[1] = "message";
    } else {
        need[0] = "prefer";
    }
    if (kind == ROW_ALLOW) need[2] = "backends";
    if (kind == ROW_MODEL) need[2] = "served_by";
    for (int k = 0; k < 3; k++)
        if (need[k] && !cJSON_GetObjectItemCaseSensitive(obj, need[k]))
            return ju_fail(cp->d, p, 0, cp->err, cp->err_size, "\"%s\": missing key \"%s\"", where, need[k]);
    int inline_cond = 0;
    for (const cJSON *e = obj->child; e; e = e->next) {
        ju_path kp = ju_key(p, e->string);
        if (is_clause_key(e->string)) {
            inline_cond = 1;
        } else if (!strcmp(e->string, "id")) {
            if ((rc = conf_parse_string(cp, &kp, e, &row->id))) return rc;
        } else if (!strcmp(e->string, "message")) {
            if ((rc = conf_parse_string(cp, &kp, e, &row->message))) return rc;
        } else if (!strcmp(e->string, "served_by")) {
            if ((rc = conf_parse_string(cp, &kp, e, &row->served_by))) return rc;
        } else if (!strcmp(e->string, "binds_name")) {
            if ((rc = ju_get_bool(cp->d, &kp, e, &row->binds_name, cp->err, cp->err_size))) return rc;
        } else if (!strcmp(e->string, "backends")) {
            if ((rc = conf_parse_names(cp, &kp, e, &row->backends, &row->n_backends))) return rc;
        } else if (!strcmp(e->string, "prefer")) {
            if ((rc = conf_parse_names(cp, &kp, e, &row->prefer, &row->n_prefer))) return rc;
        } else if (!strcmp(e->string, "platforms")) {
            if ((rc = ju_want(cp->d, &kp, e, cJSON_Array, "an array of platform names", cp->err, cp->err_size)))
                return rc;
            int i = 0;
            for (const cJSON *pl = e->child; pl; pl = pl->next, i++) {
                ju_path pp = ju_idx(&kp, i);
                int plat = cJSON_IsString(pl) ? pol_platform_from_name(pl->valuestring) : -1;
                if (plat < 0) {
                    char w2[256];
                    ju_path_str(&pp, w2, sizeof w2);
                    return ju_fail(cp->d, &pp, 0, cp->err, cp->err_size,
                                   "\"%s\": expected a platform (cpu, cuda, hip, xpu, npu), found %s%s%s%s", w2,
                                   ju_type_name(pl), cJSON_IsString(pl) ? " \"" : "",
                                   cJSON_IsString(pl) ? pl->valuestring : "", cJSON_IsString(pl) ? "\"" : "");
                }
                row->platforms |= 1u << plat;
            }
        } else if (!strcmp(e->string, "any_of")) {
            if ((rc = ju_want(cp->d, &kp, e, cJSON_Array, "an array of condition objects", cp->err, cp->err_size)))
                return rc;
            size_t n = (size_t)cJSON_GetArraySize(e);
            if (n == 0)
                return ju_fail(cp->d, &kp, 0, cp->err, cp->err_size, "\"%s.any_of\": expected at least one condition",
                               where);
            row->any_of = ju_arena_alloc(&cp->c->arena, n * sizeof *row->any_of);
            if (!row->any_of) return NOMEM(cp);
            int i = 0;
            for (const cJSON *cl = e->child; cl; cl = cl->next, i++) {
                ju_path cpth = ju_idx(&kp, i);
                static const char *const only_clause[] = {"mla",      "encoder_decoder", "dsa", "dual_chunk",       "sinks",
                                                          "diff_head_dims", "arch_min", "arch_max", "q_heads_in",
                                                          "_comment", NULL};
                if ((rc = ju_want(cp->d, &cpth, cl, cJSON_Object, "a condition object", cp->err, cp->err_size)) ||
                    (rc = ju_check_keys(cp->d, &cpth, cl, only_clause, cp->err, cp->err_size)) ||
                    (rc = parse_clause(cp, &cpth, cl, &row->any_of[i])))
                    return rc;
            }
            row->n_any = n;
        }
    }
    if (inline_cond && row->n_any) {
        ju_path kp = ju_key(p, "any_of");
        return ju_fail(cp->d, &kp, 1, cp->err, cp->err_size,
                       "\"%s\": give the condition either as keys of the row or as any_of, not both", where);
    }
    if (!row->n_any) {
        /* The row's own keys are its one clause (none: the row always holds). */
        row->any_of = ju_arena_alloc(&cp->c->arena, sizeof *row->any_of);
        if (!row->any_of) return NOMEM(cp);
        if ((rc = parse_clause(cp, p, obj, row->any_of))) return rc;
        row->n_any = 1;
    }
    if (row->served_by && !pol_valid_name(row->served_by)) {
        ju_path kp = ju_key(p, "served_by");
        return ju_fail(cp->d, &kp, 0, cp->err, cp->err_size, "\"%s.served_by\": expected a backend name [a-z0-9_]",
                       where);
    }
    return SGL_ATTN_OK;
}

int conf_parse_rows(conf_parser *cp, const ju_path *p, const cJSON *arr, int kind, rule_row **out, size_t *n) {
    int rc = ju_want(cp->d, p, arr, cJSON_Array, "an array of rule objects", cp->err, cp->err_size);
    if (rc) return rc;
    size_t count = (size_t)cJSON_GetArraySize(arr);
    rule_row *rows = ju_arena_alloc(&cp->c->arena, (count ? count : 1) * sizeof *rows);
    if (!rows) return NOMEM(cp);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        ju_path ep = ju_idx(p, i);
        if ((rc = parse_row(cp, &ep, e, kind, &rows[i]))) return rc;
    }
    *out = rows;
    *n = count;
    return SGL_ATTN_OK;
}
