/* attn_case.h - one attention case run end to end against a plugin: random
 * paged batch, tensors staged through device_ops, create, metadata, forward,
 * output and KV pool compared with the float64 reference.  Shared by the
 * xpu and npu tests. */
#ifndef SGL_TEST_ATTN_CASE_H
#define SGL_TEST_ATTN_CASE_H

#include "attn_ref.h"
#include "plugin_harness.h"

typedef struct acase {
    const char *name;
    int mode;          /* SGL_ATTN_MODE_EXTEND / DECODE / TARGET_VERIFY */
    int bs;
    int maxlen;        /* longest KV length (decode: incl. new tokens) */
    int maxext;        /* extend: most new tokens per request */
    int tpr;           /* decode/verify: tokens per request (0 = 1) */
    int Hq, Hkv, Dqk, Dv;
    int mla;           /* v_cache NULL, value = first Dv dims of the latent row */
    rdt qdt, kvdt;
    int idx64;
    int page;
    int window;        /* -1 off */
    double softcap;
    int sinks;
    int save;          /* save_kv_cache */
    int off_mode;      /* 0: payload at the allocation; 1: byte_offset 256; 2: data + 256 */
    int cpu_mirrors;   /* pass seq_lens_cpu / extend_*_cpu */
    int use_stream;    /* batch->stream from device_ops.stream_create */
    int fixed_lens;    /* every request gets maxlen / maxext (no ragged lengths) */
} acase;

typedef struct aresult {
    int stage;         /* 0 ok; 1 create, 2 metadata, 3 forward, 4 staging/sync */
    int rc;
    char err[640];
    double nmse, limit;
    int pool_ok;
    char pool_msg[200];
} aresult;

/* Sees (and may edit) the host-side batch before it is staged.  Returns
 * nonzero when it changed it: the output is then not compared (bad-input
 * tests); zero to only observe (call-log tests). */
typedef int (*acase_tamper)(ref_batch *b, int64_t *rpi, void *ctx);

int acase_run(const sgl_attn_plugin *p, int32_t device, const acase *c, uint64_t seed, acase_tamper tamper,
              void *tamper_ctx, aresult *r);

/* Called between init_forward_metadata and the forward when set (a test
 * changes the batch there); NULL by default.  It returns 1 when the result
 * must still equal the reference of the batch as planned (the plugin runs
 * on what it planned), 0 when no comparison is meaningful. */
extern int (*acase_after_metadata)(sgl_attn_batch *bt);

#endif
