/* fake_nnopbase.c - a fake libnnopbase.so: aclTensor / aclIntArray /
 * aclTensorList descriptors, recorded and counted (fake_acl.h). */
#include <stdlib.h>
#include <string.h>

#include "fake_acl.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT struct aclTensor *aclCreateTensor(const int64_t *view_dims, uint64_t n, int dtype, const int64_t *strides,
                                         int64_t offset, int format, const int64_t *storage_dims, uint64_t sn,
                                         void *data);
EXPORT int aclDestroyTensor(const struct aclTensor *t);
EXPORT struct aclIntArray *aclCreateIntArray(const int64_t *v, uint64_t n);
EXPORT int aclDestroyIntArray(const struct aclIntArray *a);
EXPORT struct aclTensorList *aclCreateTensorList(struct aclTensor *const *v, uint64_t n);
EXPORT int aclDestroyTensorList(const struct aclTensorList *l);

EXPORT struct aclTensor *aclCreateTensor(const int64_t *view_dims, uint64_t n, int dtype, const int64_t *strides,
                                         int64_t offset, int format, const int64_t *storage_dims, uint64_t sn,
                                         void *data) {
    (void)storage_dims;
    if (n > 8 || format != 2 || sn != n) return NULL;
    struct aclTensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->magic = FAKE_MAGIC_TENSOR;
    t->ndim = (int)n;
    t->dtype = dtype;
    for (uint64_t i = 0; i < n; i++) {
        t->dims[i] = view_dims[i];
        t->strides[i] = strides[i];
    }
    t->offset = offset;
    t->data = data;
    fake_acl_live_add(1);
    return t;
}

EXPORT int aclDestroyTensor(const struct aclTensor *t) {
    if (!t) return 0;
    if (t->magic != FAKE_MAGIC_TENSOR) {
        fake_acl_record("aclDestroyTensor on a non-tensor");
        return 161002;
    }
    ((struct aclTensor *)t)->magic = 0;
    fake_acl_live_add(-1);
    free((void *)t);
    return 0;
}

EXPORT struct aclIntArray *aclCreateIntArray(const int64_t *v, uint64_t n) {
    struct aclIntArray *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->magic = FAKE_MAGIC_ARRAY;
    a->n = n;
    a->v = malloc(sizeof(int64_t) * (n ? n : 1));
    if (!a->v) {
        free(a);
        return NULL;
    }
    memcpy(a->v, v, sizeof(int64_t) * n); /* copied: the caller's array may change */
    fake_acl_live_add(1);
    return a;
}

EXPORT int aclDestroyIntArray(const struct aclIntArray *a) {
    if (!a) return 0;
    if (a->magic != FAKE_MAGIC_ARRAY) return 161002;
    free(a->v);
    ((struct aclIntArray *)a)->magic = 0;
    fake_acl_live_add(-1);
    free((void *)a);
    return 0;
}

EXPORT struct aclTensorList *aclCreateTensorList(struct aclTensor *const *v, uint64_t n) {
    struct aclTensorList *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->magic = FAKE_MAGIC_LIST;
    l->n = n;
    l->t = calloc(n ? n : 1, sizeof *l->t);
    if (!l->t) {
        free(l);
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) l->t[i] = v[i];
    fake_acl_live_add(1);
    return l;
}

/* Like CANN: destroying the list destroys its tensors. */
EXPORT int aclDestroyTensorList(const struct aclTensorList *l) {
    if (!l) return 0;
    if (l->magic != FAKE_MAGIC_LIST) return 161002;
    for (uint64_t i = 0; i < l->n; i++) aclDestroyTensor(l->t[i]);
    free(l->t);
    ((struct aclTensorList *)l)->magic = 0;
    fake_acl_live_add(-1);
    free((void *)l);
    return 0;
}
