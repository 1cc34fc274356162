/* bench_validate.c - what the validation layer costs per call.
 *
 * 1. The layer alone: validate over a no-op inner against the no-op inner
 *    called directly, for init_forward_metadata (which walks every slot the
 *    batch uses) and forward_decode (O(1) plus the tensor headers).
 * 2. In context: cpu_ref decode through libsglattn's stack, with and without
 *    the layer (host option validate = 1 / 0).
 * Medians of 21 repetitions; one JSON object at the end.  Without the layer
 * nothing of it runs at all (it is not in the stack), so part 2's "off"
 * column is also the cost of having validation available.  A benchmark, not
 * a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch_fixture.h"
#include "sgl_attn.h"

int sgl_attn_validate_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

#define REPS 9

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------ no-op inner */

static int noop_init(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)b, (void)batch;
    return SGL_ATTN_OK;
}
static int noop_forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    (void)b, (void)a;
    return SGL_ATTN_OK;
}
static const char *noop_error(sgl_attn_backend *b) {
    (void)b;
    return "";
}
static void noop_destroy(sgl_attn_backend *b) {
    (void)b;
}
static const sgl_attn_backend_ops noop_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = noop_init,
    .forward_extend = noop_forward,
    .forward_decode = noop_forward,
    .last_error = noop_error,
    .destroy = noop_destroy,
};

typedef int (*call_fn)(sgl_attn_backend *b, fx *f);
static int call_init(sgl_attn_backend *b, fx *f) {
    return b->ops->init_forward_metadata(b, &f->batch);
}
static int call_decode(sgl_attn_backend *b, fx *f) {
    return b->ops->forward_decode(b, &f->args);
}
static int call_api_decode(sgl_attn_backend *b, fx *f) {
    return sgl_attn_forward_decode(b, &f->args);
}

/* Median ns per call over REPS repetitions of `per_rep` calls. */
static double per_call(sgl_attn_backend *b, fx *f, call_fn fn, int per_rep) {
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < per_rep; i++)
            if (fn(b, f)) {
                fprintf(stderr, "call failed: %s\n", b->ops->last_error(b));
                exit(1);
            }
        t[r] = (now_ns() - t0) / per_rep;
    }
    qsort(t, REPS, sizeof t[0], cmp_double);
    return t[REPS / 2];
}

static sgl_attn_backend *validate_over(sgl_attn_backend *inner, fx *f) {
    static const sgl_attn_host_api api = {
        sizeof api, SGL_ATTN_ABI_MAJOR, 0, SGL_ATTN_ABI_MINOR, 0, "bench", NULL, NULL, NULL};
    sgl_attn_plugin_answer ans;
    memset(&ans, 0, sizeof ans);
    ans.struct_size = sizeof ans;
    if (sgl_attn_validate_entry(&api, &ans) || !ans.plugin) exit(1);
    sgl_attn_create_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.model = &f->model;
    a.max_reqs = f->max_reqs;
    a.max_tokens = f->max_tokens;
    a.max_context = f->max_ctx;
    a.inner = inner;
    a.inner_caps = &f->caps;
    sgl_attn_backend *b = NULL;
    if (ans.plugin->create(&a, &b)) exit(1);
    return b;
}

static sgl_attn_backend *cpu_ref_stack(sgl_attn_host *h, fx *f) {
    const char *names[] = {"cpu_ref"};
    sgl_attn_create_options co = {sizeof co, f->max_reqs, f->max_tokens, f->max_ctx};
    sgl_attn_backend *b = NULL;
    char err[512];
    if (sgl_attn_create_stack(h, names, 1, 0, &f->model, &co, &b, err, sizeof err)) {
        fprintf(stderr, "create: %s\n", err);
        exit(1);
    }
    return b;
}

static sgl_attn_host *open_host(int validate) {
    sgl_attn_host_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.ignore_env_path = o.no_default_dir = o.no_conf = 1;
    o.validate = validate;
    sgl_attn_host *h = NULL;
    char err[256];
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) {
        fprintf(stderr, "open: %s\n", err);
        exit(1);
    }
    return h;
}

typedef struct result {
    const char *shape;
    int slots_walked;
    double init_noop, init_val, dec_noop, dec_val, cpu_off, cpu_on;
} result;

static void run_shape(const char *label, fx_shape s, uint64_t seed, result *r) {
    fx f;
    if (fx_build(&f, &s, seed)) exit(1);
    r->shape = label;
    r->slots_walked = (int)f.batch.seq_lens_sum;
    sgl_attn_backend noop = {&noop_ops, sizeof(sgl_attn_backend_ops), 0, NULL};
    sgl_attn_backend *v = validate_over(&noop, &f);
    r->init_noop = per_call(&noop, &f, call_init, 2000);
    r->init_val = per_call(v, &f, call_init, 200);
    if (call_init(v, &f)) exit(1);
    r->dec_noop = per_call(&noop, &f, call_decode, 20000);
    r->dec_val = per_call(v, &f, call_decode, 20000);
    v->ops->destroy(v);

    sgl_attn_host *off = open_host(0), *on = open_host(1);
    sgl_attn_backend *b0 = cpu_ref_stack(off, &f), *b1 = cpu_ref_stack(on, &f);
    if (sgl_attn_init_forward_metadata(b0, &f.batch) || sgl_attn_init_forward_metadata(b1, &f.batch))
        exit(1);
    /* Interleave the two so drift (clock, caches, other load) hits both;
     * the median of the rounds' medians. */
    enum { ROUNDS = 9 };
    double off_t[ROUNDS], on_t[ROUNDS];
    double one = per_call(b0, &f, call_api_decode, 1);
    int per_rep = one > 2e6 ? 1 : (int)(2e6 / one);
    for (int i = 0; i < ROUNDS; i++) {
        off_t[i] = per_call(b0, &f, call_api_decode, per_rep);
        on_t[i] = per_call(b1, &f, call_api_decode, per_rep);
    }
    qsort(off_t, ROUNDS, sizeof off_t[0], cmp_double);
    qsort(on_t, ROUNDS, sizeof on_t[0], cmp_double);
    r->cpu_off = off_t[ROUNDS / 2];
    r->cpu_on = on_t[ROUNDS / 2];
    sgl_attn_destroy(b0);
    sgl_attn_destroy(b1);
    sgl_attn_host_close(off);
    sgl_attn_host_close(on);
    fx_free(&f);
    printf("%-8s (%d slots): init_forward_metadata %8.0f ns -> %8.0f ns with the layer (+%.0f ns, %.2f "
           "ns/slot)\n",
           label, r->slots_walked, r->init_noop, r->init_val, r->init_val - r->init_noop,
           (r->init_val - r->init_noop) / r->slots_walked);
    printf("%-8s forward_decode over a no-op %6.1f ns -> %6.1f ns (+%.1f ns per call)\n", label,
           r->dec_noop, r->dec_val, r->dec_val - r->dec_noop);
    printf("%-8s cpu_ref forward_decode %10.0f ns off, %10.0f ns on (%+.2f%%)\n", label, r->cpu_off,
           r->cpu_on, 100.0 * (r->cpu_on - r->cpu_off) / r->cpu_off);
}

int main(void) {
    uint64_t seed = 0x5eed0f5a1dull;
    /* decode, bs, max_len, page, hq, hkv, d, index bits */
    fx_shape small = {SGL_ATTN_MODE_DECODE, 4, 256, 16, 8, 2, 64, 32};
    fx_shape medium = {SGL_ATTN_MODE_DECODE, 16, 1024, 16, 16, 4, 128, 32};
    result r[2];
    run_shape("small", small, seed, &r[0]);
    run_shape("medium", medium, seed + 1, &r[1]);
    printf("{\"bench\":\"validate_overhead\",\"results\":[");
    for (int i = 0; i < 2; i++)
        printf("%s{\"shape\":\"%s\",\"slots\":%d,\"init_noop_ns\":%.0f,\"init_validate_ns\":%.0f,"
               "\"decode_noop_ns\":%.1f,\"decode_validate_ns\":%.1f,\"cpu_ref_decode_off_ns\":%.0f,"
               "\"cpu_ref_decode_on_ns\":%.0f}",
               i ? "," : "", r[i].shape, r[i].slots_walked, r[i].init_noop, r[i].init_val,
               r[i].dec_noop, r[i].dec_val, r[i].cpu_off, r[i].cpu_on);
    printf("]}\n");
    return 0;
}
