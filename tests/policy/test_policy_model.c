/* test_policy_model.c - model readers: our JSON and Hugging Face
 * config.json for each family, tensor-parallel splits, and refusals that
 * name the file and the field. */
#include "pt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void load(const char *example, int tp, sgl_attn_model *m) {
    char path[512], err[1024] = "";
    snprintf(path, sizeof path, "examples/models/%s", example);
    int rc = sgl_attn_model_from_file(pt_src(path), tp, m, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", example, err);
    assert_int_equal(rc, SGL_ATTN_OK);
}

static int inline_model(const char *json, int tp, sgl_attn_model *m, char *err, size_t n) {
    return sgl_attn_model_from_json(json, strlen(json), "config.json", tp, m, err, n);
}

/* Expected fields of a model: EXPECT(m, W(num_q_heads, 16), W(dtype, SGL_ATTN_DT_BF16))
 * checks each in turn, and a failure names the field, what it holds, what
 * was expected and the EXPECT's line.  Every field named is a 32-bit integer
 * (int32_t or uint32_t), which expect_fields checks too. */
typedef struct want_field {
    const char *name;
    size_t offset, size;
    int64_t value;
} want_field;
#define W(field, v) {#field, offsetof(sgl_attn_model, field), sizeof(((sgl_attn_model *)0)->field), (int64_t)(v)}
#define EXPECT(m, ...) \
    expect_fields(&(m), #m, (const want_field[]){__VA_ARGS__, {NULL, 0, 0, 0}}, __FILE__, __LINE__)

static void expect_fields(const sgl_attn_model *m, const char *var, const want_field *w, const char *file, int line) {
    for (; w->name; w++) {
        assert_int_equal(w->size, sizeof(int32_t));
        int32_t got;
        memcpy(&got, (const char *)m + w->offset, sizeof got);
        if (got != (int32_t)w->value) {
            print_error("%s.%s = %d; expected %d\n", var, w->name, (int)got, (int)(int32_t)w->value);
            _fail(file, line);
        }
    }
}

/* The full-attention layer ids as a "3,7,11" string. */
static void full_ids(const sgl_attn_model *m, char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < m->num_layers; i++)
        if (sgl_attn_model_layer_is_full(m, i)) ju_append(buf, n, "%s%d", buf[0] ? "," : "", i);
}

static void test_llama_ours_and_hf_agree(void **state) {
    (void)state;
    sgl_attn_model a, b;
    load("llama-3.1-8b.json", 1, &a);
    load("llama-3.1-8b-hf.json", 1, &b);
    assert_int_equal(a.num_layers, 32);
    assert_int_equal(b.num_layers, 32);
    EXPECT(a, W(num_q_heads, b.num_q_heads), W(num_kv_heads, 8));
    EXPECT(b, W(num_kv_heads, 8), W(head_dim_qk, 128), W(dtype, SGL_ATTN_DT_BF16), W(hybrid_kind, SGL_ATTN_HYBRID_NONE),
           W(sliding_window, -1));
    assert_string_equal(b.model_type, "llama");
    assert_int_equal(model_mask_count(b.full_attention_mask), 32);
    /* tp 8: 4 q heads and 1 kv head per rank; tp 16 replicates the 8 kv heads. */
    load("llama-3.1-8b-hf.json", 8, &b);
    EXPECT(b, W(num_q_heads, 4), W(num_kv_heads, 1));
    load("llama-3.1-8b-hf.json", 16, &b);
    EXPECT(b, W(num_q_heads, 2), W(num_kv_heads, 1));
    char err[512];
    sgl_attn_model keep = b;
    assert_int_equal(sgl_attn_model_from_file(pt_src("examples/models/llama-3.1-8b-hf.json"), 3, &b, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "llama-3.1-8b-hf.json: \"num_attention_heads\" = 32 does not split over tp_size 3"));
    assert_memory_equal(&keep, &b, sizeof b); /* untouched on failure */
}

static void test_deepseek_mla_and_dsa(void **state) {
    (void)state;
    sgl_attn_model m;
    load("deepseek-v3.json", 8, &m);
    EXPECT(m, W(is_mla, 1), W(head_dim_qk, 576), W(head_dim_v, 512), W(num_kv_heads, 1), W(num_q_heads, 16),
           W(kv_lora_rank, 512), W(qk_nope_head_dim, 128), W(index_topk, 0), W(index_n_heads, 0), W(index_head_dim, 0));
    /* The file: index_topk 2048, index_n_heads 64, index_head_dim 128; the
     * indexer is not split by tensor parallelism. */
    load("deepseek-v3.2-exp.json", 8, &m);
    EXPECT(m, W(index_topk, 2048), W(index_n_heads, 64), W(index_head_dim, 128), W(num_q_heads, 16));
}

static void test_encoder_decoder(void **state) {
    (void)state;
    sgl_attn_model m;
    load("whisper-large-v3.json", 1, &m);
    EXPECT(m, W(is_encoder_decoder, 1), W(num_q_heads, 20), W(num_kv_heads, 20), W(head_dim_qk, 64),
           W(dtype, SGL_ATTN_DT_F16));
    load("mllama-3.2-11b-vision.json", 1, &m);
    EXPECT(m, W(is_encoder_decoder, 1), W(num_layers, 40), W(num_kv_heads, 8), W(head_dim_qk, 128));
    assert_string_equal(m.model_type, "mllama");
}

static void test_window_softcap_sinks(void **state) {
    (void)state;
    sgl_attn_model m;
    load("gpt-oss-20b.json", 1, &m);
    EXPECT(m, W(has_sinks, 1), W(sliding_window, 127), W(head_dim_qk, 64), W(hybrid_kind, SGL_ATTN_HYBRID_NONE));
    load("gemma-2-9b.json", 1, &m);
    assert_false(m.has_sinks);
    assert_true(m.logit_softcap == 50.0f);
    EXPECT(m, W(sliding_window, 4095), W(head_dim_qk, 256));
    /* "torch_dtype": "float32": served in bf16, as sglang's --dtype auto does for Gemma. */
    EXPECT(m, W(config_dtype, SGL_ATTN_DT_F32), W(dtype, SGL_ATTN_DT_BF16), W(kv_dtype, SGL_ATTN_DT_BF16));
    char err[512];
    /* A window that use_sliding_window turns off, or layer_types that use none. */
    assert_int_equal(inline_model("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                  "\"hidden_size\": 256, \"sliding_window\": 4096, \"use_sliding_window\": false}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_OK);
    EXPECT(m, W(sliding_window, -1), W(head_dim_qk, 64));
}

static void test_qwen3_next_gdn(void **state) {
    (void)state;
    sgl_attn_model m;
    char ids[512];
    load("qwen3-next-80b-a3b.json", 1, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_GDN);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "3,7,11,15,19,23,27,31,35,39,43,47");
    EXPECT(m, W(lin_num_k_heads, 16), W(lin_num_v_heads, 32), W(lin_head_k_dim, 128), W(lin_head_v_dim, 128),
           W(lin_conv_kernel, 4));
    load("qwen3-next-80b-a3b.json", 4, &m);
    EXPECT(m, W(num_q_heads, 4), W(num_kv_heads, 1), W(lin_num_k_heads, 4), W(lin_num_v_heads, 8));
    /* Qwen3.5: layer_types nested in text_config. */
    char err[512];
    assert_int_equal(
        inline_model("{\"model_type\": \"qwen3_5_moe\", \"torch_dtype\": \"bfloat16\", \"text_config\": {"
                     "\"model_type\": \"qwen3_5_moe_text\", \"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
                     "\"num_key_value_heads\": 2, \"head_dim\": 256, \"full_attention_interval\": 2, "
                     "\"layer_types\": [\"linear_attention\", \"full_attention\", \"linear_attention\", "
                     "\"full_attention\"], \"linear_num_key_heads\": 16, \"linear_num_value_heads\": 64, "
                     "\"linear_key_head_dim\": 128, \"linear_value_head_dim\": 128, \"linear_conv_kernel_dim\": 4}}",
                     2, &m, err, sizeof err),
        SGL_ATTN_OK);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_GDN);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "1,3");
    assert_int_equal(m.lin_num_v_heads, 32);
    /* layer_types and full_attention_interval must agree. */
    assert_int_equal(
        inline_model("{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4, \"num_attention_heads\": 16, "
                     "\"head_dim\": 256, \"full_attention_interval\": 4, \"layer_types\": [\"linear_attention\", "
                     "\"full_attention\", \"linear_attention\", \"full_attention\"], \"linear_num_key_heads\": 16, "
                     "\"linear_num_value_heads\": 32, \"linear_key_head_dim\": 128, \"linear_value_head_dim\": 128, "
                     "\"linear_conv_kernel_dim\": 4}",
                     1, &m, err, sizeof err),
        SGL_ATTN_E_INVALID);
    assert_string_equal(err, "config.json: \"full_attention_interval\" and \"layer_types\" disagree on which layers "
                             "are full attention");
    /* Missing linear shape fields are named. */
    assert_int_equal(inline_model("{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4, \"num_attention_heads\": "
                                  "16, \"head_dim\": 256, \"full_attention_interval\": 4}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_string_equal(err, "config.json: missing \"linear_num_key_heads\" (a Gated DeltaNet layer's shape)");
}

static void test_mamba2_families(void **state) {
    (void)state;
    sgl_attn_model m;
    char ids[512], err[512];
    load("nemotron-h-8b.json", 1, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_MAMBA2);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "7,18,29,40");
    EXPECT(m, W(lin_num_k_heads, 8), W(lin_num_v_heads, 128), W(lin_head_k_dim, 128), W(lin_head_v_dim, 64),
           W(lin_conv_kernel, 4), W(head_dim_qk, 128));
    assert_int_equal(
        inline_model("{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 5, \"num_attention_heads\": 8, "
                     "\"head_dim\": 64, \"hybrid_override_pattern\": \"M-M*\"}",
                     1, &m, err, sizeof err),
        SGL_ATTN_E_INVALID);
    assert_string_equal(err, "config.json: \"hybrid_override_pattern\" has 4 characters, but the model has 5 layers");
    assert_int_equal(
        inline_model("{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                     "\"head_dim\": 64, \"hybrid_override_pattern\": \"M-X*\"}",
                     1, &m, err, sizeof err),
        SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"hybrid_override_pattern\"[2] is 'X'"));
    /* Falcon-H1: attention and Mamba2 in every layer. */
    assert_int_equal(
        inline_model("{\"model_type\": \"falcon_h1\", \"num_hidden_layers\": 24, \"num_attention_heads\": 8, "
                     "\"num_key_value_heads\": 2, \"head_dim\": 128, \"mamba_d_state\": 256, \"mamba_d_conv\": 4, "
                     "\"mamba_n_groups\": 1, \"mamba_n_heads\": 48, \"mamba_d_head\": 64, \"mamba_d_ssm\": 3072}",
                     2, &m, err, sizeof err),
        SGL_ATTN_OK);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_MAMBA2);
    assert_int_equal(model_mask_count(m.full_attention_mask), 24);
    /* lin_num_k_heads: one group, replicated over tp */
    EXPECT(m, W(lin_num_v_heads, 24), W(lin_num_k_heads, 1), W(lin_head_k_dim, 256));
    /* Zamba2: layers_block_type, heads from expand * hidden / head dim. */
    assert_int_equal(
        inline_model("{\"model_type\": \"zamba2\", \"num_hidden_layers\": 6, \"num_attention_heads\": 32, "
                     "\"num_key_value_heads\": 32, \"hidden_size\": 2560, \"mamba_headdim\": 64, \"mamba_ngroups\": 1, "
                     "\"mamba_d_state\": 64, \"mamba_d_conv\": 4, \"mamba_expand\": 2, \"layers_block_type\": "
                     "[\"mamba\", \"mamba\", \"hybrid\", \"mamba\", \"mamba\", \"hybrid\"]}",
                     1, &m, err, sizeof err),
        SGL_ATTN_OK);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "2,5");
    EXPECT(m, W(lin_num_v_heads, 80), W(head_dim_qk, 160)); /* 2 * hidden / heads */
}

static void test_short_conv_kda_lightning_sparse(void **state) {
    (void)state;
    sgl_attn_model m;
    char ids[512], err[512];
    load("lfm2-1.2b.json", 1, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_SHORT_CONV);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "2,5,8,10,12,14");
    EXPECT(m, W(lin_hidden, 2048), W(lin_conv_kernel, 3));
    /* The older full_attn_idxs alone, and a disagreement with layer_types. */
    assert_int_equal(inline_model("{\"model_type\": \"lfm2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                                  "\"hidden_size\": 512, \"conv_L_cache\": 3, \"full_attn_idxs\": [1, 3]}",
                                  2, &m, err, sizeof err),
                     SGL_ATTN_OK);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "1,3");
    assert_int_equal(m.lin_hidden, 256);
    assert_int_equal(inline_model("{\"model_type\": \"lfm2\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                                  "\"hidden_size\": 512, \"conv_L_cache\": 3, \"full_attn_idxs\": [1, 2], "
                                  "\"layer_types\": [\"conv\", \"full_attention\", \"conv\", \"full_attention\"]}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"full_attn_idxs\" and \"layer_types\" disagree"));

    load("kimi-linear-48b-a3b.json", 1, &m);
    EXPECT(m, W(hybrid_kind, SGL_ATTN_HYBRID_KDA), W(is_mla, 1));
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "3,7,11,15,19,23,26"); /* 1-based in the config */
    EXPECT(m, W(lin_num_v_heads, 32), W(lin_head_k_dim, 128), W(lin_conv_kernel, 4));
    assert_int_equal(
        inline_model("{\"model_type\": \"kimi_linear\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                     "\"head_dim\": 64, \"linear_attn_config\": {\"full_attn_layers\": [2], \"kda_layers\": [0], "
                     "\"num_heads\": 4, \"head_dim\": 64, \"short_conv_kernel_size\": 4}}",
                     1, &m, err, sizeof err),
        SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"linear_attn_config.kda_layers[0]\": expected a layer id in [1, 2] (1-based)"));

    load("minimax-text-01.json", 8, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_LIGHTNING);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "7,15,23,31,39,47,55,63,71,79");
    EXPECT(m, W(lin_num_v_heads, 8), W(lin_head_k_dim, 128));

    load("minimax-m3-sparse.json", 1, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_MINIMAX_SPARSE);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "0,1,2");
    assert_true(sgl_attn_model_layer_is_sparse(&m, 3));
    assert_true(sgl_attn_model_layer_is_sparse(&m, 11));
    assert_false(sgl_attn_model_layer_is_sparse(&m, 2));
    EXPECT(m, W(sparse_topk_blocks, 16), W(sparse_block_size, 128));
    assert_int_equal(inline_model("{\"architectures\": [\"MiniMaxM3SparseForCausalLM\"], \"num_hidden_layers\": 2, "
                                  "\"num_attention_heads\": 4, \"head_dim\": 64}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "has no \"sparse_attention_config\""));
}

static void test_unknown_hybrids_become_custom(void **state) {
    (void)state;
    sgl_attn_model m;
    char ids[512], err[512];
    assert_int_equal(inline_model("{\"model_type\": \"foo_linear\", \"num_hidden_layers\": 4, \"num_attention_heads\": "
                                  "8, \"head_dim\": 64, \"layer_types\": [\"retention\", \"full_attention\", "
                                  "\"retention\", \"sliding_attention\"], \"sliding_window\": 512}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_OK);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_CUSTOM);
    assert_string_equal(m.hybrid_custom_kind, "retention");
    assert_string_equal(m.model_type, "foo_linear");
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "1,3");
    assert_int_equal(m.sliding_window, 511);
    /* linear_attention outside a known family is custom too. */
    assert_int_equal(inline_model("{\"model_type\": \"bar\", \"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
                                  "\"head_dim\": 64, \"full_attention_interval\": 2}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_OK);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_CUSTOM);
    assert_string_equal(m.hybrid_custom_kind, "linear_attention");
    assert_int_equal(inline_model("{\"model_type\": \"bar\", \"num_hidden_layers\": 3, \"num_attention_heads\": 8, "
                                  "\"head_dim\": 64, \"layer_types\": [\"a\", \"b\", \"full_attention\"]}",
                                  1, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "mixes linear layer kinds \"a\" and \"b\""));
    load("retention-custom.json", 2, &m);
    assert_int_equal(m.hybrid_kind, SGL_ATTN_HYBRID_CUSTOM);
    assert_string_equal(m.hybrid_custom_kind, "retention");
    assert_int_equal(m.lin_num_v_heads, 8);
    full_ids(&m, ids, sizeof ids);
    assert_string_equal(ids, "3,7");
}

static void test_refusals_name_file_and_field(void **state) {
    (void)state;
    sgl_attn_model m;
    char err[1024];
    struct {
        const char *json, *want;
    } rows[] = {
        {"{\"name\": \"x\"}", "config.json: not a model description: expected our format (key \"sglattn_model\""},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2}", "config.json: missing \"num_attention_heads\""},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"hidden_size\": 100}",
         "config.json: no \"head_dim\", and \"hidden_size\" (100) is not a multiple of \"num_attention_heads\" (6)"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": \"2\", \"num_attention_heads\": 8, \"head_dim\": 64}",
         "config.json: \"num_hidden_layers\": expected an integer in [1, 1024], found a string"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": 64, "
         "\"torch_dtype\": \"int4\"}",
         "config.json: \"torch_dtype\": expected float32, float16 or bfloat16, found a string \"int4\""},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"num_key_value_heads\": 3, "
         "\"head_dim\": 64}",
         "config.json: \"num_attention_heads\" = 8 and \"num_key_value_heads\" = 3: expected positive head counts"},
        {"{\"model_type\": \"x\", \"text_config\": {\"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"head_dim\": "
         "64, \"layer_types\": [\"full_attention\"]}}",
         "config.json: \"text_config.layer_types\" has 1 entries, but the model has 2 layers"},
        {"{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, \"heads\": 3}",
         "config.json: unknown key \"heads\" in the model (expected one of: sglattn_model, name, model_type"},
        {"{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8}",
         "config.json: missing \"head_dim\" (or \"head_dim_qk\", or \"mla\")"},
        {"{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, \"hybrid\": {\"kind\": "
         "\"gdn\", \"full_attention_layers\": [5]}}",
         "config.json: layer 5 is listed, but the model has 2 layers"},
        {"{\"sglattn_model\": 1, \"num_layers\": 2, \"num_q_heads\": 8, \"head_dim\": 64, \"hybrid\": {\"kind\": "
         "\"gnd\", \"full_attention_layers\": [1]}}",
         "config.json: \"hybrid.kind\": expected gdn, mamba2, short_conv, kda, lightning, minimax_sparse or custom:"},
        {"{\"sglattn_model\": 1,\n \"num_layers\": 2,,}", "config.json:2:18: expected a key in double quotes after ','"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        err[0] = 0;
        int rc = inline_model(rows[i].json, 1, &m, err, sizeof err);
        if (rc == SGL_ATTN_OK || strncmp(err, rows[i].want, strlen(rows[i].want)))
            fprintf(stderr, "row %zu: rc %d\n got:  %s\n want: %s\n", i, rc, err, rows[i].want);
        assert_int_equal(rc, SGL_ATTN_E_INVALID);
        assert_memory_equal(err, rows[i].want, strlen(rows[i].want));
    }
    assert_int_equal(sgl_attn_model_from_file("/nonexistent/config.json", 1, &m, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    assert_non_null(strstr(err, "/nonexistent/config.json: cannot open: No such file"));
    assert_int_equal(inline_model("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 8, "
                                  "\"head_dim\": 64}", 0, &m, err, sizeof err),
                     SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "tp_size 0"));
}

/* dual_chunk_attention_config: the sizes, the length scaling base, the
 * sparse switch and its defaults, and refusals naming the field. */
static void test_dual_chunk(void **state) {
    (void)state;
    sgl_attn_model m;
    load("qwen2.5-7b-instruct-1m.json", 1, &m);
    /* sliding_window -1: use_sliding_window is false */
    EXPECT(m, W(num_layers, 28), W(num_q_heads, 28), W(num_kv_heads, 4), W(head_dim_qk, 128), W(sliding_window, -1),
           W(dca_chunk_size, 262144), W(dca_local_size, 8192), W(dca_original_max_position, 262144), W(dca_sparse, 0));
    load("qwen2.5-7b-instruct-1m.json", 4, &m);
    EXPECT(m, W(num_q_heads, 7), W(num_kv_heads, 1), W(dca_chunk_size, 262144));
    load("llama-3.1-8b-hf.json", 1, &m);
    assert_int_equal(m.dca_chunk_size, 0);

    char err[512];
    static const char base[] = "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 256, "
                               "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                               "\"dual_chunk_attention_config\": %s}";
    char json[1024];
    /* Absent sizes: the engines' defaults; a sparse config turns sparse on. */
    snprintf(json, sizeof json, base, "{\"sparse_attention_config\": [{}]}");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_OK);
    EXPECT(m, W(dca_chunk_size, 8192), W(dca_local_size, 1024), W(dca_original_max_position, 0), W(dca_sparse, 1),
           W(dca_sparse_threshold, 32768));
    snprintf(json, sizeof json, base,
             "{\"chunk_size\": 64, \"local_size\": 16, \"sparse_attention_config\": [{}], "
             "\"sparse_attention_enabled\": false, \"sparse_attention_threshold\": 100}");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_OK);
    EXPECT(m, W(dca_chunk_size, 64), W(dca_local_size, 16), W(dca_sparse, 0), W(dca_sparse_threshold, 100));
    snprintf(json, sizeof json, base, "{\"chunk_size\": 64, \"local_size\": 64}");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"dual_chunk_attention_config\": local_size 64 must be below chunk_size 64"));
    snprintf(json, sizeof json, base, "{\"chunk_size\": \"big\"}");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"dual_chunk_attention_config.chunk_size\": expected an integer"));
    snprintf(json, sizeof json, base, "{\"sparse_attention_enabled\": 1}");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "sparse_attention_enabled\": expected true or false"));
    snprintf(json, sizeof json, base, "[64]");
    assert_int_equal(inline_model(json, 1, &m, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(err, "\"dual_chunk_attention_config\": expected an object"));
}

/* Every shipped example reads at tp 1 and 2. */
static void test_all_examples_load(void **state) {
    (void)state;
    static const char *const files[] = {"deepseek-v3.2-exp.json", "deepseek-v3.json", "gemma-2-9b.json",
                                        "gpt-oss-20b.json", "kimi-linear-48b-a3b.json", "lfm2-1.2b.json",
                                        "llama-3.1-8b-hf.json", "llama-3.1-8b.json", "minimax-m3-sparse.json",
                                        "minimax-text-01.json", "mllama-3.2-11b-vision.json", "nemotron-h-8b.json",
                                        "qwen2.5-7b-instruct-1m.json", "qwen3-next-80b-a3b.json", "retention-custom.json",
                                        "whisper-large-v3.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        sgl_attn_model m;
        load(files[i], 1, &m);
        assert_true(model_mask_count(m.full_attention_mask) >= 1);
        load(files[i], 2, &m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_ours_and_hf_agree),
        cmocka_unit_test(test_deepseek_mla_and_dsa),
        cmocka_unit_test(test_encoder_decoder),
        cmocka_unit_test(test_window_softcap_sinks),
        cmocka_unit_test(test_qwen3_next_gdn),
        cmocka_unit_test(test_mamba2_families),
        cmocka_unit_test(test_short_conv_kda_lightning_sparse),
        cmocka_unit_test(test_unknown_hybrids_become_custom),
        cmocka_unit_test(test_refusals_name_file_and_field),
        cmocka_unit_test(test_dual_chunk),
        cmocka_unit_test(test_all_examples_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
