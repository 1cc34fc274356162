/*
 * json_util.h - strict JSON reading for the conf file and model files.
 *
 * cJSON builds the tree but only reports a pointer where it gave up, and
 * nodes carry no position.  So a document is first checked by our own strict
 * scanner (which says what it expected, at line:column), then parsed by
 * cJSON, and semantic errors find their position again by walking the text
 * along the node's path.
 *
 * Like Python's json (which sglang and transformers read configs with), a
 * bare NaN, Infinity or -Infinity is a number; cJSON does not read them, so
 * ju_parse puts them into the tree itself.  A key that appears twice in one
 * object is refused, with both places: Python keeps the last value and cJSON
 * the first, so no reading of it agrees with the engine's.  Every other
 * departure from JSON is an error at line:column.  Reading is linear in the
 * size of the text.
 */
#ifndef SGL_ATTN_JSON_UTIL_H
#define SGL_ATTN_JSON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define JU_MAX_DEPTH 16

typedef struct ju_doc {
    const char *text;
    size_t len;
    const char *origin; /* file name as given, for messages */
    cJSON *root;
} ju_doc;

/* Where a node sits: keys and array indices from the root. */
typedef struct ju_path {
    int depth;
    struct {
        const char *key; /* NULL: array element */
        int index;
    } seg[JU_MAX_DEPTH];
} ju_path;

/* A regular file of at most max_bytes, read whole and NUL-terminated into
 * *text (free it).  A FIFO, device, socket or directory is refused without
 * being opened for reading ("<path>: a FIFO, not a regular file: expected a
 * <what>"), so nothing blocks; SGL_ATTN_E_NOT_FOUND when it cannot be opened. */
int ju_read_file(const char *path, size_t max_bytes, const char *what, char **text, size_t *len, char *err,
                 size_t err_size);

/* Check and parse.  On failure: "origin:line:col: what was expected". */
int ju_parse(ju_doc *d, const char *text, size_t len, const char *origin, char *err,
             size_t err_size);
void ju_doc_free(ju_doc *d);

/* 1-based line and byte column of `offset`. */
void ju_linecol(const char *text, size_t len, size_t offset, int *line, int *col);

/* Path building (push returns a copy one level deeper). */
ju_path ju_key(const ju_path *p, const char *key);
ju_path ju_idx(const ju_path *p, int index);
/* "aliases.fa3.requires[0]" ("(top level)" for the root). */
void ju_path_str(const ju_path *p, char *buf, size_t size);

/* Byte offset of the node at `p` (its key when at_key and it is a member). */
size_t ju_locate(const ju_doc *d, const ju_path *p, int at_key);

/* "origin:line:col: <message>" for the node at `p`.  Returns SGL_ATTN_E_INVALID. */
int ju_fail(const ju_doc *d, const ju_path *p, int at_key, char *err, size_t err_size,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* "a string", "a number", "an object"... for messages. */
const char *ju_type_name(const cJSON *n);

/* Strict member checks: every key of `obj` must be in `allowed` (NULL-
 * terminated).  (Duplicate keys never get this far: ju_parse refuses them.) */
int ju_check_keys(const ju_doc *d, const ju_path *p, const cJSON *obj,
                  const char *const *allowed, char *err, size_t err_size);

/* Typed reads with messages naming the path and the expected type. */
int ju_want(const ju_doc *d, const ju_path *p, const cJSON *n, int type_mask,
            const char *expected, char *err, size_t err_size);
int ju_get_int(const ju_doc *d, const ju_path *p, const cJSON *n, int64_t lo, int64_t hi,
               int64_t *out, char *err, size_t err_size);
int ju_get_bool(const ju_doc *d, const ju_path *p, const cJSON *n, int *out, char *err,
                size_t err_size);

/* --------------------------------------------------------------- arena */

/* Bump allocator: everything a conf holds is freed at once. */
typedef struct ju_arena_block ju_arena_block;
typedef struct ju_arena {
    ju_arena_block *head;
} ju_arena;

void *ju_arena_alloc(ju_arena *a, size_t size); /* zeroed; NULL when out of memory */
char *ju_arena_strdup(ju_arena *a, const char *s);
void ju_arena_free(ju_arena *a);

/* Bounded append to a terminated buffer (keeps what fits). */
void ju_append(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
