/*
 * emu_pdl.h - programmatic dependent launch on the CPU emulator of CUDA
 * (emu_simt.cpp), for the kernels whose launchers use it (the linear
 * wrappers' stream decode, plugins/cuda/linear/kernel_common.cuh).
 *
 * pdl != 0 is a launch with cudaLaunchAttributeProgrammaticStreamSerialization
 * (0: a plain launch).  Here every launch runs after the grid before it, so
 * the dependent sees all of that grid's writes; what the emulator checks is
 * the dependent's side of the contract: a dependent grid none of whose
 * threads runs griddepcontrol.wait (lk_emu_pdl_wait) aborts, since on the
 * device it would read the grid before's output while that grid still runs.
 * Under stream capture the launch is recorded as such and checked at every
 * replay.
 */
#ifndef EMU_PDL_H
#define EMU_PDL_H

#include <functional>

#include <cuda_runtime.h>

void lk_emu_launch_pdl_fn(int pdl, dim3 grid, dim3 block, size_t smem, cudaStream_t st, std::function<void()> body);
/* griddepcontrol.wait / griddepcontrol.launch_dependents in a kernel */
void lk_emu_pdl_wait(void);
void lk_emu_pdl_trigger(void);

#endif
