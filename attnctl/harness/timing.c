/* timing.c - the bench loop: warm-up, then batches of calls with one device
 * synchronize per batch, until the minimum time; the per-call median. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"

#define MAX_BATCHES 1000

double htime_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int hbench_time(const hbench *b, const hdev *d, double min_time, hbench_stats *out, char *err, size_t err_size) {
    /* warm-up: at least 3 calls and 0.2 s (caches, clocks, lazy init) */
    double t0 = htime_now();
    long w = 0;
    do {
        if (b->call(b->state, err, err_size)) return -1;
        w++;
    } while (w < 3 || (htime_now() - t0 < 0.2 && w < 100000));
    if (hdev_sync(d, err, err_size)) return -1;
    const double est = (htime_now() - t0) / (double)w;
    long per = est > 0 ? (long)(min_time / 10.0 / est) : 1;
    per = per < 1 ? 1 : per > 1000000 ? 1000000 : per;

    double *times = malloc(sizeof(double) * MAX_BATCHES);
    if (!times) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    int nb = 0;
    const double start = htime_now();
    while (nb < MAX_BATCHES && (nb < 5 || htime_now() - start < min_time)) {
        double t = htime_now();
        for (long c = 0; c < per; c++)
            if (b->call(b->state, err, err_size)) {
                free(times);
                return -1;
            }
        if (hdev_sync(d, err, err_size)) {
            free(times);
            return -1;
        }
        times[nb++] = (htime_now() - t) / (double)per;
    }
    qsort(times, (size_t)nb, sizeof *times, cmp);
    out->median_s = nb % 2 ? times[nb / 2] : 0.5 * (times[nb / 2 - 1] + times[nb / 2]);
    out->min_s = times[0];
    out->max_s = times[nb - 1];
    out->batches = nb;
    out->calls_per_batch = per;
    out->calls = per * nb;
    free(times);
    return 0;
}
