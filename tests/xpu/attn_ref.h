/* attn_ref.h - what the platform plugin tests (xpu, npu) compare against:
 * a float64 paged-attention reference written from the conventions in
 * docs/contributing.md, dtype rounding, random paged batches. */
#ifndef SGL_TEST_ATTN_REF_H
#define SGL_TEST_ATTN_REF_H

#include <stddef.h>
#include <stdint.h>

typedef enum { RT_F32 = 0, RT_F16 = 1, RT_BF16 = 2 } rdt;

size_t rdt_size(rdt t);
double rdt_round(rdt t, double v);           /* round to t and back */
void rdt_store(rdt t, void *buf, size_t i, double v);
double rdt_load(rdt t, const void *buf, size_t i);
const char *rdt_name(rdt t);
/* The harness's NMSE limits (docs/harness.md). */
double rdt_nmse_limit(rdt t);

/* splitmix64 + Box-Muller */
typedef struct rrng { uint64_t s; } rrng;
uint64_t rrng_u64(rrng *r);
int rrng_int(rrng *r, int lo, int hi); /* [lo, hi] */
double rrng_normal(rrng *r, double sigma);

/* A batch in sglang's token-pool model: pages of `page` slots (page 0 never
 * used), shuffled and dealt to the requests; request rows of req_to_token
 * shuffled; entries past a request's length point at random slots. */
typedef struct ref_batch {
    int bs, T, page, rows, cols, slots, tpr;
    int *seq, *pre, *ext, *row;  /* per request */
    int64_t *r2t;                /* rows * cols */
    int64_t *loc;                /* T: slot of each new token */
    int *tok_row, *tok_pos;      /* T: req_to_token row and position of each new token */
} ref_batch;

/* ext[i] new tokens after seq[i] - ext[i] cached ones.  Decode: ext[i] = tpr. */
int ref_batch_build(ref_batch *b, rrng *r, int bs, const int *seq, const int *ext, int page);
void ref_batch_free(ref_batch *b);

/* out[T][Hq][Dv] = attention of each new token over positions lo..pos of its
 * row, pools [slots][Hkv][D] in float64 (vpool NULL: MLA, value = first Dv dims
 * of the kpool row, Hkv = 1).  window < 0 off, softcap 0 off, sinks NULL off. */
void ref_attention(const ref_batch *b, const double *q, const double *kpool, const double *vpool, int Hq,
                   int Hkv, int Dqk, int Dv, double scale, double softcap, int window, const double *sinks,
                   double *out);

/* NMSE of got against ref; NaN when got has a NaN/Inf. */
double ref_nmse(const double *got, const double *ref, size_t n);

#endif
