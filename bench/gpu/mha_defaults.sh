#!/usr/bin/env bash
# bench/gpu/mha_defaults.sh - every kernel cuda_attn keeps, checked on the GPU:
# `attnctl check` of the whole matrix against float64 with each value of the
# plugin option kernel (auto: the defaults; mma: the mma.sync extend and decode
# that serve SM 8.x, head dims 64 / 256 and large GQA groups; portable: the
# kernels hip_attn shares) and of the defaults under the validation layer
# (validate/cuda_attn), the graph capture / replay test (all three), the sm_90a
# self-test, compute-sanitizer memcheck of the quick matrix with each value and
# racecheck with the defaults.  ~90 s on the H200.
# Passing: every check line "rc=0 ... 0 failed, ... 0 errors", graph rc=0 with
# "PASSED", self-test "RESULT: all PASS", memcheck "ERROR SUMMARY: 0 errors",
# racecheck "RACECHECK SUMMARY: 0 hazards".
. "$(dirname "$0")/common.sh"
need "$A" "$P/cuda_attn.so" "$T/test_cuda_graph" "$T/test_wgmma_primitives"
# The option reaches the plugin through the conf the host reads.
kernel_confs auto mma portable
for k in auto mma portable; do
  ( timeout 60 $A check --plugin cuda_attn --conf "$OUT/conf_$k.json" --json > "$OUT/check_$k.json" 2> "$OUT/check_$k.log"
    echo "check kernel=$k: rc=$? $(tail -1 "$OUT/check_$k.log")" > "$OUT/check_$k.rc" ) &
done
( timeout 60 $A check --plugin validate/cuda_attn --conf "$OUT/conf_auto.json" --json > "$OUT/check_validate.json" \
    2> "$OUT/check_validate.log"
  echo "check validate/cuda_attn: rc=$? $(tail -1 "$OUT/check_validate.log")" > "$OUT/check_validate.rc" ) &
( timeout 40 $T/test_cuda_graph > "$OUT/graph.log" 2>&1
  echo "graph: rc=$? $(grep -E 'PASSED|FAILED' "$OUT/graph.log" | tr '\n' ' ')" > "$OUT/graph.rc" ) &
( timeout 60 $T/test_wgmma_primitives > "$OUT/selftest.log" 2>&1
  echo "wgmma self-test: rc=$? $(grep -c '^PASS' "$OUT/selftest.log") PASS $(grep -c '^FAIL' "$OUT/selftest.log") FAIL $(tail -1 "$OUT/selftest.log")" > "$OUT/selftest.rc" ) &
wait
for k in auto mma portable; do
  ( timeout 75 compute-sanitizer --tool memcheck --error-exitcode 9 $A check --plugin cuda_attn --conf "$OUT/conf_$k.json" \
      --quick > "$OUT/memcheck_$k.log" 2>&1
    echo "memcheck kernel=$k: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_$k.log" | tail -1) $(tail -1 "$OUT/memcheck_$k.log")" > "$OUT/memcheck_$k.rc" ) &
done
( timeout 75 compute-sanitizer --tool racecheck --error-exitcode 9 $A check --plugin cuda_attn --conf "$OUT/conf_auto.json" \
    --quick > "$OUT/racecheck_auto.log" 2>&1
  echo "racecheck kernel=auto: rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/racecheck_auto.log" | tail -1) $(tail -1 "$OUT/racecheck_auto.log")" > "$OUT/racecheck_auto.rc" ) &
wait
cat "$OUT"/check_*.rc "$OUT"/graph.rc "$OUT"/selftest.rc "$OUT"/memcheck_*.rc "$OUT"/racecheck_auto.rc
# which kernels each create of the graph test chose (its log line)
grep -hoE "kernel=[a-z]+: extend [a-z]+( \(extend: TMA\))?, decode [a-z]+" "$OUT/graph.log" | sort | uniq -c
echo "mha_defaults: done [$SECONDS s]"
