/* kernel_f64.c - the float64 path: q/k/v/out/pool all f64, accumulated in
 * f64 with libm's exp.  The harness's gold reference. */
#define REAL double
#define CREF_F64 1
#define CREF_SFX _f64
#include "kernel_impl.h"
