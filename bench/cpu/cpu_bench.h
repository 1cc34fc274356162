/* cpu_bench.h - pieces of the CPU decode-bandwidth benchmark. */
#ifndef CPU_BENCH_H
#define CPU_BENCH_H

#include <stddef.h>

/* Read bandwidth with `threads` readers over `bytes`, `reps` passes:
 * best and median GB/s.  0 on success. */
int cpu_read_bandwidth(int threads, size_t bytes, int reps, double *best_gbps, double *median_gbps);

double cpu_bench_median(double *v, int n); /* sorts v */
double cpu_bench_max(const double *v, int n);

#endif
