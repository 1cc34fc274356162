/* test_policy_conf.c - the conf file: the shipped one covers the registry;
 * malformed ones are refused with file:line:col and what was expected. */
#include "pt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(const char *text, char *err, size_t n) {
    conf *c = NULL;
    int rc = conf_parse(text, strlen(text), "t.json", &c, err, n);
    if (rc == SGL_ATTN_OK) assert_non_null(c);
    else assert_null(c);
    conf_free(c);
    return rc;
}

/* The error is exactly `want`. */
static void refused(const char *text, const char *want) {
    char err[1024] = "";
    assert_int_equal(parse(text, err, sizeof err), SGL_ATTN_E_INVALID);
    if (strcmp(err, want)) fprintf(stderr, "got:  %s\nwant: %s\n", err, want);
    assert_string_equal(err, want);
}

static void test_shipped_conf_covers_registry(void **state) {
    (void)state;
    static const char *const seed[] = {"flashinfer", "trtllm_mla", "tokenspeed_mla", "cutedsl_mla", "aiter",
                                       "wave", "ascend", "dsa", "nsa", "dsv4", "triton", "torch_native",
                                       "flex_attention", "flashmla", "fa3", "fa4", "cutlass_mla", "trtllm_mha",
                                       "intel_amx", "dual_chunk_flash_attn", "intel_xpu", NULL};
    pt_world *w = pt_world_new(NULL);
    for (size_t i = 0; seed[i]; i++) {
        const conf_alias *a = conf_find_alias(w->rules, seed[i]);
        if (!a) fprintf(stderr, "missing alias %s\n", seed[i]);
        assert_non_null(a);
        int plats = 0;
        for (int p = 0; p < SGL_ATTN_PLATFORM_COUNT_; p++) plats += a->has_platform[p];
        /* Each maps to plugins, or is deprecated, or says why nothing serves it. */
        assert_true(a->n_plugins || plats || a->deprecated_for || a->message);
    }
    assert_string_equal(conf_find_alias(w->rules, "nsa")->deprecated_for, "dsa");
    const conf_alias *d = conf_find_alias(w->rules, "dsv4");
    assert_string_equal(d->platform_plugins[SGL_ATTN_PLATFORM_NPU][0], "npu_ascend");
    assert_string_equal(d->platform_plugins[SGL_ATTN_PLATFORM_HIP][0], "hip_attn");
    assert_non_null(conf_hybrid_rules(w->rules, SGL_ATTN_HYBRID_GDN, NULL));
    assert_int_equal(conf_hybrid_rules(w->rules, SGL_ATTN_HYBRID_GDN, NULL)->n_allow, 2);
    assert_string_equal(w->rules->fallback[0], "cpu_ref");
    assert_false(conf_allow_unsafe_paths(w->rules));
    pt_world_free(w);
}

static void test_syntax_errors(void **state) {
    (void)state;
    refused("{\n  \"sglattn_conf\": 1,\n}\n",
            "t.json:3:1: expected a key in double quotes after ',', found '}' (trailing commas are not allowed)");
    refused("{\"sglattn_conf\" 1}", "t.json:1:17: expected ':' after the key, found '1'");
    refused("{\"sglattn_conf\": 1\n \"aliases\": {}}",
            "t.json:2:2: expected ',' or '}' in the object opened at 1:1, found '\"'");
    refused("{\"a\": [1, 2,]}", "t.json:1:13: expected a value after ',', found ']' (trailing commas are not allowed)");
    refused("{\"a\": \"abc", "t.json:1:11: unterminated string (opened at 1:7): expected '\"'");
    refused("{\"a\": tru}", "t.json:1:7: expected 'true'");
    refused("// hi\n{}", "t.json:1:1: expected a value (object, array, string, number, true, false or null), found "
                         "'/' (comments are not allowed in JSON)");
    refused("  \n ", "t.json:1:1: empty file: expected a JSON value");
    refused("{} {}", "t.json:1:4: expected end of file after the top-level value");
    refused("{\"a\": 01}", "t.json:1:7: a number cannot start with 0 followed by digits");
    refused("{\"a\": \"\\q\"}", "t.json:1:8: invalid escape '\\q' (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                                "\\uXXXX)");
    refused("{\"a\":\n\n   [1,\n    2", "t.json:4:6: expected ',' or ']' in the array opened at 3:4, found end of file");
}

static void test_unknown_keys_at_every_depth(void **state) {
    (void)state;
    refused("{\"sglattn_conf\": 1, \"alias\": {}}",
            "t.json:1:21: unknown key \"alias\" at the top level (expected one of: sglattn_conf, aliases, priority, "
            "disabled, defaults, fallback, hybrid, model_rules, allow_unsafe_paths, plugin_options, validation_layer)");
    refused("{\"sglattn_conf\": 1,\n \"aliases\": {\n  \"fa3\": {\"plugins\": [\"cuda_attn\"],\n"
            "    \"alliases\": []}}}",
            "t.json:4:5: unknown key \"alliases\" in \"aliases.fa3\" (expected one of: plugins, requires, "
            "deprecated_for, message, platforms)");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"plugins\": [\"a\"], \"requires\": [{\"id\": \"i\", "
            "\"message\": \"m\", \"mlaa\": true}]}}}",
            "t.json:1:98: unknown key \"mlaa\" in \"aliases.x.requires[0]\" (expected one of: id, platforms, any_of, "
            "message, mla, encoder_decoder, dsa, dual_chunk, sinks, diff_head_dims, arch_min, arch_max, q_heads_in)");
    refused("{\"sglattn_conf\": 1, \"hybrid\": {\"gdn\": {\"refuse\": [], \"allows\": []}}}",
            "t.json:1:54: unknown key \"allows\" in \"hybrid.gdn\" (expected one of: refuse, allow)");
    refused("{\"sglattn_conf\": 1, \"hybrid\": {\"gdn\": {\"allow\": [{\"id\": \"b\", \"message\": \"m\", \"backends\": [], "
            "\"any_of\": [{\"arch\": \"10\"}]}]}}}",
            "t.json:1:106: unknown key \"arch\" in \"hybrid.gdn.allow[0].any_of[0]\" (expected one of: mla, "
            "encoder_decoder, dsa, dual_chunk, sinks, diff_head_dims, arch_min, arch_max, q_heads_in)");
    refused("{\"sglattn_conf\": 1, \"hybrid\": {\"gdm\": {}}}",
            "t.json:1:32: unknown key \"gdm\" in \"hybrid\" (expected one of: gdn, mamba2, short_conv, kda, lightning, "
            "minimax_sparse, custom:<kind>)");
    refused("{\"sglattn_conf\": 1, \"defaults\": {\"gpu\": []}}",
            "t.json:1:34: unknown key \"gpu\" in \"defaults\" (expected one of: cpu, cuda, hip, xpu, npu)");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"platforms\": {\"rocm\": [\"a\"]}}}}",
            "t.json:1:53: unknown key \"rocm\" in \"aliases.x.platforms\" (expected one of: cpu, cuda, hip, xpu, npu)");
}

static void test_wrong_types(void **state) {
    (void)state;
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"fa3\": {\"plugins\": \"cuda_attn\"}}}",
            "t.json:1:52: \"aliases.fa3.plugins\": expected an array of plugin or backend names, found a string");
    refused("{\"sglattn_conf\": 1, \"allow_unsafe_paths\": \"yes\"}",
            "t.json:1:43: \"allow_unsafe_paths\": expected true or false, found a string");
    refused("{\"sglattn_conf\": 1, \"priority\": {\"cpu_ref\": 1.5}}",
            "t.json:1:45: \"priority.cpu_ref\": expected an integer in [-1000000, 1000000], found 1.5");
    refused("{\"sglattn_conf\": 2}", "t.json:1:18: \"sglattn_conf\": expected an integer in [1, 1], found 2");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"plugins\": [\"Cuda Attn\"]}}}",
            "t.json:1:51: \"aliases.x.plugins[0]\": expected a name of 1 to 63 characters [a-z0-9_], found a string "
            "\"Cuda Attn\"");
    refused("{\"sglattn_conf\": 1, \"plugin_options\": {\"cpu_ref\": {\"threads\": [4]}}}",
            "t.json:1:63: \"plugin_options.cpu_ref.threads\": expected a string, number or boolean, found an array");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"plugins\": [\"a\"], \"requires\": [{\"id\": \"r\", "
            "\"message\": \"m\", \"arch_min\": \"sm90\"}]}}}",
            "t.json:1:110: \"aliases.x.requires[0].arch_min\": expected an architecture as a string \"MAJOR\" or "
            "\"MAJOR.MINOR\" (e.g. \"9\" or \"8.0\"), found a string \"sm90\"");
    refused("[]", "t.json:1:1: \"(top level)\": expected an object at the top level, found an array");
}

static void test_semantic_errors(void **state) {
    (void)state;
    refused("{\"aliases\": {}}",
            "t.json:1:1: missing key \"sglattn_conf\" (expected \"sglattn_conf\": 1, the format version)");
    refused("{\"sglattn_conf\": 1, \"sglattn_conf\": 1}",
            "t.json:1:21: duplicate key \"sglattn_conf\" (first at 1:2): refused, since Python's json keeps the last "
            "value and cJSON the first");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"deprecated_for\": \"y\", \"message\": \"m\"}}}",
            "t.json:1:57: \"aliases.x.deprecated_for\": \"y\" is not an alias (expected an alias defined here that is "
            "not itself deprecated)");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {}}}",
            "t.json:1:33: alias \"x\": expected \"plugins\", \"platforms\" or \"deprecated_for\" (an alias that nothing "
            "serves here needs a \"message\" saying why)");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"plugins\": [\"a\"], \"requires\": [{\"id\": \"r\"}]}}}",
            "t.json:1:70: \"aliases.x.requires[0]\": missing key \"message\"");
    refused("{\"sglattn_conf\": 1, \"model_rules\": [{\"id\": \"d\", \"dsa\": true, \"served_by\": \"dsa\", "
            "\"message\": \"m\"}]}",
            "t.json:1:75: \"model_rules[0].served_by\": \"dsa\" is not an alias defined in \"aliases\"");
    refused("{\"sglattn_conf\": 1, \"aliases\": {\"x\": {\"plugins\": [\"a\"], \"requires\": [{\"id\": \"r\", "
            "\"message\": \"m\", \"arch_min\": \"9\", \"arch_max\": \"8\"}]}}}",
            "t.json:1:98: arch_min is above arch_max: the range is empty");
}

static void test_queries(void **state) {
    (void)state;
    const char *text = "{\"sglattn_conf\": 1, \"disabled\": [\"cuda_*\", \"npu_ascend\"], \"priority\": {\"cpu_ref\": 7},"
                       " \"allow_unsafe_paths\": true, \"plugin_options\": {\"cpu_ref\": {\"threads\": 4, \"fast\": "
                       "true, \"ratio\": 0.25, \"mode\": \"exact\"}}}";
    conf *c = NULL;
    char err[512];
    assert_int_equal(conf_parse(text, strlen(text), "q.json", &c, err, sizeof err), SGL_ATTN_OK);
    const char *pat = NULL;
    assert_true(conf_is_disabled(c, "cuda_mla", &pat));
    assert_string_equal(pat, "cuda_*");
    assert_true(conf_is_disabled(c, "npu_ascend", NULL));
    assert_false(conf_is_disabled(c, "cpu_ref", &pat));
    assert_null(pat);
    int32_t s = 0;
    assert_true(conf_priority(c, "cpu_ref", &s));
    assert_int_equal(s, 7);
    assert_false(conf_priority(c, "cuda_attn", &s));
    assert_true(conf_allow_unsafe_paths(c));
    assert_string_equal(conf_plugin_option(c, "cpu_ref", "threads"), "4");
    assert_string_equal(conf_plugin_option(c, "cpu_ref", "fast"), "true");
    assert_string_equal(conf_plugin_option(c, "cpu_ref", "ratio"), "0.25");
    assert_string_equal(conf_plugin_option(c, "cpu_ref", "mode"), "exact");
    assert_null(conf_plugin_option(c, "cpu_ref", "nope"));
    assert_null(conf_plugin_option(c, "gdn", "threads"));
    conf_free(c);
    /* No conf: defaults. */
    assert_false(conf_is_disabled(NULL, "x", NULL));
    assert_null(conf_plugin_option(NULL, "x", "y"));
    assert_false(conf_allow_unsafe_paths(NULL));
}

static void test_load_paths(void **state) {
    (void)state;
    conf *c = NULL;
    char used[4096], err[1024];
    /* Explicit path. */
    assert_int_equal(conf_load(pt_src("conf/sglattn.json"), &c, used, sizeof used, err, sizeof err), SGL_ATTN_OK);
    assert_non_null(c);
    assert_string_equal(used, pt_src("conf/sglattn.json"));
    conf_free(c);
    /* SGL_ATTN_CONF naming a missing file is an error that names it. */
    setenv("SGL_ATTN_CONF", "/nonexistent/sglattn.json", 1);
    assert_int_equal(conf_load(NULL, &c, used, sizeof used, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    assert_null(c);
    assert_non_null(strstr(err, "SGL_ATTN_CONF=/nonexistent/sglattn.json"));
    assert_non_null(strstr(err, "No such file"));
    /* A malformed file: file:line:col. */
    char path[] = "/tmp/sglattn_conf_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\n  \"sglattn_conf\": 1,\n  \"disabled\": [\"a\",]\n}\n", f);
    fclose(f);
    setenv("SGL_ATTN_CONF", path, 1);
    assert_int_equal(conf_load(NULL, &c, used, sizeof used, err, sizeof err), SGL_ATTN_E_INVALID);
    char want[256];
    snprintf(want, sizeof want, "%s:3:20: expected a value after ','", path);
    assert_non_null(strstr(err, want));
    unsetenv("SGL_ATTN_CONF");
    unlink(path);
}

/* Random damage (truncation, byte flips) to real files: never a crash,
 * always OK or an error that starts with the file name and a position. */
static void test_damaged_files_never_crash(void **state) {
    (void)state;
    static const char *const files[] = {"conf/sglattn.json", "examples/models/qwen3-next-80b-a3b.json",
                                        "examples/models/kimi-linear-48b-a3b.json"};
    uint32_t seed = 0x9e3779b9u;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len;
        char *orig = pt_read(files[f], &len);
        char *buf = malloc(len + 1);
        assert_non_null(buf);
        for (int round = 0; round < 400; round++) {
            memcpy(buf, orig, len + 1);
            seed = seed * 1664525u + 1013904223u;
            size_t n = len;
            if (round % 2) n = seed % len; /* truncated */
            for (int k = 0; k < 1 + (round % 4); k++) {
                seed = seed * 1664525u + 1013904223u;
                buf[seed % len] = (char)(" {}[],:\"0a-.\\\n"[(seed >> 8) % 14]);
            }
            char err[2048] = "";
            int rc;
            if (f == 0) {
                conf *c = NULL;
                rc = conf_parse(buf, n, "d.json", &c, err, sizeof err);
                conf_free(c);
                if (rc) assert_memory_equal(err, "d.json:", 7);
            } else {
                sgl_attn_model m;
                rc = sgl_attn_model_from_json(buf, n, "d.json", 1, &m, err, sizeof err);
                if (rc) assert_memory_equal(err, "d.json", 6);
                else assert_true(m.num_layers >= 1);
            }
            assert_true(rc == SGL_ATTN_OK || rc == SGL_ATTN_E_INVALID);
        }
        free(buf);
        free(orig);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_conf_covers_registry),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_unknown_keys_at_every_depth),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_semantic_errors),
        cmocka_unit_test(test_queries),
        cmocka_unit_test(test_load_paths),
        cmocka_unit_test(test_damaged_files_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
