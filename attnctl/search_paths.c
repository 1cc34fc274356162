/* search_paths.c - `attnctl search-paths`: each plugin directory, where it
 * came from (options, SGL_ATTN_PLUGIN_PATH, drop-in) and what the host noted
 * about it; then notes about ignored entries and the conf file read. */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common c;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &c, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    sgl_attn_host *h = attnctl_open_host(&c, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    size_t n = sgl_attn_host_search_path_count(h);
    const char *conf = sgl_attn_host_conf_path(h);
    if (c.json) {
        cJSON *root = attnctl_json_root("search-paths");
        cJSON *dirs = cJSON_AddArrayToObject(root, "dirs"), *notes = cJSON_AddArrayToObject(root, "notes");
        for (size_t i = 0; i < n; i++) {
            const char *d, *s, *note;
            if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK) continue;
            if (!d[0]) {
                cJSON_AddItemToArray(notes, cJSON_CreateString(note));
                continue;
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "dir", d);
            cJSON_AddStringToObject(o, "source", s);
            cJSON_AddItemToObject(o, "note", attnctl_json_str(note));
            cJSON_AddItemToArray(dirs, o);
        }
        cJSON_AddItemToObject(root, "conf", attnctl_json_str(conf));
        attnctl_json_print(root);
        sgl_attn_host_close(h);
        return ATTNCTL_EXIT_OK;
    }
    int wdir = 9, wsrc = 6;
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || !d[0]) continue;
        if (attnctl_width(attnctl_esc(d)) > wdir) wdir = attnctl_width(attnctl_esc(d));
        if ((int)strlen(s) > wsrc) wsrc = (int)strlen(s);
    }
    printf("%-*s  %-*s  %s\n", wdir, "DIRECTORY", wsrc, "SOURCE", "NOTE");
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || !d[0]) continue;
        const char *e = attnctl_esc(d);
        printf("%s%*s  %-*s  %s\n", e, wdir - attnctl_width(e), "", wsrc, s, note[0] ? attnctl_esc(note) : "-");
    }
    for (size_t i = 0; i < n; i++) {
        const char *d, *s, *note;
        if (sgl_attn_host_search_path(h, i, &d, &s, &note) != SGL_ATTN_OK || d[0]) continue;
        printf("note: %s\n", attnctl_esc(note));
    }
    printf("conf: %s\n", conf[0] ? attnctl_esc(conf) : c.no_conf ? "none (--no-conf)" : "none found (built-in defaults)");
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}

const attnctl_cmd attnctl_cmd_search_paths = {
    .name = "search-paths",
    .run = run,
    .summary = "each plugin directory and where it came from, and the conf file read",
    .synopsis = "[--json] [options]",
    .description = "Each plugin directory in search order with where it came from (options, SGL_ATTN_PLUGIN_PATH,\n"
                   "drop-in) and a note (does not exist, not a directory, relative), then notes that concern no\n"
                   "single directory (empty components skipped, a variable ignored under setuid), then the conf\n"
                   "file that was read.",
    .opts = NULL,
    .common = COMMON_PATHS | COMMON_CONF | COMMON_JSON,
    .isolate_default = 1,
    .exit_codes = "0 listed; 2 bad command line; 3 the host could not open.",
};
