/* test_abi_sizes.c - fails when a public struct changes size without an ABI
 * version bump.
 *
 * The table records every public struct's size per ABI minor (LP64).  If
 * you changed a struct on purpose: structs are append-only, so add the new
 * field at the end, bump SGL_ATTN_ABI_MINOR in abi/sgl_attn_abi.h, and add
 * one row per struct for the new minor below.  Never edit an old row. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

typedef struct size_row {
    const char *name;
    int minor;      /* ABI 1.<minor> */
    size_t recorded;
    size_t actual;  /* sizeof now; compared only on the current minor's row */
} size_row;

#define ROW(T, minor, n) {#T, minor, n, sizeof(T)}

static const size_row rows[] = {
    /* ABI 1.0 (plugin ABI, abi/sgl_attn_abi.h) */
    ROW(sgl_attn_host_api, 0, 48),
    ROW(sgl_attn_plugin_answer, 0, 272),
    ROW(sgl_attn_head_dims, 0, 4),
    ROW(sgl_attn_caps, 0, 624),
    ROW(sgl_attn_model, 0, 544),
    ROW(sgl_attn_batch, 0, 152),
    ROW(sgl_attn_layer, 0, 72),
    ROW(sgl_attn_linear_io, 0, 96),
    ROW(sgl_attn_forward_args, 0, 64),
    ROW(sgl_attn_backend, 0, 24),
    ROW(sgl_attn_graph_args, 0, 24),
    ROW(sgl_attn_backend_ops, 0, 104),
    ROW(sgl_attn_create_args, 0, 64),
    ROW(sgl_attn_device_ops, 0, 72),
    ROW(sgl_attn_plugin, 0, 120),
    /* ABI 1.0 (host API, host/sgl_attn.h) */
    ROW(sgl_attn_host_options, 0, 72),
    ROW(sgl_attn_plugin_info, 0, 6052),
    ROW(sgl_attn_select_request, 0, 48),
    ROW(sgl_attn_verdict, 0, 524),
    ROW(sgl_attn_create_options, 0, 16),
    /* ABI 1.1: sgl_attn_create_args gained `host` */
    ROW(sgl_attn_host_api, 1, 48),
    ROW(sgl_attn_plugin_answer, 1, 272),
    ROW(sgl_attn_head_dims, 1, 4),
    ROW(sgl_attn_caps, 1, 624),
    ROW(sgl_attn_model, 1, 544),
    ROW(sgl_attn_batch, 1, 152),
    ROW(sgl_attn_layer, 1, 72),
    ROW(sgl_attn_linear_io, 1, 96),
    ROW(sgl_attn_forward_args, 1, 64),
    ROW(sgl_attn_backend, 1, 24),
    ROW(sgl_attn_graph_args, 1, 24),
    ROW(sgl_attn_backend_ops, 1, 104),
    ROW(sgl_attn_create_args, 1, 72),
    ROW(sgl_attn_device_ops, 1, 72),
    ROW(sgl_attn_plugin, 1, 120),
    ROW(sgl_attn_host_options, 1, 72),
    ROW(sgl_attn_plugin_info, 1, 6052),
    ROW(sgl_attn_select_request, 1, 48),
    ROW(sgl_attn_verdict, 1, 524),
    ROW(sgl_attn_create_options, 1, 16),
    /* ABI 1.2: sgl_attn_caps gained reason_long; the host API's
     * sgl_attn_host_options caps_file, sgl_attn_select_request no_cpu_fallback;
     * dual chunk attention: sgl_attn_model dca_*, sgl_attn_forward_args dual_chunk */
    ROW(sgl_attn_host_api, 2, 48),
    ROW(sgl_attn_plugin_answer, 2, 272),
    ROW(sgl_attn_head_dims, 2, 4),
    ROW(sgl_attn_caps, 2, 1648),
    ROW(sgl_attn_model, 2, 568),
    ROW(sgl_attn_batch, 2, 152),
    ROW(sgl_attn_layer, 2, 72),
    ROW(sgl_attn_linear_io, 2, 96),
    ROW(sgl_attn_forward_args, 2, 72),
    ROW(sgl_attn_backend, 2, 24),
    ROW(sgl_attn_graph_args, 2, 24),
    ROW(sgl_attn_backend_ops, 2, 104),
    ROW(sgl_attn_create_args, 2, 72),
    ROW(sgl_attn_device_ops, 2, 72),
    ROW(sgl_attn_plugin, 2, 120),
    ROW(sgl_attn_host_options, 2, 80),
    ROW(sgl_attn_plugin_info, 2, 6052),
    ROW(sgl_attn_select_request, 2, 56),
    ROW(sgl_attn_verdict, 2, 524),
    ROW(sgl_attn_create_options, 2, 16),
};
#define N_ROWS (sizeof rows / sizeof rows[0])

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
    /* Every struct needs a row for the current minor. */
    size_t per_minor = 0;
    for (size_t i = 0; i < N_ROWS; i++) per_minor += rows[i].minor == 0;
    if (checked != per_minor)
        fail_msg("ABI 1.%d has %zu size rows, ABI 1.0 has %zu: record every struct's size for the new "
                 "minor in %s", SGL_ATTN_ABI_MINOR, checked, per_minor, __FILE__);
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
        cmocka_unit_test(test_minimum_sizes_are_v1_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
