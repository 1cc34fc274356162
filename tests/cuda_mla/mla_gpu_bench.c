/* mla_gpu_bench.c - times cuda_mla's kernels on issue 7's shapes (GPU only).
 * Each shape is staged once (pool: a random 64 Ki-row block repeated, never
 * zeros), the backend planned once, then batches of forwards are timed with a
 * synchronisation at the end of each batch; the median batch gives the time
 * per call.  Bytes = the latent rows read once; FLOPs = 2 hq (576 + 512) per
 * query token and key it sees.  Prints a table and (argv[1]) writes JSON.
 *   mla_gpu_bench [out.json] [kernels: simple,mma,wgmma,auto] */
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

int main(int argc, char **argv) {
    mg_plugin pl;
    char why[1024];
    int rc = mg_open(&pl, why, sizeof why);
    if (rc) {
        printf("cuda_mla bench skipped: %s\n", why);
        return rc < 0 ? 1 : 0;
    }
    const char *klist = argc > 2 ? argv[2] : "mma,wgmma,auto";
    FILE *js = argc > 1 ? fopen(argv[1], "w") : NULL;
    if (js) fprintf(js, "{\"device\": \"%s\", \"cases\": [\n", pl.caps.device_name);
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
    };
    printf("%-44s %-7s %10s %8s %9s\n", "case", "kernel", "us", "TB/s", "TFLOP/s");
    int first = 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const mg_case *c = &cases[ci];
        char name[96], err[1024];
        snprintf(name, sizeof name, "%s:b=%d,l=%d,q=%d,hq=%d,page=%d", c->mode == MG_DECODE ? "decode"
                 : c->mode == MG_VERIFY ? "verify" : "extend", c->bs, c->len, c->q, c->hq, c->page);
        mg_run r;
        if (mg_setup(&r, &pl, c, 1000 + ci, err, sizeof err)) {
            printf("%-44s setup failed: %s\n", name, err);
            mg_free(&r);
            continue;
        }
        char kl[64];
        snprintf(kl, sizeof kl, "%s", klist);
        for (char *k = strtok(kl, ","); k; k = strtok(NULL, ",")) {
            sgl_attn_backend *b = NULL;
            if (mg_create(&r, k, &b, err, sizeof err)) {
                printf("%-44s %-7s %s\n", name, k, err);
                continue;
            }
            r.fa.save_kv_cache = 0; /* time attention alone */
            double med = -1;
            if (b->ops->init_forward_metadata(b, &r.batch)) {
                printf("%-44s %-7s plan: %s\n", name, k, b->ops->last_error(b));
            } else {
                /* warm up, then size batches to ~50 ms */
                int ok = 1, n = 1;
                double t0 = now();
                for (int i = 0; i < 3 && ok; i++) ok = !mg_forward_only(&r, b, err, sizeof err);
                ok = ok && !pl.ops->synchronize(0, r.stream);
                double one = (now() - t0) / 3;
                n = one > 0 ? (int)(0.05 / one) + 1 : 1;
                double tb[9];
                for (int bi = 0; bi < 9 && ok; bi++) {
                    t0 = now();
                    for (int i = 0; i < n && ok; i++) ok = !mg_forward_only(&r, b, err, sizeof err);
                    ok = ok && !pl.ops->synchronize(0, r.stream);
                    tb[bi] = (now() - t0) / n;
                }
                if (ok) {
                    qsort(tb, 9, sizeof tb[0], cmp);
                    med = tb[4];
                } else {
                    printf("%-44s %-7s run failed: %s\n", name, k, err);
                }
            }
            if (med > 0) {
                const double tbs = mg_bytes(&r) / med / 1e12, tfl = mg_flops(&r) / med / 1e12;
                printf("%-44s %-7s %10.1f %8.3f %9.1f\n", name, k, med * 1e6, tbs, tfl);
                if (js)
                    fprintf(js, "%s {\"case\": \"%s\", \"kernel\": \"%s\", \"median_us\": %.2f, \"tbps\": %.4f, \"tflops\": %.2f}",
                            first ? "" : ",\n", name, k, med * 1e6, tbs, tfl), first = 0;
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
