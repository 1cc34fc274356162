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

#endif
