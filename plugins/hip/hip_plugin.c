/*
 * hip_plugin.c - the hip_attn plugin: paged MHA/GQA/MQA attention on AMD GPUs
 * through the HIP runtime, with the decode and extend kernels shared with
 * cuda_attn (one source, gpu_compat.h).  Serves sglang's aiter and wave (and
 * triton / dsv4 on HIP through conf/).  Compiled for gfx90a, gfx940 and
 * gfx1030; not yet run on AMD hardware (docs/platforms.md).
 */
#include <stdio.h>
#include <string.h>

#include "hip_internal.h"
#include "sdk_plugin.h"

static const char *const aliases[] = {"aiter", "wave", NULL};

static int ha_probe(uint32_t index, sgl_attn_caps *c) {
    if (!c || c->struct_size < sizeof *c) return SGL_ATTN_E_INVALID;
    sgl_sdk_caps_no_arch(c);
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_CROSS;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW | SGL_ATTN_FEAT_SOFTCAP |
                  SGL_ATTN_FEAT_SINKS;
    static const uint16_t dims[] = {64, 128, 256};
    c->n_head_dims = 3;
    for (int i = 0; i < 3; i++) c->head_dims[i].qk = c->head_dims[i].v = dims[i];
    c->head_dim_qk_max = c->head_dim_v_max = 256;
    c->page_size_max = 1024;
    char why[SGL_ATTN_REASON_MAX];
    int n = ha_device_count(why, sizeof why);
    if (n == 0) {
        if (index > 0) return SGL_ATTN_E_NOT_FOUND;
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "%s", why);
        snprintf(c->device_name, sizeof c->device_name, "none");
        return SGL_ATTN_OK;
    }
    if (index >= (uint32_t)n) return SGL_ATTN_E_NOT_FOUND;
    ha_device_info d;
    if (ha_device_query((int)index, &d, why, sizeof why)) {
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "%s", why);
        return SGL_ATTN_OK;
    }
    snprintf(c->device_name, sizeof c->device_name, "%s", d.name);
    snprintf(c->arch_name, sizeof c->arch_name, "%s", d.arch);
    c->memory_bytes = d.mem_bytes;
    c->compute_units = (uint32_t)d.cu_count;
    c->available = ha_arch_supported(d.arch);
    c->score = c->available ? 50 : 0;
    if (!c->available)
        snprintf(c->reason, sizeof c->reason, "%.40s: hip_attn is built for %s only", d.arch, HA_ARCHS);
    return SGL_ATTN_OK;
}

static int ha_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    return ha_model_check(m, why, why_size) == SGL_ATTN_OK ? SGL_ATTN_OK : SGL_ATTN_E_UNSUPPORTED;
}

SGL_SDK_PLUGIN(plugin,
    .name = HA_NAME,
    .version = "0.1.0",
    .description = "HIP paged MHA/GQA/MQA attention: the portable kernels shared with cuda_attn (gfx90a/gfx940/gfx1030)",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_HIP,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = aliases,
    .probe = ha_probe,
    .supports_model = ha_supports_model,
    .create = ha_create,
    .device_ops = &ha_device_ops)
