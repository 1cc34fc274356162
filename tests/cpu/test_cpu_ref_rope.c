/* test_cpu_ref_rope.c - MLA's rope split (ABI 1.2, forward_args.q_rope /
 * k_rope): q [T, Hq, rank] beside q_rope [T, Hq, rope], k [T, 1, rank]
 * beside k_rope [T, 1, rope], the rope parts strided views as sglang
 * slices them.  The result and the saved pool equal the concatenated form's
 * exactly, and match float64 math written here; wrong rope shapes are
 * refused naming the field and value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref_fixture.h"

enum { RANK = 128, ROPE = 32, PAD = 8 };

typedef struct split {
    void *q_lat, *q_rope_buf, *k_lat, *k_rope_buf;
    int64_t sh_ql[3], sh_qr[3], st_qr[3], sh_kl[3], sh_kr[3], st_kr[3];
    DLTensor ql, qr, kl, kr;
} split;

/* The split tensors of r's q / k: the rope parts inside wider rows (strided). */
static void make_split(split *sp, const tc_run *r) {
    const tc_spec *s = &r->s;
    const size_t sz = tc_size(s->dt);
    const int64_t T = r->T, H = s->hq;
    sp->q_lat = malloc(sz * (size_t)(T * H * RANK) + 8);
    sp->q_rope_buf = calloc(sz, (size_t)(T * H * (ROPE + PAD)) + 8);
    sp->k_lat = malloc(sz * (size_t)(T * RANK) + 8);
    sp->k_rope_buf = calloc(sz, (size_t)(T * (ROPE + PAD)) + 8);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t h = 0; h < H; h++) {
            const unsigned char *src = (const unsigned char *)r->q + ((t * H + h) * s->dqk) * sz;
            memcpy((unsigned char *)sp->q_lat + ((t * H + h) * RANK) * sz, src, RANK * sz);
            memcpy((unsigned char *)sp->q_rope_buf + ((t * H + h) * (ROPE + PAD) + PAD) * sz, src + RANK * sz,
                   ROPE * sz);
        }
        const unsigned char *ks = (const unsigned char *)r->k + (t * s->dqk) * sz;
        memcpy((unsigned char *)sp->k_lat + (t * RANK) * sz, ks, RANK * sz);
        memcpy((unsigned char *)sp->k_rope_buf + (t * (ROPE + PAD) + PAD) * sz, ks + RANK * sz, ROPE * sz);
    }
    const DLDataType dt = r->t_q.dtype;
    sp->sh_ql[0] = T, sp->sh_ql[1] = H, sp->sh_ql[2] = RANK;
    sp->sh_qr[0] = T, sp->sh_qr[1] = H, sp->sh_qr[2] = ROPE;
    sp->st_qr[0] = H * (ROPE + PAD), sp->st_qr[1] = ROPE + PAD, sp->st_qr[2] = 1;
    sp->sh_kl[0] = T, sp->sh_kl[1] = 1, sp->sh_kl[2] = RANK;
    sp->sh_kr[0] = T, sp->sh_kr[1] = 1, sp->sh_kr[2] = ROPE;
    sp->st_kr[0] = ROPE + PAD, sp->st_kr[1] = ROPE + PAD, sp->st_kr[2] = 1;
    sp->ql = (DLTensor){.data = sp->q_lat, .device = {kDLCPU, 0}, .ndim = 3, .dtype = dt, .shape = sp->sh_ql};
    sp->qr = (DLTensor){.data = sp->q_rope_buf, .device = {kDLCPU, 0}, .ndim = 3, .dtype = dt, .shape = sp->sh_qr,
                        .strides = sp->st_qr, .byte_offset = PAD * sz};
    sp->kl = (DLTensor){.data = sp->k_lat, .device = {kDLCPU, 0}, .ndim = 3, .dtype = dt, .shape = sp->sh_kl};
    sp->kr = (DLTensor){.data = sp->k_rope_buf, .device = {kDLCPU, 0}, .ndim = 3, .dtype = dt, .shape = sp->sh_kr,
                        .strides = sp->st_kr, .byte_offset = PAD * sz};
}

static void free_split(split *sp) { free(sp->q_lat), free(sp->q_rope_buf), free(sp->k_lat), free(sp->k_rope_buf); }

static void use_split(tc_run *r, split *sp) {
    r->args.q = &sp->ql, r->args.k = &sp->kl;
    r->args.q_rope = &sp->qr, r->args.k_rope = &sp->kr;
}

static tc_spec mla_spec(int mode, uint32_t dt) {
    tc_spec s;
    memset(&s, 0, sizeof s);
    s.mode = mode, s.bs = 3, s.hq = 8, s.hkv = 1, s.dqk = RANK + ROPE, s.dv = RANK, s.mla = 1, s.page = 16;
    s.window = -1, s.dt = s.kv_dt = dt, s.save = 1, s.tpr = mode == SGL_ATTN_MODE_TARGET_VERIFY ? 3 : 1;
    s.seq[0] = 90, s.seq[1] = 5, s.seq[2] = 300;
    s.prefix[0] = 40, s.prefix[1] = 0, s.prefix[2] = 280;
    s.scale = 0.08f;
    return s;
}

static void test_split_equals_concatenated(void **state) {
    (void)state;
    const struct {
        int mode;
        uint32_t dt;
    } cs[] = {{SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_BF16},
              {SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_F32},
              {SGL_ATTN_MODE_TARGET_VERIFY, SGL_ATTN_DT_F16},
              {SGL_ATTN_MODE_EXTEND, SGL_ATTN_DT_F64}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        tc_spec s = mla_spec(cs[c].mode, cs[c].dt);
        tc_run whole, parts;
        tc_build(&whole, &s, 41, 42);
        tc_build(&parts, &s, 41, 42);
        split sp;
        make_split(&sp, &parts);
        use_split(&parts, &sp);
        char err[256];
        sgl_attn_backend *b = tc_create(&whole, err, sizeof err);
        assert_int_equal(tc_forward(&whole, b), SGL_ATTN_OK);
        int rc = tc_forward(&parts, b);
        if (rc) print_message("# %s\n", b->ops->last_error(b));
        assert_int_equal(rc, SGL_ATTN_OK);
        const size_t osz = tc_out_count(&whole) * tc_size(s.dt);
        assert_memory_equal(whole.out, parts.out, osz);
        assert_memory_equal(whole.k_cache, parts.k_cache, (size_t)(whole.slots * s.dqk) * tc_size(s.dt));
        double *ref = malloc(sizeof(double) * tc_out_count(&whole));
        tc_naive(&whole, ref); /* float64 over the concatenated rows */
        const double e = tc_nmse(&parts, ref);
        print_message("# mode %d dtype %u: split == concatenated bit for bit; nmse vs float64 %.3g\n", cs[c].mode,
                      cs[c].dt, e);
        assert_true(e < (s.dt == SGL_ATTN_DT_BF16 ? 1e-5 : s.dt == SGL_ATTN_DT_F16 ? 1e-7 : 1e-11));
        free(ref);
        b->ops->destroy(b);
        free_split(&sp);
        tc_free(&whole), tc_free(&parts);
    }
}

static void expect(tc_run *r, sgl_attn_backend *b, const char *text) {
    int rc = tc_forward(r, b);
    print_message("# %s\n", b->ops->last_error(b));
    assert_int_equal(rc, SGL_ATTN_E_INVALID);
    assert_non_null(strstr(b->ops->last_error(b), text));
}

static void test_bad_rope(void **state) {
    (void)state;
    tc_spec s = mla_spec(SGL_ATTN_MODE_DECODE, SGL_ATTN_DT_F32);
    tc_run r;
    tc_build(&r, &s, 1, 2);
    split sp;
    make_split(&sp, &r);
    use_split(&r, &sp);
    char err[256];
    sgl_attn_backend *b = tc_create(&r, err, sizeof err);
    assert_int_equal(tc_forward(&r, b), SGL_ATTN_OK);
    sp.sh_qr[2] = RANK + ROPE; /* as wide as the whole row */
    expect(&r, b, "forward args q_rope has 160 dims per head; expected 1..159");
    sp.sh_qr[2] = ROPE - 8;
    expect(&r, b, "forward args k_rope has 32 dims per token but q_rope 24");
    sp.sh_kr[2] = ROPE - 8; /* both 24: then q's latent part is 8 too narrow */
    expect(&r, b, "q has shape [3, 8, 128]; expected [3, 8, 136]");
    sp.sh_kr[2] = ROPE;
    sp.sh_qr[2] = ROPE;
    sp.sh_kr[2] = ROPE - 1;
    expect(&r, b, "forward args k_rope has 31 dims per token but q_rope 32");
    sp.sh_kr[2] = ROPE;
    r.args.k_rope = NULL;
    expect(&r, b, "save_kv_cache with q_rope but no k_rope");
    r.args.k_rope = &sp.kr;
    sp.qr.dtype = (DLDataType){kDLFloat, 16, 1};
    expect(&r, b, "forward args q_rope is float16 but q is float32");
    b->ops->destroy(b);
    free_split(&sp);
    tc_free(&r);
    /* not MLA */
    s.mla = 0, s.hkv = 2, s.dv = s.dqk;
    tc_build(&r, &s, 1, 2);
    b = tc_create(&r, err, sizeof err);
    DLTensor qr = r.t_q;
    r.args.q_rope = &qr;
    expect(&r, b, "forward args q_rope is set but the layer is not MLA");
    b->ops->destroy(b);
    tc_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_equals_concatenated),
        cmocka_unit_test(test_bad_rope),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
