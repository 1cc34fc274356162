/* target.c - the plugin (stack) under test: names resolved on the host,
 * its innermost plugin's device and caps, backend creation with verdicts. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

/* The usable full-attention plugin to run a lone wrapper over: the
 * highest-scoring one of the wrapper's platform that serves MHA/GQA on its
 * device 0, or cpu_ref when the wrapper runs anywhere (platform NONE) or no
 * plugin of its platform is usable. */
static long same_platform_inner(sgl_attn_host *host, int32_t platform) {
    long best = -1;
    int32_t best_score = 0;
    if (platform != SGL_ATTN_PLATFORM_NONE && platform != SGL_ATTN_PLATFORM_CPU) {
        for (size_t i = 0; i < sgl_attn_host_plugin_count(host); i++) {
            sgl_attn_plugin_info in;
            sgl_attn_caps c;
            memset(&in, 0, sizeof in);
            in.struct_size = sizeof in;
            memset(&c, 0, sizeof c);
            c.struct_size = sizeof c;
            if (sgl_attn_host_plugin_info(host, i, &in) || in.status != SGL_ATTN_PLUGIN_USABLE ||
                in.role != SGL_ATTN_ROLE_FULL || in.platform != platform)
                continue;
            if (sgl_attn_host_plugin_caps(host, i, 0, &c) || !c.available ||
                !(c.attn_kinds & (SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA)))
                continue;
            if (best < 0 || c.score > best_score) best = (long)i, best_score = c.score;
        }
    }
    return best >= 0 ? best : sgl_attn_host_find_plugin(host, "cpu_ref");
}

int htarget_open(htarget *t, sgl_attn_host *host, const char *spec, uint32_t device, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    t->host = host;
    t->device = device;
    /* "a/b/c", outermost first */
    size_t n = 0;
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, "/");
        if (n == 3 || len == 0 || len > SGL_ATTN_NAME_MAX) {
            snprintf(err, err_size, "'%s': expected NAME or NAME/INNER (at most 3 names of 1..%d characters)", spec,
                     SGL_ATTN_NAME_MAX);
            return -1;
        }
        snprintf(t->name_buf[n], sizeof t->name_buf[n], "%.*s", (int)len, p);
        n++;
        p += len;
        if (*p == '/') p++;
    }
    if (n == 0) {
        snprintf(err, err_size, "empty plugin name");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        long k = sgl_attn_host_find_plugin(host, t->name_buf[i]);
        if (k < 0) {
            snprintf(err, err_size, "no plugin named '%s' is loaded (attnctl list-plugins shows them)", t->name_buf[i]);
            return -1;
        }
        sgl_attn_plugin_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        sgl_attn_host_plugin_info(host, (size_t)k, &info);
        if (i == 0) t->info = info;
        t->inner_info = info;
        t->plugin_index = k;
    }
    /* a wrapper or layer named alone runs over a full backend of its own
     * platform (a CUDA wrapper needs device tensors), else the reference */
    if (t->inner_info.role != SGL_ATTN_ROLE_FULL) {
        long k = same_platform_inner(host, t->inner_info.platform);
        if (k < 0 || n == 3) {
            snprintf(err, err_size, "%s wraps a full-attention backend: name one (NAME/INNER)", t->name_buf[n - 1]);
            return -1;
        }
        memset(&t->inner_info, 0, sizeof t->inner_info);
        t->inner_info.struct_size = sizeof t->inner_info;
        sgl_attn_host_plugin_info(host, (size_t)k, &t->inner_info);
        snprintf(t->name_buf[n++], sizeof t->name_buf[0], "%s", t->inner_info.name);
        t->plugin_index = k;
        t->device = 0;
    }
    t->n_names = n;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        t->names[i] = t->name_buf[i];
        if (o < sizeof t->label) o += (size_t)snprintf(t->label + o, sizeof t->label - o, "%s%s", i ? "/" : "", t->names[i]);
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
    return hdev_open(&t->dev, sgl_attn_host_device_ops(host, (size_t)t->plugin_index), (int32_t)t->device,
                     t->inner_info.platform, err, err_size);
}

void htarget_close(htarget *t) { hdev_close(&t->dev); }

int htarget_create(const htarget *t, const sgl_attn_model *m, const sgl_attn_create_options *o, sgl_attn_backend **b,
                   hresult *r) {
    if (t->fixed) {
        *b = t->fixed;
        return SGL_ATTN_OK;
    }
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
