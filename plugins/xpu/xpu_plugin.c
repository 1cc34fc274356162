/*
 * xpu_plugin.c - the xpu_ocl plugin: paged attention in OpenCL C for Intel
 * GPUs (and any OpenCL 1.2+ device).
 *
 * Devices, best first: Intel GPUs (seen through Level Zero and the OpenCL
 * platforms), other OpenCL GPUs, accelerators, and CPU devices (PoCL) only
 * when SGL_ATTN_XPU_ALLOW_CPU=1 or conf "plugin_options": {"xpu_ocl":
 * {"allow_cpu": true}}.  Device pointers are cl_mem handles (device_ops);
 * batch->stream is a cl_command_queue of the device's context, or NULL for
 * the plugin's own in-order queue.  See docs/platforms.md.
 */
#include <stdio.h>
#include <string.h>

#include "sdk_option.h"
#include "sdk_plugin.h"
#include "sdk_text.h"
#include "xpu_internal.h"

static const char *const aliases[] = {"intel_xpu", NULL};

/* Visibility of CPU devices is the plugin's, not an instance's (the probe
 * has no host): the conf option is copied when a host negotiates, and a bad
 * value is logged through that host. */
static void negotiated(const sgl_attn_host_api *host) {
    char err[256] = "";
    const sgl_sdk_opts o = {host, XPU_PLUGIN_NAME, err, sizeof err};
    int v = 0;
    if (sgl_sdk_opt_bool(&o, "allow_cpu", NULL, 0, &v) && host->log)
        host->log(host->host_ctx, SGL_ATTN_LOG_WARN, XPU_PLUGIN_NAME, "%s (CPU devices stay hidden)", err);
    xpu_set_conf_allow_cpu(v);
}

static void fill_static_caps(sgl_attn_caps *c) {
    sgl_sdk_caps_no_arch(c);
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA | SGL_ATTN_KIND_CROSS;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                  SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                  SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    c->head_dim_qk_max = XPU_QK_MAX;
    c->head_dim_v_max = XPU_V_MAX;
    c->page_size_max = 1024; /* token-level indirection: any page size works */
    c->max_gqa_ratio = 0;
}

static int xpu_probe(uint32_t index, sgl_attn_caps *c) {
    fill_static_caps(c);
    char by[160];
    xpu_allow_cpu(by, sizeof by);
    int n = xpu_devices_visible_count();
    if (n == 0) {
        if (index > 0) return SGL_ATTN_E_NOT_FOUND;
        int cpus = xpu_devices_count(); /* only CPUs can be hidden */
        char hint[256] = "";
        if (cpus)
            sgl_sdk_str(hint, sizeof hint, " (a CPU device needs SGL_ATTN_XPU_ALLOW_CPU=1 or "
                        "plugin_options.xpu_ocl.allow_cpu%s%s)", by[0] ? "; " : "", by);
        c->available = 0;
        c->score = 0;
        sgl_sdk_caps_reason(c, "no usable OpenCL GPU%s. %s. %s", hint, xpu_devices_levelzero_note(),
                            xpu_devices_summary());
        snprintf(c->device_name, sizeof c->device_name, "none");
        return SGL_ATTN_OK;
    }
    if (index >= (uint32_t)n) return SGL_ATTN_E_NOT_FOUND;
    const xpu_device *d = xpu_device_visible((int32_t)index);
    if (!d) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    snprintf(c->device_name, sizeof c->device_name, "%s", d->name);
    snprintf(c->arch_name, sizeof c->arch_name, "%s", d->c_version);
    c->memory_bytes = d->mem_bytes;
    c->compute_units = d->compute_units;
    switch (d->kind) {
    case XPU_KIND_INTEL_GPU:
        c->score = 60;
        sgl_sdk_caps_reason(c, "Intel GPU on OpenCL platform '%s' (preferred). %s", d->platform_name,
                 xpu_devices_levelzero_note());
        break;
    case XPU_KIND_OTHER_GPU:
        c->score = 20;
        sgl_sdk_caps_reason(c, "non-Intel OpenCL GPU on '%s' (no Intel GPU). %s", d->platform_name,
                 xpu_devices_levelzero_note());
        break;
    case XPU_KIND_ACCEL:
        c->score = 10;
        sgl_sdk_caps_reason(c, "OpenCL accelerator on '%s' (no GPU). %s", d->platform_name,
                 xpu_devices_levelzero_note());
        break;
    default:
        /* A CPU device is for testing the kernels, never an automatic choice. */
        c->score = 0;
        sgl_sdk_caps_reason(c,
                    "CPU OpenCL device on '%s', allowed by %s; not chosen automatically. %s", d->platform_name, by,
                    xpu_devices_levelzero_note());
        break;
    }
    return SGL_ATTN_OK;
}

static int xpu_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    if (m->index_topk > 0) {
        snprintf(why, why_size, "xpu_ocl has no DeepSeek sparse attention (index_topk %d)", m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->is_mla && m->num_kv_heads > 1) {
        snprintf(why, why_size, "xpu_ocl MLA runs the absorbed form with one latent KV head, model has %d",
                 m->num_kv_heads);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

SGL_SDK_PLUGIN_HOOKED(plugin, negotiated,
    .name = XPU_PLUGIN_NAME,
    .version = "0.1.0",
    .description = "paged decode/extend attention in OpenCL C (Intel GPUs; any OpenCL 1.2 device)",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_XPU,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = aliases,
    .probe = xpu_probe,
    .supports_model = xpu_supports_model,
    .create = xpu_create,
    .device_ops = &xpu_device_ops)
