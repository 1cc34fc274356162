/* npu_runtime.c - find and load Ascend CANN at run time.
 *
 * Where: $SGL_ATTN_ASCEND_LIB_DIR, else $ASCEND_TOOLKIT_HOME/lib64 or
 * $ASCEND_HOME_PATH/lib64 (what CANN's set_env.sh exports), else the
 * dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_internal.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static npu_rt rt;
static void *libs[3];
static int ready;           /* rt filled and aclInit done */

const char *npu_error_name(int code) {
    switch (code) {
    case 0: return "ACL_SUCCESS";
    case 100000: return "ACL_ERROR_INVALID_PARAM";
    case 100001: return "ACL_ERROR_UNINITIALIZE (CANN runtime not loaded or not initialised)";
    case 100002: return "ACL_ERROR_REPEAT_INITIALIZE";
    case 107001: return "ACL_ERROR_RT_PARAM_INVALID";
    case 161001: return "ACLNN_ERR_PARAM_NULLPTR";
    case 161002: return "ACLNN_ERR_PARAM_INVALID";
    case 200000: return "ACL_ERROR_BAD_ALLOC";
    case 207001: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case 361001: return "ACLNN_ERR_RUNTIME_ERROR";
    case 500000: return "ACL_ERROR_INTERNAL_ERROR";
    case 500003: return "ACL_ERROR_RT_FAILURE";
    case 507033: return "ACL_ERROR_RT_DEV_SETUP_ERROR (driver/device not ready)";
    default: return "ACL error";
    }
}

void npu_describe(const npu_rt *r, int code, char *dst, size_t size) {
    const char *msg = r && r->aclGetRecentErrMsg ? r->aclGetRecentErrMsg() : NULL;
    snprintf(dst, size, "%d %s%s%.160s%s", code, npu_error_name(code), msg && *msg ? " (" : "", msg ? msg : "",
             msg && *msg ? ")" : "");
}

static void *open_lib(const char *dir, const char *name, char *why, size_t why_size) {
    char path[4096];
    if (dir) snprintf(path, sizeof path, "%.3900s/%.64s", dir, name);
    else snprintf(path, sizeof path, "%.64s", name);
    /* RTLD_GLOBAL: libopapi resolves libnnopbase's symbols through the global scope. */
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s not found: %.200s%s", name, e ? e : "?",
                 dir ? "" : " (set SGL_ATTN_ASCEND_LIB_DIR, or source CANN's set_env.sh)");
    }
    return h;
}

#define SYM(lib, field, name)                                                                         \
    do {                                                                                              \
        *(void **)&rt.field = dlsym(libs[lib], name);                                                 \
        if (!rt.field) {                                                                              \
            snprintf(why, why_size, "%s lacks %s: this CANN is older than npu_ascend needs (8.0+)",   \
                     lib == 0 ? "libascendcl.so" : lib == 1 ? "libnnopbase.so" : "libopapi.so", name); \
            return 0;                                                                                 \
        }                                                                                             \
    } while (0)

static int resolve(char *why, size_t why_size) {
    SYM(0, aclInit, "aclInit");
    SYM(0, aclrtSetDevice, "aclrtSetDevice");
    SYM(0, aclrtGetDeviceCount, "aclrtGetDeviceCount");
    SYM(0, aclrtGetSocName, "aclrtGetSocName");
    SYM(0, aclrtGetMemInfo, "aclrtGetMemInfo");
    SYM(0, aclrtMalloc, "aclrtMalloc");
    SYM(0, aclrtFree, "aclrtFree");
    SYM(0, aclrtMemcpy, "aclrtMemcpy");
    SYM(0, aclrtCreateStream, "aclrtCreateStream");
    SYM(0, aclrtDestroyStream, "aclrtDestroyStream");
    SYM(0, aclrtSynchronizeStream, "aclrtSynchronizeStream");
    SYM(0, aclrtSynchronizeDevice, "aclrtSynchronizeDevice");
    SYM(0, aclGetRecentErrMsg, "aclGetRecentErrMsg");
    SYM(1, aclCreateTensor, "aclCreateTensor");
    SYM(1, aclDestroyTensor, "aclDestroyTensor");
    SYM(1, aclCreateIntArray, "aclCreateIntArray");
    SYM(1, aclDestroyIntArray, "aclDestroyIntArray");
    SYM(1, aclCreateTensorList, "aclCreateTensorList");
    SYM(1, aclDestroyTensorList, "aclDestroyTensorList");
    SYM(2, aclnnFusedInferAttentionScoreV2GetWorkspaceSize, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize");
    SYM(2, aclnnFusedInferAttentionScoreV2, "aclnnFusedInferAttentionScoreV2");
    SYM(2, aclnnInplaceIndexCopyGetWorkspaceSize, "aclnnInplaceIndexCopyGetWorkspaceSize");
    SYM(2, aclnnInplaceIndexCopy, "aclnnInplaceIndexCopy");
    return 1;
}

static void unload_locked(void) {
    for (int i = 2; i >= 0; i--)
        if (libs[i]) dlclose(libs[i]);
    memset(libs, 0, sizeof libs);
    memset(&rt, 0, sizeof rt);
}

const npu_rt *npu_runtime(char *why, size_t why_size) {
    static const char *const names[3] = {"libascendcl.so", "libnnopbase.so", "libopapi.so"};
    pthread_mutex_lock(&lock);
    if (ready) {
        pthread_mutex_unlock(&lock);
        return &rt;
    }
    const char *dir = secure_getenv("SGL_ATTN_ASCEND_LIB_DIR");
    char buf[4096];
    if (!dir || !*dir) {
        const char *home = secure_getenv("ASCEND_TOOLKIT_HOME");
        if (!home || !*home) home = secure_getenv("ASCEND_HOME_PATH");
        if (home && *home) {
            snprintf(buf, sizeof buf, "%.3900s/lib64", home);
            dir = buf;
        } else {
            dir = NULL;
        }
    }
    int ok = 1;
    for (int i = 0; i < 3 && ok; i++)
        if (!libs[i]) ok = (libs[i] = open_lib(dir, names[i], why, why_size)) != NULL;
    if (ok) ok = resolve(why, why_size);
    if (ok) {
        aclError e = rt.aclInit(NULL);
        if (e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_INITIALIZE) {
            char d[256];
            npu_describe(&rt, e, d, sizeof d);
            snprintf(why, why_size, "aclInit -> %s", d);
            ok = 0;
        }
    }
    if (!ok) unload_locked(); /* try again next time */
    ready = ok;
    pthread_mutex_unlock(&lock);
    return ok ? &rt : NULL;
}

/* Unloading the plugin unloads CANN's libraries we opened (the dynamic loader
 * keeps them if the engine holds them too). */
__attribute__((destructor)) static void npu_runtime_unload(void) {
    pthread_mutex_lock(&lock);
    unload_locked();
    ready = 0;
    pthread_mutex_unlock(&lock);
}
