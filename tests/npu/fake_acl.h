/* fake_acl.h - the fake CANN built for tests/npu: what its three libraries
 * (libascendcl.so, libnnopbase.so, libopapi.so) share.  The fake records
 * every call as one text line, hands out host memory as "device" memory,
 * answers canned device info and computes the two aclnn operators npu_ascend
 * uses on the CPU, checking the documented constraints.  It is not Ascend:
 * passing against it proves the call path and arguments, not the hardware. */
#ifndef SGL_FAKE_ACL_H
#define SGL_FAKE_ACL_H

#include <stdint.h>

#define FAKE_MAGIC_TENSOR 0x7e75a0
#define FAKE_MAGIC_ARRAY 0x7e75a1
#define FAKE_MAGIC_LIST 0x7e75a2
#define FAKE_MAGIC_EXEC 0x7e75a3

struct aclTensor {
    int magic;
    int ndim;
    int dtype;
    int64_t dims[8];
    int64_t strides[8];
    int64_t offset;
    void *data;
};
struct aclIntArray {
    int magic;
    uint64_t n;
    int64_t *v;
};
struct aclTensorList {
    int magic;
    uint64_t n;
    struct aclTensor **t;
};

/* Exported by the fake libascendcl.so; the other two fakes link it. */
void fake_acl_record(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fake_acl_set_error(const char *msg);
int fake_acl_log_count(void);
const char *fake_acl_log_line(int i);
void fake_acl_log_clear(void);
/* Objects alive: descriptors (nnopbase) + executors (opapi) + device allocations. */
void fake_acl_live_add(int delta);
int fake_acl_live(void);

#endif
