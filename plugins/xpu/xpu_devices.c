/* xpu_devices.c - OpenCL device enumeration, ranking, and the per-device
 * shared context/queue/program (reference counted). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk_option.h"
#include "sdk_text.h"
#include "xpu_internal.h"

/* Plugin-wide state: the probe and device_ops get no context argument, so the
 * device list lives here.  Written once under `once`; the shared objects of
 * each device are guarded by `lock`. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static xpu_device devices[XPU_MAX_DEVICES];
static int order[XPU_MAX_DEVICES]; /* devices sorted by kind, stable */
static int n_devices;
static char summary[SGL_ATTN_REASON_MAX];
static char lz_note[160];
static atomic_int conf_allow_cpu;

void xpu_set_conf_allow_cpu(int v) { atomic_store(&conf_allow_cpu, v ? 1 : 0); }

int xpu_allow_cpu(char *by, size_t by_size) {
    const sgl_sdk_opts env = {NULL, XPU_PLUGIN_NAME, by, by_size};
    int v = 0;
    sgl_sdk_str(by, by_size, "%s", "");
    if (!sgl_sdk_opt_raw(&env, NULL, XPU_ENV_ALLOW_CPU, NULL, 0)) {
        v = atomic_load(&conf_allow_cpu);
        if (v) sgl_sdk_str(by, by_size, "plugin_options.xpu_ocl.allow_cpu");
        return v;
    }
    if (sgl_sdk_opt_bool(&env, NULL, XPU_ENV_ALLOW_CPU, 0, &v)) return 0; /* by says why */
    if (v) sgl_sdk_str(by, by_size, "%s", XPU_ENV_ALLOW_CPU);
    return v;
}

/* A device string, truncated to fit (OpenCL refuses a short buffer outright). */
static void info_str(cl_device_id d, cl_device_info what, char *dst, size_t size) {
    char buf[4096];
    size_t n = 0;
    dst[0] = 0;
    if (clGetDeviceInfo(d, what, 0, NULL, &n) != CL_SUCCESS || n == 0 || n > sizeof buf) return;
    if (clGetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) return;
    buf[n - 1] = 0;
    snprintf(dst, size, "%.*s", (int)(size - 1), buf);
}

/* "OpenCL 3.0 PoCL ..." -> 300; 0 when unparsable. */
static int cl_version_of(const char *v) {
    int maj = 0, min = 0;
    if (sscanf(v, "OpenCL %d.%d", &maj, &min) != 2) return 0;
    return maj * 100 + min;
}

static xpu_kind kind_of(cl_device_type t, cl_uint vendor) {
    if (t & CL_DEVICE_TYPE_GPU) return vendor == 0x8086 ? XPU_KIND_INTEL_GPU : XPU_KIND_OTHER_GPU;
    if (t & CL_DEVICE_TYPE_CPU) return XPU_KIND_CPU;
    return XPU_KIND_ACCEL;
}

static void enumerate(void) {
    size_t used = 0;
    int lz = xpu_levelzero_scan(lz_note, sizeof lz_note);
    (void)lz;
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        snprintf(summary, sizeof summary, "OpenCL: no platform (clGetPlatformIDs -> %s)",
                 e == CL_SUCCESS ? "0 platforms" : xpu_cl_error_name(e));
        return;
    }
    cl_platform_id plats[8];
    if (np > 8) np = 8;
    if (clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) {
        snprintf(summary, sizeof summary, "OpenCL: clGetPlatformIDs failed");
        return;
    }
    used += (size_t)snprintf(summary, sizeof summary, "OpenCL: %u platform(s)", np);
    for (cl_uint p = 0; p < np; p++) {
        char pname[64] = "", pbuf[1024] = "";
        if (clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pbuf, pbuf, NULL) == CL_SUCCESS)
            snprintf(pname, sizeof pname, "%.63s", pbuf);
        cl_uint nd = 0;
        cl_device_id ids[XPU_MAX_DEVICES];
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, XPU_MAX_DEVICES, ids, &nd) != CL_SUCCESS) nd = 0;
        if (nd > XPU_MAX_DEVICES) nd = XPU_MAX_DEVICES;
        for (cl_uint i = 0; i < nd && n_devices < XPU_MAX_DEVICES; i++) {
            xpu_device *d = &devices[n_devices];
            memset(d, 0, sizeof *d);
            d->platform = plats[p];
            d->id = ids[i];
            snprintf(d->platform_name, sizeof d->platform_name, "%s", pname);
            info_str(ids[i], CL_DEVICE_NAME, d->name, sizeof d->name);
            info_str(ids[i], CL_DEVICE_VERSION, d->version, sizeof d->version);
            info_str(ids[i], CL_DRIVER_VERSION, d->driver, sizeof d->driver);
            info_str(ids[i], CL_DEVICE_OPENCL_C_VERSION, d->c_version, sizeof d->c_version);
            cl_device_type t = 0;
            cl_uint vendor = 0;
            clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->mem_bytes, &d->mem_bytes, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
            char ext[4096] = "";
            info_str(ids[i], CL_DEVICE_EXTENSIONS, ext, sizeof ext);
            d->has_fp16 = strstr(ext, "cl_khr_fp16") != NULL;
            d->kind = kind_of(t, vendor);
            cl_device_svm_capabilities svm = 0;
            if (cl_version_of(d->version) >= 200 &&
                clGetDeviceInfo(ids[i], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL) == CL_SUCCESS)
                d->svm_capable = (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
            const char *skip = NULL;
            if (cl_version_of(d->version) < 102) skip = "older than OpenCL 1.2";
            else if (d->max_wg < XPU_WG) skip = "work-group limit below 64";
            else if (d->local_mem < 8192) skip = "local memory below 8 KiB";
            if (used < sizeof summary)
                used += (size_t)snprintf(summary + used, sizeof summary - used, "; '%s' (%s, %s)%s%s",
                                         d->name, pname,
                                         d->kind == XPU_KIND_CPU ? "CPU" : d->kind == XPU_KIND_ACCEL ? "accelerator" : "GPU",
                                         skip ? " skipped: " : "", skip ? skip : "");
            if (!skip) n_devices++;
        }
    }
    /* Rank: Intel GPUs, other GPUs, accelerators, CPUs; enumeration order within a kind. */
    int k = 0;
    for (int kind = XPU_KIND_INTEL_GPU; kind <= XPU_KIND_CPU; kind++)
        for (int i = 0; i < n_devices; i++)
            if ((int)devices[i].kind == kind) order[k++] = i;
}

static void ensure(void) { pthread_once(&once, enumerate); }

int xpu_devices_count(void) {
    ensure();
    return n_devices;
}
const char *xpu_devices_summary(void) {
    ensure();
    return summary;
}
const char *xpu_devices_levelzero_note(void) {
    ensure();
    return lz_note;
}

int xpu_devices_visible_count(void) {
    ensure();
    int allow = xpu_allow_cpu(NULL, 0), n = 0;
    for (int i = 0; i < n_devices; i++)
        if (allow || devices[order[i]].kind != XPU_KIND_CPU) n++;
    return n;
}

xpu_device *xpu_device_visible(int32_t index) {
    ensure();
    if (index < 0) return NULL;
    int allow = xpu_allow_cpu(NULL, 0);
    for (int i = 0, v = 0; i < n_devices; i++) {
        xpu_device *d = &devices[order[i]];
        if (!allow && d->kind == XPU_KIND_CPU) continue;
        if (v++ == index) return d;
    }
    return NULL;
}

static void drop_shared(xpu_device *d) {
    free(d->allocs);
    d->allocs = NULL;
    d->n_allocs = d->cap_allocs = 0;
    if (d->program) clReleaseProgram(d->program);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->ctx) clReleaseContext(d->ctx);
    d->program = NULL;
    d->queue = NULL;
    d->ctx = NULL;
}

int xpu_device_acquire(int32_t index, xpu_device **out, char *err, size_t err_size) {
    *out = NULL;
    xpu_device *d = xpu_device_visible(index);
    if (!d) {
        snprintf(err, err_size, "xpu_ocl: no device %d (%d visible; CPU devices %s)", (int)index,
                 xpu_devices_visible_count(), xpu_allow_cpu(NULL, 0) ? "allowed" : "not allowed");
        return SGL_ATTN_E_NOT_FOUND;
    }
    /* The memory model is the device's while its context is open (buffers of
     * device_ops and instances share it): chosen when the context opens, by
     * $SGL_ATTN_XPU_MEMORY (svm, buffer or auto) over what the device has. */
    static const char *const models[] = {"svm", "buffer"};
    const sgl_sdk_opts env = {NULL, XPU_PLUGIN_NAME, err, err_size};
    int model;
    if (sgl_sdk_opt_choice(&env, NULL, "SGL_ATTN_XPU_MEMORY", models, 2, 0, &model)) return SGL_ATTN_E_INVALID;
    int rc = SGL_ATTN_OK;
    pthread_mutex_lock(&lock);
    if (d->refs == 0) {
        d->svm = d->svm_capable && model == 0;
        cl_int e = CL_SUCCESS;
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
        d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &e);
        if (e == CL_SUCCESS) d->queue = clCreateCommandQueue(d->ctx, d->id, 0, &e);
        if (e != CL_SUCCESS) {
            snprintf(err, err_size, "xpu_ocl: cannot open '%s': %s", d->name, xpu_cl_error_name(e));
            drop_shared(d);
            rc = SGL_ATTN_E_DEVICE;
        }
    }
    if (rc == SGL_ATTN_OK) {
        d->refs++;
        *out = d;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void xpu_device_release(xpu_device *d) {
    if (!d) return;
    pthread_mutex_lock(&lock);
    if (d->refs > 0 && --d->refs == 0) drop_shared(d);
    pthread_mutex_unlock(&lock);
}

int xpu_device_program(xpu_device *d, cl_program *out, char *err, size_t err_size) {
    int rc = SGL_ATTN_OK;
    pthread_mutex_lock(&lock);
    if (!d->program) rc = xpu_program_build(d, &d->program, err, err_size);
    *out = d->program;
    pthread_mutex_unlock(&lock);
    return rc;
}

xpu_device *xpu_device_held(int32_t index) {
    xpu_device *d = xpu_device_visible(index);
    if (!d) return NULL;
    pthread_mutex_lock(&lock);
    int held = d->refs > 0;
    pthread_mutex_unlock(&lock);
    return held ? d : NULL;
}

int xpu_svm_record(xpu_device *d, void *base, size_t size) {
    int ok = 1;
    pthread_mutex_lock(&lock);
    if (d->n_allocs == d->cap_allocs) {
        size_t cap = d->cap_allocs ? 2 * d->cap_allocs : 32;
        struct xpu_alloc *a = realloc(d->allocs, cap * sizeof *a);
        if (a) {
            d->allocs = a;
            d->cap_allocs = cap;
        } else {
            ok = 0;
        }
    }
    if (ok) d->allocs[d->n_allocs++] = (struct xpu_alloc){(char *)base, size};
    pthread_mutex_unlock(&lock);
    return ok;
}

int xpu_svm_forget(xpu_device *d, void *base) {
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < d->n_allocs; i++)
        if (d->allocs[i].base == (char *)base) {
            d->allocs[i] = d->allocs[--d->n_allocs];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

int xpu_svm_contains(xpu_device *d, const void *p, size_t bytes) {
    int found = 0;
    const char *c = p;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < d->n_allocs && !found; i++) {
        const struct xpu_alloc *a = &d->allocs[i];
        found = c >= a->base && c <= a->base + a->size && bytes <= (size_t)(a->base + a->size - c);
    }
    pthread_mutex_unlock(&lock);
    return found;
}
