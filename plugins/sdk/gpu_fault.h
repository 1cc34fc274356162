/*
 * gpu_fault.h - the index fault record a GPU plugin's kernels write when
 * they meet an index tensor value out of range (a slot outside the pool, a
 * request row outside req_to_token, a length past its columns, a state slot
 * outside the pool).  Such a kernel writes nothing through that index and
 * notes the first fault here; the plugin reads the record at its next
 * metadata call, without synchronising, and fails that call with the fault
 * in words (plugins/sdk/cuda/sdk_cuda.h: sgl_sdk_cuda_fault_*).
 *
 * The record lives in mapped pinned host memory (the host reads it with no
 * copy and no sync); the claim word that picks the first fault lives in
 * device memory, so the kernels' atomic never crosses the bus.  Plain C for
 * the host; the device half (sgl_fault_note) only under nvcc / hipcc.
 */
#ifndef SGL_GPU_FAULT_H
#define SGL_GPU_FAULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which index tensor held the bad value (sgl_gpu_fault.tensor; 0: none). */
enum {
    SGL_FAULT_NONE = 0,
    SGL_FAULT_OUT_CACHE_LOC = 1,
    SGL_FAULT_REQ_TO_TOKEN = 2,
    SGL_FAULT_REQ_POOL_INDICES = 3,
    SGL_FAULT_SEQ_LENS = 4,
    SGL_FAULT_EXTEND_SEQ_LENS = 5,
    SGL_FAULT_ENCODER_LENS = 6,
    SGL_FAULT_PREFIX_LENS = 7,
    SGL_FAULT_STATE_INDICES = 8,
    SGL_FAULT_TOPK_INDICES = 9, /* DSA sparse MLA: a selected slot outside the pool */
    SGL_FAULT_PAGE_TABLE = 10,  /* pos: row * max_pages + page column */
    SGL_FAULT_SLOT_MAP = 11,    /* pos: the slot mapped */
    SGL_FAULT_CU_SEQLENS_Q = 12, /* forward_ragged's offsets */
    SGL_FAULT_CU_SEQLENS_K = 13,
    SGL_FAULT_MASK_INDPTR = 14, /* tree verify: a request's block is not new tokens x seq_len inside custom_mask */
    SGL_FAULT_ENCODER_OUT_CACHE_LOC = 15, /* an entry is not its encoder column's slot (pos: the entry; [lo, hi):
                                           * the slot), or code SGL_FAULT_CODE_LENGTH: the tensor's length
                                           * (value) is not the sum of encoder_lens (lo) */
    SGL_FAULT_COUNT_
};

/* sgl_gpu_fault.code of an SGL_FAULT_ENCODER_OUT_CACHE_LOC fault that
 * sgl_sdk_cuda_fault_take words as a length: the tensor has `value` entries
 * and needs `lo`. */
#define SGL_FAULT_CODE_LENGTH 1

/* The first fault since the record was last cleared. */
typedef struct sgl_gpu_fault {
    volatile int32_t tensor; /* SGL_FAULT_*; written last, after a system fence */
    int32_t code;            /* the plugin's own error code; 0: value outside [lo, hi) */
    int64_t pos;    /* element index in the tensor (req_to_token: row * columns + column) */
    int64_t value;  /* the value read, the whole int64 for an int64 tensor */
    int64_t lo, hi; /* the range it had to lie in: [lo, hi) */
} sgl_gpu_fault;

/* What a kernel is handed: both NULL means "do not record" (the check and
 * the skip still happen). */
typedef struct sgl_gpu_fault_ref {
    sgl_gpu_fault *rec; /* device alias of the mapped host record */
    int32_t *claim;     /* device memory: 0 free, 1 taken by the first fault */
} sgl_gpu_fault_ref;

#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(LK_EMU) /* LK_EMU: the CPU emulator of the tests */
#include "gpu_compat.h"

/* Note a fault: the first thread to claim the record fills it.  The cold
 * path of a compare: callers test the range first.  Inlined: an out-of-line
 * call makes the register-capped wgmma producer spill around it. */
__device__ __forceinline__ static void sgl_fault_note_code(sgl_gpu_fault_ref f, int tensor, int code, int64_t pos,
                                                        int64_t value, int64_t lo, int64_t hi) {
    if (!f.rec || !f.claim) return;
    if (atomicCAS(f.claim, 0, 1) != 0) return;
    f.rec->code = code;
    f.rec->pos = pos;
    f.rec->value = value;
    f.rec->lo = lo;
    f.rec->hi = hi;
    __threadfence_system();
    f.rec->tensor = tensor;
    __threadfence_system();
}
__device__ __forceinline__ static void sgl_fault_note(sgl_gpu_fault_ref f, int tensor, int64_t pos, int64_t value,
                                                      int64_t lo, int64_t hi) {
    sgl_fault_note_code(f, tensor, 0, pos, value, lo, hi);
}
#endif

#endif
