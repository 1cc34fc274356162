/* tensor_check.h - DLTensor checks with messages (tensor_check.c).  Each
 * returns SGL_ATTN_OK, or an error status with the backend's error set. */
#ifndef CREF_TENSOR_CHECK_H
#define CREF_TENSOR_CHECK_H

#include "cpu_ref.h"

const void *cref_data(const DLTensor *t); /* data + byte_offset */
int64_t cref_numel(const DLTensor *t);
/* Non-NULL, in host memory, sane shape, compact strides, data set. */
int cref_check_host(cref_backend *b, const DLTensor *t, const char *what);
int cref_check_shape(cref_backend *b, const DLTensor *t, const char *what, int ndim, const int64_t *shape,
                     const char *meaning);
/* [n0, n1, n2], or flattened as [n0, n1 * n2] (sglang passes q that way). */
int cref_check_shape3(cref_backend *b, const DLTensor *t, const char *what, int64_t n0, int64_t n1, int64_t n2,
                      const char *meaning);
/* A 1-D int32/int64 host tensor of n elements. */
int cref_check_index(cref_backend *b, const DLTensor *t, const char *what, int64_t n, const char *meaning);
/* A dtype cpu_ref claims; *dt = its SGL_ATTN_DT_* bit. */
int cref_check_float(cref_backend *b, const DLTensor *t, const char *what, uint32_t *dt);

#endif
