/* run.c - attnctl run: a real attention run for a model file.  Select the
 * stack (automatic, or --backend), create it, run one extend and one decode
 * on random inputs with the model's shapes through the full-attention
 * family, and print the stack, the times and the NMSE against cpu_ref's
 * float64 reference.  The cases are printed so `check --case` replays them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnctl.h"
#include "harness/harness.h"

static void usage(FILE *f) {
    fprintf(f, "usage: attnctl run --model FILE [--backend NAME] [--batch B] [--len L] [--tp N] [--seed N] [--json]\n");
}

static const char *dt_name(uint32_t bit) {
    switch (bit) {
    case SGL_ATTN_DT_F32: return "f32";
    case SGL_ATTN_DT_F16: return "f16";
    case SGL_ATTN_DT_F64: return "f64";
    case SGL_ATTN_DT_BF16: return "bf16";
    default: return NULL;
    }
}

/* The model's attention shape as case keys (docs/harness.md). */
static int shape_keys(const sgl_attn_model *m, const sgl_attn_caps *caps, int layer, int state, long *page_out,
                      char *buf, size_t size, char *err, size_t err_size) {
    const char *dt = dt_name(m->dtype ? m->dtype : SGL_ATTN_DT_BF16);
    const char *kv = dt_name(m->kv_dtype ? m->kv_dtype : (m->dtype ? m->dtype : SGL_ATTN_DT_BF16));
    if (!dt || !kv) {
        snprintf(err, err_size, "the model's dtype / KV dtype (bits 0x%x / 0x%x) are not in the harness (f32 f16 bf16)",
                 m->dtype, m->kv_dtype);
        return -1;
    }
    long page = m->page_size > 0 ? m->page_size
                : caps->n_page_sizes > 0 ? (long)caps->page_sizes[0]
                : caps->page_size_max >= 16 ? 16
                                            : 1;
    *page_out = page;
    int n;
    if (m->is_mla) {
        double nope = m->qk_nope_head_dim > 0 ? m->qk_nope_head_dim : 128;
        n = snprintf(buf, size, "hq=%d,mla=1,rank=%d,rope=%d,scale=%.9g", m->num_q_heads, m->kv_lora_rank,
                     m->qk_rope_head_dim, 1.0 / sqrt(nope + m->qk_rope_head_dim));
    } else {
        n = snprintf(buf, size, "hq=%d,hkv=%d,d=%d,dv=%d", m->num_q_heads, m->num_kv_heads, m->head_dim_qk,
                     m->head_dim_v > 0 ? m->head_dim_v : m->head_dim_qk);
    }
    n += snprintf(buf + n, size - (size_t)n, ",dtype=%s,kvdtype=%s,page=%ld", dt, kv, page);
    if (m->sliding_window >= 0) n += snprintf(buf + n, size - (size_t)n, ",window=%d", m->sliding_window);
    if (m->logit_softcap > 0) n += snprintf(buf + n, size - (size_t)n, ",softcap=%g", (double)m->logit_softcap);
    if (m->has_sinks) n += snprintf(buf + n, size - (size_t)n, ",sinks=1");
    if (layer) n += snprintf(buf + n, size - (size_t)n, ",layer=%d", layer);
    if (state) n += snprintf(buf + n, size - (size_t)n, ",state=1");
    if ((size_t)n >= size) {
        snprintf(err, err_size, "case string too long");
        return -1;
    }
    return 0;
}

int cmd_run(int argc, char **argv) {
    attnctl_common co;
    memset(&co, 0, sizeof co);
    const char *model_path = NULL, *backend = NULL;
    long batch = 2, len = 512, tp = 1;
    uint64_t seed = 0;
    int seed_given = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        int k = attnctl_common_opt(&co, argc, argv, &i);
        if (k < 0) return ATTNCTL_EXIT_USAGE;
        if (k > 0) continue;
        const char *a = argv[i];
        const int has_val = i + 1 < argc;
        char *end = NULL;
        if (!strcmp(a, "--model") && has_val) model_path = argv[++i];
        else if (!strcmp(a, "--backend") && has_val) backend = argv[++i];
        else if (!strcmp(a, "--batch") && has_val) batch = strtol(argv[++i], &end, 0), bad |= *end || batch < 1 || batch > 256;
        else if (!strcmp(a, "--len") && has_val) len = strtol(argv[++i], &end, 0), bad |= *end || len < 1 || len > (1L << 20);
        else if (!strcmp(a, "--tp") && has_val) tp = strtol(argv[++i], &end, 0), bad |= *end || tp < 1 || tp > 1024;
        else if (!strcmp(a, "--seed") && has_val) seed = strtoull(argv[++i], &end, 0), seed_given = 1, bad |= *end != 0;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ATTNCTL_EXIT_OK;
        } else {
            fprintf(stderr, "attnctl run: unknown or incomplete option '%s'\n", a);
            bad = 1;
        }
    }
    if (bad || !model_path) {
        if (!bad) fprintf(stderr, "attnctl run: --model is required\n");
        else fprintf(stderr, "attnctl run: bad value (--batch 1..256, --len 1..2^20, --tp 1..1024)\n");
        usage(stderr);
        return ATTNCTL_EXIT_USAGE;
    }
    if (!seed_given) seed = hrng_fresh_seed();
    FILE *tf = co.json ? stderr : stdout;
    char err[1024];
    sgl_attn_model m;
    if (sgl_attn_model_from_file(model_path, (int)tp, &m, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: %s\n", err);
        return ATTNCTL_EXIT_ENV;
    }
    sgl_attn_host *h = attnctl_open_host(&co);
    if (!h) return ATTNCTL_EXIT_ENV;
    int code = ATTNCTL_EXIT_FAIL;
    sgl_attn_selection *sel = NULL;
    sgl_attn_backend *b = NULL;
    htarget t;
    memset(&t, 0, sizeof t);
    sgl_attn_select_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.backend = backend;
    req.validate = co.validate;
    if (sgl_attn_select(h, &m, &req, &sel, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: no stack for %s: %s\n", m.name, err);
        goto done;
    }
    /* the stack as a target spec "outer/.../inner" on the selection's device */
    char spec[256] = "";
    size_t o = 0;
    for (size_t i = 0; i < sgl_attn_selection_stack_depth(sel) && o < sizeof spec; i++)
        o += (size_t)snprintf(spec + o, sizeof spec - o, "%s%s", i ? "/" : "", sgl_attn_selection_stack_name(sel, i));
    if (htarget_open(&t, h, spec, (uint32_t)sgl_attn_selection_device(sel), err, sizeof err)) {
        fprintf(stderr, "attnctl run: %s\n", err);
        goto done;
    }
    int32_t layers[SGL_ATTN_MAX_LAYERS];
    size_t n_full = sgl_attn_selection_full_layers(sel, layers, SGL_ATTN_MAX_LAYERS);
    const int layer = n_full ? layers[0] : 0, state = sgl_attn_selection_state_bytes(sel) > 0;
    char keys[200], cases[2][HCASE_TEXT_MAX];
    long page = 16;
    if (shape_keys(&m, &t.caps, layer, state, &page, keys, sizeof keys, err, sizeof err)) {
        fprintf(stderr, "attnctl run: %s\n", err);
        goto done;
    }
    snprintf(cases[0], sizeof cases[0], "extend:b=%ld,l=%ld,q=%ld,%s", batch, len, len, keys);
    snprintf(cases[1], sizeof cases[1], "decode:b=%ld,l=%ld,%s", batch, len + 1, keys);
    sgl_attn_create_options opts = {.struct_size = sizeof opts,
                                    .max_reqs = (int32_t)batch + 3,
                                    .max_tokens = (int32_t)(batch * len),
                                    .max_context = (int32_t)(len + 1 + page)};
    if (sgl_attn_create(h, sel, &m, &opts, &b, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: creating %s failed: %s\n", sgl_attn_selection_label(sel), err);
        goto done;
    }
    t.fixed = b;
    fprintf(tf, "model: %s (%s), %d q heads, %d kv heads, head dims %d/%d%s, %d layers (%zu full attention)\n", m.name,
            m.model_type, m.num_q_heads, m.num_kv_heads, m.head_dim_qk, m.head_dim_v, m.is_mla ? ", MLA" : "",
            m.num_layers, n_full);
    fprintf(tf, "stack: %s on %s [device %d], seed 0x%016llx\n", sgl_attn_selection_label(sel), t.caps.device_name,
            sgl_attn_selection_device(sel), (unsigned long long)seed);
    hresult r[2];
    int ok = 1;
    for (int i = 0; i < 2; i++) {
        hcase c;
        hresult_init(&r[i]);
        if (hcase_parse(cases[i], &c, err, sizeof err)) hresult_error(&r[i], "%s", err);
        else harness_family_full.check(&harness_family_full, &t, &c, hrng_case_seed(seed, c.text), &r[i]);
        ok &= r[i].verdict == HV_PASS;
        fprintf(tf, "  %-6s %-13s %.1f ms (reference %.1f ms)  nmse %.2e (limit %.0e)\n         %s\n",
                i ? "decode" : "extend", hverdict_name(r[i].verdict), r[i].ms_plugin, r[i].ms_ref, r[i].nmse,
                r[i].threshold, cases[i]);
        if (r[i].verdict != HV_PASS) fprintf(tf, "         %s\n", r[i].message);
    }
    if (co.json) {
        printf("{\"model\": ");
        attnctl_json_str(stdout, m.name);
        printf(", \"stack\": ");
        attnctl_json_str(stdout, sgl_attn_selection_label(sel));
        printf(", \"device\": ");
        attnctl_json_str(stdout, t.caps.device_name);
        printf(", \"seed\": \"0x%016llx\", \"runs\": [", (unsigned long long)seed);
        for (int i = 0; i < 2; i++) {
            printf("%s{\"case\": ", i ? ", " : "");
            attnctl_json_str(stdout, cases[i]);
            printf(", \"verdict\": ");
            attnctl_json_str(stdout, hverdict_name(r[i].verdict));
            printf(", \"ms\": %.3f, \"ms_ref\": %.3f, \"nmse\": %.6g, \"threshold\": %.6g, \"message\": ", r[i].ms_plugin,
                   r[i].ms_ref, r[i].nmse, r[i].threshold);
            attnctl_json_str(stdout, r[i].message);
            printf("}");
        }
        printf("]}\n");
    }
    code = ok ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_FAIL;
done:
    if (b) sgl_attn_destroy(b);
    htarget_close(&t);
    sgl_attn_selection_free(sel);
    sgl_attn_host_close(h);
    return code;
}
