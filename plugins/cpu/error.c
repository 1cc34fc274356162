/* error.c - the instance's last error (a leaf: every file may call it, it
 * calls none of them). */
#include <stdarg.h>
#include <stdio.h>

#include "cpu_ref.h"

void cref_set_error(cref_backend *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
}
