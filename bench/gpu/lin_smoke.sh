#!/usr/bin/env bash
# bench/gpu/lin_smoke.sh - the CUDA linear wrappers' defaults after a change to
# shared kernel code: the quick GPU test and the whole-hybrid-model test.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log")"
timeout 30 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
