/* bench_host.c - issue 2's speed goals, measured:
 *   1. open a host over 32 plugin files in a temporary directory (scan,
 *      load, negotiate, probe), then close it: median of many; target 10 ms.
 *   2. one sgl_attn_forward_decode through the host against calling the
 *      no-op plugin's function pointer directly: median ns per call over
 *      many batches; target at most 5 ns more.
 *   3. (issue 4) the scan of a directory of 10,000 non-plugin files.
 * Prints one JSON object.
 *
 *   build/bench/bench_host PATH/TO/noop.so [--opens N] */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sgl_attn.h"

#define N_PLUGINS 32
#define N_JUNK 10000
#define CALLS_PER_BATCH 200000
#define BATCHES 41

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v; returns the q-quantile (0.5 = median). */
static double quantile(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    if (!in || !out) {
        if (in) fclose(in);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out);
}

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX + 256];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static sgl_attn_host *open_on(const char *dir, char *err, size_t err_size) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_path = dir;
    o.ignore_env_path = 1;
    o.no_default_dir = 1;
    o.no_conf = 1;
    sgl_attn_host *h = NULL;
    return sgl_attn_host_open(&o, &h, err, err_size) == SGL_ATTN_OK ? h : NULL;
}

/* Median and p90 of `n` open+close cycles, in ms. */
static int time_opens(const char *dir, int n, size_t *plugins, double *med, double *p90) {
    double *t = malloc((size_t)n * sizeof *t);
    char err[512];
    for (int i = 0; i < n; i++) {
        double t0 = now_ns();
        sgl_attn_host *h = open_on(dir, err, sizeof err);
        if (!h) {
            fprintf(stderr, "bench_host: open failed: %s\n", err);
            free(t);
            return -1;
        }
        *plugins = sgl_attn_host_plugin_count(h);
        sgl_attn_host_close(h);
        t[i] = (now_ns() - t0) / 1e6;
    }
    *p90 = quantile(t, n, 0.9);
    *med = quantile(t, n, 0.5);
    free(t);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_host PATH/TO/noop.so [--opens N]\n");
        return 2;
    }
    int opens = 200;
    if (argc >= 4 && !strcmp(argv[2], "--opens")) opens = atoi(argv[3]);
    if (opens < 5) opens = 5;
    const char *tmpenv = getenv("TMPDIR");
    char dir[PATH_MAX], junk[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sglattn-bench-XXXXXX", tmpenv && tmpenv[0] ? tmpenv : "/tmp");
    snprintf(junk, sizeof junk, "%s/sglattn-junk-XXXXXX", tmpenv && tmpenv[0] ? tmpenv : "/tmp");
    if (!mkdtemp(dir) || !mkdtemp(junk)) {
        perror("bench_host: mkdtemp");
        return 1;
    }
    int rc = 1;
    for (int i = 0; i < N_PLUGINS; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/bench_plugin_%02d.so", dir, i); /* the plugin names itself after its file */
        if (copy_file(argv[1], p)) {
            fprintf(stderr, "bench_host: cannot copy %s to %s\n", argv[1], p);
            goto out;
        }
    }
    for (int i = 0; i < N_JUNK; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/data_%05d.bin", junk, i);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) {
            perror("bench_host: junk file");
            goto out;
        }
        close(fd);
    }

    /* 1. open over 32 plugins */
    size_t n_plugins = 0, n_junk = 0;
    double open_med, open_p90, junk_med, junk_p90, empty_med, empty_p90;
    char empty[PATH_MAX + 8];
    snprintf(empty, sizeof empty, "%s/none", junk); /* missing dir: the fixed cost of a host */
    if (time_opens(dir, 3, &n_plugins, &open_med, &open_p90) || /* warm the page cache */
        time_opens(dir, opens, &n_plugins, &open_med, &open_p90) ||
        time_opens(junk, opens, &n_junk, &junk_med, &junk_p90) ||
        time_opens(empty, opens, &n_junk, &empty_med, &empty_p90))
        goto out;

    /* 2. the forward path */
    char err[512];
    sgl_attn_host *h = open_on(dir, err, sizeof err);
    if (!h) {
        fprintf(stderr, "bench_host: %s\n", err);
        goto out;
    }
    sgl_attn_model m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    const char *names[] = {"bench_plugin_00"};
    sgl_attn_backend *b = NULL;
    if (sgl_attn_create_stack(h, names, 1, 0, &m, NULL, &b, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "bench_host: create: %s\n", err);
        sgl_attn_host_close(h);
        goto out;
    }
    sgl_attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    int (*direct)(sgl_attn_backend *, const sgl_attn_forward_args *) = b->ops->forward_decode;
    double host_ns[BATCHES], direct_ns[BATCHES];
    volatile int sink = 0;
    for (int r = 0; r < BATCHES; r++) { /* interleaved, so drift hits both alike */
        int acc = 0;
        double t0 = now_ns();
        for (int i = 0; i < CALLS_PER_BATCH; i++) acc += sgl_attn_forward_decode(b, &a);
        double t1 = now_ns();
        for (int i = 0; i < CALLS_PER_BATCH; i++) acc += direct(b, &a);
        double t2 = now_ns();
        sink += acc;
        host_ns[r] = (t1 - t0) / CALLS_PER_BATCH;
        direct_ns[r] = (t2 - t1) / CALLS_PER_BATCH;
    }
    double d[BATCHES];
    for (int r = 0; r < BATCHES; r++) d[r] = host_ns[r] - direct_ns[r];
    double delta = quantile(d, BATCHES, 0.5);
    double hmed = quantile(host_ns, BATCHES, 0.5), dmed = quantile(direct_ns, BATCHES, 0.5);
    sgl_attn_destroy(b);
    sgl_attn_host_close(h);

    printf("{\n  \"bench\": \"host\",\n  \"sink\": %d,\n", sink);
    printf("  \"open_close\": {\"plugin_files\": %d, \"plugins_listed\": %zu, \"runs\": %d, "
           "\"median_ms\": %.3f, \"p90_ms\": %.3f, \"target_ms\": 10, \"pass\": %s},\n",
           N_PLUGINS, n_plugins, opens, open_med, open_p90, open_med <= 10.0 ? "true" : "false");
    printf("  \"open_close_no_plugin_dir\": {\"median_ms\": %.3f, \"p90_ms\": %.3f},\n", empty_med, empty_p90);
    printf("  \"scan_10000_non_plugin_files\": {\"files\": %d, \"median_ms\": %.3f, \"p90_ms\": %.3f, "
           "\"scan_only_median_ms\": %.3f},\n",
           N_JUNK, junk_med, junk_p90, junk_med - empty_med);
    printf("  \"forward_decode\": {\"calls_per_batch\": %d, \"batches\": %d, \"host_median_ns\": %.3f, "
           "\"direct_median_ns\": %.3f, \"overhead_median_ns\": %.3f, \"target_ns\": 5, \"pass\": %s}\n}\n",
           CALLS_PER_BATCH, BATCHES, hmed, dmed, delta, delta <= 5.0 ? "true" : "false");
    rc = 0;
out:
    rm_dir(dir);
    rm_dir(junk);
    return rc;
}
