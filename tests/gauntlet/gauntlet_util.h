/* gauntlet_util.h - scaffolding for the bad-plugin gauntlet: temporary
 * plugin directories, the built bad plugins, a host opened on exactly those
 * directories, and the check that the good neighbour still works. */
#ifndef SGL_ATTN_GAUNTLET_UTIL_H
#define SGL_ATTN_GAUNTLET_UTIL_H

#include <stddef.h>

#include "sgl_attn.h"

/* Where the test binary's sibling files are: <build>/tests/gauntlet (the
 * plugins) and <build>/bin/attnctl. */
const char *gu_plugin_build_dir(void);
const char *gu_attnctl_path(void);

/* A fresh directory under $TMPDIR (mode 0755) in `out` (PATH_MAX). */
void gu_mkdtemp(char *out, size_t size);
/* Remove a tree (permissions restored first, links not followed). */
void gu_rmtree(const char *dir);
/* A test's state for cmocka's setup / teardown: `size` zeroed bytes, a
 * struct whose first member is `char dir[GU_DIR_MAX]`, made into a fresh
 * temporary directory.  gu_state_new stores it in *state first, so that
 * teardown cleans up after a failure; gu_state_free removes the directory
 * and frees it (nothing when setup failed before making it). */
#define GU_DIR_MAX 512
void *gu_state_new(void **state, size_t size);
void gu_state_free(void **state);
/* Copy a built plugin (name under gu_plugin_build_dir) into dir as `as`. */
void gu_install(const char *dir, const char *built_name, const char *as);
void gu_write_file(const char *path, const void *data, size_t n, unsigned mode);
void gu_read_file(const char *path, char **data, size_t *n);

typedef struct gu_log {
    char text[16384];
    size_t n;
} gu_log;

/* A host on `plugin_path` only: no environment, no drop-in dir; conf_path
 * NULL = no conf.  Log lines are kept in *log when given. */
sgl_attn_host *gu_open(const char *plugin_path, const char *conf_path, int isolate, int timeout_ms,
                       gu_log *log);

/* The entry whose path ends in "/<file>"; fails the test when absent. */
sgl_attn_plugin_info gu_entry(sgl_attn_host *h, const char *file);
/* How many entries have this path suffix / this descriptor name. */
size_t gu_count_file(sgl_attn_host *h, const char *file);
size_t gu_count_name(sgl_attn_host *h, const char *name);
/* The entry for `file` has `status` and its reason contains `fragment`. */
void gu_expect(sgl_attn_host *h, const char *file, int status, const char *fragment);

/* The good plugin (gauntlet_good) is usable, and a backend created from it
 * runs a forward that doubles random data. */
void gu_good_works(sgl_attn_host *h);

/* Run fn(arg) in a forked child (that, with as_nobody, dropped root for
 * nobody), dying of its own signals; its stdout comes back in out.  Returns
 * the child's wait status. */
int gu_in_child(void (*fn)(void *), void *arg, int as_nobody, char *out, size_t out_size);
/* gu_in_child as nobody. */
int gu_as_nobody(void (*fn)(void *), void *arg, char *out, size_t out_size);
int gu_is_root(void);

#endif
