/* bench_json.c - how long reading a large config takes, and whether it grows
 * linearly: sgl_attn_model_from_file on a Hugging Face config.json of 1 MiB
 * and of 16 MiB (the size limit) in each shape of tests/fuzz/json_shapes.h,
 * median of several reads, with the 16 MiB / 1 MiB ratio (16 = linear).  A
 * benchmark, not a test (the fuzz replays carry the timing check). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json_shapes.h"
#include "sgl_attn.h"

#define REPEATS 5

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of reading `path`; *ok whether the reader accepted it. */
static double time_read(const char *path, int *ok) {
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        sgl_attn_model m;
        char err[512];
        double t0 = now_ms();
        *ok = sgl_attn_model_from_file(path, 1, &m, err, sizeof err) == SGL_ATTN_OK;
        t[r] = now_ms() - t0;
        if (!*ok && r == 0) fprintf(stderr, "  (refused: %s)\n", err);
    }
    qsort(t, REPEATS, sizeof t[0], cmp_double);
    return t[REPEATS / 2];
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/sglattn-bench-json-%d.json", tmp && tmp[0] ? tmp : "/tmp", (int)getpid());
    const size_t small = 1u << 20, big = (16u << 20) - 4096; /* the limit is 16 MiB */
    printf("%-18s %12s %12s %7s\n", "shape", "1 MiB (ms)", "16 MiB (ms)", "ratio");
    char json[2048] = "";
    for (int s = 0; s < JS_COUNT; s++) {
        double ms[2];
        size_t sizes[2] = {small, big}, got[2];
        for (int k = 0; k < 2; k++) {
            size_t len;
            char *text = js_make(s, sizes[k], 0, &len);
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(text, 1, len, f) != len) return 1;
            fclose(f);
            free(text);
            int ok;
            ms[k] = time_read(path, &ok);
            got[k] = len;
        }
        printf("%-18s %12.1f %12.1f %7.1f   (%zu and %zu bytes)\n", js_shape_name[s], ms[0], ms[1], ms[1] / ms[0],
               got[0], got[1]);
        size_t u = strlen(json);
        snprintf(json + u, sizeof json - u, "%s{\"shape\": \"%s\", \"ms_1mib\": %.2f, \"ms_16mib\": %.2f}",
                 s ? ", " : "", js_shape_name[s], ms[0], ms[1]);
    }
    unlink(path);
    printf("{\"bench\": \"json\", \"repeats\": %d, \"shapes\": [%s]}\n", REPEATS, json);
    return 0;
}
