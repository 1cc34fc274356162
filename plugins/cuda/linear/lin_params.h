/*
 * lin_params.h - what the host C of the CUDA linear-attention plugins hands
 * the kernels (plain C structs, passed by value), and the launchers.  Shared
 * by the .c and the .cu files.
 *
 * Tensors are compact row-major (docs/hybrid.md for each kind):
 *   x [T, x_dim]  a [T, HV] (kda: [T, HV*K])  b [T, HV]  conv_weight [C, W]
 *   conv_bias [C]  A_log [HV]  dt_bias [HV] (kda [HV*K])  D [HV]  decay [HV]
 *   lightning q, k [T, HV, K], v [T, HV, V];  out [T, HV, V] (short_conv [T, C])
 * State pool (lin_sizing.c): conv [layer][slot][C][W-1], ssm [layer][slot][HV][V][K],
 * per-draft-token copies [layer][slot][step][...] for verify.
 */
#ifndef SGL_LIN_PARAMS_H
#define SGL_LIN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { LIN_DT_F32 = 0, LIN_DT_F16 = 1, LIN_DT_BF16 = 2 };
/* = sgl_attn_forward_mode */
enum { LIN_MODE_EXTEND = 1, LIN_MODE_DECODE = 2, LIN_MODE_VERIFY = 3 };
/* = sgl_attn_hybrid_kind */
enum { LIN_GDN = 1, LIN_MAMBA2 = 2, LIN_SHORT_CONV = 3, LIN_KDA = 4, LIN_LIGHTNING = 5 };

#define LIN_CHUNK 64          /* extend chunk (tokens) of the chunked forms */
#define LIN_CONV_W_MAX 8
#define LIN_DIM_MAX 1024
#define LIN_DECODE_NMAX 16    /* tokens per request the fused decode kernel takes */
#define LIN_TC_K 128          /* the tensor-core chunked path: K = 128 ... */
#define LIN_TC_VMAX 128       /* ... and V a multiple of 32 up to 128 */
#define LIN_PLAN_THREADS 1024

/* Device-detected batch errors (the plan kernel and commit kernel). */
enum { LIN_ERR_NONE = 0, LIN_ERR_SLOT = 1, LIN_ERR_DUP_SLOT = 2, LIN_ERR_LEN = 3, LIN_ERR_PREFIX = 4,
       LIN_ERR_SUM = 5, LIN_ERR_ACCEPT = 6 };

typedef struct lin_in {
    const void *p; /* NULL = absent (optional inputs) */
    int32_t dt;    /* LIN_DT_* */
    int32_t pad_;
} lin_in;

typedef struct lin_idx {
    const void *p;
    int32_t is64;
    int32_t pad_;
} lin_idx;

/* The per-batch plan, in device memory (carved by lin_sizing.c). */
typedef struct lin_plan_dev {
    int32_t *req_tok0, *req_n, *req_slot, *req_init, *req_chunk0, *req_nchunk; /* [max_reqs] */
    int32_t *tok_req;                          /* [max_tokens]: request of each token, -1 none */
    int32_t *chunk_req, *chunk_tok0, *chunk_len; /* [max_chunks] */
    int32_t *num_chunks;                       /* [1] */
    int32_t *slot_owner;                       /* [max_reqs] duplicate-slot check */
    int32_t *verify_slot;                      /* [max_reqs] slots of the last verify batch */
    int32_t *err;                              /* [4]: code, index, value lo, value hi */
} lin_plan_dev;

typedef struct lin_plan_args {
    lin_plan_dev d;
    lin_idx state_indices, ext_lens, ext_prefix; /* ext_*: extend only */
    int32_t mode, bs, T, tpr, max_reqs, chunk, verify;
} lin_plan_args;

/* One own layer's forward. */
typedef struct lin_fwd {
    int32_t kind, hk, hv, K, V, conv_dim, conv_w, x_dim, gsz, gc;
    int32_t bs, T, tpr, keep, l2norm, steps;
    float scale;
    int32_t st_dt;   /* LIN_DT_F32 or LIN_DT_BF16 */
    int32_t out_dt;
    lin_in x, a, b, conv_weight, conv_bias, A_log, dt_bias, D, decay, q, k, v;
    void *out;
    void *conv_state, *ssm_state; /* this layer's [slots][elems] */
    void *iconv, *issm;           /* this layer's [slots][steps][elems], NULL without verify */
    int64_t conv_elems, ssm_elems;
    lin_plan_dev pl;
    /* simple path: conv outputs (l2-normalised q/k), log-decays, beta (mamba2: dt) */
    float *X, *G, *B;
    /* tensor-core path, per token and value head (16-bit) + per chunk decay, mamba2 skip */
    void *Wt, *QGt, *KDt, *Ut, *Mt;
    float *eG, *Sk;
    int32_t max_chunks;
    /* the split paths (SGL_ATTN_LIN_DECODE / CHUNK1 / CHUNK2 = split) */
    int32_t *cnt;       /* [max_reqs][hk] zero between launches: split decode's q/k history hand-off */
    void *Qc, *Kc, *Vc; /* split phase 1 inputs (16-bit): q, k [T][hk][K] after conv + l2norm, [T][hv][V]
                           beta v (delta) / dt x (mamba2) / v (lightning) */
    void *Hs;           /* split phase 2 -> 3: the state at each chunk's start, 16-bit [chunk][hv][V][K] */
    int32_t c1_split;   /* phase 1 is the split one (P2 fused needs QG, M from it either way) */
    int32_t c1_prep;    /* SGL_ATTN_LIN_PREP=v2 (2): split phase 1 v2: the prep without shared memory (gdn, conv
                           width 4, bf16 x; other shapes take v1) and lin_ut_kernel<., 1> (every split kind) */
    int32_t c1_ut;      /* SGL_ATTN_LIN_UT=v3 (3): the prep fused into the UT kernel (gdn, conv width 4, bf16 x;
                           other shapes take the prep + UT pair) */
    int32_t c2_np;      /* SGL_ATTN_LIN_CSTATE=v2: 4 producer warps in the split state pass (else 1) */
    int32_t c3_out;     /* SGL_ATTN_LIN_COUT=v2 (2): the split output kernel's column halves side by side, two
                           cp.async groups, 16-byte output rows (else 1); c1_prep 3 (SGL_ATTN_LIN_PREP=v3):
                           v2's prep with a quarter of its registers */
    int32_t c2_cw;      /* SGL_ATTN_LIN_CSTATE=v3: 8 compute warps in it (else 4) */
    int32_t c2_ws;      /* SGL_ATTN_LIN_CSTATE=v4 (1): v2 with named-barrier hand-offs (lk_cstate.cuh) */
    int32_t c2_pq;      /* SGL_ATTN_LIN_CSTATE=v5 (1, gdn / kda): P = -W^T KD made first, one product per chunk
                           in the state pass, Unew made by the output kernel (lk_cstate5.cu) */
    void *Pq;           /* ... P per chunk, 16-bit [chunk][hv][K][K] */
    int32_t c2_wg;      /* SGL_ATTN_LIN_CSTATE=v6 (1): v5's pass on warpgroup MMA (SM 9.0, V % 64 == 0) */
    /* SGL_ATTN_LIN_CSTATE=scan (lk_cscan.cu): chunks per group (0: the serial pass), the row tile of its
     * group passes (32 or 64), and the group scratch [groups][hv][V + K][K] float32 (LIN_CSCAN_GROUPS) */
    int32_t cscan_m, cscan_vt;
    float *Zs;
    /* the stream decode (SGL_ATTN_LIN_DECODE=stream): the prep kernel's operands per (request,
     * key head group), lin_decode3_per floats each, in the fused kernel's shared-memory layout */
    float *dq;
    int32_t dq_per;   /* floats per group (lin_launch_decode3 sets it) */
    int32_t dq_async; /* SGL_ATTN_LIN_DECODE=stream_cp: the tile lands in shared memory by cp.async */
    int32_t dq_pdl;   /* stream_pdl / stream_pdl64 on SM 9.0+: the stream kernel is a programmatic dependent
                         launch of the prep kernel (its state loads overlap the prep) */
    int32_t dq_wide;  /* stream_pdl64: 8-warp stream blocks (64 fp32 / 128 bf16 state rows each) */
    int32_t dq_one;   /* stream_one / stream_one_nopf: prep and stream items in one launch (lin_decode4_kernel) */
    int32_t dq_pf;     /* stream_one(_static): its prep items prefetch their conv histories and x to L2 first */
    int32_t dq_static; /* stream_one_static (SM 9.0+; else stream_one): the block index is the ticket (no atomic) */
    int32_t dq_prep;   /* SGL_ATTN_LIN_DECPREP=v2 (2): the stream decode's prep v2 (lk_decprep2.cu: gdn, conv
                          width 4; others take v1); stream_one keeps its own prep items; v3 (3): lk_decprep3.cu */
    int32_t dq_sms;    /* the device's SMs (the prep v3's persistent grid) */
    int32_t *dq_sync; /* stream_one: [4 + max_reqs * hk] int32, zero at create and again after every launch
                         but the epoch: ticket, done, epoch, pad, then the per-(request, group) ready flags */
} lin_fwd;

/* After verify: copy step accepted[i] of request i into its main state. */
typedef struct lin_commit_args {
    lin_idx accepted;             /* device int32/int64 [n] */
    const int32_t *verify_slot;   /* [n] */
    int32_t *err;
    void *conv, *ssm, *iconv, *issm; /* whole pools */
    int64_t conv_elems, ssm_elems;
    int32_t n, steps, layers, slots, esz;
} lin_commit_args;

/* Shared memory (bytes) of the fused decode kernel for n tokens per request:
 * q[n][K] k[n][K] kq[n] v[n][gsz][V] e[n][gsz][gc] beta[n][gsz] (+ skip[n][gsz][V]). */
static inline size_t lin_decode_smem_bytes(int kind, int K, int V, int gsz, int gc, int n) {
    size_t per = (size_t)2 * K + 1 + (size_t)gsz * ((size_t)V + gc + 1 + (kind == LIN_MAMBA2 ? (size_t)V : 0));
    return (size_t)n * per * sizeof(float);
}
#define LIN_DECODE_SMEM_MAX 49152 /* no opt-in needed */
/* The split decode kernel (lk_decode2.cu, K = 128): state rows per block, by
 * state dtype (4 warps x 8 loads of 16 bytes per lane). */
#define LIN_D2_ROWS(st_dt) ((st_dt) == LIN_DT_F32 ? 32 : 64)
/* its shared memory, for a tile of rt state rows of
 * one value head; q[n][K] k[n][K] kq[n] v[n][rt] e[n][gc] beta[n] (+ skip[n][rt]). */
static inline size_t lin_decode2_smem_bytes(int kind, int K, int rt, int gc, int n) {
    size_t per = (size_t)2 * K + 1 + (size_t)rt + (size_t)gc + 1 + (kind == LIN_MAMBA2 ? (size_t)rt : 0);
    return (size_t)n * per * sizeof(float);
}

/* The stream decode (lk_decode3.cu, K = 128): floats per (request, key head
 * group) of its operand scratch (the fused kernel's shared-memory layout,
 * padded to 16 bytes), and the state rows per block by state dtype (4 warps x
 * 8 loads of 16 bytes per lane). */
static inline size_t lin_decode3_per(int kind, int K, int V, int gsz, int gc, int n) {
    return (lin_decode_smem_bytes(kind, K, V, gsz, gc, n) / sizeof(float) + 3) & ~(size_t)3;
}
#define LIN_D3_ROWS(st_dt) ((st_dt) == LIN_DT_F32 ? 32 : 64)
/* stream_one: a request's prep items come this many requests before its stream items (at most half
 * the batch, so that small batches, the tests' too, interleave prep and stream items as well) */
#define LIN_D4_LEAD 8

/* Shared memory of the chunked tensor-core kernels (K = 128, chunk 64).
 * Phase 1: q, k, beta*k*exp(G), beta*v tiles (16-bit, rows padded by 8), T
 * (16-bit), an fp32 region (conv tile [64 + W - 1][128], then A and T),
 * kda's per-channel cumulative gates, g, beta, exp(G_t), exp(G_last - G_t).  Phase 2: two stages of (W, QG, KD, M, U
 * tile, exp(G_last)), the state tile and the new-values tile (16-bit). */
#define LIN_C1_F32 ((LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_K > 2 * LIN_CHUNK * (LIN_CHUNK + 1) \
                        ? (LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_K                      \
                        : 2 * LIN_CHUNK * (LIN_CHUNK + 1))
#define LIN_C1_SMEM                                                                                    \
    ((size_t)(3 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * (LIN_TC_VMAX + 8) * 2 +               \
              LIN_CHUNK * (LIN_CHUNK + 8) * 2 + LIN_C1_F32 * 4 + LIN_CHUNK * LIN_TC_K * 4 + 4 * LIN_CHUNK * 4))
#define LIN_C2_STAGE(vt)                                                                             \
    (3 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * (LIN_CHUNK + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2 + \
     LIN_TC_K * 4)
#define LIN_C2_SMEM(vt) ((size_t)(2 * LIN_C2_STAGE(vt) + (vt) * (LIN_TC_K + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2))

/* SGL_ATTN_LIN_CSTATE=scan: groups of m chunks a batch can have (lk_cstate.cuh's numbering), and the
 * shared memory of its group passes with row tile vt (= lk_s2<vt>::SMEM, checked in lk_cscan.cu) */
#define LIN_CSCAN_GROUPS(max_chunks, m, max_reqs) ((max_chunks) / (m) + (max_reqs))
#define LIN_CSCAN_SMEM(vt)                                                                                 \
    ((size_t)(3 * (2 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2 + LIN_TC_K * 4) +    \
              (vt) * (LIN_TC_K + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2 + 6 * 4))

/* SGL_ATTN_LIN_CSTATE=v5: the state pass's shared memory with row tile vt (= lk_s5<vt>::SMEM, checked in
 * lk_cstate5.cu): three stages of (P [K][K + 8], KD [64][K + 8], U tile [64][vt + 8], eG) and two 16-bit
 * copies of the state tile */
#define LIN_C5_SMEM(vt)                                                                                    \
    ((size_t)(3 * (LIN_TC_K * (LIN_TC_K + 8) * 2 + LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2 + \
                   LIN_TC_K * 4) +                                                                         \
              2 * (vt) * (LIN_TC_K + 8) * 2))

/* SGL_ATTN_LIN_CSTATE=v6: its state pass's shared memory (lk_cstate6.cu: three 57 KiB stages + 1 KiB of
 * alignment slack) */
#define LIN_C6_SMEM ((size_t)(3 * 58368 + 1024))

/* Launchers: 0 or a cudaError_t. */
int lin_launch_plan(const lin_plan_args *a, void *stream);
/* prep + conv state + token-by-token recurrence (short_conv: conv + state) */
int lin_launch_simple(const lin_fwd *p, void *stream);
/* fused decode/verify kernel (K = 32, 64, 128 or 256; lin_decode_dims_ok) */
int lin_launch_decode(const lin_fwd *p, void *stream);
/* split decode/verify kernel (K = 128; lin_decode2_dims_ok) */
int lin_launch_decode2(const lin_fwd *p, void *stream);
/* stream decode/verify: the operand prep kernel, then the state stream kernel (K = 128;
 * lin_decode3_dims_ok; p->dq) */
int lin_launch_decode3(const lin_fwd *p, void *stream);
int lin_decode3_setup(void); /* the cp.async form's shared-memory carveout (at create) */
/* its prep v2 (p->dq_prep == 2; p->dq_per set): 0 launched, -1 not served here (run v1), else a cudaError_t */
int lin_launch_decprep2(const lin_fwd *p, void *stream);
/* its prep v3 (p->dq_prep == 3; p->dq_per, p->dq_sms set): the same contract */
int lin_launch_decprep3(const lin_fwd *p, void *stream);
/* chunked tensor-core extend: phase 1 (p->c1_split: the split conv + UT kernels), conv state,
 * phase 2 (split2: the split state + output kernels).  ot: LIN_DT_F16/BF16, vt: 16/32 */
int lin_launch_chunk(const lin_fwd *p, int ot, int vt, int split2, void *stream);
/* the split kernels (lk_split1.cu, lk_split2.cu) */
int lin_launch_split1(const lin_fwd *p, int ot, void *stream); /* conv + l2norm, then the UT transform */
int lin_launch_split2(const lin_fwd *p, int ot, int vt, void *stream); /* state pass, then the outputs */
int lin_split_setup(void);
/* SGL_ATTN_LIN_CSTATE=scan: the state pass of lin_launch_split2 by groups of p->cscan_m chunks */
int lin_launch_cscan(const lin_fwd *p, void *stream);
int lin_cscan_setup(int vt);
/* SGL_ATTN_LIN_CSTATE=v5 (lk_cstate5.cu): P for every chunk, then the serial pass (p->Pq; gdn, kda) */
int lin_launch_cstate5(const lin_fwd *p, int vt, void *stream);
int lin_cstate5_setup(void);
/* SGL_ATTN_LIN_CSTATE=v6 (lk_cstate6.cu): the serial pass on wgmma (P made; p->c2_wg) */
int lin_launch_cstate6(const lin_fwd *p, void *stream);
int lin_cstate6_setup(void);
int lin_cstate6_built(void); /* 0 in the tests' emulator (no wgmma there) */
int lin_launch_commit(const lin_commit_args *c, void *stream);
/* pieces the launchers above share (lk_simple.cu, lk_chunk1.cu) */
int lin_launch_convstate(const lin_fwd *p, void *stream);
int lin_launch_chunk1(const lin_fwd *p, int ot, void *stream);
int lin_chunk1_setup(void);
/* cudaFuncSetAttribute for the kernels with > 48 KiB of shared memory. */
int lin_kernels_setup(void);

#ifdef __cplusplus
}
#endif
#endif
