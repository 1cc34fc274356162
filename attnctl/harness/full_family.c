/* full_family.c - the full-attention family: its conformance matrix (issue
 * 3's list: decode and extend, ragged batches with prefixes from 0 to long,
 * page sizes 1/16/64 and others, GQA ratios, head dims 64/128/256 and MLA,
 * window, soft-cap, sinks, cross attention, every dtype), check and bench. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "full.h"

static const char *const modes[] = {"decode", "extend", "verify", NULL};

#define GQA "hq=8,hkv=2,d=128"
static const char *const matrix[] = {
    /* decode: dtype x page size x heads (MHA, GQA 4, MQA), ragged lengths */
    "decode:b=4,l=600,hq=8,hkv=8,d=128,dtype=f32,page=1,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=f32,page=16,ragged=1",
    "decode:b=4,l=600,hq=8,hkv=1,d=128,dtype=f32,page=64,ragged=1",
    "decode:b=4,l=600,hq=8,hkv=8,d=128,dtype=f16,page=16,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=f16,page=64,ragged=1",
    "decode:b=4,l=600,hq=8,hkv=1,d=128,dtype=f16,page=1,ragged=1",
    "decode:b=4,l=600,hq=8,hkv=8,d=128,dtype=bf16,page=64,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=bf16,page=1,ragged=1",
    "decode:b=4,l=600,hq=8,hkv=1,d=128,dtype=bf16,page=16,ragged=1",
    /* more GQA ratios and batch shapes */
    "decode:b=3,l=500,hq=12,hkv=4,d=128,dtype=bf16,page=16,ragged=1",
    "decode:b=2,l=700,hq=32,hkv=8,d=128,dtype=bf16,page=16",
    "decode:b=2,l=700,hq=16,hkv=2,d=128,dtype=bf16,page=64",
    "decode:b=24,l=200,hq=8,hkv=2,d=128,dtype=f16,page=16,ragged=1",
    "decode:b=1,l=8192,hq=32,hkv=8,d=128,dtype=bf16,page=16",
    "decode:b=1,l=3000,hq=8,hkv=1,d=128,dtype=f16,page=1",
    /* head dims */
    "decode:b=3,l=500,hq=8,hkv=2,d=64,dtype=bf16,page=16,ragged=1",
    "decode:b=3,l=500,hq=8,hkv=2,d=256,dtype=bf16,page=16,ragged=1",
    "decode:b=3,l=500,hq=8,hkv=2,d=64,dtype=f16,page=64",
    "decode:b=3,l=500,hq=8,hkv=2,d=256,dtype=f16,page=1",
    "decode:b=3,l=400,hq=8,hkv=2,d=192,dv=128,dtype=bf16,page=16",
    "decode:b=3,l=400,hq=4,hkv=4,d=80,dtype=f32,page=5,ragged=1",
    /* extend: prefixes from 0 to long, ragged, each dtype and page size */
    "extend:b=4,l=700,q=100," GQA ",dtype=bf16,page=16,ragged=1",
    "extend:b=4,l=700,q=100," GQA ",dtype=f16,page=1,ragged=1",
    "extend:b=4,l=700,q=100," GQA ",dtype=f32,page=64,ragged=1",
    "extend:b=1,l=1024,q=1024," GQA ",dtype=bf16,page=16",
    "extend:b=2,l=512,q=512,hq=8,hkv=8,d=128,dtype=f16,page=64",
    "extend:b=2,l=3000,q=40,hq=8,hkv=1,d=128,dtype=bf16,page=16,ragged=1",
    "extend:b=3,l=300,q=300,hq=12,hkv=4,d=128,dtype=bf16,page=1,ragged=1",
    "extend:b=3,l=400,q=150,hq=8,hkv=2,d=64,dtype=bf16,page=16,ragged=1",
    "extend:b=3,l=400,q=150,hq=8,hkv=2,d=256,dtype=bf16,page=16,ragged=1",
    "extend:b=2,l=300,q=120,hq=8,hkv=2,d=192,dv=128,dtype=bf16,page=64",
    "extend:b=3,l=300,q=100,hq=4,hkv=4,d=80,dtype=f32,page=3,ragged=1",
    /* speculative verify */
    "verify:b=4,l=500,q=3," GQA ",dtype=bf16,page=16,ragged=1",
    "verify:b=2,l=600,q=7,hq=8,hkv=1,d=128,dtype=f16,page=64",
    /* sliding window */
    "decode:b=4,l=900," GQA ",dtype=bf16,page=16,window=128,ragged=1",
    "decode:b=3,l=300," GQA ",dtype=f16,page=1,window=0",
    "extend:b=3,l=700,q=300," GQA ",dtype=bf16,page=16,window=64,ragged=1",
    "extend:b=2,l=400,q=400," GQA ",dtype=f32,page=64,window=100",
    /* logit soft-cap */
    "decode:b=4,l=600," GQA ",dtype=bf16,page=16,softcap=30,ragged=1",
    "extend:b=3,l=500,q=200," GQA ",dtype=f16,page=16,softcap=50,ragged=1",
    /* sinks (with a window, as gpt-oss has them) */
    "decode:b=4,l=600," GQA ",dtype=bf16,page=16,sinks=1,ragged=1",
    "extend:b=3,l=500,q=200," GQA ",dtype=bf16,page=64,sinks=1,ragged=1",
    "decode:b=3,l=900,hq=16,hkv=2,d=64,dtype=bf16,page=16,window=128,sinks=1",
    "extend:b=2,l=600,q=300,hq=16,hkv=2,d=64,dtype=f16,page=16,window=128,sinks=1",
    /* dual chunk attention (chunk_len = chunk - local): queries across chunk
     * boundaries, at the last position of a chunk and the first of the next,
     * chunks smaller than a page, and the length scaling of the logits */
    "decode:b=4,l=600," GQA ",dtype=bf16,page=16,chunk=256,local=32,ragged=1",
    "decode:b=2,l=448," GQA ",dtype=f32,page=16,chunk=256,local=32",
    "decode:b=2,l=449," GQA ",dtype=f32,page=16,chunk=256,local=32",
    "decode:b=3,l=300,hq=8,hkv=1,d=64,dtype=f16,page=64,chunk=24,local=8,ragged=1",
    "decode:b=3,l=600," GQA ",dtype=f32,page=16,chunk=128,local=16,omp=128,ragged=1",
    "extend:b=3,l=700,q=300," GQA ",dtype=bf16,page=16,chunk=256,local=32,ragged=1",
    "extend:b=2,l=448,q=32," GQA ",dtype=f32,page=16,chunk=256,local=32",
    "extend:b=2,l=200,q=200,hq=4,hkv=2,d=64,dtype=f32,page=64,chunk=20,local=4",
    "extend:b=2,l=500,q=150," GQA ",dtype=f16,page=1,chunk=100,local=10,omp=64",
    /* the same boundaries in 16-bit (GPU plugins), head dims 64 / 256, Qwen2.5-1M's
     * GQA 7, KV splits and 64-row query tiles that cross several boundaries */
    "decode:b=2,l=448," GQA ",dtype=bf16,page=16,chunk=256,local=32",
    "decode:b=2,l=449," GQA ",dtype=f16,page=16,chunk=256,local=32",
    "decode:b=3,l=1500,hq=28,hkv=4,d=128,dtype=bf16,page=16,chunk=512,local=64,omp=1024,ragged=1",
    "decode:b=2,l=1200,hq=16,hkv=1,d=256,dtype=f16,page=16,chunk=300,local=44,omp=800",
    "extend:b=2,l=448,q=32," GQA ",dtype=bf16,page=16,chunk=256,local=32",
    "extend:b=2,l=200,q=200,hq=4,hkv=2,d=64,dtype=f16,page=64,chunk=20,local=4",
    "extend:b=2,l=500,q=260,hq=28,hkv=4,d=128,dtype=bf16,page=16,chunk=128,local=16,omp=400,ragged=1",
    "extend:b=1,l=500,q=400,hq=8,hkv=2,d=256,dtype=bf16,page=16,chunk=300,local=44,omp=400",
    /* encoder-decoder: cross attention, and self attention after the encoder */
    "decode:b=4,l=100," GQA ",dtype=bf16,page=16,cross=1,enc=300,ragged=1",
    "extend:b=3,l=200,q=200," GQA ",dtype=f16,page=16,cross=1,enc=250,ragged=1",
    "decode:b=3,l=300," GQA ",dtype=bf16,page=16,enc=120,ragged=1",
    "extend:b=3,l=300,q=100," GQA ",dtype=bf16,page=64,enc=90,ragged=1",
    /* MLA (absorbed): DeepSeek 512 + 64, 16 and 128 heads */
    "decode:b=4,l=1000,hq=16,mla=1,dtype=bf16,page=64,ragged=1",
    "decode:b=4,l=600,hq=16,mla=1,dtype=f16,page=16,ragged=1",
    "decode:b=3,l=600,hq=16,mla=1,dtype=f32,page=1",
    "decode:b=2,l=500,hq=128,mla=1,dtype=bf16,page=64",
    "verify:b=2,l=600,q=2,hq=64,mla=1,dtype=bf16,page=64",
    "extend:b=2,l=400,q=100,hq=16,mla=1,dtype=bf16,page=64,ragged=1",
    "extend:b=1,l=300,q=300,hq=16,mla=1,dtype=f16,page=16",
    /* mixed dtypes and index widths */
    "decode:b=4,l=600," GQA ",dtype=bf16,kvdtype=f16,page=16,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=f32,kvdtype=bf16,page=16,ragged=1",
    "extend:b=3,l=400,q=100," GQA ",dtype=f16,kvdtype=f32,page=16,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=bf16,page=16,idx=64,ragged=1",
    "extend:b=3,l=400,q=150," GQA ",dtype=bf16,page=64,idx=64,ragged=1",
    /* fp8 e4m3 pools (sglang's --kv-cache-dtype fp8_e4m3): scales as floats
     * or device tensors, the reference on the dequantised values */
    "decode:b=4,l=600," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=16,ragged=1",
    "decode:b=4,l=600,hq=32,hkv=8,d=128,dtype=f16,kvdtype=fp8_e4m3,page=1,ragged=1",
    "decode:b=3,l=500,hq=8,hkv=2,d=64,dtype=bf16,kvdtype=fp8_e4m3,page=64,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=16,scalet=1,ragged=1",
    "decode:b=3,l=600,hq=8,hkv=8,d=128,dtype=f16,kvdtype=fp8_e4m3,page=16,kscale=0.37,vscale=2.5,scalet=1",
    "decode:b=4,l=900," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=16,window=128,sinks=1,softcap=30,ragged=1",
    "decode:b=1,l=8192,hq=32,hkv=8,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16",
    "extend:b=3,l=400,q=100," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=16,ragged=1",
    /* the split extend on SM 9.0 (docs/cuda.md): several 128-row tiles over a prefix at page 1, a
     * prefill with soft-cap (no prefix items), and layers that take the fp8 mma extend alone */
    "extend:b=3,l=500,q=200,hq=16,hkv=4,d=128,dtype=f16,kvdtype=fp8_e4m3,page=1,ragged=1",
    "extend:b=2,l=300,q=300,hq=16,hkv=2,d=128,dtype=bf16,kvdtype=fp8_e4m3,page=16,softcap=30",
    "extend:b=3,l=500,q=200," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=64,window=128,sinks=1,ragged=1",
    "decode:b=4,l=1000,hq=16,mla=1,dtype=bf16,kvdtype=fp8_e4m3,page=64,ragged=1",
    /* ABI 1.2 engine inputs (full_engine.c; skipped where the caps lack the bit) */
    "verify:b=4,l=700,q=16," GQA ",dtype=bf16,page=16,tree=1,ragged=1",
    "verify:b=1,l=3000,q=8,hq=8,hkv=1,d=128,dtype=f16,page=64,tree=1",
    "verify:b=2,l=600,q=4,hq=16,mla=1,dtype=bf16,page=64,tree=1",
    "verify:b=3,l=500,q=1,hq=16,mla=1,dtype=bf16,page=64,tree=1",
    "verify:b=2,l=700,q=2,hq=16,mla=1,dtype=f16,page=16,tree=1",
    "verify:b=1,l=400,q=64,hq=16,mla=1,dtype=bf16,page=64,tree=1",
    /* sglang's EAGLE mask (tree=2): the prefix all visible, a topk-4 tree over the drafts;
     * 64 draft tokens with an even GQA group, an odd one, and MHA; the chain at 64 */
    "verify:b=4,l=700,q=64," GQA ",dtype=bf16,page=16,tree=2,ragged=1",
    "verify:b=2,l=600,q=24,hq=12,hkv=4,d=128,dtype=f16,page=16,tree=2",
    "verify:b=2,l=500,q=40,hq=4,hkv=4,d=128,dtype=bf16,page=64,tree=2",
    "verify:b=1,l=400,q=64,hq=16,mla=1,dtype=bf16,page=64,tree=2",
    "verify:b=3,l=900,q=64," GQA ",dtype=f16,page=16,ragged=1",
    "extend:b=3,l=400,q=5,hq=16,mla=1,dtype=bf16,page=64,draft=1,ragged=1",
    "extend:b=4,l=500,q=5," GQA ",dtype=f16,page=1,draft=1,ragged=1",
    "extend:b=3,l=400,q=150," GQA ",dtype=bf16,page=16,attn=1,sinks=1,ragged=1",
    "extend:b=3,l=300,q=300," GQA ",dtype=f32,page=64,attn=2,ragged=1",
    "extend:b=3,l=200,q=200," GQA ",dtype=f16,page=16,cross=1,enc=250,encsave=1,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=bf16,page=64,ptable=1,ragged=1",
    "extend:b=3,l=400,q=100," GQA ",dtype=f16,page=16,ptable=1,enc=90,idx=64,ragged=1",
    "decode:b=4,l=600," GQA ",dtype=bf16,page=16,smap=1,window=128,ragged=1",
    "extend:b=2,l=300,q=50,hq=16,mla=1,dtype=bf16,page=64,smap=1,ptable=1",
    NULL,
};

static const char *const quick[] = {
    "decode:b=4,l=300," GQA ",dtype=bf16,page=16,ragged=1",
    "decode:b=4,l=300,hq=8,hkv=1,d=128,dtype=f16,page=1,ragged=1",
    "decode:b=3,l=300,hq=8,hkv=8,d=64,dtype=f32,page=64,ragged=1",
    "extend:b=3,l=300,q=100," GQA ",dtype=bf16,page=16,ragged=1",
    "extend:b=2,l=200,q=200,hq=8,hkv=2,d=256,dtype=f16,page=64",
    "verify:b=3,l=300,q=3," GQA ",dtype=bf16,page=16",
    "decode:b=3,l=400," GQA ",dtype=bf16,page=16,window=64,sinks=1,softcap=30",
    "extend:b=2,l=300,q=150," GQA ",dtype=bf16,page=16,window=64,sinks=1",
    "decode:b=3,l=100," GQA ",dtype=bf16,page=16,cross=1,enc=200",
    "decode:b=3,l=400,hq=16,mla=1,dtype=bf16,page=64",
    "extend:b=2,l=200,q=80,hq=16,mla=1,dtype=bf16,page=64",
    "decode:b=3,l=300," GQA ",dtype=bf16,page=64,chunk=64,local=16,omp=128,ragged=1",
    "extend:b=2,l=200,q=120," GQA ",dtype=f16,page=16,chunk=48,local=8",
    "decode:b=5,l=300," GQA ",dtype=bf16,kvdtype=fp8_e4m3,page=16,scalet=1",
    /* ABI 1.2 engine inputs */
    "verify:b=3,l=300,q=6," GQA ",dtype=bf16,page=16,tree=1",
    "verify:b=3,l=300,q=6," GQA ",dtype=bf16,page=16,tree=2",
    "extend:b=3,l=200,q=4," GQA ",dtype=bf16,page=16,draft=1,ragged=1",
    "extend:b=2,l=200,q=80," GQA ",dtype=bf16,page=16,attn=1",
    "extend:b=2,l=200,q=80," GQA ",dtype=f16,page=16,attn=2,save=0",
    "decode:b=3,l=100," GQA ",dtype=bf16,page=16,cross=1,enc=200,encsave=1",
    "decode:b=3,l=300," GQA ",dtype=bf16,page=16,ptable=1,ragged=1",
    "extend:b=2,l=300,q=100," GQA ",dtype=bf16,page=16,smap=1,ptable=1",
    NULL,
};

static const char *const bench_cases[] = {
    "decode:b=1,l=32768,hq=32,hkv=8,d=128,dtype=bf16,page=16",
    "decode:b=16,l=4096,hq=32,hkv=8,d=128,dtype=bf16,page=16",
    "extend:b=1,l=2048,q=2048,hq=16,hkv=16,d=128,dtype=bf16,page=16",
    "decode:b=16,l=4096,hq=16,mla=1,dtype=bf16,page=64",
    NULL,
};

int harness_applies_full(const harness_family *fam, const sgl_attn_plugin_info *info, const sgl_attn_caps *caps) {
    (void)fam;
    (void)caps;
    return info->role == SGL_ATTN_ROLE_FULL;
}

/* Parse, and say "not supported" when the probe does not claim the case. */
static int prepare(const htarget *t, const hcase *c, uint64_t *seed, fa_case *f, hresult *r) {
    char err[512];
    if (fa_case_parse(c, f, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return -1;
    }
    if (f->has_seed) *seed = f->seed;
    if (!fa_case_claimed(f, &t->caps, err, sizeof err)) {
        hresult_unsupported(r, "%s", err);
        return -1;
    }
    return 0;
}

static void check(const harness_family *fam, const htarget *t, const hcase *c, uint64_t seed, hresult *r) {
    (void)fam;
    fa_case f;
    if (prepare(t, c, &seed, &f, r)) return;
    fa_batch fb;
    char err[768];
    if (fa_batch_build(&fb, &f, &t->dev, seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        return;
    }
    snprintf(fb.model.name, sizeof fb.model.name, "%.63s", c->text);
    sgl_attn_backend *b = NULL;
    if (htarget_create(t, &fb.model, &fb.opts, &b, r) == SGL_ATTN_OK) {
        const char *what;
        double t0 = htime_now();
        int rc = fa_batch_call(&fb, b, &what);
        if (rc) {
            hresult_from_call(r, b, what, rc);
        } else if (hdev_sync(&t->dev, err, sizeof err)) {
            hresult_fail(r, "after %s: %s", what, err);
        } else {
            r->ms_plugin = 1e3 * (htime_now() - t0);
            t0 = htime_now();
            if (fa_batch_reference(&fb, t->host, err, sizeof err)) {
                hresult_error(r, "%s", err);
            } else {
                r->ms_ref = 1e3 * (htime_now() - t0);
                fa_batch_verify(&fb, r);
            }
        }
        htarget_destroy(t, b);
    }
    fa_batch_free(&fb);
}

typedef struct fa_bench {
    fa_batch fb;
    sgl_attn_backend *b;
    const htarget *t;
} fa_bench;

static int bench_call(void *state, char *err, size_t err_size) {
    fa_bench *s = state;
    int rc = s->fb.c.mode == SGL_ATTN_MODE_DECODE ? sgl_attn_forward_decode(s->b, &s->fb.args)
                                                  : sgl_attn_forward_extend(s->b, &s->fb.args);
    if (rc) snprintf(err, err_size, "forward returned %s: %s", sgl_attn_status_name(rc), sgl_attn_last_error(s->b));
    return rc ? -1 : 0;
}

static void bench_release(void *state) {
    fa_bench *s = state;
    if (!s) return;
    htarget_destroy(s->t, s->b);
    fa_batch_free(&s->fb);
    free(s);
}

static int bench_prepare(const harness_family *fam, const htarget *t, const hcase *c, uint64_t seed, hbench *hb,
                         hresult *r) {
    (void)fam;
    fa_case f;
    if (prepare(t, c, &seed, &f, r)) return -1;
    fa_bench *s = calloc(1, sizeof *s);
    char err[768];
    if (!s) {
        hresult_error(r, "out of memory");
        return -1;
    }
    s->t = t;
    if (fa_batch_build(&s->fb, &f, &t->dev, seed, err, sizeof err)) {
        hresult_error(r, "%s", err);
        free(s);
        return -1;
    }
    if (htarget_create(t, &s->fb.model, &s->fb.opts, &s->b, r) != SGL_ATTN_OK) {
        bench_release(s);
        return -1;
    }
    /* metadata once, as an engine does per batch for all its layers */
    int rc = sgl_attn_init_forward_metadata(s->b, &s->fb.batch);
    if (rc) {
        hresult_from_call(r, s->b, "init_forward_metadata", rc);
        bench_release(s);
        return -1;
    }
    hb->state = s;
    hb->call = bench_call;
    hb->release = bench_release;
    fa_batch_count(&s->fb, &hb->flops, &hb->bytes);
    return 0;
}

const harness_family harness_family_full = {
    .name = "full",
    .modes = modes,
    .applies = harness_applies_full,
    .matrix = matrix,
    .quick_matrix = quick,
    .bench_cases = bench_cases,
    .check = check,
    .bench_prepare = bench_prepare,
};
