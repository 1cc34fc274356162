/* devices.c - `attnctl devices`: each plugin's devices as its probe saw them,
 * and the JSON form of one device's caps (also used by list-plugins). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

static void json_bits(FILE *f, uint32_t bits, const char *const *names, size_t n) {
    fputc('[', f);
    int first = 1;
    for (size_t i = 0; i < n; i++)
        if (bits & (1u << i)) {
            fprintf(f, "%s\"%s\"", first ? "" : ",", names[i]);
            first = 0;
        }
    fputc(']', f);
}

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

void attnctl_json_caps(FILE *f, const sgl_attn_caps *c, uint32_t index) {
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", "fp8_e4m3"};
    static const char *const kinds[] = {"mha", "gqa", "mqa", "mla", "cross"};
    static const char *const feats[] = {"extend",   "decode",      "sliding_window",
                                        "softcap",  "sinks",       "graph_capture",
                                        "spec_decode", "mla_extend", "diff_head_dims"};
    fprintf(f, "{\"index\":%" PRIu32 ",\"available\":%s,\"reason\":", index,
            c->available ? "true" : "false");
    attnctl_json_str(f, c->reason);
    fputs(",\"name\":", f);
    attnctl_json_str(f, c->device_name);
    fputs(",\"arch\":", f);
    attnctl_json_str(f, c->arch_name);
    fprintf(f,
            ",\"arch_major\":%" PRId32 ",\"arch_minor\":%" PRId32 ",\"arch_min\":[%" PRId32 ",%" PRId32
            "],\"arch_max\":[%" PRId32 ",%" PRId32 "],\"memory_bytes\":%" PRIu64
            ",\"compute_units\":%" PRIu32 ",\"score\":%" PRId32,
            c->arch_major, c->arch_minor, c->arch_min_major, c->arch_min_minor, c->arch_max_major,
            c->arch_max_minor, c->memory_bytes, c->compute_units, c->score);
    fputs(",\"attn_kinds\":", f);
    json_bits(f, c->attn_kinds, kinds, COUNT(kinds));
    fputs(",\"q_dtypes\":", f);
    json_bits(f, c->q_dtypes, dtypes, COUNT(dtypes));
    fputs(",\"kv_dtypes\":", f);
    json_bits(f, c->kv_dtypes, dtypes, COUNT(dtypes));
    fputs(",\"state_dtypes\":", f);
    json_bits(f, c->state_dtypes, dtypes, COUNT(dtypes));
    fputs(",\"features\":", f);
    json_bits(f, c->features, feats, COUNT(feats));
    fputs(",\"head_dims\":[", f);
    for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
        fprintf(f, "%s[%u,%u]", i ? "," : "", c->head_dims[i].qk, c->head_dims[i].v);
    fprintf(f, "],\"head_dim_qk_max\":%" PRIu32 ",\"head_dim_v_max\":%" PRIu32 ",\"page_sizes\":[",
            c->head_dim_qk_max, c->head_dim_v_max);
    for (uint32_t i = 0; i < c->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++)
        fprintf(f, "%s%" PRIu32, i ? "," : "", c->page_sizes[i]);
    fprintf(f, "],\"page_size_max\":%" PRIu32 ",\"max_gqa_ratio\":%" PRIu32 "}", c->page_size_max,
            c->max_gqa_ratio);
}

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl devices [--json] [--no-isolate] [--plugin-path DIRS] [--conf FILE | --no-conf]\n");
}

/* "141.0 GiB", or "-" when the probe did not say. */
static const char *human_bytes(uint64_t b, char *buf, size_t size) {
    if (!b) snprintf(buf, size, "-");
    else if (b >= (1ull << 30)) snprintf(buf, size, "%.1f GiB", (double)b / (double)(1ull << 30));
    else snprintf(buf, size, "%.1f MiB", (double)b / (double)(1ull << 20));
    return buf;
}

typedef struct dev_row {
    char plugin[SGL_ATTN_NAME_MAX + 1], dev[16], name[96], arch[48], mem[32], cus[16];
    const char *avail;
    char reason[SGL_ATTN_REASON_MAX];
} dev_row;

static void print_row(const dev_row *r, const int *w) {
    printf("%-*s  %*s  %-*s  %-*s  %*s  %*s  %s%s%s\n", w[0], r->plugin, w[1], r->dev, w[2], r->name, w[3],
           r->arch, w[4], r->mem, w[5], r->cus, r->avail, r->reason[0] ? ": " : "", r->reason);
}

static void fill_row(dev_row *r, const char *plugin, uint32_t d, const sgl_attn_caps *cp) {
    snprintf(r->plugin, sizeof r->plugin, "%s", plugin);
    snprintf(r->dev, sizeof r->dev, "%u", d);
    snprintf(r->name, sizeof r->name, "%s", cp->device_name[0] ? cp->device_name : "-");
    snprintf(r->arch, sizeof r->arch, "%s", cp->arch_name[0] ? cp->arch_name : "-");
    human_bytes(cp->memory_bytes, r->mem, sizeof r->mem);
    if (cp->compute_units) snprintf(r->cus, sizeof r->cus, "%u", cp->compute_units);
    else snprintf(r->cus, sizeof r->cus, "-");
    r->avail = cp->available ? "yes" : "no";
    snprintf(r->reason, sizeof r->reason, "%s",
             cp->available ? "" : cp->reason[0] ? cp->reason : "(no reason given)");
}

int cmd_devices(int argc, char **argv) {
    attnctl_common c = {.isolate = 1}; /* probes run in a child by default */
    for (int i = 1; i < argc; i++) {
        int r = attnctl_common_opt(&c, argc, argv, &i);
        if (r < 0) return ATTNCTL_EXIT_USAGE;
        if (r == 0) {
            if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
                usage(stdout);
                return ATTNCTL_EXIT_OK;
            }
            fprintf(stderr, "attnctl devices: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ATTNCTL_EXIT_USAGE;
        }
    }
    sgl_attn_host *h = attnctl_open_host(&c);
    if (!h) return ATTNCTL_EXIT_ENV;
    size_t n = sgl_attn_host_plugin_count(h), rows = 0;
    static const dev_row head = {"PLUGIN", "DEV", "DEVICE", "ARCH", "MEMORY", "CUS", "AVAILABLE", ""};
    int w[6] = {0};
    if (c.json) fputc('[', stdout);
    /* Two passes over the devices: column widths, then the rows. */
    for (int pass = 0; pass < (c.json ? 1 : 2); pass++) {
        if (pass == 1) print_row(&head, w);
        for (size_t i = 0; i < n; i++) {
            sgl_attn_plugin_info in = {.struct_size = sizeof in};
            if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) continue;
            for (uint32_t d = 0; d < in.n_devices; d++) {
                sgl_attn_caps cp = {.struct_size = sizeof cp};
                if (sgl_attn_host_plugin_caps(h, i, d, &cp) != SGL_ATTN_OK) continue;
                if (c.json) {
                    fputs(rows ? ",\n{\"plugin\":" : "\n{\"plugin\":", stdout);
                    attnctl_json_str(stdout, in.name);
                    fputs(",\"device\":", stdout);
                    attnctl_json_caps(stdout, &cp, d);
                    fputc('}', stdout);
                    rows++;
                    continue;
                }
                dev_row r;
                fill_row(&r, in.name, d, &cp);
                if (pass == 1) {
                    print_row(&r, w);
                    rows++;
                    continue;
                }
                const char *cells[6] = {r.plugin, r.dev, r.name, r.arch, r.mem, r.cus};
                const char *hcells[6] = {head.plugin, head.dev, head.name, head.arch, head.mem, head.cus};
                for (int k = 0; k < 6; k++) {
                    int l = (int)strlen(cells[k]), hl = (int)strlen(hcells[k]);
                    if (l > w[k]) w[k] = l;
                    if (hl > w[k]) w[k] = hl;
                }
            }
        }
    }
    if (c.json) fputs(rows ? "\n]\n" : "]\n", stdout);
    else printf("%zu device%s\n", rows, rows == 1 ? "" : "s");
    sgl_attn_host_close(h);
    return ATTNCTL_EXIT_OK;
}
