/* cref_fixture.h - building batches for cpu_ref's own tests, and a naive
 * reference written independently of the plugin (its own dtype conversions,
 * one query at a time, plain two-pass softmax in double). */
#ifndef CREF_FIXTURE_H
#define CREF_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

#define TC_MAX_REQS 16

typedef struct tc_spec {
    int mode;              /* SGL_ATTN_MODE_* */
    int bs;
    int hq, hkv, dqk, dv;
    int page;
    int mla;               /* v_cache NULL, value = first dv dims of k */
    int cross;             /* the layer is cross attention over enc[] */
    int window;            /* < 0 off */
    float softcap;
    int sinks;
    int tpr;               /* decode/verify query tokens per request */
    uint32_t dt, kv_dt;    /* SGL_ATTN_DT_* of q/k/v/out and of the pool */
    int idx64;
    int save;
    float scale;           /* 0: 1/sqrt(dqk) */
    int seq[TC_MAX_REQS];    /* seq_lens (decode: incl. new tokens) */
    int prefix[TC_MAX_REQS]; /* extend */
    int enc[TC_MAX_REQS];    /* encoder lens; all 0 = no encoder_lens tensor */
    int has_enc;
} tc_spec;

typedef struct tc_run {
    tc_spec s;
    int T;
    int64_t slots, rows, cols;
    /* host buffers */
    void *k_cache, *v_cache, *r2t, *req_idx, *seq_lens, *prefix_lens, *ext_lens, *enc_lens, *ocl;
    void *q, *k, *v, *out;
    float *sinks;
    int64_t sh_kc[3], sh_vc[3], sh_r2t[2], sh_bs[1], sh_T[1], sh_q[3], sh_k[3], sh_v[3], sh_out[3], sh_sink[1];
    DLTensor t_kc, t_vc, t_r2t, t_req, t_seq, t_pre, t_ext, t_enc, t_ocl, t_q, t_k, t_v, t_out, t_sink;
    sgl_attn_batch batch;
    sgl_attn_layer layer;
    sgl_attn_forward_args args;
    sgl_attn_model model;
} tc_run;

/* Deterministic random numbers for the tests. */
uint64_t tc_rand(uint64_t *st);
double tc_normal(uint64_t *st);

/* Independent conversions. */
double tc_load(uint32_t dt, const void *p, size_t i);
void tc_store(uint32_t dt, void *p, size_t i, double v);
size_t tc_size(uint32_t dt);

/* Build a run: pages shuffled by `seed`, slot 0 reserved, every value random
 * (`vseed`: the values, so two runs can share values but not layout). */
void tc_build(tc_run *r, const tc_spec *s, uint64_t layout_seed, uint64_t value_seed);
void tc_free(tc_run *r);
/* Slot of column c of request i. */
int64_t tc_slot(const tc_run *r, int i, int64_t c);
/* Create cpu_ref for the run's shapes through the plugin's descriptor. */
sgl_attn_backend *tc_create(const tc_run *r, char *err, size_t err_size);
/* init_forward_metadata + forward; returns the status. */
int tc_forward(tc_run *r, sgl_attn_backend *b);
/* tc_create + tc_forward: the backend (the caller destroys it), or NULL with
 * err saying which step failed and why. */
sgl_attn_backend *tc_create_forward(tc_run *r, char *err, size_t err_size);
/* The NMSE a run of dtype dt passes within (its rounding, summed over keys). */
double tc_limit(uint32_t dt);
/* A CPU DLTensor over data (compact: no strides). */
void tc_wrap(DLTensor *t, void *data, DLDataType dt, int ndim, int64_t *shape);
/* The naive reference for every output element [T, hq, dv], in double;
 * it applies save_kv_cache to its own copy of the pool first. */
void tc_naive(const tc_run *r, double *ref);
/* Output element i as double. */
double tc_out(const tc_run *r, size_t i);
size_t tc_out_count(const tc_run *r);
/* sum (out - ref)^2 / sum ref^2 */
double tc_nmse(const tc_run *r, const double *ref);
/* The plugin's descriptor via its entry point. */
const sgl_attn_plugin *tc_plugin(void);

#endif
