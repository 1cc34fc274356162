/* checks_policy.c - one candidate against the model, its capabilities and
 * the conf's rules, in a fixed order; the first failure is its verdict. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "select_policy.h"

static void fail(eval *e, int depth, const char *rule, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(eval *e, int depth, const char *rule, const char *fmt, ...) {
    e->pass = 0;
    e->depth = depth;
    str_copy(e->rule, sizeof e->rule, rule);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------- conditions */

static int arch_in(const rule_clause *cl, const sgl_attn_caps *caps) {
    if (!caps || caps->arch_major < 0) return 0;
    int a = caps->arch_major * 1000 + (caps->arch_minor < 0 ? 0 : caps->arch_minor);
    if (cl->arch_min_major >= 0 && a < cl->arch_min_major * 1000 + cl->arch_min_minor) return 0;
    if (cl->arch_max_major >= 0 && a > cl->arch_max_major * 1000 + cl->arch_max_minor) return 0;
    return 1;
}

static int clause_holds(const rule_clause *cl, const sgl_attn_model *m, const sgl_attn_caps *caps) {
    if (cl->mla >= 0 && cl->mla != (m->is_mla != 0)) return 0;
    if (cl->encoder_decoder >= 0 && cl->encoder_decoder != (m->is_encoder_decoder != 0)) return 0;
    if (cl->dsa >= 0 && cl->dsa != (m->index_topk > 0)) return 0;
    if (cl->dual_chunk >= 0 && cl->dual_chunk != (m->dca_chunk_size > 0)) return 0;
    if (cl->sinks >= 0 && cl->sinks != (m->has_sinks != 0)) return 0;
    if (cl->diff_head_dims >= 0 && cl->diff_head_dims != (!m->is_mla && m->head_dim_qk != m->head_dim_v)) return 0;
    if (cl->has_arch && !arch_in(cl, caps)) return 0;
    if (cl->n_q_heads_in) {
        int in = 0;
        for (size_t i = 0; i < cl->n_q_heads_in; i++) in |= cl->q_heads_in[i] == m->num_q_heads;
        if (!in) return 0;
    }
    return 1;
}

int sel_row_in_scope(const rule_row *r, int platform) {
    return r->platforms == 0 || (platform > 0 && platform < 32 && (r->platforms >> platform) & 1u);
}

int sel_row_holds(const rule_row *r, const sgl_attn_model *m, const sgl_attn_caps *caps) {
    for (size_t i = 0; i < r->n_any; i++)
        if (clause_holds(&r->any_of[i], m, caps)) return 1;
    return 0;
}

int sel_row_uses_arch(const rule_row *r) {
    for (size_t i = 0; i < r->n_any; i++)
        if (r->any_of[i].has_arch) return 1;
    return 0;
}

/* -------------------------------------------------------------- the caps */

static const char *kind_name(uint32_t k) {
    switch (k) {
    case SGL_ATTN_KIND_MHA: return "MHA";
    case SGL_ATTN_KIND_GQA: return "GQA";
    case SGL_ATTN_KIND_MQA: return "MQA";
    case SGL_ATTN_KIND_MLA: return "MLA";
    default: return "cross attention";
    }
}

static void kinds_text(uint32_t kinds, char *buf, size_t size) {
    buf[0] = 0;
    for (uint32_t b = 1; b <= SGL_ATTN_KIND_CROSS; b <<= 1)
        if (kinds & b) ju_append(buf, size, "%s%s", buf[0] ? ", " : "", kind_name(b));
    if (!buf[0]) str_copy(buf, size, "nothing");
}

static uint32_t model_kind(const sgl_attn_model *m) {
    if (m->is_mla) return SGL_ATTN_KIND_MLA;
    if (m->num_kv_heads == m->num_q_heads) return SGL_ATTN_KIND_MHA;
    if (m->num_kv_heads == 1) return SGL_ATTN_KIND_MQA;
    return SGL_ATTN_KIND_GQA;
}

static int check_caps(const sel_ctx *cx, int stage, const sgl_attn_caps *c, eval *e) {
    const sgl_attn_model *m = &cx->model;
    char have[96];
    uint32_t kind = model_kind(m);
    if (!(c->attn_kinds & kind)) {
        kinds_text(c->attn_kinds, have, sizeof have);
        fail(e, D_CAPS, m->is_mla ? "mla" : "attn-kind", "the model needs %s; this plugin serves %s", kind_name(kind),
             have);
        return 1;
    }
    if (m->index_topk > 0 && !(c->dsa_ops & SGL_ATTN_DSA_SPARSE_MLA)) {
        fail(e, D_CAPS, "dsa-sparse-mla",
             "the model uses DeepSeek sparse attention (index_topk %d); this plugin does not declare "
             "SGL_ATTN_DSA_SPARSE_MLA (caps.dsa_ops), so it cannot take the top-k indices",
             m->index_topk);
        return 1;
    }
    if (m->is_encoder_decoder && !(c->attn_kinds & SGL_ATTN_KIND_CROSS)) {
        fail(e, D_CAPS, "cross", "the model is encoder-decoder; this plugin has no cross attention");
        return 1;
    }
    if (c->arch_major >= 0) {
        int a = c->arch_major * 1000 + (c->arch_minor < 0 ? 0 : c->arch_minor);
        int lo = c->arch_min_major < 0 ? -1 : c->arch_min_major * 1000 + (c->arch_min_minor < 0 ? 0 : c->arch_min_minor);
        int hi = c->arch_max_major < 0 ? INT_MAX
                                       : c->arch_max_major * 1000 + (c->arch_max_minor < 0 ? 999 : c->arch_max_minor);
        if (a < lo || a > hi) {
            char range[64] = "";
            if (c->arch_min_major >= 0) ju_append(range, sizeof range, ">= %d.%d", c->arch_min_major, c->arch_min_minor < 0 ? 0 : c->arch_min_minor);
            if (c->arch_max_major >= 0)
                ju_append(range, sizeof range, "%s<= %d.%s", range[0] ? " and " : "", c->arch_max_major,
                          c->arch_max_minor < 0 ? "x" : "");
            if (c->arch_max_major >= 0 && c->arch_max_minor >= 0) ju_append(range, sizeof range, "%d", c->arch_max_minor);
            fail(e, D_CAPS, "arch-range", "needs architecture %s; the device is %s (%d.%d)", range,
                 c->arch_name[0] ? c->arch_name : "?", c->arch_major, c->arch_minor < 0 ? 0 : c->arch_minor);
            return 1;
        }
    }
    int ok = 0;
    if (c->n_head_dims > 0) {
        for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
            ok |= c->head_dims[i].qk == m->head_dim_qk && c->head_dims[i].v == m->head_dim_v;
    } else {
        ok = (c->head_dim_qk_max == 0 || (uint32_t)m->head_dim_qk <= c->head_dim_qk_max) &&
             (c->head_dim_v_max == 0 || (uint32_t)m->head_dim_v <= c->head_dim_v_max);
    }
    if (!ok) {
        char list[200] = "";
        if (c->n_head_dims > 0)
            for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
                ju_append(list, sizeof list, "%s%u/%u", i ? ", " : "", c->head_dims[i].qk, c->head_dims[i].v);
        else
            snprintf(list, sizeof list, "qk <= %u, v <= %u", c->head_dim_qk_max, c->head_dim_v_max);
        fail(e, D_CAPS, "head-dims", "head dims qk %d / v %d not served (serves %s)", m->head_dim_qk, m->head_dim_v,
             list);
        return 1;
    }
    if (!m->is_mla && m->head_dim_qk != m->head_dim_v && !(c->features & SGL_ATTN_FEAT_DIFF_HEAD_DIMS)) {
        fail(e, D_CAPS, "head-dims", "v head dim %d differs from qk head dim %d; this plugin needs them equal",
             m->head_dim_v, m->head_dim_qk);
        return 1;
    }
    if (m->attn_type != SGL_ATTN_TYPE_CAUSAL && !(c->features & SGL_ATTN_FEAT_ATTN_TYPES)) {
        fail(e, D_CAPS, "attn-type", "the model's layers are %s; this plugin serves causal attention only",
             m->attn_type == SGL_ATTN_TYPE_BIDIRECTIONAL ? "bidirectional" : "encoder-only (or another type)");
        return 1;
    }
    int ratio = m->num_q_heads / (m->num_kv_heads > 0 ? m->num_kv_heads : 1);
    if (c->max_gqa_ratio && (uint32_t)ratio > c->max_gqa_ratio) {
        fail(e, D_CAPS, "gqa-ratio", "%d query heads per KV head; this plugin serves at most %u", ratio,
             c->max_gqa_ratio);
        return 1;
    }
    if (!(c->q_dtypes & m->dtype)) {
        fail(e, D_CAPS, "dtype", "the model runs in %s; this plugin does not take it for q/out",
             pol_dtype_name(m->dtype));
        return 1;
    }
    if (!(c->kv_dtypes & m->kv_dtype)) {
        fail(e, D_CAPS, "kv-dtype", "the KV pool is %s; this plugin does not take it", pol_dtype_name(m->kv_dtype));
        return 1;
    }
    if (m->page_size > 0) {
        ok = 0;
        if (c->n_page_sizes > 0) {
            for (uint32_t i = 0; i < c->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++)
                ok |= c->page_sizes[i] == (uint32_t)m->page_size;
        } else {
            ok = c->page_size_max == 0 || (uint32_t)m->page_size <= c->page_size_max;
        }
        if (!ok) {
            char list[160] = "";
            if (c->n_page_sizes > 0)
                for (uint32_t i = 0; i < c->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++)
                    ju_append(list, sizeof list, "%s%u", i ? ", " : "", c->page_sizes[i]);
            else
                snprintf(list, sizeof list, "1..%u", c->page_size_max);
            fail(e, D_CAPS, "page-size", "page size %d not served (serves %s)", m->page_size, list);
            return 1;
        }
    }
    static const struct {
        uint32_t bit;
        const char *rule, *what;
    } feats[] = {{SGL_ATTN_FEAT_SLIDING_WINDOW, "window", "a sliding window"},
                 {SGL_ATTN_FEAT_SOFTCAP, "softcap", "a logit soft-cap"},
                 {SGL_ATTN_FEAT_SINKS, "sinks", "attention sinks"}};
    int needs[3] = {m->sliding_window >= 0, m->logit_softcap > 0, m->has_sinks != 0};
    for (int i = 0; i < 3; i++)
        if (needs[i] && !(c->features & feats[i].bit)) {
            fail(e, D_CAPS, feats[i].rule, "the model uses %s; this plugin does not", feats[i].what);
            return 1;
        }
    if (m->dca_chunk_size > 0 && !(c->features & SGL_ATTN_FEAT_DUAL_CHUNK)) {
        fail(e, D_CAPS, "dual-chunk",
             "the model uses dual chunk attention (chunk_size %d, local_size %d); this plugin does not serve it",
             m->dca_chunk_size, m->dca_local_size);
        return 1;
    }
    int want_extend = stage != ST_DECODE, want_decode = stage != ST_PREFILL;
    if (want_extend && !(c->features & SGL_ATTN_FEAT_EXTEND)) {
        fail(e, D_CAPS, "extend", "does not run prefill/extend%s", stage == ST_FULL ? " (name a prefill backend)" : "");
        return 1;
    }
    if (want_extend && m->is_mla && !(c->features & SGL_ATTN_FEAT_MLA_EXTEND)) {
        fail(e, D_CAPS, "extend", "does not run MLA prefill/extend");
        return 1;
    }
    if (want_decode && !(c->features & SGL_ATTN_FEAT_DECODE)) {
        fail(e, D_CAPS, "decode", "does not run decode%s", stage == ST_FULL ? " (name a decode backend)" : "");
        return 1;
    }
    if (want_decode && m->spec_tokens > 1 && !(c->features & SGL_ATTN_FEAT_SPEC_DECODE)) {
        fail(e, D_CAPS, "spec-decode", "does not verify %d tokens per request", m->spec_tokens);
        return 1;
    }
    if (cx->need_graph && !(c->features & SGL_ATTN_FEAT_GRAPH_CAPTURE)) {
        fail(e, D_CAPS, "graph", "no CUDA/HIP graph capture, which was asked for");
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the rules */

/* The hybrid rules of conf for the model's kind, against an inner. */
static int check_hybrid_inner(const sel_ctx *cx, const sel_req *r, const sel_candidate *c, eval *e) {
    const sgl_attn_model *m = &cx->model;
    const conf_hybrid *h = conf_hybrid_rules(cx->rules, (int)m->hybrid_kind, m->hybrid_custom_kind);
    int plat = sel_cand_platform(c);
    for (size_t i = 0; h && i < h->n_refuse; i++) {
        const rule_row *row = &h->refuse[i];
        if (sel_row_in_scope(row, plat) && sel_row_holds(row, m, c->caps)) {
            fail(e, D_HYBRID, row->id, "%s", row->message);
            return 1;
        }
    }
    for (size_t i = 0; h && i < h->n_allow; i++) {
        const rule_row *row = &h->allow[i];
        if (!sel_row_in_scope(row, plat) || !sel_row_holds(row, m, c->caps)) continue;
        int ok = 0;
        for (size_t k = 0; k < row->n_backends && !ok; k++)
            ok = r->kind == REQ_ALIAS ? !strcmp(r->name, row->backends[k]) || !strcmp(r->asked, row->backends[k])
                                      : sel_name_serves(cx, row->backends[k], c);
        if (!ok) {
            fail(e, D_HYBRID, row->id, "%s", row->message);
            return 1;
        }
    }
    return 0;
}

/* The platform's default list: first row that holds for this model/device. */
static void default_rank(const sel_ctx *cx, const sel_candidate *c, eval *e) {
    e->default_rank = INT_MAX;
    int plat = sel_cand_platform(c);
    if (!cx->rules || plat <= 0 || plat >= SGL_ATTN_PLATFORM_COUNT_) return;
    for (size_t i = 0; i < cx->rules->n_defaults[plat]; i++) {
        const rule_row *row = &cx->rules->defaults[plat][i];
        if (!sel_row_holds(row, &cx->model, c->caps)) continue;
        for (size_t k = 0; k < row->n_prefer; k++)
            if (sel_name_serves(cx, row->prefer[k], c)) {
                e->default_rank = (int)k;
                snprintf(e->default_why, sizeof e->default_why, "%s default%s%s prefers %s", sgl_attn_platform_name(plat),
                         row->id ? " " : "", row->id ? row->id : "", row->prefer[k]);
                return;
            }
        return; /* the first row that holds decides */
    }
}

void sel_eval_full(const sel_ctx *cx, int stage, const sel_req *r, const sel_candidate *c, eval *e) {
    memset(e, 0, sizeof *e);
    const sgl_attn_model *m = &cx->model;
    const sgl_attn_select_request *q = cx->in->req;
    const sgl_attn_plugin_info *info = c->info;
    int plat = sel_cand_platform(c);
    if (r->kind != REQ_AUTO && !sel_req_serves(cx, r, c)) {
        if (r->kind == REQ_ALIAS && (sel_alias_lost(c, r->asked) || sel_alias_lost(c, r->name)))
            fail(e, D_NAME, "alias-claimed",
                 "declares '%s', but an earlier plugin declared it first and answers to it (attnctl list-plugins "
                 "shows the claims)",
                 r->asked);
        else
            fail(e, D_NAME, "name", "not what was asked for (%s)", r->asked);
        return;
    }
    if (q && q->platform && info && info->name[0] && plat != q->platform) {
        fail(e, D_PLATFORM, "platform", "runs on %s; %s was asked for", sgl_attn_platform_name(plat),
             sgl_attn_platform_name(q->platform));
        return;
    }
    const conf_alias *a = r->kind == REQ_ALIAS ? r->alias : NULL;
    for (size_t i = 0; a && i < a->n_requires; i++) {
        const rule_row *row = &a->requires[i];
        if (!sel_row_uses_arch(row) && sel_row_in_scope(row, plat) && !sel_row_holds(row, m, c->caps)) {
            fail(e, D_ALIAS_MODEL, row->id, "%s", row->message);
            return;
        }
    }
    if (!info || info->status != SGL_ATTN_PLUGIN_USABLE) {
        const char *why = c->reason && c->reason[0] ? c->reason : info ? info->reason : "";
        fail(e, D_STATUS, info ? sgl_attn_plugin_status_name(info->status) : "load-error", "%s",
             why[0] ? why : "not loaded");
        return;
    }
    const char *glob;
    if (conf_is_disabled(cx->rules, info->name, &glob)) {
        fail(e, D_DISABLED, "disabled", "disabled by conf \"disabled\": \"%s\"", glob);
        return;
    }
    if (!c->caps || !c->caps->available) {
        fail(e, D_AVAILABLE, "unavailable", "%s",
             c->caps && c->caps->reason[0] ? sgl_attn_caps_reason(c->caps) : "no usable device");
        return;
    }
    for (size_t i = 0; a && i < a->n_requires; i++) {
        const rule_row *row = &a->requires[i];
        if (sel_row_uses_arch(row) && sel_row_in_scope(row, plat) && !sel_row_holds(row, m, c->caps)) {
            fail(e, D_ALIAS_ARCH, row->id, "%s", row->message);
            return;
        }
    }
    for (size_t i = 0; cx->rules && i < cx->rules->n_model_rules; i++) {
        const rule_row *row = &cx->rules->model_rules[i];
        if (sel_row_in_scope(row, plat) && sel_row_holds(row, m, c->caps) &&
            (!sel_name_serves(cx, row->served_by, c) ||
             (row->binds_name && r->kind != REQ_AUTO && strcmp(r->name, row->served_by)))) {
            fail(e, D_MODEL_RULE, row->id, "%s", row->message);
            return;
        }
    }
    if (check_caps(cx, stage, c->caps, e)) return;
    if (!c->model_ok) {
        fail(e, D_PLUGIN, "plugin-model", "%s", c->model_why[0] ? c->model_why : "the plugin refused the model");
        return;
    }
    if (m->hybrid_kind != SGL_ATTN_HYBRID_NONE && check_hybrid_inner(cx, r, c, e)) return;
    e->pass = 1;
    e->depth = D_PASS;
    int32_t prio;
    e->has_prio = conf_priority(cx->rules, info->name, &prio);
    e->score = e->has_prio ? prio : c->score;
    default_rank(cx, c, e);
}

/* --------------------------------------------------------------- wrappers */

int sel_wrapper_kind_matches(const sel_ctx *cx, const sel_candidate *w) {
    const sgl_attn_model *m = &cx->model;
    const sgl_attn_plugin_info *info = w->info;
    if (!info || !info->name[0] || info->role != SGL_ATTN_ROLE_HYBRID) return 0;
    if (m->hybrid_kind != SGL_ATTN_HYBRID_CUSTOM) return info->hybrid_kind == (int32_t)m->hybrid_kind;
    if (info->hybrid_kind != SGL_ATTN_HYBRID_CUSTOM) return 0;
    for (uint32_t i = 0; i < info->n_model_types && i < SGL_ATTN_MAX_LIST; i++)
        if (m->model_type[0] && !strcmp(info->model_types[i], m->model_type)) return 1;
    return m->hybrid_custom_kind[0] && !strcmp(info->custom_kind, m->hybrid_custom_kind);
}

void sel_eval_wrapper(const sel_ctx *cx, const sel_candidate *w, int platform, uint32_t device, eval *e) {
    memset(e, 0, sizeof *e);
    e->score = w->score;
    const sgl_attn_model *m = &cx->model;
    const sgl_attn_plugin_info *info = w->info;
    if (cx->outer_role == SGL_ATTN_ROLE_HYBRID && strcmp(sel_cand_name(w), cx->outer)) {
        fail(e, D_NAME, "name", "not what was asked for (%s)", cx->outer);
        return;
    }
    if (!sel_wrapper_kind_matches(cx, w)) {
        char mk[64];
        if (m->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM) snprintf(mk, sizeof mk, "custom:%s", m->hybrid_custom_kind);
        else str_copy(mk, sizeof mk, sgl_attn_hybrid_kind_name((int)m->hybrid_kind));
        if (info && info->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM)
            fail(e, D_NAME, "hybrid-kind", "serves custom:%s (model types listed: %u); the model is %s (%s)",
                 info->custom_kind, info->n_model_types, mk, m->model_type[0] ? m->model_type : "no model_type");
        else
            fail(e, D_NAME, "hybrid-kind", "serves %s; the model's linear layers are %s",
                 info ? sgl_attn_hybrid_kind_name(info->hybrid_kind) : "?", mk);
        return;
    }
    const sgl_attn_select_request *q = cx->in->req;
    if (q && q->platform && info->platform != q->platform) {
        fail(e, D_PLATFORM, "platform", "runs on %s; %s was asked for", sgl_attn_platform_name(info->platform),
             sgl_attn_platform_name(q->platform));
        return;
    }
    if (info->status != SGL_ATTN_PLUGIN_USABLE) {
        const char *why = w->reason && w->reason[0] ? w->reason : info->reason;
        fail(e, D_STATUS, sgl_attn_plugin_status_name(info->status), "%s", why[0] ? why : "not usable");
        return;
    }
    const char *glob;
    if (conf_is_disabled(cx->rules, info->name, &glob)) {
        fail(e, D_DISABLED, "disabled", "disabled by conf \"disabled\": \"%s\"", glob);
        return;
    }
    if (!w->caps || !w->caps->available) {
        fail(e, D_AVAILABLE, "unavailable", "%s",
             w->caps && w->caps->reason[0] ? sgl_attn_caps_reason(w->caps) : "no usable device");
        return;
    }
    if (info->platform != SGL_ATTN_PLATFORM_NONE && (info->platform != platform || w->device != device)) {
        fail(e, D_HYBRID, "wrapper-platform", "runs on %s device %u; the full-attention plugin runs on %s device %u",
             sgl_attn_platform_name(info->platform), w->device, sgl_attn_platform_name(platform), device);
        return;
    }
    if (w->caps->state_dtypes && !(w->caps->state_dtypes & m->lin_state_dtype)) {
        fail(e, D_CAPS, "state-dtype", "keeps no %s state", pol_dtype_name(m->lin_state_dtype));
        return;
    }
    if (!w->model_ok) {
        fail(e, D_PLUGIN, "plugin-model", "%s", w->model_why[0] ? w->model_why : "the plugin refused the model");
        return;
    }
    e->pass = 1;
    e->depth = D_PASS;
    e->score = w->score;
}
