/* test_gauntlet_load.c - every kind of broken plugin file in one directory
 * with the good plugin: each gets its own precise status and reason, the
 * host opens anyway, and the good plugin still creates and runs.  The same
 * directory is then opened with probes isolated, and once more to show that
 * nothing of the first host lingers. */
#include <elf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "gauntlet_util.h"

typedef struct expectation {
    const char *file;
    int status;
    const char *fragment;
} expectation;

#define LOAD SGL_ATTN_PLUGIN_LOAD_ERROR
#define ABI SGL_ATTN_PLUGIN_ABI_MISMATCH

/* Built by module.mk from bad_plugin.c, one defect each. */
static const expectation built[] = {
    {"bad_no_entry.so", LOAD, "no entry point sgl_attn_plugin_entry"},
    {"bad_undefined.so", LOAD, "undefined symbol gauntlet_undefined_function"},
    {"bad_missing_dep.so", LOAD, "missing dependency libgauntlet_dep.so"},
    {"bad_null_plugin.so", LOAD, "gave no descriptor (plugin is NULL)"},
    {"bad_refuses.so", ABI, "the plugin refused: this build needs the gauntlet runtime 9"},
    {"bad_entry_fails.so", LOAD, "entry point failed with"},
    {"bad_major.so", ABI, "plugin ABI 2.2, host ABI 1.2: another major"},
    {"bad_minor.so", ABI, "plugin ABI 1.3, host ABI 1.2: newer minor"},
    {"bad_small_struct.so", ABI, "is smaller than ABI 1.0 requires"},
    {"bad_null_name.so", LOAD, "descriptor name is NULL"},
    {"bad_long_name.so", LOAD, "descriptor name is longer than 63 characters"},
    {"bad_name_chars.so", LOAD, "descriptor name \"Gauntlet-Plugin\" has 'G' at position 0"},
    {"bad_platform.so", LOAD, "descriptor platform has unknown value 99"},
    {"bad_role.so", LOAD, "descriptor role has unknown value 0"},
    {"bad_hybrid_kind.so", LOAD, "descriptor hybrid_kind has unknown value 42"},
    {"bad_no_probe.so", LOAD, "no probe function"},
    {"bad_aliases.so", LOAD, "descriptor aliases has more than 16 entries"},
    {"bad_caps_bits.so", LOAD, "device 0: caps features has unknown bits 0x8000000"},
    {"bad_caps_list.so", LOAD, "device 0: caps n_head_dims is 17"},
    {"bad_caps_available.so", LOAD, "device 0: caps available is 7"},
    {"bad_caps_arch.so", LOAD, "device 0: caps arch range 9.0..8.9 is inverted"},
    {"bad_caps_unterminated.so", LOAD, "device 0: caps device_name is not NUL-terminated"},
    {"bad_probe_fails.so", LOAD, "probe of device 0 failed with"},
    {"bad_device_ops.so", LOAD, "descriptor device_ops.copy_to_host is NULL (every memory call is required)"},
    {"bad_device_streams.so", LOAD, "descriptor device_ops.stream_destroy is NULL but stream_create is set"},
    {"object.so", LOAD, "not a shared object: ELF type REL"},
};

/* Crafted here, byte by byte. */
static const expectation crafted[] = {
    {"empty.so", LOAD, "not a shared object: empty file (0 bytes)"},
    {"text.so", LOAD, "not a shared object: a text file (starts \"#!/bin/sh"},
    {"junk.so", LOAD, "not a shared object: not an ELF file (first bytes"},
    {"ident_only.so", LOAD, "truncated ELF (10 bytes"},
    {"truncated.so", LOAD, "truncated ELF ("},
    {"elf32.so", LOAD, "ELF class 32-bit, this host is 64-bit"},
    {"aarch64.so", LOAD, "ELF for another machine (ARM aarch64)"},
};

typedef struct dir_state {
    char dir[GU_DIR_MAX]; /* first: gu_state_new */
    int real_elf32, real_aarch64; /* cross-built rather than patched */
} dir_state;

static int built_exists(const char *name) {
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", gu_plugin_build_dir(), name);
    return stat(p, &st) == 0;
}

/* A copy of good.so with `patch` bytes written at `off`. */
static void patched_copy(const char *dir, const char *as, size_t off, const void *patch, size_t n,
                         size_t keep) {
    char src[PATH_MAX], dst[PATH_MAX];
    snprintf(src, sizeof src, "%s/good.so", gu_plugin_build_dir());
    snprintf(dst, sizeof dst, "%s/%s", dir, as);
    char *data;
    size_t len;
    gu_read_file(src, &data, &len);
    assert_true(off + n <= len);
    memcpy(data + off, patch, n);
    gu_write_file(dst, data, keep && keep < len ? keep : len, 0755);
    free(data);
}

static void craft(dir_state *s) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/empty.so", s->dir);
    gu_write_file(p, "", 0, 0755);
    snprintf(p, sizeof p, "%s/text.so", s->dir);
    const char *script = "#!/bin/sh\necho this is not a plugin\n";
    gu_write_file(p, script, strlen(script), 0755);
    unsigned char junk[512];
    uint64_t r = (uint64_t)time(NULL) | 1u;
    for (size_t i = 0; i < sizeof junk; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        junk[i] = (unsigned char)(r >> 24);
    }
    junk[0] = 0x7e; /* never 0x7f: the file must not start like ELF */
    snprintf(p, sizeof p, "%s/junk.so", s->dir);
    gu_write_file(p, junk, sizeof junk, 0755);
    /* The ELF magic and class, then nothing. */
    patched_copy(s->dir, "ident_only.so", 0,
                 "\x7f"
                 "ELF",
                 4, 10);
    /* The headers are intact but the file stops well before its segments. */
    patched_copy(s->dir, "truncated.so", 0,
                 "\x7f"
                 "ELF",
                 4, 2000);
    s->real_elf32 = built_exists("elf32.so");
    if (s->real_elf32) {
        gu_install(s->dir, "elf32.so", NULL);
    } else {
        unsigned char c32 = ELFCLASS32;
        patched_copy(s->dir, "elf32.so", EI_CLASS, &c32, 1, 0);
    }
    s->real_aarch64 = built_exists("aarch64.so");
    if (s->real_aarch64) {
        gu_install(s->dir, "aarch64.so", NULL);
    } else {
        uint16_t em = EM_AARCH64; /* little-endian host, little-endian file */
        patched_copy(s->dir, "aarch64.so", offsetof(Elf64_Ehdr, e_machine), &em, sizeof em, 0);
    }
}

static int setup(void **state) {
    dir_state *s = gu_state_new(state, sizeof *s);
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++)
        gu_install(s->dir, built[i].file, NULL);
    gu_install(s->dir, "good.so", NULL);
    craft(s);
    return 0;
}

static int teardown(void **state) {
    gu_state_free(state);
    return 0;
}

static void check_all(sgl_attn_host *h) {
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++)
        gu_expect(h, built[i].file, built[i].status, built[i].fragment);
    for (size_t i = 0; i < sizeof crafted / sizeof crafted[0]; i++)
        gu_expect(h, crafted[i].file, crafted[i].status, crafted[i].fragment);
    /* Nothing was half-admitted: no bad file is usable under any name. */
    for (size_t i = 0; i < sgl_attn_host_plugin_count(h); i++) {
        sgl_attn_plugin_info in = {.struct_size = sizeof in};
        assert_int_equal(sgl_attn_host_plugin_info(h, i, &in), SGL_ATTN_OK);
        if (strstr(in.path, "/bad_")) assert_true(in.status != SGL_ATTN_PLUGIN_USABLE);
    }
    assert_int_equal(gu_count_file(h, "good.so"), 1);
    gu_good_works(h);
}

static void test_every_bad_file_in_process(void **state) {
    dir_state *s = *state;
    sgl_attn_host *h = gu_open(s->dir, NULL, 0, 0, NULL);
    check_all(h);
    fprintf(stderr, "# %zu built + %zu crafted bad files (elf32 %s, aarch64 %s)\n",
            sizeof built / sizeof built[0], sizeof crafted / sizeof crafted[0],
            s->real_elf32 ? "cross-built" : "patched", s->real_aarch64 ? "cross-built" : "patched");
    sgl_attn_host_close(h);
}

static void test_every_bad_file_isolated(void **state) {
    dir_state *s = *state;
    sgl_attn_host *h = gu_open(s->dir, NULL, 1, 2000, NULL);
    check_all(h);
    sgl_attn_host_close(h);
}

/* Open and close repeatedly: a bad file never leaves state behind that
 * changes the next host's verdicts. */
static void test_reopen_is_stable(void **state) {
    dir_state *s = *state;
    for (int i = 0; i < 3; i++) {
        sgl_attn_host *h = gu_open(s->dir, NULL, 0, 0, NULL);
        check_all(h);
        sgl_attn_host_close(h);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_bad_file_in_process),
        cmocka_unit_test(test_every_bad_file_isolated),
        cmocka_unit_test(test_reopen_is_stable),
    };
    return cmocka_run_group_tests_name("gauntlet_load", tests, setup, teardown);
}
