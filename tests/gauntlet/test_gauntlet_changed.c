/* test_gauntlet_changed.c - a batch that changes after planning.
 *
 * init_forward_metadata accepts a batch; then, before the forward, one index
 * tensor entry is changed: a req_to_token slot the batch uses, an
 * out_cache_loc entry, req_pool_indices, seq_lens, the extend lengths,
 * positions, the seq_lens mirror; to a slot past the pool, -1, 2^31-1, and
 * (int64 indices) 2^32 plus a slot the batch uses, which a 32-bit reader
 * would wrap onto that slot.  Through libsglattn, for cpu_ref alone and
 * under the validation layer, decode and extend, int32 and int64:
 *
 *   validation layer   the forward is refused naming the tensor and saying
 *                      the batch changed; nothing reaches cpu_ref: the pool
 *                      and out are untouched
 *   cpu_ref alone      a slot it reads at the forward (req_to_token,
 *                      out_cache_loc) is checked where it is used: refused
 *                      naming the entry, and no slot outside the batch's own
 *                      new-token slots changed; a tensor it copied at
 *                      planning (rows, lengths, mirrors, positions) has no
 *                      effect: out and the pool equal a run without the
 *                      change, bit for bit
 *
 * ASan and valgrind (make test runs both over this) catch any access
 * outside the tensors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batch_fixture.h"
#include "gauntlet_util.h"

enum { T_RTT, T_OCL, T_RPI, T_SEQ, T_PRE, T_EXT, T_POS, T_SEQ_CPU, T_COUNT };
static const char *const tname[T_COUNT] = {"req_to_token", "out_cache_loc", "req_pool_indices", "seq_lens",
                                           "extend_prefix_lens", "extend_seq_lens", "positions", "seq_lens_cpu"};
enum { V_PAST, V_NEG, V_MAX32, V_WRAP, V_COUNT };
static const char *const vname[V_COUNT] = {"past the pool", "-1", "2^31-1", "2^32 + a used slot"};

typedef struct run_result {
    int rc;
    char err[1024];
    float *out, *kc, *vc; /* copies after the forward */
    size_t n_out, n_pool;
} run_result;

static sgl_attn_host *host_open(void) {
    sgl_attn_host_options o = {.struct_size = sizeof o, .ignore_env_path = 1, .no_default_dir = 1, .no_conf = 1};
    sgl_attn_host *h = NULL;
    char err[512];
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) fail_msg("host: %s", err);
    return h;
}

static int64_t bad_value(const fx *f, int v, int64_t used_slot) {
    switch (v) {
    case V_PAST: return (int64_t)f->slots + 1000;
    case V_NEG: return -1;
    case V_MAX32: return INT32_MAX;
    default: return ((int64_t)1 << 32) + used_slot;
    }
}

/* Change entry 0 of tensor `which` (for req_to_token: request 0's first
 * slot) to value v; 0 when the change does not apply to this batch. */
static int corrupt(fx *f, int which, int v) {
    int64_t row0 = fx_get(&f->t_rpi, 0), slot0 = fx_rtt_get(f, row0, 0);
    if (v == V_WRAP && f->s.idx_bits != 64) return 0;
    int64_t x = bad_value(f, v, slot0);
    switch (which) {
    case T_RTT: fx_rtt_set(f, row0, 0, x); return 1;
    case T_OCL: fx_set(&f->t_ocl, 0, x); return 1;
    case T_RPI: fx_set(&f->t_rpi, 0, x); return 1;
    case T_SEQ: fx_set(&f->t_seq, 0, x); return 1;
    case T_PRE:
        if (f->s.mode != SGL_ATTN_MODE_EXTEND) return 0;
        fx_set(&f->t_pre, 0, x);
        return 1;
    case T_EXT:
        if (f->s.mode != SGL_ATTN_MODE_EXTEND) return 0;
        fx_set(&f->t_ext, 0, x);
        return 1;
    case T_POS: fx_set(&f->t_pos, 0, x); return 1;
    default: fx_set(&f->t_seq_cpu, 0, x); return 1;
    }
}

/* One metadata + forward over a fresh batch from `seed`, with the change
 * (which < 0: none) made between them. */
static void run(sgl_attn_host *h, const fx_shape *s, uint64_t seed, int validate, int which, int v, run_result *r) {
    fx f;
    assert_int_equal(fx_build(&f, s, seed), 0);
    f.args.save_kv_cache = 1;
    for (size_t i = 0; i < (size_t)f.T * (size_t)s->hq * (size_t)s->d; i++) f.out[i] = NAN;
    sgl_attn_create_options co = {sizeof co, f.max_reqs, f.max_tokens, f.max_ctx};
    const char *with[] = {"validate", "cpu_ref"}, *alone[] = {"cpu_ref"};
    sgl_attn_backend *b = NULL;
    char err[512] = "";
    int rc = validate ? sgl_attn_create_stack(h, with, 2, 0, &f.model, &co, &b, err, sizeof err)
                      : sgl_attn_create_stack(h, alone, 1, 0, &f.model, &co, &b, err, sizeof err);
    if (rc) fail_msg("create: %s", err);
    rc = sgl_attn_init_forward_metadata(b, &f.batch);
    if (rc) fail_msg("metadata: %s", sgl_attn_last_error(b));
    if (which >= 0) assert_true(corrupt(&f, which, v));
    r->rc = s->mode == SGL_ATTN_MODE_EXTEND ? sgl_attn_forward_extend(b, &f.args) : sgl_attn_forward_decode(b, &f.args);
    snprintf(r->err, sizeof r->err, "%s", r->rc ? sgl_attn_last_error(b) : "");
    r->n_out = (size_t)f.T * (size_t)s->hq * (size_t)s->d;
    r->n_pool = (size_t)f.slots * (size_t)s->hkv * (size_t)s->d;
    r->out = malloc(r->n_out * sizeof(float));
    r->kc = malloc(r->n_pool * sizeof(float));
    r->vc = malloc(r->n_pool * sizeof(float));
    assert_true(r->out && r->kc && r->vc);
    memcpy(r->out, f.out, r->n_out * sizeof(float));
    memcpy(r->kc, f.kc, r->n_pool * sizeof(float));
    memcpy(r->vc, f.vc, r->n_pool * sizeof(float));
    sgl_attn_destroy(b);
    fx_free(&f);
}

static void result_free(run_result *r) {
    free(r->out);
    free(r->kc);
    free(r->vc);
}

static int same_bits(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof(float)); }

/* Every slot but `allowed` (new-token slots) equal in both pools. */
static void only_slots_changed(const fx *before, const run_result *after, const int64_t *allowed, int n_allowed) {
    const size_t row = (size_t)before->s.hkv * (size_t)before->s.d;
    for (int64_t s = 0; s < before->slots; s++) {
        int ok = 0;
        for (int i = 0; i < n_allowed; i++) ok |= allowed[i] == s;
        if (ok) continue;
        if (!same_bits(before->kc + (size_t)s * row, after->kc + (size_t)s * row, row) ||
            !same_bits(before->vc + (size_t)s * row, after->vc + (size_t)s * row, row))
            fail_msg("pool slot %lld changed, but no token of the batch writes it", (long long)s);
    }
}

static void one_shape(sgl_attn_host *h, int mode, int bits, uint64_t seed, int *cases) {
    uint64_t st = seed;
    fx_shape s = {mode, fx_range(&st, 1, 4), fx_range(&st, 4, 70), fx_range(&st, 1, 4) == 1 ? 1 : 4, 4, 2, 16, bits};
    uint64_t bseed = fx_rand(&st);
    run_result clean;
    fx pristine;
    run(h, &s, bseed, 0, -1, 0, &clean);
    assert_int_equal(clean.rc, SGL_ATTN_OK);
    assert_int_equal(fx_build(&pristine, &s, bseed), 0); /* the pool before any forward */
    int64_t *new_slots = malloc((size_t)pristine.T * sizeof *new_slots);
    assert_non_null(new_slots);
    for (int32_t t = 0; t < pristine.T; t++) new_slots[t] = fx_get(&pristine.t_ocl, t);
    for (int which = 0; which < T_COUNT; which++)
        for (int v = 0; v < V_COUNT; v++)
            for (int validate = 0; validate < 2; validate++) {
                fx probe;
                assert_int_equal(fx_build(&probe, &s, bseed), 0);
                int applies = corrupt(&probe, which, v);
                fx_free(&probe);
                if (!applies) continue;
                run_result r;
                run(h, &s, bseed, validate, which, v, &r);
                (*cases)++;
                const char *what = tname[which];
                if (validate) {
                    /* Refused before cpu_ref saw the call: nothing written. */
                    if (r.rc != SGL_ATTN_E_INVALID || !strstr(r.err, what) || !strstr(r.err, "the batch changed"))
                        fail_msg("validate, %s %s: rc %d, \"%s\"", what, vname[v], r.rc, r.err);
                    for (size_t i = 0; i < r.n_out; i++) assert_true(isnan(r.out[i]));
                    only_slots_changed(&pristine, &r, NULL, 0);
                } else if (which == T_RTT || which == T_OCL) {
                    /* Read at the forward, checked where used. */
                    if (r.rc != SGL_ATTN_E_INVALID || !strstr(r.err, what) || !strstr(r.err, "outside the pool"))
                        fail_msg("cpu_ref, %s %s: rc %d, \"%s\"", what, vname[v], r.rc, r.err);
                    only_slots_changed(&pristine, &r, new_slots, pristine.T);
                } else {
                    /* Copied at planning: the change has no effect. */
                    if (r.rc != SGL_ATTN_OK) fail_msg("cpu_ref, %s %s: rc %d, \"%s\"", what, vname[v], r.rc, r.err);
                    assert_true(same_bits(r.out, clean.out, r.n_out));
                    assert_true(same_bits(r.kc, clean.kc, r.n_pool) && same_bits(r.vc, clean.vc, r.n_pool));
                }
                result_free(&r);
            }
    free(new_slots);
    fx_free(&pristine);
    result_free(&clean);
}

static void test_changed_between_metadata_and_forward(void **state) {
    (void)state;
    uint64_t seed = fx_test_seed();
    sgl_attn_host *h = host_open();
    int cases = 0;
    for (int mode = SGL_ATTN_MODE_EXTEND; mode <= SGL_ATTN_MODE_DECODE; mode++)
        for (int bits = 32; bits <= 64; bits += 32) one_shape(h, mode, bits, fx_rand(&seed), &cases);
    print_message("%d changed batches (cpu_ref alone and validated), none read or wrote outside its tensors\n",
                  cases);
    sgl_attn_host_close(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changed_between_metadata_and_forward),
    };
    return cmocka_run_group_tests_name("gauntlet_changed", tests, NULL, NULL);
}
