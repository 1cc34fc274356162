/* fuzz_conf.c - libFuzzer target: the conf reader (host/conf.c over cJSON).
 * Any input must give either a conf that answers every query, or an error
 * that says something; never a crash, a leak or a read past the input (the
 * input is not NUL-terminated, on purpose). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    conf *c = NULL;
    char err[512];
    err[0] = 0;
    int rc = conf_parse((const char *)data, size, "fuzz.json", &c, err, sizeof err);
    if (rc != SGL_ATTN_OK) {
        /* A refusal names what was wrong, and leaves nothing behind. */
        if (c || !err[0] || !memchr(err, 0, sizeof err)) abort();
        return 0;
    }
    if (!c) return 0; /* an empty document may mean "no conf" */
    static const char *const names[] = {"cpu_ref", "validate", "flashinfer", "gdn", "", "x_y_z"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *pattern = NULL;
        int32_t score = 0;
        (void)conf_is_disabled(c, names[i], &pattern);
        (void)conf_priority(c, names[i], &score);
        const char *v = conf_plugin_option(c, names[i], "threads");
        if (v && !memchr(v, 0, 4096)) abort();
    }
    (void)conf_allow_unsafe_paths(c);
    conf_free(c);
    return 0;
}
