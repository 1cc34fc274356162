/* probe.c - ask a plugin about each of its devices, and check what it says.
 *
 * probe_run calls the probe for devices 0, 1, ... in the calling process;
 * with isolation that process is isolate.c's child, and the caps cross a
 * pipe before probe_check_caps judges them in the parent. */
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

int probe_run(const sgl_attn_plugin *d, sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size) {
    sgl_attn_caps *v = NULL;
    uint32_t n = 0;
    *caps = NULL;
    *n_caps = 0;
    for (uint32_t i = 0; i < PROBE_MAX_DEVICES; i++) {
        sgl_attn_caps c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        c.arch_major = c.arch_minor = -1;
        c.arch_min_major = c.arch_min_minor = c.arch_max_major = c.arch_max_minor = -1;
        int rc = d->probe(i, &c);
        c.struct_size = sizeof c; /* ours, whatever the plugin wrote there */
        if (rc == SGL_ATTN_E_NOT_FOUND && i > 0) break;
        if (rc != SGL_ATTN_OK) {
            if (i == 0) {
                str_printf(why, why_size, "probe of device 0 failed with %s (%d); index 0 must always answer",
                           sgl_attn_status_name(rc), rc);
                free(v);
                return SGL_ATTN_E_INVALID;
            }
            /* A later device that fails is listed as unavailable, not fatal. */
            memset(&c, 0, sizeof c);
            c.struct_size = sizeof c;
            str_printf(c.reason, sizeof c.reason, "probe failed with %s (%d)", sgl_attn_status_name(rc), rc);
        }
        sgl_attn_caps *nv = realloc(v, (n + 1) * sizeof *v);
        if (!nv) {
            free(v);
            str_copy(why, why_size, "out of memory while probing");
            return SGL_ATTN_E_NOMEM;
        }
        v = nv;
        v[n++] = c;
    }
    *caps = v;
    *n_caps = n;
    return SGL_ATTN_OK;
}

int probe_plugin(const sgl_attn_plugin *d, sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size) {
    int rc = probe_run(d, caps, n_caps, why, why_size);
    if (rc != SGL_ATTN_OK) return rc;
    return probe_check_caps(caps, n_caps, why, why_size);
}

int probe_check_caps(sgl_attn_caps **caps, uint32_t *n_caps, char *why, size_t why_size) {
    if (*n_caps == 0) {
        str_copy(why, why_size, "probe reported no device at all (index 0 must always answer)");
        free(*caps);
        *caps = NULL;
        return SGL_ATTN_E_INVALID;
    }
    for (uint32_t i = 0; i < *n_caps; i++) {
        char w[200];
        if (plugin_caps_check(&(*caps)[i], w, sizeof w) != 0) {
            str_printf(why, why_size, "device %u: %s", i, w);
            free(*caps);
            *caps = NULL;
            *n_caps = 0;
            return SGL_ATTN_E_INVALID;
        }
    }
    return SGL_ATTN_OK;
}

void probe_set_status(sgl_attn_plugin_info *in, const sgl_attn_caps *caps, uint32_t n_caps) {
    in->n_devices = n_caps;
    in->status = SGL_ATTN_PLUGIN_UNAVAILABLE;
    for (uint32_t d = 0; d < n_caps; d++)
        if (caps[d].available) in->status = SGL_ATTN_PLUGIN_USABLE;
    if (in->status == SGL_ATTN_PLUGIN_UNAVAILABLE)
        str_copy(in->reason, sizeof in->reason,
                 caps[0].reason[0] ? caps[0].reason : "the probe found no available device");
    else
        in->reason[0] = 0;
}
