/* common.c - options every command accepts, opening the host, JSON strings. */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

int attnctl_common_opt(attnctl_common *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *const with_value[] = {"--plugin-path", "--conf"};
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
        size_t n = strlen(with_value[k]);
        if (strncmp(a, with_value[k], n) != 0 || (a[n] != 0 && a[n] != '=')) continue;
        const char *v;
        if (a[n] == '=') {
            v = a + n + 1;
        } else if (*i + 1 < argc) {
            v = argv[++*i];
        } else {
            fprintf(stderr, "attnctl: %s needs a value\n", with_value[k]);
            return -1;
        }
        if (k == 0)
            c->plugin_path = v;
        else
            c->conf_path = v;
        return 1;
    }
    if (!strcmp(a, "--no-conf")) c->no_conf = 1;
    else if (!strcmp(a, "--isolate")) c->isolate = 1;
    else if (!strcmp(a, "--no-isolate")) c->isolate = 0;
    else if (!strcmp(a, "--validate")) c->validate = 1;
    else if (!strcmp(a, "--json")) c->json = 1;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) c->verbose = 1;
    else return 0;
    return 1;
}

sgl_attn_host *attnctl_open_host(const attnctl_common *c) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_path = c->plugin_path;
    o.conf_path = c->conf_path;
    o.no_conf = c->no_conf;
    o.isolate_probes = c->isolate;
    o.validate = c->validate;
    sgl_attn_host *h = NULL;
    char err[1024];
    int rc = sgl_attn_host_open(&o, &h, err, sizeof err);
    if (rc != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl: cannot open the host: %s\n", err[0] ? err : sgl_attn_status_name(rc));
        return NULL;
    }
    return h;
}

/* Length of a valid UTF-8 sequence at p (1..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *p) {
    int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* Plugin-supplied text may hold any bytes: the output stays valid JSON. */
void attnctl_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else {
                int n = utf8_len(p);
                if (n) {
                    fwrite(p, 1, (size_t)n, f);
                    p += n - 1;
                } else {
                    fputs("\\ufffd", f);
                }
            }
        }
    }
    fputc('"', f);
}

const char *attnctl_role(const sgl_attn_plugin_info *in, char *buf, size_t size) {
    if (in->role == SGL_ATTN_ROLE_FULL) snprintf(buf, size, "full");
    else if (in->role == SGL_ATTN_ROLE_LAYER) snprintf(buf, size, "layer");
    else if (in->role == SGL_ATTN_ROLE_HYBRID)
        snprintf(buf, size, "hybrid:%s",
                 in->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM && in->custom_kind[0]
                     ? in->custom_kind
                     : sgl_attn_hybrid_kind_name(in->hybrid_kind));
    else snprintf(buf, size, "-");
    return buf;
}

int attnctl_has_descriptor(const sgl_attn_plugin_info *in) { return in->name[0] != 0; }
