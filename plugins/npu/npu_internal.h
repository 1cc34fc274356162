/*
 * npu_internal.h - how the parts of the npu_ascend plugin fit together.
 *
 *   acl_min.h      our declarations of the CANN calls we make
 *   npu_runtime.c  finding and loading CANN (libascendcl, libnnopbase, libopapi), aclInit
 *   npu_plugin.c   descriptor, entry, probe, supports_model
 *   npu_devops.c   sgl_attn_device_ops over aclrtMalloc / aclrtMemcpy
 *   npu_tensor.c   DLTensor checks, aclTensor views
 *   npu_backend.c  instance: block tables per batch, save-KV and the fused attention op
 *
 * Plugin-wide state: the loaded runtime (function table) and whether aclInit
 * succeeded.  A failed load is retried on the next call (an environment may
 * have been fixed); a successful one stays until the plugin is unloaded.
 * Nothing here has run on Ascend hardware: tests use the fake runtime in
 * tests/npu/ (docs/platforms.md).
 */
#ifndef SGL_NPU_INTERNAL_H
#define SGL_NPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "acl_min.h"
#include "sgl_attn_abi.h"

#define NPU_PLUGIN_NAME "npu_ascend"

typedef struct npu_rt {
    aclInit_fn aclInit;
    aclrtSetDevice_fn aclrtSetDevice;
    aclrtGetDeviceCount_fn aclrtGetDeviceCount;
    aclrtGetSocName_fn aclrtGetSocName;
    aclrtGetMemInfo_fn aclrtGetMemInfo;
    aclrtMalloc_fn aclrtMalloc;
    aclrtFree_fn aclrtFree;
    aclrtMemcpy_fn aclrtMemcpy;
    aclrtCreateStream_fn aclrtCreateStream;
    aclrtDestroyStream_fn aclrtDestroyStream;
    aclrtSynchronizeStream_fn aclrtSynchronizeStream;
    aclrtSynchronizeDevice_fn aclrtSynchronizeDevice;
    aclGetRecentErrMsg_fn aclGetRecentErrMsg;
    aclCreateTensor_fn aclCreateTensor;
    aclDestroyTensor_fn aclDestroyTensor;
    aclCreateIntArray_fn aclCreateIntArray;
    aclDestroyIntArray_fn aclDestroyIntArray;
    aclCreateTensorList_fn aclCreateTensorList;
    aclDestroyTensorList_fn aclDestroyTensorList;
    aclnnFIAv2GetWorkspaceSize_fn aclnnFusedInferAttentionScoreV2GetWorkspaceSize;
    aclnnRun_fn aclnnFusedInferAttentionScoreV2;
    aclnnInplaceIndexCopyGetWorkspaceSize_fn aclnnInplaceIndexCopyGetWorkspaceSize;
    aclnnRun_fn aclnnInplaceIndexCopy;
} npu_rt;

/* The runtime, loaded and initialised (aclInit), or NULL with why set
 * ("libascendcl.so not found: <dlerror>", "aclInit -> 500000 (...)"). */
const npu_rt *npu_runtime(char *why, size_t why_size);
/* "<code> (<aclGetRecentErrMsg>)" for an ACL/aclnn status. */
void npu_describe(const npu_rt *rt, int code, char *dst, size_t size);
const char *npu_error_name(int code);

extern const sgl_attn_device_ops npu_device_ops;

int npu_create(const sgl_attn_create_args *args, sgl_attn_backend **out);

#endif
