/* test_cuda_graph.c - cuda_attn under CUDA-graph capture and replay.  For
 * each value of the option kernel (auto, mma, portable), given through the
 * creating host's get_option:
 *   decode (saving the new tokens' K/V at their table slots): plan + decode
 *     directly against a float64 reference; then init_graph_state, the
 *     capture hook, capture forward_decode into a graph, change the lengths
 *     and out_cache_loc in the device tensors, run the replay hook and replay:
 *     the output must match the reference for the new lengths and, bit for
 *     bit, a direct forward of the same batch, and the pool must hold the
 *     saved rows (kernel=auto: the register-fed decode saves the tokens in
 *     its grid, one node; mma / portable: the save-KV launch, then the
 *     decode);
 *   verify (target verify, SGL_ATTN_FEAT_GRAPH_VERIFY), with a tree mask and
 *     without one (a chain, causal): capture one batch of VBS requests of TPR
 *     tokens, then replay batches with new lengths, new slots (a fresh page
 *     shuffle), new q / k / v and new masks (random trees, chains), padded
 *     requests (the fill length plus TPR, slot 0) and a batch_size below the
 *     captured one; each replay's output rows and saved K/V are checked
 *     against a float64 reference and the pool before it, and bit for bit
 *     against a direct forward of the same batch; the replay hook refuses a
 *     changed tokens_per_req, mask kind or table.
 * Built twice: against the GPU build (skipped with the probe's reason where
 * no device answers), and with GRAPH_EMU against the emulated plugin
 * (tests/cuda_emu), whose runtime it calls through the plugin's symbols. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "sgl_attn_abi.h"

static void *handle;
/* The runtime: the test's own (the GPU build links it), or the emulated
 * plugin's, whose memory and graphs the test must share. */
#ifdef GRAPH_EMU
static void *rt_sym(const char *name) {
    void *f = dlsym(handle, name);
    if (!f) {
        fprintf(stderr, "the emulated plugin has no %s\n", name);
        abort();
    }
    return f;
}
#define RT(fn) ((__typeof__(&fn))rt_sym(#fn))
#else
#define RT(fn) (fn)
#endif

enum { BS = 5, HQ = 8, HKV = 2, D = 128, MAXCTX = 640, PAGE = 16, SLOTS = BS * MAXCTX + PAGE };

static const sgl_attn_plugin *plugin;

/* The creating host: plugin_options.cuda_attn.kernel = g_kernel. */
static const char *g_kernel;
static const char *kernel_option(void *ctx, const char *p, const char *k) {
    (void)ctx;
    return p && k && !strcmp(p, "cuda_attn") && !strcmp(k, "kernel") ? g_kernel : NULL;
}
/* The plugin's log lines (create names the kernels it chose). */
static void host_log(void *ctx, int level, const char *who, const char *fmt, ...) {
    (void)ctx, (void)level;
    va_list ap;
    va_start(ap, fmt);
    printf("[%s] ", who ? who : "?");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}
static sgl_attn_host_api g_host;

static uint64_t rs = 0x2545f4914f6cdd1dull;
static double urand(void) { /* [0, 1) */
    rs ^= rs >> 12, rs ^= rs << 25, rs ^= rs >> 27;
    return (double)((rs * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}
static double nrand(void) { return sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand()); }
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#define CK(x) assert_int_equal((int)(x), 0)

static int setup(void **state) {
    (void)state;
    handle = dlopen(CUDA_ATTN_SO, RTLD_NOW | RTLD_LOCAL);
    if (!handle) return -1;
    sgl_attn_plugin_entry_fn entry = (sgl_attn_plugin_entry_fn)dlsym(handle, SGL_ATTN_PLUGIN_ENTRY_SYMBOL);
    g_host.struct_size = sizeof g_host;
    g_host.abi_major = SGL_ATTN_ABI_MAJOR;
    g_host.abi_minor_max = SGL_ATTN_ABI_MINOR;
    g_host.get_option = kernel_option;
    g_host.log = host_log;
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (!entry || entry(&g_host, &ans)) return -1;
    plugin = ans.plugin;
    return 0;
}
static int teardown(void **state) {
    (void)state;
    if (handle) dlclose(handle);
    return 0;
}

typedef struct dev_t_ {
    void *p;
    DLTensor t;
    int64_t shape[3];
} dtensor;

static void dalloc(dtensor *x, int ndim, const int64_t *shape, uint8_t code, uint8_t bits, const void *host) {
    size_t n = 1;
    memset(x, 0, sizeof *x);
    for (int i = 0; i < ndim; i++) n *= (size_t)(x->shape[i] = shape[i]);
    CK(plugin->device_ops->alloc(0, n * bits / 8, &x->p));
    if (host) CK(plugin->device_ops->copy_to_device(0, x->p, host, n * bits / 8));
    x->t.data = x->p;
    x->t.device.device_type = kDLCUDA;
    x->t.ndim = ndim;
    x->t.shape = x->shape;
    x->t.dtype.code = code;
    x->t.dtype.bits = bits;
    x->t.dtype.lanes = 1;
}

/* float64 decode reference for request b, q head h. */
static void ref_decode(const uint16_t *q, const uint16_t *kc, const uint16_t *vc, const int32_t *r2t,
                       const int32_t *lens, const int32_t *rows, double scale, double *out) {
    for (int b = 0; b < BS; b++)
        for (int h = 0; h < HQ; h++) {
            const int kvh = h / (HQ / HKV), L = lens[b];
            double mx = -INFINITY, den = 0, acc[D] = {0};
            double *s = malloc(sizeof(double) * (size_t)L);
            for (int i = 0; i < L; i++) {
                const int64_t slot = r2t[rows[b] * MAXCTX + i];
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += from_bf16(q[(b * HQ + h) * D + d]) * from_bf16(kc[(slot * HKV + kvh) * D + d]);
                s[i] = dot * scale;
                mx = s[i] > mx ? s[i] : mx;
            }
            for (int i = 0; i < L; i++) {
                const int64_t slot = r2t[rows[b] * MAXCTX + i];
                const double e = exp(s[i] - mx);
                den += e;
                for (int d = 0; d < D; d++) acc[d] += e * from_bf16(vc[(slot * HKV + kvh) * D + d]);
            }
            for (int d = 0; d < D; d++) out[(b * HQ + h) * D + d] = acc[d] / den;
            free(s);
        }
}

static double nmse(const uint16_t *got, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double g = from_bf16(got[i]);
        if (!isfinite(g)) return INFINITY;
        num += (g - ref[i]) * (g - ref[i]);
        den += ref[i] * ref[i];
    }
    return num / den;
}

/* A bf16-q instance of the test's model (GQA HQ / HKV, head dim D) made by
 * the creating host above; create's error is printed before the assert. */
static sgl_attn_backend *create_be(uint32_t kv_dtype, int32_t spec_tokens, int32_t max_reqs, int32_t max_tokens,
                                   int32_t max_context) {
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = HQ, m.num_kv_heads = HKV, m.head_dim_qk = m.head_dim_v = D;
    m.dtype = SGL_ATTN_DT_BF16, m.kv_dtype = kv_dtype, m.sliding_window = -1, m.num_layers = 1;
    m.spec_tokens = spec_tokens;
    char err[512] = "";
    sgl_attn_create_args ca = {sizeof ca, &m, 0, max_reqs, max_tokens, max_context, NULL, NULL, err, sizeof err, &g_host};
    sgl_attn_backend *be = NULL;
    int rc = plugin->create(&ca, &be);
    if (rc) fprintf(stderr, "create: %s\n", err);
    assert_int_equal(rc, 0);
    return be;
}

/* The new tokens' slots (their table entries) into ocl, and their K / V
 * (knew / vnew, [BS, HKV, D]) into the host pool there, as the save writes. */
static void new_slots(const int32_t *r2t, const int32_t *lens, const int32_t *rows, const uint16_t *knew,
                      const uint16_t *vnew, uint16_t *kc, uint16_t *vc, int32_t *ocl) {
    for (int b = 0; b < BS; b++) {
        ocl[b] = r2t[rows[b] * MAXCTX + lens[b] - 1];
        memcpy(kc + (size_t)ocl[b] * HKV * D, knew + (size_t)b * HKV * D, (size_t)HKV * D * 2);
        memcpy(vc + (size_t)ocl[b] * HKV * D, vnew + (size_t)b * HKV * D, (size_t)HKV * D * 2);
    }
}

static void run_kernel(const char *kernel) {
    g_kernel = kernel;
    const size_t nq = (size_t)BS * HQ * D, nkv = (size_t)SLOTS * HKV * D, nnew = (size_t)BS * HKV * D;
    uint16_t *q = malloc(nq * 2), *kc = malloc(nkv * 2), *vc = malloc(nkv * 2), *o1 = malloc(nq * 2),
             *o2 = malloc(nq * 2), *knew = malloc(nnew * 2), *vnew = malloc(nnew * 2);
    double *ref = malloc(nq * sizeof(double));
    int32_t *r2t = malloc(sizeof(int32_t) * BS * MAXCTX), lens[BS], rows[BS];
    for (size_t i = 0; i < nq; i++) q[i] = to_bf16((float)(nrand() * 1.4));
    for (size_t i = 0; i < nkv; i++) kc[i] = to_bf16((float)nrand()), vc[i] = to_bf16((float)nrand());
    /* shuffled pages, page 0 (slot 0) never handed out */
    int pages[SLOTS / PAGE - 1];
    const int npages = SLOTS / PAGE - 1;
    for (int i = 0; i < npages; i++) pages[i] = i + 1;
    for (int i = npages - 1; i > 0; i--) {
        int j = (int)(urand() * (i + 1)), t = pages[i];
        pages[i] = pages[j], pages[j] = t;
    }
    for (int r = 0; r < BS; r++)
        for (int i = 0; i < MAXCTX; i++) r2t[r * MAXCTX + i] = pages[(r * MAXCTX + i) / PAGE] * PAGE + i % PAGE;
    for (int b = 0; b < BS; b++) rows[b] = BS - 1 - b, lens[b] = 1 + (int)(urand() * (MAXCTX - 1));
    for (size_t i = 0; i < nnew; i++) knew[i] = to_bf16((float)nrand()), vnew[i] = to_bf16((float)nrand());
    int32_t ocl[BS];

    dtensor tq, to, tk, tv, tr2t, trows, tlens, tkn, tvn, tocl;
    int64_t s3[3] = {BS, HQ, D}, skv[3] = {SLOTS, HKV, D}, sr[2] = {BS, MAXCTX}, sb[1] = {BS}, sn[3] = {BS, HKV, D};
    dalloc(&tq, 3, s3, kDLBfloat, 16, q);
    dalloc(&to, 3, s3, kDLBfloat, 16, NULL);
    dalloc(&tk, 3, skv, kDLBfloat, 16, kc);
    dalloc(&tv, 3, skv, kDLBfloat, 16, vc);
    dalloc(&tr2t, 2, sr, kDLInt, 32, r2t);
    dalloc(&trows, 1, sb, kDLInt, 32, rows);
    dalloc(&tlens, 1, sb, kDLInt, 32, lens);
    dalloc(&tkn, 3, sn, kDLBfloat, 16, knew);
    dalloc(&tvn, 3, sn, kDLBfloat, 16, vnew);
    new_slots(r2t, lens, rows, knew, vnew, kc, vc, ocl); /* the device pool is the one before the save */
    dalloc(&tocl, 1, sb, kDLInt, 32, ocl);
    DLTensor lens_cpu = tlens.t;
    lens_cpu.data = lens;
    lens_cpu.device.device_type = kDLCPU;

    sgl_attn_backend *be = create_be(SGL_ATTN_DT_BF16, 0, BS, BS, MAXCTX);
    cudaStream_t st;
    CK(RT(cudaStreamCreateWithFlags)(&st, cudaStreamNonBlocking));

    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_DECODE, bt.batch_size = BS, bt.num_tokens = BS, bt.page_size = PAGE;
    bt.tokens_per_req = 1;
    bt.req_to_token = &tr2t.t, bt.req_pool_indices = &trows.t, bt.seq_lens = &tlens.t, bt.seq_lens_cpu = &lens_cpu;
    bt.out_cache_loc = &tocl.t;
    bt.stream = st;
    sgl_attn_layer ly;
    memset(&ly, 0, sizeof ly);
    ly.struct_size = sizeof ly;
    ly.num_q_heads = HQ, ly.num_kv_heads = HKV, ly.head_dim_qk = ly.head_dim_v = D;
    ly.sm_scale = (float)(1 / sqrt(D)), ly.sliding_window = -1, ly.k_cache = &tk.t, ly.v_cache = &tv.t;
    ly.k_scale = ly.v_scale = 1;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.layer = &ly, fa.batch = &bt, fa.q = &tq.t, fa.out = &to.t;
    fa.k = &tkn.t, fa.v = &tvn.t, fa.save_kv_cache = 1;

    /* direct */
    CK(be->ops->init_forward_metadata(be, &bt));
    int rc = be->ops->forward_decode(be, &fa);
    if (rc) fprintf(stderr, "forward_decode: %s\n", be->ops->last_error(be));
    assert_int_equal(rc, 0);
    CK(RT(cudaStreamSynchronize)(st));
    CK(plugin->device_ops->copy_to_host(0, o1, to.p, nq * 2));
    ref_decode(q, kc, vc, r2t, lens, rows, ly.sm_scale, ref);
    double e1 = nmse(o1, ref, nq);
    printf("kernel=%s direct decode: nmse %.3g\n", kernel, e1);
    assert_true(e1 < 1e-4);

    /* capture */
    sgl_attn_graph_args g = {sizeof g, BS, BS, SGL_ATTN_MODE_DECODE, &bt, NULL};
    CK(be->ops->init_graph_state(be, BS, BS));
    CK(be->ops->init_forward_metadata_capture(be, &g));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(RT(cudaStreamBeginCapture)(st, cudaStreamCaptureModeThreadLocal));
    rc = be->ops->forward_decode(be, &fa);
    cudaError_t ce = RT(cudaStreamEndCapture)(st, &graph);
    assert_int_equal(rc, 0);
    CK(ce);
    CK(RT(cudaGraphInstantiate)(&exec, graph, 0));

    /* new lengths (new slots for the new tokens), replay */
    for (int b = 0; b < BS; b++) lens[b] = 1 + (int)(urand() * (MAXCTX - 1));
    new_slots(r2t, lens, rows, knew, vnew, kc, vc, ocl);
    CK(plugin->device_ops->copy_to_device(0, tlens.p, lens, sizeof lens));
    CK(plugin->device_ops->copy_to_device(0, tocl.p, ocl, sizeof ocl));
    CK(RT(cudaMemsetAsync)(to.p, 0xff, nq * 2, st)); /* poison: NaN in bf16 */
    CK(be->ops->init_forward_metadata_replay(be, &g));
    CK(RT(cudaGraphLaunch)(exec, st));
    CK(RT(cudaStreamSynchronize)(st));
    CK(plugin->device_ops->copy_to_host(0, o2, to.p, nq * 2));
    ref_decode(q, kc, vc, r2t, lens, rows, ly.sm_scale, ref);
    double e2 = nmse(o2, ref, nq);
    printf("kernel=%s graph replay: nmse %.3g\n", kernel, e2);
    assert_true(e2 < 1e-4);
    /* the pool: the saved rows and every other slot as the host's */
    uint16_t *kd = malloc(nkv * 2), *vd = malloc(nkv * 2);
    CK(plugin->device_ops->copy_to_host(0, kd, tk.p, nkv * 2));
    CK(plugin->device_ops->copy_to_host(0, vd, tv.p, nkv * 2));
    assert_memory_equal(kd, kc, nkv * 2);
    assert_memory_equal(vd, vc, nkv * 2);
    free(kd), free(vd);
    /* the same batch directly: bit-identical */
    CK(be->ops->init_forward_metadata(be, &bt));
    CK(be->ops->forward_decode(be, &fa));
    CK(RT(cudaStreamSynchronize)(st));
    CK(plugin->device_ops->copy_to_host(0, o1, to.p, nq * 2));
    assert_memory_equal(o1, o2, nq * 2);

    CK(RT(cudaGraphExecDestroy)(exec));
    CK(RT(cudaGraphDestroy)(graph));
    CK(RT(cudaStreamDestroy)(st));
    be->ops->destroy(be);
    dtensor *all[] = {&tq, &to, &tk, &tv, &tr2t, &trows, &tlens, &tkn, &tvn, &tocl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CK(plugin->device_ops->free(0, all[i]->p));
    free(q), free(kc), free(vc), free(o1), free(o2), free(ref), free(r2t), free(knew), free(vnew);
}

/* ---------------------------------------------------------------- verify */

/* The captured verify batch: VBS requests of TPR tokens; the pool's slot 0
 * (page 0) is the padding's, never in a request's row. */
enum { VBS = 4, TPR = 6, VT = VBS * TPR, VMAXCTX = 320, VPAGES = VBS * VMAXCTX / PAGE + 1, VSLOTS = VPAGES * PAGE };

typedef struct vscen {
    const char *name;
    int bs;    /* the replay's batch_size (<= VBS) */
    int live;  /* requests with real tokens; the rest of bs are padding */
    int chain; /* tree graphs: chain-shaped masks (else random trees) */
    int longp; /* prefixes near VMAXCTX */
} vscen;

typedef struct vhost {
    uint16_t *q, *k, *v, *kc, *vc; /* q / k / v of the VT tokens; the pool's host mirror */
    int32_t *r2t;                  /* [VBS, VMAXCTX] */
    uint8_t *mask;                 /* [VT * VMAXCTX] */
    int32_t rows[VBS], lens[VBS], pre[VBS], loc[VT], indptr[VBS + 1];
} vhost;

typedef struct vdev {
    dtensor q, k, v, out, kc, vc, r2t, rows, lens, loc, mask, indptr;
} vdev;

/* A new batch in the host buffers: fresh pages for every row, lengths,
 * slots, q / k / v and (tree graphs) masks; padded requests get seq_len
 * 1 + TPR (the fill value plus the draft tokens), row 0, slot 0 and an
 * all-zero mask block; out_cache_loc past the batch names slot 0. */
static void vfill(vhost *h, const vscen *sc) {
    int pages[VPAGES - 1];
    for (int i = 0; i < VPAGES - 1; i++) pages[i] = i + 1;
    for (int i = VPAGES - 2; i > 0; i--) {
        int j = (int)(urand() * (i + 1)), t = pages[i];
        pages[i] = pages[j], pages[j] = t;
    }
    for (int r = 0; r < VBS; r++)
        for (int c = 0; c < VMAXCTX; c++) h->r2t[r * VMAXCTX + c] = pages[(r * VMAXCTX + c) / PAGE] * PAGE + c % PAGE;
    int perm[VBS];
    for (int i = 0; i < VBS; i++) perm[i] = i;
    for (int i = VBS - 1; i > 0; i--) {
        int j = (int)(urand() * (i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (size_t i = 0; i < (size_t)VT * HQ * D; i++) h->q[i] = to_bf16((float)(nrand() * 1.4));
    for (size_t i = 0; i < (size_t)VT * HKV * D; i++) h->k[i] = to_bf16((float)nrand()), h->v[i] = to_bf16((float)nrand());
    for (int t = 0; t < VT; t++) h->loc[t] = 0;
    h->indptr[0] = 0;
    for (int i = 0; i < VBS; i++) {
        const int live = i < sc->live;
        h->rows[i] = live ? perm[i] : 0;
        if (live) {
            const int span = VMAXCTX - TPR;
            h->pre[i] = sc->longp ? span - (int)(urand() * 8) : (int)(urand() * (span + 1));
            if (i == 1 && !sc->longp) h->pre[i] = 0; /* a request of draft tokens only */
        } else {
            h->pre[i] = 1; /* the fill value */
        }
        h->lens[i] = h->pre[i] + TPR;
        if (live)
            for (int r = 0; r < TPR; r++) h->loc[i * TPR + r] = h->r2t[h->rows[i] * VMAXCTX + h->pre[i] + r];
        const int n = i < sc->bs ? TPR * h->lens[i] : 0;
        uint8_t *blk = h->mask + h->indptr[i];
        memset(blk, 0, (size_t)n);
        if (live && n) {
            int par[TPR];
            par[0] = -1; /* the root: the last accepted token */
            for (int r = 1; r < TPR; r++) par[r] = sc->chain ? r - 1 : (int)(urand() * r);
            for (int r = 0; r < TPR; r++) {
                for (int c = 0; c < h->pre[i]; c++) blk[r * h->lens[i] + c] = 1;
                for (int a = r; a >= 0; a = par[a]) blk[r * h->lens[i] + h->pre[i] + a] = 1;
            }
        }
        h->indptr[i + 1] = h->indptr[i] + n;
    }
}

/* float64 verify reference of live request i's rows from the host pool
 * (after the save): mask bytes (tree) or causal (chain). */
static void vref(const vhost *h, int i, int tree, double scale, double *out) {
    const int L = h->lens[i];
    double *s = malloc(sizeof(double) * (size_t)L);
    for (int r = 0; r < TPR; r++)
        for (int hh = 0; hh < HQ; hh++) {
            const int kvh = hh / (HQ / HKV), t = i * TPR + r;
            double mx = -INFINITY, den = 0, acc[D] = {0};
            for (int c = 0; c < L; c++) {
                const int vis = tree ? h->mask[h->indptr[i] + r * L + c] != 0 : c <= h->pre[i] + r;
                if (!vis) {
                    s[c] = -INFINITY;
                    continue;
                }
                const int64_t slot = h->r2t[h->rows[i] * VMAXCTX + c];
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += from_bf16(h->q[((size_t)t * HQ + hh) * D + d]) * from_bf16(h->kc[(slot * HKV + kvh) * D + d]);
                s[c] = dot * scale;
                mx = s[c] > mx ? s[c] : mx;
            }
            for (int c = 0; c < L; c++) {
                if (s[c] == -INFINITY) continue;
                const int64_t slot = h->r2t[h->rows[i] * VMAXCTX + c];
                const double e = exp(s[c] - mx);
                den += e;
                for (int d = 0; d < D; d++) acc[d] += e * from_bf16(h->vc[(slot * HKV + kvh) * D + d]);
            }
            for (int d = 0; d < D; d++) out[((size_t)r * HQ + hh) * D + d] = acc[d] / den;
        }
    free(s);
}

static void vupload(vdev *dv, const vhost *h) {
    const sgl_attn_device_ops *o = plugin->device_ops;
    CK(o->copy_to_device(0, dv->q.p, h->q, (size_t)VT * HQ * D * 2));
    CK(o->copy_to_device(0, dv->k.p, h->k, (size_t)VT * HKV * D * 2));
    CK(o->copy_to_device(0, dv->v.p, h->v, (size_t)VT * HKV * D * 2));
    CK(o->copy_to_device(0, dv->r2t.p, h->r2t, sizeof(int32_t) * VBS * VMAXCTX));
    CK(o->copy_to_device(0, dv->rows.p, h->rows, sizeof h->rows));
    CK(o->copy_to_device(0, dv->lens.p, h->lens, sizeof h->lens));
    CK(o->copy_to_device(0, dv->loc.p, h->loc, sizeof h->loc));
    CK(o->copy_to_device(0, dv->indptr.p, h->indptr, sizeof h->indptr));
    if (h->indptr[VBS]) CK(o->copy_to_device(0, dv->mask.p, h->mask, (size_t)h->indptr[VBS]));
}

/* One replayed (or direct) batch against the reference: the live rows, the
 * padded rows finite, the pool's slots (those of live tokens hold their k /
 * v, every other one but slot 0 as before); the host pool then follows. */
static void vcheck(vhost *h, const vdev *dv, const vscen *sc, int tree, double scale, uint16_t *out, const char *what) {
    const sgl_attn_device_ops *o = plugin->device_ops;
    const size_t nkv = (size_t)VSLOTS * HKV * D, row = (size_t)HKV * D;
    uint16_t *kc = malloc(nkv * 2), *vc = malloc(nkv * 2);
    CK(o->copy_to_host(0, out, dv->out.p, (size_t)VT * HQ * D * 2));
    CK(o->copy_to_host(0, kc, dv->kc.p, nkv * 2));
    CK(o->copy_to_host(0, vc, dv->vc.p, nkv * 2));
    for (int t = 0; t < sc->live * TPR; t++) {
        memcpy(h->kc + (size_t)h->loc[t] * row, h->k + (size_t)t * row, row * 2);
        memcpy(h->vc + (size_t)h->loc[t] * row, h->v + (size_t)t * row, row * 2);
    }
    /* slot 0 takes the padding's tokens (any of them last) */
    memcpy(h->kc, kc, row * 2);
    memcpy(h->vc, vc, row * 2);
    if (memcmp(kc, h->kc, nkv * 2) || memcmp(vc, h->vc, nkv * 2)) {
        size_t s = 0;
        while (s < (size_t)VSLOTS && !memcmp(kc + s * row, h->kc + s * row, row * 2) &&
               !memcmp(vc + s * row, h->vc + s * row, row * 2))
            s++;
        fail_msg("%s: pool slot %zu differs from the expected pool after the save", what, s);
    }
    double *ref = malloc(sizeof(double) * TPR * HQ * D), worst = 0;
    for (int i = 0; i < sc->live; i++) {
        vref(h, i, tree, scale, ref);
        const double e = nmse(out + (size_t)i * TPR * HQ * D, ref, (size_t)TPR * HQ * D);
        worst = e > worst ? e : worst;
        if (!(e < 1e-4)) fail_msg("%s: request %d (prefix %d): nmse %.3g", what, i, h->pre[i], e);
    }
    /* padded rows: finite; zeros where their (all-zero) mask block opens nothing */
    for (size_t j = (size_t)sc->live * TPR * HQ * D; j < (size_t)sc->bs * TPR * HQ * D; j++)
        if (!isfinite(from_bf16(out[j])) || (tree && from_bf16(out[j]) != 0))
            fail_msg("%s: padded row %zu holds %g", what, j / (HQ * D), from_bf16(out[j]));
    printf("  %s: %d live of %d requests, worst nmse %.3g\n", what, sc->live, sc->bs, worst);
    free(ref), free(kc), free(vc);
}

static void run_verify(const char *kernel, int tree) {
    g_kernel = kernel;
    const sgl_attn_device_ops *o = plugin->device_ops;
    vhost h;
    memset(&h, 0, sizeof h);
    const size_t nq = (size_t)VT * HQ * D, nkv = (size_t)VSLOTS * HKV * D;
    h.q = malloc(nq * 2), h.k = malloc((size_t)VT * HKV * D * 2), h.v = malloc((size_t)VT * HKV * D * 2);
    h.kc = malloc(nkv * 2), h.vc = malloc(nkv * 2);
    h.r2t = malloc(sizeof(int32_t) * VBS * VMAXCTX);
    h.mask = malloc((size_t)VT * VMAXCTX);
    uint16_t *out = malloc(nq * 2), *out2 = malloc(nq * 2);
    for (size_t i = 0; i < nkv; i++) h.kc[i] = to_bf16((float)nrand()), h.vc[i] = to_bf16((float)nrand());

    vdev dv;
    int64_t s3[3] = {VT, HQ, D}, sn[3] = {VT, HKV, D}, skv[3] = {VSLOTS, HKV, D}, sr[2] = {VBS, VMAXCTX},
            sb[1] = {VBS}, st1[1] = {VT}, sm[1] = {(int64_t)VT * VMAXCTX}, si[1] = {VBS + 1};
    dalloc(&dv.q, 3, s3, kDLBfloat, 16, NULL);
    dalloc(&dv.out, 3, s3, kDLBfloat, 16, NULL);
    dalloc(&dv.k, 3, sn, kDLBfloat, 16, NULL);
    dalloc(&dv.v, 3, sn, kDLBfloat, 16, NULL);
    dalloc(&dv.kc, 3, skv, kDLBfloat, 16, h.kc);
    dalloc(&dv.vc, 3, skv, kDLBfloat, 16, h.vc);
    dalloc(&dv.r2t, 2, sr, kDLInt, 32, NULL);
    dalloc(&dv.rows, 1, sb, kDLInt, 32, NULL);
    dalloc(&dv.lens, 1, sb, kDLInt, 32, NULL);
    dalloc(&dv.loc, 1, st1, kDLInt, 32, NULL);
    dalloc(&dv.mask, 1, sm, kDLUInt, 8, NULL);
    dalloc(&dv.indptr, 1, si, kDLInt, 32, NULL);
    DLTensor lens_cpu = dv.lens.t;
    lens_cpu.data = h.lens;
    lens_cpu.device.device_type = kDLCPU;

    sgl_attn_backend *be = create_be(SGL_ATTN_DT_BF16, TPR, VBS, VT, VMAXCTX);
    cudaStream_t st;
    CK(RT(cudaStreamCreateWithFlags)(&st, cudaStreamNonBlocking));

    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY, bt.batch_size = VBS, bt.num_tokens = VT, bt.page_size = PAGE;
    bt.tokens_per_req = TPR;
    bt.req_to_token = &dv.r2t.t, bt.req_pool_indices = &dv.rows.t, bt.seq_lens = &dv.lens.t;
    bt.seq_lens_cpu = &lens_cpu, bt.out_cache_loc = &dv.loc.t;
    if (tree) bt.custom_mask = &dv.mask.t, bt.mask_indptr = &dv.indptr.t;
    bt.stream = st;
    sgl_attn_layer ly;
    memset(&ly, 0, sizeof ly);
    ly.struct_size = sizeof ly;
    ly.num_q_heads = HQ, ly.num_kv_heads = HKV, ly.head_dim_qk = ly.head_dim_v = D;
    ly.sm_scale = (float)(1 / sqrt(D)), ly.sliding_window = -1, ly.k_cache = &dv.kc.t, ly.v_cache = &dv.vc.t;
    ly.k_scale = ly.v_scale = 1;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.save_kv_cache = 1;
    fa.layer = &ly, fa.batch = &bt, fa.q = &dv.q.t, fa.k = &dv.k.t, fa.v = &dv.v.t, fa.out = &dv.out.t;

    printf("kernel=%s verify graph, %s (%d requests of %d tokens captured)\n", kernel,
           tree ? "tree mask" : "chain (no mask)", VBS, TPR);
    /* capture the first batch */
    const vscen cap = {"capture", VBS, VBS, 0, 0};
    vfill(&h, &cap);
    vupload(&dv, &h);
    sgl_attn_graph_args g = {sizeof g, VBS, VT, SGL_ATTN_MODE_TARGET_VERIFY, &bt, st};
    CK(be->ops->init_graph_state(be, VBS, VT));
    int rc = be->ops->init_forward_metadata_capture(be, &g);
    if (rc) fprintf(stderr, "capture: %s\n", be->ops->last_error(be));
    assert_int_equal(rc, 0);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(RT(cudaStreamBeginCapture)(st, cudaStreamCaptureModeThreadLocal));
    rc = be->ops->forward_extend(be, &fa);
    cudaError_t ce = RT(cudaStreamEndCapture)(st, &graph);
    if (rc) fprintf(stderr, "forward_extend (captured): %s\n", be->ops->last_error(be));
    assert_int_equal(rc, 0);
    CK(ce);
    CK(RT(cudaGraphInstantiate)(&exec, graph, 0));

    static const vscen scen[] = {
        {"all live", VBS, VBS, 0, 0},
        {"3 live + 1 padded", VBS, VBS - 1, 1, 0},
        {"1 live + 3 padded, long prefixes", VBS, 1, 0, 1},
        {"batch_size 2 of the 4 captured", 2, 2, 0, 0},
        {"all live, long prefixes", VBS, VBS, 0, 1},
    };
    for (size_t si_ = 0; si_ < sizeof scen / sizeof scen[0]; si_++) {
        const vscen *sc = &scen[si_];
        vfill(&h, sc);
        vupload(&dv, &h);
        bt.batch_size = g.batch_size = sc->bs;
        bt.num_tokens = g.num_tokens = sc->bs * TPR;
        CK(RT(cudaMemsetAsync)(dv.out.p, 0xff, nq * 2, st)); /* poison: NaN in bf16 */
        rc = be->ops->init_forward_metadata_replay(be, &g);
        if (rc) fprintf(stderr, "replay (%s): %s\n", sc->name, be->ops->last_error(be));
        assert_int_equal(rc, 0);
        CK(RT(cudaGraphLaunch)(exec, st));
        CK(RT(cudaStreamSynchronize)(st));
        char what[128];
        snprintf(what, sizeof what, "replay, %s, %s", sc->name,
                 !tree ? "causal" : sc->chain ? "chain-shaped masks" : "random tree masks");
        vcheck(&h, &dv, sc, tree, ly.sm_scale, out, what);
        /* the same batch directly (views of its bs * TPR rows): the same bits */
        DLTensor q2 = dv.q.t, k2 = dv.k.t, v2 = dv.v.t, o2 = dv.out.t;
        int64_t sq2[3] = {sc->bs * TPR, HQ, D}, sk2[3] = {sc->bs * TPR, HKV, D};
        q2.shape = o2.shape = sq2, k2.shape = v2.shape = sk2;
        sgl_attn_forward_args fd = fa;
        fd.q = &q2, fd.k = &k2, fd.v = &v2, fd.out = &o2;
        CK(RT(cudaMemsetAsync)(dv.out.p, 0xff, nq * 2, st));
        CK(be->ops->init_forward_metadata(be, &bt));
        rc = be->ops->forward_extend(be, &fd);
        if (rc) fprintf(stderr, "forward_extend (direct): %s\n", be->ops->last_error(be));
        assert_int_equal(rc, 0);
        CK(RT(cudaStreamSynchronize)(st));
        CK(o->copy_to_host(0, out2, dv.out.p, nq * 2));
        assert_memory_equal(out, out2, (size_t)sc->live * TPR * HQ * D * 2);
    }

    /* what the captured forwards read from the capture: a replay that changes it is refused */
    bt.batch_size = g.batch_size = VBS;
    bt.num_tokens = g.num_tokens = VT;
    bt.tokens_per_req = TPR - 1;
    g.num_tokens = bt.num_tokens = VBS * (TPR - 1);
    assert_int_equal(be->ops->init_forward_metadata_replay(be, &g), SGL_ATTN_E_STATE);
    assert_non_null(strstr(be->ops->last_error(be), "the verify graphs were captured with 6"));
    bt.tokens_per_req = TPR;
    g.num_tokens = bt.num_tokens = VT;
    bt.custom_mask = tree ? NULL : &dv.mask.t;
    bt.mask_indptr = tree ? NULL : &dv.indptr.t;
    assert_int_equal(be->ops->init_forward_metadata_replay(be, &g), SGL_ATTN_E_STATE);
    assert_non_null(strstr(be->ops->last_error(be), tree ? "without a tree mask" : "with a tree mask"));
    if (tree) bt.custom_mask = &dv.mask.t, bt.mask_indptr = &dv.indptr.t;
    else bt.custom_mask = NULL, bt.mask_indptr = NULL;
    DLTensor r2t_moved = dv.r2t.t;
    int64_t sr_less[2] = {VBS, VMAXCTX - PAGE};
    r2t_moved.shape = sr_less;
    bt.req_to_token = &r2t_moved;
    assert_int_equal(be->ops->init_forward_metadata_replay(be, &g), SGL_ATTN_E_STATE);
    assert_non_null(strstr(be->ops->last_error(be), "batch.req_to_token is not the table captured"));
    bt.req_to_token = &dv.r2t.t;
    if (tree && !strcmp(kernel, "portable")) {
        DLTensor mask_moved = dv.mask.t;
        mask_moved.data = (uint8_t *)dv.mask.p + 16;
        bt.custom_mask = &mask_moved;
        assert_int_equal(be->ops->init_forward_metadata_replay(be, &g), SGL_ATTN_E_STATE);
        assert_non_null(strstr(be->ops->last_error(be), "batch.custom_mask is not at the captured address"));
        bt.custom_mask = &dv.mask.t;
    }
    assert_int_equal(be->ops->init_forward_metadata_replay(be, &g), SGL_ATTN_OK);

    CK(RT(cudaStreamSynchronize)(st));
    CK(RT(cudaGraphExecDestroy)(exec));
    CK(RT(cudaGraphDestroy)(graph));
    CK(RT(cudaStreamDestroy)(st));
    be->ops->destroy(be);
    dtensor *all[] = {&dv.q, &dv.out, &dv.k, &dv.v, &dv.kc, &dv.vc, &dv.r2t, &dv.rows, &dv.lens, &dv.loc, &dv.mask, &dv.indptr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CK(o->free(0, all[i]->p));
    free(h.q), free(h.k), free(h.v), free(h.kc), free(h.vc), free(h.r2t), free(h.mask), free(out), free(out2);
}

/* An fp8-pool model (its verify runs directly, on the mma extend; verify
 * graphs are served on 16-bit pools) refuses a verify capture by name,
 * before planning anything. */
static void verify_refused_fp8(void) {
    g_kernel = "auto";
    sgl_attn_backend *be = create_be(SGL_ATTN_DT_FP8_E4M3, TPR, VBS, VT, VMAXCTX);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_TARGET_VERIFY, bt.batch_size = VBS, bt.num_tokens = VT, bt.tokens_per_req = TPR;
    bt.page_size = PAGE;
    sgl_attn_graph_args g = {sizeof g, VBS, VT, SGL_ATTN_MODE_TARGET_VERIFY, &bt, NULL};
    CK(be->ops->init_graph_state(be, VBS, VT));
    assert_int_equal(be->ops->init_forward_metadata_capture(be, &g), SGL_ATTN_E_UNSUPPORTED);
    printf("fp8 pool, verify capture: %s\n", be->ops->last_error(be));
    assert_non_null(strstr(be->ops->last_error(be), "the model's KV pool is fp8_e4m3 (verify graphs are served on 16-bit pools)"));
    be->ops->destroy(be);
}

static void test_graph_verify(void **state) {
    (void)state;
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(plugin->probe(0, &c), 0);
    if (!c.available) {
        printf("SKIP verify graph test: no usable CUDA device (%s)\n", c.reason);
        skip();
    }
    assert_true(c.features & SGL_ATTN_FEAT_GRAPH_VERIFY);
    /* SGL_ATTN_TEST_QUICK (the emulator under ASan): auto and portable, the two extend kernels
     * an SM 8.0 device runs */
    static const char *const kernels[] = {"auto", "portable", "mma"};
    const int nk = getenv("SGL_ATTN_TEST_QUICK") ? 2 : 3;
    for (int k = 0; k < nk; k++) {
        run_verify(kernels[k], 1);
        run_verify(kernels[k], 0);
    }
    verify_refused_fp8();
}

static void test_graph(void **state) {
    (void)state;
    sgl_attn_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    assert_int_equal(plugin->probe(0, &c), 0);
    if (!c.available) {
        printf("SKIP graph capture test: no usable CUDA device (%s)\n", c.reason);
        skip();
    }
    run_kernel("auto");
    run_kernel("mma");
    run_kernel("portable");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_graph), cmocka_unit_test(test_graph_verify)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
