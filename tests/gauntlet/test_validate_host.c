/* test_validate_host.c - the validation layer as the host stacks it over the
 * real cpu_ref: asked for by the option, by SGL_ATTN_VALIDATE=1 and by the
 * selection request, transparent on valid batches (bit-identical output),
 * refusing a bad one before cpu_ref runs, and absent when not asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batch_fixture.h"
#include "sgl_attn.h"

static sgl_attn_host *open_host(int validate) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.ignore_env_path = 1;
    o.no_default_dir = 1;
    o.no_conf = 1;
    o.validate = validate;
    sgl_attn_host *h = NULL;
    char err[512] = "";
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) fail_msg("host open: %s", err);
    return h;
}

static sgl_attn_backend *stack(sgl_attn_host *h, fx *f) {
    const char *names[] = {"cpu_ref"};
    sgl_attn_create_options co = {sizeof co, f->max_reqs, f->max_tokens, f->max_ctx};
    sgl_attn_backend *b = NULL;
    char err[512] = "";
    if (sgl_attn_create_stack(h, names, 1, 0, &f->model, &co, &b, err, sizeof err))
        fail_msg("create cpu_ref: %s", err);
    return b;
}

static int run(sgl_attn_backend *b, fx *f) {
    int rc = sgl_attn_init_forward_metadata(b, &f->batch);
    if (rc) return rc;
    return f->batch.forward_mode == SGL_ATTN_MODE_EXTEND ? sgl_attn_forward_extend(b, &f->args)
                                                         : sgl_attn_forward_decode(b, &f->args);
}

static fx_shape shape_for(uint64_t *seed, int mode) {
    static const int32_t pages[] = {1, 4, 16};
    fx_shape s = {mode,
                  fx_range(seed, 1, 5),
                  fx_range(seed, 2, 90),
                  pages[fx_range(seed, 0, 2)],
                  8,
                  fx_range(seed, 0, 1) ? 2 : 8,
                  fx_range(seed, 0, 1) ? 64 : 128,
                  fx_range(seed, 0, 1) ? 32 : 64};
    return s;
}

/* Same batch through cpu_ref with and without the layer: same bits out. */
static void test_transparent_on_valid_batches(void **state) {
    uint64_t seed = *(uint64_t *)*state;
    sgl_attn_host *plain = open_host(0), *checked = open_host(1);
    for (int it = 0; it < 12; it++) {
        fx_shape s = shape_for(&seed, it % 2 ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE);
        uint64_t data_seed = fx_rand(&seed);
        fx a, b;
        assert_int_equal(fx_build(&a, &s, data_seed), 0);
        assert_int_equal(fx_build(&b, &s, data_seed), 0);
        sgl_attn_backend *ba = stack(plain, &a), *bb = stack(checked, &b);
        int ra = run(ba, &a), rb = run(bb, &b);
        if (ra) fail_msg("cpu_ref refused a valid batch: %s", sgl_attn_last_error(ba));
        if (rb) fail_msg("validate/cpu_ref refused a valid batch: %s", sgl_attn_last_error(bb));
        size_t n = (size_t)a.T * (size_t)s.hq * (size_t)s.d;
        assert_memory_equal(a.out, b.out, n * sizeof(float));
        /* The pool writes (save_kv_cache) match as well. */
        size_t np = (size_t)a.slots * (size_t)s.hkv * (size_t)s.d;
        assert_memory_equal(a.kc, b.kc, np * sizeof(float));
        sgl_attn_destroy(ba);
        sgl_attn_destroy(bb);
        fx_free(&a);
        fx_free(&b);
    }
    sgl_attn_host_close(plain);
    sgl_attn_host_close(checked);
}

/* A slot outside the pool: refused by name and value, and cpu_ref never ran
 * (its output buffer still holds what the test put there). */
static void test_refuses_before_the_inner_runs(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0xbad;
    sgl_attn_host *h = open_host(1);
    fx_shape s = shape_for(&seed, SGL_ATTN_MODE_DECODE);
    s.page = 1;
    s.max_len = 40;
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    int32_t i = 0;
    while (fx_get(&f.t_seq, i) < 2) {
        fx_free(&f);
        assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    }
    int64_t row = fx_get(&f.t_rpi, i), col = fx_range(&seed, 0, (int32_t)fx_get(&f.t_seq, i) - 2);
    int64_t bad = f.slots + fx_range(&seed, 0, 1 << 20);
    fx_rtt_set(&f, row, col, bad);
    size_t n = (size_t)f.T * (size_t)s.hq * (size_t)s.d;
    float *before = malloc(n * sizeof *before);
    assert_non_null(before);
    memcpy(before, f.out, n * sizeof *before);
    sgl_attn_backend *b = stack(h, &f);
    assert_int_equal(run(b, &f), SGL_ATTN_E_INVALID);
    char want[200];
    snprintf(
        want, sizeof want,
        "forward_decode: batch->req_to_token[%lld][%lld] = %lld is outside the KV pool of %d slots",
        (long long)row, (long long)col, (long long)bad, (int)f.slots);
    if (!strstr(sgl_attn_last_error(b), want))
        fail_msg("last_error \"%s\" lacks \"%s\"", sgl_attn_last_error(b), want);
    assert_memory_equal(before, f.out, n * sizeof *before);
    free(before);
    sgl_attn_destroy(b);
    fx_free(&f);
    sgl_attn_host_close(h);
}

/* positions are the layer's business only: cpu_ref does not read them (RoPE
 * is applied before attention).  One out of range passes without the layer
 * (proof it is not in the stack) and is refused with it, however the layer
 * was asked for. */
static void test_present_only_when_asked(void **state) {
    uint64_t seed = *(uint64_t *)*state ^ 0x5e1ec7;
    fx_shape s = shape_for(&seed, SGL_ATTN_MODE_EXTEND);
    fx f;
    assert_int_equal(fx_build(&f, &s, fx_rand(&seed)), 0);
    int32_t t = fx_range(&seed, 0, f.T - 1);
    fx_set(&f.t_pos, t, f.max_ctx + fx_range(&seed, 0, 1000));
    char want[96];
    snprintf(want, sizeof want, "init_forward_metadata: batch->positions[%d] = %lld is outside", (int)t,
             (long long)fx_get(&f.t_pos, t));

    sgl_attn_host *h = open_host(0);
    sgl_attn_backend *b = stack(h, &f);
    if (run(b, &f)) fail_msg("without the layer: %s", sgl_attn_last_error(b));
    sgl_attn_destroy(b);
    sgl_attn_host_close(h);

    /* 1: the host option. */
    h = open_host(1);
    b = stack(h, &f);
    assert_int_equal(run(b, &f), SGL_ATTN_E_INVALID);
    if (!strstr(sgl_attn_last_error(b), want))
        fail_msg("\"%s\" lacks \"%s\"", sgl_attn_last_error(b), want);
    sgl_attn_destroy(b);
    sgl_attn_host_close(h);

    /* 2: the environment variable. */
    setenv("SGL_ATTN_VALIDATE", "1", 1);
    h = open_host(0);
    unsetenv("SGL_ATTN_VALIDATE");
    b = stack(h, &f);
    assert_int_equal(run(b, &f), SGL_ATTN_E_INVALID);
    sgl_attn_destroy(b);

    /* 3: the selection request, on a host that was not asked. */
    sgl_attn_host_close(h);
    h = open_host(0);
    sgl_attn_select_request rq;
    memset(&rq, 0, sizeof rq);
    rq.struct_size = sizeof rq;
    rq.backend = "cpu_ref";
    rq.validate = 1;
    sgl_attn_selection *sel = NULL;
    char err[1024] = "";
    if (sgl_attn_select(h, &f.model, &rq, &sel, err, sizeof err)) fail_msg("select: %s", err);
    assert_true(sgl_attn_selection_stack_depth(sel) >= 2);
    assert_string_equal(sgl_attn_selection_stack_name(sel, 0), "validate");
    sgl_attn_create_options co = {sizeof co, f.max_reqs, f.max_tokens, f.max_ctx};
    if (sgl_attn_create(h, sel, &f.model, &co, &b, err, sizeof err)) fail_msg("create: %s", err);
    assert_int_equal(run(b, &f), SGL_ATTN_E_INVALID);
    sgl_attn_destroy(b);
    sgl_attn_selection_free(sel);
    /* Without the request the selection has no layer. */
    rq.validate = 0;
    if (sgl_attn_select(h, &f.model, &rq, &sel, err, sizeof err)) fail_msg("select: %s", err);
    for (size_t i = 0; i < sgl_attn_selection_stack_depth(sel); i++)
        assert_string_not_equal(sgl_attn_selection_stack_name(sel, i), "validate");
    sgl_attn_selection_free(sel);
    sgl_attn_host_close(h);
    fx_free(&f);
}

int main(void) {
    uint64_t seed = fx_test_seed();
    unsetenv("SGL_ATTN_VALIDATE"); /* the test decides */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_transparent_on_valid_batches, &seed),
        cmocka_unit_test_prestate(test_refuses_before_the_inner_runs, &seed),
        cmocka_unit_test_prestate(test_present_only_when_asked, &seed),
    };
    return cmocka_run_group_tests_name("validate_host", tests, NULL, NULL);
}
