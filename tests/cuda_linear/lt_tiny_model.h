/* tests/cuda_linear/lt_tiny_model.h - the tiny Qwen3-Next-shaped hybrid model
 * that test_lin_e2e and test_lin_stack_graph run through gdn_cuda/cuda_attn:
 * four layers, 1 and 3 full attention (GQA 4/2, d128, bf16), 0 and 2 gated
 * delta rule (2 k heads, 4 v heads, 128 x 128, conv width 4, f32 state); and
 * the host both open over the plugin directory under test. */
#ifndef LT_TINY_MODEL_H
#define LT_TINY_MODEL_H

#include <stdio.h>
#include <string.h>

#include "sgl_attn.h"

enum { LAYERS = 4, HQ = 4, HKV = 2, D = 128, HK = 2, HV = 4, KD = 128, VD = 128, CW = 4, CONV = 2 * HK * KD + HV * VD };

static inline void lt_tiny_model(sgl_attn_model *m, const char *name) {
    sgl_attn_model_init(m);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->model_type, sizeof m->model_type, "qwen3_next");
    m->num_layers = LAYERS;
    m->num_q_heads = HQ;
    m->num_kv_heads = HKV;
    m->head_dim_qk = m->head_dim_v = D;
    m->dtype = m->kv_dtype = SGL_ATTN_DT_BF16;
    m->sliding_window = -1;
    m->hybrid_kind = SGL_ATTN_HYBRID_GDN;
    memset(m->full_attention_mask, 0, sizeof m->full_attention_mask);
    m->full_attention_mask[0] = (1u << 1) | (1u << 3);
    m->lin_num_k_heads = HK;
    m->lin_num_v_heads = HV;
    m->lin_head_k_dim = KD;
    m->lin_head_v_dim = VD;
    m->lin_conv_kernel = CW;
    m->lin_state_dtype = SGL_ATTN_DT_F32;
}

/* The host over dir alone (no environment path, default dir or conf), so the
 * plugins under test are the ones found; NULL after printing the FAIL line. */
static inline sgl_attn_host *lt_tiny_host_open(const char *dir) {
    sgl_attn_host_options ho;
    memset(&ho, 0, sizeof ho);
    ho.struct_size = sizeof ho;
    ho.plugin_path = dir;
    ho.ignore_env_path = 1;
    ho.no_default_dir = 1;
    ho.no_conf = 1;
    sgl_attn_host *h = NULL;
    char err[1024];
    if (sgl_attn_host_open(&ho, &h, err, sizeof err) != SGL_ATTN_OK) {
        printf("FAIL: host open: %s\n", err);
        return NULL;
    }
    return h;
}

#endif
