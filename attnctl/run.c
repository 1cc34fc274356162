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

enum { OPT_MODEL = 1, OPT_BACKEND, OPT_BATCH, OPT_LEN, OPT_TP, OPT_SEED, OPT_NO_CPU_FALLBACK };

static const attnctl_opt opts[] = {
    {OPT_MODEL, "--model", 0, "FILE", 0, "the model: our JSON, an HF config.json or a model directory (required)", "@file"},
    {OPT_BACKEND, "--backend", 0, "NAME", 0, "a plugin name or an sglang name (default: the automatic choice)", "@backend"},
    {OPT_BATCH, "--batch", 0, "B", 0, "requests in the batch, 1..256 (default 2)", NULL},
    {OPT_LEN, "--len", 0, "L", 0, "tokens per request, 1..2^20 (default 512)", NULL},
    {OPT_TP, "--tp", 0, "N", 0, "tensor-parallel size: divides the head counts (default 1)", NULL},
    {OPT_SEED, "--seed", 0, "N", 0, "the random inputs' seed (default: a fresh one, printed)", NULL},
    {OPT_NO_CPU_FALLBACK, "--no-cpu-fallback", 0, NULL, 0, "refuse an automatic CPU choice while a GPU plugin is usable", NULL},
    {0},
};

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

static int run(const attnctl_cmd *cmd, int argc, char **argv) {
    attnctl_common co;
    attnctl_args a;
    int pr = attnctl_parse(cmd, argc, argv, &co, &a);
    if (pr) return pr > 0 ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_USAGE;
    const char *model_path = NULL, *backend = NULL;
    long long batch = 2, len = 512, tp = 1;
    uint64_t seed = 0;
    int seed_given = 0, no_cpu_fallback = 0;
    for (int i = 0; i < a.n; i++) {
        const char *v = a.v[i].value;
        switch (a.v[i].id) {
        case OPT_MODEL: model_path = v; break;
        case OPT_BACKEND: backend = v; break;
        case OPT_BATCH:
            if (attnctl_int_arg(cmd, "--batch", v, 1, 256, &batch)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_LEN:
            if (attnctl_int_arg(cmd, "--len", v, 1, 1LL << 20, &len)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_TP:
            if (attnctl_int_arg(cmd, "--tp", v, 1, 4096, &tp)) return ATTNCTL_EXIT_USAGE;
            break;
        case OPT_SEED:
            if (attnctl_u64_arg(cmd, "--seed", v, &seed)) return ATTNCTL_EXIT_USAGE;
            seed_given = 1;
            break;
        case OPT_NO_CPU_FALLBACK: no_cpu_fallback = 1; break;
        }
    }
    if (!model_path) return attnctl_usage_error(cmd, "--model FILE is required");
    if (!seed_given) seed = hrng_fresh_seed();
    FILE *tf = co.json ? stderr : stdout;
    char err[4096];
    sgl_attn_model m;
    if (sgl_attn_model_from_file(model_path, (int)tp, &m, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: %s\n", attnctl_esc(err));
        return ATTNCTL_EXIT_ENV;
    }
    sgl_attn_host *h = attnctl_open_host(&co, cmd->name);
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
    req.no_cpu_fallback = no_cpu_fallback;
    int src = sgl_attn_select(h, &m, &req, &sel, err, sizeof err);
    if (src != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: no stack for %s: %s\n", attnctl_esc(m.name), attnctl_esc(err));
        if (src == SGL_ATTN_E_NOT_FOUND) code = ATTNCTL_EXIT_NOT_FOUND;
        goto done;
    }
    int color = attnctl_color(&co, stderr);
    for (size_t i = 0; i < sgl_attn_selection_warning_count(sel); i++)
        fprintf(stderr, "attnctl run: %swarning%s: %s\n", attnctl_sgr(color, "warning"), attnctl_sgr_reset(color),
                attnctl_esc(sgl_attn_selection_warning(sel, i)));
    /* the stack as a target spec "outer/.../inner" on the selection's device */
    char spec[256] = "";
    size_t o = 0;
    for (size_t i = 0; i < sgl_attn_selection_stack_depth(sel) && o < sizeof spec; i++)
        o += (size_t)snprintf(spec + o, sizeof spec - o, "%s%s", i ? "/" : "", sgl_attn_selection_stack_name(sel, i));
    if (htarget_open(&t, h, spec, (uint32_t)sgl_attn_selection_device(sel), err, sizeof err)) {
        fprintf(stderr, "attnctl run: %s\n", attnctl_esc(err));
        goto done;
    }
    int32_t layers[SGL_ATTN_MAX_LAYERS];
    size_t n_full = sgl_attn_selection_full_layers(sel, layers, SGL_ATTN_MAX_LAYERS);
    const int layer = n_full ? layers[0] : 0, state = sgl_attn_selection_state_bytes(sel) > 0;
    char keys[200], cases[2][HCASE_TEXT_MAX];
    long page = 16;
    if (shape_keys(&m, &t.caps, layer, state, &page, keys, sizeof keys, err, sizeof err)) {
        fprintf(stderr, "attnctl run: %s\n", attnctl_esc(err));
        goto done;
    }
    snprintf(cases[0], sizeof cases[0], "extend:b=%lld,l=%lld,q=%lld,%s", batch, len, len, keys);
    snprintf(cases[1], sizeof cases[1], "decode:b=%lld,l=%lld,%s", batch, len + 1, keys);
    sgl_attn_create_options copts = {.struct_size = sizeof copts,
                                     .max_reqs = (int32_t)batch + 3,
                                     .max_tokens = (int32_t)(batch * len),
                                     .max_context = (int32_t)(len + 1 + page)};
    if (sgl_attn_create(h, sel, &m, &copts, &b, err, sizeof err) != SGL_ATTN_OK) {
        fprintf(stderr, "attnctl run: creating %s failed: %s\n", sgl_attn_selection_label(sel), attnctl_esc(err));
        goto done;
    }
    t.fixed = b;
    fprintf(tf, "model: %s (%s), %d q heads, %d kv heads, head dims %d/%d%s, %d layers (%zu full attention)\n",
            attnctl_esc(m.name), attnctl_esc(m.model_type), m.num_q_heads, m.num_kv_heads, m.head_dim_qk, m.head_dim_v,
            m.is_mla ? ", MLA" : "", m.num_layers, n_full);
    fprintf(tf, "stack: %s on %s [device %d], seed 0x%016llx\n", sgl_attn_selection_label(sel),
            attnctl_esc(t.caps.device_name), sgl_attn_selection_device(sel), (unsigned long long)seed);
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
        if (r[i].verdict != HV_PASS) fprintf(tf, "         %s\n", attnctl_esc(r[i].message));
    }
    if (co.json) {
        cJSON *root = attnctl_json_root("run");
        cJSON_AddItemToObject(root, "model", attnctl_json_str(m.name));
        cJSON_AddItemToObject(root, "model_type", attnctl_json_str(m.model_type));
        cJSON_AddStringToObject(root, "stack", sgl_attn_selection_label(sel));
        cJSON_AddItemToObject(root, "device", attnctl_json_str(t.caps.device_name));
        char sx[32];
        snprintf(sx, sizeof sx, "0x%016llx", (unsigned long long)seed);
        cJSON_AddStringToObject(root, "seed", sx);
        cJSON_AddBoolToObject(root, "cpu_fallback", sgl_attn_selection_cpu_fallback(sel));
        cJSON *w = cJSON_AddArrayToObject(root, "warnings");
        for (size_t i = 0; i < sgl_attn_selection_warning_count(sel); i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(sgl_attn_selection_warning(sel, i)));
        cJSON *runs = cJSON_AddArrayToObject(root, "runs");
        for (int i = 0; i < 2; i++) {
            cJSON *ro = cJSON_CreateObject();
            cJSON_AddStringToObject(ro, "case", cases[i]);
            cJSON_AddStringToObject(ro, "verdict", hverdict_name(r[i].verdict));
            cJSON_AddItemToObject(ro, "ms", attnctl_json_num(r[i].ms_plugin > 0, r[i].ms_plugin));
            cJSON_AddItemToObject(ro, "ms_ref", attnctl_json_num(r[i].ms_ref > 0, r[i].ms_ref));
            /* no NMSE (never compared, or NaN/Inf in the output): null, never 0 */
            cJSON_AddItemToObject(ro, "nmse", attnctl_json_num(r[i].nmse >= 0, r[i].nmse));
            cJSON_AddItemToObject(ro, "threshold", attnctl_json_num(r[i].threshold > 0, r[i].threshold));
            cJSON_AddItemToObject(ro, "message", attnctl_json_str(r[i].message));
            cJSON_AddItemToArray(runs, ro);
        }
        attnctl_json_print(root);
    }
    code = ok ? ATTNCTL_EXIT_OK : ATTNCTL_EXIT_FAIL;
done:
    if (b) sgl_attn_destroy(b);
    htarget_close(&t);
    sgl_attn_selection_free(sel);
    sgl_attn_host_close(h);
    return code;
}

const attnctl_cmd attnctl_cmd_run = {
    .name = "run",
    .run = run,
    .summary = "one attention forward on a model's shapes, checked against the float64 reference",
    .synopsis = "--model FILE [--backend NAME] [--batch B] [--len L] [options]",
    .description = "Selects the stack for a model (automatically, or --backend), creates it, runs one extend and one\n"
                   "decode on random inputs with the model's shapes, and prints the stack, the times and the NMSE\n"
                   "against cpu_ref's float64 reference. The cases are printed so `attnctl check --case` replays them.",
    .opts = opts,
    .common = COMMON_HOST | COMMON_VALIDATE | COMMON_JSON | COMMON_COLOR,
    .isolate_default = 0,
    .exit_codes = "0 both runs passed; 1 no stack, a failed create or a failed run; 2 bad command line;\n"
                  "3 unreadable model file, or the host could not open; 4 unknown backend name.",
};
