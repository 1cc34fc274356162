/* test_policy_select.c - every rule of sglang's attention registry, as the
 * pure selection applies it to fake candidates with the shipped conf. */
#include "pt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K_ALL (SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA)
#define CUDA SGL_ATTN_PLATFORM_CUDA
#define CPU SGL_ATTN_PLATFORM_CPU

/* A CUDA box of one arch: cuda_attn (MHA + cross), cuda_mla, cpu_ref. */
static pt_world *cuda_box(int major, int minor) {
    pt_world *w = pt_world_new(NULL);
    pt_arch(pt_full(w, "cuda_attn", CUDA, K_ALL | SGL_ATTN_KIND_CROSS, 100), major, minor);
    pt_arch(pt_full(w, "cuda_mla", CUDA, SGL_ATTN_KIND_MLA, 100), major, minor);
    pt_full(w, "cpu_ref", CPU, K_ALL | SGL_ATTN_KIND_MLA | SGL_ATTN_KIND_CROSS, 1);
    w->f[2].caps.n_head_dims = 0;
    w->f[2].caps.head_dim_qk_max = w->f[2].caps.head_dim_v_max = 1024;
    return w;
}

static void expect_stack(const pt_world *w, const char *label) {
    if (strcmp(w->sel.label, label)) fprintf(stderr, "label %s, expected %s; err: %s\n", w->sel.label, label, w->err);
    assert_string_equal(w->sel.label, label);
}

static void test_mla_only_messages(void **state) {
    (void)state;
    static const char *const names[] = {"trtllm_mla", "tokenspeed_mla", "cutedsl_mla"};
    sgl_attn_model llama, ds;
    pt_llama(&llama);
    pt_deepseek(&ds);
    for (int i = 0; i < 3; i++) {
        pt_world *w = cuda_box(10, 0);
        char want[128];
        snprintf(want, sizeof want, "%s backend can only be used with MLA models.", names[i]);
        assert_int_equal(pt_select_name(w, &llama, names[i], 0), SGL_ATTN_E_UNSUPPORTED);
        assert_non_null(strstr(w->err, want));
        const sgl_attn_verdict *v = pt_verdict(w, "cuda_mla", "full");
        assert_non_null(v);
        assert_string_equal(v->rule, "mla-only");
        assert_string_equal(v->message, want);
        assert_non_null(strstr(w->err, "Alternatives here: cuda_attn, cpu_ref"));
        /* An MLA model takes the MLA plugin under the same name. */
        assert_int_equal(pt_select_name(w, &ds, names[i], 0), SGL_ATTN_OK);
        expect_stack(w, "cuda_mla");
        pt_world_free(w);
    }
}

static void test_trtllm_mha_non_mla(void **state) {
    (void)state;
    pt_world *w = cuda_box(10, 0);
    sgl_attn_model ds, llama;
    pt_deepseek(&ds);
    pt_llama(&llama);
    assert_int_equal(pt_select_name(w, &ds, "trtllm_mha", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "trtllm_mha backend can only be used with non-MLA models."));
    assert_int_equal(pt_select_name(w, &llama, "trtllm_mha", 0), SGL_ATTN_OK);
    expect_stack(w, "cuda_attn");
    pt_world_free(w);
}

static void test_triton_encoder_decoder(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_encdec(&m);
    pt_world *w = cuda_box(9, 0);
    assert_int_equal(pt_select_name(w, &m, "triton", 0), SGL_ATTN_E_UNSUPPORTED);
    const sgl_attn_verdict *v = pt_verdict(w, "cuda_attn", "full");
    assert_string_equal(v->rule, "no-encoder-decoder");
    /* The seed's text, with the serving backend computed: flashinfer serves here. */
    assert_string_equal(v->message, "Cross attention is not supported in the triton attention backend. "
                                    "Please use `--attention-backend flashinfer`.");
    pt_world_free(w);
    /* No CUDA plugin with cross attention: the message names what serves. */
    w = cuda_box(9, 0);
    w->f[0].caps.attn_kinds &= ~SGL_ATTN_KIND_CROSS;
    assert_int_equal(pt_select_name(w, &m, "triton", 0), SGL_ATTN_E_UNSUPPORTED);
    v = pt_verdict(w, "cuda_attn", "full");
    assert_non_null(strstr(v->message, "Please use `--attention-backend torch_native`."));
    assert_int_equal(pt_select_name(w, &m, "flashinfer", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cuda_attn", "full")->rule, "cross");
    pt_world_free(w);
}

static void test_fa3_arch_rule(void **state) {
    (void)state;
    sgl_attn_model llama, ds;
    pt_llama(&llama);
    pt_deepseek(&ds);
    const char *fa3_msg = "FlashAttention v3 Backend requires SM>=80 and SM<=90.";
    struct {
        int major, minor, mla, ok;
        const char *stack;
    } rows[] = {
        {8, 0, 0, 1, "cuda_attn"}, {8, 6, 0, 1, "cuda_attn"}, {8, 0, 1, 0, NULL},      {9, 0, 1, 1, "cuda_mla"},
        {9, 0, 0, 1, "cuda_attn"}, {10, 0, 0, 0, NULL},        {10, 0, 1, 0, NULL},     {7, 5, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pt_world *w = cuda_box(rows[i].major, rows[i].minor);
        int rc = pt_select_name(w, rows[i].mla ? &ds : &llama, "fa3", 0);
        if (rows[i].ok) {
            assert_int_equal(rc, SGL_ATTN_OK);
            expect_stack(w, rows[i].stack);
        } else {
            assert_int_equal(rc, SGL_ATTN_E_UNSUPPORTED);
            assert_non_null(strstr(w->err, fa3_msg));
            assert_non_null(strstr(w->err, "Please use `--attention-backend flashinfer`"));
            assert_string_equal(pt_verdict(w, rows[i].mla ? "cuda_mla" : "cuda_attn", "full")->rule, "fa3-arch");
        }
        pt_world_free(w);
    }
}

static void test_dsv4_per_platform(void **state) {
    (void)state;
    sgl_attn_model ds;
    pt_deepseek(&ds);
    pt_world *w = pt_world_new(NULL);
    pt_arch(pt_full(w, "cuda_mla", CUDA, SGL_ATTN_KIND_MLA, 100), 9, 0);
    pt_full(w, "hip_attn", SGL_ATTN_PLATFORM_HIP, K_ALL | SGL_ATTN_KIND_MLA, 90);
    w->f[1].caps.n_head_dims = 0;
    w->f[1].caps.head_dim_qk_max = w->f[1].caps.head_dim_v_max = 1024;
    pt_full(w, "npu_ascend", SGL_ATTN_PLATFORM_NPU, K_ALL | SGL_ATTN_KIND_MLA, 80);
    w->f[2].caps.n_head_dims = 0;
    w->f[2].caps.head_dim_qk_max = w->f[2].caps.head_dim_v_max = 1024;
    struct {
        int platform;
        const char *stack;
    } rows[] = {{CUDA, "cuda_mla"}, {SGL_ATTN_PLATFORM_HIP, "hip_attn"}, {SGL_ATTN_PLATFORM_NPU, "npu_ascend"}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pt_select_name(w, &ds, "dsv4", rows[i].platform), SGL_ATTN_OK);
        expect_stack(w, rows[i].stack);
    }
    /* hip_attn is not what dsv4 means on CUDA, and the reverse. */
    assert_string_equal(pt_verdict(w, "cuda_mla", "full")->rule, "platform");
    assert_int_equal(pt_select_name(w, &ds, "aiter", SGL_ATTN_PLATFORM_NPU), SGL_ATTN_E_UNSUPPORTED);
    pt_world_free(w);
}

/* DeepSeek-V4's real config reads as MLA (one latent row of 512, rope
 * inside): dsv4 takes it past its MLA rule, and cuda_mla, which runs only
 * 576/512, refuses it for its head dims, not for being "not MLA". */
static void test_dsv4_real_config(void **state) {
    (void)state;
    sgl_attn_model v4;
    char err[512];
    const char *path = pt_corpus("deepseek-v4-flash.json");
    if (!path) skip();
    assert_int_equal(sgl_attn_model_from_file(path, 1, &v4, err, sizeof err), SGL_ATTN_OK);
    pt_world *w = pt_world_new(NULL);
    pt_arch(pt_full(w, "cuda_mla", CUDA, SGL_ATTN_KIND_MLA, 100), 9, 0);
    assert_int_equal(pt_select_name(w, &v4, "dsv4", CUDA), SGL_ATTN_E_UNSUPPORTED);
    const sgl_attn_verdict *v = pt_verdict(w, "cuda_mla", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "head-dims");
    assert_non_null(strstr(v->message, "head dims qk 512 / v 512 not served (serves 576/512)"));
    assert_null(strstr(w->err, "the model is not MLA"));
    pt_world_free(w);
    /* An MLA plugin that serves a 512/512 latent row is chosen. */
    w = pt_world_new(NULL);
    pt_fake *f = pt_arch(pt_full(w, "cuda_mla", CUDA, SGL_ATTN_KIND_MLA, 100), 9, 0);
    f->caps.head_dims[0].qk = 512;
    assert_int_equal(pt_select_name(w, &v4, "dsv4", CUDA), SGL_ATTN_OK);
    expect_stack(w, "cuda_mla");
    pt_world_free(w);
}

/* A float32 config is served as sglang's --dtype auto serves it, and the
 * selection says so. */
static void test_fp32_config_says_served_dtype(void **state) {
    (void)state;
    static const char fp32[] = "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 24, \"num_attention_heads\": 14, "
                               "\"num_key_value_heads\": 2, \"hidden_size\": 896, \"torch_dtype\": \"float32\"}";
    sgl_attn_model m;
    char err[512];
    assert_int_equal(sgl_attn_model_from_json(fp32, strlen(fp32), "config.json", 1, &m, err, sizeof err), SGL_ATTN_OK);
    pt_world *w = cuda_box(9, 0);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    assert_int_equal(w->sel.n_warnings, 1);
    assert_string_equal(w->sel.warnings[0], "the model file's dtype is f32; it is served in f16, as sglang's --dtype "
                                            "auto serves a float32 checkpoint (float16, bfloat16 for Gemma)");
    pt_world_free(w);
    /* A config that names bfloat16 gets no such note, nor does a model built by hand. */
    static const char bf16[] = "{\"model_type\": \"qwen3\", \"num_hidden_layers\": 36, \"num_attention_heads\": 32, "
                               "\"num_key_value_heads\": 8, \"head_dim\": 128, \"torch_dtype\": \"bfloat16\"}";
    assert_int_equal(sgl_attn_model_from_json(bf16, strlen(bf16), "config.json", 1, &m, err, sizeof err), SGL_ATTN_OK);
    w = cuda_box(9, 0);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    assert_int_equal(w->sel.n_warnings, 0);
    pt_llama(&m);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    assert_int_equal(w->sel.n_warnings, 0);
    pt_world_free(w);
}

static void test_nsa_deprecated_and_dsa_models(void **state) {
    (void)state;
    const char *warn = "attention-backend='nsa' is deprecated; use 'dsa' instead. "
                       "The alias will be removed in a future release.";
    sgl_attn_model ds32;
    pt_deepseek(&ds32);
    ds32.index_topk = 2048;
    pt_world *w = cuda_box(9, 0);
    /* The conf's dsa plugins (cuda_mla on CUDA, cpu_ref on the CPU) whose
     * caps do not declare sparse MLA are refused by the caps rule; the other
     * GPU plugin by the model rule, naming why. */
    assert_int_equal(pt_select(w, &ds32, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cuda_attn", "full")->rule, "dsa");
    assert_string_equal(pt_verdict(w, "cuda_mla", "full")->rule, "dsa-sparse-mla");
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "dsa-sparse-mla");
    assert_int_equal(pt_select_name(w, &ds32, "nsa", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_int_equal(w->sel.n_warnings, 1);
    assert_string_equal(w->sel.warnings[0], warn);
    pt_world_free(w);
    /* A plugin that declares "dsa" serves it, also asked for as nsa, once its
     * caps declare sparse MLA too. */
    w = cuda_box(9, 0);
    pt_fake *fd = pt_alias(pt_arch(pt_full(w, "flash_dsa", CUDA, SGL_ATTN_KIND_MLA, 50), 9, 0), "dsa");
    assert_int_equal(pt_select_name(w, &ds32, "nsa", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "flash_dsa", "full")->rule, "dsa-sparse-mla");
    pt_world_free(w);
    w = cuda_box(9, 0);
    fd = pt_alias(pt_arch(pt_full(w, "flash_dsa", CUDA, SGL_ATTN_KIND_MLA, 50), 9, 0), "dsa");
    fd->caps.dsa_ops = SGL_ATTN_DSA_SPARSE_MLA;
    assert_int_equal(pt_select_name(w, &ds32, "nsa", 0), SGL_ATTN_OK);
    expect_stack(w, "flash_dsa");
    assert_string_equal(w->sel.warnings[0], warn);
    assert_int_equal(pt_select(w, &ds32, NULL), SGL_ATTN_OK);
    expect_stack(w, "flash_dsa");
    assert_int_equal(w->sel.n_warnings, 0);
    pt_world_free(w);
    /* The H200: cuda_mla (the conf's dsa plugin on CUDA) with sparse MLA in
     * its caps is chosen automatically for DeepSeek-V3.2, by dsa and by nsa
     * (with the warning). */
    w = cuda_box(9, 0);
    w->f[1].caps.dsa_ops = SGL_ATTN_DSA_SPARSE_MLA;
    assert_int_equal(pt_select(w, &ds32, NULL), SGL_ATTN_OK);
    expect_stack(w, "cuda_mla");
    assert_int_equal(w->sel.n_warnings, 0);
    assert_int_equal(pt_select_name(w, &ds32, "dsa", 0), SGL_ATTN_OK);
    expect_stack(w, "cuda_mla");
    assert_int_equal(pt_select_name(w, &ds32, "nsa", 0), SGL_ATTN_OK);
    expect_stack(w, "cuda_mla");
    assert_string_equal(w->sel.warnings[0], warn);
    pt_world_free(w);
    /* The CPU: cpu_ref (the conf's dsa plugin there) with sparse MLA in its
     * caps is chosen automatically, and by dsa; a dense model still works. */
    w = pt_world_new(NULL);
    pt_fake *cr = pt_full(w, "cpu_ref", CPU, K_ALL | SGL_ATTN_KIND_MLA, 1);
    cr->caps.n_head_dims = 0;
    cr->caps.head_dim_qk_max = cr->caps.head_dim_v_max = 1024;
    cr->caps.dsa_ops = SGL_ATTN_DSA_SPARSE_MLA | SGL_ATTN_DSA_INDEXER;
    assert_int_equal(pt_select(w, &ds32, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    assert_int_equal(pt_select_name(w, &ds32, "dsa", 0), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    assert_int_equal(w->sel.n_warnings, 0);
    pt_world_free(w);
}

static int sorted_list(const char *list) {
    char prev[64] = "", cur[64];
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        snprintf(cur, sizeof cur, "%.*s", (int)n, p);
        if (prev[0] && strcmp(prev, cur) >= 0) return 0;
        strcpy(prev, cur);
        p += n;
        while (*p == ',' || *p == ' ') p++;
    }
    return 1;
}

static void test_unknown_name_lists_valid(void **state) {
    (void)state;
    pt_world *w = cuda_box(9, 0);
    sgl_attn_model m;
    pt_llama(&m);
    assert_int_equal(pt_select_name(w, &m, "flash_attn_9", 0), SGL_ATTN_E_NOT_FOUND);
    assert_non_null(strstr(w->err, "Invalid attention backend: flash_attn_9. Valid names: "));
    const char *list = strstr(w->err, "Valid names: ") + strlen("Valid names: ");
    assert_true(sorted_list(list));
    for (const char *n = "aiter cpu_ref cuda_attn cuda_mla dual_chunk_flash_attn fa3 nsa torch_native"; *n;) {
        char one[32];
        size_t k = strcspn(n, " ");
        snprintf(one, sizeof one, "%.*s", (int)k, n);
        assert_non_null(strstr(list, one));
        n += k + (n[k] == ' ');
    }
    pt_world_free(w);
}

static void test_split_prefill_decode(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_llama(&m);
    pt_world *w = cuda_box(9, 0);
    pt_fake *pf = pt_arch(pt_full(w, "cuda_prefill", CUDA, K_ALL, 50), 9, 0);
    pf->caps.features &= ~SGL_ATTN_FEAT_DECODE;
    sgl_attn_select_request r = {.struct_size = sizeof r, .prefill_backend = "cuda_prefill", .decode_backend = "fa3"};
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
    assert_int_equal(w->sel.split, 1);
    expect_stack(w, "prefill=cuda_prefill decode=cuda_attn");
    assert_string_equal(w->sel.prefill_stack[0], "cuda_prefill");
    assert_string_equal(w->sel.stack[0], "cuda_attn");
    /* A prefill-only plugin is refused for decode, and both must pass. */
    r.prefill_backend = "fa3";
    r.decode_backend = "cuda_prefill";
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cuda_prefill", "decode")->rule, "decode");
    assert_non_null(strstr(w->err, "cannot use cuda_prefill for decode"));
    /* Same plugin for both: not a split. */
    r.prefill_backend = "fa3";
    r.decode_backend = "flashinfer";
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
    assert_int_equal(w->sel.split, 0);
    expect_stack(w, "cuda_attn");
    /* Different devices cannot share a KV pool. */
    r.prefill_backend = "cpu_ref";
    r.decode_backend = "cuda_attn";
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "different devices"));
    pt_world_free(w);
}

static void test_auto_score_and_fallback(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_llama(&m);
    pt_world *w = cuda_box(8, 6);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cuda_attn");
    const sgl_attn_verdict *v = pt_verdict(w, "cuda_attn", "full");
    assert_true(v->taken);
    assert_non_null(strstr(v->message, "chosen automatically on cuda"));
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "ranked-lower");
    assert_false(pt_verdict(w, "cpu_ref", "full")->taken);
    /* No GPU: the probe's reason shows, and cpu_ref serves. */
    pt_unavailable(&w->f[0], "CUDA driver version is insufficient for CUDA runtime version");
    pt_unavailable(&w->f[1], "CUDA driver version is insufficient for CUDA runtime version");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    v = pt_verdict(w, "cuda_attn", "full");
    assert_string_equal(v->rule, "unavailable");
    assert_string_equal(v->message, "CUDA driver version is insufficient for CUDA runtime version");
    /* A score <= 0 is never automatic, but answers to its name; the
     * fallback is taken whatever its score. */
    w->f[2].caps.score = 0;
    pt_full(w, "cpu_zero", CPU, K_ALL, 0);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    assert_string_equal(pt_verdict(w, "cpu_zero", "full")->rule, "score");
    assert_int_equal(pt_select_name(w, &m, "cpu_zero", 0), SGL_ATTN_OK);
    expect_stack(w, "cpu_zero");
    pt_world_free(w);
}

static void test_platform_defaults(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_llama(&m);
    /* Two CUDA plugins with one score: the platform default decides. */
    for (int hopper = 0; hopper < 2; hopper++) {
        pt_world *w = pt_world_new(NULL);
        pt_fake *gen = pt_arch(pt_full(w, "gen_cuda", CUDA, K_ALL, 70), hopper ? 9 : 8, hopper ? 0 : 6);
        pt_fake *fa3 = pt_arch(pt_full(w, "my_fa3", CUDA, K_ALL, 70), hopper ? 9 : 8, hopper ? 0 : 6);
        pt_alias(fa3, "fa3");
        pt_alias(gen, "flashinfer");
        assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
        expect_stack(w, hopper ? "my_fa3" : "gen_cuda");
        assert_non_null(strstr(pt_verdict(w, w->sel.stack[0], "full")->message,
                               hopper ? "cuda default hopper prefers fa3" : "cuda default no-sinks prefers flashinfer"));
        /* With sinks, SM 8.x prefers triton: neither declares it, the index breaks the tie. */
        m.has_sinks = !hopper;
        assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
        expect_stack(w, hopper ? "my_fa3" : "gen_cuda");
        m.has_sinks = 0;
        pt_world_free(w);
    }
    /* CPU: intel_amx then torch_native, both cpu_ref. */
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "cpu_other", CPU, K_ALL, 5);
    pt_full(w, "cpu_ref", CPU, K_ALL, 5);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    assert_non_null(strstr(pt_verdict(w, "cpu_ref", "full")->message, "cpu default cpu prefers intel_amx"));
    pt_world_free(w);
}

static void test_conf_priority_and_disabled(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_llama(&m);
    pt_world *w = pt_world_new("{\"sglattn_conf\": 1, \"priority\": {\"cpu_ref\": 500, \"cuda_mla\": -1}}");
    pt_arch(pt_full(w, "cuda_attn", CUDA, K_ALL, 100), 9, 0);
    pt_full(w, "cpu_ref", CPU, K_ALL, 1);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    assert_int_equal(pt_verdict(w, "cpu_ref", "full")->score, 500);
    assert_non_null(strstr(pt_verdict(w, "cpu_ref", "full")->message, "conf priority 500"));
    pt_world_free(w);

    w = pt_world_new("{\"sglattn_conf\": 1, \"disabled\": [\"cuda_*\"]}");
    pt_arch(pt_full(w, "cuda_attn", CUDA, K_ALL, 100), 9, 0);
    pt_full(w, "cpu_ref", CPU, K_ALL, 1);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    const sgl_attn_verdict *v = pt_verdict(w, "cuda_attn", "full");
    assert_string_equal(v->rule, "disabled");
    assert_non_null(strstr(v->message, "\"cuda_*\""));
    assert_int_equal(pt_select_name(w, &m, "cuda_attn", 0), SGL_ATTN_E_UNSUPPORTED);
    pt_world_free(w);
}

static pt_world *hybrid_box(int major) {
    pt_world *w = cuda_box(major, 0);
    pt_arch(pt_wrapper(w, "gdn_cuda", CUDA, SGL_ATTN_HYBRID_GDN), major, 0);
    pt_wrapper(w, "gdn", CPU, SGL_ATTN_HYBRID_GDN);
    pt_wrapper(w, "mamba2", CPU, SGL_ATTN_HYBRID_MAMBA2);
    return w;
}

static void test_hybrid_gdn(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_qwen3_next(&m);
    pt_world *w = hybrid_box(9);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/cuda_attn");
    int32_t ids[64];
    sgl_attn_selection *s = &w->sel;
    size_t n = 0;
    for (int i = 0; i < s->model.num_layers; i++)
        if (sgl_attn_model_layer_is_full(&s->model, i)) ids[n++] = i;
    assert_int_equal(n, 12);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[11], 47);
    assert_string_equal(pt_verdict(w, "mamba2", "wrapper")->rule, "hybrid-kind");
    assert_string_equal(pt_verdict(w, "gdn", "wrapper")->rule, "wrapper-platform");
    /* Draft worker: full attention on layer 0 only. */
    sgl_attn_select_request r = {.struct_size = sizeof r, .is_draft = 1};
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
    assert_int_equal(w->sel.model.full_attention_mask[0], 1);
    for (int i = 1; i < SGL_ATTN_MAX_LAYERS / 64; i++) assert_int_equal(w->sel.model.full_attention_mask[i], 0);
    /* No CUDA wrapper: the CPU pair is chosen, the CUDA inner says why not. */
    pt_unavailable(&w->f[3], "no CUDA device");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "gdn/cpu_ref");
    assert_string_equal(pt_verdict(w, "cuda_attn", "full")->rule, "hybrid-no-wrapper");
    /* Validation outermost. */
    r.is_draft = 0;
    r.validate = 1;
    pt_layer(w, "validate");
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
    expect_stack(w, "validate/gdn/cpu_ref");
    pt_world_free(w);
}

static void test_hybrid_gdn_mla_refused(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_qwen3_next(&m);
    m.is_mla = 1;
    m.num_kv_heads = 1;
    m.head_dim_qk = 576;
    m.head_dim_v = 512;
    pt_world *w = hybrid_box(9);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "hybrid_gdn can only be used with non-MLA models."));
    assert_string_equal(pt_verdict(w, "cuda_mla", "full")->rule, "gdn-mla");
    pt_world_free(w);
}

static void test_hybrid_blackwell_allow_list(void **state) {
    (void)state;
    const char *msg = "triton, trtllm_mha, fa4, or flashinfer backend are the only supported backends on Blackwell "
                      "GPUs for hybrid GDN models, use --attention-backend to specify the backend.";
    sgl_attn_model m;
    pt_qwen3_next(&m);
    pt_world *w = hybrid_box(10);
    pt_arch(pt_full(w, "xformers_cuda", CUDA, K_ALL, 500), 10, 0);
    /* Auto: the high-score plugin outside the list is refused, cuda_attn serves. */
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/cuda_attn");
    const sgl_attn_verdict *v = pt_verdict(w, "xformers_cuda", "full");
    assert_string_equal(v->rule, "gdn-blackwell");
    assert_string_equal(v->message, msg);
    assert_int_equal(pt_select_name(w, &m, "xformers_cuda", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, msg));
    assert_int_equal(pt_select_name(w, &m, "trtllm_mha", 0), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/cuda_attn");
    /* The same plugin on Hopper is not limited (asked for: automatically
     * the Hopper default, fa3, ranks before a higher score). */
    pt_world_free(w);
    w = hybrid_box(9);
    pt_arch(pt_full(w, "xformers_cuda", CUDA, K_ALL, 500), 9, 0);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/cuda_attn");
    assert_int_equal(pt_select_name(w, &m, "xformers_cuda", 0), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/xformers_cuda");
    pt_world_free(w);
}

static void test_hybrid_npu_rules(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_qwen3_next(&m);
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "npu_other", SGL_ATTN_PLATFORM_NPU, K_ALL, 90);
    pt_full(w, "npu_ascend", SGL_ATTN_PLATFORM_NPU, K_ALL, 80);
    pt_wrapper(w, "gdn_npu", SGL_ATTN_PLATFORM_NPU, SGL_ATTN_HYBRID_GDN);
    pt_wrapper(w, "short_conv_npu", SGL_ATTN_PLATFORM_NPU, SGL_ATTN_HYBRID_SHORT_CONV);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "gdn_npu/npu_ascend");
    assert_string_equal(pt_verdict(w, "npu_other", "full")->message,
                        "ascend backend is the only supported backend on NPU for hybrid GDN models, use "
                        "--attention-backend ascend to specify the backend.");
    /* Short-conv models are refused on NPU altogether. */
    m.hybrid_kind = SGL_ATTN_HYBRID_SHORT_CONV;
    m.lin_hidden = 1024;
    m.lin_conv_kernel = 3;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "Short-conv hybrid models (ZAYA1 CCA, LFM2 / LFM2-MoE) are not yet supported on NPU"));
    pt_world_free(w);
}

static void test_unknown_and_custom_hybrid(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_qwen3_next(&m);
    m.hybrid_kind = SGL_ATTN_HYBRID_CUSTOM;
    snprintf(m.hybrid_custom_kind, sizeof m.hybrid_custom_kind, "retention");
    snprintf(m.model_type, sizeof m.model_type, "foo_linear");
    pt_world *w = hybrid_box(9);
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "no wrapper plugin serves"));
    assert_non_null(strstr(w->err, "hybrid_kind = SGL_ATTN_HYBRID_CUSTOM"));
    assert_non_null(strstr(w->err, "custom_kind = \"retention\""));
    assert_non_null(strstr(w->err, "model_types = {\"foo_linear\", NULL}"));
    assert_non_null(strstr(w->err, "register_linear_attn_model"));
    /* A third-party wrapper that lists the model type serves it. */
    pt_fake *cw = pt_wrapper(w, "foo_wrap", CPU, SGL_ATTN_HYBRID_CUSTOM);
    snprintf(cw->info.custom_kind, sizeof cw->info.custom_kind, "other_kind");
    snprintf(cw->info.model_types[cw->info.n_model_types++], sizeof cw->info.model_types[0], "foo_linear");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "foo_wrap/cpu_ref");
    /* ... and one that declares the kind, whatever the model type. */
    snprintf(m.model_type, sizeof m.model_type, "bar");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    snprintf(cw->info.custom_kind, sizeof cw->info.custom_kind, "retention");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "foo_wrap/cpu_ref");
    pt_world_free(w);
}

/* A wrapper named as backend goes on top of an automatic inner it runs
 * beside; naming it anywhere else, or for a model it does not serve, is
 * refused with its own reason. */
static void test_named_wrapper(void **state) {
    (void)state;
    sgl_attn_model m, llama;
    pt_qwen3_next(&m);
    pt_llama(&llama);
    pt_world *w = hybrid_box(9);
    /* the CPU wrapper: cuda_attn ranks first but gdn runs beside cpu_ref only */
    assert_int_equal(pt_select_name(w, &m, "gdn", 0), SGL_ATTN_OK);
    expect_stack(w, "gdn/cpu_ref");
    assert_string_equal(pt_verdict(w, "cuda_attn", "full")->rule, "hybrid-no-wrapper");
    assert_string_equal(pt_verdict(w, "gdn_cuda", "wrapper")->rule, "name");
    assert_string_equal(pt_verdict(w, "gdn", "wrapper")->rule, "asked");
    assert_int_equal(pt_select_name(w, &m, "gdn", CPU), SGL_ATTN_OK);
    expect_stack(w, "gdn/cpu_ref");
    assert_string_equal(pt_verdict(w, "cuda_attn", "full")->rule, "platform");
    assert_int_equal(pt_select_name(w, &m, "gdn_cuda", 0), SGL_ATTN_OK);
    expect_stack(w, "gdn_cuda/cuda_attn");
    /* restricted to the CPU, the CUDA wrapper has no inner: its own reason */
    assert_int_equal(pt_select_name(w, &m, "gdn_cuda", CPU), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "cannot use gdn_cuda: runs on cuda; cpu was asked for [gdn_cuda: platform]"));
    /* a wrapper of another kind */
    assert_int_equal(pt_select_name(w, &m, "mamba2", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "cannot use mamba2: serves mamba2; the model's linear layers are gdn"));
    /* the wrapper refuses the model itself */
    pt_cand(w, &w->f[4])->model_ok = 0;
    snprintf(pt_cand(w, &w->f[4])->model_why, sizeof pt_cand(w, &w->f[4])->model_why, "linear_key_head_dim 7");
    assert_int_equal(pt_select_name(w, &m, "gdn", CPU), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "cannot use gdn: linear_key_head_dim 7 [gdn: plugin-model]"));
    /* a plain model has nothing for a wrapper to do */
    assert_int_equal(pt_select_name(w, &llama, "gdn", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "cannot use gdn: it is a hybrid wrapper, and the model has no linear-attention layers"));
    /* prefill and decode name full-attention plugins */
    sgl_attn_select_request r = {.struct_size = sizeof r, .prefill_backend = "gdn", .decode_backend = "cpu_ref"};
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(w->err, "gdn is a hybrid wrapper plugin: name it as backend"));
    pt_world_free(w);
}

/* A layer named as backend is the outermost plugin over the automatic
 * stack, whatever the conf names as the validation layer. */
static void test_named_layer(void **state) {
    (void)state;
    sgl_attn_model llama, m;
    pt_llama(&llama);
    pt_qwen3_next(&m);
    pt_world *w = hybrid_box(9);
    pt_layer(w, "validate");
    pt_fake *victim = pt_layer(w, "victim");
    assert_int_equal(pt_select_name(w, &llama, "victim", 0), SGL_ATTN_OK);
    expect_stack(w, "victim/cuda_attn");
    assert_string_equal(pt_verdict(w, "validate", "layer")->rule, "name");
    assert_int_equal(pt_verdict(w, "victim", "layer")->taken, 1);
    assert_int_equal(pt_select_name(w, &llama, "victim", CPU), SGL_ATTN_OK);
    expect_stack(w, "victim/cpu_ref");
    assert_int_equal(pt_select_name(w, &m, "victim", CPU), SGL_ATTN_OK);
    expect_stack(w, "victim/gdn/cpu_ref");
    assert_string_equal(pt_verdict(w, "gdn", "wrapper")->rule, "hybrid");
    victim->info.status = SGL_ATTN_PLUGIN_UNAVAILABLE;
    snprintf(victim->info.reason, sizeof victim->info.reason, "no victim today");
    assert_int_equal(pt_select_name(w, &llama, "victim", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "cannot use victim: no victim today"));
    pt_world_free(w);
}

/* Each capability refuses with its own rule. */
static void test_caps_checks(void **state) {
    (void)state;
    struct {
        const char *rule;
        void (*tweak_model)(sgl_attn_model *);
        uint32_t drop_feature;
    } rows[] = {
        {"window", NULL, SGL_ATTN_FEAT_SLIDING_WINDOW},
        {"softcap", NULL, SGL_ATTN_FEAT_SOFTCAP},
        {"sinks", NULL, SGL_ATTN_FEAT_SINKS},
        {"graph", NULL, SGL_ATTN_FEAT_GRAPH_CAPTURE},
        {"spec-decode", NULL, SGL_ATTN_FEAT_SPEC_DECODE},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        pt_world *w = pt_world_new(NULL);
        pt_fake *f = pt_full(w, "cpu_ref", CPU, K_ALL, 1);
        sgl_attn_model m;
        pt_llama(&m);
        m.sliding_window = 4095;
        m.logit_softcap = 50.0f;
        m.has_sinks = 1;
        m.spec_tokens = 4;
        sgl_attn_select_request r = {.struct_size = sizeof r, .cuda_graph = 1};
        assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
        f->caps.features &= ~rows[i].drop_feature;
        assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_E_UNSUPPORTED);
        assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, rows[i].rule);
        pt_world_free(w);
    }
    pt_world *w = pt_world_new(NULL);
    pt_fake *f = pt_full(w, "cpu_ref", CPU, K_ALL, 1);
    sgl_attn_model m;
    pt_llama(&m);
    m.page_size = 16;
    f->caps.n_page_sizes = 2;
    f->caps.page_sizes[0] = 32;
    f->caps.page_sizes[1] = 64;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "page-size");
    assert_non_null(strstr(pt_verdict(w, "cpu_ref", "full")->message, "serves 32, 64"));
    m.page_size = 64;
    m.head_dim_qk = m.head_dim_v = 512;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "head-dims");
    m.head_dim_qk = m.head_dim_v = 128;
    m.dtype = SGL_ATTN_DT_FP8_E4M3;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "dtype");
    m.dtype = SGL_ATTN_DT_BF16;
    m.kv_dtype = SGL_ATTN_DT_FP8_E4M3;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "kv-dtype");
    m.kv_dtype = SGL_ATTN_DT_BF16;
    f->caps.max_gqa_ratio = 2;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "gqa-ratio");
    f->caps.max_gqa_ratio = 0;
    f->caps.arch_major = 8;
    f->caps.arch_min_major = 9;
    f->caps.arch_min_minor = 0;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->rule, "arch-range");
    f->caps.arch_major = -1;
    pt_cand(w, f)->model_ok = 0;
    snprintf(pt_cand(w, f)->model_why, sizeof pt_cand(w, f)->model_why, "rope scaling yarn not served");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_UNSUPPORTED);
    assert_string_equal(pt_verdict(w, "cpu_ref", "full")->message, "rope scaling yarn not served");
    pt_world_free(w);
}

/* Plugins that cannot be used are listed with their status as the reason. */
static void test_unusable_listed(void **state) {
    (void)state;
    sgl_attn_model m;
    pt_llama(&m);
    pt_world *w = cuda_box(9, 0);
    pt_fake *bad = pt_full(w, "", CUDA, K_ALL, 0);
    bad->info.status = SGL_ATTN_PLUGIN_LOAD_ERROR;
    snprintf(bad->info.path, sizeof bad->info.path, "/x/libbroken.so");
    snprintf(bad->info.reason, sizeof bad->info.reason, "missing dependency libcudart.so.13");
    pt_fake *sh = pt_full(w, "cuda_attn", CUDA, K_ALL, 100);
    sh->info.status = SGL_ATTN_PLUGIN_SHADOWED;
    snprintf(sh->info.reason, sizeof sh->info.reason, "an earlier plugin is named cuda_attn");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    expect_stack(w, "cuda_attn");
    const sgl_attn_verdict *v = pt_verdict(w, "libbroken.so", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "load-error");
    assert_string_equal(v->message, "missing dependency libcudart.so.13");
    int shadowed = 0;
    for (size_t i = 0; i < w->sel.n_verdicts; i++) shadowed |= !strcmp(w->sel.verdicts[i].rule, "shadowed");
    assert_true(shadowed);
    /* Every full-role candidate has exactly one verdict; exactly one is taken. */
    int taken = 0;
    for (size_t i = 0; i < w->sel.n_verdicts; i++) taken += w->sel.verdicts[i].taken;
    assert_int_equal(taken, 1);
    assert_int_equal(w->sel.n_verdicts, w->n);
    pt_world_free(w);
}

/* A Qwen2.5-7B-Instruct-1M-shaped model: 28/4 heads of 128, dual chunk. */
static void qwen_1m(sgl_attn_model *m) {
    pt_llama(m);
    m->num_layers = 28;
    m->num_q_heads = 28;
    m->num_kv_heads = 4;
    m->dca_chunk_size = 262144;
    m->dca_local_size = 8192;
    m->dca_original_max_position = 262144;
}

/* sglang's server-args rule: dual chunk models get dual_chunk_flash_attn,
 * asked for or not, and any other name is refused with its message. */
static void test_dual_chunk(void **state) {
    (void)state;
    sgl_attn_model m;
    qwen_1m(&m);
    pt_world *w = cuda_box(9, 0);
    w->f[2].caps.features |= SGL_ATTN_FEAT_DUAL_CHUNK;
    assert_int_equal(pt_select_name(w, &m, "dual_chunk_flash_attn", 0), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    const sgl_attn_verdict *v = pt_verdict(w, "cuda_attn", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "name");
    /* Automatic: only the alias's plugins serve the model. */
    assert_int_equal(pt_select_name(w, &m, NULL, 0), SGL_ATTN_OK);
    expect_stack(w, "cpu_ref");
    v = pt_verdict(w, "cuda_attn", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "dual-chunk");
    /* Another name: sglang's message, on a box that has it ... */
    assert_int_equal(pt_select_name(w, &m, "flashinfer", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "Dual chunk attention is enabled, but attention backend is set to flashinfer. "
                                   "Please set it to 'dual_chunk_flash_attn'."));
    pt_world_free(w);
    /* ... and on one that has not (a CPU box: nothing answers to fa3). */
    w = pt_world_new(NULL);
    pt_full(w, "cpu_ref", CPU, K_ALL, 1)->caps.features |= SGL_ATTN_FEAT_DUAL_CHUNK;
    assert_int_equal(pt_select_name(w, &m, "fa3", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "attention backend is set to fa3. Please set it to 'dual_chunk_flash_attn'."));
    assert_int_equal(pt_select_name(w, &m, "cpu_ref", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "attention backend is set to cpu_ref."));
    pt_world_free(w);
    /* A plugin that does not declare the feature never serves it. */
    w = cuda_box(9, 0);
    assert_int_equal(pt_select_name(w, &m, "dual_chunk_flash_attn", 0), SGL_ATTN_E_UNSUPPORTED);
    v = pt_verdict(w, "cpu_ref", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "dual-chunk");
    /* A model without dual chunk attention is not served by that name. */
    sgl_attn_model plain;
    pt_llama(&plain);
    assert_int_equal(pt_select_name(w, &plain, "dual_chunk_flash_attn", 0), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "dual_chunk_flash_attn serves models whose config has dual_chunk_attention_config"));
    pt_world_free(w);
}

static void test_bad_model_refused(void **state) {
    (void)state;
    pt_world *w = cuda_box(9, 0);
    sgl_attn_model m;
    pt_llama(&m);
    m.num_q_heads = 0;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_INVALID);
    assert_non_null(strstr(w->err, "0 q heads"));
    pt_llama(&m);
    m.num_kv_heads = 7;
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_E_INVALID);
    pt_world_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_only_messages),
        cmocka_unit_test(test_trtllm_mha_non_mla),
        cmocka_unit_test(test_triton_encoder_decoder),
        cmocka_unit_test(test_fa3_arch_rule),
        cmocka_unit_test(test_dsv4_per_platform),
        cmocka_unit_test(test_dsv4_real_config),
        cmocka_unit_test(test_fp32_config_says_served_dtype),
        cmocka_unit_test(test_nsa_deprecated_and_dsa_models),
        cmocka_unit_test(test_unknown_name_lists_valid),
        cmocka_unit_test(test_split_prefill_decode),
        cmocka_unit_test(test_auto_score_and_fallback),
        cmocka_unit_test(test_platform_defaults),
        cmocka_unit_test(test_conf_priority_and_disabled),
        cmocka_unit_test(test_hybrid_gdn),
        cmocka_unit_test(test_hybrid_gdn_mla_refused),
        cmocka_unit_test(test_hybrid_blackwell_allow_list),
        cmocka_unit_test(test_hybrid_npu_rules),
        cmocka_unit_test(test_unknown_and_custom_hybrid),
        cmocka_unit_test(test_named_wrapper),
        cmocka_unit_test(test_named_layer),
        cmocka_unit_test(test_caps_checks),
        cmocka_unit_test(test_unusable_listed),
        cmocka_unit_test(test_dual_chunk),
        cmocka_unit_test(test_bad_model_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
