/* log.c - log lines and bounded string helpers.
 *
 * A line is formatted whole into a stack buffer and handed over in one call,
 * so lines from several threads never interleave mid-line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_internal.h"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void hlog_init_default(hlog *l) {
    l->fn = NULL;
    l->user = NULL;
    l->level = SGL_ATTN_LOG_WARN;
    /* SGL_ATTN_DEBUG=1..3 raises the level; anything else is ignored. */
    const char *d = secure_getenv("SGL_ATTN_DEBUG");
    if (d && d[0] >= '1' && d[0] <= '3' && d[1] == 0) l->level = SGL_ATTN_LOG_WARN + (d[0] - '0');
    if (l->level > SGL_ATTN_LOG_DEBUG) l->level = SGL_ATTN_LOG_DEBUG;
}

void hlog_printf(const hlog *l, int level, const char *fmt, ...) {
    if (!l || level > l->level) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (l->fn) {
        l->fn(l->user, level, line);
        return;
    }
    /* Lines quote plugins' words and file names: control characters are
     * escaped, so none can move the cursor or rewrite the terminal. */
    char out[1024 * 4 + 64];
    const char *lv = (level >= 0 && level <= SGL_ATTN_LOG_DEBUG) ? level_names[level] : "log";
    int n = snprintf(out, sizeof out, "sglattn: %s: ", lv);
    if (n < 0) return;
    for (const unsigned char *p = (const unsigned char *)line; *p && (size_t)n + 5 < sizeof out; p++) {
        if (*p < 0x20 || *p == 0x7f) n += snprintf(out + n, sizeof out - (size_t)n, "\\x%02x", *p);
        else out[n++] = (char)*p;
    }
    out[n++] = '\n';
    /* One write(2): atomic for a line this short, unlike buffered stdio. */
    ssize_t w = write(STDERR_FILENO, out, (size_t)n);
    (void)w;
}

void str_printf(char *dst, size_t size, const char *fmt, ...) {
    if (!dst || size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, size, fmt, ap);
    va_end(ap);
    if (n < 0) dst[0] = 0;
}

void str_copy(char *dst, size_t size, const char *src) {
    if (!dst || size == 0) return;
    if (!src) src = "";
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

void str_copy_words(char *dst, size_t size, const char *src) {
    if (!dst || size == 0) return;
    if (!src) src = "";
    size_t len = strlen(src);
    if (len < size || size < 16) {
        str_copy(dst, size, src);
        return;
    }
    size_t cut = size - 4; /* room for "..." and the terminator */
    while (cut > size / 2 && src[cut] != ' ') cut--;
    if (src[cut] != ' ') cut = size - 4;
    while (cut > 0 && src[cut - 1] == ' ') cut--;
    /* never end inside a UTF-8 sequence */
    while (cut > 0 && ((unsigned char)src[cut] & 0xc0) == 0x80) cut--;
    memcpy(dst, src, cut);
    memcpy(dst + cut, "...", 4);
}
