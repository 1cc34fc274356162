/* threads.c - the persistent thread pool of one cpu_ref backend.
 *
 * Threads are created once (in create) and sleep on a condition variable
 * between forwards; a forward wakes them with a new generation number, runs
 * its share on the calling thread (tid 0) and waits until every worker is
 * back.  Workers spin a few tens of microseconds (with the CPU's pause hint,
 * never sched_yield, which on a busy machine hands the core away for whole
 * time slices) before sleeping, because layer after layer the next forward
 * usually comes within microseconds. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"

#define SPIN_ROUNDS 1000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct worker {
    struct cref_threads *pool;
    int tid;
} worker;

struct cref_threads {
    pthread_mutex_t mu;
    pthread_cond_t go;
    pthread_cond_t done;
    int n;                 /* threads incl. the caller */
    pthread_t *tids;       /* n - 1 workers */
    worker *args;
    atomic_uint gen;       /* bumped per run; workers wait for a change */
    int pending;           /* workers still running the current task */
    atomic_int stop;       /* set by destroy; the spin loop reads it too */
    cref_task_fn fn;
    void *ctx;
};

static void *worker_main(void *p) {
    worker *w = p;
    struct cref_threads *t = w->pool;
    unsigned seen = 0;
    for (;;) {
        /* Spin on the generation first: cheap wake-up between layers (and
         * out at once when destroy asks us to stop). */
        for (int i = 0; i < SPIN_ROUNDS && atomic_load_explicit(&t->gen, memory_order_acquire) == seen &&
                        !atomic_load_explicit(&t->stop, memory_order_acquire);
             i++)
            cpu_relax();
        pthread_mutex_lock(&t->mu);
        while (atomic_load_explicit(&t->gen, memory_order_relaxed) == seen &&
               !atomic_load_explicit(&t->stop, memory_order_relaxed))
            pthread_cond_wait(&t->go, &t->mu);
        if (atomic_load_explicit(&t->stop, memory_order_relaxed)) {
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        seen = atomic_load_explicit(&t->gen, memory_order_relaxed);
        cref_task_fn fn = t->fn;
        void *ctx = t->ctx;
        pthread_mutex_unlock(&t->mu);
        fn(ctx, w->tid);
        pthread_mutex_lock(&t->mu);
        if (--t->pending == 0) pthread_cond_signal(&t->done);
        pthread_mutex_unlock(&t->mu);
    }
}

int cref_threads_create(int n, cref_threads **out, char *err, size_t err_size) {
    *out = NULL;
    if (n < 1) n = 1;
    struct cref_threads *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, err_size, "cpu_ref: out of memory for the thread pool");
        return SGL_ATTN_E_NOMEM;
    }
    t->n = n;
    atomic_init(&t->gen, 0);
    atomic_init(&t->stop, 0);
    if (pthread_mutex_init(&t->mu, NULL) || pthread_cond_init(&t->go, NULL) ||
        pthread_cond_init(&t->done, NULL)) {
        snprintf(err, err_size, "cpu_ref: pthread mutex/cond init failed");
        free(t);
        return SGL_ATTN_E_INTERNAL;
    }
    if (n > 1) {
        t->tids = calloc((size_t)n - 1, sizeof *t->tids);
        t->args = calloc((size_t)n - 1, sizeof *t->args);
        if (!t->tids || !t->args) {
            free(t->tids);
            free(t->args);
            pthread_mutex_destroy(&t->mu);
            pthread_cond_destroy(&t->go);
            pthread_cond_destroy(&t->done);
            free(t);
            snprintf(err, err_size, "cpu_ref: out of memory for %d threads", n);
            return SGL_ATTN_E_NOMEM;
        }
    }
    for (int i = 1; i < n; i++) {
        t->args[i - 1].pool = t;
        t->args[i - 1].tid = i;
        int rc = pthread_create(&t->tids[i - 1], NULL, worker_main, &t->args[i - 1]);
        if (rc) {
            snprintf(err, err_size, "cpu_ref: pthread_create of thread %d of %d failed: %s", i, n,
                     strerror(rc));
            t->n = i; /* the ones started so far */
            cref_threads_destroy(t);
            return SGL_ATTN_E_INTERNAL;
        }
    }
    *out = t;
    return SGL_ATTN_OK;
}

int cref_threads_count(const cref_threads *t) { return t->n; }

void cref_threads_run(cref_threads *t, cref_task_fn fn, void *ctx) {
    if (t->n == 1) {
        fn(ctx, 0);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->ctx = ctx;
    t->pending = t->n - 1;
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    fn(ctx, 0);
    pthread_mutex_lock(&t->mu);
    while (t->pending) pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

void cref_threads_destroy(cref_threads *t) {
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    atomic_store_explicit(&t->stop, 1, memory_order_release);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (int i = 1; i < t->n; i++) pthread_join(t->tids[i - 1], NULL);
    free(t->tids);
    free(t->args);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->done);
    free(t);
}
