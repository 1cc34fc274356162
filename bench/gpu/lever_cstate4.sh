#!/usr/bin/env bash
# bench/gpu/lever_cstate4.sh - SGL_ATTN_LIN_CSTATE=v4 (lk_cstate.cuh): v2's
# split state pass (4 compute + 4 producer warps, same math and outputs) with
# warp-specialised hand-offs: named barriers the producers only arrive at
# (chunk landed, Hs copied) and the compute warps only arrive at (update done),
# instead of two __syncthreads per chunk that every warp meets.
# Checked, sanitised and timed beside the default (v2) on the same binary.
# Prebuilt build/, repo root, OUT=dir; every step capped, 58 s of caps in all.
#   1. test_lin_gpu LT_QUICK=16 (v4: row tiles 16 and 32, both state dtypes,
#      every kind the split phase 2 serves, the scenario and long ragged
#      requests with state carried in and padding)
#   2. compute-sanitizer memcheck and racecheck (LT_QUICK=17: tile 16 f32 state,
#      tile 32 bf16 state); racecheck also reports barrier hazards
#   3. bench_lin prefill T=65536 (Qwen3.5 TP8), tile 16: default, v4
#      ($OUT/bench_pre_{default,v4}_t16.json)
#   4. ncu per-kernel durations of the first 16 launches (two forwards), v4, tile 16
#      (the default's state pass: 1.22 ms, run 8; v3's 1.343, run 14)
#   then the table: TFLOP/s (4 T HV K V), us and x default, ms per kernel.
set -u
OUT=${OUT:?}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T=build/tests; P=build/lib/sglattn/plugins
step() { echo; echo "### $* [$SECONDS s]"; }
unset SGL_ATTN_LIN_DECODE SGL_ATTN_LIN_CHUNK1 SGL_ATTN_LIN_CHUNK2 SGL_ATTN_LIN_KERNEL SGL_ATTN_LIN_VT SGL_ATTN_LIN_PREP \
  SGL_ATTN_LIN_CSTATE SGL_ATTN_LIN_CSCAN_M SGL_ATTN_LIN_CSCAN_VT
sel() { case $1 in default) echo "SGL_ATTN_LIN_CSTATE=auto";; v4) echo "SGL_ATTN_LIN_CSTATE=v4";; esac; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1

step "1. test_lin_gpu: the v4 set (LT_QUICK=16)"
LT_QUICK=16 timeout 12 $T/test_lin_gpu $P > "$OUT/test_lin_gpu_cs4.log" 2>&1
echo "cs4 set rc=$? $(tail -1 "$OUT/test_lin_gpu_cs4.log")"
grep -E "^FAIL +[a-z]|SKIP" "$OUT/test_lin_gpu_cs4.log" | head -8

step "2. compute-sanitizer memcheck / racecheck (LT_QUICK=17), v4"
for tool in memcheck racecheck; do
  LT_QUICK=17 timeout $([ $tool = memcheck ] && echo 10 || echo 14) \
    compute-sanitizer --tool $tool --error-exitcode 9 $T/test_lin_gpu $P > "$OUT/lin_cs4_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/lin_cs4_$tool.log" | tail -1) $(tail -1 "$OUT/lin_cs4_$tool.log")"
done

step "3. bench_lin prefill T=65536: tile 16, default and v4"
for t in 16; do
  for v in default v4; do
    env $(sel $v) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=$t timeout 12 \
      $T/bench_lin "$OUT/bench_pre_${v}_t$t.json" $P > "$OUT/bench_pre_${v}_t$t.log" 2>&1
    echo "$v t$t rc=$?"; grep prefill "$OUT/bench_pre_${v}_t$t.log"
  done
done

step "4. ncu kernel durations (first 16 launches): v4, tile 16"
env $(sel v4) BENCH_QUICK=1 BENCH_FILTER="T=65536" BENCH_VARIANT=fast BENCH_VT=16 timeout 10 \
  ncu --clock-control none --metrics gpu__time_duration.sum -c 16 $T/bench_lin /dev/null $P > "$OUT/ncu_v4.txt" 2>&1
echo "v4 rc=$?"

python3 bench/gpu/lever_table.py "$OUT" default,v4 16 ncu_v4.txt \
  "default: v2, two __syncthreads per chunk; v4: named-barrier hand-offs in the state pass" \
  "ms per kernel, v4 tile 16 (ncu, mean of the launches profiled; v2's state pass: 1.22 ms, run 8; v3's 1.343, run 14):"
echo "lever_cstate4: done [$SECONDS s]"
