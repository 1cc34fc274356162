/* test_hybrid_changed.c - the hybrid wrappers when the batch changes after
 * init_forward_metadata (tests/gauntlet/test_gauntlet_changed.c does cpu_ref).
 *
 *   stateful kinds (gdn, kda, mamba2, short_conv, lightning): state_indices,
 *       seq_lens and the extend lengths are changed to wild values between
 *       metadata and the forwards; the wrapper runs on its plan, so every
 *       own layer still matches the float64 reference run on the planned
 *       values, state pool included (hyb_scen.c compares)
 *   minimax_sparse: a req_to_token slot the batch uses or an out_cache_loc
 *       entry changed past the pool, to -1 or to 2^31-1 is refused where it
 *       is used, naming the entry, and no pool slot outside the batch's
 *       new-token slots changes; req_pool_indices and the lengths changed
 *       have no effect (out equals a clean run, bit for bit)
 *   each kind under the validation layer: any of those changes, and
 *       state_indices', refuses the forward before the wrapper runs
 *
 * ASan and valgrind catch any read or write outside the tensors. */
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
#include "hyb_scen.h"

/* ------------------------------------------------- stateful kinds, alone */

static void wild(sgl_attn_batch *b, void *ctx) {
    (void)ctx;
    DLTensor *ts[] = {(DLTensor *)b->state_indices, (DLTensor *)b->seq_lens, (DLTensor *)b->extend_seq_lens,
                      (DLTensor *)b->extend_prefix_lens};
    static const int64_t vals[] = {-5, INT32_MAX, 1 << 20, 7};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        if (!ts[i]) continue;
        for (int64_t e = 0; e < ts[i]->shape[0]; e++) fx_set(ts[i], e, vals[(i + (size_t)e) % 4]);
    }
}

static void stateful(int kind, const tu_shape *sh, uint64_t seed) {
    scen s;
    scen_open(&s, kind, sh, SGL_ATTN_DT_F64, SGL_ATTN_DT_F64, -1, 1e-20, seed, 0);
    scen_after_metadata = wild;
    {
        int slots[] = {2, 0, 5}, n[] = {5, 9, 3}, pre[] = {0, 0, 0};
        run_batch(&s, SGL_ATTN_MODE_EXTEND, 3, slots, n, pre, 0);
    }
    {
        int slots[] = {0, 2, 5}, n[] = {1, 1, 1}, pre[] = {9, 5, 3};
        run_batch(&s, SGL_ATTN_MODE_DECODE, 3, slots, n, pre, 0);
    }
    scen_after_metadata = NULL;
    scen_close(&s);
}

static void test_stateful_kinds_run_on_their_plan(void **st) {
    (void)st;
    static const tu_shape gdn = {2, 4, 16, 8, 4, 0}, mamba = {2, 4, 8, 6, 4, 0}, sc = {0, 0, 0, 0, 3, 24},
                          light = {3, 3, 12, 10, 0, 0};
    stateful(SGL_ATTN_HYBRID_GDN, &gdn, 11);
    stateful(SGL_ATTN_HYBRID_KDA, &gdn, 12);
    stateful(SGL_ATTN_HYBRID_MAMBA2, &mamba, 13);
    stateful(SGL_ATTN_HYBRID_SHORT_CONV, &sc, 14);
    stateful(SGL_ATTN_HYBRID_LIGHTNING, &light, 15);
}

/* --------------------------------------------------- minimax_sparse, alone */

enum { HQ = 4, HKV = 2, D = 16, CTX = 32, ROWS = 4, POOL = 64 };

typedef struct sp_run {
    int rc;
    char err[512];
    float out[64 * HQ * D], k[POOL * HKV * D], v[POOL * HKV * D];
} sp_run;

/* One extend of sparse layer 0 over two requests (rows 3 and 1, shuffled
 * slots), with entry 0 of `which` changed to `value` after the metadata
 * (which < 0: no change; 6: no forward, the pool as it was).
 * 0 rpi, 1 seq, 2 pre, 3 ext, 4 rtt, 5 ocl. */
static void sparse_run(int which, int64_t value, sp_run *r) {
    sgl_attn_model m;
    tu_shape sh = {0};
    tu_model(&m, SGL_ATTN_HYBRID_MINIMAX_SPARSE, &sh, SGL_ATTN_DT_F32, 0);
    m.num_q_heads = HQ;
    m.num_kv_heads = HKV;
    m.head_dim_qk = m.head_dim_v = D;
    fake_inner in;
    fake_inner_init(&in);
    sgl_attn_backend *b = NULL;
    char err[256] = "";
    int rc = tu_create(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &m, &in, ROWS, 64, CTX, &b, err, sizeof err);
    if (rc) fail_msg("create: %s", err);
    trng g = {77};
    ttensor rtt, rpi, sl, pl, el, loc, q, k, v, out, kc, vc;
    const int bs = 2, pre[2] = {5, 0}, n[2] = {4, 6}, row[2] = {3, 1};
    int T = n[0] + n[1];
    tt_make(&rtt, tu_dt(0), 2, ROWS, CTX, 0);
    tt_make(&rpi, tu_dt(0), 1, bs, 0, 0);
    tt_make(&sl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&pl, tu_dt(0), 1, bs, 0, 0);
    tt_make(&el, tu_dt(0), 1, bs, 0, 0);
    tt_make(&loc, tu_dt(0), 1, T, 0, 0);
    DLDataType f32 = tu_dt(SGL_ATTN_DT_F32);
    tt_make(&q, f32, 3, T, HQ, D);
    tt_make(&k, f32, 3, T, HKV, D);
    tt_make(&v, f32, 3, T, HKV, D);
    tt_make(&out, f32, 3, T, HQ, D);
    tt_make(&kc, f32, 3, POOL, HKV, D);
    tt_make(&vc, f32, 3, POOL, HKV, D);
    tt_fill_normal(&q, &g, 1, NULL);
    tt_fill_normal(&k, &g, 1, NULL);
    tt_fill_normal(&v, &g, 1, NULL);
    tt_fill_normal(&kc, &g, 1, NULL);
    tt_fill_normal(&vc, &g, 1, NULL);
    for (size_t i = 0; i < out.count; i++) tt_set(&out, i, 0);
    for (size_t i = 0; i < rtt.count; i++) tt_set(&rtt, i, 0);
    int t = 0;
    for (int i = 0; i < bs; i++) {
        tt_set(&rpi, i, row[i]);
        tt_set(&sl, i, pre[i] + n[i]);
        tt_set(&pl, i, pre[i]);
        tt_set(&el, i, n[i]);
        for (int j = 0; j < pre[i] + n[i]; j++) {
            int slot = 1 + (row[i] * 17 + j * 5) % (POOL - 1); /* distinct within a row */
            tt_set(&rtt, (size_t)row[i] * CTX + j, slot);
            if (j >= pre[i]) tt_set(&loc, t++, slot);
        }
    }
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = SGL_ATTN_MODE_EXTEND;
    batch.batch_size = bs;
    batch.num_tokens = T;
    batch.page_size = 1;
    batch.req_to_token = &rtt.t;
    batch.req_pool_indices = &rpi.t;
    batch.seq_lens = &sl.t;
    batch.extend_prefix_lens = &pl.t;
    batch.extend_seq_lens = &el.t;
    batch.out_cache_loc = &loc.t;
    rc = b->ops->init_forward_metadata(b, &batch);
    if (rc) fail_msg("metadata: %s", b->ops->last_error(b));
    ttensor *ch[] = {&rpi, &sl, &pl, &el, &rtt, &loc};
    if (which >= 0 && which < 6) tt_set(ch[which], which == 4 ? (size_t)row[0] * CTX : 0, (double)value);
    sgl_attn_layer L;
    sgl_attn_forward_args a;
    tu_attn_call(&L, &a, &batch, HQ, HKV, D, D, &kc, &vc, &q, &k, &v, &out);
    r->rc = which == 6 ? SGL_ATTN_OK : b->ops->forward_extend(b, &a);
    snprintf(r->err, sizeof r->err, "%s", r->rc ? b->ops->last_error(b) : "");
    for (size_t i = 0; i < out.count; i++) r->out[i] = (float)tt_get(&out, i);
    for (size_t i = 0; i < kc.count; i++) r->k[i] = (float)tt_get(&kc, i), r->v[i] = (float)tt_get(&vc, i);
    b->ops->destroy(b);
    ttensor *all[] = {&rtt, &rpi, &sl, &pl, &el, &loc, &q, &k, &v, &out, &kc, &vc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tt_free(all[i]);
}

static void test_sparse_checks_where_it_reads(void **st) {
    (void)st;
    static sp_run clean, before, r;
    sparse_run(-1, 0, &clean);
    assert_int_equal(clean.rc, SGL_ATTN_OK);
    sparse_run(6, 0, &before); /* the pool before the forward */
    static const int64_t bad[] = {POOL + 100, -1, INT32_MAX};
    for (int which = 0; which < 6; which++)
        for (size_t v = 0; v < sizeof bad / sizeof bad[0]; v++) {
            sparse_run(which, bad[v], &r);
            if (which < 4) { /* planned copies: no effect */
                if (r.rc) fail_msg("change %d (%lld): %s", which, (long long)bad[v], r.err);
                assert_memory_equal(r.out, clean.out, sizeof r.out);
                assert_memory_equal(r.k, clean.k, sizeof r.k);
                continue;
            }
            const char *what = which == 4 ? "batch.req_to_token[" : "batch.out_cache_loc[";
            if (r.rc != SGL_ATTN_E_INVALID || !strstr(r.err, what) || !strstr(r.err, "outside the pool"))
                fail_msg("change %d (%lld): rc %d, \"%s\"", which, (long long)bad[v], r.rc, r.err);
            /* Every slot as before the forward, or as the clean run saved it. */
            for (int s = 0; s < POOL; s++) {
                const size_t row = (size_t)HKV * D;
                int same_clean = !memcmp(r.k + s * row, clean.k + s * row, row * sizeof(float));
                int same_before = !memcmp(r.k + s * row, before.k + s * row, row * sizeof(float));
                if (!same_clean && !same_before) fail_msg("change %d: pool slot %d written with something else", which, s);
            }
        }
}

/* ------------------------------------------ every kind under validation */

int sgl_attn_validate_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

static const sgl_attn_plugin *validate_plugin(void) {
    sgl_attn_host_api api;
    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    api.abi_major = SGL_ATTN_ABI_MAJOR;
    api.abi_minor_max = SGL_ATTN_ABI_MINOR;
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    assert_int_equal(sgl_attn_validate_entry(&api, &ans), SGL_ATTN_OK);
    return ans.plugin;
}

static void validated(int kind, const tu_shape *sh, uint64_t seed) {
    fx_shape fs = {SGL_ATTN_MODE_DECODE, 3, 20, 1, 4, 2, 16, 32};
    fx f;
    assert_int_equal(fx_build(&f, &fs, seed), 0);
    sgl_attn_model m;
    tu_model(&m, kind, sh, SGL_ATTN_DT_F32, 0);
    m.head_dim_v = m.head_dim_qk; /* the fixture's full layer: qk = v */
    f.model = m;
    ttensor si;
    tt_make(&si, tu_dt(0), 1, fs.bs, 0, 0);
    for (int i = 0; i < fs.bs; i++) tt_set(&si, i, i);
    f.batch.state_indices = &si.t;
    fake_inner in;
    fake_inner_init(&in);
    sgl_attn_backend *hb = NULL, *b = NULL;
    char err[256] = "";
    int rc = tu_create(kind, &m, &in, f.max_reqs, f.max_tokens, f.max_ctx, &hb, err, sizeof err);
    if (rc) fail_msg("create %d: %s", kind, err);
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = f.max_reqs;
    a.max_tokens = f.max_tokens;
    a.max_context = f.max_ctx;
    a.inner = hb;
    a.inner_caps = &f.caps;
    a.error = err;
    a.error_size = sizeof err;
    if ((rc = validate_plugin()->create(&a, &b))) fail_msg("validate create: %s", err);
    f.layer.layer_id = 1; /* a full-attention layer: through the wrapper to the inner */
    DLTensor *ts[] = {&f.t_rtt, &f.t_ocl, &f.t_rpi, &f.t_seq, &f.t_pos, &f.t_seq_cpu, &si.t};
    static const char *const names[] = {"req_to_token", "out_cache_loc", "req_pool_indices", "seq_lens",
                                        "positions",     "seq_lens_cpu",  "state_indices"};
    for (int which = -1; which < 7; which++) {
        rc = b->ops->init_forward_metadata(b, &f.batch);
        if (rc) fail_msg("kind %d metadata: %s", kind, b->ops->last_error(b));
        int before = in.n_decode;
        int64_t keep = 0, at = 0;
        if (which >= 0) {
            at = which == 0 ? fx_get(&f.t_rpi, 0) * f.max_ctx : 0;
            keep = fx_get(ts[which], at);
            fx_set(ts[which], at, which == 0 ? f.slots + 9 : keep + 1);
        }
        rc = b->ops->forward_decode(b, &f.args);
        if (which < 0) {
            if (rc) fail_msg("kind %d: %s", kind, b->ops->last_error(b));
            assert_int_equal(in.n_decode, before + 1);
            continue;
        }
        if (rc != SGL_ATTN_E_INVALID || !strstr(b->ops->last_error(b), names[which]) ||
            !strstr(b->ops->last_error(b), "the batch changed"))
            fail_msg("kind %d, %s changed: rc %d, \"%s\"", kind, names[which], rc, b->ops->last_error(b));
        assert_int_equal(in.n_decode, before); /* the wrapper never ran */
        fx_set(ts[which], at, keep);
    }
    b->ops->destroy(b);
    hb->ops->destroy(hb);
    tt_free(&si);
    fx_free(&f);
}

static void test_every_kind_validated(void **st) {
    (void)st;
    static const tu_shape gdn = {2, 4, 16, 8, 4, 0}, mamba = {2, 4, 8, 6, 4, 0}, sc = {0, 0, 0, 0, 3, 24},
                          light = {3, 3, 12, 10, 0, 0}, none = {0};
    validated(SGL_ATTN_HYBRID_GDN, &gdn, 21);
    validated(SGL_ATTN_HYBRID_KDA, &gdn, 22);
    validated(SGL_ATTN_HYBRID_MAMBA2, &mamba, 23);
    validated(SGL_ATTN_HYBRID_SHORT_CONV, &sc, 24);
    validated(SGL_ATTN_HYBRID_LIGHTNING, &light, 25);
    validated(SGL_ATTN_HYBRID_MINIMAX_SPARSE, &none, 26);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stateful_kinds_run_on_their_plan),
        cmocka_unit_test(test_sparse_checks_where_it_reads),
        cmocka_unit_test(test_every_kind_validated),
    };
    return cmocka_run_group_tests_name("hybrid_changed", tests, NULL, NULL);
}
