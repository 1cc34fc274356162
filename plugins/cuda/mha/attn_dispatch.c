/* attn_dispatch.c - variant -> launcher.  The wgmma variant only changes the
 * extend kernel; its decode is the mma one.  Which decode kernel runs is the
 * decode choice below (SGL_ATTN_CUDA_DECODE). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "attn_launch.h"
#include "cuda_attn.h"

static int decode_setup(int dtype, int head_dim);

int attn_kernels_setup(int variant, int dtype, int head_dim) {
    if (variant == ATTN_VARIANT_SIMPLE) return 0; /* static shared memory only */
    int e = attn_mma_setup(dtype, head_dim);
    if (!e && variant == ATTN_VARIANT_WGMMA) e = attn_wgmma_setup(dtype, head_dim);
    if (!e) e = decode_setup(dtype, head_dim);
    return e;
}

static int decode_launch(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream);

int attn_launch_decode(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (variant == ATTN_VARIANT_SIMPLE) return attn_launch_decode_simple(dtype, head_dim, p, grid_items, stream);
    return decode_launch(dtype, head_dim, p, grid_items, stream);
}

int attn_launch_extend(int variant, int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (variant == ATTN_VARIANT_SIMPLE) return attn_launch_extend_simple(dtype, head_dim, p, grid_items, stream);
    if (variant == ATTN_VARIANT_WGMMA) return attn_launch_extend_wgmma(dtype, head_dim, p, grid_items, stream);
    return attn_launch_extend_mma(dtype, head_dim, p, grid_items, stream);
}

/* ------------------------------------------------------------ decode choice
 *
 * SGL_ATTN_CUDA_DECODE names the decode kernel of the mma / wgmma variants
 * (docs/cuda.md, "decode performance"):
 *   mma[.sN][.h]             smem-staged mma.sync decode, N cp.async stages
 *                            (2..4 at d128; other head dims keep their default;
 *                            .h with the default depth at d128 only)
 *   reg[.wNbM][.h][.contig]  register-fed decode, N warps, M register tiles
 *                            (w4b2 w4b1 w2b2 w8b2; d64/d128, group <= 8,
 *                            else the mma decode runs)
 *   .h       blocks run heads-fastest (an item's kv heads side by side)
 *   .contig  bench probe: ignore the page table, read each request as one
 *            contiguous run (WRONG outputs; measures what the gather costs)
 * Unset: ATTN_DECODE_DEFAULT.  Read at create (the choice is process-wide:
 * the environment is), applied at every decode launch.
 *
 * SGL_ATTN_CUDA_DECODE_SWEEP=FILE (bench only): once per create, the first
 * decode launch 0.25 s or more after that create's first one times every
 * variant of SGL_ATTN_CUDA_DECODE_SWEEP_LIST (default k_sweep_default) on the
 * batch with events and appends one JSON line per variant to FILE.  The delay
 * puts it after attnctl bench's 0.2 s warm-up (which sizes the timed batches:
 * one timed batch carries it and the median drops it; a one-call check never
 * gets there).  It synchronises, so it refuses a capturing stream.
 * bench/gpu/mha_decode_sweep.sh drives it: one pool build per shape instead
 * of one per (shape, variant). */

#define ATTN_DECODE_DEFAULT "reg.w2b2.h" /* H200 sweep 2026-12-02: best geomean, 0.90-1.01x cuDNN */

/* launch_mma.cu */
int attn_decode_mma_stages_ok(int d, int stages);
int attn_decode_reg_ok(int d, int group, int warps, int bufs);
int attn_launch_decode_mma_cfg(int dtype, int d, const attn_fwd *p, int grid_items, void *stream, int stages,
                               int order);
int attn_launch_decode_reg(int dtype, int d, const attn_fwd *p, int grid_items, void *stream, int warps, int bufs,
                           int order, int diag);

typedef struct decode_cfg {
    int reg;         /* 0 mma, 1 reg */
    int stages;      /* mma: cp.async depth, 0 default */
    int warps, bufs; /* reg */
    int order;       /* 1 heads fastest */
    int diag;        /* 1 contiguous-read probe */
} decode_cfg;

static const char *const k_sweep_default =
    "mma,mma.s2,mma.s4,mma.h,reg.w4b2,reg.w4b1,reg.w2b2,reg.w8b2,reg.w4b2.h,reg.w2b2.h,reg.w4b2.contig";

/* "mma.s2.h" -> cfg; 0, or -1 for a name outside the grammar. */
static int decode_parse(const char *name, decode_cfg *c) {
    memset(c, 0, sizeof *c);
    char buf[64];
    if (!name || strlen(name) >= sizeof buf) return -1;
    strcpy(buf, name);
    char *save = NULL, *tok = strtok_r(buf, ".", &save);
    if (!tok) return -1;
    if (!strcmp(tok, "reg")) {
        c->reg = 1;
        c->warps = 4;
        c->bufs = 2;
    } else if (strcmp(tok, "mma")) {
        return -1;
    }
    while ((tok = strtok_r(NULL, ".", &save))) {
        int a, b;
        char end;
        if (!strcmp(tok, "h")) c->order = 1;
        else if (c->reg && !strcmp(tok, "contig")) c->diag = 1;
        else if (!c->reg && sscanf(tok, "s%d%c", &a, &end) == 1 && a >= 2 && a <= 4) c->stages = a;
        else if (c->reg && sscanf(tok, "w%db%d%c", &a, &b, &end) == 2 && attn_decode_reg_ok(128, 1, a, b)) {
            c->warps = a;
            c->bufs = b;
        } else return -1;
    }
    return 0;
}

static int decode_pack(const decode_cfg *c) {
    return c->reg | c->stages << 1 | c->warps << 4 | c->bufs << 8 | c->order << 10 | c->diag << 11;
}
static decode_cfg decode_unpack(int v) {
    decode_cfg c = {v & 1, (v >> 1) & 7, (v >> 4) & 15, (v >> 8) & 3, (v >> 10) & 1, (v >> 11) & 1};
    return c;
}

/* Written at create, read at launch (process-wide, as the environment is). */
static _Atomic int g_decode_cfg;
static _Atomic int g_sweep_pending;
static char g_sweep_file[512];
static double g_sweep_t0; /* the first decode launch after the create, 0 before it */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int decode_setup(int dtype, int head_dim) {
    (void)dtype;
    const char *name = getenv("SGL_ATTN_CUDA_DECODE");
    if (!name || !*name) name = ATTN_DECODE_DEFAULT;
    decode_cfg c;
    if (decode_parse(name, &c)) {
        ca_log(SGL_ATTN_LOG_ERROR,
               "SGL_ATTN_CUDA_DECODE=\"%s\": expected mma[.s2|.s3|.s4][.h] or reg[.w4b2|.w4b1|.w2b2|.w8b2][.h][.contig]",
               name);
        return (int)cudaErrorInvalidValue;
    }
    if (c.diag)
        ca_log(SGL_ATTN_LOG_WARN, "SGL_ATTN_CUDA_DECODE=%s: a bench probe that ignores the page table: outputs are wrong",
               name);
    if (c.reg && !attn_decode_reg_ok(head_dim, 1, c.warps, c.bufs))
        ca_log(SGL_ATTN_LOG_INFO, "SGL_ATTN_CUDA_DECODE=%s: head dim %d runs the mma decode", name, head_dim);
    atomic_store(&g_decode_cfg, decode_pack(&c));
    const char *sweep = getenv("SGL_ATTN_CUDA_DECODE_SWEEP");
    if (sweep && *sweep && strlen(sweep) < sizeof g_sweep_file) {
        if (!atomic_load(&g_sweep_pending)) strcpy(g_sweep_file, sweep);
        g_sweep_t0 = 0.0;
        atomic_store(&g_sweep_pending, 1);
    }
    return 0;
}

static int decode_run(const decode_cfg *c, int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (c->reg && attn_decode_reg_ok(head_dim, p->group, c->warps, c->bufs))
        return attn_launch_decode_reg(dtype, head_dim, p, grid_items, stream, c->warps, c->bufs, c->order, c->diag);
    const int stages = attn_decode_mma_stages_ok(head_dim, c->stages) ? c->stages : 0;
    return attn_launch_decode_mma_cfg(dtype, head_dim, p, grid_items, stream, stages, c->order);
}

/* Time every variant of the sweep list on this batch; one JSON line each. */
static void decode_sweep(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    static int seq;
    cudaStream_t st = (cudaStream_t)stream;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        ca_log(SGL_ATTN_LOG_WARN, "decode sweep: the stream is capturing a graph; not timed");
        return;
    }
    FILE *f = fopen(g_sweep_file, "a");
    if (!f) {
        ca_log(SGL_ATTN_LOG_WARN, "decode sweep: cannot append to %s", g_sweep_file);
        return;
    }
    const char *list = getenv("SGL_ATTN_CUDA_DECODE_SWEEP_LIST");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list && *list ? list : k_sweep_default);
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        (void)cudaGetLastError();
        fclose(f);
        return;
    }
    seq++;
    char *save = NULL;
    for (char *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        decode_cfg c;
        const char *err = NULL;
        float ms = 0.f;
        long reps = 1;
        if (decode_parse(name, &c)) {
            err = "not a decode variant";
        } else {
            /* one launch to warm up and size the repeat count (~25 ms of kernels) */
            int e = decode_run(&c, dtype, head_dim, p, grid_items, stream);
            if (!e) e = cudaEventRecord(e0, st);
            if (!e) e = decode_run(&c, dtype, head_dim, p, grid_items, stream);
            if (!e) e = cudaEventRecord(e1, st);
            if (!e) e = cudaEventSynchronize(e1);
            if (!e) e = cudaEventElapsedTime(&ms, e0, e1);
            if (!e) {
                reps = ms > 0.f ? (long)(25.0f / ms) : 500;
                reps = reps < 3 ? 3 : reps > 500 ? 500 : reps;
                e = cudaEventRecord(e0, st);
                for (long r = 0; !e && r < reps; r++) e = decode_run(&c, dtype, head_dim, p, grid_items, stream);
                if (!e) e = cudaEventRecord(e1, st);
                if (!e) e = cudaEventSynchronize(e1);
                if (!e) e = cudaEventElapsedTime(&ms, e0, e1);
            }
            if (e) {
                err = cudaGetErrorName((cudaError_t)e);
                (void)cudaGetLastError();
            }
        }
        const int runs_reg = !err && c.reg && attn_decode_reg_ok(head_dim, p->group, c.warps, c.bufs);
        fprintf(f,
                "{\"seq\": %d, \"bs\": %d, \"hq\": %d, \"hkv\": %d, \"d\": %d, \"dtype\": %d, \"variant\": \"%s\", "
                "\"kernel\": \"%s\", ",
                seq, p->num_tokens, p->hq, p->hkv, head_dim, dtype, name, err ? "-" : runs_reg ? "reg" : "mma");
        if (err) fprintf(f, "\"error\": \"%s\"}\n", err);
        else fprintf(f, "\"us\": %.3f, \"reps\": %ld}\n", 1000.0 * ms / (double)reps, reps);
    }
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    fclose(f);
}

static int decode_launch(int dtype, int head_dim, const attn_fwd *p, int grid_items, void *stream) {
    if (grid_items <= 0) return 0;
    if (atomic_load(&g_sweep_pending)) {
        const double t = now_s();
        if (g_sweep_t0 == 0.0) g_sweep_t0 = t;
        else if (t - g_sweep_t0 >= 0.25 && atomic_exchange(&g_sweep_pending, 0))
            decode_sweep(dtype, head_dim, p, grid_items, stream);
    }
    const decode_cfg c = decode_unpack(atomic_load(&g_decode_cfg));
    return decode_run(&c, dtype, head_dim, p, grid_items, stream);
}
