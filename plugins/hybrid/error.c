/* error.c - the instance's last error (a leaf: every file may call it, it
 * calls none of them). */
#include <stdarg.h>
#include <stdio.h>

#include "hyb.h"

void hyb_set_err(hyb_inst *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
}
