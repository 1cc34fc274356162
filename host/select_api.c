/* select_api.c - sgl_attn_select: the host's plugins and conf as the pure
 * selection's input, and the accessors of its answer. */
#include <stdlib.h>
#include <string.h>

#include "select_policy.h"

/* The caller's request at the host's size (fields past its struct_size
 * zero).  A struct_size of 0 is a caller that forgot to set it; reading
 * nothing would ignore the backend it asked for, so it is refused. */
static int normalize_request(const sgl_attn_select_request *req, int host_validate, sgl_attn_select_request *out,
                             char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    if (req) {
        if (req->struct_size < sizeof(uint32_t)) {
            str_printf(err, err_size,
                       "sgl_attn_select: request.struct_size is %u: set it to sizeof(sgl_attn_select_request) "
                       "(%zu), or pass a NULL request for an automatic choice",
                       req->struct_size, sizeof *out);
            return SGL_ATTN_E_INVALID;
        }
        size_t n = req->struct_size < sizeof *out ? req->struct_size : sizeof *out;
        memcpy(out, req, n);
    }
    out->struct_size = (uint32_t)sizeof *out;
    if (host_validate) out->validate = 1;
    return SGL_ATTN_OK;
}

/* One candidate per probed device (one without caps when never probed). */
static sel_candidate *build_candidates(const sgl_attn_host *h, const sgl_attn_model *routed, size_t *n_out) {
    size_t n = 0;
    for (size_t i = 0; i < h->n_plugins; i++) n += h->plugins[i].n_caps ? h->plugins[i].n_caps : 1;
    sel_candidate *v = calloc(n ? n : 1, sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < h->n_plugins; i++) {
        const plugin_entry *p = &h->plugins[i];
        uint32_t nd = p->n_caps ? p->n_caps : 1;
        for (uint32_t d = 0; d < nd; d++, k++) {
            sel_candidate *c = &v[k];
            c->plugin_index = i;
            c->info = &p->info;
            c->caps = p->n_caps ? &p->caps[d] : NULL;
            c->device = d;
            c->score = c->caps ? c->caps->score : 0;
            c->alias_lost = p->alias_lost;
            c->reason = plugin_entry_reason(p);
            int32_t prio;
            if (conf_priority(h->conf, p->info.name, &prio)) c->score = prio;
            c->model_ok = 1;
            /* The plugin's own model checks, asked only where it could run. */
            if (p->loaded && p->info.status == SGL_ATTN_PLUGIN_USABLE && c->caps && c->caps->available &&
                p->desc.supports_model) {
                char why[sizeof c->model_why] = "";
                int rc = p->desc.supports_model(routed, c->caps, why, sizeof why);
                why[sizeof why - 1] = 0;
                if (rc != SGL_ATTN_OK) {
                    c->model_ok = 0;
                    str_copy(c->model_why, sizeof c->model_why, why[0] ? why : sgl_attn_status_name(rc));
                }
            }
        }
    }
    *n_out = k;
    return v;
}

/* The chosen wrapper's pool bytes per request, from its descriptor. */
static uint64_t state_bytes(const sgl_attn_host *h, const sgl_attn_selection *s) {
    if (s->model.hybrid_kind == SGL_ATTN_HYBRID_NONE) return 0;
    for (size_t d = 0; d < s->depth; d++)
        for (size_t i = 0; i < h->n_plugins; i++) {
            const plugin_entry *p = &h->plugins[i];
            if (p->loaded && p->info.status == SGL_ATTN_PLUGIN_USABLE && p->info.role == SGL_ATTN_ROLE_HYBRID &&
                !strcmp(p->info.name, s->stack[d]) && p->desc.state_bytes_per_request)
                return p->desc.state_bytes_per_request(&s->model);
        }
    return 0;
}

int sgl_attn_select(sgl_attn_host *h, const sgl_attn_model *m, const sgl_attn_select_request *req,
                    sgl_attn_selection **out, char *err, size_t err_size) {
    if (out) *out = NULL;
    if (err && err_size) err[0] = 0;
    if (!h || !m) {
        str_printf(err, err_size, "sgl_attn_select: %s is NULL", !h ? "the host" : "the model");
        return SGL_ATTN_E_INVALID;
    }
    sgl_attn_select_request q;
    if (normalize_request(req, h->validate, &q, err, err_size)) return SGL_ATTN_E_INVALID;
    /* An older writer's model (smaller struct_size) is read with the fields it did not send as zero. */
    sgl_attn_model model_in;
    if (host_model_import(m, &model_in, "sgl_attn_select", err, err_size)) return SGL_ATTN_E_INVALID;
    m = &model_in;
    sgl_attn_selection *s = calloc(1, sizeof *s);
    if (!s) {
        str_printf(err, err_size, "sgl_attn_select: out of memory");
        return SGL_ATTN_E_NOMEM;
    }
    sgl_attn_model routed;
    int rc = SGL_ATTN_OK;
    size_t n = 0;
    sel_candidate *cands = NULL;
    if (m->struct_size >= sizeof *m) {
        select_route(m, q.is_draft, &routed);
        cands = build_candidates(h, &routed, &n);
        if (!cands) rc = SGL_ATTN_E_NOMEM;
    }
    if (rc == SGL_ATTN_OK) {
        sel_input in = {.model = m, .req = &q, .cands = cands, .n_cands = n, .rules = h->conf};
        rc = select_run(&in, s, err, err_size);
        if (rc == SGL_ATTN_OK) s->state_bytes = state_bytes(h, s);
    } else {
        str_printf(err, err_size, "sgl_attn_select: out of memory");
    }
    free(cands);
    if (out) *out = s;
    else sgl_attn_selection_free(s);
    return rc;
}

void sgl_attn_selection_free(sgl_attn_selection *s) {
    if (!s) return;
    select_clear(s);
    free(s);
}

size_t sgl_attn_selection_stack_depth(const sgl_attn_selection *s) { return s ? s->depth : 0; }

const char *sgl_attn_selection_stack_name(const sgl_attn_selection *s, size_t i) {
    return s && i < s->depth ? s->stack[i] : NULL;
}

size_t sgl_attn_selection_prefill_depth(const sgl_attn_selection *s) { return s ? s->prefill_depth : 0; }

const char *sgl_attn_selection_prefill_name(const sgl_attn_selection *s, size_t i) {
    return s && i < s->prefill_depth ? s->prefill_stack[i] : NULL;
}

int sgl_attn_selection_is_split(const sgl_attn_selection *s) { return s ? s->split : 0; }

const char *sgl_attn_selection_label(const sgl_attn_selection *s) { return s ? s->label : ""; }

size_t sgl_attn_selection_verdict_count(const sgl_attn_selection *s) { return s ? s->n_verdicts : 0; }

const sgl_attn_verdict *sgl_attn_selection_verdict(const sgl_attn_selection *s, size_t i) {
    return s && i < s->n_verdicts ? &s->verdicts[i] : NULL;
}

const char *sgl_attn_selection_verdict_message(const sgl_attn_selection *s, size_t i) {
    if (!s || i >= s->n_verdicts) return NULL;
    return s->messages && s->messages[i] ? s->messages[i] : s->verdicts[i].message;
}

int sgl_attn_selection_cpu_fallback(const sgl_attn_selection *s) { return s ? s->cpu_fallback : 0; }

size_t sgl_attn_selection_warning_count(const sgl_attn_selection *s) { return s ? s->n_warnings : 0; }

const char *sgl_attn_selection_warning(const sgl_attn_selection *s, size_t i) {
    return s && i < s->n_warnings ? s->warnings[i] : NULL;
}

size_t sgl_attn_selection_full_layers(const sgl_attn_selection *s, int32_t *ids, size_t cap) {
    size_t n = 0;
    if (!s || !s->depth) return 0;
    for (int i = 0; i < s->model.num_layers && i < SGL_ATTN_MAX_LAYERS; i++)
        if (sgl_attn_model_layer_is_full(&s->model, i)) {
            if (ids && n < cap) ids[n] = i;
            n++;
        }
    return n;
}

uint64_t sgl_attn_selection_state_bytes(const sgl_attn_selection *s) { return s ? s->state_bytes : 0; }

int32_t sgl_attn_selection_device(const sgl_attn_selection *s) { return s ? s->device : -1; }
