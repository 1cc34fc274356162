/* gdn.c - Gated DeltaNet (Qwen3-Next, Qwen3.5) layer compute, templated:
 * delta_layer.c's layer with one log-decay per value head,
 *     g    = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h]),
 * a [T, HV], dt_bias [HV].
 */
#include "hyb_tmpl.h"

int FN(hyb_gdn_forward)(hyb_call *c) { return FN(hyb_delta_layer_forward)(c, 0); }
