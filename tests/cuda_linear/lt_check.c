/* lt_check.c - see lt_check.h. */
#include "lt_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int lt_failures;

void lt_fail_at(const char *file, int line, const char *cond) {
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, cond);
}

void lt_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "     ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void lt_skip(const char *why) {
    printf("SKIP: %s\n", why);
    exit(0);
}

const char *lt_plugdir(int argc, char **argv) {
    static char buf[4096];
    if (argc > 1 && argv[1][0]) return argv[1];
    const char *e = getenv("LT_PLUGDIR");
    if (e && *e) return e;
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 64);
    if (n <= 0) return "build/lib/sglattn/plugins";
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    strcat(buf, "/../lib/sglattn/plugins");
    return buf;
}
