/* plugin_gdn.c - the gdn wrapper's descriptor (compute: gdn.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(gdn, SGL_ATTN_HYBRID_GDN,
                  "Gated DeltaNet layers on the CPU (Qwen3-Next, Qwen3.5) over any full-attention backend",
                  "qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text")
