/* test_policy_hf_corpus.c - every real config.json of the corpus
 * (tests/data/hf-configs/README.md; the files live in shared/hf-configs)
 * read as a model.  The expected values were worked out by hand from each
 * file (the comment on each row names the keys they come from), never from
 * the reader's own output.  Also: model directories, NaN / Infinity as
 * Python's json reads them, and sglang's --dtype auto. */
#include "pt.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BF16 SGL_ATTN_DT_BF16
#define F16 SGL_ATTN_DT_F16
#define F32 SGL_ATTN_DT_F32

/* ALL: every layer is a full-attention layer (a plain model). */
#define ALL NULL

typedef struct want {
    const char *file;
    int layers, q, kv, dqk, dv;
    int mla, rank, rope, nope, vdim; /* MLA fields, 0 when not MLA */
    int window;                      /* ours: HF sliding_window - 1; -1 none */
    float softcap;
    int sinks, encdec, topk;
    uint32_t dtype, config_dtype; /* served; as the file says (0: says none) */
    int kind;                     /* SGL_ATTN_HYBRID_* */
    const char *full;             /* full-attention layer ids, or ALL */
    int lin_k, lin_v, lin_dk, lin_dv, lin_conv, lin_hidden;
    const char *sparse; /* minimax_sparse: the sparse layer ids */
    int topk_blocks, block_size;
} want;

static const want rows[] = {
    /* Llama 3: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8,
     * hidden_size 4096 / 32 = 128, torch_dtype bfloat16. */
    {.file = "llama-3.1-8b.json", .layers = 32, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = -1, .dtype = BF16,
     .config_dtype = BF16},
    /* num_hidden_layers 126, heads 128 / 8, hidden_size 16384 / 128 = 128. */
    {.file = "llama-3.1-405b.json", .layers = 126, .q = 128, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* Llama 4, multimodal: text_config num_hidden_layers 48, num_attention_heads 40,
     * num_key_value_heads 8, head_dim 128, torch_dtype bfloat16 (attention_chunk_size
     * 8192 is chunked attention, not a sliding window). */
    {.file = "llama-4-scout-17b-16e-instruct.json", .layers = 48, .q = 40, .kv = 8, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16},
    {.file = "llama-4-maverick-17b-128e-instruct.json", .layers = 48, .q = 40, .kv = 8, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16},
    /* Llama-3.3-Nemotron (Nemotron-NAS): num_hidden_layers 80, num_attention_heads 64,
     * num_key_value_heads null; block_configs attention.n_heads_in_group 8 in every
     * block with attention (the others are no_op) -> 64 / 8 = 8 KV heads;
     * hidden_size 8192 / 64 = 128. */
    {.file = "llama-3.3-nemotron-super-49b-v1.json", .layers = 80, .q = 64, .kv = 8, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16},
    /* Qwen2.5 (a re-saved copy in float32): num_hidden_layers 24, heads 14 / 2,
     * hidden_size 896 / 14 = 64; sliding_window 32768 but use_sliding_window false;
     * torch_dtype float32, served in float16 (sglang's --dtype auto). */
    {.file = "qwen2.5-0.5b-instruct.json", .layers = 24, .q = 14, .kv = 2, .dqk = 64, .dv = 64, .window = -1,
     .dtype = F16, .config_dtype = F32},
    /* Qwen3: layers 36, heads 32 / 8, head_dim 128, use_sliding_window false. */
    {.file = "qwen3-8b.json", .layers = 36, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = -1, .dtype = BF16,
     .config_dtype = BF16},
    /* Qwen3 MoE: layers 48, heads 32 / 4, head_dim 128. */
    {.file = "qwen3-30b-a3b.json", .layers = 48, .q = 32, .kv = 4, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* layers 94, heads 64 / 4, head_dim 128. */
    {.file = "qwen3-235b-a22b.json", .layers = 94, .q = 64, .kv = 4, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* Qwen3-VL: text_config layers 36, heads 32 / 8, head_dim 128, dtype bfloat16. */
    {.file = "qwen3-vl-8b-instruct.json", .layers = 36, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* Qwen3-Next: layers 48, heads 16 / 2, head_dim 256; full_attention_interval 4
     * (layer i full when (i+1) % 4 == 0); linear_num_key_heads 16,
     * linear_num_value_heads 32, linear_key/value_head_dim 128, linear_conv_kernel_dim 4. */
    {.file = "qwen3-next-80b-a3b.json", .layers = 48, .q = 16, .kv = 2, .dqk = 256, .dv = 256, .window = -1,
     .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_GDN, .full = "3,7,11,15,19,23,27,31,35,39,43,47",
     .lin_k = 16, .lin_v = 32, .lin_dk = 128, .lin_dv = 128, .lin_conv = 4},
    /* Qwen3.5: text_config layers 64, heads 24 / 4, head_dim 256, layer_types
     * full_attention at 3, 7, ..., 63 (the rest linear_attention); linear heads 16 / 48,
     * dims 128 / 128, conv 4. */
    {.file = "qwen3.5-27b.json", .layers = 64, .q = 24, .kv = 4, .dqk = 256, .dv = 256, .window = -1, .dtype = BF16,
     .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_GDN,
     .full = "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59,63", .lin_k = 16, .lin_v = 48, .lin_dk = 128,
     .lin_dv = 128, .lin_conv = 4},
    /* text_config layers 40, heads 16 / 2, head_dim 256, full at 3, 7, ..., 39;
     * linear heads 16 / 32. */
    {.file = "qwen3.5-35b-a3b.json", .layers = 40, .q = 16, .kv = 2, .dqk = 256, .dv = 256, .window = -1,
     .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_GDN, .full = "3,7,11,15,19,23,27,31,35,39",
     .lin_k = 16, .lin_v = 32, .lin_dk = 128, .lin_dv = 128, .lin_conv = 4},
    /* text_config layers 60, heads 32 / 2, head_dim 256, full at 3, 7, ..., 59;
     * linear heads 16 / 64. */
    {.file = "qwen3.5-397b-a17b.json", .layers = 60, .q = 32, .kv = 2, .dqk = 256, .dv = 256, .window = -1,
     .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_GDN,
     .full = "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59", .lin_k = 16, .lin_v = 64, .lin_dk = 128, .lin_dv = 128,
     .lin_conv = 4},
    /* DeepSeek V3 / R1: layers 61, num_attention_heads 128; MLA kv_lora_rank 512,
     * qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128: absorbed qk 576, v 512,
     * one latent KV head. */
    {.file = "deepseek-v3.json", .layers = 61, .q = 128, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 128, .vdim = 128, .window = -1, .dtype = BF16, .config_dtype = BF16},
    {.file = "deepseek-r1.json", .layers = 61, .q = 128, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 128, .vdim = 128, .window = -1, .dtype = BF16, .config_dtype = BF16},
    /* DeepSeek V3.2: as V3, plus index_topk 2048 (DeepSeek sparse attention). */
    {.file = "deepseek-v3.2.json", .layers = 61, .q = 128, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 128, .vdim = 128, .window = -1, .topk = 2048, .dtype = BF16, .config_dtype = BF16},
    /* DeepSeek V4 (DeepseekV4ForCausalLM): num_attention_heads 64, num_key_value_heads 1,
     * head_dim 512 (one latent row, key and value), qk_rope_head_dim 64 inside it: MLA
     * with qk = v = rank = 512, nope 512 - 64 = 448; sliding_window 128 (every layer,
     * no layer_types) -> 127; layers 43.  Its index_topk (512) is part of V4's
     * compressed attention, not DeepSeek sparse attention: index_topk stays 0. */
    {.file = "deepseek-v4-flash.json", .layers = 43, .q = 64, .kv = 1, .dqk = 512, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 448, .vdim = 512, .window = 127, .dtype = BF16, .config_dtype = BF16},
    /* layers 61, heads 128, head_dim 512, rope 64, sliding_window 128. */
    {.file = "deepseek-v4-pro.json", .layers = 61, .q = 128, .kv = 1, .dqk = 512, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 448, .vdim = 512, .window = 127, .dtype = BF16, .config_dtype = BF16},
    /* Kimi K2: DeepSeek-V3 shape with 64 heads (num_attention_heads 64), kv_lora_rank 512,
     * rope 64, nope 128, v_head_dim 128. */
    {.file = "kimi-k2-instruct.json", .layers = 61, .q = 64, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 128, .vdim = 128, .window = -1, .dtype = BF16, .config_dtype = BF16},
    /* Kimi K2.5: the same in text_config (dtype bfloat16). */
    {.file = "kimi-k2.5.json", .layers = 61, .q = 64, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512,
     .rope = 64, .nope = 128, .vdim = 128, .window = -1, .dtype = BF16, .config_dtype = BF16},
    /* Kimi K3 (Kimi-Linear family): text_config num_hidden_layers 93, num_attention_heads 96,
     * hidden_size 7168 (not a multiple of 96: the head dims are MLA's), kv_lora_rank 512,
     * rope 64, nope 128, v_head_dim 128; linear_attn_config full_attn_layers 4, 8, ..., 92, 93
     * (1-based) -> 3, 7, ..., 91, 92; num_heads 96, head_dim 128, short_conv_kernel_size 4. */
    {.file = "kimi-k3.json", .layers = 93, .q = 96, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512, .rope = 64,
     .nope = 128, .vdim = 128, .window = -1, .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_KDA,
     .full = "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59,63,67,71,75,79,83,87,91,92", .lin_k = 96, .lin_v = 96,
     .lin_dk = 128, .lin_dv = 128, .lin_conv = 4},
    /* MiMo: layers 36, heads 32 / 8, head_dim 128, sliding_window 32768 with
     * use_sliding_window false. */
    {.file = "mimo-7b-base.json", .layers = 36, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* MiMo-V2-Flash: layers 48, num_attention_heads 64, num_key_value_heads 4, head_dim 192,
     * v_head_dim 128, sliding_window 128 -> 127 (hybrid_layer_pattern: 1 = sliding, 0 =
     * full; both softmax attention), add_swa_attention_sink_bias true -> sinks.  Its
     * sliding layers' swa_num_key_value_heads (8) is not carried by the model. */
    {.file = "mimo-v2-flash.json", .layers = 48, .q = 64, .kv = 4, .dqk = 192, .dv = 128, .window = 127,
     .sinks = 1, .dtype = BF16, .config_dtype = BF16},
    /* GLM-5: layers 78, num_attention_heads 64, kv_lora_rank 512, rope 64,
     * qk_nope_head_dim 192, v_head_dim 256, index_topk 2048, dtype bfloat16. */
    {.file = "glm-5.json", .layers = 78, .q = 64, .kv = 1, .dqk = 576, .dv = 512, .mla = 1, .rank = 512, .rope = 64,
     .nope = 192, .vdim = 256, .window = -1, .topk = 2048, .dtype = BF16, .config_dtype = BF16},
    /* Gemma 2: layers 42, heads 16 / 8, head_dim 256, sliding_window 4096 -> 4095 (no
     * layer_types), attn_logit_softcapping 50.0, torch_dtype bfloat16. */
    {.file = "gemma-2-9b-it.json", .layers = 42, .q = 16, .kv = 8, .dqk = 256, .dv = 256, .window = 4095,
     .softcap = 50.0f, .dtype = BF16, .config_dtype = BF16},
    /* Gemma 3: text_config num_hidden_layers 34, sliding_window 1024 -> 1023; the head
     * counts are the Gemma3TextConfig defaults (num_attention_heads 8,
     * num_key_value_heads 4, head_dim 256): the file does not name them. */
    {.file = "gemma-3-4b-it.json", .layers = 34, .q = 8, .kv = 4, .dqk = 256, .dv = 256, .window = 1023,
     .dtype = BF16, .config_dtype = BF16},
    /* Gemma 4: text_config layers 30, heads 16 / 8, head_dim 256, layer_types with
     * sliding_attention, sliding_window 1024 -> 1023.  Its full layers' global_head_dim
     * (512) and num_global_key_value_heads (2) are not carried by the model. */
    {.file = "gemma-4-26b-a4b.json", .layers = 30, .q = 16, .kv = 8, .dqk = 256, .dv = 256, .window = 1023,
     .dtype = BF16, .config_dtype = BF16},
    /* gpt-oss: layers 24, heads 64 / 8, head_dim 64, layer_types alternate sliding / full,
     * sliding_window 128 -> 127, sinks (model_type gpt_oss); no torch_dtype at all:
     * served in float16 as sglang's --dtype auto does. */
    {.file = "gpt-oss-20b.json", .layers = 24, .q = 64, .kv = 8, .dqk = 64, .dv = 64, .window = 127, .sinks = 1,
     .dtype = F16, .config_dtype = 0},
    {.file = "gpt-oss-120b.json", .layers = 36, .q = 64, .kv = 8, .dqk = 64, .dv = 64, .window = 127, .sinks = 1,
     .dtype = F16, .config_dtype = 0},
    /* Mixtral: layers 32, heads 32 / 8, hidden_size 4096 / 32 = 128, sliding_window null. */
    {.file = "mixtral-8x7b-v0.1.json", .layers = 32, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* layers 56, heads 48 / 8, hidden_size 6144 / 48 = 128. */
    {.file = "mixtral-8x22b-v0.1.json", .layers = 56, .q = 48, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* Phi (PhiMoE): layers 32, heads 32 / 8, head_dim 128, sliding_window 2047 -> 2046. */
    {.file = "phi-mini-moe-instruct.json", .layers = 32, .q = 32, .kv = 8, .dqk = 128, .dv = 128, .window = 2046,
     .dtype = BF16, .config_dtype = BF16},
    /* LFM2 (in LFM2.5-VL's text_config): layers 16, heads 32 / 8, hidden_size 2048 / 32 =
     * 64; layer_types full_attention at 2, 5, 8, 10, 12, 14, conv elsewhere; conv_L_cache
     * 3, short-conv channels hidden_size 2048. */
    {.file = "lfm2.5-vl-1.6b.json", .layers = 16, .q = 32, .kv = 8, .dqk = 64, .dv = 64, .window = -1, .dtype = BF16,
     .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_SHORT_CONV, .full = "2,5,8,10,12,14", .lin_conv = 3,
     .lin_hidden = 2048},
    /* MiniMax M2.5: layers 62, heads 48 / 8, head_dim 128, no dtype (served float16). */
    {.file = "minimax-m2.5.json", .layers = 62, .q = 48, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = F16, .config_dtype = 0},
    /* MiniMax M2.7: the same shape, attn_type_list all 1 (every layer softmax: no
     * lightning layer), dtype bfloat16. */
    {.file = "minimax-m2.7.json", .layers = 62, .q = 48, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16},
    /* MiniMax M3: layers 60, heads 64 / 4, head_dim 128; sparse_attention_config
     * sparse_attention_freq 0 at 0, 1, 2 (dense), 1 from 3 to 59 (sparse);
     * sparse_topk_blocks 16, sparse_block_size 128. */
    {.file = "minimax-m3.json", .layers = 60, .q = 64, .kv = 4, .dqk = 128, .dv = 128, .window = -1, .dtype = BF16,
     .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_MINIMAX_SPARSE, .full = "0,1,2",
     .sparse = "3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,"
               "38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59",
     .topk_blocks = 16, .block_size = 128},
    /* Nemotron-H 56B: layers 118, heads 64 / 8, attention_head_dim 128;
     * hybrid_override_pattern '*' at 7, 18, ..., 106; n_groups 8, mamba_num_heads 256,
     * mamba_head_dim 64, ssm_state_size 256, conv_kernel 4.  Its time_step_limit holds a
     * bare Infinity. */
    {.file = "nemotron-h-56b-base-8k.json", .layers = 118, .q = 64, .kv = 8, .dqk = 128, .dv = 128, .window = -1,
     .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_MAMBA2, .full = "7,18,29,40,51,62,73,84,95,106",
     .lin_k = 8, .lin_v = 256, .lin_dk = 256, .lin_dv = 64, .lin_conv = 4},
    /* Nemotron 3 Nano: layers 52, heads 32 / 2, head_dim 128; pattern '*' at 5, 12, 19, 26,
     * 33, 42 (E = MoE, M = Mamba2); n_groups 8, mamba_num_heads 64, mamba_head_dim 64,
     * ssm_state_size 128, conv_kernel 4. */
    {.file = "nemotron-3-nano-30b-a3b-bf16.json", .layers = 52, .q = 32, .kv = 2, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_MAMBA2, .full = "5,12,19,26,33,42",
     .lin_k = 8, .lin_v = 64, .lin_dk = 128, .lin_dv = 64, .lin_conv = 4},
    /* Nemotron 3 Super: layers 88, heads 32 / 2, head_dim 128; '*' at 7, 16, 25, 36, 47, 58,
     * 69, 78; mamba_num_heads 128, n_groups 8, head dim 64, state 128, conv 4, dtype
     * bfloat16; an Infinity in time_step_limit. */
    {.file = "nemotron-3-super-120b-a12b-fp8.json", .layers = 88, .q = 32, .kv = 2, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_MAMBA2,
     .full = "7,16,25,36,47,58,69,78", .lin_k = 8, .lin_v = 128, .lin_dk = 128, .lin_dv = 64, .lin_conv = 4},
    /* Nemotron 3 Ultra: no num_hidden_layers; layers_block_type has 108 entries, attention
     * at 7, 14, 23, 32, 39, 48, 57, 64, 73, 82, 89, 98 (mamba / moe elsewhere); heads 64 / 2,
     * head_dim 128; mamba_num_heads 256, n_groups 8, head dim 64, state 128, conv 4. */
    {.file = "nemotron-3-ultra-550b-a55b-bf16.json", .layers = 108, .q = 64, .kv = 2, .dqk = 128, .dv = 128,
     .window = -1, .dtype = BF16, .config_dtype = BF16, .kind = SGL_ATTN_HYBRID_MAMBA2,
     .full = "7,14,23,32,39,48,57,64,73,82,89,98", .lin_k = 8, .lin_v = 256, .lin_dk = 128, .lin_dv = 64,
     .lin_conv = 4},
    /* Step 3.7: layers 45, heads 64 / 8, head_dim 128, layer_types with
     * sliding_attention, sliding_window 512 -> 511. */
    {.file = "step-3.7-flash.json", .layers = 45, .q = 64, .kv = 8, .dqk = 128, .dv = 128, .window = 511,
     .dtype = BF16, .config_dtype = BF16},
    /* Whisper: decoder_layers 4, decoder_attention_heads 6, d_model 384 / 6 = 64,
     * is_encoder_decoder, torch_dtype float32 -> float16. */
    {.file = "whisper-tiny.en.json", .layers = 4, .q = 6, .kv = 6, .dqk = 64, .dv = 64, .window = -1, .encdec = 1,
     .dtype = F16, .config_dtype = F32},
    /* T5: num_decoder_layers 6, num_heads 8, d_kv 64, is_encoder_decoder, float32. */
    {.file = "t5-small.json", .layers = 6, .q = 8, .kv = 8, .dqk = 64, .dv = 64, .window = -1, .encdec = 1,
     .dtype = F16, .config_dtype = F32},
    /* BART: decoder_layers 12, decoder_attention_heads 16, d_model 1024 / 16 = 64,
     * is_encoder_decoder, no torch_dtype (served float16). */
    {.file = "bart-large-cnn.json", .layers = 12, .q = 16, .kv = 16, .dqk = 64, .dv = 64, .window = -1, .encdec = 1,
     .dtype = F16, .config_dtype = 0},
};

#define N_ROWS (sizeof rows / sizeof rows[0])

static void ids(const uint64_t *mask, int n, char *buf, size_t size) {
    buf[0] = 0;
    for (int i = 0; i < n; i++)
        if ((mask[i >> 6] >> (i & 63)) & 1) ju_append(buf, size, "%s%d", buf[0] ? "," : "", i);
}

static int read_corpus(const char *file, int tp, sgl_attn_model *m, char *err, size_t n) {
    const char *path = pt_corpus(file);
    assert_non_null(path);
    return sgl_attn_model_from_file(path, tp, m, err, n);
}

/* A field against the row, naming the file and the field when they differ. */
#define EXPECT(got, want_)                                                                                        \
    do {                                                                                                          \
        if ((double)(got) != (double)(want_))                                                                     \
            fprintf(stderr, "%s: %s is %g, expected %g\n", w->file, #got, (double)(got), (double)(want_));       \
        assert_true((double)(got) == (double)(want_));                                                            \
    } while (0)

static void check_row(const want *w) {
    sgl_attn_model m;
    char err[1024] = "", got[2048];
    int rc = read_corpus(w->file, 1, &m, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", w->file, err);
    assert_int_equal(rc, SGL_ATTN_OK);
    EXPECT(m.num_layers, w->layers);
    EXPECT(m.num_q_heads, w->q);
    EXPECT(m.num_kv_heads, w->kv);
    EXPECT(m.head_dim_qk, w->dqk);
    EXPECT(m.head_dim_v, w->dv);
    EXPECT(m.is_mla, w->mla);
    EXPECT(m.kv_lora_rank, w->rank);
    EXPECT(m.qk_rope_head_dim, w->rope);
    EXPECT(m.qk_nope_head_dim, w->nope);
    EXPECT(m.v_head_dim, w->vdim);
    EXPECT(m.sliding_window, w->window);
    EXPECT(m.logit_softcap, w->softcap);
    EXPECT(m.has_sinks, w->sinks);
    EXPECT(m.is_encoder_decoder, w->encdec);
    EXPECT(m.index_topk, w->topk);
    EXPECT(m.dtype, w->dtype);
    EXPECT(m.kv_dtype, w->dtype);
    EXPECT(m.config_dtype, w->config_dtype);
    EXPECT(m.hybrid_kind, w->kind);
    ids(m.full_attention_mask, SGL_ATTN_MAX_LAYERS, got, sizeof got);
    if (w->full) {
        if (strcmp(got, w->full)) fprintf(stderr, "%s: full-attention layers %s, expected %s\n", w->file, got, w->full);
        assert_string_equal(got, w->full);
    } else {
        assert_int_equal(model_mask_count(m.full_attention_mask), w->layers);
        assert_true(sgl_attn_model_layer_is_full(&m, w->layers - 1));
    }
    ids(m.sparse_layer_mask, SGL_ATTN_MAX_LAYERS, got, sizeof got);
    assert_string_equal(got, w->sparse ? w->sparse : "");
    EXPECT(m.lin_num_k_heads, w->lin_k);
    EXPECT(m.lin_num_v_heads, w->lin_v);
    EXPECT(m.lin_head_k_dim, w->lin_dk);
    EXPECT(m.lin_head_v_dim, w->lin_dv);
    EXPECT(m.lin_conv_kernel, w->lin_conv);
    EXPECT(m.lin_hidden, w->lin_hidden);
    EXPECT(m.sparse_topk_blocks, w->topk_blocks);
    EXPECT(m.sparse_block_size, w->block_size);
}

static void test_every_config_reads_as_written(void **state) {
    (void)state;
    if (!pt_corpus("")) skip();
    for (size_t i = 0; i < N_ROWS; i++) check_row(&rows[i]);
}

/* The corpus and this table agree: a new file needs its row, and the README
 * names where every file came from. */
static void test_corpus_is_covered_and_sourced(void **state) {
    (void)state;
    if (!pt_corpus("")) skip();
    DIR *d = opendir(pt_corpus(""));
    assert_non_null(d);
    size_t n_files = 0;
    char *readme = pt_read("tests/data/hf-configs/README.md", NULL);
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
        n_files++;
        int found = 0;
        for (size_t i = 0; i < N_ROWS; i++) found |= !strcmp(rows[i].file, e->d_name);
        if (!found) fprintf(stderr, "%s has no row in %s\n", e->d_name, __FILE__);
        assert_true(found);
        char cell[300];
        snprintf(cell, sizeof cell, "| `%s` |", e->d_name);
        if (!strstr(readme, cell)) fprintf(stderr, "README.md names no source for %s\n", e->d_name);
        assert_non_null(strstr(readme, cell));
    }
    closedir(d);
    free(readme);
    assert_int_equal(n_files, N_ROWS);
    assert_true(n_files >= 40);
}

/* tp 8 on a few: heads divide, kv heads replicate, MLA keeps its one head,
 * linear heads divide. */
static void test_tensor_parallel(void **state) {
    (void)state;
    if (!pt_corpus("")) skip();
    sgl_attn_model m;
    char err[1024];
    assert_int_equal(read_corpus("llama-3.1-405b.json", 8, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_q_heads, 16); /* 128 / 8 */
    assert_int_equal(m.num_kv_heads, 1); /* 8 / 8 */
    assert_int_equal(read_corpus("kimi-k3.json", 8, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_q_heads, 12); /* 96 / 8 */
    assert_int_equal(m.num_kv_heads, 1);
    assert_int_equal(m.lin_num_v_heads, 12);
    assert_int_equal(read_corpus("qwen3.5-397b-a17b.json", 8, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_q_heads, 4);     /* 32 / 8 */
    assert_int_equal(m.num_kv_heads, 1);    /* 2 < 8: replicated */
    assert_int_equal(m.lin_num_k_heads, 2); /* 16 / 8 */
    assert_int_equal(m.lin_num_v_heads, 8); /* 64 / 8 */
    /* whisper-tiny.en's 6 heads do not split over 4. */
    assert_int_equal(read_corpus("whisper-tiny.en.json", 4, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"decoder_attention_heads\" = 6 does not split over tp_size 4"));
}

/* A directory stands for its config.json. */
static void test_model_directory(void **state) {
    (void)state;
    char dir[] = "/tmp/sglattn-model-XXXXXX", path[300], err[1024];
    assert_non_null(mkdtemp(dir));
    sgl_attn_model m, keep;
    memset(&keep, 0x5a, sizeof keep);
    m = keep;
    /* Empty directory: refused, naming the directory and what it lacks. */
    assert_int_equal(sgl_attn_model_from_file(dir, 1, &m, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    assert_non_null(strstr(err, dir));
    assert_non_null(strstr(err, "a directory without config.json"));
    assert_memory_equal(&m, &keep, sizeof m);
    static const char text[] = "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 36, \"num_attention_heads\": 32, "
                               "\"num_key_value_heads\": 8, \"head_dim\": 128}";
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    assert_int_equal(sgl_attn_model_from_file(dir, 1, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_layers, 36);
    assert_int_equal(m.num_q_heads, 32);
    snprintf(path, sizeof path, "%s/", dir); /* a trailing slash too */
    assert_int_equal(sgl_attn_model_from_file(path, 8, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_q_heads, 4);
    /* Errors name the config.json inside. */
    assert_int_equal(sgl_attn_model_from_file(dir, 3, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    snprintf(path, sizeof path, "%s/config.json: \"num_attention_heads\" = 32 does not split over tp_size 3", dir);
    assert_non_null(strstr(err, path));
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* NaN, Infinity and -Infinity as Python's json reads them; anything else
 * close to them is an error at line:column. */
static void test_nan_and_infinity(void **state) {
    (void)state;
    ju_doc d;
    char err[512];
    static const char text[] = "{\"a\": [0.0, Infinity, -Infinity, NaN], \"b\": {\"c\": NaN}, \"d\": -1, \"e\": Infinity}";
    assert_int_equal(ju_parse(&d, text, strlen(text), "t.json", err, sizeof err), SGL_ATTN_OK);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(d.root, "a");
    assert_int_equal(cJSON_GetArraySize(a), 4);
    assert_true(cJSON_GetArrayItem(a, 0)->valuedouble == 0.0);
    assert_true(isinf(cJSON_GetArrayItem(a, 1)->valuedouble) && cJSON_GetArrayItem(a, 1)->valuedouble > 0);
    assert_true(isinf(cJSON_GetArrayItem(a, 2)->valuedouble) && cJSON_GetArrayItem(a, 2)->valuedouble < 0);
    assert_true(isnan(cJSON_GetArrayItem(a, 3)->valuedouble));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(d.root, "b");
    assert_true(isnan(cJSON_GetObjectItemCaseSensitive(b, "c")->valuedouble));
    assert_true(cJSON_GetObjectItemCaseSensitive(d.root, "d")->valuedouble == -1.0);
    assert_true(isinf(cJSON_GetObjectItemCaseSensitive(d.root, "e")->valuedouble));
    ju_doc_free(&d);

    struct {
        const char *text, *want;
    } bad[] = {
        {"{\"a\": [0.0, Infinit]}", "t.json:1:13: expected 'Infinity'"},
        {"{\"a\":\n  nan}", "t.json:2:3: expected 'null'"},
        {"{\"a\": -Inf}", "t.json:1:7: expected '-Infinity'"},
        {"{\"a\": +Infinity}", "t.json:1:7: expected a value"},
        {"{\"a\": NaNa}", "t.json:1:10: expected ',' or '}'"},
        {"{\"a\": infinity}", "t.json:1:7: expected a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        int rc = ju_parse(&d, bad[i].text, strlen(bad[i].text), "t.json", err, sizeof err);
        if (rc == SGL_ATTN_OK || strncmp(err, bad[i].want, strlen(bad[i].want)))
            fprintf(stderr, "bad[%zu]: got %s\n want %s\n", i, err, bad[i].want);
        assert_int_equal(rc, SGL_ATTN_E_INVALID);
        assert_memory_equal(err, bad[i].want, strlen(bad[i].want));
        ju_doc_free(&d);
    }

    /* Where the reader needs a count or a cap, NaN and Infinity are refused by name. */
    sgl_attn_model m;
    static const char nan_layers[] = "{\"model_type\": \"llama\", \"num_hidden_layers\": NaN, \"num_attention_heads\": 8, "
                                     "\"head_dim\": 64}";
    assert_int_equal(sgl_attn_model_from_json(nan_layers, strlen(nan_layers), "config.json", 1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "config.json: \"num_hidden_layers\": expected an integer in [1, 1024], found nan"));
    static const char inf_cap[] = "{\"model_type\": \"gemma2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                                  "\"head_dim\": 64, \"attn_logit_softcapping\": Infinity}";
    assert_int_equal(sgl_attn_model_from_json(inf_cap, strlen(inf_cap), "config.json", 1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"attn_logit_softcapping\": expected 0 or a number in ["));
    assert_non_null(strstr(err, "(a float), found inf"));
    static const char ours_cap[] = "{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, "
                                   "\"logit_softcap\": -Infinity}";
    assert_int_equal(sgl_attn_model_from_json(ours_cap, strlen(ours_cap), "m.json", 1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"logit_softcap\": expected 0 or a number in ["));
    assert_non_null(strstr(err, "found -inf"));
}

/* Nemotron-NAS: one n_heads_in_group for all blocks with attention, or refused. */
static void test_nemotron_nas_gqa(void **state) {
    (void)state;
    sgl_attn_model m;
    char err[512];
    static const char one[] = "{\"model_type\": \"nemotron-nas\", \"num_hidden_layers\": 3, \"num_attention_heads\": 16, "
                              "\"hidden_size\": 1024, \"num_key_value_heads\": null, \"block_configs\": ["
                              "{\"attention\": {\"n_heads_in_group\": 4, \"no_op\": false}},"
                              "{\"attention\": {\"n_heads_in_group\": null, \"no_op\": true}},"
                              "{\"attention\": {\"n_heads_in_group\": 4, \"no_op\": false}}]}";
    assert_int_equal(sgl_attn_model_from_json(one, strlen(one), "config.json", 1, &m, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(m.num_kv_heads, 4);
    static const char two[] = "{\"model_type\": \"nemotron-nas\", \"num_hidden_layers\": 2, \"num_attention_heads\": 16, "
                              "\"hidden_size\": 1024, \"block_configs\": ["
                              "{\"attention\": {\"n_heads_in_group\": 4, \"no_op\": false}},"
                              "{\"attention\": {\"n_heads_in_group\": 8, \"no_op\": false}}]}";
    assert_int_equal(sgl_attn_model_from_json(two, strlen(two), "config.json", 1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "config.json: \"block_configs[1].attention.n_heads_in_group\" is 8, an earlier "
                                "block's is 4"));
}

/* sglang's --dtype auto: float32 (or none) becomes float16, bfloat16 for Gemma;
 * float16 and bfloat16 stay. */
static void test_dtype_auto(void **state) {
    (void)state;
    struct {
        const char *type, *dtype;
        uint32_t served, said;
    } rows_dt[] = {
        {"llama", "\"float32\"", F16, F32},   {"gemma2", "\"float32\"", BF16, F32}, {"gemma3_text", NULL, BF16, 0},
        {"llama", NULL, F16, 0},              {"llama", "\"float16\"", F16, F16},   {"llama", "\"bfloat16\"", BF16, BF16},
        {"gemma", "\"float16\"", F16, F16},   {"llama", "\"half\"", F16, F16},      {"llama", "\"float\"", F16, F32},
    };
    for (size_t i = 0; i < sizeof rows_dt / sizeof rows_dt[0]; i++) {
        char json[512], err[512];
        snprintf(json, sizeof json,
                 "{\"model_type\": \"%s\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64%s%s}",
                 rows_dt[i].type, rows_dt[i].dtype ? ", \"torch_dtype\": " : "",
                 rows_dt[i].dtype ? rows_dt[i].dtype : "");
        sgl_attn_model m;
        assert_int_equal(sgl_attn_model_from_json(json, strlen(json), "config.json", 1, &m, err, sizeof err),
                         SGL_ATTN_OK);
        assert_int_equal(m.dtype, rows_dt[i].served);
        assert_int_equal(m.kv_dtype, rows_dt[i].served);
        assert_int_equal(m.config_dtype, rows_dt[i].said);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_config_reads_as_written),
        cmocka_unit_test(test_corpus_is_covered_and_sourced),
        cmocka_unit_test(test_tensor_parallel),
        cmocka_unit_test(test_model_directory),
        cmocka_unit_test(test_nan_and_infinity),
        cmocka_unit_test(test_nemotron_nas_gqa),
        cmocka_unit_test(test_dtype_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
