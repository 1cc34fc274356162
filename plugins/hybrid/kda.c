/* kda.c - Kimi Delta Attention (Kimi-Linear) layer compute, templated:
 * delta_layer.c's layer (as gdn.c) except that the decay is per key channel,
 *     g[c] = -exp(A_log[h]) * softplus(a[t, h*K + c] + dt_bias[h*K + c]),
 * a [T, HV*K], dt_bias [HV*K], so the state decays as S diag(exp(g))
 * (delta_rule.c, per-channel gates).
 */
#include "hyb_tmpl.h"

int FN(hyb_kda_forward)(hyb_call *c) { return FN(hyb_delta_layer_forward)(c, 1); }
