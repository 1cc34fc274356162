#!/usr/bin/env bash
# bench/gpu/lin_defaults.sh - the CUDA linear wrappers after the stream decode
# became the default (lever_lindec.sh measured it 1.43-1.44x the fused decode
# at B >= 256): the defaults' tests against float64, whole hybrid models,
# racecheck of the stream kernels with the time racecheck needs (lever_lindec's
# 14 s cap cut it after one case), memcheck, and bench_lin on the defaults.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT
step "1. test_lin_gpu (quick, defaults), stream cases, test_lin_e2e"
LT_QUICK=1 timeout 45 $T/test_lin_gpu $P > "$OUT/test_lin_gpu.log" 2>&1; echo "test_lin_gpu rc=$? $(tail -1 "$OUT/test_lin_gpu.log")"
LT_QUICK=4 timeout 30 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_stream.log" 2>&1; echo "stream cases rc=$? $(tail -1 "$OUT/test_lin_gpu_stream.log")"
timeout 30 $T/test_lin_e2e $P > "$OUT/test_lin_e2e.log" 2>&1; echo "test_lin_e2e rc=$? $(tail -1 "$OUT/test_lin_e2e.log")"
grep -m3 -E "path|decode" "$OUT/test_lin_e2e.log"
step "2. racecheck (stream cases, LT_QUICK=5) and memcheck (defaults, LT_QUICK=1)"
LT_QUICK=5 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck.log" | tail -1) ok-lines=$(grep -cE '^ok' "$OUT/racecheck.log")"
LT_QUICK=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
step "3. bench_lin, defaults"
BENCH_QUICK=1 timeout 40 $T/bench_lin "$OUT/bench_lin_default.json" $P > "$OUT/bench_lin_default.log" 2>&1; echo "rc=$?"
grep -E "decode|prefill|chunk" "$OUT/bench_lin_default.log" | head -20
echo "lin_defaults: done [$SECONDS s]"
