/* test_concurrency.c - 8 threads at once open hosts, list plugins, select
 * and create cpu_ref stacks, run CPU forwards and destroy them; built with
 * ThreadSanitizer (make SAN=tsan), which fails the run on any race.
 *
 * Round 1: each thread its own hosts, opened and closed again and again.
 * Round 2: one host shared by all threads (the API allows it); the main
 * thread closes it while the threads' backends still live, so the deferred
 * unload runs under contention too.  Every forward's output must equal the
 * one computed alone before the threads started. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "batch_fixture.h"
#include "sgl_attn.h"

#define THREADS 8

typedef struct shared {
    uint64_t seed;
    fx_shape shape;
    float *expect; /* the output computed alone */
    size_t n_out;
    sgl_attn_host *host; /* round 2 */
    pthread_barrier_t created, closed;
    int iterations;
} shared;

typedef struct worker {
    shared *sh;
    int id;
    int failures;
    char why[512];
} worker;

static sgl_attn_host *open_host(char *err, size_t size) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.log_level = SGL_ATTN_LOG_ERROR;
    sgl_attn_host *h = NULL;
    if (sgl_attn_host_open(&o, &h, err, size)) return NULL;
    return h;
}

/* List every plugin and device the way attnctl does. */
static int list_plugins(sgl_attn_host *h) {
    int usable = 0;
    /* With a plugin path (the TSan step gives the gauntlet's good plugin),
     * its file must have loaded in this thread's host too. */
    if (getenv("SGL_ATTN_PLUGIN_PATH") && sgl_attn_host_find_plugin(h, "gauntlet_good") < 0) return -1;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        if (sgl_attn_host_plugin_info(h, i, &in)) return -1;
        usable += in.status == SGL_ATTN_PLUGIN_USABLE;
        for (uint32_t d = 0; d < in.n_devices; d++) {
            sgl_attn_caps c = {.struct_size = sizeof c};
            if (sgl_attn_host_plugin_caps(h, i, d, &c)) return -1;
        }
    }
    return usable;
}

/* Select cpu_ref for the fixture's model, create, run, compare, destroy. */
static int select_and_run(worker *w, sgl_attn_host *h, sgl_attn_backend **keep) {
    fx f;
    if (fx_build(&f, &w->sh->shape, w->sh->seed)) return snprintf(w->why, sizeof w->why, "oom"), -1;
    sgl_attn_select_request rq;
    memset(&rq, 0, sizeof rq);
    rq.struct_size = sizeof rq;
    rq.backend = "cpu_ref";
    sgl_attn_selection *sel = NULL;
    sgl_attn_backend *b = NULL;
    char err[512] = "";
    int rc = sgl_attn_select(h, &f.model, &rq, &sel, err, sizeof err);
    if (!rc) {
        sgl_attn_create_options co = {sizeof co, f.max_reqs, f.max_tokens, f.max_ctx};
        rc = sgl_attn_create(h, sel, &f.model, &co, &b, err, sizeof err);
    }
    sgl_attn_selection_free(sel);
    if (!rc) rc = sgl_attn_init_forward_metadata(b, &f.batch);
    if (!rc) rc = sgl_attn_forward_decode(b, &f.args);
    if (rc) {
        snprintf(w->why, sizeof w->why, "thread %d: %s%s", w->id, err, b ? sgl_attn_last_error(b) : "");
    } else if (memcmp(f.out, w->sh->expect, w->sh->n_out * sizeof(float))) {
        snprintf(w->why, sizeof w->why, "thread %d: output differs from the single-threaded run",
                 w->id);
        rc = -1;
    }
    if (keep && !rc) {
        *keep = b; /* the caller runs it again later, then destroys it */
    } else if (b) {
        sgl_attn_destroy(b);
    }
    fx_free(&f);
    return rc ? -1 : 0;
}

static void *own_hosts(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->sh->iterations && !w->failures; i++) {
        char err[512] = "";
        sgl_attn_host *h = open_host(err, sizeof err);
        if (!h) {
            snprintf(w->why, sizeof w->why, "thread %d: open: %s", w->id, err);
            w->failures++;
            break;
        }
        if (list_plugins(h) < 1) {
            snprintf(w->why, sizeof w->why, "thread %d: no usable plugin", w->id);
            w->failures++;
        } else if (select_and_run(w, h, NULL)) {
            w->failures++;
        }
        sgl_attn_host_close(h);
    }
    return NULL;
}

static void *shared_host(void *arg) {
    worker *w = arg;
    sgl_attn_backend *b = NULL;
    for (int i = 0; i < w->sh->iterations && !w->failures; i++) {
        if (list_plugins(w->sh->host) < 1 || select_and_run(w, w->sh->host, NULL)) w->failures++;
    }
    if (!w->failures && select_and_run(w, w->sh->host, &b)) w->failures++;
    pthread_barrier_wait(&w->sh->created);
    pthread_barrier_wait(&w->sh->closed); /* the host is closed now; b keeps it alive */
    if (b) {
        fx f;
        if (!fx_build(&f, &w->sh->shape, w->sh->seed)) {
            if (sgl_attn_init_forward_metadata(b, &f.batch) || sgl_attn_forward_decode(b, &f.args) ||
                memcmp(f.out, w->sh->expect, w->sh->n_out * sizeof(float))) {
                snprintf(w->why, sizeof w->why, "thread %d: forward after close failed: %s", w->id,
                         sgl_attn_last_error(b));
                w->failures++;
            }
            fx_free(&f);
        }
        sgl_attn_destroy(b);
    }
    return NULL;
}

static void run_threads(shared *sh, void *(*fn)(void *)) {
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].sh = sh;
        w[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, fn, &w[i]), 0);
    }
    if (fn == shared_host) {
        pthread_barrier_wait(&sh->created);
        sgl_attn_host_close(sh->host);
        sh->host = NULL;
        pthread_barrier_wait(&sh->closed);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < THREADS; i++)
        if (w[i].failures) fail_msg("%s", w[i].why);
}

static void prepare(shared *sh) {
    uint64_t s = fx_test_seed();
    fx_shape shape = {SGL_ATTN_MODE_DECODE,
                      fx_range(&s, 2, 6),
                      fx_range(&s, 16, 200),
                      1 << fx_range(&s, 0, 4),
                      8,
                      2,
                      64,
                      32};
    sh->shape = shape;
    sh->seed = fx_rand(&s);
    const char *it = getenv("SGL_ATTN_CONCURRENCY_ITERATIONS");
    sh->iterations = it ? atoi(it) : 4;
    /* The expected output: one run, alone. */
    fx f;
    assert_int_equal(fx_build(&f, &sh->shape, sh->seed), 0);
    char err[512] = "";
    sgl_attn_host *h = open_host(err, sizeof err);
    if (!h) fail_msg("open: %s", err);
    const char *names[] = {"cpu_ref"};
    sgl_attn_create_options co = {sizeof co, f.max_reqs, f.max_tokens, f.max_ctx};
    sgl_attn_backend *b = NULL;
    if (sgl_attn_create_stack(h, names, 1, 0, &f.model, &co, &b, err, sizeof err))
        fail_msg("create: %s", err);
    assert_int_equal(sgl_attn_init_forward_metadata(b, &f.batch), 0);
    assert_int_equal(sgl_attn_forward_decode(b, &f.args), 0);
    sh->n_out = (size_t)f.T * (size_t)shape.hq * (size_t)shape.d;
    sh->expect = malloc(sh->n_out * sizeof(float));
    assert_non_null(sh->expect);
    memcpy(sh->expect, f.out, sh->n_out * sizeof(float));
    sgl_attn_destroy(b);
    sgl_attn_host_close(h);
    fx_free(&f);
}

static void test_threads_with_own_hosts(void **state) {
    shared *sh = *state;
    run_threads(sh, own_hosts);
}

static void test_threads_sharing_one_host(void **state) {
    shared *sh = *state;
    char err[512] = "";
    sh->host = open_host(err, sizeof err);
    if (!sh->host) fail_msg("open: %s", err);
    assert_int_equal(pthread_barrier_init(&sh->created, NULL, THREADS + 1), 0);
    assert_int_equal(pthread_barrier_init(&sh->closed, NULL, THREADS + 1), 0);
    run_threads(sh, shared_host);
    pthread_barrier_destroy(&sh->created);
    pthread_barrier_destroy(&sh->closed);
}

static int setup(void **state) {
    shared *sh = calloc(1, sizeof *sh);
    if (!sh) return -1;
    prepare(sh);
    *state = sh;
    return 0;
}

static int teardown(void **state) {
    shared *sh = *state;
    if (!sh) return 0; /* setup failed before making it */
    free(sh->expect);
    free(sh);
    return 0;
}

int main(void) {
    /* cpu_ref's own pool: one worker thread besides the caller unless told
     * otherwise, so 8 backends at once stay within a small machine. */
    setenv("SGL_ATTN_CPU_REF_THREADS", "2", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_with_own_hosts),
        cmocka_unit_test(test_threads_sharing_one_host),
    };
    return cmocka_run_group_tests_name("concurrency", tests, setup, teardown);
}
