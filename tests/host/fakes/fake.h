/* fake.h - shared bits of the fake plugins the host tests load.
 *
 * Besides the entry point, a fake exports a few test hooks (fake_events...):
 * a test reaches the very instance the host loaded with
 * dlopen(path, RTLD_NOLOAD) + dlsym, and reads what the host did to it. */
#ifndef FAKE_H
#define FAKE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sgl_attn_abi.h"

/* Test hooks (exported). */
SGL_ATTN_EXPORT const char *fake_events(void);
SGL_ATTN_EXPORT void fake_events_clear(void);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);

/* An append-only event log ("create fake_good;decode fake_good;..."), so a
 * test can check order: who was created, called and destroyed when. */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static char fake_log[8192];

static inline void fake_event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void fake_event(const char *fmt, ...) {
    char line[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&fake_mu);
    size_t n = strlen(fake_log);
    if (n + strlen(line) + 2 < sizeof fake_log) {
        memcpy(fake_log + n, line, strlen(line));
        fake_log[n + strlen(line)] = ';';
        fake_log[n + strlen(line) + 1] = 0;
    }
    pthread_mutex_unlock(&fake_mu);
}

#define FAKE_EVENT_HOOKS                                                       \
    const char *fake_events(void) { return fake_log; }                         \
    void fake_events_clear(void) {                                             \
        pthread_mutex_lock(&fake_mu);                                          \
        fake_log[0] = 0;                                                       \
        pthread_mutex_unlock(&fake_mu);                                        \
    }

static inline void fake_copy(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src);
}

/* A CPU device that serves the common cases. */
static inline void fake_cpu_caps(sgl_attn_caps *c) {
    c->available = 1;
    fake_copy(c->device_name, sizeof c->device_name, "fake cpu");
    fake_copy(c->arch_name, sizeof c->arch_name, "fake1");
    c->arch_major = c->arch_minor = -1;
    c->arch_min_major = c->arch_min_minor = c->arch_max_major = c->arch_max_minor = -1;
    c->memory_bytes = 1ull << 30;
    c->compute_units = 2;
    c->attn_kinds = SGL_ATTN_KIND_MHA | SGL_ATTN_KIND_GQA | SGL_ATTN_KIND_MQA;
    c->q_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16;
    c->kv_dtypes = SGL_ATTN_DT_F32 | SGL_ATTN_DT_F16;
    c->features = SGL_ATTN_FEAT_EXTEND | SGL_ATTN_FEAT_DECODE | SGL_ATTN_FEAT_SLIDING_WINDOW;
    c->head_dim_qk_max = 256;
    c->head_dim_v_max = 256;
    c->page_size_max = 256;
    c->score = 10;
}

#endif
