/* test_host_threads.c - several threads at once open and close their own
 * hosts, and share one host to create, run and destroy stacks.  A smoke
 * test here; under SAN=tsan it is a race detector run. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

#define THREADS 6
#define ROUNDS 12

typedef struct job {
    const char *path;
    sgl_attn_host *shared;
    unsigned seed;
    int failures;
    char why[256];
} job;

static int run_stack(sgl_attn_host *h, job *j) {
    sgl_attn_model m = {.struct_size = sizeof m, .num_q_heads = 4, .num_kv_heads = 4,
                        .head_dim_qk = 128, .head_dim_v = 128};
    const char *names[] = {"fake_gdn", "fake_good"};
    sgl_attn_backend *b;
    if (sgl_attn_create_stack(h, names, 2, 0, &m, NULL, &b, j->why, sizeof j->why) != SGL_ATTN_OK) return 1;
    float q[16], out[16];
    for (int i = 0; i < 16; i++) q[i] = (float)(rand_r(&j->seed) % 1000) / 3.0f - 100.0f;
    int64_t shape[1] = {16};
    DLTensor tq = {.data = q, .ndim = 1, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    DLTensor to = {.data = out, .ndim = 1, .shape = shape, .dtype = {kDLFloat, 32, 1}};
    sgl_attn_forward_args a = {.struct_size = sizeof a, .q = &tq, .out = &to};
    int bad = sgl_attn_forward_decode(b, &a) != SGL_ATTN_OK;
    for (int i = 0; i < 16 && !bad; i++) bad = out[i] != 2.0f * q[i];
    if (bad) snprintf(j->why, sizeof j->why, "forward result wrong");
    sgl_attn_destroy(b);
    return bad;
}

static void *worker(void *arg) {
    job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        /* Own host: open, enumerate, run, close. */
        sgl_attn_host_options o = {.struct_size = sizeof o, .plugin_path = j->path, .ignore_env_path = 1,
                                   .no_default_dir = 1, .no_conf = 1};
        sgl_attn_host *h;
        if (sgl_attn_host_open(&o, &h, j->why, sizeof j->why) != SGL_ATTN_OK) {
            j->failures++;
            continue;
        }
        for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
            sgl_attn_plugin_info in = {.struct_size = sizeof in};
            if (sgl_attn_host_plugin_info(h, i, &in) != SGL_ATTN_OK) j->failures++;
        }
        if (sgl_attn_host_find_plugin(h, "fake_good") < 0) j->failures++;
        j->failures += run_stack(h, j);
        sgl_attn_host_close(h);
        /* Shared host: concurrent creates and destroys. */
        j->failures += run_stack(j->shared, j);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    char g[PATH_MAX], w[PATH_MAX], path[2 * PATH_MAX + 2];
    snprintf(path, sizeof path, "%s:%s", th_fake("good", NULL, g, sizeof g), th_fake("wrapper", NULL, w, sizeof w));
    sgl_attn_host *shared = th_open(path, 0, NULL, NULL);
    pthread_t t[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){.path = path, .shared = shared, .seed = (unsigned)(1234 + 77 * i)};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].failures) fail_msg("thread %d: %d failures, last: %s", i, jobs[i].failures, jobs[i].why);
    }
    sgl_attn_host_close(shared);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
