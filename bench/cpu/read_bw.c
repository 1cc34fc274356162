/* read_bw.c - this machine's memory-read bandwidth: every thread sums its
 * own slice of a buffer far larger than the last-level cache, with enough
 * independent accumulators that loads, not adds, are the limit.  Threads
 * and buffer stay up between passes, so passes can be interleaved with the
 * decode being measured and both see the same machine. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_bench.h"

typedef struct slice {
    struct cpu_bw *bw;
    const float *p;
    size_t n;
    double sink;
} slice;

struct cpu_bw {
    float *buf;
    size_t n;
    int threads, stop;
    pthread_barrier_t bar;
    pthread_t tid[256];
    slice sl[256];
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *reader(void *arg) {
    slice *s = arg;
    float acc[64] = {0};
    for (;;) {
        pthread_barrier_wait(&s->bw->bar);
        if (s->bw->stop) break;
        for (size_t i = 0; i + 64 <= s->n; i += 64)
            for (int j = 0; j < 64; j++) acc[j] += s->p[i + j];
        pthread_barrier_wait(&s->bw->bar);
    }
    double t = 0;
    for (int j = 0; j < 64; j++) t += acc[j];
    s->sink = t;
    return NULL;
}

cpu_bw *cpu_bw_open(int threads, size_t bytes) {
    if (threads < 1 || threads > 256) return NULL;
    cpu_bw *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->threads = threads;
    b->n = bytes / sizeof(float);
    b->n -= b->n % (64 * (size_t)threads);
    b->buf = aligned_alloc(64, b->n * sizeof(float));
    if (!b->buf) {
        free(b);
        return NULL;
    }
    for (size_t i = 0; i < b->n; i++) b->buf[i] = (float)(i & 1023) * 0.5f; /* touch every page */
    pthread_barrier_init(&b->bar, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        b->sl[t] = (slice){b, b->buf + b->n / (size_t)threads * (size_t)t, b->n / (size_t)threads, 0};
        pthread_create(&b->tid[t], NULL, reader, &b->sl[t]);
    }
    return b;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cpu_bw_pass(cpu_bw *b, double *cpu_s) {
    pthread_barrier_wait(&b->bar);
    double t0 = now(), c0 = cpu_now();
    pthread_barrier_wait(&b->bar);
    double t = now() - t0;
    if (cpu_s) *cpu_s = cpu_now() - c0;
    return (double)(b->n * sizeof(float)) / t / 1e9;
}

size_t cpu_bw_bytes(const cpu_bw *b) { return b->n * sizeof(float); }

void cpu_bw_close(cpu_bw *b) {
    if (!b) return;
    b->stop = 1;
    pthread_barrier_wait(&b->bar);
    for (int t = 0; t < b->threads; t++) pthread_join(b->tid[t], NULL);
    pthread_barrier_destroy(&b->bar);
    free(b->buf);
    free(b);
}
