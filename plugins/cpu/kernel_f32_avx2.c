/* kernel_f32_avx2.c - the same loops built with AVX2, FMA and F16C
 * (module.mk adds the flags to this file only); chosen at create when the
 * CPU has them. */
#define REAL float
#define CREF_F64 0
#define CREF_SFX _f32_avx2
#include "kernel_impl.h"
