/* npu_tensor.h - DLTensor checks for npu_ascend and their ACL dtype codes. */
#ifndef SGL_NPU_TENSOR_H
#define SGL_NPU_TENSOR_H

#include "npu_internal.h"
#include "sdk_tensor.h"
#include "sdk_text.h"

typedef enum { NPU_T_HALF, NPU_T_INDEX } npu_tclass;

/* A device tensor of ndim dims matching shape (-1 = any; sizes to got[] when
 * non-NULL), dtype of the class (f16/bf16, or int32/int64), compact.  On
 * failure a message naming `what` goes to err. */
int npu_tensor_check(const DLTensor *t, const char *what, int ndim, const int64_t *shape, npu_tclass cls,
                     int64_t *got, char *err, size_t err_size);
/* ACL dtype of a checked tensor. */
int npu_acl_dtype(const DLTensor *t);
/* Device address of the first element. */
void *npu_tensor_addr(const DLTensor *t);
/* 1 when t is a compact host (kDLCPU) int32/int64 tensor of n entries (NULL: 0). */
int npu_host_index_ok(const DLTensor *t, int64_t n);

#endif
