/* cpu_info.c - what this CPU is, for the probe and for sizing the pool. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_ref.h"

static void model_name(char *dst, size_t size) {
    snprintf(dst, size, "%s", "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *p = strchr(line, ':');
        if (!p) continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, "\n");
        while (n > 0 && p[n - 1] == ' ') n--;
        if (n == 0) continue;
        snprintf(dst, size, "%.*s", (int)n, p);
        break;
    }
    fclose(f);
}

static int usable_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void cref_cpu_query(cref_cpu *c) {
    memset(c, 0, sizeof *c);
    model_name(c->name, sizeof c->name);
    c->cores = usable_cpus();
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    c->memory = (pages > 0 && psize > 0) ? (uint64_t)pages * (uint64_t)psize : 0;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    c->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c->avx512 = c->avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    c->avx512bf16 = c->avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    const char *env = getenv("SGL_ATTN_CPU_REF_SIMD");
    if (env && !strcmp(env, "plain")) c->avx2 = c->avx512 = c->avx512bf16 = 0;
    else if (env && !strcmp(env, "avx2")) c->avx512 = c->avx512bf16 = 0;
    else if (env && !strcmp(env, "avx512")) c->avx512bf16 = 0;
}

int cref_thread_count(const cref_cpu *c) {
    const char *env = getenv("SGL_ATTN_CPU_REF_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == 0 && v >= 1 && v <= 1024) return (int)v;
    }
    return c->cores > 0 ? c->cores : 1;
}
