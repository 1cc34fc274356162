/* mla_gpu_bench.c - times cuda_mla's kernels and configurations on issue 7's
 * shapes (GPU only), the variant timer of bench/gpu/final_mla.sh.
 *
 * Each shape is staged once (pool: a random 64 Ki-row block repeated, never
 * zeros; pages shuffled over the whole pool, as a serving pool is), then for
 * every variant a backend is created and planned once and batches of forwards
 * are timed with a synchronisation at the end of each batch; the median batch
 * gives the time per call.  Bytes = the latent rows read once; FLOPs =
 * 2 hq (576 + 512) per query token and key it sees.
 *
 *   mla_gpu_bench OUT.json [MEM_VARIANTS] [COMPUTE_VARIANTS] [all]
 *   MLA_BENCH_ONLY="case;case;..."  only these cases (names as printed); the
 *                                   128-row 16k / 32k shapes run only when named
 *   MLA_BENCH_DEADLINE_S=S          start no variant after S seconds
 *
 * Variants are comma-separated "kernel[+base|+ring|+tma][+split]"
 * (mla_gpu_util.h); +split passes q as the rope split does (forward args
 * q [T, Hq, 512] and q_rope [T, Hq, 64], here views into the same 576-wide
 * rows, so the bytes read are the unsplit run's and only the path differs);
 * MEM_VARIANTS run on the memory-bound shapes (h_q s_q < 64),
 * COMPUTE_VARIANTS on the others; "all" adds two extend shapes.  The JSON
 * carries the device, the date and $SGL_ATTN_COMMIT.
 *
 * It times what attnctl bench times (forward alone after one plan);
 * final_mla.sh prints the ratio of the two on the shapes both time.  Run it
 * with SGL_ATTN_MLA_STRICT=1 (a variant that cannot run then fails at
 * create) and SGL_ATTN_MLA_LOG=1 (the kernel each plan runs, on stderr). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mla_gpu_util.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the defaults beside the fallbacks of other devices (SM 10.x: ring; SM 8.0: base) */
#define DEF_MEM "auto,mma+ring,mma+base"
#define DEF_COMPUTE "auto,mma+base"

/* Median seconds per forward of a planned backend, or -1 (err says why). */
static double time_forward(mg_run *r, const mg_plugin *pl, sgl_attn_backend *b, char *err, size_t n) {
    int ok = 1;
    double t0 = now();
    for (int i = 0; i < 3 && ok; i++) ok = !mg_forward_only(r, b, err, n);
    ok = ok && !pl->ops->synchronize(0, r->stream);
    const double one = (now() - t0) / 3;
    const int calls = one > 0 ? (int)(0.04 / one) + 1 : 1; /* ~40 ms batches */
    double tb[7];
    for (int bi = 0; bi < 7 && ok; bi++) {
        t0 = now();
        for (int i = 0; i < calls && ok; i++) ok = !mg_forward_only(r, b, err, n);
        ok = ok && !pl->ops->synchronize(0, r->stream);
        tb[bi] = (now() - t0) / calls;
    }
    if (!ok) {
        if (!*err) snprintf(err, n, "synchronize failed");
        return -1;
    }
    qsort(tb, 7, sizeof tb[0], cmp);
    return tb[3];
}

int main(int argc, char **argv) {
    mg_plugin pl;
    char why[1024];
    int rc = mg_open(&pl, why, sizeof why);
    if (rc) {
        printf("cuda_mla bench skipped: %s\n", why);
        return rc < 0 ? 1 : 0;
    }
    const char *mem_list = argc > 2 && *argv[2] ? argv[2] : DEF_MEM;
    const char *cmp_list = argc > 3 && *argv[3] ? argv[3] : DEF_COMPUTE;
    const int with_extend = argc > 4 && !strcmp(argv[4], "all");
    FILE *js = argc > 1 ? fopen(argv[1], "w") : NULL;
    if (argc > 1 && !js) {
        printf("cannot write %s\n", argv[1]);
        return 1;
    }
    if (js) {
        char date[32];
        time_t tt = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
        const char *commit = getenv("SGL_ATTN_COMMIT");
        fprintf(js, "{\"tool\": \"mla_gpu_bench\", \"device\": \"%s\", \"date\": \"%s\", \"commit\": \"%s\", \"cases\": [\n",
                pl.caps.device_name, date, commit ? commit : "unknown");
    }
    /* mode, bs, len, q, hq, page, dt, kv_dt, ragged, ref, fill */
    const mg_case cases[] = {
        {MG_DECODE, 64, 4096, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 64, 16384, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 64, 32768, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 4096, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 16384, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 32768, 1, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 4096, 1, 128, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 8192, 1, 128, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_VERIFY, 128, 4096, 2, 64, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_VERIFY, 128, 8192, 2, 64, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_EXTEND, 4, 4096, 512, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_EXTEND, 1, 8192, 8192, 16, 64, MG_BF16, MG_BF16, 0, 0, 1},
        /* only when MLA_BENCH_ONLY names them: 128 rows at long contexts
         * (4.8 GB pools at 32k), and the last two */
        {MG_DECODE, 128, 16384, 1, 128, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_VERIFY, 128, 16384, 2, 64, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 128, 32768, 1, 128, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_VERIFY, 128, 32768, 2, 64, 64, MG_BF16, MG_BF16, 0, 0, 1},
        /* issue 20's rope-split timing (bench/gpu/mla_engine.sh): 32 and 128 heads at B 64 */
        {MG_DECODE, 64, 4096, 1, 32, 64, MG_BF16, MG_BF16, 0, 0, 1},
        {MG_DECODE, 64, 4096, 1, 128, 64, MG_BF16, MG_BF16, 0, 0, 1},
    };
    const size_t n_cases = sizeof cases / sizeof cases[0], n_named_only = 6, first_extend = n_cases - n_named_only - 2;
    printf("%-44s %-16s %10s %8s %9s\n", "case", "variant", "us", "TB/s", "TFLOP/s");
    const char *only = getenv("MLA_BENCH_ONLY"), *dl = getenv("MLA_BENCH_DEADLINE_S");
    const double t_start = now(), deadline = dl && *dl ? atof(dl) : 1e30;
    int first = 1;
    for (size_t ci = 0; ci < n_cases; ci++) {
        const mg_case *c = &cases[ci];
        if (!with_extend && ci >= first_extend && ci < first_extend + 2) continue;
        if (ci >= n_cases - n_named_only && !(only && *only)) continue;
        char name[96], err[1024];
        snprintf(name, sizeof name, "%s:b=%d,l=%d,q=%d,hq=%d,page=%d",
                 c->mode == MG_DECODE ? "decode" : c->mode == MG_VERIFY ? "verify" : "extend", c->bs, c->len, c->q,
                 c->hq, c->page);
        if (only && *only) { /* exact names between ';' */
            int hit = 0;
            for (const char *p = only; *p && !hit;) {
                const char *e = strchr(p, ';');
                const size_t len = e ? (size_t)(e - p) : strlen(p);
                hit = len == strlen(name) && !strncmp(p, name, len);
                p += len + (e ? 1 : 0);
            }
            if (!hit) continue;
        }
        if (now() - t_start > deadline) {
            printf("%-44s skipped (deadline %.0f s)\n", name, deadline);
            continue;
        }
        mg_run r;
        const double ts = now();
        if (mg_setup(&r, &pl, c, 1000 + ci, err, sizeof err)) {
            printf("%-44s setup failed: %s\n", name, err);
            mg_free(&r);
            continue;
        }
        printf("%-44s (staged in %.1f s)\n", name, now() - ts);
        const int mem = c->hq * (c->mode == MG_DECODE ? 1 : c->q) < 64 && c->mode != MG_EXTEND;
        char kl[512];
        snprintf(kl, sizeof kl, "%s", mem ? mem_list : cmp_list);
        char *save = NULL;
        for (char *k = strtok_r(kl, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
            if (now() - t_start > deadline) {
                printf("%-44s %-16s skipped (deadline %.0f s)\n", name, k, deadline);
                continue;
            }
            sgl_attn_backend *b = NULL;
            err[0] = 0;
            fprintf(stderr, "running %s %s\n", name, k); /* a hang is attributable from the log */
            char kern[64];
            snprintf(kern, sizeof kern, "%s", k);
            const size_t kl_len = strlen(kern);
            const int split = kl_len > 6 && !strcmp(kern + kl_len - 6, "+split");
            if (split) kern[kl_len - 6] = 0;
            /* the split's views: rows of 576 elements, latent dims 0-511, rope 512-575 */
            int64_t ql_shape[3] = {r.t, c->hq, 512}, qr_shape[3] = {r.t, c->hq, 64}, q_st[3] = {(int64_t)c->hq * 576, 576, 1};
            DLTensor ql = r.tq, qr = r.tq;
            ql.shape = ql_shape, ql.strides = q_st;
            qr.shape = qr_shape, qr.strides = q_st, qr.byte_offset += 512 * 2;
            r.fa.q = split ? &ql : &r.tq;
            r.fa.q_rope = split ? &qr : NULL;
            if (mg_create(&r, kern, &b, err, sizeof err)) {
                printf("%-44s %-16s %s\n", name, k, err);
                continue;
            }
            r.fa.save_kv_cache = 0; /* time attention alone */
            double med = -1;
            if (b->ops->init_forward_metadata(b, &r.batch))
                printf("%-44s %-16s plan: %s\n", name, k, b->ops->last_error(b));
            else if ((med = time_forward(&r, &pl, b, err, sizeof err)) < 0)
                printf("%-44s %-16s run failed: %s\n", name, k, err);
            if (med > 0) {
                const double tbs = mg_bytes(&r) / med / 1e12, tfl = mg_flops(&r) / med / 1e12;
                printf("%-44s %-16s %10.1f %8.3f %9.1f\n", name, k, med * 1e6, tbs, tfl);
                if (js)
                    fprintf(js,
                            "%s {\"case\": \"%s\", \"kernel\": \"%s\", \"memory_bound\": %s, \"median_us\": %.2f, "
                            "\"tbps\": %.4f, \"tflops\": %.2f}",
                            first ? "" : ",\n", name, k, mem ? "true" : "false", med * 1e6, tbs, tfl),
                        first = 0;
                if (js) fflush(js); /* a killed run keeps what it measured (the summary closes the list) */
            }
            fflush(stdout);
            b->ops->destroy(b);
        }
        mg_free(&r);
    }
    if (js) {
        fprintf(js, "\n]}\n");
        fclose(js);
    }
    mg_close(&pl);
    return 0;
}
