/* lt_scen.h - a CUDA linear wrapper instance (over a fake inner) driven batch
 * by batch next to the float64 reference (attnctl/harness/linear_ref.c),
 * which keeps its own copy of every slot's state.  Every own-layer output is
 * compared with the reference (NMSE), padded requests must give zeros, and a
 * full-attention layer must reach the inner. */
#ifndef LT_SCEN_H
#define LT_SCEN_H

#include "linear_ref.h"
#include "lt_util.h"

#define LT_SLOTS 8
#define LT_OWN 2   /* own layers: ids 0 and 2 (1 and 3 are full attention) */
#define LT_STEPS 3 /* verify: draft tokens per request */
#define LT_CSLOTS 12 /* caller-owned state: slots of the caller's tensors (more than create's max_reqs) */

typedef struct lt_shape {
    int hk, hv, dk, dv, conv_w, hidden;
} lt_shape;

typedef struct lt_layer {
    lt_tensor conv_w, conv_b, A_log, dt_bias, D, decay;
} lt_layer;

typedef struct lt_scen {
    int kind, io_dt, l2norm;
    double x_sigma, tol, worst;
    char label[128];
    const sgl_attn_plugin *plugin;
    sgl_attn_model m;
    sgl_attn_backend *b;
    lt_inner inner;
    lt_layer lw[LT_OWN];
    lref_dims rd;
    int x_dim;
    size_t conv_n, ssm_n;
    double *conv[LT_OWN][LT_SLOTS], *ssm[LT_OWN][LT_SLOTS];
    double *iconv[LT_OWN][LT_SLOTS], *issm[LT_OWN][LT_SLOTS]; /* [LT_STEPS][...] */
    int verify_bs, verify_slots[LT_SLOTS];
    lt_rng r;
    void *stream;
    /* ABI 1.2 caller-owned state (lt_caller_mode at scen_open): the layers' state tensors, as an engine's
     * MambaPool ([LT_CSLOTS, ...], poisoned at the start), the 5-D view of the per-step ssm copies, and
     * which scenario slots hold a state the reference knows */
    int caller;
    lt_tensor cst[LT_OWN], sst[LT_OWN], icst[LT_OWN], isst[LT_OWN];
    DLTensor isst5[LT_OWN];
    int64_t isst5_shape[LT_OWN][5];
    int cur_bs, cur_slots[LT_SLOTS], live[LT_SLOTS];
} lt_scen;

/* lt_caller_mode for the next scen_open: 0 the wrapper's pool; 1 caller-owned tensors at the batch's
 * slots; 2 caller-owned tensors with linear.state_indices giving scenario slot k the tensors' slot
 * LT_CSLOTS - 1 - k (past create's max_reqs for the low slots).  lt_rec_mode: 1 records every output,
 * 2 compares every output with the recorded ones (exactly: the same kernels on the same data), 3 counts
 * the outputs whose bits differ from the recorded ones in lt_rec_ndiff (other kernels on the same data),
 * 0 none of these. */
extern int lt_caller_mode, lt_rec_mode;
extern size_t lt_rec_ndiff;
void lt_rec_reset(void);
void lt_rec_rewind(void); /* lt_rec_mode 2 compares from the first recorded output again */
/* ops->state_batch: op on n entries (scenario slots; -1 skip), on the pool or (caller mode) on each own
 * layer's tensors; index tensors in host memory when on_host; the reference follows. */
void scen_state_batch(lt_scen *s, int op, int n, const int *dst, const int *src, const int *steps, int on_host);
/* caller mode: every live slot's state in the tensors against the reference's (NMSE within the tolerance) */
void scen_check_caller_state(lt_scen *s);
/* the tensors' slot of scenario slot k (-1 stays -1) */
int scen_cslot(const lt_scen *s, int k);
/* the io naming only layer l's state tensors (for state_batch) */
void scen_state_io(lt_scen *s, int l, sgl_attn_linear_io *io);

/* create's max_tokens for the next scen_open (default 512); lt_slow_decay: its layers' gates decay
 * slowly (1: A_log in [-7, -5], lightning decay in [0.001, 0.01]: states remembered over thousands of
 * tokens, so that a long chain's errors show) or strongly (-1: A_log in [0.5, 1.5], the other gates as
 * by default: a chunk's cumulative log-decay spans hundreds, past float32's exp range); lt_weight_dt: the dtype of its conv weights and bias
 * (LT_F32, the default, or LT_BF16) */
extern int lt_max_tokens, lt_slow_decay, lt_weight_dt;

/* A 4-layer model of `kind` (layers 1, 3 full attention). */
void lt_model(sgl_attn_model *m, int kind, const lt_shape *s, uint32_t io_dt_bit, uint32_t state_dt_bit);
/* Create the instance (env SGL_ATTN_LIN_* as the caller set it); -1 with a
 * note when create fails. */
int scen_open(lt_scen *s, const sgl_attn_plugin *pl, int kind, const lt_shape *sh, int io_dt, uint32_t state_dt_bit,
              double tol, uint64_t seed, const char *label);
void scen_close(lt_scen *s);
/* One batch through both own layers and one full layer.  mode:
 * SGL_ATTN_MODE_*; n[i]: new tokens of request i (decode/verify: all equal);
 * prefix: extend only; slots -1 = padding. */
void scen_batch(lt_scen *s, int mode, int bs, const int *slots, const int *n, const int *prefix, int keep);
/* state_commit with the accepted step of each request of the last verify. */
void scen_commit(lt_scen *s, const int *accepted);
void scen_copy(lt_scen *s, int src, int dst);
/* An int32 index tensor of n values (device memory, or host when on_host). */
void lt_index_tensor(lt_tensor *t, int n, const int *v, int on_host);
/* A batch of bs requests, T tokens, tpr tokens a request, page size 1, state
 * indices si (NULL: none) on the stream; the caller adds the lengths. */
void lt_batch_init(sgl_attn_batch *bt, int mode, int bs, int T, int tpr, lt_tensor *si, void *stream);
/* The graph hooks' args for batch bt (its mode, size and tokens). */
void lt_graph_args_init(sgl_attn_graph_args *g, const sgl_attn_batch *bt);
/* state_batch args: op on count entries of dst; src, steps, state NULL for none. */
void lt_state_args(sgl_attn_state_batch_args *a, int op, int count, lt_tensor *dst, lt_tensor *src, lt_tensor *steps,
                   sgl_attn_linear_io *state, void *stream);

/* The inputs of one own layer (random) and its forward args, for callers
 * that run the forward themselves (graph capture); lt_io_check computes the
 * reference for the batch and compares. */
typedef struct lt_io {
    lt_tensor x, a, b, q, k, v, out, csi;
    sgl_attn_linear_io io;
    sgl_attn_layer layer;
    sgl_attn_forward_args fa;
} lt_io;
void lt_io_make(lt_scen *s, int l, int T, int keep, const sgl_attn_batch *bt, lt_io *o);
void lt_io_check(lt_scen *s, int l, lt_io *o, int mode, int bs, const int *slots, const int *n, const int *prefix,
                 int keep, int T);
void lt_io_free(lt_io *o);
void scen_clear(lt_scen *s, int slot);

#endif
