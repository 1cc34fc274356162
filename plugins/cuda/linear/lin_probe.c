/* lin_probe.c - the caps every CUDA linear wrapper reports.  A wrapper
 * passes full-attention layers to its inner untouched, so it claims every
 * shape and feature it does not restrict (the host intersects them with the
 * inner's): what it restricts is gdn with MLA (as sglang) and the state
 * dtypes (float32, bfloat16). */
#include "cuda/sdk_cuda.h"
#include "lin.h"

int lin_probe(uint32_t index, sgl_attn_caps *c, int kind) {
    if (!c || c->struct_size < sizeof *c) return SGL_ATTN_E_INVALID;
    /* mma.sync, cp.async and ldmatrix: SM 8.0 */
    int rc = sgl_sdk_cuda_probe(index, c, 8, 0);
    if (rc) return rc;
    const uint32_t dts = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16;
    c->q_dtypes = dts;
    c->kv_dtypes = dts | SGL_ATTN_DT_FP8_E4M3; /* the KV pool is the inner's business */
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_CROSS |
                    (kind == SGL_ATTN_HYBRID_GDN ? 0 : SGL_ATTN_KIND_MLA);
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW | SGL_ATTN_FEAT_SOFTCAP |
                  SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE | SGL_ATTN_FEAT_MLA_EXTEND |
                  SGL_ATTN_FEAT_DIFF_HEAD_DIMS | SGL_ATTN_FEAT_GRAPH_CAPTURE |
                  SGL_ATTN_FEAT_GRAPH_VERIFY | /* chains only: custom_mask is refused at the plan */
                  SGL_ATTN_FEAT_CALLER_STATE; /* linear_io state tensors, ops->state_batch */
    c->head_dim_qk_max = c->head_dim_v_max = LIN_DIM_MAX;
    c->n_head_dims = 0;
    c->page_size_max = 65536;
    c->n_page_sizes = 0;
    c->max_gqa_ratio = 0;
    c->score = c->available ? 20 : 0;
    c->state_dtypes = LIN_STATE_DTYPES;
    return SGL_ATTN_OK;
}
