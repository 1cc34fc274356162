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

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl bench --plugin NAME[/INNER] [--case CASE]... [--min-time S] [--seed N] [--device N]\n"
               "                     [--roofline-gbps G] [--roofline-tflops T] [--json]\n");
}

static double parse_pos(const char *opt, const char *v, int *bad) {
    char *end;
    double x = strtod(v, &end);
    if (*end || !(x > 0) || x > 1e9) {
        fprintf(stderr, "attnctl bench: %s %s: expected a positive number\n", opt, v);
        *bad = 1;
    }
    return x;
}

static void json_out(const htarget *t, const brow *rows, int n, double min_time, double gbps, double tflops,
                     uint64_t seed) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *commit = getenv("SGL_ATTN_COMMIT");
    printf("{\"tool\": \"attnctl bench\", \"version\": \"%s\", \"plugin\": ", SGL_ATTN_VERSION);
    attnctl_json_str(stdout, htarget_stack_label(t));
    printf(", \"device\": ");
    attnctl_json_str(stdout, t->caps.device_name);
    printf(", \"arch\": ");
    attnctl_json_str(stdout, t->caps.arch_name);
    printf(", \"date\": \"%s\", \"commit\": ", date);
    attnctl_json_str(stdout, commit ? commit : "");
    printf(", \"seed\": \"0x%016llx\", \"min_time_s\": %g, \"roofline\": {\"gbps\": %g, \"tflops\": %g}, \"cases\": [",
           (unsigned long long)seed, min_time, gbps, tflops);
    for (int i = 0; i < n; i++) {
        const brow *w = &rows[i];
        printf("%s\n  {\"case\": ", i ? "," : "");
        attnctl_json_str(stdout, w->text);
        if (!w->ok) {
            printf(", \"verdict\": ");
            attnctl_json_str(stdout, hverdict_name(w->r.verdict));
            printf(", \"message\": ");
            attnctl_json_str(stdout, w->r.message);
            printf("}");
            continue;
        }
        const double s = w->st.median_s;
        printf(", \"median_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"tflops\": %.4f, \"gbps\": %.3f, "
               "\"flops\": %.6g, \"bytes\": %.6g, \"batches\": %d, \"calls\": %ld",
               s * 1e6, w->st.min_s * 1e6, w->st.max_s * 1e6, w->flops / s / 1e12, w->bytes / s / 1e9, w->flops,
               w->bytes, w->st.batches, w->st.calls);
        if (gbps > 0) printf(", \"frac_bw\": %.4f", w->bytes / s / 1e9 / gbps);
        if (tflops > 0) printf(", \"frac_flops\": %.4f", w->flops / s / 1e12 / tflops);
        printf("}");
    }
    printf("\n]}\n");
}

int cmd_bench(int argc, char **argv) {
    attnctl_common co;
    memset(&co, 0, sizeof co);
    const char *plugin = NULL, *cases[64];
    int n_cases = 0, bad = 0, seed_given = 0;
    double min_time = 1.0, gbps = 0, tflops = 0;
    uint64_t seed = 0;
    uint32_t device = 0;
    for (int i = 1; i < argc; i++) {
        int k = attnctl_common_opt(&co, argc, argv, &i);
        if (k < 0) return ATTNCTL_EXIT_USAGE;
        if (k > 0) continue;
        const char *a = argv[i];
        const int has_val = i + 1 < argc;
        if (!strcmp(a, "--plugin") && has_val) plugin = argv[++i];
        else if (!strcmp(a, "--case") && has_val && n_cases < 64) cases[n_cases++] = argv[++i];
        else if (!strcmp(a, "--min-time") && has_val) min_time = parse_pos(a, argv[++i], &bad);
        else if (!strcmp(a, "--roofline-gbps") && has_val) gbps = parse_pos(a, argv[++i], &bad);
        else if (!strcmp(a, "--roofline-tflops") && has_val) tflops = parse_pos(a, argv[++i], &bad);
        else if (!strcmp(a, "--seed") && has_val) {
            char *end;
            seed = strtoull(argv[++i], &end, 0);
            seed_given = 1;
            bad |= *end != 0;
        } else if (!strcmp(a, "--device") && has_val) {
            device = (uint32_t)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ATTNCTL_EXIT_OK;
        } else {
            fprintf(stderr, "attnctl bench: unknown or incomplete option '%s'\n", a);
            bad = 1;
        }
    }
    if (bad || !plugin) {
        if (!plugin && !bad) fprintf(stderr, "attnctl bench: --plugin is required\n");
        usage(stderr);
        return ATTNCTL_EXIT_USAGE;
    }
    if (!seed_given) seed = hrng_fresh_seed();
    FILE *tf = co.json ? stderr : stdout;
    sgl_attn_host *h = attnctl_open_host(&co);
    if (!h) return ATTNCTL_EXIT_ENV;
    htarget t;
    char err[768];
    if (htarget_open(&t, h, plugin, device, err, sizeof err)) {
        fprintf(stderr, "attnctl bench: %s\n", err);
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
    fprintf(tf, "attnctl bench: %s on %s, min time %.2f s, seed 0x%016llx\n", t.label, t.caps.device_name, min_time,
            (unsigned long long)seed);
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
        if (!w->ok) {
            fprintf(tf, "  %-64s %s: %s\n", w->text, hverdict_name(w->r.verdict), w->r.message);
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
