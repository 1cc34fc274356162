/* kernel_f32_avx512.c - bf16 KV (head dims multiples of 32) through the
 * AVX-512 tile loops of cref_tile512.h; everything else through the same
 * loops as kernel_f32_avx2.c (this file is built with AVX2 and FMA; only the
 * tile loops are compiled for AVX-512).  Chosen at create on CPUs with
 * AVX-512 F/BW/DQ/VL. */
#define REAL float
#define CREF_F64 0
#define CREF_SFX _f32_avx512
#if defined(__x86_64__) && defined(__GNUC__)
#define CREF_TILE512 1
#endif
#include "kernel_impl.h"
