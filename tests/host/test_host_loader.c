/* test_host_loader.c - every fake variant gets its precise status, the host
 * goes on, and good plugins stay usable: shadowing, one file reached twice,
 * sorted scan, embedded plugins last, conf-disabled, plugin options. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th.h"

#define VARIANTS "good", "abi_major", "newer_minor", "no_entry", "unavailable", "wrapper", "shadow", "other"

static char *path_of(const char *const *variants, size_t n) {
    static char buf[8192];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        char d[PATH_MAX];
        th_fake(variants[i], NULL, d, sizeof d);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? ":" : "", d);
    }
    return buf;
}

static void expect(const sgl_attn_host *h, const char *variant, const char *file, int status,
                   const char *reason_part) {
    char p[PATH_MAX];
    th_fake(variant, file, p, sizeof p);
    long i = th_by_path(h, p);
    if (i < 0) fail_msg("%s was not listed", p);
    sgl_attn_plugin_info in = th_info(h, i);
    if (in.status != status)
        fail_msg("%s: status %s, expected %s (reason: %s)", p, sgl_attn_plugin_status_name(in.status),
                 sgl_attn_plugin_status_name(status), in.reason);
    if (reason_part) th_contains(in.reason, reason_part);
    else assert_string_equal(in.reason, "");
    assert_string_equal(in.source, "options");
}

static void test_every_variant(void **state) {
    (void)state;
    const char *v[] = {VARIANTS};
    th_log log;
    sgl_attn_host *h = th_open(path_of(v, 8), 0, NULL, &log);
    expect(h, "good", "fake_good.so", SGL_ATTN_PLUGIN_USABLE, NULL);
    expect(h, "abi_major", "fake_abi2.so", SGL_ATTN_PLUGIN_ABI_MISMATCH,
           "plugin ABI 2.0, host ABI 1.2: another major");
    expect(h, "newer_minor", "fake_minor3.so", SGL_ATTN_PLUGIN_ABI_MISMATCH,
           "plugin ABI 1.3, host ABI 1.2: newer minor");
    expect(h, "no_entry", "fake_no_entry.so", SGL_ATTN_PLUGIN_LOAD_ERROR,
           "no entry point sgl_attn_plugin_entry");
    expect(h, "unavailable", "fake_unavail.so", SGL_ATTN_PLUGIN_UNAVAILABLE,
           "fake runtime: no device found (error 100)");
    expect(h, "wrapper", "fake_gdn.so", SGL_ATTN_PLUGIN_USABLE, NULL);
    char good[PATH_MAX];
    th_fake("good", "fake_good.so", good, sizeof good);
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "shadowed by %s", good);
    expect(h, "shadow", "fake_good.so", SGL_ATTN_PLUGIN_SHADOWED, want);
    expect(h, "other", "fake_other.so", SGL_ATTN_PLUGIN_USABLE, NULL);

    /* Descriptor fields came through. */
    sgl_attn_plugin_info g = th_info(h, th_by_path(h, good));
    assert_string_equal(g.name, "fake_good");
    assert_string_equal(g.version, "1.0");
    assert_string_equal(g.license, "Apache-2.0");
    assert_int_equal(g.platform, SGL_ATTN_PLATFORM_CPU);
    assert_int_equal(g.role, SGL_ATTN_ROLE_FULL);
    assert_int_equal(g.n_aliases, 1);
    assert_string_equal(g.aliases[0], "fake_good_alias");
    assert_int_equal(g.n_devices, 2);
    char wp[PATH_MAX];
    sgl_attn_plugin_info w = th_info(h, th_by_path(h, th_fake("wrapper", "fake_gdn.so", wp, sizeof wp)));
    assert_int_equal(w.role, SGL_ATTN_ROLE_HYBRID);
    assert_int_equal(w.hybrid_kind, SGL_ATTN_HYBRID_GDN);
    assert_int_equal(w.n_model_types, 1);
    assert_string_equal(w.model_types[0], "qwen3_next");
    /* The shadowed copy's own descriptor is still reported. */
    char sp[PATH_MAX];
    sgl_attn_plugin_info s = th_info(h, th_by_path(h, th_fake("shadow", "fake_good.so", sp, sizeof sp)));
    assert_string_equal(s.version, "9.9-shadow");

    /* Device 0 usable, device 1 unavailable with the probe's reason. */
    long gi = sgl_attn_host_find_plugin(h, "fake_good");
    assert_int_equal(gi, th_by_path(h, good));
    sgl_attn_caps c0 = {.struct_size = sizeof c0}, c1 = {.struct_size = sizeof c1};
    assert_int_equal(sgl_attn_host_plugin_caps(h, (size_t)gi, 0, &c0), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_host_plugin_caps(h, (size_t)gi, 1, &c1), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_host_plugin_caps(h, (size_t)gi, 2, &c1), SGL_ATTN_E_NOT_FOUND);
    assert_int_equal(c0.available, 1);
    assert_string_equal(c0.device_name, "fake cpu");
    assert_int_equal(c0.head_dim_qk_max, 256);
    assert_int_equal(c1.available, 0);
    assert_string_equal(c1.reason, "fake device 1 is busy");

    /* find_plugin: loaded plugins only, never the failures. */
    assert_true(sgl_attn_host_find_plugin(h, "fake_unavail") >= 0);
    assert_int_equal(sgl_attn_host_find_plugin(h, "fake_abi2"), -1);
    assert_int_equal(sgl_attn_host_find_plugin(h, "nonexistent"), -1);
    assert_null(sgl_attn_host_device_ops(h, (size_t)gi));

    /* A plugin's log line reached the host's log through host_api. */
    th_contains(log.text, "fake_good: entry called (42)");

    /* The good plugin still works after all the bad ones: create + forward. */
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    sgl_attn_backend *b = NULL;
    const char *names[] = {"fake_good"};
    char err[512];
    assert_int_equal(sgl_attn_create_stack(h, names, 1, 0, &m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    float q[5], out[5];
    for (int i = 0; i < 5; i++) q[i] = (float)(rand() % 1000) / 7.0f + 0.5f;
    int64_t shape[1] = {5};
    DLTensor tq = {.data = q, .ndim = 1, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    DLTensor to = {.data = out, .ndim = 1, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    sgl_attn_forward_args a = {.struct_size = sizeof a, .q = &tq, .out = &to};
    assert_int_equal(sgl_attn_forward_decode(b, &a), SGL_ATTN_OK);
    for (int i = 0; i < 5; i++) assert_float_equal(out[i], 2.0f * q[i], 0.0f);
    sgl_attn_destroy(b);
    sgl_attn_host_close(h);
}

/* Embedded plugins come after every directory, with source "embedded". */
static void test_embedded_last(void **state) {
    (void)state;
    const char *v[] = {"good"};
    sgl_attn_host *h = th_open(path_of(v, 1), 0, NULL, NULL);
    size_t n = sgl_attn_host_plugin_count(h);
    assert_true(n >= 1);
    assert_string_equal(th_info(h, 0).name, "fake_good");
    for (size_t i = 1; i < n; i++) {
        sgl_attn_plugin_info in = th_info(h, (long)i);
        assert_string_equal(in.source, "embedded");
        th_contains(in.path, "libsglattn.so");
    }
    print_message("embedded plugins: %zu\n", n - 1);
    sgl_attn_host_close(h);
}

/* One file through a symlink, and a directory listed twice: loaded once. */
static void test_same_file_once(void **state) {
    (void)state;
    char *tmp = th_tmpdir();
    char good[PATH_MAX], gdir[PATH_MAX], link[PATH_MAX + 32], path[3 * PATH_MAX];
    th_fake("good", "fake_good.so", good, sizeof good);
    th_fake("good", NULL, gdir, sizeof gdir);
    snprintf(link, sizeof link, "%s/zz_link.so", tmp);
    assert_int_equal(symlink(good, link), 0);
    snprintf(path, sizeof path, "%s:%s:%s", gdir, tmp, gdir);
    sgl_attn_host *h = th_open(path, 0, NULL, NULL);
    size_t named = 0;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = th_info(h, (long)i);
        if (!strcmp(in.name, "fake_good")) named++;
        assert_int_not_equal(in.status, SGL_ATTN_PLUGIN_SHADOWED); /* never loaded twice */
    }
    assert_int_equal(named, 1);
    assert_int_equal(th_by_path(h, link), -1);
    assert_true(th_by_path(h, good) >= 0);
    sgl_attn_host_close(h);
    th_rmrf(tmp);
    free(tmp);
}

/* Files in a directory are taken in strcmp order, whatever readdir says;
 * non-.so names are ignored; junk named .so gets a precise load error. */
static void test_sorted_and_junk(void **state) {
    (void)state;
    char *tmp = th_tmpdir();
    char good[PATH_MAX], other[PATH_MAX], p[PATH_MAX + 32];
    th_fake("good", "fake_good.so", good, sizeof good);
    th_fake("other", "fake_other.so", other, sizeof other);
    snprintf(p, sizeof p, "%s/b_second.so", tmp);
    th_copy(good, p);
    snprintf(p, sizeof p, "%s/a_first.so", tmp);
    th_copy(other, p);
    snprintf(p, sizeof p, "%s/README.txt", tmp);
    th_write(p, "hello", 5);
    snprintf(p, sizeof p, "%s/notes.so.txt", tmp);
    th_write(p, "hello", 5);
    snprintf(p, sizeof p, "%s/c_text.so", tmp);
    th_write(p, "#!/bin/sh\necho hi\n", 18);
    snprintf(p, sizeof p, "%s/d_empty.so", tmp);
    th_write(p, "", 0);
    sgl_attn_host *h = th_open(tmp, 0, NULL, NULL);
    assert_string_equal(th_info(h, 0).name, "fake_other");
    assert_string_equal(th_info(h, 1).name, "fake_good");
    sgl_attn_plugin_info c = th_info(h, 2), d = th_info(h, 3);
    assert_int_equal(c.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(c.reason, "not a shared object: a text file (starts \"#!/bin/sh echo hi");
    assert_int_equal(d.status, SGL_ATTN_PLUGIN_LOAD_ERROR);
    th_contains(d.reason, "empty file (0 bytes)");
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = th_info(h, (long)i);
        assert_null(strstr(in.path, ".txt"));
    }
    sgl_attn_host_close(h);
    th_rmrf(tmp);
    free(tmp);
}

static void write_conf(const char *path, const char *body) { th_write(path, body, strlen(body)); }

/* A conf glob that matches a file's name refuses it before dlopen (no code
 * of it runs, so its descriptor name stays unknown); one that matches only
 * the descriptor name refuses it after negotiation, with the name.  Plugin
 * options reach the plugin through host_api->get_option. */
static void test_conf_disabled_and_options(void **state) {
    (void)state;
    char *tmp = th_tmpdir();
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof conf, "%s/c.json", tmp);
    write_conf(conf, "{\"sglattn_conf\": 1, \"disabled\": [\"fake_oth*\", \"fake_renamed\"],\n"
                     " \"plugin_options\": {\"fake_good\": {\"greeting\": \"hello-42\"}}}\n");
    const char *v[] = {"good", "other", "renamed"};
    for (int isolate = 0; isolate < 2; isolate++) {
        sgl_attn_host *h = th_open(path_of(v, 3), isolate, conf, NULL);
        assert_string_equal(sgl_attn_host_conf_path(h), conf);
        char other[PATH_MAX];
        th_fake("other", "fake_other.so", other, sizeof other);
        sgl_attn_plugin_info o = th_info(h, th_by_path(h, other));
        assert_int_equal(o.status, SGL_ATTN_PLUGIN_DISABLED);
        th_contains(o.reason, "disabled by conf pattern \"fake_oth*\"");
        th_contains(o.reason, conf);
        th_contains(o.reason, "the file name matches, so it is not loaded");
        assert_string_equal(o.name, ""); /* never loaded */
        assert_int_equal(sgl_attn_host_find_plugin(h, "fake_other"), -1);
        sgl_attn_plugin_info r = th_info(h, th_by_name(h, "fake_renamed"));
        assert_int_equal(r.status, SGL_ATTN_PLUGIN_DISABLED);
        th_contains(r.reason, "disabled by conf pattern \"fake_renamed\"");
        assert_int_equal(sgl_attn_host_find_plugin(h, "fake_renamed"), -1);
        char good[PATH_MAX];
        th_fake("good", "fake_good.so", good, sizeof good);
        const char *(*events)(void) = (const char *(*)(void))th_hook(good, "fake_events");
        th_contains(events(), "option greeting=hello-42");
        sgl_attn_host_close(h);
    }
    th_rmrf(tmp);
    free(tmp);
}

/* A malformed conf refuses the open with the conf's own message. */
static void test_bad_conf_refuses_open(void **state) {
    (void)state;
    char *tmp = th_tmpdir();
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof conf, "%s/bad.json", tmp);
    write_conf(conf, "{\"sglattn_conf\": 1,\n \"no_such_key\": 3}\n");
    sgl_attn_host_options o = {.struct_size = sizeof o, .conf_path = conf, .no_default_dir = 1,
                               .ignore_env_path = 1};
    sgl_attn_host *h = (sgl_attn_host *)1;
    char err[512] = "";
    assert_int_not_equal(sgl_attn_host_open(&o, &h, err, sizeof err), SGL_ATTN_OK);
    assert_null(h);
    th_contains(err, "no_such_key");
    th_rmrf(tmp);
    free(tmp);
}

/* An output struct from an older caller is filled only up to its size. */
static void test_info_struct_size(void **state) {
    (void)state;
    const char *v[] = {"good"};
    sgl_attn_host *h = th_open(path_of(v, 1), 0, NULL, NULL);
    unsigned char buf[sizeof(sgl_attn_plugin_info) + 16];
    memset(buf, 0xA5, sizeof buf);
    sgl_attn_plugin_info *in = (sgl_attn_plugin_info *)buf;
    in->struct_size = 64;
    assert_int_equal(sgl_attn_host_plugin_info(h, 0, in), SGL_ATTN_OK);
    assert_int_equal(in->struct_size, 64);
    for (size_t i = 64; i < sizeof buf; i++) assert_int_equal(buf[i], 0xA5);
    assert_int_equal(sgl_attn_host_plugin_info(h, 999, in), SGL_ATTN_E_NOT_FOUND);
    assert_int_equal(sgl_attn_host_plugin_info(NULL, 0, in), SGL_ATTN_E_INVALID);
    sgl_attn_host_close(h);
}

int main(void) {
    srand((unsigned)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_variant),
        cmocka_unit_test(test_embedded_last),
        cmocka_unit_test(test_same_file_once),
        cmocka_unit_test(test_sorted_and_junk),
        cmocka_unit_test(test_conf_disabled_and_options),
        cmocka_unit_test(test_bad_conf_refuses_open),
        cmocka_unit_test(test_info_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
