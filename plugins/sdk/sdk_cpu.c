/* sdk_cpu.c - see sdk_cpu.h. */
#include "sdk_cpu.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

void sgl_sdk_cpu_describe(sgl_sdk_cpu *c) {
    memset(c, 0, sizeof *c);
    model_name(c->name, sizeof c->name);
#if defined(__x86_64__)
    c->arch = "x86_64";
#elif defined(__aarch64__)
    c->arch = "aarch64";
#else
    c->arch = "cpu";
#endif
    c->cores = usable_cpus();
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    c->memory = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
}
