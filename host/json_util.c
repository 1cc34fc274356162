/* json_util.c - strict JSON checking with line:column messages, node
 * positions by path, typed reads, and the arena the conf lives in. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"
#include "json_util.h"

#define SCAN_MAX_DEPTH 64

/* ------------------------------------------------------------- files */

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int ju_read_file(const char *path, size_t max_bytes, const char *what, char **text, size_t *len, char *err,
                 size_t err_size) {
    *text = NULL;
    *len = 0;
    /* A FIFO or a device would block the read or never end: only a regular
     * file is opened, without blocking, and its size is known before reading. */
    struct stat st;
    if (stat(path, &st) != 0) {
        str_printf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return SGL_ATTN_E_NOT_FOUND;
    }
    if (!S_ISREG(st.st_mode)) {
        str_printf(err, err_size, "%s: %s, not a regular file: expected a %s", path, file_kind(st.st_mode), what);
        return SGL_ATTN_E_INVALID;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        str_printf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return SGL_ATTN_E_NOT_FOUND;
    }
    int rc = SGL_ATTN_E_INVALID;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        str_printf(err, err_size, "%s: %s, not a regular file: expected a %s", path, file_kind(st.st_mode), what);
        goto out;
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        str_printf(err, err_size, "%s: %lld bytes, more than the %zu a %s may have", path, (long long)st.st_size,
                   max_bytes, what);
        goto out;
    }
    if (!(buf = malloc((size_t)st.st_size + 1))) {
        str_printf(err, err_size, "%s: out of memory", path);
        rc = SGL_ATTN_E_NOMEM;
        goto out;
    }
    /* The size read is the size stat gave: a file growing meanwhile is cut there. */
    size_t n = 0, want = (size_t)st.st_size;
    while (n < want) {
        ssize_t r = read(fd, buf + n, want - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            str_printf(err, err_size, "%s: read error: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    buf = NULL;
    rc = SGL_ATTN_OK;
out:
    free(buf);
    close(fd);
    return rc;
}

/* ------------------------------------------------------------- positions */

void ju_linecol(const char *text, size_t len, size_t offset, int *line, int *col) {
    int l = 1, c = 1;
    if (offset > len) offset = len;
    for (size_t i = 0; i < offset; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

void ju_append(char *dst, size_t size, const char *fmt, ...) {
    size_t used = strnlen(dst, size);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + used, size - used, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------ the strict scanner */

/* A bare NaN, Infinity or -Infinity, which Python's json (and so sglang and
 * transformers) reads and cJSON does not: where it is, which value it is in
 * document order, and what it stands for. */
typedef struct ju_special {
    size_t at, len;
    size_t ordinal;
    double value;
} ju_special;

typedef struct scanner {
    const char *s;
    size_t n, i;
    int depth;
    size_t err_at;
    char msg[200];
    size_t values; /* values seen so far, in document order */
    ju_special *special;
    size_t n_special, cap_special;
    int nomem;
} scanner;

static int scan_fail(scanner *sc, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int scan_fail(scanner *sc, size_t at, const char *fmt, ...) {
    sc->err_at = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->msg, sizeof sc->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static void scan_ws(scanner *sc) {
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        sc->i++;
    }
}

/* What the user wrote, for "found ..." (a character, or "end of file"). */
static const char *found(const scanner *sc, char *buf, size_t size) {
    if (sc->i >= sc->n) return "end of file";
    unsigned char c = (unsigned char)sc->s[sc->i];
    if (c == '/') return "'/' (comments are not allowed in JSON)";
    if (c == '\'') return "\"'\" (strings take double quotes)";
    if (c >= 0x20 && c < 0x7f) snprintf(buf, size, "'%c'", c);
    else snprintf(buf, size, "byte 0x%02x", c);
    return buf;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int scan_string(scanner *sc) {
    size_t open = sc->i++;
    while (sc->i < sc->n) {
        unsigned char c = (unsigned char)sc->s[sc->i];
        if (c == '"') {
            sc->i++;
            return 0;
        }
        if (c < 0x20)
            return scan_fail(sc, sc->i, "control character 0x%02x inside a string (write it as an escape)", c);
        if (c == '\\') {
            if (sc->i + 1 >= sc->n) break;
            char e = sc->s[sc->i + 1];
            if (e == 'u') {
                for (int k = 2; k < 6; k++)
                    if (sc->i + (size_t)k >= sc->n || hexval(sc->s[sc->i + (size_t)k]) < 0)
                        return scan_fail(sc, sc->i, "invalid escape: expected \\u and 4 hex digits");
                sc->i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0)
                return scan_fail(sc, sc->i,
                                 "invalid escape '\\%c' (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                                 (e >= 0x20 && e < 0x7f) ? e : '?');
            sc->i += 2;
            continue;
        }
        sc->i++;
    }
    int l, c;
    ju_linecol(sc->s, sc->n, open, &l, &c);
    return scan_fail(sc, sc->n, "unterminated string (opened at %d:%d): expected '\"'", l, c);
}

static int digits(scanner *sc) {
    size_t start = sc->i;
    while (sc->i < sc->n && sc->s[sc->i] >= '0' && sc->s[sc->i] <= '9') sc->i++;
    return sc->i > start;
}

static int scan_number(scanner *sc) {
    if (sc->s[sc->i] == '-') sc->i++;
    if (sc->i >= sc->n || sc->s[sc->i] < '0' || sc->s[sc->i] > '9')
        return scan_fail(sc, sc->i, "expected a digit in the number");
    if (sc->s[sc->i] == '0' && sc->i + 1 < sc->n && sc->s[sc->i + 1] >= '0' && sc->s[sc->i + 1] <= '9')
        return scan_fail(sc, sc->i, "a number cannot start with 0 followed by digits");
    digits(sc);
    if (sc->i < sc->n && sc->s[sc->i] == '.') {
        sc->i++;
        if (!digits(sc)) return scan_fail(sc, sc->i, "expected a digit after '.'");
    }
    if (sc->i < sc->n && (sc->s[sc->i] == 'e' || sc->s[sc->i] == 'E')) {
        sc->i++;
        if (sc->i < sc->n && (sc->s[sc->i] == '+' || sc->s[sc->i] == '-')) sc->i++;
        if (!digits(sc)) return scan_fail(sc, sc->i, "expected a digit in the exponent");
    }
    return 0;
}

static int scan_literal(scanner *sc, const char *word) {
    size_t k = strlen(word);
    if (sc->n - sc->i < k || memcmp(sc->s + sc->i, word, k) != 0)
        return scan_fail(sc, sc->i, "expected '%s'", word);
    sc->i += k;
    return 0;
}

/* NaN, Infinity, -Infinity as Python's json writes and reads them (exact
 * spelling, no other case); remembered for the tree builder. */
static int scan_special(scanner *sc, const char *word, double value) {
    size_t at = sc->i;
    if (scan_literal(sc, word)) return -1;
    if (sc->n_special == sc->cap_special) {
        size_t cap = sc->cap_special ? 2 * sc->cap_special : 8;
        ju_special *p = realloc(sc->special, cap * sizeof *p);
        if (!p) {
            sc->nomem = 1;
            return scan_fail(sc, at, "out of memory");
        }
        sc->special = p;
        sc->cap_special = cap;
    }
    sc->special[sc->n_special++] = (ju_special){.at = at, .len = sc->i - at, .ordinal = sc->values - 1, .value = value};
    return 0;
}

static int scan_value(scanner *sc);

/* ------------------------------------------------------ duplicate keys */

/* Duplicate keys are refused with both places.  Python's json (the engines'
 * reader) keeps the last value and cJSON the first: reading such a file at
 * all would mean reading it differently from the engine.  Keys compare as
 * the strings they decode to ("a" and "\u0061" are one key), and an object's
 * keys go into a hash set once it has more than a few, so the check stays
 * linear in the file size. */

typedef struct key_ref {
    size_t at, end; /* the key's opening quote, one past its closing quote */
    uint64_t hash;
} key_ref;

#define KEYS_INLINE 8

typedef struct key_set {
    key_ref inl[KEYS_INLINE];
    key_ref *v;     /* all keys, once past KEYS_INLINE */
    size_t n, cap;
    size_t *slots;  /* hash table of indices + 1; 0 = empty */
    size_t n_slots; /* a power of two, or 0 */
} key_set;

static void key_set_init(key_set *k) { memset(k, 0, sizeof *k); }
static void key_set_free(key_set *k) {
    free(k->v);
    free(k->slots);
}

/* The next code point of a scanned (valid) string body at *i < end: escapes
 * decoded, UTF-8 decoded (a stray byte stands for itself). */
static uint32_t key_next(const char *s, size_t *i, size_t end) {
    unsigned char c = (unsigned char)s[*i];
    if (c == '\\' && *i + 1 < end) {
        char e = s[*i + 1];
        *i += 2;
        switch (e) {
        case 'b': return '\b';
        case 'f': return '\f';
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'u': {
            uint32_t v = 0;
            for (int k = 0; k < 4 && *i < end; k++, (*i)++) v = v * 16 + (uint32_t)hexval(s[*i]);
            /* A surrogate pair is one character. */
            if (v >= 0xd800 && v < 0xdc00 && *i + 6 <= end && s[*i] == '\\' && s[*i + 1] == 'u') {
                uint32_t lo = 0;
                int ok = 1;
                for (int k = 2; k < 6; k++) {
                    int h = hexval(s[*i + (size_t)k]);
                    ok &= h >= 0;
                    lo = lo * 16 + (uint32_t)(h < 0 ? 0 : h);
                }
                if (ok && lo >= 0xdc00 && lo < 0xe000) {
                    *i += 6;
                    v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                }
            }
            return v;
        }
        default: return (unsigned char)e;
        }
    }
    int n = c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (*i + (size_t)n > end) n = 1;
    uint32_t v = n == 1 ? c : c & (0x7fu >> n);
    for (int k = 1; k < n; k++) {
        unsigned char b = (unsigned char)s[*i + (size_t)k];
        if ((b & 0xc0) != 0x80) {
            n = 1;
            v = c;
            break;
        }
        v = (v << 6) | (b & 0x3f);
    }
    *i += (size_t)n;
    return v;
}

/* Over the key's body: between the quotes at `at` and `end - 1`. */
static uint64_t key_hash(const char *s, size_t at, size_t end) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = at + 1; i < end - 1;) h = (h ^ key_next(s, &i, end - 1)) * 0x100000001b3ull;
    return h;
}

static int key_equal(const char *s, const key_ref *a, const key_ref *b) {
    if (a->hash != b->hash) return 0;
    if (a->end - a->at == b->end - b->at && !memcmp(s + a->at, s + b->at, a->end - a->at)) return 1;
    size_t i = a->at + 1, j = b->at + 1;
    while (i < a->end - 1 && j < b->end - 1)
        if (key_next(s, &i, a->end - 1) != key_next(s, &j, b->end - 1)) return 0;
    return i >= a->end - 1 && j >= b->end - 1;
}

static key_ref *key_at(key_set *k, size_t i) { return k->v ? &k->v[i] : &k->inl[i]; }

static int key_rehash(key_set *k) {
    size_t n_slots = k->n_slots ? 2 * k->n_slots : 64;
    size_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < k->n; i++) {
        size_t h = (size_t)k->v[i].hash & (n_slots - 1);
        while (slots[h]) h = (h + 1) & (n_slots - 1);
        slots[h] = i + 1;
    }
    free(k->slots);
    k->slots = slots;
    k->n_slots = n_slots;
    return 0;
}

static int key_dup_fail(scanner *sc, const key_ref *first, const key_ref *again) {
    int l, c;
    ju_linecol(sc->s, sc->n, first->at, &l, &c);
    size_t len = again->end - again->at;
    return scan_fail(sc, again->at,
                     "duplicate key %.*s%s (first at %d:%d): refused, since Python's json keeps the last value "
                     "and cJSON the first",
                     (int)(len > 64 ? 64 : len), sc->s + again->at, len > 64 ? "...\"" : "", l, c);
}

/* Add the key at [at, end); a duplicate fails the scan. */
static int key_set_add(scanner *sc, key_set *k, size_t at, size_t end) {
    key_ref r = {at, end, key_hash(sc->s, at, end)};
    if (!k->v && k->n < KEYS_INLINE) {
        for (size_t i = 0; i < k->n; i++)
            if (key_equal(sc->s, &k->inl[i], &r)) return key_dup_fail(sc, &k->inl[i], &r);
        k->inl[k->n++] = r;
        return 0;
    }
    if (!k->v) {
        k->cap = 4 * KEYS_INLINE;
        if (!(k->v = malloc(k->cap * sizeof *k->v))) goto nomem;
        memcpy(k->v, k->inl, k->n * sizeof *k->v);
        if (key_rehash(k)) goto nomem;
    }
    size_t h = (size_t)r.hash & (k->n_slots - 1);
    for (; k->slots[h]; h = (h + 1) & (k->n_slots - 1)) {
        key_ref *o = key_at(k, k->slots[h] - 1);
        if (key_equal(sc->s, o, &r)) return key_dup_fail(sc, o, &r);
    }
    if (k->n == k->cap) {
        key_ref *nv = realloc(k->v, 2 * k->cap * sizeof *nv);
        if (!nv) goto nomem;
        k->v = nv;
        k->cap *= 2;
    }
    k->v[k->n++] = r;
    k->slots[h] = k->n;
    if (2 * k->n > k->n_slots && key_rehash(k)) goto nomem;
    return 0;
nomem:
    sc->nomem = 1;
    return scan_fail(sc, at, "out of memory");
}

/* Line and column of `open`, computed only for a message (a scan that
 * recounted them at every container would be quadratic in the file size). */
static int scan_fail_in(scanner *sc, size_t open, const char *what, char close) {
    char fb[32];
    int ol, oc;
    ju_linecol(sc->s, sc->n, open, &ol, &oc);
    return scan_fail(sc, sc->i, "expected ',' or '%c' in the %s opened at %d:%d, found %s", close, what, ol, oc,
                     found(sc, fb, sizeof fb));
}

static int scan_container(scanner *sc, char close) {
    size_t open = sc->i++;
    if (++sc->depth > SCAN_MAX_DEPTH)
        return scan_fail(sc, open, "nested deeper than %d levels", SCAN_MAX_DEPTH);
    const char *what = close == '}' ? "object" : "array";
    char fb[32];
    key_set keys;
    key_set_init(&keys);
    int rc = 0;
    scan_ws(sc);
    if (sc->i < sc->n && sc->s[sc->i] == close) {
        sc->i++;
        sc->depth--;
        return 0;
    }
    for (int first = 1;; first = 0) {
        scan_ws(sc);
        if (close == '}') {
            if (sc->i >= sc->n || sc->s[sc->i] != '"') {
                rc = scan_fail(sc, sc->i, first ? "expected a key in double quotes or '}', found %s"
                                                : "expected a key in double quotes after ',', found %s "
                                                  "(trailing commas are not allowed)",
                               found(sc, fb, sizeof fb));
                break;
            }
            size_t key_at = sc->i;
            if ((rc = scan_string(sc))) break;
            if ((rc = key_set_add(sc, &keys, key_at, sc->i))) break;
            scan_ws(sc);
            if (sc->i >= sc->n || sc->s[sc->i] != ':') {
                rc = scan_fail(sc, sc->i, "expected ':' after the key, found %s", found(sc, fb, sizeof fb));
                break;
            }
            sc->i++;
            scan_ws(sc);
        } else if (!first && sc->i < sc->n && sc->s[sc->i] == ']') {
            rc = scan_fail(sc, sc->i, "expected a value after ',', found ']' (trailing commas are not allowed)");
            break;
        }
        if ((rc = scan_value(sc))) break;
        scan_ws(sc);
        if (sc->i < sc->n && sc->s[sc->i] == ',') {
            sc->i++;
            continue;
        }
        if (sc->i < sc->n && sc->s[sc->i] == close) {
            sc->i++;
            sc->depth--;
            break;
        }
        rc = scan_fail_in(sc, open, what, close);
        break;
    }
    key_set_free(&keys);
    return rc;
}

static int scan_value(scanner *sc) {
    char fb[48];
    if (sc->i >= sc->n) return scan_fail(sc, sc->i, "unexpected end of file: expected a value");
    char c = sc->s[sc->i];
    sc->values++;
    if (c == '{') return scan_container(sc, '}');
    if (c == '[') return scan_container(sc, ']');
    if (c == '"') return scan_string(sc);
    if (c == '-' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == 'I') return scan_special(sc, "-Infinity", -INFINITY);
    if (c == '-' || (c >= '0' && c <= '9')) return scan_number(sc);
    if (c == 't') return scan_literal(sc, "true");
    if (c == 'f') return scan_literal(sc, "false");
    if (c == 'n') return scan_literal(sc, "null");
    if (c == 'N') return scan_special(sc, "NaN", NAN);
    if (c == 'I') return scan_special(sc, "Infinity", INFINITY);
    return scan_fail(sc, sc->i, "expected a value (object, array, string, number, true, false or null), found %s",
                     found(sc, fb, sizeof fb));
}

/* Pre-order walk in document order: the node that is value number `ordinal`
 * (counted as the scanner counts) gets the special's value. */
static void put_specials(cJSON *node, size_t *seen, const ju_special *sp, size_t n, size_t *next) {
    for (; node && *next < n; node = node->next) {
        if (*seen == sp[*next].ordinal) {
            double v = sp[(*next)++].value;
            node->valuedouble = v;
            node->valueint = v != v ? 0 : v > 0 ? INT_MAX : INT_MIN;
        }
        (*seen)++;
        put_specials(node->child, seen, sp, n, next);
    }
}

int ju_parse(ju_doc *d, const char *text, size_t len, const char *origin, char *err, size_t err_size) {
    memset(d, 0, sizeof *d);
    d->text = text;
    d->len = len;
    d->origin = origin ? origin : "(json)";
    scanner sc = {.s = text, .n = len};
    int line, col;
    scan_ws(&sc);
    if (sc.i >= sc.n) {
        str_printf(err, err_size, "%s:1:1: empty file: expected a JSON value", d->origin);
        return SGL_ATTN_E_INVALID;
    }
    int rc = scan_value(&sc);
    if (rc == 0) {
        scan_ws(&sc);
        if (sc.i < sc.n) rc = scan_fail(&sc, sc.i, "expected end of file after the top-level value");
    }
    if (rc) {
        free(sc.special);
        if (sc.nomem) {
            str_printf(err, err_size, "%s: out of memory", d->origin);
            return SGL_ATTN_E_NOMEM;
        }
        ju_linecol(text, len, sc.err_at, &line, &col);
        str_printf(err, err_size, "%s:%d:%d: %s", d->origin, line, col, sc.msg);
        return SGL_ATTN_E_INVALID;
    }
    /* cJSON reads no NaN or Infinity: it parses a copy where each is a 0
     * padded to the same length (so offsets still match), and the values go
     * back into the tree by their place in document order. */
    char *copy = NULL;
    if (sc.n_special) {
        if (!(copy = malloc(len ? len : 1))) {
            free(sc.special);
            str_printf(err, err_size, "%s: out of memory", d->origin);
            return SGL_ATTN_E_NOMEM;
        }
        memcpy(copy, text, len);
        for (size_t k = 0; k < sc.n_special; k++) {
            memset(copy + sc.special[k].at, ' ', sc.special[k].len);
            copy[sc.special[k].at] = '0';
        }
    }
    const char *src = copy ? copy : text;
    const char *end = NULL;
    d->root = cJSON_ParseWithLengthOpts(src, len, &end, 0);
    if (!d->root) {
        /* Our scanner accepted it, so this is a cJSON limit (nesting, memory). */
        size_t at = end && end >= src ? (size_t)(end - src) : 0;
        ju_linecol(text, len, at, &line, &col);
        str_printf(err, err_size, "%s:%d:%d: cJSON could not parse from here (out of memory or nested too deep)",
                   d->origin, line, col);
        free(copy);
        free(sc.special);
        return SGL_ATTN_E_INVALID;
    }
    size_t seen = 0, next = 0;
    put_specials(d->root, &seen, sc.special, sc.n_special, &next);
    free(copy);
    free(sc.special);
    return SGL_ATTN_OK;
}

void ju_doc_free(ju_doc *d) {
    if (d->root) cJSON_Delete(d->root);
    d->root = NULL;
}

/* --------------------------------------------------------------- paths */

ju_path ju_key(const ju_path *p, const char *key) {
    ju_path q = *p;
    if (q.depth < JU_MAX_DEPTH) {
        q.seg[q.depth].key = key;
        q.seg[q.depth].index = -1;
    }
    q.depth++;
    return q;
}

ju_path ju_idx(const ju_path *p, int index) {
    ju_path q = *p;
    if (q.depth < JU_MAX_DEPTH) {
        q.seg[q.depth].key = NULL;
        q.seg[q.depth].index = index;
    }
    q.depth++;
    return q;
}

void ju_path_str(const ju_path *p, char *buf, size_t size) {
    if (!size) return;
    buf[0] = 0;
    if (p->depth == 0) {
        str_copy(buf, size, "(top level)");
        return;
    }
    int n = p->depth < JU_MAX_DEPTH ? p->depth : JU_MAX_DEPTH;
    for (int i = 0; i < n; i++) {
        if (p->seg[i].key) ju_append(buf, size, "%s%s", i ? "." : "", p->seg[i].key);
        else ju_append(buf, size, "[%d]", p->seg[i].index);
    }
}

/* Skip one value of text already known to be valid JSON. */
static size_t skip_ws_at(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

static size_t skip_string_at(const char *s, size_t n, size_t i) {
    for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

static size_t skip_value_at(const char *s, size_t n, size_t i) {
    if (i >= n) return n;
    if (s[i] == '"') return skip_string_at(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        for (; i < n; i++) {
            if (s[i] == '"') {
                i = skip_string_at(s, n, i) - 1;
            } else if (s[i] == '{' || s[i] == '[') {
                depth++;
            } else if (s[i] == '}' || s[i] == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return n;
    }
    while (i < n && !strchr(",}] \t\r\n", s[i])) i++;
    return i;
}

/* Does the raw JSON string at [i, end) (quotes included) decode to `key`?
 * Escapes other than the simple ones never match (keys we look for are ASCII). */
static int key_equals(const char *s, size_t i, size_t end, const char *key) {
    size_t k = 0;
    for (i++; i + 1 < end; i++, k++) {
        char c = s[i];
        if (c == '\\') {
            char e = s[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            if (e == 'u') return 0;
        }
        if (key[k] != c) return 0;
    }
    return key[k] == 0;
}

/* Offset of the node at p; for the last segment, the nth (0-based) member
 * with that key.  Falls back to the deepest node found. */
static size_t locate(const ju_doc *d, const ju_path *p, int at_key, int nth) {
    const char *s = d->text;
    size_t n = d->len, pos = skip_ws_at(s, n, 0);
    int depth = p->depth < JU_MAX_DEPTH ? p->depth : JU_MAX_DEPTH;
    for (int level = 0; level < depth; level++) {
        int last = level == depth - 1;
        if (pos >= n) return pos;
        if (p->seg[level].key) {
            if (s[pos] != '{') return pos;
            size_t i = skip_ws_at(s, n, pos + 1), hit = (size_t)-1, hit_key = 0;
            int seen = 0;
            while (i < n && s[i] == '"') {
                size_t kend = skip_string_at(s, n, i);
                size_t v = skip_ws_at(s, n, skip_ws_at(s, n, kend) + 1);
                if (key_equals(s, i, kend, p->seg[level].key) && seen++ == (last ? nth : 0)) {
                    hit = v;
                    hit_key = i;
                    break;
                }
                i = skip_ws_at(s, n, skip_value_at(s, n, v));
                if (i < n && s[i] == ',') i = skip_ws_at(s, n, i + 1);
            }
            if (hit == (size_t)-1) return pos;
            if (last && at_key) return hit_key;
            pos = hit;
        } else {
            if (s[pos] != '[') return pos;
            size_t i = skip_ws_at(s, n, pos + 1);
            for (int k = 0; k < p->seg[level].index && i < n && s[i] != ']'; k++) {
                i = skip_ws_at(s, n, skip_value_at(s, n, i));
                if (i < n && s[i] == ',') i = skip_ws_at(s, n, i + 1);
            }
            if (i >= n || s[i] == ']') return pos;
            pos = i;
        }
    }
    return pos;
}

size_t ju_locate(const ju_doc *d, const ju_path *p, int at_key) { return locate(d, p, at_key, 0); }

static int fail_at(const ju_doc *d, size_t at, char *err, size_t err_size, const char *fmt, va_list ap) {
    int line, col;
    ju_linecol(d->text, d->len, at, &line, &col);
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    str_printf(err, err_size, "%s:%d:%d: %s", d->origin, line, col, msg);
    return SGL_ATTN_E_INVALID;
}

int ju_fail(const ju_doc *d, const ju_path *p, int at_key, char *err, size_t err_size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_at(d, locate(d, p, at_key, 0), err, err_size, fmt, ap);
    va_end(ap);
    return rc;
}

/* ------------------------------------------------------------ typed reads */

const char *ju_type_name(const cJSON *n) {
    if (!n) return "nothing";
    if (cJSON_IsString(n)) return "a string";
    if (cJSON_IsNumber(n)) return "a number";
    if (cJSON_IsBool(n)) return "a boolean";
    if (cJSON_IsNull(n)) return "null";
    if (cJSON_IsArray(n)) return "an array";
    if (cJSON_IsObject(n)) return "an object";
    return "an unknown value";
}

int ju_check_keys(const ju_doc *d, const ju_path *p, const cJSON *obj, const char *const *allowed, char *err,
                  size_t err_size) {
    char where[256];
    ju_path_str(p, where, sizeof where);
    for (const cJSON *c = obj->child; c; c = c->next) {
        int ok = 0;
        for (size_t k = 0; allowed[k]; k++)
            if (!strcmp(c->string, allowed[k])) ok = 1;
        ju_path kp = ju_key(p, c->string);
        if (!ok) {
            char list[512] = "";
            for (size_t k = 0; allowed[k]; k++)
                if (allowed[k][0] != '_') ju_append(list, sizeof list, "%s%s", list[0] ? ", " : "", allowed[k]);
            if (p->depth == 0)
                return ju_fail(d, &kp, 1, err, err_size, "unknown key \"%s\" at the top level (expected one of: %s)",
                               c->string, list);
            return ju_fail(d, &kp, 1, err, err_size, "unknown key \"%s\" in \"%s\" (expected one of: %s)", c->string,
                           where, list);
        }
    }
    return SGL_ATTN_OK;
}

int ju_want(const ju_doc *d, const ju_path *p, const cJSON *n, int type_mask, const char *expected, char *err,
            size_t err_size) {
    if (n && (n->type & 0xff & type_mask)) return SGL_ATTN_OK;
    char where[256];
    ju_path_str(p, where, sizeof where);
    return ju_fail(d, p, 0, err, err_size, "\"%s\": expected %s, found %s", where, expected, ju_type_name(n));
}

int ju_get_int(const ju_doc *d, const ju_path *p, const cJSON *n, int64_t lo, int64_t hi, int64_t *out, char *err,
               size_t err_size) {
    char where[256];
    ju_path_str(p, where, sizeof where);
    if (!cJSON_IsNumber(n))
        return ju_fail(d, p, 0, err, err_size, "\"%s\": expected an integer in [%lld, %lld], found %s", where,
                       (long long)lo, (long long)hi, ju_type_name(n));
    double v = n->valuedouble;
    if (!(v >= (double)lo && v <= (double)hi) || floor(v) != v)
        return ju_fail(d, p, 0, err, err_size, "\"%s\": expected an integer in [%lld, %lld], found %g", where,
                       (long long)lo, (long long)hi, v);
    *out = (int64_t)v;
    return SGL_ATTN_OK;
}

int ju_get_bool(const ju_doc *d, const ju_path *p, const cJSON *n, int *out, char *err, size_t err_size) {
    int rc = ju_want(d, p, n, cJSON_True | cJSON_False, "true or false", err, err_size);
    if (rc == 0) *out = cJSON_IsTrue(n);
    return rc;
}

/* --------------------------------------------------------------- arena */

struct ju_arena_block {
    ju_arena_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *ju_arena_alloc(ju_arena *a, size_t size) {
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (size == 0) size = sizeof(max_align_t);
    ju_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 16384 ? size : 16384;
        b = calloc(1, sizeof *b + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p; /* calloc'd and never reused: already zero */
}

char *ju_arena_strdup(ju_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = ju_arena_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

void ju_arena_free(ju_arena *a) {
    ju_arena_block *b = a->head;
    while (b) {
        ju_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}
