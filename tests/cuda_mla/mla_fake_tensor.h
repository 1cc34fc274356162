/* mla_fake_tensor.h - the tensors the pure-C check tests (test_mla_check,
 * test_mla_indexer_check) hand cuda_mla's checks: CUDA tensors on device 1,
 * compact (no strides), one lane.  The checks compare the data address and
 * never read through it, so any address stands for device memory. */
#ifndef MLA_FAKE_TENSOR_H
#define MLA_FAKE_TENSOR_H

#include <stdint.h>
#include <string.h>

#include "sgl_attn_abi.h"

/* an address the checks see as device memory (never dereferenced) */
#define MLA_FAKE_DEV ((void *)(uintptr_t)0x10000)

static inline DLTensor mla_fake_tensor(int64_t *shape, int ndim, uint8_t code, uint8_t bits, void *data) {
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCUDA;
    t.device.device_id = 1;
    t.ndim = ndim;
    t.dtype.code = code;
    t.dtype.bits = bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

/* A batch's paged tensors: req_to_token [rows][cols] int32, req_pool_indices
 * [bs] int64, out_cache_loc [t] of loc_bits (32 or 64), with their shapes. */
typedef struct mla_fake_paged {
    int64_t r2s[2], ps[1], ls[1];
    DLTensor r2t, rpi, loc;
} mla_fake_paged;

/* p's tensors, and batch b of bs requests and t tokens in `mode` at page size
 * 64 over them (b's other fields zero but struct_size). */
static inline void mla_fake_batch(mla_fake_paged *p, sgl_attn_batch *b, int mode, int bs, int t, int rows, int cols,
                                  uint8_t loc_bits) {
    p->r2s[0] = rows, p->r2s[1] = cols;
    p->ps[0] = bs;
    p->ls[0] = t;
    p->r2t = mla_fake_tensor(p->r2s, 2, kDLInt, 32, MLA_FAKE_DEV);
    p->rpi = mla_fake_tensor(p->ps, 1, kDLInt, 64, MLA_FAKE_DEV);
    p->loc = mla_fake_tensor(p->ls, 1, kDLInt, loc_bits, MLA_FAKE_DEV);
    memset(b, 0, sizeof *b);
    b->struct_size = sizeof *b;
    b->forward_mode = mode;
    b->batch_size = bs;
    b->num_tokens = t;
    b->page_size = 64;
    b->req_to_token = &p->r2t;
    b->req_pool_indices = &p->rpi;
    b->out_cache_loc = &p->loc;
}

#endif
