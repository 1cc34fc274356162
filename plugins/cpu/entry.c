/* entry.c - cpu_ref's descriptor, entry point, probe and model check.
 *
 * cpu_ref is embedded in libsglattn (host/embedded.c calls
 * sgl_attn_cpu_ref_entry), so it does not export sgl_attn_plugin_entry: the
 * library must not carry that symbol. */
#include <stdio.h>
#include <string.h>

#include "cpu_ref.h"

/* sglang's CPU fallback is the backend this one stands in for. */
static const char *const cref_aliases[] = {"torch_native", NULL};

const char *cref_dtype_name(DLDataType t, char *buf, size_t size) {
    switch (sgl_attn_dtype_bit(t)) {
    case SGL_ATTN_DT_F32: return "f32";
    case SGL_ATTN_DT_F16: return "f16";
    case SGL_ATTN_DT_BF16: return "bf16";
    case SGL_ATTN_DT_F64: return "f64";
    case SGL_ATTN_DT_FP8_E4M3: return "fp8_e4m3";
    default: break;
    }
    if (t.code == kDLInt && t.lanes == 1 && (t.bits == 32 || t.bits == 64)) return t.bits == 32 ? "int32" : "int64";
    snprintf(buf, size, "(code %u, bits %u, lanes %u)", t.code, t.bits, t.lanes);
    return buf;
}

#define CREF_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64)

static int cref_probe(uint32_t index, sgl_attn_caps *caps) {
    if (!caps || caps->struct_size < sizeof *caps) return SGL_ATTN_E_INVALID;
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    cref_cpu cpu;
    cref_cpu_query(&cpu);
    caps->available = 1;
    caps->reason[0] = 0;
    snprintf(caps->device_name, sizeof caps->device_name, "%.60s (%d threads%s)", cpu.name, cref_thread_count(&cpu),
             cpu.avx512 ? ", AVX-512" : cpu.avx2 ? ", AVX2" : "");
#if defined(__x86_64__)
    snprintf(caps->arch_name, sizeof caps->arch_name, "x86_64");
#elif defined(__aarch64__)
    snprintf(caps->arch_name, sizeof caps->arch_name, "aarch64");
#else
    snprintf(caps->arch_name, sizeof caps->arch_name, "cpu");
#endif
    caps->arch_major = caps->arch_minor = -1;
    caps->arch_min_major = caps->arch_min_minor = -1;
    caps->arch_max_major = caps->arch_max_minor = -1;
    caps->memory_bytes = cpu.memory;
    caps->compute_units = (uint32_t)cpu.cores;
    caps->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA | SGL_ATTN_KIND_MLA |
                       SGL_ATTN_KIND_CROSS;
    caps->q_dtypes = CREF_DTYPES;
    caps->kv_dtypes = CREF_DTYPES;
    caps->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW |
                     SGL_ATTN_FEAT_SOFTCAP | SGL_ATTN_FEAT_SINKS | SGL_ATTN_FEAT_SPEC_DECODE |
                     SGL_ATTN_FEAT_MLA_EXTEND | SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    caps->head_dim_qk_max = CREF_MAX_HEAD_DIM;
    caps->head_dim_v_max = CREF_MAX_HEAD_DIM;
    caps->n_head_dims = 0;
    caps->page_size_max = INT32_MAX; /* any: cpu_ref reads token by token */
    caps->n_page_sizes = 0;
    caps->max_gqa_ratio = 0;
    caps->score = 1; /* the fallback: chosen only when nothing faster is usable */
    return SGL_ATTN_OK;
}

/* Model checks the caps cannot express.  Also used by create. */
int cref_model_ok(const sgl_attn_model *m, char *why, size_t why_size) {
    if (!m) {
        snprintf(why, why_size, "model is NULL");
        return SGL_ATTN_E_INVALID;
    }
    int hq = m->num_q_heads, hkv = m->num_kv_heads;
    int dqk = m->head_dim_qk, dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk;
    if (hq < 1 || hkv < 1 || hq % hkv) {
        snprintf(why, why_size, "num_q_heads %d / num_kv_heads %d: expected both >= 1 and q a multiple of kv", hq,
                 hkv);
        return SGL_ATTN_E_INVALID;
    }
    if (dqk < 1 || dqk > CREF_MAX_HEAD_DIM || dv < 1 || dv > CREF_MAX_HEAD_DIM) {
        snprintf(why, why_size, "head dims qk %d, v %d: cpu_ref serves 1..%d", dqk, dv, CREF_MAX_HEAD_DIM);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    if (m->is_mla) {
        if (hkv != 1 || dv > dqk) {
            snprintf(why, why_size,
                     "MLA model with num_kv_heads %d, head_dim_qk %d, head_dim_v %d: expected one latent head "
                     "and v = the first kv_lora_rank dims of the qk row",
                     hkv, dqk, dv);
            return SGL_ATTN_E_INVALID;
        }
    }
    if (m->index_topk > 0) {
        snprintf(why, why_size,
                 "DeepSeek sparse attention (index_topk %d) picks keys with an indexer cpu_ref does not have",
                 m->index_topk);
        return SGL_ATTN_E_UNSUPPORTED;
    }
    return SGL_ATTN_OK;
}

static int cref_supports_model(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t why_size) {
    (void)caps;
    int rc = cref_model_ok(m, why, why_size);
    return rc == SGL_ATTN_OK ? SGL_ATTN_OK : SGL_ATTN_E_UNSUPPORTED;
}

const sgl_attn_plugin cref_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = CREF_NAME,
    .version = CREF_VERSION,
    .description = "reference attention in C on all CPU cores; f32/f16/bf16 and the float64 gold path",
    .license = "MIT",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .hybrid_kind = SGL_ATTN_HYBRID_NONE,
    .custom_kind = NULL,
    .aliases = cref_aliases,
    .model_types = NULL,
    .probe = cref_probe,
    .supports_model = cref_supports_model,
    .create = cref_create,
    .state_bytes_per_request = NULL,
    .device_ops = NULL,
};

/* Hidden: reached only through host/embedded.c. */
int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
    return sgl_attn_answer(host, answer, &cref_plugin);
}
