/* sdk_tensor.h - DLTensor input checks: one spec says what a tensor must be
 * (rank, extents, dtypes, where it lives, layout), one call checks it and
 * writes a message that names the tensor, the field, the value and what was
 * expected.  Plus reads of index tensors (int32 / int64) and their bounds.
 *
 * Status: SGL_ATTN_E_INVALID for what breaks the call's contract (NULL,
 * wrong rank or extents, a wrong device, an index tensor that is not int32
 * or int64, NULL data, misaligned elements, overlapping outputs);
 * SGL_ATTN_E_UNSUPPORTED for what the plugin does not take (a float dtype
 * outside its set, strides it does not read, rows less aligned than its
 * kernels load, extents past 32 bits where the kernels count in 32). */
#ifndef SGL_SDK_TENSOR_H
#define SGL_SDK_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sgl_attn_abi.h"

#define SGL_SDK_MAX_DIMS 4
#define SGL_SDK_ANY (-1) /* an extent of any size */

/* Device-type sets (bits of DLDeviceType). */
#define SGL_SDK_DEV(type) (1u << (type))
#define SGL_SDK_DEV_HOST (SGL_SDK_DEV(kDLCPU) | SGL_SDK_DEV(kDLCUDAHost) | SGL_SDK_DEV(kDLROCMHost))
#define SGL_SDK_DEV_NOT_HOST (~SGL_SDK_DEV_HOST & ~1u)
#define SGL_SDK_DEV_CUDA (SGL_SDK_DEV(kDLCUDA) | SGL_SDK_DEV(kDLCUDAManaged))
/* What a CUDA kernel can read: the device's memory, managed, or pinned host memory. */
#define SGL_SDK_DEV_CUDA_READ (SGL_SDK_DEV_CUDA | SGL_SDK_DEV(kDLCUDAHost))

enum {
    SGL_SDK_T_OPTIONAL = 1u << 0, /* NULL is fine (and checks nothing) */
    SGL_SDK_T_COMPACT = 1u << 1,  /* row-major without gaps (other strides: unsupported) */
    SGL_SDK_T_WRITTEN = 1u << 2,  /* an output: no two elements at one address */
    SGL_SDK_T_MERGED = 1u << 3,   /* a 3-D spec also takes [n0, n1 * n2] (sglang's flat q) */
    SGL_SDK_T_ROWS = 1u << 4,     /* innermost stride 1, outer strides whole multiples of `align` bytes */
    SGL_SDK_T_AT_LEAST = 1u << 5, /* the spec's extents are minimums (index tensors with room to spare) */
    SGL_SDK_T_INT32 = 1u << 6     /* every extent at most 2^31 - 1 (kernels that count in 32 bits) */
};

typedef struct sgl_sdk_tensor_spec {
    const char *name;    /* "q", "batch.seq_lens": every message starts with it */
    const char *meaning; /* "num_tokens, num_q_heads, head_dim_qk" for shape messages, or NULL */
    int32_t ndim;        /* 0..SGL_SDK_MAX_DIMS */
    int64_t shape[SGL_SDK_MAX_DIMS]; /* SGL_SDK_ANY: any extent */
    uint32_t dtypes;     /* SGL_ATTN_DT_* accepted; 0: an index tensor, int32 or int64 */
    uint32_t devices;    /* SGL_SDK_DEV(...) set of device types accepted; 0: any */
    int32_t device_id;   /* on a device type outside SGL_SDK_DEV_HOST: its id; -1: any */
    uint32_t flags;      /* SGL_SDK_T_* */
    uint32_t align;      /* bytes data + byte_offset is aligned to; 0: the element size */
} sgl_sdk_tensor_spec;

/* SGL_ATTN_OK, or a status with "<name> ..." in err[n]. */
int sgl_sdk_check_tensor(const DLTensor *t, const sgl_sdk_tensor_spec *s, char *err, size_t n);

/* In host memory the plugin's C may read (kDLCPU, kDLCUDAHost, kDLROCMHost). */
int sgl_sdk_host_readable(const DLTensor *t);

/* Element strides of t in the dims of spec s, once sgl_sdk_check_tensor
 * passed it: its strides, or the compact ones; a merged [n0, n1 * n2]
 * tensor of a 3-D spec steps n2 elements between the dims it merged. */
void sgl_sdk_strides(const DLTensor *t, const sgl_sdk_tensor_spec *s, int64_t st[SGL_SDK_MAX_DIMS]);

/* 1 when t is an index tensor the host may read with at least n entries:
 * host memory, 1-D, int32 or int64, contiguous, with data (an engine's
 * *_cpu mirror).  0 for NULL, a malformed tensor, or device memory only
 * kernels can read (their values are the device's to check). */
int sgl_sdk_host_index(const DLTensor *t, int64_t n);

static inline const void *sgl_sdk_data(const DLTensor *t) {
    return (const unsigned char *)t->data + t->byte_offset;
}

static inline int64_t sgl_sdk_numel(const DLTensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* Element i of a compact int32 (is64 == 0) or int64 index array: the loop form. */
static inline int64_t sgl_sdk_idx(const void *p, int is64, int64_t i) {
    if (is64) {
        int64_t v;
        memcpy(&v, (const unsigned char *)p + i * 8, sizeof v);
        return v;
    }
    int32_t v;
    memcpy(&v, (const unsigned char *)p + i * 4, sizeof v);
    return v;
}

/* Entry i of a checked 1-D index tensor, or (r, c) of a 2-D one (strides honoured). */
int64_t sgl_sdk_index_at(const DLTensor *t, int64_t i);
int64_t sgl_sdk_index_at2(const DLTensor *t, int64_t r, int64_t c);

/* Entries [0, n) of a checked host index tensor all in lo..hi (never a
 * tensor in device memory: sgl_sdk_host_readable first); else
 * SGL_ATTN_E_INVALID with "<name>[i] = v; expected lo..hi (<meaning>)". */
int sgl_sdk_check_index_range(const DLTensor *t, const char *name, int64_t n, int64_t lo, int64_t hi,
                              const char *meaning, char *err, size_t size);

#endif
