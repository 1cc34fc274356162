/* fake_ascendcl.c - a fake libascendcl.so for tests/npu (see fake_acl.h).
 * Environment knobs: FAKE_ACL_DEVICE_COUNT (default 1), FAKE_ACL_SOC
 * (default "Ascend910B3"), FAKE_ACL_INIT_ERROR (aclInit returns it),
 * FAKE_ACL_HBM_GB (default 64). */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_acl.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int aclInit(const char *config);
EXPORT const char *aclGetRecentErrMsg(void);
EXPORT int aclrtGetDeviceCount(uint32_t *count);
EXPORT int aclrtSetDevice(int32_t device);
EXPORT const char *aclrtGetSocName(void);
EXPORT int aclrtGetMemInfo(int attr, size_t *free_b, size_t *total_b);
EXPORT int aclrtMalloc(void **ptr, size_t size, int policy);
EXPORT int aclrtFree(void *ptr);
EXPORT int aclrtMemcpy(void *dst, size_t dst_max, const void *src, size_t count, int kind);
EXPORT int aclrtCreateStream(void **stream);
EXPORT int aclrtDestroyStream(void *stream);
EXPORT int aclrtSynchronizeStream(void *stream);
EXPORT int aclrtSynchronizeDevice(void);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char **lines;
static int n_lines, cap_lines;
static char last_error[256];
static int live;
static int current_device = -1;

EXPORT void fake_acl_record(const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    if (n_lines == cap_lines) {
        int cap = cap_lines ? 2 * cap_lines : 64;
        char **l = realloc(lines, sizeof(char *) * (size_t)cap);
        if (l) {
            lines = l;
            cap_lines = cap;
        }
    }
    if (n_lines < cap_lines) lines[n_lines++] = strdup(buf);
    pthread_mutex_unlock(&mu);
}

EXPORT void fake_acl_set_error(const char *msg) {
    pthread_mutex_lock(&mu);
    snprintf(last_error, sizeof last_error, "%s", msg);
    pthread_mutex_unlock(&mu);
}
EXPORT int fake_acl_log_count(void) { return n_lines; }
EXPORT const char *fake_acl_log_line(int i) { return i >= 0 && i < n_lines ? lines[i] : NULL; }
EXPORT void fake_acl_log_clear(void) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_lines; i++) free(lines[i]);
    free(lines);
    lines = NULL;
    n_lines = cap_lines = 0;
    pthread_mutex_unlock(&mu);
}
EXPORT void fake_acl_live_add(int delta) {
    pthread_mutex_lock(&mu);
    live += delta;
    pthread_mutex_unlock(&mu);
}
EXPORT int fake_acl_live(void) { return live; }

__attribute__((destructor)) static void fake_acl_fini(void) { fake_acl_log_clear(); }

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

EXPORT int aclInit(const char *config) {
    int e = env_int("FAKE_ACL_INIT_ERROR", 0);
    fake_acl_record("aclInit %s -> %d", config ? config : "NULL", e);
    if (e) fake_acl_set_error("EE1001: fake driver not started");
    return e;
}

EXPORT const char *aclGetRecentErrMsg(void) { return last_error[0] ? last_error : NULL; }

EXPORT int aclrtGetDeviceCount(uint32_t *count) {
    *count = (uint32_t)env_int("FAKE_ACL_DEVICE_COUNT", 1);
    fake_acl_record("aclrtGetDeviceCount -> %u", *count);
    return 0;
}

EXPORT int aclrtSetDevice(int32_t device) {
    if (device < 0 || device >= env_int("FAKE_ACL_DEVICE_COUNT", 1)) {
        fake_acl_set_error("EE1001: invalid device id");
        fake_acl_record("aclrtSetDevice %d -> 107001", device);
        return 107001;
    }
    if (device != current_device) fake_acl_record("aclrtSetDevice %d", device);
    current_device = device;
    return 0;
}

EXPORT const char *aclrtGetSocName(void) {
    const char *s = getenv("FAKE_ACL_SOC");
    s = s && *s ? s : "Ascend910B3";
    fake_acl_record("aclrtGetSocName -> %s", s);
    return s;
}

EXPORT int aclrtGetMemInfo(int attr, size_t *free_b, size_t *total_b) {
    size_t t = (size_t)env_int("FAKE_ACL_HBM_GB", 64) << 30;
    *total_b = t;
    *free_b = t - (t >> 3);
    fake_acl_record("aclrtGetMemInfo attr=%d", attr);
    return 0;
}

/* "Device" memory is host memory. */
EXPORT int aclrtMalloc(void **ptr, size_t size, int policy) {
    *ptr = calloc(1, size ? size : 1);
    fake_acl_record("aclrtMalloc %zu policy=%d", size, policy);
    if (!*ptr) return 207001;
    fake_acl_live_add(1);
    return 0;
}

EXPORT int aclrtFree(void *ptr) {
    fake_acl_record("aclrtFree");
    if (ptr) fake_acl_live_add(-1);
    free(ptr);
    return 0;
}

EXPORT int aclrtMemcpy(void *dst, size_t dst_max, const void *src, size_t count, int kind) {
    fake_acl_record("aclrtMemcpy kind=%d bytes=%zu", kind, count);
    if (count > dst_max || kind < 0 || kind > 3) {
        fake_acl_set_error("EE1001: bad memcpy arguments");
        return 107001;
    }
    memcpy(dst, src, count);
    return 0;
}

EXPORT int aclrtCreateStream(void **stream) {
    *stream = malloc(1);
    fake_acl_live_add(1);
    fake_acl_record("aclrtCreateStream");
    return 0;
}
EXPORT int aclrtDestroyStream(void *stream) {
    fake_acl_record("aclrtDestroyStream");
    if (stream) fake_acl_live_add(-1);
    free(stream);
    return 0;
}
EXPORT int aclrtSynchronizeStream(void *stream) {
    fake_acl_record("aclrtSynchronizeStream %s", stream ? "stream" : "NULL");
    return 0;
}
EXPORT int aclrtSynchronizeDevice(void) {
    fake_acl_record("aclrtSynchronizeDevice");
    return 0;
}
