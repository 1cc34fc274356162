/* th.h - helpers shared by the host tests: where the fakes are, temporary
 * directories, opening a host on exactly the directories a test names, and
 * capturing its log. */
#ifndef TH_H
#define TH_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sgl_attn.h"

/* $(TESTDIR)/fakes/<variant>[/<file>], found from this executable's path. */
const char *th_fake(const char *variant, const char *file, char *buf, size_t size);
/* $(LIBDIR) of the build tree this test belongs to. */
const char *th_libdir(char *buf, size_t size);

/* A fresh directory under $TMPDIR (mode 0700), removed with th_rmrf. */
char *th_tmpdir(void);
void th_rmrf(const char *dir);
void th_copy(const char *from, const char *to);
void th_write(const char *path, const void *data, size_t n);

/* Log lines captured from a host, one string. */
typedef struct th_log {
    char text[16384];
} th_log;

/* Open on `path` only: no env, no drop-in dir, no conf unless conf_path. */
sgl_attn_host *th_open(const char *path, int isolate, const char *conf_path, th_log *log);
/* Index of the entry whose path is `path`, or whose name is `name`: -1 if none. */
long th_by_path(const sgl_attn_host *h, const char *path);
long th_by_name(const sgl_attn_host *h, const char *name);
sgl_attn_plugin_info th_info(const sgl_attn_host *h, long i);
/* A fake's test hook in the instance the host loaded (RTLD_NOLOAD). */
void *th_hook(const char *so_path, const char *symbol);

/* Assert that `hay` contains `needle`, printing both when it does not. */
#define th_contains(hay, needle) th_contains_(hay, needle, __FILE__, __LINE__)
void th_contains_(const char *hay, const char *needle, const char *file, int line);

#endif
