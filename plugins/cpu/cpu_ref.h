/*
 * cpu_ref.h - internals of cpu_ref, the reference CPU attention plugin
 * (docs/cpu_ref.md).  One file per job:
 *   entry.c        descriptor, entry point, probe, supports_model
 *   cpu_info.c     what this CPU is (name, cores, memory, SIMD level)
 *   backend.c      create / destroy, the ops table, last_error
 *   plan_batch.c   init_forward_metadata: checks the batch, plans requests
 *   check_args.c   forward: checks the layer and tensors, fills the job
 *   forward.c      forward: save K/V, attend, combine, on the thread pool
 *   threads.c      the persistent thread pool
 *   kernel_impl.h  the attention loops, compiled per variant by kernel_*.c
 *   save_kv.c      save_kv_cache: new K/V into the pool (or its fp8 records)
 *   tensor_check.c the SDK's tensor checks as cpu_ref reads tensors
 *   error.c        the instance's error message, bad-index notes (a leaf: calls no other file)
 *   sparse_mla.c   DSA: MLA forward over the slots of topk_indices, FlashMLA's fp8 record
 *   dsa_indexer.c  DSA: the indexer (indexer_topk), fp8 index keys (cref_fp8.h)
 *   dual_chunk.c   dual chunk attention: its checks and float64 loops
 *   plan_engine.c  ABI 1.2 batch inputs: page tables, tree masks, encoder slots
 *   layer_engine.c ABI 1.2 layer inputs: slot maps, attention types
 *   ragged.c       forward_ragged (ABI 1.2): K/V as tensors, cu_seqlens
 *   lse_out.c      the LSE output (ABI 1.2) of the paged and ragged forwards
 *   fp8_scales.c   an fp8 KV pool's scales: floats, scale tensors, q descale (ABI 1.2)
 *   rope_split.c   MLA's q_rope / k_rope beside the latent q / k (ABI 1.2)
 */
#ifndef CPU_REF_H
#define CPU_REF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sdk_cpu.h"
#include "sdk_tensor.h"
#include "sdk_text.h"
#include "sgl_attn_abi.h"

#define CREF_NAME "cpu_ref"
#define CREF_VERSION "0.1.0"
#define CREF_MAX_HEAD_DIM 576
#define CREF_TILE 32             /* KV positions per tile */
#define CREF_MIN_ROWS 64         /* query rows (token x head) per work item, at least */
#define CREF_SPLIT_MIN_KEYS 512  /* a decode split covers at least this many keys */
#define CREF_SPLIT_BYTES_MAX ((size_t)64 << 20)
#define CREF_ERR_MAX 640
#define CREF_ALIGN 64
#define CREF_DTYPES (SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F64)
/* The pool may also be fp8 (e4m3: DLPack 1.1's e4m3fn or our private code; e5m2). */
#define CREF_FP8_DTYPES (SGL_ATTN_DT_FP8_E4M3 | SGL_ATTN_DT_FP8_E5M2)
#define CREF_KV_DTYPES (CREF_DTYPES | CREF_FP8_DTYPES)
/* FlashMLA's fp8 KV record (SGL_ATTN_DSA_KV_FP8_RECORD, docs/abi.md), one
 * per slot of a uint8 [slots, 1, 656] pool: the 512 latent values in e4m3,
 * their 4 fp32 scales (one per 128), the 64 RoPE values in bf16. */
#define CREF_REC_BYTES 656
#define CREF_REC_LATENT 512 /* e4m3 bytes 0..511 */
#define CREF_REC_SCALES 512 /* byte offset of the fp32 scales */
#define CREF_REC_ROPE 528   /* byte offset of the bf16 RoPE values */
#define CREF_REC_DIMS 576   /* head_dim_qk it holds; head_dim_v is CREF_REC_LATENT */

/* ------------------------------------------------------------ threads.c */

typedef struct cref_threads cref_threads;
typedef void (*cref_task_fn)(void *ctx, int tid);

int cref_threads_create(int n, cref_threads **out, char *err, size_t err_size);
int cref_threads_count(const cref_threads *t);
/* Run fn(ctx, tid) on every thread (the caller is tid 0); returns when all are done. */
void cref_threads_run(cref_threads *t, cref_task_fn fn, void *ctx);
void cref_threads_destroy(cref_threads *t);

/* ------------------------------------------------------------ cpu_info.c */

typedef struct cref_cpu {
    sgl_sdk_cpu host;    /* name, cores this process may run on, memory */
    int avx2;            /* AVX2 + FMA usable */
    int avx512;          /* AVX-512 F/BW/DQ/VL usable (and avx2) */
    int avx512bf16;      /* and AVX512_BF16 (vdpbf16ps) */
} cref_cpu;

/* What this CPU has. */
void cref_cpu_query(cref_cpu *c);
/* create's tuning: *threads (option threads / $SGL_ATTN_CPU_REF_THREADS,
 * 1..1024, default the cores) and the SIMD level in c lowered by option simd /
 * $SGL_ATTN_CPU_REF_SIMD (plain, avx2 or avx512: the most the loops may use).
 * A bad value: SGL_ATTN_E_INVALID with create's error set. */
int cref_tuning_read(const sgl_attn_create_args *a, cref_cpu *c, int *threads);

/* ------------------------------------------------------------ the job */

/* One request of the planned batch. */
typedef struct cref_req {
    int64_t row;      /* req_to_token row */
    int32_t seq_len;  /* self-attention keys, incl. the new tokens */
    int32_t n_new;    /* query tokens */
    int32_t prefix;   /* position of the first query token */
    int32_t enc;      /* encoder tokens at the start of the row (0: none) */
    int32_t tok0;     /* index of the first query token in q / out */
    int32_t qb0;      /* index of its first query block (per forward) */
    int64_t pg0;      /* page tables: its first page in the plan's copy */
    int64_t mask0;    /* tree verify: its mask's first element in custom_mask */
} cref_req;

/* An index found outside the pool where it is used: the batch changed
 * after init_forward_metadata checked it.  The first one is kept. */
typedef struct cref_bad {
    atomic_int set;
    int what;            /* 0: req_to_token, 1: out_cache_loc, 2: slot_map (index = the slot mapped) */
    int64_t index, value; /* flat index into the tensor, and what it held */
} cref_bad;

/* error.c: note a bad index (any thread; the first wins). */
void cref_bad_note(cref_bad *b, int what, int64_t index, int64_t value);

/* Everything the attention loops read, checked and resolved by check_args.c. */
typedef struct cref_job {
    int32_t hq, hkv, group, dqk, dv;
    int32_t cross;          /* keys: the encoder's, non-causal */
    int32_t window;         /* < 0: off */
    double scale, softcap;  /* softcap 0: off */
    const float *sinks;     /* [hq] or NULL */
    uint32_t q_dt, out_dt, kv_dt; /* SGL_ATTN_DT_* */
    const unsigned char *q;       /* [T, hq, dqk]: token t, head h at (t * q_ts + h * q_hs) elements */
    int64_t q_ts, q_hs;           /* q's token and head strides: a view into a fused qkv buffer */
    unsigned char *out;           /* [T, hq, dv] compact */
    const unsigned char *k_cache; /* slot s, head h at (s * k_slot + h * dqk) elements */
    const unsigned char *v_cache; /* MLA: = k_cache (value = first dv dims) */
    int64_t k_slot, v_slot, v_head;
    int32_t rec;            /* k_cache is FlashMLA's fp8 record (sparse MLA only): kv_dt
                             * is e4m3 so a slot is k_slot = CREF_REC_BYTES bytes */
    const void *r2t;        /* init_forward_metadata's view: data, dtype, width; NULL
                             * (ragged): key c of a request is slot row * r2t_cols + c */
    int r2t_64;
    int64_t r2t_cols;
    int64_t pool_slots;     /* this layer's pool: every slot read is checked against it */
    cref_bad *bad;
    const cref_req *reqs;
    int32_t n_reqs;
    int32_t qblock;         /* query tokens per work item */
    int32_t n_qblocks;      /* over all requests */
    int32_t heads;          /* KV heads per work item (decode: several, so a
                             * token's K/V rows are read contiguously) */
    int32_t n_hgroups;      /* ceil(hkv / heads) */
    int32_t nsplit;         /* decode: KV splits per (request, head); 1 = none */
    int32_t rows_cap;       /* scratch rows, set at create */
    int32_t bf16dot;        /* vdpbf16ps usable (create) */
    unsigned char *partial; /* nsplit > 1: [items][rows_cap][dv + 2] of the compute type */
    size_t partial_stride;  /* bytes per item */
    /* ABI 1.2 inputs (layer_engine.c); all zero for a plain batch and layer */
    int32_t plain;          /* none of the below: the loops take their fast paths */
    int32_t vis;            /* sgl_attn_attn_type of the layer */
    int32_t direct;         /* encoder-only: keys are the call's k / v rows (slot = token) */
    const int64_t *pages;   /* page tables: the plan's copy, NULL = req_to_token */
    int64_t page_size;
    const void *slot_map;   /* NULL = identity */
    int map_64;
    int64_t map_len;
    const unsigned char *mask; /* tree verify: custom_mask as planned, NULL = causal */
    /* ABI 1.2, c20b side (set on every forward; NULL / 1 / dqk when not asked for) */
    float *lse;             /* [T, hq] fp32: log-sum-exp of each row's scaled logits */
    double v_mul;           /* fp8 pool: the value's dequant scale (out = v_mul * P V) */
    int32_t dq_lat;         /* dims q's rows hold: dqk, or the latent part beside q_rope */
    const unsigned char *q_rope; /* [T, hq, dqk - dq_lat] of q's dtype, rows at t * qr_ts + h * qr_hs */
    int64_t qr_ts, qr_hs;
    const unsigned char *k_rope; /* save: [T, 1, dqk - dq_lat] of k's dtype, token t at t * kr_ts */
    int64_t kr_ts;
    double k_div, v_div;    /* save into an fp8 pool: the new k / v are divided by these */
} cref_job;

/* Slot of key position pos of request rq (encoder tokens count from 0 for a
 * cross layer; self-attention positions follow them), through the page
 * table or req_to_token and the slot map; -1 when outside the pool (noted in
 * J->bad when `note`).  The loops call it per key only when !J->plain. */
static inline int64_t cref_key_slot(const cref_job *J, const cref_req *rq, int64_t pos, int note) {
    if (J->direct) return rq->tok0 + pos - rq->prefix;
    const int64_t col = pos + (J->cross ? 0 : rq->enc);
    int64_t s;
    if (J->pages) {
        s = J->pages[rq->pg0 + col / J->page_size] * J->page_size + col % J->page_size;
    } else {
        s = sgl_sdk_idx(J->r2t, J->r2t_64, rq->row * J->r2t_cols + col);
        if (J->slot_map && (uint64_t)s >= (uint64_t)J->map_len) {
            if (note) cref_bad_note(J->bad, 0, rq->row * J->r2t_cols + col, s);
            return -1;
        }
    }
    if (J->slot_map) {
        const int64_t m = sgl_sdk_idx(J->slot_map, J->map_64, s);
        if ((uint64_t)m >= (uint64_t)J->pool_slots) {
            if (note) cref_bad_note(J->bad, 2, s, m);
            return -1;
        }
        return m;
    }
    if ((uint64_t)s >= (uint64_t)J->pool_slots) {
        if (note) cref_bad_note(J->bad, 0, J->pages ? -1 : rq->row * J->r2t_cols + col, s);
        return -1;
    }
    return s;
}

/* One work item: query tokens [j0, j0 + nq) of a request, KV heads
 * [h0, h0 + nh), keys at positions [kb, ke) (a split) and where the result
 * goes.  Its rows are ordered (token, kv head, q head of the group). */
typedef struct cref_item {
    const cref_req *req;
    int32_t h0, nh, j0, nq, kb, ke;
    unsigned char *partial; /* NULL: normalise and write out */
} cref_item;

typedef void (*cref_attend_fn)(const cref_job *job, const cref_item *it, void *scratch);
/* Combine the job->nsplit partials of one (query block, head group) into out. */
typedef void (*cref_combine_fn)(const cref_job *job, const cref_item *it, unsigned char *parts);

/* Scratch bytes one thread needs for rows_cap rows of dqk/dv dims. */
size_t cref_scratch_bytes(int rows_cap, int dqk, int dv);

/* kernel_f32.c (baseline), kernel_f32_avx2.c (AVX2/FMA), kernel_f32_avx512.c
 * (bf16 KV with AVX-512, else as AVX2), kernel_f64.c, kernel_f64_avx2.c */
void cref_attend_f32(const cref_job *, const cref_item *, void *);
void cref_combine_f32(const cref_job *, const cref_item *, unsigned char *);
void cref_attend_f32_avx2(const cref_job *, const cref_item *, void *);
void cref_combine_f32_avx2(const cref_job *, const cref_item *, unsigned char *);
void cref_attend_f32_avx512(const cref_job *, const cref_item *, void *);
void cref_combine_f32_avx512(const cref_job *, const cref_item *, unsigned char *);
void cref_attend_f64(const cref_job *, const cref_item *, void *);
void cref_combine_f64(const cref_job *, const cref_item *, unsigned char *);
void cref_attend_f64_avx2(const cref_job *, const cref_item *, void *);
void cref_combine_f64_avx2(const cref_job *, const cref_item *, unsigned char *);
/* save_kv.c: token t's k (and v) converted into the pool at `slot`. */
void cref_save_token(const cref_job *job, const unsigned char *k, uint32_t k_dt,
                     const unsigned char *v, uint32_t v_dt, int64_t t, int64_t slot);

/* DSA's indexer: one scored candidate token of a query. */
typedef struct cref_scored {
    double score;
    int32_t pos, slot;
} cref_scored;
struct idx_job;

/* A forward's dual chunk attention, as dual_chunk.c checked it. */
typedef struct cref_dca {
    int on;
    int32_t chunk_len;               /* chunk_size - local_size */
    int32_t original_max_position;   /* 0: no length scaling */
    const unsigned char *q_succ, *q_inter; /* like job.q */
    int64_t qs_ts, qs_hs, qi_ts, qi_hs;      /* their token and head strides (elements), as job.q_ts / q_hs */
} cref_dca;

/* ------------------------------------------------------------ the backend */

typedef struct cref_backend {
    sgl_attn_backend base; /* first: the ABI's header */
    char err[CREF_ERR_MAX];
    cref_threads *threads;
    int nthreads;
    /* limits from create */
    int32_t max_reqs, max_tokens, max_context;
    int32_t max_hq, max_group, max_dqk, max_dv;
    int32_t rows_cap;
    size_t scratch_stride;      /* bytes per thread */
    unsigned char *scratch;     /* [nthreads][scratch_stride] */
    unsigned char *partial;     /* decode split results */
    size_t partial_bytes;
    cref_attend_fn attend_f32;  /* the variants chosen at create */
    cref_combine_fn combine_f32;
    cref_attend_fn attend_f64;
    cref_combine_fn combine_f64;
    int bf16dot;                /* the CPU has AVX512_BF16 */
    /* init_forward_metadata's plan */
    const sgl_attn_batch *batch; /* NULL until a batch was planned */
    int32_t mode;
    int32_t n_reqs, num_tokens, tokens_per_req;
    int has_enc;
    cref_req *reqs;              /* [max_reqs] */
    int32_t max_kv_len;          /* longest self-attention KV of the batch */
    int32_t max_enc;
    /* largest slot the batch names, and where (for the pool-size check) */
    int64_t max_slot;
    char max_slot_where[96];
    const void *out_cache_loc;
    int ocl_64;
    /* ABI 1.2 (plan_engine.c): page tables copied here, [pages_cap] */
    int64_t *pages;
    int64_t pages_cap;
    int64_t page_size;
    const unsigned char *mask;   /* custom_mask's data, NULL = none */
    const void *enc_loc;         /* encoder_out_cache_loc, NULL = none */
    int enc_loc_64;
    int64_t n_enc_tok;           /* sum of encoder_lens */
    /* req_to_token as init_forward_metadata saw it: a forward uses these,
     * never the caller's tensor header, which may have changed since */
    const void *r2t;
    int r2t_64;
    int64_t r2t_rows, r2t_cols;
    cref_bad bad;
    /* forward scratch state (one forward at a time per instance) */
    cref_job job;
    atomic_int next;
    int32_t n_items;
    uint32_t k_dt, v_dt;
    const unsigned char *k_new, *v_new;
    int save;
    int enc_only;                /* encoder-only layer (layer_engine.c) */
    const unsigned char *k_in, *v_in; /* its keys: the call's k / v */
    /* forward_ragged plans into reqs + max_reqs, leaving the batch's plan as it was */
    /* DSA: the forward's checked topk_indices [num_tokens, topk_k] */
    const int32_t *topk;
    int64_t topk_k;
    /* DSA indexer: [nthreads][max_context] score buffers (models with
     * index_topk only) and the call being run */
    cref_scored *dsa_buf;
    const struct idx_job *idx;
    cref_dca dca;
} cref_backend;

/* error.c */
void cref_set_error(cref_backend *b, const char *fmt, ...) SGL_SDK_PRINTF(2, 3);

/* tensor_check.c: a host tensor cpu_ref reads (compact row-major), of
 * `dtypes` (SGL_ATTN_DT_* set; 0: an index tensor) and shape [s0, s1, s2][:ndim]
 * (SGL_SDK_ANY: any extent; flags add SGL_SDK_T_*, e.g. MERGED for sglang's
 * flat [T, H * D]).  0, or a status with b->err naming `what`. */
int cref_check(cref_backend *b, const DLTensor *t, const char *what, const char *meaning, uint32_t dtypes,
               uint32_t flags, int ndim, int64_t s0, int64_t s1, int64_t s2);

/* backend.c */
int cref_create(const sgl_attn_create_args *args, sgl_attn_backend **out);
/* Model checks beyond the caps (supports_model and create). */
int cref_model_ok(const sgl_attn_model *m, char *why, size_t why_size);

/* plan_batch.c */
int cref_plan_batch(cref_backend *b, const sgl_attn_batch *batch);

/* plan_engine.c: the ABI 1.2 batch inputs at init_forward_metadata.
 * cref_plan_pages copies and checks batch->page_table (before the requests'
 * slots are checked); cref_plan_slot is column c of request i's slot as
 * planned (page table or req_to_token); cref_plan_extras checks custom_mask /
 * mask_indptr and encoder_out_cache_loc after the requests are planned. */
int cref_plan_pages(cref_backend *b, const sgl_attn_batch *bt);
int64_t cref_plan_slot(const cref_backend *b, const sgl_attn_batch *bt, int64_t i, int64_t c);
int cref_plan_extras(cref_backend *b, const sgl_attn_batch *bt);

/* layer_engine.c: the ABI 1.2 layer inputs at forward, after the plain
 * checks.  Fills the job's ABI 1.2 fields; 0 or an error with b->err set.
 * cref_new_slot is the pool slot of new (or encoder) token t to save, -1
 * when outside (noted). */
int cref_layer_engine(cref_backend *b, const sgl_attn_forward_args *a, const sgl_attn_layer *L);
int64_t cref_new_slot(cref_backend *b, int64_t t);
/* Encoder-only: point the job's keys at the call's k / v (after the save). */
void cref_direct_keys(cref_backend *b);

/* check_args.c: 0 and b->job filled, or an error status with b->err set. */
int cref_check_args(cref_backend *b, const sgl_attn_forward_args *a);

/* dual_chunk.c: after cref_check_args, the forward's dual_chunk block into
 * b->dca (off when there is none); then the attention on the thread pool. */
int cref_dual_chunk_check(cref_backend *b, const sgl_attn_forward_args *a);
void cref_dual_chunk_run(cref_backend *b);

/* forward.c */
int cref_forward(cref_backend *b, const sgl_attn_forward_args *a);
/* Run b->job's n_items work items (and the decode splits' combine). */
int cref_run_items(cref_backend *b);
/* check_args.c: the job's work items from the planned requests. */
void cref_plan_items(cref_backend *b);

/* ragged.c: backend_ops.forward_ragged */
int cref_forward_ragged(cref_backend *b, const sgl_attn_ragged_args *a);
/* lse_out.c: `lse` (may be NULL) as a [T, hq] fp32 host tensor; sets job.lse. */
int cref_lse_check(cref_backend *b, const DLTensor *lse, const char *what, int64_t T, int64_t hq);
/* fp8_scales.c: the layer's scales for a pool of kv_dt (floats, scale
 * tensors, q descale, with their precedence); folds them into job.scale,
 * job.v_mul, job.k_div, job.v_div. */
int cref_fp8_scales(cref_backend *b, const sgl_attn_layer *L, uint32_t kv_dt, int mla);
/* rope_split.c: forward_args.q_rope / k_rope; *dq_lat = the dims q and k
 * then hold (head_dim_qk when they are absent).  Sets the job's rope views. */
int cref_rope_check(cref_backend *b, const sgl_attn_forward_args *a, int mla, int64_t T, int32_t *dq_lat);

/* sparse_mla.c: forward's topk_indices (NULL when absent or beyond
 * struct_size); check them (after cref_check_args); attend over them. */
const DLTensor *cref_topk_of(const sgl_attn_forward_args *a);
int cref_sparse_check(cref_backend *b, const sgl_attn_forward_args *a, const DLTensor *topk);
/* The layer's k_cache when it is FlashMLA's fp8 record (*rec 1; uint8 or
 * 656 wide, and then every refusal by name), else *rec 0 and nothing checked. */
int cref_record_check(cref_backend *b, const sgl_attn_forward_args *a, int *rec);
void cref_sparse_run(cref_backend *b);
/* dsa_indexer.c: backend_ops.indexer_topk */
int cref_indexer_topk(cref_backend *b, const sgl_attn_indexer_args *a);
/* entry.c */
/* The entry host/embedded.c calls (hidden: the library exports no plugin entry). */
int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

#endif
