/* registry.c - every case family linked into attnctl: the paged forwards'
 * families (full attention, ABI 1.2's paged12 and ragged), the
 * linear-attention table's rows, DSA's, then harness_families_extra
 * when some file defines it (a weak reference). */
#include <string.h>

#include "harness.h"

static size_t list_count(const harness_family *const *v) {
    size_t n = 0;
    if (v)
        while (v[n]) n++;
    return n;
}

/* The paged forwards' families: full attention, then the ABI 1.2 additions. */
static const harness_family *const paged[] = {&harness_family_full, &harness_family_paged12, &harness_family_ragged};
#define N_PAGED (sizeof paged / sizeof paged[0])

/* DeepSeek sparse attention (dsa_family.c), after the linear kinds */
static const harness_family *const dsa_families[] = {&harness_family_dsa_sparse, &harness_family_dsa_indexer};
#define N_DSA (sizeof dsa_families / sizeof dsa_families[0])

size_t harness_family_count(void) {
    return N_PAGED + list_count(harness_families_linear) + N_DSA + list_count(harness_families_extra);
}

const harness_family *harness_family_at(size_t i) {
    if (i < N_PAGED) return paged[i];
    i -= N_PAGED;
    const size_t n_linear = list_count(harness_families_linear);
    if (i < n_linear) return harness_families_linear[i];
    i -= n_linear;
    if (i < N_DSA) return dsa_families[i];
    i -= N_DSA;
    return i < list_count(harness_families_extra) ? harness_families_extra[i] : NULL;
}

const harness_family *harness_family_for_mode(const char *mode) {
    for (size_t i = 0; i < harness_family_count(); i++) {
        const harness_family *f = harness_family_at(i);
        for (const char *const *m = f->modes; m && *m; m++)
            if (!strcmp(*m, mode)) return f;
    }
    return NULL;
}

int harness_family_applies(const harness_family *f, const htarget *t) {
    if (f->applies(f, &t->info, &t->caps)) return 1;
    return t->info.role == SGL_ATTN_ROLE_LAYER && f->applies(f, &t->inner_info, &t->caps);
}
