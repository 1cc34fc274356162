/*
 * acl_min.h - our own declarations of the few Ascend CANN calls npu_ascend
 * makes, so it builds without CANN and loads it at run time (dlopen).
 * Written from CANN's public API reference (aclrt*, aclnn two-phase ops);
 * values match CANN 8.x.  Which library exports what:
 *   libascendcl.so  aclInit, aclrt* (devices, memory, streams), aclGetRecentErrMsg
 *   libnnopbase.so  aclCreateTensor / aclCreateIntArray / aclCreateTensorList and their destroys
 *   libopapi.so     aclnnFusedInferAttentionScoreV2*, aclnnInplaceIndexCopy*
 */
#ifndef SGL_NPU_ACL_MIN_H
#define SGL_NPU_ACL_MIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int aclError;
typedef int aclnnStatus;
typedef void *aclrtStream;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclOpExecutor aclOpExecutor;

#define ACL_SUCCESS 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_RT_FAILURE 500003

/* aclDataType */
#define ACL_FLOAT 0
#define ACL_FLOAT16 1
#define ACL_INT32 3
#define ACL_INT64 9
#define ACL_BOOL 12
#define ACL_BF16 27
/* aclFormat */
#define ACL_FORMAT_ND 2
/* aclrtMemMallocPolicy */
#define ACL_MEM_MALLOC_HUGE_FIRST 0
/* aclrtMemcpyKind */
#define ACL_MEMCPY_HOST_TO_HOST 0
#define ACL_MEMCPY_HOST_TO_DEVICE 1
#define ACL_MEMCPY_DEVICE_TO_HOST 2
#define ACL_MEMCPY_DEVICE_TO_DEVICE 3
/* aclrtMemAttr */
#define ACL_HBM_MEM 1

/* libascendcl.so */
typedef aclError (*aclInit_fn)(const char *config_path);
typedef aclError (*aclrtSetDevice_fn)(int32_t device);
typedef aclError (*aclrtGetDeviceCount_fn)(uint32_t *count);
typedef const char *(*aclrtGetSocName_fn)(void);
typedef aclError (*aclrtGetMemInfo_fn)(int attr, size_t *free_bytes, size_t *total_bytes);
typedef aclError (*aclrtMalloc_fn)(void **ptr, size_t size, int policy);
typedef aclError (*aclrtFree_fn)(void *ptr);
typedef aclError (*aclrtMemcpy_fn)(void *dst, size_t dst_max, const void *src, size_t count, int kind);
typedef aclError (*aclrtCreateStream_fn)(aclrtStream *stream);
typedef aclError (*aclrtDestroyStream_fn)(aclrtStream stream);
typedef aclError (*aclrtSynchronizeStream_fn)(aclrtStream stream);
typedef aclError (*aclrtSynchronizeDevice_fn)(void);
typedef const char *(*aclGetRecentErrMsg_fn)(void);

/* libnnopbase.so */
typedef aclTensor *(*aclCreateTensor_fn)(const int64_t *view_dims, uint64_t view_dims_num, int data_type,
                                         const int64_t *stride, int64_t offset, int format,
                                         const int64_t *storage_dims, uint64_t storage_dims_num, void *data);
typedef aclnnStatus (*aclDestroyTensor_fn)(const aclTensor *t);
typedef aclIntArray *(*aclCreateIntArray_fn)(const int64_t *value, uint64_t size);
typedef aclnnStatus (*aclDestroyIntArray_fn)(const aclIntArray *a);
typedef aclTensorList *(*aclCreateTensorList_fn)(const aclTensor *const *value, uint64_t size);
/* Destroys the list and the tensors in it. */
typedef aclnnStatus (*aclDestroyTensorList_fn)(const aclTensorList *l);

/* libopapi.so: the fused inference attention operator, V2 (CANN 8.0+, Atlas A2). */
typedef aclnnStatus (*aclnnFIAv2GetWorkspaceSize_fn)(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value,
    const aclTensor *pse_shift, const aclTensor *atten_mask, const aclIntArray *actual_seq_lengths,
    const aclIntArray *actual_seq_lengths_kv, const aclTensor *deq_scale1, const aclTensor *quant_scale1,
    const aclTensor *deq_scale2, const aclTensor *quant_scale2, const aclTensor *quant_offset2,
    const aclTensor *antiquant_scale, const aclTensor *antiquant_offset, const aclTensor *block_table,
    const aclTensor *query_padding_size, const aclTensor *kv_padding_size,
    const aclTensor *key_antiquant_scale, const aclTensor *key_antiquant_offset,
    const aclTensor *value_antiquant_scale, const aclTensor *value_antiquant_offset,
    const aclTensor *key_shared_prefix, const aclTensor *value_shared_prefix,
    const aclIntArray *actual_shared_prefix_len, int64_t num_heads, double scale_value, int64_t pre_tokens,
    int64_t next_tokens, char *input_layout, int64_t num_key_value_heads, int64_t sparse_mode,
    int64_t inner_precise, int64_t block_size, int64_t antiquant_mode, bool softmax_lse_flag,
    int64_t key_antiquant_mode, int64_t value_antiquant_mode, const aclTensor *attention_out,
    const aclTensor *softmax_lse, uint64_t *workspace_size, aclOpExecutor **executor);
typedef aclnnStatus (*aclnnRun_fn)(void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                                   aclrtStream stream);
typedef aclnnStatus (*aclnnInplaceIndexCopyGetWorkspaceSize_fn)(aclTensor *self_ref, int64_t dim,
                                                                const aclTensor *index, const aclTensor *source,
                                                                uint64_t *workspace_size, aclOpExecutor **executor);

#endif
