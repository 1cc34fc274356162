/*
 * hyb_tmpl.h - precision template for the compute files.  Each file that
 * includes this is compiled twice: HYB_F64 undefined gives real_t = float and
 * names ending in _f32 (the fast path); HYB_F64 defined gives double and _f64
 * (the reference path).  FN(name) appends the suffix.
 */
#ifndef HYB_TMPL_H
#define HYB_TMPL_H

#include <math.h>
#include <string.h>

#include "hyb.h"

#define HYB_CAT_(a, b) a##_##b
#define HYB_CAT(a, b) HYB_CAT_(a, b)

#ifdef HYB_F64
typedef double real_t;
#define HYB_SUF f64
#define RX(x) x
#define hyb_load_r hyb_load_f64
#define hyb_store_r hyb_store_f64
#else
typedef float real_t;
#define HYB_SUF f32
#define RX(x) x##f
#define hyb_load_r hyb_load_f32
#define hyb_store_r hyb_store_f32
#endif
#define FN(name) HYB_CAT(name, HYB_SUF)

/* Wide vectors for the hot loops (GCC/clang vector extensions), 64 bytes:
 * one AVX-512 register, two AVX2 or four SSE/NEON registers, whichever the
 * clone being compiled has.  Moved with memcpy (no alignment assumed) through
 * macros, so no function passes a vector by value (no ABI differences). */
typedef real_t hyb_vec __attribute__((vector_size(64)));
#define HYB_VL ((int)(64 / sizeof(real_t)))
#define HYB_VLOAD(v, p) memcpy(&(v), (p), sizeof(hyb_vec))
#define HYB_VSTORE(p, v) memcpy((p), &(v), sizeof(hyb_vec))

/* Runtime-dispatched copies of a hot function for wider x86 vector units
 * (GCC function multi-versioning; the loader picks one at startup). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(HYB_NO_CLONES)
#define HYB_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HYB_CLONES
#endif

/* libm in the working precision: expf / exp, ... */
#define r_exp RX(exp)
#define r_log1p RX(log1p)
#define r_sqrt RX(sqrt)

static inline real_t FN(hyb_silu)(real_t x) { return x / ((real_t)1 + r_exp(-x)); }
static inline real_t FN(hyb_sigmoid)(real_t x) { return (real_t)1 / ((real_t)1 + r_exp(-x)); }
/* torch.nn.functional.softplus(x, beta=1, threshold=20), as sglang's gating uses. */
static inline real_t FN(hyb_softplus)(real_t x) { return x > (real_t)20 ? x : r_log1p(r_exp(x)); }

/* ------------------------------------------------------------ drive.c */

enum { HYB_CORE_DELTA = 1, HYB_CORE_DECLIN = 2 };

/* One token's operands for one head, as a kind's gather produces them:
 * q, k [K]; v [V]; g: log-decay, [K] when per channel else g[0]; beta (delta
 * only); skip [V] added to the output after the core (mamba2's D*x). */
typedef struct FN(hyb_spec) FN(hyb_spec);
typedef void (*FN(hyb_gather_fn))(const hyb_call *c, const FN(hyb_spec) *s, int head,
                                  int64_t tok, real_t *q, real_t *k, real_t *v, real_t *g,
                                  real_t *beta, real_t *skip);
struct FN(hyb_spec) {
    int core;           /* HYB_CORE_* */
    int g_per_channel;  /* kda: one log-gate per key channel */
    int has_skip;
    real_t scale;       /* output scale */
    const real_t *par;  /* the kind's parameter rows, in w->params */
    FN(hyb_gather_fn) gather;
};

/* Phase A: causal conv1d (+ SiLU when silu) of linear->x over each request's
 * tokens, state from / to the pool, into w->scratch [T][conv_dim]. */
void FN(hyb_conv_phase)(hyb_call *c, const real_t *weight, const real_t *bias, int silu);
/* Phase B: the recurrence of every (request, head). */
int FN(hyb_drive)(hyb_call *c, const FN(hyb_spec) *s);
/* A request's conv state around its conv (caller-owned or the pool's;
 * drive.c's header says how): begin returns the time-major state to work on
 * (tmp: conv_dim * (W-1) scratch, used when it needs a copy), step stores it
 * as verify token j's intermediate state (keep only), end writes it back. */
real_t *FN(hyb_conv_state_begin)(hyb_call *c, int64_t r, real_t *tmp);
void FN(hyb_conv_state_step)(hyb_call *c, int64_t r, int j, const real_t *st);
void FN(hyb_conv_state_end)(hyb_call *c, int64_t r, const real_t *st);
/* Conv weight [conv_dim][W] and bias [conv_dim] (zeros when NULL) into par. */
void FN(hyb_load_conv)(const sgl_attn_linear_io *io, const hyb_dims *d, real_t *par);

/* ------------------------------------------------------ delta_layer.c */

/* The gdn / kda layer: conv1d + SiLU over mixed q/k/v, then the gated delta
 * rule, with one log-decay per head or (g_per_channel) per key channel. */
int FN(hyb_delta_layer_forward)(hyb_call *c, int g_per_channel);

#endif
