/* test_lin_e2e.c - a tiny hybrid model run whole on the GPU and on the CPU,
 * through libsglattn's stacks, and compared layer by layer (GPU only;
 * skipped with the reason elsewhere).
 *
 * The model: 4 layers, full attention at layers 1 and 3 (the model's layer
 * ids decide the routing), Gated DeltaNet elsewhere (2 qk heads, 4 value
 * heads, K = V = 128, conv 4), bf16 activations, float32 state.  Stacks:
 * gdn_cuda over cuda_attn (for each kernel variant) and gdn over cpu_ref.
 * One extend of two requests (80 and 33 tokens), then three decode steps;
 * every layer runs in order on both stacks with the same inputs, and every
 * output must agree (NMSE <= 1e-4, the bf16 limit of docs/harness.md).
 *
 *   test_lin_e2e [plugin_dir]   exit 0: pass or SKIP, 1: failure
 * LT_E2E_DRYRUN=1: the CPU stack alone on host tensors (checks the batches
 * this test builds on a machine without a GPU). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "lt_tiny_model.h"
#include "lt_util.h"
#include "sgl_attn.h"


enum { REQS = 4, CTX = 512, SLOTS = 1 + REQS * CTX, MAXT = 256 };

static int dryrun;

/* the same values on both sides: a host tensor (CPU stack) and a device one */
typedef struct pair {
    lt_tensor h, d;
} pair;

static void pair_make(pair *p, int dt, int ndim, const int64_t *shape) {
    lt_make(&p->h, dt, ndim, shape, 1);
    lt_make(&p->d, dt, ndim, shape, dryrun);
}
static void pair_sync(pair *p) { /* host ref -> both */
    memcpy(p->d.ref, p->h.ref, p->h.n * sizeof(double));
    lt_upload(&p->h);
    lt_upload(&p->d);
}
static void pair_normal(pair *p, lt_rng *r, double sigma) {
    for (size_t i = 0; i < p->h.n; i++) p->h.ref[i] = sigma * lt_normal(r);
    pair_sync(p);
}
static void pair_free(pair *p) {
    lt_free(&p->h);
    lt_free(&p->d);
}

typedef struct side {
    sgl_attn_backend *b;
    void *stream;
} side;

typedef struct layer_w {
    pair conv_w, conv_b, A_log, dt_bias, kc, vc;
} layer_w;

static double compare(pair *p, const char *what, int step, int layer) {
    double *cpu = calloc(p->h.n, sizeof *cpu);
    if (!cpu) return NAN;
    lt_download(&p->h, cpu);
    const double nm = lt_nmse(&p->d, cpu);
    free(cpu);
    LT_CHECK(nm == nm && nm <= 1e-4, "%s step %d layer %d: GPU vs CPU NMSE %.3g", what, step, layer, nm);
    return nm;
}

static int run_variant(sgl_attn_host *h, const char *variant, const sgl_attn_model *m) {
    setenv("SGL_ATTN_LIN_KERNEL", variant, 1);
    const char *gpu_names[] = {"gdn_cuda", "cuda_attn"}, *cpu_names[] = {"gdn", "cpu_ref"};
    sgl_attn_create_options o = {sizeof o, REQS, MAXT, CTX};
    char err[1024];
    side g = {0}, c = {0};
    if (!dryrun && sgl_attn_create_stack(h, gpu_names, 2, 0, m, &o, &g.b, err, sizeof err) != SGL_ATTN_OK) {
        if (strstr(err, "not available") || strstr(err, "unavailable")) lt_skip(err);
        LT_CHECK(0, "gdn_cuda/cuda_attn: %s", err);
        return -1;
    }
    if (sgl_attn_create_stack(h, cpu_names, 2, 0, m, &o, &c.b, err, sizeof err) != SGL_ATTN_OK) {
        LT_CHECK(0, "gdn/cpu_ref: %s", err);
        if (g.b) sgl_attn_destroy(g.b);
        return -1;
    }
    cudaStream_t st = NULL;
    if (!dryrun && cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) return -1;
    g.stream = st;
    lt_rng r = {0x5eed5eedull};
    layer_w w[LAYERS];
    memset(w, 0, sizeof w);
    for (int l = 0; l < LAYERS; l++) {
        if (l % 2 == 0) {
            pair_make(&w[l].conv_w, LT_F32, 2, (int64_t[]){CONV, CW});
            pair_normal(&w[l].conv_w, &r, 0.5);
            pair_make(&w[l].conv_b, LT_F32, 1, (int64_t[]){CONV});
            pair_normal(&w[l].conv_b, &r, 0.2);
            pair_make(&w[l].A_log, LT_F32, 1, (int64_t[]){HV});
            pair_normal(&w[l].A_log, &r, 0.5);
            pair_make(&w[l].dt_bias, LT_F32, 1, (int64_t[]){HV});
            pair_normal(&w[l].dt_bias, &r, 0.5);
        } else {
            pair_make(&w[l].kc, LT_BF16, 3, (int64_t[]){SLOTS, HKV, D});
            pair_make(&w[l].vc, LT_BF16, 3, (int64_t[]){SLOTS, HKV, D});
            pair_normal(&w[l].kc, &r, 1.0); /* every slot holds something: reading a wrong one shows */
            memcpy(w[l].vc.h.ref, w[l].kc.h.ref, w[l].kc.h.n * sizeof(double));
            pair_sync(&w[l].vc);
        }
    }
    /* req_to_token: row r, column j -> slot 1 + r * CTX + j (page size 1) */
    pair r2t;
    pair_make(&r2t, LT_I32, 2, (int64_t[]){REQS, CTX});
    for (int row = 0; row < REQS; row++)
        for (int j = 0; j < CTX; j++) lt_set(&r2t.h, (size_t)row * CTX + j, 1 + row * CTX + j);
    pair_sync(&r2t);
    int len[2] = {0, 0};
    const int rows[2] = {2, 0}, slots[2] = {1, 3};
    for (int step = 0; step < 4; step++) {
        const int ext = step == 0;
        const int n[2] = {ext ? 80 : 1, ext ? 33 : 1};
        const int T = n[0] + n[1];
        pair si, rpi, sl, el, ep, ocl, pos;
        pair_make(&si, LT_I32, 1, (int64_t[]){2});
        pair_make(&rpi, LT_I32, 1, (int64_t[]){2});
        pair_make(&sl, LT_I32, 1, (int64_t[]){2});
        pair_make(&el, LT_I32, 1, (int64_t[]){2});
        pair_make(&ep, LT_I32, 1, (int64_t[]){2});
        pair_make(&ocl, LT_I32, 1, (int64_t[]){T});
        pair_make(&pos, LT_I32, 1, (int64_t[]){T});
        int t = 0;
        for (int i = 0; i < 2; i++) {
            lt_set(&si.h, i, slots[i]);
            lt_set(&rpi.h, i, rows[i]);
            lt_set(&el.h, i, n[i]);
            lt_set(&ep.h, i, len[i]);
            lt_set(&sl.h, i, len[i] + n[i]);
            for (int j = 0; j < n[i]; j++, t++) {
                lt_set(&ocl.h, t, 1 + rows[i] * CTX + len[i] + j);
                lt_set(&pos.h, t, len[i] + j);
            }
        }
        pair *ix[] = {&si, &rpi, &sl, &el, &ep, &ocl, &pos};
        for (size_t k = 0; k < sizeof ix / sizeof *ix; k++) pair_sync(ix[k]);
        sgl_attn_batch bt[2]; /* 0: GPU, 1: CPU */
        for (int s = 0; s < 2; s++) {
            sgl_attn_batch *b = &bt[s];
            memset(b, 0, sizeof *b);
            b->struct_size = sizeof *b;
            b->forward_mode = ext ? SGL_ATTN_MODE_EXTEND : SGL_ATTN_MODE_DECODE;
            b->batch_size = 2;
            b->num_tokens = T;
            b->page_size = 1;
            b->tokens_per_req = 1;
            b->seq_lens_sum = len[0] + len[1] + T;
            b->req_to_token = s ? &r2t.h.t : &r2t.d.t;
            b->req_pool_indices = s ? &rpi.h.t : &rpi.d.t;
            b->seq_lens = s ? &sl.h.t : &sl.d.t;
            b->out_cache_loc = s ? &ocl.h.t : &ocl.d.t;
            b->positions = s ? &pos.h.t : &pos.d.t;
            if (ext) {
                b->extend_seq_lens = s ? &el.h.t : &el.d.t;
                b->extend_prefix_lens = s ? &ep.h.t : &ep.d.t;
                b->extend_seq_lens_cpu = &el.h.t;
                b->extend_prefix_lens_cpu = &ep.h.t;
            }
            b->seq_lens_cpu = &sl.h.t;
            b->state_indices = s ? &si.h.t : &si.d.t;
            b->stream = s ? NULL : g.stream;
        }
        int rc = dryrun ? SGL_ATTN_OK : sgl_attn_init_forward_metadata(g.b, &bt[0]);
        LT_CHECK(rc == SGL_ATTN_OK, "GPU init_forward_metadata: %s", sgl_attn_last_error(g.b));
        rc = sgl_attn_init_forward_metadata(c.b, &bt[1]);
        LT_CHECK(rc == SGL_ATTN_OK, "CPU init_forward_metadata: %s", sgl_attn_last_error(c.b));
        for (int l = 0; l < LAYERS; l++) {
            const int full = l % 2 == 1;
            pair q, k, v, out, x, a, b;
            memset(&q, 0, sizeof q), memset(&k, 0, sizeof k), memset(&v, 0, sizeof v);
            memset(&x, 0, sizeof x), memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
            if (full) {
                pair_make(&q, LT_BF16, 3, (int64_t[]){T, HQ, D});
                pair_normal(&q, &r, 1.0);
                pair_make(&k, LT_BF16, 3, (int64_t[]){T, HKV, D});
                pair_normal(&k, &r, 1.0);
                pair_make(&v, LT_BF16, 3, (int64_t[]){T, HKV, D});
                pair_normal(&v, &r, 1.0);
                pair_make(&out, LT_BF16, 3, (int64_t[]){T, HQ, D});
            } else {
                pair_make(&x, LT_BF16, 2, (int64_t[]){T, CONV});
                pair_normal(&x, &r, 1.0);
                pair_make(&a, LT_BF16, 2, (int64_t[]){T, HV});
                pair_normal(&a, &r, 1.0);
                pair_make(&b, LT_BF16, 2, (int64_t[]){T, HV});
                pair_normal(&b, &r, 1.0);
                pair_make(&out, LT_BF16, 3, (int64_t[]){T, HV, VD});
            }
            for (int s = dryrun; s < 2; s++) {
                const int cpu = s == 1;
#define SIDE(p) (cpu ? &(p).h.t : &(p).d.t)
                sgl_attn_layer L;
                memset(&L, 0, sizeof L);
                L.struct_size = sizeof L;
                L.layer_id = l;
                L.num_q_heads = HQ;
                L.num_kv_heads = HKV;
                L.head_dim_qk = L.head_dim_v = D;
                L.sm_scale = 1.0f / sqrtf((float)D);
                L.sliding_window = -1;
                L.k_scale = L.v_scale = 1.0f;
                sgl_attn_linear_io io;
                memset(&io, 0, sizeof io);
                sgl_attn_forward_args fa;
                memset(&fa, 0, sizeof fa);
                fa.struct_size = sizeof fa;
                fa.layer = &L;
                fa.batch = &bt[s];
                fa.out = SIDE(out);
                if (full) {
                    L.k_cache = SIDE(w[l].kc);
                    L.v_cache = SIDE(w[l].vc);
                    fa.save_kv_cache = 1;
                    fa.q = SIDE(q);
                    fa.k = SIDE(k);
                    fa.v = SIDE(v);
                } else {
                    io.struct_size = sizeof io;
                    io.kind = SGL_ATTN_HYBRID_GDN;
                    io.x = SIDE(x);
                    io.a = SIDE(a);
                    io.b = SIDE(b);
                    io.conv_weight = SIDE(w[l].conv_w);
                    io.conv_bias = SIDE(w[l].conv_b);
                    io.A_log = SIDE(w[l].A_log);
                    io.dt_bias = SIDE(w[l].dt_bias);
                    io.out = SIDE(out);
                    io.use_qk_l2norm = 1;
                    fa.linear = &io;
                }
#undef SIDE
                sgl_attn_backend *be = cpu ? c.b : g.b;
                rc = ext ? sgl_attn_forward_extend(be, &fa) : sgl_attn_forward_decode(be, &fa);
                LT_CHECK(rc == SGL_ATTN_OK, "%s step %d layer %d: %s", cpu ? "CPU" : "GPU", step, l,
                         sgl_attn_last_error(be));
            }
            if (dryrun) {
                double *ov = calloc(out.h.n, sizeof *ov);
                if (ov) lt_download(&out.h, ov);
                size_t bad = 0;
                for (size_t e = 0; ov && e < out.h.n; e++) bad += !isfinite(ov[e]);
                LT_CHECK(ov && !bad, "CPU step %d layer %d: %zu outputs not finite", step, l, bad);
                free(ov);
                printf("  dry run step %d layer %d: CPU stack ok\n", step, l);
                pair *ps0[] = {&q, &k, &v, &out, &x, &a, &b};
                for (size_t k2 = 0; k2 < sizeof ps0 / sizeof *ps0; k2++)
                    if (ps0[k2]->h.ref) pair_free(ps0[k2]);
                continue;
            }
            cudaError_t e = cudaStreamSynchronize(st);
            LT_CHECK(e == cudaSuccess, "GPU stream: %s", cudaGetErrorString(e));
            const double nm = compare(&out, variant, step, l);
            printf("  %s step %d (%s) layer %d (%s): NMSE %.3g\n", variant, step, ext ? "extend" : "decode", l,
                   full ? "full, cuda_attn vs cpu_ref" : "gdn, gdn_cuda vs gdn", nm);
            pair *ps[] = {&q, &k, &v, &out, &x, &a, &b};
            for (size_t k2 = 0; k2 < sizeof ps / sizeof *ps; k2++)
                if (ps[k2]->h.ref) pair_free(ps[k2]);
        }
        for (int i = 0; i < 2; i++) len[i] += n[i];
        for (size_t k = 0; k < sizeof ix / sizeof *ix; k++) pair_free(ix[k]);
    }
    for (int l = 0; l < LAYERS; l++) {
        pair *ps[] = {&w[l].conv_w, &w[l].conv_b, &w[l].A_log, &w[l].dt_bias, &w[l].kc, &w[l].vc};
        for (size_t k = 0; k < sizeof ps / sizeof *ps; k++)
            if (ps[k]->h.ref) pair_free(ps[k]);
    }
    pair_free(&r2t);
    if (g.b) sgl_attn_destroy(g.b);
    sgl_attn_destroy(c.b);
    if (st) cudaStreamDestroy(st);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = lt_plugdir(argc, argv);
    sgl_attn_host *h = lt_tiny_host_open(dir);
    if (!h) return 1;
    dryrun = getenv("LT_E2E_DRYRUN") && atoi(getenv("LT_E2E_DRYRUN"));
    const long gi = sgl_attn_host_find_plugin(h, "gdn_cuda"), ai = sgl_attn_host_find_plugin(h, "cuda_attn");
    sgl_attn_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (gi < 0 || ai < 0) {
        printf("FAIL: gdn_cuda or cuda_attn not found in %s\n", dir);
        sgl_attn_host_close(h);
        return 1;
    }
    sgl_attn_host_plugin_info(h, (size_t)gi, &info);
    if (info.status != SGL_ATTN_PLUGIN_USABLE && !dryrun) {
        char why[1024];
        snprintf(why, sizeof why, "gdn_cuda is %s here: %s", sgl_attn_plugin_status_name(info.status), info.reason);
        sgl_attn_host_close(h);
        lt_skip(why);
    }
    sgl_attn_model m;
    lt_tiny_model(&m, "tiny-qwen3-next");
    run_variant(h, "fast", &m);
    if (!dryrun) run_variant(h, "simple", &m);
    sgl_attn_host_close(h);
    printf("%d failure%s\n", lt_failures, lt_failures == 1 ? "" : "s");
    return lt_failures ? 1 : 0;
}
