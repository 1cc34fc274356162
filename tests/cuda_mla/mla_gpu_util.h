/*
 * mla_gpu_util.h - what the cuda_mla GPU test and GPU bench share: load the
 * plugin, build a random paged MLA batch (shuffled pages, shuffled
 * req_to_token rows, random slots past each length, random pool), stage it
 * with the plugin's device ops, run init_forward_metadata + forward, and
 * compare with a float64 reference computed here (on the pool as it must be
 * after the save).
 */
#ifndef MLA_GPU_UTIL_H
#define MLA_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

enum { MG_DECODE = 0, MG_VERIFY = 1, MG_EXTEND = 2 };
enum { MG_BF16 = 1, MG_F16 = 0, MG_FP8 = 2 }; /* = MLA_DT_* */

typedef struct mg_case {
    int mode, bs, len, q, hq, page;
    int dt, kv_dt;
    int ragged;
    int ref;  /* 1: compute the float64 reference */
    int fill; /* 0: random pool; 1: a random 64 MiB block repeated (bench) */
} mg_case;

typedef struct mg_plugin {
    void *handle;
    const sgl_attn_plugin *p;
    const sgl_attn_device_ops *ops;
    sgl_attn_caps caps;
} mg_plugin;

/* 0: loaded and device 0 available; 1: loaded, unavailable (why says so); -1: error. */
int mg_open(mg_plugin *pl, char *why, size_t n);
void mg_close(mg_plugin *pl);

typedef struct mg_run {
    mg_case c;
    int t, maxctx, rows;
    int64_t slots;
    int32_t *q_len, *prefix, *seq, *r2t, *rpi, *loc;
    void *q, *k, *pool; /* host copies; pool as after the save */
    size_t pool_bytes;
    double *ref;
    float k_scale;
    void *stream;
    void *d_q, *d_k, *d_out, *d_pool, *d_r2t, *d_rpi, *d_loc, *d_seq;
    int64_t s_q[3], s_k[3], s_out[3], s_pool[3], s_r2t[2], s_rpi[1], s_loc[1], s_seq[1], s_pre[1], s_ext[1];
    DLTensor tq, tk, tout, tpool, tr2t, trpi, tloc, tseq, tseq_cpu, tpre_cpu, text_cpu;
    int32_t *ext_len, *pre_len;
    sgl_attn_batch batch;
    sgl_attn_layer layer;
    sgl_attn_forward_args fa;
    sgl_attn_model model;
    const mg_plugin *pl;
} mg_run;

/* Inputs, staging and (c->ref) the reference. */
int mg_setup(mg_run *r, const mg_plugin *pl, const mg_case *c, uint64_t seed, char *err, size_t n);
/* A variant "kernel[+base|+ring|+tma]" (kernel: auto, simple, mma, wide;
 * the suffix: SGL_ATTN_MLA_MMA) into the environment the plugin reads at
 * create.  SGL_ATTN_MLA_STRICT / _LOG are left as the caller set them. */
int mg_variant_env(const char *variant, char *err, size_t n);
/* A backend for a variant (as above). */
int mg_create(mg_run *r, const char *kernel, sgl_attn_backend **b, char *err, size_t n);
/* Re-upload the pool (before a checked run: forward writes the new rows). */
int mg_reset_pool(mg_run *r, char *err, size_t n);
/* init_forward_metadata + forward (no synchronisation). */
int mg_forward(mg_run *r, sgl_attn_backend *b, char *err, size_t n);
int mg_forward_only(mg_run *r, sgl_attn_backend *b, char *err, size_t n);
/* Poison the output on the device. */
int mg_poison(mg_run *r, char *err, size_t n);
/* Synchronise, download, compare: NMSE (>= 0), or -1 with err (NaN,
 * unwritten element, pool not as expected). */
double mg_compare(mg_run *r, char *err, size_t n);
void mg_free(mg_run *r);

/* Bytes (latent rows read once) and FLOPs (2 hq (576 + 512) per seen key) of a run. */
double mg_bytes(const mg_run *r);
double mg_flops(const mg_run *r);

/* The host-side rounding the device uses. */
uint16_t mg_to_bf16(float f);
float mg_from_bf16(uint16_t h);
uint8_t mg_to_e4m3(float f);
float mg_from_e4m3(uint8_t v);

#endif
