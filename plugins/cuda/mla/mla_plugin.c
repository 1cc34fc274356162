/* mla_plugin.c - the cuda_mla descriptor and entry (the SDK's), probe and model check.
 * MLA only: the sglang MLA backends (FlashMLA, CUTLASS MLA, TRT-LLM MLA,
 * CuTe-DSL MLA, TokenSpeed MLA) map to it; conf/ holds the "can only be used
 * with MLA models" rule.  With no driver or no GPU the probe answers
 * unavailable in the CUDA runtime's words (the static cudart loads anyway). */
#include <stdio.h>
#include <string.h>

#include "cuda/sdk_cuda.h"
#include "mla_backend.h"
#include "sdk_plugin.h"

static const char *const mla_aliases[] = {"flashmla", "cutlass_mla", "trtllm_mla", "cutedsl_mla",
                                          "tokenspeed_mla", "dsa", NULL};

static int mla_probe(uint32_t index, sgl_attn_caps *caps) {
    if (!caps || caps->struct_size < sizeof *caps) return SGL_ATTN_E_INVALID;
    int rc = sgl_sdk_cuda_probe(index, caps, 8, 0);
    if (rc) return rc;
    caps->attn_kinds = SGL_ATTN_KIND_MLA;
    caps->q_dtypes = SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F16;
    /* fp8 e4m3 pools run on the simple kernel (docs/cuda_mla.md) */
    caps->kv_dtypes = SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_FP8_E4M3;
    caps->features = SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_MLA_EXTEND |
                     SGL_ATTN_FEAT_SPEC_DECODE | SGL_ATTN_FEAT_GRAPH_CAPTURE |
                     SGL_ATTN_FEAT_DIFF_HEAD_DIMS | SGL_ATTN_FEAT_TREE_MASK | SGL_ATTN_FEAT_DRAFT_EXTEND |
                     SGL_ATTN_FEAT_MLA_ROPE_SPLIT | SGL_ATTN_FEAT_FP8_SCALES;
    caps->n_head_dims = 1;
    caps->head_dims[0].qk = MLA_D_QK;
    caps->head_dims[0].v = MLA_D_V;
    caps->head_dim_qk_max = MLA_D_QK;
    caps->head_dim_v_max = MLA_D_V;
    static const uint32_t pages[] = {1, 16, 32, 64};
    caps->n_page_sizes = 4;
    for (int i = 0; i < 4; i++) caps->page_sizes[i] = pages[i];
    caps->page_size_max = 64;
    caps->max_gqa_ratio = 0;
    /* sparse MLA over bf16/f16 pools and FlashMLA's fp8 record (bf16 q); the
     * indexer (mla_indexer.h) */
    caps->dsa_ops = SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_KV_FP8_RECORD | SGL_ATTN_DSA_INDEXER;
    caps->score = caps->available ? 60 : 0;
    return SGL_ATTN_OK;
}

static int mla_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t n) {
    (void)caps;
    if (!m) return SGL_ATTN_E_INVALID;
    if (!m->is_mla) {
        snprintf(why, n, "%s is not an MLA model: cuda_mla serves MLA (DeepSeek latent attention) only",
                 m->name[0] ? m->name : "the model");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->head_dim_qk != MLA_D_QK || m->head_dim_v != MLA_D_V || m->num_kv_heads != 1) {
        snprintf(why, n,
                 "MLA with head dims %d/%d and %d KV head(s): cuda_mla runs kv_lora_rank 512 + rope 64 "
                 "(576/512) with one latent head",
                 m->head_dim_qk, m->head_dim_v, m->num_kv_heads);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->sliding_window >= 0 || m->logit_softcap != 0.f || m->has_sinks || m->is_encoder_decoder) {
        snprintf(why, n, "cuda_mla has no sliding window, soft-cap, sinks or encoder-decoder attention");
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

SGL_SDK_PLUGIN(mla_plugin,
    .name = MLA_NAME,
    .version = "0.1.0",
    .description = "CUDA absorbed MLA (DeepSeek): split-KV decode/verify and extend, mma.sync + sm_90a wgmma; DSA sparse MLA and indexer",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CUDA,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = mla_aliases,
    .probe = mla_probe,
    .supports_model = mla_supports_model,
    .create = mla_backend_create,
    .device_ops = &sgl_sdk_cuda_device_ops)
