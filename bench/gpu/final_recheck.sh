#!/usr/bin/env bash
# bench/gpu/final_recheck.sh - the second call of the 2026-12-02 record run,
# after the first (bench/gpu/final.sh) showed the split extend kernels at
# 2.5x the fused ones and made them the default (auto): the linear wrappers'
# defaults checked, raced and timed again; and cuda_mla's shipped defaults
# (mma two+pf4 for <= 32 rows, wgmma0 for >= 64) under compute-sanitizer,
# strict, so a variant's name is the kernel that ran.  ~3 minutes.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
step "1. test_lin_gpu quick (fused and split cases), test_lin_e2e (defaults)"
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log")"
timeout 25 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
step "2. racecheck and memcheck, split kernels"
for tool in racecheck memcheck; do
  LT_QUICK=3 timeout 45 compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/lin_$tool.log" | tail -1)"
done
step "3. bench_lin, defaults"
BENCH_QUICK=1 timeout 35 $T/bench_lin "$OUT/bench_lin_default.json" $P > "$OUT/bench_lin_default.log" 2>&1; echo "rc=$?"
grep -E "fast" "$OUT/bench_lin_default.log"
step "4. cuda_mla defaults under compute-sanitizer (strict)"
for tool in memcheck racecheck; do
  SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 MLA_GPU_VARIANTS=auto,wgmma,narrow timeout 45 compute-sanitizer --tool $tool \
    --error-exitcode 9 $T/test_mla_gpu > "$OUT/mla_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/mla_$tool.log" | tr '\n' ' ')"
done
echo "final_recheck: done [$SECONDS s]"
