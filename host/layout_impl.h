/*
 * layout_impl.h - the two exported layout functions, over the tables that
 * host/gen_layout.py writes.  Included once, by the generated layout_table.c
 * (which is why this is a header and not a .c file under host/: the tables exist
 * only in a build that generated them).
 *
 * sgl_attn_layout_json() writes, snprintf-style, one JSON object:
 *   {"version":"0.1.0","abi":[1,1],"pointer_size":8,
 *    "structs":{"sgl_attn_batch":{"size":168,"align":8,
 *               "fields":[["struct_size",0,4,"uint32_t"],...]},...},
 *    "constants":{"SGL_ATTN_OK":0,...}}
 * Nothing is kept between calls: no global state, any thread.
 */
#ifndef SGL_ATTN_LAYOUT_IMPL_H
#define SGL_ATTN_LAYOUT_IMPL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sgl_attn.h"

typedef struct layout_field {
    const char *name;
    size_t offset, size;
    const char *type; /* the declaration's type, "fn" for a function pointer */
} layout_field;

typedef struct layout_struct {
    const char *name;
    size_t size, align;
    const layout_field *fields;
    size_t n_fields;
} layout_struct;

typedef struct layout_const {
    const char *name;
    long long value;
} layout_const;

/* A bounded writer: counts every byte, stores what fits, always terminates. */
typedef struct layout_writer {
    char *buf;
    size_t size, len;
} layout_writer;

static void layout_put(layout_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void layout_put(layout_writer *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *at = w->buf && w->len < w->size ? w->buf + w->len : NULL;
    size_t room = at ? w->size - w->len : 0;
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n > 0) w->len += (size_t)n;
}

static size_t layout_json(const layout_struct *s, size_t ns, const layout_const *c, size_t nc, char *buf,
                          size_t size) {
    layout_writer w = {buf, size, 0};
    if (buf && size) buf[0] = 0;
    layout_put(&w, "{\"version\":\"%s\",\"abi\":[%d,%d],\"pointer_size\":%zu,\"structs\":{", SGL_ATTN_VERSION,
               SGL_ATTN_ABI_MAJOR, SGL_ATTN_ABI_MINOR, sizeof(void *));
    for (size_t i = 0; i < ns; i++) {
        layout_put(&w, "%s\"%s\":{\"size\":%zu,\"align\":%zu,\"fields\":[", i ? "," : "", s[i].name, s[i].size,
                   s[i].align);
        for (size_t f = 0; f < s[i].n_fields; f++)
            layout_put(&w, "%s[\"%s\",%zu,%zu,\"%s\"]", f ? "," : "", s[i].fields[f].name, s[i].fields[f].offset,
                       s[i].fields[f].size, s[i].fields[f].type);
        layout_put(&w, "]}");
    }
    layout_put(&w, "},\"constants\":{");
    for (size_t i = 0; i < nc; i++) layout_put(&w, "%s\"%s\":%lld", i ? "," : "", c[i].name, c[i].value);
    layout_put(&w, "}}");
    return w.len;
}

static size_t layout_struct_size(const layout_struct *s, size_t ns, const char *name) {
    if (!name) return 0;
    for (size_t i = 0; i < ns; i++)
        if (!strcmp(s[i].name, name)) return s[i].size;
    return 0;
}

#define LAYOUT_DEFINE_API(STRUCTS, CONSTS)                                                                 \
    size_t sgl_attn_layout_json(char *buf, size_t size) {                                                  \
        return layout_json(STRUCTS, sizeof STRUCTS / sizeof STRUCTS[0], CONSTS, sizeof CONSTS / sizeof CONSTS[0], \
                           buf, size);                                                                     \
    }                                                                                                      \
    size_t sgl_attn_struct_size(const char *name) {                                                        \
        return layout_struct_size(STRUCTS, sizeof STRUCTS / sizeof STRUCTS[0], name);                      \
    }

#endif /* SGL_ATTN_LAYOUT_IMPL_H */
