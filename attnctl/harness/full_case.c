/* full_case.c - full-attention case strings: keys, defaults and limits
 * (docs/harness.md), the model they imply, and whether a probe claims them. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "full.h"

static const char *const keys[] = {"b",     "l",    "q",      "prefix", "hq",    "hkv",    "d",   "dv",
                                   "dtype", "kvdtype", "page", "window", "softcap", "sinks", "cross", "enc",
                                   "mla",   "rank", "rope",   "ragged", "scale", "idx",    "save", "seed",
                                   "layer", "state", "kscale", "vscale", "scalet", "chunk", "local", "omp",
                                   "tree",  "draft", "attn",   "encsave", "ptable", "smap", NULL};

int fa_case_parse(const hcase *c, fa_case *f, char *err, size_t err_size) {
    memset(f, 0, sizeof *f);
    if (!strcmp(c->mode, "decode")) f->mode = SGL_ATTN_MODE_DECODE;
    else if (!strcmp(c->mode, "extend")) f->mode = SGL_ATTN_MODE_EXTEND;
    else if (!strcmp(c->mode, "verify")) f->mode = SGL_ATTN_MODE_TARGET_VERIFY;
    else return hcase_bad(c, err, err_size, "the mode is not decode, extend or verify");
    if (hcase_check_keys(c, keys, err, err_size)) return -1;
    HCASE_INT("b", 1, 1, FA_MAX_REQS, f->b);
    HCASE_INT("mla", 0, 0, 1, f->mla);
    HCASE_INT("rank", 512, 1, 1024, f->rank);
    HCASE_INT("rope", 64, 0, 1024, f->rope);
    HCASE_INT("hq", 8, 1, 1024, f->hq);
    HCASE_INT("hkv", f->mla ? 1 : f->hq, 1, 1024, f->hkv);
    HCASE_INT("d", f->mla ? f->rank + f->rope : 128, 1, 2048, f->d);
    HCASE_INT("dv", f->mla ? f->rank : f->d, 1, 2048, f->dv);
    if (f->mla && (f->hkv != 1 || f->d != f->rank + f->rope || f->dv != f->rank))
        return hcase_bad(c, err, err_size, "mla=1 means hkv=1, d=rank+rope, dv=rank; give rank/rope instead");
    if (f->hq % f->hkv) return hcase_bad(c, err, err_size, "hq must be a multiple of hkv");
    HCASE_INT("l", 256, 1, 1L << 22, f->l);
    const int has_p = hcase_get(c, "prefix") != NULL;
    if (f->mode == SGL_ATTN_MODE_EXTEND) {
        HCASE_INT("prefix", 0, 0, f->l - 1, f->prefix);
        HCASE_INT("q", f->l - f->prefix, 1, f->l, f->q);
        if (!has_p) f->prefix = f->l - f->q;
        if (f->prefix + f->q != f->l) return hcase_bad(c, err, err_size, "extend needs prefix + q = l");
    } else {
        HCASE_INT("q", f->mode == SGL_ATTN_MODE_DECODE ? 1 : 2, 1, f->l, f->q);
        if (f->mode == SGL_ATTN_MODE_DECODE && f->q != 1)
            return hcase_bad(c, err, err_size, "decode has one new token per request (verify:q=N has several)");
        if (has_p) return hcase_bad(c, err, err_size, "prefix is an extend key (decode/verify: l includes the new tokens)");
        f->prefix = f->l - f->q;
    }
    if (hcase_dtype(c, "dtype", HDT_BF16, &f->dt, err, err_size)) return -1;
    if (hcase_dtype(c, "kvdtype", f->dt, &f->kvdt, err, err_size)) return -1;
    HCASE_INT("page", 16, 1, 1L << 16, f->page);
    HCASE_INT("window", -1, -1, 1L << 22, f->window);
    if (hcase_num(c, "softcap", 0, 0, 1e6, &f->softcap, err, err_size)) return -1;
    HCASE_INT("sinks", 0, 0, 1, f->sinks);
    HCASE_INT("cross", 0, 0, 1, f->cross);
    HCASE_INT("enc", f->cross ? 128 : 0, f->cross ? 1 : 0, 1L << 20, f->enc);
    HCASE_INT("ragged", 0, 0, 1, f->ragged);
    HCASE_INT("idx", 32, 32, 64, f->idx);
    if (f->idx != 32 && f->idx != 64) return hcase_bad(c, err, err_size, "idx is 32 or 64");
    HCASE_INT("save", f->cross ? 0 : 1, 0, 1, f->save);
    if (f->cross && f->save)
        return hcase_bad(c, err, err_size, "a cross-attention layer reads the encoder K/V in the pool; it saves none");
    if (f->cross && f->window >= 0) return hcase_bad(c, err, err_size, "cross attention has no window");
    double def_scale = 1.0 / sqrt((double)(f->mla ? 128 + f->rope : f->d));
    if (hcase_num(c, "scale", def_scale, 1e-6, 1e3, &f->scale, err, err_size)) return -1;
    /* fp8 pools: scales that are not 1 and differ, so a swapped or ignored scale shows */
    const int fp8 = f->kvdt == HDT_FP8_E4M3;
    if (hcase_num(c, "kscale", fp8 ? 1.0 / 64 : 1, 1e-6, 1e6, &f->kscale, err, err_size)) return -1;
    if (hcase_num(c, "vscale", fp8 ? 1.0 / 32 : 1, 1e-6, 1e6, &f->vscale, err, err_size)) return -1;
    HCASE_INT("scalet", 0, 0, 1, f->scalet);
    if (!fp8 && (f->kscale != 1 || f->vscale != 1 || f->scalet))
        return hcase_bad(c, err, err_size, "kscale, vscale and scalet are for kvdtype=fp8_e4m3");
    HCASE_INT("layer", 0, 0, SGL_ATTN_MAX_LAYERS - 1, f->layer);
    HCASE_INT("state", 0, 0, 1, f->state);
    HCASE_INT("chunk", 0, 0, 1L << 30, f->chunk);
    HCASE_INT("local", 0, 0, f->chunk > 0 ? f->chunk - 1 : 0, f->local);
    HCASE_INT("omp", 0, 0, 1L << 30, f->omp);
    if (f->chunk == 0 && (hcase_get(c, "local") || hcase_get(c, "omp")))
        return hcase_bad(c, err, err_size, "local and omp are dual chunk keys: give chunk too");
    if (f->chunk > 0 && (f->mode == SGL_ATTN_MODE_TARGET_VERIFY || f->cross || f->enc || f->mla || f->window >= 0 ||
                         f->softcap > 0 || f->sinks))
        return hcase_bad(c, err, err_size,
                   "dual chunk attention (chunk) is a decode/extend case of plain self-attention: no cross, enc, "
                   "mla, window, softcap or sinks");
    if (fa_engine_parse(c, f, err, err_size)) return -1;
    /* the engine inputs' reference (full_engine.c) reads pools unscaled and has no dual chunk parts */
    if (fa_case_engine(f) && (f->chunk > 0 || fp8))
        return hcase_bad(c, err, err_size, "tree, draft, attn, encsave, ptable and smap take no chunk and no kvdtype=fp8_e4m3");
    long seed;
    if (hcase_get(c, "seed")) {
        HCASE_INT("seed", 0, 0, __LONG_MAX__, seed);
        f->has_seed = 1;
        f->seed = (uint64_t)seed;
    }
    return 0;
}

void fa_case_model(const fa_case *f, const char *name, sgl_attn_model *m) {
    sgl_attn_model_init(m);
    m->struct_size = sizeof *m;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->model_type, sizeof m->model_type, "%s", f->mla ? "deepseek_v3" : "harness");
    m->num_layers = 1;
    m->num_q_heads = (int32_t)f->hq;
    m->num_kv_heads = (int32_t)f->hkv;
    m->head_dim_qk = (int32_t)f->d;
    m->head_dim_v = (int32_t)f->dv;
    m->dtype = hdtype_bit(f->dt);
    m->kv_dtype = hdtype_bit(f->kvdt);
    m->is_mla = (int32_t)f->mla;
    if (f->mla) {
        m->kv_lora_rank = (int32_t)f->rank;
        m->qk_rope_head_dim = (int32_t)f->rope;
        m->qk_nope_head_dim = 128;
        m->v_head_dim = 128;
    }
    m->is_encoder_decoder = f->cross || f->enc > 0;
    m->sliding_window = (int32_t)f->window;
    m->logit_softcap = (float)f->softcap;
    m->has_sinks = (int32_t)f->sinks;
    m->page_size = (int32_t)f->page;
    m->spec_tokens = f->mode == SGL_ATTN_MODE_TARGET_VERIFY ? (int32_t)f->q : 0;
    m->attn_type = (int32_t)f->attn;
    m->hybrid_kind = SGL_ATTN_HYBRID_NONE;
    m->dca_chunk_size = (int32_t)f->chunk;
    m->dca_local_size = (int32_t)f->local;
    m->dca_original_max_position = (int32_t)f->omp;
    memset(m->full_attention_mask, 0, sizeof m->full_attention_mask);
    m->full_attention_mask[0] = 1;
}

int fa_case_claimed(const fa_case *f, const sgl_attn_caps *c, char *why, size_t why_size) {
    if (!c->available) return snprintf(why, why_size, "device not available: %s", c->reason), 0;
    if (!(c->q_dtypes & hdtype_bit(f->dt)))
        return snprintf(why, why_size, "the probe does not claim dtype %s", hdtype_name(f->dt)), 0;
    if (!(c->kv_dtypes & hdtype_bit(f->kvdt)))
        return snprintf(why, why_size, "the probe does not claim KV dtype %s", hdtype_name(f->kvdt)), 0;
    if (c->n_head_dims > 0) {
        int ok = 0;
        for (uint32_t i = 0; i < c->n_head_dims && i < SGL_ATTN_MAX_LIST; i++)
            ok |= c->head_dims[i].qk == f->d && c->head_dims[i].v == f->dv;
        if (!ok) return snprintf(why, why_size, "the probe does not list head dims (%ld, %ld)", f->d, f->dv), 0;
    } else if ((uint32_t)f->d > c->head_dim_qk_max || (uint32_t)f->dv > c->head_dim_v_max) {
        return snprintf(why, why_size, "head dims (%ld, %ld) exceed the probe's (%u, %u)", f->d, f->dv,
                        c->head_dim_qk_max, c->head_dim_v_max),
               0;
    }
    if (c->n_page_sizes > 0) {
        int ok = 0;
        for (uint32_t i = 0; i < c->n_page_sizes && i < SGL_ATTN_MAX_LIST; i++) ok |= c->page_sizes[i] == f->page;
        if (!ok) return snprintf(why, why_size, "the probe does not list page size %ld", f->page), 0;
    } else if ((uint64_t)f->page > c->page_size_max) {
        return snprintf(why, why_size, "page size %ld exceeds the probe's %u", f->page, c->page_size_max), 0;
    }
    const uint32_t kind = f->mla ? SGL_ATTN_KIND_MLA
                          : f->hkv == f->hq ? SGL_ATTN_KIND_MHA
                          : f->hkv == 1     ? SGL_ATTN_KIND_MQA
                                            : SGL_ATTN_KIND_GQA;
    static const char *const kind_names[] = {"MHA", "GQA", "MQA", "MLA", "cross"};
    for (int i = 0; i < 5; i++)
        if (((kind | (f->cross ? SGL_ATTN_KIND_CROSS : 0)) & (1u << i)) && !(c->attn_kinds & (1u << i)))
            return snprintf(why, why_size, "the probe does not claim %s attention", kind_names[i]), 0;
    if (c->max_gqa_ratio && (uint64_t)(f->hq / f->hkv) > c->max_gqa_ratio)
        return snprintf(why, why_size, "GQA ratio %ld exceeds the probe's %u", f->hq / f->hkv, c->max_gqa_ratio), 0;
    uint32_t need = f->mode == SGL_ATTN_MODE_EXTEND ? SGL_ATTN_FEAT_EXTEND
                    : f->mode == SGL_ATTN_MODE_DECODE ? SGL_ATTN_FEAT_DECODE
                                                      : SGL_ATTN_FEAT_SPEC_DECODE;
    if (f->window >= 0) need |= SGL_ATTN_FEAT_SLIDING_WINDOW;
    if (f->softcap > 0) need |= SGL_ATTN_FEAT_SOFTCAP;
    if (f->sinks) need |= SGL_ATTN_FEAT_SINKS;
    if (f->mla && f->mode == SGL_ATTN_MODE_EXTEND) need |= SGL_ATTN_FEAT_MLA_EXTEND;
    if (!f->mla && f->d != f->dv) need |= SGL_ATTN_FEAT_DIFF_HEAD_DIMS;
    if (f->chunk > 0) need |= SGL_ATTN_FEAT_DUAL_CHUNK;
    need |= fa_engine_needs(f);
    static const char *const feat_names[] = {"extend", "decode", "sliding window", "soft-cap", "sinks",
                                             "graph capture", "speculative verify", "MLA extend",
                                             "different qk/v head dims", "tree verify (custom_mask)",
                                             "draft extend", "ragged attention", "LSE output",
                                             "page tables", "slot maps", "caller-owned state",
                                             "attention types", "encoder slots (encoder_out_cache_loc)"};
    for (int i = 0; i < (int)(sizeof feat_names / sizeof feat_names[0]); i++)
        if ((need & (1u << i)) && !(c->features & (1u << i)))
            return snprintf(why, why_size, "the probe does not claim %s", feat_names[i]), 0;
    if ((need & SGL_ATTN_FEAT_DUAL_CHUNK) && !(c->features & SGL_ATTN_FEAT_DUAL_CHUNK))
        return snprintf(why, why_size, "the probe does not claim dual chunk attention"), 0;
    if (f->scalet && !(c->features & SGL_ATTN_FEAT_FP8_SCALES))
        return snprintf(why, why_size, "the probe does not claim fp8 scale tensors"), 0;
    return 1;
}

double fa_pool_scale(const fa_case *f, int is_v) {
    if (f->kvdt != HDT_FP8_E4M3) return 1;
    return is_v && !f->mla ? f->vscale : f->kscale;
}

double fa_pool_raw(const fa_case *f, int is_v, double x) {
    if (f->kvdt != HDT_FP8_E4M3) return hdtype_round(f->kvdt, x);
    return hdtype_round(HDT_FP8_E4M3, (double)((float)x / (float)fa_pool_scale(f, is_v)));
}

double fa_case_threshold(const fa_case *f) {
    double a = hthreshold(f->dt), b = hthreshold(f->kvdt);
    return a > b ? a : b;
}
