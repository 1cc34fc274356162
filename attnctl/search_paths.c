/* search_paths.c - `attnctl search-paths`: each plugin directory, where it
 * came from (options, SGL_ATTN_PLUGIN_PATH, drop-in) and what the host noted
 * about it; then notes about ignored entries and the conf file read. */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl search-paths [--json] [--plugin-path DIRS] [--conf FILE | --no-conf]\n");
}

int cmd_search_paths(int argc, char **argv) {
    attnctl_common c = {.isolate = 1};
    for (int i = 1; i < argc; i++) {
        int r = attnctl_common_opt(&c, argc, argv, &i);
        if (r < 0) return ATTNCTL_EXIT_USAGE;
        if (r == 0) {
            if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
                usage(stdout);
                return ATTNCTL_EXIT_OK;
            }
            fprintf(stderr, "attnctl search-paths: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ATTNCTL_EXIT_USAGE;
        }
    }
    sgl_attn_host *h = attnctl_open_host(&c);
    if (!h) return ATTNCTL_EXIT_ENV;
    size_t n = sgl_attn_host_search_path_count(h);
    size_t wdir = 9, wsrc = 6;
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || !d[0]) continue;
        if (strlen(d) > wdir) wdir = strlen(d);
        if (strlen(s) > wsrc) wsrc = strlen(s);
    }
    if (c.json) {
        fputs("{\"dirs\":[", stdout);
    } else {
        printf("%-*s  %-*s  %s\n", (int)wdir, "DIRECTORY", (int)wsrc, "SOURCE", "NOTE");
    }
    size_t dirs = 0, notes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || !d[0]) continue;
        if (c.json) {
            fputs(dirs ? ",{\"dir\":" : "{\"dir\":", stdout);
            attnctl_json_str(stdout, d);
            fputs(",\"source\":", stdout);
            attnctl_json_str(stdout, s);
            fputs(",\"note\":", stdout);
            attnctl_json_str(stdout, note);
            fputc('}', stdout);
        } else {
            printf("%-*s  %-*s  %s\n", (int)wdir, d, (int)wsrc, s, note[0] ? note : "-");
        }
        dirs++;
    }
    if (c.json) fputs("],\"notes\":[", stdout);
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || d[0]) continue;
        if (c.json) {
            if (notes) fputc(',', stdout);
            attnctl_json_str(stdout, note);
        } else {
            printf("note: %s\n", note);
        }
        notes++;
    }
    const char *conf = sgl_attn_host_conf_path(h);
    if (c.json) {
        fputs("],\"conf\":", stdout);
        attnctl_json_str(stdout, conf);
        fputs("}\n", stdout);
    } else {
        printf("conf: %s\n", conf[0] ? conf : c.no_conf ? "none (--no-conf)" : "none found (built-in defaults)");
    }
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}
