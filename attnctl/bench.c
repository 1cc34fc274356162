/* bench.c - attnctl bench: time a plugin on cases (docs/harness.md says
 * what is timed and how FLOPs and bytes are counted), with JSON for
 * bench/results/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnctl.h"
#include "harness/harness.h"

typedef struct brow {
    char text[HCASE_TEXT_MAX];
    int ok;
    hresult r;
    hbench_stats st;
    double flops, bytes;
} brow;

enum { OPT_PLUGIN = 1, OPT_CASE, OPT_MIN_TIME, OPT_SEED, OPT_DEVICE, OPT_GBPS, OPT_TFLOPS };

static const attnctl_opt opts[] = {
    {OPT_PLUGIN, "--plugin", 0, "NAME[/INNER]", 0, "the plugin or stack to time (required)", "@plugin"},
    {OPT_CASE, "--case", 0, "CASE", 1, "time this case (repeatable, at most 64; default: the families' bench lists)", NULL},
    {OPT_MIN_TIME, "--min-time", 0, "S", 0, "seconds of timed calls per case (default 1)", NULL},
    {OPT_SEED, "--seed", 0, "N", 0, "the random inputs' seed (default: a fresh one, printed)", NULL},
    {OPT_DEVICE, "--device", 0, "N", 0, "the plugin's device index (default 0)", NULL},
    {OPT_GBPS, "--roofline-gbps", 0, "G", 0, "the device's memory bandwidth: adds the fraction reached", NULL},
    {OPT_TFLOPS, "--roofline-tflops", 0, "T", 0, "the device's peak TFLOP/s: adds the fraction reached", NULL},
    {0},
};

static int parse_pos(const attnctl_cmd *cmd, const char *opt, const char *v, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (!v[0] || *end || !(x > 0) || x > 1e9) {
        attnctl_usage_error(cmd, "%s %s: expected a positive number", opt, attnctl_esc(v));
        return -1;
    }
    *out = x;
    return 0;
}

static void json_out(const htarget *t, const brow *rows, int n, double min_time, double gbps, double tflops,
                     uint64_t seed) {
    char date[32], sx[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(sx, sizeof sx, "0x%016llx", (unsigned long long)seed);
    cJSON *root = attnctl_json_root("bench");
    cJSON_AddStringToObject(root, "tool", "attnctl bench");
    cJSON_AddStringToObject(root, "version", SGL_ATTN_VERSION);
    cJSON_AddStringToObject(root, "plugin", htarget_stack_label(t));
    cJSON_AddItemToObject(root, "device", attnctl_json_str(t->caps.device_name));
    cJSON_AddItemToObject(root, "arch", attnctl_json_str(t->caps.arch_name));
    cJSON_AddStringToObject(root, "date", date);
    cJSON_AddItemToObject(root, "commit", attnctl_json_str(getenv("SGL_ATTN_COMMIT")));
    cJSON_AddStringToObject(root, "seed", sx);
    cJSON_AddNumberToObject(root, "min_time_s", min_time);
    cJSON *roof = cJSON_AddObjectToObject(root, "roofline");
    cJSON_AddItemToObject(roof, "gbps", attnctl_json_num(gbps > 0, gbps));
    cJSON_AddItemToObject(roof, "tflops", attnctl_json_num(tflops > 0, tflops));
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (int i = 0; i < n; i++) {
        const brow *w = &rows[i];
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "case", w->text);
        cJSON_AddStringToObject(c, "verdict", w->ok ? "pass" : hverdict_name(w->r.verdict));
        const double sec = w->st.median_s;
        if (!w->ok || !(sec > 0)) { /* not timed: what went wrong, and no numbers */
            cJSON_AddItemToObject(c, "message", attnctl_json_str(w->ok ? "no time measured" : w->r.message));
            cJSON_AddItemToArray(cases, c);
            continue;
        }
        cJSON_AddNumberToObject(c, "median_us", sec * 1e6);
        cJSON_AddNumberToObject(c, "min_us", w->st.min_s * 1e6);
        cJSON_AddNumberToObject(c, "max_us", w->st.max_s * 1e6);
        cJSON_AddNumberToObject(c, "tflops", w->flops / sec / 1e12);
        cJSON_AddNumberToObject(c, "gbps", w->bytes / sec / 1e9);
        cJSON_AddNumberToObject(c, "flops", w->flops);
        cJSON_AddNumberToObject(c, "bytes", w->bytes);
        cJSON_AddNumberToObject(c, "batches", w->st.batches);
        cJSON_AddNumberToObject(c, "calls", (double)w->st.calls);
        if (gbps > 0) cJSON_AddNumberToObject(c, "frac_bw", w->bytes / sec / 1e9 / gbps);
        if (tflops > 0) cJSON_AddNumberToObject(c, "frac_flops", w->flops / sec / 1e12 / tflops);
        cJSON_AddItemToArray(cases, c);
    }
    attnctl_json_print(root);
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common co;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &co, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    const char *plugin = NULL, *cases[64];
    int n_cases = 0, seed_given = 0;
    double min_time = 1.0, gbps = 0, tflops = 0;
    uint64_t seed = 0;
    uint32_t device = 0;
    for (int i = 0; i < a.n; i++) {
        const char *v = a.v[i].value;
        long long d;
        switch (a.v[i].id) {
        case OPT_PLUGIN: plugin = v; break;
        case OPT_CASE:
            if (n_cases == 64) return attnctl_usage_error(cmd, "at most 64 --case options");
            cases[n_cases++] = v;
            break;
        case OPT_MIN_TIME:
            if (parse_pos(cmd, "--min-time", v, &min_time)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_GBPS:
            if (parse_pos(cmd, "--roofline-gbps", v, &gbps)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_TFLOPS:
            if (parse_pos(cmd, "--roofline-tflops", v, &tflops)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_SEED:
            if (attnctl_u64_arg(cmd, "--seed", v, &seed)) return ATTNCTL_EXIT_USAGE;
            seed_given = 1;
            break;
        case OPT_DEVICE:
            if (attnctl_int_arg(cmd, "--device", v, 0, 1024, &d)) return ATTNCTL_EXIT_USAGE;
            device = (uint32_t)d;
            break;
        }
    }
    if (!plugin) return attnctl_usage_error(cmd, "--plugin NAME is required");
    if (!seed_given) seed = hrng_fresh_seed();
    FILE *tf = co.json ? stderr : stdout;
    sgl_attn_host *h = attnctl_open_host(&co, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    htarget t;
    char err[768];
    if (htarget_open(&t, h, plugin, device, err, sizeof err)) {
        fprintf(stderr, "attnctl bench: %s\n", attnctl_esc(err));
        htarget_close(&t);
        int code = sgl_attn_host_find_plugin(h, plugin) < 0 && !strchr(plugin, '/') ? ATTNCTL_EXIT_NOT_FOUND
                                                                                   : ATTNCTL_EXIT_FAIL;
        sgl_attn_host_close(h);
        return code;
    }
    /* default cases: the bench lists of the families that apply */
    const int explicit_cases = n_cases > 0;
    for (size_t fi = 0; !explicit_cases && fi < harness_family_count(); fi++) {
        const harness_family *f = harness_family_at(fi);
        if (!harness_family_applies(f, &t)) continue;
        for (const char *const *c = f->bench_cases; c && *c && n_cases < 64; c++) cases[n_cases++] = *c;
    }
    brow *rows = calloc((size_t)(n_cases ? n_cases : 1), sizeof *rows);
    int failed = 0;
    fprintf(tf, "attnctl bench: %s on %s, min time %.2f s, seed 0x%016llx\n", t.label, attnctl_esc(t.caps.device_name),
            min_time, (unsigned long long)seed);
    attnctl_progress progress;
    attnctl_progress_start(&progress, n_cases, co.json);
    fprintf(tf, "  %-64s %11s %9s %9s%s%s\n", "case", "median us", "TFLOP/s", "GB/s", gbps > 0 ? "   %BW" : "",
            tflops > 0 ? "  %FLOP" : "");
    for (int i = 0; rows && i < n_cases; i++) {
        brow *w = &rows[i];
        snprintf(w->text, sizeof w->text, "%s", cases[i]);
        hresult_init(&w->r);
        hcase c;
        const harness_family *f = NULL;
        hbench hb;
        memset(&hb, 0, sizeof hb);
        attnctl_progress_step(&progress, cases[i]);
        if (hcase_parse(cases[i], &c, err, sizeof err)) {
            hresult_error(&w->r, "%s", err);
        } else if (!(f = harness_family_for_mode(c.mode)) || !f->bench_prepare) {
            hresult_error(&w->r, "no family benches mode '%s'", c.mode);
        } else if (f->bench_prepare(f, &t, &c, hrng_case_seed(seed, c.text), &hb, &w->r) == 0) {
            if (hbench_time(&hb, &t.dev, min_time, &w->st, err, sizeof err)) hresult_fail(&w->r, "%s", err);
            else w->ok = 1;
            w->flops = hb.flops;
            w->bytes = hb.bytes;
            hb.release(hb.state);
        }
        attnctl_progress_clear(&progress);
        if (!w->ok) {
            fprintf(tf, "  %-64s %s: %s\n", w->text, hverdict_name(w->r.verdict), attnctl_esc(w->r.message));
            if (explicit_cases || w->r.verdict != HV_UNSUPPORTED) failed++;
            continue;
        }
        const double s = w->st.median_s;
        fprintf(tf, "  %-64s %11.1f %9.3f %9.2f", w->text, s * 1e6, w->flops / s / 1e12, w->bytes / s / 1e9);
        if (gbps > 0) fprintf(tf, " %6.1f%%", 100.0 * w->bytes / s / 1e9 / gbps);
        if (tflops > 0) fprintf(tf, " %6.1f%%", 100.0 * w->flops / s / 1e12 / tflops);
        fprintf(tf, "\n");
        fflush(tf);
    }
    if (co.json && rows) json_out(&t, rows, n_cases, min_time, gbps, tflops, seed);
    free(rows);
    htarget_close(&t);
    sgl_attn_host_close(h);
    return failed ? ATTNCTL_EXIT_FAIL : ATTNCTL_EXIT_OK;
}

const attnctl_cmd attnctl_cmd_bench = {
    .name = "bench",
    .run = run,
    .summary = "time a plugin on attention cases",
    .synopsis = "--plugin NAME[/INNER] [--case CASE]... [--min-time S] [options]",
    .description = "Times a plugin or stack on cases (docs/harness.md says what is timed and how FLOPs and bytes are\n"
                   "counted): the median, min and max per call, TFLOP/s and GB/s, and with a roofline the fraction\n"
                   "of it reached. --json is what bench/results/ keeps. On a terminal, stderr shows the progress.",
    .opts = opts,
    .common = COMMON_HOST | COMMON_VALIDATE | COMMON_JSON,
    .isolate_default = 0,
    .exit_codes = "0 every case timed (default cases: or not supported); 1 a case failed; 2 bad command line;\n"
                  "3 the host could not open; 4 the named plugin does not exist.",
};
