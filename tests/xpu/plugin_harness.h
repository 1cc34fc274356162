/* plugin_harness.h - loading one plugin .so with a stand-in host API, the
 * model, caps and create_args a test hands it, staging tensors through its
 * device_ops.  Shared by the xpu, npu, hip and cuda plugin tests. */
#ifndef SGL_TEST_PLUGIN_HARNESS_H
#define SGL_TEST_PLUGIN_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "sgl_attn_abi.h"

typedef struct tplugin {
    void *so;
    const sgl_attn_plugin *p;
    /* options the stand-in host answers: key=value pairs for this plugin */
    const char *opt_keys[8];
    const char *opt_vals[8];
    sgl_attn_host_api create_host; /* what tests pass as create_args.host */
} tplugin;

/* The host API of the last tplugin opened, for create_args.host (its
 * get_option answers from that tplugin's opt_* at the time of the call). */
extern const sgl_attn_host_api *tplugin_host;

/* dlopen `path`, negotiate with a host API whose get_option answers from
 * tp->opt_*.  Returns 0 or -1 with err set. */
int tplugin_open(tplugin *tp, const char *path, char *err, size_t err_size);
/* Call the entry again (after changing options). */
int tplugin_renegotiate(tplugin *tp);
void tplugin_close(tplugin *tp);

/* A plain attention model: hq query and hkv KV heads of head dim d (qk and
 * v), q and the KV pool in `dtype` (SGL_ATTN_DT_*), no sliding window. */
sgl_attn_model tmodel(int32_t hq, int32_t hkv, int32_t d, uint32_t dtype);
/* create_args for `m` and these limits, the error going to err[err_size];
 * host, inner and device are left 0 for the test to set. */
sgl_attn_create_args tcreate_args(const sgl_attn_model *m, int32_t max_reqs, int32_t max_tokens,
                                  int32_t max_context, char *err, size_t err_size);
/* p->probe(device) into a zeroed caps of this ABI's size; its status. */
int tprobe(const sgl_attn_plugin *p, int32_t device, sgl_attn_caps *c);

/* A device tensor: allocated through device_ops (host memory when NULL). */
typedef struct dtensor {
    DLTensor t;
    int64_t shape[4];
    void *base;      /* what alloc returned */
    size_t bytes;    /* payload bytes */
    size_t off;      /* payload offset inside base */
    int32_t device;
    const sgl_attn_device_ops *ops;
} dtensor;

/* DLPack device type given to device tensors (kDLOpenCL unless a test sets it). */
extern int dtensor_device_type;

/* off_mode: 0 payload at base; 1 byte_offset = off; 2 data = base + off
 * (SVM / host pointers only).  Returns the ops status. */
int dtensor_put(dtensor *x, const sgl_attn_device_ops *ops, int32_t device, DLDataType dt, int ndim,
                const int64_t *shape, const void *host, size_t off, int off_mode);
int dtensor_get(const dtensor *x, void *host);
void dtensor_free(dtensor *x);

/* A host (kDLCPU) 1-dim view of n int64 values. */
DLTensor host_index_view(int64_t *v, int64_t *shape_storage, int64_t n);

DLDataType dl_float(int bits);
DLDataType dl_bf16(void);
DLDataType dl_int(int bits);

#endif
