/* plugin_mamba2.c - the mamba2 wrapper's descriptor (compute: mamba2.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(mamba2, SGL_ATTN_HYBRID_MAMBA2,
                  "Mamba-2 SSD layers on the CPU (Nemotron-H, Falcon-H1, Zamba2) over any full-attention backend",
                  "nemotron_h", "falcon_h1", "zamba2", "granitemoehybrid", "bamba", "mamba2")
