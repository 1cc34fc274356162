/*
 * sgl_attn_abi.h - the one header a sglattn plugin includes.
 *
 * ABI 1.2 (1.1 appended sgl_attn_create_args.host; 1.2 appended
 * sgl_attn_caps.reason_long, sgl_attn_model.config_dtype and the blocks marked
 * "ABI 1.2: ..." below: tree verify, ragged attention with LSE, page tables,
 * slot maps, caller-owned linear state, attention types, engine fp8, MLA rope
 * inputs, graphs, DeepSeek sparse attention, dual chunk attention).
 * Rules (see docs/abi.md):
 *  - Every public struct starts with `uint32_t struct_size`.  Structs are
 *    append-only: a new field goes at the end, past the previous minor's
 *    sizeof (never into its tail padding, so an older writer's struct_size
 *    never covers it), and bumps SGL_ATTN_ABI_MINOR.
 *    A reader never touches a field beyond the struct_size it was given.
 *  - The host loads a plugin built for the same major and an equal or older
 *    minor.  Negotiation (sgl_attn_plugin_entry) is the first plugin call.
 *  - Structs the host fills for a plugin (caps, batch, forward args) are the
 *    host's size, which is never smaller than the plugin's.  Structs the
 *    plugin hands to the host (descriptor, backend ops) may be older; the
 *    host reads only their struct_size bytes and defaults the rest.
 *  - Tensors are DLPack 0.6 DLTensors.  Plugins never link the host.
 */
#ifndef SGL_ATTN_ABI_H
#define SGL_ATTN_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SGL_ATTN_ABI_MAJOR 1
#define SGL_ATTN_ABI_MINOR 2

/* The one symbol a plugin exports. */
#define SGL_ATTN_PLUGIN_ENTRY_SYMBOL "sgl_attn_plugin_entry"

#if defined(_WIN32)
#define SGL_ATTN_EXPORT __declspec(dllexport)
#else
#define SGL_ATTN_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- status */

typedef enum sgl_attn_status {
    SGL_ATTN_OK = 0,
    SGL_ATTN_E_INVALID = -1,     /* bad argument: shape, dtype, index, length */
    SGL_ATTN_E_UNSUPPORTED = -2, /* valid request this backend does not serve */
    SGL_ATTN_E_NOMEM = -3,
    SGL_ATTN_E_DEVICE = -4,      /* the device runtime failed */
    SGL_ATTN_E_ABI = -5,         /* version negotiation refused */
    SGL_ATTN_E_NOT_FOUND = -6,   /* no such device / plugin / name */
    SGL_ATTN_E_STATE = -7,       /* call out of order (e.g. forward before metadata) */
    SGL_ATTN_E_INTERNAL = -8
} sgl_attn_status;

/* ------------------------------------------------------------- enumerations */

typedef enum sgl_attn_platform {
    SGL_ATTN_PLATFORM_NONE = 0, /* layers that run on whatever their inner runs on */
    SGL_ATTN_PLATFORM_CPU = 1,
    SGL_ATTN_PLATFORM_CUDA = 2,
    SGL_ATTN_PLATFORM_HIP = 3,
    SGL_ATTN_PLATFORM_XPU = 4,
    SGL_ATTN_PLATFORM_NPU = 5,
    SGL_ATTN_PLATFORM_COUNT_ /* first invalid value */
} sgl_attn_platform;

typedef enum sgl_attn_role {
    SGL_ATTN_ROLE_FULL = 1,   /* computes full attention */
    SGL_ATTN_ROLE_HYBRID = 2, /* wraps a full backend, computes linear-attention layers */
    SGL_ATTN_ROLE_LAYER = 3,  /* wraps any backend and forwards every call (validation) */
    SGL_ATTN_ROLE_COUNT_
} sgl_attn_role;

typedef enum sgl_attn_hybrid_kind {
    SGL_ATTN_HYBRID_NONE = 0,
    SGL_ATTN_HYBRID_GDN = 1,            /* Gated DeltaNet (Qwen3-Next, Qwen3.5) */
    SGL_ATTN_HYBRID_MAMBA2 = 2,         /* Nemotron-H, Falcon-H1, Zamba2 */
    SGL_ATTN_HYBRID_SHORT_CONV = 3,     /* LFM2, ZAYA */
    SGL_ATTN_HYBRID_KDA = 4,            /* Kimi-Linear */
    SGL_ATTN_HYBRID_LIGHTNING = 5,      /* MiniMax-01 lightning attention */
    SGL_ATTN_HYBRID_MINIMAX_SPARSE = 6, /* MiniMax sparse layers */
    SGL_ATTN_HYBRID_CUSTOM = 7,         /* third party; model_types says which models */
    SGL_ATTN_HYBRID_COUNT_
} sgl_attn_hybrid_kind;

/* Bit set of dtypes, for capabilities.  sgl_attn_dtype_bit() maps a DLDataType. */
enum {
    SGL_ATTN_DT_F32 = 1u << 0,
    SGL_ATTN_DT_F16 = 1u << 1,
    SGL_ATTN_DT_BF16 = 1u << 2,
    SGL_ATTN_DT_F64 = 1u << 3,
    SGL_ATTN_DT_FP8_E4M3 = 1u << 4,
    SGL_ATTN_DT_FP8_E5M2 = 1u << 5  /* ABI 1.2 */
};

/* DLPack 0.6 has no fp8 code: ours is {kDLOpaqueHandle-free code 0x80, 8, 1}. */
#define SGL_ATTN_DL_FLOAT8_E4M3_CODE 0x80u

/* ABI 1.2: engine fp8.  DLPack 1.1's float8 codes, as torch exports a
 * float8 tensor.  sgl_attn_dtype_bit() maps both codes for e4m3 (DLPack's
 * e4m3fn and ours: the same bytes), so a plugin built for 1.2 reads either;
 * a plugin built for 1.1 knows only ours, and the caller passes ours to it. */
#define SGL_ATTN_DL_FLOAT8_E4M3FN_CODE 10u /* kDLFloat8_e4m3fn */
#define SGL_ATTN_DL_FLOAT8_E5M2_CODE 12u   /* kDLFloat8_e5m2 */

/* Attention shapes a plugin serves (bit set). */
enum {
    SGL_ATTN_KIND_MHA = 1u << 0,   /* num_kv_heads == num_q_heads */
    SGL_ATTN_KIND_GQA = 1u << 1,   /* 1 < ratio < num_q_heads */
    SGL_ATTN_KIND_MQA = 1u << 2,   /* num_kv_heads == 1 */
    SGL_ATTN_KIND_MLA = 1u << 3,   /* latent pool [slots, 1, kv_lora_rank + rope] */
    SGL_ATTN_KIND_CROSS = 1u << 4  /* encoder-decoder cross attention */
};

/* Features (bit set). */
enum {
    SGL_ATTN_FEAT_EXTEND = 1u << 0,         /* prefill / extend with cached prefix */
    SGL_ATTN_FEAT_DECODE = 1u << 1,
    SGL_ATTN_FEAT_SLIDING_WINDOW = 1u << 2,
    SGL_ATTN_FEAT_SOFTCAP = 1u << 3,        /* logit soft-cap (tanh) */
    SGL_ATTN_FEAT_SINKS = 1u << 4,          /* learned per-head sink logit */
    SGL_ATTN_FEAT_GRAPH_CAPTURE = 1u << 5,  /* CUDA/HIP graph capture and replay */
    SGL_ATTN_FEAT_SPEC_DECODE = 1u << 6,    /* several query tokens per request in decode */
    SGL_ATTN_FEAT_MLA_EXTEND = 1u << 7,     /* MLA extend (absorbed or expanded) */
    SGL_ATTN_FEAT_DIFF_HEAD_DIMS = 1u << 8  /* v head dim may differ from qk head dim */
};

/* ABI 1.2: features a plugin declares for the 1.2 additions.  A plugin that
 * does not set a bit does not serve the addition (caps are zero-filled), and
 * the caller must not pass the matching fields to it: the validation layer
 * refuses them, and an older plugin never reads them. */
enum {
    SGL_ATTN_FEAT_TREE_MASK = 1u << 9,       /* verify with batch->custom_mask (tree / chain) */
    SGL_ATTN_FEAT_DRAFT_EXTEND = 1u << 10,   /* SGL_ATTN_MODE_DRAFT_EXTEND batches */
    SGL_ATTN_FEAT_RAGGED = 1u << 11,         /* ops->forward_ragged: K/V as tensors, cu_seqlens */
    SGL_ATTN_FEAT_LSE = 1u << 12,            /* forward_args.lse / ragged lse output */
    SGL_ATTN_FEAT_PAGE_TABLE = 1u << 13,     /* batch->page_table instead of req_to_token */
    SGL_ATTN_FEAT_SLOT_MAP = 1u << 14,       /* layer->slot_map */
    SGL_ATTN_FEAT_CALLER_STATE = 1u << 15,   /* hybrid: linear_io state tensors, ops->state_batch */
    SGL_ATTN_FEAT_ATTN_TYPES = 1u << 16,     /* layer->attn_type bidirectional / encoder-only */
    SGL_ATTN_FEAT_ENCODER_LOC = 1u << 17,    /* cross layers save encoder K/V at encoder_out_cache_loc */
    SGL_ATTN_FEAT_FP8_SCALES = 1u << 18,     /* layer scale tensors and q descale */
    SGL_ATTN_FEAT_MLA_ROPE_SPLIT = 1u << 19, /* MLA q_rope / k_rope beside the latent parts */
    SGL_ATTN_FEAT_GRAPH_DEVICE_PLAN = 1u << 20, /* plans on the device: ops->init_forward_metadata_in_graph,
                                                 * needs no *_cpu lengths */
    SGL_ATTN_FEAT_GRAPH_VERIFY = 1u << 21,   /* graph capture of TARGET_VERIFY batches: one
                                              * tokens_per_req and one mask kind (custom_mask
                                              * or none) per init_graph_state, custom_mask /
                                              * mask_indptr at the captured addresses, refilled;
                                              * padded requests' seq_lens = fill + tokens_per_req
                                              * (docs/abi.md, the backend vtable) */
    SGL_ATTN_FEAT_STRIDED_QKV = 1u << 22,    /* q/k/v as strided views (a fused qkv buffer) */
    SGL_ATTN_FEAT_DUAL_CHUNK = 1u << 23      /* forward_args.dual_chunk (docs/dual_chunk.md) */
};
#define SGL_ATTN_FEAT_ALL_V1_2 ((SGL_ATTN_FEAT_DUAL_CHUNK << 1) - 1u)

typedef enum sgl_attn_forward_mode {
    SGL_ATTN_MODE_IDLE = 0,
    SGL_ATTN_MODE_EXTEND = 1,        /* prefill / extend */
    SGL_ATTN_MODE_DECODE = 2,        /* one new token per request */
    SGL_ATTN_MODE_TARGET_VERIFY = 3  /* speculative verify: several tokens per request */
} sgl_attn_forward_mode;

/* ABI 1.2: draft extend.  The draft worker extends each request by its
 * accepted tokens (extend_seq_lens, causal, through forward_extend), as
 * sglang's DRAFT_EXTEND; plugins that do not declare
 * SGL_ATTN_FEAT_DRAFT_EXTEND refuse the mode. */
enum { SGL_ATTN_MODE_DRAFT_EXTEND = 4 };

/* ABI 1.2: attention types (sgl_attn_layer.attn_type). */
typedef enum sgl_attn_attn_type {
    SGL_ATTN_TYPE_CAUSAL = 0,        /* decoder: token at position p sees keys 0..p (the default) */
    SGL_ATTN_TYPE_BIDIRECTIONAL = 1, /* every new token sees all seq_len keys of its request
                                      * (sglang's DECODER_BIDIRECTIONAL, dLLM extend) */
    SGL_ATTN_TYPE_ENCODER_ONLY = 2   /* every new token sees the new tokens of its request only,
                                      * from the call's k / v (sglang's ENCODER_ONLY) */
} sgl_attn_attn_type;

/* ABI 1.2: batched state operations (sgl_attn_state_batch_args.op). */
typedef enum sgl_attn_state_op {
    SGL_ATTN_STATE_CLEAR = 1,  /* zero the states of slots dst[i] */
    SGL_ATTN_STATE_COPY = 2,   /* state of src[i] -> dst[i] (a shared prefix) */
    SGL_ATTN_STATE_COMMIT = 3, /* after verify: intermediate step steps[i] of dst[i] becomes its state; -1 keeps */
    SGL_ATTN_STATE_TRACK = 4   /* intermediate step steps[i] of src[i] -> state of dst[i] (radix cache) */
} sgl_attn_state_op;

typedef enum sgl_attn_log_level {
    SGL_ATTN_LOG_ERROR = 0,
    SGL_ATTN_LOG_WARN = 1,
    SGL_ATTN_LOG_INFO = 2,
    SGL_ATTN_LOG_DEBUG = 3
} sgl_attn_log_level;

/* Limits that keep fixed-size fields honest. */
#define SGL_ATTN_NAME_MAX 63       /* plugin names: [a-z0-9_]{1,63} */
#define SGL_ATTN_REASON_MAX 256
#define SGL_ATTN_REASON_LONG_MAX 1024 /* sgl_attn_caps.reason_long (ABI 1.2) */
#define SGL_ATTN_MAX_LAYERS 1024
#define SGL_ATTN_MAX_LIST 16

/* ------------------------------------------------------ host <-> plugin */

/* What the host offers at negotiation; valid for the plugin's lifetime. */
typedef struct sgl_attn_host_api {
    uint32_t struct_size;
    uint16_t abi_major;     /* the host's major */
    uint16_t abi_minor_min; /* oldest minor of that major the host loads (0) */
    uint16_t abi_minor_max; /* the host's own minor */
    uint16_t reserved_;
    const char *host_version; /* "0.1.0" */
    void *host_ctx;           /* opaque, first argument of the callbacks */
    /* printf-style log; thread-safe.  May be called from any plugin function. */
    void (*log)(void *host_ctx, int level, const char *plugin, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 4, 5)))
#endif
        ;
    /* A plugin option from conf ("plugin_options": {"<plugin>": {"key": value}}),
     * as a string ("1", "true", "64"...), or NULL.  Thread-safe. */
    const char *(*get_option)(void *host_ctx, const char *plugin, const char *key);
} sgl_attn_host_api;

/* The plugin's answer. */
typedef struct sgl_attn_plugin_answer {
    uint32_t struct_size;
    uint16_t abi_major; /* what the plugin was built for */
    uint16_t abi_minor;
    const struct sgl_attn_plugin *plugin; /* static, lives until unload */
    char refusal[SGL_ATTN_REASON_MAX];   /* set when the entry refuses */
} sgl_attn_plugin_answer;

/* The entry point: `SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const
 * sgl_attn_host_api *, sgl_attn_plugin_answer *)`.  It fills `answer` with the
 * versions it speaks and its descriptor, and returns SGL_ATTN_OK, or
 * SGL_ATTN_E_ABI with `refusal` set.  It runs no other plugin code. */
typedef int (*sgl_attn_plugin_entry_fn)(const sgl_attn_host_api *host,
                                        sgl_attn_plugin_answer *answer);

/* ------------------------------------------------------------ capabilities */

typedef struct sgl_attn_head_dims {
    uint16_t qk;
    uint16_t v;
} sgl_attn_head_dims;

/* One device as the plugin sees it.  The host zero-fills and sets
 * struct_size; the plugin fills what it knows. */
typedef struct sgl_attn_caps {
    uint32_t struct_size;
    uint32_t available;                 /* 1: this device can run the plugin now */
    char reason[SGL_ATTN_REASON_MAX];   /* when not: the runtime's own words */
    char device_name[96];               /* "NVIDIA H200", "pthreads x 2 (x86_64)" */
    char arch_name[48];                 /* "sm_90", "gfx90a", "Intel(R) Arc(TM) A770" */
    int32_t arch_major, arch_minor;     /* CUDA SM; -1 where none applies */
    int32_t arch_min_major, arch_min_minor; /* needed range, -1 = unbounded */
    int32_t arch_max_major, arch_max_minor;
    uint64_t memory_bytes;
    uint32_t compute_units;             /* SMs, CUs, EUs or cores */
    uint32_t attn_kinds;                /* SGL_ATTN_KIND_* */
    uint32_t q_dtypes;                  /* SGL_ATTN_DT_* */
    uint32_t kv_dtypes;                 /* SGL_ATTN_DT_* */
    uint32_t features;                  /* SGL_ATTN_FEAT_* */
    /* Head dims: exact (qk, v) pairs when n_head_dims > 0, else any pair with
     * qk <= head_dim_qk_max and v <= head_dim_v_max. */
    uint32_t head_dim_qk_max, head_dim_v_max;
    uint32_t n_head_dims;
    sgl_attn_head_dims head_dims[SGL_ATTN_MAX_LIST];
    /* Page sizes: exact list when n_page_sizes > 0, else any 1..page_size_max. */
    uint32_t page_size_max;
    uint32_t n_page_sizes;
    uint32_t page_sizes[SGL_ATTN_MAX_LIST];
    uint32_t max_gqa_ratio;             /* 0 = any */
    int32_t score;                      /* automatic choice: higher first; <= 0 never automatic */
    uint32_t state_dtypes;              /* hybrid wrappers: SSM state dtypes */
    /* ABI 1.1's tail padding, named so no field lands in it.  Never read. */
    uint32_t reserved_v1_1_tail_;
    /* ABI 1.2: the whole reason, when it is longer than `reason` holds.  A
     * plugin built for 1.2 writes the full text here (check struct_size
     * first) and its start, cut at a word boundary, in `reason` for older
     * hosts.  The host shows this one when it is not empty. */
    char reason_long[SGL_ATTN_REASON_LONG_MAX];
    /* ABI 1.2, DSA block (below): SGL_ATTN_DSA_* operations this device
     * serves; 0 = none, so a plugin that predates the field serves none. */
    uint32_t dsa_ops;
} sgl_attn_caps;

/* ------------------------------------------------------------------ model */

/* A model as the host understood it (from our JSON or an HF config.json).
 * Head counts are per tensor-parallel rank. */
typedef struct sgl_attn_model {
    uint32_t struct_size;
    char name[64];            /* free text */
    char model_type[64];      /* HF model_type, e.g. "qwen3_next" */
    int32_t num_layers;
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t head_dim_qk;      /* MLA: kv_lora_rank + qk_rope_head_dim (absorbed) */
    int32_t head_dim_v;       /* MLA: kv_lora_rank */
    uint32_t dtype;           /* SGL_ATTN_DT_* of q/out */
    uint32_t kv_dtype;        /* SGL_ATTN_DT_* of the KV pool */
    int32_t is_mla;
    int32_t kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
    int32_t is_encoder_decoder;
    int32_t sliding_window;   /* largest left window of any layer; -1 none */
    float logit_softcap;      /* 0 none */
    int32_t has_sinks;
    int32_t index_topk;       /* DeepSeek sparse attention (dsa); 0 none */
    int32_t page_size;        /* requested page size; 0 = backend default */
    int32_t is_draft;         /* draft worker of speculative decoding */
    int32_t spec_tokens;      /* query tokens per request when verifying; 0/1 none */
    /* hybrid */
    uint32_t hybrid_kind;     /* sgl_attn_hybrid_kind; NONE for plain models */
    char hybrid_custom_kind[32];
    /* Bit i set: layer i is a full-attention layer (always all layers when
     * not hybrid; [0] for a draft worker). */
    uint64_t full_attention_mask[SGL_ATTN_MAX_LAYERS / 64];
    /* MiniMax sparse: bit i set = layer i is sparse */
    uint64_t sparse_layer_mask[SGL_ATTN_MAX_LAYERS / 64];
    /* linear attention shapes (per TP rank) */
    int32_t lin_num_k_heads;  /* gdn/kda: qk heads; mamba2: n_groups */
    int32_t lin_num_v_heads;  /* gdn/kda: value heads; mamba2/lightning: heads */
    int32_t lin_head_k_dim;   /* gdn/kda: K; mamba2: d_state; lightning: head dim */
    int32_t lin_head_v_dim;   /* gdn/kda: V; mamba2: head dim P; lightning: head dim */
    int32_t lin_conv_kernel;  /* conv1d width (gdn/kda/mamba2/short_conv); 0 none */
    int32_t lin_hidden;       /* short_conv: channels */
    uint32_t lin_state_dtype; /* SGL_ATTN_DT_*: one the wrapper declares in caps.state_dtypes
                               * (0 = F32); the caller-owned state has this dtype */
    int32_t sparse_topk_blocks;   /* minimax_sparse: blocks kept per query */
    int32_t sparse_block_size;    /* minimax_sparse: tokens per block */
    /* ABI 1.1's tail padding, named so no field lands in it: a 1.1 writer
     * sends struct_size 544 with these bytes uninitialised.  Never read. */
    uint32_t reserved_v1_1_tail_;
    /* ABI 1.2: the dtype the model file names (SGL_ATTN_DT_*; 0 = it names
     * none, or no file).  `dtype` is what is served; for a Hugging Face
     * config that says float32 (or nothing) it differs, as sglang's --dtype
     * auto does. */
    uint32_t config_dtype;
    /* ABI 1.2: attention type of the model's layers (sgl_attn_attn_type;
     * 0 = causal).  Selection asks for SGL_ATTN_FEAT_ATTN_TYPES otherwise. */
    int32_t attn_type;
    /* ABI 1.2, DSA block (below): the indexer's shape (index_n_heads,
     * index_head_dim of the HF config); 0 when index_topk is 0. */
    int32_t index_n_heads;
    int32_t index_head_dim;
    /* ABI 1.2: dual chunk attention (Qwen2.5-1M's dual_chunk_attention_config;
     * docs/dual_chunk.md).  dca_chunk_size 0: the model does not use it. */
    int32_t dca_chunk_size;        /* chunk_size */
    int32_t dca_local_size;        /* local_size; keys per chunk = chunk_size - local_size */
    int32_t dca_original_max_position; /* original_max_position_embeddings; 0: no length scaling */
    int32_t dca_sparse;            /* sparse_attention_enabled (vertical-slash long prefill) */
    int32_t dca_sparse_threshold;  /* sparse_attention_threshold: prompt length above which it applies */
    int32_t dca_reserved_;
} sgl_attn_model;

static inline int sgl_attn_model_layer_is_full(const sgl_attn_model *m, int layer) {
    if (layer < 0 || layer >= SGL_ATTN_MAX_LAYERS) return 0;
    return (int)((m->full_attention_mask[layer >> 6] >> (layer & 63)) & 1u);
}
static inline int sgl_attn_model_layer_is_sparse(const sgl_attn_model *m, int layer) {
    if (layer < 0 || layer >= SGL_ATTN_MAX_LAYERS) return 0;
    return (int)((m->sparse_layer_mask[layer >> 6] >> (layer & 63)) & 1u);
}

/* ------------------------------------------------------------ batch (sglang) */

/* Batch metadata in sglang's token-pool model.  Device tensors live on the
 * backend's device; the *_cpu mirrors (optional, may be NULL) let a backend
 * plan without a device->host copy.  Integer tensors are int32 or int64. */
typedef struct sgl_attn_batch {
    uint32_t struct_size;
    int32_t forward_mode;                 /* sgl_attn_forward_mode */
    int32_t batch_size;                   /* bs */
    int32_t num_tokens;                   /* new tokens T (decode: bs * tokens_per_req) */
    int32_t page_size;                    /* pool page size, >= 1 */
    int32_t tokens_per_req;               /* decode/verify: query tokens per request (1);
                                           * extend: 0 (lengths come from extend_seq_lens;
                                           * a value > 0 promises every request has it) */
    int32_t reserved_;
    int64_t seq_lens_sum;
    const DLTensor *req_to_token;         /* [max_reqs, max_ctx] slot of each token */
    const DLTensor *req_pool_indices;     /* [bs] row of req_to_token */
    const DLTensor *seq_lens;             /* [bs] tokens incl. the new ones */
    const DLTensor *extend_prefix_lens;   /* [bs] cached prefix (extend) */
    const DLTensor *extend_seq_lens;      /* [bs] new tokens (extend) */
    const DLTensor *out_cache_loc;        /* [T] slot for each new token */
    const DLTensor *positions;            /* [T] */
    const DLTensor *encoder_lens;         /* [bs] enc-dec only, else NULL */
    const DLTensor *seq_lens_cpu;         /* host mirrors, optional */
    const DLTensor *extend_prefix_lens_cpu;
    const DLTensor *extend_seq_lens_cpu;
    const DLTensor *encoder_lens_cpu;
    /* hybrid: slot of each request in the wrapper's state pool, -1 = padding */
    const DLTensor *state_indices;        /* [bs] */
    void *stream;                         /* cudaStream_t / hipStream_t / cl_command_queue */
    /* ABI 1.2: tree verify (SGL_ATTN_FEAT_TREE_MASK).  sglang's custom_mask /
     * mask_indptr: request i's mask is a row-major [q_i, seq_len_i] block of
     * uint8 / bool (1 = attend, one byte per entry) starting at element
     * mask_indptr[i], q_i its new tokens; seq_len_i counts the new tokens (as
     * seq_lens does here, unlike sglang's verify seq_lens).  NULL = causal. */
    const DLTensor *custom_mask;          /* [sum q_i * seq_len_i] uint8 / bool */
    const DLTensor *mask_indptr;          /* [bs + 1] int32 / int64 */
    /* ABI 1.2: page tables (SGL_ATTN_FEAT_PAGE_TABLE).  Row i is request i
     * (in batch order, not a req_pool_indices row): token t of request i is
     * slot page_table[i][t / page_size] * page_size + t % page_size.  When
     * set, req_to_token and req_pool_indices may be NULL and are not read. */
    const DLTensor *page_table;           /* [bs, max_pages] int32 / int64 */
    /* ABI 1.2: cross attention (SGL_ATTN_FEAT_ENCODER_LOC): the slots a cross
     * layer writes the encoder's K/V to when save_kv_cache is set, the
     * encoder tokens of request 0 first; forward k / v are then
     * [sum encoder_lens, Hkv, D].  The encoder K/V of request i are read from
     * req_to_token row req_pool_indices[i], columns 0..encoder_lens[i]-1. */
    const DLTensor *encoder_out_cache_loc; /* [sum encoder_lens] */
} sgl_attn_batch;

/* One attention layer's constants and its KV pool. */
typedef struct sgl_attn_layer {
    uint32_t struct_size;
    int32_t layer_id;
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t head_dim_qk;
    int32_t head_dim_v;
    float sm_scale;
    float logit_softcap;       /* 0 = off: s = cap * tanh(s / cap) otherwise */
    int32_t sliding_window;    /* < 0 off; else query at position p sees keys p-w..p */
    int32_t is_cross;          /* enc-dec cross attention: non-causal over encoder KV */
    const DLTensor *sinks;     /* [num_q_heads] fp32 or NULL */
    DLTensor *k_cache;         /* [slots, kv_heads, head_dim_qk]; MLA [slots, 1, rank+rope] */
    DLTensor *v_cache;         /* [slots, kv_heads, head_dim_v];  MLA: NULL (value = k_cache[..., :rank]) */
    float k_scale, v_scale;    /* fp8 KV dequant scales; 1 otherwise */
    /* ABI 1.2: slot maps (SGL_ATTN_FEAT_SLOT_MAP).  A layer that keeps its
     * own pool (sliding-window layers of gpt-oss, Gemma 2/3) translates every
     * slot the batch names (req_to_token / page_table entries, out_cache_loc)
     * through slot_map before indexing k_cache / v_cache.  NULL = identity. */
    const DLTensor *slot_map;  /* [full-pool slots] int32 / int64 */
    /* ABI 1.2: attention type (sgl_attn_attn_type; 0 = causal, as before).
     * Anything else needs SGL_ATTN_FEAT_ATTN_TYPES. */
    int32_t attn_type;
    /* ABI 1.2: engine fp8 (SGL_ATTN_FEAT_FP8_SCALES).  q_descale multiplies
     * an fp8 q (0 and 1 mean none).  The scale tensors, [1] fp32 on the device,
     * replace k_scale / v_scale / q_descale when set, so a graph replays
     * with scales the engine updates in place. */
    float q_descale;
    const DLTensor *k_scale_tensor;
    const DLTensor *v_scale_tensor;
    const DLTensor *q_descale_tensor;
} sgl_attn_layer;

/* Inputs of a linear-attention layer (hybrid wrappers).  Which fields a kind
 * reads, and their shapes, are in docs/hybrid.md; unused ones are NULL. */
typedef struct sgl_attn_linear_io {
    uint32_t struct_size;
    int32_t kind;                  /* sgl_attn_hybrid_kind of the layer */
    const DLTensor *x;             /* gdn/kda: mixed qkv [T, conv_dim]; mamba2: xBC; short_conv: BCx [T, 3*D] */
    const DLTensor *a;             /* gdn: a [T, HV]; kda: gate [T, HV*K]; mamba2: dt [T, H]; lightning: NULL */
    const DLTensor *b;             /* gdn/kda: beta logits [T, HV] */
    const DLTensor *conv_weight;   /* [conv_dim, width] */
    const DLTensor *conv_bias;     /* [conv_dim] or NULL */
    const DLTensor *A_log;         /* gdn/kda/mamba2: [HV] */
    const DLTensor *dt_bias;       /* gdn: [HV]; kda: [HV*K]; mamba2: [H] */
    const DLTensor *D;             /* mamba2: [H] skip */
    const DLTensor *decay;         /* lightning: per-head slope [H] */
    DLTensor *out;                 /* gdn/kda [T, HV, V]; mamba2 [T, H, P]; short_conv [T, D]; lightning [T, H, D] */
    /* speculative verify: per-draft-token intermediate states are kept when set */
    int32_t keep_intermediate;
    int32_t use_qk_l2norm;         /* gdn/kda: l2-normalise q and k (sglang default 1) */
    /* ABI 1.2: caller-owned state (SGL_ATTN_FEAT_CALLER_STATE).  When
     * ssm_state is set the wrapper reads and writes these tensors (this
     * layer's, the engine's memory) instead of its own pool; slot i of a
     * request is state_indices[i] (NULL: batch->state_indices), -1 =
     * padding.  Layouts (docs/abi.md, "Linear state contract"), S = slots:
     *   conv_state  [S, conv_dim, W-1]  channel-major, oldest input first
     *   ssm_state   gdn/kda [S, HV, V, K]; mamba2 [S, H, P, N]; lightning [S, H, Dv, Dk]
     *               (K innermost, as sglang's MambaPool temporal state)
     *   intermediate_*  [S, steps, ...the same]: state after each verify token,
     *                   written when keep_intermediate is set (steps >= tokens_per_req)
     * Compact, in the state dtype the instance keeps (model.lin_state_dtype,
     * one the wrapper declares in caps.state_dtypes). */
    DLTensor *conv_state;
    DLTensor *ssm_state;
    DLTensor *intermediate_conv_state;
    DLTensor *intermediate_ssm_state;
    const DLTensor *state_indices;  /* [bs] int32 / int64, or NULL */
} sgl_attn_linear_io;

/* ABI 1.2: dual chunk attention (Qwen2.5-1M; docs/dual_chunk.md), served by
 * plugins that declare SGL_ATTN_FEAT_DUAL_CHUNK. */

/* Keys are split into chunks of chunk_len = chunk_size - local_size
 * positions.  A query at position p in chunk c = p / chunk_len attends to
 * keys of its own chunk [c * chunk_len, p] with q (intra), to the previous
 * chunk [(c - 1) * chunk_len, c * chunk_len) with q_succ (successor) and to
 * every earlier key [0, (c - 1) * chunk_len) with q_inter; the three parts
 * merge by their log-sum-exp.  The model rotates each query variant with
 * its own positions; the kernel only picks which variant meets which key.
 * When original_max_position > 0 every logit of a request of seq_len keys
 * is multiplied by max(1, 0.1 * ln(seq_len / original_max_position) + 1). */
typedef struct sgl_attn_dual_chunk {
    uint32_t struct_size;
    int32_t chunk_size;             /* > local_size */
    int32_t local_size;             /* >= 0 */
    int32_t original_max_position;  /* 0: no length scaling */
    const DLTensor *q_succ;         /* [T, Hq, Dqk] like q */
    const DLTensor *q_inter;        /* [T, Hq, Dqk] like q */
} sgl_attn_dual_chunk;

/* One forward call. */
typedef struct sgl_attn_forward_args {
    uint32_t struct_size;
    int32_t save_kv_cache;         /* write k/v at out_cache_loc before attending */
    const sgl_attn_layer *layer;
    const sgl_attn_batch *batch;   /* the batch given to init_forward_metadata */
    const DLTensor *q;             /* [T, Hq, Dqk]; lightning: q */
    const DLTensor *k;             /* [T, Hkv, Dqk] new keys (MLA: [T, 1, rank+rope]) */
    const DLTensor *v;             /* [T, Hkv, Dv] new values (MLA: NULL) */
    DLTensor *out;                 /* [T, Hq, Dv] */
    const sgl_attn_linear_io *linear; /* non-NULL for a linear-attention layer */
    /* ABI 1.2: LSE output (SGL_ATTN_FEAT_LSE; sglang's mha_return_lse):
     * lse[t][h] = log(sum_j exp(s_tj)) over the scaled (and soft-capped)
     * logits, natural log, sinks excluded; NULL = not wanted. */
    DLTensor *lse;                 /* [T, Hq] fp32 */
    /* ABI 1.2: MLA rope split (SGL_ATTN_FEAT_MLA_ROPE_SPLIT): q is then
     * [T, Hq, rank] and k [T, 1, rank], with the rope parts beside them;
     * the pool row stays [rank + rope].  NULL = q / k carry both parts. */
    const DLTensor *q_rope;        /* [T, Hq, rope] */
    const DLTensor *k_rope;        /* [T, 1, rope] */
    /* ABI 1.2, DSA block (below): sparse MLA's selected keys, or NULL for
     * dense attention.  [T, topk] int32, page-encoded; see the block. */
    const DLTensor *topk_indices;
    /* ABI 1.2: dual chunk attention.  NULL: plain attention.  Read it only
     * when struct_size covers it and the plugin declares
     * SGL_ATTN_FEAT_DUAL_CHUNK; selection gives a dual chunk model to no
     * other plugin, and the validation layer refuses such a forward. */
    const struct sgl_attn_dual_chunk *dual_chunk;
} sgl_attn_forward_args;

/* ----------------------------------------------------- backend instance */

typedef struct sgl_attn_backend sgl_attn_backend;

/* Graph capture/replay arguments (sglang's init_forward_metadata_*_cuda_graph). */
typedef struct sgl_attn_graph_args {
    uint32_t struct_size;
    int32_t batch_size;
    int32_t num_tokens;
    int32_t forward_mode;
    const sgl_attn_batch *batch;   /* tensors at the addresses the graph captures; at
                                    * replay the engine has refilled their contents (and
                                    * batch_size / num_tokens, at most the replayed graph's) */
    /* ABI 1.2: graphs.  The stream the capture records on (replay: the
     * stream of the copies before it), so every call that launches names
     * its stream. */
    void *stream;
} sgl_attn_graph_args;

/* ABI 1.2: ragged attention (SGL_ATTN_FEAT_RAGGED): attention over K/V
 * passed as tensors, not read from the pool and not written to it.
 * DeepSeek's MLA prefill runs this with qk 192 / v 128 per chunk of the
 * prefix and merges the chunks by their LSE:
 *   lse = log(exp(lse_a) + exp(lse_b)),
 *   out = out_a * exp(lse_a - lse) + out_b * exp(lse_b - lse).
 * Request i owns q rows cu_seqlens_q[i]..cu_seqlens_q[i+1]-1 and k / v rows
 * cu_seqlens_k[i]..; with causal set, its query j (of q_len) sits at
 * position k_len - q_len + j and sees keys 0..that position. */
typedef struct sgl_attn_ragged_args {
    uint32_t struct_size;
    int32_t batch_size;
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t head_dim_qk;
    int32_t head_dim_v;
    float sm_scale;
    float logit_softcap;           /* 0 = off */
    int32_t causal;                /* 1 = causal (bottom-right aligned), 0 = every key */
    int32_t max_seqlen_q;          /* largest q_len, or 0 = unknown */
    int32_t max_seqlen_k;
    int32_t reserved_;
    const DLTensor *q;             /* [Tq, Hq, Dqk] */
    const DLTensor *k;             /* [Tk, Hkv, Dqk] */
    const DLTensor *v;             /* [Tk, Hkv, Dv] */
    const DLTensor *cu_seqlens_q;  /* [bs + 1] int32 / int64 */
    const DLTensor *cu_seqlens_k;  /* [bs + 1] int32 / int64 */
    const DLTensor *cu_seqlens_q_cpu; /* host mirrors, optional */
    const DLTensor *cu_seqlens_k_cpu;
    DLTensor *out;                 /* [Tq, Hq, Dv] */
    DLTensor *lse;                 /* [Tq, Hq] fp32, or NULL */
    void *stream;
} sgl_attn_ragged_args;

/* ABI 1.2: batched state operations on a hybrid wrapper's state
 * (SGL_ATTN_FEAT_CALLER_STATE), ordered on `stream` after the work already
 * queued there; they read the index tensors on the device, so a graph can
 * hold them.  With `state` NULL they act on the wrapper's own pool (every
 * layer); otherwise on the caller-owned tensors of that one layer. */
typedef struct sgl_attn_state_batch_args {
    uint32_t struct_size;
    int32_t op;                    /* sgl_attn_state_op */
    int32_t count;                 /* entries of dst (and src, steps) */
    const DLTensor *dst;           /* [count] slots, -1 = skip */
    const DLTensor *src;           /* copy / track: [count] slots */
    const DLTensor *steps;         /* commit / track: [count] intermediate step, -1 = keep */
    const sgl_attn_linear_io *state; /* caller-owned tensors of one layer, or NULL */
    void *stream;
} sgl_attn_state_batch_args;
struct sgl_attn_indexer_args; /* ABI 1.2, DSA block (below) */

/* The backend vtable (like SQLite's sqlite3_io_methods). */
typedef struct sgl_attn_backend_ops {
    uint32_t struct_size;
    /* Per batch, before the layers' forwards: plan, fill index buffers. */
    int (*init_forward_metadata)(sgl_attn_backend *b, const sgl_attn_batch *batch);
    int (*forward_extend)(sgl_attn_backend *b, const sgl_attn_forward_args *a);
    int (*forward_decode)(sgl_attn_backend *b, const sgl_attn_forward_args *a);
    /* Graphs: allocate static buffers once, then capture and replay. */
    int (*init_graph_state)(sgl_attn_backend *b, int32_t max_bs, int32_t max_num_tokens);
    int (*init_forward_metadata_capture)(sgl_attn_backend *b, const sgl_attn_graph_args *g);
    int (*init_forward_metadata_replay)(sgl_attn_backend *b, const sgl_attn_graph_args *g);
    int32_t (*graph_seq_len_fill_value)(sgl_attn_backend *b);
    /* The last error on this instance, "" if none.  Valid until the next call. */
    const char *(*last_error)(sgl_attn_backend *b);
    void (*destroy)(sgl_attn_backend *b);
    /* Hybrid state pool (NULL for full-attention backends). */
    int (*state_clear)(sgl_attn_backend *b, int32_t slot);
    int (*state_copy)(sgl_attn_backend *b, int32_t src_slot, int32_t dst_slot);
    /* After verification: make step accepted[i] of request i its state (-1 = keep). */
    int (*state_commit)(sgl_attn_backend *b, const DLTensor *accepted_steps);
    /* ABI 1.2: ragged attention with LSE (SGL_ATTN_FEAT_RAGGED); NULL = not served. */
    int (*forward_ragged)(sgl_attn_backend *b, const sgl_attn_ragged_args *a);
    /* ABI 1.2: graphs (SGL_ATTN_FEAT_GRAPH_DEVICE_PLAN): the part of the plan
     * a graph records, launched on g->stream from device tensors only (no
     * host lengths, no host code at replay).  Called inside the capture,
     * after init_forward_metadata_capture; NULL = not served. */
    int (*init_forward_metadata_in_graph)(sgl_attn_backend *b, const sgl_attn_graph_args *g);
    /* ABI 1.2: batched state operations (SGL_ATTN_FEAT_CALLER_STATE); NULL = not served. */
    int (*state_batch)(sgl_attn_backend *b, const sgl_attn_state_batch_args *a);
    /* ABI 1.2, DSA block (below): the indexer; NULL unless the caps declare
     * SGL_ATTN_DSA_INDEXER. */
    int (*indexer_topk)(sgl_attn_backend *b, const struct sgl_attn_indexer_args *a);
} sgl_attn_backend_ops;

/* Every instance starts with this header; the plugin's state follows. */
struct sgl_attn_backend {
    const sgl_attn_backend_ops *ops;
    uint32_t ops_size;   /* == ops->struct_size, cached */
    int32_t device;
    void *host_reserved; /* the host's; a plugin leaves it alone */
};

typedef struct sgl_attn_create_args {
    uint32_t struct_size;
    const sgl_attn_model *model;
    int32_t device;               /* the plugin's own device index */
    int32_t max_reqs;             /* rows of req_to_token / state pool slots */
    int32_t max_tokens;           /* largest T of one call */
    int32_t max_context;          /* columns of req_to_token */
    sgl_attn_backend *inner;      /* wrappers: the backend they wrap, else NULL */
    const sgl_attn_caps *inner_caps; /* wrappers: the inner's caps */
    char *error;                  /* where create explains a failure */
    uint32_t error_size;
    /* ABI 1.1: the host creating this instance (log, get_option), valid for
     * the instance's life.  Read it from here rather than keeping the entry
     * point's pointer: one process may open several hosts.  A plugin built
     * for 1.0 never sees it; check struct_size before reading. */
    const sgl_attn_host_api *host;
} sgl_attn_create_args;
/* What create does with the model: args->model is the model the instance
 * serves (a wrapper's inner was created with the same one).  The host's
 * sgl_attn_create passes the selection's routed copy of the model (a draft
 * worker's layers, the hybrid layers a wrapper keeps); sgl_attn_create
 * refuses a model argument that differs from the one selected for. */

/* Device memory, so the harness and engines can stage tensors without linking
 * the runtime.  NULL ops (CPU) means host memory. */
typedef struct sgl_attn_device_ops {
    uint32_t struct_size;
    int (*alloc)(int32_t device, size_t bytes, void **ptr);
    int (*free)(int32_t device, void *ptr);
    int (*copy_to_device)(int32_t device, void *dst, const void *src, size_t bytes);
    int (*copy_to_host)(int32_t device, void *dst, const void *src, size_t bytes);
    int (*synchronize)(int32_t device, void *stream);
    /* Optional: a stream of the device's runtime (NULL = default stream). */
    int (*stream_create)(int32_t device, void **stream);
    int (*stream_destroy)(int32_t device, void *stream);
    const char *(*error_string)(int code);
} sgl_attn_device_ops;

/* ------------------------------------------------------- plugin descriptor */

typedef struct sgl_attn_plugin {
    uint32_t struct_size;
    uint16_t abi_major, abi_minor;
    const char *name;             /* [a-z0-9_]{1,63}, unique */
    const char *version;          /* the plugin's own version */
    const char *description;
    const char *license;          /* SPDX id */
    int32_t platform;             /* sgl_attn_platform */
    int32_t role;                 /* sgl_attn_role */
    int32_t hybrid_kind;          /* sgl_attn_hybrid_kind (HYBRID role) */
    int32_t reserved_;
    const char *custom_kind;      /* HYBRID_CUSTOM: the kind's name */
    const char *const *aliases;   /* NULL-terminated: sglang names it fills in */
    const char *const *model_types; /* hybrid: HF model_types it serves, NULL-terminated */
    /* Device `index` (0..): fill caps.  Index 0 always answers (with
     * available = 0 and a reason when there is no device); a larger index past
     * the last device returns SGL_ATTN_E_NOT_FOUND. */
    int (*probe)(uint32_t index, sgl_attn_caps *caps);
    /* Plugin-specific model checks beyond caps; NULL = none.  0 = ok, else
     * SGL_ATTN_E_UNSUPPORTED with `why` set. */
    int (*supports_model)(const sgl_attn_model *m, const sgl_attn_caps *caps,
                          char *why, size_t why_size);
    int (*create)(const sgl_attn_create_args *args, sgl_attn_backend **out);
    /* hybrid: state bytes one request needs in the pool (all layers). */
    uint64_t (*state_bytes_per_request)(const sgl_attn_model *m);
    const sgl_attn_device_ops *device_ops; /* NULL: host memory */
} sgl_attn_plugin;

/* ABI 1.2: DeepSeek sparse attention */
/*
 * DeepSeek sparse attention (DSA: DeepSeek-V3.2; sglang's `dsa`, once `nsa`).
 * An indexer picks, for every query token, at most `index_topk` earlier
 * tokens of its request; MLA (the absorbed 576/512 MQA form) then attends
 * over those tokens only.  An engine may run its own indexer and pass the
 * indices to forward, or ask the plugin for them (indexer_topk).  The fields
 * this block adds at the end of other structs: sgl_attn_caps.dsa_ops,
 * sgl_attn_model.index_n_heads / index_head_dim,
 * sgl_attn_forward_args.topk_indices, sgl_attn_backend_ops.indexer_topk.
 *
 * Page-encoded indices (forward's input, the indexer's output): int32
 * [T, topk] (row t: query token t of the batch, in q's order), each entry a
 * slot of the layer's pool, i.e. the k_cache row, which in sglang's paged
 * token pool is page * page_size + offset in the page (req_to_token's value
 * for that token); -1 = no token (padding past the valid ones, any place in
 * the row).  Order within a row does not matter.  A row with no valid entry
 * writes zeros.  Any other negative value, or a slot outside the pool, is
 * SGL_ATTN_E_INVALID.  The plugin does not check causality of given indices.
 *
 * Index keys are stored as sglang's index-key buffer holds them: fp8 e4m3
 * [slots, index_head_dim] and one fp32 scale per 128 values [slots,
 * index_head_dim / 128], value = e4m3 * scale.  Quantisation (DeepSeek's
 * act_quant): per block of 128, amax = max(max |x|, 1e-4), scale = amax /
 * 448 (rounded up to a power of two when scale_pow2, DeepSeek's "ue8m0"),
 * e4m3 = round-to-nearest-even(clamp(x / scale, -448, 448)).
 *
 * Score of key slot s for query token t:
 *   I(t, s) = sum_h weights[t, h] * ReLU(q[t, h, :] . k8[s, :]) * scale[s]
 * over the request's tokens at positions 0..pos(t) (causal); the top `topk`
 * by score (ties: the earlier position) are kept, the rest of the row is -1.
 */

/* sgl_attn_caps.dsa_ops (bit set). */
enum {
    SGL_ATTN_DSA_SPARSE_MLA = 1u << 0, /* MLA forward honours topk_indices */
    SGL_ATTN_DSA_INDEXER = 1u << 1,    /* backend_ops.indexer_topk is served */
    SGL_ATTN_DSA_KV_FP8_RECORD = 1u << 2 /* sparse MLA reads FlashMLA's 656-byte fp8 record (uint8 k_cache [slots, 1, 656]) */
};

/* The indexer's block of values per fp32 scale. */
#define SGL_ATTN_DSA_SCALE_BLOCK 128

/* One indexer call (backend_ops.indexer_topk), per layer, after
 * init_forward_metadata for `batch`. */
typedef struct sgl_attn_indexer_args {
    uint32_t struct_size;
    int32_t layer_id;
    int32_t topk;              /* indices per query token (index_topk), >= 1 */
    int32_t save_index_k;      /* quantise k into the cache at out_cache_loc first */
    int32_t scale_pow2;        /* scales rounded up to a power of two ("ue8m0") */
    int32_t reserved_;
    const sgl_attn_batch *batch;
    /* [T, index_n_heads, index_head_dim] index queries after RoPE and the
     * Hadamard rotation: f32/f16/bf16, or fp8 e4m3 with its per-(t, h)
     * scale folded into weights */
    const DLTensor *q;
    const DLTensor *weights;   /* [T, index_n_heads] fp32 head weights */
    const DLTensor *k;         /* [T, index_head_dim] new index keys (f32/f16/bf16), save_index_k only */
    DLTensor *index_k_cache;   /* [slots, index_head_dim] fp8 e4m3 */
    DLTensor *index_k_scale;   /* [slots, index_head_dim / 128] fp32 */
    DLTensor *topk_indices;    /* out: [T, topk] int32, page-encoded (above) */
} sgl_attn_indexer_args;

/* --------------------------------------------------------------- helpers */

/* Smallest struct_size the host accepts for the structs a plugin hands over:
 * the ABI 1.0 sizes (LP64), as literals so they never grow with the structs. */
#define SGL_ATTN_PLUGIN_SIZE_V1_0 120u
#define SGL_ATTN_BACKEND_OPS_SIZE_V1_0 104u
/* ABI 1.2: the 1.0 sizes of the structs a caller fills (LP64).  A plugin
 * accepts any struct_size from these up and reads a later field only where
 * SGL_ATTN_HAS_FIELD says the caller sent it; an unsent field counts as zero
 * (NULL, 0).  Refusing struct_size < sizeof would refuse every older engine. */
#define SGL_ATTN_MODEL_SIZE_V1_0 544u
#define SGL_ATTN_BATCH_SIZE_V1_0 152u
#define SGL_ATTN_LAYER_SIZE_V1_0 72u
#define SGL_ATTN_LINEAR_IO_SIZE_V1_0 96u
#define SGL_ATTN_FORWARD_ARGS_SIZE_V1_0 64u
#define SGL_ATTN_GRAPH_ARGS_SIZE_V1_0 24u
#define SGL_ATTN_CREATE_ARGS_SIZE_V1_0 64u
#define SGL_ATTN_HAS_FIELD(T, p, field) \
    ((size_t)(p)->struct_size >= offsetof(T, field) + sizeof(((T *)0)->field))
/* The field when the caller sent it, else zero. */
#define SGL_ATTN_FIELD_OR_0(T, p, field) (SGL_ATTN_HAS_FIELD(T, p, field) ? (p)->field : 0)

static inline uint32_t sgl_attn_dtype_bit(DLDataType t) {
    if (t.lanes != 1) return 0;
    if (t.code == kDLFloat && t.bits == 32) return SGL_ATTN_DT_F32;
    if (t.code == kDLFloat && t.bits == 16) return SGL_ATTN_DT_F16;
    if (t.code == kDLBfloat && t.bits == 16) return SGL_ATTN_DT_BF16;
    if (t.code == kDLFloat && t.bits == 64) return SGL_ATTN_DT_F64;
    if (t.code == SGL_ATTN_DL_FLOAT8_E4M3_CODE && t.bits == 8) return SGL_ATTN_DT_FP8_E4M3;
    /* ABI 1.2: DLPack 1.1's codes */
    if (t.code == SGL_ATTN_DL_FLOAT8_E4M3FN_CODE && t.bits == 8) return SGL_ATTN_DT_FP8_E4M3;
    if (t.code == SGL_ATTN_DL_FLOAT8_E5M2_CODE && t.bits == 8) return SGL_ATTN_DT_FP8_E5M2;
    return 0;
}

/* The plugin side of negotiation, for plugins that need nothing special:
 *   return sgl_attn_answer(host, answer, &my_plugin);  */
static inline int sgl_attn_answer(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer,
                                  const sgl_attn_plugin *plugin) {
    if (!host || !answer || answer->struct_size < sizeof(*answer)) return SGL_ATTN_E_ABI;
    answer->abi_major = SGL_ATTN_ABI_MAJOR;
    answer->abi_minor = SGL_ATTN_ABI_MINOR;
    answer->plugin = 0;
    answer->refusal[0] = 0;
    /* "+ 1 <=" not "<": with minor 0, gcc -Wextra flags "uint16 < 0" as always false */
    if (host->abi_major != SGL_ATTN_ABI_MAJOR || host->abi_minor_max + 1 <= SGL_ATTN_ABI_MINOR) {
        const char *msg = "host ABI too old for this plugin";
        size_t i = 0;
        for (; msg[i] && i + 1 < sizeof answer->refusal; i++) answer->refusal[i] = msg[i];
        answer->refusal[i] = 0;
        return SGL_ATTN_E_ABI;
    }
    answer->plugin = plugin;
    return SGL_ATTN_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* SGL_ATTN_ABI_H */
