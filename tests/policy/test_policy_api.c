/* test_policy_api.c - sgl_attn_select over a host whose plugin table is
 * filled by hand (no loading): supports_model is asked beforehand, the
 * wrapper's state_bytes_per_request sizes the pool, accessors and frees. */
#include "pt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse_big_heads(const sgl_attn_model *m, const sgl_attn_caps *caps, char *why, size_t n) {
    (void)caps;
    if (m->head_dim_qk <= 128) return SGL_ATTN_OK;
    snprintf(why, n, "head dim %d: this kernel is built for 128", m->head_dim_qk);
    return SGL_ATTN_E_UNSUPPORTED;
}

/* Bytes a gdn pool needs: per linear layer, conv state + ssm state (fp32). */
static uint64_t gdn_bytes(const sgl_attn_model *m) {
    int linear = 0;
    for (int i = 0; i < m->num_layers; i++) linear += !sgl_attn_model_layer_is_full(m, i);
    uint64_t conv = (uint64_t)(2 * m->lin_num_k_heads * m->lin_head_k_dim + m->lin_num_v_heads * m->lin_head_v_dim) *
                    (uint64_t)(m->lin_conv_kernel - 1);
    uint64_t ssm = (uint64_t)m->lin_num_v_heads * m->lin_head_k_dim * m->lin_head_v_dim;
    return (uint64_t)linear * (conv + ssm) * 4;
}

typedef struct fake_host {
    struct sgl_attn_host h;
    plugin_entry e[4];
    sgl_attn_caps caps[4];
} fake_host;

static void entry(fake_host *fh, int i, const char *name, int platform, int role, int kind, int32_t score) {
    plugin_entry *e = &fh->e[i];
    memset(e, 0, sizeof *e);
    e->info.struct_size = sizeof e->info;
    snprintf(e->info.name, sizeof e->info.name, "%s", name);
    e->info.platform = platform;
    e->info.role = role;
    e->info.hybrid_kind = kind;
    e->info.status = SGL_ATTN_PLUGIN_USABLE;
    e->loaded = 1;
    e->desc.struct_size = sizeof e->desc;
    e->desc.name = e->info.name;
    sgl_attn_caps *c = &fh->caps[i];
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->available = 1;
    c->arch_major = c->arch_minor = c->arch_min_major = c->arch_min_minor = c->arch_max_major = c->arch_max_minor = -1;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_BF16 | SGL_ATTN_DT_F32;
    c->features = 0x1ff;
    c->head_dim_qk_max = c->head_dim_v_max = 256;
    c->state_dtypes = SGL_ATTN_DT_F32;
    c->score = score;
    e->caps = c;
    e->n_caps = 1;
}

static fake_host *host_new(void) {
    fake_host *fh = calloc(1, sizeof *fh);
    assert_non_null(fh);
    entry(fh, 0, "fast_cpu", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_ROLE_FULL, 0, 50);
    fh->e[0].desc.supports_model = refuse_big_heads;
    entry(fh, 1, "cpu_ref", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_ROLE_FULL, 0, 1);
    entry(fh, 2, "gdn", SGL_ATTN_PLATFORM_CPU, SGL_ATTN_ROLE_HYBRID, SGL_ATTN_HYBRID_GDN, 10);
    fh->e[2].desc.state_bytes_per_request = gdn_bytes;
    entry(fh, 3, "validate", SGL_ATTN_PLATFORM_NONE, SGL_ATTN_ROLE_LAYER, 0, 0);
    fh->h.plugins = fh->e;
    fh->h.n_plugins = 4;
    return fh;
}

static void test_select_api_plain(void **state) {
    (void)state;
    fake_host *fh = host_new();
    sgl_attn_model m;
    pt_llama(&m);
    sgl_attn_selection *s = NULL;
    char err[1024];
    assert_int_equal(sgl_attn_select(&fh->h, &m, NULL, &s, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(sgl_attn_selection_label(s), "fast_cpu");
    assert_int_equal(sgl_attn_selection_stack_depth(s), 1);
    assert_string_equal(sgl_attn_selection_stack_name(s, 0), "fast_cpu");
    assert_null(sgl_attn_selection_stack_name(s, 1));
    assert_int_equal(sgl_attn_selection_is_split(s), 0);
    assert_int_equal(sgl_attn_selection_state_bytes(s), 0);
    assert_int_equal(sgl_attn_selection_device(s), 0);
    int32_t ids[64];
    assert_int_equal(sgl_attn_selection_full_layers(s, ids, 64), 32);
    assert_int_equal(ids[31], 31);
    assert_int_equal(sgl_attn_selection_full_layers(s, ids, 2), 32); /* count beyond cap */
    assert_true(sgl_attn_selection_verdict_count(s) >= 4);
    assert_null(sgl_attn_selection_verdict(s, 999));
    sgl_attn_selection_free(s);
    /* supports_model answered before selection: its reason is the verdict. */
    m.head_dim_qk = m.head_dim_v = 256;
    assert_int_equal(sgl_attn_select(&fh->h, &m, NULL, &s, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(sgl_attn_selection_label(s), "cpu_ref");
    const sgl_attn_verdict *v = sgl_attn_selection_verdict(s, 1);
    assert_string_equal(v->plugin, "fast_cpu");
    assert_string_equal(v->rule, "plugin-model");
    assert_string_equal(v->message, "head dim 256: this kernel is built for 128");
    sgl_attn_selection_free(s);
    /* A request of an older, shorter struct: fields past it read as zero. */
    sgl_attn_select_request old = {.struct_size = (uint32_t)offsetof(sgl_attn_select_request, platform),
                                   .backend = "cpu_ref", .platform = SGL_ATTN_PLATFORM_CUDA};
    assert_int_equal(sgl_attn_select(&fh->h, &m, &old, &s, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(sgl_attn_selection_label(s), "cpu_ref");
    sgl_attn_selection_free(s);
    /* Errors still hand out the selection (when asked) and free cleanly. */
    sgl_attn_select_request bad = {.struct_size = sizeof bad, .backend = "nope"};
    assert_int_equal(sgl_attn_select(&fh->h, &m, &bad, &s, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    assert_non_null(s);
    assert_int_equal(sgl_attn_selection_stack_depth(s), 0);
    sgl_attn_selection_free(s);
    assert_int_equal(sgl_attn_select(&fh->h, &m, &bad, NULL, err, sizeof err), SGL_ATTN_E_NOT_FOUND);
    assert_int_equal(sgl_attn_select(NULL, &m, NULL, &s, err, sizeof err), SGL_ATTN_E_INVALID);
    assert_null(s);
    sgl_attn_selection_free(NULL);
    free(fh);
}

static void test_select_api_hybrid_state_and_validate(void **state) {
    (void)state;
    fake_host *fh = host_new();
    fh->h.validate = 1; /* as SGL_ATTN_VALIDATE=1 sets it */
    sgl_attn_model m;
    pt_qwen3_next(&m);
    m.head_dim_qk = m.head_dim_v = 128;
    sgl_attn_selection *s = NULL;
    char err[1024];
    assert_int_equal(sgl_attn_select(&fh->h, &m, NULL, &s, err, sizeof err), SGL_ATTN_OK);
    assert_string_equal(sgl_attn_selection_label(s), "validate/gdn/fast_cpu");
    /* 36 linear layers of (2*16*128 + 32*128) * 3 conv + 32*128*128 ssm floats. */
    uint64_t want = 36ull * ((2 * 16 * 128 + 32 * 128) * 3ull + 32ull * 128 * 128) * 4;
    assert_int_equal(sgl_attn_selection_state_bytes(s), want);
    int32_t ids[64];
    assert_int_equal(sgl_attn_selection_full_layers(s, ids, 64), 12);
    sgl_attn_selection_free(s);
    /* Draft: layer 0 is the only full layer, so 47 linear layers. */
    sgl_attn_select_request r = {.struct_size = sizeof r, .is_draft = 1};
    assert_int_equal(sgl_attn_select(&fh->h, &m, &r, &s, err, sizeof err), SGL_ATTN_OK);
    assert_int_equal(sgl_attn_selection_full_layers(s, ids, 64), 1);
    assert_int_equal(ids[0], 0);
    assert_int_equal(sgl_attn_selection_state_bytes(s), 47ull * ((2 * 16 * 128 + 32 * 128) * 3ull + 32ull * 128 * 128) * 4);
    sgl_attn_selection_free(s);
    free(fh);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_api_plain),
        cmocka_unit_test(test_select_api_hybrid_state_and_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
