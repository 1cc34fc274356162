/* cuda_attn_plugin.c - the cuda_attn descriptor, entry point, probe and model
 * check.  The probe reports each device's SM version, memory and SM count;
 * with no driver or no GPU it answers unavailable with the CUDA runtime's own
 * words (the static cudart loads without a driver). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cuda_attn.h"
#include "cuda/sdk_cuda.h"

/* sglang backend names whose role this plugin fills (conf/ maps their rules). */
static const char *const ca_aliases[] = {"fa3", "flashinfer", "triton", "trtllm_mha", NULL};

/* The host's API, set by the entry point (the host negotiates before any
 * other call); the plugin's only mutable global, written once per load. */
static _Atomic(const sgl_attn_host_api *) g_host;

const sgl_attn_host_api *ca_host(void) { return atomic_load(&g_host); }

void ca_log(int level, const char *fmt, ...) {
    const sgl_attn_host_api *h = ca_host();
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (h && h->struct_size >= offsetof(sgl_attn_host_api, log) + sizeof h->log && h->log)
        h->log(h->host_ctx, level, CA_NAME, "%s", line);
}

static int ca_probe(uint32_t index, sgl_attn_caps *caps) {
    if (!caps || caps->struct_size < sizeof *caps) return SGL_ATTN_E_INVALID;
    int rc = sgl_sdk_cuda_probe(index, caps, 8, 0);
    if (rc) return rc;
    caps->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_CROSS;
    caps->q_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    caps->kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    caps->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                     SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_GRAPH_CAPTURE;
    static const uint16_t dims[] = {64, 128, 256};
    caps->n_head_dims = 3;
    for (int i = 0; i < 3; i++) caps->head_dims[i].qk = caps->head_dims[i].v = dims[i];
    caps->head_dim_qk_max = caps->head_dim_v_max = 256;
    /* The kernels gather token by token through req_to_token, so any page
     * size works; 1024 bounds what was reasoned about. */
    caps->n_page_sizes = 0;
    caps->page_size_max = 1024;
    caps->max_gqa_ratio = 0;
    caps->score = caps->available ? 50 : 0;
    return SGL_ATTN_OK;
}

static int ca_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    return ca_model_check(m, why, why_size) == SGL_ATTN_OK ? SGL_ATTN_OK : SGL_ATTN_E_UNSUPPORTED;
}

static const sgl_attn_plugin ca_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = CA_NAME,
    .version = "0.1.0",
    .description = "CUDA paged MHA/GQA/MQA/cross attention: split-KV decode, mma.sync/wgmma extend",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CUDA,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .custom_kind = NULL,
    .aliases = ca_aliases,
    .model_types = NULL,
    .probe = ca_probe,
    .supports_model = ca_supports_model,
    .create = ca_backend_create,
    .state_bytes_per_request = NULL,
    .device_ops = &sgl_sdk_cuda_device_ops,
};

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    int rc = sgl_attn_answer(host, answer, &ca_plugin);
    if (rc == SGL_ATTN_OK) atomic_store(&g_host, host);
    return rc;
}
