/* list_plugins.c - `attnctl list-plugins`: every plugin found, what it can do
 * here, or why not.  The table fits the terminal: short columns, the reason
 * wrapped at word boundaries (whole with -v); the first line says what this
 * machine runs by default.  Probes run in a child process by default. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

enum { OPT_ALL = 1 };

static const attnctl_opt opts[] = {
    {OPT_ALL, "--all", 0, NULL, 0, "also list shadowed plugins and files that failed to load", NULL},
    {0},
};

static int shown_by_default(int status) {
    return status == SGL_ATTN_PLUGIN_USABLE || status == SGL_ATTN_PLUGIN_UNAVAILABLE ||
           status == SGL_ATTN_PLUGIN_DISABLED;
}

static cJSON *json_default(const attnctl_default *d) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", d->ok);
    cJSON_AddItemToObject(o, "label", attnctl_json_str(d->ok ? d->label : NULL));
    cJSON_AddItemToObject(o, "platform", attnctl_json_str(d->ok ? d->platform : NULL));
    cJSON_AddItemToObject(o, "device", attnctl_json_num(d->ok && d->device >= 0, d->device));
    cJSON_AddItemToObject(o, "device_name", attnctl_json_str(d->ok ? d->device_name : NULL));
    cJSON_AddBoolToObject(o, "cpu_fallback", d->cpu_fallback);
    cJSON_AddItemToObject(o, "error", attnctl_json_str(d->ok ? NULL : d->label));
    return o;
}

static void print_json(sgl_attn_host *h) {
    cJSON *root = attnctl_json_root("list-plugins");
    attnctl_default d;
    attnctl_default_choice(h, &d);
    cJSON_AddItemToObject(root, "default", json_default(&d));
    cJSON_AddItemToObject(root, "caps_file", attnctl_json_str(sgl_attn_host_caps_file(h)));
    cJSON *arr = cJSON_AddArrayToObject(root, "plugins");
    size_t count[SGL_ATTN_PLUGIN_STATUS_COUNT_] = {0};
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        cJSON *p = attnctl_json_plugin(h, i);
        if (!p) continue;
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) == SGL_ATTN_OK && in.status >= 0 &&
            in.status < SGL_ATTN_PLUGIN_STATUS_COUNT_)
            count[in.status]++;
        cJSON_AddItemToArray(arr, p);
    }
    cJSON *counts = cJSON_AddObjectToObject(root, "counts");
    for (int s = 0; s < SGL_ATTN_PLUGIN_STATUS_COUNT_; s++)
        cJSON_AddNumberToObject(counts, sgl_attn_plugin_status_name(s), (double)count[s]);
    attnctl_json_print(root);
}

/* Arch of the first available device (else device 0), "+N" for more; with
 * verbose, the device's name too. */
static const char *where(sgl_attn_host *h, size_t i, const sgl_attn_plugin_info *in, int verbose, char *buf,
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
    if (!have) return buf;
    int n = snprintf(buf, size, "%s", attnctl_esc(pick.arch_name[0] ? pick.arch_name : "-"));
    if (in->n_devices > 1 && n >= 0 && (size_t)n < size) n += snprintf(buf + n, size - (size_t)n, " +%u", in->n_devices - 1);
    if (verbose && pick.device_name[0] && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " (%s)", attnctl_esc(pick.device_name));
    return buf;
}

typedef struct row {
    char name[80], version[48], platform[16], role[64], status[16];
    char *detail; /* escaped reason or where it runs */
    int st;
    size_t index;
} row;

static void print_table(const attnctl_common *c, sgl_attn_host *h, int all) {
    const int color = attnctl_color(c, stdout), verbose = c->verbose;
    const int cols = attnctl_columns();
    size_t n = sgl_attn_host_plugin_count(h);
    size_t count[SGL_ATTN_PLUGIN_STATUS_COUNT_] = {0};
    row *rows = calloc(n ? n : 1, sizeof *rows);
    size_t nr = 0, claims = 0;
    if (!rows) return;

    attnctl_default d;
    attnctl_default_choice(h, &d);
    const char *caps_file = sgl_attn_host_caps_file(h);
    if (d.ok) {
        char head[512];
        snprintf(head, sizeof head, "%s here: %s on %s device %d (%s) for a plain model (GQA 32/8, head dim 128, bf16)%s",
                 caps_file[0] ? "default on the machine of the caps file" : "default", d.label, d.platform, d.device,
                 attnctl_esc(d.device_name),
                 d.cpu_fallback ? "; a GPU plugin is usable but refused it: attnctl select --explain says why" : "");
        printf("%s", attnctl_sgr(color, "bold"));
        attnctl_wrap(stdout, head, 0, 2, cols);
        printf("%s\n", attnctl_sgr_reset(color));
    } else {
        printf("%sdefault here: none: %s%s\n", attnctl_sgr(color, "warning"), attnctl_esc(d.label),
               attnctl_sgr_reset(color));
    }

    int w[5] = {4, 7, 8, 4, 6}; /* NAME VERSION PLATFORM ROLE STATUS */
    for (size_t i = 0; i < n; i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) continue;
        if (in.status >= 0 && in.status < SGL_ATTN_PLUGIN_STATUS_COUNT_) count[in.status]++;
        if (!all && !shown_by_default(in.status)) continue;
        row *r = &rows[nr++];
        int desc = attnctl_has_descriptor(&in);
        r->st = in.status;
        r->index = i;
        if (desc) snprintf(r->name, sizeof r->name, "%s", attnctl_esc(in.name));
        else {
            const char *slash = strrchr(in.path, '/');
            snprintf(r->name, sizeof r->name, "(%s)", attnctl_esc(slash ? slash + 1 : in.path));
        }
        snprintf(r->version, sizeof r->version, "%s", desc && in.version[0] ? attnctl_esc(in.version) : "-");
        snprintf(r->platform, sizeof r->platform, "%s", desc ? sgl_attn_platform_name(in.platform) : "-");
        if (verbose) attnctl_role(&in, r->role, sizeof r->role);
        else snprintf(r->role, sizeof r->role, "%s", attnctl_role_name(&in) ? attnctl_role_name(&in) : "-");
        snprintf(r->status, sizeof r->status, "%s", sgl_attn_plugin_status_name(in.status));
        char buf[512];
        const char *why = sgl_attn_host_plugin_reason(h, i);
        r->detail = strdup(in.status == SGL_ATTN_PLUGIN_USABLE ? where(h, i, &in, verbose, buf, sizeof buf)
                                                              : attnctl_esc(why[0] ? why : "-"));
        const char *cells[5] = {r->name, r->version, r->platform, r->role, r->status};
        for (int k = 0; k < 5; k++)
            if (attnctl_width(cells[k]) > w[k]) w[k] = attnctl_width(cells[k]);
        claims += sgl_attn_host_plugin_note_count(h, i) > 0;
    }
    /* The detail column takes what is left; too little, and it goes on its
     * own lines under the row. */
    int fixed = w[0] + 2 + (verbose ? w[1] + 2 : 0) + w[2] + 2 + w[3] + 2 + w[4] + 2;
    int below = cols > 0 && cols - fixed < 24;
    printf("%-*s  ", w[0], "NAME");
    if (verbose) printf("%-*s  ", w[1], "VERSION");
    printf("%-*s  %-*s  %-*s  %s\n", w[2], "PLATFORM", w[3], "ROLE", w[4], "STATUS", below ? "" : "WHERE / WHY");
    for (size_t k = 0; k < nr; k++) {
        const row *r = &rows[k];
        const char *st = sgl_attn_plugin_status_name(r->st);
        printf("%-*s  ", w[0], r->name);
        if (verbose) printf("%-*s  ", w[1], r->version);
        printf("%-*s  %-*s  %s%-*s%s  ", w[2], r->platform, w[3], r->role, attnctl_sgr(color, st), w[4], r->status,
               attnctl_sgr_reset(color));
        const char *detail = r->detail ? r->detail : "-";
        if (below) {
            printf("\n    ");
            if (verbose) attnctl_wrap(stdout, detail, 4, 4, cols);
            else attnctl_wrap_short(stdout, detail, 4, 4, cols, 3);
        } else if (!verbose) {
            attnctl_wrap_short(stdout, detail, fixed, fixed, cols, 3); /* -v: whole */
        } else {
            attnctl_wrap(stdout, detail, fixed, fixed, cols);
        }
        putchar('\n');
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        sgl_attn_host_plugin_info(h, r->index, &in);
        if (verbose) {
            char p[4200];
            snprintf(p, sizeof p, "%s (%s)", attnctl_esc(in.path), attnctl_esc(in.source));
            printf("    ");
            attnctl_wrap(stdout, p, 4, 6, cols);
            putchar('\n');
        }
        for (size_t m = 0; m < sgl_attn_host_plugin_note_count(h, r->index); m++) {
            char note[2048];
            snprintf(note, sizeof note, "! %s", attnctl_esc(sgl_attn_host_plugin_note(h, r->index, m)));
            printf("    %s", attnctl_sgr(color, "warning"));
            attnctl_wrap(stdout, note, 4, 6, cols);
            printf("%s\n", attnctl_sgr_reset(color));
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
    if (claims) printf("; %zu with name claims (marked !)", claims);
    if (caps_file[0]) printf("; caps from %s", attnctl_esc(caps_file));
    putchar('\n');
    for (size_t k = 0; k < nr; k++) free(rows[k].detail);
    free(rows);
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common c;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &c, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    int all = 0;
    for (int i = 0; i < a.n; i++)
        if (a.v[i].id == OPT_ALL) all = 1;
    sgl_attn_host *h = attnctl_open_host(&c, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    if (c.json) print_json(h);
    else print_table(&c, h, all);
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}

const attnctl_cmd attnctl_cmd_list_plugins = {
    .name = "list-plugins",
    .run = run,
    .summary = "every plugin found, what it can do here, or why not",
    .synopsis = "[--all] [-v] [--json] [options]",
    .description = "Every plugin file found, in scan order (the search directories in order, files sorted by name,\n"
                   "then the plugins built into libsglattn), with what it can do here or why not. The first line\n"
                   "says what this machine runs by default for a plain full-attention model. A file that fails to\n"
                   "load is listed with its reason, and is no error: the exit status is 0. Name claims (a plugin\n"
                   "named like a sglang backend, an alias another plugin has) are marked !.",
    .opts = opts,
    .common = COMMON_HOST | COMMON_CAPS | COMMON_JSON | COMMON_VERBOSE | COMMON_COLOR,
    .isolate_default = 1,
    .exit_codes = "0 listed (whatever the plugins' status); 2 bad command line; 3 the host could not open.",
};
