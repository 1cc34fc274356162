/* test_gauntlet_counts.c - host-side counts out of range, in every usable
 * full-attention plugin here: init_forward_metadata with batch_size or
 * num_tokens negative, INT32_MIN or one past create's limit, the index
 * tensors on the plugin's device (staged with its device_ops) and no host
 * mirrors, so a plugin that sizes a device-to-host copy from the count reads
 * it unchecked.  Each must refuse the batch; none may crash.
 *
 * Each case runs in a child process of its own that opens its own host (a
 * device runtime must not be inherited across fork): a crash is reported
 * with its signal instead of ending the suite.  Here that is cpu_ref (and
 * xpu_ocl when SGL_ATTN_XPU_ALLOW_CPU=1); on a GPU machine cuda_attn and
 * cuda_mla join. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gauntlet_util.h"

enum { MAX_REQS = 8, MAX_TOKENS = 64, MAX_CTX = 256, BS = 2, SEQ = 17 };

static const struct {
    int32_t bs, tokens;
} bad[] = {{-1, 1}, {INT32_MIN, 1}, {MAX_REQS + 1, MAX_REQS + 1}, {1, -1}, {1, INT32_MIN}, {1, MAX_TOKENS + 1}};
#define N_BAD (sizeof bad / sizeof bad[0])

static void model_mha(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    m->num_layers = 2;
    m->num_q_heads = 8;
    m->num_kv_heads = 2;
    m->head_dim_qk = m->head_dim_v = 128;
    m->dtype = m->kv_dtype = SGL_ATTN_DT_BF16;
}

static void model_mla(sgl_attn_model *m) {
    model_mha(m);
    m->is_mla = 1;
    m->num_q_heads = 16;
    m->num_kv_heads = 1;
    m->kv_lora_rank = 512;
    m->qk_rope_head_dim = 64;
    m->head_dim_qk = 576;
    m->head_dim_v = 512;
}

/* An int32 index tensor of n entries on the plugin's device (host memory
 * when it has no device_ops). */
typedef struct itensor {
    DLTensor t;
    int64_t shape[2];
    void *mem;
} itensor;

static int stage(itensor *x, const sgl_attn_device_ops *ops, int32_t dev, int platform, int ndim, int64_t n0,
                 int64_t n1, int32_t fill) {
    memset(x, 0, sizeof *x);
    size_t n = (size_t)(n0 * (ndim > 1 ? n1 : 1));
    int32_t *h = malloc(n * sizeof *h);
    if (!h) return -1;
    for (size_t i = 0; i < n; i++) h[i] = fill >= 0 ? fill : (int32_t)(i + 1);
    int rc = 0;
    if (ops) {
        rc = ops->alloc(dev, n * sizeof *h, &x->mem) || ops->copy_to_device(dev, x->mem, h, n * sizeof *h);
        free(h);
    } else {
        x->mem = h;
    }
    x->shape[0] = n0;
    x->shape[1] = n1;
    x->t.data = x->mem;
    x->t.ndim = ndim;
    x->t.shape = x->shape;
    x->t.dtype.code = kDLInt;
    x->t.dtype.bits = 32;
    x->t.dtype.lanes = 1;
    x->t.device.device_type = kDLCPU;
    if (ops) {
        x->t.device.device_type = platform == SGL_ATTN_PLATFORM_HIP   ? kDLROCM
                                  : platform == SGL_ATTN_PLATFORM_XPU ? kDLOpenCL
                                  : platform == SGL_ATTN_PLATFORM_NPU ? kDLExtDev
                                                                      : kDLCUDA;
        x->t.device.device_id = dev;
    }
    return rc;
}

/* Child side: the k-th usable full-attention plugin, case c.  Prints
 * "rc=<status> <name>: <message>" and exits 0, or exits 77 when there is no
 * k-th plugin, 78 when it cannot stage the batch. */
static void child(int k, int c) {
    sgl_attn_host_options o = {.struct_size = sizeof o, .ignore_env_path = 1, .no_default_dir = 1, .no_conf = 1};
    o.plugin_path = getenv("SGL_ATTN_GAUNTLET_PLUGIN_DIR");
    sgl_attn_host *h = NULL;
    char err[512];
    if (sgl_attn_host_open(&o, &h, err, sizeof err)) _exit(78);
    int seen = 0;
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        sgl_attn_host_plugin_info(h, i, &in);
        if (in.status != SGL_ATTN_PLUGIN_USABLE || in.role != SGL_ATTN_ROLE_FULL || seen++ != k) continue;
        sgl_attn_create_options co = {sizeof co, MAX_REQS, MAX_TOKENS, MAX_CTX};
        const char *names[] = {in.name};
        sgl_attn_model m;
        sgl_attn_backend *b = NULL;
        model_mha(&m);
        if (sgl_attn_create_stack(h, names, 1, 0, &m, &co, &b, err, sizeof err)) {
            model_mla(&m);
            if (sgl_attn_create_stack(h, names, 1, 0, &m, &co, &b, err, sizeof err)) {
                printf("skip %s: %s\n", in.name, err);
                fflush(stdout);
                _exit(0);
            }
        }
        const sgl_attn_device_ops *ops = sgl_attn_host_device_ops(h, i);
        itensor rtt, rpi, seq, ocl;
        const int pf = in.platform;
        if (stage(&rtt, ops, 0, pf, 2, MAX_REQS, MAX_CTX, -1) || stage(&rpi, ops, 0, pf, 1, BS, 0, 0) ||
            stage(&seq, ops, 0, pf, 1, BS, 0, SEQ) || stage(&ocl, ops, 0, pf, 1, BS, 0, 3))
            _exit(78);
        sgl_attn_batch bt;
        memset(&bt, 0, sizeof bt);
        bt.struct_size = sizeof bt;
        bt.forward_mode = SGL_ATTN_MODE_DECODE;
        bt.batch_size = bad[c].bs;
        bt.num_tokens = bad[c].tokens;
        bt.tokens_per_req = 1;
        bt.page_size = 1;
        bt.seq_lens_sum = BS * SEQ;
        bt.req_to_token = &rtt.t;
        bt.req_pool_indices = &rpi.t;
        bt.seq_lens = &seq.t;
        bt.out_cache_loc = &ocl.t;
        int rc = sgl_attn_init_forward_metadata(b, &bt);
        printf("rc=%d %s: %s\n", rc, in.name, rc ? sgl_attn_last_error(b) : "accepted");
        fflush(stdout);
        _exit(0); /* the device memory goes with the process */
    }
    _exit(77);
}

typedef struct child_args {
    int k, c;
} child_args;

static void child_main(void *arg) {
    const child_args *a = arg;
    alarm(120);
    child(a->k, a->c);
}

static int run_child(int k, int c, char *out, size_t size) {
    child_args a = {k, c};
    return gu_in_child(child_main, &a, 0, out, size);
}

static void test_counts_out_of_range(void **state) {
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/../../lib/sglattn/plugins", gu_plugin_build_dir());
    setenv("SGL_ATTN_GAUNTLET_PLUGIN_DIR", dir, 1);
    int plugins = 0;
    for (int k = 0;; k++) {
        char out[2048];
        int st = run_child(k, 0, out, sizeof out);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77) break;
        plugins++;
        if (strncmp(out, "skip", 4) == 0) {
            print_message("%s", out);
            continue;
        }
        for (size_t c = 0; c < N_BAD; c++) {
            st = c ? run_child(k, (int)c, out, sizeof out) : st;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_msg("plugin %d, batch_size %d / num_tokens %d: the process %s %d; output \"%s\"", k, bad[c].bs,
                         bad[c].tokens, WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st)
                                                                                ? WTERMSIG(st)
                                                                                : WEXITSTATUS(st), out);
            if (strncmp(out, "rc=", 3) || atoi(out + 3) == 0)
                fail_msg("batch_size %d / num_tokens %d accepted: %s", bad[c].bs, bad[c].tokens, out);
            print_message("batch_size %d, num_tokens %d: %s", bad[c].bs, bad[c].tokens, out);
        }
    }
    assert_true(plugins >= 1); /* cpu_ref at least */
    unsetenv("SGL_ATTN_GAUNTLET_PLUGIN_DIR");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_out_of_range),
    };
    return cmocka_run_group_tests_name("gauntlet_counts", tests, NULL, NULL);
}
