/* load_time_plugin.c - a plugin that misbehaves before the host asks it
 * anything: in an ELF constructor (which runs inside dlopen) or in its entry
 * point.  -DLT_WHEN_CTOR or -DLT_WHEN_ENTRY picks the place, -DLT_<KIND>
 * the misbehaviour (tests/gauntlet/module.mk builds lt_<when>_<kind>.so):
 *
 *   CRASH    a wild store
 *   EXIT     exit(3), which runs the process's atexit handlers
 *   SLEEP    never returns
 *   THREADS  starts a thread that runs for ever
 *   FLOOD    writes 1 MiB to stdout (with a terminal escape sequence)
 *   FORK     forks a grandchild that sleeps for ever and writes its pid to
 *            $SGL_ATTN_GAUNTLET_PIDFILE
 *   MARK     nothing wrong: sets $SGL_ATTN_GAUNTLET_LOADED_<name> so a test
 *            can tell whether the file was loaded in its own process
 *
 * Everything else is a correct plugin, so when the misbehaviour returns
 * (THREADS, FLOOD, FORK, MARK) the file loads and works without isolation. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sgl_attn_abi.h"

#ifndef LT_NAME
#define LT_NAME "gauntlet_lt"
#endif

static void *spin(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

__attribute__((no_sanitize("undefined"))) static void misbehave(void) {
#if defined(LT_CRASH)
    volatile int *p = (volatile int *)getenv("SGL_ATTN_GAUNTLET_NEVER_SET");
    *p = 1;
#elif defined(LT_EXIT)
    exit(3);
#elif defined(LT_SLEEP)
    for (;;) pause();
#elif defined(LT_THREADS)
    pthread_t t;
    if (pthread_create(&t, NULL, spin, NULL) == 0) pthread_detach(t);
#elif defined(LT_FLOOD)
    static char block[4096];
    memset(block, 'A', sizeof block);
    static const char esc[] = "\033]52;c;Z2F1bnRsZXQ=\a\r\033[2K"; /* set the clipboard, erase the line */
    memcpy(block, esc, sizeof esc - 1);
    for (int i = 0; i < 256; i++) fwrite(block, 1, sizeof block, stdout);
    fflush(stdout);
#elif defined(LT_FORK)
    pid_t p = fork();
    if (p == 0) {
        for (;;) pause();
    }
    const char *file = getenv("SGL_ATTN_GAUNTLET_PIDFILE");
    FILE *f = file && p > 0 ? fopen(file, "a") : NULL;
    if (f) {
        fprintf(f, "%d\n", (int)p);
        fclose(f);
    }
#elif defined(LT_MARK)
    setenv("SGL_ATTN_GAUNTLET_LOADED_" LT_NAME, "1", 1);
#endif
    (void)spin;
}

#if defined(LT_WHEN_CTOR)
__attribute__((constructor)) static void at_load(void) { misbehave(); }
#endif

/* ------------------------------------------------- a correct plugin */

typedef struct lt_backend {
    sgl_attn_backend base;
} lt_backend;

static int lt_meta(sgl_attn_backend *b, const sgl_attn_batch *batch) {
    (void)b;
    return batch ? SGL_ATTN_OK : SGL_ATTN_E_INVALID;
}
static int lt_forward(sgl_attn_backend *b, const sgl_attn_forward_args *a) {
    (void)b;
    return a ? SGL_ATTN_OK : SGL_ATTN_E_INVALID;
}
static const char *lt_last_error(sgl_attn_backend *b) {
    (void)b;
    return "";
}
static void lt_destroy(sgl_attn_backend *b) { free(b); }

static const sgl_attn_backend_ops lt_ops = {
    .struct_size = sizeof(sgl_attn_backend_ops),
    .init_forward_metadata = lt_meta,
    .forward_extend = lt_forward,
    .forward_decode = lt_forward,
    .last_error = lt_last_error,
    .destroy = lt_destroy,
};

static int lt_create(const sgl_attn_create_args *a, sgl_attn_backend **out) {
    (void)a;
    lt_backend *b = calloc(1, sizeof *b);
    if (!b) return SGL_ATTN_E_NOMEM;
    b->base.ops = &lt_ops;
    b->base.ops_size = lt_ops.struct_size;
    *out = &b->base;
    return SGL_ATTN_OK;
}

static int lt_probe(uint32_t index, sgl_attn_caps *c) {
    if (index > 0) return SGL_ATTN_E_NOT_FOUND;
    c->available = 1;
    strcpy(c->device_name, "gauntlet load-time");
    c->attn_kinds = SGL_ATTN_KIND_MHA;
    c->q_dtypes = c->kv_dtypes = SGL_ATTN_DT_F32;
    c->features = SGL_ATTN_FEAT_DECODE;
    return SGL_ATTN_OK;
}

static const sgl_attn_plugin lt_plugin = {
    .struct_size = sizeof(sgl_attn_plugin),
    .abi_major = SGL_ATTN_ABI_MAJOR,
    .abi_minor = SGL_ATTN_ABI_MINOR,
    .name = LT_NAME,
    .version = "1.0",
    .description = "gauntlet: misbehaves at load time",
    .license = "Apache-2.0",
    .platform = SGL_ATTN_PLATFORM_CPU,
    .role = SGL_ATTN_ROLE_FULL,
    .probe = lt_probe,
    .create = lt_create,
};

SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer);
SGL_ATTN_EXPORT int sgl_attn_plugin_entry(const sgl_attn_host_api *host, sgl_attn_plugin_answer *answer) {
#if defined(LT_WHEN_ENTRY)
    misbehave();
#endif
    return sgl_attn_answer(host, answer, &lt_plugin);
}
