/* case.c - case strings "MODE:key=value,..." (docs/contributing.md,
 * docs/harness.md): parsing and typed, range-checked reads. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

int hcase_parse(const char *text, hcase *c, char *err, size_t err_size) {
    memset(c, 0, sizeof *c);
    if (!text || !*text) {
        snprintf(err, err_size, "empty case string; expected MODE:key=value,...");
        return -1;
    }
    if (strlen(text) >= sizeof c->text) {
        snprintf(err, err_size, "case string is %zu characters; the limit is %zu", strlen(text), sizeof c->text - 1);
        return -1;
    }
    snprintf(c->text, sizeof c->text, "%s", text);
    const char *p = text;
    size_t n = 0;
    while (word_char(p[n])) n++;
    if (n == 0 || n >= sizeof c->mode || (p[n] && p[n] != ':')) {
        snprintf(err, err_size, "case '%s': expected a mode of [a-z0-9_] then ':' (e.g. decode:b=4,l=1024)", text);
        return -1;
    }
    memcpy(c->mode, p, n);
    p += n;
    if (!*p) return 0;
    p++; /* ':' */
    while (*p) {
        size_t k = 0;
        while (word_char(p[k])) k++;
        if (k == 0 || p[k] != '=') {
            snprintf(err, err_size, "case '%s': expected key=value at '%.20s'", text, p);
            return -1;
        }
        if (k >= sizeof c->kv[0].key) {
            snprintf(err, err_size, "case '%s': key '%.*s' is too long", text, (int)k, p);
            return -1;
        }
        const char *v = p + k + 1;
        size_t m = strcspn(v, ",");
        if (m == 0 || m >= sizeof c->kv[0].val || memchr(v, '=', m)) {
            snprintf(err, err_size, "case '%s': key '%.*s' needs a value without '=' (up to %zu characters)", text,
                     (int)k, p, sizeof c->kv[0].val - 1);
            return -1;
        }
        for (size_t i = 0; i < c->n; i++)
            if (strlen(c->kv[i].key) == k && !strncmp(c->kv[i].key, p, k)) {
                snprintf(err, err_size, "case '%s': key '%.*s' is given twice", text, (int)k, p);
                return -1;
            }
        if (c->n == HCASE_MAX_KEYS) {
            snprintf(err, err_size, "case '%s': more than %d keys", text, HCASE_MAX_KEYS);
            return -1;
        }
        memcpy(c->kv[c->n].key, p, k);
        memcpy(c->kv[c->n].val, v, m);
        c->n++;
        p = v + m;
        if (*p == ',') {
            p++;
            if (!*p) {
                snprintf(err, err_size, "case '%s': trailing ','", text);
                return -1;
            }
        }
    }
    return 0;
}

const char *hcase_get(const hcase *c, const char *key) {
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->kv[i].key, key)) return c->kv[i].val;
    return NULL;
}

int hcase_int(const hcase *c, const char *key, long def, long lo, long hi, long *out, char *err, size_t err_size) {
    const char *v = hcase_get(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 0);
    if (errno || *end || x < lo || x > hi) {
        snprintf(err, err_size, "case '%s': %s=%s; expected an integer in [%ld, %ld]", c->text, key, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int hcase_num(const hcase *c, const char *key, double def, double lo, double hi, double *out, char *err,
              size_t err_size) {
    const char *v = hcase_get(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || !isfinite(x) || x < lo || x > hi) {
        snprintf(err, err_size, "case '%s': %s=%s; expected a number in [%g, %g]", c->text, key, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

int hcase_dtype(const hcase *c, const char *key, hdtype def, hdtype *out, char *err, size_t err_size) {
    const char *v = hcase_get(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (hdtype_parse(v, out) || !hdtype_is_float(*out)) {
        snprintf(err, err_size, "case '%s': %s=%s; expected f32, f16, bf16 or f64", c->text, key, v);
        return -1;
    }
    return 0;
}

int hcase_check_keys(const hcase *c, const char *const *allowed, char *err, size_t err_size) {
    for (size_t i = 0; i < c->n; i++) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, c->kv[i].key);
        if (ok) continue;
        size_t o = (size_t)snprintf(err, err_size, "case '%s': unknown key '%s'; %s takes", c->text, c->kv[i].key,
                                    c->mode);
        for (const char *const *a = allowed; *a && o < err_size; a++)
            o += (size_t)snprintf(err + o, err_size - o, " %s", *a);
        return -1;
    }
    return 0;
}

int hcase_bad(const hcase *c, char *err, size_t err_size, const char *what) {
    snprintf(err, err_size, "case '%s': %s", c->text, what);
    return -1;
}
