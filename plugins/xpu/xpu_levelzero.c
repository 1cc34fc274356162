/* xpu_levelzero.c - look for Intel GPUs through Level Zero, loaded at run time
 * so the plugin loads (and says why) where no Level Zero loader exists. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "xpu_internal.h"

#if defined(SGL_XPU_HAVE_ZE)
#include <level_zero/ze_api.h>

typedef ze_result_t (*ze_init_fn)(ze_init_flags_t);
typedef ze_result_t (*ze_driver_get_fn)(uint32_t *, ze_driver_handle_t *);
typedef ze_result_t (*ze_device_get_fn)(ze_driver_handle_t, uint32_t *, ze_device_handle_t *);
typedef ze_result_t (*ze_device_props_fn)(ze_device_handle_t, ze_device_properties_t *);

static const char *ze_result_name(ze_result_t r) {
    switch (r) {
    case ZE_RESULT_SUCCESS: return "ZE_RESULT_SUCCESS";
    case ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED (no Level Zero driver)";
    case ZE_RESULT_ERROR_DEVICE_LOST: return "ZE_RESULT_ERROR_DEVICE_LOST";
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
    case ZE_RESULT_ERROR_UNKNOWN: return "ZE_RESULT_ERROR_UNKNOWN";
    default: return "Level Zero error";
    }
}

int xpu_levelzero_scan(char *note, size_t note_size) {
    void *h = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(note, note_size, "Level Zero: libze_loader.so.1 not loadable (%s)", e ? e : "?");
        return 0;
    }
    ze_init_fn init = (ze_init_fn)dlsym(h, "zeInit");
    ze_driver_get_fn driver_get = (ze_driver_get_fn)dlsym(h, "zeDriverGet");
    ze_device_get_fn device_get = (ze_device_get_fn)dlsym(h, "zeDeviceGet");
    ze_device_props_fn props = (ze_device_props_fn)dlsym(h, "zeDeviceGetProperties");
    if (!init || !driver_get || !device_get || !props) {
        snprintf(note, note_size, "Level Zero: libze_loader.so.1 lacks zeInit/zeDriverGet/zeDeviceGet");
        dlclose(h);
        return 0;
    }
    ze_result_t r = init(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(note, note_size, "Level Zero: zeInit(GPU_ONLY) -> 0x%08x %s", (unsigned)r,
                 ze_result_name(r));
        /* Keep the loader mapped: unloading after a failed init is not safe in every loader. */
        return 0;
    }
    uint32_t nd = 0;
    int gpus = 0;
    char first[96] = "";
    if (driver_get(&nd, NULL) == ZE_RESULT_SUCCESS && nd > 0) {
        ze_driver_handle_t drivers[8];
        if (nd > 8) nd = 8;
        if (driver_get(&nd, drivers) == ZE_RESULT_SUCCESS) {
            for (uint32_t i = 0; i < nd; i++) {
                uint32_t ndev = 0;
                ze_device_handle_t devs[16];
                if (device_get(drivers[i], &ndev, NULL) != ZE_RESULT_SUCCESS) continue;
                if (ndev > 16) ndev = 16;
                if (device_get(drivers[i], &ndev, devs) != ZE_RESULT_SUCCESS) continue;
                for (uint32_t j = 0; j < ndev; j++) {
                    ze_device_properties_t p;
                    memset(&p, 0, sizeof p);
                    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
                    if (props(devs[j], &p) != ZE_RESULT_SUCCESS) continue;
                    if (p.type == ZE_DEVICE_TYPE_GPU && p.vendorId == 0x8086) {
                        if (!gpus) snprintf(first, sizeof first, "%.95s", p.name);
                        gpus++;
                    }
                }
            }
        }
    }
    if (gpus)
        snprintf(note, note_size, "Level Zero: %d Intel GPU(s), first '%s'", gpus, first);
    else
        snprintf(note, note_size, "Level Zero: initialised, %u driver(s), no Intel GPU", nd);
    return gpus;
}

#else

int xpu_levelzero_scan(char *note, size_t note_size) {
    snprintf(note, note_size, "Level Zero: not compiled in (no level_zero/ze_api.h at build time)");
    return 0;
}

#endif
