/* test_policy_fallback.c - selection that is never silent (docs/selection.md):
 * an automatic CPU choice past a usable GPU plugin warns or, asked, refuses;
 * a refusal's headline names the asked platform's reason; an alias two
 * plugins declare answers to the first; a claim that decided a choice warns.
 * Fake candidates under the shipped conf (fallback cpu_ref). */
#include <stdio.h>
#include <string.h>

#include "pt.h"

static const char *warning_with(const pt_world *w, const char *text) {
    for (size_t i = 0; i < w->sel.n_warnings; i++)
        if (strstr(w->sel.warnings[i], text)) return w->sel.warnings[i];
    return NULL;
}

/* cpu_ref and a CUDA plugin that serves head dims up to 128 only. */
static pt_world *gpu_world(void) {
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "cpu_ref", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA, 1);
    pt_fake *g = pt_full(w, "small_gpu", SGL_ATTN_PLATFORM_CUDA, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 50);
    g->caps.head_dim_qk_max = g->caps.head_dim_v_max = 128;
    return w;
}

static void test_cpu_fallback_warns_with_the_gpu_refusal(void **state) {
    (void)state;
    pt_world *w = gpu_world();
    sgl_attn_model m;
    pt_llama(&m);
    m.head_dim_qk = m.head_dim_v = 256; /* small_gpu refuses */
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    assert_string_equal(w->sel.label, "cpu_ref");
    assert_int_equal(w->sel.cpu_fallback, 1);
    const char *wr = warning_with(w, "fell back to the CPU (cpu_ref)");
    assert_non_null(wr);
    assert_non_null(strstr(wr, "small_gpu device 0: head dims qk 256 / v 256 not served"));
    assert_non_null(strstr(wr, "[head-dims]"));

    /* asked not to fall back: refused, with the same reason, and nothing taken */
    sgl_attn_select_request r = {.struct_size = sizeof r, .no_cpu_fallback = 1};
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "a CPU fallback (cpu_ref) was refused (no_cpu_fallback)"));
    assert_non_null(strstr(w->err, "small_gpu device 0: head dims qk 256"));
    const sgl_attn_verdict *v = pt_verdict(w, "cpu_ref", "full");
    assert_non_null(v);
    assert_int_equal(v->taken, 0);
    assert_string_equal(v->rule, "cpu-fallback");

    /* a model the GPU serves: taken, no warning; the flag changes nothing */
    pt_llama(&m);
    assert_int_equal(pt_select(w, &m, &r), SGL_ATTN_OK);
    assert_string_equal(w->sel.label, "small_gpu");
    assert_int_equal(w->sel.cpu_fallback, 0);
    assert_null(warning_with(w, "fell back"));
    pt_world_free(w);
}

static void test_no_fallback_warning_when_asked_or_no_gpu(void **state) {
    (void)state;
    pt_world *w = gpu_world();
    sgl_attn_model m;
    pt_llama(&m);
    m.head_dim_qk = m.head_dim_v = 256;
    /* named: no fallback */
    assert_int_equal(pt_select_name(w, &m, "cpu_ref", 0), SGL_ATTN_OK);
    assert_int_equal(w->sel.cpu_fallback, 0);
    /* the CPU platform asked for: no fallback */
    assert_int_equal(pt_select_name(w, &m, NULL, SGL_ATTN_PLATFORM_CPU), SGL_ATTN_OK);
    assert_int_equal(w->sel.cpu_fallback, 0);
    assert_null(warning_with(w, "fell back"));
    /* the GPU plugin has no device here: nothing usable to fall back past */
    pt_unavailable(&w->f[1], "no device");
    assert_int_equal(pt_select(w, &m, NULL), SGL_ATTN_OK);
    assert_int_equal(w->sel.cpu_fallback, 0);
    assert_null(warning_with(w, "fell back"));
    pt_world_free(w);
}

static void test_headline_names_the_asked_platform(void **state) {
    (void)state;
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "cpu_ref", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 1);
    pt_fake *cuda = pt_full(w, "cuda_x", SGL_ATTN_PLATFORM_CUDA, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 50);
    pt_unavailable(cuda, "no CUDA driver (cudaErrorNoDevice)");
    /* a file that failed to load: its platform is unknown, its refusal is deeper than "platform" */
    pt_fake *broken = pt_full(w, "broken", SGL_ATTN_PLATFORM_HIP, SGL_ATTN_KIND_MHA, 5);
    broken->info.name[0] = 0;
    broken->info.status = SGL_ATTN_PLUGIN_LOAD_ERROR;
    snprintf(broken->info.reason, sizeof broken->info.reason, "missing dependency libamdhip64.so.6");
    sgl_attn_model m;
    pt_llama(&m);
    assert_int_equal(pt_select_name(w, &m, NULL, SGL_ATTN_PLATFORM_CUDA), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "no CUDA driver (cudaErrorNoDevice) [cuda_x: unavailable]"));
    assert_null(strstr(w->err, "libamdhip64"));
    /* no plugin of the asked platform at all: said so, naming the files of unknown platform */
    assert_int_equal(pt_select_name(w, &m, NULL, SGL_ATTN_PLATFORM_NPU), SGL_ATTN_E_UNSUPPORTED);
    assert_non_null(strstr(w->err, "no npu plugin is loaded here"));
    assert_non_null(strstr(w->err, "broken.so"));
    pt_world_free(w);
}

static void test_an_alias_declared_twice_answers_to_the_first(void **state) {
    (void)state;
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "cpu_ref", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 1);
    pt_fake *one = pt_alias(pt_full(w, "dup_one", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 0),
                            "my_fast");
    pt_fake *two = pt_alias(pt_full(w, "dup_two", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 9),
                            "my_fast");
    pt_cand(w, two)->alias_lost = 1u; /* what claims.c computes: dup_one declared it first */
    (void)one;
    sgl_attn_model m;
    pt_llama(&m);
    assert_int_equal(pt_select_name(w, &m, "my_fast", 0), SGL_ATTN_OK);
    assert_string_equal(w->sel.label, "dup_one"); /* though dup_two scores higher */
    const sgl_attn_verdict *v = pt_verdict(w, "dup_two", "full");
    assert_non_null(v);
    assert_string_equal(v->rule, "alias-claimed");
    assert_non_null(strstr(v->message, "declares 'my_fast', but an earlier plugin declared it first"));
    pt_world_free(w);
}

static void test_a_claim_that_decides_warns(void **state) {
    (void)state;
    pt_world *w = pt_world_new(NULL);
    pt_full(w, "cpu_ref", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 1);
    /* a CPU plugin claiming fa3, which the conf maps to cuda_attn and cuda_mla */
    pt_alias(pt_full(w, "claimer", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 0), "fa3");
    sgl_attn_model m;
    pt_llama(&m);
    assert_int_equal(pt_select_name(w, &m, "fa3", 0), SGL_ATTN_OK);
    assert_string_equal(w->sel.label, "claimer");
    assert_non_null(warning_with(w, "'fa3' was asked for; claimer serves it by its own claim"));
    /* a plugin named like the conf's alias is taken by its name, with a warning */
    pt_world_free(w);
    w = pt_world_new(NULL);
    pt_full(w, "fa3", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA, 0);
    assert_int_equal(pt_select_name(w, &m, "fa3", 0), SGL_ATTN_OK);
    assert_string_equal(w->sel.label, "fa3");
    assert_non_null(warning_with(w, "'fa3' is the name of plugin /fake/fa3.so and a sglang backend name"));
    pt_world_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_fallback_warns_with_the_gpu_refusal),
        cmocka_unit_test(test_no_fallback_warning_when_asked_or_no_gpu),
        cmocka_unit_test(test_headline_names_the_asked_platform),
        cmocka_unit_test(test_an_alias_declared_twice_answers_to_the_first),
        cmocka_unit_test(test_a_claim_that_decides_warns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
