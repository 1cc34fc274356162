/* full.h - the full-attention case family (decode, extend, verify):
 *   full_case.c    case keys -> fa_case, the model it implies, probe claims
 *   full_batch.c   lengths, pool and page table, inputs, staged tensors
 *   full_ref.c     the float64 reference and the expected pool
 *   full_verify.c  output, pool and input checks after a call
 *   full_engine.c  ABI 1.2 engine inputs (tree mask, draft extend, attention
 *                  types, encoder slots, page tables, slot maps) and their
 *                  own float64 reference
 *   full_family.c  the matrix, check, bench
 */
#ifndef ATTNCTL_FULL_H
#define ATTNCTL_FULL_H

#include "harness.h"

#define FA_MAX_REQS 4096

typedef struct fa_case {
    int mode;          /* SGL_ATTN_MODE_EXTEND / DECODE / TARGET_VERIFY */
    long b, l, q, prefix, hq, hkv, d, dv, page, window, sinks, cross, enc, mla, rank, rope, ragged, idx, save;
    long layer, state; /* the layer id passed; 1: batch.state_indices for hybrid wrappers */
    long chunk, local, omp; /* dual chunk attention: chunk_size (0 off), local_size, original_max_position */
    long tree, draft, attn, encsave, ptable, smap; /* ABI 1.2 engine inputs (full_engine.c) */
    double softcap, scale;
    double kscale, vscale; /* fp8 pools: value = stored * scale (MLA: kscale) */
    long scalet;           /* 1: the scales also as device tensors (layer.*_scale_tensor) */
    hdtype dt, kvdt;
    int has_seed;
    uint64_t seed;
} fa_case;

int fa_case_parse(const hcase *c, fa_case *f, char *err, size_t err_size);
/* The model a plugin is created for. */
void fa_case_model(const fa_case *f, const char *name, sgl_attn_model *m);
/* 1 when the caps claim the case, else 0 with the reason. */
int fa_case_claimed(const fa_case *f, const sgl_attn_caps *caps, char *why, size_t why_size);
/* fp8 pools: the dequant scale of the K (is_v 0) or V pool, else 1. */
double fa_pool_scale(const fa_case *f, int is_v);
/* What a save stores in the pool for new value x: the pool dtype's rounding
 * (fp8: of the f32 quotient x / scale, as the plugins' saves). */
double fa_pool_raw(const fa_case *f, int is_v, double x);
/* The NMSE limit of the case (the looser of its dtypes). */
double fa_case_threshold(const fa_case *f);

/* One built case: host copies of everything, staged on the target's device. */
typedef struct fa_batch {
    fa_case c;
    const hdev *dev;
    int bs, T;
    int32_t *seq, *prefix, *n_new, *enc, *row; /* [bs] */
    int64_t slots, rows, cols;
    htensor q, k, v, out, k_cache, v_cache, sinks, k_scale_t, v_scale_t;
    htensor q_succ, q_inter;                        /* dual chunk: the other query variants */
    sgl_attn_dual_chunk dca;
    htensor r2t, req_idx, seq_lens, prefix_lens, ext_lens, enc_lens, ocl, positions, state_idx;
    DLTensor seq_cpu, prefix_cpu, ext_cpu, enc_cpu; /* host mirrors */
    unsigned char *k_init, *v_init;                 /* the pool before the call */
    sgl_attn_batch batch;
    sgl_attn_layer layer;
    sgl_attn_forward_args args;
    sgl_attn_model model;
    sgl_attn_create_options opts;
    double *ref;                                     /* [T, hq, dv] float64 reference */
    /* ABI 1.2 engine inputs (full_engine.c); unused ones stay unallocated */
    htensor mask, mask_ip, ptab, smap, enc_loc, ek, ev;
    int64_t n_enc;                                   /* encoder tokens of the batch */
} fa_batch;

/* full_engine.c: 1 when the case uses an ABI 1.2 engine input (its reference
 * is then full_engine.c's own float64 loop, not cpu_ref's f64 path). */
int fa_case_engine(const fa_case *f);
/* Parse the engine keys into f (after the rest). 0, or -1 with err. */
int fa_engine_parse(const hcase *c, fa_case *f, char *err, size_t err_size);
/* The caps bits the engine keys need. */
uint32_t fa_engine_needs(const fa_case *f);
/* Build and stage the engine inputs, and point the batch / layer / args at
 * them (after the rest is built). 0, or -1 with err. */
int fa_engine_build(fa_batch *fb, hrng *r, char *err, size_t err_size);
void fa_engine_free(fa_batch *fb);
int fa_engine_reference(fa_batch *fb, char *err, size_t err_size);
/* The layer's pool slot of full-pool slot s (the case's slot map, if any). */
int64_t fa_engine_slot(const fa_batch *fb, int64_t s);

/* Lengths, layout and values from `seed`; every tensor allocated on dev and
 * uploaded (out poisoned).  0, or -1 with err. */
int fa_batch_build(fa_batch *fb, const fa_case *c, const hdev *dev, uint64_t seed, char *err, size_t err_size);
void fa_batch_free(fa_batch *fb);
/* Upload the initial pool and a poisoned output again (before a rerun). */
int fa_batch_restage(fa_batch *fb, char *err, size_t err_size);
/* init_forward_metadata + the forward of the case's mode (no sync). */
int fa_batch_call(fa_batch *fb, sgl_attn_backend *b, const char **what);
/* The float64 reference through cpu_ref on the host (fills fb->ref). */
int fa_batch_reference(fa_batch *fb, sgl_attn_host *host, char *err, size_t err_size);
/* After the call and a sync: download and judge everything into r. */
void fa_batch_verify(fa_batch *fb, hresult *r);
/* FLOPs and fewest bytes of one call (docs/harness.md). */
void fa_batch_count(const fa_batch *fb, double *flops, double *bytes);
/* Keys a query row sees: [lo, hi) positions (cross: encoder tokens). */
void fa_batch_visible(const fa_batch *fb, int i, int j, int64_t *lo, int64_t *hi);

#endif
