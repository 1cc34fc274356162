/* batch_fixture.h - a random, valid sglang-style batch in host memory: a KV
 * pool, req_to_token rows laid out in pages, lengths, q/k/v/out, and the
 * DLTensors over them.  Tests corrupt one thing at a time; the benchmark
 * runs it as is. */
#ifndef SGL_ATTN_BATCH_FIXTURE_H
#define SGL_ATTN_BATCH_FIXTURE_H

#include <stdint.h>

#include "sgl_attn_abi.h"

typedef struct fx_shape {
    int32_t mode;       /* SGL_ATTN_MODE_DECODE or _EXTEND */
    int32_t bs;         /* requests */
    int32_t max_len;    /* longest seq_len drawn */
    int32_t page;       /* page size */
    int32_t hq, hkv, d; /* heads and head dim (qk = v) */
    int32_t idx_bits;   /* 32 or 64: dtype of the index tensors */
} fx_shape;

typedef struct fx {
    uint64_t rng;
    fx_shape s;
    sgl_attn_model model;
    sgl_attn_caps caps; /* what a plain CPU backend would claim */
    int32_t max_reqs, max_ctx, max_tokens, slots, T;
    /* storage: index arrays are int64 or int32 by s.idx_bits */
    void *rtt, *rpi, *seq, *pre, *ext, *ocl, *pos, *seq_cpu;
    float *q, *k, *v, *out, *kc, *vc;
    int64_t sh_rtt[2], sh_bs[1], sh_T[1], sh_q[3], sh_kv[3], sh_out[3], sh_pool[3];
    DLTensor t_rtt, t_rpi, t_seq, t_pre, t_ext, t_ocl, t_pos, t_seq_cpu;
    DLTensor t_q, t_k, t_v, t_out, t_kc, t_vc;
    sgl_attn_batch batch;
    sgl_attn_layer layer;
    sgl_attn_forward_args args;
} fx;

uint64_t fx_rand(uint64_t *state);
/* Uniform in [lo, hi]. */
int32_t fx_range(uint64_t *state, int32_t lo, int32_t hi);

/* Build a batch from `shape`, drawing lengths, rows, pages and data from
 * `seed`.  Returns 0, or -1 when out of memory. */
int fx_build(fx *f, const fx_shape *shape, uint64_t seed);
void fx_free(fx *f);

/* Index tensor element access whatever the index dtype. */
int64_t fx_get(const DLTensor *t, int64_t i);
void fx_set(DLTensor *t, int64_t i, int64_t v);
/* req_to_token[row][col]. */
int64_t fx_rtt_get(const fx *f, int64_t row, int64_t col);
void fx_rtt_set(fx *f, int64_t row, int64_t col, int64_t v);

/* The seed tests use: SGL_ATTN_TEST_SEED if set, else the clock; printed
 * so that a failure can be replayed. */
uint64_t fx_test_seed(void);

#endif
