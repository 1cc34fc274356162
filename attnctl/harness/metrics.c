/* metrics.c - NMSE against the float64 reference; NaN, Inf and never
 * written (still poisoned) elements fail outright. */
#include <math.h>
#include <stdint.h>

#include "harness.h"

void hcompare_run(const htensor *x, const double *ref, hcompare *out) {
    double num = 0, den = 0, worst = 0;
    out->worst_index = 0;
    out->first_bad = SIZE_MAX;
    out->bad_kind = 0;
    const void *p = htensor_cdata(x);
    for (size_t i = 0; i < x->count; i++) {
        if (htensor_is_poison(x, i)) {
            if (!out->bad_kind) out->first_bad = i, out->bad_kind = 2;
            continue;
        }
        double v = hdtype_load(x->dt, p, i);
        if (!isfinite(v)) {
            if (!out->bad_kind) out->first_bad = i, out->bad_kind = 1;
            continue;
        }
        double e = v - ref[i];
        num += e * e;
        den += ref[i] * ref[i];
        if (fabs(e) > worst) worst = fabs(e), out->worst_index = i;
    }
    out->nmse = den > 0 ? num / den : num;
    out->max_abs_err = worst;
    out->sum_err2 = num;
    out->sum_ref2 = den;
    /* An output with NaN, Inf or unwritten elements has no NMSE: NaN (null
     * in JSON), never the NMSE of what happened to be finite. */
    if (out->bad_kind) out->nmse = out->max_abs_err = NAN;
}

/* docs/harness.md explains each limit. */
double hthreshold(hdtype t) {
    switch (t) {
    case HDT_F64: return 1e-20;
    case HDT_F32: return 1e-8;
    case HDT_F16: return 1e-5;
    case HDT_BF16: return 1e-4;
    /* the reference attends the pool's dequantised values, so only the
     * kernel's own rounding (f16 / bf16 operands) is judged */
    case HDT_FP8_E4M3: return 1e-4;
    default: return 0;
    }
}
