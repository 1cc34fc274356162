/* test_cpu_ref_lse.c - the LSE output of the paged forwards (ABI 1.2,
 * forward_args.lse): natural log of each row's sum of exp over its scaled,
 * soft-capped logits, sinks excluded, [T, Hq] fp32; on extend (prefix,
 * window, soft-cap, sinks), decode long enough to be split across threads,
 * verify, MLA and the f64 path, against float64 math written here.  The
 * output stays what the fixture's naive reference says.  A bad lse tensor is
 * refused naming the field. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

/* ln sum exp of row (token tok of request i, head h) over the pool as the call left it. */
static double lse_of(const tc_run *r, int i, int pos, int64_t tok, int h) {
    const tc_spec *s = &r->s;
    const int G = s->hq / s->hkv;
    const int64_t krow = (int64_t)s->hkv * s->dqk;
    const int lo = s->window >= 0 && pos - s->window > 0 ? pos - s->window : 0;
    double mx = -INFINITY, sum = 0;
    double *sc = malloc(sizeof(double) * (size_t)(pos + 1));
    for (int p = lo; p <= pos; p++) {
        const int64_t slot = tc_slot(r, i, p);
        double dot = 0;
        for (int d = 0; d < s->dqk; d++)
            dot += tc_load(s->dt, r->q, (size_t)((tok * s->hq + h) * s->dqk + d)) *
                   tc_load(s->kv_dt, r->k_cache, (size_t)(slot * krow + (h / G) * s->dqk + d));
        double x = dot * (double)s->scale;
        if (s->softcap > 0) x = s->softcap * tanh(x / s->softcap);
        sc[p] = x;
        mx = x > mx ? x : mx;
    }
    for (int p = lo; p <= pos; p++) sum += exp(sc[p] - mx);
    free(sc);
    return mx + log(sum);
}

static void run_case(const tc_spec *s, const char *name) {
    tc_run r;
    tc_build(&r, s, 21, 22);
    float *lse = malloc(sizeof(float) * (size_t)(r.T * s->hq) + 8);
    memset(lse, 0xff, sizeof(float) * (size_t)(r.T * s->hq));
    int64_t sh[2] = {r.T, s->hq};
    DLTensor tl = {.data = lse, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sh};
    r.args.lse = &tl;
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_non_null(b);
    int rc = tc_forward(&r, b);
    if (rc) print_message("# %s: %s\n", name, b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_OK);
    double *ref = malloc(sizeof(double) * tc_out_count(&r));
    tc_naive(&r, ref);
    const double e = tc_nmse(&r, ref);
    double worst = 0;
    int64_t tok = 0;
    for (int i = 0; i < s->bs; i++) {
        const int nn = s->mode == SGL_ATTN_MODE_EXTEND ? s->seq[i] - s->prefix[i] : r.s.tpr;
        const int first = s->seq[i] - nn;
        for (int j = 0; j < nn; j++, tok++)
            for (int h = 0; h < s->hq; h++) {
                const double want = lse_of(&r, i, first + j, tok, h), got = lse[tok * s->hq + h];
                const double d = fabs(got - want);
                worst = d > worst || isnan(d) ? d : worst;
            }
    }
    print_message("# %s: out nmse %.3g, lse max err %.3g\n", name, e, worst);
    assert_true(e < (s->dt == SGL_ATTN_DT_BF16 ? 1e-5 : 1e-11));
    assert_true(worst < 2e-5); /* fp32 rounding of values up to ~10 */
    free(ref);
    free(lse);
    b->ops->destroy(b);
    tc_free(&r);
}

static tc_spec base(int mode, uint32_t dt) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode, s.bs = 3, s.hq = 8, s.hkv = 2, s.dqk = 128, s.dv = 128, s.page = 16, s.window = -1;
    s.dt = s.kv_dt = dt, s.save = 1, s.tpr = 1;
    return s;
}

static void test_lse_extend(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_BF16);
    const int seq[] = {70, 33, 120}, pre[] = {30, 0, 100};
    for (int i = 0; i < 3; i++) s.seq[i] = seq[i], s.prefix[i] = pre[i];
    run_case(&s, "extend bf16");
    s.softcap = 20, s.sinks = 1, s.window = 40;
    run_case(&s, "extend bf16, soft-cap, sinks (excluded), window");
    s = base(SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_F64);
    for (int i = 0; i < 3; i++) s.seq[i] = seq[i], s.prefix[i] = pre[i];
    run_case(&s, "extend f64 path");
}

static void test_lse_decode_and_verify(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_F32);
    s.bs = 1, s.seq[0] = 3000; /* long: the decode splits across threads and combines */
    run_case(&s, "decode f32, one long request");
    s = base(SGL_ATTN_MODE_TARGET_VERIFY, SGL_ATTN_DT_BF16);
    s.tpr = 3, s.seq[0] = 40, s.seq[1] = 3, s.seq[2] = 200;
    run_case(&s, "verify bf16");
    s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16);
    s.mla = 1, s.hq = 16, s.dqk = 576, s.dv = 512, s.page = 64, s.scale = 0.07f;
    s.seq[0] = 300, s.seq[1] = 1, s.seq[2] = 700;
    run_case(&s, "decode MLA bf16");
}

static void test_bad_lse(void **state) {
    (void)state;
    tc_spec s = base(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_F32);
    s.seq[0] = 10, s.seq[1] = 20, s.seq[2] = 30;
    tc_run r;
    tc_build(&r, &s, 1, 2);
    float lse[64];
    int64_t sh[3] = {3, 8, 1};
    DLTensor tl = {.data = lse, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = sh};
    r.args.lse = &tl;
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK);
    sh[1] = 4; /* [T, 4] for 8 heads */
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    print_message("# %s\n", b->ops->last_error(b));
    assert_non_null(strstr(b->ops->last_error(b), "forward args lse has shape [3, 4]; expected [3, 8]"));
    sh[1] = 8;
    tl.ndim = 3;
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_E_INVALID);
    print_message("# %s\n", b->ops->last_error(b));
    assert_non_null(strstr(b->ops->last_error(b), "forward args lse"));
    b->ops->destroy(b);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lse_extend),
        cmocka_unit_test(test_lse_decode_and_verify),
        cmocka_unit_test(test_bad_lse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
