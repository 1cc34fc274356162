/* xpu_program.c - build the kernels, with the device binary cached on disk by
 * (device, driver, source, options) hash.  The cache is an optimisation only:
 * any failure to read, validate or write it falls back to a source build. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xpu_internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)
static const char build_options[] = "-cl-std=CL1.2 -DWG=" STR(XPU_WG) " -DQMAX=" STR(XPU_QK_MAX)
                                     " -DVMAX=" STR(XPU_V_MAX);

static const char cache_magic[8] = {'S', 'G', 'L', 'X', 'O', 'C', 'L', '1'};

typedef struct cache_header {
    char magic[8];
    uint64_t key;
    uint64_t payload_size;
    uint64_t payload_hash;
} cache_header;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}
static uint64_t fnv_str(uint64_t h, const char *s) { return fnv1a(h, s, strlen(s) + 1); }

static uint64_t cache_key(const xpu_device *d) {
    uint64_t h = 1469598103934665603ull;
    h = fnv_str(h, xpu_attn_cl_source);
    h = fnv_str(h, build_options);
    h = fnv_str(h, d->platform_name);
    h = fnv_str(h, d->name);
    h = fnv_str(h, d->version);
    h = fnv_str(h, d->driver);
    return h;
}

/* Create dir (one level) 0700 if missing; refuse one we do not own or that
 * others can write, since we would load device code from it. */
static int safe_dir(const char *dir, int create, char *why, size_t why_size) {
    struct stat st;
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "cannot create %s: %s", dir, strerror(errno));
        return 0;
    }
    if (lstat(dir, &st) != 0) {
        snprintf(why, why_size, "%s: %s", dir, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_size, "%s is not a directory", dir);
        return 0;
    }
    if (create && (st.st_uid != geteuid() || (st.st_mode & 022))) {
        snprintf(why, why_size, "%s is not owned by this user or is group/world-writable", dir);
        return 0;
    }
    return 1;
}

int xpu_cache_dir(char *dir, size_t size, char *why, size_t why_size) {
    dir[0] = 0;
    why[0] = 0;
    const char *over = secure_getenv("SGL_ATTN_XPU_CACHE_DIR");
    char base[3072];
    if (over && (!strcmp(over, "off") || !*over)) {
        snprintf(why, why_size, "disabled by SGL_ATTN_XPU_CACHE_DIR=%s", over);
        return 0;
    }
    if (over) {
        snprintf(base, sizeof base, "%s", over);
        if (!safe_dir(base, 1, why, why_size)) return 0;
        snprintf(dir, size, "%s", base);
        return 1;
    }
    const char *xdg = secure_getenv("XDG_CACHE_HOME");
    const char *home = secure_getenv("HOME");
    char pwbuf[1024];
    struct passwd pw, *res = NULL;
    if (xdg && xdg[0] == '/') {
        snprintf(base, sizeof base, "%s", xdg);
    } else {
        if (!home || home[0] != '/') {
            if (getpwuid_r(geteuid(), &pw, pwbuf, sizeof pwbuf, &res) == 0 && res && res->pw_dir[0] == '/')
                home = res->pw_dir;
            else {
                snprintf(why, why_size, "no XDG_CACHE_HOME or home directory");
                return 0;
            }
        }
        snprintf(base, sizeof base, "%s/.cache", home);
        if (!safe_dir(base, 0, why, why_size) && mkdir(base, 0700) != 0) {
            snprintf(why, why_size, "cannot create %s: %s", base, strerror(errno));
            return 0;
        }
    }
    char a[3200], b[3300];
    snprintf(a, sizeof a, "%s/sglattn", base);
    if (!safe_dir(a, 1, why, why_size)) return 0;
    snprintf(b, sizeof b, "%s/xpu_ocl", a);
    if (!safe_dir(b, 1, why, why_size)) return 0;
    snprintf(dir, size, "%s", b);
    return 1;
}

/* Read a cached binary; NULL when absent or invalid.  *size gets its length. */
static unsigned char *cache_read(const char *path, uint64_t key, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    cache_header h;
    unsigned char *buf = NULL;
    if (fread(&h, sizeof h, 1, f) == 1 && !memcmp(h.magic, cache_magic, 8) && h.key == key &&
        h.payload_size > 0 && h.payload_size < (256u << 20)) {
        buf = malloc((size_t)h.payload_size);
        if (buf && (fread(buf, 1, (size_t)h.payload_size, f) != h.payload_size ||
                    fnv1a(1469598103934665603ull, buf, (size_t)h.payload_size) != h.payload_hash)) {
            free(buf);
            buf = NULL;
        }
        if (buf) *size = (size_t)h.payload_size;
    }
    fclose(f);
    return buf;
}

/* Write atomically (temp file + rename); failures are only noted. */
static int cache_write(const char *dir, const char *path, uint64_t key, const unsigned char *bin,
                       size_t size) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) return 0;
    cache_header h;
    memcpy(h.magic, cache_magic, 8);
    h.key = key;
    h.payload_size = size;
    h.payload_hash = fnv1a(1469598103934665603ull, bin, size);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return 0;
    }
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(bin, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return 0;
    }
    return 1;
}

static cl_int build(cl_program p, const xpu_device *d) {
    return clBuildProgram(p, 1, &d->id, build_options, NULL, NULL);
}

static void build_log(cl_program p, const xpu_device *d, char *dst, size_t size) {
    dst[0] = 0;
    size_t n = 0;
    if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
    char *log = malloc(n + 1);
    if (!log) return;
    if (clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
        log[n] = 0;
        snprintf(dst, size, "%s", log);
    }
    free(log);
}

int xpu_program_build(xpu_device *d, cl_program *out, char *err, size_t err_size) {
    *out = NULL;
    char dir[3400], why[512], path[3500], leaf[32];
    uint64_t key = cache_key(d);
    int cache = xpu_cache_dir(dir, sizeof dir, why, sizeof why);
    snprintf(leaf, sizeof leaf, "%016llx.clbin", (unsigned long long)key);
    if (cache) snprintf(path, sizeof path, "%s/%s", dir, leaf);
    cl_int e = CL_SUCCESS;
    if (cache) {
        size_t n = 0;
        unsigned char *bin = cache_read(path, key, &n);
        if (bin) {
            const unsigned char *bins[1] = {bin};
            cl_int st = CL_SUCCESS;
            cl_program p = clCreateProgramWithBinary(d->ctx, 1, &d->id, &n, bins, &st, &e);
            free(bin);
            if (e == CL_SUCCESS && st == CL_SUCCESS && build(p, d) == CL_SUCCESS) {
                snprintf(d->cache_note, sizeof d->cache_note, "cache hit %s", leaf);
                *out = p;
                return SGL_ATTN_OK;
            }
            if (p) clReleaseProgram(p);
        }
    }
    const char *src = xpu_attn_cl_source;
    cl_program p = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS) {
        snprintf(err, err_size, "xpu_ocl: clCreateProgramWithSource on '%s': %s", d->name, xpu_cl_error_name(e));
        return SGL_ATTN_E_DEVICE;
    }
    e = build(p, d);
    if (e != CL_SUCCESS) {
        char log[768];
        build_log(p, d, log, sizeof log);
        snprintf(err, err_size, "xpu_ocl: kernel build failed on '%s' (%s): %s", d->name,
                 xpu_cl_error_name(e), log);
        clReleaseProgram(p);
        return SGL_ATTN_E_DEVICE;
    }
    if (!cache) {
        snprintf(d->cache_note, sizeof d->cache_note, "built from source; no cache (%.120s)", why);
    } else {
        size_t n = 0;
        unsigned char *bin = NULL;
        int saved = 0;
        if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS && n > 0 &&
            (bin = malloc(n)) != NULL) {
            unsigned char *bins[1] = {bin};
            if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
                saved = cache_write(dir, path, key, bin, n);
        }
        free(bin);
        snprintf(d->cache_note, sizeof d->cache_note, "built from source; %s %s",
                 saved ? "cached as" : "could not write", leaf);
    }
    *out = p;
    return SGL_ATTN_OK;
}
