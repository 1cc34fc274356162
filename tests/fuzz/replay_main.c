/* replay_main.c - runs a fuzz target over committed inputs without
 * libFuzzer: every file under the directories in REPLAY_DIRS (colon-separated,
 * set at build time: the target's regressions, then its seed corpus), or
 * the files/directories given on the command line.  This is how every crash
 * the fuzzers ever found stays fixed: its input is committed under
 * tests/fuzz/regressions/<target>/ and replayed by `make unit` (and under
 * ASan/valgrind by the sanitize steps).
 *
 * With REPLAY_SHAPES (1: the conf reader, 2: the model reader) it then checks
 * that reading stays linear: each shape of json_shapes.h at a small and a 16
 * times larger size, and the larger must cost at most 4 x 16 times the
 * smaller (a quadratic reader costs 256 times), plus a fixed slack for a busy
 * machine.  Sizes shrink under SGL_ATTN_TEST_QUICK (valgrind). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifdef REPLAY_SHAPES
#include "json_shapes.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    /* Exactly the file's bytes, in their own allocation: a read past them is
     * an ASan error, as it is under libFuzzer. */
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

static int replay(const char *path, size_t *count) {
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* an absent optional directory */
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) return 1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, names[i]->d_name);
            rc |= replay(p, count);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

#ifdef REPLAY_SHAPES
/* The process's CPU time, not the wall clock: the check compares growth
 * with size, and on a loaded machine the wall clock also counts the time
 * spent waiting for a core. */
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double time_one(const char *text, size_t len) {
    /* In an allocation of its own, unterminated, as libFuzzer gives it. */
    uint8_t *buf = malloc(len);
    if (!buf) abort();
    memcpy(buf, text, len);
    double t0 = now_ms();
    LLVMFuzzerTestOneInput(buf, len);
    double t = now_ms() - t0;
    free(buf);
    return t;
}

static int timing_check(void) {
    const int quick = getenv("SGL_ATTN_TEST_QUICK") != NULL;
    const size_t small = quick ? 32u << 10 : 256u << 10, big = 16 * small;
    int rc = 0;
    for (int shape = 0; shape < JS_COUNT; shape++) {
        size_t ls, lb;
        char *ts = js_make(shape, small, REPLAY_SHAPES == 1, &ls), *tb = js_make(shape, big, REPLAY_SHAPES == 1, &lb);
        double a = 1e30;
        for (int r = 0; r < 3; r++) {
            double t = time_one(ts, ls);
            a = t < a ? t : a;
        }
        double b = 1e30;
        for (int r = 0; r < 2; r++) {
            double t = time_one(tb, lb);
            b = t < b ? t : b;
        }
        double bound = 4.0 * 16.0 * a + (quick ? 2000.0 : 200.0);
        printf("# %s: %zu bytes %.2f ms, %zu bytes %.2f ms (x%.1f; bound %.0f ms)\n", js_shape_name[shape], ls, a, lb,
               b, a > 0 ? b / a : 0.0, bound);
        if (b > bound) {
            fprintf(stderr, "replay: reading %s grows faster than linearly: %.2f ms for %zu bytes, %.2f ms for %zu\n",
                    js_shape_name[shape], a, ls, b, lb);
            rc = 1;
        }
        free(ts);
        free(tb);
    }
    return rc;
}
#endif

int main(int argc, char **argv) {
    size_t count = 0;
    int rc = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            rc |= replay(argv[i], &count);
    } else {
        char dirs[] = REPLAY_DIRS;
        for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
            rc |= replay(d, &count);
    }
    printf("# %s: replayed %zu inputs\n", argv[0], count);
#ifdef REPLAY_SHAPES
    if (argc <= 1) rc |= timing_check();
#endif
    return rc;
}
