/* lt_check.h - the check macro of the CUDA linear tests (plain C: the GPU
 * machine has no cmocka) and a small random-number helper. */
#ifndef LT_CHECK_H
#define LT_CHECK_H

#include <stdint.h>

extern int lt_failures;
#define LT_CHECK(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond)) {                                                             \
            lt_failures++;                                                         \
            lt_fail_at(__FILE__, __LINE__, #cond);                                 \
            lt_note(__VA_ARGS__);                                                  \
        }                                                                          \
    } while (0)
void lt_fail_at(const char *file, int line, const char *cond);
void lt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "SKIP: why" and exit 0 (the GPU tests on a machine without a usable GPU). */
void lt_skip(const char *why) __attribute__((noreturn));

/* The plugin directory: argv[1], else $LT_PLUGDIR, else the build tree's
 * (<this executable's dir>/../lib/sglattn/plugins). */
const char *lt_plugdir(int argc, char **argv);

/* uniform integer in [lo, hi] (xorshift64) */
static inline int lt_rand(uint64_t *s, int lo, int hi) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return lo + (int)(*s % (uint64_t)(hi - lo + 1));
}

#endif
