/* kernel_f32.c - the f32/f16/bf16 attention loops for any x86-64 (SSE2). */
#define REAL float
#define CREF_F64 0
#define CREF_SFX _f32
#include "kernel_impl.h"
