/* resolve_policy.c - what a backend name asks for: a plugin, a conf alias
 * (per platform, deprecated), or an alias a plugin's descriptor declares. */
#include <stdlib.h>
#include <string.h>

#include "select_policy.h"

int sel_cand_platform(const sel_candidate *c) { return c->info ? c->info->platform : 0; }
const char *sel_cand_name(const sel_candidate *c) { return c->info ? c->info->name : ""; }
int sel_cand_role(const sel_candidate *c) { return c->info ? c->info->role : 0; }

/* The descriptor was read: name, role and aliases are meaningful. */
static int has_descriptor(const sel_candidate *c) { return c->info && c->info->name[0]; }

/* Declared and not lost to an earlier plugin that declared it first
 * (claims.c): the first declarer of an alias the conf does not know answers
 * to it, the later ones do not. */
static int descriptor_declares(const sel_candidate *c, const char *alias) {
    for (uint32_t i = 0; has_descriptor(c) && i < c->info->n_aliases && i < SGL_ATTN_MAX_LIST; i++)
        if (!strcmp(c->info->aliases[i], alias) && !((c->alias_lost >> i) & 1u)) return 1;
    return 0;
}

int sel_alias_lost(const sel_candidate *c, const char *alias) {
    for (uint32_t i = 0; alias && has_descriptor(c) && i < c->info->n_aliases && i < SGL_ATTN_MAX_LIST; i++)
        if (!strcmp(c->info->aliases[i], alias) && ((c->alias_lost >> i) & 1u)) return 1;
    return 0;
}

/* The conf alias's plugins on `platform`. */
static int alias_lists(const conf_alias *a, int platform, const char *plugin) {
    const char **v = a->plugins;
    size_t n = a->n_plugins;
    if (platform > 0 && platform < SGL_ATTN_PLATFORM_COUNT_ && a->has_platform[platform]) {
        v = a->platform_plugins[platform];
        n = a->n_platform_plugins[platform];
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], plugin)) return 1;
    return 0;
}

int sel_name_serves(const sel_ctx *cx, const char *name, const sel_candidate *c) {
    if (!has_descriptor(c) || !name) return 0;
    if (!strcmp(c->info->name, name)) return 1;
    if (descriptor_declares(c, name)) return 1;
    const conf_alias *a = conf_find_alias(cx->rules, name);
    if (a && a->deprecated_for) {
        if (descriptor_declares(c, a->deprecated_for)) return 1;
        a = conf_find_alias(cx->rules, a->deprecated_for);
    }
    return a && alias_lists(a, c->info->platform, c->info->name);
}

int sel_by_own_claim(const sel_ctx *cx, const sel_req *r, const sel_candidate *c) {
    (void)cx;
    if (r->kind != REQ_ALIAS || !r->alias || !has_descriptor(c)) return 0;
    if (alias_lists(r->alias, c->info->platform, c->info->name)) return 0;
    return descriptor_declares(c, r->asked) || descriptor_declares(c, r->name);
}

int sel_req_serves(const sel_ctx *cx, const sel_req *r, const sel_candidate *c) {
    (void)cx; /* the request already holds the resolved alias */
    if (r->kind == REQ_AUTO) return 1;
    if (!has_descriptor(c)) return 0;
    if (r->kind == REQ_PLUGIN) return !strcmp(c->info->name, r->name);
    if (descriptor_declares(c, r->asked) || descriptor_declares(c, r->name)) return 1;
    return r->alias && alias_lists(r->alias, c->info->platform, c->info->name);
}

static int is_plugin_name(const sel_ctx *cx, const char *name) {
    for (size_t i = 0; i < cx->in->n_cands; i++)
        if (has_descriptor(&cx->in->cands[i]) && !strcmp(cx->in->cands[i].info->name, name)) return 1;
    return 0;
}

static int declared_anywhere(const sel_ctx *cx, const char *name) {
    for (size_t i = 0; i < cx->in->n_cands; i++)
        if (descriptor_declares(&cx->in->cands[i], name)) return 1;
    return 0;
}

int sel_resolve(const sel_ctx *cx, const char *asked, sel_req *r, char *err, size_t err_size) {
    memset(r, 0, sizeof *r);
    r->asked = r->name = asked;
    if (!asked || !asked[0]) {
        r->kind = REQ_AUTO;
        r->asked = r->name = NULL;
        return SGL_ATTN_OK;
    }
    if (is_plugin_name(cx, asked)) {
        r->kind = REQ_PLUGIN;
        return SGL_ATTN_OK;
    }
    const conf_alias *a = conf_find_alias(cx->rules, asked);
    if (a || declared_anywhere(cx, asked)) {
        r->kind = REQ_ALIAS;
        r->alias = a;
        if (a && a->deprecated_for) {
            str_copy(r->warning, sizeof r->warning, a->message);
            r->name = a->deprecated_for;
            r->alias = conf_find_alias(cx->rules, a->deprecated_for);
        }
        return SGL_ATTN_OK;
    }
    char names[2048];
    sel_valid_names(cx, names, sizeof names);
    str_printf(err, err_size, "Invalid attention backend: %s. Valid names: %s", asked, names[0] ? names : "(none)");
    return SGL_ATTN_E_NOT_FOUND;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

void sel_valid_names(const sel_ctx *cx, char *buf, size_t size) {
    size_t cap = cx->in->n_cands * (1 + SGL_ATTN_MAX_LIST) + (cx->rules ? cx->rules->n_aliases : 0) + 1, n = 0;
    const char **v = malloc(cap * sizeof *v);
    buf[0] = 0;
    if (!v) return;
    for (size_t i = 0; i < cx->in->n_cands; i++) {
        const sel_candidate *c = &cx->in->cands[i];
        if (!has_descriptor(c) || c->info->role != SGL_ATTN_ROLE_FULL) continue;
        v[n++] = c->info->name;
        for (uint32_t k = 0; k < c->info->n_aliases && k < SGL_ATTN_MAX_LIST; k++) v[n++] = c->info->aliases[k];
    }
    for (size_t i = 0; cx->rules && i < cx->rules->n_aliases; i++) v[n++] = cx->rules->aliases[i].name;
    qsort(v, n, sizeof *v, cmp_str);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(v[i], v[i - 1])) ju_append(buf, size, "%s%s", buf[0] ? ", " : "", v[i]);
    free(v);
}
