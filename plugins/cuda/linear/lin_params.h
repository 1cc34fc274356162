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

#include "gpu_fault.h"

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
#define LIN_DECODE_NMAX 16    /* tokens per request the decode / verify kernels take */
#define LIN_TC_K 128          /* the tensor-core chunked path: K = 128 ... */
#define LIN_TC_VMAX 128       /* ... and V a multiple of 32 up to 128 */
#define LIN_PLAN_THREADS 1024

/* Device-detected batch errors (the plan kernel and commit kernel). */
enum { LIN_ERR_NONE = 0, LIN_ERR_SLOT = 1, LIN_ERR_DUP_SLOT = 2, LIN_ERR_LEN = 3, LIN_ERR_PREFIX = 4,
       LIN_ERR_SUM = 5, LIN_ERR_ACCEPT = 6,
       LIN_ERR_POOL_SLOT = 7,  /* a batch slot past the pool, and a layer of that batch used the pool */
       LIN_ERR_CSLOT = 8,      /* a caller-owned layer's slot outside its tensors (fault hi = S) */
       LIN_ERR_CDUP = 9,       /* ... or one another request of the batch already uses */
       LIN_ERR_SB_DST = 10, LIN_ERR_SB_SRC = 11, LIN_ERR_SB_STEP = 12, /* state_batch: index out of range */
       LIN_ERR_SB_REPEAT = 13,   /* state_batch: a dst written twice */
       LIN_ERR_SB_CONFLICT = 14  /* state_batch copy: a dst another entry reads */
};

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
    /* [8]: [0..3] the batch's first slot past the pool (as err; 0: none), kept for the next plan kernel,
     * which reports it when a layer of the batch used the pool; [4] state_batch: 1 when its checks passed */
    int32_t *over;
    int32_t *cslot;                            /* [max_reqs] a caller-owned layer's slots (lin_launch_cslots) */
} lin_plan_dev;

typedef struct lin_plan_args {
    lin_plan_dev d;
    lin_idx state_indices, ext_lens, ext_prefix; /* ext_*: extend only */
    int32_t mode, bs, T, tpr, max_reqs, chunk, verify;
    int32_t check_over; /* a layer of the previous batch used the pool: its over[] is a fault */
    /* graph capture / replay: requests bs..pad_bs-1 and tokens T..pad_T-1 written as padding (no slot, no
     * tokens), since a replayed graph's kernels run the captured batch's grid, which may be larger */
    int32_t pad_bs, pad_T;
    sgl_gpu_fault_ref fault; /* the plan's first error, also noted here for the next metadata call */
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
    /* token-by-token path: conv outputs (l2-normalised q/k), log-decays, beta (mamba2: dt) */
    float *X, *G, *B;
    /* chunked extend, per token and value head (16-bit) + per chunk decay, mamba2 skip */
    void *Wt, *QGt, *KDt, *Ut, *Mt;
    float *eG, *Sk;
    int32_t max_chunks;
    /* chunked extend, bf16: the prep's outputs (16-bit): q, k [T][hk][K] after conv + l2norm, [T][hv][V]
     * beta v (delta) / dt x (mamba2) / v (lightning); NULL for kda (the fused phase 1) */
    void *Qc, *Kc, *Vc;
    int32_t prep_ut;    /* phase 1 is the prep + UT pair (Qc, Kc, Vc there) */
    void *Hs;           /* state pass -> output kernel: the state at each chunk's start, 16-bit [chunk][hv][V][K] */
    /* the segmented state pass (chunk_segment.cu), bf16: segments of seg_chunks chunks (0: the serial pass),
     * at most seg_max per request; Zs [slot][hv][V + K][K] float32, slot LIN_SEG_SLOT of each (request,
     * segment) pair */
    float *Zs;
    int32_t seg_chunks, seg_max;
    /* fused_chunk (chunk_fused_cp.cu): this call's gdn extend after the prep is one kernel per (request,
     * value head); the UT kernel, the state pass and the output kernel do not run */
    int32_t fused_cp;
    /* the stream decode: the prep kernel's operands per (request, key head group), dq_per floats each,
     * in decode_operands.cuh's layout */
    float *dq;
    int32_t dq_per;   /* floats per group (lin_launch_decode_stream sets it) */
    int32_t dq_pdl;   /* SM 9.0+: the stream kernel is a programmatic dependent launch of the prep */
    int32_t dec_l2a;  /* the L2 prefetch ahead: each stream block asks L2 for the state tile of the block this
                       * many blocks after it in launch order (0: none; lin_decode_l2a_blocks) */
    int32_t fused_p2; /* mamba2, bf16: phase 2 in chunk_fused_state.cu with tiles of this many (64) state rows
                       * (lin_fused_p2_tile; 0: the state pass and the output kernel) */
    int32_t grp;      /* this call, mamba2 with fused_p2 and the stream prep (lin_launch_chunk sets it): the fused
                       * phase 2's group form; the prep writes x to Vc and dt to eG and no skip, no UT kernel
                       * runs, and the fused phase 2 reads Qc / Kc per group */
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

/* A caller-owned layer's slots for one forward (lin_launch_cslots): request
 * i's slot src[i], -1 when padding, outside 0..slots-1 or named by an
 * earlier request (both noted as a fault), into out[i]. */
typedef struct lin_cslot_args {
    lin_idx src;                  /* [bs] int32/int64: linear.state_indices or the batch's */
    int32_t *out;                 /* [bs] */
    int64_t slots;                /* S */
    int32_t bs, pad_;
    sgl_gpu_fault_ref fault;
} lin_cslot_args;

/* ops->state_batch on the device: the check kernel (one block: ranges,
 * repeats, copy conflicts; ok = 1 when they pass, else the first error in
 * err[] and the fault record), then the apply kernel over (entry, layer),
 * which does nothing unless ok.  A part (conv, ssm) is main [layer][slot]
 * and inter [layer][slot][step] rows of `bytes`; pitches between layers. */
typedef struct lin_sb_part {
    void *main, *inter;
    size_t bytes, main_pitch, inter_pitch;
} lin_sb_part;
typedef struct lin_sb_args {
    lin_idx dst, src, steps;      /* src / steps NULL when the op reads none */
    lin_sb_part part[2];
    int64_t slots, nsteps;        /* bounds of dst / src and of steps */
    int32_t op, count, layers, checked; /* checked: the host checked every entry (no check kernel) */
    int32_t *ok, *err;
    sgl_gpu_fault_ref fault;
} lin_sb_args;

/* Shared memory (bytes) of the fused decode kernel for n tokens per request:
 * q[n][K] k[n][K] kq[n] v[n][gsz][V] e[n][gsz][gc] beta[n][gsz] (+ skip[n][gsz][V]). */
static inline size_t lin_decode_smem_bytes(int kind, int K, int V, int gsz, int gc, int n) {
    size_t per = (size_t)2 * K + 1 + (size_t)gsz * ((size_t)V + gc + 1 + (kind == LIN_MAMBA2 ? (size_t)V : 0));
    return (size_t)n * per * sizeof(float);
}
#define LIN_DECODE_SMEM_MAX 49152 /* no opt-in needed */

/* The stream decode (decode_stream.cu, K = 128): floats per (request, key
 * head group) of its operand scratch (the fused kernel's shared-memory
 * layout, padded to 16 bytes), and the state rows per block by state dtype (4
 * warps x 8 loads of 16 bytes per lane). */
static inline size_t lin_decode_operands_per(int kind, int K, int V, int gsz, int gc, int n) {
    return (lin_decode_smem_bytes(kind, K, V, gsz, gc, n) / sizeof(float) + 3) & ~(size_t)3;
}
#define LIN_STREAM_ROWS(st_dt) ((st_dt) == LIN_DT_F32 ? 32 : 64)

/* Shared memory of the fused chunked kernels (K = 128, chunk 64), the
 * largest of the chunked extend's (lin_create.c checks the device has it).
 * Phase 1 (chunk_fused_ut.cu): q, k, beta*k*exp(G), beta*v tiles (16-bit,
 * rows padded by 8), T (16-bit), an fp32 region (conv tile [64 + W - 1][128],
 * then A and T), kda's per-channel cumulative gates, g, beta, exp(G_t),
 * exp(G_last - G_t).  Phase 2 (chunk_fused_state.cu): two stages of (W, QG,
 * KD, M, U tile, exp(G_last)), the state tile and the new-values tile
 * (16-bit). */
#define LIN_FUSED_UT_F32 ((LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_K > 2 * LIN_CHUNK * (LIN_CHUNK + 1) \
                              ? (LIN_CHUNK + LIN_CONV_W_MAX - 1) * LIN_TC_K                      \
                              : 2 * LIN_CHUNK * (LIN_CHUNK + 1))
#define LIN_FUSED_UT_SMEM                                                                              \
    ((size_t)(3 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * (LIN_TC_VMAX + 8) * 2 +               \
              LIN_CHUNK * (LIN_CHUNK + 8) * 2 + LIN_FUSED_UT_F32 * 4 + LIN_CHUNK * LIN_TC_K * 4 +       \
              4 * LIN_CHUNK * 4))
#define LIN_FUSED_STATE_STAGE(vt)                                                                    \
    (3 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + LIN_CHUNK * (LIN_CHUNK + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2 + \
     LIN_TC_K * 4)
#define LIN_FUSED_STATE_SMEM(vt) \
    ((size_t)(2 * LIN_FUSED_STATE_STAGE(vt) + (vt) * (LIN_TC_K + 8) * 2 + LIN_CHUNK * ((vt) + 8) * 2))
/* chunk_fused_cp.cu (option fused_chunk): two stages of q | k | beta v ([64][136] 16-bit each), W (A in
 * float32 while T is made), U (T in float32), KD, M and T (16-bit [64][72]), the state's 16-bit copy
 * [128][136], five gate rows of 64 floats: 211,200 B, one block per SM on SM 9.0 (SM 8.0's 163 KiB a block
 * keeps the unfused kernels) */
#define LIN_FUSED_CP_SMEM                                                                              \
    ((size_t)(6 * LIN_CHUNK * (LIN_TC_K + 8) * 2 + 3 * LIN_CHUNK * (LIN_TC_K + 8) * 2 +                  \
              2 * LIN_CHUNK * (LIN_CHUNK + 8) * 2 + LIN_TC_VMAX * (LIN_TC_K + 8) * 2 + 5 * LIN_CHUNK * 4))
/* the bf16 instance (mamba2) also stages its float32 skip D x of each chunk, [C][vt + 8] a
 * stage, so that the outputs do not wait on global loads inside the serial chain */
#define LIN_FUSED_STATE_SKIP(vt) ((size_t)2 * LIN_CHUNK * ((vt) + 8) * 4)
#define LIN_FUSED_STATE_SMEM_BF16(vt) (LIN_FUSED_STATE_SMEM(vt) + LIN_FUSED_STATE_SKIP(vt))

/* The Zs slot of segment s of request i whose first chunk is chunk0 (the plan's chunk list is in request
 * order, so these are distinct for distinct pairs and below ceil(chunks / sc) + bs). */
#define LIN_SEG_SLOT(chunk0, i, s, sc) ((chunk0) / (sc) + (i) + (s))

/* Launchers: 0 or a cudaError_t. */
int lin_launch_plan(const lin_plan_args *a, void *stream);
int lin_launch_commit(const lin_commit_args *c, void *stream);
int lin_launch_cslots(const lin_cslot_args *c, void *stream);    /* state_commit.cu */
int lin_launch_state_batch(const lin_sb_args *a, void *stream); /* state_commit.cu: check (unless checked), apply */
/* token_step.cu: token prep + conv state + token-by-token recurrence (short_conv: conv + state) */
int lin_launch_token_step(const lin_fwd *p, void *stream);
int lin_launch_convstate(const lin_fwd *p, void *stream); /* the new conv history (also the chunked extend's) */
/* decode_fused.cu: the fused decode / verify kernel (K = 32, 64, 128 or 256; lin_decode_fused_dims_ok) */
int lin_launch_decode_fused(const lin_fwd *p, void *stream);
/* decode_stream.cu: the stream decode / verify: the prep (decode_prep.cu), then the state stream kernel
 * (K = 128; lin_decode_stream_dims_ok; p->dq) */
int lin_launch_decode_stream(const lin_fwd *p, void *stream);
int lin_launch_decode_prep(const lin_fwd *p, void *stream); /* p->dq_per set */
/* chunk_extend.cu: the chunked extend (phase 1, conv history, phase 2).  ot: LIN_DT_F16/BF16, vt: 16/32 */
int lin_launch_chunk(const lin_fwd *p, int ot, int vt, void *stream);
int lin_chunk_setup(void); /* cudaFuncSetAttribute of every chunked kernel (> 48 KiB of shared memory) */
/* its pieces */
int lin_launch_chunk_prep_ut(const lin_fwd *p, int ot, void *stream); /* chunk_prep_ut.cu: bf16 */
int lin_chunk_prep_ut_setup(void);
/* chunk_prep_stream.cu: gdn's, kda's and mamba2's chunked prep (conv width 4, 16-byte bf16 x rows) as a stream
 * along time; lin_chunk_prep_stream_serves says whether it serves p (else the general prep in chunk_prep_ut.cu) */
int lin_chunk_prep_stream_serves(const lin_fwd *p);
int lin_launch_chunk_prep_stream(const lin_fwd *p, void *stream);
int lin_launch_chunk_fused_ut(const lin_fwd *p, int ot, void *stream); /* chunk_fused_ut.cu */
int lin_chunk_fused_ut_setup(void);
int lin_launch_chunk_state(const lin_fwd *p, int vt, void *stream); /* chunk_state.cu: bf16 */
int lin_launch_chunk_state_mode(const lin_fwd *p, int vt, int mode, void *stream); /* 0 serial, 1 / 2 segments */
int lin_launch_chunk_segments(const lin_fwd *p, int vt, void *stream); /* chunk_segment.cu: modes 1, join, 2 */
int lin_chunk_state_setup(void);
int lin_launch_chunk_output(const lin_fwd *p, void *stream); /* chunk_output.cu: bf16 */
int lin_chunk_output_setup(void);
/* chunk_fused_state.cu: f16 (vt 16 / 32); mamba2 at bf16 (vt 64, its setup at create where it runs) */
int lin_launch_chunk_fused_state(const lin_fwd *p, int ot, int vt, void *stream);
int lin_chunk_fused_state_setup(void);
int lin_chunk_fused_state_bf16_setup(void);
/* chunk_fused_cp.cu: option fused_chunk, gdn, bf16, K = 128, V 64 / 128; its setup only on devices with
 * LIN_FUSED_CP_SMEM of opt-in shared memory a block */
int lin_launch_chunk_fused_cp(const lin_fwd *p, void *stream);
int lin_chunk_fused_cp_setup(void);

#ifdef __cplusplus
}
#endif
#endif
