/* json_shapes.h - large JSON documents of chosen shapes and sizes, for the
 * timing checks of the fuzz replays and for bench/gauntlet/bench_json: each
 * shape stresses one part of the reader (many keys, a long array, a long
 * string, many nested containers, whitespace), wrapped so that the model
 * reader (a Hugging Face config.json) or the conf reader gets that far.
 * Header-only: both users compile it in. */
#ifndef SGL_ATTN_JSON_SHAPES_H
#define SGL_ATTN_JSON_SHAPES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JS_KEYS, JS_ARRAY, JS_STRING, JS_NESTED, JS_SPACE, JS_COUNT };

static const char *const js_shape_name[JS_COUNT] = {"many keys", "long array", "long string", "nested containers",
                                                    "whitespace"};

typedef struct js_buf {
    char *p;
    size_t n, cap;
} js_buf;

static void js_put(js_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void js_puts(js_buf *b, const char *s) { js_put(b, s, strlen(s)); }

/* About `bytes` of text (a little more).  conf = 1: a conf file, whose bulk
 * goes under "_comment" (any value) and "priority" (many keys); else a
 * config.json whose bulk goes under an unknown key, which the reader skips. */
static char *js_make(int shape, size_t bytes, int conf, size_t *len) {
    js_buf b = {0};
    js_puts(&b, conf ? "{\"sglattn_conf\": 1, " : "{\"model_type\": \"llama\", \"num_hidden_layers\": 4, "
                                                  "\"num_attention_heads\": 8, \"head_dim\": 64, ");
    char tmp[64];
    switch (shape) {
    case JS_KEYS:
        js_puts(&b, conf ? "\"priority\": {" : "\"bulk\": {");
        for (size_t i = 0; b.n < bytes; i++) {
            int n = snprintf(tmp, sizeof tmp, "%s\"k%zu\": %zu", i ? ", " : "", i, i % 1000);
            js_put(&b, tmp, (size_t)n);
        }
        js_puts(&b, "}");
        break;
    case JS_ARRAY:
        js_puts(&b, conf ? "\"_comment\": [" : "\"bulk\": [");
        for (size_t i = 0; b.n < bytes; i++) {
            int n = snprintf(tmp, sizeof tmp, "%s\"%zu\"", i ? ", " : "", i);
            js_put(&b, tmp, (size_t)n);
        }
        js_puts(&b, "]");
        break;
    case JS_STRING:
        js_puts(&b, conf ? "\"_comment\": \"" : "\"_name_or_path\": \"");
        while (b.n < bytes) js_puts(&b, "abcdefghijklmnopqrstuvwxyz0123456789 \\\" \\u00e9 ");
        js_puts(&b, "\"");
        break;
    case JS_NESTED:
        /* Many containers 60 deep (the readers allow 64), side by side. */
        js_puts(&b, conf ? "\"_comment\": [" : "\"bulk\": [");
        for (size_t i = 0; b.n < bytes; i++) {
            if (i) js_puts(&b, ",");
            for (int d = 0; d < 30; d++) js_puts(&b, "[{\"a\":");
            js_puts(&b, "1");
            for (int d = 0; d < 30; d++) js_puts(&b, "}]");
        }
        js_puts(&b, "]");
        break;
    default:
        js_puts(&b, conf ? "\"_comment\": " : "\"bulk\": ");
        while (b.n < bytes) js_puts(&b, "                                                                \n");
        js_puts(&b, "0");
        break;
    }
    js_puts(&b, "}\n");
    *len = b.n;
    return b.p;
}

#endif
