/* plugin_kda.c - the kda wrapper's descriptor (compute: kda.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(kda, SGL_ATTN_HYBRID_KDA,
                  "Kimi Delta Attention layers on the CPU (Kimi-Linear) over any full-attention backend",
                  "kimi_linear")
