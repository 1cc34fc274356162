/* test_cpu_ref_invariance.c - properties the reference must have whatever
 * its arithmetic: the pool layout (slot permutation, page size) does not
 * change a bit of the output; a prefill split into two extends, and decoding
 * token t after it, give the prefill's rows; MLA absorbed equals the
 * expanded attention computed naively here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

static void run(tc_run *r) {
    char err[512] = "";
    sgl_attn_backend *b = tc_create_forward(r, err, sizeof err);
    if (!b) fail_msg("%s", err);
    b->ops->destroy(b);
}

static size_t out_bytes(const tc_run *r) { return tc_out_count(r) * tc_size(r->s.dt); }

static tc_spec shape(int which) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.window = -1;
    s.tpr = 1;
    s.save = 1;
    s.dt = s.kv_dt = SGL_ATTN_DT_BF16;
    s.page = 16;
    s.bs = 3;
    s.seq[0] = 70, s.seq[1] = 1, s.seq[2] = 333;
    switch (which) {
    case 0: /* decode, GQA */
        s.mode = SGL_ATTN_MODE_DECODE, s.hq = 8, s.hkv = 2, s.dqk = s.dv = 64;
        break;
    case 1: /* extend with prefixes, window and sinks */
        s.mode = SGL_ATTN_MODE_EXTEND, s.hq = 4, s.hkv = 4, s.dqk = s.dv = 32;
        s.prefix[0] = 40, s.prefix[1] = 0, s.prefix[2] = 300;
        s.window = 50, s.sinks = 1, s.dt = s.kv_dt = SGL_ATTN_DT_F32;
        break;
    default: /* MLA decode */
        s.mode = SGL_ATTN_MODE_DECODE, s.mla = 1, s.hq = 16, s.hkv = 1, s.dqk = 72, s.dv = 64;
        s.dt = s.kv_dt = SGL_ATTN_DT_F16;
        break;
    }
    return s;
}

/* Same values, other layouts (pages shuffled differently, other rows,
 * other page sizes): identical bytes out. */
static void test_layout_invariance(void **state) {
    (void)state;
    static const int pages[] = {16, 1, 64, 7};
    for (int which = 0; which < 3; which++) {
        tc_spec s = shape(which);
        tc_run a;
        tc_build(&a, &s, 100, 42);
        run(&a);
        for (int v = 0; v < 4; v++) {
            tc_spec s2 = s;
            s2.page = pages[v];
            tc_run b;
            tc_build(&b, &s2, 200 + (uint64_t)v, 42); /* same values, another layout */
            if (tc_slot(&a, 2, 5) == tc_slot(&b, 2, 5) && tc_slot(&a, 2, 300) == tc_slot(&b, 2, 300))
                fail_msg("layouts did not differ");
            run(&b);
            if (memcmp(a.out, b.out, out_bytes(&a)))
                fail_msg("shape %d: output differs between page %d and page %d layouts", which, s.page, s2.page);
            tc_free(&b);
        }
        tc_free(&a);
    }
}

/* Point the run's batch at tokens [t0, t0 + n) of its q/k/v/out/ocl. */
static void view_tokens(tc_run *r, tc_run *base, int t0, int n) {
    const size_t d = tc_size(r->s.dt), isz = r->s.idx64 ? 8 : 4;
    r->t_q.data = (char *)base->q + (size_t)t0 * (size_t)(r->s.hq * r->s.dqk) * d;
    r->t_k.data = (char *)base->k + (size_t)t0 * (size_t)(r->s.hkv * r->s.dqk) * d;
    r->t_v.data = (char *)base->v + (size_t)t0 * (size_t)(r->s.hkv * r->s.dv) * d;
    r->t_out.data = (char *)base->out + (size_t)t0 * (size_t)(r->s.hq * r->s.dv) * d;
    r->t_ocl.data = (char *)base->ocl + (size_t)t0 * isz;
    r->sh_q[0] = r->sh_k[0] = r->sh_v[0] = r->sh_out[0] = r->sh_T[0] = n;
    r->batch.num_tokens = n;
}

static void set_len(tc_run *r, int prefix, int n_new) {
    if (r->s.idx64) {
        ((int64_t *)r->seq_lens)[0] = prefix + n_new;
        ((int64_t *)r->prefix_lens)[0] = prefix;
        ((int64_t *)r->ext_lens)[0] = n_new;
    } else {
        ((int32_t *)r->seq_lens)[0] = prefix + n_new;
        ((int32_t *)r->prefix_lens)[0] = prefix;
        ((int32_t *)r->ext_lens)[0] = n_new;
    }
    r->batch.seq_lens_sum = prefix + n_new;
}

static void near_all(const tc_run *r, const void *want, size_t i0, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        double g = tc_load(r->s.dt, r->out, i0 + i), w = tc_load(r->s.dt, want, i0 + i);
        double tol = r->s.dt == SGL_ATTN_DT_F64 ? 1e-12 : 1e-5;
        if (!(fabs(g - w) <= tol * (1 + fabs(w)))) fail_msg("%s: element %zu = %.12g, expected %.12g", what, i0 + i, g, w);
    }
}

/* One prefill of N tokens == extend of N1 then extend of N - N1; and a
 * decode of token t (pool from the prefill) == prefill row t. */
static void test_split_prefill_and_decode(void **state) {
    (void)state;
    static const uint32_t dts[] = {SGL_ATTN_DT_F64, SGL_ATTN_DT_F32};
    for (int p = 0; p < 2; p++)
        for (int mla = 0; mla < 2; mla++) {
            tc_spec s;
            memset(&s, 0, sizeof s);
            s.mode = SGL_ATTN_MODE_EXTEND;
            s.bs = 1;
            s.hq = mla ? 8 : 6, s.hkv = mla ? 1 : 2, s.dqk = mla ? 40 : 48, s.dv = mla ? 32 : 48;
            s.mla = mla;
            s.page = 16;
            s.window = -1;
            s.save = 1;
            s.dt = s.kv_dt = dts[p];
            const int N = 1200, N1 = 457;
            s.seq[0] = N;
            tc_run r;
            tc_build(&r, &s, 7, 8);
            const size_t pool_k = (size_t)(r.slots * r.s.hkv * r.s.dqk) * tc_size(s.kv_dt);
            const size_t pool_v = mla ? 0 : (size_t)(r.slots * r.s.hkv * r.s.dv) * tc_size(s.kv_dt);
            void *k0 = malloc(pool_k), *v0 = malloc(pool_v + 1), *want = malloc(out_bytes(&r));
            memcpy(k0, r.k_cache, pool_k);
            if (pool_v) memcpy(v0, r.v_cache, pool_v);
            run(&r); /* the whole prefill */
            memcpy(want, r.out, out_bytes(&r));

            /* two extends over the initial pool */
            memcpy(r.k_cache, k0, pool_k);
            if (pool_v) memcpy(r.v_cache, v0, pool_v);
            memset(r.out, 0xff, out_bytes(&r));
            tc_run base = r;
            set_len(&r, 0, N1);
            view_tokens(&r, &base, 0, N1);
            run(&r);
            set_len(&r, N1, N - N1);
            view_tokens(&r, &base, N1, N - N1);
            run(&r);
            view_tokens(&r, &base, 0, N);
            near_all(&r, want, 0, tc_out_count(&r), "split prefill");

            /* decode token t, reading the K/V the prefill saved */
            r.batch.forward_mode = SGL_ATTN_MODE_DECODE;
            r.batch.tokens_per_req = 1;
            r.batch.extend_prefix_lens = r.batch.extend_seq_lens = NULL;
            r.args.save_kv_cache = 0;
            const int ts[] = {0, 31, 32, 600, N - 1};
            for (int k = 0; k < 5; k++) {
                const int t = ts[k];
                set_len(&r, t, 1);
                memset(r.out, 0xff, out_bytes(&base));
                view_tokens(&r, &base, t, 1);
                run(&r);
                const size_t row = (size_t)(s.hq * r.s.dv);
                near_all(&r, want, (size_t)t * row, row, "decode vs prefill row");
                r.t_out.data = base.out;
            }
            view_tokens(&r, &base, 0, N);
            tc_free(&r);
            free(k0);
            free(v0);
            free(want);
        }
}

/* MLA: absorbed attention over the latent pool, times W_UV, equals
 * attention with per-head K = [W_UK c, k_rope] and V = W_UV c. */
static void test_mla_absorbed_equals_expanded(void **state) {
    (void)state;
    enum { H = 4, RANK = 16, ROPE = 8, NOPE = 12, VD = 10 };
    for (int mode = 0; mode < 2; mode++) {
        tc_spec s;
        memset(&s, 0, sizeof s);
        s.mode = mode ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE;
        s.bs = 2;
        s.hq = H, s.hkv = 1, s.dqk = RANK + ROPE, s.dv = RANK, s.mla = 1;
        s.page = 64;
        s.window = -1;
        s.dt = s.kv_dt = SGL_ATTN_DT_F64;
        s.scale = (float)(1.0 / sqrt((double)(NOPE + ROPE)));
        s.seq[0] = 90, s.seq[1] = 41;
        s.prefix[0] = 60, s.prefix[1] = 0;
        tc_run r;
        tc_build(&r, &s, 21, 22);
        r.args.save_kv_cache = 0; /* the latent rows are in the pool already */
        uint64_t st = 99;
        double wuk[H][NOPE][RANK], wuv[H][VD][RANK];
        for (int h = 0; h < H; h++)
            for (int a = 0; a < RANK; a++) {
                for (int n = 0; n < NOPE; n++) wuk[h][n][a] = 0.3 * tc_normal(&st);
                for (int n = 0; n < VD; n++) wuv[h][n][a] = 0.3 * tc_normal(&st);
            }
        double *qn = malloc(sizeof(double) * (size_t)(r.T * H * NOPE)), *qr = malloc(sizeof(double) * (size_t)(r.T * H * ROPE));
        for (int i = 0; i < r.T * H * NOPE; i++) qn[i] = tc_normal(&st);
        for (int i = 0; i < r.T * H * ROPE; i++) qr[i] = tc_normal(&st);
        /* absorbed q = [q_nope W_UK, q_rope] */
        double *q = r.q;
        for (int t = 0; t < r.T; t++)
            for (int h = 0; h < H; h++) {
                double *row = q + (t * H + h) * (RANK + ROPE);
                for (int a = 0; a < RANK; a++) {
                    double acc = 0;
                    for (int n = 0; n < NOPE; n++) acc += qn[(t * H + h) * NOPE + n] * wuk[h][n][a];
                    row[a] = acc;
                }
                for (int e = 0; e < ROPE; e++) row[RANK + e] = qr[(t * H + h) * ROPE + e];
            }
        run(&r);
        const double *pool = r.k_cache, *lat = r.out;
        int tok = 0;
        for (int i = 0; i < s.bs; i++) {
            const int first = mode ? s.prefix[i] : s.seq[i] - 1, nn = mode ? s.seq[i] - s.prefix[i] : 1;
            for (int j = 0; j < nn; j++, tok++)
                for (int h = 0; h < H; h++) {
                    const int pos = first + j;
                    double *sc = malloc(sizeof(double) * (size_t)(pos + 1)), mx = -INFINITY;
                    for (int k = 0; k <= pos; k++) {
                        const double *c = pool + tc_slot(&r, i, k) * (RANK + ROPE);
                        double dot = 0;
                        for (int n = 0; n < NOPE; n++) {
                            double kn = 0;
                            for (int a = 0; a < RANK; a++) kn += wuk[h][n][a] * c[a];
                            dot += qn[(tok * H + h) * NOPE + n] * kn;
                        }
                        for (int e = 0; e < ROPE; e++) dot += qr[(tok * H + h) * ROPE + e] * c[RANK + e];
                        sc[k] = dot * s.scale;
                        mx = sc[k] > mx ? sc[k] : mx;
                    }
                    double den = 0;
                    for (int k = 0; k <= pos; k++) den += exp(sc[k] - mx);
                    for (int n = 0; n < VD; n++) {
                        double want = 0, got = 0;
                        for (int k = 0; k <= pos; k++) {
                            const double *c = pool + tc_slot(&r, i, k) * (RANK + ROPE);
                            double vv = 0;
                            for (int a = 0; a < RANK; a++) vv += wuv[h][n][a] * c[a];
                            want += exp(sc[k] - mx) / den * vv;
                        }
                        for (int a = 0; a < RANK; a++) got += wuv[h][n][a] * lat[(tok * H + h) * RANK + a];
                        if (!(fabs(got - want) <= 1e-11 * (1 + fabs(want))))
                            fail_msg("mode %d token %d head %d dim %d: absorbed %.15g, expanded %.15g", mode, tok, h, n,
                                     got, want);
                    }
                    free(sc);
                }
        }
        free(qn);
        free(qr);
        tc_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_invariance),
        cmocka_unit_test(test_split_prefill_and_decode),
        cmocka_unit_test(test_mla_absorbed_equals_expanded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
