/* test_hybrid_families.c - the linear-attention case families of the harness
 * (the rows of attnctl/harness/linear_kinds.c) run their whole matrix against the shipped
 * wrappers over cpu_ref, through the real host and the harness core, as
 * `attnctl check --plugin <kind>` does; a family aimed at the wrong wrapper
 * must not pass; a bench case prepares and runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

static int setup(void **st) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.ignore_env_path = 1;
    sgl_attn_host *h = NULL;
    char err[512] = "";
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) {
        fprintf(stderr, "host: %s\n", err);
        return -1;
    }
    *st = h;
    return 0;
}

static int teardown(void **st) {
    sgl_attn_host_close(*st);
    return 0;
}

static const harness_family *family(const char *mode) {
    const harness_family *f = harness_family_for_mode(mode);
    assert_non_null(f);
    assert_string_equal(f->name, mode);
    return f;
}

static void run_matrix(sgl_attn_host *h, const char *plugin) {
    const harness_family *f = family(plugin);
    htarget t;
    char err[512];
    int rc = htarget_open(&t, h, plugin, 0, err, sizeof err);
    if (rc) print_error("%s: %s\n", plugin, err);
    assert_int_equal(rc, 0);
    for (const char *const *m = f->matrix; *m; m++) {
        hcase c;
        assert_int_equal(hcase_parse(*m, &c, err, sizeof err), 0);
        hresult r;
        hresult_init(&r);
        f->check(f, &t, &c, hrng_case_seed(0x5eed, *m), &r);
        print_message("  %-70s %-5s nmse %.2e (limit %.0e)%s%s\n", *m, hverdict_name(r.verdict), r.nmse,
                      r.threshold, r.verdict ? "  " : "", r.verdict ? r.message : "");
        assert_int_equal(r.verdict, HV_PASS);
    }
    htarget_close(&t);
}

static void test_gdn(void **st) { run_matrix(*st, "gdn"); }
static void test_kda(void **st) { run_matrix(*st, "kda"); }
static void test_mamba2(void **st) { run_matrix(*st, "mamba2"); }
static void test_short_conv(void **st) { run_matrix(*st, "short_conv"); }
static void test_lightning(void **st) { run_matrix(*st, "lightning"); }
static void test_minimax_sparse(void **st) { run_matrix(*st, "minimax_sparse"); }

/* the gdn family on the kda wrapper: refused by the host's selection with
 * its reason (not a silent pass) */
static void test_wrong_wrapper(void **st) {
    htarget t;
    char err[512];
    assert_int_equal(htarget_open(&t, *st, "kda", 0, err, sizeof err), 0);
    hcase c;
    assert_int_equal(hcase_parse("gdn:b=2,q=5", &c, err, sizeof err), 0);
    hresult r;
    hresult_init(&r);
    const harness_family *gdn = family("gdn"), *kda = family("kda");
    gdn->check(gdn, &t, &c, 1, &r);
    /* the host's selection refuses the pairing, and says why */
    assert_int_equal(r.verdict, HV_UNSUPPORTED);
    if (!strstr(r.message, "cannot use kda: serves kda; the model's linear layers are gdn"))
        fail_msg("message: %s", r.message);
    assert_false(harness_family_applies(gdn, &t));
    assert_true(harness_family_applies(kda, &t));
    htarget_close(&t);
}

static void test_bench_prepare(void **st) {
    htarget t;
    char err[512];
    assert_int_equal(htarget_open(&t, *st, "gdn", 0, err, sizeof err), 0);
    hcase c;
    assert_int_equal(hcase_parse("gdn:b=4,fwd=decode,prefix=3,hk=2,hv=4,dk=64,dv=64", &c, err, sizeof err), 0);
    hresult r;
    hresult_init(&r);
    hbench b;
    memset(&b, 0, sizeof b);
    const harness_family *gdn = family("gdn");
    int rc = gdn->bench_prepare(gdn, &t, &c, 7, &b, &r);
    if (rc) print_error("%s\n", r.message);
    assert_int_equal(rc, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(b.call(b.state, err, sizeof err), 0);
    /* 4 requests x 4 heads x 64 x 64 fp32, read and written */
    assert_true(b.bytes >= 4.0 * 4 * 64 * 64 * 4 * 2);
    assert_true(b.flops > 0);
    b.release(b.state);
    htarget_close(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gdn),        cmocka_unit_test(test_kda),
        cmocka_unit_test(test_mamba2),     cmocka_unit_test(test_short_conv),
        cmocka_unit_test(test_lightning),  cmocka_unit_test(test_minimax_sparse),
        cmocka_unit_test(test_wrong_wrapper), cmocka_unit_test(test_bench_prepare),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
