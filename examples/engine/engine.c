/* engine.c - libsglattn from an engine's side, end to end (docs/engine.md):
 *
 *   open a host -> describe the model -> select a stack -> create it ->
 *   per batch: metadata, then each layer's forward -> errors -> graphs ->
 *   one backend per thread -> destroy, close.
 *
 * It serves a small GQA model (2 layers, 4 q / 2 kv heads, head dim 64, f32)
 * on whatever this machine selects: two requests are prefilled (5 and 9
 * tokens), then decoded for 3 steps, and every output is checked against a
 * float64 attention computed here from the same pools.  Exit status 0 when
 * everything matched.  A model file may be given instead: argv[1] (then only
 * selection and creation are shown, as the shapes are the file's).
 *
 *   cc -std=c11 engine.c $(pkg-config --cflags --libs sglattn) -lpthread -lm -o engine
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgl_attn.h>

enum { LAYERS = 2, HQ = 4, HKV = 2, D = 64, REQS = 2, MAX_CTX = 32, DECODE_STEPS = 3 };
static const int prompt_len[REQS] = {5, 9};

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != SGL_ATTN_OK) {                                                          \
            fprintf(stderr, "engine: %s failed: %s (%d)\n", #call, sgl_attn_status_name(rc_), rc_); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* ---------------------------------------------------------------- memory */

/* Where the backend reads: host memory when the plugin has no device_ops
 * (CPU), else its device, through its device_ops (what an engine with its
 * own tensors does not need: it wraps their pointers in DLTensors). */
typedef struct mem {
    const sgl_attn_device_ops *ops;
    int32_t device;
    DLDevice dl;
} mem;

static void *mem_alloc(const mem *m, size_t bytes) {
    void *p = NULL;
    if (!m->ops) return calloc(1, bytes);
    CHECK(m->ops->alloc(m->device, bytes, &p));
    return p;
}

static void mem_free(const mem *m, void *p) {
    if (!m->ops) free(p);
    else m->ops->free(m->device, p);
}

static void mem_put(const mem *m, void *dst, const void *src, size_t bytes) {
    if (!m->ops) memcpy(dst, src, bytes);
    else CHECK(m->ops->copy_to_device(m->device, dst, src, bytes));
}

static void mem_get(const mem *m, void *dst, const void *src, size_t bytes) {
    if (m->ops) CHECK(m->ops->synchronize(m->device, NULL));
    if (!m->ops) memcpy(dst, src, bytes);
    else CHECK(m->ops->copy_to_host(m->device, dst, src, bytes));
}

/* A compact tensor: DLPack with strides NULL, byte_offset 0. */
typedef struct tensor {
    DLTensor t;
    int64_t shape[3];
} tensor;

static void tensor_init(tensor *x, const mem *m, void *data, DLDataType dt, int ndim, int64_t a, int64_t b,
                        int64_t c) {
    memset(x, 0, sizeof *x);
    x->shape[0] = a, x->shape[1] = b, x->shape[2] = c;
    x->t.data = data;
    x->t.device = m->dl;
    x->t.ndim = ndim;
    x->t.dtype = dt;
    x->t.shape = x->shape;
}

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

static double rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* ---------------------------------------------------------- one sequence */

/* Everything one backend instance serves: its pools and the host copies
 * the float64 check reads.  Slot 0 is padding; request r's token i sits in
 * slot 1 + r * MAX_CTX + i (page size 1). */
typedef struct session {
    sgl_attn_backend *b;
    mem m;
    float *kpool[LAYERS], *vpool[LAYERS]; /* device */
    float *kh[LAYERS], *vh[LAYERS];       /* host copies of what was written */
    int32_t *req_to_token;                /* device [REQS, MAX_CTX] */
    int len[REQS];
    unsigned seed;
    int bad;
} session;

enum { SLOTS = 1 + REQS * MAX_CTX };

static int32_t slot_of(int r, int i) { return 1 + r * MAX_CTX + i; }

/* out[t] against float64 attention over the pool, token by token. */
static void check_out(session *s, int layer, const float *q, const float *out, int T, const int *req_of,
                      const int *pos_of, const char *what) {
    for (int t = 0; t < T; t++)
        for (int h = 0; h < HQ; h++) {
            int kv = h / (HQ / HKV), r = req_of[t];
            double m = -INFINITY, sum = 0, acc[D] = {0};
            for (int j = 0; j <= pos_of[t]; j++) {
                const float *k = s->kh[layer] + ((size_t)slot_of(r, j) * HKV + kv) * D;
                double dot = 0;
                for (int e = 0; e < D; e++) dot += (double)q[((size_t)t * HQ + h) * D + e] * k[e];
                dot /= sqrt((double)D);
                double nm = dot > m ? dot : m, scale = exp(m - nm), w = exp(dot - nm);
                const float *v = s->vh[layer] + ((size_t)slot_of(r, j) * HKV + kv) * D;
                for (int e = 0; e < D; e++) acc[e] = acc[e] * scale + w * v[e];
                sum = sum * scale + w;
                m = nm;
            }
            for (int e = 0; e < D; e++) {
                double want = acc[e] / sum, got = out[((size_t)t * HQ + h) * D + e];
                if (fabs(got - want) > 1e-4 * (1 + fabs(want))) {
                    if (!s->bad++)
                        fprintf(stderr, "engine: %s layer %d token %d head %d dim %d: got %.6f, want %.6f\n", what,
                                layer, t, h, e, got, want);
                }
            }
        }
}

/* One batch: `n_new[r]` new tokens for each request (prefill when the
 * request is empty, else decode), metadata once, then every layer. */
static int step(session *s, const int *n_new, int decode) {
    const mem *m = &s->m;
    int T = 0, req_of[REQS * MAX_CTX], pos_of[REQS * MAX_CTX];
    int32_t idx[REQS], seq[REQS], prefix[REQS], ext[REQS], loc[REQS * MAX_CTX], pos[REQS * MAX_CTX];
    for (int r = 0; r < REQS; r++) {
        idx[r] = r;
        prefix[r] = s->len[r];
        ext[r] = n_new[r];
        seq[r] = s->len[r] + n_new[r];
        for (int j = 0; j < n_new[r]; j++, T++) {
            loc[T] = slot_of(r, s->len[r] + j);
            pos[T] = s->len[r] + j;
            req_of[T] = r;
            pos_of[T] = pos[T];
        }
    }
    /* the batch's index tensors, on the device */
    int32_t *d_idx = mem_alloc(m, sizeof idx), *d_seq = mem_alloc(m, sizeof seq), *d_pre = mem_alloc(m, sizeof prefix),
            *d_ext = mem_alloc(m, sizeof ext), *d_loc = mem_alloc(m, (size_t)T * 4), *d_pos = mem_alloc(m, (size_t)T * 4);
    mem_put(m, d_idx, idx, sizeof idx);
    mem_put(m, d_seq, seq, sizeof seq);
    mem_put(m, d_pre, prefix, sizeof prefix);
    mem_put(m, d_ext, ext, sizeof ext);
    mem_put(m, d_loc, loc, (size_t)T * 4);
    mem_put(m, d_pos, pos, (size_t)T * 4);
    tensor t_r2t, t_idx, t_seq, t_pre, t_ext, t_loc, t_pos, t_seq_cpu, t_pre_cpu, t_ext_cpu;
    tensor_init(&t_r2t, m, s->req_to_token, I32, 2, REQS, MAX_CTX, 0);
    tensor_init(&t_idx, m, d_idx, I32, 1, REQS, 0, 0);
    tensor_init(&t_seq, m, d_seq, I32, 1, REQS, 0, 0);
    tensor_init(&t_pre, m, d_pre, I32, 1, REQS, 0, 0);
    tensor_init(&t_ext, m, d_ext, I32, 1, REQS, 0, 0);
    tensor_init(&t_loc, m, d_loc, I32, 1, T, 0, 0);
    tensor_init(&t_pos, m, d_pos, I32, 1, T, 0, 0);
    const mem host = {NULL, 0, {kDLCPU, 0}};
    tensor_init(&t_seq_cpu, &host, seq, I32, 1, REQS, 0, 0); /* optional host mirrors: no copy back to plan */
    tensor_init(&t_pre_cpu, &host, prefix, I32, 1, REQS, 0, 0);
    tensor_init(&t_ext_cpu, &host, ext, I32, 1, REQS, 0, 0);

    sgl_attn_batch batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.forward_mode = decode ? SGL_ATTN_MODE_DECODE : SGL_ATTN_MODE_EXTEND;
    batch.batch_size = REQS;
    batch.num_tokens = T;
    batch.page_size = 1;
    batch.tokens_per_req = 1;
    batch.req_to_token = &t_r2t.t;
    batch.req_pool_indices = &t_idx.t;
    batch.seq_lens = &t_seq.t;
    batch.seq_lens_cpu = &t_seq_cpu.t;
    batch.out_cache_loc = &t_loc.t;
    batch.positions = &t_pos.t;
    for (int r = 0; r < REQS; r++) batch.seq_lens_sum += seq[r];
    if (!decode) {
        batch.extend_prefix_lens = &t_pre.t;
        batch.extend_seq_lens = &t_ext.t;
        batch.extend_prefix_lens_cpu = &t_pre_cpu.t;
        batch.extend_seq_lens_cpu = &t_ext_cpu.t;
    }
    int rc = sgl_attn_init_forward_metadata(s->b, &batch);
    if (rc) {
        fprintf(stderr, "engine: metadata: %s: %s\n", sgl_attn_status_name(rc), sgl_attn_last_error(s->b));
        return rc;
    }
    size_t qn = (size_t)T * HQ * D, kn = (size_t)T * HKV * D;
    float *q = malloc(qn * 4), *k = malloc(kn * 4), *v = malloc(kn * 4), *out = malloc(qn * 4);
    float *dq = mem_alloc(m, qn * 4), *dk = mem_alloc(m, kn * 4), *dv = mem_alloc(m, kn * 4), *dout = mem_alloc(m, qn * 4);
    for (int layer = 0; layer < LAYERS && !rc; layer++) {
        for (size_t i = 0; i < qn; i++) q[i] = (float)rnd(&s->seed);
        for (size_t i = 0; i < kn; i++) k[i] = (float)rnd(&s->seed), v[i] = (float)rnd(&s->seed);
        mem_put(m, dq, q, qn * 4);
        mem_put(m, dk, k, kn * 4);
        mem_put(m, dv, v, kn * 4);
        tensor tq, tk, tv, to, tkc, tvc;
        tensor_init(&tq, m, dq, F32, 3, T, HQ, D);
        tensor_init(&tk, m, dk, F32, 3, T, HKV, D);
        tensor_init(&tv, m, dv, F32, 3, T, HKV, D);
        tensor_init(&to, m, dout, F32, 3, T, HQ, D);
        tensor_init(&tkc, m, s->kpool[layer], F32, 3, SLOTS, HKV, D);
        tensor_init(&tvc, m, s->vpool[layer], F32, 3, SLOTS, HKV, D);
        sgl_attn_layer L = {.struct_size = sizeof L, .layer_id = layer, .num_q_heads = HQ, .num_kv_heads = HKV,
                            .head_dim_qk = D, .head_dim_v = D, .sm_scale = (float)(1.0 / sqrt((double)D)),
                            .sliding_window = -1, .k_cache = &tkc.t, .v_cache = &tvc.t, .k_scale = 1, .v_scale = 1};
        sgl_attn_forward_args a = {.struct_size = sizeof a, .save_kv_cache = 1, .layer = &L, .batch = &batch,
                                   .q = &tq.t, .k = &tk.t, .v = &tv.t, .out = &to.t};
        rc = decode ? sgl_attn_forward_decode(s->b, &a) : sgl_attn_forward_extend(s->b, &a);
        if (rc) {
            fprintf(stderr, "engine: forward: %s: %s\n", sgl_attn_status_name(rc), sgl_attn_last_error(s->b));
            break;
        }
        /* what the engine knows it asked to be written: the new K/V */
        for (int t = 0; t < T; t++) {
            memcpy(s->kh[layer] + (size_t)loc[t] * HKV * D, k + (size_t)t * HKV * D, (size_t)HKV * D * 4);
            memcpy(s->vh[layer] + (size_t)loc[t] * HKV * D, v + (size_t)t * HKV * D, (size_t)HKV * D * 4);
        }
        mem_get(m, out, dout, qn * 4);
        check_out(s, layer, q, out, T, req_of, pos_of, decode ? "decode" : "extend");
    }
    for (int r = 0; r < REQS; r++) s->len[r] += n_new[r];
    free(q), free(k), free(v), free(out);
    void *dev[] = {dq, dk, dv, dout, d_idx, d_seq, d_pre, d_ext, d_loc, d_pos};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) mem_free(m, dev[i]);
    return rc;
}

static void session_open(session *s, sgl_attn_host *h, const sgl_attn_selection *sel, const sgl_attn_model *model,
                         unsigned seed) {
    memset(s, 0, sizeof *s);
    s->seed = seed;
    /* the innermost plugin's memory */
    const char *inner = sgl_attn_selection_stack_name(sel, sgl_attn_selection_stack_depth(sel) - 1);
    long pi = sgl_attn_host_find_plugin(h, inner);
    sgl_attn_plugin_info info = {.struct_size = sizeof info};
    CHECK(sgl_attn_host_plugin_info(h, (size_t)pi, &info));
    s->m.ops = sgl_attn_host_device_ops(h, (size_t)pi);
    s->m.device = sgl_attn_selection_device(sel);
    s->m.dl = (DLDevice){kDLCPU, 0};
    if (s->m.ops) {
        static const DLDeviceType by_platform[] = {kDLCPU, kDLCPU, kDLCUDA, kDLROCM, kDLOpenCL, kDLExtDev};
        s->m.dl = (DLDevice){by_platform[info.platform], s->m.device};
    }
    sgl_attn_create_options o = {.struct_size = sizeof o, .max_reqs = REQS, .max_tokens = REQS * MAX_CTX,
                                 .max_context = MAX_CTX};
    char err[1024];
    if (sgl_attn_create(h, sel, model, &o, &s->b, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "engine: create %s: %s\n", sgl_attn_selection_label(sel), err);
        exit(1);
    }
    size_t pool = (size_t)SLOTS * HKV * D * 4;
    for (int l = 0; l < LAYERS; l++) {
        s->kpool[l] = mem_alloc(&s->m, pool), s->vpool[l] = mem_alloc(&s->m, pool);
        s->kh[l] = calloc(1, pool), s->vh[l] = calloc(1, pool);
    }
    int32_t r2t[REQS * MAX_CTX];
    for (int r = 0; r < REQS; r++)
        for (int i = 0; i < MAX_CTX; i++) r2t[r * MAX_CTX + i] = slot_of(r, i);
    s->req_to_token = mem_alloc(&s->m, sizeof r2t);
    mem_put(&s->m, s->req_to_token, r2t, sizeof r2t);
}

static void session_close(session *s) {
    sgl_attn_destroy(s->b);
    for (int l = 0; l < LAYERS; l++) {
        mem_free(&s->m, s->kpool[l]), mem_free(&s->m, s->vpool[l]);
        free(s->kh[l]), free(s->vh[l]);
    }
    mem_free(&s->m, s->req_to_token);
}

/* Prefill both prompts, then DECODE_STEPS decodes; returns the mismatches. */
static int serve(session *s) {
    int one[REQS];
    for (int r = 0; r < REQS; r++) one[r] = 1;
    if (step(s, prompt_len, 0)) return -1;
    for (int i = 0; i < DECODE_STEPS; i++)
        if (step(s, one, 1)) return -1;
    return s->bad;
}

typedef struct worker {
    sgl_attn_host *h;
    const sgl_attn_selection *sel;
    const sgl_attn_model *model;
    unsigned seed;
    int result;
} worker;

/* A backend instance is used by one thread at a time: each thread creates
 * its own from the shared host (and selection) and serves its own batch. */
static void *worker_main(void *arg) {
    worker *w = arg;
    session s;
    session_open(&s, w->h, w->sel, w->model, w->seed);
    w->result = serve(&s);
    session_close(&s);
    return NULL;
}

static void on_log(void *user, int level, const char *line) {
    (void)user;
    fprintf(stderr, "engine: libsglattn log (%d): %s\n", level, line);
}

int main(int argc, char **argv) {
    /* 1. Open the host: plugins from the default places and the conf.  The
     * options struct starts with struct_size; a zero one is refused. */
    sgl_attn_host_options ho;
    memset(&ho, 0, sizeof ho);
    ho.struct_size = sizeof ho;
    ho.log = on_log;
    ho.log_level = SGL_ATTN_LOG_WARN;
    sgl_attn_host *h = NULL;
    char err[2048];
    if (sgl_attn_host_open(&ho, &h, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "engine: cannot open the host: %s\n", err);
        return 1;
    }

    /* 2. The model: a file (an HF config.json), or the shapes the engine knows. */
    sgl_attn_model model;
    if (argc > 1) {
        if (sgl_attn_model_from_file(argv[1], 1, &model, err, sizeof err) != SGL_ATTN_OK) {
            fprintf(stderr, "engine: %s\n", err);
            return 1;
        }
    } else {
        sgl_attn_model_init(&model);
        snprintf(model.name, sizeof model.name, "engine example");
        model.num_layers = LAYERS;
        model.num_q_heads = HQ;
        model.num_kv_heads = HKV;
        model.head_dim_qk = model.head_dim_v = D;
        model.dtype = model.kv_dtype = SGL_ATTN_DT_F32;
    }

    /* 3. Select: automatic here (req.backend = "fa3" would ask for sglang's
     * name).  On a refusal the selection still explains every candidate. */
    sgl_attn_select_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    sgl_attn_selection *sel = NULL;
    int rc = sgl_attn_select(h, &model, &req, &sel, err, sizeof err);
    for (size_t i = 0; sel && i < sgl_attn_selection_warning_count(sel); i++)
        fprintf(stderr, "engine: warning: %s\n", sgl_attn_selection_warning(sel, i));
    if (rc != SGL_ATTN_OK) {
        fprintf(stderr, "engine: no stack: %s\n", err);
        for (size_t i = 0; i < sgl_attn_selection_verdict_count(sel); i++) {
            const sgl_attn_verdict *v = sgl_attn_selection_verdict(sel, i);
            fprintf(stderr, "  %s %s: [%s] %s\n", v->stage, v->plugin, v->rule,
                    sgl_attn_selection_verdict_message(sel, i));
        }
        return 1;
    }
    printf("selected %s on device %d%s\n", sgl_attn_selection_label(sel), sgl_attn_selection_device(sel),
           sgl_attn_selection_cpu_fallback(sel) ? " (a CPU fallback: see the warning)" : "");

    /* The request struct is versioned by struct_size: a zero one (a caller
     * that forgot it) is refused with a message, never read as "nothing". */
    sgl_attn_select_request forgot;
    memset(&forgot, 0, sizeof forgot);
    forgot.backend = "cpu_ref";
    sgl_attn_selection *none = NULL;
    char why[512];
    if (sgl_attn_select(h, &model, &forgot, &none, why, sizeof why) != SGL_ATTN_E_INVALID || none ||
        !strstr(why, "struct_size")) {
        fprintf(stderr, "engine: a request with struct_size 0 was not refused: %s\n", why);
        return 1;
    }
    printf("struct_size 0 refused: %s\n", why);

    if (argc > 1) { /* a file's shapes: create, then stop */
        session s;
        memset(&s, 0, sizeof s);
        sgl_attn_create_options o = {.struct_size = sizeof o, .max_reqs = 8, .max_tokens = 256, .max_context = 256};
        if (sgl_attn_create(h, sel, &model, &o, &s.b, err, sizeof err) != SGL_ATTN_OK) {
            fprintf(stderr, "engine: create: %s\n", err);
            return 1;
        }
        printf("created %s for %s\n", sgl_attn_selection_label(sel), model.name);
        sgl_attn_destroy(s.b);
        sgl_attn_selection_free(sel);
        sgl_attn_host_close(h);
        return 0;
    }

    /* 4-5. Create, then serve: metadata per batch, forward per layer. */
    session s;
    session_open(&s, h, sel, &model, 1);
    int bad = serve(&s);
    printf("prefill %d+%d tokens, %d decode steps, %d layers: %s\n", prompt_len[0], prompt_len[1], DECODE_STEPS,
           LAYERS, bad ? "MISMATCH" : "matches the float64 reference");

    /* 6. Errors: a call the backend refuses returns a status, and
     * sgl_attn_last_error says why, in the plugin's words. */
    sgl_attn_layer wrong = {.struct_size = sizeof wrong, .num_q_heads = HQ + 1, .num_kv_heads = HKV,
                            .head_dim_qk = D, .head_dim_v = D, .sm_scale = 1, .sliding_window = -1};
    sgl_attn_forward_args a = {.struct_size = sizeof a, .layer = &wrong};
    rc = sgl_attn_forward_decode(s.b, &a);
    printf("a bad call: %s: %s\n", sgl_attn_status_name(rc), sgl_attn_last_error(s.b));
    if (rc == SGL_ATTN_OK) bad++;

    /* 7. Graphs: a backend whose caps have graph_capture prepares static
     * buffers once (init_graph_state), then metadata for capture and for
     * each replay; the engine captures and replays the forward calls on its
     * own stream around them.  Through the vtable, where ops_size has them. */
    long pi = sgl_attn_host_find_plugin(h, sgl_attn_selection_stack_name(sel, sgl_attn_selection_stack_depth(sel) - 1));
    sgl_attn_caps caps = {.struct_size = sizeof caps};
    CHECK(sgl_attn_host_plugin_caps(h, (size_t)pi, (uint32_t)sgl_attn_selection_device(sel), &caps));
    const sgl_attn_backend_ops *ops = s.b->ops;
    int graphs = (caps.features & SGL_ATTN_FEAT_GRAPH_CAPTURE) && ops->init_graph_state &&
                 ops->init_forward_metadata_capture && ops->init_forward_metadata_replay;
    if (graphs) {
        CHECK(ops->init_graph_state(s.b, REQS, REQS));
        printf("graphs: static buffers ready; pad unused requests with seq_len %d\n",
               ops->graph_seq_len_fill_value ? ops->graph_seq_len_fill_value(s.b) : 1);
    } else {
        printf("graphs: %s runs eagerly (no graph_capture in its caps)\n", sgl_attn_selection_label(sel));
    }
    session_close(&s);

    /* 8. Threads: one backend per thread, all from one host. */
    worker w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (worker){h, sel, &model, 100u + (unsigned)i, 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        bad += w[i].result != 0;
    }
    printf("2 threads, one backend each: %s\n", w[0].result || w[1].result ? "MISMATCH" : "both match");

    /* 9. Close: the host stays alive until its last backend is destroyed. */
    sgl_attn_selection_free(sel);
    sgl_attn_host_close(h);
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
