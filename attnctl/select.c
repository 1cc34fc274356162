/* select.c - `attnctl select`: the stack the host would choose for a model,
 * and with --explain every candidate and the rule that took or refused it;
 * with --caps-from, what another machine would choose. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

enum {
    OPT_MODEL = 1, OPT_TP, OPT_BACKEND, OPT_PREFILL, OPT_DECODE, OPT_DRAFT, OPT_PLATFORM, OPT_GRAPH, OPT_EXPLAIN,
    OPT_NO_CPU_FALLBACK
};

static const attnctl_opt opts[] = {
    {OPT_MODEL, "--model", 0, "FILE", 0, "the model: our JSON, an HF config.json or a model directory (required)", "@file"},
    {OPT_TP, "--tp", 0, "N", 0, "tensor-parallel size: divides the head counts (default 1)", NULL},
    {OPT_BACKEND, "--backend", 0, "NAME", 0, "a plugin name or an sglang name (fa3, flashinfer, triton...)", "@backend"},
    {OPT_PREFILL, "--prefill-backend", 0, "NAME", 0, "the prefill (extend) backend, with --decode-backend", "@backend"},
    {OPT_DECODE, "--decode-backend", 0, "NAME", 0, "the decode backend, with --prefill-backend", "@backend"},
    {OPT_DRAFT, "--draft", 0, NULL, 0, "a speculative draft worker: full-attention layers [0]", NULL},
    {OPT_PLATFORM, "--platform", 0, "P", 0, "only plugins of platform P: cpu, cuda, hip, xpu or npu", "cpu cuda hip xpu npu"},
    {OPT_GRAPH, "--graph", 0, NULL, 0, "the engine captures CUDA/HIP graphs: every chosen plugin must support it", NULL},
    {OPT_EXPLAIN, "--explain", 0, NULL, 0, "the model as read, then every candidate with the rule that took or refused it", NULL},
    {OPT_NO_CPU_FALLBACK, "--no-cpu-fallback", 0, NULL, 0, "refuse an automatic CPU choice while a GPU plugin is usable", NULL},
    {0},
};

typedef struct sel_opts {
    const char *model, *backend, *prefill, *decode, *platform;
    long long tp;
    int draft, explain, graph, no_cpu_fallback;
} sel_opts;

static int platform_of(const char *name) {
    for (int p = 1; p < SGL_ATTN_PLATFORM_COUNT_; p++)
        if (!strcmp(name, sgl_attn_platform_name(p))) return p;
    return -1;
}

static cJSON *stack_json(const sgl_attn_selection *s, int prefill) {
    cJSON *a = cJSON_CreateArray();
    size_t n = prefill ? sgl_attn_selection_prefill_depth(s) : sgl_attn_selection_stack_depth(s);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(prefill ? sgl_attn_selection_prefill_name(s, i)
                                                            : sgl_attn_selection_stack_name(s, i)));
    return a;
}

/* The host's name-claim notes of every plugin the verdicts mention. */
static void each_note(sgl_attn_host *h, const sgl_attn_selection *s, void (*fn)(void *, const char *, const char *),
                      void *user) {
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) || !in.name[0] || !sgl_attn_host_plugin_note_count(h, i)) continue;
        int seen = 0;
        for (size_t k = 0; k < sgl_attn_selection_verdict_count(s) && !seen; k++)
            seen = !strcmp(sgl_attn_selection_verdict(s, k)->plugin, in.name);
        for (size_t k = 0; seen && k < sgl_attn_host_plugin_note_count(h, i); k++)
            fn(user, in.name, sgl_attn_host_plugin_note(h, i, k));
    }
}

static void note_json(void *user, const char *plugin, const char *note) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "plugin", plugin);
    cJSON_AddStringToObject(o, "note", note);
    cJSON_AddItemToArray(user, o);
}

static void note_text(void *user, const char *plugin, const char *note) {
    (void)user;
    printf("note: %s %s\n", plugin, attnctl_esc(note));
}

static void print_json(sgl_attn_host *h, const sgl_attn_selection *s, int rc, const char *err, const int32_t *ids,
                       size_t n_ids, int exit_code) {
    cJSON *root = attnctl_json_root("select");
    int ok = rc == SGL_ATTN_OK;
    cJSON_AddBoolToObject(root, "ok", ok);
    cJSON_AddNumberToObject(root, "exit_code", exit_code);
    cJSON_AddItemToObject(root, "label", attnctl_json_str(ok ? sgl_attn_selection_label(s) : NULL));
    cJSON_AddItemToObject(root, "stack", stack_json(s, 0));
    cJSON_AddItemToObject(root, "prefill_stack", stack_json(s, 1));
    cJSON_AddItemToObject(root, "decode_stack", stack_json(s, 0));
    cJSON_AddBoolToObject(root, "split", sgl_attn_selection_is_split(s));
    cJSON_AddItemToObject(root, "device", attnctl_json_num(ok, sgl_attn_selection_device(s)));
    cJSON *layers = cJSON_AddArrayToObject(root, "full_attention_layers");
    for (size_t i = 0; i < n_ids; i++) cJSON_AddItemToArray(layers, cJSON_CreateNumber(ids[i]));
    cJSON_AddItemToObject(root, "state_bytes_per_request",
                          attnctl_json_num(ok, (double)sgl_attn_selection_state_bytes(s)));
    cJSON_AddBoolToObject(root, "cpu_fallback", sgl_attn_selection_cpu_fallback(s));
    cJSON *w = cJSON_AddArrayToObject(root, "warnings");
    for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++)
        cJSON_AddItemToArray(w, cJSON_CreateString(sgl_attn_selection_warning(s, i)));
    cJSON *vs = cJSON_AddArrayToObject(root, "verdicts");
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "stage", v->stage);
        cJSON_AddStringToObject(o, "plugin", v->plugin);
        cJSON_AddItemToObject(o, "device", attnctl_json_num(v->device >= 0, v->device));
        cJSON_AddBoolToObject(o, "taken", v->taken != 0);
        cJSON_AddNumberToObject(o, "score", v->score);
        cJSON_AddStringToObject(o, "rule", v->rule);
        cJSON_AddItemToObject(o, "message", attnctl_json_str(sgl_attn_selection_verdict_message(s, i)));
        cJSON_AddItemToArray(vs, o);
    }
    cJSON *notes = cJSON_AddArrayToObject(root, "notes");
    each_note(h, s, note_json, notes);
    cJSON_AddItemToObject(root, "caps_file", attnctl_json_str(sgl_attn_host_caps_file(h)));
    cJSON_AddItemToObject(root, "error", attnctl_json_str(ok ? NULL : err));
    attnctl_json_print(root);
}

static void print_explain(sgl_attn_host *h, const sgl_attn_selection *s, const sgl_attn_model *m, const int32_t *ids,
                          size_t n_ids, size_t n_ids_all) {
    printf("model: %s (%s), %d layers, %d q / %d kv heads per rank, head dims %d/%d%s%s%s%s\n", attnctl_esc(m->name),
           m->model_type[0] ? attnctl_esc(m->model_type) : "no model_type", m->num_layers, m->num_q_heads,
           m->num_kv_heads, m->head_dim_qk, m->head_dim_v, m->is_mla ? ", MLA" : "",
           m->is_encoder_decoder ? ", encoder-decoder" : "", m->hybrid_kind ? ", hybrid " : "",
           !m->hybrid_kind                             ? ""
           : m->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM ? attnctl_esc(m->hybrid_custom_kind)
                                                      : sgl_attn_hybrid_kind_name((int)m->hybrid_kind));
    if (sgl_attn_selection_stack_depth(s)) {
        printf("full-attention layers (%zu):", n_ids_all);
        for (size_t i = 0; i < n_ids; i++) printf(" %" PRId32, ids[i]);
        printf("%s\n", n_ids < n_ids_all ? " ..." : "");
        printf("state bytes per request: %" PRIu64 "\n", sgl_attn_selection_state_bytes(s));
        printf("device: %" PRId32 "\n", sgl_attn_selection_device(s));
    }
    for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++)
        printf("warning: %s\n", attnctl_esc(sgl_attn_selection_warning(s, i)));
    int wp = 6, wr = 4;
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        if (attnctl_width(attnctl_esc(v->plugin)) > wp) wp = attnctl_width(attnctl_esc(v->plugin));
        if ((int)strlen(v->rule) > wr) wr = (int)strlen(v->rule);
    }
    printf("candidates, in order:\n  %-7s %-*s %3s %6s  %-5s %-*s %s\n", "STAGE", wp, "PLUGIN", "DEV", "SCORE", "TAKEN",
           wr, "RULE", "WHY");
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        const char *p = attnctl_esc(v->plugin);
        printf("  %-7s %s%*s %3" PRId32 " %6" PRId32 "  %-5s %-*s %s\n", v->stage, p, wp - attnctl_width(p), "",
               v->device, v->score, v->taken ? "yes" : "-", wr, v->rule,
               attnctl_esc(sgl_attn_selection_verdict_message(s, i)));
    }
    each_note(h, s, note_text, NULL);
}

static int parse(const attnctl_cmd *cmd, int argc, char **argv, attnctl_common *c, sel_opts *o) {
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, c, &a);
    if (pr) return pr;
    o->tp = 1;
    for (int i = 0; i < a.n; i++) {
        const char *v = a.v[i].value;
        switch (a.v[i].id) {
        case OPT_MODEL: o->model = v; break;
        case OPT_BACKEND: o->backend = v; break;
        case OPT_PREFILL: o->prefill = v; break;
        case OPT_DECODE: o->decode = v; break;
        case OPT_PLATFORM: o->platform = v; break;
        case OPT_TP:
            if (attnctl_int_arg(cmd, "--tp", v, 1, 4096, &o->tp)) return -1;
            break;
        case OPT_DRAFT: o->draft = 1; break;
        case OPT_GRAPH: o->graph = 1; break;
        case OPT_EXPLAIN: o->explain = 1; break;
        case OPT_NO_CPU_FALLBACK: o->no_cpu_fallback = 1; break;
        }
    }
    if (!o->model) return attnctl_usage_error(cmd, "--model FILE is required"), -1;
    if (o->backend && (o->prefill || o->decode))
        return attnctl_usage_error(cmd, "give --backend, or --prefill-backend/--decode-backend, not both"), -1;
    if (o->platform && platform_of(o->platform) < 0)
        return attnctl_usage_error(cmd, "--platform %s: expected cpu, cuda, hip, xpu or npu", attnctl_esc(o->platform)), -1;
    return 0;
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common c;
    sel_opts o;
    memset(&o, 0, sizeof o);
    int pr = parse(cmd, argc, argv, &c, &o);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    sgl_attn_model m;
    char err[4096];
    int rc = sgl_attn_model_from_file(o.model, (int)o.tp, &m, err, sizeof err);
    if (rc != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl select: %s\n", attnctl_esc(err));
        return ATTNCTL_EXIT_ENV; /* the model file is the environment */
    }
    sgl_attn_host *h = attnctl_open_host(&c, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    sgl_attn_select_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.backend = o.backend;
    req.prefill_backend = o.prefill;
    req.decode_backend = o.decode;
    req.platform = o.platform ? platform_of(o.platform) : 0;
    req.is_draft = o.draft;
    req.validate = c.validate;
    req.cuda_graph = o.graph;
    req.no_cpu_fallback = o.no_cpu_fallback;
    sgl_attn_selection *s = NULL;
    err[0] = 0;
    rc = sgl_attn_select(h, &m, &req, &s, err, sizeof err);
    int code = rc == SGL_ATTN_OK ? ATTNCTL_EXIT_OK : rc == SGL_ATTN_E_NOT_FOUND ? ATTNCTL_EXIT_NOT_FOUND
               : rc == SGL_ATTN_E_INVALID && !s                                ? ATTNCTL_EXIT_USAGE
                                                                               : ATTNCTL_EXIT_FAIL;
    int32_t *ids = malloc(SGL_ATTN_MAX_LAYERS * sizeof *ids);
    size_t n_all = s && ids ? sgl_attn_selection_full_layers(s, ids, SGL_ATTN_MAX_LAYERS) : 0;
    size_t n_ids = n_all < SGL_ATTN_MAX_LAYERS ? n_all : SGL_ATTN_MAX_LAYERS;
    const char *caps_file = sgl_attn_host_caps_file(h);
    if (c.json && s) {
        print_json(h, s, rc, err, ids, n_ids, code);
    } else if (s) {
        if (rc == SGL_ATTN_OK)
            printf("%s%s%s\n", sgl_attn_selection_label(s), caps_file[0] ? " on the machine of " : "",
                   caps_file[0] ? attnctl_esc(caps_file) : "");
        if (o.explain) print_explain(h, s, &m, ids, n_ids, n_all);
        else {
            int color = attnctl_color(&c, stderr);
            for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++)
                fprintf(stderr, "attnctl select: %swarning%s: %s\n", attnctl_sgr(color, "warning"),
                        attnctl_sgr_reset(color), attnctl_esc(sgl_attn_selection_warning(s, i)));
        }
    }
    if (rc != SGL_ATTN_OK)
        fprintf(stderr, "attnctl select: %s\n", attnctl_esc(err[0] ? err : sgl_attn_status_name(rc)));
    free(ids);
    sgl_attn_selection_free(s);
    sgl_attn_host_close(h);
    return code;
}

const attnctl_cmd attnctl_cmd_select = {
    .name = "select",
    .run = run,
    .summary = "the attention stack the host would choose for a model, and why",
    .synopsis = "--model FILE [--backend NAME | --prefill-backend A --decode-backend B] [options]",
    .description = "The stack the host would choose for a model, outermost first (gdn/cpu_ref), or prefill=A decode=B\n"
                   "when the phases run on different plugins (docs/selection.md says how it chooses). An automatic\n"
                   "choice that falls back to the CPU while a GPU plugin is usable warns with why each GPU plugin\n"
                   "refused (--no-cpu-fallback refuses instead). With --caps-from, the devices are another machine's.",
    .opts = opts,
    .common = COMMON_HOST | COMMON_CAPS | COMMON_VALIDATE | COMMON_JSON | COMMON_COLOR,
    .isolate_default = 0,
    .exit_codes = "0 a stack was chosen; 1 refused (with the reason and the alternatives); 2 bad command line;\n"
                  "3 unreadable model or machine file, or the host could not open; 4 unknown backend name.",
};
