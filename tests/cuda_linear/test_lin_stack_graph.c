/* test_lin_stack_graph.c - a verify batch (SGL_ATTN_FEAT_GRAPH_VERIFY)
 * captured in one CUDA graph through the hybrid stack gdn_cuda/cuda_attn and
 * replayed.  Built twice: test_lin_stack_graph against the GPU build
 * (skipped with the reason where no device answers), and
 * test_lin_stack_graph_emu on the CPU emulator of CUDA, over the emulated
 * plugins of build/emu-plugins (the test links the emulated runtime and
 * exports it, so that both plugins launch and capture through this one).
 *
 * The model: 4 layers, full attention at 1 and 3, Gated DeltaNet at 0 and 2
 * (2 qk heads, 4 value heads, K = V = 128, conv 4), bf16, float32 state,
 * spec_tokens = TPR.  A prefill of 4 requests, init_graph_state, then one
 * verify of 4 requests x TPR draft tokens (keep_intermediate) captured, its
 * capture hook planned on another stream than the one that captures (as
 * sglang plans outside the graph and names the capturing stream inside); then
 * rounds of new batches in the captured tensors: other lengths and slots,
 * padded requests (req_pool_indices row 0, seq_lens = the stack's fill value
 * + TPR, state slot -1, out_cache_loc the spare slot 0), a batch_size below
 * the captured one.  Each round runs eagerly first, on a second instance of
 * the stack with its own linear state (init_forward_metadata and the four
 * forwards), then through the replay hook and the graph: every
 * output row of the batch's live requests bit for bit the eager run's (a
 * padded request's rows are the engine's to drop: its K/V, like every padded
 * request's, go to the one spare slot, so what it reads there depends on the
 * order the writes land in).  After each round
 * state_commit (on both) takes random accepted steps, so the next round
 * starts from a committed state: a replay that wrote another request's draft
 * states shows in the rounds after it.  The replay hook refuses a changed tokens_per_req
 * (E_STATE) and the graph replays after it.
 *
 *   test_lin_stack_graph[_emu] [plugin_dir]   exit 0: pass or SKIP, 1: failure */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lt_tiny_model.h"
#include "lt_util.h"
#include "sgl_attn.h"

enum { REQS = 6, CTX = 256, SLOTS = 1 + REQS * CTX, MAXT = 256, TPR = 3, VBS = 4, VT = VBS * TPR };

typedef struct layer_t {
    lt_tensor conv_w, conv_b, A_log, dt_bias, kc, vc; /* weights (gdn) or the KV pool (full) */
    lt_tensor q, k, v, x, a, b, out;                  /* the verify's captured inputs and output */
    sgl_attn_layer L;
    sgl_attn_linear_io io;
    sgl_attn_forward_args fa;
} layer_t;

static int is_full(int l) { return l % 2 == 1; }

static void layer_args(layer_t *w, int l, sgl_attn_batch *bt) {
    memset(&w->L, 0, sizeof w->L);
    w->L.struct_size = sizeof w->L;
    w->L.layer_id = l;
    w->L.num_q_heads = HQ;
    w->L.num_kv_heads = HKV;
    w->L.head_dim_qk = w->L.head_dim_v = D;
    w->L.sm_scale = 1.0f / sqrtf((float)D);
    w->L.sliding_window = -1;
    w->L.k_scale = w->L.v_scale = 1.0f;
    memset(&w->io, 0, sizeof w->io);
    memset(&w->fa, 0, sizeof w->fa);
    w->fa.struct_size = sizeof w->fa;
    w->fa.layer = &w->L;
    w->fa.batch = bt;
    w->fa.out = &w->out.t;
    if (is_full(l)) {
        w->L.k_cache = &w->kc.t;
        w->L.v_cache = &w->vc.t;
        w->fa.save_kv_cache = 1;
        w->fa.q = &w->q.t;
        w->fa.k = &w->k.t;
        w->fa.v = &w->v.t;
    } else {
        w->io.struct_size = sizeof w->io;
        w->io.kind = SGL_ATTN_HYBRID_GDN;
        w->io.x = &w->x.t;
        w->io.a = &w->a.t;
        w->io.b = &w->b.t;
        w->io.conv_weight = &w->conv_w.t;
        w->io.conv_bias = &w->conv_b.t;
        w->io.A_log = &w->A_log.t;
        w->io.dt_bias = &w->dt_bias.t;
        w->io.out = &w->out.t;
        w->io.use_qk_l2norm = 1;
        w->fa.linear = &w->io;
    }
}

/* Inputs of T token rows (a prefill's own tensors, or the captured ones refilled). */
static void make_inputs(layer_t *w, int l, int T) {
    if (is_full(l)) {
        lt_make(&w->q, LT_BF16, 3, (int64_t[]){T, HQ, D}, 0);
        lt_make(&w->k, LT_BF16, 3, (int64_t[]){T, HKV, D}, 0);
        lt_make(&w->v, LT_BF16, 3, (int64_t[]){T, HKV, D}, 0);
        lt_make(&w->out, LT_BF16, 3, (int64_t[]){T, HQ, D}, 0);
    } else {
        lt_make(&w->x, LT_BF16, 2, (int64_t[]){T, CONV}, 0);
        lt_make(&w->a, LT_BF16, 2, (int64_t[]){T, HV}, 0);
        lt_make(&w->b, LT_BF16, 2, (int64_t[]){T, HV}, 0);
        lt_make(&w->out, LT_BF16, 3, (int64_t[]){T, HV, VD}, 0);
    }
}
static void fill_inputs(layer_t *w, int l, lt_rng *r) {
    if (is_full(l)) {
        lt_fill_normal(&w->q, r, 1.0);
        lt_fill_normal(&w->k, r, 1.0);
        lt_fill_normal(&w->v, r, 1.0);
    } else {
        lt_fill_normal(&w->x, r, 1.0);
        lt_fill_normal(&w->a, r, 1.0);
        lt_fill_normal(&w->b, r, 1.0);
    }
}
/* The first `rows` token rows of the captured tensors, as the eager run of a smaller batch passes them. */
static void set_rows(layer_t *w, int rows) {
    lt_tensor *ts[] = {&w->q, &w->k, &w->v, &w->x, &w->a, &w->b, &w->out};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        if (ts[i]->ref) ts[i]->shape[0] = rows;
}
static void free_inputs(layer_t *w) {
    lt_tensor *ts[] = {&w->q, &w->k, &w->v, &w->x, &w->a, &w->b, &w->out};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        if (ts[i]->ref) lt_free(ts[i]);
}

/* The batch's index tensors (device, fixed addresses: the graph reads them there). */
typedef struct batch_t {
    lt_tensor si, rpi, sl, ocl, pos, el, ep;
    sgl_attn_batch bt;
} batch_t;

/* Requests i < bs: rows[i] (0 = padding), new tokens n each, prefix len[i]
 * (padding: fill), slot slots[i]; entries past bs up to the tensors' size
 * are padding too (slot -1, out_cache_loc 0), as the contract asks. */
static void fill_batch(batch_t *B, int mode, int bs, const int *rows, const int *slots, const int *prefix, int n,
                       void *stream) {
    const int cap = (int)B->si.n, tcap = (int)B->ocl.n;
    int t = 0;
    for (int i = 0; i < cap; i++) {
        const int live = i < bs, row = live ? rows[i] : 0;
        lt_set(&B->si, i, live ? slots[i] : -1);
        lt_set(&B->rpi, i, row);
        lt_set(&B->sl, i, live ? prefix[i] + n : 0);
        if (B->el.ref) {
            lt_set(&B->el, i, live ? n : 0);
            lt_set(&B->ep, i, live ? prefix[i] : 0);
        }
        for (int j = 0; live && j < n; j++, t++) {
            lt_set(&B->ocl, t, row ? 1 + (row - 1) * CTX + prefix[i] + j : 0);
            lt_set(&B->pos, t, prefix[i] + j);
        }
    }
    for (; t < tcap; t++) {
        lt_set(&B->ocl, t, 0);
        lt_set(&B->pos, t, 0);
    }
    lt_tensor *ts[] = {&B->si, &B->rpi, &B->sl, &B->ocl, &B->pos, &B->el, &B->ep};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        if (ts[k]->ref) lt_upload(ts[k]);
    sgl_attn_batch *b = &B->bt;
    b->forward_mode = mode;
    b->batch_size = bs;
    b->num_tokens = bs * n;
    b->tokens_per_req = mode == SGL_ATTN_MODE_TARGET_VERIFY ? n : 1;
    b->stream = stream;
}

static void batch_make(batch_t *B, int cap, int tcap, int ext, const lt_tensor *r2t) {
    memset(B, 0, sizeof *B);
    lt_make(&B->si, LT_I32, 1, (int64_t[]){cap}, 0);
    lt_make(&B->rpi, LT_I32, 1, (int64_t[]){cap}, 0);
    lt_make(&B->sl, LT_I32, 1, (int64_t[]){cap}, 0);
    lt_make(&B->ocl, LT_I32, 1, (int64_t[]){tcap}, 0);
    lt_make(&B->pos, LT_I32, 1, (int64_t[]){tcap}, 0);
    if (ext) {
        lt_make(&B->el, LT_I32, 1, (int64_t[]){cap}, 0);
        lt_make(&B->ep, LT_I32, 1, (int64_t[]){cap}, 0);
    }
    sgl_attn_batch *b = &B->bt;
    b->struct_size = sizeof *b;
    b->page_size = 1;
    b->req_to_token = &r2t->t;
    b->req_pool_indices = &B->rpi.t;
    b->seq_lens = &B->sl.t;
    b->out_cache_loc = &B->ocl.t;
    b->positions = &B->pos.t;
    b->state_indices = &B->si.t;
    if (ext) {
        b->extend_seq_lens = &B->el.t;
        b->extend_prefix_lens = &B->ep.t;
    }
}
static void batch_free(batch_t *B) {
    lt_tensor *ts[] = {&B->si, &B->rpi, &B->sl, &B->ocl, &B->pos, &B->el, &B->ep};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        if (ts[k]->ref) lt_free(ts[k]);
}

static int forwards(sgl_attn_backend *be, layer_t *w, const char *what) {
    for (int l = 0; l < LAYERS; l++) {
        const int rc = sgl_attn_forward_extend(be, &w[l].fa);
        LT_CHECK(rc == SGL_ATTN_OK, "%s layer %d: %s", what, l, sgl_attn_last_error(be));
        if (rc) return rc;
    }
    return SGL_ATTN_OK;
}

static void run(sgl_attn_host *h, const sgl_attn_model *m) {
    const char *names[] = {"gdn_cuda", "cuda_attn"};
    sgl_attn_create_options o = {sizeof o, REQS, MAXT, CTX};
    char err[1024];
    sgl_attn_backend *be = NULL, *ref = NULL; /* the graphs; the eager runs (its own linear state) */
    if (sgl_attn_create_stack(h, names, 2, 0, m, &o, &be, err, sizeof err) != SGL_ATTN_OK ||
        sgl_attn_create_stack(h, names, 2, 0, m, &o, &ref, err, sizeof err) != SGL_ATTN_OK) {
        if (be) sgl_attn_destroy(be);
        if (strstr(err, "not available") || strstr(err, "unavailable")) lt_skip(err);
        LT_CHECK(0, "gdn_cuda/cuda_attn: %s", err);
        return;
    }
    const sgl_attn_backend_ops *ops = be->ops;
    cudaStream_t st = NULL, plan_st = NULL;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&plan_st, cudaStreamNonBlocking) != cudaSuccess) {
        LT_CHECK(0, "cudaStreamCreate");
        if (st) cudaStreamDestroy(st);
        sgl_attn_destroy(be);
        sgl_attn_destroy(ref);
        return;
    }
    lt_rng r = {0x9a9a5eedull};
    layer_t w[LAYERS];
    memset(w, 0, sizeof w);
    for (int l = 0; l < LAYERS; l++) {
        if (is_full(l)) {
            lt_make(&w[l].kc, LT_BF16, 3, (int64_t[]){SLOTS, HKV, D}, 0);
            lt_make(&w[l].vc, LT_BF16, 3, (int64_t[]){SLOTS, HKV, D}, 0);
            lt_fill_normal(&w[l].kc, &r, 1.0);
            lt_fill_normal(&w[l].vc, &r, 1.0);
        } else {
            lt_make(&w[l].conv_w, LT_F32, 2, (int64_t[]){CONV, CW}, 0);
            lt_fill_normal(&w[l].conv_w, &r, 0.5);
            lt_make(&w[l].conv_b, LT_F32, 1, (int64_t[]){CONV}, 0);
            lt_fill_normal(&w[l].conv_b, &r, 0.2);
            lt_make(&w[l].A_log, LT_F32, 1, (int64_t[]){HV}, 0);
            lt_fill_normal(&w[l].A_log, &r, 0.5);
            lt_make(&w[l].dt_bias, LT_F32, 1, (int64_t[]){HV}, 0);
            lt_fill_normal(&w[l].dt_bias, &r, 0.5);
        }
    }
    /* req_to_token: row k >= 1, column j -> slot 1 + (k - 1) * CTX + j; row 0 (padding) -> slot 0 */
    lt_tensor r2t;
    lt_make(&r2t, LT_I32, 2, (int64_t[]){REQS + 1, CTX}, 0);
    for (int row = 1; row <= REQS; row++)
        for (int j = 0; j < CTX; j++) lt_set(&r2t, (size_t)row * CTX + j, 1 + (row - 1) * CTX + j);
    lt_upload(&r2t);
    /* prefill: rows 1..6, state slots 0..5 */
    int len[REQS + 1] = {0, 20, 7, 33, 12, 70, 5};
    {
        batch_t P;
        batch_make(&P, REQS, MAXT, 1, &r2t);
        const int rows[REQS] = {1, 2, 3, 4, 5, 6}, slots[REQS] = {0, 1, 2, 3, 4, 5}, zero[REQS] = {0};
        /* ragged: each request's own length through extend_seq_lens */
        int t = 0;
        fill_batch(&P, SGL_ATTN_MODE_EXTEND, REQS, rows, slots, zero, 1, st);
        for (int i = 0; i < REQS; i++) {
            lt_set(&P.el, i, len[i + 1]);
            lt_set(&P.sl, i, len[i + 1]);
            for (int j = 0; j < len[i + 1]; j++, t++) {
                lt_set(&P.ocl, t, 1 + i * CTX + j);
                lt_set(&P.pos, t, j);
            }
        }
        lt_upload(&P.el);
        lt_upload(&P.sl);
        lt_upload(&P.ocl);
        lt_upload(&P.pos);
        P.bt.num_tokens = t;
        layer_t pw[LAYERS];
        for (int l = 0; l < LAYERS; l++) {
            pw[l] = w[l];
            make_inputs(&pw[l], l, t);
            fill_inputs(&pw[l], l, &r);
            layer_args(&pw[l], l, &P.bt);
        }
        for (int s = 0; s < 2; s++) { /* both instances; the K/V they save are the same */
            sgl_attn_backend *b = s ? ref : be;
            int rc = sgl_attn_init_forward_metadata(b, &P.bt);
            LT_CHECK(rc == SGL_ATTN_OK, "prefill metadata: %s", sgl_attn_last_error(b));
            if (!rc) forwards(b, pw, "prefill");
        }
        LT_CHECK(cudaStreamSynchronize(st) == cudaSuccess, "prefill sync");
        for (int l = 0; l < LAYERS; l++) free_inputs(&pw[l]);
        batch_free(&P);
    }
    int rc = ops->init_graph_state(be, VBS, VT);
    LT_CHECK(rc == SGL_ATTN_OK, "init_graph_state: %d %s", rc, ops->last_error(be));
    const int fill = ops->graph_seq_len_fill_value(be);
    batch_t V;
    batch_make(&V, VBS, VT, 0, &r2t);
    for (int l = 0; l < LAYERS; l++) {
        make_inputs(&w[l], l, VT);
        layer_args(&w[l], l, &V.bt);
        w[l].io.keep_intermediate = 1; /* the draft states, for state_commit */
    }
    /* the rounds: rows (0 = padded request), state slots, batch size, accepted steps after */
    static const struct {
        int bs, rows[VBS], slots[VBS], acc[VBS];
    } R[] = {
        {VBS, {1, 2, 3, 4}, {0, 1, 2, 3}, {2, 0, -1, 1}}, /* the captured batch */
        {VBS, {4, 6, 1, 5}, {3, 5, 0, 4}, {1, 2, 0, 2}},  /* other rows, lengths and slots */
        {VBS, {3, 0, 2, 0}, {2, -1, 1, -1}, {0, -1, 2, -1}}, /* padded requests */
        {2, {2, 4, 0, 0}, {1, 3, -1, -1}, {2, 1, -1, -1}},   /* a batch_size below the captured one */
        {VBS, {2, 5, 1, 3}, {1, 4, 0, 2}, {1, 1, 0, 2}},
    };
    const int nr = (int)(sizeof R / sizeof *R);
    sgl_attn_graph_args g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY;
    g.batch = &V.bt;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    size_t ok_rows = 0;
    for (int k = 0; k < nr && lt_failures == 0; k++) {
        const int bs = R[k].bs;
        int prefix[VBS];
        for (int i = 0; i < bs; i++) prefix[i] = R[k].rows[i] ? len[R[k].rows[i]] : fill;
        fill_batch(&V, SGL_ATTN_MODE_TARGET_VERIFY, bs, R[k].rows, R[k].slots, prefix, TPR, st);
        g.batch_size = bs;
        g.num_tokens = bs * TPR;
        if (k == 0) { /* capture the first batch */
            /* as sglang does: the capture hook plans on the engine's stream, then the batch names the
             * capturing stream (init_forward_metadata_in_graph); a forward that launched on the plan's stream
             * would run now instead of being recorded, and the replays would show it */
            V.bt.stream = plan_st;
            rc = ops->init_forward_metadata_capture(be, &g);
            LT_CHECK(rc == SGL_ATTN_OK, "capture hook: %d %s", rc, ops->last_error(be));
            LT_CHECK(cudaStreamSynchronize(plan_st) == cudaSuccess, "capture hook sync");
            V.bt.stream = st;
            cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
            if (e == cudaSuccess) forwards(be, w, "verify under capture");
            if (e == cudaSuccess) e = cudaStreamEndCapture(st, &graph);
            if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
            LT_CHECK(e == cudaSuccess, "capture: %s", cudaGetErrorString(e));
            if (e != cudaSuccess) break;
        }
        /* eager, on the other instance: the reference bits (the same K/V saved at the same slots) */
        for (int l = 0; l < LAYERS; l++) fill_inputs(&w[l], l, &r);
        for (int l = 0; l < LAYERS; l++) set_rows(&w[l], bs * TPR);
        rc = sgl_attn_init_forward_metadata(ref, &V.bt);
        LT_CHECK(rc == SGL_ATTN_OK, "round %d eager metadata: %s", k, sgl_attn_last_error(ref));
        if (rc || forwards(ref, w, "eager verify")) break;
        for (int l = 0; l < LAYERS; l++) set_rows(&w[l], VT);
        LT_CHECK(cudaStreamSynchronize(st) == cudaSuccess, "eager sync");
        double *want[LAYERS];
        for (int l = 0; l < LAYERS; l++) {
            want[l] = calloc(w[l].out.n, sizeof(double));
            lt_download(&w[l].out, want[l]);
            lt_poison(&w[l].out);
        }
        if (k == 1) { /* a changed tokens_per_req is refused by name; the graph still replays after */
            V.bt.tokens_per_req = TPR - 1;
            V.bt.num_tokens = g.num_tokens = bs * (TPR - 1);
            rc = ops->init_forward_metadata_replay(be, &g);
            const char *why = ops->last_error(be);
            LT_CHECK(rc == SGL_ATTN_E_STATE && why && strstr(why, "tokens_per_req"),
                     "replay with tokens_per_req %d: %d %s", TPR - 1, rc, why);
            V.bt.tokens_per_req = TPR;
            V.bt.num_tokens = g.num_tokens = bs * TPR;
        }
        rc = ops->init_forward_metadata_replay(be, &g);
        LT_CHECK(rc == SGL_ATTN_OK, "round %d replay hook: %d %s", k, rc, ops->last_error(be));
        cudaError_t e = rc ? cudaErrorUnknown : cudaGraphLaunch(exec, st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        LT_CHECK(e == cudaSuccess, "round %d replay: %s", k, cudaGetErrorString(e));
        for (int l = 0; l < LAYERS && e == cudaSuccess; l++) {
            double *got = calloc(w[l].out.n, sizeof(double));
            lt_download(&w[l].out, got);
            const size_t row = w[l].out.n / VT, n = (size_t)bs * TPR * row;
            size_t bad = 0, first = n;
            for (size_t i = 0; i < n; i++)
                if (R[k].rows[i / row / TPR] && memcmp(&got[i], &want[l][i], sizeof(double)) != 0 && !(isnan(got[i]) && isnan(want[l][i]))) {
                    if (!bad) first = i;
                    bad++;
                }
            LT_CHECK(bad == 0, "round %d layer %d: %zu of %zu outputs differ from the eager run (first: row %zu, "
                     "%g vs %g)", k, l, bad, n, first / (first < n ? row : 1), first < n ? got[first] : 0.0,
                     first < n ? want[l][first] : 0.0);
            for (int i = 0; i < bs && !bad; i++) ok_rows += R[k].rows[i] ? TPR : 0;
            free(got);
        }
        for (int l = 0; l < LAYERS; l++) free(want[l]);
        /* commit the accepted steps of the replayed verify; each request's length grows by them */
        lt_tensor acc;
        lt_make(&acc, LT_I32, 1, (int64_t[]){bs}, 0);
        for (int i = 0; i < bs; i++) lt_set(&acc, (size_t)i, R[k].acc[i]);
        lt_upload(&acc);
        rc = ops->state_commit(be, &acc.t);
        LT_CHECK(rc == SGL_ATTN_OK, "round %d state_commit: %d %s", k, rc, ops->last_error(be));
        rc = ref->ops->state_commit(ref, &acc.t);
        LT_CHECK(rc == SGL_ATTN_OK, "round %d eager state_commit: %d %s", k, rc, ref->ops->last_error(ref));
        LT_CHECK(cudaStreamSynchronize(st) == cudaSuccess, "commit sync");
        lt_free(&acc);
        for (int i = 0; i < bs; i++)
            if (R[k].rows[i] && R[k].acc[i] >= 0) len[R[k].rows[i]] += R[k].acc[i] + 1;
        printf("%-4s round %d: batch_size %d, slots %d %d %d %d: the replay is the eager run bit for bit\n",
               lt_failures ? "FAIL" : "ok", k, bs, R[k].slots[0], R[k].slots[1], R[k].slots[2], R[k].slots[3]);
    }
    printf("%zu live verify token rows x layers compared\n", ok_rows);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (int l = 0; l < LAYERS; l++) {
        free_inputs(&w[l]);
        lt_tensor *ts[] = {&w[l].conv_w, &w[l].conv_b, &w[l].A_log, &w[l].dt_bias, &w[l].kc, &w[l].vc};
        for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
            if (ts[i]->ref) lt_free(ts[i]);
    }
    batch_free(&V);
    lt_free(&r2t);
    sgl_attn_destroy(be);
    sgl_attn_destroy(ref);
    cudaStreamDestroy(st);
    cudaStreamDestroy(plan_st);
}

int main(int argc, char **argv) {
    const char *dir = lt_plugdir(argc, argv);
    sgl_attn_host *h = lt_tiny_host_open(dir);
    if (!h) return 1;
    sgl_attn_model m;
    lt_tiny_model(&m, "tiny-qwen3-next-mtp");
    m.spec_tokens = TPR;
    run(h, &m);
    sgl_attn_host_close(h);
    printf("%d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    return lt_failures ? 1 : 0;
}
