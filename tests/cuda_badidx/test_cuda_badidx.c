/* test_cuda_badidx.c - bad device-resident indices through cuda_attn and
 * cuda_mla (GPU; prints SKIP with the probe's reason elsewhere).  Plain C:
 * the GPU machine has no cmocka.
 *
 * Each case puts one bad value into one index tensor that only the device
 * holds (no host mirror of it): an out_cache_loc slot outside the pool,
 * negative, 2^31-1, an int64 at 2^32 + a real slot; a req_to_token entry
 * outside the pool (int32, and int64 at 2^32 + a real slot); seq_lens past
 * the table's columns or negative; req_pool_indices outside req_to_token's
 * rows (int32, negative, int64 at 2^32 + a real row); an extend length past
 * its seq_len; a page_table page whose slots lie past the pool (int32, and
 * int64 at 2^32 + a real page); a layer.slot_map entry past the pool, of a
 * key the attention reads and of a new token the save writes (through
 * req_to_token and through a page table; int64 at 2^32 + a real slot); a
 * cross layer's batch.encoder_out_cache_loc entry that is not its column's
 * slot, or one entry more or fewer than encoder_lens sum to (enc_loc_case).
 * It runs init_forward_metadata + forward (save_kv_cache on)
 * and then asserts:
 *   - both calls return OK (the plugin cannot see device values without a
 *     copy) and the stream completes (no device fault);
 *   - the pool holds exactly the saved rows of the good tokens and nothing
 *     else changed (a snapshot taken before the forward, compared whole);
 *   - a request whose row or length is out of range gets zero output rows
 *     (cuda_attn decode);
 *   - the next init_forward_metadata, with a good batch, fails with
 *     SGL_ATTN_E_INVALID naming the tensor and the value, and the one after
 *     it succeeds (the record is cleared).
 * Kernels: cuda_attn with kernel=auto, mma and portable; cuda_mla with its
 * default choice.  The linear wrappers' state_indices are covered by
 * test_lin_gpu (and on the CPU by test_lin_emu).
 *
 *   test_cuda_badidx [plugin_dir]   (default: the build's plugin folder) */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mla_gpu_util.h"
#include "sgl_attn_abi.h"

static int failures, checks;
#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        checks++;                                                                                                     \
        if (!(cond)) {                                                                                                \
            failures++;                                                                                               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                               \
            printf(__VA_ARGS__);                                                                                      \
            printf("\n");                                                                                             \
        }                                                                                                             \
    } while (0)
#define CU(x)                                                                                                         \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                          \
            exit(2);                                                                                                  \
        }                                                                                                             \
    } while (0)

/* ------------------------------------------------------------ the cases */

enum { T_LOC, T_R2T, T_SEQ, T_RPI, T_EXT, T_PT, T_MAP, T_MAPLOC };
static const char *const tensor_names[] = {"out_cache_loc", "req_to_token", "seq_lens", "req_pool_indices",
                                           "extend_seq_lens", "page_table", "slot_map", "slot_map"};
enum { V_ABS, V_BOUND, V_REAL }; /* the bad value: v, the tensor's bound + v, a real value + v */
typedef struct bad_case {
    const char *name;
    int tensor; /* T_* */
    int is64;   /* the tensor is int64 */
    int vk;     /* V_* */
    int64_t v;
    int extend_only;
    int zero_out; /* the request attends nothing: zero output rows (cuda_attn decode) */
    int paged;    /* cuda_attn only: batch.page_table (pages of PS tokens) in place of req_to_token */
} bad_case;
#define P32 ((int64_t)1 << 32)
static const bad_case cases[] = {
    {"out_cache_loc past the pool", T_LOC, 0, V_BOUND, 0, 0, 0, 0},
    {"out_cache_loc -1", T_LOC, 0, V_ABS, -1, 0, 0, 0},
    {"out_cache_loc 2^31-1", T_LOC, 0, V_ABS, INT32_MAX, 0, 0, 0},
    {"out_cache_loc int64 2^32 + a slot", T_LOC, 1, V_REAL, P32, 0, 0, 0},
    {"req_to_token entry past the pool", T_R2T, 0, V_BOUND, 7, 0, 0, 0},
    {"req_to_token int64 2^32 + a slot", T_R2T, 1, V_REAL, P32, 0, 0, 0},
    {"seq_lens past the columns", T_SEQ, 0, V_BOUND, 1, 0, 1, 0},
    {"seq_lens -3", T_SEQ, 0, V_ABS, -3, 0, 1, 0},
    {"req_pool_indices past the rows", T_RPI, 0, V_BOUND, 0, 0, 1, 0},
    {"req_pool_indices -1", T_RPI, 0, V_ABS, -1, 0, 1, 0},
    {"req_pool_indices int64 2^32 + a row", T_RPI, 1, V_REAL, P32, 0, 1, 0},
    {"extend_seq_lens past seq_lens", T_EXT, 0, V_REAL, 1, 1, 0, 0},
    /* ABI 1.2 page tables and slot maps (cuda_attn) */
    {"page_table page past the pool", T_PT, 0, V_BOUND, 0, 0, 0, 1},
    {"page_table int64 2^32 + a page", T_PT, 1, V_REAL, P32, 0, 0, 1},
    {"seq_lens past a page_table's columns", T_SEQ, 0, V_BOUND, 1, 0, 1, 1},
    {"out_cache_loc past the pool, page_table batch", T_LOC, 0, V_BOUND, 0, 0, 0, 1},
    {"slot_map entry of a key past the pool", T_MAP, 0, V_BOUND, 3, 0, 0, 0},
    {"slot_map int64 2^32 + a slot", T_MAP, 1, V_REAL, P32, 0, 0, 0},
    {"slot_map entry of a key past the pool, page_table batch", T_MAP, 0, V_ABS, -2, 0, 0, 1},
    {"slot_map entry of a new token past the pool", T_MAPLOC, 0, V_BOUND, 0, 0, 0, 0},
    {"slot_map entry of a new token past the pool, page_table batch", T_MAPLOC, 1, V_REAL, P32, 0, 0, 1},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* The bad value of case c: `real` a good value of the tensor, `bound` its limit. */
static int64_t bad_value(const bad_case *c, int64_t real, int64_t bound) {
    return c->vk == V_ABS ? c->v : c->vk == V_BOUND ? bound + c->v : real + c->v;
}

/* ----------------------------------------------------------- cuda_attn */

enum { HQ = 8, HKV = 2, D = 128, ROWS = 4, COLS = 64, SLOTS = 512, BS = 2, MAXT = 16 };
/* page_table cases: pages of PS tokens, NP per request, holding the same
 * slots as req_to_token's rows (16 + row * COLS + column: page-aligned) */
enum { PS = 16, NP = COLS / PS };

static const sgl_attn_plugin *attn;
static const char *g_kernel;
static const char *kernel_option(void *ctx, const char *p, const char *k) {
    (void)ctx;
    return p && k && !strcmp(p, "cuda_attn") && !strcmp(k, "kernel") ? g_kernel : NULL;
}
static void quiet_log(void *ctx, int level, const char *who, const char *fmt, ...) {
    (void)ctx, (void)level, (void)who, (void)fmt;
}
static sgl_attn_host_api g_host;

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint16_t rnd_bf16(void) {
    rs ^= rs >> 12, rs ^= rs << 25, rs ^= rs >> 27;
    const float f = (float)((double)((rs * 0x2545f4914f6cdd1dull) >> 40) / 16777216.0 - 0.5);
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

typedef struct dt {
    void *p;
    DLTensor t;
    int64_t shape[3];
} dt;
static void dmake(dt *x, int ndim, const int64_t *shape, uint8_t code, uint8_t bits) {
    memset(x, 0, sizeof *x);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)(x->shape[i] = shape[i]);
    CU(cudaMalloc(&x->p, n * bits / 8));
    x->t.data = x->p;
    x->t.device.device_type = kDLCUDA;
    x->t.ndim = ndim;
    x->t.shape = x->shape;
    x->t.dtype.code = code;
    x->t.dtype.bits = bits;
    x->t.dtype.lanes = 1;
}
/* An index tensor from int64 values, stored as int32 or int64. */
static void dindex(dt *x, int ndim, const int64_t *shape, const int64_t *v, int is64) {
    dmake(x, ndim, shape, kDLInt, is64 ? 64 : 32);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (is64) {
        CU(cudaMemcpy(x->p, v, n * 8, cudaMemcpyHostToDevice));
        return;
    }
    int32_t *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (int32_t)v[i];
    CU(cudaMemcpy(x->p, h, n * 4, cudaMemcpyHostToDevice));
    free(h);
}

static int contains(const char *s, const char *sub) { return s && sub && strstr(s, sub) != NULL; }

/* After a call that met a bad index: the next metadata call fails naming
 * `name` and the value (`wantv`, "= <value>"), and the one after succeeds
 * (the fault is reported once).  `label` says which case in a failure. */
static void reported_once(sgl_attn_backend *be, const sgl_attn_batch *bt, const char *name, const char *wantv,
                          const char *label) {
    int rc = be->ops->init_forward_metadata(be, bt);
    const char *msg = be->ops->last_error(be);
    CHECK(rc == SGL_ATTN_E_INVALID && contains(msg, name) && contains(msg, wantv),
          "%s: the next call: rc %d '%s' (want %s ... %s)", label, rc, msg, name, wantv);
    rc = be->ops->init_forward_metadata(be, bt);
    CHECK(rc == SGL_ATTN_OK, "%s: reported once, then clear: rc %d '%s'", label, rc, be->ops->last_error(be));
}

/* The requests both cuda_attn cases batch: request b is req_to_token row
 * ROW_OF[b] (its page table row b) with SEQ_OF[b] tokens. */
static const int64_t ROW_OF[BS] = {1, 3}, SEQ_OF[BS] = {20, 33};

/* The good tables: req_to_token row r column k holds slot 16 + r * COLS + k
 * (row 1 column 0 = slot 80); page table row b holds request b's pages of
 * PS slots (the same slots: page-aligned). */
static void good_tables(int64_t *r2t, int64_t *pt) {
    for (int i = 0; i < ROWS * COLS; i++) r2t[i] = 16 + i;
    for (int b = 0; b < BS; b++)
        for (int j = 0; j < NP; j++) pt[b * NP + j] = r2t[ROW_OF[b] * COLS + j * PS] / PS;
}

/* What a cuda_attn case's forward reads and writes: q and out [T, HQ, D],
 * the pool's K and V [SLOTS, HKV, D] and the new K and V [n_new, HKV, D],
 * random bf16 on the device (out poisoned: NaN), with host copies: the pool's
 * snapshot (hk0, hv0; io_saved makes it the expected pool), the pool after
 * the forward (hk, hv) and the output (ho). */
typedef struct attn_io {
    dt q, out, k, v, nk, nv;
    size_t nq, npool, nn;
    uint16_t *hq, *hk0, *hv0, *hk, *hv, *hnk, *hnv, *ho;
} attn_io;
static void io_open(attn_io *io, int64_t T, int64_t n_new) {
    const int64_t sq[3] = {T, HQ, D}, skv[3] = {SLOTS, HKV, D}, snew[3] = {n_new, HKV, D};
    dmake(&io->q, 3, sq, kDLBfloat, 16);
    dmake(&io->out, 3, sq, kDLBfloat, 16);
    dmake(&io->k, 3, skv, kDLBfloat, 16);
    dmake(&io->v, 3, skv, kDLBfloat, 16);
    dmake(&io->nk, 3, snew, kDLBfloat, 16);
    dmake(&io->nv, 3, snew, kDLBfloat, 16);
    const size_t nq = io->nq = (size_t)T * HQ * D, npool = io->npool = (size_t)SLOTS * HKV * D,
                 nn = io->nn = (size_t)n_new * HKV * D;
    io->hq = malloc(nq * 2), io->ho = malloc(nq * 2), io->hk0 = malloc(npool * 2), io->hv0 = malloc(npool * 2);
    io->hk = malloc(npool * 2), io->hv = malloc(npool * 2), io->hnk = malloc(nn * 2), io->hnv = malloc(nn * 2);
    for (size_t i = 0; i < nq; i++) io->hq[i] = rnd_bf16();
    for (size_t i = 0; i < npool; i++) io->hk0[i] = rnd_bf16(), io->hv0[i] = rnd_bf16();
    for (size_t i = 0; i < nn; i++) io->hnk[i] = rnd_bf16(), io->hnv[i] = rnd_bf16();
    CU(cudaMemcpy(io->q.p, io->hq, nq * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(io->k.p, io->hk0, npool * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(io->v.p, io->hv0, npool * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(io->nk.p, io->hnk, nn * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(io->nv.p, io->hnv, nn * 2, cudaMemcpyHostToDevice));
    CU(cudaMemset(io->out.p, 0xff, nq * 2)); /* poison: NaN */
}
static void io_close(attn_io *io) {
    dt *all[] = {&io->q, &io->out, &io->k, &io->v, &io->nk, &io->nv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cudaFree(all[i]->p));
    free(io->hq), free(io->ho), free(io->hk0), free(io->hv0), free(io->hk), free(io->hv), free(io->hnk), free(io->hnv);
}

/* A batch of BS requests and T tokens over req_to_token and req_pool_indices
 * (page_size 1), or over the page table when `paged`, on stream st; the
 * layer (a cross layer when is_cross) over io's pool; the forward args over
 * io's tensors, save_kv_cache on. */
static void io_args(attn_io *io, int mode, int64_t T, dt *r2t, dt *rpi, dt *sl, dt *pt, int paged, int is_cross,
                    cudaStream_t st, sgl_attn_batch *bt, sgl_attn_layer *ly, sgl_attn_forward_args *fa) {
    memset(bt, 0, sizeof *bt);
    bt->struct_size = sizeof *bt;
    bt->forward_mode = mode;
    bt->batch_size = BS, bt->num_tokens = (int32_t)T, bt->page_size = 1, bt->tokens_per_req = 1;
    bt->req_to_token = &r2t->t, bt->req_pool_indices = &rpi->t, bt->seq_lens = &sl->t;
    if (paged) bt->page_table = &pt->t, bt->page_size = PS, bt->req_to_token = NULL, bt->req_pool_indices = NULL;
    bt->stream = st;
    memset(ly, 0, sizeof *ly);
    ly->struct_size = sizeof *ly;
    ly->num_q_heads = HQ, ly->num_kv_heads = HKV, ly->head_dim_qk = ly->head_dim_v = D, ly->is_cross = is_cross;
    ly->sm_scale = 0.088f, ly->sliding_window = -1, ly->k_cache = &io->k.t, ly->v_cache = &io->v.t;
    ly->k_scale = ly->v_scale = 1;
    memset(fa, 0, sizeof *fa);
    fa->struct_size = sizeof *fa;
    fa->layer = ly, fa->batch = bt, fa->q = &io->q.t, fa->out = &io->out.t, fa->k = &io->nk.t, fa->v = &io->nv.t;
    fa->save_kv_cache = 1;
}

/* init_forward_metadata and the forward on fa's batch: both return OK (two
 * checks; `label` names the case); then the pool and the output back in io. */
static void io_run(sgl_attn_backend *be, attn_io *io, const sgl_attn_forward_args *fa, int extend, cudaStream_t st,
                   const char *label) {
    int rc = be->ops->init_forward_metadata(be, fa->batch);
    CHECK(rc == SGL_ATTN_OK, "%s: metadata rc %d '%s'", label, rc, be->ops->last_error(be));
    rc = extend ? be->ops->forward_extend(be, fa) : be->ops->forward_decode(be, fa);
    CHECK(rc == SGL_ATTN_OK, "%s: forward rc %d '%s'", label, rc, be->ops->last_error(be));
    CU(cudaStreamSynchronize(st));
    CU(cudaMemcpy(io->hk, io->k.p, io->npool * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(io->hv, io->v.p, io->npool * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(io->ho, io->out.p, io->nq * 2, cudaMemcpyDeviceToHost));
}

/* The expected pool: new row t saved at slot s. */
static void io_saved(attn_io *io, int64_t s, int64_t t) {
    const size_t row = (size_t)HKV * D;
    memcpy(io->hk0 + (size_t)s * row, io->hnk + (size_t)t * row, row * 2);
    memcpy(io->hv0 + (size_t)s * row, io->hnv + (size_t)t * row, row * 2);
}

/* The pool after the forward is the expected one, whole (one check). */
static void io_pool_check(const attn_io *io, const char *label) {
    const size_t row = (size_t)HKV * D;
    int bad_slots = 0, first = -1;
    for (int s = 0; s < SLOTS; s++)
        if (memcmp(io->hk + s * row, io->hk0 + s * row, row * 2) ||
            memcmp(io->hv + s * row, io->hv0 + s * row, row * 2)) {
            if (first < 0) first = s;
            bad_slots++;
        }
    CHECK(bad_slots == 0, "%s: %d pool slots differ from the expected (first %d)", label, bad_slots, first);
}

/* One cuda_attn case in one mode on backend be. */
static void attn_case(sgl_attn_backend *be, const bad_case *c, int extend, cudaStream_t st) {
    const int64_t *rows = ROW_OF, *seq = SEQ_OF, ext[BS] = {3, 5};
    int64_t qlen[BS], T = 0;
    for (int b = 0; b < BS; b++) T += qlen[b] = extend ? ext[b] : 1;
    int64_t r2t[ROWS * COLS], loc[MAXT], rpi[BS], sl[BS], el[BS], pt[BS * NP], map[SLOTS];
    good_tables(r2t, pt);
    const int mapped = c->tensor == T_MAP || c->tensor == T_MAPLOC;
    for (int s = 0; s < SLOTS; s++) map[s] = (s * 5 + 3) % SLOTS; /* a permutation of the layer's pool */
    for (int b = 0, t = 0; b < BS; b++) {
        rpi[b] = rows[b], sl[b] = seq[b], el[b] = ext[b];
        for (int i = 0; i < qlen[b]; i++, t++) loc[t] = r2t[rows[b] * COLS + seq[b] - qlen[b] + i];
    }
    /* the bad value, always in request 1 (its last token for out_cache_loc) */
    int64_t value = 0;
    switch (c->tensor) {
    case T_LOC: value = loc[T - 1] = bad_value(c, r2t[1 * COLS + 0] /* slot 80: request 0's */, SLOTS); break;
    case T_R2T: value = r2t[rows[1] * COLS + 5] = bad_value(c, 80, SLOTS); break;
    case T_SEQ: value = sl[1] = bad_value(c, 0, COLS); break;
    case T_RPI: value = rpi[1] = bad_value(c, 1, ROWS); break;
    case T_EXT: value = el[1] = bad_value(c, seq[1], 0); break;
    case T_PT: value = pt[1 * NP + 1] = bad_value(c, pt[1 * NP + 1], SLOTS / PS); break; /* columns 16..31 */
    case T_MAP: value = map[r2t[rows[1] * COLS + 5]] = bad_value(c, map[r2t[rows[1] * COLS + 5]], SLOTS); break;
    case T_MAPLOC: value = map[loc[T - 1]] = bad_value(c, map[loc[T - 1]], SLOTS); break;
    }
    const int is64 = c->is64;
    attn_io io;
    io_open(&io, T, T);
    dt tr2t, tloc, trpi, tsl, tel, tpt, tmap;
    const int64_t sr[2] = {ROWS, COLS}, sb[1] = {BS}, st1[1] = {T}, sp[2] = {BS, NP}, sm[1] = {SLOTS};
    dindex(&tr2t, 2, sr, r2t, is64 && c->tensor == T_R2T);
    dindex(&tloc, 1, st1, loc, is64 && c->tensor == T_LOC);
    dindex(&trpi, 1, sb, rpi, is64 && c->tensor == T_RPI);
    dindex(&tsl, 1, sb, sl, 0);
    dindex(&tel, 1, sb, el, 0);
    dindex(&tpt, 2, sp, pt, is64 && c->tensor == T_PT);
    dindex(&tmap, 1, sm, map, is64 && mapped);

    sgl_attn_batch bt;
    sgl_attn_layer ly;
    sgl_attn_forward_args fa;
    io_args(&io, extend ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE, T, &tr2t, &trpi, &tsl, &tpt, c->paged, 0, st,
            &bt, &ly, &fa);
    bt.out_cache_loc = &tloc.t;
    if (extend) bt.extend_seq_lens = &tel.t;
    if (mapped) ly.slot_map = &tmap.t;
    char label[160];
    snprintf(label, sizeof label, "cuda_attn kernel=%s %s, %s", g_kernel, extend ? "extend" : "decode", c->name);
    io_run(be, &io, &fa, extend, st, label);
    /* the expected pool: the snapshot with the good tokens' rows saved */
    for (int t = 0; t < T; t++) {
        const int64_t s = loc[t] >= 0 && loc[t] < SLOTS && mapped ? map[loc[t]] : loc[t]; /* through the map */
        if (s >= 0 && s < SLOTS) io_saved(&io, s, t);
    }
    io_pool_check(&io, label);
    if (c->zero_out && !extend) { /* request 1's output rows: zero */
        int nz = 0;
        for (size_t i = (size_t)1 * HQ * D; i < (size_t)2 * HQ * D; i++) nz += io.ho[i] != 0;
        CHECK(nz == 0, "%s: %d nonzero output values in the faulted request", label, nz);
    }
    /* the report: the next metadata call, with a good batch */
    char wantv[40];
    snprintf(wantv, sizeof wantv, "= %" PRId64, value);
    dt gr2t, grpi, gsl, gel, gpt;
    int64_t r2t_ok[ROWS * COLS], rpi_ok[BS] = {rows[0], rows[1]}, sl_ok[BS] = {seq[0], seq[1]},
                                 el_ok[BS] = {ext[0], ext[1]}, pt_ok[BS * NP];
    good_tables(r2t_ok, pt_ok);
    dindex(&gr2t, 2, sr, r2t_ok, 0);
    dindex(&grpi, 1, sb, rpi_ok, 0);
    dindex(&gsl, 1, sb, sl_ok, 0);
    dindex(&gel, 1, sb, el_ok, 0);
    dindex(&gpt, 2, sp, pt_ok, 0);
    if (c->paged) bt.page_table = &gpt.t;
    else bt.req_to_token = &gr2t.t, bt.req_pool_indices = &grpi.t;
    bt.seq_lens = &gsl.t;
    if (extend) bt.extend_seq_lens = &gel.t;
    reported_once(be, &bt, tensor_names[c->tensor], wantv, label);
    CU(cudaStreamSynchronize(st));
    dt *all[] = {&tr2t, &tloc, &trpi, &tsl, &tel, &tpt, &tmap, &gr2t, &grpi, &gsl, &gel, &gpt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cudaFree(all[i]->p));
    io_close(&io);
}

/* Cross attention's encoder slots (batch.encoder_out_cache_loc): a decode
 * batch whose cross layer saves the encoder K/V (lengths ENC0, ENC1) and
 * attends over them.  kind 0: every entry is its column's slot; 1: request
 * 1's encoder column 2 names another slot of the pool; 2 / 3: one entry more
 * / fewer than the sum of encoder_lens.  Both calls return OK (the entries
 * are the device's); the pool changes exactly at the entries given (the save
 * writes what the caller named: a wrong entry is reported, not skipped); the
 * next metadata call fails naming the field and the entry or the length
 * (kind 0: succeeds), the one after succeeds; paged: through a page table. */
enum { ENC0 = 5, ENC1 = 7, NENC = ENC0 + ENC1 };
static void enc_loc_case(sgl_attn_backend *be, int kind, int paged, cudaStream_t st) {
    const int64_t enc[BS] = {ENC0, ENC1};
    int64_t r2t[ROWS * COLS], rpi[BS], sl[BS], en[BS], pt[BS * NP], loc[NENC + 1];
    good_tables(r2t, pt);
    for (int b = 0; b < BS; b++) rpi[b] = ROW_OF[b], sl[b] = SEQ_OF[b], en[b] = enc[b];
    int n = 0;
    for (int b = 0; b < BS; b++)
        for (int c = 0; c < enc[b]; c++) loc[n++] = r2t[ROW_OF[b] * COLS + c];
    loc[n] = 300; /* kind 2's extra entry: a slot of no request */
    const int bad_e = ENC0 + 2;
    const int64_t want_slot = loc[bad_e];
    if (kind == 1) loc[bad_e] = 400;
    const int64_t nloc = kind == 2 ? NENC + 1 : kind == 3 ? NENC - 1 : NENC;
    const int T = BS;
    attn_io io;
    io_open(&io, T, nloc);
    dt tr2t, trpi, tsl, ten, tpt, tloc;
    const int64_t sr[2] = {ROWS, COLS}, sb[1] = {BS}, sp[2] = {BS, NP}, sl1[1] = {nloc};
    dindex(&tr2t, 2, sr, r2t, 0);
    dindex(&trpi, 1, sb, rpi, 1);
    dindex(&tsl, 1, sb, sl, 0);
    dindex(&ten, 1, sb, en, 0);
    dindex(&tpt, 2, sp, pt, 1);
    dindex(&tloc, 1, sl1, loc, kind & 1);

    sgl_attn_batch bt;
    sgl_attn_layer ly;
    sgl_attn_forward_args fa;
    io_args(&io, SGL_ATTN_MODE_DECODE, T, &tr2t, &trpi, &tsl, &tpt, paged, 1, st, &bt, &ly, &fa);
    bt.encoder_lens = &ten.t;
    bt.encoder_out_cache_loc = &tloc.t;
    static const char *const kinds[] = {"good", "an entry not its column's slot", "one entry more", "one entry fewer"};
    char label[160];
    snprintf(label, sizeof label, "cuda_attn kernel=%s encoder slots (%s, %s)", g_kernel, kinds[kind],
             paged ? "page_table" : "req_to_token");
    io_run(be, &io, &fa, 0, st, label);
    for (int64_t e = 0; e < nloc; e++) io_saved(&io, loc[e], e);
    io_pool_check(&io, label);
    /* the report: the next metadata call (this batch again), then clear */
    char w1[96] = "", w2[96] = "";
    if (kind == 1) {
        snprintf(w1, sizeof w1, "encoder_out_cache_loc[%d] = 400", bad_e);
        snprintf(w2, sizeof w2, "expected %" PRId64 " (the slot", want_slot);
    } else if (kind >= 2) {
        snprintf(w1, sizeof w1, "encoder_out_cache_loc with %" PRId64 " entries", nloc);
        snprintf(w2, sizeof w2, "expected %d", NENC);
    }
    int rc = be->ops->init_forward_metadata(be, &bt);
    const char *msg = be->ops->last_error(be);
    if (kind == 0)
        CHECK(rc == SGL_ATTN_OK, "%s: the next call: rc %d '%s'", label, rc, msg);
    else
        CHECK(rc == SGL_ATTN_E_INVALID && contains(msg, w1) && contains(msg, w2),
              "%s: the next call: rc %d '%s' (want %s ... %s)", label, rc, msg, w1, w2);
    CU(cudaStreamSynchronize(st));
    /* the record is clear (kind 0: the good batch's check noted nothing either) */
    bt.encoder_out_cache_loc = NULL;
    rc = be->ops->init_forward_metadata(be, &bt);
    CHECK(rc == SGL_ATTN_OK, "%s: reported once, then clear: rc %d '%s'", label, rc, be->ops->last_error(be));
    CU(cudaStreamSynchronize(st));
    dt *all[] = {&tr2t, &trpi, &tsl, &ten, &tpt, &tloc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CU(cudaFree(all[i]->p));
    io_close(&io);
}

static int attn_tests(const char *dir) {
    char so[4096];
    snprintf(so, sizeof so, "%s/cuda_attn.so", dir);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL dlopen %s: %s\n", so, dlerror());
        return -1;
    }
    sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)dlsym(h, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    g_host.struct_size = sizeof g_host;
    g_host.abi_major = SGL_ATTN_ABI_MAJOR;
    g_host.abi_minor_max = SGL_ATTN_ABI_MINOR;
    g_host.get_option = kernel_option;
    g_host.log = quiet_log;
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (!entry || entry(&g_host, &ans) || !ans.plugin) {
        printf("FAIL %s: no entry point or it refused\n", so);
        return -1;
    }
    attn = ans.plugin;
    sgl_attn_caps caps;
    memset(&caps, 0, sizeof caps);
    caps.struct_size = sizeof caps;
    if (attn->probe(0, &caps) != SGL_ATTN_OK || !caps.available) {
        printf("SKIP test_cuda_badidx: no usable CUDA device (%s)\n", caps.reason);
        return 1;
    }
    const char *kernels[] = {"auto", "mma", "portable"};
    cudaStream_t st;
    CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int k = 0; k < 3; k++) {
        g_kernel = kernels[k];
        sgl_attn_model m;
        memset(&m, 0, sizeof m);
        m.struct_size = sizeof m;
        m.num_q_heads = HQ, m.num_kv_heads = HKV, m.head_dim_qk = m.head_dim_v = D;
        m.dtype = m.kv_dtype = SGL_ATTN_DT_BF16, m.sliding_window = -1, m.num_layers = 1;
        char err[512] = "";
        sgl_attn_create_args ca = {sizeof ca, &m, 0, 8, MAXT, COLS, NULL, NULL, err, sizeof err, &g_host};
        sgl_attn_backend *be = NULL;
        int rc = attn->create(&ca, &be);
        CHECK(rc == SGL_ATTN_OK, "cuda_attn kernel=%s create: %d %s", g_kernel, rc, err);
        if (rc) continue;
        const int before = failures;
        for (int extend = 0; extend < 2; extend++)
            for (int i = 0; i < NCASES; i++)
                if (!cases[i].extend_only || extend) attn_case(be, &cases[i], extend, st);
        for (int kind = 0; kind < 4; kind++)
            for (int paged = 0; paged < 2; paged++) enc_loc_case(be, kind, paged, st);
        printf("%-4s cuda_attn kernel=%s: every bad index class, decode and extend\n", failures == before ? "ok" : "FAIL",
               g_kernel);
        be->ops->destroy(be);
    }
    CU(cudaStreamDestroy(st));
    return 0;
}

/* ------------------------------------------------------------ cuda_mla */

enum { MLA_BS = 2 };

/* Two requests of 40 tokens (4 new ones each when extending), hq heads, bf16,
 * pages of 16, drawn from `seed`, and a cuda_mla backend over them; NULL
 * (a failed check naming `what`) when either step fails. */
static sgl_attn_backend *mla_open(const mg_plugin *pl, int extend, int hq, uint64_t seed, const char *what,
                                  mg_run *r) {
    mg_case mc;
    memset(&mc, 0, sizeof mc);
    mc.mode = extend ? MG_EXTEND : MG_DECODE;
    mc.bs = MLA_BS, mc.len = 40, mc.q = extend ? 4 : 1, mc.hq = hq, mc.page = 16;
    mc.dt = MG_BF16, mc.kv_dt = MG_BF16;
    char err[512] = "";
    if (mg_setup(r, pl, &mc, seed, err, sizeof err)) {
        CHECK(0, "%s setup: %s", what, err);
        return NULL;
    }
    sgl_attn_backend *be = NULL;
    if (mg_create(r, "auto", &be, err, sizeof err)) {
        CHECK(0, "%s create: %s", what, err);
        mg_free(r);
        return NULL;
    }
    return be;
}

static void mla_case(const mg_plugin *pl, const bad_case *c, int extend) {
    if (c->tensor == T_SEQ || c->tensor == T_EXT) return; /* cuda_mla plans from host lengths: host-checked */
    if (c->paged || c->tensor >= T_PT) return;            /* ABI 1.2 page tables and slot maps: cuda_attn's */
    mg_run r;
    sgl_attn_backend *be = mla_open(pl, extend, 16, 7, "cuda_mla", &r);
    if (!be) return;
    char err[512] = "";
    const char *mode = extend ? "extend" : "decode";
    CHECK(mg_reset_pool(&r, err, sizeof err) == 0, "cuda_mla reset: %s", err);
    const size_t rowb = (size_t)576 * 2;
    char *before = malloc(r.pool_bytes), *after = malloc(r.pool_bytes);
    CU(cudaMemcpy(before, r.d_pool, r.pool_bytes, cudaMemcpyDeviceToHost));
    /* the bad value in request 1 / its last token */
    int64_t value = 0;
    const int last = r.t - 1;
    void *d64 = NULL;
    DLTensor t64;
    int64_t s64[2];
    int64_t *h64 = NULL;
    size_t n64 = 0;
    const DLTensor *orig = NULL;
    int64_t bad_slot_of_last = -1;
    switch (c->tensor) {
    case T_LOC:
        value = bad_value(c, r.loc[0], r.slots);
        bad_slot_of_last = r.loc[last];
        orig = &r.tloc;
        n64 = (size_t)r.t;
        break;
    case T_R2T:
        value = bad_value(c, r.r2t[(size_t)r.rpi[1] * r.maxctx], r.slots);
        orig = &r.tr2t;
        n64 = (size_t)r.rows * (size_t)r.maxctx;
        break;
    case T_RPI:
        value = bad_value(c, r.rpi[0], r.rows);
        orig = &r.trpi;
        n64 = MLA_BS;
        break;
    }
    /* a copy of the tensor (int64 when the case asks) with the bad value */
    const DLTensor saved = *orig;
    h64 = malloc(n64 * 8);
    const int32_t *src = c->tensor == T_LOC ? r.loc : c->tensor == T_R2T ? r.r2t : r.rpi;
    for (size_t i = 0; i < n64; i++) h64[i] = src[i];
    const size_t at = c->tensor == T_LOC ? (size_t)last : c->tensor == T_R2T ? (size_t)r.rpi[1] * r.maxctx + 1 : 1;
    h64[at] = value;
    t64 = saved;
    memcpy(s64, saved.shape, sizeof(int64_t) * (size_t)saved.ndim);
    t64.shape = s64;
    t64.dtype.bits = c->is64 ? 64 : 32;
    CU(cudaMalloc(&d64, n64 * 8));
    if (c->is64) {
        CU(cudaMemcpy(d64, h64, n64 * 8, cudaMemcpyHostToDevice));
    } else {
        int32_t *h32 = malloc(n64 * 4);
        for (size_t i = 0; i < n64; i++) h32[i] = (int32_t)h64[i];
        CU(cudaMemcpy(d64, h32, n64 * 4, cudaMemcpyHostToDevice));
        free(h32);
    }
    t64.data = d64;
    if (c->tensor == T_LOC) r.batch.out_cache_loc = &t64;
    if (c->tensor == T_R2T) r.batch.req_to_token = &t64;
    if (c->tensor == T_RPI) r.batch.req_pool_indices = &t64;
    int rc = mg_forward(&r, be, err, sizeof err);
    CHECK(rc == 0, "cuda_mla %s, %s: metadata + forward: %s", mode, c->name, err);
    CU(cudaStreamSynchronize((cudaStream_t)r.stream));
    CU(cudaMemcpy(after, r.d_pool, r.pool_bytes, cudaMemcpyDeviceToHost));
    /* expected: the snapshot with the good tokens' saved rows (r.pool holds them) */
    for (int t = 0; t < r.t; t++) {
        if (c->tensor == T_LOC && t == last) continue;
        memcpy(before + (size_t)r.loc[t] * rowb, (const char *)r.pool + (size_t)r.loc[t] * rowb, rowb);
    }
    int diff = 0, first = -1;
    for (int64_t s = 0; s < r.slots; s++)
        if (memcmp(after + (size_t)s * rowb, before + (size_t)s * rowb, rowb)) {
            if (first < 0) first = (int)s;
            diff++;
        }
    CHECK(diff == 0, "cuda_mla %s, %s: %d pool rows differ from the expected (first %d; the bad token's slot %" PRId64
          ")", mode, c->name, diff, first, bad_slot_of_last);
    /* the report at the next call, with the good tensors */
    if (c->tensor == T_LOC) r.batch.out_cache_loc = &r.tloc;
    if (c->tensor == T_R2T) r.batch.req_to_token = &r.tr2t;
    if (c->tensor == T_RPI) r.batch.req_pool_indices = &r.trpi;
    char wantv[40], label[160];
    snprintf(wantv, sizeof wantv, "= %" PRId64, value);
    snprintf(label, sizeof label, "cuda_mla %s, %s", mode, c->name);
    reported_once(be, &r.batch, tensor_names[c->tensor], wantv, label);
    CU(cudaStreamSynchronize((cudaStream_t)r.stream));
    be->ops->destroy(be);
    CU(cudaFree(d64));
    free(h64), free(before), free(after);
    mg_free(&r);
}

/* DSA sparse MLA: a topk_indices entry outside the pool (past it, or a
 * negative other than -1) is skipped like -1, the call succeeds, and the
 * next metadata call fails naming topk_indices and the value, once.  At 16
 * heads (16-row blocks) and 128 (64-row blocks). */
static void mla_sparse_case(const mg_plugin *pl, int extend, int hq, int32_t value) {
    mg_run r;
    sgl_attn_backend *be = mla_open(pl, extend, hq, 9, "cuda_mla sparse", &r);
    if (!be) return;
    char err[512] = "";
    const char *mode = extend ? "extend" : "decode";
    enum { K = 8 };
    int64_t *h = malloc(sizeof(int64_t) * (size_t)r.t * K);
    for (int t = 0; t < r.t; t++)
        for (int j = 0; j < K; j++) h[t * K + j] = j == 0 ? r.loc[t] : j < 3 ? r.loc[0] : -1;
    h[(r.t - 1) * K + 5] = value;
    dt tk;
    const int64_t shape[2] = {r.t, K};
    dindex(&tk, 2, shape, h, 0);
    r.fa.topk_indices = &tk.t;
    int rc = mg_forward(&r, be, err, sizeof err);
    CHECK(rc == 0, "cuda_mla sparse %s, %d heads, topk_indices %d: metadata + forward: %s", mode, hq, (int)value, err);
    CU(cudaStreamSynchronize((cudaStream_t)r.stream));
    r.fa.topk_indices = NULL;
    char wantv[40], label[160];
    snprintf(wantv, sizeof wantv, "= %d", (int)value);
    snprintf(label, sizeof label, "cuda_mla sparse %s, %d heads, topk_indices %d", mode, hq, (int)value);
    reported_once(be, &r.batch, "topk_indices", wantv, label);
    CU(cudaStreamSynchronize((cudaStream_t)r.stream));
    be->ops->destroy(be);
    CU(cudaFree(tk.p));
    free(h);
    mg_free(&r);
}

static void mla_tests(void) {
    mg_plugin pl;
    char why[512] = "";
    const int o = mg_open(&pl, why, sizeof why);
    if (o < 0) {
        CHECK(0, "cuda_mla: %s", why);
        return;
    }
    if (o > 0) {
        printf("SKIP cuda_mla: %s\n", why);
        mg_close(&pl);
        return;
    }
    const int before = failures;
    for (int extend = 0; extend < 2; extend++)
        for (int i = 0; i < NCASES; i++)
            if (!cases[i].extend_only || extend) mla_case(&pl, &cases[i], extend);
    printf("%-4s cuda_mla: bad out_cache_loc / req_to_token / req_pool_indices, decode and extend\n",
           failures == before ? "ok" : "FAIL");
    const int before_sparse = failures;
    for (int extend = 0; extend < 2; extend++)
        for (int hq = 16; hq <= 128; hq += 112) {
            mla_sparse_case(&pl, extend, hq, (int32_t)1 << 30);
            mla_sparse_case(&pl, extend, hq, -2);
        }
    printf("%-4s cuda_mla: bad topk_indices (DSA sparse MLA), decode and extend\n",
           failures == before_sparse ? "ok" : "FAIL");
    mg_close(&pl);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "build/lib/sglattn/plugins";
    const int a = attn_tests(dir);
    if (a > 0) return 0; /* SKIP: no GPU */
    if (a < 0) return 1;
    if (!getenv("SGL_ATTN_MLA_PLUGIN")) {
        static char env[4200];
        snprintf(env, sizeof env, "SGL_ATTN_MLA_PLUGIN=%s/cuda_mla.so", dir);
        putenv(env);
    }
    mla_tests();
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
