/* call_verdict.c - the verdict of a case made of several calls (harness.h,
 * hcalls_judge; docs/harness.md, "NMSE limits"). */
#include "harness.h"

/* A call as large as the others is judged by its own NMSE, as every full-attention output is; a call
 * whose outputs are small (a lone token whose q·k nearly cancels) by the error it adds at the scale of
 * the whole case, so its bf16 operands' rounding is not magnified, while an output that is wrong by the
 * order of itself still fails unless its RMS is below 1% of the case's. */
int hcalls_judge(const hcall_err *c, int n, double *score) {
    if (n <= 0) return -1;
    double ref2 = 0;
    size_t cnt = 0;
    for (int i = 0; i < n; i++) { ref2 += c[i].ref2; cnt += c[i].n; }
    const double case_ms = cnt ? ref2 / (double)cnt : 0;
    int worst = -1;
    for (int i = 0; i < n; i++) {
        const double m = c[i].n ? (double)c[i].n : 1, own_ms = c[i].ref2 / m;
        const double den = own_ms > case_ms ? own_ms : case_ms, v = den > 0 ? c[i].err2 / m / den : c[i].err2;
        if (worst < 0 || v > *score) worst = i, *score = v;
    }
    return worst;
}
