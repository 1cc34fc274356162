/* out.c - what reaches the terminal: text from outside escaped, widths,
 * wrapping, colour, progress; and the JSON envelope every command's --json
 * shares (built with cJSON, never printf). */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "attnctl.h"

/* ------------------------------------------------------------- escaping */

/* Length of a valid UTF-8 sequence at p (2..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *p) {
    int n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && p[0] == 0xe0 && p[1] < 0xa0) return 0; /* overlong */
    if (n == 3 && p[0] == 0xed && p[1] >= 0xa0) return 0; /* surrogate */
    if (n == 4 && p[0] == 0xf0 && p[1] < 0x90) return 0;
    if (n == 4 && p[0] == 0xf4 && p[1] >= 0x90) return 0;
    return n;
}

static uint32_t utf8_cp(const unsigned char *p, int n) {
    if (n == 2) return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
    if (n == 3) return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
}

/* Code points that reorder or hide text on screen (bidi controls). */
static int invisible_control(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

const char *attnctl_esc(const char *s) {
    static char ring[16][8192];
    static unsigned next;
    char *out = ring[next++ % 16];
    size_t cap = sizeof ring[0], n = 0;
    if (!s) s = "";
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 12 < cap; p++) {
        unsigned char ch = *p;
        if (ch >= 0x20 && ch < 0x7f) {
            out[n++] = (char)ch;
        } else if (ch == '\n' || ch == '\r' || ch == '\t' || ch == 0x1b) {
            out[n++] = '\\';
            out[n++] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : 'e';
        } else if (ch < 0x80) {
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", ch);
        } else {
            int len = utf8_len(p);
            uint32_t cp = len ? utf8_cp(p, len) : 0;
            if (!len) {
                n += (size_t)snprintf(out + n, cap - n, "\\x%02x", ch);
            } else if (invisible_control(cp)) {
                n += (size_t)snprintf(out + n, cap - n, "\\u%04x", cp);
                p += len - 1;
            } else {
                memcpy(out + n, p, (size_t)len);
                n += (size_t)len;
                p += len - 1;
            }
        }
    }
    out[n] = 0;
    return out;
}

int attnctl_width(const char *s) {
    int w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xc0) != 0x80) w++;
    return w;
}

/* ------------------------------------------------------------- terminal */

int attnctl_columns(void) {
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    const char *c = getenv("COLUMNS");
    if (c && *c) {
        long v = strtol(c, NULL, 10);
        if (v >= 20 && v <= 10000) return (int)v;
    }
    return 0;
}

/* Bytes of the first `cols` columns of s (never inside a UTF-8 sequence). */
static size_t bytes_for(const char *s, size_t len, int cols) {
    size_t b = 0;
    int w = 0;
    while (b < len) {
        size_t k = b + 1;
        while (k < len && ((unsigned char)s[k] & 0xc0) == 0x80) k++;
        if (w + 1 > cols) break;
        w++;
        b = k;
    }
    return b;
}

void attnctl_wrap(FILE *f, const char *text, int col, int indent, int width) {
    if (width <= 0 || col + attnctl_width(text) <= width) {
        fputs(text, f);
        return;
    }
    const char *p = text;
    int at = col;
    int first = 1;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t wl = strcspn(p, " ");
        int ww = 0;
        for (size_t k = 0; k < wl; k++) ww += ((unsigned char)p[k] & 0xc0) != 0x80;
        int room = width - at - (first ? 0 : 1);
        if (!first && ww > room) {
            fprintf(f, "\n%*s", indent, "");
            at = indent;
            first = 1;
            room = width - at;
        }
        if (ww > width - indent && ww > room) {
            /* a word wider than the column (a path): break it, never lose it */
            size_t b = bytes_for(p, wl, room > 8 ? room : width - indent);
            if (!first) fputc(' ', f);
            fwrite(p, 1, b, f);
            fprintf(f, "\n%*s", indent, "");
            at = indent;
            first = 1;
            p += b;
            continue;
        }
        if (!first) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, wl, f);
        at += ww;
        first = 0;
        p += wl;
    }
}

void attnctl_wrap_short(FILE *f, const char *text, int col, int indent, int width, int max_lines) {
    int room = width > 0 ? max_lines * (width - indent) - (col - indent) : 0;
    if (width <= 0 || attnctl_width(text) <= room) {
        attnctl_wrap(f, text, col, indent, width);
        return;
    }
    /* the first words that fit, cut at a space, then " ..." */
    size_t b = 0;
    int w = 0;
    while (text[b] && w < room - 4) {
        if (((unsigned char)text[b] & 0xc0) != 0x80) w++;
        b++;
    }
    while (b > 0 && text[b] != ' ') b--;
    char *cut = malloc(b + 8);
    if (!cut) return;
    memcpy(cut, text, b);
    memcpy(cut + b, " ...", 5);
    attnctl_wrap(f, cut, col, indent, width);
    free(cut);
}

int attnctl_color(const attnctl_common *c, FILE *f) {
    if (c && c->color == COLOR_ALWAYS) return 1;
    if (c && c->color == COLOR_NEVER) return 0;
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    if (nc && nc[0]) return 0;
    if (term && !strcmp(term, "dumb")) return 0;
    return isatty(fileno(f));
}

const char *attnctl_sgr(int on, const char *what) {
    if (!on) return "";
    if (!strcmp(what, "usable") || !strcmp(what, "yes") || !strcmp(what, "pass")) return "\033[32m";
    if (!strcmp(what, "unavailable") || !strcmp(what, "warning")) return "\033[33m";
    if (!strcmp(what, "load-error") || !strcmp(what, "abi-mismatch") || !strcmp(what, "error") ||
        !strcmp(what, "FAIL") || !strcmp(what, "ERROR"))
        return "\033[31m";
    if (!strcmp(what, "bold")) return "\033[1m";
    return "\033[2m"; /* shadowed, disabled, dim */
}

const char *attnctl_sgr_reset(int on) { return on ? "\033[0m" : ""; }

/* ---------------------------------------------------------------- json */

cJSON *attnctl_json_root(const char *command) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema", ATTNCTL_JSON_SCHEMA);
    cJSON_AddStringToObject(o, "command", command);
    return o;
}

void attnctl_json_print(cJSON *root) {
    char *s = cJSON_PrintUnformatted(root);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    } else {
        fputs("{\"schema\":1,\"command\":null,\"error\":\"out of memory\"}\n", stdout);
    }
    cJSON_Delete(root);
}

cJSON *attnctl_json_str(const char *s) { return s && s[0] ? cJSON_CreateString(s) : cJSON_CreateNull(); }

cJSON *attnctl_json_num(int present, double v) {
    return present && v == v && v - v == 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* ------------------------------------------------------------- progress */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void attnctl_progress_start(attnctl_progress *p, int n, int json) {
    (void)json;
    memset(p, 0, sizeof *p);
    const char *term = getenv("TERM");
    p->on = n > 0 && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
    p->n = n;
    p->t0 = now_s();
}

void attnctl_progress_step(attnctl_progress *p, const char *what) {
    p->i++;
    if (!p->on) return;
    int t = (int)(now_s() - p->t0);
    struct winsize ws;
    int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20 ? ws.ws_col : 80;
    char head[64];
    int hn = snprintf(head, sizeof head, "[%d/%d] %d:%02d ", p->i, p->n, t / 60, t % 60);
    const char *w = attnctl_esc(what);
    int room = cols - hn - 1;
    size_t b = bytes_for(w, strlen(w), room > 0 ? room : 0);
    fprintf(stderr, "\r\033[K%s%.*s", head, (int)b, w);
    fflush(stderr);
}

void attnctl_progress_clear(attnctl_progress *p) {
    if (!p->on) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
}
