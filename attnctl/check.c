/* check.c - attnctl check: every family's conformance matrix against the
 * float64 reference, for one named plugin (stack) or every usable one
 * (docs/harness.md).  The cases are walked twice: once to count them (the
 * progress line's n), once to run them. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"
#include "harness/harness.h"

enum { OPT_PLUGIN = 1, OPT_FILTER, OPT_CASE, OPT_SEED, OPT_QUICK, OPT_DEVICE, OPT_LIST };

static const attnctl_opt opts[] = {
    {OPT_PLUGIN, "--plugin", 0, "NAME[/INNER]", 0, "check this plugin or stack only (default: every usable plugin)", "@plugin"},
    {OPT_FILTER, "--filter", 0, "REGEX", 0, "only the cases whose text matches the extended regex", NULL},
    {OPT_CASE, "--case", 0, "CASE", 1, "run this case (repeatable, at most 64; attnctl run prints cases)", NULL},
    {OPT_SEED, "--seed", 0, "N", 0, "the random inputs' seed (default: a fresh one, printed for replay)", NULL},
    {OPT_QUICK, "--quick", 0, NULL, 0, "each family's quick matrix instead of the full one", NULL},
    {OPT_DEVICE, "--device", 0, "N", 0, "the plugin's device index (default 0)", NULL},
    {OPT_LIST, "--list", 0, NULL, 0, "print the cases that would run, run none", NULL},
    {0},
};

typedef struct row {
    char target[160];
    char family[24];
    char text[HCASE_TEXT_MAX];
    hresult r;
} row;

typedef struct rows {
    row *v;
    size_t n, cap;
} rows;

static row *push(rows *rs) {
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? 2 * rs->cap : 64;
        row *v = realloc(rs->v, cap * sizeof *v);
        if (!v) return NULL;
        rs->v = v;
        rs->cap = cap;
    }
    return memset(&rs->v[rs->n++], 0, sizeof(row));
}

typedef struct opts_t {
    const char *plugin, *filter;
    const char *cases[64];
    int n_cases, quick, list, json, verbose, seed_given, counting;
    uint32_t device;
    uint64_t seed;
    regex_t re;
    attnctl_progress progress;
    int counted;
} opts_t;

static FILE *out_text(const opts_t *o) { return o->json ? stderr : stdout; }

/* Run (or count) the matching cases of family f on target t. */
static int run_family(opts_t *o, const harness_family *f, const htarget *t, rows *rs) {
    const char *const *list = o->n_cases ? o->cases : o->quick ? f->quick_matrix : f->matrix;
    int n = o->n_cases ? o->n_cases : -1;
    for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++) {
        const char *text = list[i];
        if (o->filter && regexec(&o->re, text, 0, NULL, 0) != 0) continue;
        if (o->counting) {
            o->counted++;
            continue;
        }
        if (o->list) {
            fprintf(out_text(o), "%s\n", text);
            continue;
        }
        hcase c;
        char err[512];
        row *w = push(rs);
        if (!w) return -1;
        snprintf(w->target, sizeof w->target, "%s", t->label);
        snprintf(w->family, sizeof w->family, "%s", f->name);
        snprintf(w->text, sizeof w->text, "%s", text);
        hresult_init(&w->r);
        attnctl_progress_step(&o->progress, text);
        if (hcase_parse(text, &c, err, sizeof err)) {
            hresult_error(&w->r, "%s", err);
        } else if (harness_family_for_mode(c.mode) != f) {
            hresult_error(&w->r, "mode '%s' does not belong to the %s family", c.mode, f->name);
        } else {
            f->check(f, t, &c, hrng_case_seed(o->seed, c.text), &w->r);
            snprintf(w->target, sizeof w->target, "%s", htarget_stack_label(t));
        }
        attnctl_progress_clear(&o->progress);
        const hresult *r = &w->r;
        FILE *tf = out_text(o);
        fprintf(tf, "  %-13s %s", hverdict_name(r->verdict), text);
        if (r->verdict == HV_PASS && r->nmse >= 0)
            fprintf(tf, "  nmse %.2e (limit %.0e)  %.1f ms, ref %.1f ms\n", r->nmse, r->threshold, r->ms_plugin,
                    r->ms_ref);
        else if (r->verdict == HV_PASS) /* judged without an NMSE (the DSA indexer's selections) */
            fprintf(tf, "  %.1f ms, ref %.1f ms\n", r->ms_plugin, r->ms_ref);
        else
            fprintf(tf, "\n      %s\n", attnctl_esc(r->message));
        fflush(tf);
    }
    return 0;
}

static void print_json(const opts_t *o, const rows *rs, int totals[4], int checked) {
    cJSON *root = attnctl_json_root("check");
    cJSON_AddStringToObject(root, "tool", "attnctl check");
    cJSON_AddStringToObject(root, "version", SGL_ATTN_VERSION);
    char sx[32];
    snprintf(sx, sizeof sx, "0x%016llx", (unsigned long long)o->seed);
    cJSON_AddStringToObject(root, "seed", sx);
    cJSON_AddBoolToObject(root, "quick", o->quick);
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; i < rs->n; i++) {
        const row *w = &rs->v[i];
        const hresult *r = &w->r;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddItemToObject(c, "plugin", attnctl_json_str(strcmp(w->target, "-") ? w->target : NULL));
        cJSON_AddItemToObject(c, "family", attnctl_json_str(w->family));
        cJSON_AddStringToObject(c, "case", w->text);
        cJSON_AddStringToObject(c, "verdict", hverdict_name(r->verdict));
        /* No NMSE (not compared, or NaN/Inf in the output): null, never 0. */
        cJSON_AddItemToObject(c, "nmse", attnctl_json_num(r->nmse >= 0, r->nmse));
        cJSON_AddItemToObject(c, "threshold", attnctl_json_num(r->threshold > 0, r->threshold));
        cJSON_AddItemToObject(c, "max_abs_err", attnctl_json_num(r->nmse >= 0, r->max_abs_err));
        cJSON_AddItemToObject(c, "ms", attnctl_json_num(r->ms_plugin > 0, r->ms_plugin));
        cJSON_AddItemToObject(c, "ms_ref", attnctl_json_num(r->ms_ref > 0, r->ms_ref));
        cJSON_AddItemToObject(c, "message", attnctl_json_str(r->message));
        cJSON_AddItemToArray(cases, c);
    }
    cJSON_AddNumberToObject(root, "plugins_checked", checked);
    cJSON_AddNumberToObject(root, "pass", totals[HV_PASS]);
    cJSON_AddNumberToObject(root, "fail", totals[HV_FAIL]);
    cJSON_AddNumberToObject(root, "unsupported", totals[HV_UNSUPPORTED]);
    cJSON_AddNumberToObject(root, "error", totals[HV_ERROR]);
    attnctl_json_print(root);
}

static int parse_args(const attnctl_cmd *cmd, opts_t *o, attnctl_common *co, int argc, char **argv) {
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, co, &a);
    if (pr) return pr;
    for (int i = 0; i < a.n; i++) {
        const char *v = a.v[i].value;
        long long d;
        switch (a.v[i].id) {
        case OPT_PLUGIN: o->plugin = v; break;
        case OPT_FILTER: o->filter = v; break;
        case OPT_CASE:
            if (o->n_cases == 64) return attnctl_usage_error(cmd, "at most 64 --case options"), -1;
            o->cases[o->n_cases++] = v;
            break;
        case OPT_SEED:
            if (attnctl_u64_arg(cmd, "--seed", v, &o->seed)) return -1;
            o->seed_given = 1;
            break;
        case OPT_DEVICE:
            if (attnctl_int_arg(cmd, "--device", v, 0, 1024, &d)) return -1;
            o->device = (uint32_t)d;
            break;
        case OPT_QUICK: o->quick = 1; break;
        case OPT_LIST: o->list = 1; break;
        }
    }
    return 0;
}

/* Every target and family, running (or counting) the cases. */
static int walk(opts_t *o, sgl_attn_host *h, rows *rs, int *checked) {
    int exit_code = ATTNCTL_EXIT_OK;
    size_t n_plugins = o->plugin ? 1 : sgl_attn_host_plugin_count(h);
    const int quiet = o->counting || o->list;
    for (size_t p = 0; p < n_plugins; p++) {
        char spec[160];
        if (o->plugin) {
            snprintf(spec, sizeof spec, "%s", o->plugin);
        } else {
            sgl_attn_plugin_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (sgl_attn_host_plugin_info(h, p, &info) || info.role == SGL_ATTN_ROLE_LAYER) continue;
            if (info.status != SGL_ATTN_PLUGIN_USABLE) {
                if (!quiet && attnctl_has_descriptor(&info))
                    fprintf(out_text(o), "%s: skipped, %s: %s\n", info.name, sgl_attn_plugin_status_name(info.status),
                            attnctl_esc(sgl_attn_host_plugin_reason(h, p)));
                continue;
            }
            snprintf(spec, sizeof spec, "%s", info.name);
        }
        htarget t;
        char err[512];
        if (htarget_open(&t, h, spec, o->device, err, sizeof err)) {
            htarget_close(&t);
            if (!o->counting) fprintf(stderr, "attnctl check: %s\n", attnctl_esc(err));
            if (o->plugin)
                return sgl_attn_host_find_plugin(h, spec) < 0 && !strchr(spec, '/') ? ATTNCTL_EXIT_NOT_FOUND
                                                                                    : ATTNCTL_EXIT_FAIL;
            continue;
        }
        int any = 0;
        for (size_t fi = 0; fi < harness_family_count(); fi++) {
            const harness_family *f = harness_family_at(fi);
            if (!harness_family_applies(f, &t)) continue;
            if (!any && !quiet)
                fprintf(out_text(o), "%s on %s (%s)%s\n", t.label, attnctl_esc(t.caps.device_name),
                        attnctl_esc(t.caps.arch_name), t.selected ? ", over the stack the host selects for each case" : "");
            any = 1;
            if (o->n_cases) { /* explicit cases go to the family of their mode */
                opts_t *sub = malloc(sizeof *sub);
                if (!sub) return ATTNCTL_EXIT_FAIL;
                *sub = *o;
                sub->n_cases = 0;
                for (int i = 0; i < o->n_cases; i++) {
                    hcase c;
                    char e2[512];
                    if (!hcase_parse(o->cases[i], &c, e2, sizeof e2) && harness_family_for_mode(c.mode) != f) continue;
                    sub->cases[sub->n_cases++] = o->cases[i];
                }
                if (sub->n_cases && run_family(sub, f, &t, rs)) exit_code = ATTNCTL_EXIT_FAIL;
                o->counted = sub->counted;
                o->progress = sub->progress;
                free(sub);
            } else if (run_family(o, f, &t, rs)) {
                exit_code = ATTNCTL_EXIT_FAIL;
            }
        }
        if (!any && !o->counting) {
            fprintf(stderr, "attnctl check: no case family applies to %s\n", t.label);
            if (o->plugin) exit_code = ATTNCTL_EXIT_FAIL;
        }
        *checked += any;
        htarget_close(&t);
    }
    return exit_code;
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    opts_t *o = calloc(1, sizeof *o);
    if (!o) return ATTNCTL_EXIT_FAIL;
    attnctl_common co;
    int pr = parse_args(cmd, o, &co, argc, argv);
    if (pr) {
        free(o);
        return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    }
    o->verbose = co.verbose;
    o->json = co.json;
    if (!o->seed_given) o->seed = hrng_fresh_seed();
    if (o->filter) {
        int rc = regcomp(&o->re, o->filter, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char m[256];
            regerror(rc, &o->re, m, sizeof m);
            attnctl_usage_error(cmd, "--filter '%s': %s", attnctl_esc(o->filter), m);
            free(o);
            return ATTNCTL_EXIT_USAGE;
        }
    }
    int exit_code = ATTNCTL_EXIT_OK, checked = 0;
    rows rs = {0};
    sgl_attn_host *h = attnctl_open_host(&co, cmd->name);
    if (!h) {
        exit_code = ATTNCTL_EXIT_ENV;
        goto done;
    }
    if (!o->list)
        fprintf(out_text(o), "attnctl check: seed 0x%016llx (replay: --seed 0x%016llx)\n",
                (unsigned long long)o->seed, (unsigned long long)o->seed);
    /* explicit cases that no family owns are errors, reported once */
    for (int i = 0; i < o->n_cases && !o->list; i++) {
        hcase c;
        char e[512] = "";
        if (!hcase_parse(o->cases[i], &c, e, sizeof e) && harness_family_for_mode(c.mode)) continue;
        row *w = push(&rs);
        if (!w) break;
        snprintf(w->target, sizeof w->target, "-");
        snprintf(w->text, sizeof w->text, "%s", o->cases[i]);
        hresult_init(&w->r);
        if (e[0]) hresult_error(&w->r, "%s", e);
        else hresult_error(&w->r, "no case family owns mode '%s'", c.mode);
        fprintf(out_text(o), "  %-13s %s\n      %s\n", hverdict_name(w->r.verdict), o->cases[i], attnctl_esc(w->r.message));
    }
    if (!o->list) {
        o->counting = 1;
        int ignored = 0;
        walk(o, h, &rs, &ignored);
        o->counting = 0;
        attnctl_progress_start(&o->progress, o->counted, o->json);
    }
    exit_code = walk(o, h, &rs, &checked);
    if (o->list || exit_code == ATTNCTL_EXIT_NOT_FOUND) goto done;
    int totals[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < rs.n; i++) totals[rs.v[i].r.verdict]++;
    fprintf(out_text(o), "%d plugin%s checked: %d passed, %d failed, %d not supported, %d errors (seed 0x%016llx)\n",
            checked, checked == 1 ? "" : "s", totals[HV_PASS], totals[HV_FAIL], totals[HV_UNSUPPORTED],
            totals[HV_ERROR], (unsigned long long)o->seed);
    if (totals[HV_FAIL] || totals[HV_ERROR] || (!checked && exit_code == ATTNCTL_EXIT_OK)) exit_code = ATTNCTL_EXIT_FAIL;
    if (o->json) print_json(o, &rs, totals, checked);
done:
    free(rs.v);
    if (o->filter) regfree(&o->re);
    if (h) sgl_attn_host_close(h);
    free(o);
    return exit_code;
}

const attnctl_cmd attnctl_cmd_check = {
    .name = "check",
    .run = run,
    .summary = "conformance of plugins against the float64 reference",
    .synopsis = "[--plugin NAME[/INNER]] [--filter REGEX] [--case CASE]... [--quick] [options]",
    .description = "Runs each family's conformance matrix (docs/harness.md) on one plugin or stack, or on every\n"
                   "usable plugin, against cpu_ref's float64 reference, and prints each case's verdict, NMSE and\n"
                   "time. On a terminal, stderr shows the progress (case i of n, elapsed). The seed is printed:\n"
                   "--seed replays a run exactly.",
    .opts = opts,
    .common = COMMON_HOST | COMMON_VALIDATE | COMMON_JSON | COMMON_VERBOSE,
    .isolate_default = 0,
    .exit_codes = "0 every case passed or is not supported; 1 a case failed or errored, or nothing was checked;\n"
                  "2 bad command line; 3 the host could not open; 4 the named plugin does not exist.",
};
