/* common.c - opening the host from the common options, names of roles, and
 * what this machine runs by default. */
#include <stdio.h>
#include <string.h>

#include "attnctl.h"

sgl_attn_host *attnctl_open_host(const attnctl_common *c, const char *who) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_path = c->plugin_path;
    o.conf_path = c->conf_path;
    o.no_conf = c->no_conf;
    o.isolate_probes = c->isolate;
    o.validate = c->validate;
    o.caps_file = c->caps_file;
    sgl_attn_host *h = NULL;
    char err[2048];
    int rc = sgl_attn_host_open(&o, &h, err, sizeof err);
    if (rc != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl %s: cannot open the host: %s\n", who,
                attnctl_esc(err[0] ? err : sgl_attn_status_name(rc)));
        return NULL;
    }
    return h;
}

const char *attnctl_role_name(const sgl_attn_plugin_info *in) {
    if (!attnctl_has_descriptor(in)) return NULL;
    switch (in->role) {
    case SGL_ATTN_ROLE_FULL: return "full";
    case SGL_ATTN_ROLE_HYBRID: return "hybrid";
    case SGL_ATTN_ROLE_LAYER: return "layer";
    default: return NULL;
    }
}

const char *attnctl_hybrid_kind(const sgl_attn_plugin_info *in) {
    if (!attnctl_has_descriptor(in) || in->role != SGL_ATTN_ROLE_HYBRID) return NULL;
    if (in->hybrid_kind == SGL_ATTN_HYBRID_CUSTOM && in->custom_kind[0]) return in->custom_kind;
    return sgl_attn_hybrid_kind_name(in->hybrid_kind);
}

const char *attnctl_role(const sgl_attn_plugin_info *in, char *buf, size_t size) {
    const char *r = attnctl_role_name(in), *k = attnctl_hybrid_kind(in);
    if (!r) snprintf(buf, size, "-");
    else if (k) snprintf(buf, size, "%s:%s", r, k);
    else snprintf(buf, size, "%s", r);
    return buf;
}

int attnctl_has_descriptor(const sgl_attn_plugin_info *in) { return in->name[0] != 0; }

const char *attnctl_bytes(uint64_t b, char *buf, size_t size) {
    if (!b) snprintf(buf, size, "-");
    else if (b >= (1ull << 30)) snprintf(buf, size, "%.1f GiB", (double)b / (double)(1ull << 30));
    else snprintf(buf, size, "%.1f MiB", (double)b / (double)(1ull << 20));
    return buf;
}

void attnctl_default_choice(sgl_attn_host *h, attnctl_default *d) {
    memset(d, 0, sizeof *d);
    d->device = -1;
    /* Llama-3.1-8B's attention: GQA 32/8, head dim 128, bf16 */
    sgl_attn_model m;
    sgl_attn_model_init(&m);
    snprintf(m.name, sizeof m.name, "plain GQA 32/8, head dim 128, bf16");
    m.num_layers = 32;
    m.num_q_heads = 32;
    m.num_kv_heads = 8;
    m.head_dim_qk = m.head_dim_v = 128;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_BF16;
    sgl_attn_select_request q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    sgl_attn_selection *s = NULL;
    char err[1024] = "";
    int rc = sgl_attn_select(h, &m, &q, &s, err, sizeof err);
    if (rc == SGL_ATTN_OK) {
        d->ok = 1;
        snprintf(d->label, sizeof d->label, "%s", sgl_attn_selection_label(s));
        d->device = sgl_attn_selection_device(s);
        d->cpu_fallback = sgl_attn_selection_cpu_fallback(s);
        /* the innermost plugin's platform and device name */
        const char *inner = sgl_attn_selection_stack_name(s, sgl_attn_selection_stack_depth(s) - 1);
        long i = inner ? sgl_attn_host_find_plugin(h, inner) : -1;
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        sgl_attn_caps cp = {.struct_size = sizeof cp};
        if (i >= 0 && sgl_attn_host_plugin_info(h, (size_t)i, &in) == SGL_ATTN_OK) {
            snprintf(d->platform, sizeof d->platform, "%s", sgl_attn_platform_name(in.platform));
            if (sgl_attn_host_plugin_caps(h, (size_t)i, (uint32_t)d->device, &cp) == SGL_ATTN_OK)
                snprintf(d->device_name, sizeof d->device_name, "%s", cp.device_name);
        }
    } else {
        snprintf(d->label, sizeof d->label, "%s", err[0] ? err : sgl_attn_status_name(rc));
    }
    sgl_attn_selection_free(s);
}
