/* target.c - the plugin (stack) under test: names resolved on the host, the
 * device tensors are staged on, and backend creation with verdicts.  Which
 * inner a wrapper or layer named alone runs over is the host's selection
 * (sgl_attn_select), asked for each case's model; the harness has no rule of
 * its own for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void plugin_info(sgl_attn_host *host, long i, sgl_attn_plugin_info *out) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    sgl_attn_host_plugin_info(host, (size_t)i, out);
}

/* "a/b/c", outermost first, into t->name_buf; the count, or 0 with err. */
static size_t parse_spec(htarget *t, const char *spec, char *err, size_t err_size) {
    size_t n = 0;
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, "/");
        if (n == 3 || len == 0 || len > SGL_ATTN_NAME_MAX) {
            snprintf(err, err_size, "'%s': expected NAME or NAME/INNER (at most 3 names of 1..%d characters)", spec,
                     SGL_ATTN_NAME_MAX);
            return 0;
        }
        snprintf(t->name_buf[n], sizeof t->name_buf[n], "%.*s", (int)len, p);
        n++;
        p += len;
        if (*p == '/') p++;
    }
    if (n == 0) snprintf(err, err_size, "empty plugin name");
    return n;
}

/* The host's selection for model m with the named plugin on top, on the
 * platform the target stages on. */
static int select_stack(const htarget *t, const sgl_attn_model *m, sgl_attn_selection **s, char *err,
                        size_t err_size) {
    sgl_attn_select_request q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.backend = t->names[0];
    q.platform = t->platform;
    return sgl_attn_select(t->host, m, &q, s, err, err_size);
}

static const char *innermost(const sgl_attn_selection *s) {
    size_t d = sgl_attn_selection_stack_depth(s);
    return d ? sgl_attn_selection_stack_name(s, d - 1) : "";
}

/* A layer named alone: the full-attention plugin the host stacks it on for a
 * plain model is the one whose caps the full family claims cases against and
 * whose device the tensors are staged on. */
static int layer_inner(htarget *t, char *err, size_t err_size) {
    sgl_attn_model m;
    sgl_attn_model_init(&m);
    snprintf(m.name, sizeof m.name, "harness: what %s runs over", t->names[0]);
    m.num_layers = 1;
    m.num_q_heads = m.num_kv_heads = 8;
    m.head_dim_qk = m.head_dim_v = 128;
    sgl_attn_selection *s = NULL;
    char why[1024] = "";
    int rc = select_stack(t, &m, &s, why, sizeof why);
    long k = rc == SGL_ATTN_OK ? sgl_attn_host_find_plugin(t->host, innermost(s)) : -1;
    if (k < 0) {
        snprintf(err, err_size, "%s: the host's selection has no stack for it on %s: %s", t->names[0],
                 sgl_attn_platform_name(t->platform), why[0] ? why : "its innermost plugin is not loaded");
    } else {
        t->plugin_index = k;
        t->device = (uint32_t)sgl_attn_selection_device(s);
        plugin_info(t->host, k, &t->inner_info);
        snprintf(t->label, sizeof t->label, "%s", sgl_attn_selection_label(s));
    }
    sgl_attn_selection_free(s);
    return k < 0 ? -1 : 0;
}

int htarget_open(htarget *t, sgl_attn_host *host, const char *spec, uint32_t device, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    t->host = host;
    t->device = device;
    size_t n = parse_spec(t, spec, err, err_size);
    if (n == 0) return -1;
    for (size_t i = 0; i < n; i++) {
        long k = sgl_attn_host_find_plugin(host, t->name_buf[i]);
        if (k < 0) {
            snprintf(err, err_size, "no plugin named '%s' is loaded (attnctl list-plugins shows them)", t->name_buf[i]);
            return -1;
        }
        plugin_info(host, k, i == 0 ? &t->info : &t->inner_info);
        if (i == 0) t->inner_info = t->info;
        t->plugin_index = k;
        t->names[i] = t->name_buf[i];
    }
    t->n_names = n;
    if (n > 1 && t->inner_info.role != SGL_ATTN_ROLE_FULL) {
        snprintf(err, err_size,
                 "'%s': an explicit stack ends with a full-attention plugin, and %s is not one (name a wrapper or "
                 "layer alone for the host to choose its inner)",
                 spec, t->inner_info.name);
        return -1;
    }
    t->platform = t->inner_info.platform;
    if (t->info.role != SGL_ATTN_ROLE_FULL) {
        /* named alone: staged on the plugin's own platform, host memory when
         * it runs anywhere; the host stacks it per case */
        t->selected = 1;
        if (t->platform == SGL_ATTN_PLATFORM_NONE) t->platform = SGL_ATTN_PLATFORM_CPU;
        if (!(t->last = calloc(1, sizeof *t->last))) {
            snprintf(err, err_size, "out of memory");
            return -1;
        }
        if (t->info.role == SGL_ATTN_ROLE_LAYER && layer_inner(t, err, err_size)) return -1;
    }
    if (!t->label[0]) {
        size_t o = 0;
        for (size_t i = 0; i < n && o < sizeof t->label; i++)
            o += (size_t)snprintf(t->label + o, sizeof t->label - o, "%s%s", i ? "/" : "", t->names[i]);
    }
    t->caps.struct_size = sizeof t->caps;
    if (sgl_attn_host_plugin_caps(host, (size_t)t->plugin_index, t->device, &t->caps) != SGL_ATTN_OK) {
        snprintf(err, err_size, "%s has no device %u", t->inner_info.name, t->device);
        return -1;
    }
    if (!t->caps.available) {
        snprintf(err, err_size, "%s device %u is not available: %s", t->inner_info.name, t->device, t->caps.reason);
        return -1;
    }
    /* ABI 1.2 inputs reach the inner plugin only through layers that pass
     * them on: a case needing one is claimed when every layer of the stack
     * declares it (the 1.0 features stay the inner's, as before) */
    const uint32_t v12 = SGL_ATTN_FEAT_ALL_V1_2 & ~(SGL_ATTN_FEAT_TREE_MASK - 1u);
    for (size_t i = 0; i < t->n_names; i++) {
        const long k = sgl_attn_host_find_plugin(host, t->names[i]);
        sgl_attn_caps lc = {.struct_size = sizeof lc};
        if (k < 0 || k == t->plugin_index || sgl_attn_host_plugin_caps(host, (size_t)k, 0, &lc) != SGL_ATTN_OK) continue;
        t->caps.features &= lc.features | ~v12;
    }
    return hdev_open(&t->dev, sgl_attn_host_device_ops(host, (size_t)t->plugin_index), (int32_t)t->device,
                     t->platform, err, err_size);
}

void htarget_close(htarget *t) {
    hdev_close(&t->dev);
    free(t->last);
    t->last = NULL;
}

const char *htarget_stack_label(const htarget *t) {
    return t->selected && t->last && t->last->label[0] ? t->last->label : t->label;
}

/* The selection for a case must run where the target staged its tensors. */
static int staged_here(const htarget *t, const sgl_attn_selection *s, hresult *r) {
    const int32_t dev = sgl_attn_selection_device(s);
    const char *in = innermost(s);
    const int same_inner = t->info.role != SGL_ATTN_ROLE_LAYER || !strcmp(in, t->inner_info.name);
    if (dev == (int32_t)t->device && same_inner) return 1;
    hresult_error(r, "the host's selection for this case is %s on device %d, but %s was staged for %s on device %u: "
                     "name the stack (--plugin %s) to check it",
                  sgl_attn_selection_label(s), dev, t->names[0], t->inner_info.name, t->device,
                  sgl_attn_selection_label(s));
    return 0;
}

/* A selected target: the host's stack for this case's model. */
static int create_selected(const htarget *t, const sgl_attn_model *m, const sgl_attn_create_options *o,
                           sgl_attn_backend **b, hresult *r) {
    char err[1024] = "";
    sgl_attn_selection *s = NULL;
    t->last->label[0] = 0;
    int rc = select_stack(t, m, &s, err, sizeof err);
    if (rc == SGL_ATTN_E_UNSUPPORTED) {
        hresult_unsupported(r, "select: %s", err);
    } else if (rc != SGL_ATTN_OK) {
        hresult_fail(r, "select failed (%s): %s", sgl_attn_status_name(rc), err);
    } else if (!staged_here(t, s, r)) {
        rc = SGL_ATTN_E_INVALID;
    } else {
        snprintf(t->last->label, sizeof t->last->label, "%s", sgl_attn_selection_label(s));
        rc = sgl_attn_create(t->host, s, m, o, b, err, sizeof err);
        if (rc == SGL_ATTN_E_UNSUPPORTED) hresult_unsupported(r, "create: %s", err);
        else if (rc != SGL_ATTN_OK) hresult_fail(r, "create failed (%s): %s", sgl_attn_status_name(rc), err);
    }
    sgl_attn_selection_free(s);
    if (rc != SGL_ATTN_OK) *b = NULL;
    return rc;
}

int htarget_create(const htarget *t, const sgl_attn_model *m, const sgl_attn_create_options *o, sgl_attn_backend **b,
                   hresult *r) {
    if (t->fixed) {
        *b = t->fixed;
        return SGL_ATTN_OK;
    }
    if (t->selected) return create_selected(t, m, o, b, r);
    char err[1024] = "";
    int rc = sgl_attn_create_stack(t->host, t->names, t->n_names, (int32_t)t->device, m, o, b, err, sizeof err);
    if (rc == SGL_ATTN_OK) return rc;
    if (rc == SGL_ATTN_E_UNSUPPORTED) hresult_unsupported(r, "create: %s", err);
    else hresult_fail(r, "create failed (%s): %s", sgl_attn_status_name(rc), err);
    *b = NULL;
    return rc;
}

void htarget_destroy(const htarget *t, sgl_attn_backend *b) {
    if (b && b != t->fixed) sgl_attn_destroy(b);
}

int href_create(sgl_attn_host *host, const sgl_attn_model *m, const sgl_attn_create_options *o, sgl_attn_backend **b,
                char *err, size_t err_size) {
    static const char *const ref[] = {"cpu_ref"};
    return sgl_attn_create_stack(host, ref, 1, 0, m, o, b, err, err_size);
}

void hresult_from_call(hresult *r, sgl_attn_backend *b, const char *what, int rc) {
    const char *e = b ? sgl_attn_last_error(b) : NULL;
    if (rc == SGL_ATTN_E_UNSUPPORTED)
        hresult_unsupported(r, "%s: %s", what, e && *e ? e : "unsupported (no message)");
    else
        hresult_fail(r, "%s returned %s (%d): %s", what, sgl_attn_status_name(rc), rc,
                     e && *e ? e : "(last_error is empty)");
}
