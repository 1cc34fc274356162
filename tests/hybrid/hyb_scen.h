/* hyb_scen.h - a wrapper instance driven batch by batch next to the float64
 * reference (linear_ref.c), which keeps its own copy of every slot's state. */
#ifndef HYB_SCEN_H
#define HYB_SCEN_H

#include "hyb_test_util.h"

#define SLOTS 8
#define OWN 2    /* own layers: ids 0 and 2 */
#define STEPS 4  /* verify: intermediate states kept per slot */

typedef struct layer_w {
    ttensor conv_w, conv_b, A_log, dt_bias, D, decay;
    double *conv_wd, *conv_bd, *A_logd, *dt_biasd, *Dd, *decayd;
} layer_w;

/* A layer's caller-owned state (ABI 1.2) for the twin instance: conv
 * [CSLOTS, C, W-1], ssm [CSLOTS, HV, V, K] and their [CSLOTS, STEPS, ...]
 * intermediates, in the state dtype. */
#define CSLOTS (SLOTS + TWIN_OFF)
#define TWIN_OFF 4 /* layer 0 of the twin keeps slot k at k + TWIN_OFF (linear.state_indices) */
typedef struct twin_state {
    DLTensor t[4]; /* conv, ssm, iconv, issm (data NULL: the kind keeps none) */
    int64_t shape[4][5];
} twin_state;

typedef struct scen {
    int kind;
    uint32_t in_dt, state_dt;
    int chunk;           /* -1: the instance's default */
    double tol;          /* NMSE limit */
    sgl_attn_model m;
    hyb_inst *w;
    sgl_attn_backend *b;
    fake_inner inner;
    layer_w lw[OWN];
    double *ref_conv[OWN][SLOTS], *ref_ssm[OWN][SLOTS];
    double *ref_iconv[OWN][SLOTS], *ref_issm[OWN][SLOTS]; /* [STEPS][...] */
    trng r;
    double worst;
    /* twin (scen_twin_open): the same model with the state in caller-owned
     * tensors; every batch runs on both, outputs compared bit for bit */
    sgl_attn_backend *tb;
    fake_inner tinner;
    twin_state ts[OWN];
} scen;

/* spec_tokens > 1 gives the instance a verify pool of that many steps */
void scen_open(scen *s, int kind, const tu_shape *shape, uint32_t in_dt, uint32_t state_dt,
               int chunk, double tol, uint64_t seed, int spec_tokens);
void scen_close(scen *s);
/* One batch through both own layers (compared with the reference) and one
 * full layer (must reach the inner).  keep: verify with intermediate states. */
void run_batch(scen *s, int mode, int bs, const int *slots, const int *n, const int *prefix, int keep);
/* Called by run_batch between init_forward_metadata and the forwards (NULL:
 * none): a test changes the batch's tensors there, and the reference side
 * keeps the values the batch was planned with. */
extern void (*scen_after_metadata)(sgl_attn_batch *batch, void *ctx);
extern void *scen_after_metadata_ctx;

/* Opens the twin of s (after scen_open), created without a pool of its own
 * (option state_pool = 0). */
void scen_twin_open(scen *s);
/* The twin slot of pool slot k in own layer l. */
int scen_twin_slot(int l, int k);
/* The caller-owned state of layer l as a linear io of the kind. */
void scen_twin_io(scen *s, int l, sgl_attn_linear_io *io);
/* ops->state_batch `op` on the pool (state NULL) and on each twin layer
 * (slots mapped), both expected to return `want`; the reference follows
 * when they succeed.  src / steps may be NULL. */
void scen_state_op(scen *s, int op, int n, const int *dst, const int *src, const int *steps, int want);
/* The pool's states equal the twin's, bit for bit, in every slot. */
void scen_twin_same_states(scen *s);

/* The reference side of the pool operations. */
void scen_ref_copy(scen *s, int src, int dst);
void scen_ref_clear(scen *s, int slot);
void scen_ref_commit(scen *s, int slot, int step);
void scen_ref_track(scen *s, int src, int step, int dst);

#endif
