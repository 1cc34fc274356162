/* error.c - the instance's last error and the note of a bad index found by
 * the loops (a leaf: every file may call it, it calls none of them). */
#include <stdarg.h>
#include <stdio.h>

#include "cpu_ref.h"

void cref_set_error(cref_backend *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
}

void cref_bad_note(cref_bad *bad, int what, int64_t index, int64_t value) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&bad->set, &expected, 1)) return;
    bad->what = what;
    bad->index = index;
    bad->value = value;
}
