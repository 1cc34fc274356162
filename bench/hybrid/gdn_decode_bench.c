/* gdn_decode_bench.c - GDN decode on the CPU, through the gdn plugin's
 * backend: 32 value heads (16 key heads), K = V = 128, fp32 state, batch 64,
 * one token per request.  The state read and written per step is the bytes
 * moved (B * HV * K * V * 4 * 2); the machine's memory bandwidth is measured
 * in the same run with the same thread pool, on buffers far larger than the
 * caches, as the best of three kernels (read, copy, in-place scale).
 *
 *   gdn_decode_bench [--batch B] [--threads N] [--min-time S] [--json FILE]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hyb.h"

extern const sgl_attn_plugin hyb_plugin_gdn;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------ memory bandwidth */

typedef struct bw_ctx {
    float *a, *b;
    size_t n, parts;
    int kind; /* 0 read, 1 copy, 2 in-place scale */
    double sink[256];
} bw_ctx;

/* The bandwidth kernels get the widest vectors the CPU has, like the decode
 * rows, so the ratio is not flattered by a slow denominator. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void bw_part(void *p, int64_t i, int worker) {
    bw_ctx *c = p;
    size_t lo = c->n * (size_t)i / c->parts, hi = c->n * (size_t)(i + 1) / c->parts;
    if (c->kind == 0) {
        float acc[16] = {0};
        for (size_t j = lo; j + 16 <= hi; j += 16)
            for (int k = 0; k < 16; k++) acc[k] += c->a[j + k];
        double s = 0;
        for (int k = 0; k < 16; k++) s += acc[k];
        c->sink[worker] += s;
    } else if (c->kind == 1) {
        memcpy(c->b + lo, c->a + lo, (hi - lo) * sizeof(float));
    } else {
        for (size_t j = lo; j < hi; j++) c->a[j] = c->a[j] * 0.999f + 1e-3f;
    }
}

/* GB/s of the best of `reps` passes of one kernel */
static double bw_measure(hyb_workers *wk, bw_ctx *c, int kind, int reps) {
    c->kind = kind;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        hyb_workers_run(wk, (int64_t)c->parts, bw_part, c);
        double dt = now() - t0;
        double bytes = (double)c->n * sizeof(float) * (kind == 0 ? 1 : 2);
        if (bytes / dt > best) best = bytes / dt;
    }
    return best / 1e9;
}

/* ------------------------------------------------ the decode step */

static int32_t fake_fill(sgl_attn_backend *b) { (void)b; return 1; }
static void fake_destroy(sgl_attn_backend *b) { (void)b; }
static const sgl_attn_backend_ops fake_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops), .graph_seq_len_fill_value = fake_fill,
    .destroy = fake_destroy};

typedef struct tens {
    DLTensor t;
    int64_t shape[3];
} tens;

static void *mk(tens *x, DLDataType dt, int nd, int64_t d0, int64_t d1, int64_t d2, size_t esz) {
    memset(x, 0, sizeof *x);
    x->shape[0] = d0; x->shape[1] = d1; x->shape[2] = d2;
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)x->shape[i];
    x->t.data = calloc(n, esz);
    x->t.device.device_type = kDLCPU;
    x->t.ndim = nd;
    x->t.dtype = dt;
    x->t.shape = x->shape;
    return x->t.data;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int B = 64, threads = 0;
    double min_time = 2.0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--batch B] [--threads N] [--min-time S] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    if (B < 1) B = 1;
    if (threads > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", threads);
        setenv("SGL_ATTN_HYBRID_THREADS", v, 1);
    }
    const int HK = 16, HV = 32, K = 128, V = 128, W = 4, C = 2 * HK * K + HV * V;
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    strcpy(m.model_type, "qwen3_next");
    m.num_layers = 1; /* one linear layer: all of the bench is its state */
    m.hybrid_kind = SGL_ATTN_HYBRID_GDN;
    m.lin_num_k_heads = HK; m.lin_num_v_heads = HV; m.lin_head_k_dim = K; m.lin_head_v_dim = V;
    m.lin_conv_kernel = W;
    m.lin_state_dtype = SGL_ATTN_DT_F32;
    sgl_attn_backend inner = {&fake_ops, sizeof fake_ops, 0, NULL}, *b = NULL;
    char err[512] = "";
    sgl_attn_create_args ca = {sizeof ca, &m, 0, B, B, 16, &inner, NULL, err, sizeof err, NULL};
    if (hyb_plugin_gdn.create(&ca, &b)) {
        fprintf(stderr, "create: %s\n", err);
        return 1;
    }
    hyb_inst *w = (hyb_inst *)b;
    const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1};
    tens x, a, bb, cw, Al, dtb, out, si;
    float *px = mk(&x, f32, 2, B, C, 0, 4), *pa = mk(&a, f32, 2, B, HV, 0, 4), *pb = mk(&bb, f32, 2, B, HV, 0, 4);
    float *pcw = mk(&cw, f32, 2, C, W, 0, 4), *pAl = mk(&Al, f32, 1, HV, 0, 0, 4), *pdt = mk(&dtb, f32, 1, HV, 0, 0, 4);
    mk(&out, f32, 3, B, HV, V, 4);
    int32_t *psi = mk(&si, i32, 1, B, 0, 0, 4);
    uint64_t s = 12345;
    for (size_t i = 0; i < (size_t)B * C; i++) px[i] = (float)((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 40) / (1 << 24) - 0.5f;
    for (int i = 0; i < B * HV; i++) { pa[i] = 0.1f * (float)(i % 7); pb[i] = 0.2f * (float)(i % 5) - 0.4f; }
    for (int i = 0; i < C * W; i++) pcw[i] = 0.25f - 0.1f * (float)(i % 4);
    for (int i = 0; i < HV; i++) { pAl[i] = -0.5f + 0.03f * (float)i; pdt[i] = 0.1f; }
    for (int i = 0; i < B; i++) psi[i] = (i * 37) % B; /* slots not in batch order */
    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = SGL_ATTN_MODE_DECODE;
    batch.batch_size = B;
    batch.num_tokens = B;
    batch.page_size = 1;
    batch.tokens_per_req = 1;
    batch.state_indices = &si.t;
    sgl_attn_linear_io io;
    memset(&io, 0, sizeof io);
    io.struct_size = sizeof io;
    io.kind = SGL_ATTN_HYBRID_GDN;
    io.x = &x.t; io.a = &a.t; io.b = &bb.t; io.conv_weight = &cw.t; io.A_log = &Al.t; io.dt_bias = &dtb.t;
    io.out = &out.t;
    io.use_qk_l2norm = 1;
    sgl_attn_layer layer;
    memset(&layer, 0, sizeof layer);
    layer.struct_size = sizeof layer;
    layer.layer_id = 0;
    sgl_attn_forward_args fa;
    memset(&fa, 0, sizeof fa);
    fa.struct_size = sizeof fa;
    fa.layer = &layer;
    fa.batch = &batch;
    fa.linear = &io;
    if (b->ops->init_forward_metadata(b, &batch)) {
        fprintf(stderr, "metadata: %s\n", b->ops->last_error(b));
        return 1;
    }
    /* Bandwidth buffers: as large as the state, far past the caches. */
    bw_ctx bc;
    memset(&bc, 0, sizeof bc);
    bc.n = (size_t)B * HV * K * V;
    if (bc.n < ((size_t)32 << 20)) bc.n = (size_t)32 << 20;
    bc.parts = 256;
    bc.a = malloc(bc.n * sizeof(float));
    bc.b = malloc(bc.n * sizeof(float));
    if (!bc.a || !bc.b) { fprintf(stderr, "no memory for the bandwidth buffers\n"); return 1; }
    for (size_t i = 0; i < bc.n; i++) { bc.a[i] = (float)(i & 1023); bc.b[i] = 0; }
    /* warm-up (faults the pool in) */
    for (int i = 0; i < 3; i++)
        if (b->ops->forward_decode(b, &fa)) {
            fprintf(stderr, "decode: %s\n", b->ops->last_error(b));
            return 1;
        }
    /* Rounds alternate one decode step with one pass of each bandwidth
     * kernel, so both see the same machine (this one is shared and noisy);
     * medians over the rounds are reported. */
    enum { MAXR = 2048 };
    static double t_dec[MAXR], g_rd[MAXR], g_cp[MAXR], g_rw[MAXR], ratio[MAXR];
    const double state_bytes = (double)B * HV * K * V * 4.0 * 2.0;
    int nt = 0;
    double t_end = now() + min_time;
    while ((now() < t_end || nt < 10) && nt < MAXR) {
        double t0 = now();
        b->ops->forward_decode(b, &fa);
        t_dec[nt] = now() - t0;
        g_rd[nt] = bw_measure(w->workers, &bc, 0, 1);
        g_cp[nt] = bw_measure(w->workers, &bc, 1, 1);
        g_rw[nt] = bw_measure(w->workers, &bc, 2, 1);
        double best = fmax(g_rd[nt], fmax(g_cp[nt], g_rw[nt]));
        ratio[nt] = state_bytes / t_dec[nt] / 1e9 / best;
        nt++;
    }
    qsort(t_dec, (size_t)nt, sizeof(double), cmp_d);
    qsort(g_rd, (size_t)nt, sizeof(double), cmp_d);
    qsort(g_cp, (size_t)nt, sizeof(double), cmp_d);
    qsort(g_rw, (size_t)nt, sizeof(double), cmp_d);
    qsort(ratio, (size_t)nt, sizeof(double), cmp_d);
    const double med = t_dec[nt / 2], gbps = state_bytes / med / 1e9;
    const double bw_read = g_rd[nt / 2], bw_copy = g_cp[nt / 2], bw_rw = g_rw[nt / 2];
    const double bw = fmax(bw_read, fmax(bw_copy, bw_rw));
    printf("gdn decode CPU: B=%d HV=%d HK=%d K=%d V=%d fp32 state, %d threads, %d rounds\n", B, HV, HK, K, V,
           w->n_workers, nt);
    printf("  decode median %.3f ms (min %.3f, max %.3f); state read+written %.1f MB/step -> %.2f GB/s\n",
           med * 1e3, t_dec[0] * 1e3, t_dec[nt - 1] * 1e3, state_bytes / 1e6, gbps);
    printf("  bandwidth medians (same threads, %.0f MB buffers): read %.2f, copy %.2f, in-place r+w %.2f GB/s\n",
           bc.n * 4.0 / 1e6, bw_read, bw_copy, bw_rw);
    printf("  ratio %.3f (median decode GB/s / best median bandwidth); per-round ratio median %.3f, "
           "min %.3f, max %.3f\n", gbps / bw, ratio[nt / 2], ratio[0], ratio[nt - 1]);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) { perror(json); return 1; }
        time_t tt = time(NULL);
        char date[32];
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&tt));
        const char *commit = getenv("SGL_ATTN_COMMIT");
        char cpu[128] = "CPU";
        FILE *ci = fopen("/proc/cpuinfo", "r");
        char line[256];
        while (ci && fgets(line, sizeof line, ci))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
                cpu[strcspn(cpu, "\n")] = 0;
                break;
            }
        if (ci) fclose(ci);
        fprintf(f, "{\"tool\": \"gdn_decode_bench\", \"device\": \"%s (%d threads)\", \"date\": \"%s\", \"commit\": \"%s\",\n"
                   " \"case\": {\"batch\": %d, \"hv\": %d, \"hk\": %d, \"k\": %d, \"v\": %d, \"state\": \"f32\", \"threads\": %d},\n"
                   " \"rounds\": %d, \"median_us\": %.1f, \"min_us\": %.1f, \"state_bytes_per_step\": %.0f, \"gbps\": %.3f,\n"
                   " \"bw_read_gbps\": %.3f, \"bw_copy_gbps\": %.3f, \"bw_inplace_gbps\": %.3f, \"ratio\": %.4f,\n"
                   " \"ratio_per_round_median\": %.4f}\n",
                cpu, w->n_workers, date, commit ? commit : "", B, HV, HK, K, V, w->n_workers, nt, med * 1e6,
                t_dec[0] * 1e6, state_bytes, gbps, bw_read, bw_copy, bw_rw, gbps / bw, ratio[nt / 2]);
        fclose(f);
    }
    free(bc.a); free(bc.b);
    free(x.t.data); free(a.t.data); free(bb.t.data); free(cw.t.data); free(Al.t.data); free(dtb.t.data);
    free(out.t.data); free(si.t.data);
    b->ops->destroy(b);
    return 0;
}
