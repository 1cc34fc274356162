/* test_cuda_graph.c - cuda_attn under CUDA-graph capture and replay (GPU only;
 * skipped with the probe's reason elsewhere).  For each value of the option
 * kernel (auto: the register-fed decode; mma: the mma decode; portable: the
 * kernels hip_attn shares), given through the creating host's get_option:
 * plan + decode directly and check against a float64 reference; then
 * init_graph_state, the capture hook, capture forward_decode into a graph,
 * change the lengths in the device tensors, run the replay hook and replay:
 * the output must match the reference for the new lengths and, bit for bit,
 * a direct forward of the same batch. */
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

enum { BS = 5, HQ = 8, HKV = 2, D = 128, MAXCTX = 640, PAGE = 16, SLOTS = BS * MAXCTX + PAGE };

static void *handle;
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

static void run_kernel(const char *kernel) {
    g_kernel = kernel;
    const size_t nq = (size_t)BS * HQ * D, nkv = (size_t)SLOTS * HKV * D;
    uint16_t *q = malloc(nq * 2), *kc = malloc(nkv * 2), *vc = malloc(nkv * 2), *o1 = malloc(nq * 2),
             *o2 = malloc(nq * 2);
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

    dtensor tq, to, tk, tv, tr2t, trows, tlens;
    int64_t s3[3] = {BS, HQ, D}, skv[3] = {SLOTS, HKV, D}, sr[2] = {BS, MAXCTX}, sb[1] = {BS};
    dalloc(&tq, 3, s3, kDLBfloat, 16, q);
    dalloc(&to, 3, s3, kDLBfloat, 16, NULL);
    dalloc(&tk, 3, skv, kDLBfloat, 16, kc);
    dalloc(&tv, 3, skv, kDLBfloat, 16, vc);
    dalloc(&tr2t, 2, sr, kDLInt, 32, r2t);
    dalloc(&trows, 1, sb, kDLInt, 32, rows);
    dalloc(&tlens, 1, sb, kDLInt, 32, lens);
    DLTensor lens_cpu = tlens.t;
    lens_cpu.data = lens;
    lens_cpu.device.device_type = kDLCPU;

    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_q_heads = HQ, m.num_kv_heads = HKV, m.head_dim_qk = m.head_dim_v = D;
    m.dtype = m.kv_dtype = SGL_ATTN_DT_BF16, m.sliding_window = -1, m.num_layers = 1;
    char err[512] = "";
    sgl_attn_create_args ca = {sizeof ca, &m, 0, BS, BS, MAXCTX, NULL, NULL, err, sizeof err, &g_host};
    sgl_attn_backend *be = NULL;
    int rc = plugin->create(&ca, &be);
    if (rc) fprintf(stderr, "create: %s\n", err);
    assert_int_equal(rc, 0);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = SGL_ATTN_MODE_DECODE, bt.batch_size = BS, bt.num_tokens = BS, bt.page_size = PAGE;
    bt.tokens_per_req = 1;
    bt.req_to_token = &tr2t.t, bt.req_pool_indices = &trows.t, bt.seq_lens = &tlens.t, bt.seq_lens_cpu = &lens_cpu;
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

    /* direct */
    CK(be->ops->init_forward_metadata(be, &bt));
    rc = be->ops->forward_decode(be, &fa);
    if (rc) fprintf(stderr, "forward_decode: %s\n", be->ops->last_error(be));
    assert_int_equal(rc, 0);
    CK(cudaStreamSynchronize(st));
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
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    rc = be->ops->forward_decode(be, &fa);
    cudaError_t ce = cudaStreamEndCapture(st, &graph);
    assert_int_equal(rc, 0);
    CK(ce);
    CK(cudaGraphInstantiate(&exec, graph, 0));

    /* new lengths, replay */
    for (int b = 0; b < BS; b++) lens[b] = 1 + (int)(urand() * (MAXCTX - 1));
    CK(plugin->device_ops->copy_to_device(0, tlens.p, lens, sizeof lens));
    CK(cudaMemsetAsync(to.p, 0xff, nq * 2, st)); /* poison: NaN in bf16 */
    CK(be->ops->init_forward_metadata_replay(be, &g));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    CK(plugin->device_ops->copy_to_host(0, o2, to.p, nq * 2));
    ref_decode(q, kc, vc, r2t, lens, rows, ly.sm_scale, ref);
    double e2 = nmse(o2, ref, nq);
    printf("kernel=%s graph replay: nmse %.3g\n", kernel, e2);
    assert_true(e2 < 1e-4);
    /* the same batch directly: bit-identical */
    CK(be->ops->init_forward_metadata(be, &bt));
    CK(be->ops->forward_decode(be, &fa));
    CK(cudaStreamSynchronize(st));
    CK(plugin->device_ops->copy_to_host(0, o1, to.p, nq * 2));
    assert_memory_equal(o1, o2, nq * 2);

    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(st));
    be->ops->destroy(be);
    dtensor *all[] = {&tq, &to, &tk, &tv, &tr2t, &trows, &tlens};
    for (int i = 0; i < 7; i++) CK(plugin->device_ops->free(0, all[i]->p));
    free(q), free(kc), free(vc), free(o1), free(o2), free(ref), free(r2t);
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
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_graph)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
