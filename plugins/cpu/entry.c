/* entry.c - cpu_ref's descriptor, entry point, probe and model check.
 *
 * cpu_ref is embedded in libsglattn (host/embedded.c calls
 * sgl_attn_cpu_ref_entry), so it does not export sgl_attn_plugin_entry: the
 * library must not carry that symbol. */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"
#include "sdk_plugin.h"

/* sglang's CPU fallback is the backend this one stands in for; it also
 * serves DeepSeek sparse attention (sparse_mla.c, dsa_indexer.c), over a
 * pool of values or FlashMLA's fp8 record. */
static const char *const cref_aliases[] = {"torch_native", "dsa", NULL};

static int cref_probe(uint32_t index, sgl_attn_caps *caps) {
    if (!caps || caps->struct_size < sizeof *caps) return SGL_ATTN_E_INVALID;
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    cref_cpu cpu;
    cref_cpu_query(&cpu);
    caps->available = 1;
    caps->reason[0] = 0;
    snprintf(caps->device_name, sizeof caps->device_name, "%.60s (%d threads%s)", cpu.host.name, cpu.host.cores,
             cpu.avx512 ? ", AVX-512" : cpu.avx2 ? ", AVX2" : "");
    snprintf(caps->arch_name, sizeof caps->arch_name, "%s", cpu.host.arch);
    sgl_sdk_caps_no_arch(caps);
    caps->memory_bytes = cpu.host.memory;
    caps->compute_units = (uint32_t)cpu.host.cores;
    caps->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA |
                       SGL_ATTN_KIND_CROSS;
    caps->q_dtypes = CREF_DTYPES;
    caps->kv_dtypes = CREF_KV_DTYPES;
    caps->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                     SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                     SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS |
                     SGL_ATTN_FEAT_TREE_MASK |
                     SGL_ATTN_FEAT_DRAFT_EXTEND |
                     SGL_ATTN_FEAT_ATTN_TYPES |
                     SGL_ATTN_FEAT_ENCODER_LOC |
                     SGL_ATTN_FEAT_PAGE_TABLE |
                     SGL_ATTN_FEAT_SLOT_MAP |
                     SGL_ATTN_FEAT_DUAL_CHUNK;
    /* ABI 1.2 additions served (ragged.c, lse_out.c, fp8_scales.c, rope_split.c) */
    caps->features |= SGL_ATTN_FEAT_RAGGED | SGL_ATTN_FEAT_LSE | SGL_ATTN_FEAT_FP8_SCALES |
                      SGL_ATTN_FEAT_MLA_ROPE_SPLIT;
    caps->head_dim_qk_max = CREF_MAX_HEAD_DIM;
    caps->head_dim_v_max = CREF_MAX_HEAD_DIM;
    caps->n_head_dims = 0;
    caps->page_size_max = INT32_MAX; /* any: cpu_ref reads token by token */
    caps->n_page_sizes = 0;
    caps->max_gqa_ratio = 0;
    caps->score = 1; /* the fallback: chosen only when nothing faster is usable */
    caps->dsa_ops = SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER | SGL_ATTN_DSA_KV_FP8_RECORD;
    return SGL_ATTN_OK;
}

static int cref_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    int rc = cref_model_ok(m, why, why_size);
    return rc == SGL_ATTN_OK ? SGL_ATTN_OK : SGL_ATTN_E_UNSUPPORTED;
}

/* Embedded in libsglattn: a hidden entry host/embedded.c names, no export. */
SGL_SDK_EMBEDDED_PLUGIN(sgl_attn_cpu_ref_entry, cref_plugin,
    .name = CREF_NAME,
    .version = CREF_VERSION,
    .description = "reference attention in C on all CPU cores; f32/f16/bf16 and the float64 gold path",
    .license = "MIT",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .aliases = cref_aliases,
    .probe = cref_probe,
    .supports_model = cref_supports_model,
    .create = cref_create)
