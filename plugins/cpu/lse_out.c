/* lse_out.c - the LSE output (ABI 1.2, SGL_ATTN_FEAT_LSE; sglang's
 * mha_return_lse) of forward_extend / forward_decode and forward_ragged:
 * lse[t][h] = ln(sum_j exp(s_tj)) over row (t, h)'s scaled, soft-capped
 * logits, sinks excluded; -inf for a row that sees no key.  The loops
 * write it where they normalise the row (kernel_impl.h, finalize_row). */
#include "cpu_ref.h"

int cref_lse_check(cref_backend *b, const DLTensor *lse, const char *what, int64_t T, int64_t hq) {
    b->job.lse = NULL;
    if (!lse) return SGL_ATTN_OK;
    int rc = cref_check(b, lse, what, "num_tokens, num_q_heads (natural-log LSE per query row)", SGL_ATTN_DT_F32,
                        SGL_SDK_T_WRITTEN, 2, T, hq, 0);
    if (rc) return rc;
    b->job.lse = (float *)(uintptr_t)sgl_sdk_data(lse);
    return SGL_ATTN_OK;
}
