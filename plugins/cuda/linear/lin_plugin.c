/* lin_plugin.c - the descriptor and entry point (the SDK's) of one CUDA
 * linear-attention wrapper.  Compiled once per kind with -DLIN_KIND_<NAME>;
 * everything else is shared by the five .so files. */
#include "cuda/sdk_cuda.h"
#include "lin.h"
#include "sdk_plugin.h"

#if defined(LIN_KIND_GDN)
#define KIND SGL_ATTN_HYBRID_GDN
#define NAME "gdn_cuda"
#define DESC "Gated DeltaNet layers on CUDA (Qwen3-Next, Qwen3.5) over a CUDA full-attention backend"
static const char *const model_types[] = {"qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text",
                                          "qwen3_5_moe_text", NULL};
#elif defined(LIN_KIND_KDA)
#define KIND SGL_ATTN_HYBRID_KDA
#define NAME "kda_cuda"
#define DESC "Kimi Delta Attention layers on CUDA (Kimi-Linear) over a CUDA full-attention backend"
static const char *const model_types[] = {"kimi_linear", NULL};
#elif defined(LIN_KIND_MAMBA2)
#define KIND SGL_ATTN_HYBRID_MAMBA2
#define NAME "mamba2_cuda"
#define DESC "Mamba-2 SSD layers on CUDA (Nemotron-H, Falcon-H1, Zamba2) over a CUDA full-attention backend"
static const char *const model_types[] = {"nemotron_h", "falcon_h1", "zamba2", "granitemoehybrid", "bamba",
                                          "mamba2", NULL};
#elif defined(LIN_KIND_SHORT_CONV)
#define KIND SGL_ATTN_HYBRID_SHORT_CONV
#define NAME "short_conv_cuda"
#define DESC "LFM2 gated short-convolution layers on CUDA over a CUDA full-attention backend"
static const char *const model_types[] = {"lfm2", "lfm2_moe", NULL};
#elif defined(LIN_KIND_LIGHTNING)
#define KIND SGL_ATTN_HYBRID_LIGHTNING
#define NAME "lightning_cuda"
#define DESC "MiniMax lightning (decayed linear) attention layers on CUDA over a CUDA full-attention backend"
static const char *const model_types[] = {"minimax", "minimax_text_01", "minimax_m1", NULL};
#else
#error "build with -DLIN_KIND_GDN, _KDA, _MAMBA2, _SHORT_CONV or _LIGHTNING"
#endif

static int probe_(uint32_t index, sgl_attn_caps *caps) { return lin_probe(index, caps, KIND); }

static int supports_(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t n) {
    (void)caps;
    return sgl_sdk_lin_supports(KIND, m, LIN_STATE_DTYPES, why, n);
}

static int create_(const sgl_attn_create_args *a, sgl_attn_backend **out) { return lin_create(KIND, NAME, a, out); }

static uint64_t state_bytes_(const sgl_attn_model *m) { return sgl_sdk_lin_state_bytes(KIND, m, LIN_STATE_DTYPES); }

SGL_SDK_PLUGIN(plugin_,
    .name = NAME,
    .version = "0.1.0",
    .description = DESC,
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CUDA,
    .role = SGL_ATTN_ROLE_HYBRID,
    .hybrid_kind = KIND,
    .model_types = model_types,
    .probe = probe_,
    .supports_model = supports_,
    .create = create_,
    .state_bytes_per_request = state_bytes_,
    .device_ops = &sgl_sdk_cuda_device_ops)
