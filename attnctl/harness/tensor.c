/* tensor.c - tensors staged where the plugin reads them, with a host copy
 * and guard bytes on both sides.  The DLTensor's data is the start of the
 * device allocation and byte_offset skips the front guard, which is valid
 * for pointer devices and for handle devices (an OpenCL cl_mem) alike;
 * copies always move the whole allocation. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static unsigned char guard_byte(size_t i, int side) { return (unsigned char)(0xa5u ^ (unsigned)(i * 131u) ^ (side ? 0x3cu : 0u)); }

static size_t total_bytes(const htensor *t) { return t->bytes + 2 * (size_t)HT_GUARD_BYTES; }

int htensor_alloc(htensor *t, const hdev *d, const char *name, hdtype dt, int ndim, const int64_t *shape, char *err,
                  size_t err_size) {
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dt = dt;
    t->dev = d;
    if (ndim < 1 || ndim > HT_MAX_DIMS) {
        snprintf(err, err_size, "%s: %d dims (harness tensors have 1..%d)", name, ndim, HT_MAX_DIMS);
        return -1;
    }
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        count *= (size_t)shape[i];
    }
    t->count = count;
    t->bytes = count * hdtype_size(dt);
    const size_t total = (total_bytes(t) + 63) / 64 * 64;
    t->host = aligned_alloc(64, total);
    if (!t->host) {
        snprintf(err, err_size, "%s: out of host memory for %zu bytes", name, total);
        return -1;
    }
    for (size_t i = 0; i < HT_GUARD_BYTES; i++) {
        t->host[i] = guard_byte(i, 0);
        t->host[HT_GUARD_BYTES + t->bytes + i] = guard_byte(i, 1);
    }
    memset(t->host + HT_GUARD_BYTES, 0, t->bytes);
    if (d->ops) {
        int rc = d->ops->alloc(d->device, total_bytes(t), &t->dev_base);
        if (rc || !t->dev_base) {
            const char *why = d->ops->error_string ? d->ops->error_string(rc) : NULL;
            snprintf(err, err_size, "%s: device alloc of %zu bytes failed with %d (%s)", name, total_bytes(t), rc,
                     why ? why : "no error text");
            free(t->host);
            t->host = NULL;
            t->dev_base = NULL;
            return -1;
        }
    } else {
        t->dev_base = aligned_alloc(64, total);
        if (!t->dev_base) {
            snprintf(err, err_size, "%s: out of host memory for %zu bytes", name, total);
            free(t->host);
            t->host = NULL;
            return -1;
        }
    }
    t->t.data = t->dev_base;
    t->t.byte_offset = HT_GUARD_BYTES;
    t->t.device = hdev_dl(d);
    t->t.ndim = ndim;
    t->t.dtype = hdtype_dl(dt);
    t->t.shape = t->shape;
    t->t.strides = NULL;
    return 0;
}

void htensor_free(htensor *t) {
    if (!t->host && !t->dev_base) return;
    if (t->dev_base) {
        if (t->dev->ops) t->dev->ops->free(t->dev->device, t->dev_base);
        else free(t->dev_base);
    }
    free(t->host);
    t->host = NULL;
    t->dev_base = NULL;
}

void *htensor_data(htensor *t) { return t->host + HT_GUARD_BYTES; }
const void *htensor_cdata(const htensor *t) { return t->host + HT_GUARD_BYTES; }

DLTensor htensor_host_view(htensor *t) {
    DLTensor v = t->t;
    v.data = htensor_data(t);
    v.byte_offset = 0;
    v.device.device_type = kDLCPU;
    v.device.device_id = 0;
    return v;
}

static const char *code_text(const hdev *d, int rc) {
    const char *s = d->ops && d->ops->error_string ? d->ops->error_string(rc) : NULL;
    return s ? s : "no error text";
}

int htensor_upload(htensor *t, char *err, size_t err_size) {
    const hdev *d = t->dev;
    if (!d->ops) {
        memcpy(t->dev_base, t->host, total_bytes(t));
        return 0;
    }
    int rc = d->ops->copy_to_device(d->device, t->dev_base, t->host, total_bytes(t));
    if (rc) {
        snprintf(err, err_size, "%s: copy_to_device of %zu bytes failed with %d (%s)", t->name, total_bytes(t), rc,
                 code_text(d, rc));
        return -1;
    }
    return 0;
}

int htensor_download(htensor *t, char *err, size_t err_size) {
    const hdev *d = t->dev;
    if (!d->ops) {
        memcpy(t->host, t->dev_base, total_bytes(t));
    } else {
        int rc = d->ops->copy_to_host(d->device, t->host, t->dev_base, total_bytes(t));
        if (rc) {
            snprintf(err, err_size, "%s: copy_to_host of %zu bytes failed with %d (%s)", t->name, total_bytes(t), rc,
                     code_text(d, rc));
            return -1;
        }
    }
    for (size_t i = 0; i < HT_GUARD_BYTES; i++) {
        size_t before = HT_GUARD_BYTES - 1 - i; /* nearest the payload first */
        if (t->host[before] != guard_byte(before, 0)) {
            snprintf(err, err_size, "%s: written out of bounds: the guard byte %zu before its start changed", t->name,
                     i + 1);
            return -1;
        }
        if (t->host[HT_GUARD_BYTES + t->bytes + i] != guard_byte(i, 1)) {
            snprintf(err, err_size, "%s: written out of bounds: the guard byte %zu past its end changed", t->name, i);
            return -1;
        }
    }
    return 0;
}

/* A NaN with a payload no arithmetic produces, in each float type. */
void htensor_poison(htensor *t) {
    unsigned char *p = htensor_data(t);
    for (size_t i = 0; i < t->count; i++) {
        switch (t->dt) {
        case HDT_F32: ((uint32_t *)(void *)p)[i] = 0x7fc002a5u; break;
        case HDT_F16: ((uint16_t *)(void *)p)[i] = 0x7ea5u; break;
        case HDT_BF16: ((uint16_t *)(void *)p)[i] = 0x7fa5u; break;
        case HDT_F64: ((uint64_t *)(void *)p)[i] = 0x7ff80000000002a5ull; break;
        default: memset(p + i * hdtype_size(t->dt), 0xa5, hdtype_size(t->dt)); break;
        }
    }
}

int htensor_is_poison(const htensor *t, size_t i) {
    const unsigned char *p = htensor_cdata(t);
    switch (t->dt) {
    case HDT_F32: return ((const uint32_t *)(const void *)p)[i] == 0x7fc002a5u;
    case HDT_F16: return ((const uint16_t *)(const void *)p)[i] == 0x7ea5u;
    case HDT_BF16: return ((const uint16_t *)(const void *)p)[i] == 0x7fa5u;
    case HDT_F64: return ((const uint64_t *)(const void *)p)[i] == 0x7ff80000000002a5ull;
    default: return 0;
    }
}

/* Filling is chunked: chunk c draws from its own stream seeded by (one draw
 * of the caller's rng, c), so the values depend on the seed alone, never on
 * how many threads ran.  Threads matter for bench pools of many GB. */
#define FILL_CHUNK ((size_t)1 << 20)

typedef struct fill_job {
    htensor *t;
    uint64_t base;
    double scale;
    int normal;
    size_t n_chunks;
    atomic_size_t next;
} fill_job;

static void fill_chunk(fill_job *j, size_t c) {
    hrng r;
    hrng_seed(&r, j->base ^ (0x9e3779b97f4a7c15ull * (uint64_t)(c + 1)));
    void *p = htensor_data(j->t);
    size_t lo = c * FILL_CHUNK, hi = lo + FILL_CHUNK < j->t->count ? lo + FILL_CHUNK : j->t->count;
    for (size_t i = lo; i < hi; i++) {
        double v = j->normal ? hrng_normal(&r) : 2.0 * hrng_uniform(&r) - 1.0;
        hdtype_store(j->t->dt, p, i, j->scale * v);
    }
}

static void *fill_worker(void *arg) {
    fill_job *j = arg;
    for (size_t c; (c = atomic_fetch_add(&j->next, 1)) < j->n_chunks;) fill_chunk(j, c);
    return NULL;
}

static void fill(htensor *t, hrng *r, double scale, int normal) {
    fill_job j = {.t = t, .base = hrng_next(r), .scale = scale, .normal = normal,
                  .n_chunks = (t->count + FILL_CHUNK - 1) / FILL_CHUNK};
    atomic_init(&j.next, 0);
    enum { MAX_THREADS = 32 };
    pthread_t th[MAX_THREADS];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t want = j.n_chunks < 2 ? 0 : (size_t)(cpus > 1 ? cpus : 1);
    if (want > MAX_THREADS) want = MAX_THREADS;
    if (want > j.n_chunks) want = j.n_chunks;
    size_t started = 0;
    for (; started < want; started++)
        if (pthread_create(&th[started], NULL, fill_worker, &j)) break;
    fill_worker(&j); /* this thread works too, and finishes alone if none started */
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

void htensor_fill_normal(htensor *t, hrng *r, double sigma) { fill(t, r, sigma, 1); }

void htensor_fill_uniform(htensor *t, hrng *r, double sigma) {
    fill(t, r, sigma * 1.7320508075688772, 0); /* uniform(-a, a) has deviation sigma */
}

void htensor_set_index(htensor *t, size_t i, int64_t v) {
    if (t->dt == HDT_I64) ((int64_t *)htensor_data(t))[i] = v;
    else ((int32_t *)htensor_data(t))[i] = (int32_t)v;
}

int64_t htensor_get_index(const htensor *t, size_t i) {
    return t->dt == HDT_I64 ? ((const int64_t *)htensor_cdata(t))[i] : ((const int32_t *)htensor_cdata(t))[i];
}
