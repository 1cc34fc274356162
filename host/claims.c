/* claims.c - name claims the host reports instead of resolving silently
 * (docs/selection.md, "Names"):
 *   - a plugin named like a sglang backend the conf knows ("fa3"): --backend
 *     fa3 takes the plugin by its name, not what the conf maps fa3 to;
 *   - a declared alias that the conf maps to other plugins on its platform:
 *     the plugin still answers to it, beside the conf's plugins;
 *   - a declared alias that is another plugin's name: the name wins;
 *   - an alias the conf does not know, declared by two plugins: the first in
 *     scan order answers to it, the later one does not (alias_lost).
 * Computed once at open, after every plugin is admitted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

/* A plugin whose descriptor was read and that owns its name (not shadowed). */
static int claims_names(const plugin_entry *e) {
    int s = e->info.status;
    return e->info.name[0] && (s == SGL_ATTN_PLUGIN_USABLE || s == SGL_ATTN_PLUGIN_UNAVAILABLE ||
                               s == SGL_ATTN_PLUGIN_DISABLED);
}

static int add_note(plugin_entry *e, const char *text) {
    char **v = realloc(e->notes, (e->n_notes + 1) * sizeof *v);
    if (!v) return SGL_ATTN_E_NOMEM;
    e->notes = v;
    if (!(v[e->n_notes] = strdup(text))) return SGL_ATTN_E_NOMEM;
    e->n_notes++;
    return SGL_ATTN_OK;
}

/* The conf alias's plugins on `platform`, comma separated; 1 when `plugin`
 * is among them. */
static int alias_targets(const conf_alias *a, int platform, const char *plugin, char *buf, size_t size) {
    const char **v = a->plugins;
    size_t n = a->n_plugins;
    if (platform > 0 && platform < SGL_ATTN_PLATFORM_COUNT_ && a->has_platform[platform]) {
        v = a->platform_plugins[platform];
        n = a->n_platform_plugins[platform];
    }
    int listed = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        ju_append(buf, size, "%s%s", i ? ", " : "", v[i]);
        listed |= !strcmp(v[i], plugin);
    }
    if (!buf[0]) str_copy(buf, size, a->deprecated_for ? a->deprecated_for : "no plugin");
    return listed;
}

static const plugin_entry *plugin_named(const sgl_attn_host *h, const char *name) {
    for (size_t i = 0; i < h->n_plugins; i++)
        if (claims_names(&h->plugins[i]) && !strcmp(h->plugins[i].info.name, name)) return &h->plugins[i];
    return NULL;
}

int claims_compute(sgl_attn_host *h) {
    char msg[1024], targets[512];
    for (size_t i = 0; i < h->n_plugins; i++) {
        plugin_entry *e = &h->plugins[i];
        if (!claims_names(e)) continue;
        const sgl_attn_plugin_info *in = &e->info;
        const conf_alias *own = conf_find_alias(h->conf, in->name);
        if (own) {
            alias_targets(own, in->platform, in->name, targets, sizeof targets);
            str_printf(msg, sizeof msg,
                       "its name '%s' is a sglang backend name the conf maps to %s: --backend %s takes this plugin "
                       "by its name, not those",
                       in->name, targets, in->name);
            if (add_note(e, msg)) return SGL_ATTN_E_NOMEM;
        }
        for (uint32_t k = 0; k < in->n_aliases && k < SGL_ATTN_MAX_LIST; k++) {
            const char *alias = in->aliases[k];
            const plugin_entry *named = plugin_named(h, alias);
            const conf_alias *a = conf_find_alias(h->conf, alias);
            if (named) {
                str_printf(msg, sizeof msg,
                           "declares alias '%s', which is the name of plugin %s (%s): --backend %s takes that plugin",
                           alias, alias, named->info.path, alias);
            } else if (a) {
                if (alias_targets(a, in->platform, in->name, targets, sizeof targets)) continue;
                str_printf(msg, sizeof msg,
                           "declares alias '%s', a sglang backend name the conf maps to %s on %s: it answers to '%s' "
                           "beside them by its own claim",
                           alias, targets, sgl_attn_platform_name(in->platform), alias);
            } else {
                const plugin_entry *first = NULL;
                for (size_t j = 0; j < i && !first; j++) {
                    const plugin_entry *o = &h->plugins[j];
                    for (uint32_t m = 0; claims_names(o) && m < o->info.n_aliases && m < SGL_ATTN_MAX_LIST; m++)
                        if (!strcmp(o->info.aliases[m], alias) && !((o->alias_lost >> m) & 1u)) first = o;
                }
                if (!first) continue;
                e->alias_lost |= 1u << k;
                str_printf(msg, sizeof msg,
                           "declares alias '%s', which %s (%s) declared first: %s answers to '%s', this plugin "
                           "does not",
                           alias, first->info.name, first->info.path, first->info.name, alias);
            }
            if (add_note(e, msg)) return SGL_ATTN_E_NOMEM;
        }
    }
    return SGL_ATTN_OK;
}

void claims_free(plugin_entry *e) {
    for (size_t i = 0; i < e->n_notes; i++) free(e->notes[i]);
    free(e->notes);
    e->notes = NULL;
    e->n_notes = 0;
}
