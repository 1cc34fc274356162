/*
 * pdl_sm90.cuh - programmatic dependent launch for cuda_attn's direct
 * extend (cuda_attn_forward.c, docs/cuda.md): the new tokens' wgmma pass
 * lets the save-KV kernel launched after it start at once, and the save
 * waits for it only at its end, so the two run side by side and whatever the
 * stream runs after the save sees both finished.
 *
 * Device side (griddepcontrol, SM 9.0; nothing below SM 9.0, where the
 * launch is plain anyway; in the CPU emulator the calls emu_pdl.h counts):
 *   ca_pdl_trigger  the grid launched after this one with the attribute may
 *                   start once every block of this one has run it (no memory
 *                   ordering: the dependent must not read this grid's output);
 *   ca_pdl_wait     waits until the grid before has completed and its writes
 *                   are visible (a no-op in a plain launch).
 * Host side: ca_launch_pdl, a launch with
 * cudaLaunchAttributeProgrammaticStreamSerialization (stream capture records
 * it as a programmatic edge).
 */
#ifndef SGL_CUDA_ATTN_PDL_SM90_CUH
#define SGL_CUDA_ATTN_PDL_SM90_CUH

#ifdef LK_EMU
#include "emu_pdl.h"
#endif

__device__ __forceinline__ void ca_pdl_trigger(void) {
#if defined(LK_EMU)
    lk_emu_pdl_trigger();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void ca_pdl_wait(void) {
#if defined(LK_EMU)
    lk_emu_pdl_wait();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#ifdef LK_EMU
/* the emulator runs the grid after the one before it and checks that some
 * thread of the dependent ran ca_pdl_wait */
template <class... P, class... A>
static inline cudaError_t ca_launch_pdl(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                        A... args) {
    lk_emu_trace("ca_launch_pdl", grid, block, smem);
    lk_emu_launch_pdl_fn(1, grid, block, smem, st, std::function<void()>([=] { kern(args...); }));
    return cudaSuccess;
}
#else
template <class... P, class... A>
static inline cudaError_t ca_launch_pdl(void (*kern)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                                        A... args) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kern, args...);
}
#endif

#endif
