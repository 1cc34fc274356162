/* test_call_verdict.c - hcalls_judge (attnctl/harness/call_verdict.c), the
 * verdict of a linear case's calls: a lone token whose output is small and
 * rounded by a few percent passes beside calls of normal size, while the same
 * call wrong by the order of itself, or a normal call above the limit, fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"

enum { N_BIG = 64 * 128, N_ONE = 128 }; /* elements: 64 tokens and 1 token of 128 values */

/* a call of n elements whose outputs have RMS `rms` and errors of RMS `err` */
static hcall_err call(const char *what, size_t n, double rms, double err) {
    return (hcall_err){what, err * err * (double)n, rms * rms * (double)n, err, n, 0};
}

static const double LIMIT = 1e-4; /* bf16 (metrics.c, hthreshold) */

static void test_small_call_rounding_passes(void **state) {
    (void)state;
    /* the one-token prefix: RMS 1e-3 against 2e-2 for the extend, 5% relative error (NMSE 2.5e-3
     * alone); the extend's own NMSE 2e-5 */
    hcall_err c[] = {call("prefix", N_ONE, 1e-3, 5e-5), call("extend", N_BIG, 2e-2, 2e-2 * 4.5e-3)};
    double score = -1;
    int w = hcalls_judge(c, 2, &score);
    assert_true(w >= 0);
    assert_true(score <= LIMIT);
    assert_true(c[0].err2 / c[0].ref2 > LIMIT); /* the call alone would have failed */
}

static void test_small_call_wrong_fails(void **state) {
    (void)state;
    /* the same call off by the order of its output (zeros written, say): RMS 5% of the case's */
    hcall_err c[] = {call("prefix", N_ONE, 1e-3, 1e-3), call("extend", N_BIG, 2e-2, 2e-2 * 4.5e-3)};
    double score = -1;
    assert_int_equal(hcalls_judge(c, 2, &score), 0);
    assert_true(score > LIMIT);
}

static void test_normal_call_above_limit_fails(void **state) {
    (void)state;
    /* the extend at NMSE 2e-4, the small call exact: judged by the extend's own NMSE */
    hcall_err c[] = {call("prefix", N_ONE, 1e-3, 0), call("extend", N_BIG, 2e-2, 2e-2 * 1.4142e-2)};
    double score = -1;
    assert_int_equal(hcalls_judge(c, 2, &score), 1);
    assert_true(score > 1.9e-4 && score < 2.1e-4);
}

static void test_large_call_keeps_its_own_nmse(void **state) {
    (void)state;
    /* a decode whose outputs are 10x the case's mean: its own NMSE, not a smaller one */
    hcall_err c[] = {call("verify", N_BIG, 1e-2, 1e-2 * 5e-3), call("decode", N_ONE * 4, 1e-1, 1e-1 * 1.2e-2)};
    double score = -1;
    assert_int_equal(hcalls_judge(c, 2, &score), 1);
    assert_true(score > 1.4e-4 && score < 1.5e-4);
}

static void test_one_call_is_its_nmse(void **state) {
    (void)state;
    hcall_err c[] = {call("extend", N_BIG, 3e-2, 3e-2 * 3e-3)};
    double score = -1;
    assert_int_equal(hcalls_judge(c, 1, &score), 0);
    assert_true(score > 8.9e-6 && score < 9.1e-6);
    assert_int_equal(hcalls_judge(c, 0, &score), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_call_rounding_passes),
        cmocka_unit_test(test_small_call_wrong_fails),
        cmocka_unit_test(test_normal_call_above_limit_fails),
        cmocka_unit_test(test_large_call_keeps_its_own_nmse),
        cmocka_unit_test(test_one_call_is_its_nmse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
