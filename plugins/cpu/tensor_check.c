/* tensor_check.c - the SDK's tensor checks as cpu_ref reads tensors: host
 * memory, compact row-major; the message lands in the backend's error. */
#include "cpu_ref.h"

int cref_check(cref_backend *b, const DLTensor *t, const char *what, const char *meaning, uint32_t dtypes,
               uint32_t flags, int ndim, int64_t s0, int64_t s1, int64_t s2) {
    const sgl_sdk_tensor_spec s = {what, meaning, ndim, {s0, s1, s2, 0}, dtypes, SGL_SDK_DEV_HOST, -1,
                                   SGL_SDK_T_COMPACT | flags, 0};
    return sgl_sdk_check_tensor(t, &s, b->err, sizeof b->err);
}
