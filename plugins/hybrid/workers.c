/* workers.c - a fixed pool of threads owned by one wrapper instance.  Threads
 * are created with the instance so a forward never creates one; items are
 * taken from an atomic counter, so uneven items (ragged requests) balance. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "hyb.h"

struct hyb_workers {
    int n;                 /* threads including the caller */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    uint64_t gen;          /* bumped once per run; guarded by mu */
    int quit;
    int busy;              /* helpers still inside this run */
    hyb_task_fn fn;
    void *ctx;
    int64_t n_items;
    atomic_llong next;
};

typedef struct worker_arg {
    hyb_workers *w;
    int id;
} worker_arg;

static void drain(hyb_workers *w, int id) {
    for (;;) {
        long long i = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed);
        if (i >= w->n_items) return;
        w->fn(w->ctx, (int64_t)i, id);
    }
}

static void *worker_main(void *p) {
    worker_arg *a = p;
    hyb_workers *w = a->w;
    int id = a->id;
    free(a);
    uint64_t seen = 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->gen == seen && !w->quit) pthread_cond_wait(&w->start_cv, &w->mu);
        if (w->quit) break;
        seen = w->gen;
        pthread_mutex_unlock(&w->mu);
        drain(w, id);
        pthread_mutex_lock(&w->mu);
        if (--w->busy == 0) pthread_cond_signal(&w->done_cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int hyb_workers_create(int n_threads, hyb_workers **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    hyb_workers *w = calloc(1, sizeof *w);
    if (!w) return SGL_ATTN_E_NOMEM;
    w->n = n_threads;
    atomic_init(&w->next, 0);
    if (pthread_mutex_init(&w->mu, NULL)) { free(w); return SGL_ATTN_E_INTERNAL; }
    pthread_cond_init(&w->start_cv, NULL);
    pthread_cond_init(&w->done_cv, NULL);
    if (n_threads > 1) {
        w->th = calloc((size_t)n_threads - 1, sizeof *w->th);
        if (!w->th) { w->n = 1; hyb_workers_destroy(w); return SGL_ATTN_E_NOMEM; }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *a = malloc(sizeof *a);
            int failed = !a;
            if (!failed) {
                a->w = w;
                a->id = i;
                failed = pthread_create(&w->th[i - 1], NULL, worker_main, a) != 0;
            }
            if (failed) {
                free(a);
                w->n = i; /* join only what started */
                hyb_workers_destroy(w);
                return SGL_ATTN_E_INTERNAL;
            }
        }
    }
    *out = w;
    return SGL_ATTN_OK;
}

int hyb_workers_count(const hyb_workers *w) { return w ? w->n : 1; }

void hyb_workers_run(hyb_workers *w, int64_t n_items, hyb_task_fn fn, void *ctx) {
    if (n_items <= 0) return;
    if (w->n == 1 || n_items == 1) {
        for (int64_t i = 0; i < n_items; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->fn = fn;
    w->ctx = ctx;
    w->n_items = n_items;
    atomic_store_explicit(&w->next, 0, memory_order_relaxed);
    w->busy = w->n - 1;
    w->gen++;
    pthread_cond_broadcast(&w->start_cv);
    pthread_mutex_unlock(&w->mu);
    drain(w, 0);
    pthread_mutex_lock(&w->mu);
    while (w->busy > 0) pthread_cond_wait(&w->done_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void hyb_workers_destroy(hyb_workers *w) {
    if (!w) return;
    if (w->th) {
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_cond_broadcast(&w->start_cv);
        pthread_mutex_unlock(&w->mu);
        for (int i = 1; i < w->n; i++) pthread_join(w->th[i - 1], NULL);
        free(w->th);
    }
    pthread_cond_destroy(&w->start_cv);
    pthread_cond_destroy(&w->done_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
