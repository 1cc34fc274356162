/* report.c - `attnctl report`: one block to paste into a bug report:
 * versions, the system, the conf, the search paths, the environment
 * variables that change what the host does, every plugin with its whole
 * reason, the devices, and what this machine runs by default. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "attnctl.h"

/* Read by the host and the plugins, or by the runtimes they load. */
static const char *const env_vars[] = {
    "SGL_ATTN_PLUGIN_PATH", "SGL_ATTN_CONF", "SGL_ATTN_DEBUG", "SGL_ATTN_VALIDATE", "SGL_ATTN_NO_UNLOAD",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH",
    "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "LD_LIBRARY_PATH", "LD_PRELOAD", "XDG_CACHE_HOME", "NO_COLOR",
};
#define N_ENV (sizeof env_vars / sizeof env_vars[0])

extern char **environ;

/* The other SGL_ATTN_* variables that are set (plugin tuning), sorted. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static size_t other_sgl_vars(const char **out, size_t cap) {
    size_t n = 0;
    for (char **e = environ; e && *e && n < cap; e++) {
        if (strncmp(*e, "SGL_ATTN_", 9)) continue;
        size_t len = strcspn(*e, "=");
        int known = 0;
        for (size_t k = 0; k < N_ENV; k++) known |= strlen(env_vars[k]) == len && !strncmp(env_vars[k], *e, len);
        if (!known) out[n++] = *e;
    }
    qsort(out, n, sizeof *out, cmp_str);
    return n;
}

static const char *library_path(void) {
    static char buf[4096];
    Dl_info di;
    if (!dladdr((void *)sgl_attn_host_open, &di) || !di.dli_fname) return "";
    char *real = realpath(di.dli_fname, NULL);
    snprintf(buf, sizeof buf, "%s", real ? real : di.dli_fname);
    free(real);
    return buf;
}

static void print_json(sgl_attn_host *h, const attnctl_default *d, const struct utsname *u) {
    cJSON *root = attnctl_json_root("report");
    cJSON *v = cJSON_AddObjectToObject(root, "versions");
    cJSON_AddStringToObject(v, "attnctl", SGL_ATTN_VERSION);
    cJSON_AddStringToObject(v, "libsglattn", SGL_ATTN_VERSION);
    char abi[16];
    snprintf(abi, sizeof abi, "%d.%d", SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR);
    cJSON_AddStringToObject(v, "abi", abi);
    cJSON_AddNumberToObject(v, "json_schema", ATTNCTL_JSON_SCHEMA);
    cJSON_AddItemToObject(v, "library_path", attnctl_json_str(library_path()));
    cJSON *sys = cJSON_AddObjectToObject(root, "system");
    cJSON_AddStringToObject(sys, "os", u->sysname);
    cJSON_AddStringToObject(sys, "release", u->release);
    cJSON_AddStringToObject(sys, "machine", u->machine);
    cJSON_AddNumberToObject(sys, "cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddItemToObject(root, "conf", attnctl_json_str(sgl_attn_host_conf_path(h)));
    cJSON *sp = cJSON_AddArrayToObject(root, "search_paths");
    for (size_t i = 0; i < sgl_attn_host_search_path_count(h); i++) {
        const char *dir, *src, *note;
        if (sgl_attn_host_search_path(h, i, &dir, &src, &note)) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "dir", attnctl_json_str(dir));
        cJSON_AddStringToObject(o, "source", src);
        cJSON_AddItemToObject(o, "note", attnctl_json_str(note));
        cJSON_AddItemToArray(sp, o);
    }
    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    for (size_t k = 0; k < N_ENV; k++) cJSON_AddItemToObject(env, env_vars[k], attnctl_json_str(getenv(env_vars[k])));
    const char *others[128];
    size_t n = other_sgl_vars(others, 128);
    for (size_t k = 0; k < n; k++) {
        char name[128];
        size_t len = strcspn(others[k], "=");
        snprintf(name, sizeof name, "%.*s", (int)len, others[k]);
        cJSON_AddStringToObject(env, name, others[k] + len + 1);
    }
    cJSON *dd = cJSON_AddObjectToObject(root, "default");
    cJSON_AddBoolToObject(dd, "ok", d->ok);
    cJSON_AddItemToObject(dd, "label", attnctl_json_str(d->ok ? d->label : NULL));
    cJSON_AddItemToObject(dd, "platform", attnctl_json_str(d->ok ? d->platform : NULL));
    cJSON_AddItemToObject(dd, "device", attnctl_json_num(d->ok && d->device >= 0, d->device));
    cJSON_AddItemToObject(dd, "device_name", attnctl_json_str(d->ok ? d->device_name : NULL));
    cJSON_AddBoolToObject(dd, "cpu_fallback", d->cpu_fallback);
    cJSON_AddItemToObject(dd, "error", attnctl_json_str(d->ok ? NULL : d->label));
    cJSON *pl = cJSON_AddArrayToObject(root, "plugins");
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        cJSON *p = attnctl_json_plugin(h, i);
        if (p) cJSON_AddItemToArray(pl, p);
    }
    attnctl_json_print(root);
}

static void print_text(const attnctl_common *c, sgl_attn_host *h, const attnctl_default *d, const struct utsname *u) {
    printf("---- sglattn report: paste from here ----\n");
    printf("attnctl %s, libsglattn %s (%s), plugin ABI %d.%d, --json schema %d\n", SGL_ATTN_VERSION, SGL_ATTN_VERSION,
           attnctl_esc(library_path()), SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR, ATTNCTL_JSON_SCHEMA);
    printf("system: %s %s %s, %ld CPUs\n", attnctl_esc(u->sysname), attnctl_esc(u->release), attnctl_esc(u->machine),
           sysconf(_SC_NPROCESSORS_ONLN));
    const char *conf = sgl_attn_host_conf_path(h);
    printf("conf: %s\n", conf[0] ? attnctl_esc(conf) : c->no_conf ? "none (--no-conf)" : "none found (built-in defaults)");
    printf("search paths:\n");
    for (size_t i = 0; i < sgl_attn_host_search_path_count(h); i++) {
        const char *dir, *src, *note;
        if (sgl_attn_host_search_path(h, i, &dir, &src, &note)) continue;
        if (dir[0]) printf("  %s (%s)%s%s\n", attnctl_esc(dir), src, note[0] ? ": " : "", attnctl_esc(note));
        else printf("  note: %s\n", attnctl_esc(note));
    }
    printf("environment:\n");
    for (size_t k = 0; k < N_ENV; k++) {
        const char *v = getenv(env_vars[k]);
        if (v) printf("  %s=%s\n", env_vars[k], attnctl_esc(v));
    }
    const char *others[128];
    size_t n = other_sgl_vars(others, 128);
    for (size_t k = 0; k < n; k++) printf("  %s\n", attnctl_esc(others[k]));
    printf("  unset:");
    for (size_t k = 0; k < N_ENV; k++)
        if (!getenv(env_vars[k])) printf(" %s", env_vars[k]);
    printf("\nplugins:\n");
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in)) continue;
        char role[64];
        printf("  %s %s %s %s %s  %s (%s)\n", in.name[0] ? in.name : "-", in.version[0] ? attnctl_esc(in.version) : "-",
               in.name[0] ? sgl_attn_platform_name(in.platform) : "-", attnctl_role(&in, role, sizeof role),
               sgl_attn_plugin_status_name(in.status), attnctl_esc(in.path), in.source);
        const char *why = sgl_attn_host_plugin_reason(h, i);
        if (why[0]) printf("      %s\n", attnctl_esc(why));
        for (size_t k = 0; k < sgl_attn_host_plugin_note_count(h, i); k++)
            printf("      ! %s\n", attnctl_esc(sgl_attn_host_plugin_note(h, i, k)));
    }
    printf("devices:\n");
    attnctl_common plain = *c;
    plain.color = COLOR_NEVER;
    attnctl_print_devices(&plain, h);
    if (d->ok)
        printf("default: %s on %s device %d (%s)%s\n", d->label, d->platform, d->device, attnctl_esc(d->device_name),
               d->cpu_fallback ? ", a CPU fallback past a usable GPU plugin" : "");
    else printf("default: none: %s\n", attnctl_esc(d->label));
    printf("---- sglattn report: to here ----\n");
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common c;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &c, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    sgl_attn_host *h = attnctl_open_host(&c, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    attnctl_default d;
    attnctl_default_choice(h, &d);
    struct utsname u;
    if (uname(&u)) memset(&u, 0, sizeof u);
    if (c.json) print_json(h, &d, &u);
    else print_text(&c, h, &d, &u);
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}

const attnctl_cmd attnctl_cmd_report = {
    .name = "report",
    .run = run,
    .summary = "one block to paste into a bug report",
    .synopsis = "[--json] [options]",
    .description = "Everything a bug report about sglattn needs, in one block: the versions and the library's path,\n"
                   "the system, the conf file, the search paths, the environment variables that change what the\n"
                   "host and the plugins do, every plugin with its whole reason, the devices, and what this machine\n"
                   "runs by default.",
    .opts = NULL,
    .common = COMMON_HOST | COMMON_JSON,
    .isolate_default = 1,
    .exit_codes = "0 printed; 2 bad command line; 3 the host could not open.",
};
