/* select.c - the pure selection function (docs/selection.md):
 * requirements(model, stage) x capabilities(candidate) x rules(conf) ->
 * ordered candidates, each with the rule that took or refused it. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select_policy.h"

static const char *const stage_names[] = {"full", "prefill", "decode", "wrapper", "layer"};

/* One stage's evaluation of every candidate, and its ranking. */
typedef struct stage_run {
    int stage;
    sel_req req;
    eval *ev;        /* per candidate (only role-full ones are evaluated) */
    size_t *order;   /* eligible (ranked), then passing-not-eligible, then refused */
    size_t n_order, n_eligible, n_passing;
    int *note;       /* per candidate: why an eligible one was not taken (0 none) */
} stage_run;

enum { NOTE_NONE, NOTE_NO_WRAPPER, NOTE_SPLIT };

typedef struct sort_ctx {
    const sel_ctx *cx;
    const stage_run *st;
    const int32_t *platform_best;
} sort_ctx;

static int is_full_stage_cand(const sel_candidate *c) {
    return !c->info || !c->info->name[0] || c->info->role == SGL_ATTN_ROLE_FULL;
}

static int in_fallback(const sel_ctx *cx, const sel_candidate *c) {
    for (size_t i = 0; cx->rules && i < cx->rules->n_fallback; i++)
        if (sel_name_serves(cx, cx->rules->fallback[i], c)) return 1;
    return 0;
}

static int eligible(const sel_ctx *cx, const stage_run *st, size_t i) {
    if (!st->ev[i].pass) return 0;
    return st->req.kind != REQ_AUTO || st->ev[i].score > 0 || in_fallback(cx, &cx->in->cands[i]);
}

/* Higher first: platform best, conf priority, then the default list, then score. */
static int cmp_ranked(const sort_ctx *s, size_t a, size_t b) {
    const eval *x = &s->st->ev[a], *y = &s->st->ev[b];
    int pa = sel_cand_platform(&s->cx->in->cands[a]), pb = sel_cand_platform(&s->cx->in->cands[b]);
    if (s->platform_best[pa] != s->platform_best[pb]) return s->platform_best[pa] > s->platform_best[pb] ? -1 : 1;
    if (pa != pb) return pa < pb ? -1 : 1;
    if (x->has_prio != y->has_prio) return x->has_prio ? -1 : 1;
    if (x->has_prio && x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->default_rank != y->default_rank) return x->default_rank < y->default_rank ? -1 : 1;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void sort_range(const sort_ctx *s, size_t *v, size_t n) {
    for (size_t i = 1; i < n; i++) /* insertion sort: few candidates, stable */
        for (size_t j = i; j > 0 && cmp_ranked(s, v[j], v[j - 1]) < 0; j--) {
            size_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

static int run_stage(const sel_ctx *cx, stage_run *st) {
    size_t n = cx->in->n_cands;
    st->ev = calloc(n ? n : 1, sizeof *st->ev);
    st->order = calloc(n ? n : 1, sizeof *st->order);
    st->note = calloc(n ? n : 1, sizeof *st->note);
    int32_t best[SGL_ATTN_PLATFORM_COUNT_];
    if (!st->ev || !st->order || !st->note) return SGL_ATTN_E_NOMEM;
    for (int p = 0; p < SGL_ATTN_PLATFORM_COUNT_; p++) best[p] = INT32_MIN;
    for (size_t i = 0; i < n; i++) {
        if (!is_full_stage_cand(&cx->in->cands[i])) continue;
        sel_eval_full(cx, st->stage, &st->req, &cx->in->cands[i], &st->ev[i]);
        int p = sel_cand_platform(&cx->in->cands[i]);
        if (eligible(cx, st, i) && p >= 0 && p < SGL_ATTN_PLATFORM_COUNT_ && st->ev[i].score > best[p])
            best[p] = st->ev[i].score;
    }
    for (size_t i = 0; i < n; i++)
        if (is_full_stage_cand(&cx->in->cands[i]) && eligible(cx, st, i)) st->order[st->n_order++] = i;
    st->n_eligible = st->n_order;
    sort_ctx s = {cx, st, best};
    sort_range(&s, st->order, st->n_eligible);
    for (size_t i = 0; i < n; i++)
        if (is_full_stage_cand(&cx->in->cands[i]) && st->ev[i].pass && !eligible(cx, st, i))
            st->order[st->n_order++] = i;
    st->n_passing = st->n_order;
    for (size_t i = 0; i < n; i++)
        if (is_full_stage_cand(&cx->in->cands[i]) && !st->ev[i].pass) st->order[st->n_order++] = i;
    return SGL_ATTN_OK;
}

static void stage_free(stage_run *st) {
    free(st->ev);
    free(st->order);
    free(st->note);
}

/* The best wrapper next to an inner on (platform, device); -1 if none. */
static long pick_wrapper(const sel_ctx *cx, int platform, uint32_t device) {
    long best = -1;
    int32_t best_score = INT32_MIN;
    for (size_t i = 0; i < cx->in->n_cands; i++) {
        const sel_candidate *w = &cx->in->cands[i];
        if (sel_cand_role(w) != SGL_ATTN_ROLE_HYBRID) continue;
        eval e;
        sel_eval_wrapper(cx, w, platform, device, &e);
        if (e.pass && e.score > best_score) {
            best = (long)i;
            best_score = e.score;
        }
    }
    return best;
}

/* ---------------------------------------------------------------- output */

static int add_verdict(sgl_attn_selection *out, const sel_candidate *c, const char *stage, int taken, int32_t score,
                       const char *rule, const char *message) {
    if (out->n_verdicts == out->cap_verdicts) {
        size_t cap = out->cap_verdicts ? out->cap_verdicts * 2 : 16;
        sgl_attn_verdict *v = realloc(out->verdicts, cap * sizeof *v);
        if (!v) return SGL_ATTN_E_NOMEM;
        out->verdicts = v;
        char **m = realloc(out->messages, cap * sizeof *m);
        if (!m) return SGL_ATTN_E_NOMEM;
        out->messages = m;
        out->cap_verdicts = cap;
    }
    char *whole = strdup(message);
    if (!whole) return SGL_ATTN_E_NOMEM;
    out->messages[out->n_verdicts] = whole;
    sgl_attn_verdict *v = &out->verdicts[out->n_verdicts++];
    memset(v, 0, sizeof *v);
    const char *name = sel_cand_name(c);
    if (!name[0] && c->info) {
        const char *slash = strrchr(c->info->path, '/');
        name = slash ? slash + 1 : c->info->path;
    }
    str_copy(v->plugin, sizeof v->plugin, name);
    v->device = (int32_t)c->device;
    v->taken = taken;
    v->score = score;
    str_copy(v->stage, sizeof v->stage, stage);
    str_copy(v->rule, sizeof v->rule, rule);
    str_copy_words(v->message, sizeof v->message, message);
    return SGL_ATTN_OK;
}

static void add_warning(sgl_attn_selection *out, const char *w) {
    if (!w[0]) return;
    for (size_t i = 0; i < out->n_warnings; i++)
        if (!strcmp(out->warnings[i], w)) return;
    if (out->n_warnings < sizeof out->warnings / sizeof out->warnings[0])
        str_copy_words(out->warnings[out->n_warnings++], sizeof out->warnings[0], w);
}

/* The first conf alias (then plugin) that would serve this model here, for
 * messages that say what to use instead. */
static void alternative(const sel_ctx *cx, const sel_req *refused, char *buf, size_t size) {
    for (size_t i = 0; cx->rules && i < cx->rules->n_aliases; i++) {
        const conf_alias *a = &cx->rules->aliases[i];
        if (a->deprecated_for || (refused->name && !strcmp(a->name, refused->name)) ||
            (refused->asked && !strcmp(a->name, refused->asked)))
            continue;
        sel_req r = {.kind = REQ_ALIAS, .asked = a->name, .name = a->name, .alias = a};
        for (size_t k = 0; k < cx->in->n_cands; k++) {
            eval e;
            if (!is_full_stage_cand(&cx->in->cands[k])) continue;
            sel_eval_full(cx, ST_FULL, &r, &cx->in->cands[k], &e);
            if (e.pass) {
                str_copy(buf, size, a->name);
                return;
            }
        }
    }
    sel_req r = {.kind = REQ_AUTO};
    for (size_t k = 0; k < cx->in->n_cands; k++) {
        eval e;
        if (!is_full_stage_cand(&cx->in->cands[k])) continue;
        sel_eval_full(cx, ST_FULL, &r, &cx->in->cands[k], &e);
        if (e.pass) {
            str_copy(buf, size, sel_cand_name(&cx->in->cands[k]));
            return;
        }
    }
    str_copy(buf, size, "(none here serves this model)");
}

/* Replace {alternative} and {asked} (the name asked for; "the automatic
 * choice" when none was) in a message. */
static void expand(const sel_ctx *cx, const sel_req *r, const char *msg, char *out, size_t size) {
    char step[1024];
    const char *at = strstr(msg, "{asked}");
    if (at) {
        const char *asked = r->asked && r->asked[0] ? r->asked : "the automatic choice";
        str_printf(step, sizeof step, "%.*s%s%s", (int)(at - msg), msg, asked, at + strlen("{asked}"));
        msg = step;
    }
    at = strstr(msg, "{alternative}");
    if (!at) {
        str_copy(out, size, msg);
        return;
    }
    char alt[96];
    alternative(cx, r, alt, sizeof alt);
    str_printf(out, size, "%.*s%s%s", (int)(at - msg), msg, alt, at + strlen("{alternative}"));
}

static void alternatives_list(const sel_ctx *cx, char *buf, size_t size) {
    sel_req r = {.kind = REQ_AUTO};
    buf[0] = 0;
    for (size_t k = 0; k < cx->in->n_cands; k++) {
        eval e;
        const sel_candidate *c = &cx->in->cands[k];
        if (!is_full_stage_cand(c)) continue;
        sel_eval_full(cx, ST_FULL, &r, c, &e);
        if (!e.pass) continue;
        int dup = 0;
        for (size_t j = 0; j < k; j++) dup |= !strcmp(sel_cand_name(&cx->in->cands[j]), sel_cand_name(c));
        if (!dup) ju_append(buf, size, "%s%s", buf[0] ? ", " : "", sel_cand_name(c));
    }
    if (!buf[0]) str_copy(buf, size, "none");
}

static int emit_stage(const sel_ctx *cx, const stage_run *st, long taken, const char *taken_why,
                      sgl_attn_selection *out) {
    const char *sn = stage_names[st->stage];
    char msg[384], exp[sizeof st->ev[0].message + 128];
    const sel_candidate *tc = taken >= 0 ? &cx->in->cands[taken] : NULL;
    for (size_t k = 0; k < st->n_order; k++) {
        size_t i = st->order[k];
        const sel_candidate *c = &cx->in->cands[i];
        const eval *e = &st->ev[i];
        int rc;
        if ((long)i == taken) {
            rc = add_verdict(out, c, sn, 1, e->score, st->req.kind == REQ_AUTO ? "auto" : "asked", taken_why);
        } else if (k < st->n_eligible) {
            if (st->note[i] == NOTE_NO_WRAPPER)
                snprintf(msg, sizeof msg, "passes, but no hybrid wrapper for the model runs beside it");
            else if (st->note[i] == NOTE_SPLIT)
                snprintf(msg, sizeof msg, "passes, but the other stage's plugin runs on another device");
            else
                snprintf(msg, sizeof msg, "passes; ranked after %s (score %d%s%s)", tc ? sel_cand_name(tc) : "the taken one",
                         e->score, e->default_why[0] ? "; " : "", e->default_why);
            rc = add_verdict(out, c, sn, 0, e->score,
                             st->note[i] == NOTE_NO_WRAPPER ? "hybrid-no-wrapper"
                             : st->note[i] == NOTE_SPLIT    ? "split-device"
                                                            : "ranked-lower",
                             msg);
        } else if (e->pass) {
            snprintf(msg, sizeof msg, "passes, but score %d: never chosen automatically (name it to use it)",
                     e->score);
            rc = add_verdict(out, c, sn, 0, e->score, "score", msg);
        } else {
            expand(cx, &st->req, e->message, exp, sizeof exp);
            rc = add_verdict(out, c, sn, 0, e->score, e->rule, exp);
        }
        if (rc) return rc;
    }
    return SGL_ATTN_OK;
}

/* Why the taken candidate was taken, for --explain. */
static void taken_why(const sel_ctx *cx, const stage_run *st, size_t i, char *buf, size_t size) {
    const eval *e = &st->ev[i];
    const sel_candidate *c = &cx->in->cands[i];
    if (st->req.kind != REQ_AUTO) {
        if (st->req.kind == REQ_PLUGIN) str_printf(buf, size, "asked for by name");
        else str_printf(buf, size, "asked for as '%s'%s%s", st->req.asked,
                        strcmp(st->req.asked, st->req.name) ? ", now " : "",
                        strcmp(st->req.asked, st->req.name) ? st->req.name : "");
        return;
    }
    str_printf(buf, size, "chosen automatically on %s: %s %d", sgl_attn_platform_name(sel_cand_platform(c)),
               e->has_prio ? "conf priority" : "score", e->score);
    if (e->default_why[0]) ju_append(buf, size, "; %s", e->default_why);
    if (in_fallback(cx, c) && st->n_eligible == 1) ju_append(buf, size, "; the fallback");
}

/* The deepest refusal.  With a platform asked for, only that platform's
 * candidates count: a file whose platform is unknown (it failed to load) or
 * a plugin of another platform must not headline why this one refused. */
static long deepest(const sel_ctx *cx, const stage_run *st) {
    long best = -1;
    int want = cx->in->req ? cx->in->req->platform : 0;
    for (size_t k = 0; k < st->n_order; k++) {
        size_t i = st->order[k];
        const sel_candidate *c = &cx->in->cands[i];
        if (st->ev[i].pass) continue;
        if (want && (!c->info || !c->info->name[0] || c->info->platform != want)) continue;
        if (best < 0 || st->ev[i].depth > st->ev[best].depth) best = (long)i;
    }
    return best;
}

static void headline(const sel_ctx *cx, const stage_run *st, const char *extra, char *err, size_t err_size) {
    char alts[512], msg[sizeof st->ev[0].message + 128] = "";
    alternatives_list(cx, alts, sizeof alts);
    long d = deepest(cx, st);
    const char *what = st->req.kind == REQ_AUTO && !cx->outer ? "no attention backend here serves this model" : NULL;
    char head[160];
    if (!what && st->req.kind == REQ_AUTO) {
        snprintf(head, sizeof head, "cannot use %s", cx->outer);
        what = head;
    } else if (!what) {
        snprintf(head, sizeof head, "cannot use %s%s", st->req.asked,
                 st->stage == ST_PREFILL ? " for prefill" : st->stage == ST_DECODE ? " for decode" : "");
        what = head;
    }
    if (extra) {
        str_printf(err, err_size, "%s: %s. Alternatives here: %s", what, extra, alts);
        return;
    }
    if (st->req.kind != REQ_AUTO && (d < 0 || st->ev[d].depth == D_NAME)) {
        /* Nothing here answers to the name: the name's own rules first (the
         * seed checks them before anything else), else what it maps to. */
        const conf_alias *a = st->req.alias;
        for (size_t i = 0; a && i < a->n_requires; i++)
            if (!sel_row_uses_arch(&a->requires[i]) && !sel_row_holds(&a->requires[i], &cx->model, NULL)) {
                expand(cx, &st->req, a->requires[i].message, msg, sizeof msg);
                str_printf(err, err_size, "%s: %s Alternatives here: %s", what, msg, alts);
                return;
            }
        /* A model rule that binds the model to one alias refuses every other
         * name whatever the device (sglang's dual chunk server-args rule). */
        for (size_t i = 0; cx->rules && i < cx->rules->n_model_rules; i++) {
            const rule_row *row = &cx->rules->model_rules[i];
            if (!row->binds_name || row->platforms || sel_row_uses_arch(row) ||
                !sel_row_holds(row, &cx->model, NULL) || !strcmp(row->served_by, st->req.name))
                continue;
            expand(cx, &st->req, row->message, msg, sizeof msg);
            str_printf(err, err_size, "%s: %s Alternatives here: %s", what, msg, alts);
            return;
        }
        if (a && a->message) {
            str_printf(err, err_size, "%s: %s Alternatives here: %s", what, a->message, alts);
            return;
        }
        char maps[256] = "";
        for (size_t i = 0; a && i < a->n_plugins; i++) ju_append(maps, sizeof maps, "%s%s", i ? ", " : "", a->plugins[i]);
        for (int p = 0; a && p < SGL_ATTN_PLATFORM_COUNT_; p++)
            for (size_t i = 0; a->has_platform[p] && i < a->n_platform_plugins[p]; i++)
                ju_append(maps, sizeof maps, "%s%s (%s)", maps[0] ? ", " : "", a->platform_plugins[p][i],
                          sgl_attn_platform_name(p));
        str_printf(err, err_size, "%s: no plugin here serves it%s%s%s. Alternatives here: %s", what,
                   maps[0] ? " (conf maps it to " : "", maps, maps[0] ? ", none of them found)" : "", alts);
        return;
    }
    if (d >= 0) {
        expand(cx, &st->req, st->ev[d].message, msg, sizeof msg);
        str_printf(err, err_size, "%s: %s [%s: %s]. Alternatives here: %s", what, msg,
                   sel_cand_name(&cx->in->cands[d])[0] ? sel_cand_name(&cx->in->cands[d]) : "?", st->ev[d].rule, alts);
    } else if (cx->in->req && cx->in->req->platform) {
        char failed[512] = "";
        for (size_t i = 0; i < cx->in->n_cands; i++) {
            const sel_candidate *c = &cx->in->cands[i];
            if (c->info && !c->info->name[0]) {
                const char *slash = strrchr(c->info->path, '/');
                ju_append(failed, sizeof failed, "%s%s", failed[0] ? ", " : "", slash ? slash + 1 : c->info->path);
            }
        }
        str_printf(err, err_size, "%s: no %s plugin is loaded here%s%s%s. Alternatives here: %s", what,
                   sgl_attn_platform_name(cx->in->req->platform),
                   failed[0] ? " (files that failed to load, of unknown platform: " : "", failed,
                   failed[0] ? "; attnctl list-plugins --all says why)" : "", alts);
    } else {
        str_printf(err, err_size, "%s: no candidate plugins at all. Alternatives here: %s", what, alts);
    }
}

/* ------------------------------------------------------------ the model */

static int check_model(const sgl_attn_model *m, char *err, size_t err_size) {
    if (!m || m->struct_size < sizeof *m) { /* sgl_attn_select imported it (host_model_import) */
        str_printf(err, err_size, "model: struct_size %u, expected %zu (fill it with sgl_attn_model_init)",
                   m ? m->struct_size : 0, sizeof *m);
        return SGL_ATTN_E_INVALID;
    }
    if (m->num_layers < 1 || m->num_layers > SGL_ATTN_MAX_LAYERS || m->num_q_heads < 1 || m->num_kv_heads < 1 ||
        m->num_kv_heads > m->num_q_heads || m->num_q_heads % m->num_kv_heads || m->head_dim_qk < 1 ||
        m->head_dim_v < 1 || m->hybrid_kind >= SGL_ATTN_HYBRID_COUNT_) {
        str_printf(err, err_size,
                   "model: %d layers, %d q heads, %d kv heads, head dims %d/%d, hybrid kind %u: expected 1..%d layers, "
                   "positive heads with q a multiple of kv, positive head dims, a known hybrid kind",
                   m->num_layers, m->num_q_heads, m->num_kv_heads, m->head_dim_qk, m->head_dim_v, m->hybrid_kind,
                   SGL_ATTN_MAX_LAYERS);
        return SGL_ATTN_E_INVALID;
    }
    return SGL_ATTN_OK;
}

void select_route(const sgl_attn_model *m, int is_draft, sgl_attn_model *r) {
    *r = *m;
    r->hybrid_custom_kind[sizeof r->hybrid_custom_kind - 1] = 0;
    r->model_type[sizeof r->model_type - 1] = 0;
    r->name[sizeof r->name - 1] = 0;
    if (is_draft) r->is_draft = 1;
    if (r->hybrid_kind == SGL_ATTN_HYBRID_NONE) {
        memset(r->full_attention_mask, 0, sizeof r->full_attention_mask);
        for (int i = 0; i < r->num_layers; i++) r->full_attention_mask[i >> 6] |= 1ull << (i & 63);
    } else if (r->is_draft) {
        /* sglang: MTP/NEXTN draft workers run full attention on layer 0 only. */
        memset(r->full_attention_mask, 0, sizeof r->full_attention_mask);
        r->full_attention_mask[0] = 1;
    }
}

/* ------------------------------------------------------------ the choice */

static void set_stack(char (*stack)[SGL_ATTN_NAME_MAX + 1], size_t *depth, const char *layer, const char *wrapper,
                      const char *inner) {
    *depth = 0;
    if (layer) str_copy(stack[(*depth)++], SGL_ATTN_NAME_MAX + 1, layer);
    if (wrapper) str_copy(stack[(*depth)++], SGL_ATTN_NAME_MAX + 1, wrapper);
    str_copy(stack[(*depth)++], SGL_ATTN_NAME_MAX + 1, inner);
}

/* The validation layer: the conf's named one, else the first usable layer. */
static long pick_layer(const sel_ctx *cx, int platform, sgl_attn_selection *out, int emit) {
    long taken = -1;
    const int named = cx->outer_role == SGL_ATTN_ROLE_LAYER;
    int want = (cx->in->req && cx->in->req->validate) || named;
    for (size_t i = 0; i < cx->in->n_cands; i++) {
        const sel_candidate *c = &cx->in->cands[i];
        if (sel_cand_role(c) != SGL_ATTN_ROLE_LAYER) continue;
        const char *rule = NULL;
        char msg[384] = "";
        const char *glob;
        if (!want) {
            rule = "not-asked";
            str_copy(msg, sizeof msg, "validation was not asked for");
        } else if (named && strcmp(cx->outer, c->info->name)) {
            rule = "name";
            str_printf(msg, sizeof msg, "not what was asked for (%s)", cx->outer);
        } else if (!named && cx->rules && cx->rules->validation_layer &&
                   strcmp(cx->rules->validation_layer, c->info->name)) {
            rule = "name";
            str_printf(msg, sizeof msg, "conf names %s as the validation layer", cx->rules->validation_layer);
        } else if (c->info->status != SGL_ATTN_PLUGIN_USABLE) {
            rule = sgl_attn_plugin_status_name(c->info->status);
            str_copy(msg, sizeof msg, c->info->reason);
        } else if (conf_is_disabled(cx->rules, c->info->name, &glob)) {
            rule = "disabled";
            str_printf(msg, sizeof msg, "disabled by conf \"disabled\": \"%s\"", glob);
        } else if (c->info->platform != SGL_ATTN_PLATFORM_NONE && c->info->platform != platform) {
            rule = "platform";
            str_printf(msg, sizeof msg, "runs on %s, not beside %s", sgl_attn_platform_name(c->info->platform),
                       sgl_attn_platform_name(platform));
        } else if (taken >= 0) {
            rule = "ranked-lower";
            str_printf(msg, sizeof msg, "passes; %s came first", sel_cand_name(&cx->in->cands[taken]));
        } else {
            taken = (long)i;
            str_copy(msg, sizeof msg, named ? "asked for by name, outermost" : "validation layer, outermost");
        }
        if (emit && add_verdict(out, c, "layer", taken == (long)i, c->score, rule ? rule : "validate", msg))
            return -2;
    }
    return taken;
}

static int emit_wrappers(const sel_ctx *cx, int platform, uint32_t device, long taken, sgl_attn_selection *out) {
    const int named = cx->outer_role == SGL_ATTN_ROLE_HYBRID;
    for (size_t i = 0; i < cx->in->n_cands; i++) {
        const sel_candidate *w = &cx->in->cands[i];
        if (sel_cand_role(w) != SGL_ATTN_ROLE_HYBRID) continue;
        int rc;
        if (cx->model.hybrid_kind == SGL_ATTN_HYBRID_NONE) {
            rc = add_verdict(out, w, "wrapper", 0, w->score, "not-hybrid", "the model has no linear-attention layers");
        } else {
            eval e;
            sel_eval_wrapper(cx, w, platform, device, &e);
            if ((long)i == taken)
                rc = add_verdict(out, w, "wrapper", 1, e.score, named ? "asked" : "hybrid",
                                 named ? "asked for by name; wraps the full-attention plugin"
                                       : "wraps the full-attention plugin");
            else if (e.pass) rc = add_verdict(out, w, "wrapper", 0, e.score, "ranked-lower", "passes; a higher score came first");
            else rc = add_verdict(out, w, "wrapper", 0, e.score, e.rule, e.message);
        }
        if (rc) return rc;
    }
    return SGL_ATTN_OK;
}

/* Message for a hybrid model no wrapper plugin declares. */
static void unknown_hybrid(const sel_ctx *cx, char *buf, size_t size) {
    const sgl_attn_model *m = &cx->model;
    str_printf(buf, size,
               "the model (model_type \"%s\") has linear-attention layers of kind \"%s\" that no wrapper plugin "
               "serves. A custom hybrid wrapper plugin declares the models it serves in its descriptor: role = "
               "SGL_ATTN_ROLE_HYBRID, hybrid_kind = SGL_ATTN_HYBRID_CUSTOM, custom_kind = \"%s\", model_types = "
               "{\"%s\", NULL} (sglang's register_linear_attn_model); put it in a directory of SGL_ATTN_PLUGIN_PATH",
               m->model_type, m->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM ? m->hybrid_custom_kind
                                                                       : sgl_attn_hybrid_kind_name((int)m->hybrid_kind),
               m->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM ? m->hybrid_custom_kind : "<kind>",
               m->model_type[0] ? m->model_type : "<model_type>");
}

/* The role of the plugin `name` when it is a hybrid wrapper or a layer (the
 * one that loaded: shadowed copies do not count), else 0. */
static int outer_role_of(const sel_input *in, const char *name) {
    for (size_t i = 0; name && i < in->n_cands; i++) {
        const sgl_attn_plugin_info *info = in->cands[i].info;
        if (!info || !info->name[0] || info->status == SGL_ATTN_PLUGIN_SHADOWED || strcmp(info->name, name)) continue;
        return info->role == SGL_ATTN_ROLE_HYBRID || info->role == SGL_ATTN_ROLE_LAYER ? info->role : 0;
    }
    return 0;
}

/* Why the wrapper asked for by name runs beside none of the ranked inners:
 * its verdict beside the first one it is not refused for platform alone,
 * else beside the first. */
static void outer_wrapper_refusal(const sel_ctx *cx, const stage_run *st, char *buf, size_t size) {
    eval first, e;
    int have = 0;
    for (size_t k = 0; k < st->n_eligible; k++) {
        const sel_candidate *inner = &cx->in->cands[st->order[k]];
        for (size_t i = 0; i < cx->in->n_cands; i++) {
            const sel_candidate *w = &cx->in->cands[i];
            if (sel_cand_role(w) != SGL_ATTN_ROLE_HYBRID || strcmp(sel_cand_name(w), cx->outer)) continue;
            sel_eval_wrapper(cx, w, sel_cand_platform(inner), inner->device, &e);
            if (e.pass) continue;
            if (!have) first = e;
            have = 1;
            if (strcmp(e.rule, "wrapper-platform")) {
                str_printf(buf, size, "%s [%s: %s]", e.message, cx->outer, e.rule);
                return;
            }
        }
    }
    if (have) str_printf(buf, size, "%s [%s: %s]", first.message, cx->outer, first.rule);
    else str_printf(buf, size, "%s runs beside none of the full-attention plugins that serve the model", cx->outer);
}

void select_clear(sgl_attn_selection *s) {
    for (size_t i = 0; i < s->n_verdicts; i++) free(s->messages[i]);
    free(s->messages);
    free(s->verdicts);
    memset(s, 0, sizeof *s);
}

/* A GPU plugin here: full attention, a platform other than the CPU, and a
 * device its probe found available. */
static int usable_gpu(const sel_candidate *c) {
    int p = sel_cand_platform(c);
    return c->info && c->info->name[0] && c->info->role == SGL_ATTN_ROLE_FULL && p != SGL_ATTN_PLATFORM_CPU &&
           p != SGL_ATTN_PLATFORM_NONE && c->info->status == SGL_ATTN_PLUGIN_USABLE && c->caps && c->caps->available;
}

/* An automatic choice that lands on the CPU while a GPU plugin is usable
 * here is never silent: a warning with each GPU plugin's refusal, or with
 * no_cpu_fallback the refusal itself.  Returns 1 when it applies. */
static int cpu_fallback(const sel_ctx *cx, const stage_run *st, const sel_candidate *chosen, char *buf, size_t size) {
    const sgl_attn_select_request *q = cx->in->req;
    if (!chosen || st->req.kind != REQ_AUTO || sel_cand_platform(chosen) != SGL_ATTN_PLATFORM_CPU ||
        (q && q->platform))
        return 0;
    buf[0] = 0;
    int n = 0;
    for (size_t k = 0; k < st->n_order; k++) {
        size_t i = st->order[k];
        const sel_candidate *c = &cx->in->cands[i];
        if (!usable_gpu(c)) continue;
        const eval *e = &st->ev[i];
        if (e->pass && st->note[i] == NOTE_NO_WRAPPER)
            ju_append(buf, size, "%s%s device %u: passes, but no hybrid wrapper for the model runs beside it "
                      "[hybrid-no-wrapper]", n ? "; " : "", sel_cand_name(c), c->device);
        else if (e->pass && !eligible(cx, st, i))
            ju_append(buf, size, "%s%s device %u: passes, but score %d: never chosen automatically [score]",
                      n ? "; " : "", sel_cand_name(c), c->device, e->score);
        else if (e->pass)
            ju_append(buf, size, "%s%s device %u: passes, but ranked after %s [ranked-lower]", n ? "; " : "",
                      sel_cand_name(c), c->device, sel_cand_name(chosen));
        else
            ju_append(buf, size, "%s%s device %u: %s [%s]", n ? "; " : "", sel_cand_name(c), c->device, e->message,
                      e->rule);
        n++;
    }
    return n > 0;
}

int select_run(const sel_input *in, sgl_attn_selection *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    out->device = out->prefill_device = -1;
    if (err && err_size) err[0] = 0;
    int rc = check_model(in->model, err, err_size);
    if (rc) return rc;
    uint32_t said = in->model->config_dtype;
    if ((said == SGL_ATTN_DT_F32 || said == SGL_ATTN_DT_F16 || said == SGL_ATTN_DT_BF16) && said != in->model->dtype) {
        /* An HF config's float32, served as sglang's --dtype auto serves it
         * (model_hf.c).  config_dtype sits in what was the struct's tail
         * padding before it was appended: a model filled by hand without
         * sgl_attn_model_init may hold anything there, so only a dtype the
         * readers write counts. */
        char note[256];
        snprintf(note, sizeof note,
                 "the model file's dtype is %s; it is served in %s, as sglang's --dtype auto serves a float32 "
                 "checkpoint (float16, bfloat16 for Gemma)",
                 pol_dtype_name(said), pol_dtype_name(in->model->dtype));
        add_warning(out, note);
    }
    const sgl_attn_select_request *q = in->req;
    sel_ctx cx = {.in = in, .rules = in->rules};
    select_route(in->model, q && q->is_draft, &cx.model);
    cx.need_graph = q && q->cuda_graph;
    out->model = cx.model;
    int split = q && (q->prefill_backend || q->decode_backend);
    stage_run st[2];
    memset(st, 0, sizeof st);
    size_t n_st = split ? 2 : 1;
    st[0].stage = split ? ST_PREFILL : ST_FULL;
    st[1].stage = ST_DECODE;
    const char *names[2] = {q ? q->backend : NULL, q ? q->backend : NULL};
    if (split) {
        if (q->prefill_backend) names[0] = q->prefill_backend;
        if (q->decode_backend) names[1] = q->decode_backend;
    }
    /* A hybrid wrapper or a layer named as `backend` goes on top; the stages
     * under it choose automatically. */
    if (q && (cx.outer_role = outer_role_of(in, q->backend))) cx.outer = q->backend;
    for (size_t s = 0; s < n_st; s++) {
        if (cx.outer && names[s] == cx.outer) {
            names[s] = NULL;
        } else if (names[s] && outer_role_of(in, names[s])) {
            str_printf(err, err_size,
                       "%s is a %s plugin: name it as backend, over the full-attention plugins that "
                       "prefill_backend and decode_backend name",
                       names[s], outer_role_of(in, names[s]) == SGL_ATTN_ROLE_HYBRID ? "hybrid wrapper" : "layer");
            return SGL_ATTN_E_INVALID;
        }
    }
    if (cx.outer_role == SGL_ATTN_ROLE_HYBRID && cx.model.hybrid_kind == SGL_ATTN_HYBRID_NONE) {
        char alts[512];
        alternatives_list(&cx, alts, sizeof alts);
        str_printf(err, err_size,
                   "cannot use %s: it is a hybrid wrapper, and the model has no linear-attention layers. "
                   "Alternatives here: %s",
                   cx.outer, alts);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    for (size_t s = 0; s < n_st; s++) {
        if ((rc = sel_resolve(&cx, names[s], &st[s].req, err, err_size))) return rc;
        add_warning(out, st[s].req.warning);
    }
    for (size_t s = 0; s < n_st && !rc; s++) rc = run_stage(&cx, &st[s]);
    if (rc) goto done;

    int hybrid = cx.model.hybrid_kind != SGL_ATTN_HYBRID_NONE, known_wrapper = 0;
    for (size_t i = 0; hybrid && i < in->n_cands; i++) known_wrapper |= sel_wrapper_kind_matches(&cx, &in->cands[i]);

    /* Pair stages (and the wrapper): first ranked combination that works. */
    long pick[2] = {-1, -1}, wrapper = -1;
    stage_run *outer = &st[n_st - 1], *inner = &st[0];
    for (size_t a = 0; a < outer->n_eligible && pick[n_st - 1] < 0; a++) {
        size_t i = outer->order[a];
        const sel_candidate *ci = &in->cands[i];
        for (size_t b = 0; b < (split ? inner->n_eligible : 1); b++) {
            size_t j = split ? inner->order[b] : i;
            const sel_candidate *cj = &in->cands[j];
            if (split && (sel_cand_platform(ci) != sel_cand_platform(cj) || ci->device != cj->device)) {
                if (!inner->note[j]) inner->note[j] = NOTE_SPLIT;
                continue;
            }
            long w = hybrid ? pick_wrapper(&cx, sel_cand_platform(ci), ci->device) : -1;
            if (hybrid && w < 0) {
                outer->note[i] = NOTE_NO_WRAPPER;
                break;
            }
            pick[n_st - 1] = (long)i;
            pick[0] = (long)j;
            wrapper = w;
            inner->note[j] = NOTE_NONE;
            break;
        }
        if (pick[n_st - 1] < 0 && split && !outer->note[i]) outer->note[i] = NOTE_SPLIT;
    }

    char why[384] = "";
    for (size_t s = 0; s < n_st; s++) {
        if (pick[s] >= 0) taken_why(&cx, &st[s], (size_t)pick[s], why, sizeof why);
        if ((rc = emit_stage(&cx, &st[s], pick[s], why, out))) goto done;
    }
    const sel_candidate *chosen = pick[n_st - 1] >= 0 ? &in->cands[pick[n_st - 1]] : NULL;
    char gpu_why[2048];
    if (!split && cpu_fallback(&cx, &st[0], chosen, gpu_why, sizeof gpu_why)) {
        char alts[512];
        if (q && q->no_cpu_fallback) {
            alternatives_list(&cx, alts, sizeof alts);
            str_printf(err, err_size,
                       "no GPU plugin here serves this model, and a CPU fallback (%s) was refused (no_cpu_fallback): "
                       "%s. Alternatives here: %s",
                       sel_cand_name(chosen), gpu_why, alts);
            for (size_t i = 0; i < out->n_verdicts; i++) {
                sgl_attn_verdict *v = &out->verdicts[i];
                if (!v->taken) continue;
                v->taken = 0;
                str_copy(v->rule, sizeof v->rule, "cpu-fallback");
                char *m = strdup("the automatic choice, refused: no_cpu_fallback asks for a GPU plugin");
                if (m) {
                    free(out->messages[i]);
                    out->messages[i] = m;
                    str_copy_words(v->message, sizeof v->message, m);
                }
            }
            rc = SGL_ATTN_E_UNSUPPORTED;
            goto done;
        }
        char w[sizeof gpu_why + 256];
        str_printf(w, sizeof w, "the automatic choice fell back to the CPU (%s) although a GPU plugin is usable here: %s",
                   sel_cand_name(chosen), gpu_why);
        add_warning(out, w);
        out->cpu_fallback = 1;
    }
    for (size_t s = 0; s < n_st && chosen; s++) {
        const sel_candidate *c = &in->cands[pick[s]];
        if (sel_by_own_claim(&cx, &st[s].req, c)) {
            char w[512];
            str_printf(w, sizeof w,
                       "'%s' was asked for; %s serves it by its own claim: the conf maps '%s' to other plugins "
                       "(attnctl list-plugins shows the claim)",
                       st[s].req.asked, sel_cand_name(c), st[s].req.name);
            add_warning(out, w);
        }
        if (st[s].req.kind == REQ_PLUGIN && conf_find_alias(cx.rules, st[s].req.name)) {
            char w[512];
            str_printf(w, sizeof w,
                       "'%s' is the name of plugin %s and a sglang backend name the conf maps to other plugins: the "
                       "plugin was taken by its name",
                       st[s].req.name, c->info ? c->info->path : "?");
            add_warning(out, w);
        }
    }
    int plat = chosen ? sel_cand_platform(chosen) : 0;
    uint32_t dev = chosen ? chosen->device : 0;
    if (!chosen && hybrid && outer->n_eligible) {
        plat = sel_cand_platform(&in->cands[outer->order[0]]);
        dev = in->cands[outer->order[0]].device;
    }
    if ((rc = emit_wrappers(&cx, plat, dev, wrapper, out))) goto done;
    long layer = pick_layer(&cx, plat, out, 1);
    if (layer == -2) {
        rc = SGL_ATTN_E_NOMEM;
        goto done;
    }

    if (!chosen) {
        rc = SGL_ATTN_E_UNSUPPORTED;
        stage_run *bad = split && !st[0].n_eligible ? &st[0] : outer;
        char extra[1024];
        if (hybrid && bad->n_eligible && cx.outer_role == SGL_ATTN_ROLE_HYBRID) {
            outer_wrapper_refusal(&cx, outer, extra, sizeof extra);
            headline(&cx, bad, extra, err, err_size);
        } else if (hybrid && bad->n_eligible && !known_wrapper) {
            unknown_hybrid(&cx, extra, sizeof extra);
            headline(&cx, bad, extra, err, err_size);
        } else if (hybrid && bad->n_eligible) {
            str_printf(extra, sizeof extra, "no usable %s wrapper runs beside %s (see the wrapper verdicts)",
                       cx.model.hybrid_kind == SGL_ATTN_HYBRID_CUSTOM ? cx.model.hybrid_custom_kind
                                                                      : sgl_attn_hybrid_kind_name((int)cx.model.hybrid_kind),
                       sel_cand_name(&in->cands[bad->order[0]]));
            headline(&cx, bad, extra, err, err_size);
        } else if (split && st[0].n_eligible && st[1].n_eligible) {
            headline(&cx, bad, "the prefill and decode plugins run on different devices", err, err_size);
        } else {
            headline(&cx, bad, NULL, err, err_size);
        }
        goto done;
    }
    if (cx.model.is_draft || hybrid) out->model = cx.model;
    if (cx.outer_role == SGL_ATTN_ROLE_LAYER && layer < 0) {
        rc = SGL_ATTN_E_UNSUPPORTED;
        const char *refusal = "it is not among the plugins here";
        for (size_t i = 0; i < out->n_verdicts; i++)
            if (!strcmp(out->verdicts[i].stage, "layer") && !strcmp(out->verdicts[i].plugin, cx.outer))
                refusal = out->verdicts[i].message;
        str_printf(err, err_size, "cannot use %s: %s", cx.outer, refusal);
        goto done;
    }
    if (q && q->validate && layer < 0) {
        rc = SGL_ATTN_E_UNSUPPORTED;
        str_printf(err, err_size, "validation was asked for, but no usable validation layer plugin is here");
        goto done;
    }
    const char *lname = layer >= 0 ? sel_cand_name(&in->cands[layer]) : NULL;
    const char *wname = wrapper >= 0 ? sel_cand_name(&in->cands[wrapper]) : NULL;
    const sel_candidate *pre = &in->cands[pick[0]];
    set_stack(out->stack, &out->depth, lname, wname, sel_cand_name(chosen));
    set_stack(out->prefill_stack, &out->prefill_depth, lname, wname, sel_cand_name(pre));
    out->device = (int32_t)chosen->device;
    out->prefill_device = (int32_t)pre->device;
    out->split = split && pick[0] != pick[1];
    char a[4 * (SGL_ATTN_NAME_MAX + 2)] = "", b[4 * (SGL_ATTN_NAME_MAX + 2)] = "";
    for (size_t i = 0; i < out->depth; i++) ju_append(a, sizeof a, "%s%s", i ? "/" : "", out->stack[i]);
    for (size_t i = 0; i < out->prefill_depth; i++) ju_append(b, sizeof b, "%s%s", i ? "/" : "", out->prefill_stack[i]);
    if (out->split) str_printf(out->label, sizeof out->label, "prefill=%s decode=%s", b, a);
    else str_copy(out->label, sizeof out->label, a);
    rc = SGL_ATTN_OK;
done:
    for (size_t s = 0; s < 2; s++) stage_free(&st[s]);
    if (rc == SGL_ATTN_E_NOMEM) str_printf(err, err_size, "selection: out of memory");
    return rc;
}
