/* probe.c - the capabilities every CPU hybrid wrapper reports.  A wrapper
 * passes full-attention layers through untouched, so it claims every shape
 * and feature it does not restrict; the host intersects these with the
 * inner's.  What it does restrict: no graph capture (CPU compute), gdn
 * refuses MLA (as sglang does), minimax_sparse reads an MHA/GQA pool. */
#include <string.h>
#include <unistd.h>

#include "hyb.h"

int hyb_probe(uint32_t index, sgl_attn_caps *c, int kind) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES),
         psize = sysconf(_SC_PAGESIZE);
#if defined(__x86_64__)
    const char *arch = "x86_64";
#elif defined(__aarch64__)
    const char *arch = "aarch64";
#else
    const char *arch = "cpu";
#endif
    c->available = 1;
    c->reason[0] = 0;
    hyb_str(c->device_name, sizeof c->device_name, "pthreads x %ld (%s)", ncpu > 0 ? ncpu : 1, arch);
    hyb_str(c->arch_name, sizeof c->arch_name, "%s", arch);
    c->arch_major = c->arch_minor = -1;
    c->arch_min_major = c->arch_min_minor = c->arch_max_major = c->arch_max_minor = -1;
    c->memory_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    c->compute_units = ncpu > 0 ? (uint32_t)ncpu : 1;
    const uint32_t dts = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64;
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
                      SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
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
