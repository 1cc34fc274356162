/* test_abi_sizes.c - fails when a public struct changes size without an ABI
 * version bump.
 *
 * The table records every public struct's size per ABI minor (LP64).  If
 * you changed a struct on purpose: structs are append-only, so add the new
 * field at the end, bump SGL_ATTN_ABI_MINOR in abi/sgl_attn_abi.h, and add
 * one row per struct for the new minor below.  Never edit an old row. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

typedef struct size_row {
    const char *name;
    int minor;      /* ABI 1.<minor> */
    size_t recorded;
    size_t n_fields; /* fields (as the layout table counts them) in that minor */
    size_t actual;  /* sizeof now; compared only on the current minor's row */
} size_row;

#define ROW(T, minor, n, nf) {#T, minor, n, nf, sizeof(T)}

static const size_row rows[] = {
    /* ABI 1.0 (plugin ABI, abi/sgl_attn_abi.h) */
    ROW(sgl_attn_host_api, 0, 48, 9),
    ROW(sgl_attn_plugin_answer, 0, 272, 5),
    ROW(sgl_attn_head_dims, 0, 4, 2),
    ROW(sgl_attn_caps, 0, 624, 27),
    ROW(sgl_attn_model, 0, 544, 36),
    ROW(sgl_attn_batch, 0, 152, 22),
    ROW(sgl_attn_layer, 0, 72, 15),
    ROW(sgl_attn_linear_io, 0, 96, 14),
    ROW(sgl_attn_forward_args, 0, 64, 9),
    ROW(sgl_attn_backend, 0, 24, 4),
    ROW(sgl_attn_graph_args, 0, 24, 5),
    ROW(sgl_attn_backend_ops, 0, 104, 13),
    ROW(sgl_attn_create_args, 0, 64, 10),
    ROW(sgl_attn_device_ops, 0, 72, 9),
    ROW(sgl_attn_plugin, 0, 120, 19),
    /* ABI 1.0 (host API, host/sgl_attn.h) */
    ROW(sgl_attn_host_options, 0, 72, 13),
    ROW(sgl_attn_plugin_info, 0, 6052, 20),
    ROW(sgl_attn_select_request, 0, 48, 8),
    ROW(sgl_attn_verdict, 0, 524, 7),
    ROW(sgl_attn_create_options, 0, 16, 4),
    /* ABI 1.1: sgl_attn_create_args gained `host` */
    ROW(sgl_attn_host_api, 1, 48, 9),
    ROW(sgl_attn_plugin_answer, 1, 272, 5),
    ROW(sgl_attn_head_dims, 1, 4, 2),
    ROW(sgl_attn_caps, 1, 624, 27),
    ROW(sgl_attn_model, 1, 544, 36),
    ROW(sgl_attn_batch, 1, 152, 22),
    ROW(sgl_attn_layer, 1, 72, 15),
    ROW(sgl_attn_linear_io, 1, 96, 14),
    ROW(sgl_attn_forward_args, 1, 64, 9),
    ROW(sgl_attn_backend, 1, 24, 4),
    ROW(sgl_attn_graph_args, 1, 24, 5),
    ROW(sgl_attn_backend_ops, 1, 104, 13),
    ROW(sgl_attn_create_args, 1, 72, 11),
    ROW(sgl_attn_device_ops, 1, 72, 9),
    ROW(sgl_attn_plugin, 1, 120, 19),
    ROW(sgl_attn_host_options, 1, 72, 13),
    ROW(sgl_attn_plugin_info, 1, 6052, 20),
    ROW(sgl_attn_select_request, 1, 48, 8),
    ROW(sgl_attn_verdict, 1, 524, 7),
    ROW(sgl_attn_create_options, 1, 16, 4),
    /* ABI 1.2: sgl_attn_caps gained reason_long; the host API's
     * sgl_attn_host_options caps_file, sgl_attn_select_request no_cpu_fallback */
    ROW(sgl_attn_host_api, 2, 48, 9),
    ROW(sgl_attn_plugin_answer, 2, 272, 5),
    ROW(sgl_attn_head_dims, 2, 4, 2),
    ROW(sgl_attn_caps, 2, 1656, 30),
    ROW(sgl_attn_model, 2, 584, 47),
    ROW(sgl_attn_batch, 2, 184, 26),
    ROW(sgl_attn_layer, 2, 112, 21),
    ROW(sgl_attn_linear_io, 2, 136, 19),
    ROW(sgl_attn_forward_args, 2, 104, 14),
    ROW(sgl_attn_backend, 2, 24, 4),
    ROW(sgl_attn_graph_args, 2, 32, 6),
    ROW(sgl_attn_backend_ops, 2, 136, 17),
    ROW(sgl_attn_create_args, 2, 72, 11),
    ROW(sgl_attn_device_ops, 2, 72, 9),
    ROW(sgl_attn_plugin, 2, 120, 19),
    ROW(sgl_attn_host_options, 2, 80, 14),
    ROW(sgl_attn_plugin_info, 2, 6052, 20),
    ROW(sgl_attn_select_request, 2, 56, 9),
    ROW(sgl_attn_verdict, 2, 524, 7),
    ROW(sgl_attn_create_options, 2, 16, 4),
    /* ABI 1.2 (issue 20): tree verify, ragged + LSE, page tables, slot maps,
     * caller-owned linear state, attention types, engine fp8, MLA rope split,
     * graphs; the 1.1 tail padding of caps and model named reserved_v1_1_tail_ */
    ROW(sgl_attn_ragged_args, 2, 128, 22),
    ROW(sgl_attn_state_batch_args, 2, 56, 8),
    /* ABI 1.2 (issue 21): DeepSeek sparse attention: caps.dsa_ops, the
     * model's indexer shape, forward_args.topk_indices, ops->indexer_topk */
    ROW(sgl_attn_indexer_args, 2, 80, 13),
    /* ABI 1.2 (issue 24): dual chunk attention: sgl_attn_model dca_*,
     * sgl_attn_forward_args dual_chunk (after the DSA fields) */
    ROW(sgl_attn_dual_chunk, 2, 32, 6),
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static const size_row *find_row(const char *name, int minor) {
    for (size_t i = 0; i < N_ROWS; i++)
        if (rows[i].minor == minor && !strcmp(rows[i].name, name)) return &rows[i];
    return NULL;
}

/* The library's layout table, read back from sgl_attn_layout_json: names,
 * sizes and per field its offset, in declaration order. */
typedef struct lay_field { char name[64]; size_t offset, size; } lay_field;
typedef struct lay_struct { char name[64]; size_t size, n_fields; lay_field fields[64]; } lay_struct;
typedef struct layout { lay_struct *s; size_t n; } layout;

static void load_layout(layout *lay) {
    size_t len = sgl_attn_layout_json(NULL, 0);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    sgl_attn_layout_json(buf, len + 1);
    lay->s = calloc(64, sizeof *lay->s);
    lay->n = 0;
    assert_non_null(lay->s);
    const char *p = strstr(buf, "\"structs\":{");
    assert_non_null(p);
    p += 11;
    /* "NAME":{"size":S,"align":A,"fields":[["f",off,size,"type"],...]} */
    while (*p == '"' && lay->n < 64) {
        lay_struct *ls = &lay->s[lay->n++];
        int used = 0;
        if (sscanf(p, "\"%63[^\"]\":{\"size\":%zu,%n", ls->name, &ls->size, &used) < 2)
            fail_msg("cannot read the layout near '%.40s'", p);
        p = strstr(p, "\"fields\":[") + 9;
        while (*p == '[' || *p == ',') {
            p++;
            if (*p != '[') break;
            lay_field *f = &ls->fields[ls->n_fields < 64 ? ls->n_fields : 63];
            if (sscanf(p, "[\"%63[^\"]\",%zu,%zu", f->name, &f->offset, &f->size) < 3)
                fail_msg("cannot read a field near '%.40s'", p);
            ls->n_fields++;
            /* past the name's closing quote, then the quoted type ("char[64]" holds a ']') */
            p = strchr(p + 2, '"');
            p = strchr(p + 1, '"');
            p = strchr(p + 1, '"') + 1;
            if (*p == ']') p++;
        }
        p = strchr(p, '}') + 1;
        if (*p == ',') p++;
    }
    free(buf);
}

static void free_layout(layout *lay) { free(lay->s); }

static const lay_struct *find_struct(const layout *lay, const char *name) {
    for (size_t i = 0; i < lay->n; i++)
        if (!strcmp(lay->s[i].name, name)) return &lay->s[i];
    return NULL;
}

static void test_sizes_match_current_minor(void **state) {
    (void)state;
#if !defined(__LP64__)
    print_message("skipped: the table records LP64 sizes\n");
    skip();
#endif
    size_t checked = 0;
    for (size_t i = 0; i < N_ROWS; i++) {
        if (rows[i].minor != SGL_ATTN_ABI_MINOR) continue;
        checked++;
        if (rows[i].actual != rows[i].recorded)
            fail_msg("sizeof(%s) is %zu, but ABI 1.%d recorded %zu: a public struct changed size. "
                     "Structs are append-only: add the field at the end, bump SGL_ATTN_ABI_MINOR and "
                     "add a row per struct for the new minor in %s",
                     rows[i].name, rows[i].actual, rows[i].minor, rows[i].recorded, __FILE__);
    }
    /* Every public struct of the layout table needs a row for the current minor. */
    layout lay;
    load_layout(&lay);
    for (size_t i = 0; i < lay.n; i++) {
        if (strncmp(lay.s[i].name, "sgl_attn_", 9)) continue;
        const size_row *r = find_row(lay.s[i].name, SGL_ATTN_ABI_MINOR);
        if (!r)
            fail_msg("%s has no row for ABI 1.%d: record its size and field count in %s", lay.s[i].name,
                     SGL_ATTN_ABI_MINOR, __FILE__);
        if (r->n_fields != lay.s[i].n_fields)
            fail_msg("%s has %zu fields, but ABI 1.%d recorded %zu: a field was added without updating its row "
                     "in %s", lay.s[i].name, lay.s[i].n_fields, SGL_ATTN_ABI_MINOR, r->n_fields, __FILE__);
    }
    if (checked == 0) fail_msg("no rows for ABI 1.%d", SGL_ATTN_ABI_MINOR);
    free_layout(&lay);
}

/* The fields a minor adds start past the previous minor's size, never in its
 * tail padding (fields named reserved_* are that padding, named). */
static void test_no_field_in_tail_padding(void **state) {
    (void)state;
#if !defined(__LP64__)
    skip();
#endif
    layout lay;
    load_layout(&lay);
    for (size_t i = 0; i < N_ROWS; i++) {
        const size_row *prev = rows[i].minor > 0 ? find_row(rows[i].name, rows[i].minor - 1) : NULL;
        if (!prev || prev->n_fields >= rows[i].n_fields) continue;
        const lay_struct *ls = find_struct(&lay, rows[i].name);
        assert_non_null(ls);
        if (rows[i].recorded <= prev->recorded)
            fail_msg("%s gained fields in ABI 1.%d but its size stayed %zu: an appended field must grow "
                     "struct_size", rows[i].name, rows[i].minor, prev->recorded);
        for (size_t f = prev->n_fields; f < rows[i].n_fields && f < ls->n_fields; f++) {
            if (!strncmp(ls->fields[f].name, "reserved_", 9)) continue;
            if (ls->fields[f].offset < prev->recorded)
                fail_msg("%s.%s (ABI 1.%d) starts at offset %zu, inside ABI 1.%d's size %zu (its tail padding): "
                         "an older writer's struct_size covers it, so it would read garbage. Name the padding "
                         "reserved_v1_%d_tail_ and put the field after it",
                         rows[i].name, ls->fields[f].name, rows[i].minor, ls->fields[f].offset, prev->minor,
                         prev->recorded, prev->minor);
        }
    }
    free_layout(&lay);
}

/* The test's own check on the check: a struct with a field in the padding
 * of a smaller one is caught by the same offset rule. */
typedef struct pad_old { uint64_t a; uint32_t b; } pad_old;          /* 16 bytes, 4 of padding */
typedef struct pad_new { uint64_t a; uint32_t b; uint32_t c; } pad_new; /* still 16 */
static void test_padding_rule_catches_a_bad_append(void **state) {
    (void)state;
    assert_int_equal(sizeof(pad_old), sizeof(pad_new));
    assert_true(offsetof(pad_new, c) < sizeof(pad_old)); /* what the rule above refuses */
}

/* A later minor never shrinks a struct (append-only). */
static void test_append_only(void **state) {
    (void)state;
    for (size_t i = 0; i < N_ROWS; i++)
        for (size_t j = 0; j < N_ROWS; j++)
            if (!strcmp(rows[i].name, rows[j].name) && rows[j].minor > rows[i].minor &&
                rows[j].recorded < rows[i].recorded)
                fail_msg("%s shrank from %zu (1.%d) to %zu (1.%d)", rows[i].name, rows[i].recorded,
                         rows[i].minor, rows[j].recorded, rows[j].minor);
}

/* The minimum sizes the host accepts stay those of 1.0 forever: once a
 * struct grows, these macros must become the literal 1.0 sizes, or plugins
 * built for 1.0 would be refused. */
static void test_minimum_sizes_are_v1_0(void **state) {
    (void)state;
#if defined(__LP64__)
    assert_int_equal(SGL_ATTN_PLUGIN_SIZE_V1_0, 120);
    assert_int_equal(SGL_ATTN_BACKEND_OPS_SIZE_V1_0, 104);
#endif
    /* Every versioned struct starts with its size. */
    assert_int_equal(offsetof(sgl_attn_host_api, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_plugin_answer, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_caps, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_plugin, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_backend_ops, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_create_args, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_host_options, struct_size), 0);
    assert_int_equal(offsetof(sgl_attn_plugin_info, struct_size), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_match_current_minor),
        cmocka_unit_test(test_append_only),
        cmocka_unit_test(test_no_field_in_tail_padding),
        cmocka_unit_test(test_padding_rule_catches_a_bad_append),
        cmocka_unit_test(test_minimum_sizes_are_v1_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
