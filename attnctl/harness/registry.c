/* registry.c - every case family linked into attnctl.  The linear-attention
 * families are weak references (harness.h): a file that defines one is
 * picked up, a missing one is skipped. */
#include <string.h>

#include "harness.h"

#define N_FIXED 7

static const harness_family *fixed_at(size_t i) {
    switch (i) {
    case 0: return &harness_family_full;
    case 1: return &harness_family_gdn;
    case 2: return &harness_family_mamba2;
    case 3: return &harness_family_short_conv;
    case 4: return &harness_family_kda;
    case 5: return &harness_family_lightning;
    case 6: return &harness_family_minimax_sparse;
    default: return NULL;
    }
}

static size_t extra_count(void) {
    size_t n = 0;
    if (harness_families_extra)
        while (harness_families_extra[n]) n++;
    return n;
}

size_t harness_family_count(void) {
    size_t n = 0;
    for (size_t i = 0; i < N_FIXED; i++) n += fixed_at(i) != NULL;
    return n + extra_count();
}

const harness_family *harness_family_at(size_t i) {
    for (size_t k = 0; k < N_FIXED; k++) {
        const harness_family *f = fixed_at(k);
        if (!f) continue;
        if (i == 0) return f;
        i--;
    }
    return i < extra_count() ? harness_families_extra[i] : NULL;
}

const harness_family *harness_family_for_mode(const char *mode) {
    for (size_t i = 0; i < harness_family_count(); i++) {
        const harness_family *f = harness_family_at(i);
        for (const char *const *m = f->modes; m && *m; m++)
            if (!strcmp(*m, mode)) return f;
    }
    return NULL;
}
