/* check.c - attnctl check: every family's conformance matrix against the
 * float64 reference, for one named plugin (stack) or every usable one
 * (docs/harness.md). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"
#include "harness/harness.h"

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

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl check [--plugin NAME[/INNER]] [--filter REGEX] [--seed N] [--quick]\n"
               "                     [--case CASE]... [--device N] [--list] [--json] [-v]\n"
               "Runs the conformance matrix against cpu_ref's float64 reference (docs/harness.md).\n");
}

typedef struct opts {
    const char *plugin, *filter;
    const char *cases[64];
    int n_cases, quick, list, json, verbose, seed_given;
    uint32_t device;
    uint64_t seed;
    regex_t re;
} opts;

static FILE *out_text(const opts *o) { return o->json ? stderr : stdout; }

/* Run the matching cases of family f on target t. */
static int run_family(const opts *o, const harness_family *f, const htarget *t, rows *rs) {
    const char *const *list = o->n_cases ? o->cases : o->quick ? f->quick_matrix : f->matrix;
    int n = o->n_cases ? o->n_cases : -1;
    for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++) {
        const char *text = list[i];
        if (o->filter && regexec(&o->re, text, 0, NULL, 0) != 0) continue;
        hcase c;
        char err[512];
        row *w = push(rs);
        if (!w) return -1;
        snprintf(w->target, sizeof w->target, "%s", t->label);
        snprintf(w->family, sizeof w->family, "%s", f->name);
        snprintf(w->text, sizeof w->text, "%s", text);
        hresult_init(&w->r);
        if (o->list) {
            fprintf(out_text(o), "%s\n", text);
            rs->n--;
            continue;
        }
        if (hcase_parse(text, &c, err, sizeof err)) {
            hresult_error(&w->r, "%s", err);
        } else if (harness_family_for_mode(c.mode) != f) {
            hresult_error(&w->r, "mode '%s' does not belong to the %s family", c.mode, f->name);
        } else {
            f->check(f, t, &c, hrng_case_seed(o->seed, c.text), &w->r);
            snprintf(w->target, sizeof w->target, "%s", htarget_stack_label(t));
        }
        const hresult *r = &w->r;
        FILE *tf = out_text(o);
        fprintf(tf, "  %-13s %s", hverdict_name(r->verdict), text);
        if (r->verdict == HV_PASS)
            fprintf(tf, "  nmse %.2e (limit %.0e)  %.1f ms, ref %.1f ms\n", r->nmse, r->threshold, r->ms_plugin,
                    r->ms_ref);
        else
            fprintf(tf, "\n      %s\n", r->message);
        fflush(tf);
    }
    return 0;
}

static void print_json(const opts *o, const rows *rs, int totals[4]) {
    printf("{\"tool\": \"attnctl check\", \"version\": \"%s\", \"seed\": \"0x%016llx\", \"quick\": %s, \"cases\": [",
           SGL_ATTN_VERSION, (unsigned long long)o->seed, o->quick ? "true" : "false");
    for (size_t i = 0; i < rs->n; i++) {
        const row *w = &rs->v[i];
        printf("%s\n  {\"plugin\": ", i ? "," : "");
        attnctl_json_str(stdout, w->target);
        printf(", \"family\": ");
        attnctl_json_str(stdout, w->family);
        printf(", \"case\": ");
        attnctl_json_str(stdout, w->text);
        printf(", \"verdict\": ");
        attnctl_json_str(stdout, hverdict_name(w->r.verdict));
        if (w->r.nmse >= 0)
            printf(", \"nmse\": %.6g, \"threshold\": %.6g, \"max_abs_err\": %.6g", w->r.nmse, w->r.threshold,
                   w->r.max_abs_err);
        printf(", \"ms\": %.3f, \"ms_ref\": %.3f, \"message\": ", w->r.ms_plugin, w->r.ms_ref);
        attnctl_json_str(stdout, w->r.message);
        printf("}");
    }
    printf("\n], \"pass\": %d, \"fail\": %d, \"unsupported\": %d, \"error\": %d}\n", totals[HV_PASS],
           totals[HV_FAIL], totals[HV_UNSUPPORTED], totals[HV_ERROR]);
}

static int parse_args(opts *o, attnctl_common *co, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        int k = attnctl_common_opt(co, argc, argv, &i);
        if (k < 0) return -1;
        if (k > 0) continue;
        const char *a = argv[i];
        const int has_val = i + 1 < argc;
        if (!strcmp(a, "--plugin") && has_val) o->plugin = argv[++i];
        else if (!strcmp(a, "--filter") && has_val) o->filter = argv[++i];
        else if (!strcmp(a, "--case") && has_val) {
            if (o->n_cases == 64) {
                fprintf(stderr, "attnctl check: at most 64 --case options\n");
                return -1;
            }
            o->cases[o->n_cases++] = argv[++i];
        } else if (!strcmp(a, "--seed") && has_val) {
            char *end;
            o->seed = strtoull(argv[++i], &end, 0);
            if (*end) {
                fprintf(stderr, "attnctl check: --seed %s: expected an integer (0x... allowed)\n", argv[i]);
                return -1;
            }
            o->seed_given = 1;
        } else if (!strcmp(a, "--device") && has_val) {
            char *end;
            unsigned long d = strtoul(argv[++i], &end, 0);
            if (*end || d > 1024) {
                fprintf(stderr, "attnctl check: --device %s: expected a device index\n", argv[i]);
                return -1;
            }
            o->device = (uint32_t)d;
        } else if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--list")) o->list = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "attnctl check: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

int cmd_check(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    attnctl_common co;
    memset(&co, 0, sizeof co);
    int pr = parse_args(&o, &co, argc, argv);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    o.verbose = co.verbose;
    o.json = co.json;
    if (!o.seed_given) o.seed = hrng_fresh_seed();
    if (o.filter) {
        int rc = regcomp(&o.re, o.filter, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char m[256];
            regerror(rc, &o.re, m, sizeof m);
            fprintf(stderr, "attnctl check: --filter '%s': %s\n", o.filter, m);
            return ATTNCTL_EXIT_USAGE;
        }
    }
    int exit_code = ATTNCTL_EXIT_OK;
    rows rs = {0};
    sgl_attn_host *h = attnctl_open_host(&co);
    if (!h) {
        exit_code = ATTNCTL_EXIT_ENV;
        goto done;
    }
    if (!o.list)
        fprintf(out_text(&o), "attnctl check: seed 0x%016llx (replay: --seed 0x%016llx)\n",
                (unsigned long long)o.seed, (unsigned long long)o.seed);
    /* explicit cases that no family owns are errors, reported once */
    for (int i = 0; i < o.n_cases; i++) {
        hcase c;
        char e[512] = "";
        if (!hcase_parse(o.cases[i], &c, e, sizeof e) && harness_family_for_mode(c.mode)) continue;
        row *w = push(&rs);
        if (!w) break;
        snprintf(w->target, sizeof w->target, "-");
        snprintf(w->text, sizeof w->text, "%s", o.cases[i]);
        hresult_init(&w->r);
        if (e[0]) hresult_error(&w->r, "%s", e);
        else hresult_error(&w->r, "no case family owns mode '%s'", c.mode);
        fprintf(out_text(&o), "  %-13s %s\n      %s\n", hverdict_name(w->r.verdict), o.cases[i], w->r.message);
    }
    /* the targets: the named one, or every usable plugin a family applies to */
    size_t n_plugins = o.plugin ? 1 : sgl_attn_host_plugin_count(h);
    int checked = 0;
    for (size_t p = 0; p < n_plugins; p++) {
        char spec[160];
        if (o.plugin) {
            snprintf(spec, sizeof spec, "%s", o.plugin);
        } else {
            sgl_attn_plugin_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (sgl_attn_host_plugin_info(h, p, &info) || info.role == SGL_ATTN_ROLE_LAYER) continue;
            if (info.status != SGL_ATTN_PLUGIN_USABLE) {
                if (!o.list && attnctl_has_descriptor(&info))
                    fprintf(out_text(&o), "%s: skipped, %s: %.200s\n", info.name,
                            sgl_attn_plugin_status_name(info.status), info.reason);
                continue;
            }
            snprintf(spec, sizeof spec, "%s", info.name);
        }
        htarget t;
        char err[512];
        if (htarget_open(&t, h, spec, o.device, err, sizeof err)) {
            htarget_close(&t);
            fprintf(stderr, "attnctl check: %s\n", err);
            if (o.plugin) {
                exit_code = sgl_attn_host_find_plugin(h, spec) < 0 && !strchr(spec, '/') ? ATTNCTL_EXIT_NOT_FOUND
                                                                                         : ATTNCTL_EXIT_FAIL;
                goto done;
            }
            continue;
        }
        int any = 0;
        for (size_t fi = 0; fi < harness_family_count(); fi++) {
            const harness_family *f = harness_family_at(fi);
            if (!harness_family_applies(f, &t)) continue;
            if (!any && !o.list)
                fprintf(out_text(&o), "%s on %s (%s)%s\n", t.label, t.caps.device_name, t.caps.arch_name,
                        t.selected ? ", over the stack the host selects for each case" : "");
            any = 1;
            if (o.n_cases) { /* explicit cases go to the family of their mode */
                const char *mine[64];
                int n = 0;
                for (int i = 0; i < o.n_cases; i++) {
                    hcase c;
                    char e2[512];
                    if (!hcase_parse(o.cases[i], &c, e2, sizeof e2) && harness_family_for_mode(c.mode) != f) continue;
                    mine[n++] = o.cases[i];
                }
                opts sub = o;
                memcpy(sub.cases, mine, sizeof mine);
                sub.n_cases = n;
                if (n && run_family(&sub, f, &t, &rs)) exit_code = ATTNCTL_EXIT_FAIL;
            } else if (run_family(&o, f, &t, &rs)) {
                exit_code = ATTNCTL_EXIT_FAIL;
            }
        }
        if (!any) {
            fprintf(stderr, "attnctl check: no case family applies to %s\n", t.label);
            if (o.plugin) exit_code = ATTNCTL_EXIT_FAIL;
        }
        checked += any;
        htarget_close(&t);
    }
    if (o.list) goto done;
    int totals[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < rs.n; i++) totals[rs.v[i].r.verdict]++;
    fprintf(out_text(&o), "%d plugin%s checked: %d passed, %d failed, %d not supported, %d errors (seed 0x%016llx)\n",
            checked, checked == 1 ? "" : "s", totals[HV_PASS], totals[HV_FAIL], totals[HV_UNSUPPORTED],
            totals[HV_ERROR], (unsigned long long)o.seed);
    if (totals[HV_FAIL] || totals[HV_ERROR] || (!checked && exit_code == ATTNCTL_EXIT_OK)) exit_code = ATTNCTL_EXIT_FAIL;
    if (o.json) print_json(&o, &rs, totals);
done:
    free(rs.v);
    if (o.filter) regfree(&o.re);
    if (h) sgl_attn_host_close(h);
    return exit_code;
}
