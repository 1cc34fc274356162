/* kernel_f64_avx2.c - the float64 loops built with AVX2 and FMA (module.mk
 * adds the flags to this file only): the reference the harness compares
 * every plugin with runs four times wider where the CPU allows. */
#define REAL double
#define CREF_F64 1
#define CREF_SFX _f64_avx2
#include "kernel_impl.h"
