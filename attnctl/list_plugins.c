/* list_plugins.c - `attnctl list-plugins [--all] [--json]`: every plugin
 * found, what it can do here, or why not.  Probes run in a child process by
 * default (--no-isolate to run them in attnctl itself). */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

#define REASON_WIDTH 60 /* table column; -v or --json for the whole text */

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl list-plugins [--all] [--json] [-v] [--no-isolate]\n"
               "                            [--plugin-path DIRS] [--conf FILE | --no-conf]\n"
               "  --all   also list shadowed plugins and files that failed to load\n"
               "  --json  an array with every file, failures included\n");
}

static int shown_by_default(int status) {
    return status == SGL_ATTN_PLUGIN_USABLE || status == SGL_ATTN_PLUGIN_UNAVAILABLE ||
           status == SGL_ATTN_PLUGIN_DISABLED;
}

/* Arch of the first available device (else device 0), "+N" for more. */
static const char *arch_of(sgl_attn_host *h, size_t i, const sgl_attn_plugin_info *in, char *buf,
                           size_t size) {
    snprintf(buf, size, "-");
    sgl_attn_caps pick = {.struct_size = 0};
    int have = 0;
    for (uint32_t d = 0; d < in->n_devices; d++) {
        sgl_attn_caps cp = {.struct_size = sizeof cp};
        if (sgl_attn_host_plugin_caps(h, i, d, &cp) != SGL_ATTN_OK) continue;
        if (!have || (cp.available && !pick.available)) {
            pick = cp;
            have = 1;
        }
    }
    if (have && pick.arch_name[0]) {
        if (in->n_devices > 1) snprintf(buf, size, "%s +%u", pick.arch_name, in->n_devices - 1);
        else snprintf(buf, size, "%s", pick.arch_name);
    }
    return buf;
}

static void print_json(sgl_attn_host *h) {
    size_t n = sgl_attn_host_plugin_count(h);
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) continue;
        char role[64];
        int d = attnctl_has_descriptor(&in);
        fputs(i ? ",\n{\"name\":" : "\n{\"name\":", stdout);
        if (d) attnctl_json_str(stdout, in.name);
        else fputs("null", stdout);
        fputs(",\"version\":", stdout);
        attnctl_json_str(stdout, in.version);
        fputs(",\"description\":", stdout);
        attnctl_json_str(stdout, in.description);
        fputs(",\"license\":", stdout);
        attnctl_json_str(stdout, in.license);
        fputs(",\"path\":", stdout);
        attnctl_json_str(stdout, in.path);
        fputs(",\"source\":", stdout);
        attnctl_json_str(stdout, in.source);
        fputs(",\"platform\":", stdout);
        attnctl_json_str(stdout, d ? sgl_attn_platform_name(in.platform) : "");
        fputs(",\"role\":", stdout);
        attnctl_json_str(stdout, d ? attnctl_role(&in, role, sizeof role) : "");
        fputs(",\"status\":", stdout);
        attnctl_json_str(stdout, sgl_attn_plugin_status_name(in.status));
        fputs(",\"reason\":", stdout);
        attnctl_json_str(stdout, in.reason);
        if (in.abi_major || in.abi_minor) printf(",\"abi\":\"%u.%u\"", in.abi_major, in.abi_minor);
        else fputs(",\"abi\":null", stdout);
        fputs(",\"aliases\":[", stdout);
        for (uint32_t k = 0; k < in.n_aliases; k++) {
            if (k) fputc(',', stdout);
            attnctl_json_str(stdout, in.aliases[k]);
        }
        fputs("],\"model_types\":[", stdout);
        for (uint32_t k = 0; k < in.n_model_types; k++) {
            if (k) fputc(',', stdout);
            attnctl_json_str(stdout, in.model_types[k]);
        }
        fputs("],\"devices\":[", stdout);
        for (uint32_t k = 0; k < in.n_devices; k++) {
            sgl_attn_caps cp = {.struct_size = sizeof cp};
            if (sgl_attn_host_plugin_caps(h, i, k, &cp) != SGL_ATTN_OK) continue;
            if (k) fputc(',', stdout);
            attnctl_json_caps(stdout, &cp, k);
        }
        fputs("]}", stdout);
    }
    fputs(n ? "\n]\n" : "]\n", stdout);
}

typedef struct row {
    const char *cell[8];
} row;

static void print_table(sgl_attn_host *h, int all, int verbose) {
    static const char *const head[8] = {"NAME", "VERSION", "PLATFORM", "ROLE",
                                        "STATUS", "REASON", "ARCH", "PATH"};
    size_t n = sgl_attn_host_plugin_count(h);
    size_t count[SGL_ATTN_PLUGIN_STATUS_COUNT_] = {0};
    size_t width[8];
    for (int k = 0; k < 8; k++) width[k] = strlen(head[k]);
    /* Two passes over the same rows: widths, then printing. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (int k = 0; k < 7; k++) printf("%-*s  ", (int)width[k], head[k]);
            printf("%s\n", head[7]);
        }
        for (size_t i = 0; i < n; i++) {
            sgl_attn_plugin_info in = {.struct_size = sizeof in};
            if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) continue;
            if (pass == 0 && in.status >= 0 && in.status < SGL_ATTN_PLUGIN_STATUS_COUNT_) count[in.status]++;
            if (!all && !shown_by_default(in.status)) continue;
            int d = attnctl_has_descriptor(&in);
            char role[64], arch[64], reason[REASON_WIDTH + 8];
            const char *why = in.reason[0] ? in.reason : "-";
            if (!verbose && strlen(why) > REASON_WIDTH) {
                snprintf(reason, sizeof reason, "%.*s...", REASON_WIDTH - 3, why);
                why = reason;
            }
            row r = {{d ? in.name : "-", d && in.version[0] ? in.version : "-",
                      d ? sgl_attn_platform_name(in.platform) : "-", d ? attnctl_role(&in, role, sizeof role) : "-",
                      sgl_attn_plugin_status_name(in.status), why, arch_of(h, i, &in, arch, sizeof arch),
                      in.path}};
            if (pass == 0) {
                for (int k = 0; k < 8; k++)
                    if (strlen(r.cell[k]) > width[k]) width[k] = strlen(r.cell[k]);
            } else {
                for (int k = 0; k < 7; k++) printf("%-*s  ", (int)width[k], r.cell[k]);
                printf("%s\n", r.cell[7]);
            }
        }
    }
    size_t hidden = 0;
    if (!all)
        for (int s = 0; s < SGL_ATTN_PLUGIN_STATUS_COUNT_; s++)
            if (!shown_by_default(s)) hidden += count[s];
    printf("%zu plugin file%s:", n, n == 1 ? "" : "s");
    const char *sep = " ";
    for (int s = 0; s < SGL_ATTN_PLUGIN_STATUS_COUNT_; s++)
        if (count[s]) {
            printf("%s%zu %s", sep, count[s], sgl_attn_plugin_status_name(s));
            sep = ", ";
        }
    if (n == 0) printf(" none found (attnctl search-paths shows where it looked)");
    if (hidden) printf(" (%zu not shown: --all lists them)", hidden);
    putchar('\n');
}

int cmd_list_plugins(int argc, char **argv) {
    attnctl_common c = {.isolate = 1}; /* a crashing probe must not take attnctl down */
    int all = 0;
    for (int i = 1; i < argc; i++) {
        int r = attnctl_common_opt(&c, argc, argv, &i);
        if (r < 0) return ATTNCTL_EXIT_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return ATTNCTL_EXIT_OK;
        } else {
            fprintf(stderr, "attnctl list-plugins: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ATTNCTL_EXIT_USAGE;
        }
    }
    sgl_attn_host *h = attnctl_open_host(&c);
    if (!h) return ATTNCTL_EXIT_ENV;
    if (c.json) print_json(h);
    else print_table(h, all, c.verbose);
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}
