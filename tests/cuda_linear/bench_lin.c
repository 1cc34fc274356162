/* bench_lin.c - times the CUDA linear wrappers on the issue-9 and issue-22 shapes (GPU only).
 *
 * Decode (Qwen3-Next: 32 value heads, 16 qk heads, K = V = 128, conv 4, fp32
 * state; also the TP2 shapes of the vLLM anchor: 16 / 8): one forward_decode
 * of one GDN layer, B in {32, 256, 1024}.  Bytes = the state read and written
 * per step, B * HV * K * V * 4 * 2 (the count).
 * Prefill (Qwen3.5 TP8: 2 qk heads, 8 value heads, K = V = 128, bf16): one
 * forward_extend of one 64k-token sequence.  FLOPs: FlashInfer's count,
 * 4 * T * HV * K * V (two matrix-vector products per token and head), and
 * the chunked algorithm's own matmul FLOPs (docs/cuda_linear.md).
 * BENCH_SET=prefill adds kda_cuda (Kimi-Linear-48B-A3B TP4: 8 heads, K = V = 128)
 * and mamba2_cuda (Nemotron-H-8B TP1: 128 heads of P = 64, 8 groups, N = 128)
 * at 1 x 64k and 16 x 8k, counted the same way per kind (docs/cuda_linear.md).
 *
 *   bench_lin OUT.json [plugin_dir]     BENCH_QUICK=1: fewer repetitions; BENCH_FILTER=text: only
 *                                     the cases whose name has it (a|b: either; a,b: both, since the
 *                                     lever confs split on spaces); BENCH_VARIANT=fast / simple;
 *                                     BENCH_VT=16 / 32: only the cases of that tile; BENCH_SET=prefill:
 *                                     the prefill shapes of issue 22 (gdn 1x64k, 1x32k, 16x8k,
 *                                     Qwen3-Next; kda and mamba2 1x64k, 16x8k); BENCH_SMOKE=1: tiny
 *                                     cases (the emulator runs them); BENCH_CREATE_ONLY=1: only create
 *                                     each case's instance (the sizing of the big cases, on the emulator)
 * Each case: warm-up, then 5 timed runs of N calls between CUDA events on a
 * non-blocking stream; the median per call is reported.  The kernel variant
 * and the phase-2 tile are set per case through SGL_ATTN_LIN_KERNEL /
 * SGL_ATTN_LIN_VT before create. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "lin_params.h"
#include "lt_util.h"


/* BENCH_FILTER: '|' separates alternatives, ',' words that must all be in the name */
static int filter_takes(const char *name, const char *filt) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", filt);
    for (char *alt = buf, *next; alt; alt = next) {
        next = strchr(alt, '|');
        if (next) *next++ = 0;
        int all = 1;
        for (char *w = alt, *wn; w && all; w = wn) {
            wn = strchr(w, ',');
            if (wn) *wn++ = 0;
            all = strstr(name, w) != NULL;
        }
        if (all) return 1;
    }
    return 0;
}

/* the loaded wrappers, by SGL_ATTN_HYBRID_* kind (gdn_cuda at start, the others at their first case) */
static const sgl_attn_plugin *plugins[8];
static const char *plugin_dir;
static FILE *json;
static int first_case = 1;
static double peak_bw = 4.26e12; /* the H200's measured bandwidth (the issue) */

typedef struct bcase {
    const char *name, *variant, *vt;
    int mode; /* SGL_ATTN_MODE_DECODE / EXTEND */
    int hk, hv, B, T;
    uint32_t state_dt;
    int io_dt;
    /* the SGL_ATTN_HYBRID_* kind and its dims (mamba2: hk = groups G, hv = heads H, K = state N, V = head dim P) */
    int kind, K, V;
} bcase;
/* the issue-9 cases: gdn, K = V = 128 */
#define GDN_128 SGL_ATTN_HYBRID_GDN, 128, 128

static const char *kind_name(int kind) {
    return kind == SGL_ATTN_HYBRID_KDA ? "kda" : kind == SGL_ATTN_HYBRID_MAMBA2 ? "mamba2" : "gdn";
}

static const sgl_attn_plugin *plugin_for(int kind) {
    if (kind < 0 || kind >= (int)(sizeof plugins / sizeof *plugins)) return NULL;
    if (!plugins[kind]) {
        char name[32];
        void *h = NULL;
        snprintf(name, sizeof name, "%s_cuda", kind_name(kind));
        plugins[kind] = lt_load(plugin_dir, name, &h);
    }
    return plugins[kind];
}

/* x [rows][cols] ~ normal(sigma): the first fill_tile rows drawn on the host, the rest device copies of
 * them.  The host draws and converts about 40 M values a second, and the 16 x 8k mamba2 case's x alone
 * holds 1.3 G; the kernels' time does not depend on the values.  BENCH_SMOKE takes 64-row tiles, so
 * that its cases copy tiles too. */
static int fill_tile = 4096;
static int create_only;
static void fill_rows(lt_tensor *x, lt_rng *r, double sigma) {
    const size_t rows = (size_t)x->shape[0];
    if (rows <= (size_t)fill_tile) {
        lt_fill_normal(x, r, sigma);
        return;
    }
    lt_tensor head;
    lt_make(&head, x->dt, 2, (int64_t[]){fill_tile, (int64_t)(x->n / rows)}, 0);
    lt_fill_normal(&head, r, sigma);
    const size_t tile = head.n * lt_esz(x->dt), bytes = x->n * lt_esz(x->dt);
    cudaError_t e = cudaSuccess;
    for (size_t at = 0; at < bytes && e == cudaSuccess; at += tile)
        e = cudaMemcpy((char *)x->dev + at, head.dev, bytes - at < tile ? bytes - at : tile, cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) printf("fill_rows: %s\n", cudaGetErrorString(e));
    lt_free(&head);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_case(const bcase *c) {
    setenv("SGL_ATTN_LIN_KERNEL", c->variant, 1);
    setenv("SGL_ATTN_LIN_VT", c->vt, 1);
    const int kind = c->kind, K = c->K, V = c->V, W = 4, C = 2 * c->hk * K + c->hv * V;
    const int kda = kind == SGL_ATTN_HYBRID_KDA, mamba2 = kind == SGL_ATTN_HYBRID_MAMBA2;
    const sgl_attn_plugin *plugin = plugin_for(kind);
    if (!plugin) {
        printf("%-44s %-7s cannot load %s_cuda from %s\n", c->name, c->variant, kind_name(kind), plugin_dir);
        return;
    }
    /* extend: B requests of T / B tokens each */
    const int T = c->mode == SGL_ATTN_MODE_DECODE ? c->B : c->T, bs = c->B;
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    snprintf(m.name, sizeof m.name, "bench");
    snprintf(m.model_type, sizeof m.model_type, "%s", kda ? "kimi_linear" : mamba2 ? "nemotron_h" : "qwen3_next");
    m.num_layers = 2;
    m.num_q_heads = 16;
    m.num_kv_heads = 2;
    m.head_dim_qk = m.head_dim_v = 256;
    m.dtype = m.kv_dtype = c->io_dt == LT_BF16 ? SGL_ATTN_DT_BF16 : SGL_ATTN_DT_F32;
    m.hybrid_kind = (uint32_t)kind;
    m.full_attention_mask[0] = 2; /* layer 0 linear, layer 1 full */
    m.lin_num_k_heads = c->hk;
    m.lin_num_v_heads = c->hv;
    m.lin_head_k_dim = K;
    m.lin_head_v_dim = V;
    m.lin_conv_kernel = W;
    m.lin_state_dtype = c->state_dt;
    lt_inner inner;
    lt_inner_init(&inner);
    char err[512] = "";
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &m;
    a.max_reqs = bs;
    a.max_tokens = T;
    a.max_context = T + 16;
    a.inner = &inner.base;
    a.error = err;
    a.error_size = sizeof err;
    sgl_attn_backend *b = NULL;
    if (plugin->create(&a, &b) != SGL_ATTN_OK) {
        printf("%-44s %-7s create failed: %s\n", c->name, c->variant, err);
        return;
    }
    if (create_only) { /* BENCH_CREATE_ONLY=1: the case's instance and its sizing, nothing run */
        printf("%-44s %-7s created (%s_cuda, %d tokens in %d requests)\n", c->name, c->variant, kind_name(kind), T, bs);
        b->ops->destroy(b);
        return;
    }
    lt_rng r = {0xbe11c4ull};
    lt_tensor x, ga, gb, cw, cb, al, dtb, dd, out, si, el, ep;
    lt_make(&x, c->io_dt, 2, (int64_t[]){T, C}, 0);
    fill_rows(&x, &r, 1.0);
    /* kda: one gate per key channel (a [T, HV K], dt_bias [HV K]); mamba2: dt [T, H], D [H], no b */
    const int64_t gw = kda ? (int64_t)c->hv * K : c->hv;
    lt_make(&ga, c->io_dt, 2, (int64_t[]){T, gw}, 0);
    fill_rows(&ga, &r, 1.0);
    lt_make(&gb, c->io_dt, 2, (int64_t[]){T, c->hv}, 0);
    fill_rows(&gb, &r, 1.0);
    lt_make(&cw, LT_F32, 2, (int64_t[]){C, W}, 0);
    lt_fill_normal(&cw, &r, 0.5);
    lt_make(&cb, LT_F32, 1, (int64_t[]){C}, 0);
    lt_fill_normal(&cb, &r, 0.2);
    lt_make(&al, LT_F32, 1, (int64_t[]){c->hv}, 0);
    lt_fill_uniform(&al, &r, -1.5, 0.5);
    lt_make(&dtb, LT_F32, 1, (int64_t[]){gw}, 0);
    lt_fill_normal(&dtb, &r, 0.5);
    lt_make(&dd, LT_F32, 1, (int64_t[]){c->hv}, 0);
    lt_fill_normal(&dd, &r, 1.0);
    lt_make(&out, c->io_dt, 3, (int64_t[]){T, c->hv, V}, 0);
    lt_make(&si, LT_I32, 1, (int64_t[]){bs}, 0);
    lt_make(&el, LT_I32, 1, (int64_t[]){bs}, 0);
    lt_make(&ep, LT_I32, 1, (int64_t[]){bs}, 0);
    for (int i = 0; i < bs; i++) {
        lt_set(&si, i, i);
        lt_set(&el, i, c->mode == SGL_ATTN_MODE_DECODE ? 1 : T / bs);
        lt_set(&ep, i, 0);
    }
    lt_upload(&si);
    lt_upload(&el);
    lt_upload(&ep);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    sgl_attn_batch bt;
    memset(&bt, 0, sizeof bt);
    bt.struct_size = sizeof bt;
    bt.forward_mode = c->mode;
    bt.batch_size = bs;
    bt.num_tokens = T;
    bt.page_size = 1;
    bt.tokens_per_req = 1;
    bt.state_indices = &si.t;
    if (c->mode == SGL_ATTN_MODE_EXTEND) {
        bt.extend_seq_lens = &el.t;
        bt.extend_prefix_lens = &ep.t;
    }
    bt.stream = st;
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = kind;
    io.x = &x.t;
    io.a = &ga.t;
    io.b = mamba2 ? NULL : &gb.t;
    io.conv_weight = &cw.t;
    io.conv_bias = &cb.t;
    io.A_log = &al.t;
    io.dt_bias = &dtb.t;
    io.D = mamba2 ? &dd.t : NULL;
    io.out = &out.t;
    io.use_qk_l2norm = !mamba2;
    sgl_attn_layer L;
    memset(&L, 0, sizeof L);
    L.struct_size = sizeof L;
    L.layer_id = 0;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.layer = &L;
    fa.batch = &bt;
    fa.out = &out.t;
    fa.linear = &io;
    int rc = b->ops->init_forward_metadata(b, &bt);
    int (*fwd)(sgl_attn_backend *, const sgl_attn_forward_args *) =
        c->mode == SGL_ATTN_MODE_DECODE ? b->ops->forward_decode : b->ops->forward_extend;
    if (!rc) rc = fwd(b, &fa); /* warm-up and a check that it runs */
    cudaError_t e = cudaStreamSynchronize(st);
    if (rc || e != cudaSuccess) {
        printf("%-44s %-7s failed: %d %s %s\n", c->name, c->variant, rc, b->ops->last_error(b), cudaGetErrorString(e));
    } else {
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        /* calls per timed run: about 20 ms of work, from the warm-up's time */
        cudaEventRecord(e0, st);
        fwd(b, &fa);
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        const int quick = getenv("BENCH_QUICK") && atoi(getenv("BENCH_QUICK"));
        int n = (int)(20.0 / (ms > 1e-3 ? ms : 1e-3));
        n = n < 3 ? 3 : n > 2000 ? 2000 : n;
        if (quick) n = n > 50 ? 50 : n;
        double t[5];
        for (int rep = 0; rep < 5; rep++) {
            cudaEventRecord(e0, st);
            for (int k = 0; k < n; k++) fwd(b, &fa);
            cudaEventRecord(e1, st);
            cudaEventSynchronize(e1);
            cudaEventElapsedTime(&ms, e0, e1);
            t[rep] = ms * 1e-3 / n;
        }
        qsort(t, 5, sizeof *t, cmp_d);
        const double sec = t[2], us = sec * 1e6;
        const double esz = c->state_dt == SGL_ATTN_DT_BF16 ? 2 : 4;
        if (c->mode == SGL_ATTN_MODE_DECODE) {
            const double bytes = (double)c->B * c->hv * K * V * esz * 2;
            printf("%-44s %-7s vt=%-4s %9.1f us %7.3f TB/s  %5.1f%% of %.2f TB/s\n", c->name, c->variant, c->vt, us,
                   bytes / sec / 1e12, 100 * bytes / sec / peak_bw, peak_bw / 1e12);
            fprintf(json, "%s\n  {\"case\": \"%s\", \"mode\": \"decode\", \"variant\": \"%s\", \"vt\": \"%s\", \"B\": %d, "
                    "\"hv\": %d, \"hk\": %d, \"state\": \"%s\", \"us\": %.2f, \"bytes\": %.0f, \"tbps\": %.4f, "
                    "\"frac_bw\": %.4f}", first_case ? "" : ",", c->name, c->variant, c->vt, c->B, c->hv, c->hk,
                    esz == 2 ? "bf16" : "f32", us, bytes, bytes / sec / 1e12, bytes / sec / peak_bw);
        } else {
            const double std_flops = 4.0 * T * c->hv * K * V;
            /* the chunked algorithm's matmuls per 64-token chunk (docs/cuda_linear.md):
             *  gdn: per key head q k^T and k k^T (2 C^2 K each); per value head W = T (b k e^G),
             *       U = T (b v) (2 C^2 K, 2 C^2 V), then W S^T, QG S^T, Unew^T KD (2 C K V each), M Unew (2 C^2 V);
             *  kda: the same, but its per-channel gates make q k^T and k k^T per value head;
             *  mamba2: per group C B^T (2 C^2 N); per head QG S^T, U^T KD (2 C N P each), M U (2 C^2 P)
             *       (no delta rule: no k k^T, T, W or W S^T).
             * The T solve and the elementwise work are not counted. */
            const double Cc = LIN_CHUNK, chunks = ceil(T / Cc);
            const double delta_v = 2 * Cc * Cc * K + 2 * Cc * Cc * V + 3 * 2 * Cc * K * V + 2 * Cc * Cc * V;
            const double real =
                mamba2 ? chunks * (c->hk * 2 * Cc * Cc * K + c->hv * (2 * 2 * Cc * K * V + 2 * Cc * Cc * V))
                : kda  ? chunks * c->hv * (2 * (2 * Cc * Cc * K) + delta_v)
                       : chunks * (c->hk * 2 * (2 * Cc * Cc * K) + c->hv * delta_v);
            printf("%-44s %-7s vt=%-4s %9.1f us %7.1f TFLOP/s (FlashInfer count), %6.1f TFLOP/s of chunked matmuls\n",
                   c->name, c->variant, c->vt, us, std_flops / sec / 1e12, real / sec / 1e12);
            fprintf(json, "%s\n  {\"case\": \"%s\", \"mode\": \"prefill\", \"kind\": \"%s\", \"variant\": \"%s\", "
                    "\"vt\": \"%s\", \"T\": %d, \"B\": %d, \"hv\": %d, \"hk\": %d, \"K\": %d, \"V\": %d, \"us\": %.2f, "
                    "\"flops_std\": %.0f, \"tflops_std\": %.3f, \"flops_chunked\": %.0f, \"tflops_chunked\": %.3f}",
                    first_case ? "" : ",", c->name, kind_name(kind), c->variant, c->vt, T, c->B, c->hv, c->hk, K, V, us,
                    std_flops, std_flops / sec / 1e12, real, real / sec / 1e12);
        }
        first_case = 0;
        fflush(stdout);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
    b->ops->destroy(b);
    cudaStreamDestroy(st);
    lt_tensor *ts[] = {&x, &ga, &gb, &cw, &cb, &al, &dtb, &dd, &out, &si, &el, &ep};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) lt_free(ts[i]);
}

int main(int argc, char **argv) {
    const char *out = argc > 1 ? argv[1] : "bench_lin.json";
    plugin_dir = lt_plugdir(argc - 1, argv + 1);
    if (getenv("BENCH_PEAK_BW")) peak_bw = atof(getenv("BENCH_PEAK_BW")) * 1e12;
    const sgl_attn_plugin *plugin = plugin_for(SGL_ATTN_HYBRID_GDN);
    if (!plugin) {
        printf("FAIL: cannot load gdn_cuda from %s\n", plugin_dir);
        return 1;
    }
    sgl_attn_caps caps;
    memset(&caps, 0, sizeof caps);
    caps.struct_size = sizeof caps;
    if (plugin->probe(0, &caps) != SGL_ATTN_OK || !caps.available) {
        char why[400];
        snprintf(why, sizeof why, "gdn_cuda is not available here: %s", caps.reason);
        lt_skip(why);
    }
    json = fopen(out, "w");
    if (!json) {
        printf("FAIL: cannot write %s\n", out);
        return 1;
    }
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *commit = getenv("SGL_ATTN_COMMIT") ? getenv("SGL_ATTN_COMMIT") : "unknown";
    fprintf(json, "{\"tool\": \"bench_lin\", \"plugin\": \"gdn_cuda\", \"gpu\": \"%s\", \"arch\": \"%s\", \"date\": \"%s\", "
            "\"commit\": \"%s\", \"peak_bw_tbps\": %.3f, \"cases\": [", caps.device_name, caps.arch_name, date, commit,
            peak_bw / 1e12);
    printf("device %s (%s), %u SMs\n", caps.device_name, caps.arch_name, caps.compute_units);
    const bcase cases[] = {
        {"decode qwen3-next hv32/hk16 B=32", "fast", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 32, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode qwen3-next hv32/hk16 B=256", "fast", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 256, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode qwen3-next hv32/hk16 B=1024", "fast", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 1024, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode qwen3-next tp2 hv16/hk8 B=32", "fast", "auto", SGL_ATTN_MODE_DECODE, 8, 16, 32, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode qwen3-next tp2 hv16/hk8 B=1024", "fast", "auto", SGL_ATTN_MODE_DECODE, 8, 16, 1024, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode qwen3-next hv32/hk16 B=256 bf16 state", "fast", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 256, 0, SGL_ATTN_DT_BF16, LT_BF16, GDN_128},
        {"decode qwen3-next hv32/hk16 B=1024 bf16 state", "fast", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 1024, 0, SGL_ATTN_DT_BF16, LT_BF16, GDN_128},
        {"decode qwen3-next hv32/hk16 B=256", "simple", "auto", SGL_ATTN_MODE_DECODE, 16, 32, 256, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 T=65536", "fast", "16", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 65536, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 T=65536", "fast", "32", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 65536, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 T=8192", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 8192, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 T=8192", "simple", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 8192, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
    };
    /* BENCH_SET=prefill: the prefill shapes of issue 22 (the segmented state pass cuts 1 x 64k and 1 x 32k;
     * SGL_ATTN_LIN_SEGMENT=0 times the serial pass on them), the tile by batch size as the default runs them */
    const bcase prefill[] = {
        {"prefill qwen3.5 tp8 hv8/hk2 1x64k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 65536, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 1x32k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 32768, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 16x8k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 16, 131072, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3-next hv32/hk16 1x32k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 16, 32, 1, 32768, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3-next hv32/hk16 8x4k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 16, 32, 8, 32768, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill qwen3.5 tp8 hv8/hk2 1x64k bf16 state", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 8, 1, 65536, SGL_ATTN_DT_BF16, LT_BF16, GDN_128},
        /* kda, Kimi-Linear-48B-A3B (config.json linear_attn_config: num_heads 32, head_dim 128,
         * short_conv_kernel_size 4; q, k and v heads alike) at TP4: 8 heads per rank */
        {"prefill kda kimi-linear tp4 h8 1x64k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 8, 8, 1, 65536, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_KDA, 128, 128},
        {"prefill kda kimi-linear tp4 h8 16x8k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 8, 8, 16, 131072, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_KDA, 128, 128},
        /* mamba2, Nemotron-H-8B (config.json: mamba_num_heads 128, mamba_head_dim 64, ssm_state_size 128,
         * n_groups 8, conv_kernel 4) at TP1: hk = groups, hv = heads, K = state, V = head dim */
        {"prefill mamba2 nemotron-h-8b h128/g8 1x64k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 8, 128, 1, 65536, SGL_ATTN_DT_F32,
         LT_BF16, SGL_ATTN_HYBRID_MAMBA2, 128, 64},
        {"prefill mamba2 nemotron-h-8b h128/g8 16x8k", "fast", "auto", SGL_ATTN_MODE_EXTEND, 8, 128, 16, 131072, SGL_ATTN_DT_F32,
         LT_BF16, SGL_ATTN_HYBRID_MAMBA2, 128, 64},
    };
    /* BENCH_SMOKE=1: tiny shapes, to check the tool itself (the CPU emulator runs it) */
    const bcase smoke[] = {
        {"decode smoke hv4/hk2 B=3", "fast", "auto", SGL_ATTN_MODE_DECODE, 2, 4, 3, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"decode smoke hv4/hk2 B=3", "simple", "auto", SGL_ATTN_MODE_DECODE, 2, 4, 3, 0, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        {"prefill smoke hv4/hk2 T=130", "fast", "16", SGL_ATTN_MODE_EXTEND, 2, 4, 1, 130, SGL_ATTN_DT_F32, LT_BF16, GDN_128},
        /* the BENCH_SET=prefill kinds, tiny: one request across chunk boundaries and a batch of two */
        {"prefill smoke kda h2 1x130", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 2, 1, 130, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_KDA, 128, 128},
        {"prefill smoke kda h2 2x96", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 2, 2, 192, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_KDA, 128, 128},
        {"prefill smoke mamba2 h4/g2 1x130", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 4, 1, 130, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_MAMBA2, 128, 64},
        {"prefill smoke mamba2 h4/g2 2x96", "fast", "auto", SGL_ATTN_MODE_EXTEND, 2, 4, 2, 192, SGL_ATTN_DT_F32, LT_BF16,
         SGL_ATTN_HYBRID_MAMBA2, 128, 64},
    };
    const int smoke_on = getenv("BENCH_SMOKE") && atoi(getenv("BENCH_SMOKE"));
    if (smoke_on) fill_tile = 64;
    create_only = getenv("BENCH_CREATE_ONLY") && atoi(getenv("BENCH_CREATE_ONLY"));
    const int prefill_on = getenv("BENCH_SET") && !strcmp(getenv("BENCH_SET"), "prefill");
    const bcase *run = smoke_on ? smoke : prefill_on ? prefill : cases;
    const size_t nrun = smoke_on ? sizeof smoke / sizeof *smoke
                        : prefill_on ? sizeof prefill / sizeof *prefill
                                     : sizeof cases / sizeof *cases;
    /* BENCH_FILTER=substring of the case name, BENCH_VARIANT=fast/simple, BENCH_VT=16/32/auto (only the
     * cases of that phase-2 tile): a subset (bench/gpu/profile.sh) */
    const char *filt = getenv("BENCH_FILTER"), *var = getenv("BENCH_VARIANT"), *vtf = getenv("BENCH_VT");
    for (size_t i = 0; i < nrun; i++)
        if ((!filt || filter_takes(run[i].name, filt)) && (!var || !strcmp(run[i].variant, var)) &&
            (!vtf || !strcmp(run[i].vt, vtf)))
            run_case(&run[i]);
    fprintf(json, "\n]}\n");
    fclose(json);
    printf("wrote %s\n", out);
    return 0;
}
