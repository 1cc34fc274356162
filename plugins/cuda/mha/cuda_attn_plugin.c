/* cuda_attn_plugin.c - the cuda_attn descriptor and entry (the SDK's), probe and
 * model check.  The probe reports each device's SM version, memory and SM count;
 * with no driver or no GPU it answers unavailable with the CUDA runtime's own
 * words (the static cudart loads without a driver). */
#include "cuda/sdk_cuda.h"
#include "cuda_attn.h"
#include "sdk_plugin.h"

/* sglang backend names whose role this plugin fills (conf/ maps their rules). */
static const char *const ca_aliases[] = {"fa3", "flashinfer", "triton", "trtllm_mha", NULL};

static int ca_probe(uint32_t index, sgl_attn_caps *caps) {
    if (!caps || caps->struct_size < sizeof *caps) return SGL_ATTN_E_INVALID;
    int rc = sgl_sdk_cuda_probe(index, caps, 8, 0);
    if (rc) return rc;
    caps->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_CROSS;
    caps->q_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    /* fp8 e4m3 pools: decode at head dims 64/128, groups up to 8 (docs/cuda.md) */
    caps->kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_FP8_E4M3;
    caps->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                     SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_GRAPH_CAPTURE |
                     SGL_ATTN_FEAT_FP8_SCALES | SGL_ATTN_FEAT_PAGE_TABLE | SGL_ATTN_FEAT_SLOT_MAP;
    static const uint16_t dims[] = {64, 128, 256};
    caps->n_head_dims = 3;
    for (int i = 0; i < 3; i++) caps->head_dims[i].qk = caps->head_dims[i].v = dims[i];
    caps->head_dim_qk_max = caps->head_dim_v_max = 256;
    /* The kernels gather token by token through req_to_token, so any page
     * size works; 1024 bounds what was reasoned about.  A batch.page_table
     * needs a power of two (the kernels shift; init_forward_metadata says so). */
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

SGL_SDK_PLUGIN(ca_plugin,
    .name = CA_NAME,
    .version = "0.1.0",
    .description = "CUDA paged MHA/GQA/MQA/cross attention: split-KV decode, mma.sync/wgmma extend",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CUDA,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = ca_aliases,
    .probe = ca_probe,
    .supports_model = ca_supports_model,
    .create = ca_backend_create,
    .device_ops = &sgl_sdk_cuda_device_ops)
