/* xpu_tensor.h - checking a DLTensor that should be an xpu_ocl device tensor,
 * and turning it into (cl_mem, byte offset, dtype code) for kernel args. */
#ifndef SGL_XPU_TENSOR_H
#define SGL_XPU_TENSOR_H

#include "sdk_tensor.h"
#include "sdk_text.h"
#include "xpu_internal.h"

/* dtype codes shared with xpu_attn.cl */
enum { XPU_DT_F32 = 0, XPU_DT_F16 = 1, XPU_DT_BF16 = 2 };

typedef struct xpu_tview {
    void *mem;      /* cl_mem (buffer mode) or SVM pointer */
    cl_ulong off;   /* bytes */
    cl_int code;    /* float: XPU_DT_*; int: 1 when int64 */
} xpu_tview;

typedef enum { XPU_T_FLOAT, XPU_T_INDEX, XPU_T_F32 } xpu_tclass;

/* Check t: a device (not host) tensor of `ndim` dims whose sizes match
 * `shape` (-1 = any; the actual sizes go to got[] when non-NULL), of the
 * class's dtypes, compact, aligned, and (buffer mode: svm == 0) inside its
 * cl_mem.  SVM pointers are not looked up on this path.  On failure writes a
 * message naming `what` into err and returns SGL_ATTN_E_INVALID or
 * SGL_ATTN_E_UNSUPPORTED. */
int xpu_tensor_check(const DLTensor *t, const char *what, int svm, int ndim, const int64_t *shape,
                     xpu_tclass cls, xpu_tview *v, int64_t *got, char *err, size_t err_size);

/* A host (kDLCPU) index tensor of n entries (read with sgl_sdk_index_at). */
int xpu_host_index_check(const DLTensor *t, const char *what, int64_t n, char *err, size_t err_size);

#endif
