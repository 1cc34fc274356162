/* select.c - `attnctl select`: the stack the host would choose for a model,
 * and with --explain every candidate and the rule that took or refused it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: attnctl select --model FILE [--tp N] [--backend NAME | --prefill-backend A --decode-backend B]\n"
            "                      [--draft] [--platform cpu|cuda|hip|xpu|npu] [--graph] [--validate]\n"
            "                      [--explain] [--json] [--plugin-path DIRS] [--conf FILE | --no-conf]\n");
}

typedef struct sel_opts {
    const char *model, *backend, *prefill, *decode, *platform;
    int tp, draft, explain, graph;
} sel_opts;

/* --name VALUE or --name=VALUE; 1 taken, 0 not this option, -1 missing value. */
static int take(const char *name, int argc, char **argv, int *i, const char **out) {
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) || (argv[*i][n] && argv[*i][n] != '=')) return 0;
    if (argv[*i][n] == '=') {
        *out = argv[*i] + n + 1;
        return 1;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "attnctl select: %s needs a value\n", name);
        return -1;
    }
    *out = argv[++*i];
    return 1;
}

static int parse(int argc, char **argv, attnctl_common *c, sel_opts *o) {
    for (int i = 1; i < argc; i++) {
        int r = attnctl_common_opt(c, argc, argv, &i);
        if (r < 0) return -1;
        if (r > 0) continue;
        const char *tp = NULL;
        if ((r = take("--model", argc, argv, &i, &o->model)) || (r = take("--backend", argc, argv, &i, &o->backend)) ||
            (r = take("--prefill-backend", argc, argv, &i, &o->prefill)) ||
            (r = take("--decode-backend", argc, argv, &i, &o->decode)) ||
            (r = take("--platform", argc, argv, &i, &o->platform)) || (r = take("--tp", argc, argv, &i, &tp))) {
            if (r < 0) return -1;
            if (tp) {
                char *end;
                long v = strtol(tp, &end, 10);
                if (*end || v < 1 || v > 4096) {
                    fprintf(stderr, "attnctl select: --tp %s: expected an integer from 1 to 4096\n", tp);
                    return -1;
                }
                o->tp = (int)v;
            }
        } else if (!strcmp(argv[i], "--draft")) {
            o->draft = 1;
        } else if (!strcmp(argv[i], "--explain")) {
            o->explain = 1;
        } else if (!strcmp(argv[i], "--graph")) {
            o->graph = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            return 1;
        } else {
            fprintf(stderr, "attnctl select: unknown option '%s'\n", argv[i]);
            return -1;
        }
    }
    if (!o->model) {
        fprintf(stderr, "attnctl select: --model FILE is required\n");
        return -1;
    }
    if (o->backend && (o->prefill || o->decode)) {
        fprintf(stderr, "attnctl select: give --backend, or --prefill-backend/--decode-backend, not both\n");
        return -1;
    }
    return 0;
}

static int platform_of(const char *name) {
    for (int p = 1; p < SGL_ATTN_PLATFORM_COUNT_; p++)
        if (!strcmp(name, sgl_attn_platform_name(p))) return p;
    return -1;
}

static void json_stack(FILE *f, const sgl_attn_selection *s, int prefill) {
    size_t n = prefill ? sgl_attn_selection_prefill_depth(s) : sgl_attn_selection_stack_depth(s);
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i) fputc(',', f);
        attnctl_json_str(f, prefill ? sgl_attn_selection_prefill_name(s, i) : sgl_attn_selection_stack_name(s, i));
    }
    fputc(']', f);
}

static void print_json(const sgl_attn_selection *s, int rc, const char *err, const int32_t *ids, size_t n_ids) {
    FILE *f = stdout;
    fprintf(f, "{\"ok\":%s,\"label\":", rc == SGL_ATTN_OK ? "true" : "false");
    attnctl_json_str(f, sgl_attn_selection_label(s));
    fputs(",\"stack\":", f);
    json_stack(f, s, 0);
    fputs(",\"prefill_stack\":", f);
    json_stack(f, s, 1);
    fputs(",\"decode_stack\":", f);
    json_stack(f, s, 0);
    fprintf(f, ",\"split\":%s,\"device\":%" PRId32 ",\"full_attention_layers\":[",
            sgl_attn_selection_is_split(s) ? "true" : "false", sgl_attn_selection_device(s));
    for (size_t i = 0; i < n_ids; i++) fprintf(f, "%s%" PRId32, i ? "," : "", ids[i]);
    fprintf(f, "],\"state_bytes_per_request\":%" PRIu64 ",\"warnings\":[", sgl_attn_selection_state_bytes(s));
    for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++) {
        if (i) fputc(',', f);
        attnctl_json_str(f, sgl_attn_selection_warning(s, i));
    }
    fputs("],\"verdicts\":[", f);
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        fputs(i ? ",{\"stage\":" : "{\"stage\":", f);
        attnctl_json_str(f, v->stage);
        fputs(",\"plugin\":", f);
        attnctl_json_str(f, v->plugin);
        fprintf(f, ",\"device\":%" PRId32 ",\"taken\":%s,\"score\":%" PRId32 ",\"rule\":", v->device,
                v->taken ? "true" : "false", v->score);
        attnctl_json_str(f, v->rule);
        fputs(",\"message\":", f);
        attnctl_json_str(f, v->message);
        fputc('}', f);
    }
    fputs("],\"error\":", f);
    attnctl_json_str(f, rc == SGL_ATTN_OK ? "" : err);
    fputs("}\n", f);
}

static void print_explain(const sgl_attn_selection *s, const sgl_attn_model *m, const int32_t *ids, size_t n_ids,
                          size_t n_ids_all) {
    printf("model: %s (%s), %d layers, %d q / %d kv heads per rank, head dims %d/%d%s%s%s%s\n", m->name,
           m->model_type[0] ? m->model_type : "no model_type", m->num_layers, m->num_q_heads, m->num_kv_heads,
           m->head_dim_qk, m->head_dim_v, m->is_mla ? ", MLA" : "", m->is_encoder_decoder ? ", encoder-decoder" : "",
           m->hybrid_kind ? ", hybrid " : "",
           !m->hybrid_kind                             ? ""
           : m->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM ? m->hybrid_custom_kind
                                                      : sgl_attn_hybrid_kind_name((int)m->hybrid_kind));
    if (sgl_attn_selection_stack_depth(s)) {
        printf("full-attention layers (%zu):", n_ids_all);
        for (size_t i = 0; i < n_ids; i++) printf(" %" PRId32, ids[i]);
        printf("%s\n", n_ids < n_ids_all ? " ..." : "");
        printf("state bytes per request: %" PRIu64 "\n", sgl_attn_selection_state_bytes(s));
        printf("device: %" PRId32 "\n", sgl_attn_selection_device(s));
    }
    for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++)
        printf("warning: %s\n", sgl_attn_selection_warning(s, i));
    size_t wp = 6, wr = 4;
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        if (strlen(v->plugin) > wp) wp = strlen(v->plugin);
        if (strlen(v->rule) > wr) wr = strlen(v->rule);
    }
    printf("candidates, in order:\n  %-7s %-*s %3s %6s  %-5s %-*s %s\n", "STAGE", (int)wp, "PLUGIN", "DEV", "SCORE",
           "TAKEN", (int)wr, "RULE", "WHY");
    for (size_t i = 0; i < sgl_attn_selection_verdict_count(s); i++) {
        const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, i);
        printf("  %-7s %-*s %3" PRId32 " %6" PRId32 "  %-5s %-*s %s\n", v->stage, (int)wp, v->plugin, v->device,
               v->score, v->taken ? "yes" : "-", (int)wr, v->rule, v->message);
    }
}

int cmd_select(int argc, char **argv) {
    attnctl_common c = {.isolate = 0};
    sel_opts o = {.tp = 1};
    int pr = parse(argc, argv, &c, &o);
    if (pr) {
        usage(pr > 0 ? stdout : stderr);
        return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    }
    int platform = 0;
    if (o.platform && (platform = platform_of(o.platform)) < 0) {
        fprintf(stderr, "attnctl select: --platform %s: expected cpu, cuda, hip, xpu or npu\n", o.platform);
        return ATTNCTL_EXIT_USAGE;
    }
    sgl_attn_model m;
    char err[4096];
    int rc = sgl_attn_model_from_file(o.model, o.tp, &m, err, sizeof err);
    if (rc != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl select: %s\n", err);
        return ATTNCTL_EXIT_ENV; /* the model file is the environment */
    }
    sgl_attn_host *h = attnctl_open_host(&c);
    if (!h) return ATTNCTL_EXIT_ENV;
    sgl_attn_select_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.backend = o.backend;
    req.prefill_backend = o.prefill;
    req.decode_backend = o.decode;
    req.platform = platform;
    req.is_draft = o.draft;
    req.validate = c.validate;
    req.cuda_graph = o.graph;
    sgl_attn_selection *s = NULL;
    err[0] = 0;
    rc = sgl_attn_select(h, &m, &req, &s, err, sizeof err);
    int32_t ids[SGL_ATTN_MAX_LAYERS];
    size_t n_all = s ? sgl_attn_selection_full_layers(s, ids, SGL_ATTN_MAX_LAYERS) : 0;
    size_t n_ids = n_all < SGL_ATTN_MAX_LAYERS ? n_all : SGL_ATTN_MAX_LAYERS;
    if (c.json && s) {
        print_json(s, rc, err, ids, n_ids);
    } else if (s) {
        if (rc == SGL_ATTN_OK) printf("%s\n", sgl_attn_selection_label(s));
        if (o.explain) print_explain(s, &m, ids, n_ids, n_all);
        else
            for (size_t i = 0; i < sgl_attn_selection_warning_count(s); i++)
                fprintf(stderr, "attnctl select: warning: %s\n", sgl_attn_selection_warning(s, i));
    }
    if (rc != SGL_ATTN_OK) fprintf(stderr, "attnctl select: %s\n", err[0] ? err : sgl_attn_status_name(rc));
    sgl_attn_selection_free(s);
    sgl_attn_host_close(h);
    if (rc == SGL_ATTN_OK) return ATTNCTL_EXIT_OK;
    return rc == SGL_ATTN_E_NOT_FOUND ? ATTNCTL_EXIT_NOT_FOUND : ATTNCTL_EXIT_FAIL;
}
