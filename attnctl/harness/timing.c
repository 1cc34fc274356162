/* timing.c - the bench loop: warm-up, then batches of calls with one device
 * synchronize per batch, until the minimum time; the per-call median.
 *
 * A call only queues work on the device (hbench: it must not synchronise),
 * so every loop here that stops on the host's clock synchronises before it
 * reads the clock: an unsynchronised loop measures how fast the host queues
 * calls, not how fast the device runs them, and queues as many as the
 * device's launch queue holds (hundreds; minutes of work for a call of a
 * quarter second, all of it waited for at the next synchronize). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

#define MAX_BATCHES 1000
#define MAX_PER_BATCH 1000000L
#define WARMUP_S 0.2    /* caches, clocks, lazy init */
#define WARMUP_CALLS 3

double htime_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* n calls, then one synchronize; the batch's seconds in *dt. */
static int batch(const hbench *b, const hbench_clock *k, long n, double *dt, char *err, size_t err_size) {
    const double t = k->now(k->ctx);
    for (long c = 0; c < n; c++)
        if (b->call(b->state, err, err_size)) return -1;
    if (k->sync(k->ctx, err, err_size)) return -1;
    *dt = k->now(k->ctx) - t;
    return 0;
}

int hbench_time_on(const hbench *b, const hbench_clock *k, double min_time, hbench_stats *out, char *err,
                   size_t err_size) {
    /* warm-up: batches of 1, 2, 4, ... calls, each synchronised, until at
     * least WARMUP_CALLS calls and WARMUP_S seconds: the work queued past the
     * target is at most the last batch, no more than the warm-up before it
     * (or two calls) */
    long w = 0, n = 1;
    double spent = 0, dt = 0, last = 0;
    long last_n = 1;
    while (w < WARMUP_CALLS || spent < WARMUP_S) {
        if (batch(b, k, n, &dt, err, err_size)) return -1;
        w += n;
        spent += dt;
        last = dt;
        last_n = n;
        if (n < MAX_PER_BATCH) n *= 2;
    }
    /* per call, from the last batch (the first one carries the lazy init) */
    const double est = last / (double)last_n;
    long per = est > 0 ? (long)(min_time / 10.0 / est) : 1;
    per = per < 1 ? 1 : per > MAX_PER_BATCH ? MAX_PER_BATCH : per;

    double *times = malloc(sizeof(double) * MAX_BATCHES);
    if (!times) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    int nb = 0;
    const double start = k->now(k->ctx);
    while (nb < MAX_BATCHES && (nb < 5 || k->now(k->ctx) - start < min_time)) {
        if (batch(b, k, per, &dt, err, err_size)) {
            free(times);
            return -1;
        }
        times[nb++] = dt / (double)per;
    }
    qsort(times, (size_t)nb, sizeof *times, cmp);
    out->median_s = nb % 2 ? times[nb / 2] : 0.5 * (times[nb / 2 - 1] + times[nb / 2]);
    out->min_s = times[0];
    out->max_s = times[nb - 1];
    out->batches = nb;
    out->calls_per_batch = per;
    out->calls = per * nb;
    out->warmup_calls = w;
    free(times);
    return 0;
}

static double dev_now(void *ctx) {
    (void)ctx;
    return htime_now();
}

static int dev_sync(void *ctx, char *err, size_t err_size) { return hdev_sync((const hdev *)ctx, err, err_size); }

int hbench_time(const hbench *b, const hdev *d, double min_time, hbench_stats *out, char *err, size_t err_size) {
    const hbench_clock k = {dev_now, dev_sync, (void *)d};
    return hbench_time_on(b, &k, min_time, out, err, err_size);
}
