/* test_lin_pure.c - the pure-C parts of the CUDA linear wrappers, here (no
 * CUDA, no GPU): dims from random models of every kind against the formulas
 * of docs/hybrid.md, state sizes, the device layout (aligned, disjoint, every
 * path's buffers present exactly when it may run), path eligibility, and the
 * tensor checks' verdicts and messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lin.h"
#include "lt_check.h"

static sgl_attn_model model_of(int kind, int hk, int hv, int dk, int dv, int w, int hidden, uint32_t st,
                               int layers, uint64_t full_mask) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    snprintf(m.name, sizeof m.name, "rand");
    snprintf(m.model_type, sizeof m.model_type, "test");
    m.num_layers = layers;
    m.num_q_heads = 8;
    m.num_kv_heads = 2;
    m.head_dim_qk = m.head_dim_v = 128;
    m.dtype = SGL_ATTN_DT_BF16;
    m.hybrid_kind = (uint32_t)kind;
    m.full_attention_mask[0] = full_mask;
    m.lin_num_k_heads = hk;
    m.lin_num_v_heads = hv;
    m.lin_head_k_dim = dk;
    m.lin_head_v_dim = dv;
    m.lin_conv_kernel = w;
    m.lin_hidden = hidden;
    m.lin_state_dtype = st;
    return m;
}

/* The dims as the CUDA wrappers take them: the SDK's, with their state dtypes. */
static int dims_of(int kind, const sgl_attn_model *m, lin_dims *d, char *why, size_t n) {
    return sgl_sdk_lin_dims_of(kind, m, LIN_STATE_DTYPES, d, why, n);
}

static void test_dims(void) {
    uint64_t rs = 0x9e3779b97f4a7c15ull;
    const int kinds[] = {SGL_ATTN_HYBRID_GDN, SGL_ATTN_HYBRID_KDA, SGL_ATTN_HYBRID_MAMBA2, SGL_ATTN_HYBRID_SHORT_CONV,
                         SGL_ATTN_HYBRID_LIGHTNING};
    for (int it = 0; it < 200; it++) {
        const int kind = kinds[lt_rand(&rs, 0, 4)];
        const int hk = lt_rand(&rs, 1, 8), hv = hk * lt_rand(&rs, 1, 4), dk = lt_rand(&rs, 1, 256),
                  dv = lt_rand(&rs, 1, 256), w = lt_rand(&rs, 1, 8), hidden = lt_rand(&rs, 1, 5000);
        const int layers = lt_rand(&rs, 1, 64);
        const uint64_t mask = rs; /* random full-attention layers */
        const uint32_t st = lt_rand(&rs, 0, 1) ? SGL_ATTN_DT_BF16 : SGL_ATTN_DT_F32;
        sgl_attn_model m = model_of(kind, hk, hv, dk, dv, w, hidden, st, layers, mask);
        lin_dims d;
        char why[256] = "";
        int rc = dims_of(kind, &m, &d, why, sizeof why);
        LT_CHECK(rc == SGL_ATTN_OK, "kind %d: %s", kind, why);
        if (rc) continue;
        int nlin = 0;
        for (int l = 0; l < layers; l++) nlin += !((mask >> l) & 1u);
        LT_CHECK(d.n_lin == nlin, "n_lin %d, expected %d", d.n_lin, nlin);
        LT_CHECK(d.esz == (st == SGL_ATTN_DT_BF16 ? 2 : 4), "esz %d", d.esz);
        int64_t conv_dim, ssm, x_dim, ew;
        switch (kind) {
        case SGL_ATTN_HYBRID_SHORT_CONV:
            conv_dim = hidden, ssm = 0, x_dim = 3 * hidden, ew = w;
            break;
        case SGL_ATTN_HYBRID_LIGHTNING:
            conv_dim = 0, ssm = (int64_t)hv * dv * dk, x_dim = 0, ew = 0;
            break;
        default:
            conv_dim = 2 * hk * dk + hv * dv, ssm = (int64_t)hv * dv * dk, x_dim = conv_dim, ew = w;
        }
        LT_CHECK(d.conv_dim == conv_dim && d.ssm_elems == ssm && d.x_dim == x_dim && d.conv_w == ew,
                 "kind %d dims: conv %d/%lld ssm %lld/%lld x %d/%lld w %d/%lld", kind, d.conv_dim, (long long)conv_dim,
                 (long long)d.ssm_elems, (long long)ssm, d.x_dim, (long long)x_dim, d.conv_w, (long long)ew);
        LT_CHECK(d.conv_elems == (ew > 0 ? conv_dim * (ew - 1) : 0), "conv_elems");
        LT_CHECK(d.gc == (kind == SGL_ATTN_HYBRID_KDA ? dk : 1), "gc");
        const uint64_t want = (uint64_t)nlin * (uint64_t)(d.conv_elems + d.ssm_elems) * (uint64_t)d.esz;
        const uint64_t sb = sgl_sdk_lin_state_bytes(kind, &m, LIN_STATE_DTYPES);
        LT_CHECK(sb == want, "state bytes %llu, expected %llu", (unsigned long long)sb, (unsigned long long)want);
        for (int l = 0; l < layers; l++)
            LT_CHECK(sgl_sdk_lin_layer_is_own(kind, &m, l) == !((mask >> l) & 1u), "layer %d routing", l);
        /* the layout: 256-aligned, disjoint, inside the total */
        lin_layout L;
        rc = lin_layout_compute(&L, &d, lt_rand(&rs, 1, 64), lt_rand(&rs, 1, 4096), lt_rand(&rs, 0, 5),
                                lt_rand(&rs, 0, 1), lt_rand(&rs, 0, 1), why, sizeof why);
        LT_CHECK(rc == SGL_ATTN_OK, "layout: %s", why);
        size_t offs[40];
        int no = 0;
        offs[no++] = L.conv, offs[no++] = L.ssm, offs[no++] = L.iconv, offs[no++] = L.issm;
        for (int i = 0; i < 16; i++) offs[no++] = L.plan[i];
        size_t more[] = {L.X, L.G, L.B, L.Wt, L.QGt, L.KDt, L.Ut, L.Mt, L.eG, L.Sk, L.dq, L.Qc, L.Kc, L.Vc, L.Hs, L.stage};
        for (size_t i = 0; i < sizeof more / sizeof *more; i++) offs[no++] = more[i];
        for (int i = 0; i < no; i++) {
            LT_CHECK(offs[i] % 256 == 0 && offs[i] <= L.total, "offset %d = %zu (total %zu)", i, offs[i], L.total);
            if (i) LT_CHECK(offs[i] >= offs[i - 1], "offsets in order at %d", i);
        }
        LT_CHECK(L.max_chunks >= (L.max_tokens + LIN_CHUNK - 1) / LIN_CHUNK + L.max_reqs - 0, "max_chunks");
    }
}

static void test_refusals(void) {
    char why[256];
    lin_dims d;
    sgl_attn_model m = model_of(SGL_ATTN_HYBRID_GDN, 2, 4, 128, 128, 4, 0, SGL_ATTN_DT_F64, 4, 0xa);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_E_UNSUPPORTED &&
                 strstr(why, "lin_state_dtype"), "f64 state: %s", why);
    m = model_of(SGL_ATTN_HYBRID_GDN, 2, 5, 128, 128, 4, 0, SGL_ATTN_DT_F32, 4, 0xa);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_E_UNSUPPORTED &&
                 strstr(why, "lin_num_v_heads = 5"), "hv 5 over hk 2: %s", why);
    m = model_of(SGL_ATTN_HYBRID_MAMBA2, 2, 4, 128, 128, 9, 0, SGL_ATTN_DT_F32, 4, 0xa);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_MAMBA2, &m, &d, why, sizeof why) == SGL_ATTN_E_UNSUPPORTED &&
                 strstr(why, "lin_conv_kernel = 9"), "conv 9: %s", why);
    m = model_of(SGL_ATTN_HYBRID_KDA, 2, 4, 128, 128, 4, 0, SGL_ATTN_DT_F32, 4, 0xa);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_E_UNSUPPORTED &&
                 strstr(why, "this wrapper computes gdn"), "kind mismatch: %s", why);
    m = model_of(SGL_ATTN_HYBRID_GDN, 2, 4, 128, 128, 4, 0, SGL_ATTN_DT_F32, 4, 0xa);
    m.is_mla = 1;
    LT_CHECK(sgl_sdk_lin_supports(SGL_ATTN_HYBRID_GDN, &m, LIN_STATE_DTYPES, why, sizeof why) ==
                     SGL_ATTN_E_UNSUPPORTED &&
                 strstr(why, "non-MLA"), "gdn + MLA: %s", why);
    LT_CHECK(sgl_sdk_lin_supports(SGL_ATTN_HYBRID_KDA, &m, LIN_STATE_DTYPES, why, sizeof why) ==
                 SGL_ATTN_E_UNSUPPORTED,
             "kda refuses a gdn model");
    /* the option kernel's names are indexed by variant */
    LT_CHECK(!strcmp(lin_variant_names[LIN_VARIANT_SIMPLE], "simple") &&
                 !strcmp(lin_variant_names[LIN_VARIANT_FAST], "fast") &&
                 !strcmp(lin_variant_name(LIN_VARIANT_FAST), "fast"),
             "variant names");
}

static void test_paths(void) {
    char why[128];
    lin_dims d;
    sgl_attn_model m = model_of(SGL_ATTN_HYBRID_GDN, 16, 32, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_tc_dims_ok(&d) && lin_decode_fused_dims_ok(&d, 1) && lin_decode_fused_dims_ok(&d, 4) &&
                 lin_decode_stream_dims_ok(&d, 4) && lin_prep_ut_kind_ok(&d),
             "qwen3-next dims fit");
    LT_CHECK(!lin_decode_fused_dims_ok(&d, LIN_DECODE_NMAX + 1) && !lin_decode_stream_dims_ok(&d, LIN_DECODE_NMAX + 1),
             "too many verify tokens");
    lin_layout L;
    /* fast, 16-bit activations: the chunked extend's scratch (the prep + UT pair's, the per-chunk states) and
     * the stream decode's operand scratch, no token-by-token scratch */
    LT_CHECK(lin_layout_compute(&L, &d, 64, 8192, 4, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(L.need_tc && !L.need_simple && L.need_stream && L.need_prep_ut, "fast, bf16: chunked extend, stream decode");
    LT_CHECK(L.Wt < L.QGt && L.QGt - L.Wt >= (size_t)8192 * 32 * 128 * 2, "W scratch size");
    LT_CHECK(L.Qc > L.dq && L.Qc - L.dq >= (size_t)64 * 16 * lin_decode_operands_per(LIN_GDN, 128, 128, 2, 1, 4) * 4 &&
                 lin_decode_operands_per(LIN_GDN, 128, 128, 2, 1, 4) % 4 == 0,
             "stream decode scratch: %zu bytes", L.Qc - L.dq);
    LT_CHECK(L.Kc - L.Qc >= (size_t)8192 * 16 * 128 * 2 && L.Hs - L.Vc >= (size_t)8192 * 32 * 128 * 2 &&
                 L.stage - L.Hs >= (size_t)L.max_chunks * 32 * 128 * 128 * 2,
             "prep + UT and state scratch");
    /* f32 activations: the token-by-token path, still the stream decode */
    LT_CHECK(lin_layout_compute(&L, &d, 64, 8192, 0, LIN_VARIANT_FAST, 0, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(!L.need_tc && L.need_simple && L.need_stream && !L.need_prep_ut && L.Hs == L.Qc && L.stage == L.Hs,
             "fast, f32 activations: the token-by-token extend");
    /* kernel=simple: only the token-by-token path */
    LT_CHECK(lin_layout_compute(&L, &d, 64, 8192, 0, LIN_VARIANT_SIMPLE, 1, why, sizeof why) == SGL_ATTN_OK, "%s",
             why);
    LT_CHECK(!L.need_tc && L.need_simple && !L.need_stream && L.G < L.B && L.B - L.G >= (size_t)8192 * 32 * 4 &&
                 L.Qc == L.dq,
             "simple: X, G, B only");
    LT_CHECK(lin_layout_compute(&L, &d, 64, 8192, 32, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(L.need_tc && L.need_simple && L.steps == 32, "32 verify tokens: the fused kernel cannot take them");
    LT_CHECK(L.issm - L.iconv >= (size_t)d.n_lin * 64 * 32 * (size_t)d.conv_elems * 4, "verify copies");
    /* kda: the prep + UT pair too: the prep's q, k [T][hk][K] and values [T][hv][V], 16-bit, before the
     * per-chunk states */
    d.kind = SGL_ATTN_HYBRID_KDA;
    LT_CHECK(lin_prep_ut_kind_ok(&d) && lin_layout_compute(&L, &d, 64, 8192, 0, LIN_VARIANT_FAST, 1, why, sizeof why) ==
                                            SGL_ATTN_OK &&
                 L.need_tc && L.need_prep_ut && L.Kc - L.Qc >= (size_t)8192 * d.hk * d.dk * 2 &&
                 L.Vc - L.Kc >= (size_t)8192 * d.hk * d.dk * 2 && L.Hs - L.Vc >= (size_t)8192 * d.hv * d.dv * 2,
             "kda: the prep + UT scratch (Qc %zu, Kc %zu, Vc %zu, Hs %zu)", L.Qc, L.Kc, L.Vc, L.Hs);
    d.kind = SGL_ATTN_HYBRID_GDN;
    d.dk = 96;
    LT_CHECK(!lin_tc_dims_ok(&d) && !lin_decode_fused_dims_ok(&d, 1) && !lin_decode_stream_dims_ok(&d, 1),
             "K = 96: token-by-token");
    LT_CHECK(lin_layout_compute(&L, &d, 64, 8192, 0, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK &&
                 !L.need_stream && !L.need_tc && L.need_simple,
             "K = 96: no stream decode scratch");
    d.dk = 256;
    LT_CHECK(!lin_tc_dims_ok(&d) && lin_decode_fused_dims_ok(&d, 1) && !lin_decode_stream_dims_ok(&d, 1),
             "K = 256: the fused decode");
    d.dk = 128;
    d.dv = 48;
    LT_CHECK(!lin_tc_dims_ok(&d) && lin_decode_fused_dims_ok(&d, 1) && lin_decode_stream_dims_ok(&d, 1),
             "V = 48: decode kernels, no chunked extend");
    d.kind = SGL_ATTN_HYBRID_SHORT_CONV;
    LT_CHECK(!lin_tc_dims_ok(&d) && !lin_decode_fused_dims_ok(&d, 1) && !lin_decode_stream_dims_ok(&d, 1),
             "short_conv: its own kernels");
    /* shared memory formulas */
    LT_CHECK(lin_decode_smem_bytes(LIN_GDN, 128, 128, 2, 1, 1) == (2 * 128 + 1 + 2 * (128 + 1 + 1)) * 4,
             "decode smem");
    LT_CHECK(LIN_FUSED_STATE_SMEM(32) <= 166912 && LIN_FUSED_UT_SMEM <= 166912,
             "the chunked kernels fit an A100 (163 KiB)");
    /* overflow is an error, not a wrap */
    sgl_attn_model big = model_of(SGL_ATTN_HYBRID_GDN, 64, 1024, 1024, 1024, 8, 0, SGL_ATTN_DT_F32, 1024, 0);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &big, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_layout_compute(&L, &d, 1 << 30, 1 << 30, 16, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_E_NOMEM &&
                 strstr(why, "overflow"), "overflow: %s", why);
}

/* A float input as the forwards check it: lin_float_spec with a name and shape. */
static int check_float(const DLTensor *t, const char *name, int device, int ndim, const int64_t *shape, char *err,
                       size_t n) {
    sgl_sdk_tensor_spec s = lin_float_spec(device);
    s.name = name;
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++) s.shape[i] = shape[i];
    return sgl_sdk_check_tensor(t, &s, err, n);
}

/* The segmented state pass: its buffer at create and the per-call rule (lin_sizing.c), expectations worked
 * out by hand from the rule in docs/cuda_linear.md for 132 SMs. */
/* The stream decode's L2 prefetch distance: the option where set (any state dtype, 0 included), else one block
 * per SM for the bf16 state and none for the float32 state */
static void test_l2a_rule(void) {
    LT_CHECK(lin_decode_l2a_blocks(-1, LIN_DT_BF16, 132) == 132 && lin_decode_l2a_blocks(-1, LIN_DT_BF16, 108) == 108,
             "auto, bf16 state: one block per SM (132: %d, 108: %d)", lin_decode_l2a_blocks(-1, LIN_DT_BF16, 132),
             lin_decode_l2a_blocks(-1, LIN_DT_BF16, 108));
    LT_CHECK(lin_decode_l2a_blocks(-1, LIN_DT_F32, 132) == 0, "auto, f32 state: no prefetch (%d)",
             lin_decode_l2a_blocks(-1, LIN_DT_F32, 132));
    LT_CHECK(lin_decode_l2a_blocks(0, LIN_DT_BF16, 132) == 0 && lin_decode_l2a_blocks(7, LIN_DT_BF16, 132) == 7 &&
                 lin_decode_l2a_blocks(396, LIN_DT_F32, 132) == 396 && lin_decode_l2a_blocks(3, LIN_DT_F32, 108) == 3,
             "the option's distance over the rule, either state dtype");
}

/* The fused phase 2's tile: mamba2 at 64 rows where its blocks fill 7/8 of the SMs (option 1, the default),
 * every batch (2), none (0); no other kind, no V but a multiple of 64 */
static void test_fused_p2_tile(void) {
    char why[256];
    lin_dims d;
    sgl_attn_model mm = model_of(SGL_ATTN_HYBRID_MAMBA2, 8, 128, 128, 64, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_MAMBA2, &mm, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_p2_tile(1, &d, 132, 1) == 64 && lin_fused_p2_tile(1, &d, 132, 16) == 64,
             "Nemotron-H 8B, 128 heads: 1 x 64k (128 blocks fill 7/8 of 132 SMs) and 16 x 8k at tile 64");
    LT_CHECK(lin_fused_p2_tile(1, &d, 147, 1) == 0 && lin_fused_p2_tile(1, &d, 146, 1) == 64,
             "the 7/8 boundary: 128 blocks fill 7/8 of 146 SMs, not of 147");
    LT_CHECK(lin_fused_p2_tile(2, &d, 1000, 1) == 64 && lin_fused_p2_tile(0, &d, 132, 16) == 0 &&
                 lin_fused_p2_tile(1, &d, 132, 0) == 0 && lin_fused_p2_tile(2, &d, 132, 0) == 0,
             "always / off / no request");
    sgl_attn_model m16 = model_of(SGL_ATTN_HYBRID_MAMBA2, 1, 16, 128, 64, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_MAMBA2, &m16, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_p2_tile(1, &d, 132, 1) == 0 && lin_fused_p2_tile(1, &d, 132, 8) == 64,
             "16 heads: 1 request leaves SMs idle, 8 fill them");
    sgl_attn_model m48 = model_of(SGL_ATTN_HYBRID_MAMBA2, 1, 256, 128, 96, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_MAMBA2, &m48, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_p2_tile(2, &d, 132, 4) == 0, "V 96: not a multiple of the tile");
    sgl_attn_model mg = model_of(SGL_ATTN_HYBRID_GDN, 16, 32, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &mg, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_p2_tile(2, &d, 132, 4) == 0 && lin_fused_p2_tile(1, &d, 132, 16) == 0, "gdn: never");
    sgl_attn_model mk = model_of(SGL_ATTN_HYBRID_KDA, 8, 8, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_KDA, &mk, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_p2_tile(2, &d, 132, 16) == 0, "kda: never");
}

/* fused_chunk: the kind and dims the fused chunk kernel serves, and the rule of its value 1 (requests x value
 * heads fill half the SMs; smaller batches the unfused kernels); 2 takes every batch, 0 none */
static void test_fused_cp(void) {
    char why[256];
    lin_dims d;
    sgl_attn_model m = model_of(SGL_ATTN_HYBRID_GDN, 2, 8, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_cp_dims_ok(&d), "Qwen3.5 TP8 dims served");
    LT_CHECK(lin_fused_cp_takes(1, &d, 132, 16) && lin_fused_cp_takes(1, &d, 132, 9), "16 x 8k, 9 requests: 128, 72 blocks");
    LT_CHECK(!lin_fused_cp_takes(1, &d, 132, 8) && !lin_fused_cp_takes(1, &d, 132, 1), "8 requests, 1 x 64k: the unfused path");
    LT_CHECK(lin_fused_cp_takes(2, &d, 132, 1) && !lin_fused_cp_takes(0, &d, 132, 16) && !lin_fused_cp_takes(2, &d, 132, 0),
             "always / off / no request");
    sgl_attn_model m2 = model_of(SGL_ATTN_HYBRID_GDN, 16, 32, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m2, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_fused_cp_takes(1, &d, 132, 3) && !lin_fused_cp_takes(1, &d, 132, 2), "Qwen3-Next: 3 requests fill half");
    LT_CHECK(lin_fused_cp_takes(1, &d, 128, 2) && !lin_fused_cp_takes(1, &d, 129, 2),
             "Qwen3-Next: the boundary at bs x HV = SMs / 2 (64 pairs: 128 SMs taken, 129 not)");
    /* the batches option 1 leaves (Qwen3.5 TP8, 1 x 64k on 132 SMs) keep the unfused path: its state pass
     * by segments under the auto rule, as without the option */
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    lin_layout L;
    int32_t smax = -1;
    LT_CHECK(lin_layout_compute(&L, &d, 16, 131072, 0, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK &&
                 lin_layout_segments(&L, &d, -1, 132, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(!lin_fused_cp_takes(1, &d, 132, 1) && lin_seg_plan(&L, &d, -1, 132, 1, 65536, 16, &smax) > 0 && smax >= 3,
             "1 x 64k: the unfused kernels' segments (%d)", smax);
    const struct { int kind, dk, dv, ok; } dims[] = {
        {SGL_ATTN_HYBRID_GDN, 128, 64, 1}, {SGL_ATTN_HYBRID_GDN, 128, 96, 0}, {SGL_ATTN_HYBRID_GDN, 64, 64, 0},
        {SGL_ATTN_HYBRID_KDA, 128, 128, 0}, {SGL_ATTN_HYBRID_MAMBA2, 128, 64, 0}};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        lin_dims e = d;
        e.kind = dims[i].kind;
        e.dk = dims[i].dk;
        e.dv = dims[i].dv;
        LT_CHECK(lin_fused_cp_dims_ok(&e) == dims[i].ok && lin_fused_cp_takes(2, &e, 132, 16) == dims[i].ok,
                 "kind %d K %d V %d: served %d", dims[i].kind, dims[i].dk, dims[i].dv, dims[i].ok);
    }
}

static void test_segments(void) {
    char why[256];
    lin_dims d;
    sgl_attn_model m = model_of(SGL_ATTN_HYBRID_GDN, 2, 8, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    lin_layout L;
    int32_t smax = -1;
    /* Qwen3.5 TP8 (8 value heads): 64 serial blocks at tile 16 -> 3 segments, 2 x 3 + 4 slots */
    LT_CHECK(lin_layout_compute(&L, &d, 8, 65536, 0, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    const size_t before = L.total;
    LT_CHECK(lin_layout_segments(&L, &d, -1, 132, why, sizeof why) == SGL_ATTN_OK && L.seg_cap == 10 &&
                 L.Zs == before && L.total == before + (size_t)10 * 8 * 256 * 128 * 4,
             "auto: 10 slots of 8 x 256 x 128 floats after the rest (cap %d)", L.seg_cap);
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 65536, 16, &smax) == 342 && smax == 3, "1 x 64k: 3 segments of 342");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 32768, 16, &smax) == 171 && smax == 3, "1 x 32k: 3 segments of 171");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 65536, 32, &smax) == 342 && smax == 3, "tile 32: 32 blocks, 3 segments");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 16, 131072, 32, &smax) == 0 && smax == 1, "16 x 8k: the serial pass");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 2, 65536, 16, &smax) == 0, "2 requests: 128 blocks, serial");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 32704, 16, &smax) == 0, "511 chunks: below LIN_SEG_AUTO_MIN_CHUNKS, serial");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 8192, 16, &smax) == 0, "1 x 8k (128 chunks): serial");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 2048, 16, &smax) == 0, "32 chunks: 2 segments of 16 at least, serial");
    LT_CHECK(lin_seg_plan(&L, &d, -1, 132, 1, 1024, 16, &smax) == 0, "16 chunks: one segment, serial");
    /* off */
    LT_CHECK(lin_layout_compute(&L, &d, 8, 65536, 0, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK &&
                 lin_layout_segments(&L, &d, 0, 132, why, sizeof why) == SGL_ATTN_OK && L.seg_cap == 0 &&
                 L.total == before && lin_seg_plan(&L, &d, 0, 132, 1, 65536, 16, &smax) == 0,
             "segment_chunks=0: no buffer, the serial pass");
    /* N = 4 chunks for every batch: ceil(1032 / 4) + 8 slots */
    LT_CHECK(lin_layout_segments(&L, &d, 4, 132, why, sizeof why) == SGL_ATTN_OK && L.seg_cap == 266, "N = 4: %d slots",
             L.seg_cap);
    LT_CHECK(lin_seg_plan(&L, &d, 4, 132, 3, 1000, 16, &smax) == 4 && smax == 4, "N = 4, 16 chunks: 4 segments");
    LT_CHECK(lin_seg_plan(&L, &d, 4, 132, 3, 200, 16, &smax) == 0, "N = 4, 4 chunks: one segment, serial");
    /* the token-by-token variant has no chunked extend: no buffer */
    LT_CHECK(lin_layout_compute(&L, &d, 8, 65536, 0, LIN_VARIANT_SIMPLE, 1, why, sizeof why) == SGL_ATTN_OK &&
                 lin_layout_segments(&L, &d, 4, 132, why, sizeof why) == SGL_ATTN_OK && L.seg_cap == 0,
             "simple: no segment buffer");
    /* Qwen3-Next (32 value heads): the serial pass fills the SMs, auto sizes nothing */
    m = model_of(SGL_ATTN_HYBRID_GDN, 16, 32, 128, 128, 4, 0, SGL_ATTN_DT_F32, 48, 0x888888888888ull);
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "%s", why);
    LT_CHECK(lin_layout_compute(&L, &d, 8, 65536, 0, LIN_VARIANT_FAST, 1, why, sizeof why) == SGL_ATTN_OK &&
                 lin_layout_segments(&L, &d, -1, 132, why, sizeof why) == SGL_ATTN_OK && L.seg_cap == 0 &&
                 lin_seg_plan(&L, &d, -1, 132, 1, 32768, 16, &smax) == 0,
             "qwen3-next: the serial pass");
}

static void test_checks(void) {
    char err[256];
    float buf[64];
    int64_t shape[3] = {4, 2, 8}, strides[3] = {32, 8, 1}; /* row stride 32: padded rows */
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = buf;
    t.device.device_type = kDLCUDA;
    t.device.device_id = 1;
    t.ndim = 3;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = shape;
    const int64_t want[3] = {4, 2, 8}, want2[3] = {4, SGL_SDK_ANY, 9};
    LT_CHECK(check_float(&t, "linear.x", 1, 3, want, err, sizeof err) == SGL_ATTN_OK, "%s", err);
    LT_CHECK(check_float(&t, "linear.x", 0, 3, want, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 !strcmp(err, "linear.x is on cuda:1; expected device 0 (the backend's)"), "other device: %s", err);
    LT_CHECK(check_float(&t, "linear.x", 1, 3, want2, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 !strcmp(err, "linear.x has shape [4, 2, 8]; expected [4, *, 9]"), "shape: %s", err);
    t.strides = strides;
    LT_CHECK(check_float(&t, "linear.x", 1, 3, want, err, sizeof err) == SGL_ATTN_E_UNSUPPORTED &&
                 !strcmp(err, "linear.x.strides[0] = 32; expected 16 (compact row-major tensors only)"),
             "strided: %s", err);
    t.strides = NULL;
    t.dtype.bits = 64;
    LT_CHECK(check_float(&t, "linear.x", 1, 3, want, err, sizeof err) == SGL_ATTN_E_UNSUPPORTED &&
                 !strcmp(err, "linear.x has dtype float64; expected float32, float16 or bfloat16"), "f64: %s", err);
    t.dtype.bits = 32;
    t.device.device_type = kDLCPU;
    LT_CHECK(check_float(&t, "linear.x", 1, 3, want, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 strstr(err, "linear.x is in host memory (DLPack device type 1, cpu); expected cuda"),
             "host: %s", err);
    t.device.device_type = kDLCUDAHost; /* pinned: readable by the kernels */
    LT_CHECK(check_float(&t, "linear.x", 0, 3, want, err, sizeof err) == SGL_ATTN_OK, "pinned: %s", err);
    t.byte_offset = 2;
    LT_CHECK(check_float(&t, "linear.x", 0, 3, want, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 strstr(err, "not aligned to its 4-byte elements"), "misaligned: %s", err);
    t.byte_offset = 0;
    LT_CHECK(check_float(NULL, "linear.b", 0, 3, want, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 !strcmp(err, "linear.b is NULL"), "NULL: %s", err);
    /* index tensors */
    int32_t idx[4] = {3, -1, 0, 2};
    int64_t n4[1] = {4};
    DLTensor ix;
    memset(&ix, 0, sizeof ix);
    ix.data = idx;
    ix.device.device_type = kDLCPU;
    ix.ndim = 1;
    ix.dtype.code = kDLInt;
    ix.dtype.bits = 32;
    ix.dtype.lanes = 1;
    ix.shape = n4;
    int on_host = 0;
    LT_CHECK(lin_check_index(&ix, "batch.state_indices", 0, 4, &on_host, err, sizeof err) == SGL_ATTN_OK && on_host,
             "host index: %s", err);
    LT_CHECK(sgl_sdk_index_at(&ix, 1) == -1 && sgl_sdk_index_at(&ix, 3) == 2, "index values");
    LT_CHECK(lin_check_index(&ix, "batch.state_indices", 0, 5, &on_host, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 !strcmp(err, "batch.state_indices has shape [4]; expected [>= 5]"), "short: %s", err);
    ix.dtype.bits = 16;
    LT_CHECK(lin_check_index(&ix, "batch.state_indices", 0, 4, &on_host, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 strstr(err, "int32 or int64"), "int16: %s", err);
    ix.dtype.bits = 32;
    ix.device.device_type = kDLCUDA;
    LT_CHECK(lin_check_index(&ix, "batch.state_indices", 0, 4, &on_host, err, sizeof err) == SGL_ATTN_OK && !on_host,
             "device index: %s", err);
    ix.device.device_id = 2;
    LT_CHECK(lin_check_index(&ix, "batch.state_indices", 0, 4, &on_host, err, sizeof err) == SGL_ATTN_E_INVALID &&
                 !on_host && !strcmp(err, "batch.state_indices is on cuda:2; expected device 0 (the backend's)"),
             "other device's index: %s", err);
}

/* ABI 1.2 fields the linear layers do not serve: named; the bytes past a
 * 1.0 caller's struct_size are not read. */
static void test_unserved(void) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    sgl_attn_batch b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    LT_CHECK(!lin_unserved_batch(&b), "a plain batch is served");
    b.custom_mask = &t;
    const char *w = lin_unserved_batch(&b);
    LT_CHECK(w && strstr(w, "batch.custom_mask"), "custom_mask: %s", w ? w : "(served)");
    b.struct_size = SGL_ATTN_BATCH_SIZE_V1_0;
    LT_CHECK(!lin_unserved_batch(&b), "a 1.0 batch's bytes past its size are read");
    sgl_attn_layer l;
    sgl_attn_forward_args a;
    const sgl_attn_dual_chunk dca = {0};
    for (int i = 0; i < 7; i++) {
        memset(&l, 0, sizeof l);
        memset(&a, 0, sizeof a);
        l.struct_size = sizeof l;
        a.struct_size = sizeof a;
        a.layer = &l;
        const char *name = i == 0 ? (a.lse = &t, "forward args lse")
                           : i == 1 ? (a.q_rope = &t, "forward args q_rope")
                           : i == 2 ? (a.k_rope = &t, "forward args k_rope")
                           : i == 3 ? (a.topk_indices = &t, "forward args topk_indices")
                           : i == 4 ? (l.slot_map = &t, "layer.slot_map")
                           : i == 5 ? (a.dual_chunk = &dca, "forward args dual_chunk")
                                    : (l.attn_type = SGL_ATTN_TYPE_BIDIRECTIONAL, "layer.attn_type");
        w = lin_unserved_forward(&a);
        LT_CHECK(w && !strcmp(w, name), "%s: got %s", name, w ? w : "(served)");
        a.struct_size = SGL_ATTN_FORWARD_ARGS_SIZE_V1_0;
        l.struct_size = SGL_ATTN_LAYER_SIZE_V1_0;
        LT_CHECK(!lin_unserved_forward(&a), "%s read past a 1.0 caller's struct", name);
    }
}

/* A DLTensor over caller-owned data (never read: the checks look at its metadata). */
typedef struct ftensor {
    DLTensor t;
    int64_t shape[5];
} ftensor;
static void ften(ftensor *f, int nd, const int64_t *shape, DLDataType dt, int dev_type, int dev_id, void *data) {
    memset(f, 0, sizeof *f);
    memcpy(f->shape, shape, (size_t)nd * sizeof *shape);
    f->t.data = data;
    f->t.device.device_type = dev_type;
    f->t.device.device_id = dev_id;
    f->t.ndim = nd;
    f->t.dtype = dt;
    f->t.shape = f->shape;
}

/* ABI 1.2 caller-owned state: the tensors a gdn layer must get, refused by name otherwise. */
static void test_caller_state(void) {
    char why[512] = "";
    const sgl_attn_model m = model_of(SGL_ATTN_HYBRID_GDN, 2, 4, 128, 64, 4, 0, SGL_ATTN_DT_F32, 4, 0x2);
    lin_dims d;
    LT_CHECK(dims_of(SGL_ATTN_HYBRID_GDN, &m, &d, why, sizeof why) == SGL_ATTN_OK, "gdn dims: %s", why);
    static _Alignas(16) float buf[4];
    const DLDataType f32 = {kDLFloat, 32, 1}, bf16 = {kDLBfloat, 16, 1};
    const int64_t S = 10, C = d.conv_dim;
    ftensor conv, ssm, iconv, issm;
    ften(&conv, 3, (int64_t[]){S, C, 3}, f32, kDLCUDA, 0, buf);
    ften(&ssm, 4, (int64_t[]){S, 4, 64, 128}, f32, kDLCUDA, 0, buf);
    ften(&iconv, 4, (int64_t[]){S, 3, C, 3}, f32, kDLCUDA, 0, buf);
    ften(&issm, 5, (int64_t[]){S, 3, 4, 64, 128}, f32, kDLCUDA, 0, buf);
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_GDN;
    io.conv_state = &conv.t;
    io.ssm_state = &ssm.t;
    sgl_sdk_lin_state cs;
    int rc = lin_check_caller_state(&d, &io, 0, 0, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_OK && cs.slots == S && cs.conv == &conv.t, "a good state: %d %s", rc, why);
    /* verify keeping 3 steps: the intermediate tensors are required */
    rc = lin_check_caller_state(&d, &io, 0, 3, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && strstr(why, "needs linear.intermediate_conv_state"), "no intermediates: %s",
             why);
    io.intermediate_conv_state = &iconv.t;
    io.intermediate_ssm_state = &issm.t;
    rc = lin_check_caller_state(&d, &io, 0, 3, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_OK && cs.steps == 3, "intermediates: %d %s", rc, why);
    rc = lin_check_caller_state(&d, &io, 0, 4, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && strstr(why, "intermediate_conv_state has 3 steps"), "4 steps: %s", why);
    struct {
        ftensor *f;
        const char *want;
        int rc;
    } bad[] = {{&ssm, "gdn_cuda layer 0: linear.ssm_state has shape [10, 4, 64, 127]", SGL_ATTN_E_INVALID},
               {&conv, "linear.conv_state is on CUDA device 1; expected device 0", SGL_ATTN_E_INVALID},
               {&ssm, "linear.ssm_state has dtype bfloat16", SGL_ATTN_E_UNSUPPORTED},
               {&issm, "linear.intermediate_ssm_state is in host memory", SGL_ATTN_E_INVALID}};
    for (int i = 0; i < 4; i++) {
        ftensor keep = *bad[i].f;
        if (i == 0) bad[i].f->shape[3] = 127;
        if (i == 1) bad[i].f->t.device.device_id = 1;
        if (i == 2) bad[i].f->t.dtype = bf16;
        if (i == 3) bad[i].f->t.device.device_type = kDLCPU;
        rc = lin_check_caller_state(&d, &io, 0, 3, "gdn_cuda layer 0: ", &cs, why, sizeof why);
        LT_CHECK(rc == bad[i].rc && strstr(why, bad[i].want), "bad %d: rc %d, '%s'; expected '%s'", i, rc, why,
                 bad[i].want);
        *bad[i].f = keep;
        bad[i].f->t.shape = bad[i].f->shape;
    }
    /* a view that does not start on 16 bytes */
    issm.t.byte_offset = 4;
    rc = lin_check_caller_state(&d, &io, 0, 3, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_E_UNSUPPORTED && strstr(why, "linear.intermediate_ssm_state starts at an address"),
             "misaligned: %s", why);
    issm.t.byte_offset = 0;
    /* one S over the tensors; ssm_state missing */
    conv.shape[0] = S + 1;
    rc = lin_check_caller_state(&d, &io, 0, 0, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && strstr(why, "has shape [10, ") && strstr(why, "expected [11, "), "two S: %s", why);
    conv.shape[0] = S;
    io.ssm_state = NULL;
    rc = lin_check_caller_state(&d, &io, 0, 0, "gdn_cuda layer 0: ", &cs, why, sizeof why);
    LT_CHECK(rc == SGL_ATTN_E_INVALID && strstr(why, "linear.ssm_state is NULL"), "no ssm: %s", why);
}

/* state_batch's host checks: the CPU wrappers' rules and messages. */
static void test_state_batch_host(void) {
    char why[512] = "";
    uint64_t keys[16];
    int32_t dv[4], sv[4], tv[4];
    ftensor dst, src, steps;
    const DLDataType i32 = {kDLInt, 32, 1};
    ften(&dst, 1, (int64_t[]){4}, i32, kDLCPU, 0, dv);
    ften(&src, 1, (int64_t[]){4}, i32, kDLCPU, 0, sv);
    ften(&steps, 1, (int64_t[]){4}, i32, kDLCPU, 0, tv);
    lin_sb_host h = {SGL_ATTN_STATE_COPY, 4, &dst.t, &src.t, NULL, 8, 3, "gdn_cuda state_batch: ",
                     "the wrapper's pool", "the pool"};
    const struct {
        int op;
        int32_t d[4], s[4], t[4];
        const char *want; /* NULL: passes */
    } cases[] = {
        {SGL_ATTN_STATE_COPY, {1, 2, -1, 3}, {0, 0, 5, 3}, {0}, NULL}, /* a src read twice, src == dst, a skip */
        {SGL_ATTN_STATE_COPY, {1, 2, 3, 4}, {0, 1, 0, 0}, {0}, "dst[0] = 1 is also src[1]"},
        {SGL_ATTN_STATE_COPY, {1, 8, 3, 4}, {0, 0, 0, 0}, {0}, "dst[1] = 8; expected -1 (skip) or a slot 0..7 (the "
                                                                "wrapper's pool has 8 slots)"},
        {SGL_ATTN_STATE_COPY, {1, 2, 3, 4}, {0, 0, -1, 0}, {0}, "src[2] = -1; expected a slot 0..7"},
        {SGL_ATTN_STATE_CLEAR, {1, 2, 1, -1}, {0}, {0}, "dst[2] = 1 repeats dst[0]"},
        {SGL_ATTN_STATE_COMMIT, {1, 1, 2, 3}, {0}, {0, -1, 2, 1}, NULL}, /* a repeat skipped by step -1 */
        {SGL_ATTN_STATE_COMMIT, {1, 2, 3, 4}, {0}, {0, 3, 2, 1}, "steps[1] = 3; expected -1 (keep) or an "
                                                                 "intermediate step 0..2 (the pool keeps 3)"},
        {SGL_ATTN_STATE_TRACK, {1, 2, 3, 4}, {2, 2, 1, 1}, {0, 1, 2, -1}, NULL}, /* track reads inter states */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        memcpy(dv, cases[c].d, sizeof dv);
        memcpy(sv, cases[c].s, sizeof sv);
        memcpy(tv, cases[c].t, sizeof tv);
        h.op = cases[c].op;
        const int has_src = h.op == SGL_ATTN_STATE_COPY || h.op == SGL_ATTN_STATE_TRACK;
        const int has_steps = h.op == SGL_ATTN_STATE_COMMIT || h.op == SGL_ATTN_STATE_TRACK;
        h.src = has_src ? &src.t : NULL;
        h.steps = has_steps ? &steps.t : NULL;
        why[0] = 0;
        const int rc = lin_sb_check_host(&h, keys, why, sizeof why);
        if (!cases[c].want) LT_CHECK(rc == SGL_ATTN_OK, "case %zu: %s", c, why);
        else
            LT_CHECK(rc == SGL_ATTN_E_INVALID && strstr(why, cases[c].want) && strstr(why, "state_batch: "),
                     "case %zu: rc %d '%s'; expected '%s'", c, rc, why, cases[c].want);
    }
}

int main(void) {
    test_unserved();
    test_caller_state();
    test_state_batch_host();
    test_dims();
    test_refusals();
    test_paths();
    test_segments();
    test_fused_cp();
    test_fused_p2_tile();
    test_l2a_rule();
    test_checks();
    printf("test_lin_pure: %d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    return lt_failures ? 1 : 0;
}
