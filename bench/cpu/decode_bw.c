/* decode_bw.c - issue 3's speed goal: one request decoding over 32k tokens
 * of bf16 KV (GQA 32/8, d128, page 16) with cpu_ref on every core, against
 * this machine's memory-read bandwidth measured in the same run.
 *
 *   build/bench/cpu_decode_bw [--len N] [--page P] [--min-time S] [--json FILE]
 *   build/bench/cpu_decode_bw --calls N ...   N decode calls and nothing else
 *                                             (for callgrind / perf)
 *   cpu_icount build/bench/cpu_decode_bw --calls N --mark ...
 *                                             instructions of those N calls
 *
 * cpu_ref is linked in directly (no host), so this times its forward alone.
 * Bytes counted: the K and V rows read (len x 8 heads x 128 x 2 B, twice),
 * plus q and out. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_bench.h"
#include "sgl_attn_abi.h"

int sgl_attn_cpu_ref_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

enum { HQ = 32, HKV = 8, D = 128 };

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static void loadavg(double l[3]) {
    l[0] = l[1] = l[2] = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) l[0] = l[1] = l[2] = -1;
    fclose(f);
}

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint16_t bf16_of(double x) {
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static void nolog(void *c, int l, const char *p, const char *f, ...) { (void)c, (void)l, (void)p, (void)f; }
static const char *noopt(void *c, const char *p, const char *k) {
    (void)c, (void)p, (void)k;
    return NULL;
}

static DLTensor tensor(void *data, DLDataType dt, int ndim, int64_t *shape) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.dtype = dt;
    t.ndim = ndim;
    t.shape = shape;
    return t;
}

int main(int argc, char **argv) {
    int64_t len = 32768, page = 16;
    double min_time = 2.0;
    const char *json = NULL;
    long profile_calls = 0;
    int mark = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--len") && i + 1 < argc) len = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--page") && i + 1 < argc) page = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) profile_calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--mark")) mark = 1;
        else {
            fprintf(stderr, "usage: %s [--len N] [--page P] [--min-time S] [--json FILE] [--calls N [--mark]]\n", argv[0]);
            return 2;
        }
    }
    if (len < 1 || page < 1) {
        fprintf(stderr, "--len and --page must be >= 1\n");
        return 2;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = getenv("SGL_ATTN_CPU_REF_THREADS") ? atoi(getenv("SGL_ATTN_CPU_REF_THREADS")) : (int)ncpu;

    /* Pool: pages shuffled, page 0 reserved. */
    const int64_t pages = (len + page - 1) / page + 2, slots = pages * page;
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)pages);
    uint64_t st = 1234;
    for (int64_t p = 0; p < pages; p++) perm[p] = p;
    for (int64_t p = pages - 1; p > 1; p--) {
        int64_t q = 1 + (int64_t)(rnd(&st) % (uint64_t)p), t = perm[p];
        perm[p] = perm[q];
        perm[q] = t;
    }
    int32_t *r2t = malloc(sizeof(int32_t) * (size_t)len);
    for (int64_t c = 0; c < len; c++) r2t[c] = (int32_t)(perm[1 + c / page] * page + c % page);
    const size_t kv_elems = (size_t)slots * HKV * D;
    uint16_t *kc = aligned_alloc(64, kv_elems * 2), *vc = aligned_alloc(64, kv_elems * 2);
    for (size_t e = 0; e < kv_elems; e++) {
        kc[e] = bf16_of((double)(rnd(&st) % 2001) / 1000.0 - 1.0);
        vc[e] = bf16_of((double)(rnd(&st) % 2001) / 1000.0 - 1.0);
    }
    uint16_t q[HQ * D], out[HQ * D], kn[HKV * D], vn[HKV * D];
    for (int e = 0; e < HQ * D; e++) q[e] = bf16_of((double)(rnd(&st) % 2001) / 500.0 - 2.0);
    for (int e = 0; e < HKV * D; e++) kn[e] = bf16_of(0.1), vn[e] = bf16_of(0.2);
    int32_t req_idx = 0, seq = (int32_t)len, ocl = r2t[len - 1];

    DLDataType bf = {kDLBfloat, 16, 1}, i32 = {kDLInt, 32, 1};
    int64_t sh_kc[3] = {slots, HKV, D}, sh_r2t[2] = {1, len}, sh_1[1] = {1}, sh_q[3] = {1, HQ, D},
            sh_k[3] = {1, HKV, D};
    DLTensor t_kc = tensor(kc, bf, 3, sh_kc), t_vc = tensor(vc, bf, 3, sh_kc), t_r2t = tensor(r2t, i32, 2, sh_r2t),
             t_req = tensor(&req_idx, i32, 1, sh_1), t_seq = tensor(&seq, i32, 1, sh_1),
             t_ocl = tensor(&ocl, i32, 1, sh_1), t_q = tensor(q, bf, 3, sh_q), t_out = tensor(out, bf, 3, sh_q),
             t_k = tensor(kn, bf, 3, sh_k), t_v = tensor(vn, bf, 3, sh_k);
    sgl_attn_batch batch = {.struct_size = sizeof batch, .forward_mode = SGL_ATTN_MODE_DECODE, .batch_size = 1,
                            .num_tokens = 1, .page_size = (int32_t)page, .tokens_per_req = 1, .seq_lens_sum = len,
                            .req_to_token = &t_r2t, .req_pool_indices = &t_req, .seq_lens = &t_seq,
                            .out_cache_loc = &t_ocl};
    sgl_attn_layer layer = {.struct_size = sizeof layer, .num_q_heads = HQ, .num_kv_heads = HKV, .head_dim_qk = D,
                            .head_dim_v = D, .sm_scale = (float)(1.0 / sqrt(D)), .sliding_window = -1,
                            .k_cache = &t_kc, .v_cache = &t_vc, .k_scale = 1, .v_scale = 1};
    sgl_attn_forward_args args = {.struct_size = sizeof args, .save_kv_cache = 1, .layer = &layer, .batch = &batch,
                                  .q = &t_q, .k = &t_k, .v = &t_v, .out = &t_out};
    sgl_attn_model model = {.struct_size = sizeof model, .num_layers = 1, .num_q_heads = HQ, .num_kv_heads = HKV,
                            .head_dim_qk = D, .head_dim_v = D, .dtype = SGL_ATTN_DT_BF16,
                            .kv_dtype = SGL_ATTN_DT_BF16, .sliding_window = -1};

    sgl_attn_host_api api = {.struct_size = sizeof api, .abi_major = SGL_ATTN_ABI_MAJOR,
                             .abi_minor_max = SGL_ATTN_ABI_MINOR, .host_version = "bench", .log = nolog,
                             .get_option = noopt};
    sgl_attn_plugin_answer ans = {.struct_size = sizeof ans};
    char err[512] = "";
    sgl_attn_backend *b = NULL;
    sgl_attn_create_args ca = {.struct_size = sizeof ca, .model = &model, .max_reqs = 1, .max_tokens = 1,
                               .max_context = (int32_t)len, .error = err, .error_size = sizeof err};
    if (sgl_attn_cpu_ref_entry(&api, &ans) || ans.plugin->create(&ca, &b)) {
        fprintf(stderr, "cpu_ref create failed: %s\n", err);
        return 1;
    }
    const double bytes_per_call = (double)len * HKV * D * 2 * 2 + (double)HQ * D * 2 * 2;
    if (b->ops->init_forward_metadata(b, &batch) || b->ops->forward_decode(b, &args)) {
        fprintf(stderr, "cpu_ref forward failed: %s\n", b->ops->last_error(b));
        return 1;
    }

    if (profile_calls > 0) {
        if (mark) raise(SIGSTOP); /* cpu_icount counts from here */
        for (long c = 0; c < profile_calls; c++) b->ops->forward_decode(b, &args);
        if (mark) raise(SIGSTOP);
        b->ops->destroy(b);
        return 0;
    }
    /* Rounds of (a batch of decode calls, one read-bandwidth pass),
     * interleaved so that both see the same machine (it may be shared). */
    cpu_bw *bw = cpu_bw_open(threads, (size_t)512 << 20);
    if (!bw) {
        fprintf(stderr, "read-bandwidth buffer: out of memory\n");
        return 1;
    }
    for (int w = 0; w < 3; w++) b->ops->forward_decode(b, &args);
    cpu_bw_pass(bw, NULL);
    /* Per round: wall and CPU time of the decodes and of the read pass.  The
     * paired wall ratio is the goal's measure; the CPU-time ratio (bytes per
     * CPU-second of each, over the same threads) is what both would reach
     * with the cores to themselves, a steadier view on a loaded machine. */
    double times[256], bws[256], ratios[256], cratios[256];
    int nb = 0;
    long n_calls = 0;
    double cpu_total = 0, load0[3], load1[3];
    loadavg(load0);
    const double t_start = now(), read_bytes = (double)cpu_bw_bytes(bw);
    while ((now() - t_start < min_time || nb < 7) && nb < 256) {
        const int calls = 4;
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = now();
        for (int c = 0; c < calls; c++) b->ops->forward_decode(b, &args);
        times[nb] = (now() - t0) / calls;
        const double cpu = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / calls;
        cpu_total += cpu * calls;
        n_calls += calls;
        double read_cpu;
        bws[nb] = cpu_bw_pass(bw, &read_cpu);
        ratios[nb] = bytes_per_call / times[nb] / 1e9 / bws[nb];
        cratios[nb] = (bytes_per_call / cpu) / (read_bytes / read_cpu);
        nb++;
    }
    loadavg(load1);
    cpu_bw_close(bw);
    char device[256] = "";
    sgl_attn_caps caps = {.struct_size = sizeof caps};
    if (ans.plugin->probe && ans.plugin->probe(0, &caps) == 0) snprintf(device, sizeof device, "%s", caps.device_name);
    b->ops->destroy(b);
    const double t_med = cpu_bench_median(times, nb), t_best = times[0];
    const double bw_med = cpu_bench_median(bws, nb), bw_best = cpu_bench_max(bws, nb);
    const double ratio_med = cpu_bench_median(ratios, nb), cpu_per_call = cpu_total / (double)n_calls;
    const double cratio_med = cpu_bench_median(cratios, nb);
    const double gbps = bytes_per_call / t_med / 1e9;
    printf("decode: 1 request, %lld tokens bf16 KV, GQA %d/%d, d%d, page %lld, %d threads, %d rounds; %s\n",
           (long long)len, HQ, HKV, D, (long long)page, threads, nb, device);
    printf("  load average %.2f at the start, %.2f at the end\n", load0[0], load1[0]);
    printf("  decode median %.3f ms (best %.3f ms): %.2f GB/s of KV+q+out; CPU time %.3f ms per call\n",
           t_med * 1e3, t_best * 1e3, gbps, cpu_per_call * 1e3);
    printf("  read bandwidth (%d threads, 512 MiB) median %.2f GB/s, best %.2f GB/s\n", threads, bw_med, bw_best);
    printf("  ratio decode / read bandwidth: %.2f (median of paired rounds), %.2f (best decode / best read); "
           "goal >= 0.50\n",
           ratio_med, bytes_per_call / t_best / 1e9 / bw_best);
    printf("  by CPU time (bytes per CPU-second, decode / read, median of rounds): %.2f\n", cratio_med);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        char date[32] = "";
        time_t tt = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", localtime(&tt));
        fprintf(f,
                "{\"bench\": \"cpu_decode_bw\", \"date\": \"%s\", \"device\": \"%s\", \"len\": %lld, \"page\": %lld, "
                "\"threads\": %d, \"rounds\": %d, \"load_avg_start\": %.2f, \"load_avg_end\": %.2f, "
                "\"decode_ms\": %.4f, \"decode_best_ms\": %.4f, \"decode_gbps\": %.3f, \"cpu_ms_per_call\": %.4f, "
                "\"read_gbps_median\": %.3f, \"read_gbps_best\": %.3f, \"ratio_paired_median\": %.3f, "
                "\"ratio_best\": %.3f, \"ratio_cpu_time_median\": %.3f}\n",
                date, device, (long long)len, (long long)page, threads, nb, load0[0], load1[0], t_med * 1e3,
                t_best * 1e3, gbps, cpu_per_call * 1e3, bw_med, bw_best, ratio_med,
                bytes_per_call / t_best / 1e9 / bw_best, cratio_med);
        fclose(f);
    }
    free(perm);
    free(r2t);
    free(kc);
    free(vc);
    return 0;
}
