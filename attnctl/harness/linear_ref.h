/* linear_ref.h - the float64 gold reference of the linear-attention kinds,
 * written straight from docs/hybrid.md: token by token, no chunking, no
 * sharing with the plugins' code.  Used by attnctl's linear case families and
 * by tests/hybrid.  One call runs one request's n tokens through one layer,
 * updating that request's states in place. */
#ifndef SGL_ATTN_LINEAR_REF_H
#define SGL_ATTN_LINEAR_REF_H

typedef struct lref_dims {
    int kind;     /* sgl_attn_hybrid_kind */
    int hk, hv;   /* gdn/kda: HK, HV; mamba2: G, H; lightning: H, H */
    int dk, dv;   /* gdn/kda: K, V; mamba2: N, P; lightning: Dk, Dv */
    int conv_w;   /* conv width; 0 none */
    int conv_dim; /* channels convolved (short_conv: D) */
} lref_dims;

/* Inputs of one layer (row-major, double).  Per token rows; weights whole. */
typedef struct lref_in {
    const double *x;      /* [n][x_dim]: gdn/kda mixed qkv, mamba2 xBC, short_conv BCx */
    const double *a;      /* gdn [n][HV]; kda [n][HV*K]; mamba2 dt [n][H] */
    const double *b;      /* gdn/kda [n][HV] */
    const double *q, *k, *v; /* lightning [n][H][Dk], [n][H][Dk], [n][H][Dv] */
    const double *conv_weight; /* [conv_dim][W] */
    const double *conv_bias;   /* [conv_dim] or NULL */
    const double *A_log;  /* [HV] */
    const double *dt_bias;/* gdn/mamba2 [HV]; kda [HV*K] */
    const double *D;      /* mamba2 [H] or NULL */
    const double *decay;  /* lightning [H] */
    int use_qk_l2norm;
} lref_in;

/* conv_state [conv_dim][W-1] and ssm [HV][V][K] (short_conv: ssm unused) are
 * read as the starting state and left as the final one.  out: gdn/kda
 * [n][HV][V], mamba2 [n][H][P], short_conv [n][D], lightning [n][H][Dv].
 * When steps_ssm / steps_conv are non-NULL the state after each token t is
 * also copied to steps_*[t] (the speculative-verify intermediates). */
void lref_run(const lref_dims *d, int n, const lref_in *in, double *conv_state, double *ssm,
              double *out, double *steps_conv, double *steps_ssm);

/* MiniMax sparse attention of one query (docs/hybrid.md): q [Hq][Dk] at
 * position pos sees keys 0..pos of k [ctx][Hkv][Dk], v [ctx][Hkv][Dv]. */
void lref_sparse_query(int Hq, int Hkv, int Dk, int Dv, const double *q, const double *k,
                       const double *v, long pos, int block, int topk, int init_blocks,
                       int local_blocks, double sm_scale, double *out /* [Hq][Dv] */);

#endif
