/*
 * npu_plugin.c - the npu_ascend plugin: paged attention on Huawei Ascend NPUs
 * through CANN's fused inference attention operator
 * (aclnnFusedInferAttentionScoreV2), CANN loaded at run time.
 *
 * Serves sglang's "ascend".
 * Not run on Ascend hardware: tested against the fake CANN in tests/npu/.
 */
#include <stdio.h>
#include <string.h>

#include "npu_internal.h"
#include "sdk_plugin.h"

/* "dsv4" on NPU is conf's (conf/sglattn.json maps it per platform). */
static const char *const aliases[] = {"ascend", NULL};

/* What the operator accepts (CANN's FusedInferAttentionScoreV2 constraints):
 * fp16/bf16, head dim <= 512 and a multiple of 16, GQA ratio <= 64, paged KV
 * with block sizes that are multiples of 128 up to 512. */
static void fill_static_caps(sgl_attn_caps *c) {
    sgl_sdk_caps_no_arch(c);
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE;
    c->head_dim_qk_max = c->head_dim_v_max = 512;
    c->n_page_sizes = 3;
    c->page_sizes[0] = 128;
    c->page_sizes[1] = 256;
    c->page_sizes[2] = 512;
    c->page_size_max = 512;
    c->max_gqa_ratio = 64;
}

static int soc_supported(const char *soc) {
    return soc && (!strncmp(soc, "Ascend910B", 10) || !strncmp(soc, "Ascend910_93", 12));
}

static int npu_probe(uint32_t index, sgl_attn_caps *c) {
    fill_static_caps(c);
    char why[SGL_ATTN_REASON_MAX];
    const npu_rt *rt = npu_runtime(why, sizeof why);
    if (!rt) {
        if (index > 0) return SGL_ATTN_E_NOT_FOUND;
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "%s", why);
        snprintf(c->device_name, sizeof c->device_name, "none");
        return SGL_ATTN_OK;
    }
    uint32_t n = 0;
    aclError e = rt->aclrtGetDeviceCount(&n);
    if (e != ACL_SUCCESS || n == 0) {
        if (index > 0) return SGL_ATTN_E_NOT_FOUND;
        char d[200] = "count 0";
        if (e) npu_describe(rt, e, d, sizeof d);
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "no Ascend device: aclrtGetDeviceCount -> %s", d);
        snprintf(c->device_name, sizeof c->device_name, "none");
        return SGL_ATTN_OK;
    }
    if (index >= n) return SGL_ATTN_E_NOT_FOUND;
    e = rt->aclrtSetDevice((int32_t)index);
    if (e != ACL_SUCCESS) {
        char d[200];
        npu_describe(rt, e, d, sizeof d);
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "aclrtSetDevice(%u) -> %s", index, d);
        return SGL_ATTN_OK;
    }
    const char *soc = rt->aclrtGetSocName();
    size_t free_b = 0, total_b = 0;
    if (rt->aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total_b) == ACL_SUCCESS) c->memory_bytes = total_b;
    snprintf(c->device_name, sizeof c->device_name, "%.60s (NPU %u)", soc ? soc : "unknown Ascend", index);
    snprintf(c->arch_name, sizeof c->arch_name, "%.47s", soc ? soc : "");
    if (!soc_supported(soc)) {
        c->available = 0;
        snprintf(c->reason, sizeof c->reason, "aclnnFusedInferAttentionScoreV2 runs on Atlas A2/A3 "
                 "(Ascend910B*, Ascend910_93); this NPU is %.60s", soc ? soc : "unknown");
        return SGL_ATTN_OK;
    }
    c->available = 1;
    c->score = 50; /* sglang's NPU default */
    snprintf(c->reason, sizeof c->reason, "CANN runtime loaded; %.60s", soc);
    return SGL_ATTN_OK;
}

static int npu_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    if (m->is_mla) {
        snprintf(why, why_size, "npu_ascend runs FusedInferAttentionScoreV2 without the MLA rope split: no MLA");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->is_encoder_decoder) {
        snprintf(why, why_size, "npu_ascend has no cross attention");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->head_dim_qk != m->head_dim_v) {
        snprintf(why, why_size, "FusedInferAttentionScoreV2 needs equal qk and v head dims (model: %d / %d)",
                 m->head_dim_qk, m->head_dim_v);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->head_dim_qk % 16) {
        snprintf(why, why_size, "FusedInferAttentionScoreV2 needs a head dim that is a multiple of 16 (model: %d)",
                 m->head_dim_qk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->sliding_window >= 0 || m->logit_softcap > 0 || m->has_sinks) {
        snprintf(why, why_size, "npu_ascend maps no sliding window, soft-cap or sinks onto the fused operator");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->dtype != m->kv_dtype) {
        snprintf(why, why_size, "npu_ascend needs q and KV pool in one dtype (no KV quantisation)");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

SGL_SDK_PLUGIN(plugin,
    .name = NPU_PLUGIN_NAME,
    .version = "0.1.0",
    .description = "Ascend NPU paged attention via CANN aclnnFusedInferAttentionScoreV2 (CANN loaded at run time)",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_NPU,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = aliases,
    .probe = npu_probe,
    .supports_model = npu_supports_model,
    .create = npu_create,
    .device_ops = &npu_device_ops)
