/*
 * mla_plugin_path.h - where the cuda_mla tests and bench find the plugin: at
 * run time, never a path baked in at build time (the tree may be built in one
 * place and run in another).  $SGL_ATTN_MLA_PLUGIN when set, else
 * <dir of this executable>/../lib/sglattn/plugins/cuda_mla.so (the layout
 * the Makefile builds: tests in $(BUILD)/tests, plugins in
 * $(BUILD)/lib/sglattn/plugins).
 */
#ifndef MLA_PLUGIN_PATH_H
#define MLA_PLUGIN_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes the path into buf; 0 on success, -1 (buf says why) otherwise. */
static inline int mla_plugin_path(char *buf, size_t n) {
    const char *env = getenv("SGL_ATTN_MLA_PLUGIN");
    if (env && *env) {
        if ((size_t)snprintf(buf, n, "%s", env) >= n) goto toolong;
        return 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        snprintf(buf, n, "(readlink /proc/self/exe failed; set SGL_ATTN_MLA_PLUGIN)");
        return -1;
    }
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    if ((size_t)snprintf(buf, n, "%s/../lib/sglattn/plugins/cuda_mla.so", exe) >= n) goto toolong;
    return 0;
toolong:
    snprintf(buf, n, "(plugin path too long)");
    return -1;
}

#endif
