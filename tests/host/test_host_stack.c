/* test_host_stack.c - stacks: inner first, caps intersected for wrappers,
 * destroy outermost first, refused pairings explained, failed creates
 * cleaned up, split prefill/decode routing, deferred unload after close,
 * the validation layer on request, and the forward path's result. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_internal.h" /* struct sgl_attn_selection, to build one by hand */
#include "th.h"

typedef const char *(*events_fn)(void);
typedef void (*clear_fn)(void);

typedef struct fx {
    sgl_attn_host *h;
    char good[PATH_MAX], other[PATH_MAX], gdn[PATH_MAX];
    events_fn ev_good, ev_other, ev_gdn;
    sgl_attn_model m;
} fx;

static void clear_all(fx *f) {
    const char *so[3] = {f->good, f->other, f->gdn};
    for (int i = 0; i < 3; i++) ((clear_fn)th_hook(so[i], "fake_events_clear"))();
}

static fx *open_fx(int validate) {
    fx *f = calloc(1, sizeof *f);
    char g[PATH_MAX], o[PATH_MAX], w[PATH_MAX], u[PATH_MAX], path[4 * PATH_MAX + 8];
    snprintf(path, sizeof path, "%s:%s:%s:%s", th_fake("good", NULL, g, sizeof g),
             th_fake("other", NULL, o, sizeof o), th_fake("wrapper", NULL, w, sizeof w),
             th_fake("unavailable", NULL, u, sizeof u));
    sgl_attn_host_options opt = {.struct_size = sizeof opt, .plugin_path = path, .ignore_env_path = 1,
                                 .no_default_dir = 1, .no_conf = 1, .validate = validate};
    char err[256];
    assert_int_equal(sgl_attn_host_open(&opt, &f->h, err, sizeof err), SGL_ATTN_OK);
    th_fake("good", "fake_good.so", f->good, sizeof f->good);
    th_fake("other", "fake_other.so", f->other, sizeof f->other);
    th_fake("wrapper", "fake_gdn.so", f->gdn, sizeof f->gdn);
    f->ev_good = (events_fn)th_hook(f->good, "fake_events");
    f->ev_other = (events_fn)th_hook(f->other, "fake_events");
    f->ev_gdn = (events_fn)th_hook(f->gdn, "fake_events");
    clear_all(f);
    f->m.struct_size = sizeof f->m;
    f->m.num_q_heads = 8;
    f->m.num_kv_heads = 2;
    f->m.head_dim_qk = f->m.head_dim_v = 128;
    return f;
}

static void close_fx(fx *f) {
    sgl_attn_host_close(f->h);
    free(f);
}

/* out must come back as 2 * q, computed by the innermost fake. */
static int forward_checked(sgl_attn_backend *b, int decode) {
    float q[37], out[37];
    for (int i = 0; i < 37; i++) q[i] = (float)(rand() % 20001 - 10000) / 97.0f;
    memset(out, 0, sizeof out);
    int64_t shape[2] = {37, 1};
    DLTensor tq = {.data = q, .ndim = 2, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    DLTensor to = {.data = out, .ndim = 2, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    sgl_attn_forward_args a = {.struct_size = sizeof a, .q = &tq, .out = &to};
    int rc = decode ? sgl_attn_forward_decode(b, &a) : sgl_attn_forward_extend(b, &a);
    if (rc == SGL_ATTN_OK)
        for (int i = 0; i < 37; i++) assert_float_equal(out[i], 2.0f * q[i], 0.0f);
    return rc;
}

static void test_wrapper_over_full(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *names[] = {"fake_gdn", "fake_good"};
    sgl_attn_backend *b = NULL;
    char err[512];
    sgl_attn_create_options co = {.struct_size = sizeof co, .max_reqs = 3};
    assert_int_equal(sgl_attn_create_stack(f->h, names, 2, 0, &f->m, &co, &b, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(f->ev_good(), "create fake_good dev=0 reqs=3;");
    assert_string_equal(f->ev_gdn(), "create fake_gdn;");
    /* The wrapper got the inner's device caps. */
    const sgl_attn_caps *(*inner)(void) = (const sgl_attn_caps *(*)(void))th_hook(f->gdn, "fake_inner_caps");
    sgl_attn_caps want = {.struct_size = sizeof want};
    assert_int_equal(sgl_attn_host_plugin_caps(f->h, (size_t)sgl_attn_host_find_plugin(f->h, "fake_good"), 0, &want),
                     SGL_ATTN_OK);
    assert_memory_equal(inner(), &want, sizeof want);
    /* Forward goes through the wrapper into the inner, result intact. */
    assert_int_equal(forward_checked(b, 1), SGL_ATTN_OK);
    th_contains(f->ev_gdn(), "decode fake_gdn;");
    th_contains(f->ev_good(), "decode fake_good;");
    sgl_attn_batch batch = {.struct_size = sizeof batch, .forward_mode = SGL_ATTN_MODE_DECODE};
    assert_int_equal(sgl_attn_init_forward_metadata(b, &batch), SGL_ATTN_OK);
    th_contains(f->ev_good(), "meta fake_good 2;");
    /* Destroy: outermost first (the wrapper's goodbye precedes the inner's destroy). */
    clear_all(f);
    sgl_attn_destroy(b);
    assert_string_equal(f->ev_gdn(), "destroy fake_gdn;");
    assert_string_equal(f->ev_good(), "meta fake_good 0;destroy fake_good;");
    close_fx(f);
}

/* Three layers: the outer wrapper sees own ∩ inner of the one below. */
static void test_intersection_passed_up(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *names[] = {"fake_gdn", "fake_gdn", "fake_good"};
    sgl_attn_backend *b = NULL;
    char err[512];
    assert_int_equal(sgl_attn_create_stack(f->h, names, 3, 0, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    const sgl_attn_caps *c = ((const sgl_attn_caps *(*)(void))th_hook(f->gdn, "fake_inner_caps"))();
    assert_int_equal(c->q_dtypes, SGL_ATTN_DT_F32);      /* {f32,bf16} ∩ {f32,f16} */
    assert_int_equal(c->kv_dtypes, SGL_ATTN_DT_F32);
    assert_int_equal(c->attn_kinds, SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA);
    assert_int_equal(c->features, SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE);
    assert_int_equal(c->n_head_dims, 2);                 /* both pairs fit good's 256 max */
    assert_int_equal(c->head_dims[1].qk, 256);
    assert_int_equal(c->n_page_sizes, 2);
    assert_int_equal(c->page_sizes[1], 16);
    assert_string_equal(c->device_name, "fake cpu");     /* the device is the inner's */
    assert_int_equal(c->state_dtypes, SGL_ATTN_DT_F32);
    assert_int_equal(forward_checked(b, 0), SGL_ATTN_OK);
    clear_all(f);
    sgl_attn_destroy(b);
    /* The outer's goodbye reached the inner gdn before that one was destroyed. */
    assert_string_equal(f->ev_gdn(), "destroy fake_gdn;meta fake_gdn;destroy fake_gdn;");
    close_fx(f);
}

static void expect_refusal(fx *f, const char *const *names, size_t n, int32_t dev, int rc, const char *msg) {
    sgl_attn_backend *b = (sgl_attn_backend *)1;
    char err[512] = "";
    assert_int_equal(sgl_attn_create_stack(f->h, names, n, dev, &f->m, NULL, &b, err, sizeof err), rc);
    assert_null(b);
    th_contains(err, msg);
}

static void test_refusals(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *inverted[] = {"fake_good", "fake_gdn"};
    expect_refusal(f, inverted, 2, 0, SGL_ATTN_E_UNSUPPORTED,
                   "fake_gdn is a hybrid wrapper: the innermost backend of a stack must compute full attention");
    const char *two_full[] = {"fake_good", "fake_other"};
    expect_refusal(f, two_full, 2, 0, SGL_ATTN_E_UNSUPPORTED, "fake_good computes full attention and cannot wrap fake_other");
    const char *unknown[] = {"nope"};
    expect_refusal(f, unknown, 1, 0, SGL_ATTN_E_NOT_FOUND, "no plugin named \"nope\" (usable: fake_good, fake_other, fake_gdn");
    const char *unavail[] = {"fake_unavail"};
    expect_refusal(f, unavail, 1, 0, SGL_ATTN_E_NOT_FOUND,
                   "plugin fake_unavail is unavailable here: fake runtime: no device found (error 100)");
    const char *good[] = {"fake_good"};
    expect_refusal(f, good, 1, 1, SGL_ATTN_E_UNSUPPORTED, "fake_good device 1 is not available: fake device 1 is busy");
    expect_refusal(f, good, 1, 5, SGL_ATTN_E_NOT_FOUND, "fake_good has no device 5 (it has 2)");
    expect_refusal(f, good, 0, 0, SGL_ATTN_E_INVALID, "a stack has 1..7 plugin names, got 0");
    assert_string_equal(f->ev_good(), ""); /* nothing was created by a refusal */
    close_fx(f);
}

/* A create that fails reports the plugin's words, and what was already
 * created below it is destroyed. */
static void test_failed_create_cleans_up(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *names[] = {"fake_gdn", "fake_good"};
    sgl_attn_create_options co = {.struct_size = sizeof co, .max_reqs = 8888};
    sgl_attn_backend *b = (sgl_attn_backend *)1;
    char err[512];
    assert_int_equal(sgl_attn_create_stack(f->h, names, 2, 0, &f->m, &co, &b, err, sizeof err), SGL_ATTN_E_DEVICE);
    assert_null(b);
    th_contains(err, "fake_gdn: create failed with device (-4): max_reqs 8888 is the test's failure trigger");
    assert_string_equal(f->ev_good(), "create fake_good dev=0 reqs=8888;destroy fake_good;");
    co.max_reqs = 7777;
    assert_int_equal(sgl_attn_create_stack(f->h, names + 1, 1, 0, &f->m, &co, &b, err, sizeof err), SGL_ATTN_E_DEVICE);
    th_contains(err, "fake_good: create failed with device (-4): max_reqs 7777");
    close_fx(f);
}

static sgl_attn_selection *split_sel(const char *const *pre, size_t np, const char *const *dec, size_t nd) {
    sgl_attn_selection *s = calloc(1, sizeof *s);
    for (size_t i = 0; i < np; i++) snprintf(s->prefill_stack[i], sizeof s->prefill_stack[i], "%s", pre[i]);
    for (size_t i = 0; i < nd; i++) snprintf(s->stack[i], sizeof s->stack[i], "%s", dec[i]);
    s->prefill_depth = np;
    s->depth = nd;
    s->split = 1;
    return s;
}

static void test_split_routing(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *pre[] = {"fake_good"}, *dec[] = {"fake_other"};
    sgl_attn_selection *s = split_sel(pre, 1, dec, 1);
    sgl_attn_backend *b;
    char err[512];
    assert_int_equal(sgl_attn_create(f->h, s, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    clear_all(f);
    assert_int_equal(forward_checked(b, 0), SGL_ATTN_OK);
    assert_int_equal(forward_checked(b, 1), SGL_ATTN_OK);
    sgl_attn_batch ext = {.struct_size = sizeof ext, .forward_mode = SGL_ATTN_MODE_EXTEND};
    sgl_attn_batch dcd = {.struct_size = sizeof dcd, .forward_mode = SGL_ATTN_MODE_DECODE};
    sgl_attn_batch ver = {.struct_size = sizeof ver, .forward_mode = SGL_ATTN_MODE_TARGET_VERIFY};
    assert_int_equal(sgl_attn_init_forward_metadata(b, &ext), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_init_forward_metadata(b, &dcd), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_init_forward_metadata(b, &ver), SGL_ATTN_OK);
    assert_string_equal(f->ev_good(), "extend fake_good;meta fake_good 1;meta fake_good 3;");
    assert_string_equal(f->ev_other(), "decode fake_other;meta fake_other 2;");
    assert_string_equal(sgl_attn_last_error(b), "");
    clear_all(f);
    sgl_attn_destroy(b);
    assert_string_equal(f->ev_good(), "destroy fake_good;");
    assert_string_equal(f->ev_other(), "destroy fake_other;");
    free(s);
    close_fx(f);
}

/* gdn over prefill=good / decode=other: one gdn, over the split. */
static void test_split_shared_wrapper(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *pre[] = {"fake_gdn", "fake_good"}, *dec[] = {"fake_gdn", "fake_other"};
    sgl_attn_selection *s = split_sel(pre, 2, dec, 2);
    sgl_attn_backend *b;
    char err[512];
    assert_int_equal(sgl_attn_create(f->h, s, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(f->ev_gdn(), "create fake_gdn;");
    assert_int_equal(forward_checked(b, 1), SGL_ATTN_OK);
    assert_int_equal(forward_checked(b, 0), SGL_ATTN_OK);
    assert_string_equal(f->ev_gdn(), "create fake_gdn;decode fake_gdn;extend fake_gdn;");
    th_contains(f->ev_other(), "decode fake_other;");
    th_contains(f->ev_good(), "extend fake_good;");
    clear_all(f);
    sgl_attn_destroy(b);
    assert_string_equal(f->ev_gdn(), "destroy fake_gdn;");
    assert_string_equal(f->ev_good(), "destroy fake_good;");
    assert_string_equal(f->ev_other(), "meta fake_other 0;destroy fake_other;"); /* idle goes to decode */
    free(s);
    close_fx(f);
}

/* Close with an instance alive: the plugin stays loaded until destroy. */
static void test_close_defers_unload(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *names[] = {"fake_gdn", "fake_good"};
    sgl_attn_backend *b;
    char err[512];
    assert_int_equal(sgl_attn_create_stack(f->h, names, 2, 0, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_host_close(f->h);
    f->h = NULL;
    assert_int_equal(forward_checked(b, 1), SGL_ATTN_OK); /* code still mapped */
    th_hook(f->good, "fake_events");                      /* still loaded */
    sgl_attn_destroy(b);                                  /* the last reference frees the host */
    free(f);
}

/* A selection that is not split goes to create_stack with its device. */
static void test_create_from_selection(void **state) {
    (void)state;
    fx *f = open_fx(0);
    sgl_attn_selection *s = calloc(1, sizeof *s);
    snprintf(s->stack[0], sizeof s->stack[0], "fake_gdn");
    snprintf(s->stack[1], sizeof s->stack[1], "fake_other");
    s->depth = 2;
    s->device = 1; /* fake_other's device 1 is busy: refused with the reason */
    sgl_attn_backend *b;
    char err[512];
    assert_int_equal(sgl_attn_create(f->h, s, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_E_UNSUPPORTED);
    th_contains(err, "fake_other device 1 is not available: fake device 1 is busy");
    s->device = 0;
    assert_int_equal(sgl_attn_create(f->h, s, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(forward_checked(b, 1), SGL_ATTN_OK);
    sgl_attn_destroy(b);
    free(s);
    close_fx(f);
}

/* validate=1 stacks the embedded validation layer outermost when it is
 * there; without one, the stack is built as asked and the log says so. */
static void test_validate_layer(void **state) {
    (void)state;
    fx *f = open_fx(1);
    const char *names[] = {"fake_good"};
    sgl_attn_backend *b;
    char err[512];
    int rc = sgl_attn_create_stack(f->h, names, 1, 0, &f->m, NULL, &b, err, sizeof err);
    void *(*last)(void) = (void *(*)(void))th_hook(f->good, "fake_last_backend");
    if (sgl_attn_host_find_plugin(f->h, "validate") >= 0) {
        if (rc != SGL_ATTN_OK) fail_msg("validate over fake_good refused: %s", err);
        assert_ptr_not_equal(b, last()); /* something sits above fake_good */
        print_message("validation layer stacked over fake_good\n");
    } else {
        assert_int_equal(rc, SGL_ATTN_OK);
        assert_ptr_equal(b, last());
        print_message("no validate plugin in this build: stack left as asked\n");
    }
    sgl_attn_destroy(b);
    close_fx(f);
}

static void test_last_error(void **state) {
    (void)state;
    fx *f = open_fx(0);
    const char *names[] = {"fake_good"};
    sgl_attn_backend *b;
    char err[512];
    assert_int_equal(sgl_attn_create_stack(f->h, names, 1, 0, &f->m, NULL, &b, err, sizeof err), SGL_ATTN_OK);
    sgl_attn_forward_args a = {.struct_size = sizeof a};
    assert_int_equal(sgl_attn_forward_decode(b, &a), SGL_ATTN_E_INVALID);
    assert_string_equal(sgl_attn_last_error(b), "fake_good: q and out must be compact f32 of one size");
    assert_string_equal(sgl_attn_last_error(NULL), "no backend");
    sgl_attn_destroy(b);
    sgl_attn_destroy(NULL);
    close_fx(f);
}

int main(void) {
    srand((unsigned)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrapper_over_full),   cmocka_unit_test(test_intersection_passed_up),
        cmocka_unit_test(test_refusals),            cmocka_unit_test(test_failed_create_cleans_up),
        cmocka_unit_test(test_split_routing),       cmocka_unit_test(test_split_shared_wrapper),
        cmocka_unit_test(test_close_defers_unload), cmocka_unit_test(test_create_from_selection),
        cmocka_unit_test(test_validate_layer),      cmocka_unit_test(test_last_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
