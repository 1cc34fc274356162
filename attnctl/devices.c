/* devices.c - `attnctl devices`: each physical device once, with the plugins
 * that can use it and those that cannot (and why); `--json` is the machine
 * file that `attnctl select --caps-from` reads on another machine. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

/* ------------------------------------------------------ physical devices */

/* One device of the machine: a platform's device index.  Plugins of one
 * platform number devices alike (the runtime's ordinal), so (platform,
 * index) names it; a probe that found no device ("none", not available)
 * names none. */
typedef struct user {
    size_t plugin;
    uint32_t dev;
    int available;
    int full;
} user;

typedef struct phys {
    int platform;
    uint32_t index;
    sgl_attn_caps caps; /* the best description: an available full plugin's */
    int have_full_available;
    user users[64];
    size_t n_users;
} phys;

static int real_device(const sgl_attn_caps *c) {
    return c->available || (c->device_name[0] && strcmp(c->device_name, "none") && strcmp(c->device_name, "unknown"));
}

typedef struct machine {
    phys v[64];
    size_t n;
    size_t nodev[256]; /* plugins with no device at all */
    size_t n_nodev;
    size_t layers[64]; /* platform-none plugins: they run where their inner runs */
    size_t n_layers;
} machine;

static void gather(sgl_attn_host *h, machine *m) {
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in) || !attnctl_has_descriptor(&in) ||
            (in.status != SGL_ATTN_PLUGIN_USABLE && in.status != SGL_ATTN_PLUGIN_UNAVAILABLE))
            continue;
        if (in.platform == SGL_ATTN_PLATFORM_NONE) {
            if (m->n_layers < COUNT(m->layers)) m->layers[m->n_layers++] = i;
            continue;
        }
        int any = 0;
        for (uint32_t d = 0; d < in.n_devices; d++) {
            sgl_attn_caps cp = {.struct_size = sizeof cp};
            if (sgl_attn_host_plugin_caps(h, i, d, &cp) || !real_device(&cp)) continue;
            any = 1;
            phys *p = NULL;
            for (size_t k = 0; k < m->n && !p; k++)
                if (m->v[k].platform == in.platform && m->v[k].index == d) p = &m->v[k];
            if (!p && m->n < COUNT(m->v)) {
                p = &m->v[m->n++];
                p->platform = in.platform;
                p->index = d;
                p->caps = cp;
            }
            if (!p) continue;
            int full = in.role == SGL_ATTN_ROLE_FULL;
            if (cp.available && full && !p->have_full_available) {
                p->caps = cp;
                p->have_full_available = 1;
            } else if (cp.available && !p->caps.available && !p->have_full_available) {
                p->caps = cp;
            }
            if (p->n_users < COUNT(p->users)) p->users[p->n_users++] = (user){i, d, cp.available != 0, full};
        }
        if (!any && m->n_nodev < COUNT(m->nodev)) m->nodev[m->n_nodev++] = i;
    }
}

static const char *plugin_name(sgl_attn_host *h, size_t i) {
    static sgl_attn_plugin_info in;
    in.struct_size = sizeof in;
    return sgl_attn_host_plugin_info(h, i, &in) == SGL_ATTN_OK ? in.name : "?";
}

static void print_table(const attnctl_common *c, sgl_attn_host *h, const machine *m) {
    const int color = attnctl_color(c, stdout), cols = attnctl_columns();
    const char *caps_file = sgl_attn_host_caps_file(h);
    if (caps_file[0]) printf("devices of the machine of %s\n", attnctl_esc(caps_file));
    int w[6] = {8, 3, 6, 4, 6, 5};
    char cells[64][6][160];
    for (size_t k = 0; k < m->n; k++) {
        const phys *p = &m->v[k];
        char mem[32];
        snprintf(cells[k][0], 160, "%s", sgl_attn_platform_name(p->platform));
        snprintf(cells[k][1], 160, "%u", p->index);
        snprintf(cells[k][2], 160, "%s", attnctl_esc(p->caps.device_name[0] ? p->caps.device_name : "-"));
        snprintf(cells[k][3], 160, "%s", attnctl_esc(p->caps.arch_name[0] ? p->caps.arch_name : "-"));
        snprintf(cells[k][4], 160, "%s", attnctl_bytes(p->caps.memory_bytes, mem, sizeof mem));
        if (p->caps.compute_units) snprintf(cells[k][5], 160, "%u", p->caps.compute_units);
        else snprintf(cells[k][5], 160, "-");
        for (int j = 0; j < 6; j++)
            if (attnctl_width(cells[k][j]) > w[j]) w[j] = attnctl_width(cells[k][j]);
    }
    /* A long device name is shortened at a word boundary to leave the
     * plugins 20 columns; -v adds it whole on the next line. */
    int cap = cols > 0 ? cols - (w[0] + w[1] + w[3] + w[4] + w[5] + 12) - 20 : 0;
    int shortened[64] = {0};
    if (cap >= 8 && w[2] > cap) {
        for (size_t k = 0; k < m->n; k++) {
            if (attnctl_width(cells[k][2]) <= cap) continue;
            size_t b = 0;
            int wc = 0;
            while (cells[k][2][b] && wc < cap - 3) {
                if (((unsigned char)cells[k][2][b] & 0xc0) != 0x80) wc++;
                b++;
            }
            while (((unsigned char)cells[k][2][b] & 0xc0) == 0x80) b--;
            size_t sp = b;
            while (sp > 0 && cells[k][2][sp] != ' ') sp--;
            if (sp > 0) b = sp;
            snprintf(cells[k][2] + b, 160 - b, "...");
            shortened[k] = 1;
        }
        w[2] = cap;
    }
    int fixed = w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + 12;
    printf("%-*s  %*s  %-*s  %-*s  %*s  %*s  %s\n", w[0], "PLATFORM", w[1], "DEV", w[2], "DEVICE", w[3], "ARCH", w[4],
           "MEMORY", w[5], "UNITS", "PLUGINS");
    for (size_t k = 0; k < m->n; k++) {
        const phys *p = &m->v[k];
        printf("%-*s  %*s  %s%*s  %-*s  %*s  %*s  ", w[0], cells[k][0], w[1], cells[k][1], cells[k][2],
               w[2] - attnctl_width(cells[k][2]), "", w[3], cells[k][3], w[4], cells[k][4], w[5], cells[k][5]);
        char list[4096] = "";
        size_t used = 0;
        for (size_t u = 0; u < p->n_users; u++)
            if (p->users[u].available)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                         plugin_name(h, p->users[u].plugin));
        if (!used) snprintf(list, sizeof list, "none usable");
        int below = cols > 0 && cols - fixed < 20;
        if (below) printf("\n    ");
        printf("%s", attnctl_sgr(color, "usable"));
        attnctl_wrap(stdout, list, below ? 4 : fixed, below ? 4 : fixed, cols);
        printf("%s\n", attnctl_sgr_reset(color));
        if (shortened[k] && c->verbose) {
            char line[512];
            snprintf(line, sizeof line, "device: %s", attnctl_esc(p->caps.device_name));
            printf("    ");
            attnctl_wrap(stdout, line, 4, 6, cols);
            putchar('\n');
        }
        for (size_t u = 0; u < p->n_users; u++) {
            if (p->users[u].available) continue;
            sgl_attn_caps cp = {.struct_size = sizeof cp};
            sgl_attn_host_plugin_caps(h, p->users[u].plugin, p->users[u].dev, &cp);
            char line[2048];
            snprintf(line, sizeof line, "%s cannot use it: %s", plugin_name(h, p->users[u].plugin),
                     attnctl_esc(sgl_attn_caps_reason(&cp)[0] ? sgl_attn_caps_reason(&cp) : "(no reason given)"));
            printf("    %s", attnctl_sgr(color, "unavailable"));
            if (c->verbose) attnctl_wrap(stdout, line, 4, 6, cols);
            else attnctl_wrap_short(stdout, line, 4, 6, cols, 2);
            printf("%s\n", attnctl_sgr_reset(color));
        }
    }
    if (m->n_nodev) {
        /* plugins with the same reason (one runtime missing) on one line */
        printf("no device for:\n");
        int done[256] = {0};
        for (size_t k = 0; k < m->n_nodev; k++) {
            if (done[k]) continue;
            size_t i = m->nodev[k];
            const char *why = sgl_attn_host_plugin_reason(h, i);
            char line[4096];
            int n = snprintf(line, sizeof line, "%s", plugin_name(h, i));
            for (size_t j = k + 1; j < m->n_nodev; j++)
                if (!done[j] && !strcmp(sgl_attn_host_plugin_reason(h, m->nodev[j]), why) && n > 0 &&
                    (size_t)n < sizeof line) {
                    n += snprintf(line + n, sizeof line - (size_t)n, ", %s", plugin_name(h, m->nodev[j]));
                    done[j] = 1;
                }
            if (n > 0 && (size_t)n < sizeof line) snprintf(line + n, sizeof line - (size_t)n, ": %s", attnctl_esc(why));
            printf("    %s", attnctl_sgr(color, "unavailable"));
            if (c->verbose) attnctl_wrap(stdout, line, 4, 6, cols);
            else attnctl_wrap_short(stdout, line, 4, 6, cols, 2);
            printf("%s\n", attnctl_sgr_reset(color));
        }
    }
    if (m->n_layers) {
        printf("layers (run on their inner's device):");
        for (size_t k = 0; k < m->n_layers; k++) printf("%s %s", k ? "," : "", plugin_name(h, m->layers[k]));
        putchar('\n');
    }
    printf("%zu device%s\n", m->n, m->n == 1 ? "" : "s");
}

static void print_json(sgl_attn_host *h, const machine *m) {
    cJSON *root = attnctl_json_root("devices");
    cJSON_AddStringToObject(root, "attnctl_version", SGL_ATTN_VERSION);
    char abi[16];
    snprintf(abi, sizeof abi, "%d.%d", SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR);
    cJSON_AddStringToObject(root, "abi", abi);
    cJSON_AddItemToObject(root, "caps_file", attnctl_json_str(sgl_attn_host_caps_file(h)));
    cJSON *devs = cJSON_AddArrayToObject(root, "devices");
    for (size_t k = 0; k < m->n; k++) {
        const phys *p = &m->v[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "platform", sgl_attn_platform_name(p->platform));
        cJSON_AddNumberToObject(o, "index", p->index);
        cJSON_AddItemToObject(o, "name", attnctl_json_str(p->caps.device_name));
        cJSON_AddItemToObject(o, "arch", attnctl_json_str(p->caps.arch_name));
        cJSON_AddItemToObject(o, "memory_bytes", attnctl_json_num(p->caps.memory_bytes > 0, (double)p->caps.memory_bytes));
        cJSON_AddItemToObject(o, "compute_units", attnctl_json_num(p->caps.compute_units > 0, p->caps.compute_units));
        cJSON *us = cJSON_AddArrayToObject(o, "plugins");
        for (size_t u = 0; u < p->n_users; u++) {
            sgl_attn_caps cp = {.struct_size = sizeof cp};
            sgl_attn_host_plugin_caps(h, p->users[u].plugin, p->users[u].dev, &cp);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", plugin_name(h, p->users[u].plugin));
            cJSON_AddBoolToObject(e, "available", p->users[u].available);
            cJSON_AddItemToObject(e, "reason", attnctl_json_str(sgl_attn_caps_reason(&cp)));
            cJSON_AddItemToArray(us, e);
        }
        cJSON_AddItemToArray(devs, o);
    }
    /* Every plugin with every device's caps: what a machine file holds. */
    cJSON *plugins = cJSON_AddArrayToObject(root, "plugins");
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        cJSON *p = attnctl_json_plugin(h, i);
        if (p) cJSON_AddItemToArray(plugins, p);
    }
    attnctl_json_print(root);
}

void attnctl_print_devices(const attnctl_common *c, sgl_attn_host *h) {
    machine *m = malloc(sizeof *m);
    if (!m) return;
    gather(h, m);
    print_table(c, h, m);
    free(m);
}

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common c;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &c, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    sgl_attn_host *h = attnctl_open_host(&c, cmd->name);
    if (!h) return ATTNCTL_EXIT_ENV;
    machine *m = malloc(sizeof *m);
    if (!m) {
        sgl_attn_host_close(h);
        fprintf(stderr, "attnctl devices: out of memory\n");
        return ATTNCTL_EXIT_FAIL;
    }
    gather(h, m);
    if (c.json) print_json(h, m);
    else print_table(&c, h, m);
    free(m);
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}

const attnctl_cmd attnctl_cmd_devices = {
    .name = "devices",
    .run = run,
    .summary = "each device once, with the plugins that can use it",
    .synopsis = "[--json] [options]",
    .description = "Each device of this machine once (a platform's device index: the plugins of one platform number\n"
                   "devices alike), with its name, architecture, memory and compute units (SMs, CUs, EUs or cores),\n"
                   "the plugins that can use it, and each plugin that cannot with its reason. Plugins that found no\n"
                   "device are listed after. --json is a machine file: every plugin with every device's caps, which\n"
                   "`attnctl select --caps-from FILE` reads to say what that machine would choose.",
    .opts = NULL,
    .common = COMMON_HOST | COMMON_CAPS | COMMON_JSON | COMMON_VERBOSE | COMMON_COLOR,
    .isolate_default = 1,
    .exit_codes = "0 listed; 2 bad command line; 3 the host could not open.",
};
