/* plugin_lightning.c - the lightning wrapper's descriptor (compute: lightning.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(lightning, SGL_ATTN_HYBRID_LIGHTNING,
                  "MiniMax lightning (decayed linear) attention layers on the CPU over any full-attention backend",
                  "minimax", "minimax_text_01", "minimax_m1")
