#!/usr/bin/env bash
# bench/gpu/owed.sh - first call of 2026-12-03: what the 2026-12-02 session
# left unverified on the GPU.  (1) racecheck of the linear split kernels after
# 91cd9fb (lin_cout_kernel commits its cp.async group before waiting) and the
# lk_state_step refactor; (2) cuda_attn's new defaults (wgmma v2 plain on SM 9.0,
# mma v2 elsewhere) checked against float64 and sanitized, with the old
# versions beside them; (3) the other GPU tests, unchanged code, as a smoke run.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
A=build/bin/attnctl; T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
step "1. linear: racecheck of the split kernels (the fix), memcheck, tests"
LT_QUICK=3 timeout 170 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/lin_racecheck.log" | tail -1) ok-lines=$(grep -cE '^ok' "$OUT/lin_racecheck.log")"
grep -E "^========= Error" "$OUT/lin_racecheck.log" | sort | uniq -c | head -8
LT_QUICK=3 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/lin_memcheck.log" | tail -1)"
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log")"
timeout 30 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
step "2. cuda_attn: defaults and the old versions, whole matrix vs float64"
for v in "default|" "wgmma_v1|SGL_ATTN_WGMMA_V2=0" "mma_v2|SGL_ATTN_CUDA_KERNEL=mma" "mma_v1|SGL_ATTN_CUDA_KERNEL=mma SGL_ATTN_MMA_EXTEND=v1"; do
  n=${v%%|*}; e=${v#*|}
  env $e timeout 60 $A check --plugin cuda_attn --json > "$OUT/check_$n.json" 2> "$OUT/check_$n.log"
  echo "check $n ($e): rc=$? $(tail -1 "$OUT/check_$n.log")"
done
timeout 30 $T/test_cuda_graph $P > "$OUT/graph.log" 2>&1; echo "graph rc=$? $(grep -E 'PASSED|FAILED' "$OUT/graph.log" | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $A check --plugin cuda_attn --quick > "$OUT/attn_$tool.log" 2>&1
  echo "cuda_attn $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/attn_$tool.log" | tail -1) $(grep -E 'plugin checked' "$OUT/attn_$tool.log")"
done
step "3. cuda_mla quick (unchanged since run 3)"
SGL_ATTN_MLA_STRICT=1 MLA_GPU_QUICK=2 timeout 60 $T/test_mla_gpu > "$OUT/test_mla_gpu.log" 2>&1
echo "test_mla_gpu rc=$? $(grep -E 'PASSED|FAILED' "$OUT/test_mla_gpu.log" | tr '\n' ' ')"
echo "owed: done [$SECONDS s]"
