/* plugin_minimax_sparse.c - the minimax_sparse wrapper's descriptor
 * (compute: minimax_sparse.c). */
#include "plugin_def.h"

HYB_DEFINE_PLUGIN(minimax_sparse, SGL_ATTN_HYBRID_MINIMAX_SPARSE,
                  "MiniMax block-sparse attention layers on the CPU; dense layers to the inner backend",
                  "minimax_m3")
