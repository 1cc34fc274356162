/* cuda_attn_plugin.c - the cuda_attn descriptor and entry (the SDK's), probe and
 * model check.  The probe reports each device's SM version, memory and SM count;
 * with no driver or no GPU it answers unavailable with the CUDA runtime's own
 * words (the static cudart loads without a driver). */
#include <stdio.h>

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
    /* fp8 e4m3 pools: decode and extend at head dims 64/128, groups up to 8 (docs/cuda.md) */
    caps->kv_dtypes = SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_FP8_E4M3;
    caps->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                     SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_GRAPH_CAPTURE |
                     SGL_ATTN_FEAT_FP8_SCALES | SGL_ATTN_FEAT_PAGE_TABLE | SGL_ATTN_FEAT_SLOT_MAP |
                     SGL_ATTN_FEAT_RAGGED | SGL_ATTN_FEAT_LSE |
                     SGL_ATTN_FEAT_DIFF_HEAD_DIMS |
                     /* verify (chain or tree), draft extend and attention types run on the extend
                      * kernels (docs/cuda.md); verify batches are captured in graphs with every
                      * kernel (the fp8 and ragged-only models, which verify nothing, refuse by name) */
                     SGL_ATTN_FEAT_SPEC_DECODE | SGL_ATTN_FEAT_TREE_MASK | SGL_ATTN_FEAT_DRAFT_EXTEND |
                     SGL_ATTN_FEAT_GRAPH_VERIFY |
                     SGL_ATTN_FEAT_ATTN_TYPES | SGL_ATTN_FEAT_DUAL_CHUNK |
                     /* cross layers save the encoder K/V through the save kernels */
                     SGL_ATTN_FEAT_ENCODER_LOC;
    /* equal dims for every forward; qk 192 / v 128 (DeepSeek's MLA prefill)
     * in forward_ragged only (the paged forwards refuse it by name) */
    static const uint16_t dims[][2] = {{64, 64}, {128, 128}, {256, 256}, {CA_RAGGED_DQK, CA_RAGGED_DV}};
    caps->n_head_dims = 4;
    for (int i = 0; i < 4; i++) caps->head_dims[i].qk = dims[i][0], caps->head_dims[i].v = dims[i][1];
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

/* Selection routes a model's paged forwards: a qk 192 / v 128 model (create
 * takes it, for forward_ragged) is not one cuda_attn can run layer by layer. */
static int ca_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    if (ca_model_check(m, why, why_size) != SGL_ATTN_OK) return SGL_ATTN_E_UNSUPPORTED;
    const int dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk;
    if (dv != m->head_dim_qk) {
        snprintf(why, why_size,
                 "head dims qk %d / v %d: cuda_attn serves them in forward_ragged only, not the paged forwards",
                 m->head_dim_qk, dv);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
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
