/* sdk_cpu.h - what the host CPU is, for the probes and default thread counts
 * of the plugins that compute on it (cpu_ref, the hybrid wrappers). */
#ifndef SGL_SDK_CPU_H
#define SGL_SDK_CPU_H

#include <stdint.h>

typedef struct sgl_sdk_cpu {
    char name[96];    /* /proc/cpuinfo's model name, else "unknown CPU" */
    const char *arch; /* "x86_64", "aarch64" or "cpu" */
    int cores;        /* CPUs this process may run on (>= 1) */
    uint64_t memory;  /* physical memory in bytes, 0 when unknown */
} sgl_sdk_cpu;

void sgl_sdk_cpu_describe(sgl_sdk_cpu *c);

#endif
