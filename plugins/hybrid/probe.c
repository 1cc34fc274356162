/* probe.c - the capabilities every CPU hybrid wrapper reports.  A wrapper
 * passes full-attention layers through untouched, so it claims every shape
 * and feature it does not restrict; the host intersects these with the
 * inner's (the caller-owned linear state is the wrapper's alone: the host
 * keeps that bit from the wrapper).  What it does restrict: no graph capture (CPU compute), gdn
 * refuses MLA (as sglang does), minimax_sparse reads an MHA/GQA pool. */
#include "hyb.h"
#include "sdk_cpu.h"
#include "sdk_plugin.h"

int hyb_probe(uint32_t index, sgl_attn_caps *c, int kind) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    sgl_sdk_cpu cpu;
    sgl_sdk_cpu_describe(&cpu);
    c->available = 1;
    c->reason[0] = 0;
    sgl_sdk_str(c->device_name, sizeof c->device_name, "pthreads x %d (%s)", cpu.cores, cpu.arch);
    sgl_sdk_str(c->arch_name, sizeof c->arch_name, "%s", cpu.arch);
    sgl_sdk_caps_no_arch(c);
    c->memory_bytes = cpu.memory;
    c->compute_units = (uint32_t)cpu.cores;
    const uint32_t dts = HYB_FLOAT_DTYPES;
    c->q_dtypes = dts;
    if (kind == SGL_ATTN_HYBRID_MINIMAX_SPARSE) {
        c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
        c->kv_dtypes = dts;
        c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SPEC_DECODE |
                      SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    } else {
        c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA |
                        SGL_ATTN_KIND_CROSS | (kind == SGL_ATTN_HYBRID_GDN ? 0 : SGL_ATTN_KIND_MLA);
        c->kv_dtypes = dts | SGL_ATTN_DT_FP8_E4M3; /* the KV pool is the inner's business */
        c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                      SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                      SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS |
                      SGL_ATTN_FEAT_CALLER_STATE; /* linear_io state tensors, ops->state_batch */
    }
    c->head_dim_qk_max = c->head_dim_v_max = HYB_DIM_MAX;
    c->n_head_dims = 0;
    c->page_size_max = 65536;
    c->n_page_sizes = 0;
    c->max_gqa_ratio = 0;
    c->score = 10;
    c->state_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F64;
    return SGL_ATTN_OK;
}
