/* plugin_short_conv.c - the short_conv wrapper's descriptor (compute: short_conv.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(short_conv, SGL_ATTN_HYBRID_SHORT_CONV,
                  "LFM2 gated short-convolution layers on the CPU over any full-attention backend",
                  "lfm2", "lfm2_moe")
