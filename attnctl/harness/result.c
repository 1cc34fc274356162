/* result.c - verdicts and their messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

void hresult_init(hresult *r) {
    memset(r, 0, sizeof *r);
    r->verdict = HV_PASS;
    r->nmse = -1;
}

static void set(hresult *r, int v, const char *fmt, va_list ap) {
    r->verdict = v;
    vsnprintf(r->message, sizeof r->message, fmt, ap);
}

void hresult_fail(hresult *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set(r, HV_FAIL, fmt, ap);
    va_end(ap);
}

void hresult_unsupported(hresult *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set(r, HV_UNSUPPORTED, fmt, ap);
    va_end(ap);
}

void hresult_error(hresult *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set(r, HV_ERROR, fmt, ap);
    va_end(ap);
}

const char *hverdict_name(int v) {
    switch (v) {
    case HV_PASS: return "pass";
    case HV_FAIL: return "FAIL";
    case HV_UNSUPPORTED: return "not supported";
    default: return "ERROR";
    }
}
