/* hyb_test_util.h - shared pieces of the hybrid wrapper tests: a fake inner
 * backend that counts what reaches it, owned tensors, random numbers and the
 * models of each kind. */
#ifndef HYB_TEST_UTIL_H
#define HYB_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "hyb.h"
#include "linear_ref.h"

extern const sgl_attn_plugin hyb_plugin_gdn, hyb_plugin_kda, hyb_plugin_mamba2,
    hyb_plugin_short_conv, hyb_plugin_lightning, hyb_plugin_minimax_sparse;
const sgl_attn_plugin *tu_plugin(int kind);

/* ------------------------------------------------------------ fake inner */
typedef struct fake_inner {
    sgl_attn_backend base;
    int n_meta, n_extend, n_decode, n_graph_init, n_capture, n_replay;
    int last_layer;
    int fail_forward;   /* 1: forward returns SGL_ATTN_E_DEVICE */
    int32_t fill;       /* graph_seq_len_fill_value */
    const sgl_attn_batch *last_batch;
} fake_inner;
void fake_inner_init(fake_inner *f);

/* ------------------------------------------------------------ tensors */
typedef struct ttensor {
    DLTensor t;
    int64_t shape[4];
    void *buf;
    size_t count;
} ttensor;
DLDataType tu_dt(uint32_t dt_bit); /* SGL_ATTN_DT_* -> DLDataType; 0 = int32 */
void tt_make(ttensor *t, DLDataType dt, int ndim, int64_t d0, int64_t d1, int64_t d2);
void tt_free(ttensor *t);
double tt_get(const ttensor *t, size_t i);
void tt_set(ttensor *t, size_t i, double v); /* rounds to the dtype */
void tt_fill_nan(ttensor *t);

/* ------------------------------------------------------------ random */
typedef struct trng { uint64_t s; } trng;
double tr_uniform(trng *r);          /* [0, 1) */
double tr_normal(trng *r);
int tr_range(trng *r, int lo, int hi); /* [lo, hi] */
/* fill t with N(0, sigma) (rounded to t's dtype) and mirror the values into ref (may be NULL) */
void tt_fill_normal(ttensor *t, trng *r, double sigma, double *ref);

/* ------------------------------------------------------------ models */
typedef struct tu_shape {
    int hk, hv, dk, dv, conv_w, hidden;
} tu_shape;
/* A 4-layer model of `kind`, layers 1 and 3 full attention (0 and 2 linear;
 * minimax_sparse: 0 and 2 sparse).  state_dt: SGL_ATTN_DT_F32 / F64. */
void tu_model(sgl_attn_model *m, int kind, const tu_shape *s, uint32_t state_dt, int spec_tokens);
lref_dims tu_lref_dims(const hyb_dims *d);

/* create an instance over `inner` */
int tu_create(int kind, const sgl_attn_model *m, fake_inner *inner, int max_reqs, int max_tokens,
              int max_context, sgl_attn_backend **out, char *err, size_t n);

/* NMSE of got vs ref over n elements */
double tu_nmse(const ttensor *got, size_t at, const double *ref, size_t n);
/* A full-attention layer 0 (hq / hkv heads, head dims dqk / dv, sm_scale
 * 0.25, no window, unit KV scales) over the pool kc / vc, and a forward of
 * `batch` on it that saves the new K/V: q, k, v in, out out. */
void tu_attn_call(sgl_attn_layer *L, sgl_attn_forward_args *a, const sgl_attn_batch *batch, int hq, int hkv,
                  int dqk, int dv, ttensor *kc, ttensor *vc, ttensor *q, ttensor *k, ttensor *v, ttensor *out);

#endif
