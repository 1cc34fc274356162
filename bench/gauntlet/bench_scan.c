/* bench_scan.c - is the plugin scan linear in the directory size?  Opens a
 * host (no conf, no drop-in dir, probes in process) over a directory of N
 * files that are not plugins, for N = 1,000 and 10,000, in two flavours:
 *   other   names not ending in .so (README, *.txt, *.so.1): skipped by name
 *   junk    *.so files that are not ELF: each opened, read, refused
 * plus the gauntlet's good plugin in each, which must load.  Prints the
 * median of several opens per case and the 10k/1k ratio (10 = linear), and
 * one JSON object at the end.  A benchmark, not a test. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sgl_attn.h"

#define REPEATS 7

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int write_file(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    ssize_t w = write(fd, data, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

static int copy_file(const char *src, const char *dst) {
    FILE *f = fopen(src, "rb");
    if (!f) return -1;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (write_file(dst, buf, n)) return -1;
    return chmod(dst, 0755);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* Median ms of REPEATS host opens over `dir`; -1 if the good plugin is not
 * usable there (the benchmark would be measuring a failure). */
static double time_open(const char *dir, size_t *entries) {
    double t[REPEATS];
    for (int r = 0; r < REPEATS; r++) {
        sgl_attn_host_options o;
        memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.plugin_path = dir;
        o.ignore_env_path = o.no_default_dir = o.no_conf = 1;
        o.log_level = SGL_ATTN_LOG_ERROR;
        sgl_attn_host *h = NULL;
        char err[256];
        double t0 = now_ms();
        if (sgl_attn_host_open(&o, &h, err, sizeof err)) {
            fprintf(stderr, "open: %s\n", err);
            return -1;
        }
        t[r] = now_ms() - t0;
        *entries = sgl_attn_host_plugin_count(h);
        int ok = sgl_attn_host_find_plugin(h, "gauntlet_good") >= 0;
        sgl_attn_host_close(h);
        if (!ok) return -1;
    }
    qsort(t, REPEATS, sizeof t[0], cmp_double);
    return t[REPEATS / 2];
}

static int fill(const char *dir, int n, int junk, const char *good) {
    if (mkdir(dir, 0755) && errno != EEXIST) return -1;
    char p[4096];
    static const char *const other[] = {"txt", "so.1", "json", "so~"};
    for (int i = 0; i < n; i++) {
        if (junk)
            snprintf(p, sizeof p, "%s/junk%05d.so", dir, i);
        else
            snprintf(p, sizeof p, "%s/file%05d.%s", dir, i, other[i % 4]);
        if (write_file(p, "not a plugin\n", 13)) return -1;
    }
    snprintf(p, sizeof p, "%s/good.so", dir);
    return copy_file(good, p);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/gauntlet/good.so\n", argv[0]);
        return 2;
    }
    char root[] = "/tmp/sglattn-bench-scan-XXXXXX";
    if (!mkdtemp(root)) return perror("mkdtemp"), 1;
    chmod(root, 0755);
    static const int sizes[] = {1000, 10000};
    double ms[2][2];
    size_t entries[2][2];
    int rc = 0;
    for (int junk = 0; junk < 2 && !rc; junk++)
        for (int s = 0; s < 2 && !rc; s++) {
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s%d", root, junk ? "junk" : "other", sizes[s]);
            if (fill(dir, sizes[s], junk, argv[1])) {
                perror(dir);
                rc = 1;
                break;
            }
            ms[junk][s] = time_open(dir, &entries[junk][s]);
            if (ms[junk][s] < 0)
                rc = 1;
            else
                printf("%-6s %6d files: host open %8.2f ms (median of %d), %zu entries\n",
                       junk ? "junk" : "other", sizes[s], ms[junk][s], REPEATS, entries[junk][s]);
        }
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (rc) return rc;
    printf("ratio 10k/1k: other %.1f, junk %.1f (10 = linear)\n", ms[0][1] / ms[0][0],
           ms[1][1] / ms[1][0]);
    printf("{\"bench\":\"gauntlet_scan\",\"other_1k_ms\":%.3f,\"other_10k_ms\":%.3f,\"junk_so_1k_ms\":%"
           ".3f,"
           "\"junk_so_10k_ms\":%.3f,\"repeats\":%d}\n",
           ms[0][0], ms[0][1], ms[1][0], ms[1][1], REPEATS);
    return 0;
}
