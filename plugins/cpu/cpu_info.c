/* cpu_info.c - what this CPU is (the probe's device, create's defaults) and
 * cpu_ref's tuning, read once at create into the instance: conf
 * plugin_options.cpu_ref.{threads, simd}, overridden by
 * $SGL_ATTN_CPU_REF_THREADS and $SGL_ATTN_CPU_REF_SIMD. */
#include <string.h>

#include "cpu_ref.h"
#include "sdk_option.h"

void cref_cpu_query(cref_cpu *c) {
    memset(c, 0, sizeof *c);
    sgl_sdk_cpu_describe(&c->host);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    c->avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c->avx512 = c->avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    c->avx512bf16 = c->avx512 && __builtin_cpu_supports("avx512bf16");
#endif
}

int cref_tuning_read(const sgl_attn_create_args *a, cref_cpu *c, int *threads) {
    sgl_sdk_opts o = sgl_sdk_opts_of(a, CREF_NAME);
    int64_t n;
    int rc = sgl_sdk_opt_int(&o, "threads", "SGL_ATTN_CPU_REF_THREADS", c->host.cores, 1, 1024, &n);
    if (rc) return rc;
    *threads = (int)n;
    /* simd: the most the loops may use, for testing the others; auto: all the CPU has */
    static const char *const simd[] = {"plain", "avx2", "avx512"};
    int level;
    if ((rc = sgl_sdk_opt_choice(&o, "simd", "SGL_ATTN_CPU_REF_SIMD", simd, 3, 3, &level))) return rc;
    if (level < 3) c->avx512bf16 = 0; /* avx512: the tile loops without vdpbf16ps */
    if (level < 2) c->avx512 = 0;
    if (level < 1) c->avx2 = 0;
    return SGL_ATTN_OK;
}
