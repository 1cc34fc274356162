/* chunk_extend.cu - the chunked extend (K = 128, V a multiple of 32 up to
 * 128, 16-bit activations): which kernels run for which operand type and
 * kind, and their shared-memory setup (at create).
 *
 *   phase 1   bf16, every kind: the prep + UT pair (chunk_prep_ut.cu; kda with per-channel gates)
 *             f16, every kind:  the fused kernel (chunk_fused_ut.cu)
 *             then the conv history moves on (after phase 1 read the old one)
 *   phase 2   bf16: the state pass, then the outputs (chunk_state.cu, chunk_output.cu); the state
 *             pass by segments in parallel where few requests leave SMs idle (chunk_segment.cu)
 *             f16:  the fused state pass with outputs (chunk_fused_state.cu); mamba2 at bf16 too,
 *                   where the serial pass would run and its heads fill the SMs (lin_fused_p2_tile)
 *   fused     gdn, bf16, batches that fill the SMs (p.fused_cp; option fused_chunk): the prep, the conv history, then UT, state
 *             pass and outputs in one kernel per (request, value head) (chunk_fused_cp.cu)
 *
 * The prep + UT pair, the state pass and the output kernel are built for
 * bf16 operands only: f16 models are rare, and each .so carries every kernel. */
#include "kernel_common.cuh"

extern "C" int lin_chunk_setup(void) {
    int e = lin_chunk_fused_ut_setup();
    if (!e) e = lin_chunk_fused_state_setup();
    if (!e) e = lin_chunk_prep_ut_setup();
    if (!e) e = lin_chunk_state_setup();
    if (!e) e = lin_chunk_output_setup();
    return e;
}

extern "C" int lin_launch_chunk(const lin_fwd *pp, int ot, int vt, void *stream) {
    const lin_fwd &p = *pp;
    if (p.T <= 0 || p.bs <= 0) return 0;
    if (p.K != LIN_TC_K || p.V % 32 || p.V > LIN_TC_VMAX || (vt != 16 && vt != 32) ||
        (ot != LIN_DT_BF16 && ot != LIN_DT_F16))
        return (int)cudaErrorInvalidValue;
    const bool bf = ot == LIN_DT_BF16;
    if (p.fused_cp) { /* the prep launcher skips its UT kernel: the fused kernel makes W, U, ... itself */
        int e = bf && p.prep_ut ? lin_launch_chunk_prep_ut(pp, ot, stream) : (int)cudaErrorInvalidValue;
        return e ? e : lin_launch_chunk_fused_cp(pp, stream);
    }
    /* mamba2, lightning (no delta rule, so U is the prep's values): phase 2 reads U where the prep wrote the
     * values; the UT kernel makes no U for them */
    lin_fwd q = p;
    if (bf && p.prep_ut && (p.kind == LIN_MAMBA2 || p.kind == LIN_LIGHTNING)) q.Ut = q.Vc;
    /* the fused phase 2's group form where the stream prep runs: the prep writes x and dt, no UT kernel runs, and
     * the fused phase 2 reads C and B per group and makes the decays, dt x and D x (chunk_fused_state.cu); the
     * general prep's batches keep the UT kernel and the per-head form */
    q.grp = bf && p.prep_ut && p.fused_p2 && lin_chunk_prep_stream_serves(&q);
    /* phase 1 (with the conv history moved on) */
    int e = bf && p.prep_ut ? lin_launch_chunk_prep_ut(&q, ot, stream) : lin_launch_chunk_fused_ut(pp, ot, stream);
    if (e) return e;
    if (!bf) return lin_launch_chunk_fused_state(pp, ot, vt, stream);
    /* mamba2's fused phase 2: the state pass with the outputs on the way (forward sets fused_p2 only where the
     * serial pass would run) */
    if (p.fused_p2) return lin_launch_chunk_fused_state(&q, ot, p.fused_p2, stream);
    if (!p.Hs) return (int)cudaErrorInvalidValue;
    /* the segmented pass where the plan-time rule chose segments (lin_seg_plan); the serial pass for
     * batches that fill the SMs with requests, and for f16 (the fused phase 2) */
    if ((e = p.seg_chunks > 0 && p.Zs ? lin_launch_chunk_segments(&q, vt, stream) : lin_launch_chunk_state(&q, vt, stream)))
        return e;
    return lin_launch_chunk_output(&q, stream);
}
