/* cpu_bench.h - pieces of the CPU decode-bandwidth benchmark. */
#ifndef CPU_BENCH_H
#define CPU_BENCH_H

#include <stddef.h>

/* Memory-read bandwidth: `threads` readers over `bytes` (read_bw.c). */
typedef struct cpu_bw cpu_bw;
cpu_bw *cpu_bw_open(int threads, size_t bytes);
/* One timed pass over the buffer: GB/s; *cpu_s (if not NULL) the process
 * CPU time it took (all readers). */
double cpu_bw_pass(cpu_bw *b, double *cpu_s);
size_t cpu_bw_bytes(const cpu_bw *b);
void cpu_bw_close(cpu_bw *b);

double cpu_bench_median(double *v, int n); /* sorts v */
double cpu_bench_max(const double *v, int n);

#endif
