/* pt.c - fakes, models and runners for the policy tests. */
#include "pt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef POLICY_SRC_DIR
#define POLICY_SRC_DIR "."
#endif

const char *pt_src(const char *rel) {
    static char buf[4096]; /* tests are single-threaded */
    snprintf(buf, sizeof buf, "%s/%s", POLICY_SRC_DIR, rel);
    return buf;
}

#ifndef HF_CORPUS_DIR
#define HF_CORPUS_DIR "../shared/hf-configs"
#endif

const char *pt_corpus(const char *file) {
    static char buf[4096];
    struct stat st;
    if (stat(HF_CORPUS_DIR, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "skipped: no config.json corpus at %s (tests/data/hf-configs/README.md)\n", HF_CORPUS_DIR);
        return NULL;
    }
    snprintf(buf, sizeof buf, "%s/%s", HF_CORPUS_DIR, file);
    return buf;
}

char *pt_read(const char *rel, size_t *len) {
    FILE *f = fopen(pt_src(rel), "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = 0;
    if (len) *len = (size_t)n;
    return buf;
}

pt_world *pt_world_new(const char *conf_text) {
    pt_world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    char err[1024] = "";
    size_t len;
    char *text = conf_text ? NULL : pt_read("conf/sglattn.json", &len);
    int rc = conf_parse(conf_text ? conf_text : text, conf_text ? strlen(conf_text) : len,
                        conf_text ? "test.json" : "sglattn.json", &w->rules, err, sizeof err);
    if (rc) fprintf(stderr, "conf: %s\n", err);
    assert_int_equal(rc, SGL_ATTN_OK);
    free(text);
    return w;
}

void pt_world_free(pt_world *w) {
    select_clear(&w->sel);
    conf_free(w->rules);
    free(w);
}

static pt_fake *add(pt_world *w, const char *name, int platform, int role) {
    assert_true(w->n < PT_MAX);
    pt_fake *f = &w->f[w->n];
    sel_candidate *c = &w->c[w->n];
    memset(f, 0, sizeof *f);
    memset(c, 0, sizeof *c);
    f->info.struct_size = sizeof f->info;
    f->info.status = SGL_ATTN_PLUGIN_USABLE;
    snprintf(f->info.name, sizeof f->info.name, "%s", name);
    snprintf(f->info.path, sizeof f->info.path, "/fake/%s.so", name);
    f->info.platform = platform;
    f->info.role = role;
    f->caps.struct_size = sizeof f->caps;
    f->caps.available = 1;
    f->caps.arch_major = f->caps.arch_minor = -1;
    f->caps.arch_min_major = f->caps.arch_min_minor = f->caps.arch_max_major = f->caps.arch_max_minor = -1;
    f->caps.q_dtypes = f->caps.kv_dtypes = SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F16 | SGL_ATTN_DT_F32;
    f->caps.features = 0x1ff;
    f->caps.state_dtypes = SGL_ATTN_DT_F32;
    c->plugin_index = w->n;
    c->info = &f->info;
    c->caps = &f->caps;
    c->model_ok = 1;
    w->n++;
    return f;
}

pt_fake *pt_full(pt_world *w, const char *name, int platform, uint32_t kinds, int32_t score) {
    pt_fake *f = add(w, name, platform, SGL_ATTN_ROLE_FULL);
    f->caps.attn_kinds = kinds;
    if (kinds == SGL_ATTN_KIND_MLA) {
        f->caps.n_head_dims = 1;
        f->caps.head_dims[0].qk = 576;
        f->caps.head_dims[0].v = 512;
    } else {
        f->caps.head_dim_qk_max = f->caps.head_dim_v_max = 256;
    }
    f->caps.score = score;
    return f;
}

pt_fake *pt_wrapper(pt_world *w, const char *name, int platform, int kind) {
    pt_fake *f = add(w, name, platform, SGL_ATTN_ROLE_HYBRID);
    f->info.hybrid_kind = kind;
    f->caps.score = 10;
    return f;
}

pt_fake *pt_layer(pt_world *w, const char *name) { return add(w, name, SGL_ATTN_PLATFORM_NONE, SGL_ATTN_ROLE_LAYER); }

pt_fake *pt_arch(pt_fake *f, int major, int minor) {
    f->caps.arch_major = major;
    f->caps.arch_minor = minor;
    snprintf(f->caps.arch_name, sizeof f->caps.arch_name, "sm_%d%d", major, minor);
    return f;
}

pt_fake *pt_alias(pt_fake *f, const char *alias) {
    snprintf(f->info.aliases[f->info.n_aliases++], sizeof f->info.aliases[0], "%s", alias);
    return f;
}

void pt_unavailable(pt_fake *f, const char *reason) {
    f->caps.available = 0;
    snprintf(f->caps.reason, sizeof f->caps.reason, "%s", reason);
}

sel_candidate *pt_cand(pt_world *w, const pt_fake *f) { return &w->c[f - w->f]; }

int pt_select(pt_world *w, const sgl_attn_model *m, const sgl_attn_select_request *req) {
    select_clear(&w->sel);
    for (size_t i = 0; i < w->n; i++) w->c[i].score = w->f[i].caps.score;
    sgl_attn_select_request zero = {.struct_size = sizeof zero};
    sel_input in = {.model = m, .req = req ? req : &zero, .cands = w->c, .n_cands = w->n, .rules = w->rules};
    w->err[0] = 0;
    return select_run(&in, &w->sel, w->err, sizeof w->err);
}

int pt_select_name(pt_world *w, const sgl_attn_model *m, const char *backend, int platform) {
    sgl_attn_select_request r = {.struct_size = sizeof r, .backend = backend, .platform = platform};
    return pt_select(w, m, &r);
}

const sgl_attn_verdict *pt_verdict(const pt_world *w, const char *name, const char *stage) {
    for (size_t i = 0; i < w->sel.n_verdicts; i++)
        if (!strcmp(w->sel.verdicts[i].plugin, name) && (!stage || !strcmp(w->sel.verdicts[i].stage, stage)))
            return &w->sel.verdicts[i];
    return NULL;
}

void pt_llama(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    snprintf(m->model_type, sizeof m->model_type, "llama");
    m->num_layers = 32;
    m->num_q_heads = 32;
    m->num_kv_heads = 8;
    m->head_dim_qk = m->head_dim_v = 128;
}

void pt_deepseek(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    snprintf(m->model_type, sizeof m->model_type, "deepseek_v3");
    m->num_layers = 61;
    m->num_q_heads = 128;
    m->num_kv_heads = 1;
    m->is_mla = 1;
    m->kv_lora_rank = 512;
    m->qk_rope_head_dim = 64;
    m->head_dim_qk = 576;
    m->head_dim_v = 512;
}

void pt_encdec(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    snprintf(m->model_type, sizeof m->model_type, "whisper");
    m->num_layers = 32;
    m->num_q_heads = m->num_kv_heads = 20;
    m->head_dim_qk = m->head_dim_v = 64;
    m->is_encoder_decoder = 1;
}

void pt_qwen3_next(sgl_attn_model *m) {
    sgl_attn_model_init(m);
    snprintf(m->model_type, sizeof m->model_type, "qwen3_next");
    m->num_layers = 48;
    m->num_q_heads = 16;
    m->num_kv_heads = 2;
    m->head_dim_qk = m->head_dim_v = 256;
    m->hybrid_kind = SGL_ATTN_HYBRID_GDN;
    memset(m->full_attention_mask, 0, sizeof m->full_attention_mask);
    for (int i = 3; i < 48; i += 4) m->full_attention_mask[0] |= 1ull << i;
    m->lin_num_k_heads = 16;
    m->lin_num_v_heads = 32;
    m->lin_head_k_dim = m->lin_head_v_dim = 128;
    m->lin_conv_kernel = 4;
}
