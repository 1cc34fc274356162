/* read_bw.c - this machine's memory-read bandwidth: every thread sums its
 * own slice of a buffer far larger than the last-level cache, with enough
 * independent accumulators that loads, not adds, are the limit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_bench.h"

typedef struct slice {
    const float *p;
    size_t n;
    int reps;
    pthread_barrier_t *bar;
    double sink;
} slice;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *reader(void *arg) {
    slice *s = arg;
    float acc[64] = {0};
    for (int r = 0; r < s->reps; r++) {
        pthread_barrier_wait(s->bar);
        for (size_t i = 0; i + 64 <= s->n; i += 64)
            for (int j = 0; j < 64; j++) acc[j] += s->p[i + j];
        pthread_barrier_wait(s->bar);
    }
    double t = 0;
    for (int j = 0; j < 64; j++) t += acc[j];
    s->sink = t;
    return NULL;
}

int cpu_read_bandwidth(int threads, size_t bytes, int reps, double *best_gbps, double *median_gbps) {
    if (threads < 1 || threads > 256 || reps < 1 || reps > 64) return -1;
    size_t n = bytes / sizeof(float);
    n -= n % (64 * (size_t)threads);
    float *buf = aligned_alloc(64, n * sizeof(float));
    if (!buf) return -1;
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * 0.5f; /* touch every page */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
    pthread_t tid[256];
    slice sl[256];
    for (int t = 0; t < threads; t++) {
        sl[t] = (slice){buf + n / (size_t)threads * (size_t)t, n / (size_t)threads, reps, &bar, 0};
        pthread_create(&tid[t], NULL, reader, &sl[t]);
    }
    double gbps[64];
    for (int r = 0; r < reps; r++) {
        pthread_barrier_wait(&bar);
        double t0 = now();
        pthread_barrier_wait(&bar);
        gbps[r] = (double)(n * sizeof(float)) / (now() - t0) / 1e9;
    }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&bar);
    free(buf);
    *best_gbps = cpu_bench_max(gbps, reps);
    *median_gbps = cpu_bench_median(gbps, reps);
    return 0;
}
